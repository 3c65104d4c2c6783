"""Misuse at build and call time raises a TVMLabError that names the culprit; nothing crashes."""
import numpy as np
import pytest

import tvmlab
from tvmlab import te
from tvmlab.errors import (BuildError, DeviceError, LoweringError, RuntimeArgError, ScheduleError,
                           TVMLabError)


@pytest.fixture(scope="module")
def vadd():
    A = te.placeholder((16,), name="A")
    B = te.placeholder((16,), name="B")
    C = te.compute((16,), lambda i: A[i] + B[i], name="C")
    s = te.create_schedule(C.op)
    return tvmlab.build(s, [A, B, C], "llvm"), (A, B, C)


@pytest.fixture(scope="module")
def symbolic():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] * B[i], name="C")
    s = te.create_schedule(C.op)
    return tvmlab.build(s, [A, B, C], "llvm")


def arrays(*shapes_dtypes):
    return [tvmlab.nd.array(np.ones(sh, dtype=dt)) for sh, dt in shapes_dtypes]


F32 = "float32"


def call_raises(f, args, cls, *words):
    with pytest.raises(cls) as info:
        f(*args)
    msg = str(info.value)
    assert isinstance(info.value, TVMLabError)
    for w in words:
        assert w in msg, f"{w!r} not in message: {msg}"
    return msg


def test_wrong_shape(vadd):
    f, _ = vadd
    a, b, c = arrays(((15,), F32), ((16,), F32), ((16,), F32))
    call_raises(f, (a, b, c), RuntimeArgError, "'A'", "16", "15", "expected")


def test_wrong_ndim(vadd):
    f, _ = vadd
    a, b, c = arrays(((16,), F32), ((4, 4), F32), ((16,), F32))
    call_raises(f, (a, b, c), RuntimeArgError, "'B'", "(4, 4)", "expected")


def test_wrong_dtype(vadd):
    f, _ = vadd
    a, b, c = arrays(((16,), F32), ((16,), F32), ((16,), "float64"))
    call_raises(f, (a, b, c), RuntimeArgError, "'C'", "float32", "float64", "expected")


def test_wrong_argument_count(vadd):
    f, _ = vadd
    a, b, c = arrays(((16,), F32), ((16,), F32), ((16,), F32))
    call_raises(f, (a, b), RuntimeArgError, "expected 3", "got 2")
    call_raises(f, (a, b, c, c), RuntimeArgError, "got 4")


def test_numpy_array_instead_of_ndarray(vadd):
    f, _ = vadd
    a, c = arrays(((16,), F32), ((16,), F32))
    call_raises(f, (a, np.ones(16, F32), c), RuntimeArgError, "'B'", "NDArray", "ndarray")


def test_python_list_and_none_rejected(vadd):
    f, _ = vadd
    a, c = arrays(((16,), F32), ((16,), F32))
    call_raises(f, (a, [1.0] * 16, c), RuntimeArgError, "'B'", "NDArray")
    call_raises(f, (None, a, c), RuntimeArgError, "'A'", "NDArray")


def test_output_aliasing_an_input_is_rejected(vadd):
    f, _ = vadd
    a, b = arrays(((16,), F32), ((16,), F32))
    call_raises(f, (a, b, a), RuntimeArgError, "'A'", "'C'")


def test_error_leaves_outputs_untouched_and_next_call_works(vadd):
    f, _ = vadd
    a, b, bad = arrays(((16,), F32), ((16,), F32), ((15,), F32))
    c = tvmlab.nd.array(np.full(16, 7.0, F32))
    with pytest.raises(RuntimeArgError):
        f(a, bad, c)
    assert (c.numpy() == 7.0).all()
    f(a, b, c)
    assert (c.numpy() == 2.0).all()


def test_inconsistent_symbolic_dims(symbolic):
    a, b, c = arrays(((10,), F32), ((11,), F32), ((10,), F32))
    call_raises(symbolic, (a, b, c), RuntimeArgError, "'B'", "n", "10", "11")


def test_symbolic_dims_bind_per_call(symbolic):
    for n in (3, 10):
        a, b = arrays(((n,), F32), ((n,), F32))
        c = tvmlab.nd.empty((n,), F32)
        symbolic(a, b, c)
        assert (c.numpy() == 1.0).all()


def test_unknown_target():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(BuildError) as info:
        tvmlab.build(s, [A, B], target="nosuchtarget")
    assert "nosuchtarget" in str(info.value) and "llvm" in str(info.value)


def test_unknown_device_name():
    with pytest.raises(DeviceError) as info:
        tvmlab.device("nosuchdevice", 0)
    assert "nosuchdevice" in str(info.value)


def test_bind_for_llvm_is_an_error():
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=16)
    s[B].bind(xo, te.thread_axis("blockIdx.x"))
    s[B].bind(xi, te.thread_axis("threadIdx.x"))
    with pytest.raises(TVMLabError) as info:
        tvmlab.build(s, [A, B], target="llvm")
    msg = str(info.value)
    assert "llvm" in msg or "thread" in msg or "blockIdx" in msg, msg


def test_arg_not_a_tensor_of_the_schedule():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] * 2.0, name="B")
    Other = te.compute((8,), lambda i: A[i] + 1.0, name="Other")   # never scheduled
    s = te.create_schedule(B.op)
    with pytest.raises(LoweringError) as info:
        tvmlab.build(s, [A, Other, B], target="llvm")
    assert "Other" in str(info.value)


def test_arg_not_a_tensor_at_all():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(LoweringError) as info:
        tvmlab.build(s, [A, 3, B], target="llvm")
    assert "3" in str(info.value) and "argument 1" in str(info.value)


def test_duplicate_arg_names():
    """Two tensors may share a name (as in TVM); one tensor passed twice is refused."""
    A = te.placeholder((8,), name="X")
    B = te.compute((8,), lambda i: A[i] * 2.0, name="X")
    s = te.create_schedule(B.op)
    assert "X_1" in str(tvmlab.lower(s, [A, B]))
    with pytest.raises(LoweringError) as info:
        tvmlab.build(s, [A, B, A], target="llvm")
    assert "X" in str(info.value) and "more than once" in str(info.value)


def test_lower_without_args_or_schedule():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    tvmlab.build(s, [A, B])
    with pytest.raises(LoweringError):
        tvmlab.lower(s)
    with pytest.raises(LoweringError) as info:
        tvmlab.lower(B, [A, B])
    assert "Tensor" in str(info.value)


def test_scalar_argument_type_checked():
    A = te.placeholder((8,), name="A")
    alpha = te.var("alpha", "float32")
    k = te.var("k", "int32")
    B = te.compute((8,), lambda i: A[i] * alpha + k.astype("float32"), name="B")
    s = te.create_schedule(B.op)
    f = tvmlab.build(s, [A, alpha, k, B], "llvm")
    a, b = arrays(((8,), F32), ((8,), F32))
    call_raises(f, (a, "x", 1, b), RuntimeArgError, "'alpha'", "float32")
    call_raises(f, (a, 1.0, 1.5, b), RuntimeArgError, "'k'", "int")
    call_raises(f, (a, 1.0, 2 ** 40, b), RuntimeArgError, "'k'", "int32")
    f(a, 2.0, 3, b)
    assert (b.numpy() == 5.0).all()


def test_module_lookup_errors(vadd):
    f, _ = vadd
    with pytest.raises(RuntimeArgError) as info:
        f.get_function("nope")
    assert "nope" in str(info.value) and f.entry_name in str(info.value)
    with pytest.raises(RuntimeArgError):
        f.get_source("no-such-format")


def test_time_evaluator_checks_args(vadd):
    f, _ = vadd
    a, b = arrays(((16,), F32), ((16,), F32))
    with pytest.raises(RuntimeArgError):
        f.time_evaluator(f.entry_name, tvmlab.cpu(0), number=2)(a, b)


def test_array_on_missing_device():
    dev = tvmlab.cuda(0)
    if dev.exist:
        pytest.skip("a CUDA device is present")
    with pytest.raises(DeviceError):
        tvmlab.nd.array(np.ones(4, F32), dev)


def test_ndarray_copy_errors():
    a = tvmlab.nd.array(np.ones((2, 3), F32))
    with pytest.raises(RuntimeArgError) as info:
        a.copyfrom(np.ones((3, 2), F32))
    assert "(2, 3)" in str(info.value) and "(3, 2)" in str(info.value)
    with pytest.raises(RuntimeArgError) as info:
        a.copyfrom(np.ones((2, 3), "float64"))
    assert "float64" in str(info.value)


def test_cache_read_of_a_stage_computed_at_its_reader():
    A = te.placeholder((16, 8), name="A")
    B = te.compute((16, 8), lambda i, j: A[i, j] + 1.0, name="B")
    C = te.compute((16, 8), lambda i, j: B[i, j] * 2.0, name="C")
    s = te.create_schedule(C.op)
    s[B].compute_at(s[C], C.op.axis[0])
    before = s.trace.to_json()
    with pytest.raises(ScheduleError) as info:
        s.cache_read(B, "local", [C])
    msg = str(info.value)
    assert "B" in msg and "compute_at" in msg
    assert s.trace.to_json() == before and len(s.stages) == 3
