"""Comparisons of the checks: arrays within tolerance, and what a call modified."""

import dataclasses
import pickle

import numpy as np
import scipy.sparse as sp

#: Tolerances of the comparisons with enumeration (relative, absolute).
RTOL, ATOL = 1e-7, 1e-9


def _assert_close(actual, expected, what, rtol=RTOL, atol=ATOL):
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    if actual.shape != expected.shape:
        raise AssertionError(f"{what}: got shape {actual.shape}, expected {expected.shape}.")
    close = np.isclose(actual, expected, rtol=rtol, atol=atol)
    if not np.all(close):
        k = np.unravel_index(np.argmin(close), close.shape) if actual.ndim else ()
        detail = (f"; got {np.round(actual, 6).tolist()}, expected "
                  f"{np.round(expected, 6).tolist()}" if actual.size <= 30 else "")
        raise AssertionError(
            f"{what}: {float(actual[k])!r} instead of {float(expected[k])!r}"
            + (f" at index {k[0] if len(k) == 1 else k}" if actual.ndim else "")
            + f" (largest difference {np.max(np.abs(actual - expected)):.3g}){detail}.")


def _target_difference(y, decoded):
    """Where decoded targets differ from the user's targets (None when equal)."""
    if len(y) != len(decoded):
        return f"{len(decoded)} entries instead of {len(y)}"
    for i, (a, b) in enumerate(zip(y, decoded)):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or not np.all(a == b):
            return f"entry {i} is {b.tolist()}, expected {a.tolist()}"
    return None


def _map_arrays(obj, function):
    """``obj`` with every ndarray and sparse matrix replaced by ``function(x)`` (lists,
    tuples and dicts are rebuilt)."""
    if isinstance(obj, np.ndarray) or sp.issparse(obj):
        return function(obj)
    if isinstance(obj, tuple):
        return tuple(_map_arrays(item, function) for item in obj)
    if isinstance(obj, list):
        return [_map_arrays(item, function) for item in obj]
    if isinstance(obj, dict):
        return {key: _map_arrays(value, function) for key, value in obj.items()}
    return obj


def _read_only(obj):
    """A copy of ``obj`` whose arrays (and sparse matrices' arrays) are read-only."""
    def freeze(x):
        x = x.copy()
        arrays = [x] if isinstance(x, np.ndarray) else [
            getattr(x, name) for name in ("data", "indices", "indptr") if hasattr(x, name)]
        for array in arrays:
            array.setflags(write=False)
        return x

    return _map_arrays(obj, freeze)


def _sparse(obj):
    """A copy of ``obj`` with its 2-D floating-point arrays as CSR matrices; and whether any."""
    converted = []

    def convert(x):
        if isinstance(x, np.ndarray) and x.ndim == 2 and np.issubdtype(x.dtype, np.floating):
            converted.append(True)
            return sp.csr_matrix(x)
        return x

    return _map_arrays(obj, convert), bool(converted)


def _dense(obj):
    """A copy of ``obj`` with its sparse matrices as dense arrays; and whether any."""
    converted = []

    def convert(x):
        if sp.issparse(x):
            converted.append(True)
            return x.toarray()
        return x

    return _map_arrays(obj, convert), bool(converted)


def _difference(old, new, path):
    """Description of the first difference between a deep copy ``old`` and ``new``, or None."""
    if type(old) is not type(new):
        return f"{path} (type {type(old).__name__} became {type(new).__name__})"
    if isinstance(old, np.ndarray):
        if old.shape != new.shape or old.dtype != new.dtype:
            return f"{path} (shape or dtype)"
        equal_nan = old.dtype.kind in "fc"
        return None if np.array_equal(old, new, equal_nan=equal_nan) else f"{path} (values)"
    if sp.issparse(old):
        if old.shape != new.shape:
            return f"{path} (shape)"
        names = [name for name in ("data", "indices", "indptr", "row", "col")
                 if hasattr(old, name)]
        for name in names:
            difference = _difference(getattr(old, name), getattr(new, name), f"{path}.{name}")
            if difference:
                return difference
        return None
    if isinstance(old, dict):
        added = [key for key in new if key not in old]
        removed = [key for key in old if key not in new]
        if added:
            return f"{path} (added {', '.join(map(repr, added))})"
        if removed:
            return f"{path} (removed {', '.join(map(repr, removed))})"
        for key in old:
            difference = _difference(old[key], new[key], f"{path}[{key!r}]")
            if difference:
                return difference
        return None
    if isinstance(old, (list, tuple)):
        if len(old) != len(new):
            return f"{path} (length {len(old)} became {len(new)})"
        for k, (a, b) in enumerate(zip(old, new)):
            difference = _difference(a, b, f"{path}[{k}]")
            if difference:
                return difference
        return None
    if dataclasses.is_dataclass(old) and not isinstance(old, type):
        return _difference({f.name: getattr(old, f.name) for f in dataclasses.fields(old)},
                           {f.name: getattr(new, f.name) for f in dataclasses.fields(new)},
                           path)
    if isinstance(old, (str, bytes, int, float, complex, bool, type(None), np.generic)):
        same = old == new or (old != old and new != new)  # NaN equals NaN here
        return None if same else f"{path} ({old!r} became {new!r})"
    if hasattr(old, "__dict__") and not callable(old):
        return _difference(vars(old), vars(new), path)
    try:
        return None if pickle.dumps(old) == pickle.dumps(new) else f"{path} (value)"
    except Exception:
        return None
