"""bench.variants: named settings of the schedules' module constants, timed side by side by bench.gpu."""
import io

import pytest

from tvmlab import TVMLabError
from tvmlab.bench import gpu, variants
from tvmlab.lower import thread_sync
from tvmlab.topi.cuda import conv2d, conv2d_winograd, dense


def test_settings_apply_inside_the_block_and_come_back_after_it():
    v, = variants.parse_variants([["old", "topi.cuda.conv2d.REGISTER_TILES=False", "topi.cuda.dense.TILE=64",
                                   "tvmlab.lower.thread_sync.PROVE_ONE_TO_ONE=0"]])
    before = (conv2d.REGISTER_TILES, dense.TILE, thread_sync.PROVE_ONE_TO_ONE)
    assert v.name == "old" and "conv2d.REGISTER_TILES=False" in v.describe()
    with pytest.raises(KeyError):
        with variants.applied(v):
            assert (conv2d.REGISTER_TILES, dense.TILE, thread_sync.PROVE_ONE_TO_ONE) == (False, 64, 0)
            raise KeyError("a failing build")
    assert (conv2d.REGISTER_TILES, dense.TILE, thread_sync.PROVE_ONE_TO_ONE) == before


def test_no_variant_is_the_defaults_alone():
    vs = variants.parse_variants(None)
    assert [(v.name, v.settings) for v in vs] == [("default", [])]
    assert vs[0].describe() == "the defaults"


@pytest.mark.parametrize("spec, words", [
    (["x", "topi.cuda.conv2d.NO_SUCH_FLAG=1"], ["tvmlab.topi.cuda.conv2d", "no attribute 'NO_SUCH_FLAG'"]),
    (["x", "topi.cuda.nosuchmodule.FLAG=1"], ["no module tvmlab.topi.cuda.nosuchmodule"]),
    (["x", "topi.cuda.conv2d.REGISTER_TILES"], ["expected path=value"]),
    (["x", "topi.cuda.conv2d.REGISTER_TILES=maybe"], ["'maybe' is not a Python literal"]),
    (["x", "topi.cuda.conv2d.FB=True"], ["is a int (64), got a bool"]),
    (["x", "topi.cuda.conv2d.REGISTER_TILES=2"], ["is a bool (True), got a int"]),
    (["x", "topi.cuda.conv2d.register_tiles=1"], ["is a function, not a setting"]),
    (["topi.cuda.conv2d.FB=8"], ["the first word names the variant"]),
    (["x", "FB=8"], ["expected a module path and an attribute"]),
])
def test_bad_settings_are_refused_by_name(spec, words):
    flag = conv2d.REGISTER_TILES
    with pytest.raises(TVMLabError) as e:
        variants.parse_variants([spec])
    assert all(w in str(e.value) for w in words), str(e.value)
    assert conv2d.REGISTER_TILES is flag


def test_a_name_given_twice_is_refused():
    with pytest.raises(TVMLabError, match="given twice"):
        variants.parse_variants([["a"], ["a", "topi.cuda.conv2d.FB=32"]])


def test_simulated_rows_run_once_per_variant_under_its_settings(monkeypatch):
    seen = []

    def case(size):
        seen.append((size, conv2d_winograd.PRODUCT_VTHREADS))
        return gpu.case_add(size)
    monkeypatch.setitem(gpu.ROWS, "add", [case])
    out = io.StringIO()
    assert gpu.main(["--simulate", "--rows", "add", "--variant", "default",
                     "--variant", "wide", "topi.cuda.conv2d_winograd.PRODUCT_VTHREADS=2"], out=out) == 0
    lines = out.getvalue().splitlines()
    assert lines[:2] == ["variant default: the defaults",
                         "variant wide: tvmlab.topi.cuda.conv2d_winograd.PRODUCT_VTHREADS=2"]
    assert [line.split(" simulated")[0].split()[-1] for line in lines[2:]] == ["[default]", "[wide]"]
    assert seen == [("small", 1), ("small", 2)] and conv2d_winograd.PRODUCT_VTHREADS == 1


def test_timed_rows_print_each_variant_beside_one_reference(monkeypatch):
    """The GPU path's table without a GPU: timings faked, the rows and ratios as printed."""
    import tvmlab as tvm
    times = iter([2.0, 1.0])
    refs = []

    class Dev:
        exist = True
    monkeypatch.setattr(tvm, "cuda", lambda i=0: Dev())
    monkeypatch.setattr(gpu, "_torch_cuda", lambda: object())
    monkeypatch.setattr(gpu, "time_tvmlab", lambda c, repeat=20: (next(times), 7))
    monkeypatch.setattr(gpu, "time_reference", lambda c, torch, number, repeat=20: refs.append(number) or 1.5)
    out = io.StringIO()
    assert gpu.main(["--quick", "--rows", "add", "--variant", "new", "--variant", "old",
                     "topi.cuda.injective.MANY_GROUPS=0"], out=out) == 0
    rows = [line.split() for line in out.getvalue().splitlines()]
    assert rows[3][:3] == ["vector", "add", str(1 << 22)]
    assert rows[4] == ["[new]", "2.000", "1.500", "0.75x", "torch.add"]
    assert rows[5] == ["[old]", "1.000", "1.500", "1.50x", "torch.add"]
    assert refs == [7]        # the reference timed once, with the first variant's calls per run


def test_unknown_rows_are_refused():
    with pytest.raises(SystemExit):
        gpu.main(["--simulate", "--rows", "add,nosuchrow"], out=io.StringIO())


def test_a_model_builds_under_its_variants_settings(monkeypatch):
    """resnet50's row builds one ONNX model per variant (here a small one), the settings in place only while
    relay.build runs."""
    from tvmlab import relay
    from tvmlab.bench import models
    seen, build = [], relay.build
    monkeypatch.setattr(relay, "build", lambda *a, **k: seen.append(conv2d.MIN_BLOCKS) or build(*a, **k))
    v, = variants.parse_variants([["tiled", "topi.cuda.conv2d.MIN_BLOCKS=0"]])
    lib, seconds = gpu.build_model(models.residual_block(), (1, 16, 14, 14), v)
    assert seen == [0] and conv2d.MIN_BLOCKS == 128 and seconds > 0
    assert "__global__" in lib.get_lib().get_source()
