"""The teaching notebooks, shipped with the package: ``python -m tvmlab.notebooks DIR`` copies them
into DIR (a folder of your own, so the installed copies stay pristine).

In a wheel they sit beside this file; in a source checkout they are the repository's notebooks/.
"""
from __future__ import annotations

import pathlib
import shutil

from ..errors import TVMLabError

_HERE = pathlib.Path(__file__).resolve().parent


def folder():
    """The folder that holds the shipped ``*.ipynb`` files."""
    for where in (_HERE, _HERE.parent.parent / "notebooks"):
        if any(where.glob("*.ipynb")):
            return where
    raise TVMLabError(f"no notebooks found beside {_HERE} nor in a checkout's notebooks/ folder: "
                      "this tvmlab was installed without them")


def names():
    """The notebooks' file names, in order (01_tour.ipynb, ...)."""
    return sorted(p.name for p in folder().glob("*.ipynb"))


def copy(dest, overwrite=False):
    """Copy every notebook into ``dest`` (made if missing); returns the paths written.

    A notebook already in ``dest`` is kept (it may hold your edits) unless ``overwrite``."""
    dest = pathlib.Path(dest)
    if dest.exists() and not dest.is_dir():
        raise TVMLabError(f"{dest} exists and is not a folder")
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for name in names():
        target = dest / name
        if target.exists() and not overwrite:
            continue
        shutil.copyfile(folder() / name, target)
        written.append(target)
    return written
