"""Arrays on the OpenGL device: a 2-D texture (fragment passes) and/or a storage buffer (compute).

A tensor of ``n`` elements, flattened row-major, is laid out in a texture of
width ``w = min(n, limit)`` and height ``ceil(n / w)``: element ``i`` is texel
``(i % w, i / w)``.  The limit is the device's GL_MAX_TEXTURE_SIZE unless
``set_texture_width`` lowers it (tests use that to get many rows and a last
row that is not full).  Shaders receive each texture's width as a uniform, so
one shader serves every layout.

Compute shaders use a shader storage buffer of ``w * h`` elements holding the
same flat data; the array keeps whichever copy was written last and converts
on the GPU (pixel pack/unpack buffers) when the other one is asked for.
Supported dtypes: float32, int32, uint32.
"""
from __future__ import annotations

import ctypes
import weakref

import numpy as np

from ..errors import DeviceError, RuntimeArgError
from . import opengl_context as glc
from .device import register_device_type
from .ndarray import DeviceNDArray, _dtype_of, _shape_of, register_allocator

_LIMIT = {"width": None}

# dtype -> (internal format, pixel format, pixel type) as GL enum names
FORMATS = {"float32": ("GL_R32F", "GL_RED", "GL_FLOAT"),
           "int32": ("GL_R32I", "GL_RED_INTEGER", "GL_INT"),
           "uint32": ("GL_R32UI", "GL_RED_INTEGER", "GL_UNSIGNED_INT")}


def set_texture_width(width=None):
    """Limit the texture width of arrays made from now on (None: the device's maximum).

    Returns the previous setting.
    """
    if width is not None and (not isinstance(width, int) or isinstance(width, bool) or width < 1):
        raise RuntimeArgError(f"texture width must be a positive int or None, got {width!r}")
    old = _LIMIT["width"]
    _LIMIT["width"] = width
    return old


def texture_layout(count, max_size):
    """(width, height) of the texture holding ``count`` elements."""
    limit = min(_LIMIT["width"] or max_size, max_size)
    w = max(1, min(count, limit))
    h = max(1, -(-count // w))
    if h > max_size:
        raise DeviceError(f"a tensor of {count} elements does not fit in a {max_size}x{max_size} texture "
                          f"(rows of {w})")
    return w, h


def _check_dtype(dtype):
    if dtype not in FORMATS:
        raise RuntimeArgError(f"OpenGL arrays hold {', '.join(FORMATS)}; got dtype {dtype}")


def _enums(GL, dtype):
    return tuple(getattr(GL, n) for n in FORMATS[dtype])


class GLArray(DeviceNDArray):
    """An NDArray whose data lives on the OpenGL device; ``numpy()`` reads it back."""
    __slots__ = ("_count", "_width", "_height", "_tex", "_buf", "_valid", "_fin")

    def __init__(self, shape, dtype, device):
        _check_dtype(dtype)
        self._shape = tuple(shape)
        self._dtype = dtype
        self._device = device
        self._ptr = 0
        self._count = int(np.prod(self._shape, dtype=np.int64))
        with glc.gl() as ctx:
            GL = ctx.GL
            self._width, self._height = texture_layout(self._count, ctx.max_texture_size)
            internal, fmt, typ = _enums(GL, dtype)
            tex = GL.glGenTextures(1)
            GL.glBindTexture(GL.GL_TEXTURE_2D, tex)
            GL.glTexParameteri(GL.GL_TEXTURE_2D, GL.GL_TEXTURE_MIN_FILTER, GL.GL_NEAREST)
            GL.glTexParameteri(GL.GL_TEXTURE_2D, GL.GL_TEXTURE_MAG_FILTER, GL.GL_NEAREST)
            GL.glTexParameteri(GL.GL_TEXTURE_2D, GL.GL_TEXTURE_MAX_LEVEL, 0)
            GL.glTexImage2D(GL.GL_TEXTURE_2D, 0, internal, self._width, self._height, 0, fmt, typ, None)
            GL.glBindTexture(GL.GL_TEXTURE_2D, 0)
            err = GL.glGetError()
            if err:
                GL.glDeleteTextures([tex])
                raise DeviceError(f"OpenGL could not allocate a {self._width}x{self._height} {dtype} "
                                  f"texture (GL error {err:#x})")
        self._tex = int(tex)
        self._buf = 0
        self._valid = {"tex"}
        self._fin = weakref.finalize(self, _release, self._tex, [0])

    # ------------------------------------------------------------ NDArray face
    @property
    def layout(self):
        """(texture width, texture height)."""
        return self._width, self._height


    # ------------------------------------------------------------ device side
    def _padded(self, src):
        flat = np.zeros(self._width * self._height, dtype=self._dtype)
        flat[:self._count] = np.ascontiguousarray(src, dtype=self._dtype).reshape(-1)
        return flat

    def _write(self, src):
        flat = self._padded(src)
        with glc.gl() as ctx:
            GL = ctx.GL
            _, fmt, typ = _enums(GL, self._dtype)
            GL.glBindTexture(GL.GL_TEXTURE_2D, self._tex)
            GL.glPixelStorei(GL.GL_UNPACK_ALIGNMENT, 4)
            GL.glTexSubImage2D(GL.GL_TEXTURE_2D, 0, 0, 0, self._width, self._height, fmt, typ, flat)
            GL.glBindTexture(GL.GL_TEXTURE_2D, 0)
        self._valid = {"tex"}

    def _read(self):
        out = np.empty(self._width * self._height, dtype=self._dtype)
        with glc.gl() as ctx:
            GL = ctx.GL
            ptr = ctypes.c_void_p(out.ctypes.data)
            if "tex" in self._valid:
                _, fmt, typ = _enums(GL, self._dtype)
                GL.glBindTexture(GL.GL_TEXTURE_2D, self._tex)
                GL.glPixelStorei(GL.GL_PACK_ALIGNMENT, 4)
                _raw_get_tex_image(GL.GL_TEXTURE_2D, 0, fmt, typ, ptr)
                GL.glBindTexture(GL.GL_TEXTURE_2D, 0)
            else:
                GL.glBindBuffer(GL.GL_SHADER_STORAGE_BUFFER, self._buf)
                _raw_get_buffer_sub_data(GL.GL_SHADER_STORAGE_BUFFER, 0, out.nbytes, ptr)
                GL.glBindBuffer(GL.GL_SHADER_STORAGE_BUFFER, 0)
        return out[:self._count].reshape(self._shape)

    def texture(self, ctx):
        """The texture name, its contents current (call inside ``gl()``)."""
        if "tex" not in self._valid:
            GL = ctx.GL
            _, fmt, typ = _enums(GL, self._dtype)
            GL.glBindBuffer(GL.GL_PIXEL_UNPACK_BUFFER, self._buf)
            GL.glBindTexture(GL.GL_TEXTURE_2D, self._tex)
            GL.glPixelStorei(GL.GL_UNPACK_ALIGNMENT, 4)
            _raw_tex_sub_image(GL.GL_TEXTURE_2D, 0, 0, 0, self._width, self._height, fmt, typ,
                               ctypes.c_void_p(0))
            GL.glBindTexture(GL.GL_TEXTURE_2D, 0)
            GL.glBindBuffer(GL.GL_PIXEL_UNPACK_BUFFER, 0)
            self._valid.add("tex")
        return self._tex

    def buffer(self, ctx):
        """The storage buffer name, its contents current (call inside ``gl()``)."""
        GL = ctx.GL
        if not self._buf:
            buf = GL.glGenBuffers(1)
            GL.glBindBuffer(GL.GL_SHADER_STORAGE_BUFFER, buf)
            GL.glBufferData(GL.GL_SHADER_STORAGE_BUFFER, self._width * self._height * 4, None, GL.GL_DYNAMIC_COPY)
            GL.glBindBuffer(GL.GL_SHADER_STORAGE_BUFFER, 0)
            self._buf = int(buf)
            self._fin.detach()
            self._fin = weakref.finalize(self, _release, self._tex, [self._buf])
        if "buf" not in self._valid:
            _, fmt, typ = _enums(GL, self._dtype)
            GL.glBindBuffer(GL.GL_PIXEL_PACK_BUFFER, self._buf)
            GL.glBindTexture(GL.GL_TEXTURE_2D, self._tex)
            GL.glPixelStorei(GL.GL_PACK_ALIGNMENT, 4)
            _raw_get_tex_image(GL.GL_TEXTURE_2D, 0, fmt, typ, ctypes.c_void_p(0))
            GL.glBindTexture(GL.GL_TEXTURE_2D, 0)
            GL.glBindBuffer(GL.GL_PIXEL_PACK_BUFFER, 0)
            self._valid.add("buf")
        return self._buf

    def wrote(self, where):
        """Record that a pass wrote the texture ("tex") or the buffer ("buf")."""
        self._valid = {where}


def _release(tex, bufs):
    glc.discard("texture", tex)
    for b in bufs:
        if b:
            glc.discard("buffer", b)


_PROTOS = {}
_U, _I, _P, _S = ctypes.c_uint, ctypes.c_int, ctypes.c_void_p, ctypes.c_ssize_t
_SIGNATURES = {"glGetTexImage": (_U, _I, _U, _U, _P),
               "glTexSubImage2D": (_U, _I, _I, _I, _I, _I, _U, _U, _P),
               "glGetBufferSubData": (_U, _S, _S, _P)}


def _raw(name):
    """A GL entry point taking raw pointers (PyOpenGL's wrappers want arrays, not buffer offsets)."""
    fn = _PROTOS.get(name)
    if fn is None:
        from OpenGL.platform import PLATFORM
        fn = _PROTOS[name] = ctypes.CFUNCTYPE(None, *_SIGNATURES[name])((name, PLATFORM.GL))
    return fn


def _raw_get_tex_image(*args):
    _raw("glGetTexImage")(*args)


def _raw_tex_sub_image(*args):
    _raw("glTexSubImage2D")(*args)


def _raw_get_buffer_sub_data(*args):
    _raw("glGetBufferSubData")(*args)


# ------------------------------------------------------------------ registration
def _from_numpy(src, device):
    _check_dtype(src.dtype.name)
    out = GLArray(src.shape, src.dtype.name, device)
    out._write(src)
    return out


def _empty(shape, dtype, device):
    return GLArray(_shape_of(shape), _dtype_of(dtype), device)


def _exist(device_id):
    return device_id == 0 and glc.available()


def _sync(device_id):
    glc.finish()


register_device_type("opengl", aliases=("gl", "glsl"), exist=_exist, sync=_sync, override=True)
register_allocator("opengl", _from_numpy, _empty, override=True)

__all__ = ["GLArray", "set_texture_width", "texture_layout"]
