"""A learned cost model: gradient-boosted trees (xgboost) that score candidates from their features.

``XGBCostModel(loss_type="rank")`` learns to *order* candidates (pairwise
ranking, which is what a search needs: it only picks the best-looking ones);
``"reg"`` regresses the normalised throughput.  ``fit(X, y)`` takes feature
rows and throughputs (higher is better; failed candidates count as 0),
``predict(X)`` scores rows, ``fit_log(records)`` trains from earlier
``(features, throughput)`` pairs of a related task (transfer learning) and
keeps them as a base that later ``fit`` calls add to.
"""
from __future__ import annotations

import numpy as np

from ..errors import TVMLabError


class CostModelError(TVMLabError, ValueError):
    """The cost model was given data it cannot learn from (wrong shapes, no rows)."""


class XGBCostModel:
    """Boosted trees over feature rows (see the module docstring)."""

    def __init__(self, loss_type="rank", num_boost_round=120, max_depth=3, learning_rate=0.3, seed=0,
                 num_threads=None):
        if loss_type not in ("rank", "reg"):
            raise CostModelError(f"loss_type must be 'rank' or 'reg', got {loss_type!r}")
        try:
            import xgboost  # noqa: F401
        except ImportError as e:  # pragma: no cover - the tune extra installs it
            raise CostModelError("XGBCostModel needs xgboost (pip install tvmlab[tune])") from e
        self.loss_type = loss_type
        self.num_boost_round = num_boost_round
        self.params = {
            "max_depth": max_depth, "gamma": 1e-4, "min_child_weight": 1, "subsample": 1.0,
            "eta": learning_rate, "lambda": 1.0, "alpha": 0.0, "seed": seed, "verbosity": 0,
            "objective": "rank:pairwise" if loss_type == "rank" else "reg:squarederror",
        }
        # one thread by default: the data are small (hundreds of rows), and on a busy machine
        # OpenMP threads spinning next to the builders cost far more than they save
        self.params["nthread"] = int(num_threads) if num_threads else 1
        self.booster = None
        self.n_features = None
        self._base_X = None
        self._base_y = None

    def _rows(self, X, what="X"):
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[0] == 0:
            raise CostModelError(f"{what} must be a non-empty 2-D array of feature rows, got shape {X.shape}")
        if self.n_features is not None and X.shape[1] != self.n_features:
            raise CostModelError(f"{what} has {X.shape[1]} features per row; the model was trained on "
                                 f"{self.n_features}")
        return np.nan_to_num(X, nan=0.0, posinf=0.0, neginf=0.0)

    def fit(self, X, y):
        """Train on rows ``X`` and throughputs ``y`` (plus any ``fit_log`` base); returns self."""
        X = self._rows(X)
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        if y.shape[0] != X.shape[0]:
            raise CostModelError(f"X has {X.shape[0]} rows but y has {y.shape[0]} values")
        self.n_features = X.shape[1]
        if self._base_X is not None and self._base_X.shape[1] == X.shape[1]:
            X = np.vstack([self._base_X, X])
            y = np.concatenate([self._base_y, y])
        self._train(X, y)
        return self

    def _train(self, X, y):
        import xgboost as xgb
        y = np.nan_to_num(y, nan=0.0, posinf=0.0, neginf=0.0)
        y = y / max(float(y.max()), 1e-12)       # throughputs relative to the best
        dtrain = xgb.DMatrix(X, label=y)
        if self.loss_type == "rank":
            dtrain.set_group([X.shape[0]])
        self.booster = xgb.train(self.params, dtrain, num_boost_round=self.num_boost_round)

    def fit_log(self, X, y=None):
        """Train from earlier measurements: rows and throughputs, or an iterable of (row, throughput).

        The rows stay as a base that later ``fit`` calls extend.
        """
        if y is None:
            pairs = list(X)
            if not pairs:
                raise CostModelError("fit_log needs at least one (features, throughput) record")
            X = [p[0] for p in pairs]
            y = [p[1] for p in pairs]
        X = self._rows(X, "fit_log rows")
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        if y.shape[0] != X.shape[0]:
            raise CostModelError(f"fit_log: {X.shape[0]} rows but {y.shape[0]} throughputs")
        self.n_features = X.shape[1]
        self._base_X, self._base_y = X, y
        self._train(X, y)
        return self

    def predict(self, X):
        """Scores of rows ``X`` (higher means faster); zeros before any training."""
        X = self._rows(X)
        if self.booster is None:
            return np.zeros(X.shape[0])
        return np.asarray(self.booster.inplace_predict(X))     # no DMatrix: called often by the search

    @property
    def trained(self):
        return self.booster is not None

    def __repr__(self):
        return f"XGBCostModel(loss_type={self.loss_type!r}, trained={self.trained})"
