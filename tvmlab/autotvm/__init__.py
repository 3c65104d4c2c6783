"""AutoTVM: schedule templates with knobs, tuners that search them, and TVM-format records.

    @autotvm.template("tutorial/matmul")
    def matmul(N, L, M, dtype): ...cfg = autotvm.get_config(); cfg.define_split(...)...
    task = autotvm.task.create("tutorial/matmul", args=(512, 512, 512, "float32"), target="llvm")
    tuner = autotvm.tuner.XGBTuner(task)
    tuner.tune(n_trial=100, measure_option=autotvm.measure_option(builder="local", runner=autotvm.LocalRunner()),
               callbacks=[autotvm.callback.log_to_file("matmul.log")])
    with autotvm.apply_history_best("matmul.log"):
        s, args = matmul(512, 512, 512, "float32")
"""
from . import callback, measure, record, space, task, tophub, tuner  # noqa: F401
from .measure import (DaskRunner, LocalBuilder, LocalRunner, MeasureInput, MeasureResult,  # noqa: F401
                      measure_option)
from .space import ConfigEntity, ConfigSpace, FallbackConfigEntity  # noqa: F401
from .task import (ApplyConfig, ApplyHistoryBest, DispatchContext, FallbackContext, apply_history_best,  # noqa: F401
                   get_config, template)
from ..tuning.measure import MeasureErrorNo  # noqa: F401
from ..tuning.executor import JobResult  # noqa: F401
from . import cuda_templates, topi_templates  # noqa: F401  (matmul.x86, conv2d_nchw.x86, dense.cuda, ...)

topi_templates.install()
cuda_templates.install()
