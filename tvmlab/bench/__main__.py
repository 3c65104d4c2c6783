"""``python -m tvmlab.bench``: print the benchmark table."""
from .table import run

if __name__ == "__main__":
    run()
