"""The wheel installs anywhere with only the ``lab`` extra, and a user's first steps work there.

Builds the wheel, installs it with ``[lab]`` into a fresh virtual environment (pip uses the
network), then runs the quick start and ``%load_ext tvmlab`` with the five-line explorer example in
a kernel of that environment.  Marked ``network``: ``make test`` leaves it out (it runs offline),
CI runs it (``.ci/run``); ``pytest -m network tests/project/test_packaging.py`` runs it by hand.
"""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import textwrap
import zipfile

import pytest

pytestmark = [pytest.mark.network, pytest.mark.timeout(600)]
ROOT = pathlib.Path(__file__).resolve().parents[2]

QUICK_START = """
import numpy as np
import tvmlab as tvm
from tvmlab import te
n = 1024
A = te.placeholder((n,), name="A")
B = te.placeholder((n,), name="B")
C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")
s = te.create_schedule(C.op)
xo, xi = s[C].split(C.op.axis[0], factor=64)
s[C].vectorize(xi)
print(tvm.lower(s, [A, B, C], simple_mode=True))
fadd = tvm.build(s, [A, B, C], target="llvm")
dev = tvm.device("llvm", 0)
a = tvm.nd.array(np.random.uniform(size=n).astype(A.dtype), dev)
b = tvm.nd.array(np.random.uniform(size=n).astype(B.dtype), dev)
c = tvm.nd.array(np.full(n, np.nan, dtype=C.dtype), dev)
fadd(a, b, c)
np.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy())
print("quick start ok", tvm.__version__, tvm.__file__)
"""

# the README's example, in a kernel of the fresh environment; prints what each cell gave
IN_KERNEL = '''
import json, sys
from jupyter_client.manager import start_new_kernel
km, kc = start_new_kernel(kernel_name="python3")
cells = ["%load_ext tvmlab",
         "from tvmlab import te\\nA = te.placeholder((1024,), name='A')\\n"
         "B = te.compute(A.shape, lambda i: A[i] * 2.0, name='B')\\ns = te.create_schedule(B.op)",
         "%tvmlab explore s A B --target llvm"]
out = []
try:
    for code in cells:
        got = []
        reply = kc.execute_interactive(code, timeout=180, output_hook=lambda m: got.append(m))
        out.append({"status": reply["content"]["status"],
                    "error": reply["content"].get("evalue"),
                    "mimes": sorted({k for m in got for k in m["content"].get("data", {})})})
finally:
    kc.stop_channels()
    km.shutdown_kernel(now=True)
print(json.dumps(out))
'''


def _run(cmd, **kw):
    res = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert res.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    return res.stdout


def test_wheel_with_lab_extra_in_a_fresh_venv(tmp_path):
    dist = tmp_path / "dist"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(ROOT)])
    wheel = next(dist.glob("tvmlab-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "tvmlab/notebooks/01_tour.ipynb" in names and "tvmlab/notebooks/__main__.py" in names
    assert any(n.endswith("licenses/LICENSE") for n in names)
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    py = venv / "bin" / "python"
    # away from the checkout (neither its folder nor PYTHONPATH): only the installed tvmlab is seen
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["TVMLAB_CACHE_DIR"] = str(tmp_path / "cache")
    work = tmp_path / "work"
    work.mkdir()
    _run([str(py), "-m", "pip", "install", "-q", f"{wheel}[lab]"], cwd=work, env=env)
    out = _run([str(py), "-c", QUICK_START], cwd=work, env=env)
    assert "quick start ok" in out and str(venv) in out
    out = _run([str(py), "-m", "tvmlab.notebooks", str(work / "nb")], cwd=work, env=env)
    assert (work / "nb" / "01_tour.ipynb").is_file(), out
    cells = json.loads(_run([str(py), "-c", textwrap.dedent(IN_KERNEL)], cwd=work, env=env).strip().splitlines()[-1])
    assert [c["status"] for c in cells] == ["ok", "ok", "ok"], cells
    assert "application/vnd.jupyter.widget-view+json" in cells[2]["mimes"], cells
