"""TVM's ``tvm.container`` / ``tvm.runtime.container`` names for the containers tvmlab returns.

tvmlab hands back plain Python containers: ``InferBound`` a dict
(``isinstance(bounds, tvm.container.Map)``), axis lists as lists or tuples.
"""
Map = dict
Array = (list, tuple)


def String(value):  # noqa: N802 - TVM's name
    return str(value)
