"""The tour notebook in a real browser: JupyterLab driven by Playwright on Debian's chromium.

Starts JupyterLab on a temporary copy of notebooks/, opens 01_tour.ipynb, runs
all cells, then uses the explorer widget as a student would: picks a primitive,
applies it, and checks that the AST2 view changed.  A screenshot is saved to a
temporary folder whose path is printed.  Skipped, with the reason, when
chromium or the playwright package is missing (``make test`` installs both).
"""
from __future__ import annotations

import contextlib
import os
import pathlib
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-dev-shm-usage"]
TOUR = "01_tour.ipynb"

if CHROMIUM is None:
    pytest.skip("Debian's chromium is not installed (apt-get install -y chromium)",
                allow_module_level=True)
playwright = pytest.importorskip(
    "playwright.sync_api", reason="the playwright package is not installed (pip install playwright)")
pytest.importorskip("jupyterlab", reason="jupyterlab is not installed")


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_http(url, proc, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"JupyterLab exited early with code {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"JupyterLab did not answer {url} within {timeout} s")


@contextlib.contextmanager
def running_lab(work, env=None):
    """A JupyterLab server on a copy of the notebooks in ``work``; yields (base url, token).
    Also used by docs/screenshots.py."""
    work = pathlib.Path(work)
    nbdir = work / "notebooks"
    shutil.copytree(ROOT / "notebooks", nbdir)
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(os.environ, PYOPENGL_PLATFORM="egl", EGL_PLATFORM="surfaceless",
               JUPYTERLAB_SETTINGS_DIR=str(work / "settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(work / "workspaces"),
               JUPYTER_RUNTIME_DIR=str(work / "runtime"), **(env or {}))
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}",
           "--ServerApp.ip=127.0.0.1", f"--ServerApp.token={token}",
           f"--notebook-dir={nbdir}", "--ServerApp.port_retries=0",
           "--LabApp.news_url=None",
           "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    # every cell stays in the page (no windowing), so all prompts and outputs can be inspected
    tracker = work / "settings" / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True)
    # and the notebook's kernel starts without asking (on a loaded machine a slow session start made
    # JupyterLab ask which kernel to use, a dialog in front of the notebook)
    (tracker / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none", "autoStartDefaultKernel": true}')
    notes = work / "settings" / "@jupyterlab" / "apputils-extension"
    notes.mkdir(parents=True)
    (notes / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    log = open(work / "jupyter.log", "w")
    proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_http(f"{base}/api/status?token={token}", proc, timeout=40)
        yield base, token
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server on a copy of the notebooks; yields (base url, token)."""
    with running_lab(tmp_path_factory.mktemp("lab")) as server:
        yield server


@pytest.fixture(scope="module")
def browser():
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


def _kernel_idle(page, timeout_ms):
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']",
                           state="attached", timeout=timeout_ms)


PROMPTS = "[...document.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')].map(p => p.textContent)"


def _no_dialog(page):
    """A dialog in front of the notebook (which would swallow the clicks) fails the test, with its text."""
    dialog = page.locator(".jp-Dialog")
    if dialog.count():
        raise AssertionError(f"JupyterLab shows a dialog: {dialog.first.inner_text()!r}")


def _run_all(page, timeout_s):
    """Run -> Run All Cells, then wait until no cell is queued or running."""
    started = f"() => {PROMPTS}.some(t => /\\[(\\*|\\d+)\\]/.test(t))"

    def run_all():
        for _ in range(3):
            _no_dialog(page)
            page.locator(".jp-Notebook").first.click(position={"x": 5, "y": 5})
            page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
            page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
            try:
                page.wait_for_function(started, timeout=5_000)
                return
            except playwright.TimeoutError:
                page.keyboard.press("Escape")
        raise AssertionError("Run All Cells did not start the notebook")
    run_all()
    # done: no cell running or queued ('*') and every code cell numbered, for three polls in a row; cells
    # left unnumbered with nothing running (a Run All a loaded browser cut short) get one more Run All
    deadline, quiet, stalled, again = time.monotonic() + timeout_s, 0, 0, True
    while quiet < 3:
        if time.monotonic() > deadline:
            raise AssertionError(f"the notebook was still running after {timeout_s} s")
        busy = page.evaluate(f"() => {PROMPTS}.some(t => t.includes('*'))")
        left = _unexecuted(page)
        quiet = 0 if busy or left else quiet + 1
        stalled = stalled + 1 if left and not busy else 0
        if stalled > 15 and again:
            again, stalled = False, 0
            run_all()
        time.sleep(0.3)
    _kernel_idle(page, 10_000)


def _unexecuted(page):
    return page.evaluate(f"() => {PROMPTS}.filter(t => !/\\[\\d+\\]/.test(t)).length")


def _errors(page):
    """The text of every output that shows a Python exception."""
    return page.evaluate(
        "() => [...document.querySelectorAll('.jp-OutputArea-output')]"
        ".map(o => o.innerText).filter(t => t.includes('Traceback')"
        " || (/\\w+Error: /.test(t) && t.includes('Cell In[')))")


@pytest.mark.timeout(360)
def test_tour_runs_and_explorer_responds(lab, browser):
    base, token = lab
    shots = pathlib.Path(tempfile.mkdtemp(prefix="tvmlab-browser-"))
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(30_000)
    try:
        page.goto(f"{base}/lab/tree/{TOUR}?token={token}")
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=40_000)
        _kernel_idle(page, 40_000)
        _run_all(page, timeout_s=60)
        assert _errors(page) == []
        assert _unexecuted(page) == 0, "some cells of the tour did not run"

        explorer = _explorer(page)
        explorer.scroll_into_view_if_needed()
        text, graph = _ast2_views(page, explorer)
        playwright.expect(graph.locator("svg")).to_have_count(1, timeout=30_000)
        text_before, graph_before = text.inner_text(), graph.inner_html()
        assert "T.parallel" not in text_before

        # a student picks the parallel primitive (offered only for the serial axis i.outer,
        # since i.inner is vectorized) and presses apply
        _dropdown(page, explorer, "primitive").select_option("parallel")
        expect = playwright.expect
        expect(_dropdown(page, explorer, "axis").locator("option")).to_have_count(1, timeout=30_000)
        expect(_dropdown(page, explorer, "axis")).to_have_value("i.outer")
        # the latency a user sees: from the click to the AST2 text changing in the page, with the
        # live benchmark of the new step starting in its worker process meanwhile
        vadd_ms = _timed_apply(page, explorer, text, "T.parallel(16)", graph)

        expect(text).to_contain_text("T.parallel(16)", timeout=30_000)     # generous: CI machines are shared
        assert text.inner_text() != text_before
        expect(explorer.locator(".widget-html-content", has_text="applied")).to_have_count(
            1, timeout=30_000)
        assert graph.inner_html() != graph_before, "the AST2 graph did not change"
        status = explorer.locator(".widget-html-content", has_text="refreshed in").inner_text()
        explorer.screenshot(path=str(shots / "tour_explorer.png"))
        page.screenshot(path=str(shots / "tour_page.png"))
        _analysis_tabs(page, explorer, shots)
        mm_ms = _tiled_matmul_latency(page, shots)
        print(f"\n{status.strip()}\napply latency in the browser with the live benchmark on "
              f"(text views / graph): vector add {vadd_ms[0]:.0f} / {vadd_ms[1]:.0f} ms, tiled "
              f"matmul 256 {mm_ms[0]:.0f} / {mm_ms[1]:.0f} ms"
              f"\nscreenshots saved in {shots}")
    finally:
        page.close()


def _explorer(page):
    """The first explorer widget of the page: the VBox whose header says "tvmlab explorer"."""
    header = page.locator(".widget-html-content", has_text="tvmlab explorer").first
    return header.locator("xpath=ancestor::div[contains(concat(' ', @class, ' '), ' widget-vbox ')][1]")


def _dropdown(page, explorer, label):
    """The <select> of the explorer's dropdown labelled exactly ``label``."""
    box = explorer.locator(".widget-dropdown").filter(
        has=page.locator("label.widget-label", has_text=re.compile(f"^{re.escape(label)}$")))
    return box.locator("select").first


def _ast2_views(page, explorer):
    """The AST2 text (a diff against the previous step) and the AST2 graph (SVG) panes."""
    def pane(title):
        return explorer.locator(".widget-html-content").filter(
            has=page.locator("b", has_text=re.compile(f"^{title}$"))).first
    return pane("AST2 text"), pane("AST2 graph")


_TIMED_APPLY = """([button, pane, expected, graph]) => new Promise((resolve) => {
    const t0 = performance.now();
    const old = graph.innerHTML;
    let text = null;
    setTimeout(() => { obs.disconnect(); resolve([text === null ? -1 : text, -1]); }, 60000);
    const check = () => {
        if (text === null && pane.innerText.includes(expected)) text = performance.now() - t0;
        const svg = graph.querySelector('svg');
        if (text !== null && svg && graph.innerHTML !== old) {
            obs.disconnect();
            resolve([text, performance.now() - t0]);
        }
    };
    const obs = new MutationObserver(check);
    for (const el of [pane, graph])
        obs.observe(el, {childList: true, subtree: true, characterData: true});
    button.click();
})"""


def _timed_apply(page, explorer, pane, expected, graph):
    """(ms to ``expected`` in the text ``pane``, ms to a new SVG in ``graph``) after pressing apply,
    measured in the page."""
    button = explorer.locator("button[title='apply']").element_handle()
    got = page.evaluate(_TIMED_APPLY, [button, pane.element_handle(), expected,
                                       graph.element_handle()])
    status = explorer.locator(".widget-html-content").nth(1).inner_text()
    assert got[0] >= 0 and got[1] >= 0, (f"after apply, within 60 s: text {got[0]:.0f} ms, graph "
                                         f"{got[1]:.0f} ms (-1: never); status: {status}")
    return got


def _tab(page, explorer, title):
    explorer.locator(".lm-TabBar-tab", has_text=re.compile(f"^{re.escape(title)}$")).first.click()


def _analysis_tabs(page, explorer, shots):
    """Explain, Iteration space and Roofline of the tour's vector add, each with a screenshot."""
    expect = playwright.expect
    _tab(page, explorer, "Explain")
    explain = explorer.locator(".tvmlab-explain").first
    expect(explain).to_contain_text("Bounds of stage C", timeout=30_000)
    expect(explain).to_contain_text("split i", timeout=30_000)
    explorer.screenshot(path=str(shots / "explain.png"))
    _tab(page, explorer, "Iteration space")
    space = explorer.locator(".tvmlab-iteration").first
    expect(space.locator("img")).to_have_count(2, timeout=30_000)
    expect(explorer.locator(".tvmlab-cache").first).to_contain_text("lines / iteration")
    explorer.screenshot(path=str(shots / "iteration_space.png"))
    _tab(page, explorer, "Roofline")
    expect(explorer.locator(".tvmlab-roofline img").first).to_be_visible(timeout=90_000)
    expect(explorer.locator(".tvmlab-roofline").first).to_contain_text("flops/byte")
    explorer.screenshot(path=str(shots / "roofline.png"))
    _tab(page, explorer, "AST2")


_MATMUL_CELL = """import tvmlab as tvm
from tvmlab import te
mA = te.placeholder((256, 256), name="mA")
mB = te.placeholder((256, 256), name="mB")
mk = te.reduce_axis((0, 256), name="k")
mC = te.compute((256, 256), lambda i, j: te.sum(mA[i, mk] * mB[mk, j], axis=mk), name="mC")
ms = te.create_schedule(mC.op)
ms[mC].tile(mC.op.axis[0], mC.op.axis[1], 32, 32)
mm = tvm.explore(ms, [mA, mB, mC], targets=["llvm"])
mm"""


def _tiled_matmul_latency(page, shots):
    """A new cell with a tiled 256 matmul explorer; the apply latency of vectorize, in the page."""
    expect = playwright.expect
    page.locator(".jp-Notebook .jp-Cell").last.click()
    page.keyboard.press("Escape")
    page.keyboard.press("b")
    page.keyboard.press("Enter")
    page.keyboard.insert_text(_MATMUL_CELL)
    page.keyboard.press("Shift+Enter")
    header = page.locator(".widget-html-content", has_text="mA, mB, mC on llvm")
    expect(header).to_have_count(1, timeout=60_000)
    mm = header.first.locator(
        "xpath=ancestor::div[contains(concat(' ', @class, ' '), ' widget-vbox ')][1]")
    mm.scroll_into_view_if_needed()
    text, graph = _ast2_views(page, mm)
    expect(graph.locator("svg")).to_have_count(1, timeout=30_000)
    _dropdown(page, mm, "primitive").select_option("vectorize")
    time.sleep(0.5)                 # the kernel rebuilds the form for the new primitive: wait for it
    _kernel_idle(page, 30_000)
    time.sleep(0.5)
    axis = _dropdown(page, mm, "axis")
    expect(axis.locator("option[value='j.inner']")).to_have_count(1, timeout=30_000)
    for _ in range(3):              # on a loaded machine a late form update may reset the choice
        axis.select_option("j.inner")
        expect(axis).to_have_value("j.inner", timeout=30_000)
        _kernel_idle(page, 30_000)
        time.sleep(0.5)
        if axis.input_value() == "j.inner":
            break
    ms = _timed_apply(page, mm, text, "T.vectorized(32)", graph)
    mm.screenshot(path=str(shots / "matmul_explorer.png"))
    return ms
