"""Save and load fitted models as arrays and JSON, never as a pickle.

:func:`dump` writes a fitted estimator (or transformer, or structure) of the
package to one file: its arrays in an ``.npz`` archive, everything else in a
JSON header; :func:`load` reads it back with ``numpy.load(allow_pickle=False)``
and ``json``, so that opening a file from anywhere runs no code of the file.
Only the classes of ``ALLOWED_CLASSES`` are rebuilt, each after its state
passed a schema of what the class needs (version, layout, the kind of every
value, indices that stay inside what they index); anything else is refused
before any object is built.  The command line's model files (``sklearn-struct
learn``) are the same format, read by the same code (:func:`load_model`).
``MODEL_FORMAT`` is the layout written, ``READ_FORMATS`` the layouts read.

Why not skops: ``skops.io`` is the scikit-learn community's safe format, and
works much the same way (a zip of ``.npy`` arrays and a JSON schema, objects
rebuilt from their ``__getstate__``), but it trusts by type: every class of
this package is an untrusted type there, so the user would have to pass the
list of type names found in the file to ``load(trusted=...)``, and a trusted
type's state is then restored without any check of its content (a weight view
pointing outside the weights, a grammar rule naming a symbol that does not
exist: read out of bounds by the numba kernels).  It also cannot write the
grammar structures' codecs (dicts keyed by tuples) and would add a dependency
(skops 0.16 with ``prettytable``) for what is about 200 lines here.  The
compiled kernels are not state: a structure's numba operations are class
attributes, found again by the class's name, so neither format stores them.
"""

from sklearn.utils.validation import check_is_fitted

from ._classes import ALLOWED_CLASSES, ESTIMATORS, STRUCTURES, TRANSFORMERS
from ._file import MODEL_FORMAT, READ_FORMATS, load_model, save_model  # noqa: F401 (layouts)
from ._schema import DamagedModelFile

__all__ = ["DamagedModelFile", "dump", "load", "load_model", "save_model"]

#: The one object a file written by :func:`dump` holds.
_OBJECT = "estimator"


def dump(estimator, file):
    """Save a fitted estimator to a file of arrays and JSON.

    Parameters
    ----------
    estimator : object
        A fitted estimator of the package (:class:`~sklearn_struct.EGCRF`,
        :class:`~sklearn_struct.L1M3N`, ...), a fitted transformer of
        :mod:`sklearn_struct.preprocessing`, or a structure.  It is not
        modified.  A :class:`~sklearn.pipeline.Pipeline` is not saved whole:
        dump its steps one to a file.
    file : str or path-like
        The file to write, as named (no ``.npz`` is appended).

    Raises
    ------
    TypeError
        If ``estimator`` is not an estimator, transformer or structure of the
        package, or holds a value that cannot be written safely.
    sklearn.exceptions.NotFittedError
        If it is an estimator or transformer that is not fitted (a ``ValueError``).

    See Also
    --------
    load : Read it back.

    Notes
    -----
    What a later warm-started ``fit`` or a ``partial_fit`` would resume from
    (a solver's dual variables, the examples ``partial_fit`` keeps) is not
    written: the loaded estimator predicts as the saved one, and a further fit
    starts from its weights.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from sklearn_struct import EGCRF
    >>> from sklearn_struct.persistence import dump, load
    >>> X = [np.eye(3)[[0, 1, 1]], np.eye(3)[[2, 0]]]
    >>> y = [["a", "b", "b"], ["c", "a"]]
    >>> crf = EGCRF(C=10.0, random_state=0).fit(X, y)
    >>> path = os.path.join(tempfile.mkdtemp(), "crf.npz")
    >>> dump(crf, path)
    >>> [labels.tolist() for labels in load(path).predict(X)]
    [['a', 'b', 'b'], ['c', 'a']]
    """
    cls = type(estimator)
    if ALLOWED_CLASSES.get(cls.__name__) is not cls or cls not in (
            ESTIMATORS + TRANSFORMERS + STRUCTURES):
        raise TypeError(f"dump: saves an estimator, transformer or structure of "
                        f"sklearn_struct; got a {cls.__module__}.{cls.__qualname__}"
                        + (" (dump its steps one to a file)" if hasattr(estimator, "steps")
                           else ""))
    if cls not in STRUCTURES:
        check_is_fitted(estimator, msg=f"dump: this {cls.__name__} is not fitted yet; fit it "
                                       "before saving it.")
    save_model(file, {"dump": cls.__name__}, {_OBJECT: estimator})


def load(file):
    """Load an estimator saved by :func:`dump`, running no code of the file.

    Parameters
    ----------
    file : str or path-like
        A file written by :func:`dump`.

    Returns
    -------
    estimator : object
        The estimator (transformer, structure) as it was saved: the same
        parameters, fitted attributes and predictions.

    Raises
    ------
    ValueError
        If the file is not one written by :func:`dump` (a pickle or a joblib
        file among them, refused unopened; a damaged or truncated file; one of
        another layout; one of the command line, which holds several objects:
        read it with :func:`load_model`).
    DamagedModelFile
        A ``ValueError``: the file decodes, but its header names a class
        outside ``ALLOWED_CLASSES``, or a state that its class could not
        work from (a missing key, a value of the wrong kind).  Nothing is
        built from it.

    Warns
    -----
    UserWarning
        If the file was written by another version of sklearn-struct (of the
        same layout).

    See Also
    --------
    dump : Write the file.
    load_model : Read a model file of the command line (settings and objects).

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from sklearn_struct import SMLogisticRegression
    >>> from sklearn_struct.persistence import dump, load
    >>> X, y = np.array([[0.0, 1.0], [1.0, 0.0], [0.9, 0.2]]), np.array([0, 1, 1])
    >>> model = SMLogisticRegression().fit(X, y)
    >>> path = os.path.join(tempfile.mkdtemp(), "model.npz")
    >>> dump(model, path)
    >>> np.array_equal(load(path).predict_proba(X), model.predict_proba(X))
    True
    """
    _, settings, objects = load_model(file, writer="sklearn_struct.persistence.dump")
    if set(objects) != {_OBJECT}:
        raise ValueError(f"{file}: a model file of 'sklearn-struct learn' (it holds "
                         f"{', '.join(sorted(objects))}); read it with load_model, which "
                         "returns its settings and objects")
    estimator = objects[_OBJECT]
    if type(estimator) not in ESTIMATORS + TRANSFORMERS + STRUCTURES:
        raise DamagedModelFile(f"{file}: a damaged model file (it holds a "
                               f"{type(estimator).__name__} where dump writes an estimator, "
                               "transformer or structure)")
    return estimator
