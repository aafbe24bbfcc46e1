"""Target codecs: the user's ``y`` <-> a structure's encoded outputs.

A structure's :meth:`~sklearn_struct.structures.OutputSpace.codec`
validates the training targets and returns one of these codecs; estimators
keep it, encode every later ``y`` with it and decode predictions with it.

* :class:`FlatLabelCodec` -- one label per sample (``y`` a 1-D array), labels
  of any hashable type: multiclass classification.
* :class:`UnitLabelCodec` -- one label array per example, a label per output
  unit (a token of a sequence): chains and any structure whose units carry
  labels.  Training targets may be *partial*: an entry ``None`` (the label is
  unknown) or a ``set`` / ``frozenset`` of labels (the label is one of them);
  :meth:`UnitLabelCodec.encode_partial` turns them into a mask of allowed labels.
* :class:`BinaryUnitCodec` -- one 0/1 vector per example (an edge of a
  matching, a node of a cut): ``classes_ == [0, 1]``.

Errors name the offending example (and position) and what was expected.
"""

import numbers

import numpy as np

__all__ = ["BinaryUnitCodec", "FlatLabelCodec", "UnitLabelCodec"]


def _plain(value):
    """A numpy scalar as the Python value it holds (for readable error messages)."""
    return value.item() if isinstance(value, np.generic) else value


def label_kind(value):
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


def _kinds(labels, raw):
    """Label kinds present in one label array (``raw`` is the user's container)."""
    if labels.dtype.kind in _DTYPE_KINDS and isinstance(raw, np.ndarray):
        return {_DTYPE_KINDS[labels.dtype.kind]}
    # np.asarray silently turns ["a", 1] into strings: look at the elements themselves
    return {label_kind(v) for v in (raw.tolist() if isinstance(raw, np.ndarray) else raw)}


def _label_array(labels, where):
    """A 1-D label array (tuples stay whole labels) and the user's container."""
    raw = labels
    if isinstance(labels, (str, bytes)) or not hasattr(labels, "__len__"):
        raise TypeError(f"{where}: expected a 1-D sequence of labels, got {type(labels).__name__}.")
    if isinstance(raw, (list, tuple)) and any(isinstance(v, (list, tuple)) for v in raw):
        # a tuple is one label: numpy would make it a row, or fail on tuples of other lengths
        labels = np.empty(len(raw), dtype=object)
        for k, value in enumerate(raw):
            if isinstance(value, list):
                raise TypeError(f"{where}: label {value!r} at position {k} is a list, which "
                                "cannot be a label (unhashable); a tuple can.")
            labels[k] = value
    else:
        labels = np.asarray(labels)
    if labels.ndim != 1:
        raise ValueError(f"{where}: expected a 1-D sequence of labels, got shape {labels.shape}.")
    if labels.dtype.kind == "f" and not np.isfinite(labels).all():
        position = int(np.flatnonzero(~np.isfinite(labels))[0])
        raise ValueError(f"{where}: label at position {position} is {labels[position]}.")
    return labels, raw


_PARTIAL = (set, frozenset)


def _is_partial(value):
    """Whether a target entry is unknown (``None``) or a set of allowed labels."""
    return value is None or isinstance(value, _PARTIAL)


def _partial_positions(labels):
    """Positions of the partial entries of a label array (none unless it holds objects)."""
    if labels.dtype != object:
        return np.zeros(0, dtype=np.int64)
    return np.array([t for t, v in enumerate(labels.tolist()) if _is_partial(v)],
                    dtype=np.int64)


def _known_labels(pairs):
    """The ``(labels, raw)`` pairs with partial entries replaced by the labels they name."""
    known = []
    for labels, raw in pairs:
        if not _partial_positions(labels).size:
            known.append((labels, raw))
            continue
        values = []
        for value in labels.tolist():
            if value is None:
                continue
            if isinstance(value, _PARTIAL):
                try:
                    values.extend(sorted(value))
                except TypeError:
                    values.extend(value)
            else:
                values.append(value)
        array = np.empty(len(values), dtype=object)
        array[:] = values
        if len({label_kind(v) for v in values}) <= 1 and values:
            array = np.asarray(values) if not isinstance(values[0], tuple) else array
        known.append((array, values))
    return known


def _example_label_arrays(y, what):
    """One ``(labels, raw)`` pair per example of a list of label arrays."""
    if y is None:
        raise ValueError(f"y is required: one label array per {what}.")
    if isinstance(y, (str, bytes)) or not hasattr(y, "__len__"):
        raise TypeError(f"y must be a list with one label array per {what}, "
                        f"got {type(y).__name__}.")
    if isinstance(y, np.ndarray) and y.dtype != object and y.ndim == 1:
        raise TypeError(f"y must be a list with one label array per {what}, got a 1-D array "
                        "of labels (that is the form for flat samples).")
    return [_label_array(labels, f"y[{i}]") for i, labels in enumerate(y)]


class LabelIndex:
    """Labels of any hashable type <-> state indices ``0..n_classes-1``.

    Classes are sorted when they are mutually comparable, else kept in order of
    first appearance.  All labels must be of one kind (strings, numbers,
    booleans, or one other type); a mix raises ``TypeError`` naming the example,
    and float labels that are not whole numbers (a regression target) a ``ValueError``.
    """

    def __init__(self, pairs):
        kinds = None
        for i, (labels, raw) in enumerate(pairs):
            found = _kinds(labels, raw)
            if not found:  # an empty label array has no type (its length is checked later)
                continue
            if kinds is None:
                kinds = found
            if len(found) > 1:
                raise TypeError(
                    f"labels mix types: example {i} has labels of types "
                    f"{' and '.join(sorted(found))}; use labels of one type."
                )
            if found != kinds:
                raise TypeError(
                    f"labels mix types: example {i} has labels of type {next(iter(found))} but "
                    f"earlier labels are of type {next(iter(kinds))}; use labels of one type."
                )
            if labels.dtype.kind == "f" and (labels != np.round(labels)).any():
                position = int(np.flatnonzero(labels != np.round(labels))[0])
                raise ValueError(
                    f"y[{i}] holds continuous values (label {_plain(labels[position])!r} at "
                    f"position {position}); labels are classes (strings, integers or whole "
                    "floats), not regression targets (scikit-learn's 'continuous' target type)."
                )
        flat = np.concatenate([labels for labels, _ in pairs])
        if flat.dtype != object:
            classes = np.unique(flat)
        else:
            unique = list(dict.fromkeys(flat.tolist()))
            try:
                unique = sorted(unique)
            except TypeError:
                pass
            classes = np.empty(len(unique), dtype=object)
            classes[:] = unique
        if len(classes) < 2:
            raise ValueError(
                f"y has a single class ({_plain(classes[0])!r}); at least two are needed."
                if len(classes) else "y holds no label: every entry of every example is None "
                "(unknown); a fit needs known labels (or sets of labels) of at least two "
                "classes."
            )
        self.classes_ = classes
        self._index = {label: k for k, label in enumerate(classes.tolist())}

    def transform(self, labels, where):
        labels = np.asarray(labels)
        if labels.dtype != object and self.classes_.dtype != object:
            try:
                codes = np.searchsorted(self.classes_, labels)
            except TypeError:  # incomparable dtypes: no label can match
                codes = np.zeros(labels.shape[0], dtype=np.int64)
            codes = np.clip(codes, 0, len(self.classes_) - 1)
            bad = self.classes_[codes] != labels
        else:
            codes = np.array([self._index.get(v, -1) for v in labels.tolist()], dtype=np.int64)
            bad = codes < 0
        if np.any(bad):
            position = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"{where}: label {_plain(labels[position])!r} at position {position} was not "
                f"seen in training (classes: {self.classes_.tolist()})."
            )
        return codes.astype(np.int64)


class FlatLabelCodec:
    """One label per sample: ``y`` is a 1-D array-like of hashable labels.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Training labels of one kind (all strings, all numbers, ...), at least
        two distinct ones.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Sorted distinct labels (order of first appearance when not comparable).
    n_states : int
        ``n_classes``: the number of output states of the structure.

    See Also
    --------
    UnitLabelCodec : One label per output unit of every example.

    Examples
    --------
    >>> from sklearn_struct.structures import FlatLabelCodec, MulticlassStructure
    >>> codec = FlatLabelCodec(["b", "a", "b"])
    >>> codec.classes_, codec.n_states
    (array(['a', 'b'], dtype='<U1'), 2)
    >>> batch = MulticlassStructure().make_batch([[0.0], [1.0]], n_states=2)
    >>> codec.encode(batch, ["b", "a"])
    array([1, 0])
    """

    def __init__(self, y):
        self._labels = LabelIndex([self._check(y)])
        self.classes_ = self._labels.classes_
        self.n_states = len(self.classes_)

    @staticmethod
    def _check(y):
        if y is None:
            raise ValueError("y is required: one label per sample.")
        labels, raw = _label_array(y, "y")
        return labels, raw

    def encode(self, batch, y):
        """Encoded outputs of a batch's targets (validated against the batch).

        Parameters
        ----------
        batch : batch object
            The batch of the inputs ``y`` belongs to.
        y : array-like of shape (n_samples,)
            Labels, all seen in training.

        Returns
        -------
        Y : ndarray of int64 of shape (n_samples,)
            Encoded outputs (state indices).
        """
        labels, _ = self._check(y)
        if labels.shape[0] != batch.n_samples:
            raise ValueError(f"X has {batch.n_samples} samples but y has {labels.shape[0]} "
                             "labels.")
        return self._labels.transform(labels, "y")

    def decode(self, batch, Y):
        """Labels of encoded outputs.

        Parameters
        ----------
        batch : batch object
            The batch the outputs belong to.
        Y : ndarray of int of shape (n_samples,)
            Encoded outputs (state indices).

        Returns
        -------
        y : ndarray of shape (n_samples,)
            Elements of ``classes_``.
        """
        return self.classes_[Y]


class UnitLabelCodec:
    """One label array per example, a label per output unit (token).

    Parameters
    ----------
    y : list of array-like of shape (n_units_i,)
        Training labels of one kind, at least two distinct ones overall.
    unit : str, default="token"
        Name of an output unit, for error messages.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Distinct labels over all examples.
    n_states : int
        ``n_classes``.

    See Also
    --------
    FlatLabelCodec : One label per sample.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.structures import ChainStructure, UnitLabelCodec
    >>> codec = UnitLabelCodec([["B", "I"], ["O"]])
    >>> batch = ChainStructure().make_batch([np.ones((2, 1)), np.ones((1, 1))], n_states=3)
    >>> Y = codec.encode(batch, [["B", "I"], ["O"]])
    >>> Y
    array([0, 1, 2])
    >>> [list(labels) for labels in codec.decode(batch, Y)]
    [['B', 'I'], ['O']]
    """

    def __init__(self, y, unit="token"):
        self.unit = unit
        self._labels = LabelIndex(_known_labels(_example_label_arrays(y, "example")))
        self.classes_ = self._labels.classes_
        self.n_states = len(self.classes_)

    def encode(self, batch, y):
        """Encoded outputs, flat over the units of a batch.

        Parameters
        ----------
        batch : batch object
            Its ``unit_offsets`` fix how many labels each example needs.
        y : list of array-like of shape (n_units_i,)
            Labels of every example, all seen in training.

        Returns
        -------
        Y : ndarray of int64 of shape (n_units_total,)
            Encoded outputs, flat over the units of the batch.
        """
        pairs = _example_label_arrays(y, "example")
        check_lengths(batch, [labels for labels, _ in pairs], self.unit)
        for i, (labels, raw) in enumerate(pairs):
            partial = _partial_positions(labels)
            if partial.size:  # a set of one label is that label (the partial-labels guide)
                labels = labels.copy()
                for t in partial:
                    if labels[t] is not None and len(labels[t]) == 1:
                        labels[t] = next(iter(labels[t]))
                pairs[i] = (labels, raw)
                partial = _partial_positions(labels)
            if partial.size:
                t = int(partial[0])
                raise ValueError(
                    f"y[{i}]: {self.unit} {t} has no single label "
                    f"({_describe_partial(labels[t])}); partial labels are learnt by the fit "
                    f"of EGCRF, EGStructuredSVM and StructuredPerceptron only, everything else "
                    f"needs one label per {self.unit}.")
        return np.concatenate([self._labels.transform(labels, f"y[{i}]")
                               for i, (labels, _) in enumerate(pairs)])

    def encode_partial(self, batch, y):
        """Encoded outputs and the allowed labels of every unit, for partial targets.

        An entry of ``y[i]`` is a label, ``None`` (unknown: every label is
        allowed) or a ``set`` / ``frozenset`` of the labels allowed at that
        unit.  Fully labelled targets give the same ``Y`` as :meth:`encode`
        and no mask.

        Parameters
        ----------
        batch : batch object
            Its ``unit_offsets`` fix how many entries each example needs.
        y : list of array-like of shape (n_units_i,)
            Targets of every example, their labels all among ``classes_``.

        Returns
        -------
        Y : ndarray of int64 of shape (n_units_total,)
            The label of every known unit; for a partial one, its first
            allowed label (a stand-in).
        allowed : ndarray of bool of shape (n_units_total, n_states) or None
            ``allowed[u, k]``: whether unit ``u`` may take label ``k``; None
            when every unit has exactly one label (sets of one label
            included).

        Raises
        ------
        ValueError
            For a set of allowed labels that is empty, or a label outside
            ``classes_``, naming the example and the unit.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_struct.structures import ChainStructure, UnitLabelCodec
        >>> y = [["B", None, {"I", "O"}]]
        >>> codec = UnitLabelCodec(y)
        >>> batch = ChainStructure().make_batch([np.ones((3, 1))], n_states=3)
        >>> Y, allowed = codec.encode_partial(batch, y)
        >>> allowed
        array([[ True, False, False],
               [ True,  True,  True],
               [False,  True,  True]])
        """
        pairs = _example_label_arrays(y, "example")
        check_lengths(batch, [labels for labels, _ in pairs], self.unit)
        positions = [_partial_positions(labels) for labels, _ in pairs]
        if not any(p.size for p in positions):
            return self.encode(batch, y), None
        K = self.n_states
        codes, masks = [], []
        for i, ((labels, _), partial) in enumerate(zip(pairs, positions)):
            where = f"y[{i}]"
            if not partial.size:
                code = self._labels.transform(labels, where)
                mask = np.zeros((len(code), K), dtype=bool)
                mask[np.arange(len(code)), code] = True
                codes.append(code)
                masks.append(mask)
                continue
            values = labels.tolist()
            mask = np.zeros((len(values), K), dtype=bool)
            for t, value in enumerate(values):
                if value is None:
                    mask[t] = True
                    continue
                members = list(value) if isinstance(value, _PARTIAL) else [value]
                if not members:
                    raise ValueError(
                        f"{where}: {self.unit} {t} has an empty set of allowed labels; give "
                        f"at least one label, or None for an unknown label.")
                for member in members:
                    code = self._labels._index.get(member, -1) if _hashable(member) else -1
                    if code < 0:
                        inside = " (in its set of allowed labels)" if len(members) > 1 \
                            or isinstance(value, _PARTIAL) else ""
                        raise ValueError(
                            f"{where}: label {_plain(member)!r} at position {t}{inside} is "
                            f"not among classes_ {self.classes_.tolist()}.")
                    mask[t, code] = True
            codes.append(np.argmax(mask, axis=1).astype(np.int64))
            masks.append(mask)
        allowed = np.concatenate(masks)
        # sets of one label each: the targets are fully known after all
        return np.concatenate(codes), None if (allowed.sum(axis=1) == 1).all() else allowed

    def decode(self, batch, Y):
        """One label array per example.

        Parameters
        ----------
        batch : batch object
            The batch the outputs belong to (its ``unit_offsets`` split them).
        Y : ndarray of int of shape (n_units_total,)
            Encoded outputs, flat.

        Returns
        -------
        y : list of ndarray of shape (n_units_i,)
            One array per example.
        """
        return np.split(self.classes_[Y], batch.unit_offsets[1:-1])


def _hashable(value):
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _describe_partial(value):
    """``None`` or a set of labels, in words."""
    if value is None:
        return "unknown: None"
    if not value:
        return "an empty set of allowed labels"
    return "a set of allowed labels: {" + ", ".join(sorted(map(repr, value))) + "}"


class BinaryUnitCodec:
    """One 0/1 vector per example, over its output units (edges, nodes).

    Parameters
    ----------
    y : list of array-like of shape (n_units_i,)
        Training targets; checked against the batch by :meth:`encode`.
    unit : str, default="unit"
        Name of an output unit, for error messages (``"edge"``, ``"node"``).

    Attributes
    ----------
    classes_ : ndarray ``[0, 1]``
    n_states : None
        Binary structures need no number of states.

    See Also
    --------
    UnitLabelCodec : Labels of any type per output unit.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.structures import BinaryUnitCodec, ChainStructure
    >>> batch = ChainStructure().make_batch([np.ones((3, 1))], n_states=2)
    >>> BinaryUnitCodec([[0, 1, 1]], unit="node").encode(batch, [[0, 1, 1]])
    array([0, 1, 1])
    """

    classes_ = np.array([0, 1])
    n_states = None

    def __init__(self, y, unit="unit"):
        self.unit = unit
        _example_label_arrays(y, "graph")

    def encode(self, batch, y):
        """Flat int64 outputs, checking that every value is 0 or 1.

        Parameters
        ----------
        batch : batch object
            The batch (how many units each example has).
        y : list of array-like of shape (n_units_i,)
            0/1 targets of every example.

        Returns
        -------
        Y : ndarray of int64 of shape (n_units_total,)
            Encoded outputs, flat over the units of the batch.
        """
        labels = [labels for labels, _ in _example_label_arrays(y, "graph")]
        check_lengths(batch, labels, self.unit)
        for i, yi in enumerate(labels):
            bad = np.flatnonzero(~np.isin(yi, (0, 1)))
            if bad.size:
                raise ValueError(
                    f"y[{i}]: value {_plain(yi[bad[0]])!r} at {self.unit} {bad[0]}; labels must "
                    "be 0 or 1."
                )
        return np.concatenate(labels).astype(np.int64)

    decode = UnitLabelCodec.decode  # classes_ maps 0 and 1 to themselves


def check_lengths(batch, labels, unit, examples="examples", values="labels"):
    """Refuse targets with other than one array per example and one value per unit."""
    if len(labels) != batch.n_samples:
        raise ValueError(f"X has {batch.n_samples} {examples} but y has {len(labels)}.")
    lengths = np.diff(batch.unit_offsets)
    for i, yi in enumerate(labels):
        if yi.shape[0] != lengths[i]:
            raise ValueError(f"y[{i}]: expected {lengths[i]} {values} (one per {unit}), got "
                             f"{yi.shape[0]}.")
