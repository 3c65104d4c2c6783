"""The CPU runtime: devices, NDArrays, argument checks before native calls, timing, targets."""
import importlib

import numpy as np
import pytest

from tvmlab.codegen import Target, build_llvm, get_builder, list_targets, register_target
from tvmlab.codegen import registry
from tvmlab.errors import BuildError, DeviceError, RuntimeArgError, TVMLabError
from tvmlab.ir.expr import Add, IntImm, Load, Mul, SizeVar, Var
from tvmlab.ir.function import Buffer, PrimFunc
from tvmlab.ir.stmt import For, Store
from tvmlab import runtime as rt
from tvmlab.runtime import ndarray as nd

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64"]
RNG = np.random.default_rng(1)


def sample(shape, dtype):
    if dtype == "bool":
        return RNG.integers(0, 2, size=shape).astype(bool)
    if np.dtype(dtype).kind == "f":
        return RNG.standard_normal(size=shape).astype(dtype)
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)


# ------------------------------------------------------------------ NDArray
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (7,), (3, 5), (2, 3, 4)])
def test_ndarray_round_trip(dtype, shape):
    a = sample(shape, dtype)
    x = nd.array(a)
    assert x.shape == shape and x.dtype == dtype and x.device == rt.cpu(0)
    assert x._data_ptr() % 64 == 0
    out = x.numpy()
    np.testing.assert_array_equal(out, a)
    assert out.dtype == a.dtype
    out[...] = out  # the copy is writable and independent
    np.testing.assert_array_equal(np.asarray(x), a)
    e = nd.empty(shape, dtype)
    assert e.shape == shape and e.dtype == dtype and e._data_ptr() % 64 == 0


def test_ndarray_copies_and_layout():
    a = np.arange(12, dtype="float32").reshape(3, 4)[:, ::2]      # a non-contiguous view
    x = nd.array(a)
    np.testing.assert_array_equal(x.numpy(), a)
    a[0, 0] = 99
    assert x.numpy()[0, 0] == 0                                   # array() copied
    y = nd.array(x)
    assert y._data_ptr() != x._data_ptr()
    assert nd.array([1, 2, 3], dtype="int8").dtype == "int8"
    assert nd.array([True, False]).dtype == "bool"
    assert nd.array([[1.5]]).dtype == "float64"
    b = nd.array(np.array([True, False, True]))
    assert bytes(np.ctypeslib.as_array((np.ctypeslib.ctypes.c_uint8 * 3).from_address(b._data_ptr()))) == b"\1\0\1"
    assert np.asarray(x, dtype="float64").dtype == np.float64
    assert x.asnumpy().shape == (3, 2) and x.ndim == 2 and x.size == 6 and x.nbytes == 24
    assert "shape=(3, 2)" in repr(x) and "cpu(0)" in repr(x)


def test_ndarray_of_vector_elements():
    """Shape in elements, numpy view with the lanes last; numpy sources cast within their kind."""
    host = RNG.standard_normal((3, 4, 2))
    a = nd.empty((3, 4), "float32x2")
    assert (a.shape, a.ndim, a.size, a.dtype, a.nbytes) == ((3, 4), 2, 12, "float32x2", 96)
    a.copyfrom(host)                                   # float64 casts to the lanes' float32
    np.testing.assert_allclose(a.numpy(), host.astype("float32"))
    assert np.asarray(a).shape == (3, 4, 2)
    b = nd.array(a.numpy(), dtype="float32x2")
    np.testing.assert_array_equal(b.numpy(), a.numpy())
    c = nd.empty((3, 4), "float32x2").copyfrom(b)
    np.testing.assert_array_equal(c.numpy(), a.numpy())
    with pytest.raises(RuntimeArgError, match=r"shape mismatch: this array is \(3, 4\) of float32x2 "
                                              r"\(a numpy shape of \(3, 4, 2\)\), source is \(3, 4\)"):
        a.copyfrom(host[..., 0])
    with pytest.raises(RuntimeArgError, match="source is complex128, which does not cast to float32"):
        a.copyfrom(host.astype("complex128"))
    with pytest.raises(RuntimeArgError, match="this array is float32x2, source is float32x4"):
        a.copyfrom(nd.empty((3, 4), "float32x4"))
    with pytest.raises(RuntimeArgError, match="the last dimension must hold the 2 lanes"):
        nd.array(host[..., :1], dtype="float32x2")
    with pytest.raises(RuntimeArgError, match=r"vector elements \(float32x2\) live on the CPU only"):
        nd.empty((4,), "float32x2", rt.cuda(0))
    np.testing.assert_array_equal(a.numpy(), host.astype("float32"))     # failed copies changed nothing


def test_copyfrom_copyto():
    x = nd.empty((2, 3), "float32")
    x.copyfrom(np.ones((2, 3), "float32"))
    np.testing.assert_array_equal(x.numpy(), np.ones((2, 3)))
    x.copyfrom([[1, 2, 3], [4, 5, 6]])                            # lists convert to the array's dtype
    np.testing.assert_array_equal(x.numpy(), [[1, 2, 3], [4, 5, 6]])
    with pytest.raises(RuntimeArgError, match="dtype mismatch: this array is float32, source is float64"):
        x.copyfrom(np.ones((2, 3)))
    with pytest.raises(RuntimeArgError, match=r"shape mismatch: this array is \(2, 3\), source is \(3, 2\)"):
        x.copyfrom(np.ones((3, 2), "float32"))
    with pytest.raises(RuntimeArgError, match="shape mismatch"):
        x.copyfrom(nd.empty((6,), "float32"))
    y = x.copyto(rt.cpu(0))
    assert y is not x and y._data_ptr() != x._data_ptr()
    np.testing.assert_array_equal(y.numpy(), x.numpy())
    z = nd.empty((2, 3), "float32")
    x.copyto(z)
    np.testing.assert_array_equal(z.numpy(), x.numpy())
    with pytest.raises(RuntimeArgError, match="dtype mismatch"):
        x.copyto(nd.empty((2, 3), "int32"))
    with pytest.raises(RuntimeArgError, match="Device or an NDArray"):
        x.copyto("cpu")
    if rt.cuda(0).exist:
        np.testing.assert_array_equal(x.copyto(rt.cuda(0)).numpy(), x.numpy())
    else:
        with pytest.raises(DeviceError, match="no such device: cuda\\(0\\)"):
            x.copyto(rt.cuda(0))


def test_ndarray_constructor_errors():
    with pytest.raises(RuntimeArgError, match="complex128"):
        nd.array(np.ones(3, dtype=complex))
    with pytest.raises(RuntimeArgError, match="handle"):
        nd.empty((3,), "handle")
    with pytest.raises(RuntimeArgError, match="non-negative"):
        nd.empty((2, -1))
    with pytest.raises(RuntimeArgError, match="Device"):
        nd.array([1.0], device="cpu")
    with pytest.raises(DeviceError, match="no such device: opengl\\(5\\)"):
        nd.empty((3,), device=rt.opengl(5))
    assert issubclass(RuntimeArgError, TVMLabError) and issubclass(DeviceError, TVMLabError)


# ------------------------------------------------------------------ devices
def test_device_mapping():
    assert rt.device("llvm") == rt.cpu(0) == rt.device("cpu", 0)
    assert rt.device("llvm -mcpu=skylake") == rt.cpu(0)
    assert rt.device(Target("llvm")) == rt.cpu(0)
    assert repr(rt.device("cpu", 1)) == "cpu(1)" and rt.cpu(1).device_id == 1
    assert rt.cpu().exist and rt.cpu().device_type == "cpu"
    rt.cpu().sync()
    for name, kind in (("cuda", "cuda"), ("gpu", "cuda"), ("opengl", "opengl"), ("gl", "opengl")):
        d = rt.device(name)
        assert d.device_type == kind and isinstance(d.exist, bool)
    assert len({rt.cpu(0), rt.device("llvm"), rt.cpu(1)}) == 2
    with pytest.raises(DeviceError, match="unknown device 'tpu'; valid names: .*cpu.*llvm"):
        rt.device("tpu")
    with pytest.raises(DeviceError, match="non-negative"):
        rt.cpu(-1)


# ------------------------------------------------------------------ targets and registry
def test_target_parsing():
    t = Target("llvm -mcpu=znver4 -mattr=+avx2,-avx512f -system-lib")
    assert t.kind == "llvm" and t.keys == ("cpu",)
    assert t.kind.name == "llvm" and rt.device(t.kind.name, 0) == rt.cpu(0)   # TVM's spelling
    assert t.options == {"mcpu": "znver4", "mattr": "+avx2,-avx512f", "system-lib": True}
    assert str(t) == "llvm -mcpu=znver4 -mattr=+avx2,-avx512f -system-lib" and t.attrs is t.options
    assert Target(t) == t and t == "llvm -mcpu=znver4 -mattr=+avx2,-avx512f -system-lib"
    assert "llvm" in list_targets() and "llvm" in Target.list_kinds()
    for bad, msg in (("foo", "unknown target 'foo'; known: .*llvm"), ("c", "unknown target 'c'"),
                     ("llvm mcpu=x", "malformed option"), ("llvm -mcpu=", "has no value"), ("", "string")):
        with pytest.raises(BuildError, match=msg):
            Target(bad)


def test_register_target():
    calls = []

    def builder(mod, target):
        calls.append(str(target))
        return "built"

    try:
        register_target("mytarget", builder, keys=("cpu", "test"))
        assert get_builder("mytarget") is builder and Target("mytarget -x=1").keys == ("cpu", "test")
        with pytest.raises(BuildError, match="already registered"):
            register_target("mytarget", builder)
        register_target("mytarget", lambda m, t: "again", override=True)
        assert get_builder("mytarget")(None, None) == "again"
    finally:
        registry._BUILDERS.pop("mytarget", None)
    with pytest.raises(BuildError, match="unknown target 'mytarget'"):
        get_builder("mytarget")


# ------------------------------------------------------------------ calling compiled functions
def _vadd_symbolic():
    n = SizeVar("n")
    A, B, C = (Buffer(x, (n,), "float32") for x in "ABC")
    i = Var("i")
    body = For(i, IntImm("int32", 0), n, "serial",
               Store(C.data, Add(Load("float32", A.data, i), Load("float32", B.data, i)), i))
    return build_llvm(PrimFunc("vadd", [A.data, B.data, C.data, n], {b.data: b for b in (A, B, C)}, body))


def _matrix():
    M, K = Buffer("M", (3, 4), "int32"), Buffer("K", (3, 4), "int32")
    i = Var("i")
    scale = Var("scale", "int32")
    body = For(i, IntImm("int32", 0), IntImm("int32", 12), "serial",
               Store(K.data, Mul(Load("int32", M.data, i), scale), i))
    return build_llvm(PrimFunc("mscale", [M.data, scale, K.data], {M.data: M, K.data: K}, body))


@pytest.fixture(scope="module")
def vadd():
    return _vadd_symbolic()


@pytest.fixture(scope="module")
def mscale():
    return _matrix()


def test_call_ok(vadd, mscale):
    a, b = nd.array(np.ones(5, "float32")), nd.array(np.arange(5, dtype="float32"))
    c = nd.empty((5,), "float32")
    vadd(a, b, c)
    np.testing.assert_array_equal(c.numpy(), np.arange(1, 6))
    m = nd.array(np.arange(12, dtype="int32").reshape(3, 4))
    k = nd.empty((3, 4), "int32")
    mscale(m, -2, k)
    np.testing.assert_array_equal(k.numpy(), -2 * np.arange(12).reshape(3, 4))
    mscale(m, np.int64(3), k)
    np.testing.assert_array_equal(k.numpy(), 3 * np.arange(12).reshape(3, 4))


def test_wrong_argument_count(vadd, mscale):
    a = nd.empty((4,), "float32")
    with pytest.raises(RuntimeArgError, match=r"vadd: expected 3 arguments \(A, B, C\) or all 4 \(A, B, C, n\), got 2"):
        vadd(a, a)
    with pytest.raises(RuntimeArgError, match="signature: vadd\\(A: float32\\[n\\]"):
        vadd(a, a, a, 4, 5)
    with pytest.raises(RuntimeArgError, match=r"mscale: expected 3 arguments \(M, scale, K\), got 2"):
        mscale(a, a)


def test_wrong_dtype_shape_and_kind(vadd, mscale):
    a = nd.empty((4,), "float32")
    with pytest.raises(RuntimeArgError, match="argument 2 'B': expected dtype float32, got float64"):
        vadd(a, nd.empty((4,), "float64"), a)
    with pytest.raises(RuntimeArgError, match=r"argument 3 'C': expected a 1-d array of shape \(n,\), got a 2-d array"):
        vadd(a, nd.empty((4,), "float32"), nd.empty((2, 2), "float32"))
    with pytest.raises(RuntimeArgError, match=r"argument 3 'K': expected shape\[1\] = 4, got 3"):
        mscale(nd.empty((3, 4), "int32"), 1, nd.empty((3, 3), "int32"))
    with pytest.raises(RuntimeArgError, match="argument 1 'A': expected an NDArray, got ndarray "
                                              r"\(wrap numpy arrays with tvmlab.nd.array\)"):
        vadd(np.ones(4, "float32"), a, a)
    with pytest.raises(RuntimeArgError, match="argument 1 'A': expected an NDArray, got list"):
        vadd([1.0], a, a)
    with pytest.raises(RuntimeArgError, match="argument 2 'scale': expected an integer \\(int32\\), got float"):
        mscale(nd.empty((3, 4), "int32"), 1.5, nd.empty((3, 4), "int32"))
    with pytest.raises(RuntimeArgError, match="argument 2 'scale': 3000000000 does not fit in int32"):
        mscale(nd.empty((3, 4), "int32"), 3_000_000_000, nd.empty((3, 4), "int32"))


def test_inconsistent_symbolic_dim(vadd):
    a, b = nd.empty((1024,), "float32"), nd.empty((1000,), "float32")
    with pytest.raises(RuntimeArgError, match=r"argument 2 'B': shape\[0\] is 1000 but n = 1024 "
                                              r"\(bound by argument 1 'A' shape\[0\]\)"):
        vadd(a, b, a.copyto(rt.cpu()))
    with pytest.raises(RuntimeArgError, match="argument 4 'n' is 7 but the shapes give n = 1024"):
        vadd(a, a.copyto(rt.cpu()), a.copyto(rt.cpu()), 7)


def test_aliasing_a_written_buffer_is_rejected(vadd):
    a, c = nd.array(np.ones(4, "float32")), nd.empty((4,), "float32")
    vadd(a, a, c)                              # the same input twice is fine
    np.testing.assert_array_equal(c.numpy(), 2 * np.ones(4))
    with pytest.raises(RuntimeArgError, match="'A' and 'C' are the same array, but 'C' is written"):
        vadd(a, c, a)


def test_misuse_never_reaches_native_code(vadd):
    """Every misuse raises a TVMLabError; afterwards the function still works."""
    a = nd.array(np.ones(3, "float32"))
    for args in [(), (a,), (a, a, "x"), (a, a, None), (a, a, nd.empty((3,), "int8")), (1, 2, 3),
                 (a, a, nd.empty((4,), "float32")), (a, a, a.copyto(rt.cpu()), -1)]:
        with pytest.raises(TVMLabError):
            vadd(*args)
    c = nd.empty((3,), "float32")
    vadd(a, a, c)
    np.testing.assert_array_equal(c.numpy(), [2, 2, 2])


def test_module_lookup(vadd):
    assert vadd.entry_name == "vadd" and vadd.type_key == "llvm"
    assert "vadd" in vadd and vadd.function_names == ["vadd"]
    assert "vadd(A: float32[n]" in repr(vadd["vadd"])
    with pytest.raises(RuntimeArgError, match="module has no function 'nope'; functions: vadd"):
        vadd.get_function("nope")


# ------------------------------------------------------------------ timing
def test_time_evaluator(vadd):
    a = nd.array(np.ones(256, "float32"))
    c = nd.empty((256,), "float32")
    ev = vadd.time_evaluator("vadd", rt.cpu(0), number=5, repeat=3)
    res = ev(a, a, c)
    assert isinstance(res, rt.BenchmarkResult) and len(res.results) == 3
    assert all(t > 0 for t in res.results)
    assert res.min <= res.median <= res.max and res.min <= res.mean <= res.max and res.std >= 0
    text = repr(res)
    assert "Execution time summary" in text and "mean (ms)" in text and "std (ms)" in text
    np.testing.assert_array_equal(c.numpy(), 2 * np.ones(256))
    slow = vadd.time_evaluator("vadd", rt.cpu(0), number=1, repeat=1, min_repeat_ms=5)(a, a, c)
    assert slow.results[0] < 1e-3           # per-call mean, over the many calls needed to fill 5 ms
    with pytest.raises(RuntimeArgError, match="expected dtype float32"):
        ev(a, a, nd.empty((256,), "int32"))
    with pytest.raises(RuntimeArgError, match="number must be"):
        vadd.time_evaluator("vadd", rt.cpu(0), number=0)
    with pytest.raises(RuntimeArgError, match="no function"):
        vadd.time_evaluator("other", rt.cpu(0))


def test_time_evaluator_uses_the_devices_own_timer():
    """A device that times itself (a GPU's events) is timed so: its clock, not the host's, gives each
    repeat, and min_repeat_ms raises number by that clock."""
    devmod = importlib.import_module("tvmlab.runtime.device")
    from tvmlab.runtime.timer import make_time_evaluator
    calls, timed = [], []

    def timer(device_id, fn):
        before = len(calls)
        fn()
        timed.append(len(calls) - before)
        return 2e-3 * (len(calls) - before)        # this device takes 2 ms per call, whatever the host does

    devmod.register_device_type("fake_timed", timer=timer, exist=lambda i: True)
    try:
        dev = rt.device("fake_timed")
        ev = make_time_evaluator(lambda *a: (lambda: calls.append(a)), dev, number=3, repeat=2, min_repeat_ms=10)
        res = ev(1, 2)
        assert res.results == pytest.approx([2e-3, 2e-3])
        assert timed[0] == 3 and all(n * 2 >= 10 for n in timed[1:])   # grown until a repeat lasts 10 ms
        assert calls[0] == (1, 2) and len(calls) == 1 + sum(timed)       # one warm-up call, untimed
        assert dev.time(lambda: calls.append(0)) == pytest.approx(2e-3)
        # a device without a timer: the host's clock around the calls and sync
        t = rt.cpu(0).time(lambda: __import__("time").sleep(0.002))
        assert 0.002 <= t < 1.0
    finally:
        devmod._TYPES.pop("fake_timed")
        devmod._ALIASES.pop("fake_timed")


def test_cuda_events_bracket_the_launches():
    """The cuda-python backend records one event before the launches and one after, waits for the
    second, and returns their distance in seconds."""
    from tvmlab.runtime.cuda_driver import _CudaPython
    log = []

    class Driver:
        class CUevent_flags:
            CU_EVENT_DEFAULT = 0

        def cuEventCreate(self, flags):
            log.append("create")
            return 0, f"ev{log.count('create')}"

        def cuEventRecord(self, ev, stream):
            log.append(("record", ev, stream))
            return (0,)

        def cuEventSynchronize(self, ev):
            log.append(("sync", ev))
            return (0,)

        def cuEventElapsedTime(self, a, b):
            return 0, 1.5

    b = object.__new__(_CudaPython)
    b.d, b._events = Driver(), {}
    assert b.elapsed(lambda: log.append("launch")) == pytest.approx(1.5e-3)
    assert log == ["create", "create", ("record", "ev1", 0), "launch", ("record", "ev2", 0), ("sync", "ev2")]
    b.elapsed(lambda: None)
    assert log.count("create") == 2                # the events are made once per device


def test_device_ndarray_base_moves_data_only_through_read_and_write():
    """A device array (CUDA memory, GL textures) implements _read/_write; the rest is shared."""
    from tvmlab.runtime.ndarray import DeviceNDArray

    class HostBacked(DeviceNDArray):
        __slots__ = ("_store",)

        def __init__(self, shape, dtype):
            self._shape, self._dtype, self._device, self._ptr = tuple(shape), dtype, rt.cpu(0), 0
            self._store = np.full(shape, -1, dtype)

        def _read(self):
            return self._store.copy()

        def _write(self, src):
            self._store[...] = src

    x = np.random.default_rng(0).standard_normal((3, 4)).astype("float32")
    d = HostBacked((3, 4), "float32").copyfrom(x)
    assert d.shape == (3, 4) and d.ndim == 2 and d.size == 12 and d.nbytes == 48
    np.testing.assert_array_equal(d.numpy(), x)
    np.testing.assert_array_equal(np.asarray(d), x)
    back = d.copyto(rt.cpu(0))
    np.testing.assert_array_equal(back.numpy(), x)
    host = nd.empty((3, 4), "float32")
    host.copyfrom(d)
    np.testing.assert_array_equal(host.numpy(), x)
    with pytest.raises(RuntimeArgError, match="shape mismatch"):
        d.copyfrom(np.zeros((4, 3), "float32"))
    with pytest.raises(RuntimeArgError, match="dtype mismatch"):
        d.copyfrom(np.zeros((3, 4), "float64"))
    np.testing.assert_array_equal(d.numpy(), x)
    assert "shape=(3, 4)" in repr(d)


def test_prepared_call_keeps_its_arrays_and_code_alive(isolated):
    """A prepared call outlives the caller's references to the arrays and the module (checked in a
    separate process: a use-after-free would crash it)."""
    code = """
        import gc
        import numpy as np
        import tvmlab
        from tvmlab import te

        def prepared():
            A = te.placeholder((1 << 16,), name="A")
            C = te.compute(A.shape, lambda i: A[i] * 2.0, name="C")
            f = tvmlab.build(te.create_schedule(C.op), [A, C])
            a = np.arange(1 << 16, dtype="float32")
            c = tvmlab.nd.array(np.full(1 << 16, np.nan, "float32"))
            return f.get_function(f.entry_name).prepare(tvmlab.nd.array(a), c), a, c

        call, a, c = prepared()
        gc.collect()
        junk = [np.ones(1 << 16, "float32") for _ in range(64)]   # reuse freed memory if it was freed
        call()
        np.testing.assert_array_equal(c.numpy(), a * 2)
        print("ok")
    """
    rc, out = isolated(code)
    assert rc == 0 and out.strip().endswith("ok"), out


# ------------------------------------------------------------------ tvm.runtime.enabled
def test_runtime_enabled():
    import tvmlab
    assert rt.enabled("llvm") and rt.enabled("cpu") and rt.enabled("llvm -mcpu=generic")
    assert rt.enabled(Target("llvm"))
    assert rt.enabled("cuda") == rt.enabled("gpu") == rt.enabled("cuda -arch=sm_80") == tvmlab.cuda(0).exist
    assert rt.enabled("opengl") == tvmlab.opengl(0).exist
    assert rt.enabled("opencl") == tvmlab.opencl(0).exist
    for kind in ("vulkan", "metal", "rocm", "hexagon", "no such target", ""):
        assert rt.enabled(kind) is False
    device_enabled = tvmlab.testing.device_enabled                # agrees for every target kind
    assert device_enabled("llvm") and device_enabled("llvm -mcpu=generic")
    assert device_enabled("cuda") == rt.enabled("cuda") and device_enabled("opengl") == rt.enabled("opengl")
    assert not device_enabled("vulkan") and not device_enabled("nosuch")
