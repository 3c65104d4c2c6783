"""``memoize(key)``: reuse a function's results across calls with the same arguments, as TVM's
``tvm.contrib.pickle_memoize`` (tests use it for slow numpy references).

    @memoize("topi.tests.test_topi_dense")
    def get_ref_data():          # free variables of the function are part of the key
        ...

Results are kept in this process only; ``save_at_exit`` is accepted for TVM's signature and ignored
(tvmlab writes no cache files into the working directory).
"""
from __future__ import annotations

import functools

_CACHES = {}


def memoize(key, save_at_exit=False):
    """A decorator caching ``f(*args)`` by ``key``, ``f``'s name, its free variables and ``args``
    (positional only); arguments that cannot be hashed are computed each time."""
    del save_at_exit

    def register(f):
        cache = _CACHES.setdefault(f"{key}.{f.__name__}", {})

        @functools.wraps(f)
        def memoized(*args, **kwargs):
            if kwargs:
                raise TypeError(f"memoized {f.__name__} takes positional arguments only")
            closure = tuple(c.cell_contents for c in f.__closure__) if f.__closure__ else ()
            k = closure + ("|",) + args
            try:
                hash(k)
            except TypeError:
                return f(*args)
            if k not in cache:
                cache[k] = f(*args)
            return cache[k]
        return memoized
    return register
