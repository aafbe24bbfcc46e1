"""Validation and ragged-batch helpers shared by the structures.

Structures store per-example data of different sizes (tokens of a sequence,
nodes of a graph) as one stacked array plus an ``offsets`` array: example ``i``
owns rows ``offsets[i]:offsets[i + 1]``.  The helpers here validate user inputs
with errors that name the offending example, stack them, and take sub-batches.
Nothing here knows about a particular structure.
"""

import numbers
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

__all__ = [
    "Batch",
    "check_binary_outputs",
    "check_encoded_states",
    "check_example_tuples",
    "check_feature_rows",
    "check_n_states",
    "check_part_vector",
    "check_same_width",
    "check_sample_weight",
    "check_state_weights",
    "check_take_indices",
    "example_column_norms",
    "example_of_unit",
    "offsets_from_lengths",
    "ragged_positions",
    "ragged_row_index",
    "stack_ragged_rows",
    "stack_rows",
    "take_fields",
]


@dataclass(frozen=True)
class Batch:
    """The fields every batch of token-level examples holds (see ``BaseStructure``).

    A structure's batch class derives from it and adds its own fields.  Batches
    are built by the structure's ``make_batch`` and ``take``, not by hand, and
    are immutable; their parameters are stored as attributes of the same names.
    """

    n_samples: int
    n_features: int
    unit_offsets: np.ndarray
    part_offsets: np.ndarray
    n_weights: int


def check_n_states(n_states, owner):
    """Validate the number of output states; return it as a Python int."""
    if n_states is None:
        raise ValueError(
            f"{owner}.make_batch needs n_states (the number of output states, "
            "fixed by the estimator from the training labels)."
        )
    if isinstance(n_states, (bool, np.bool_)) or not isinstance(n_states, numbers.Integral):
        raise TypeError(f"{owner}: n_states must be an integer, got {n_states!r}.")
    if n_states < 1:
        raise ValueError(f"{owner}: n_states must be >= 1, got {n_states}.")
    return int(n_states)


def check_feature_rows(X, where="X", allow_empty=False):
    """Validate one 2-D feature matrix (dense or sparse), one row per unit.

    Parameters
    ----------
    X : array-like or scipy sparse matrix/array of shape (n_rows, n_features)
    where : str
        How to name ``X`` in error messages (e.g. ``"example 3"``).
    allow_empty : bool
        Whether ``n_rows == 0`` is accepted.

    Returns
    -------
    X : ndarray of float64, C-contiguous, or scipy.sparse.csr_matrix of float64
        The input itself when it already has that form (never modified),
        otherwise a converted copy.
    """
    if sp.issparse(X):
        if X.ndim != 2:
            raise ValueError(f"{where}: expected a 2-D sparse matrix, got shape {X.shape}.")
        if not isinstance(X, sp.csr_matrix):  # (a CSR matrix is taken as it is, unmodified)
            X = sp.csr_matrix(X)
        if not (np.issubdtype(X.dtype, np.floating) or np.issubdtype(X.dtype, np.integer)
                or X.dtype == np.bool_):
            raise TypeError(f"{where}: expected real numeric features, got dtype {X.dtype}.")
        if X.dtype != np.float64:
            X = X.astype(np.float64)
        values = X.data
    else:
        try:
            X = np.asarray(X)
        except Exception as exc:  # ragged nested lists and the like
            raise TypeError(f"{where}: could not convert the features to an array ({exc}).")
        if X.dtype == object or not (
            np.issubdtype(X.dtype, np.floating) or np.issubdtype(X.dtype, np.integer)
            or X.dtype == np.bool_
        ):
            raise TypeError(f"{where}: expected real numeric features, got dtype {X.dtype}.")
        if X.ndim != 2:
            hint = (
                " (use X.reshape(-1, 1) for a single feature per row)" if X.ndim == 1 else ""
            )
            raise ValueError(
                f"{where}: expected a 2-D array with one row per unit and one column per "
                f"feature, got an array of shape {X.shape}{hint}."
            )
        X = np.ascontiguousarray(X, dtype=np.float64)
        values = X
    if X.shape[0] == 0 and not allow_empty:
        raise ValueError(f"{where}: has no rows (shape {X.shape}); at least one is required.")
    if not np.isfinite(values).all():
        raise ValueError(f"{where}: features contain NaN or infinity.")
    return X


def check_example_tuples(X, owner, forms):
    """Validate a non-empty list of per-example tuples (one per graph).

    Parameters
    ----------
    X : list of tuple
        The inputs of a data set.
    owner : str
        Name of the structure, quoted in error messages.
    forms : dict of int to str
        The accepted tuple lengths, each with its spelling in messages, e.g.
        ``{3: "(node_features, edges, edge_features)"}``; the first one is the
        basic form.  A single tuple (its second item an array) instead of a
        list is refused with a hint to wrap it in a list.
    """
    basic = next(iter(forms.values()))
    if isinstance(X, tuple) and len(X) in forms and hasattr(X[1], "shape"):
        raise TypeError(
            f"{owner}: X must be a list of {basic} tuples, one per graph; got a single "
            "tuple (wrap it in a list)."
        )
    if isinstance(X, (str, bytes)) or not hasattr(X, "__len__") or len(X) == 0:
        raise ValueError(f"{owner}: X must be a non-empty list of {basic} tuples.")
    for i, example in enumerate(X):
        if not isinstance(example, (tuple, list)) or len(example) not in forms:
            raise TypeError(
                f"{owner}: example {i}: expected a tuple {' or '.join(forms.values())}, got "
                f"{type(example).__name__}."
            )


def check_same_width(rows, first, where, what):
    """Refuse feature rows whose width differs from example 0's (``first``)."""
    if rows.shape[1] != first.shape[1]:
        raise ValueError(
            f"{where}: {rows.shape[1]} {what} but example 0 has {first.shape[1]}; every "
            "example needs the same feature width."
        )


def offsets_from_lengths(lengths):
    """``(len(lengths) + 1,)`` int64 offsets with ``offsets[0] == 0``."""
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets


def ragged_positions(offsets):
    """Owner example and position inside it of every stacked row.

    Returns
    -------
    owner : ndarray of int64, shape (offsets[-1],)
    position : ndarray of int64, shape (offsets[-1],)
    """
    lengths = np.diff(offsets)
    owner = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    position = np.arange(offsets[-1], dtype=np.int64) - offsets[owner]
    return owner, position


def stack_ragged_rows(X, what="example"):
    """Validate a sequence of 2-D feature matrices and stack their rows.

    Parameters
    ----------
    X : sequence of array-like or sparse matrices, each of shape (n_rows_i, n_features)
        All with the same number of columns and at least one row.
    what : str
        Name of one element in error messages (``"sequence"``, ``"graph"``).

    Returns
    -------
    rows : ndarray of float64 of shape (n_rows_total, n_features), C-contiguous, or
        scipy.sparse.csr_matrix of float64.  Dense when every element is dense,
        CSR as soon as one element is sparse.
    offsets : ndarray of int64 of shape (len(X) + 1,)
    """
    if sp.issparse(X) or isinstance(X, np.ndarray) and X.ndim == 2:
        raise TypeError(
            f"expected a list of 2-D arrays or sparse matrices (one per {what}, one row per "
            f"unit), got a single {type(X).__name__} of shape {X.shape}."
        )
    if isinstance(X, (str, bytes, dict)) or not hasattr(X, "__len__"):
        raise TypeError(
            f"expected a list of 2-D arrays or sparse matrices (one per {what}), "
            f"got {type(X).__name__}."
        )
    if len(X) == 0:
        raise ValueError(f"expected at least one {what}, got an empty list.")
    matrices = [check_feature_rows(x, where=f"{what} {i}") for i, x in enumerate(X)]
    n_features = matrices[0].shape[1]
    for i, x in enumerate(matrices):
        if x.shape[1] != n_features:
            raise ValueError(
                f"{what} {i} has {x.shape[1]} feature columns but {what} 0 has "
                f"{n_features}; every {what} must have the same number of columns."
            )
    return stack_rows(matrices)


def stack_rows(matrices):
    """Stack already validated 2-D feature matrices (see :func:`check_feature_rows`).

    Parameters
    ----------
    matrices : sequence of ndarray or scipy.sparse.csr_matrix, each of shape
        (n_rows_i, n_features); empty ones are allowed.

    Returns
    -------
    rows : ndarray of float64 of shape (n_rows_total, n_features) or
        scipy.sparse.csr_matrix.  Dense when every matrix is dense, CSR as
        soon as one is sparse.
    offsets : ndarray of int64 of shape (len(matrices) + 1,)
    """
    offsets = offsets_from_lengths([x.shape[0] for x in matrices])
    if any(sp.issparse(x) for x in matrices):
        rows = sp.vstack([x if isinstance(x, sp.csr_matrix) else sp.csr_matrix(x)
                          for x in matrices], format="csr")
    else:
        rows = np.concatenate(matrices, axis=0)
    return rows, offsets


def ragged_row_index(offsets, indices):
    """Index of the stacked rows of the examples ``indices`` (in that order), and their offsets."""
    starts = offsets[indices]
    lengths = offsets[indices + 1] - starts
    new_offsets = offsets_from_lengths(lengths)
    # row r of the selection is row starts[i] + (r - new_offsets[i]) of its example i
    shifts = np.repeat(starts - new_offsets[:-1], lengths)
    return shifts + np.arange(new_offsets[-1], dtype=np.int64), new_offsets


def take_fields(batch, indices):
    """The fields a batch declares (``ragged``, ``per_example``, ``shared``), for some examples.

    Parameters
    ----------
    batch : batch object
        A batch whose class declares its fields (see :class:`Batch`).
    indices : ndarray of int64
        Validated example indices (:func:`check_take_indices`), in the order wanted.

    Returns
    -------
    fields : dict
        Every declared field of the selected examples, the offsets of the ragged ones
        included, as keyword arguments of the structure's ``_batch``.

    Raises
    ------
    TypeError
        If the batch's class declares no ragged fields.
    """
    ragged = getattr(type(batch), "ragged", None)
    if ragged is None:
        raise TypeError(f"{type(batch).__name__} declares no ragged fields (the class "
                        "attribute 'ragged'), so its examples cannot be taken generically; "
                        "declare them or write the structure's own take.")
    fields = {name: getattr(batch, name) for name in getattr(type(batch), "shared", ())}
    for offsets_name in dict.fromkeys(ragged.values()):
        row_index, fields[offsets_name] = ragged_row_index(getattr(batch, offsets_name), indices)
        for name in (name for name, owner in ragged.items() if owner == offsets_name):
            fields[name] = getattr(batch, name)[row_index]
    for name in getattr(type(batch), "per_example", ()):
        value = getattr(batch, name)
        fields[name] = [value[i] for i in indices] if isinstance(value, list) else value[indices]
    return fields


def check_take_indices(indices, n_samples):
    """Validate example indices for ``take``; negative indices count from the end."""
    indices = np.asarray(indices)
    if indices.dtype == np.bool_:
        if indices.shape != (n_samples,):
            raise ValueError(
                f"boolean mask of shape {indices.shape} does not match {n_samples} examples."
            )
        return np.flatnonzero(indices).astype(np.int64)
    if indices.ndim != 1 or not (np.issubdtype(indices.dtype, np.integer) or indices.size == 0):
        raise ValueError(f"expected a 1-D array of example indices, got {indices!r}.")
    indices = indices.astype(np.int64)
    if indices.size and (indices.max() >= n_samples or indices.min() < -n_samples):
        raise ValueError(f"example index out of range for a batch of {n_samples} examples.")
    return np.where(indices < 0, indices + n_samples, indices)


def check_encoded_states(Y, offsets, n_states, owner):
    """Encoded outputs: an int64 vector of length ``offsets[-1]`` with values in ``[0, n_states)``.

    Errors name the first example holding a bad value.
    """
    Y = np.asarray(Y)
    n_units = int(offsets[-1])
    if Y.ndim != 1 or Y.shape[0] != n_units:
        raise ValueError(
            f"{owner}: expected {n_units} encoded outputs in total (one per unit of the batch), "
            f"got an array of shape {Y.shape}."
        )
    if Y.size and not np.issubdtype(Y.dtype, np.integer):
        if not (np.issubdtype(Y.dtype, np.floating) and np.all(Y == np.round(Y))):
            raise TypeError(f"{owner}: encoded outputs must be integers, got dtype {Y.dtype}.")
    Y = Y.astype(np.int64, copy=False)
    bad = np.flatnonzero((Y < 0) | (Y >= n_states))
    if bad.size:
        example = example_of_unit(offsets, bad[0])
        raise ValueError(
            f"{owner}: example {example} has encoded output {Y[bad[0]]}, expected a state "
            f"index in [0, {n_states})."
        )
    return Y


def check_binary_outputs(Y, offsets, owner, expected):
    """Return the int64 outputs ``Y`` if all are 0 or 1.

    Otherwise raise a ValueError naming the first offending example and what it
    should hold (``expected``).
    """
    bad = np.flatnonzero((Y != 0) & (Y != 1))
    if bad.size:
        raise ValueError(f"{owner}: example {example_of_unit(offsets, bad[0])}: {expected}")
    return Y


def example_of_unit(offsets, unit):
    """Index of the example owning the stacked row (output unit) ``unit``."""
    return int(np.searchsorted(offsets, unit, side="right") - 1)


def kernel_array(a, dtype=np.float64):
    """``a`` as a writable C-contiguous array of ``dtype``, copied only if it is not one
    (numba compiles every kernel again for a read-only, strided or other-typed array)."""
    return np.require(np.asarray(a, dtype=dtype), requirements=("C", "W"))


def check_part_vector(v, n_parts, owner, name="scores", forbidden=False):
    """A finite float64 vector of length ``n_parts``, writable and C-contiguous (a copy only
    when ``v`` is not such a vector: numba compiles every kernel again for a read-only or
    strided one).

    ``forbidden``: ``-inf`` is accepted too (a forbidden part, for inference that
    handles it), NaN and ``+inf`` are not.
    """
    v = kernel_array(v)
    if v.ndim != 1 or v.shape[0] != n_parts:
        raise ValueError(
            f"{owner}: expected {name} as a vector of {n_parts} part values for this batch, "
            f"got shape {v.shape}."
        )
    if not np.isfinite(v).all() and not (forbidden and not np.any(np.isnan(v) | (v == np.inf))):
        other = " other than -inf (a forbidden part)" if forbidden else ""
        raise ValueError(f"{owner}: {name} contain NaN or infinity{other}.")
    return v


def check_sample_weight(sample_weight, n_samples, owner):
    """``None`` or a finite vector of length ``n_samples`` (a scalar is broadcast), writable
    and C-contiguous as :func:`check_part_vector`'s."""
    if sample_weight is None:
        return None
    sample_weight = kernel_array(sample_weight)
    if sample_weight.ndim == 0:
        return np.full(n_samples, float(sample_weight))
    if sample_weight.shape != (n_samples,):
        raise ValueError(
            f"{owner}: sample_weight has shape {sample_weight.shape}, expected ({n_samples},)."
        )
    if not np.isfinite(sample_weight).all():
        raise ValueError(f"{owner}: sample_weight contains NaN or infinity.")
    return sample_weight


def check_state_weights(weights, n_states, owner, name="loss_weights"):
    """Per-state non-negative weights as float64 (all ones when ``weights`` is None)."""
    if weights is None:
        return np.ones(n_states)
    weights = np.asarray(weights, dtype=np.float64)
    if weights.shape != (n_states,):
        raise ValueError(
            f"{owner}: {name} has shape {weights.shape}, expected one weight per state "
            f"({n_states},)."
        )
    if not np.isfinite(weights).all() or (weights < 0).any():
        raise ValueError(f"{owner}: {name} must be finite and non-negative.")
    return weights


def example_column_norms(X, offsets, power):
    """Per example, the largest ``power``-norm of a feature column over its rows.

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix of shape (n_rows, n_features)
    offsets : ndarray of int64 of shape (n_samples + 1,)
        Example ``i`` owns rows ``offsets[i]:offsets[i + 1]``.
    power : {1, 2}

    Returns
    -------
    norms : ndarray of shape (n_samples,)
    """
    n_samples = len(offsets) - 1
    if X.shape[0] == 0:
        return np.zeros(n_samples)
    values = abs(X).power(power) if sp.issparse(X) else np.abs(X) ** power
    rows = np.repeat(np.arange(n_samples), np.diff(offsets))
    owner = sp.csr_matrix((np.ones(len(rows)), (rows, np.arange(len(rows)))),
                          shape=(n_samples, X.shape[0]))
    sums = owner @ values
    sums = sums.toarray() if sp.issparse(sums) else np.asarray(sums)
    return sums.max(axis=1, initial=0.0) ** (1.0 / power)
