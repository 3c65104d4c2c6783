"""``autotvm.task.space`` (TVM's module path for the knob spaces and entities)."""
from ..space import *  # noqa: F401,F403
from ..space import (AnnotateEntity, AnnotateSpace, ConfigEntity, ConfigError, ConfigSpace,  # noqa: F401
                     FallbackConfigEntity, OtherOptionEntity, OtherOptionSpace, ReorderEntity, ReorderSpace,
                     SplitEntity, SplitSpace, VirtualAxis, get_factors, get_pow2s)
