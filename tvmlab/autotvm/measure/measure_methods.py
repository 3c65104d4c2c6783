"""TVM's ``autotvm.measure.measure_methods``: the builders and runners, under the module name TVM's code imports.

They are the ones in ``tvmlab.autotvm.measure`` (``LocalBuilder`` builds in forked workers,
``LocalRunner`` times in fresh interpreters, ``DaskRunner`` on a Dask cluster); RPC runners and
TVM's build-function wrappers (``_WrappedBuildFunc``, ``ndk``/``tar`` exports) have no counterpart.
"""
from . import (BuildResult, Builder, DaskRunner, LocalBuilder, LocalRunner, MeasureErrorNo,  # noqa: F401
               MeasureInput, MeasureResult, Runner, create_measure_batch, measure_option)
