"""Sphinx configuration of tvmlab's documentation site (``make docs``).

Built offline: no intersphinx, no remote images, nothing fetched.  Pages are Markdown (MyST);
the notebooks of ../notebooks are copied in and executed by myst-nb as the site builds, and a
cell that raises fails the build.  Docstrings are plain text with ``literals``: one that is not
valid reStructuredText is shown as written instead of failing the build.
"""
from __future__ import annotations

import os
import pathlib
import shutil
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
os.environ.setdefault("EGL_PLATFORM", "surfaceless")

import tvmlab  # noqa: E402

project = "tvmlab"
author = "the tvmlab authors"
copyright = "the tvmlab authors, Apache-2.0"
release = version = tvmlab.__version__

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "jupyter_execute", "**.ipynb_checkpoints", "README.md"]
html_theme = "furo"
html_title = f"tvmlab {release}"
html_static_path = []
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
suppress_warnings = ["myst.header"]       # pages keep the README's heading levels

# every notebook runs as the site builds; an error in a cell fails the build
nb_execution_mode = os.environ.get("TVMLAB_DOCS_EXECUTE", "force")    # "off" while writing a page
nb_execution_timeout = 600
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_merge_streams = True

autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": False}
autodoc_member_order = "bysource"
autodoc_typehints = "none"
autodoc_mock_imports = []
napoleon_google_docstring = False
napoleon_numpy_docstring = False
nitpicky = False      # docstrings name types in plain words; links between pages are checked


def _copy_notebooks():
    """notebooks/*.ipynb -> docs/notebooks/ (a build copy, ignored by git), stale ones removed;
    ``TVMLAB_DOCS_NOTEBOOKS=01_*`` takes only those (a quicker build while writing a page)."""
    dest = HERE / "notebooks"
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir()
    for nb in sorted((ROOT / "notebooks").glob(os.environ.get("TVMLAB_DOCS_NOTEBOOKS", "*.ipynb"))):
        shutil.copyfile(nb, dest / nb.name)


_copy_notebooks()


def _plain_if_not_rest(app, what, name, obj, options, lines):
    """Show a docstring verbatim when docutils reports a problem parsing it, so a docstring written
    as plain prose never breaks the build (its text is still on the page)."""
    if not lines:
        return
    import io

    from docutils.core import publish_doctree
    text = "\n".join(lines)
    stream = io.StringIO()
    try:
        publish_doctree(text, settings_overrides={
            "report_level": 2, "halt_level": 5, "warning_stream": stream,
            "file_insertion_enabled": False, "raw_enabled": False})
        bad = bool(stream.getvalue())
    except Exception:
        bad = True
    if bad:
        lines[:] = ["::", ""] + ["    " + ln for ln in text.split("\n")] + [""]


def setup(app):
    app.connect("autodoc-process-docstring", _plain_if_not_rest)
