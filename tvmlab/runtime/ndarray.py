"""NDArray: an n-dimensional array on a device, the argument type of compiled functions.

On the CPU an NDArray owns a C-contiguous numpy buffer whose data pointer is
64-byte aligned, which is what the LLVM backend promises the optimiser
(``align 64`` on every buffer argument).  Constructors always copy, so two
NDArrays never share memory.  bool arrays hold one byte (0 or 1) per element.

Other device types plug in with ``register_allocator``; allocating on a device
that does not exist raises DeviceError.

An array of vector elements (dtype "float32x2", CPU only) has its shape in
elements, as in TVM; its numpy view has one more, trailing dimension of the
lanes, which is how the elements lie in memory.
"""
from __future__ import annotations

import numpy as np

from ..errors import DeviceError, RuntimeArgError, TVMLabError
from ..ir import dtype as dt
from .device import Device, cpu

ALIGNMENT = 64

# device_type -> (from_numpy(np_array, device) -> array, empty(shape, dtype, device) -> array)
_ALLOCATORS = {}


def register_allocator(device_type, from_numpy, empty_fn, override=False):
    """Let ``array`` / ``empty`` create arrays on a non-CPU device type."""
    if device_type in _ALLOCATORS and not override:
        raise DeviceError(f"an allocator for {device_type!r} is already registered")
    _ALLOCATORS[device_type] = (from_numpy, empty_fn)


def _dtype_of(dtype, vector=False):
    """Canonical dtype string, rejecting handle dtypes, and vector dtypes unless ``vector``."""
    try:
        name = dt.canonical(dtype)
    except TVMLabError:
        raise RuntimeArgError(
            f"cannot make an NDArray of dtype {dtype!r}; supported: {', '.join(dt.SUPPORTED)}") from None
    if (dt.lanes(name) != 1 and not vector) or dt.is_handle(name):
        raise RuntimeArgError(f"cannot make an NDArray of dtype {name!r}; supported: {', '.join(dt.SUPPORTED)}")
    return name


def _numpy_dtype(name):
    """The numpy dtype of one lane of ``name``."""
    return np.dtype(dt.to_numpy(dt.element_of(name)))


def _host_only(name, device):
    if dt.lanes(name) != 1 and device.device_type != "cpu":
        raise RuntimeArgError(f"arrays of vector elements ({name}) live on the CPU only, not on {device!r}")


def _shape_of(shape):
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        out = tuple(int(s) for s in shape)
    except (TypeError, ValueError):
        raise RuntimeArgError(f"shape must be a tuple of non-negative ints, got {shape!r}") from None
    if any(s < 0 for s in out):
        raise RuntimeArgError(f"shape must be a tuple of non-negative ints, got {shape!r}")
    return out


def _aligned_empty(shape, np_dtype):
    """A C-contiguous numpy array whose data pointer is ALIGNMENT-aligned."""
    count = int(np.prod(shape, dtype=np.int64))
    nbytes = max(count, 1) * np_dtype.itemsize     # never an empty slice: its pointer is arbitrary
    raw = np.empty(nbytes + ALIGNMENT, dtype=np.uint8)
    offset = (-raw.ctypes.data) % ALIGNMENT
    return raw[offset:offset + nbytes].view(np_dtype)[:count].reshape(shape)


class NDArray:
    """An array on a device; on the CPU a 64-byte aligned, C-contiguous buffer."""
    __slots__ = ("_arr", "_device", "_ptr", "_dtype", "__weakref__")

    def __init__(self, arr, device, dtype=None):
        self._arr = arr
        self._device = device
        self._ptr = arr.ctypes.data
        self._dtype = dtype or arr.dtype.name    # "bfloat16" arrays hold uint16 bits

    # ------------------------------------------------------------ properties
    @property
    def shape(self):
        """In elements: an array of ``float32x2`` of shape (n,) holds 2n floats."""
        shape = self._arr.shape
        return shape if dt.lanes(self._dtype) == 1 else shape[:-1]

    @property
    def dtype(self):
        return self._dtype

    @property
    def device(self):
        return self._device

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return self._arr.size // dt.lanes(self._dtype)

    @property
    def nbytes(self):
        return self._arr.nbytes

    def _data_ptr(self):
        """Address of the first element (what compiled functions receive)."""
        return self._ptr

    # ------------------------------------------------------------ copies
    def numpy(self):
        """A numpy copy of the contents (with a trailing lanes dimension for vector elements)."""
        return self._arr.copy()

    asnumpy = numpy

    def __array__(self, dtype=None, copy=None):
        return np.array(self._arr, dtype=dtype, copy=True)

    def copyfrom(self, source):
        """Copy ``source`` (NDArray, numpy array, list or scalar) into this array.

        NDArrays and numpy arrays must match shape and dtype exactly; Python
        lists and scalars are converted to this array's dtype.  An array of vector
        elements takes a numpy array of its shape plus the lanes, of its lanes' dtype or
        one numpy casts to it within a kind (float64 to float32: numpy has no vector
        dtype to match, so sources are converted, as in TVM).
        """
        self._arr[...] = self._checked_source(source)
        return self

    def _checked_source(self, source):
        """``source`` as a host numpy array of exactly this array's dtype and shape."""
        lanes = dt.lanes(self.dtype)
        if isinstance(source, NDArray):
            if source.dtype != self.dtype:
                raise RuntimeArgError(f"copyfrom: dtype mismatch: this array is {self.dtype}, "
                                      f"source is {source.dtype}")
            src = source._arr
        elif isinstance(source, np.ndarray):
            src = source
            if lanes != 1:
                return self._vector_source(src)
        else:
            try:
                src = np.asarray(source, dtype=_numpy_dtype(self.dtype))
            except (TypeError, ValueError) as e:
                raise RuntimeArgError(
                    f"copyfrom: cannot convert {type(source).__name__} to {self.dtype}: {e}") from None
        if getattr(src.dtype, "name", None) == "bfloat16" and dt.is_bfloat16(self.dtype):
            src = src.view(np.uint16)
        if src.dtype != _numpy_dtype(self.dtype):
            raise RuntimeArgError(f"copyfrom: dtype mismatch: this array is {self.dtype}, source is {src.dtype.name}")
        if src.shape != self._arr_shape():
            raise RuntimeArgError(f"copyfrom: shape mismatch: this array is {self._shape_text()}, "
                                  f"source is {src.shape}")
        return src

    def _arr_shape(self):
        lanes = dt.lanes(self.dtype)
        return tuple(self.shape) + (() if lanes == 1 else (lanes,))

    def _shape_text(self):
        lanes = dt.lanes(self.dtype)
        shape = tuple(self.shape)
        return f"{shape}" if lanes == 1 else f"{shape} of {self.dtype} (a numpy shape of {shape + (lanes,)})"

    def _vector_source(self, src):
        """A numpy source for an array of vector elements, cast within its kind to the lanes' dtype."""
        want = _numpy_dtype(self.dtype)
        if not np.can_cast(src.dtype, want, "same_kind"):
            raise RuntimeArgError(f"copyfrom: dtype mismatch: this array is {self.dtype}, source is "
                                  f"{src.dtype.name}, which does not cast to {want.name} within its kind")
        if src.shape != self._arr_shape():
            raise RuntimeArgError(f"copyfrom: shape mismatch: this array is {self._shape_text()}, "
                                  f"source is {src.shape}")
        return src.astype(want, copy=False)

    def copyto(self, target):
        """Copy into ``target``: a Device (returns a new array there) or an NDArray."""
        if isinstance(target, Device):
            return array(self._arr, device=target)
        if isinstance(target, NDArray):
            return target.copyfrom(self)
        raise RuntimeArgError(f"copyto: target must be a Device or an NDArray, got {type(target).__name__}")

    def __repr__(self):
        return f"<tvmlab.nd.NDArray shape={self.shape}, {self._device!r}>\n{self._arr!r}"


class DeviceNDArray(NDArray):
    """Base of arrays whose data a device API holds (CUDA memory, OpenGL textures).

    Shape and dtype live here; a subclass moves the data with ``_read()`` (a
    host numpy copy) and ``_write(src)``.  Generic NDArray code reads ``_arr``,
    which is that host copy.
    """
    __slots__ = ("_shape",)

    @property
    def _arr(self):
        return self._read()

    @property
    def shape(self):
        return self._shape

    @property
    def ndim(self):
        return len(self._shape)

    @property
    def size(self):
        return int(np.prod(self._shape, dtype=np.int64))

    @property
    def nbytes(self):
        return self.size * np.dtype(dt.to_numpy(self._dtype)).itemsize

    def numpy(self):
        return self._read()

    asnumpy = numpy

    def copyfrom(self, source):
        self._write(self._checked_source(source))
        return self

    def _read(self):
        raise NotImplementedError

    def _write(self, src):
        raise NotImplementedError


def array(arr, device=None, dtype=None):
    """Copy ``arr`` (numpy array, list, scalar or NDArray) into a new NDArray on ``device``."""
    device = cpu(0) if device is None else device
    if not isinstance(device, Device):
        raise RuntimeArgError(f"device must be a Device such as tvmlab.cpu(0), got {device!r}")
    name = None if dtype is None else _dtype_of(dtype, vector=True)
    if name is not None and dt.lanes(name) != 1:
        return _vector_array(arr, name, device)
    if isinstance(arr, NDArray):
        name = name or arr.dtype
        arr = arr._arr
    src = np.asarray(arr) if isinstance(arr, np.ndarray) else arr
    if getattr(getattr(src, "dtype", None), "name", None) == "bfloat16":     # ml_dtypes' bfloat16
        src, name = src.view(np.uint16), "bfloat16"
    try:
        src = np.asarray(src, dtype=None if name is None else dt.to_numpy(name))
    except (TypeError, ValueError) as e:
        raise RuntimeArgError(f"cannot make an NDArray from {type(arr).__name__}: {e}") from None
    name = name or _dtype_of(src.dtype)
    np_dtype = np.dtype(dt.to_numpy(name))
    if device.device_type != "cpu":
        out = _other_device(device)[0](src.astype(np_dtype, copy=False), device)
        out._dtype = name
        return out
    out = _aligned_empty(src.shape, np_dtype)
    out[...] = src
    return NDArray(out, device, name)


def empty(shape, dtype="float32", device=None):
    """A new uninitialised NDArray."""
    device = cpu(0) if device is None else device
    if not isinstance(device, Device):
        raise RuntimeArgError(f"device must be a Device such as tvmlab.cpu(0), got {device!r}")
    shape, name = _shape_of(shape), _dtype_of(dtype, vector=True)
    _host_only(name, device)
    if device.device_type != "cpu":
        return _other_device(device)[1](shape, name, device)
    lanes = dt.lanes(name)
    return NDArray(_aligned_empty(shape + (() if lanes == 1 else (lanes,)), _numpy_dtype(name)), device, name)


def _vector_array(arr, name, device):
    """``array(arr, dtype="float32x2")``: ``arr``'s last dimension holds the lanes."""
    _host_only(name, device)
    lanes = dt.lanes(name)
    src = arr._arr if isinstance(arr, NDArray) else np.asarray(arr)
    if src.ndim < 1 or src.shape[-1] != lanes:
        raise RuntimeArgError(f"cannot make an NDArray of {name} from shape {src.shape}: the last "
                              f"dimension must hold the {lanes} lanes")
    return empty(src.shape[:-1], name, device).copyfrom(src)


def _other_device(device):
    device.require()
    fns = _ALLOCATORS.get(device.device_type)
    if fns is None:
        raise DeviceError(f"cannot allocate arrays on {device!r}: no allocator is registered for it")
    return fns
