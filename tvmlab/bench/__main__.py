"""``python -m tvmlab.bench``: print the benchmark table, then the whole-model table (tvmlab.bench.graph)."""
from .table import run

if __name__ == "__main__":
    run()
    from .graph import run_if_available
    run_if_available()
