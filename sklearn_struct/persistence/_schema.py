"""What each class of a model file needs in its state: checked before any object is built.

A model file may come from anywhere: its JSON header is checked against these
schemas before :mod:`._file` rebuilds an object, so that a header that
decodes but is incomplete, of the wrong kinds, or hostile in shape (nested
too deep, keys that would shadow a method) is refused as a damaged model file
rather than failing later with an ``AttributeError`` in ``predict``.

Every class names its required keys and a check of each.  Constructor
parameters are required by the class's signature and checked against the kind
of their default; other keys a fitted object keeps (histories, objectives) are
optional, may hold only JSON values and arrays, and may not have the name of
an attribute of the class.
"""

import inspect
import numbers

import numpy as np
import scipy.sparse as sp

from ._classes import ESTIMATORS, STRUCTURES

__all__ = ["FITTED", "MAX_DEPTH", "DamagedModelFile", "check_fields", "check_state",
           "header_depth", "schema"]

#: Deepest nesting of lists and dicts a header may have (a model's is below 10).
MAX_DEPTH = 32


class DamagedModelFile(ValueError):
    """A model file that decodes but does not hold what its classes need.

    Raised by :func:`~sklearn_struct.persistence.load` and
    :func:`~sklearn_struct.persistence.load_model` before any object is built from
    the file: a class outside the allow-list, a missing key, a value of the wrong kind,
    an index outside what it indexes.

    Examples
    --------
    >>> import json, os, tempfile
    >>> import numpy as np
    >>> from sklearn_struct import SMLogisticRegression
    >>> from sklearn_struct.persistence import DamagedModelFile, dump, load
    >>> path = os.path.join(tempfile.mkdtemp(), "model.npz")
    >>> dump(SMLogisticRegression().fit(np.array([[0.0], [1.0]]), [0, 1]), path)
    >>> with np.load(path) as archive:
    ...     arrays = dict(archive)
    >>> header = json.loads(str(arrays.pop("header")))
    >>> header["objects"]["estimator"]["__object__"] = "os.system"
    >>> with open(path, "wb") as handle:
    ...     np.savez(handle, header=np.array(json.dumps(header)), **arrays)
    >>> try:
    ...     load(path)
    ... except DamagedModelFile as error:
    ...     print(str(error).split(" (")[1])
    it names the class 'os.system', which a model file may not hold)
    """


def header_depth(value):
    """The nesting depth of a decoded JSON value, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        value, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > MAX_DEPTH:
            break
        if isinstance(value, dict):
            stack.extend((item, depth + 1) for item in value.values())
        elif isinstance(value, list):
            stack.extend((item, depth + 1) for item in value)
    return deepest


# ----------------------------------------------------------------- value checks
def _integer(low=0, high=None):
    def check(value):
        return (isinstance(value, numbers.Integral) and not isinstance(value, bool)
                and value >= low and (high is None or value <= high))
    check.expected = f"an integer >= {low}" + ("" if high is None else f" and <= {high}")
    return check


def _kind(*kinds, expected):
    def check(value):
        return any(kind is None and value is None or kind is not None
                   and isinstance(value, kind) and not (kind is not bool and
                                                        isinstance(value, bool))
                   for kind in kinds)
    check.expected = expected
    return check


def _array(ndim=None, kinds="biuf", allow_none=False):
    def check(value):
        if value is None:
            return allow_none
        return (isinstance(value, np.ndarray) and value.dtype.kind in kinds
                and (ndim is None or value.ndim == ndim))
    check.expected = (f"a {ndim}-D array" if ndim else "an array") + (
        " or None" if allow_none else "")
    return check


def _labels(value):  # (an object array is rebuilt with strings and numbers only)
    return isinstance(value, np.ndarray) and value.ndim == 1 and value.dtype.kind in "biufUSO"


_labels.expected = "a 1-D array of labels"


def _weights(value):
    if isinstance(value, np.ndarray):
        return value.ndim == 1 and value.dtype == np.float64 and np.isfinite(value).all()
    return (sp.issparse(value) and value.shape[0] == 1 and value.data.dtype == np.float64
            and np.isfinite(value.data).all())


_weights.expected = "a 1-D array of finite float64 weights (or a 1-row sparse one)"


def _names(value):
    return isinstance(value, tuple) and all(isinstance(name, str) for name in value)


_names.expected = "a tuple of attribute names"


def _string_ids(value):
    return isinstance(value, dict) and all(
        isinstance(k, str) and _integer()(v) for k, v in value.items())


_string_ids.expected = "a dict of str to non-negative integers"


def _word_labels(value):
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, list) and v and all(
            isinstance(label, (str, numbers.Real)) and not isinstance(label, bool)
            for label in v) for k, v in value.items())


_word_labels.expected = "a dict of str to non-empty lists of labels"


def _strings(value):
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


_strings.expected = "a list of str"


def _instance(*names):
    def check(value):
        return type(value).__name__ in names
    check.expected = "a " + " or ".join(names)
    return check


def _instances_by_name(*names):
    def check(value):
        return isinstance(value, dict) and all(
            isinstance(key, str) and type(item).__name__ in names for key, item in value.items())
    check.expected = "a dict of " + " or ".join(names)
    return check


def _plain(value):
    """JSON values and arrays only: what an optional key may hold."""
    stack = [value]
    while stack:
        value = stack.pop()
        if isinstance(value, (list, tuple)):
            stack.extend(value)
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif not (value is None or isinstance(value, (bool, numbers.Real, str, np.ndarray))
                  or sp.issparse(value)):
            return False
    return True


_plain.expected = "JSON values and arrays"

_STRUCTURES = tuple(cls.__name__ for cls in STRUCTURES)
_CODECS = ("UnitLabelCodec", "FlatLabelCodec", "BinaryUnitCodec", "HeadsCodec", "TreeCodec")
_JOBS = _kind(numbers.Integral, None, expected="an integer or None")
#: Checks of constructor parameters whose default does not say their kind.
_PARAMETERS = {"n_jobs": _JOBS, "random_state": _JOBS,
               "n_features": _kind(numbers.Integral, None, expected="an integer or None"),
               "loss_weights": _array(1, allow_none=True),
               "hash_bits": _integer(1, 30), "n_edge_types": _integer(1),
               "word_features": _array(1, "iu", allow_none=True),
               "min_count": _integer(1),
               "fallback_coverage": _kind(numbers.Real, expected="a number"),
               "weight_support": _array(1, "iu", allow_none=True),
               "allowed_labels": _array(2, "b", allow_none=True)}
for _name in ("allowed_transitions", "allowed_start", "allowed_end"):
    _PARAMETERS[_name] = lambda value: value is None or isinstance(value, str) or (
        isinstance(value, np.ndarray) and value.dtype == bool)
    _PARAMETERS[_name].expected = "None, a scheme name or a boolean array"
_PARAMETERS.update(
    grammar=_instance("Grammar"), nonterminals=_strings, terminals=_strings,
    binary_rules=_array(2, "iu"), lexical_rules=_array(2, "iu"), roots=_array(1, "iu"),
    counts=lambda value: value is None or isinstance(value, dict) and _plain(value),
    labels=lambda value: value is None or _strings(value) or _labels(value))
_PARAMETERS["class_weight"] = lambda value: value is None or value == "balanced" or (
    isinstance(value, dict) and all(isinstance(weight, numbers.Real) and not isinstance(
        weight, bool) for weight in value.values()) and _plain(value))
_PARAMETERS["class_weight"].expected = "None, 'balanced' or a dict of label weights"
_PARAMETERS["counts"].expected = "None or a dict of counts"
_PARAMETERS["labels"].expected = "None or a list of labels"
_PARAMETERS["tags"] = lambda value: isinstance(value, (tuple, list)) and _strings(list(value))
_PARAMETERS["tags"].expected = "a tuple of column names"
_MODELS = tuple(cls.__name__ for cls in ESTIMATORS if cls.__name__ != "DependencyPipeline")
for _name in ("tagger", "parser", "labeller"):
    _PARAMETERS[_name] = lambda value: value is None or type(value).__name__ in _MODELS
    _PARAMETERS[_name].expected = "None or an estimator of sklearn_struct"
_PARAMETERS["structure"] = lambda value: value is None or isinstance(value, str) or \
    type(value).__name__ in _STRUCTURES
_PARAMETERS["structure"].expected = "a structure, its name or None"

_ESTIMATOR = {"structure_": _instance(*_STRUCTURES), "classes_": _array(1, "biufUSO", True),
              "n_features_in_": _integer(), "_input_layout": _kind(str, None,
                                                                   expected="a str or None"),
              "_codec": _instance(*_CODECS),
              "_table_input": _kind(bool, expected="True or False"),
              "weights_": _weights, "_weight_attribute_names": _names, "n_iter_": _integer()}
#: Required keys of each class's state besides its constructor parameters.
_LINEAR = {"classes_": _labels, "n_features_in_": _integer(), "coef_": _array(2, "f"),
           "intercept_": _array(1, "f")}
_LABELS = {"_labels": _instance("LabelIndex"), "classes_": _labels, "n_states": _integer(2)}
FITTED = {**{cls.__name__: _ESTIMATOR for cls in ESTIMATORS},
          "SMLogisticRegression": _LINEAR, "SMAdaBoostClassifier": _LINEAR,
          # the drop-in CRF: a vectorizer and the estimator its algorithm maps to
          "CRF": {"vectorizer_": _instance("SequenceDictVectorizer"),
                  "model_": _instance(*(name for name in _MODELS if name != "CRF")),
                  "classes_": _strings},
          # the pipeline from word forms: taggers, a parser and a relation labeller
          "DependencyPipeline": {
              "taggers_": _instances_by_name(*_MODELS),
              "tag_vectorizer_": _instance("SequenceDictVectorizer"),
              "encoder_": _instance("DependencyTokenEncoder"), "parser_": _instance(*_MODELS),
              "relation_vectorizer_": _instance("SequenceDictVectorizer"),
              "labeller_": _instance(*_MODELS)},
          "SequenceDictVectorizer": {"feature_names_": _strings, "vocabulary_": _string_ids},
          "DependencyTokenEncoder": {"vocabulary_": _string_ids},
          "TagDictionary": {"labels_": _word_labels},
          "UnitLabelCodec": {"unit": _kind(str, expected="a str"), **_LABELS},
          "FlatLabelCodec": _LABELS, "BinaryUnitCodec": {"unit": _kind(str, expected="a str")},
          "TreeCodec": {"grammar": _instance("Grammar"), "_binary": _kind(dict, expected="a dict"),
                        "_lexical": _kind(dict, expected="a dict")},
          "Grammar": {"lexical_offsets": _array(1, "iu")},
          "LabelIndex": {"classes_": _labels, "_index": _kind(dict, expected="a dict")}}
#: Classes whose state has no constructor parameters (built by their ``__init__`` from data).
_NO_PARAMETERS = _CODECS + ("LabelIndex",)


def _parameter_check(default):
    if isinstance(default, bool):
        return _kind(bool, expected="True or False")
    if isinstance(default, numbers.Integral):
        return _kind(numbers.Integral, expected="an integer")
    if isinstance(default, numbers.Real):
        return _kind(numbers.Real, expected="a number")
    if isinstance(default, str):
        return _kind(str, expected="a str")
    return _kind(str, numbers.Real, None, expected="a str, a number or None")


def schema(cls):
    """``{key: check}`` of the keys a state of ``cls`` must hold."""
    required = dict(FITTED.get(cls.__name__, {}))
    if cls.__name__ not in _NO_PARAMETERS:
        for name, parameter in inspect.signature(cls.__init__).parameters.items():
            if name != "self" and parameter.kind not in (parameter.VAR_POSITIONAL,
                                                         parameter.VAR_KEYWORD):
                required[name] = _PARAMETERS.get(name, _parameter_check(parameter.default))
    return required


def check_fields(cls, fields):
    """Refuse the fields of a :class:`~sklearn_struct.base.WeightView` that are no view.

    A view of ``weights_`` is its byte offset, shape and strides; whether it
    lies inside ``weights_`` is checked with the estimator's state.
    """
    if not (isinstance(fields, list) and len(fields) == 3 and _integer()(fields[0])
            and all(isinstance(part, tuple) and len(part) <= 3
                    and all(_integer()(n) for n in part) for part in fields[1:])
            and len(fields[1]) == len(fields[2])):
        raise DamagedModelFile(f"a {cls.__name__} is not (offset, shape, strides) of "
                               "non-negative integers")


def _check_views(state):
    """Every weight attribute a view inside ``weights_`` (as ``__setstate__`` builds it)."""
    size = state["weights_"].shape[-1] * 8
    for name in state["_weight_attribute_names"]:
        view = state.get(name)
        if type(view).__name__ != "WeightView":
            raise DamagedModelFile(f"the weight attribute {name} is not a view of weights_")
        offset, shape, strides = view
        end = offset + sum((n - 1) * stride for n, stride in zip(shape, strides)) + 8
        if offset % 8 or any(stride % 8 for stride in strides) or 0 in shape or end > size:
            raise DamagedModelFile(f"the weight attribute {name} lies outside weights_")


def _check_grammar(state):
    """Rules that name symbols and tags of the grammar, sorted by tag as its parsers read
    them (an id past the end would be read out of bounds by the kernels)."""
    n_symbols, n_tags = len(state["nonterminals"]), len(state["terminals"])
    binary, lexical = state["binary_rules"], state["lexical_rules"]
    offsets = state["lexical_offsets"]
    shapes = (binary.shape[1:] == (3,) and lexical.shape[1:] == (2,)
              and offsets.shape == (n_tags + 1,))
    if not shapes or not (
            all(ids.min(initial=0) >= 0 for ids in (binary, lexical, state["roots"]))
            and (binary < n_symbols).all() and (lexical[:, 0] < n_symbols).all()
            and (lexical[:, 1] < n_tags).all() and (state["roots"] < n_symbols).all()
            and offsets[0] == 0 and offsets[-1] == len(lexical) and (np.diff(offsets) >= 0).all()
            and np.array_equal(lexical[:, 1], np.repeat(np.arange(n_tags), np.diff(offsets)))):
        raise DamagedModelFile("the rules of a Grammar do not index its symbols and tags")


def _check_indices(name, state):
    """Indices that agree with what they index: labels, codes, feature names."""
    if name == "LabelIndex" and sorted(state["_index"].values()) != list(
            range(len(state["classes_"]))):
        raise DamagedModelFile("the label index of a LabelIndex is not one code per class")
    if name in ("UnitLabelCodec", "FlatLabelCodec") and len(state["classes_"]) != state[
            "n_states"]:
        raise DamagedModelFile(f"a {name}'s n_states is not its number of classes")
    if name == "Grammar":
        _check_grammar(state)
    if name == "DependencyPipeline" and not (
            set(state["taggers_"]) == set(state["tags"])
            <= {"upos", "xpos", "feats"}):
        raise DamagedModelFile("the taggers of a DependencyPipeline are not one per column of "
                               "its tags")
    if name == "SequenceDictVectorizer" and any(
            index >= len(state["feature_names_"]) for index in state["vocabulary_"].values()):
        raise DamagedModelFile("the vocabulary_ of a SequenceDictVectorizer names features "
                               "beyond its feature_names_")


def check_state(cls, state):
    """Refuse a state that ``cls`` could not work from, naming what is wrong.

    Parameters
    ----------
    cls : type
        One of the classes a model file may name.
    state : dict
        Its decoded state (arrays and objects rebuilt).

    Raises
    ------
    DamagedModelFile
        For a missing key, a value of the wrong kind, or an extra key that is
        an attribute of the class or holds objects.
    """
    name = cls.__name__
    if state is None and not schema(cls):  # a class without state (MinCutStructure, ...)
        return
    if not isinstance(state, dict):
        raise DamagedModelFile(f"the state of a {name} is not a dict")
    required = schema(cls)
    fitted = FITTED.get(name, {})
    unfitted = cls in ESTIMATORS and fitted.keys().isdisjoint(state)
    if unfitted:  # a pipeline's estimator parameter: its parameters alone
        required = {key: check for key, check in required.items() if key not in fitted}
    missing = [key for key in required if key not in state]
    if missing:
        raise DamagedModelFile(f"the state of a {name} has no {', '.join(missing)}")
    for key, value in state.items():
        check = required.get(key)
        if check is None:
            if hasattr(cls, key) or not _plain(value):
                raise DamagedModelFile(f"the state of a {name} holds {key!r}, which is not "
                                       "state of that class")
        elif not check(value):
            raise DamagedModelFile(f"the {key} of a {name} is not {check.expected}")
    if unfitted:
        return
    if fitted is _ESTIMATOR:
        _check_views(state)
    _check_indices(name, state)
