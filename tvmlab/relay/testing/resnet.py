"""ResNet (v1, bottleneck blocks for 50+ layers) as a relay graph, as TVM's ``relay.testing.resnet``."""
from __future__ import annotations

from ... import relay
from .init import create_workload


def _bn(x, name):
    return relay.nn.batch_norm(x, _v(name + "_gamma", x), _v(name + "_beta", x), _v(name + "_moving_mean", x),
                               _v(name + "_moving_var", x), epsilon=2e-5)[0]


_CHANNELS = {}


def _v(name, x):
    return relay.var(name, shape=(_CHANNELS[id(x)],))


def _conv(x, channels, kernel, stride, pad, name, in_channels):
    w = relay.var(name + "_weight", shape=(channels, in_channels, kernel, kernel))
    y = relay.nn.conv2d(x, w, strides=(stride, stride), padding=(pad, pad), channels=channels,
                        kernel_size=(kernel, kernel))
    _CHANNELS[id(y)] = channels
    return y


def _unit(x, in_c, out_c, stride, dim_match, name, bottleneck):
    if bottleneck:
        mid = out_c // 4
        y = relay.nn.relu(_bn(_conv(x, mid, 1, 1, 0, name + "_conv1", in_c), name + "_bn1"))
        y = relay.nn.relu(_bn(_conv(y, mid, 3, stride, 1, name + "_conv2", mid), name + "_bn2"))
        y = _bn(_conv(y, out_c, 1, 1, 0, name + "_conv3", mid), name + "_bn3")
    else:
        y = relay.nn.relu(_bn(_conv(x, out_c, 3, stride, 1, name + "_conv1", in_c), name + "_bn1"))
        y = _bn(_conv(y, out_c, 3, 1, 1, name + "_conv2", out_c), name + "_bn2")
    if dim_match:
        short = x
    else:
        short = _bn(_conv(x, out_c, 1, stride, 0, name + "_sc", in_c), name + "_sc_bn")
    return relay.nn.relu(relay.add(y, short))


_UNITS = {18: ([2, 2, 2, 2], False), 34: ([3, 4, 6, 3], False), 50: ([3, 4, 6, 3], True),
          101: ([3, 4, 23, 3], True), 152: ([3, 8, 36, 3], True)}


def get_net(batch_size=1, num_classes=1000, num_layers=50, image_shape=(3, 224, 224), dtype="float32"):
    """The relay function of a ResNet-``num_layers`` (18, 34, 50, 101, 152)."""
    if num_layers not in _UNITS:
        raise relay.RelayError(f"resnet: num_layers must be one of {sorted(_UNITS)}, got {num_layers}")
    units, bottleneck = _UNITS[num_layers]
    filters = [64, 256, 512, 1024, 2048] if bottleneck else [64, 64, 128, 256, 512]
    data = relay.var("data", shape=(batch_size,) + tuple(image_shape), dtype=dtype)
    x = relay.nn.relu(_bn(_conv(data, 64, 7, 2, 3, "conv0", image_shape[0]), "bn0"))
    x = relay.nn.max_pool2d(x, pool_size=(3, 3), strides=(2, 2), padding=(1, 1))
    in_c = 64
    for stage, n in enumerate(units):
        for k in range(n):
            stride = 1 if stage == 0 or k > 0 else 2
            x = _unit(x, in_c, filters[stage + 1], stride, k > 0, f"stage{stage + 1}_unit{k + 1}", bottleneck)
            in_c = filters[stage + 1]
    x = relay.nn.batch_flatten(relay.nn.global_avg_pool2d(x))
    w = relay.var("fc1_weight", shape=(num_classes, in_c))
    b = relay.var("fc1_bias", shape=(num_classes,))
    x = relay.nn.softmax(relay.nn.bias_add(relay.nn.dense(x, w), b))
    _CHANNELS.clear()
    return relay.Function(relay.analysis.free_vars(x), x)


def get_workload(batch_size=1, num_classes=1000, num_layers=50, image_shape=(3, 224, 224), dtype="float32"):
    """(IRModule, params) of a ResNet with random weights."""
    return create_workload(get_net(batch_size, num_classes, num_layers, image_shape, dtype))
