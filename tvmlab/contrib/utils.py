"""``tempdir()``: a temporary directory with TVM's ``relpath`` / ``listdir``, removed when collected."""
from __future__ import annotations

import os
import shutil
import tempfile


class TempDirectory:
    """A fresh directory; ``remove()`` (or garbage collection) deletes it and its files."""

    def __init__(self):
        self.temp_dir = tempfile.mkdtemp(prefix="tvmlab-")

    def relpath(self, name):
        """The path of ``name`` inside the directory."""
        return os.path.join(self.temp_dir, name)

    def listdir(self):
        return sorted(os.listdir(self.temp_dir))

    def remove(self):
        if self.temp_dir is not None:
            shutil.rmtree(self.temp_dir, ignore_errors=True)
            self.temp_dir = None

    def __del__(self):
        try:
            self.remove()
        except Exception:    # at interpreter exit the modules it needs may be gone
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def tempdir():
    """A new TempDirectory."""
    return TempDirectory()
