"""Model files that are safe to open: arrays in an ``.npz`` archive, the rest as JSON.

A model file is read with ``numpy.load(allow_pickle=False)`` and ``json``: no
byte of it is ever unpickled, so a file from an untrusted source cannot run
code.  The fitted objects (estimators, transformers, structures and what they
hold) are written as their state (``__getstate__``): JSON values, arrays
(stored in the archive, referred to by name), tuples, dicts whose keys are not
strings (as lists of pairs), arrays of string or number labels (as lists) and
further objects, each tagged with its class name.  Only the classes of
``ALLOWED_CLASSES`` (:mod:`._classes`) are rebuilt, and only after their state
passed the schema of :mod:`._schema`; any other name is an error, as is any
other kind of value when writing.
"""

import json
import warnings
import zipfile

import numpy as np
import scipy.sparse as sp

from .. import __version__
from ._classes import ALLOWED_CLASSES
from ._schema import MAX_DEPTH, DamagedModelFile, check_fields, check_state, header_depth

__all__ = ["MODEL_FORMAT", "READ_FORMATS", "load_model", "save_model"]

#: Version of the file layout that is written (7: DependencyPipeline's ``tag_features``;
#: 6: EGCRF's ``start``; 5: the EG estimators' ``class_weight``; 4: dicts with keys other than
#: strings, and every estimator and structure of the package; 3 was the command line's).
MODEL_FORMAT = 7
#: The layouts that are read; a file of another layout is refused.
READ_FORMATS = (3, 4, 5, 6, 7)
_EARLY_STOPPING_DEFAULTS = {"early_stopping": False, "validation_fraction": 0.1,
                            "n_iter_no_change": 5}
#: Constructor parameters added in a layout, by class, with the defaults that a fit without
#: them ran with: an older file's estimators are read with them.
_PARAMETERS_ADDED = {
    4: {name: _EARLY_STOPPING_DEFAULTS
        for name in ("EGCRF", "EGStructuredSVM", "StructuredPerceptron")},
    5: {name: {"class_weight": None} for name in ("EGCRF", "EGStructuredSVM")},
    6: {"EGCRF": {"start": "uniform"}},
    7: {"DependencyPipeline": {"tag_features": "conll"}},
}
#: Keys marking an encoded non-JSON value; a dict of the state may not use them.
_MARKERS = ("__array__", "__object__", "__tuple__", "__csr__", "__items__", "__objects__")
#: What an array of Python objects may hold (labels).
_SCALARS = (str, bool, int, float, np.str_, np.bool_, np.integer, np.floating)
#: What a warm start or ``partial_fit`` resumes from: not written (a solver's objects, as
#: large as the data; a later fit starts from the loaded weights without them).
RESUMPTION_STATE = frozenset(("_dual_state", "_solver_state", "_perceptron_state",
                              "_partial_fit_kept"))
#: Who writes model files, for the message that refuses another file.
WRITER = "sklearn_struct.persistence.dump or 'sklearn-struct learn'"


def save_model(path, settings, objects):
    """Write a model file.

    Parameters
    ----------
    path : str or path-like
        The file to write (written as named: no ``.npz`` is appended).
    settings : dict
        JSON values describing the model (task, input columns, features).
    objects : dict of str to object
        The fitted objects (instances of the classes of ``ALLOWED_CLASSES``).

    See Also
    --------
    sklearn_struct.persistence.dump : Save one estimator.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from sklearn_struct import SMLogisticRegression
    >>> from sklearn_struct.persistence import load_model, save_model
    >>> model = SMLogisticRegression().fit(np.array([[0.0], [1.0]]), ["no", "yes"])
    >>> path = os.path.join(tempfile.mkdtemp(), "model.npz")
    >>> save_model(path, {"task": "demo"}, {"classifier": model})
    >>> version, settings, objects = load_model(path)
    >>> settings, objects["classifier"].predict(np.array([[0.0]])).tolist()
    ({'task': 'demo'}, ['no'])
    """
    arrays = {}
    header = {"sklearn_struct_model": MODEL_FORMAT, "version": __version__,
              "settings": settings,
              "objects": {name: _encode(obj, arrays, name) for name, obj in objects.items()}}
    with open(path, "wb") as handle:  # a file object: numpy would append .npz to a name
        np.savez_compressed(handle, header=np.array(json.dumps(header)), **arrays)


def load_model(path, writer=WRITER):
    """Read a model file written by :func:`save_model`.

    Parameters
    ----------
    path : str or path-like
        The model file.
    writer : str, default=WRITER
        Who writes such files, named when the file is not one.

    Returns
    -------
    version : str
        The sklearn-struct version that wrote it.
    settings : dict
        Its settings.
    objects : dict of str to object
        The fitted objects, rebuilt.

    Raises
    ------
    ValueError
        If the file is not a model file (a pickle among them: refused without
        being run), or is one of another layout version.
    DamagedModelFile
        If it is one, but its header does not hold what its classes need
        (checked against :mod:`._schema` before any object is built).

    Examples
    --------
    >>> import os, pickle, tempfile
    >>> from sklearn_struct.persistence import load_model
    >>> path = os.path.join(tempfile.mkdtemp(), "model.pkl")
    >>> with open(path, "wb") as handle:
    ...     pickle.dump({"weights": [1.0]}, handle)
    >>> load_model(path)
    Traceback (most recent call last):
    ...
    ValueError: ...: not a model file written by ... (a pickle, ...)
    """
    not_a_model = f"not a model file written by {writer}"
    with open(path, "rb") as handle:
        start = handle.read(2)
    if start[:1] == b"\x80" or start[:1] == b"x":  # a pickle, or a zlib stream (joblib's)
        raise ValueError(f"{path}: {not_a_model} (a pickle, perhaps the model file of an "
                         "earlier sklearn-struct: pickles are not opened, since opening one "
                         "can run any code; fit or learn the model again)")
    try:
        with np.load(path, allow_pickle=False) as archive:  # refuses pickles, unread
            if not isinstance(archive, np.lib.npyio.NpzFile) or "header" not in archive:
                raise ValueError("no header")
            header = json.loads(str(archive["header"]))
            arrays = {name: archive[name] for name in archive.files if name != "header"}
    except RecursionError:  # json nests by recursion: a hostile header
        raise DamagedModelFile(f"{path}: a damaged model file (its header is nested deeper "
                               f"than {MAX_DEPTH} levels)") from None
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise ValueError(f"{path}: {not_a_model} (expected an .npz archive of arrays and "
                         "a JSON header)") from exc
    if not isinstance(header, dict) or "sklearn_struct_model" not in header:
        raise ValueError(f"{path}: {not_a_model} (its header has no model marker)")
    if header_depth(header) > MAX_DEPTH:
        raise DamagedModelFile(f"{path}: a damaged model file (its header is nested deeper "
                               f"than {MAX_DEPTH} levels)")
    if header["sklearn_struct_model"] not in READ_FORMATS:
        raise ValueError(f"{path}: a model file of layout {header['sklearn_struct_model']} "
                         f"(sklearn-struct {header.get('version')}); this sklearn-struct "
                         f"({__version__}) reads layouts {READ_FORMATS[0]} to "
                         f"{READ_FORMATS[-1]}: fit or learn the model again")
    missing = [key for key in ("version", "settings", "objects") if key not in header]
    if missing:
        raise DamagedModelFile(f"{path}: an incomplete model file (no {', '.join(missing)})")
    if not (isinstance(header["objects"], dict) and isinstance(header["settings"], dict)):
        raise DamagedModelFile(f"{path}: a damaged model file (its objects or settings are "
                               "not a dict)")
    if header["version"] != __version__:
        warnings.warn(f"{path}: written by sklearn-struct {header['version']}, read by "
                      f"{__version__}; the layout is the same, but predictions may differ "
                      "if the models changed: learn it again if they matter", UserWarning)
    try:
        objects = {name: _decode(value, arrays, header["sklearn_struct_model"])
                   for name, value in header["objects"].items()}
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        what = exc.args[0] if isinstance(exc, DamagedModelFile) else f"{type(exc).__name__}: {exc}"
        raise DamagedModelFile(f"{path}: a damaged model file ({what})") from exc
    return header["version"], header["settings"], objects


def _encode(value, arrays, where):
    """A JSON value for ``value``; its arrays go to ``arrays`` under new names."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (np.bool_, np.integer, np.floating)):
        return value.item()
    if isinstance(value, np.ndarray):
        if value.dtype == object:  # labels of a list or an object Series: JSON scalars only
            items = value.ravel().tolist()
            if not all(item is None or isinstance(item, _SCALARS) for item in items):
                raise TypeError(f"{where}: an array of Python objects other than strings and "
                                "numbers cannot be saved safely")
            return {"__objects__": [_encode(item, arrays, where) for item in items],
                    "shape": list(value.shape)}
        name = f"a{len(arrays)}"
        arrays[name] = value
        return {"__array__": name}
    if sp.issparse(value) and value.format == "csr":
        return {"__csr__": [_encode(part, arrays, where) for part in
                            (value.data, value.indices, value.indptr)],
                "shape": list(value.shape), "matrix": isinstance(value, sp.spmatrix)}
    if isinstance(value, dict):
        if any(key in _MARKERS for key in value):
            raise TypeError(f"{where}: a dict with the key {_MARKERS} cannot be saved")
        if not all(isinstance(key, str) for key in value):  # labels, rule tuples: pairs
            return {"__items__": [[_encode(key, arrays, f"{where} (a key)"),
                                   _encode(item, arrays, f"{where}[{key!r}]")]
                                  for key, item in value.items()]}
        return {key: _encode(item, arrays, f"{where}.{key}") for key, item in value.items()}
    if isinstance(value, list):
        return [_encode(item, arrays, f"{where}[{i}]") for i, item in enumerate(value)]
    name = type(value).__name__
    if ALLOWED_CLASSES.get(name) is type(value):
        if isinstance(value, tuple):  # a named tuple: its fields
            return {"__object__": name, "fields": _encode(list(value), arrays, where)}
        state = value.__getstate__()
        if isinstance(state, dict) and not RESUMPTION_STATE.isdisjoint(state):
            state = {key: item for key, item in state.items() if key not in RESUMPTION_STATE}
        return {"__object__": name, "state": _encode(state, arrays, f"{where}.{name}")}
    if type(value) is tuple:
        return {"__tuple__": [_encode(item, arrays, f"{where}[{i}]")
                              for i, item in enumerate(value)]}
    raise TypeError(f"{where}: a {type(value).__module__}.{name} cannot be saved in a model "
                    "file (not among the classes a model file may name)")


def _decode(value, arrays, layout=MODEL_FORMAT):
    """The value :func:`_encode` encoded, objects rebuilt from the allowed classes only."""
    if isinstance(value, list):
        return [_decode(item, arrays, layout) for item in value]
    if not isinstance(value, dict):
        return value
    if "__array__" in value:
        return arrays[value["__array__"]]
    if "__tuple__" in value:
        return tuple(_decode(item, arrays, layout) for item in value["__tuple__"])
    if "__objects__" in value:
        items = value["__objects__"]
        if not all(item is None or isinstance(item, (str, bool, int, float)) for item in items):
            raise DamagedModelFile("an array of labels holds other than strings and numbers")
        array = np.empty(len(items), dtype=object)
        array[:] = items
        return array.reshape(tuple(value["shape"]))  # (a shape that does not fit: ValueError)
    if "__items__" in value:
        items = [_decode(item, arrays, layout) for item in value["__items__"]]
        if not all(isinstance(item, list) and len(item) == 2 for item in items):
            raise DamagedModelFile("a dict's items are not pairs")
        return dict(items)  # (an unhashable key: TypeError, a damaged file)
    if "__csr__" in value:
        data, indices, indptr = (_decode(part, arrays, layout) for part in value["__csr__"])
        kind = sp.csr_matrix if value["matrix"] else sp.csr_array
        return kind((data, indices, indptr), shape=tuple(value["shape"]))
    if "__object__" in value:
        name = value["__object__"]
        if name not in ALLOWED_CLASSES:
            raise DamagedModelFile(f"it names the class {name!r}, which a model file may not "
                                   "hold")
        cls = ALLOWED_CLASSES[name]
        if "fields" in value:
            fields = _decode(value["fields"], arrays, layout)
            check_fields(cls, fields)
            return cls(*fields)
        obj = cls.__new__(cls)
        state = _decode(value["state"], arrays, layout)
        if isinstance(state, dict):  # parameters added since the file's layout: defaults
            for added in range(layout + 1, MODEL_FORMAT + 1):
                state = {**_PARAMETERS_ADDED.get(added, {}).get(name, {}), **state}
        check_state(cls, state)
        if state is None:
            return obj
        if hasattr(obj, "__setstate__"):
            obj.__setstate__(state)
        else:
            obj.__dict__.update(state)
        return obj
    return {key: _decode(item, arrays, layout) for key, item in value.items()}
