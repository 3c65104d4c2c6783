"""CPU benchmarks of the topi kernels against numpy (and torch), printed as one table.

Run ``python -m tvmlab.bench`` (or ``make bench``).  Every row is timed side by
side with its reference in this process (see ``timing``), so the ratios hold
even on a busy machine; the absolute numbers move with the load.
"""
from .suite import ROWS, Row
from .table import format_table, run

__all__ = ["ROWS", "Row", "format_table", "run"]
