"""TVM's ``tvm.contrib.clang``: C/C++ source to LLVM IR text with the system's clang.

    ll = tvmlab.contrib.clang.create_llvm(c_source, options=["-O3"])
    s[C].pragma(yo, "import_llvm", ll)       # link it into the build, as TVM's tensorize tutorial does

Where no clang is installed, ``find_clang`` / ``create_llvm`` raise a BuildError
saying so (Debian: ``apt-get install clang``).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

from ..errors import BuildError


def find_clang(required=True):
    """Paths of the clang executables found: ``clang``, then versioned ``clang-NN`` (newest first)."""
    found = []
    names = ["clang"] + [f"clang-{v}" for v in range(25, 9, -1)]
    for name in names:
        p = shutil.which(name)
        if p and p not in found:
            found.append(p)
    if required and not found:
        raise BuildError("clang was not found on PATH (tried clang, clang-25 ... clang-10); install it "
                         "(Debian: apt-get install clang) to compile C to LLVM IR")
    return found


def _is_path(code):
    return "\n" not in code and len(code) < 4096 and os.path.isfile(code)


def create_llvm(inputs, output=None, options=None, cc=None):
    """LLVM IR text of ``inputs`` (C/C++ source strings or file paths) compiled by clang.

    ``options``: extra clang options (``["-O3", "-march=native"]``); ``output``: where to
    keep the ``.ll`` file (a temporary file otherwise); ``cc``: the clang to use.
    """
    cc = cc or find_clang()[0]
    inputs = [inputs] if isinstance(inputs, str) else list(inputs)
    if not inputs or not all(isinstance(i, str) for i in inputs):
        raise BuildError(f"create_llvm takes C source strings or file paths, got {inputs!r}")
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for k, code in enumerate(inputs):
            if _is_path(code):
                files.append(code)
            else:
                path = os.path.join(tmp, f"input{k}.cc")
                with open(path, "w") as f:
                    f.write(code)
                files.append(path)
        out = output or os.path.join(tmp, "output.ll")
        cmd = [cc, "-S", "-emit-llvm", *(options or []), "-o", out, *files]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        except OSError as e:
            raise BuildError(f"create_llvm: cannot run {cc}: {e}") from None
        if proc.returncode != 0:
            raise BuildError(f"create_llvm: {' '.join(cmd)} failed:\n{proc.stdout}{proc.stderr}")
        with open(out) as f:
            return f.read()
