"""``python -m tvmlab.bench``: print the benchmark table, the tensorized matmul against the loop
schedule (tvmlab.bench.tensorize), then the whole-model table (tvmlab.bench.graph)."""
import argparse

from .table import run

if __name__ == "__main__":
    argparse.ArgumentParser(prog="python -m tvmlab.bench", description=__doc__.replace("``", "")).parse_args()
    run()
    print()
    from .tensorize import run as run_tensorize
    run_tensorize()
    print()
    from .graph import run_if_available
    run_if_available()
