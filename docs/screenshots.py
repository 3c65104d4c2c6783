"""Take the explorer's screenshots in docs/images/ (the README's picture and the explorer page's).

    python docs/screenshots.py            # from the repository root, in the project's .venv

Uses the browser test's setup (tests/widgets/test_browser.py): JupyterLab on a copy of the notebooks,
Debian's chromium driven by playwright.  Opens the tour notebook, runs it, applies one primitive
in its explorer, and photographs the explorer on each of its main tabs.  The roofs are measured
into a fresh cache folder, so the roofline shows today's figures for this machine.
"""
from __future__ import annotations

import pathlib
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "images"
sys.path.insert(0, str(ROOT / "tests" / "widgets"))

import test_browser as tb  # noqa: E402  (skips itself, saying why, without chromium or playwright)

SHOTS = [   # (tab, file, what to wait for in the explorer)
    ("AST2", "explorer.png", None),
    ("Code", "explorer_code.png", ".widget-html-content pre"),
    ("Benchmark", "explorer_benchmark.png", ".widget-image"),
    ("Explain", "explorer_explain.png", ".tvmlab-explain"),
    ("Iteration space", "explorer_iteration_space.png", ".tvmlab-cache"),
    ("Roofline", "explorer_roofline.png", ".tvmlab-roofline img"),
]


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tvmlab-shots-") as work, \
            tb.running_lab(work, env={"TVMLAB_CACHE_DIR": str(pathlib.Path(work) / "cache")}) as (base, token), \
            tb.playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=tb.CHROMIUM, headless=True, args=tb.CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1400})
        page.set_default_timeout(60_000)
        page.goto(f"{base}/lab/tree/{tb.TOUR}?token={token}")
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
        tb._kernel_idle(page, 60_000)
        tb._run_all(page, timeout_s=120)
        if tb._errors(page):
            raise SystemExit(f"the tour raised: {tb._errors(page)}")
        explorer = tb._explorer(page)
        explorer.scroll_into_view_if_needed()
        text, graph = tb._ast2_views(page, explorer)
        tb.playwright.expect(graph.locator("svg")).to_have_count(1, timeout=60_000)
        tb._dropdown(page, explorer, "primitive").select_option("parallel")
        tb.playwright.expect(tb._dropdown(page, explorer, "axis")).to_have_value("i.outer", timeout=30_000)
        explorer.locator("button[title='apply']").click()
        tb.playwright.expect(text).to_contain_text("T.parallel(16)", timeout=60_000)
        time.sleep(1.0)
        for tab, name, selector in SHOTS:
            tb._tab(page, explorer, tab)
            if selector:
                tb.playwright.expect(explorer.locator(selector).first).to_be_visible(timeout=120_000)
            if tab == "Roofline":       # the worker measures the roofs when idle: wait for the roof
                tb.playwright.expect(explorer.locator(".tvmlab-roofline").first).to_contain_text(
                    "measured", timeout=120_000)
            time.sleep(1.0)
            explorer.screenshot(path=str(OUT / name))
            print(f"wrote {OUT / name}")
        browser.close()


if __name__ == "__main__":
    main()
