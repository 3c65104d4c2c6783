"""Build hook: the teaching notebooks live in notebooks/ (where JupyterLab, the tests and the docs
read them) and ship inside the package as tvmlab/notebooks/*.ipynb, for
``python -m tvmlab.notebooks DIR``.  Everything else is in pyproject.toml."""
import pathlib

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = pathlib.Path(__file__).resolve().parent


class BuildPyWithNotebooks(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return           # an editable install finds notebooks/ in the checkout
        dest = pathlib.Path(self.build_lib) / "tvmlab" / "notebooks"
        self.mkpath(str(dest))
        for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
            self.copy_file(str(nb), str(dest / nb.name))


setup(cmdclass={"build_py": BuildPyWithNotebooks})
