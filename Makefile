SHELL := /bin/bash
VENV  := .venv
PY    := $(VENV)/bin/python
STAMP := $(VENV)/.stamp-$(shell sha256sum pyproject.toml | cut -c1-16)

.PHONY: venv lab test fuzz bench clean

# $(call need,COMMAND,DEBIAN_PACKAGE,WHAT_FOR): apt-get the package when the
# command is missing and we are root; otherwise say what will not work.
need = @command -v $(1) >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $(2); } \
	      || echo "note: could not install $(2); $(3) unavailable"; \
	  else echo "note: '$(1)' not found; install $(2) for $(3)"; fi; }

# Internal: graphviz, .venv, and an editable install that is redone only when
# pyproject.toml changes.
venv:
	$(call need,dot,graphviz,graph rendering)
	@[ -x $(PY) ] || python3 -m venv $(VENV)
	@if [ ! -f $(STAMP) ]; then \
	  $(VENV)/bin/pip install -U pip && \
	  $(VENV)/bin/pip install -e '.[all,test]' && \
	  rm -f $(VENV)/.stamp-* && touch $(STAMP); \
	fi

lab: venv
	@mkdir -p notebooks; args="--notebook-dir=notebooks"; \
	[ "$$(id -u)" = 0 ] && args="$$args --allow-root"; \
	[ -z "$$DISPLAY" ] && args="$$args --no-browser --ip=127.0.0.1"; \
	echo "Starting JupyterLab: open the URL it prints below."; \
	$(VENV)/bin/jupyter lab $$args

test: venv
	$(call need,chromium,chromium,the browser test)
	$(call need,aarch64-linux-gnu-gcc,gcc-aarch64-linux-gnu libc6-arm64-cross,the aarch64 cross-compilation tests)
	$(call need,qemu-aarch64,qemu-user,running the aarch64 tests under emulation)
	PYOPENGL_PLATFORM=egl EGL_PLATFORM=surfaceless \
	  $(PY) -m pytest -n 2 tests $(TVMLAB_TEST_ARGS)

fuzz: venv
	$(PY) -m tvmlab.testing.fuzz --count 3000

# torch (the CPU build) is conv2d's reference when it installs; numpy's otherwise
bench: venv
	@$(PY) -c "import torch" 2>/dev/null || $(VENV)/bin/pip install -q "torch==2.13.0" \
	  || echo "note: torch did not install; conv2d is compared with numpy"
	$(PY) -m tvmlab.bench
	$(PY) -m tvmlab.bench.topi_nn
	$(PY) -m tvmlab.bench.onnx_ops
	$(PY) -m tvmlab.bench.tune
	$(PY) -m tvmlab.bench.tune --topi 32
	$(PY) -m tvmlab.bench.auto_scheduler

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .hypothesis
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
