"""pytest plugin for tests written with ``tvm.testing`` (parameters, fixtures, per-target runs).

Enable it in a conftest.py:  ``pytest_plugins = ["tvmlab.testing.plugin"]``.

It parametrizes correlated ``parameters`` together, runs a test taking ``target`` once per test target
(skipping those that cannot run here, with the reason), gives such tests a ``dev`` fixture, and
counts the users of cached fixtures so their values are dropped after the last one.
"""
import pytest

from .targets import Feature, target_kind, target_marks, test_targets

_MARKERS = {"gpu": "needs a GPU", "cuda": "needs CUDA", "llvm": "needs LLVM", "opengl": "needs OpenGL",
            "tensorcore": "needs tensor cores"}


def pytest_configure(config):
    names = dict(_MARKERS)
    names.update({f.name: f"needs {f.long_name}" for f in Feature.all_features.values()})
    for name, text in names.items():
        config.addinivalue_line("markers", f"{name}: {text}")


def pytest_generate_tests(metafunc):
    _parametrize_groups(metafunc)
    _parametrize_target(metafunc)
    _mark_targets(metafunc)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("skip") or any(m.args and m.args[0] for m in item.iter_markers("skipif")):
            continue
        for defs in getattr(item, "_fixtureinfo", None).name2fixturedefs.values() if hasattr(
                item, "_fixtureinfo") else ():
            uses = getattr(defs[-1].func, "num_tests_use_this_fixture", None)
            if uses is not None:
                uses[0] += 1
    # one function's instances together, so a cached fixture is dropped early
    items.sort(key=lambda it: (it.location[0], it.location[1], it.location[2].split("[")[0]))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """Tests needing tensor cores run on the GPU simulator where the machine has no CUDA device."""
    if item.get_closest_marker("tensorcore") is None:
        yield
        return
    from .sim_cuda import simulated_cuda
    with simulated_cuda():
        yield


@pytest.fixture
def dev(target):
    """The device of the test's target."""
    from ..runtime.device import device
    return device(target_kind(target), 0)


def _parametrize_groups(metafunc):
    groups = {}
    for name, defs in metafunc.definition._fixtureinfo.name2fixturedefs.items():
        func = defs[-1].func
        if hasattr(func, "parametrize_group"):
            g = groups.setdefault(func.parametrize_group, {"ids": func.parametrize_ids, "params": []})
            g["params"].append((name, func.parametrize_values))
    for g in groups.values():
        names = [n for n, _ in g["params"]]
        values = list(zip(*[v for _, v in g["params"]])) if len(names) > 1 else list(g["params"][0][1])
        metafunc.parametrize(",".join(names), values, indirect=True, ids=g["ids"])


def _parametrize_target(metafunc):
    if "target" not in metafunc.fixturenames:
        return
    explicit = [a.strip() for m in metafunc.definition.iter_markers("parametrize")
                for a in (m.args[0].split(",") if isinstance(m.args[0], str) else m.args[0])]
    if "target" in explicit:
        return
    excluded = getattr(metafunc.function, "tvm_excluded_targets", ())
    targets = [t for t in test_targets() if target_kind(t) not in excluded]
    metafunc.definition.add_marker(pytest.mark.parametrize("target", targets, scope="session"))


def _mark_targets(metafunc):
    """Give every target value of a ``parametrize`` over ``target`` its skip / xfail marks."""
    if "target" not in metafunc.fixturenames:
        return
    failing = getattr(metafunc.function, "tvm_known_failing_targets", ())
    for mark in metafunc.definition.iter_markers("parametrize"):
        argnames = mark.args[0]
        names = [a.strip() for a in argnames.split(",")] if isinstance(argnames, str) else list(argnames)
        if "target" not in names:
            continue
        at = names.index("target")
        values = mark.args[1] if len(mark.args) > 1 else mark.kwargs.get("argvalues")
        new = []
        for v in values:
            if isinstance(v, type(pytest.param(None))):
                vals, marks = v.values, list(v.marks)
            else:
                vals, marks = ((v,) if len(names) == 1 else tuple(v)), []
            target = vals[at]
            marks = target_marks(target) + marks
            if mark in metafunc.definition.own_markers and target_kind(target) in failing:
                marks.append(pytest.mark.xfail(reason=f"known to fail on {target_kind(target)}"))
            new.append(pytest.param(*vals, marks=marks, id=getattr(v, "id", None)))
        try:
            values[:] = new
        except TypeError:
            raise TypeError(f"{metafunc.function.__name__}: parametrize over 'target' with a list of values, "
                            f"not a tuple") from None
