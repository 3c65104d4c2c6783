"""Random parameters for a workload: every free variable except the data input gets a tensor of its type."""
from __future__ import annotations

import numpy as np

from ...ir.function import IRModule
from ..transform.infer_type import infer_function
from ..ty import TensorType


def create_workload(func, seed=0, data_names=("data",)):
    """(IRModule, params) with He-scaled random weights, positive variances for batch norms."""
    infer_function(func)
    rng = np.random.default_rng(seed)
    params = {}
    for p in func.params:
        if p.name_hint in data_names:
            continue
        t = p.type_annotation
        assert isinstance(t, TensorType)
        if p.name_hint.endswith(("_var", "moving_var")):
            v = rng.uniform(0.5, 1.5, t.shape)
        elif p.name_hint.endswith(("_gamma",)):
            v = rng.uniform(0.5, 1.5, t.shape)
        elif p.name_hint.endswith(("_beta", "_mean", "_bias")):
            v = rng.uniform(-0.1, 0.1, t.shape)
        else:
            fan_in = int(np.prod(t.shape[1:])) if len(t.shape) > 1 else 1
            v = rng.standard_normal(t.shape) * np.sqrt(2.0 / max(fan_in, 1))
        params[p.name_hint] = v.astype(t.dtype)
    return IRModule({"main": func}), params
