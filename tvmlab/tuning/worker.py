"""``python -m tvmlab.tuning.worker IN_FD OUT_FD``: a LocalExecutor worker in a fresh interpreter.

It reads pickled ``(fn, job)`` pairs from IN_FD and writes a JobResult for each
to OUT_FD until it reads None or the pipe closes.
"""
import sys
from multiprocessing.connection import Connection


class _Duplex:
    def __init__(self, in_fd, out_fd):
        self._in = Connection(in_fd, writable=False)
        self._out = Connection(out_fd, readable=False)

    def recv(self):
        return self._in.recv()

    def send(self, obj):
        self._out.send(obj)


def main(argv):
    from .executor import _serve
    _serve(_Duplex(int(argv[0]), int(argv[1])), None, greet=True)


if __name__ == "__main__":
    main(sys.argv[1:])
