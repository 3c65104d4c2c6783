"""``autotvm.task``: templates, tasks and dispatch contexts."""
from ..space import ConfigEntity, ConfigSpace, FallbackConfigEntity  # noqa: F401
from .dispatcher import (ApplyConfig, ApplyHistoryBest, DispatchContext, FallbackContext,  # noqa: F401
                         apply_history_best)
from .task import (TASK_TABLE, Task, TaskError, args_to_workload, compute_flop, create,  # noqa: F401
                   get_config, template)
from .relay_integration import extract_from_program  # noqa: F401
from . import space  # noqa: F401  (TVM: autotvm.task.space)
