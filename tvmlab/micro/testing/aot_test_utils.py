"""The AOT test runners under TVM's ``tvm.micro.testing.aot_test_utils`` names.

``AOT_DEFAULT_RUNNER`` builds and runs the test program on this machine.  The
Corstone-300 runners describe TVM's Arm Cortex-M55 reference system; passing
them to ``compile_and_run`` raises DeviceError, and
``tvm.testing.requires_corstone300`` skips the tests that use them.
"""
from __future__ import annotations

import itertools

from ...testing.aot import AOTTestRunner
from ...testing.targets import requires_corstone300

AOT_DEFAULT_RUNNER = AOTTestRunner()

_CORSTONE = dict(makefile="corstone300", prologue="  uart_init();", includes=["uart.h"])
AOT_CORSTONE300_RUNNER = AOTTestRunner(**_CORSTONE,
                                       pass_config={"relay.ext.cmsisnn.options": {"mcpu": "cortex-m55"}})
AOT_USMP_CORSTONE300_RUNNER = AOTTestRunner(**_CORSTONE,
                                            pass_config={"relay.ext.cmsisnn.options": {"mcpu": "cortex-m55"},
                                                         "tir.usmp.enable": True})


def parametrize_aot_options(test):
    """Run ``test(interface_api, use_unpacked_api, test_runner)`` over the valid combinations: the C
    interface only unpacked, the Corstone-300 runner only with it (and skipped without its FVP)."""
    import pytest
    params = []
    for api, unpacked, runner in itertools.product(["packed", "c"], [True, False],
                                                   [AOT_DEFAULT_RUNNER, AOT_CORSTONE300_RUNNER]):
        if api == "c" and not unpacked:
            continue
        if runner is AOT_CORSTONE300_RUNNER:
            if api == "packed" or not unpacked:
                continue
            params.append(pytest.param(api, unpacked, runner, marks=requires_corstone300.marks()))
        else:
            params.append((api, unpacked, runner))
    return pytest.mark.parametrize(["interface_api", "use_unpacked_api", "test_runner"], params)(test)
