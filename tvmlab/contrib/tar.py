"""TVM's ``contrib.tar``: bundle files into a tarball (an export format) and unpack one."""
from __future__ import annotations

import os
import tarfile

from ..errors import TVMLabError


class TarError(TVMLabError, ValueError):
    """Files cannot be bundled or unpacked."""


def tar(output, files):
    """Write ``files`` (flat, by base name) into the gzip tarball ``output``."""
    names = {}
    for f in files:
        base = os.path.basename(f)
        if base in names:
            raise TarError(f"tar: two files are named {base!r} ({names[base]} and {f})")
        if not os.path.isfile(f):
            raise TarError(f"tar: {f!r} is not a file")
        names[base] = f
    with tarfile.open(output, "w:gz") as t:
        for base, f in names.items():
            t.add(f, arcname=base)


tar.output_format = "tar"


def untar(tar_file, directory):
    """Unpack ``tar_file`` into ``directory`` (members that would land outside it are refused)."""
    try:
        with tarfile.open(tar_file) as t:
            t.extractall(directory, filter="data")
    except (tarfile.TarError, OSError) as e:
        raise TarError(f"untar {tar_file!r}: {e}") from None
