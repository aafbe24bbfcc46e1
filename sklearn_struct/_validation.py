"""Input checking of the structured estimators: structure resolution and training data.

The functions here refuse what is no data set, or a data set of the wrong kind, before
any work, with a message that names the example (and row); :func:`resolve_structure`
turns the ``structure`` parameter into a structure object.  :class:`FitValidationMixin`
gives :class:`~sklearn_struct.base.StructuredEstimator` the validation of ``fit`` and
``partial_fit`` (structure, targets, batch, sample weights) and the data attributes it
sets.
"""

from collections.abc import Mapping

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import Hidden, StrOptions
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data

from .structures import NEEDS_ARGUMENTS, STRUCTURES, BaseStructure, MulticlassStructure
from .structures._batch import check_sample_weight
from .structures._targets import label_kind

__all__ = ["STRUCTURE_CONSTRAINT", "STRUCTURE_NAMES", "FitValidationMixin",
           "check_path_arguments", "resolve_structure"]

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
    kinds = [label_kind(value) for value in values]
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


def _first_nonfinite(X):
    """``(row, column, value)`` of the first NaN or infinity of a table (a 2-D array or a
    CSR matrix, searched in the order of its stored values), or None if it has none."""
    values = (X.data if sp.issparse(X) else X).ravel()
    bad = np.flatnonzero(~np.isfinite(values))
    if not bad.size:
        return None
    position = int(bad[0])
    if sp.issparse(X):
        row = int(np.searchsorted(X.indptr, position, side="right") - 1)
        column = int(X.indices[position])
    else:
        row, column = divmod(position, X.shape[1])
    return row, column, values[position]


def _check_finite_rows(X, owner):
    """Name the first row of a numeric table holding NaN or infinity (scikit-learn does not)."""
    if sp.issparse(X) or (isinstance(X, np.ndarray) and X.dtype.kind == "f" and X.ndim == 2):
        found = _first_nonfinite(X.tocsr() if sp.issparse(X) else X)
        if found is not None:
            raise ValueError(f"{owner}: X row {found[0]} contains NaN or infinity.")


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
    MulticlassStructure()
    >>> resolve_structure(None, [np.ones((3, 2))])
    ChainStructure()
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


def _structure_for_data(space, codec, X, y):
    """The structure kept as ``structure_``: resolved for the codec's classes
    (``for_classes``), then with the settings it fits on the training data resolved
    (``for_training_data``)."""
    structure = space.for_classes(codec.classes_, y)
    return structure.output_space().for_training_data(X, y, codec)


class FitValidationMixin:
    """Input checking of ``fit`` and ``partial_fit``, a part of ``StructuredEstimator``.

    Resolves the structure, checks and encodes the training data before any
    work, and sets the data attributes (``structure_``, ``classes_``,
    ``n_features_in_``, ``feature_names_in_``) that prediction checks its
    inputs against.
    """

    def _operations_needed(self, structure):
        """Parts operations ``fit`` needs from ``structure`` (default: the class attribute)."""
        return self._required_operations

    def _validate_fit_data(self, X, y, sample_weight=None, partial=False):
        """Resolve the structure, validate and encode the training data; set the data attributes.

        Sets ``structure_`` (the structure resolved for the classes, see
        the output space's ``for_classes``),
        ``classes_`` and ``n_features_in_`` (and ``feature_names_in_`` for a
        table with column names).  Learners run their inference on
        ``structure_.output_space().training_structure()``; predictions use ``structure_``.

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
            X, y = self._validate_table(X, y, name)
            _check_two_classes(y, name)
        else:
            self.__dict__.pop("feature_names_in_", None)
        codec = space.codec(y)
        structure = _structure_for_data(space, codec, X, y)
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
            training = space.training_structure()
            constraint_scores = space.partial_label_scores(batch, allowed, training)
            # the codec's stand-ins at the partial units need not be an output: a consistent one
            Y = training.argmax(batch, constraint_scores)
        self._check_sign_constraints(structure, batch)
        sample_weight = self._check_sample_weight(sample_weight, batch.n_samples)
        self._set_data_attributes(structure, codec, batch, table)
        if partial:
            return batch, Y, sample_weight, constraint_scores
        return batch, Y, sample_weight

    def _validate_table(self, X, y, name, reset=True):
        """A flat table ``X`` and its labels through scikit-learn's ``validate_data`` (which
        sets ``n_features_in_`` and ``feature_names_in_`` when ``reset``), after the checks
        whose messages name the label kinds and the row that is not finite."""
        _check_label_kinds(y)
        _check_finite_rows(X, name)
        X, y = validate_data(self, X, y, reset=reset, accept_sparse="csr", dtype=np.float64)
        check_classification_targets(y)
        return X, y

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
            X, y = self._validate_table(X, y, name, reset=first)
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
            structure = _structure_for_data(space, codec, X, y)
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

    def _weighted_by_class(self, batch, Y, sample_weight, balanced=True):
        """``sample_weight`` times each example's mean ``class_weight`` over its units' true
        labels (``None`` without ``class_weight``); ``balanced`` is whether the weights
        may be computed from these examples' label counts."""
        if self.class_weight is None:
            return sample_weight
        name = type(self).__name__
        if self.classes_ is None:
            raise ValueError(
                f"{name}: class_weight weighs examples by the labels of their units, and the "
                f"outputs of {type(self.structure_).__name__} are not labels; weigh examples "
                "with sample_weight instead.")
        if self.class_weight == "balanced" and not balanced:
            raise ValueError(f"{name}: class_weight='balanced' needs the label counts of the "
                             "whole training set, which partial_fit does not see; give a "
                             "dict of weights.")
        if isinstance(self.class_weight, dict):
            known = set(self.classes_.tolist())
            unknown = [label for label in self.class_weight if label not in known]
            if unknown:
                raise ValueError(f"{name}: class_weight names labels {unknown} that are not "
                                 f"among the classes {self.classes_.tolist()}.")
        per_class = compute_class_weight(self.class_weight, classes=self.classes_,
                                         y=self.classes_[Y])
        bad = np.flatnonzero(~(per_class >= 0) | ~np.isfinite(per_class))[:1]
        if bad.size:
            raise ValueError(f"{name}: class_weight must be non-negative and finite; label "
                             f"{self.classes_[bad].tolist()[0]!r} has weight {per_class[bad[0]]}.")
        sizes = np.diff(batch.unit_offsets)
        example = np.repeat(np.arange(batch.n_samples), sizes)
        weight = np.bincount(example, weights=per_class[Y], minlength=batch.n_samples)
        weight = np.divide(weight, sizes, out=np.ones(batch.n_samples), where=sizes > 0)
        if not (weight > 0).any():
            raise ValueError(f"{name}: class_weight is zero for every example; at least one "
                             "example needs a label of positive weight.")
        return weight if sample_weight is None else weight * sample_weight

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
