"""Which CUDA binding the runtime uses: cuda-python unless pycuda is asked for, never what happens to be
installed.  Fake and missing binding modules stand in for drivers, so none of this needs a GPU."""
import sys
import types

import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import te
from tvmlab.errors import DeviceError, RuntimeArgError
from tvmlab.runtime import cuda_driver as cd

import gpu_programs as P


@pytest.fixture(autouse=True)
def fresh_choice(monkeypatch):
    """Each test starts with no binding chosen and none started; the process's own state comes back after."""
    saved = dict(cd._STATE)
    monkeypatch.delenv(cd.ENV_VAR, raising=False)
    cd._STATE.update(backend=None, reason=None, error=None, chosen=None)
    yield
    cd._STATE.clear()
    cd._STATE.update(saved)


class FakePyCUDA:
    """A pycuda.driver with one GPU of compute capability ``cc``: memory is host bytes, launches do nothing,
    and the images handed to module_from_buffer are kept."""

    def __init__(self, cc=(8, 6)):
        self.cc, self.images, self.memory, self.freed = cc, [], {}, []
        fake = self

        class Device:
            def __init__(self, i):
                self.i = i

            @staticmethod
            def count():
                return 1

            def compute_capability(self):
                return fake.cc

            def retain_primary_context(self):
                return types.SimpleNamespace(push=lambda: None)

        self.Device = Device
        self.Context = types.SimpleNamespace(synchronize=lambda: None)

    def init(self):
        pass

    def mem_alloc(self, n):
        ptr = 0x1000 * (len(self.memory) + len(self.freed) + 1)
        self.memory[ptr] = bytearray(n)
        fake = self

        class Allocation(int):       # pycuda's DeviceAllocation: an address that can be freed
            def free(self):
                fake.freed.append(int(self))
                del fake.memory[int(self)]
        return Allocation(ptr)

    def memcpy_htod(self, mem, arr):
        self.memory[int(mem)][:arr.nbytes] = arr.tobytes()

    def memcpy_dtoh(self, arr, mem):
        arr.reshape(-1).view(np.uint8)[:] = np.frombuffer(bytes(self.memory[int(mem)][:arr.nbytes]), np.uint8)

    def module_from_buffer(self, image):
        self.images.append(bytes(image))
        launches = self.launches = []

        def get_function(name):
            return lambda *a, **k: launches.append((name, [int(x) if isinstance(x, np.uintp) else x.value
                                                           for x in a], k))
        return types.SimpleNamespace(get_function=get_function)


def install_fake_pycuda(monkeypatch, cc=(8, 6)):
    drv = FakePyCUDA(cc)
    pkg = types.ModuleType("pycuda")
    pkg.__path__, pkg.driver = [], drv
    monkeypatch.setitem(sys.modules, "pycuda", pkg)
    monkeypatch.setitem(sys.modules, "pycuda.driver", drv)
    return drv


def test_default_is_cuda_python_whatever_else_is_installed(monkeypatch):
    install_fake_pycuda(monkeypatch)               # an importable pycuda that reports a GPU
    assert cd.binding() == "cuda-python"
    b = cd.backend()
    assert b is None or b.name == "cuda-python"
    if b is None:                                  # this machine: cuda-python finds no driver
        assert tvm.cuda(0).exist is False
        assert cd.no_device_reason().startswith("cuda-python:")


@pytest.mark.parametrize("how", ["env", "function"])
def test_pycuda_when_asked_for(monkeypatch, how):
    drv = install_fake_pycuda(monkeypatch)
    if how == "env":
        monkeypatch.setenv(cd.ENV_VAR, "pycuda")
    else:
        assert cd.use_binding("pycuda") == "pycuda"
    assert cd.binding() == "pycuda"
    assert tvm.cuda(0).exist and cd.backend().name == "pycuda"
    assert tvm.runtime.enabled("cuda") and tvm.testing.device_enabled("cuda")
    a = np.arange(10, dtype="float32") - 3.5
    x = tvm.nd.array(a, tvm.cuda(0))               # through the fake driver's memory
    np.testing.assert_array_equal(x.numpy(), a)
    assert len(drv.memory) == 1


def test_use_binding_none_follows_the_environment_again(monkeypatch):
    install_fake_pycuda(monkeypatch)
    cd.use_binding("pycuda")
    assert cd.use_binding(None) == "cuda-python"
    monkeypatch.setenv(cd.ENV_VAR, "pycuda")
    assert cd.use_binding(None) == "pycuda"
    monkeypatch.setenv(cd.ENV_VAR, "cuda-python")
    assert cd.use_binding("pycuda") == "pycuda"    # the function wins over the variable
    assert cd.binding() == "pycuda"


def test_unknown_name_from_the_function_changes_nothing(monkeypatch):
    install_fake_pycuda(monkeypatch)
    cd.use_binding("pycuda")
    for bad in ("cupy", "PyCUDA", "", 3):
        with pytest.raises(DeviceError, match=r"unknown CUDA binding .*'cuda-python', 'pycuda'"):
            cd.use_binding(bad)
    assert cd.binding() == "pycuda"


def test_unknown_name_from_the_environment(monkeypatch):
    monkeypatch.setenv(cd.ENV_VAR, "cupy")
    with pytest.raises(DeviceError, match=r"TVMLAB_CUDA_BINDING='cupy': unknown CUDA binding 'cupy'"):
        cd.binding()
    assert tvm.cuda(0).exist is False              # probing never raises
    assert tvm.runtime.enabled("cuda") is False
    with pytest.raises(DeviceError, match="TVMLAB_CUDA_BINDING='cupy'"):
        tvm.nd.empty((4,), "float32", tvm.cuda(0))
    with pytest.raises(DeviceError, match="TVMLAB_CUDA_BINDING='cupy'"):
        cd.use_binding(None)


@pytest.mark.parametrize("name, module, extra", [("pycuda", "pycuda", "cuda-pycuda"),
                                                 ("cuda-python", "cuda.bindings.driver", "cuda")])
def test_binding_not_installed(monkeypatch, name, module, extra):
    monkeypatch.setitem(sys.modules, module, None)     # import fails as if it were not installed
    with pytest.raises(DeviceError, match=rf"{name!r} is not installed.*tvmlab\[{extra}\]"):
        cd.use_binding(name)
    monkeypatch.setenv(cd.ENV_VAR, name)
    assert tvm.cuda(0).exist is False
    with pytest.raises(DeviceError, match=rf"TVMLAB_CUDA_BINDING='{name}'.*not installed"):
        tvm.nd.empty((4,), "float32", tvm.cuda(0))


def test_binding_installed_but_broken(monkeypatch):
    def broken(name):
        raise ImportError("libcuda.so.1: cannot open shared object file")
    monkeypatch.setattr(cd.importlib, "import_module", broken)
    with pytest.raises(DeviceError, match=r"'pycuda' is installed but does not import \(ImportError: libcuda"):
        cd.use_binding("pycuda")


def test_no_switch_once_a_binding_runs(monkeypatch):
    install_fake_pycuda(monkeypatch)
    cd.use_binding("pycuda")
    assert tvm.cuda(0).exist                       # started
    assert cd.use_binding("pycuda") == "pycuda"    # the same one: fine
    with pytest.raises(DeviceError, match="already runs through 'pycuda'"):
        cd.use_binding("cuda-python")
    assert cd.binding() == "pycuda" and cd.backend().name == "pycuda"


def test_choosing_again_before_start_probes_again(monkeypatch):
    monkeypatch.setenv(cd.ENV_VAR, "pycuda")
    monkeypatch.setitem(sys.modules, "pycuda", None)
    assert tvm.cuda(0).exist is False              # remembered: pycuda is missing
    install_fake_pycuda(monkeypatch)
    cd.use_binding("pycuda")                       # a new choice forgets it
    assert tvm.cuda(0).exist


def _vector_add_mod(target):
    s, args, _ = P.vector_add()
    return tvm.build(s, args, target), args


@pytest.mark.parametrize("target, cc, loaded", [
    ("cuda -arch=sm_80", (8, 6), "cubin"),         # an sm_80 cubin runs on 8.6
    ("cuda -arch=sm_86", (8, 0), "ptx"),           # but an sm_86 one not on 8.0
    ("cuda -arch=sm_80", (9, 0), "ptx"),
    ("cuda", (8, 6), "cubin"),                     # the device's architecture
])
def test_runtime_loads_the_cubin_when_it_fits(monkeypatch, target, cc, loaded):
    pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (the cuda extra) is not installed")
    drv = install_fake_pycuda(monkeypatch, cc)
    cd.use_binding("pycuda")
    f, _ = _vector_add_mod(target)
    kmod = f.imported_modules[0]
    if target == "cuda":
        assert kmod.arch == 86
    dev = tvm.cuda(0)
    arrays = [tvm.nd.array(np.random.default_rng(0).random(16).astype("float32"), dev) for _ in range(3)]
    f(*arrays)
    (image,) = drv.images
    if loaded == "cubin":
        assert image == kmod.get_source("cubin") and image[:4] == b"\x7fELF"
    else:
        assert image == kmod.get_source("ptx").encode() + b"\x00"


def test_build_reads_the_arch_from_the_chosen_binding(monkeypatch):
    pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (the cuda extra) is not installed")
    install_fake_pycuda(monkeypatch, (9, 0))
    cd.use_binding("pycuda")
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1, name="B")
    s = te.create_schedule(B.op)
    s[B].bind(B.op.axis[0], te.thread_axis("threadIdx.x"))
    kmod = tvm.build(s, [A, B], "cuda").imported_modules[0]
    assert kmod.arch == 90 and ".target sm_90" in kmod.get_source("ptx")
    assert kmod.get_source("cubin")[:4] == b"\x7fELF"


def _two_kernels():
    """Two stages, each its own kernel: B is an intermediate in global memory."""
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] * 2, name="B")
    C = te.compute((64,), lambda i: B[63 - i] + 1, name="C")
    s = te.create_schedule(C.op)
    for t in (B, C):
        bx, tx = s[t].split(t.op.axis[0], factor=32)
        s[t].bind(bx, te.thread_axis("blockIdx.x"))
        s[t].bind(tx, te.thread_axis("threadIdx.x"))
    return tvm.build(s, [A, C], "cuda")


def test_device_memory_is_freed_with_its_array_and_intermediates_are_kept_between_calls(monkeypatch):
    """An array's memory goes back to the driver when the array goes; a function's intermediate buffers
    (a kernel per stage) are allocated on the first call and reused by the next ones."""
    pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (the cuda extra) is not installed")
    import gc
    drv = install_fake_pycuda(monkeypatch)
    cd.use_binding("pycuda")
    dev = tvm.cuda(0)
    a = tvm.nd.array(np.arange(8, dtype="float32"), dev)
    assert len(drv.memory) == 1 and not drv.freed
    np.testing.assert_array_equal(a.numpy(), np.arange(8))
    del a
    gc.collect()
    assert len(drv.freed) == 1 and not drv.memory
    f = _two_kernels()
    x, y = tvm.nd.array(np.ones(64, "float32"), dev), tvm.nd.array(np.zeros(64, "float32"), dev)
    f(x, y)
    assert len(drv.memory) == 3                  # x, y and B
    for _ in range(3):
        f(x, y)
    assert len(drv.memory) == 3 and len(drv.freed) == 1       # no new buffer, none freed
    del f
    gc.collect()
    assert len(drv.memory) == 2 and len(drv.freed) == 2       # B went with the function


def test_cuda_python_frees_memory_and_unloads_modules_on_the_devices_context():
    log = []

    class Driver:
        def cuCtxSetCurrent(self, ctx):
            log.append(("current", ctx))
            return (0,)

        def cuMemFree(self, mem):
            log.append(("free", mem))
            return (0,)

        def cuModuleUnload(self, module):
            log.append(("unload", module))
            return (0,)

    b = object.__new__(cd._CudaPython)
    b.d, b.ctx = Driver(), {0: "ctx0"}
    cd._STATE["backend"] = b
    cd.release(tvm.cuda(0), "free", "mem1")
    cd.release(tvm.cuda(0), "unload", "mod1")
    cd.release(tvm.cuda(0), "free", None)                 # nothing to give back
    assert log == [("current", "ctx0"), ("free", "mem1"), ("current", "ctx0"), ("unload", "mod1")]
    cd._STATE["backend"] = None
    cd.release(tvm.cuda(0), "free", "mem2")                 # no driver (interpreter exit): nothing, no error
    assert len(log) == 4


def test_a_prepared_call_launches_what_a_call_does_and_keeps_its_arrays(monkeypatch):
    """``prepare`` (the graph executor's calls) checks and plans once; each call then only launches, the
    same kernels with the same arguments as a plain call, and the arrays live as long as the call."""
    pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (the cuda extra) is not installed")
    import gc
    drv = install_fake_pycuda(monkeypatch)
    cd.use_binding("pycuda")
    dev = tvm.cuda(0)
    f = _two_kernels()
    x, y = tvm.nd.array(np.ones(64, "float32"), dev), tvm.nd.array(np.zeros(64, "float32"), dev)
    f(x, y)
    plain = list(drv.launches)
    assert [name for name, _, _ in plain] == ["default_function_kernel0", "default_function_kernel1"]
    call = f.get_function(f.entry_name).prepare(x, y)
    del x, y
    gc.collect()
    assert len(drv.memory) == 3                 # the prepared call holds x, y (and B with the function)
    drv.launches.clear()
    call()
    call()
    assert drv.launches == plain * 2
    with pytest.raises(RuntimeArgError, match="expected"):
        f.get_function(f.entry_name).prepare(tvm.nd.array(np.ones(64, "float32")), tvm.nd.empty((64,)))
    del call
    gc.collect()
    assert len(drv.memory) == 1
