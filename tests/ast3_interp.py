"""The reference interpreter the pass tests use: now ``tvmlab.analysis.interp``."""
from tvmlab.analysis.interp import InterpError, Interpreter, run_ast2, run_ast3  # noqa: F401
