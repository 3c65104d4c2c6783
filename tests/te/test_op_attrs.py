"""Operation attrs (``te.compute(..., attrs=...)``): TVM's view (``.value``, Arrays, a JSON-like
``str``) over the plain Python values tvmlab's schedules read."""
import json
import pickle

import numpy as np

import tvmlab as tvm
from tvmlab import te
from tvmlab.ir.attrs import AttrArray, AttrMap


def _gemm_with_attrs(n, attrs):
    A = te.placeholder((n, 7), name="A")
    B = te.placeholder((9, 7), name="B")
    k = te.reduce_axis((0, 7), name="k")
    C = te.compute((n, 9), lambda i, j: te.sum(A[i, k] * B[j, k], axis=k), name="C", attrs=attrs)
    return A, B, C


def test_attr_values_read_as_tvm_objects_and_as_plain_values():
    n = te.size_var("n")
    attrs = {"hello": 1, "arr": [10, 12], "big": 2**40, "f": 0.5, "s": "NCHW", "flag": True,
             "sub": {"k": (1, 2)}, "extent": n, "none": None, "np": np.int64(3)}
    a = _gemm_with_attrs(n, attrs)[2].op.attrs
    assert isinstance(a, AttrMap) and "hello" in a and "xx" not in a
    assert a["hello"].value == 1 and a["hello"].dtype == "int32" and a["big"].dtype == "int64"
    assert a["arr"][0].value == 10 and isinstance(a["arr"], AttrArray)
    assert a["f"].value == 0.5 and a["f"].dtype == "float32"
    assert a["s"].value == "NCHW" and a["flag"].value is True and a["flag"].dtype == "bool"
    assert a["sub"]["k"][1].value == 2 and a["np"].value == 3
    assert a["extent"] is n and a["none"] is None
    # the plain view tvmlab's schedules and tuning records rely on
    assert a["hello"] == 1 and int(a["hello"]) == 1 and a["arr"] == (10, 12)
    sh, sw = a["arr"]
    assert (sh, sw) == (10, 12) and hash(a["arr"]) == hash((10, 12))
    assert repr(a["arr"]) == "(10, 12)" and repr(a["s"]) == "'NCHW'" and repr(a["flag"]) == "True"
    assert f"{a['hello']:03d}" == "001" and a["s"] + "c" == "NCHWc"


def test_str_of_attrs_is_json_text():
    a = _gemm_with_attrs(5, {"hello": 1, "arr": [10, 12], "s": 'say "hi"', "flag": False,
                             "f": 2.5, "m": {"x": [1]}})[2].op.attrs
    assert json.loads(str(a)) == {"hello": 1, "arr": [10, 12], "s": 'say "hi"', "flag": False,
                                  "f": 2.5, "m": {"x": [1]}}


def test_attrs_survive_save_json_load_json():
    n = te.size_var("n")
    C = _gemm_with_attrs(n, {"hello": 1, "arr": [10, 12], "flag": True, "f": 0.25, "s": "x",
                             "extent": n})[2]
    CC = tvm.ir.load_json(tvm.ir.save_json(C))
    a = CC.op.attrs
    assert a["hello"].value == 1 and a["arr"][0].value == 10 and isinstance(a["arr"], AttrArray)
    assert json.loads(str(AttrMap({k: v for k, v in a.items() if k != "extent"})))["arr"][1] == 12
    assert a["flag"].value is True and a["f"].value == 0.25 and a["s"].value == "x"
    # a variable in attrs is the one the loaded compute's shape uses
    assert a["extent"] is CC.op.axis[0].dom.extent
    assert tvm.ir.structural_equal(a, C.op.attrs, map_free_vars=True)
    assert tvm.ir.structural_hash(a) == tvm.ir.structural_hash(C.op.attrs)
    assert tvm.ir.structural_equal(CC.op.body, C.op.body, map_free_vars=True)


def test_attrs_survive_pickle_schedule_copies_and_item_assignment(rng):
    A, B, C = _gemm_with_attrs(13, {"block": 4, "strides": (1, 2)})
    a = pickle.loads(pickle.dumps(C.op.attrs))
    assert a["strides"][1].value == 2 and a == C.op.attrs
    s = te.create_schedule(C.op)
    CL = s.cache_write(C, "local")
    assert CL.op.attrs["block"].value == 4 and C.op.attrs["strides"][0].value == 1
    a["extra"] = [3]
    assert a["extra"][0].value == 3
    a.update(more=1.0)
    assert a["more"].dtype == "float32" and a.setdefault("d", "s").value == "s"
    xo, xi = s[C].split(C.op.axis[1], factor=int(C.op.attrs["block"]))     # 4 does not divide 9
    f = tvm.build(s, [A, B, C], "llvm")
    x, y = rng.standard_normal((13, 7)).astype("float32"), rng.standard_normal((9, 7)).astype("float32")
    out = tvm.nd.array(np.full((13, 9), np.nan, "float32"))
    f(tvm.nd.array(x), tvm.nd.array(y), out)
    np.testing.assert_allclose(out.numpy(), x @ y.T, rtol=1e-5, atol=1e-5)
