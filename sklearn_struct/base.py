"""The scikit-learn contract shared by every structured estimator of the package.

Every structured estimator (:class:`~sklearn_struct.EGCRF`,
:class:`~sklearn_struct.EGStructuredSVM`, :class:`~sklearn_struct.L1M3N`,
:class:`~sklearn_struct.DualExtragradientMatcher`) derives from
:class:`StructuredEstimator`, which talks to its structure only through the
structure protocol (:class:`~sklearn_struct.structures.BaseStructure`) and so
works alike for every structure, built-in or not:

* the ``structure`` parameter: ``None`` (multiclass for a 2-D array or sparse
  matrix ``X``, a chain for a list of 2-D arrays; graphs are never guessed),
  a name (``"multiclass"``, ``"chain"``, ``"matching"``, ``"mincut"``,
  ``"dependency"``, ``"tree"``) or a structure object, used as given and never modified;
* validation: the structure checks the operations the learner needs before
  any work, a flat structure's table ``X`` and ``y`` go through scikit-learn's
  ``validate_data`` (its messages, ``n_features_in_`` and
  ``feature_names_in_``), every other input through the structure's
  ``make_batch`` and target codec, which name the offending example;
* targets: the structure's output space (``structure.output_space()``) gives the
  codec that fixes ``classes_``, encodes ``y`` and decodes predictions;
* ``predict`` (MAP outputs), ``score`` (the output space's ``score``),
  ``decision_function`` (per-unit part scores), ``predict_marginals``,
  ``predict_proba`` and ``predict_log_proba`` (only where they work);
* ``predict_k_best`` (the k best outputs, their scores and, for CRFs, their
  probabilities) and, for CRFs, ``sample_y`` (exact samples), over structures
  with a dynamic program;
* fitted weights: the flat weight vector ``weights_``, the structure's
  views of it (``coef_``, ``transition_``, ...) and, keyed by feature and
  label names, ``named_weights`` (``state_features_``,
  ``transition_features_``); ``prune_weights``; the pickle holds the
  weights once, sparse when mostly zero;
* scikit-learn tags: an estimator over a structure with flat outputs
  (``structure=None``, ``"multiclass"`` or a flat structure object) is a
  classifier, so that stratified cross-validation, ``VotingClassifier`` and
  ``StackingClassifier`` accept it.

Sequences with ``structure=None`` are fitted by a classifier too (the tags
depend on the parameters, not on the data): scikit-learn's ``check_cv`` then
picks ``KFold`` for a list of label arrays, but rejects a ragged list of
Python *lists* of labels ("legacy multi-label data representation"); give
label arrays, or ``structure="chain"``, or an explicit ``cv=KFold(k)``.

Every estimator's ``history_`` is a dict of 1-D arrays with one entry per
iteration of its solver (:func:`as_history`).

Edge inputs (the catalogue of ``tests/estimators/test_bad_input.py``): bad input is refused
with a ``ValueError`` or ``TypeError`` naming the example (and row) before any
work.  Accepted edge cases:

* 0 feature columns: refused for flat tables (scikit-learn's message); for
  sequences and trees (dense or sparse) every estimator learns the transitions
  only; for matchings there is no weight at all (``weights_`` is empty, every
  edge scores 0); min-cuts may lack node or edge features;
* a graph without candidate edges (its only output is the empty matching) and
  all-zero binary targets (an output like any other);
* labels unseen in training, at ``score``: they count as wrong.

Sequences, sentences and graphs of 0 tokens, words or nodes are refused.
"""

import functools
import warnings

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import ClassifierTags

from ._prediction import PredictionMixin
from ._validation import (STRUCTURE_CONSTRAINT, STRUCTURE_NAMES, FitValidationMixin,
                          _declared_structure, check_path_arguments, resolve_structure)
from ._weights import WeightsMixin, WeightView  # noqa: F401 (model files read WeightView here)

__all__ = ["STRUCTURE_CONSTRAINT", "STRUCTURE_NAMES", "StructuredEstimator", "as_history",
           "check_path_arguments", "fit_path_point", "path_point_score", "resolve_structure",
           "restored_on_failure"]


def restored_on_failure(fit):
    """Decorate a ``fit`` or ``partial_fit`` method: if it raises, the estimator gets back
    every attribute it had before the call, so that no partial model (the weights of a
    pass shown to a callback, the classes of a fit refused later) outlives a failed fit."""
    @functools.wraps(fit)
    def guarded(self, *args, **kwargs):
        before = dict(self.__dict__)
        try:
            return fit(self, *args, **kwargs)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(before)
            raise

    return guarded


def as_history(history):
    """A solver's per-iteration record as a dict of 1-D arrays (the ``history_`` format).

    Parameters
    ----------
    history : dict of sequence
        One sequence of per-iteration values per key.

    Returns
    -------
    history : dict of ndarray
        The same keys, each with a 1-D array (``float64`` for an empty record).

    Examples
    --------
    >>> from sklearn_struct.base import as_history
    >>> as_history({"objective": [3.0, 2.5], "n_nonzero": []})
    {'objective': array([3. , 2.5]), 'n_nonzero': array([], dtype=float64)}
    """
    arrays = {}
    for key, values in history.items():
        array = np.asarray(values)
        arrays[key] = array.reshape(-1) if array.size else np.zeros(0)
    return arrays


def fit_path_point(model, C, X, y, **fit_params):
    """Refit ``model`` at ``C``, a point of a regularisation path.

    Returns ``(converged, caught)``: whether the fit raised no ``ConvergenceWarning``,
    and the warnings it raised, recorded (the path decides whether to pass them on).
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        model.set_params(C=C).fit(X, y, **fit_params)
    return not any(issubclass(w.category, ConvergenceWarning) for w in caught), caught


def path_point_score(model, X_val, y_val, scoring):
    """The validation score of a path point: ``scoring(model, X_val, y_val)``, or
    ``model.score`` without ``scoring``; ``nan`` without a validation set."""
    if X_val is None:
        return np.nan
    return model.score(X_val, y_val) if scoring is None else scoring(model, X_val, y_val)


class StructuredEstimator(FitValidationMixin, WeightsMixin, PredictionMixin, BaseEstimator):
    """Base of the structured estimators: the scikit-learn contract over the structure protocol.

    A subclass has the parameters ``structure``, ``n_jobs`` (joblib workers,
    also used by prediction) and its learner's, and implements ``fit``: it
    calls :meth:`_validate_fit_data` (structure, targets, batch, sample
    weights, before any work), runs its solver and stores the weights with
    :meth:`_set_weights`.  Everything else -- ``predict``, ``score``,
    ``decision_function``, ``predict_marginals``, ``predict_proba``,
    ``predict_log_proba``, the tags and the fitted weight attributes -- comes
    from here and asks the structure only through its protocol: the input
    checking from ``FitValidationMixin`` (``_validation.py``), the weights
    from ``WeightsMixin`` (``_weights.py``), the prediction API from
    ``PredictionMixin`` (``_prediction.py``).

    Notes
    -----
    Class attributes for subclasses:

    _required_operations : tuple of str
        Parts operations the learner needs (checked with
        :meth:`~sklearn_struct.structures.BaseStructure.check_supports` when
        ``fit`` starts); subclasses may compute them in
        :meth:`_operations_needed`.
    _probabilistic : bool
        Whether the model is a Gibbs distribution (a CRF), so that
        ``predict_marginals`` and, for flat outputs, ``predict_proba`` make sense.
    _sign_constraints : bool
        Whether the learner keeps the structure's ``nonnegative_weights``
        (checked when ``fit`` starts: a learner that cannot refuses such data).
    _weights_prunable : bool
        Whether :meth:`prune_weights` is offered (not where a fitted attribute
        such as L1M3N's ``support_`` depends on which weights are zero).

    Fitted attributes set here: ``structure_``, ``classes_``,
    ``n_features_in_``, ``feature_names_in_`` (table inputs with column
    names), ``weights_`` and the structure's weight attributes.
    """

    _required_operations = ("part_scores", "argmax")
    _probabilistic = False
    _sign_constraints = True
    _weights_prunable = True

    def _pass_callback(self, callback, batch, weights_of, stopping=None):
        """The solver's per-pass callback that shows ``callback`` the model of that pass.

        ``weights_of(solver_state)`` gives the current weight vector; the
        estimator gets it (``coef_``, ``predict``, ... work) and
        ``callback(pass_number, estimator)`` is called; then ``stopping`` (an
        :class:`~sklearn_struct._early_stopping.EarlyStopping`) scores the pass,
        and the solver stops when it says so.  ``None`` for none of the two.
        """
        if callback is None and stopping is None:
            return None
        if callback is not None and not callable(callback):
            raise TypeError(f"{type(self).__name__}.fit: callback must be callable "
                            f"(pass_number, estimator), got {callback!r}.")

        def on_pass(pass_number, state):
            self._set_weights(batch, weights_of(state))
            if callback is not None:
                callback(pass_number, self)
            return stopping is not None and stopping(pass_number)

        return on_pass

    # ------------------------------------------------------------------- tags
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.required = True
        structure = _declared_structure(self.structure)
        if structure is not None and structure.output_space().flat:
            tags.estimator_type = "classifier"
            tags.classifier_tags = ClassifierTags()
        return tags
