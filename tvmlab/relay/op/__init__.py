"""Operators: the registry (``relay.op.get``), and the constructors by family."""
from . import nn, tensor  # noqa: F401
from .registry import (Op, OpPattern, get, list_op_names, register_compute, register_pattern,  # noqa: F401
                       register_schedule)
from .tensor import *  # noqa: F401,F403
from . import algorithm, compare, image, indexing, trig  # noqa: F401,E402  (argmax, where, resize2d, sin ...)
from .algorithm import *  # noqa: F401,F403,E402
from .compare import *  # noqa: F401,F403,E402
from .trig import *  # noqa: F401,F403,E402
from .indexing import *  # noqa: F401,F403,E402
