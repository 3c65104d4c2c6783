"""TVM's ``tvm.error`` spelling: ``TVMError`` and friends, all tvmlab errors.

``except tvm.error.TVMError`` catches every error tvmlab raises on bad input,
as it does in TVM (both are RuntimeErrors).
"""
from .errors import (BuildError, DSLError, DeviceError, LoweringError,  # noqa: F401
                     RuntimeArgError, ScheduleError, TVMError, TVMLabError)

InternalError = TVMLabError
