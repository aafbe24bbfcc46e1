"""Early stopping of the iterative learners: a validation set scored after every pass,
and the best pass's weights kept.

The learners that take ``early_stopping`` (the EG estimators, the perceptron and the dual
extragradient) hold out ``validation_fraction`` of the training examples, or take a
validation set given to ``fit`` (``X_val``, ``y_val``), score the model of every pass on it
with the estimator's ``score`` (its structure's ``score_outputs``), stop after
``n_iter_no_change`` passes without a better score, and end with the weights of the best
pass.  The solvers know nothing of it: their per-pass callback returns whether to stop.
"""

from numbers import Integral, Real

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval

__all__ = ["EARLY_STOPPING_CONSTRAINTS", "EarlyStopping", "take_units"]

EARLY_STOPPING_CONSTRAINTS = {
    "early_stopping": ["boolean"],
    "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
    "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
}


def take_units(batch, Y, indices):
    """Encoded outputs of some examples of a batch (flat over their units)."""
    return np.concatenate([Y[batch.unit_offsets[i]:batch.unit_offsets[i + 1]]
                           for i in indices])


class EarlyStopping:
    """The validation set of a fit and the best pass seen on it.

    Parameters
    ----------
    estimator : StructuredEstimator
        Being fitted: its data attributes (``structure_``, the codec) are set.
    validation : tuple
        ``(batch, Y)``: the validation examples and their encoded outputs (``-1`` for
        labels unseen in training, which count as wrong).
    """

    def __init__(self, estimator, validation):
        self.estimator, self.validation = estimator, validation
        self.scores, self.best_score, self.best_iteration, self.best_weights = [], -np.inf, 0, None
        self.stopped = False

    @classmethod
    def split(cls, estimator, batch, Y, sample_weight, X_val=None, y_val=None):
        """``(batch, Y, sample_weight, stopping)`` for a fit: the training part and the
        :class:`EarlyStopping` of the validation part (None without early stopping).

        The validation part is ``X_val``, ``y_val`` when given, else
        ``validation_fraction`` of the examples, drawn with ``random_state``.
        """
        name = type(estimator).__name__
        if (X_val is None) != (y_val is None):
            raise ValueError(f"{name}.fit: give both X_val and y_val, or neither.")
        if not estimator.early_stopping:
            if X_val is not None:
                raise ValueError(f"{name}.fit: X_val and y_val are the validation set of "
                                 "early stopping; set early_stopping=True to use them.")
            return batch, Y, sample_weight, None
        if X_val is not None:
            val_batch = estimator._validate_predict_data(X_val)
            validation = (val_batch, estimator._encode_scored(val_batch, y_val))
            return batch, Y, sample_weight, cls(estimator, validation)
        n = batch.n_samples
        n_val = int(np.ceil(estimator.validation_fraction * n))
        if n_val >= n:
            raise ValueError(
                f"{name}.fit: validation_fraction={estimator.validation_fraction} of {n} "
                f"examples leaves {n - n_val} to train on; early stopping needs at least one "
                "example on each side (give more examples, a smaller validation_fraction, or "
                "a validation set: fit(X, y, X_val=..., y_val=...)).")
        order = check_random_state(estimator.random_state).permutation(n)
        held, kept = np.sort(order[:n_val]), np.sort(order[n_val:])
        structure = estimator.structure_
        validation = (structure.take(batch, held), take_units(batch, Y, held))
        weights = None if sample_weight is None else sample_weight[kept]
        return (structure.take(batch, kept), take_units(batch, Y, kept), weights,
                cls(estimator, validation))

    @staticmethod
    def refuse_partial_labels(estimator, X_val):
        """Refuse early stopping in a fit on partial labels (None or sets in ``y``): it
        scores fully labelled examples."""
        if estimator.early_stopping or X_val is not None:
            raise ValueError(f"{type(estimator).__name__}.fit: early stopping scores fully "
                             "labelled examples; partial labels (None or sets in y) are "
                             "learnt without it (early_stopping=False).")

    def __call__(self, pass_number):
        """Score the estimator's weights of pass ``pass_number``; whether to stop."""
        estimator = self.estimator
        batch, Y = self.validation
        score = float(estimator.structure_.output_space().score(
            batch, estimator._predict_encoded(batch), Y))
        self.scores.append(score)
        if score > self.best_score:
            self.best_score, self.best_iteration = score, pass_number
            self.best_weights = estimator.weights_.copy()
        self.stopped = pass_number - self.best_iteration >= estimator.n_iter_no_change
        return self.stopped

    @staticmethod
    def finish(estimator, stopping, batch):
        """After the solver: the best pass's weights and the validation record
        (``best_iteration_``, ``validation_scores_``), or, without early stopping, no
        such attributes (an earlier fit's are dropped)."""
        if stopping is None:
            estimator.__dict__.pop("best_iteration_", None)
            estimator.__dict__.pop("validation_scores_", None)
            return
        if stopping.best_weights is not None:
            estimator._set_weights(batch, stopping.best_weights)
        estimator.best_iteration_ = stopping.best_iteration
        estimator.validation_scores_ = np.asarray(stopping.scores, dtype=float)
