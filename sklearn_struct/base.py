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
from collections.abc import Mapping
from numbers import Real
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils import ClassifierTags, check_random_state
from sklearn.utils.metaestimators import available_if
from sklearn.utils._param_validation import Hidden, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from ._prediction import predict_marginals, predict_outputs
from .structures import NEEDS_ARGUMENTS, STRUCTURES, BaseStructure, MulticlassStructure
from .structures._batch import check_sample_weight
from .structures._targets import _label_kind

__all__ = ["STRUCTURE_NAMES", "StructuredEstimator", "as_history", "resolve_structure"]

#: Names the ``structure`` parameter takes (the registry: ``structures.STRUCTURES``).
STRUCTURE_NAMES = tuple(STRUCTURES)
#: The ``structure`` parameter's constraint, shared by every estimator (names that need
#: arguments pass it, for :func:`resolve_structure` to say how to build them).
STRUCTURE_CONSTRAINT = [None, StrOptions(set(STRUCTURE_NAMES)),
                        Hidden(StrOptions(set(NEEDS_ARGUMENTS))), BaseStructure]

_FORMS = {
    "table": "a 2-D array or sparse matrix (one row per sample)",
    "examples": "a list with one input per example (sequences or graphs)",
}


def _input_form(X):
    """``"table"`` (one matrix), ``"sequences"`` (2-D matrices) or ``"graphs"`` (tuples).

    Only used to pick a structure for ``structure=None`` and to route table
    inputs through scikit-learn's validation; never to ask what a structure is.
    """
    if sp.issparse(X):
        return "table"
    if isinstance(X, np.ndarray) and X.dtype != object:
        return "table"
    if isinstance(X, (list, tuple, np.ndarray)):
        if len(X) == 0:
            return "table"
        first = X[0]
        if isinstance(first, tuple) and any(
            sp.issparse(item) or isinstance(item, np.ndarray) and item.ndim == 2 for item in first
        ):
            return "graphs"
        if sp.issparse(first):
            return "sequences"
        try:
            if np.ndim(first) >= 2:
                return "sequences"
        except ValueError:  # a ragged 2-D list: not a row of numbers
            return "sequences"
        if isinstance(first, np.ndarray) and len({np.shape(row) for row in X}) > 1:
            return "sequences"  # 1-D arrays of different lengths: not the rows of a table
        return "table"
    return "table"  # DataFrames and other array-likes: scikit-learn validates them


def _check_data_set(X, owner, flat_only=False):
    """Refuse an ``X`` that is no data set at all, before numpy converts it.

    An empty list, a dict, a string or a scalar, or a 3-D array, would otherwise
    fail deep inside numpy with a message about something else.  ``flat_only``
    (estimators of flat samples only) also refuses a list of sequences or graphs.
    """
    expected = "a 2-D array or sparse matrix (one row per sample)" + (
        "" if flat_only else " or a list with one input per example (sequences or graphs)")
    if isinstance(X, (list, tuple)) and len(X) == 0:
        raise ValueError(f"{owner}: X is an empty list; expected {expected} with at least one "
                         "sample or example.")
    if isinstance(X, (Mapping, str, bytes)) or not (
            sp.issparse(X) or hasattr(X, "__len__") or hasattr(X, "__array__")):
        raise TypeError(f"{owner}: X must be {expected}; got {type(X).__name__}.")
    if isinstance(X, np.ndarray) and X.ndim == 3 and X.dtype != object:
        raise ValueError(
            f"{owner}: X is a 3-D array of shape {X.shape}; pass sequences as a list of 2-D "
            "arrays, one (n_tokens, n_features) array per sequence, or flat samples as one "
            "2-D array.")
    if flat_only and _input_form(X) != "table":
        raise TypeError(
            f"{owner} learns from flat samples, one 2-D array or sparse matrix; got a list of "
            f"{_input_form(X)} (use EGCRF, EGStructuredSVM or StructuredPerceptron for "
            "structured outputs).")


def _check_label_kinds(y):
    """Refuse flat labels of mixed kinds, which ``np.asarray`` would silently turn into strings."""
    if not isinstance(y, (list, tuple)) and not (isinstance(y, np.ndarray) and y.dtype == object):
        return
    values = np.ravel(np.asarray(y, dtype=object))
    kinds = [_label_kind(value) for value in values]
    for index, kind in enumerate(kinds):
        if kind != kinds[0]:
            raise TypeError(
                f"labels mix types: y[{index}] = {values[index]!r} is of type {kind} but y[0] = "
                f"{values[0]!r} is of type {kinds[0]}; use labels of one type."
            )


def _reject_token_dicts(X, owner):
    """Token feature dicts (sklearn-crfsuite's input) need vectorising: say so before any work.

    Only lists and tuples are looked at (arrays and sparse matrices hold no dicts).
    """
    if not isinstance(X, (list, tuple)):
        return
    for i, example in enumerate(X):
        if isinstance(example, Mapping):
            found = f"X[{i}] is a dict"
        elif isinstance(example, (list, tuple)) and any(isinstance(token, Mapping)
                                                        for token in example):
            found = f"X[{i}] is a sequence of dicts (token features, the sklearn-crfsuite format)"
        else:
            continue
        raise TypeError(
            f"{owner}: {found}; estimators take numbers: one (n_tokens, n_features) matrix per "
            "sequence. Turn token dicts into such matrices with "
            "sklearn_struct.preprocessing.SequenceDictVectorizer, e.g. "
            f"make_pipeline(SequenceDictVectorizer(), {owner}()).fit(X, y).")


def _check_finite_rows(X, owner):
    """Name the first row of a numeric table holding NaN or infinity (scikit-learn does not)."""
    values = X.tocsr() if sp.issparse(X) else X
    if sp.issparse(values):
        bad = ~np.isfinite(values.data)
        if bad.any():
            row = int(np.searchsorted(values.indptr, np.flatnonzero(bad)[0], side="right") - 1)
            raise ValueError(f"{owner}: X row {row} contains NaN or infinity.")
        return
    if isinstance(values, np.ndarray) and values.dtype.kind == "f" and values.ndim == 2:
        bad = ~np.isfinite(values).all(axis=1)
        if bad.any():
            raise ValueError(
                f"{owner}: X row {int(np.flatnonzero(bad)[0])} contains NaN or infinity.")


def resolve_structure(structure, X=None):
    """Structure object for a ``structure`` parameter and, for ``None``, the form of ``X``.

    Parameters
    ----------
    structure : None, str or BaseStructure
        ``None`` picks :class:`~sklearn_struct.structures.MulticlassStructure`
        for a 2-D array or sparse matrix ``X`` and
        :class:`~sklearn_struct.structures.ChainStructure` for a list of 2-D
        arrays; a name among ``STRUCTURE_NAMES`` gives a new default
        structure; a :class:`~sklearn_struct.structures.BaseStructure`
        instance is returned as given.
    X : object, default=None
        Training inputs (only read for ``structure=None``).

    Returns
    -------
    structure : BaseStructure

    Raises
    ------
    ValueError
        For an unknown name, or for graph inputs with ``structure=None``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.base import resolve_structure
    >>> resolve_structure(None, np.ones((3, 2)))
    MulticlassStructure(loss_weights=None)
    >>> resolve_structure(None, [np.ones((3, 2))])
    ChainStructure(start_end=True, loss_weights=None)
    """
    if isinstance(structure, BaseStructure):
        return structure
    if structure is None:
        form = _input_form(X)
        if form == "graphs":
            raise ValueError(
                "X holds tuples of arrays (graphs) but structure is None; graphs are never "
                "inferred from X: pass structure='matching', 'mincut' or 'tree' (or a structure "
                "object)."
            )
        structure = "multiclass" if form == "table" else "chain"
    if isinstance(structure, str) and structure in STRUCTURES:
        return STRUCTURES[structure]()
    if isinstance(structure, str) and structure in NEEDS_ARGUMENTS:
        raise ValueError(f"structure={structure!r} cannot be built from its name; pass "
                         f"{NEEDS_ARGUMENTS[structure]}.")
    raise ValueError(
        f"structure must be None, one of {STRUCTURE_NAMES} or a BaseStructure instance, "
        f"got {structure!r}."
    )


def _declared_structure(structure):
    """The structure a parameter value stands for before fitting (None: multiclass), or None."""
    if structure is None:
        return MulticlassStructure()
    try:
        return resolve_structure(structure)
    except ValueError:
        return None


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


class _WeightView(NamedTuple):
    """Where a weight attribute lies in ``weights_`` (its pickled form)."""

    offset: int
    shape: tuple
    strides: tuple


def check_path_arguments(owner, Cs, scoring):
    """The ``Cs`` of a regularisation path, sorted, and a check of its ``scoring``."""
    Cs = sorted(float(c) for c in Cs)
    if not Cs:
        raise ValueError(f"{owner}: Cs holds no value of C; pass at least one.")
    if scoring is not None and not callable(scoring):
        raise TypeError(f"{owner}: scoring must be a callable (estimator, X_val, y_val) -> "
                        f"float, got {scoring!r}.")
    return Cs


def _check_two_classes(y, owner):
    """Classifier targets need two classes; the message names them (``one class``)."""
    labels = set(np.asarray(y).tolist())
    if len(labels) < 2:
        found = f" ({next(iter(labels))!r})" if labels else ""
        raise ValueError(
            f"{owner}: y has one class only{found}; a classifier needs samples of at least "
            "two classes."
        )


def _check_known_labels(codec, y, flat, name):
    """Refuse a label outside the codec's classes (``partial_fit``), naming the example and
    the label."""
    if codec.n_states is None:
        return  # outputs that are not labels: the codec checks them
    known = set(codec.classes_.tolist())
    examples = [np.asarray(y)] if flat else y
    for i, labels in enumerate(examples):
        try:
            values = np.asarray(labels).tolist()
            # (None and sets of labels are partial labels: the codec explains)
            unseen = [(k, v) for k, v in enumerate(values)
                      if v is not None and not isinstance(v, (set, frozenset)) and v not in known]
        except TypeError:  # not label arrays or unhashable labels: the codec explains
            return
        if unseen:
            k, label = unseen[0]
            where = f"sample {k}" if flat else f"example {i} (position {k})"
            raise ValueError(
                f"{name}: {where} has label {label!r}, which is not among the classes "
                f"{codec.classes_.tolist()!r} fixed by the first call; pass every label to "
                "classes on the first call.")


class StructuredEstimator(BaseEstimator):
    """Base of the structured estimators: the scikit-learn contract over the structure protocol.

    A subclass has the parameters ``structure``, ``n_jobs`` (joblib workers,
    also used by prediction) and its learner's, and implements ``fit``: it
    calls :meth:`_validate_fit_data` (structure, targets, batch, sample
    weights, before any work), runs its solver and stores the weights with
    :meth:`_set_weights`.  Everything else -- ``predict``, ``score``,
    ``decision_function``, ``predict_marginals``, ``predict_proba``,
    ``predict_log_proba``, the tags and the fitted weight attributes -- comes
    from here and asks the structure only through its protocol.

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

    # ---------------------------------------------------------------- fitting
    def _operations_needed(self, structure):
        """Parts operations ``fit`` needs from ``structure`` (default: the class attribute)."""
        return self._required_operations

    def _validate_fit_data(self, X, y, sample_weight=None, partial=False):
        """Resolve the structure, validate and encode the training data; set the data attributes.

        Sets ``structure_`` (the structure resolved for the classes, see
        the output space's ``for_classes``),
        ``classes_`` and ``n_features_in_`` (and ``feature_names_in_`` for a
        table with column names).  Learners run their inference on
        ``structure_.training_structure()``; predictions use ``structure_``.

        Returns
        -------
        batch : batch object
            The structure's batch of ``X``.
        Y : ndarray of int64 of shape (n_units_total,)
            Encoded targets.
        sample_weight : ndarray of shape (n_samples,) or None
            Validated non-negative weights with a positive one.
        constraint_scores : ndarray of shape (n_parts_total,) or None
            Only with ``partial`` (a learner of partial labels): None when every
            unit has one label; else 0 on the parts consistent with the partial
            labels and ``-inf`` elsewhere (the output space's
            ``partial_label_scores`` under the training structure), ``Y`` then
            an output consistent with them (the training structure's argmax of
            these scores alone).  Without ``partial``,
            partial labels are refused, naming the example and the unit.
        """
        name = type(self).__name__
        structure = resolve_structure(self.structure, X)
        structure.check_supports(*self._operations_needed(structure), needed_by=name)
        _check_data_set(X, name)
        _reject_token_dicts(X, name)
        space = structure.output_space()
        table = space.flat and _input_form(X) == "table"
        if table:
            _check_label_kinds(y)
            _check_finite_rows(X, name)
            X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64)
            check_classification_targets(y)
            _check_two_classes(y, name)
        else:
            self.__dict__.pop("feature_names_in_", None)
        codec = space.codec(y)
        structure = space.for_classes(codec.classes_, y)
        space = structure.output_space()
        batch = structure.make_batch(X, n_states=codec.n_states)
        allowed = None
        if partial and hasattr(codec, "encode_partial"):
            Y, allowed = codec.encode_partial(batch, y)
        else:
            Y = codec.encode(batch, y)
        constraint_scores = None
        if allowed is None:  # gold must be an output the fitted model can predict
            structure.check_outputs(batch, Y)
        else:
            training = structure.training_structure()
            constraint_scores = space.partial_label_scores(batch, allowed, training)
            # the codec's stand-ins at the partial units need not be an output: a consistent one
            Y = training.argmax(batch, constraint_scores)
        self._check_sign_constraints(structure, batch)
        sample_weight = self._check_sample_weight(sample_weight, batch.n_samples)
        self._set_data_attributes(structure, codec, batch, table)
        if partial:
            return batch, Y, sample_weight, constraint_scores
        return batch, Y, sample_weight

    def _check_sign_constraints(self, structure, batch):
        """Refuse a structure with non-negative weights if the learner cannot keep them."""
        name = type(self).__name__
        if not self._sign_constraints and np.any(structure.nonnegative_weights(batch)):
            raise ValueError(
                f"{name}: {type(structure).__name__} needs some weights non-negative (for its "
                f"inference), a constraint that {name} cannot keep; use L1M3N or "
                "DualExtragradientMatcher, which keep it.")

    def _set_data_attributes(self, structure, codec, batch, table):
        """``structure_``, ``classes_``, ``n_features_in_`` and what prediction checks."""
        space = structure.output_space()
        self.structure_ = structure
        self.classes_ = codec.classes_
        self.n_features_in_ = int(space.n_features_in(batch))
        self._input_layout = space.input_layout(batch)
        self._codec = codec
        self._table_input = table

    def _validate_partial_fit_data(self, X, y, classes=None, sample_weight=None):
        """:meth:`_validate_fit_data` for ``partial_fit``: the first call fixes the model.

        The first call on an unfitted estimator resolves the structure and sets
        the data attributes as ``fit`` does, its classes from ``classes``
        (required when the outputs carry labels, as scikit-learn's incremental
        classifiers require it); later calls (or calls after ``fit``) check
        the ``structure`` parameter against the fitted structure's kind (a
        ``set_params(structure=...)`` in between is refused, not ignored),
        ``X`` against the fitted input width and layout, ``classes`` against
        ``classes_``, and every label of ``y`` against ``classes_``, naming the
        example and the label outside them.

        Returns
        -------
        X : ndarray, sparse matrix or list
            The validated inputs (a table as scikit-learn's validation returns
            it, or the list of examples), for a learner that keeps some of them.
        batch, Y, sample_weight
            As :meth:`_validate_fit_data` returns them.
        """
        name = f"{type(self).__name__}.partial_fit"
        first = "structure_" not in self.__dict__
        if first:
            structure = resolve_structure(self.structure, X)
            structure.check_supports(*self._operations_needed(structure), needed_by=name)
        else:
            structure = self.structure_
            declared = None if self.structure is None else resolve_structure(self.structure)
            if declared is not None and type(declared) is not type(structure):
                raise ValueError(
                    f"{name}: structure={self.structure!r} is not the structure of the first "
                    f"call ({structure!r}); partial_fit continues one model and cannot change "
                    "its structure: call fit, or partial_fit on a clone.")
        _check_data_set(X, name)
        _reject_token_dicts(X, name)
        space = structure.output_space()
        table = space.flat and _input_form(X) == "table"
        if not first and table != self._table_input:
            raise ValueError(
                f"{name}: the model was fitted on "
                f"{_FORMS['table' if self._table_input else 'examples']}; got "
                f"{type(X).__name__}.")
        if table:
            _check_label_kinds(y)
            _check_finite_rows(X, name)
            X, y = validate_data(self, X, y, reset=first, accept_sparse="csr",
                                 dtype=np.float64)
            check_classification_targets(y)
        elif first:
            self.__dict__.pop("feature_names_in_", None)
        if first:
            codec = self._partial_fit_codec(space, y, classes, name)
        else:
            codec = self._codec
            if (classes is not None and codec.n_states is not None
                    and set(np.asarray(classes).tolist()) != set(self.classes_.tolist())):
                raise ValueError(
                    f"{name}: classes={np.asarray(classes).tolist()!r} is not the same as "
                    f"the classes_ fixed by the first call, {self.classes_.tolist()!r}.")
        _check_known_labels(codec, y, space.flat, name)
        if first:
            structure = space.for_classes(codec.classes_, y)
            space = structure.output_space()
        batch = structure.make_batch(X, n_states=codec.n_states)
        if not first:
            self._check_input_shape(batch, name)
        Y = codec.encode(batch, y)
        structure.check_outputs(batch, Y)  # an output the model can predict
        self._check_sign_constraints(structure, batch)
        sample_weight = self._check_sample_weight(sample_weight, batch.n_samples)
        if first:
            self._set_data_attributes(structure, codec, batch, table)
        return X, batch, Y, sample_weight

    @staticmethod
    def _partial_fit_codec(space, y, classes, name):
        """The target codec of a first ``partial_fit`` call: its classes are ``classes``."""
        if classes is None:
            first_call = (f"{name}: classes must be passed on the first call to partial_fit "
                          "(every label the model will see, as for scikit-learn's incremental "
                          "classifiers).")
            if space.flat:
                raise ValueError(first_call)
            codec = space.codec(y)
            if codec.n_states is not None:  # outputs that carry labels
                raise ValueError(first_call)
            return codec
        classes = np.asarray(classes)
        codec = space.codec(classes if space.flat else [classes])
        if codec.n_states is None:
            raise ValueError(f"{name}: the outputs of this structure are not labels; classes "
                             "does not apply (pass classes=None).")
        return codec

    def _check_sample_weight(self, sample_weight, n_samples):
        """``None`` or finite non-negative per-example weights with at least one positive."""
        name = type(self).__name__
        sample_weight = check_sample_weight(sample_weight, n_samples, name)
        if sample_weight is None:
            return None
        negative = np.flatnonzero(sample_weight < 0)
        if negative.size:
            raise ValueError(
                f"{name}: sample_weight must be non-negative; example {negative[0]} has weight "
                f"{sample_weight[negative[0]]}."
            )
        if not (sample_weight > 0).any():
            raise ValueError(f"{name}: sample_weight is zero for every example; at least one "
                             "weight must be positive.")
        return sample_weight

    def _set_weights(self, batch, w):
        """Store ``weights_`` and the structure's named views of it, dropping stale ones."""
        for attribute in self.__dict__.pop("_weight_attribute_names", ()):
            self.__dict__.pop(attribute, None)
        self.weights_ = np.array(w, dtype=np.float64)
        attributes = self.structure_.output_space().weight_attributes(batch, self.weights_)
        for attribute, value in attributes.items():
            setattr(self, attribute, value)
        self._weight_attribute_names = tuple(attributes)

    def _pass_callback(self, callback, batch, weights_of):
        """The solver's per-pass callback that shows ``callback`` the model of that pass.

        ``weights_of(solver_state)`` gives the current weight vector; the
        estimator gets it (``coef_``, ``predict``, ... work) and
        ``callback(pass_number, estimator)`` is called.  ``None`` for none.
        """
        if callback is None:
            return None
        if not callable(callback):
            raise TypeError(f"{type(self).__name__}.fit: callback must be callable "
                            f"(pass_number, estimator), got {callback!r}.")

        def on_pass(pass_number, state):
            self._set_weights(batch, weights_of(state))
            callback(pass_number, self)

        return on_pass

    def _weight_attributes(self):
        return {name: getattr(self, name) for name in self._weight_attribute_names}

    def __getstate__(self):
        # pickle the weights once: each view (coef_, transition_, ...) would be copied, so
        # it is stored as its place in weights_; mostly-zero weights (L1, prune_weights)
        # are stored sparse
        state = super().__getstate__()
        if "weights_" not in state:
            return state
        state = dict(state)
        w = state["weights_"]
        base = w.__array_interface__["data"][0]
        for name in state.get("_weight_attribute_names", ()):
            view = state[name]
            if isinstance(view, np.ndarray) and view.size and np.shares_memory(view, w):
                offset = view.__array_interface__["data"][0] - base
                state[name] = _WeightView(offset, view.shape, view.strides)
        if np.count_nonzero(w) * 12 < w.size * 8:  # int32 index + float64 value per non-zero
            state["weights_"] = sp.csr_array(w.reshape(1, -1))
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        w = self.__dict__.get("weights_")
        if sp.issparse(w):
            self.weights_ = np.zeros(w.shape[1])
            self.weights_[w.indices] = w.data
        for name in self.__dict__.get("_weight_attribute_names", ()):
            view = self.__dict__[name]
            if isinstance(view, _WeightView):
                setattr(self, name, np.ndarray(view.shape, np.float64, buffer=self.weights_,
                                               offset=view.offset, strides=view.strides))

    def _prunable(self):
        return self._weights_prunable

    @available_if(_prunable)
    def prune_weights(self, threshold):
        """Set the weights whose magnitude is below ``threshold`` to zero.

        A pruned model predicts almost as the full one when ``threshold`` is
        small, and it is small on disk: a model whose weights are mostly zero
        (after pruning or an L1 penalty) is pickled with its weights sparse.

        Parameters
        ----------
        threshold : float
            Weights with ``|w| < threshold`` become 0 (non-negative; 0 keeps
            every weight).

        Returns
        -------
        self : object
            The estimator, pruned in place (``weights_`` and its views).
        """
        check_is_fitted(self)
        if not isinstance(threshold, Real) or not threshold >= 0:
            raise ValueError(f"{type(self).__name__}.prune_weights: threshold must be a "
                             f"non-negative number, got {threshold!r}.")
        self.weights_[np.abs(self.weights_) < threshold] = 0.0  # the views follow
        return self

    # ------------------------------------------------------------ named weights
    def named_weights(self, feature_names=None):
        """Fitted weights keyed by feature and label names, as in sklearn-crfsuite.

        Parameters
        ----------
        feature_names : array-like of str of shape (n_features,), default=None
            Names of the input features.  In a :class:`~sklearn.pipeline.Pipeline`
            the estimator only sees matrices: pass the names of the steps
            before it, ``pipe[:-1].get_feature_names_out()`` (for instance those
            of a :class:`~sklearn_struct.preprocessing.SequenceDictVectorizer`),
            or use :func:`sklearn_struct.inspection.explain_weights` on the
            pipeline.  ``None`` uses ``feature_names_in_`` when the estimator
            has it, else scikit-learn's names for unnamed columns,
            ``"x0"``, ``"x1"``, ...

        Returns
        -------
        named : dict of str to dict
            The structure's named views
            (:meth:`~sklearn_struct.structures.OutputSpace.named_weights`):
            for chains ``"state_features_"``, ``{(feature_name, label):
            weight}`` over the non-zero input weights, and
            ``"transition_features_"``, ``{(label_from, label_to): weight}``;
            multiclass models have ``"state_features_"`` only.
        """
        check_is_fitted(self)
        if feature_names is None:
            feature_names = self.__dict__.get("feature_names_in_")
        if feature_names is None:
            feature_names = [f"x{j}" for j in range(self.n_features_in_)]
        feature_names = np.asarray(feature_names, dtype=object)
        if feature_names.shape != (self.n_features_in_,):
            raise ValueError(
                f"{type(self).__name__}: feature_names holds {feature_names.size} names but the "
                f"model has {self.n_features_in_} input features.")
        return self.structure_.output_space().named_weights(self._weight_attributes(),
                                                            feature_names, self.classes_)

    def _named_view(self, key):
        named = self.named_weights()
        if key not in named:
            raise AttributeError(f"{type(self).__name__} over {type(self.structure_).__name__} "
                                 f"has no {key}.")
        return named[key]

    @property
    def state_features_(self):
        """``{(feature_name, label): weight}`` of the non-zero input weights.

        Feature names as in :meth:`named_weights` (``feature_names_in_`` or
        ``"x0"``, ...; in a pipeline use ``named_weights(names)``).
        """
        return self._named_view("state_features_")

    @property
    def transition_features_(self):
        """``{(label_from, label_to): weight}`` of a chain (and tree) model."""
        return self._named_view("transition_features_")

    # ------------------------------------------------------------- prediction
    def _validate_predict_data(self, X):
        """Batch of ``X`` for the fitted model, in the input form and width of ``fit``."""
        check_is_fitted(self)
        name = type(self).__name__
        _check_data_set(X, name)
        _reject_token_dicts(X, name)
        table = _input_form(X) == "table"
        if table != self._table_input:
            raise ValueError(
                f"{name} was fitted on {_FORMS['table' if self._table_input else 'examples']}; "
                f"got {type(X).__name__}."
            )
        if table:
            _check_finite_rows(X, name)
            X = validate_data(self, X, reset=False, accept_sparse="csr", dtype=np.float64)
        batch = self.structure_.make_batch(X, n_states=self._codec.n_states)
        self._check_input_shape(batch, name)
        return batch

    def _check_input_shape(self, batch, name):
        """Refuse a batch whose input width or layout is not that of the fitted model."""
        space = self.structure_.output_space()
        n_features = int(space.n_features_in(batch))
        if n_features != self.n_features_in_:
            raise ValueError(
                f"X has {n_features} features, but {name} is expecting {self.n_features_in_} "
                f"features as input (it was fitted with {self.n_features_in_})."
            )
        layout = space.input_layout(batch)
        if layout != self._input_layout:
            raise ValueError(f"X has {layout}, but {name} was fitted on {self._input_layout}.")

    def _part_scores(self, batch):
        return self.structure_.part_scores(batch, self.weights_)

    def _predict_encoded(self, batch):
        return predict_outputs(self.structure_, batch, self.weights_, self.n_jobs)

    def _encode_scored(self, batch, y):
        """Encoded true outputs for ``score``: labels unseen in training become -1 (wrong)."""
        codec = self._codec
        if codec.n_states is None:  # binary outputs: every value must be valid
            return codec.encode(batch, y)
        flat = self.structure_.output_space().flat
        try:
            groups = [y] if flat else list(y)
        except TypeError:
            return codec.encode(batch, y)  # the codec explains what y should be
        known = set(codec.classes_.tolist())
        fixed, unseen = [], []
        for labels in groups:
            array = np.asarray(labels)
            if array.ndim != 1:
                return codec.encode(batch, y)
            try:
                mask = np.fromiter((v not in known for v in array.tolist()), bool, len(array))
            except TypeError:  # unhashable labels
                return codec.encode(batch, y)
            if mask.any():  # stand-ins that the codec accepts, marked -1 afterwards
                labels = np.empty(len(array), dtype=object)
                labels[:] = array.tolist()
                labels[mask] = codec.classes_[0]
                array = labels
            fixed.append(array)
            unseen.append(mask)
        if not any(mask.any() for mask in unseen):
            return codec.encode(batch, y)
        Y = codec.encode(batch, fixed[0] if flat else fixed).copy()
        Y[np.concatenate(unseen)] = -1
        return Y

    def predict(self, X):
        """Predict the best output of every example.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features), or list
            Inputs in the form used for ``fit``: one 2-D matrix (flat samples),
            a list of ``(T_i, n_features)`` arrays or sparse matrices
            (sequences) or a list of graph tuples (matching, min-cut).

        Returns
        -------
        y : ndarray of shape (n_samples,), or list of ndarray of shape (n_units_i,)
            Predicted labels (elements of ``classes_``): one per sample, or one
            array per sequence (a label per token) or per graph (0/1 per
            candidate edge or per node).
        """
        batch = self._validate_predict_data(X)
        return self._codec.decode(batch, self._predict_encoded(batch))

    def score(self, X, y, sample_weight=None):
        """Score of the predictions: the structure's ``score_outputs``.

        Accuracy over samples, tokens or nodes; the F1 score of the predicted
        edges for matchings.  Labels never seen in training count as wrong.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features), or list
            Test inputs, in the form accepted by :meth:`predict`.
        y : array-like of shape (n_samples,), or list of array-like of shape (n_units_i,)
            True labels, in the form given to ``fit``: one label per sample, or
            one label sequence per input sequence, or one 0/1 vector per graph.
        sample_weight : array-like of shape (n_samples,), default=None
            Per-example weights (a sequence's or graph's weight counts for each
            of its tokens, nodes or edges).

        Returns
        -------
        score : float
            For the built-in structures, the weighted fraction of correctly
            predicted labels in ``[0, 1]``, or for matchings the F1 score of the
            predicted edges pooled over all graphs.
        """
        batch = self._validate_predict_data(X)
        if self._table_input:  # as in fit: a column vector of labels is accepted
            y = column_or_1d(y, warn=True)
        Y_true = self._encode_scored(batch, y)
        sample_weight = self._check_sample_weight(sample_weight, batch.n_samples)
        Y_pred = self._predict_encoded(batch)
        return float(self.structure_.output_space().score(batch, Y_pred, Y_true, sample_weight))

    def decision_function(self, X):
        """Part scores ``w . phi(x, r)`` of every output unit.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features), or list
            Inputs in the form used for ``fit``.

        Returns
        -------
        scores : ndarray or list of ndarray
            The structure's per-unit view of the part scores
            (:meth:`~sklearn_struct.structures.OutputSpace.unit_values`):
            for flat samples an ``(n_samples, n_classes)`` array, or of shape
            ``(n_samples,)`` with the score of ``classes_[1]`` minus that of
            ``classes_[0]`` for two classes (scikit-learn's binary
            convention); for sequences one ``(T_i, n_classes)`` array of label
            scores per sequence (the transition scores add up along a path);
            for graphs one array of part scores per graph.
        """
        batch = self._validate_predict_data(X)
        space = self.structure_.output_space()
        values = space.unit_values(batch, self._part_scores(batch))
        if space.flat and len(self.classes_) == 2:
            values = np.asarray(values)
            return values[:, 1] - values[:, 0]
        return values

    # -------------------------------------------------- probabilistic outputs
    def _current_structure(self):
        """The fitted structure, or the one the parameter stands for (None if invalid)."""
        fitted = self.__dict__.get("structure_")
        return fitted if fitted is not None else _declared_structure(self.structure)

    def _marginals_available(self):
        structure = self._current_structure()
        return (self._probabilistic and structure is not None
                and structure.supports("marginals"))

    def _proba_available(self):
        return self._marginals_available() and self._current_structure().output_space().flat

    @available_if(_marginals_available)
    def predict_marginals(self, X):
        """Posterior marginal probabilities of every label of every output unit.

        Only for probabilistic models (CRFs) over structures with marginals.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features), or list
            Inputs in the form used for ``fit``, as for :meth:`decision_function`.

        Returns
        -------
        marginals : ndarray or list of ndarray
            The structure's per-unit view of the part marginals: an
            ``(n_samples, n_classes)`` array for flat samples, one
            ``(T_i, n_classes)`` array per sequence.
        """
        batch = self._validate_predict_data(X)
        mu = predict_marginals(self.structure_, batch, self.weights_, self.n_jobs)
        return self.structure_.output_space().unit_values(batch, mu)

    @available_if(_proba_available)
    def predict_proba(self, X):
        """Class probabilities of flat samples.

        Only for probabilistic models over flat outputs (multiclass).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Flat samples.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Probability of each class (columns ordered as ``classes_``).
        """
        return np.asarray(self.predict_marginals(X))

    @available_if(_proba_available)
    def predict_log_proba(self, X):
        """Log class probabilities of flat samples.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Flat samples, as for :meth:`predict_proba`.

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
            Natural logarithm of :meth:`predict_proba`.
        """
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    # ------------------------------------------------ k-best outputs, samples
    def _check_dp_operation(self, operation, method):
        """Fitted, and the fitted structure performs ``operation``; before any work."""
        check_is_fitted(self)
        self.structure_.check_supports(operation, needed_by=f"{type(self).__name__}.{method}")

    def _decode_rows(self, batch, Y, present):
        """Per example, the decoded outputs of the rows of ``Y`` where ``present[:, i]``.

        A flat structure's outputs come as an ``(n_samples, n_rows)`` label
        array (every sample has as many outputs); otherwise as one list of
        outputs (each as :meth:`predict` gives it) per example.
        """
        offsets = batch.unit_offsets
        Y = Y.copy()
        for j in range(1, Y.shape[0]):  # missing outputs: stand-ins, dropped after decoding
            for i in np.flatnonzero(~present[j]):
                Y[j, offsets[i]:offsets[i + 1]] = Y[0, offsets[i]:offsets[i + 1]]
        rows = [self._codec.decode(batch, Y[j]) for j in range(Y.shape[0])]
        if self.structure_.output_space().flat:
            n_kept = int(present.sum(axis=0).min()) if present.size else 0
            return np.stack([np.asarray(row) for row in rows[:n_kept]], axis=1)
        return [[rows[j][i] for j in range(Y.shape[0]) if present[j, i]]
                for i in range(batch.n_samples)]

    def predict_k_best(self, X, k, return_proba=False):
        """The ``k`` highest-scoring outputs of every example, best first.

        Exact, from the structure's dynamic program (chains, with their
        allowed transitions, semi-Markov chains, label trees, projective
        dependency trees, grammars, multiclass); ties are broken in a fixed
        order and the first output is :meth:`predict`'s.  Outputs the
        structure forbids (a chain's ``allowed_transitions``) are never among
        them.  Structures without a dynamic program (matchings, min-cuts,
        non-projective trees) raise :class:`~sklearn_struct.structures.UnsupportedOperation`.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features), or list
            Inputs in the form used for ``fit``.
        k : int
            How many outputs per example, at least 1: any number.  An example
            with fewer outputs gets all of them; the time and memory grow with
            the outputs returned, not with ``k`` (the structure counts its
            outputs first).
        return_proba : bool, default=False
            Also return each output's probability ``exp(score - log Z)``
            under the model's Gibbs distribution (CRFs only, such as
            :class:`~sklearn_struct.EGCRF`).

        Returns
        -------
        y_k : ndarray of shape (n_samples, n_best), or list of list of ndarray
            For flat samples, the labels of the ``n_best = min(k, n_classes)``
            best classes of every sample; otherwise one list per example of
            up to ``k`` outputs, each in the form :meth:`predict` gives it
            (a label array for a sequence).
        scores : ndarray of shape (n_samples, n_best), or list of ndarray
            The outputs' scores ``w . Phi(x, y)``, in the same layout.
        proba : ndarray of shape (n_samples, n_best), or list of ndarray
            Only with ``return_proba=True``: the outputs' probabilities
            ``p(y | x)``, in the same layout; they sum to at most 1 per example.

        Raises
        ------
        ValueError
            If ``k`` is not a positive integer, or ``return_proba`` is asked
            of a model that is not probabilistic.
        UnsupportedOperation
            If the structure has no dynamic program.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_struct import EGCRF
        >>> X = [np.array([[1.0], [0.0]]), np.array([[0.0], [1.0], [1.0]])]
        >>> y = [np.array(["a", "b"]), np.array(["b", "a", "a"])]
        >>> crf = EGCRF(C=10.0).fit(X, y)
        >>> y_k, scores, proba = crf.predict_k_best(X, 3, return_proba=True)
        >>> [labels.tolist() for labels in y_k[0]][0] == crf.predict(X)[0].tolist()
        True
        >>> bool(proba[0].sum() <= 1.0 and np.all(np.diff(scores[0]) <= 0))
        True
        """
        name = type(self).__name__
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
            raise TypeError(f"{name}.predict_k_best: k must be an integer, got {k!r}.")
        if k < 1:
            raise ValueError(f"{name}.predict_k_best: k must be at least 1, got {k}.")
        if return_proba and not self._probabilistic:
            raise ValueError(
                f"{name}.predict_k_best: return_proba=True needs a probabilistic model (a CRF "
                f"such as EGCRF); {name} scores outputs but gives them no probability.")
        self._check_dp_operation("k_best", "predict_k_best")
        if return_proba:
            self._check_dp_operation("marginals", "predict_k_best(return_proba=True)")
        batch = self._validate_predict_data(X)
        part_scores = self._part_scores(batch)
        Y, best = self.structure_.k_best(batch, part_scores, int(k))
        present = np.isfinite(best).T  # (k, n_samples)
        y_k = self._decode_rows(batch, Y, present)
        proba = None
        if return_proba:
            log_z = self.structure_.log_partition(batch, part_scores)
            with np.errstate(invalid="ignore"):
                proba = np.exp(best - log_z[:, None])
            proba[~present.T] = 0.0
        if self.structure_.output_space().flat:
            n_kept = y_k.shape[1]
            scores = best[:, :n_kept]
            proba = None if proba is None else proba[:, :n_kept]
        else:
            scores = [best[i][present[:, i]] for i in range(batch.n_samples)]
            if proba is not None:
                proba = [proba[i][present[:, i]] for i in range(batch.n_samples)]
        return (y_k, scores, proba) if return_proba else (y_k, scores)

    @available_if(lambda self: self._probabilistic)
    def sample_y(self, X, n_samples=1, random_state=None):
        """Exact samples of the outputs of every example from the model's distribution.

        Draws from the Gibbs distribution ``p(y | x) ~ exp(w . Phi(x, y))`` of
        a CRF by the structure's dynamic program (forward in the log
        semiring, then top-down sampling), as scikit-learn's
        ``GaussianProcessRegressor.sample_y`` draws targets at ``X``.  Outputs
        the structure forbids are never drawn.  Structures without a dynamic
        program raise :class:`~sklearn_struct.structures.UnsupportedOperation`.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples_X, n_features), or list
            Inputs in the form used for ``fit``.
        n_samples : int, default=1
            Draws per example, at least 1.
        random_state : int, RandomState instance or None, default=None
            Seeds the draws: an int gives the same draws every call.

        Returns
        -------
        y_samples : ndarray of shape (n_samples_X, n_samples), or list of list of ndarray
            For flat samples, the drawn labels; otherwise one list per example
            of ``n_samples`` drawn outputs, each in the form :meth:`predict`
            gives it.

        Raises
        ------
        ValueError
            If ``n_samples`` is not a positive integer, or ``random_state``
            cannot seed a generator.
        UnsupportedOperation
            If the structure has no dynamic program to draw from.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_struct import EGCRF
        >>> X, y = [np.eye(3)], [np.array(["a", "b", "a"])]
        >>> draws = EGCRF(C=10.0).fit(X, y).sample_y(X, n_samples=4, random_state=0)
        >>> len(draws), len(draws[0]), draws[0][0].shape
        (1, 4, (3,))
        """
        name = type(self).__name__
        if isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer)):
            raise TypeError(f"{name}.sample_y: n_samples must be an integer, got {n_samples!r}.")
        if n_samples < 1:
            raise ValueError(f"{name}.sample_y: n_samples must be at least 1, got {n_samples}.")
        try:
            random_state = check_random_state(random_state)
        except ValueError as error:  # numpy's and scikit-learn's messages name no method
            raise ValueError(
                f"{name}.sample_y: random_state must be None, an int in [0, 2**32 - 1] or a "
                f"numpy RandomState, got {random_state!r} ({error})") from None
        self._check_dp_operation("sample", "sample_y")
        batch = self._validate_predict_data(X)
        Y = self.structure_.sample(batch, self._part_scores(batch), int(n_samples),
                                   random_state=random_state)
        return self._decode_rows(batch, Y, np.ones((Y.shape[0], batch.n_samples), dtype=bool))

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
