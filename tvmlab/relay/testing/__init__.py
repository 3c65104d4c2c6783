"""Ready-made workloads, as TVM's ``relay.testing``: ``resnet.get_workload(num_layers=50)`` -> (mod, params)."""
from . import resnet  # noqa: F401
from .init import create_workload  # noqa: F401
