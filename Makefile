SHELL := /bin/bash
VENV  := .venv
PY    := $(VENV)/bin/python
STAMP := $(VENV)/.stamp-$(shell sha256sum pyproject.toml | cut -c1-16)
DOCSTAMP := $(VENV)/.docs-$(shell sha256sum pyproject.toml | cut -c1-16)

.PHONY: venv lab test docs fuzz bench clean

# $(call need,COMMAND,DEBIAN_PACKAGE,WHAT_FOR): apt-get the package when the
# command is missing and we are root; otherwise say what will not work.
need = @command -v $(1) >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $(2); } \
	      || echo "note: could not install $(2); $(3) unavailable"; \
	  else echo "note: '$(1)' not found; install $(2) for $(3)"; fi; }

# Internal: graphviz, pocl (an OpenCL device on the CPU), .venv, and an editable
# install that is redone only when pyproject.toml changes.
venv:
	$(call need,dot,graphviz,graph rendering)
	$(call need,clinfo,pocl-opencl-icd clinfo,the OpenCL device (pocl runs OpenCL on the CPU))
	@[ -x $(PY) ] || python3 -m venv $(VENV)
	@if [ ! -f $(STAMP) ]; then \
	  $(VENV)/bin/pip install -U pip && \
	  $(VENV)/bin/pip install -e '.[all,test]' && \
	  rm -f $(VENV)/.stamp-* $(VENV)/.docs-* && touch $(STAMP); \
	fi

lab: venv
	@mkdir -p notebooks; args="--notebook-dir=notebooks"; \
	[ "$$(id -u)" = 0 ] && args="$$args --allow-root"; \
	[ -z "$$DISPLAY" ] && args="$$args --no-browser --ip=127.0.0.1"; \
	echo "Starting JupyterLab: open the URL it prints below."; \
	$(VENV)/bin/jupyter lab $$args

test: venv
	$(VENV)/bin/ruff check tvmlab tests
	$(call need,chromium,chromium,the browser test)
	$(call need,aarch64-linux-gnu-gcc,gcc-aarch64-linux-gnu libc6-arm64-cross,the aarch64 cross-compilation tests)
	$(call need,qemu-aarch64,qemu-user,running the aarch64 tests under emulation)
	PYOPENGL_PLATFORM=egl EGL_PLATFORM=surfaceless \
	  $(PY) -m pytest -n 2 -m "not network" tests $(TVMLAB_TEST_ARGS)

# The documentation site in docs/_build/html (open index.html): Sphinx with myst-nb, built
# offline, warnings are errors; the notebooks run while it builds.
docs: venv
	@if [ ! -f $(DOCSTAMP) ]; then \
	  $(VENV)/bin/pip install -e '.[all,test,docs]' && touch $(DOCSTAMP); \
	fi
	PYOPENGL_PLATFORM=egl EGL_PLATFORM=surfaceless MPLBACKEND=module://matplotlib_inline.backend_inline \
	  $(PY) -m sphinx -W --keep-going -q -b html docs docs/_build/html
	@echo "The documentation is in docs/_build/html/index.html"

fuzz: venv
	$(PY) -m tvmlab.testing.fuzz --count 3000

# torch is conv2d's reference when it installs, numpy's otherwise: the CPU build, from
# PyTorch's CPU index (the default index's torch brings GBs of CUDA libraries)
TORCH_CPU_INDEX := https://download.pytorch.org/whl/cpu
bench: venv
	@$(PY) -c "import torch" 2>/dev/null || $(VENV)/bin/pip install -qq --retries 1 --timeout 30 \
	  --index-url $(TORCH_CPU_INDEX) "torch==2.13.0" \
	  || echo "note: torch did not install; conv2d is compared with numpy"
	$(PY) -m tvmlab.bench
	$(PY) -m tvmlab.bench.topi_nn
	$(PY) -m tvmlab.bench.onnx_ops
	$(PY) -m tvmlab.bench.tune
	$(PY) -m tvmlab.bench.tune --topi 32
	$(PY) -m tvmlab.bench.auto_scheduler

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .hypothesis docs/_build docs/notebooks docs/jupyter_execute
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
