"""Every public class and function has a complete numpydoc docstring."""

import inspect
import types

import pytest

import sklearn_struct
from sklearn_struct import datasets, metrics, persistence, preprocessing, structures, utils

numpydoc_validate = pytest.importorskip("numpydoc.validate")
from numpydoc.docscrape import get_doc_object  # noqa: E402  (numpydoc is optional)

# Error codes checked (numpydoc's catalogue): missing docstring/summary, parameters
# documented vs signature, parameters and return values without description, missing
# sections, and sections out of order.
CHECKED = {"GL08", "SS01", "PR01", "PR02", "PR07", "RT01", "RT03", "GL06", "GL07", "SA04"}
PACKAGE = sklearn_struct.__name__


def _public_objects():
    seen = {}
    for module in (sklearn_struct, structures, utils, datasets, metrics, preprocessing,
                   persistence):
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                seen[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return sorted(seen.items())


def _methods(cls):
    """Public methods of ``cls`` defined in this package, by the class defining them.

    Methods inherited from a package base class are included, so that an estimator whose
    ``fit`` lives in a private base class is still checked (each definition once).
    """
    for owner in cls.__mro__:
        if not owner.__module__.startswith(PACKAGE):
            continue
        for name, member in vars(owner).items():
            if not name.startswith("_") and inspect.isfunction(member):
                yield f"{owner.__module__}.{owner.__qualname__}.{name}", owner, name


def _with_inherited_docstring(owner, name):
    """A copy of the method whose docstring is the one it inherits from a base class.

    An override without a docstring of its own shows the base class docstring (Sphinx
    autodoc and ``help`` use :func:`inspect.getdoc`); validating that docstring against
    the override's own signature catches an override whose parameters drifted from it.
    Returns None when nothing is inherited (the missing docstring is then an error).
    """
    function = vars(owner)[name]
    inherited = next(
        (vars(base)[name].__doc__ for base in owner.__mro__[1:]
         if name in vars(base) and getattr(vars(base)[name], "__doc__", None)),
        None,
    )
    if function.__doc__ or not inherited:
        return None
    copy = types.FunctionType(function.__code__, function.__globals__, function.__name__,
                              function.__defaults__, function.__closure__)
    copy.__kwdefaults__ = function.__kwdefaults__
    copy.__qualname__ = function.__qualname__
    copy.__module__ = function.__module__
    copy.__doc__ = inherited
    return copy


PUBLIC = _public_objects()
PUBLIC_NAMES = {name for name, _ in PUBLIC}
METHODS = {
    qualified: (owner, name)
    for _, obj in PUBLIC if inspect.isclass(obj)
    for qualified, owner, name in _methods(obj)
}
NAMES = [name for name, _ in PUBLIC] + sorted(METHODS)


def _validate(name):
    if name in METHODS:
        copy = _with_inherited_docstring(*METHODS[name])
        if copy is not None:
            return numpydoc_validate.validate(get_doc_object(copy))
    return numpydoc_validate.validate(name)


@pytest.mark.parametrize("name", NAMES)
def test_numpydoc_docstring(name):
    result = _validate(name)
    # Public classes and functions must show an example; their methods need not.
    checked = CHECKED | {"EX01"} if name in PUBLIC_NAMES else CHECKED
    errors = [f"{code}: {msg}" for code, msg in result["errors"] if code in checked]
    assert not errors, f"{name}:\n" + "\n".join(errors)


def test_the_check_can_fail():
    """An undocumented method, or an override whose signature left its base docstring."""

    class Base:
        def predict(self, X):
            """Predict.

            Parameters
            ----------
            X : array-like
                Inputs.

            Returns
            -------
            y : ndarray
                Outputs.
            """

    class Override(Base):
        def predict(self, X, extra=None):
            pass

        def undocumented(self, X):
            pass

    drifted = numpydoc_validate.validate(
        get_doc_object(_with_inherited_docstring(Override, "predict")))
    assert "PR01" in {code for code, _ in drifted["errors"]}
    assert _with_inherited_docstring(Override, "undocumented") is None
    missing = numpydoc_validate.validate(get_doc_object(Override.undocumented))
    assert "GL08" in {code for code, _ in missing["errors"]}
