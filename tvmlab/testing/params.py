"""Parametrized pytest tests, as TVM's ``tvm.testing`` writes them (needs the plugin: a conftest.py
with ``pytest_plugins = ["tvmlab.testing.plugin"]``).

    dtype = tvm.testing.parameter("float32", "float16")
    shape, axis = tvm.testing.parameters(((4, 5), 0), ((3, 7), 1))   # correlated: one test per pair

    @tvm.testing.fixture(cache_return_value=True)
    def ref_data(shape, dtype): ...                                  # computed once per (shape, dtype)

    def test_op(target, dev, ref_data): ...                          # once per test target
"""
from __future__ import annotations

import copy
import functools
import inspect
import os
import pickle
import sys

_group_counter = [0]


def parameter(*values, ids=None, by_dict=None):
    """A parametrized fixture: a test taking it runs once per value (combined with other parameters)."""
    import pytest
    if by_dict is not None:
        if values or ids:
            raise ValueError("parameter(by_dict=...) takes no positional values or ids")
        ids, values = list(by_dict), list(by_dict.values())

    @pytest.fixture(params=list(values), ids=ids)
    def value(*_cls, request):      # *_cls: also usable as a class attribute
        return request.param
    return value


def parameters(*value_sets, ids=None):
    """Correlated parameters: ``a, b = parameters((a1, b1), (a2, b2))`` runs a test taking both once per
    set, not per combination (the plugin parametrizes the group together)."""
    import pytest
    if not value_sets:
        raise ValueError("parameters() needs at least one value set")
    widths = {len(v) for v in value_sets}
    if len(widths) != 1:
        raise ValueError(f"parameters(): every value set must have the same length, got lengths {sorted(widths)}")
    group = _group_counter[0]
    _group_counter[0] += 1
    out = []
    for column in zip(*value_sets):
        def value(*_cls, request):
            return request.param
        value.parametrize_group, value.parametrize_values, value.parametrize_ids = group, column, ids
        out.append(pytest.fixture(value))
    return out


def fixture(func=None, *, cache_return_value=False):
    """A pytest fixture; with ``cache_return_value`` its value is computed once per distinct set of
    arguments and each test gets a deep copy (dropped once the last test using it has run).
    ``TVM_TEST_DISABLE_CACHE=1`` turns the cache off."""
    import pytest
    disable = os.environ.get("TVM_TEST_DISABLE_CACHE", "0") not in ("", "0")

    def wrap(f):
        if cache_return_value and not disable:
            f = _cached(f)
        return pytest.fixture(f)
    return wrap if func is None else wrap(func)


def _cached(func):
    cache = {}
    uses = [0]          # tests using it, counted by the plugin at collection
    done = [0]

    def key_of(args, kwargs):
        try:
            hash((args, tuple(sorted(kwargs.items()))))
            return (args, tuple(sorted(kwargs.items())))
        except TypeError:
            return pickle.dumps((args, sorted(kwargs.items())))

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        key = key_of(args, kwargs)
        try:
            if key not in cache:
                cache[key] = func(*args, **kwargs)
            yield copy.deepcopy(cache[key])
        finally:
            done[0] += 1
            if uses[0] and done[0] >= uses[0]:
                cache.clear()
    wrapper.num_tests_use_this_fixture = uses
    return wrapper


def parametrize_targets(*targets):
    """Run a test taking ``target`` on these targets only (bare: on every test target)."""
    import pytest
    if len(targets) == 1 and callable(targets[0]):
        return targets[0]
    return pytest.mark.parametrize("target", list(targets), scope="session")


def exclude_targets(*kinds):
    """Run a test taking ``target`` on every test target but these kinds."""
    def wrap(func):
        func.tvm_excluded_targets = kinds
        return func
    return wrap


def known_failing_targets(*kinds):
    """Run a test taking ``target`` everywhere, expecting failure (xfail) on these kinds."""
    def wrap(func):
        func.tvm_known_failing_targets = kinds
        return func
    return wrap


def main():
    """``if __name__ == "__main__": tvm.testing.main()``: run the calling file's tests with pytest."""
    import pytest
    caller = inspect.stack()[1].filename
    sys.exit(pytest.main([caller] + sys.argv[1:]))
