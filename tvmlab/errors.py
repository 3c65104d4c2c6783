"""The error hierarchy: every error a user can cause is a TVMLabError.

Messages name the stage, axis or argument involved and what was expected
versus what was given, so they can be shown verbatim in the explorer.
This module is also TVM's ``tvm.error`` (``tvm.error.TVMError``,
``tvm.error.InternalError``).
"""


class TVMLabError(RuntimeError):
    """Base class of every error tvmlab raises on bad input.

    A RuntimeError, as TVM's ``TVMError`` is, so code written to catch TVM's
    errors catches tvmlab's (``tvm.error.TVMError`` is this class).
    """


TVMError = TVMLabError
InternalError = TVMLabError


class DSLError(TVMLabError, TypeError):
    """A tensor expression is malformed (wrong arity, bad dtype, ...)."""


class HybridScriptError(DSLError, ValueError):
    """A hybrid script (``te.hybrid.script``) uses Python the script language does not have, or
    misuses what it has; the message names the script's file and line."""


class TagScopeError(DSLError, ValueError):
    """A ``te.tag_scope`` opened inside another (a ValueError, as in TVM)."""


class ScheduleError(TVMLabError, ValueError):
    """A schedule primitive cannot apply; the schedule is left unchanged."""


class LoweringError(TVMLabError):
    """Lowering a schedule to AST2/AST3 failed."""


class BuildError(TVMLabError):
    """Code generation or compilation for a target failed."""


class RuntimeArgError(TVMLabError, ValueError):
    """A compiled function was called with wrong arguments."""


class DeviceError(TVMLabError, RuntimeError):
    """A device is missing or cannot do what was asked."""


class DivergentBarrierError(BuildError, LoweringError):
    """A GPU kernel would have a barrier that only some threads of a block reach (it would hang)."""


class SimulationError(TVMLabError):
    """The GPU simulator found a bug in a kernel (race, divergent barrier or shuffle, out-of-bounds
    access, read of uninitialized memory); ``report`` is the SimReport with every finding."""

    def __init__(self, message, report=None):
        super().__init__(message)
        self.report = report
