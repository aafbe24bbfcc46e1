"""Estimator plumbing shared by the structured learners of the package.

Every estimator of ``sklearn_struct`` accepts two input forms:

* *flat*: ``X`` a 2-D array or sparse matrix ``(n_samples, n_features)`` with
  ``y`` a 1-D array of labels -- a multiclass problem
  (:class:`~sklearn_struct.structures.MulticlassStructure`);
* *chains*: ``X`` a list of 2-D arrays or sparse matrices ``(T_i, n_features)``
  (one row per token) with ``y`` a list of 1-D label arrays ``(T_i,)``
  (:class:`~sklearn_struct.structures.ChainStructure`).

Estimators that support them also take *graphs*, named by their structure
(never inferred from ``X``): ``X`` a list of per-graph tuples in the form the
structure reads and ``y`` a list of 0/1 vectors, over the candidate edges
(:class:`~sklearn_struct.structures.MatchingStructure`) or the nodes
(:class:`~sklearn_struct.structures.MinCutStructure`).

:class:`StructuredEstimatorMixin` turns these into a structure's batch and
encoded outputs (``fit``), and encoded predictions back into labels
(``predict``); :func:`resolve_structure` maps the ``structure`` parameter
(``None``, a name or a structure object) to an object;
:class:`LabelEncoding` handles labels of any hashable type.  The graph helpers
(:func:`encode_binary_outputs`, :func:`split_units`, :func:`output_score`) are
shared by every estimator that learns matchings or min-cuts.
"""

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.utils import ClassifierTags
from sklearn.utils.validation import check_is_fitted

from .structures import BaseStructure, MatchingStructure, MinCutStructure, MulticlassStructure
from .structures._batch import check_sample_weight

__all__ = [
    "LabelEncoding",
    "StructuredEstimatorMixin",
    "encode_binary_outputs",
    "is_flat_input",
    "is_graph_structure",
    "output_score",
    "resolve_structure",
    "split_units",
    "unit_label_arrays",
]

STRUCTURE_NAMES = ("multiclass", "chain", "matching", "mincut")


def is_flat_input(X):
    """Whether ``X`` is one 2-D matrix (flat samples) rather than a list of sequences.

    A sparse matrix, a non-object array, a DataFrame or a list of 1-D rows is
    flat; a list whose first element is a 2-D array or sparse matrix holds sequences.
    """
    if sp.issparse(X) or hasattr(X, "shape") and hasattr(X, "__array__"):
        return not (isinstance(X, np.ndarray) and X.dtype == object)
    if isinstance(X, (list, tuple)) and len(X):
        first = X[0]
        if sp.issparse(first):
            return False
        try:
            return np.ndim(first) != 2
        except ValueError:  # ragged rows
            return False
    return False


def resolve_structure(structure, X):
    """Structure object for the ``structure`` parameter and the input form of ``X``.

    ``None`` picks multiclass for a flat ``X`` and a chain for a list of
    sequences; ``"multiclass"``, ``"chain"``, ``"matching"`` and ``"mincut"``
    name the default structures; a
    :class:`~sklearn_struct.structures.BaseStructure` instance is used as given.
    """
    if isinstance(structure, BaseStructure):
        return structure
    if structure is None:
        structure = "multiclass" if is_flat_input(X) else "chain"
    if structure == "multiclass":
        return MulticlassStructure()
    if structure == "chain":
        from .structures.chain import ChainStructure

        return ChainStructure()
    if structure == "matching":
        return MatchingStructure()
    if structure == "mincut":
        return MinCutStructure()
    raise ValueError(
        f"structure must be None, one of {STRUCTURE_NAMES} or a BaseStructure instance, "
        f"got {structure!r}."
    )


def _holds_graphs(X):
    """Whether ``X`` is a list of tuples holding matrices (graph examples, not sequences)."""
    if not isinstance(X, (list, tuple)) or not X or not isinstance(X[0], tuple):
        return False
    return any(sp.issparse(item) or isinstance(item, np.ndarray) and item.ndim == 2
               for item in X[0])


def is_graph_structure(structure):
    """Whether ``structure`` labels the units of graphs 0/1 (matching, min-cut)."""
    return isinstance(structure, (MatchingStructure, MinCutStructure))


def unit_label_arrays(batch, y, unit="unit"):
    """One 1-D label array per example of ``batch``, of its number of output units.

    ``unit`` names an output unit in the error messages (token, edge, node).
    """
    if y is None or isinstance(y, (str, bytes)) or not hasattr(y, "__len__"):
        raise TypeError("y must be a list with one label vector per example.")
    if len(y) != batch.n_samples:
        raise ValueError(f"X has {batch.n_samples} examples but y has {len(y)}.")
    lengths = np.diff(batch.unit_offsets)
    labels = [np.asarray(yi) for yi in y]
    for i, yi in enumerate(labels):
        if yi.ndim != 1 or yi.shape[0] != lengths[i]:
            raise ValueError(
                f"example {i}: expected {lengths[i]} labels (one per {unit}), "
                f"got shape {yi.shape}."
            )
    return labels


def encode_binary_outputs(structure, batch, y):
    """Flat int64 outputs from a list of 0/1 vectors, one per graph of ``batch``.

    Parameters
    ----------
    structure : MatchingStructure or MinCutStructure
        Names the output units in error messages (edges or nodes).
    batch : batch of ``structure``
    y : list of array-like of shape (n_units_i,)
        0/1 per candidate edge (matching) or per node (min-cut).

    Returns
    -------
    Y : ndarray of int64 of shape (n_units_total,)
    """
    unit = "edge" if isinstance(structure, MatchingStructure) else "node"
    flat = np.concatenate(unit_label_arrays(batch, y, unit))
    binary = np.isin(flat, (0, 1))
    if not binary.all():
        i = int(np.searchsorted(batch.unit_offsets, np.flatnonzero(~binary)[0], side="right") - 1)
        raise ValueError(f"example {i}: labels must be 0 or 1.")
    return flat.astype(np.int64, copy=False)


def split_units(batch, values):
    """Flat per-unit values -> list of one array per example of ``batch``."""
    return np.split(values, batch.unit_offsets[1:-1])


def output_score(structure, batch, predicted, truth, sample_weight=None):
    """F1 of the predicted edges (matching), else the accuracy over output units.

    Parameters
    ----------
    structure : BaseStructure
    batch : batch of ``structure``
    predicted, truth : ndarray of shape (n_units_total,)
        Predicted and true outputs, flat (0/1 for matchings).
    sample_weight : ndarray of shape (n_samples,), optional
        Per-example weights, counted for each of the example's units.

    Returns
    -------
    score : float
        For matchings, ``2 TP / (n_predicted + n_true)`` pooled over all graphs
        (1.0 when neither has an edge); otherwise the fraction of correct units.
    """
    weights = (None if sample_weight is None
               else np.repeat(sample_weight, np.diff(batch.unit_offsets)))
    if isinstance(structure, MatchingStructure):
        weights = np.ones(predicted.shape[0]) if weights is None else weights
        true_positives = float(weights @ (predicted & truth))
        denominator = float(weights @ (predicted + truth))
        return 2.0 * true_positives / denominator if denominator else 1.0
    return float(np.average(predicted == truth, weights=weights))


def _label_kind(value):
    """Coarse type of a label, for refusing mixes such as strings with integers."""
    if isinstance(value, (str, np.str_)):
        return "str"
    if isinstance(value, (bytes, np.bytes_)):
        return "bytes"
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, numbers.Number):
        return "number"
    return type(value).__name__


_DTYPE_KINDS = {"U": "str", "S": "bytes", "b": "bool", "i": "number", "u": "number", "f": "number"}


def _sequence_kinds(labels, raw):
    """Label kinds present in one label array (``raw`` is the user's container)."""
    if labels.dtype.kind in _DTYPE_KINDS and isinstance(raw, np.ndarray):
        return {_DTYPE_KINDS[labels.dtype.kind]}
    # np.asarray silently turns ["a", 1] into strings: look at the elements themselves
    return {_label_kind(v) for v in (raw.tolist() if isinstance(raw, np.ndarray) else raw)}


class LabelEncoding:
    """Labels of any hashable type <-> state indices ``0..n_classes-1``.

    Classes are sorted when they are mutually comparable, else kept in order of
    first appearance.  All labels must be of one kind (strings, numbers,
    booleans, or one other type); a mix raises ``TypeError`` naming the example.
    """

    def __init__(self, classes):
        self.classes_ = classes
        self._index = {label: k for k, label in enumerate(classes.tolist())}

    @classmethod
    def fit(cls, sequences):
        """Encoding of the labels of ``sequences`` (a list of 1-D label arrays)."""
        kinds = None
        for i, (labels, raw) in enumerate(sequences):
            found = _sequence_kinds(labels, raw)
            if kinds is None:
                kinds = found
            if len(found) > 1 or found != kinds:
                raise TypeError(
                    f"labels mix types: example {i} has labels of type "
                    f"{' and '.join(sorted(found))} but earlier labels are "
                    f"{' and '.join(sorted(kinds))}; use labels of one type."
                )
        flat = np.concatenate([labels for labels, _ in sequences])
        if flat.dtype != object:
            return cls(np.unique(flat))
        unique = list(dict.fromkeys(flat.tolist()))
        try:
            unique = sorted(unique)
        except TypeError:
            pass
        classes = np.empty(len(unique), dtype=object)
        classes[:] = unique
        return cls(classes)

    def transform(self, labels, where="y"):
        """Encoded states of a 1-D label array; unknown labels raise ``ValueError``."""
        labels = np.asarray(labels)
        if labels.dtype != object and self.classes_.dtype != object:
            codes = np.searchsorted(self.classes_, labels)
            codes = np.clip(codes, 0, len(self.classes_) - 1)
            bad = self.classes_[codes] != labels
        else:
            codes = np.array([self._index.get(v, -1) for v in labels.tolist()], dtype=np.int64)
            bad = codes < 0
        if np.any(bad):
            raise ValueError(
                f"{where}: label {labels[np.flatnonzero(bad)[0]]!r} was not seen in training "
                f"(classes: {self.classes_.tolist()})."
            )
        return codes.astype(np.int64)

    def inverse_transform(self, codes):
        return self.classes_[codes]


def _as_label_array(labels, where):
    raw = labels
    labels = np.asarray(labels)
    if labels.ndim == 2 and isinstance(raw, (list, tuple)):  # tuples as labels
        labels = np.empty(len(raw), dtype=object)
        for k, value in enumerate(raw):
            labels[k] = value
    if labels.ndim != 1:
        raise ValueError(f"{where}: expected a 1-D sequence of labels, got shape {labels.shape}.")
    return labels, raw


class StructuredEstimatorMixin:
    """Validation, label encoding, prediction and scoring for structured estimators.

    An estimator whose ``structure`` is multiclass is a scikit-learn classifier
    (stratified cross-validation and the classifier tools apply); with chains
    ``y`` is a list of label sequences, which scikit-learn's classifier
    machinery does not understand, so the estimator is then a plain estimator
    (``cv=k`` means ``KFold``) scored by token accuracy.  Graph structures
    (matching, min-cut) take a list of graphs and a list of 0/1 vectors;
    ``classes_`` is ``[0, 1]`` and matchings are scored by edge F1.

    A subclass sets ``self.structure`` (parameter) and implements
    ``_predict_encoded(batch)`` (flat encoded outputs of a batch); ``fit``
    calls :meth:`_validate_fit_data` and :meth:`_set_output_attributes`.
    Class attribute ``_required_operations`` lists the structure operations the
    learner needs; they are checked before any work.
    """

    _required_operations = ("part_scores", "expected_features", "encode", "argmax")

    # ---------------------------------------------------------------- fitting
    def _validate_fit_data(self, X, y, sample_weight=None):
        """Check ``X``, ``y`` and ``sample_weight``; set ``structure_``, ``classes_``.

        Returns
        -------
        batch : the structure's batch of ``X``
        Y : ndarray of int64, encoded outputs flat over output units
        sample_weight : ndarray of float64 of shape (n_samples,) or None
        """
        structure = resolve_structure(self.structure, X)
        structure.check_supports(*self._required_operations, needed_by=type(self).__name__)
        flat = isinstance(structure, MulticlassStructure)
        if is_graph_structure(structure):
            batch = structure.make_batch(X)
            Y = encode_binary_outputs(structure, batch, y)
            encoding = LabelEncoding(np.array([0, 1]))
        else:
            batch, Y, encoding = self._encode_labels(structure, X, y, flat)
        sample_weight = self._check_sample_weight(sample_weight, batch.n_samples)
        self.structure_ = structure
        self.classes_ = encoding.classes_
        self._label_encoding = encoding
        self._flat_input = flat
        self.n_features_in_ = batch.n_features
        return batch, Y, sample_weight

    def _encode_labels(self, structure, X, y, flat):
        """Batch, encoded outputs and label encoding of flat or sequence data."""
        if _holds_graphs(X):
            raise ValueError(
                f"{type(self).__name__}: X holds tuples of arrays (graphs) but the structure is "
                f"{type(structure).__name__}; pass structure='matching' or 'mincut' (or a "
                "structure object) for graphs."
            )
        if flat != is_flat_input(X):
            form = ("a 2-D array or sparse matrix" if flat
                    else "a list of 2-D arrays (one per sequence)")
            raise ValueError(
                f"{type(self).__name__}: structure {type(structure).__name__} expects X as "
                f"{form}, got {type(X).__name__}."
            )
        sequences = self._label_sequences(X, y, flat)
        encoding = LabelEncoding.fit(sequences)
        n_classes = len(encoding.classes_)
        if n_classes < 2:
            raise ValueError(
                f"{type(self).__name__}: y has a single class ({encoding.classes_[0]!r}); "
                "at least two are needed."
            )
        batch = structure.make_batch(X, n_states=n_classes)
        self._check_lengths(batch, sequences, flat)
        Y = np.concatenate([encoding.transform(labels) for labels, _ in sequences])
        return batch, Y, encoding

    @staticmethod
    def _label_sequences(X, y, flat):
        if y is None:
            raise ValueError("y is required: labels of every sample (or of every token).")
        if flat:
            labels, raw = _as_label_array(y, "y")
            n_samples = X.shape[0] if hasattr(X, "shape") else len(X)
            if labels.shape[0] != n_samples:
                raise ValueError(
                    f"X has {n_samples} samples but y has {labels.shape[0]} labels."
                )
            return [(labels, raw)]
        if isinstance(y, (str, bytes)) or not hasattr(y, "__len__"):
            raise TypeError(f"y must be a list of label sequences, got {type(y).__name__}.")
        if len(y) != len(X):
            raise ValueError(f"X has {len(X)} sequences but y has {len(y)} label sequences.")
        return [_as_label_array(labels, f"y[{i}]") for i, labels in enumerate(y)]

    @staticmethod
    def _check_lengths(batch, sequences, flat):
        if flat:
            return
        lengths = np.diff(batch.unit_offsets)
        for i, (labels, _) in enumerate(sequences):
            if labels.shape[0] != lengths[i]:
                raise ValueError(
                    f"sequence {i} has {lengths[i]} tokens in X but {labels.shape[0]} labels in y."
                )

    def _check_sample_weight(self, sample_weight, n_samples):
        sample_weight = check_sample_weight(sample_weight, n_samples, type(self).__name__)
        if sample_weight is None:
            return None
        if (sample_weight < 0).any():
            raise ValueError(f"{type(self).__name__}: sample_weight must be non-negative.")
        if not (sample_weight > 0).any():
            raise ValueError("sample_weight must have at least one positive weight.")
        return sample_weight

    # ------------------------------------------------------------- prediction
    def _validate_predict_data(self, X):
        """Batch of ``X`` for a fitted estimator, checking the input form and width."""
        check_is_fitted(self)
        if not is_graph_structure(self.structure_) and is_flat_input(X) != self._flat_input:
            form = "a 2-D array or sparse matrix" if self._flat_input else "a list of 2-D arrays"
            raise ValueError(
                f"{type(self).__name__} was fitted on {form}; got {type(X).__name__}."
            )
        batch = self.structure_.make_batch(X, n_states=len(self.classes_))
        if batch.n_features != self.n_features_in_:
            raise ValueError(
                f"X has {batch.n_features} features, but {type(self).__name__} was fitted "
                f"with {self.n_features_in_} features."
            )
        return batch

    def _split_units(self, batch, values):
        """Per-unit values -> 1-D array (flat input) or list of per-example arrays."""
        if self._flat_input:
            return values
        return split_units(batch, values)

    def predict(self, X):
        """Predict labels.

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
        codes = self._predict_encoded(batch)
        return self._split_units(batch, self._label_encoding.inverse_transform(codes))

    def score(self, X, y, sample_weight=None):
        """Accuracy over labels (tokens, nodes), or edge F1 for matchings.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features), or list
            Test inputs, in the form accepted by :meth:`predict`: one 2-D matrix
            (flat samples), a list of ``(T_i, n_features)`` matrices (sequences)
            or a list of graph tuples (matching, min-cut).
        y : array-like of shape (n_samples,), or list of array-like of shape (n_units_i,)
            True labels, in the form given to ``fit``: one label per sample, or
            one label sequence per input sequence, or one 0/1 vector per graph.
        sample_weight : array-like of shape (n_samples,), default=None
            Per-example weights (a sequence's or graph's weight counts for each
            of its tokens, nodes or edges).

        Returns
        -------
        score : float
            Weighted fraction of correctly predicted labels, in ``[0, 1]``; for
            matchings the F1 score of the predicted edges pooled over all graphs
            (1.0 when neither truth nor prediction has an edge).
        """
        batch = self._validate_predict_data(X)
        codes = self._predict_encoded(batch)
        if is_graph_structure(self.structure_):
            predicted, truth = codes, encode_binary_outputs(self.structure_, batch, y)
        else:
            predicted = self._label_encoding.inverse_transform(codes)
            sequences = self._label_sequences(X, y, self._flat_input)
            self._check_lengths(batch, sequences, self._flat_input)
            truth = np.concatenate([labels for labels, _ in sequences])
        if sample_weight is not None:
            sample_weight = self._check_sample_weight(sample_weight, batch.n_samples)
        return output_score(self.structure_, batch, predicted, truth, sample_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.required = True
        if self.structure == "multiclass" or isinstance(self.structure, MulticlassStructure):
            tags.estimator_type = "classifier"
            tags.classifier_tags = ClassifierTags()
        return tags
