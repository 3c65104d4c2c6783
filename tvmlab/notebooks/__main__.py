"""``python -m tvmlab.notebooks DIR [--overwrite]``: copy the teaching notebooks into DIR."""
from __future__ import annotations

import argparse
import sys

from ..errors import TVMLabError
from . import copy, names


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tvmlab.notebooks",
                                 description="Copy tvmlab's teaching notebooks into a folder of yours.")
    ap.add_argument("dir", help="where to put them (made if missing)")
    ap.add_argument("--overwrite", action="store_true", help="replace notebooks already there")
    a = ap.parse_args(argv)
    try:
        written = copy(a.dir, overwrite=a.overwrite)
    except TVMLabError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    kept = len(names()) - len(written)
    print(f"copied {len(written)} notebooks into {a.dir}" + (f" ({kept} already there, kept)" if kept else ""))
    if written:
        print(f"open them with: jupyter lab {a.dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
