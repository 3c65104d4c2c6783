"""The headless OpenGL context: EGL without a window, through PyOpenGL.

The context is made on first use: PyOpenGL on the EGL platform
(``PYOPENGL_PLATFORM=egl``, set here if unset), Mesa's surfaceless platform
(``EGL_PLATFORM_SURFACELESS_MESA``) when present, else the default display
(the NVIDIA driver's device platform), then a desktop GL 4.5 core context,
falling back to 3.3 core (fragment mode only, no compute shaders).  If any of
it fails, ``available()`` is False and ``reason()`` says why; nothing raises
at import.

Every GL call goes through ``gl()``, a context manager that holds the lock,
makes the context current on the calling thread and frees GL objects whose
Python owners were collected since the last call.  The context is released
at the end of each outermost block (about 30 us), so any thread can use the
device next: an EGL context is current on one thread at a time.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import threading

from ..errors import DeviceError, TVMLabError

_LOCK = threading.RLock()
_STATE = {"ctx": None, "error": None}
_GARBAGE = []          # (kind, name) of GL objects to delete at the next gl() entry
_SURFACELESS = 0x31DD  # EGL_PLATFORM_SURFACELESS_MESA


class Context:
    """The EGL display and context, the GL modules and the limits that codegen and runtime need."""

    def __init__(self):
        os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
        try:
            from OpenGL import EGL, GL
        except Exception as e:  # ImportError, or a platform PyOpenGL cannot load
            raise DeviceError(f"PyOpenGL with EGL is not usable: {type(e).__name__}: {e}") from None
        if os.environ.get("PYOPENGL_PLATFORM") != "egl":
            raise DeviceError("PyOpenGL was set up for platform "
                              f"{os.environ.get('PYOPENGL_PLATFORM')!r}; the OpenGL runtime needs "
                              "PYOPENGL_PLATFORM=egl (set it before OpenGL is imported)")
        self.EGL, self.GL = EGL, GL
        dpy = None
        try:
            dpy = EGL.eglGetPlatformDisplayEXT(_SURFACELESS, EGL.EGL_DEFAULT_DISPLAY, None)
        except Exception:
            dpy = None
        if not dpy:
            dpy = EGL.eglGetDisplay(EGL.EGL_DEFAULT_DISPLAY)
        major, minor = EGL.EGLint(), EGL.EGLint()
        if not dpy or not EGL.eglInitialize(dpy, ctypes.pointer(major), ctypes.pointer(minor)):
            raise DeviceError("no EGL display could be initialised (no GPU driver and no Mesa "
                              "surfaceless platform)")
        if not EGL.eglBindAPI(EGL.EGL_OPENGL_API):
            raise DeviceError("EGL cannot bind the desktop OpenGL API")
        ctx = None
        for ver in ((4, 5), (4, 3), (3, 3)):
            attrs = (EGL.EGLint * 7)(EGL.EGL_CONTEXT_MAJOR_VERSION, ver[0], EGL.EGL_CONTEXT_MINOR_VERSION,
                                     ver[1], EGL.EGL_CONTEXT_OPENGL_PROFILE_MASK,
                                     EGL.EGL_CONTEXT_OPENGL_CORE_PROFILE_BIT, EGL.EGL_NONE)
            try:
                ctx = EGL.eglCreateContext(dpy, None, EGL.EGL_NO_CONTEXT, attrs)
            except Exception:
                ctx = None
            if ctx:
                break
        if not ctx:
            raise DeviceError("EGL could not create an OpenGL 3.3 (or newer) core context")
        self.dpy, self.ctx = dpy, ctx
        self.owner = None
        self.depth = 0              # nesting of gl() blocks on the owning thread
        self.make_current()
        self.version = GL.glGetString(GL.GL_VERSION).decode(errors="replace")
        self.renderer = GL.glGetString(GL.GL_RENDERER).decode(errors="replace")
        self.gl_version = (GL.glGetIntegerv(GL.GL_MAJOR_VERSION), GL.glGetIntegerv(GL.GL_MINOR_VERSION))
        self.gl_version = tuple(int(v) for v in self.gl_version)
        self.max_texture_size = int(GL.glGetIntegerv(GL.GL_MAX_TEXTURE_SIZE))
        self.max_draw_buffers = int(GL.glGetIntegerv(GL.GL_MAX_DRAW_BUFFERS))
        self.max_texture_units = int(GL.glGetIntegerv(GL.GL_MAX_TEXTURE_IMAGE_UNITS))
        self.compute = self.gl_version >= (4, 3)
        if self.compute:
            self.max_work_group_invocations = int(GL.glGetIntegerv(GL.GL_MAX_COMPUTE_WORK_GROUP_INVOCATIONS))
            self.max_work_group_size = tuple(int(_indexed(GL, GL.GL_MAX_COMPUTE_WORK_GROUP_SIZE, k))
                                             for k in range(3))
            self.max_work_group_count = tuple(int(_indexed(GL, GL.GL_MAX_COMPUTE_WORK_GROUP_COUNT, k))
                                              for k in range(3))
            self.max_shared_memory = int(GL.glGetIntegerv(GL.GL_MAX_COMPUTE_SHARED_MEMORY_SIZE))
            self.max_ssbo_bindings = int(GL.glGetIntegerv(GL.GL_MAX_SHADER_STORAGE_BUFFER_BINDINGS))
        self.vao = GL.glGenVertexArrays(1)
        self.fbo = GL.glGenFramebuffers(1)
        self.release()

    def make_current(self):
        me = threading.get_ident()
        if self.owner != me:
            if not self.EGL.eglMakeCurrent(self.dpy, self.EGL.EGL_NO_SURFACE, self.EGL.EGL_NO_SURFACE, self.ctx):
                raise DeviceError("the OpenGL context could not be made current on this thread (it is "
                                  "in use by another thread)")
            self.owner = me

    def release(self):
        """Let another thread take the context."""
        if self.owner == threading.get_ident():
            self.EGL.eglMakeCurrent(self.dpy, self.EGL.EGL_NO_SURFACE, self.EGL.EGL_NO_SURFACE,
                                    self.EGL.EGL_NO_CONTEXT)
            self.owner = None

    def collect(self):
        GL = self.GL
        while _GARBAGE:
            kind, name = _GARBAGE.pop()
            if kind == "texture":
                GL.glDeleteTextures([name])
            elif kind == "buffer":
                GL.glDeleteBuffers(1, [name])
            elif kind == "program":
                GL.glDeleteProgram(name)

    def describe(self):
        return f"{self.renderer}, OpenGL {self.version}"


def _indexed(GL, pname, k):
    v = GL.glGetIntegeri_v(pname, k)
    try:
        return v[0]
    except (TypeError, IndexError):
        return v


def context():
    """The context, made on first use; DeviceError (with the reason) if OpenGL is not available."""
    st = _STATE
    if st["ctx"] is None:
        if st["error"] is not None:
            raise DeviceError(f"OpenGL is not available: {st['error']}")
        with _LOCK:
            if st["ctx"] is None and st["error"] is None:
                try:
                    st["ctx"] = Context()
                except DeviceError as e:
                    st["error"] = str(e)
                except Exception as e:  # a driver failure must not crash the caller
                    st["error"] = f"{type(e).__name__}: {e}"
            if st["ctx"] is None:
                raise DeviceError(f"OpenGL is not available: {st['error']}")
    return st["ctx"]


def available():
    """True when a headless OpenGL context can be made here."""
    try:
        context()
        return True
    except DeviceError:
        return False


def reason():
    """Why OpenGL is not available ("" when it is)."""
    try:
        context()
        return ""
    except DeviceError as e:
        return str(e)


@contextlib.contextmanager
def gl():
    """Hold the context: ``with gl() as ctx: ctx.GL.glFoo(...)``."""
    ctx = context()
    with _LOCK:
        ctx.depth += 1
        try:
            ctx.make_current()
            if ctx.depth == 1:
                ctx.collect()
            yield ctx
        except TVMLabError:
            raise
        except Exception as e:  # a GL error reported by PyOpenGL: an error, never a crash
            raise DeviceError(f"OpenGL call failed: {type(e).__name__}: {e}") from e
        finally:
            ctx.depth -= 1
            if ctx.depth == 0:
                ctx.release()       # any thread may use the device next


def discard(kind, name):
    """Delete GL object ``name`` at the next ``gl()`` entry (safe to call from finalizers)."""
    _GARBAGE.append((kind, name))


def finish():
    """Wait for all queued GL work."""
    with gl() as ctx:
        ctx.GL.glFinish()
