"""``python -m tvmlab.autotvm.tophub tune|show``: make or list the shipped tuned configs (``tophub/tune.py``).

The models are tvmlab's benchmark models (``tvmlab.bench.models``: resnet50, mobilenet_v2, bert, gpt2, vit,
small_cnn) at batch 1, imported through the ONNX frontend as a user's would be."""
import argparse
import sys

from .tune import TophubError, show, tune


def _program(name):
    from ... import relay
    from ...bench.graph import MODELS, model_feeds
    if name not in MODELS:
        raise TophubError(f"tophub tune: unknown model {name!r}; choose from {sorted(MODELS)}")
    model, shape = MODELS[name]()
    feeds = model_feeds(model, shape)
    return relay.frontend.from_onnx(model, shape={k: v.shape for k, v in feeds.items()})


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m tvmlab.autotvm.tophub",
                                description="make or list the tuned configs tvmlab ships")
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("tune", help="tune on this machine and merge the best records into <out>/<device key>.log")
    t.add_argument("--target", default="cuda")
    t.add_argument("--models", default="", help="comma-separated benchmark models (resnet50, bert, gpt2, ...)")
    t.add_argument("--products", default="", help="comma-separated sizes n of n x n x n products")
    t.add_argument("--trials", type=int, default=200, help="configs per task at most")
    t.add_argument("--seconds", type=float, default=60.0, help="seconds per task at most (checked per batch)")
    t.add_argument("--tuner", default="xgb", choices=["xgb", "random", "ga", "grid"])
    t.add_argument("--out", default=None, help="folder of the log (default: the package's tophub_logs)")
    s = sub.add_parser("show", help="list the shipped records for a target's device")
    s.add_argument("--target", default="cuda")
    a = p.parse_args(argv)
    try:
        if a.cmd == "show":
            show(a.target)
            return 0
        programs = [_program(m) for m in a.models.split(",") if m]
        sizes = [int(n) for n in a.products.split(",") if n]
        tune(a.target, programs, sizes, a.trials, a.seconds, a.out, a.tuner)
    except (TophubError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
