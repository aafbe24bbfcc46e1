"""Issue 48: fitted estimators saved as arrays and JSON from Python, never as a pickle.

Every estimator, on every structure it takes (the catalogue of
``test_bad_input.py``, and the structures it leaves out: the pruned chain, the
semi-Markov chain, the monotone alignment), fits a tiny data set, is dumped and
loaded, and predicts exactly as before.  Pickles, joblib files, truncated and
damaged files, headers naming classes outside the package, and unfitted
estimators are refused with a ``ValueError`` or ``TypeError`` before anything
is built; a bomb that would leave a file behind when unpickled leaves none.
"""

import inspect
import json
import os
import pickle
import warnings

import joblib
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.base import BaseEstimator, clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.pipeline import make_pipeline
from test_bad_input import STRUCTURED, SUPPORTED, make_estimator, valid

import sklearn_struct
from sklearn_struct import preprocessing, structures
from sklearn_struct.persistence import (ALLOWED_CLASSES, MODEL_FORMAT, DamagedModelFile, dump,
                                        load, load_model, save_model)
from sklearn_struct.preprocessing import DependencyTokenEncoder, SequenceDictVectorizer
from sklearn_struct.structures import (MonotoneAlignmentStructure, PrunedChainStructure,
                                       SemiMarkovStructure)


def _monotone_data():
    rng = np.random.RandomState(0)
    return ([rng.randn(4, 2), rng.randn(3, 2)], [np.array([0, 0, 1, 2]), np.array([0, 1, 1])])


#: The structures the bad-input catalogue leaves out: (structure, data, estimators).
EXTRA = {
    "pruned_chain": (lambda: PrunedChainStructure(min_count=1), lambda: valid("chain"),
                     STRUCTURED),
    "semimarkov": (SemiMarkovStructure, lambda: valid("semimarkov"),
                   ("EGCRF", "EGStructuredSVM", "L1M3N", "StructuredPerceptron")),
    "monotone": (MonotoneAlignmentStructure, _monotone_data, STRUCTURED),
}
PAIRS = [(structure, name) for structure, names in SUPPORTED.items() for name in names] + [
    (structure, name) for structure, (_, _, names) in EXTRA.items() for name in names]
#: The prediction methods compared after a round trip, where the estimator has them.
METHODS = ("predict", "predict_marginals", "decision_function", "predict_proba")


def _fit(structure, name):
    if structure in EXTRA:
        make_structure, data, _ = EXTRA[structure]
        model = make_estimator(name, "chain").set_params(structure=make_structure())
        X, y = data()
    else:
        model, (X, y) = make_estimator(name, structure), valid(structure)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(X, y), X


@pytest.fixture(scope="module")
def fitted():
    """Every (structure, estimator) pair fitted once, with its training inputs."""
    return {pair: _fit(*pair) for pair in PAIRS}


def _assert_identical(ours, theirs):
    """Equal outputs, exactly: arrays, lists of arrays, sparse matrices, tuples."""
    assert type(ours) is type(theirs)
    if isinstance(theirs, (list, tuple)):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _assert_identical(a, b)
    elif sp.issparse(theirs):
        np.testing.assert_array_equal(ours.toarray(), theirs.toarray())
    else:
        np.testing.assert_array_equal(ours, theirs)
        assert getattr(ours, "dtype", None) == getattr(theirs, "dtype", None)


def _outputs(model, X):
    """What each prediction method gives, or the type of error it raises."""
    outputs = {}
    for method in METHODS:
        if hasattr(model, method):
            try:
                outputs[method] = getattr(model, method)(X)
            except (ValueError, TypeError, NotImplementedError) as error:
                outputs[method] = type(error)
    return outputs


def _state(model):
    """The estimator's attributes: each object, and a copy of each array."""
    return {key: (value, value.copy() if isinstance(value, np.ndarray) else None)
            for key, value in vars(model).items()}


@pytest.mark.parametrize("structure, name", PAIRS)
def test_every_estimator_round_trips_on_every_structure(structure, name, fitted, tmp_path):
    model, X = fitted[structure, name]
    before = _state(model)
    expected = _outputs(model, X)
    dump(model, tmp_path / "model.npz")
    loaded = load(tmp_path / "model.npz")
    assert type(loaded) is type(model) and loaded is not model
    assert expected["predict"] is not ValueError  # something was predicted
    got = _outputs(loaded, X)
    assert got.keys() == expected.keys()
    for method, value in expected.items():
        if isinstance(value, type):
            assert got[method] is value, method
        else:
            _assert_identical(got[method], value)
    # the same parameters (structures compared by their own parameters)
    params, loaded_params = model.get_params(deep=False), loaded.get_params(deep=False)
    assert params.keys() == loaded_params.keys()
    for key, value in params.items():
        if isinstance(value, structures.BaseStructure):
            assert type(loaded_params[key]) is type(value)
            assert repr(vars(loaded_params[key])) == repr(vars(value))
        else:
            assert repr(loaded_params[key]) == repr(value), key
    # dump left the estimator as it was: the same attributes, the same arrays
    after = _state(model)
    assert after.keys() == before.keys()
    for key, (value, copy) in before.items():
        assert after[key][0] is value, key
        if copy is not None:
            np.testing.assert_array_equal(value, copy)
    # weight attributes are views of weights_ again, not copies
    if hasattr(loaded, "_weight_attribute_names"):
        for attribute in loaded._weight_attribute_names:
            assert np.shares_memory(getattr(loaded, attribute), loaded.weights_)


def test_a_loaded_estimator_refits_and_clones(fitted, tmp_path):
    model, X = fitted["chain", "EGCRF"]
    _, y = valid("chain")
    dump(model, tmp_path / "m.npz")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        refit = clone(load(tmp_path / "m.npz")).set_params(random_state=0).fit(X, y)
        again = clone(model).set_params(random_state=0).fit(X, y)
    np.testing.assert_array_equal(refit.weights_, again.weights_)


@pytest.mark.parametrize("name", ["EGCRF", "StructuredPerceptron", "DualExtragradientMatcher"])
def test_resumption_state_is_left_out_and_a_loaded_model_fits_on(name, tmp_path):
    """A warm-started or partially fitted model: saved without the solver's state."""
    model = make_estimator(name, "chain").set_params(warm_start=True)
    X, y = valid("chain")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, y)
        if hasattr(model, "partial_fit"):
            model.partial_fit(X, y)
        dump(model, tmp_path / "m.npz")
        loaded = load(tmp_path / "m.npz")
        _assert_identical(loaded.predict(X), model.predict(X))
        loaded.fit(X, y)  # starts afresh, without the solver's state
        if hasattr(loaded, "partial_fit"):
            loaded.partial_fit(X, y)
    with np.load(tmp_path / "m.npz") as archive:
        header = json.loads(str(archive["header"]))
    state = header["objects"]["estimator"]["state"]
    assert not {"_dual_state", "_solver_state", "_perceptron_state",
                "_partial_fit_kept"} & set(state)


@pytest.mark.parametrize("transformer, data", [
    (SequenceDictVectorizer(), [[{"w": "the", "n": 1.5}, {"w": "cat"}], [{"w": "a"}]]),
    (DependencyTokenEncoder(), [{"form": ["Dogs", "bark"], "upos": ["NOUN", "VERB"]}]),
])
def test_transformers_round_trip(transformer, data, tmp_path):
    transformer = clone(transformer).fit(data)
    dump(transformer, tmp_path / "t.npz")
    loaded = load(tmp_path / "t.npz")
    _assert_identical(loaded.transform(data), transformer.transform(data))
    assert loaded.get_params() == transformer.get_params()


@pytest.mark.parametrize("algorithm", ["lbfgs", "l2sgd", "ap", "pa"])
def test_the_drop_in_crf_round_trips(algorithm, tmp_path):
    """sklearn-crfsuite's drop-in, with its vectorizer and the estimator of each algorithm."""
    X = [[{"w": "a", "x": 1.0}, {"w": "b"}], [{"w": "b"}, {"w": "a", "l": ["p", "q"]}]] * 4
    y = [["A", "B"], ["B", "A"]] * 4
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        crf = sklearn_struct.CRF(algorithm, max_iterations=10).fit(X, y)
    dump(crf, tmp_path / "crf.npz")
    loaded = load(tmp_path / "crf.npz")
    assert type(loaded.model_) is type(crf.model_)
    assert [list(labels) for labels in loaded.predict(X)] == [list(labels) for labels
                                                              in crf.predict(X)]
    assert loaded.state_features_ == crf.state_features_
    assert loaded.transition_features_ == crf.transition_features_
    assert loaded.training_log_ == crf.training_log_
    if algorithm in ("lbfgs", "l2sgd"):  # the probabilistic ones
        assert [list(tokens) for tokens in loaded.predict_marginals(X)] == [
            list(tokens) for tokens in crf.predict_marginals(X)]


def test_a_structure_round_trips_with_its_fitted_dictionary(fitted, tmp_path):
    structure = fitted["pruned_chain", "EGCRF"][0].structure_
    dump(structure, tmp_path / "s.npz")
    loaded = load(tmp_path / "s.npz")
    np.testing.assert_array_equal(loaded.allowed_labels, structure.allowed_labels)
    np.testing.assert_array_equal(loaded.weight_support, structure.weight_support)


# ------------------------------------------------------------------ the allow-list
def _public_classes(module, base):
    return {cls for cls in (getattr(module, name) for name in module.__all__)
            if inspect.isclass(cls) and issubclass(cls, base) and not inspect.isabstract(cls)
            and cls is not base}


def test_every_public_estimator_transformer_and_structure_may_be_saved():
    """Fails when a new public class of the package is not in the allow-list."""
    public = (_public_classes(sklearn_struct, BaseEstimator)
              | _public_classes(preprocessing, BaseEstimator)
              | _public_classes(structures, structures.BaseStructure))
    assert public, "nothing enumerated"
    missing = {cls.__name__ for cls in public} - set(ALLOWED_CLASSES)
    assert not missing
    for cls in public:
        assert ALLOWED_CLASSES[cls.__name__] is cls


def test_allowed_classes_are_the_packages_and_act_on_nothing_when_built():
    for name, cls in ALLOWED_CLASSES.items():
        assert cls.__module__.startswith("sklearn_struct."), name
        assert name == cls.__name__
        # rebuilt without __init__: nothing may run when one is dropped or rebuilt
        assert "__del__" not in dir(cls) and "__reduce__" not in vars(cls), name


# ------------------------------------------------------------------ refused files
class _Bomb:
    """Unpickling it would run a shell command that creates a file."""

    def __init__(self, witness):
        self.witness = witness

    def __reduce__(self):
        return os.system, (f"touch {self.witness}",)


@pytest.mark.parametrize("kind", ["pickle", "joblib", "joblib-compressed", "npz-object-array"])
def test_pickles_and_joblib_files_are_refused_unopened(kind, tmp_path):
    witness, path = tmp_path / "exploded", tmp_path / "model.npz"
    if kind == "pickle":
        path.write_bytes(pickle.dumps(_Bomb(witness)))
    elif kind.startswith("joblib"):
        joblib.dump(_Bomb(witness), path, compress=3 if kind.endswith("compressed") else 0)
    else:  # an archive whose header is a pickled object array
        with open(path, "wb") as handle:
            np.savez(handle, header=np.array([_Bomb(witness)], dtype=object))
    with pytest.raises(ValueError, match=f"^{path}: not a model file written by "
                                         "sklearn_struct.persistence.dump"):
        load(path)
    assert not witness.exists()


def test_a_joblib_file_of_a_real_model_is_refused(fitted, tmp_path):
    joblib.dump(fitted["chain", "EGCRF"][0], tmp_path / "m.joblib")
    with pytest.raises(ValueError, match="a pickle"):
        load(tmp_path / "m.joblib")


@pytest.fixture
def saved(fitted, tmp_path):
    """A dumped chain CRF: its path, header and arrays."""
    path = tmp_path / "model.npz"
    dump(fitted["chain", "EGCRF"][0], path)
    with np.load(path, allow_pickle=False) as archive:
        arrays = dict(archive)
    return path, json.loads(str(arrays.pop("header"))), arrays


def _rewrite(path, header, arrays):
    with open(path, "wb") as handle:
        np.savez(handle, header=np.array(json.dumps(header)), **arrays)
    return path


def test_a_truncated_or_garbled_file_is_refused(saved, tmp_path):
    path, _, _ = saved
    data = path.read_bytes()
    for size in (0, 1, 10, len(data) // 2, len(data) - 1):
        (tmp_path / "cut.npz").write_bytes(data[:size])
        with pytest.raises(ValueError, match="not a model file written by"):
            load(tmp_path / "cut.npz")
    (tmp_path / "text.npz").write_text("just some text\n")
    with pytest.raises(ValueError, match="expected an .npz archive"):
        load(tmp_path / "text.npz")


@pytest.mark.parametrize("foreign", ["os.system", "builtins.eval", "numpy.ndarray", "Popen",
                                     "sklearn_struct.eg.EGCRF", "Pipeline", "_Bomb",
                                     "KernelShards"])
def test_a_header_naming_a_class_outside_the_package_is_refused(saved, foreign, tmp_path,
                                                                monkeypatch):
    path, header, arrays = saved
    built = []
    monkeypatch.setattr(ALLOWED_CLASSES["EGCRF"], "__setstate__",
                        lambda self, state: built.append(self), raising=False)
    for place in (header["objects"]["estimator"],  # the estimator, or an object it holds
                  header["objects"]["estimator"]["state"]["structure_"]):
        original = place["__object__"]
        place["__object__"] = foreign
        with pytest.raises(DamagedModelFile, match=f"names the class '{foreign}', which a "
                                                   "model file may not hold"):
            load(_rewrite(tmp_path / "foreign.npz", header, arrays))
        place["__object__"] = original
    assert not built


@pytest.mark.parametrize("key", ["weights_", "structure_", "_codec", "C", "classes_"])
def test_a_header_with_a_missing_key_is_refused(saved, key, tmp_path):
    path, header, arrays = saved
    del header["objects"]["estimator"]["state"][key]
    with pytest.raises(DamagedModelFile, match=f"the state of a EGCRF has no {key}"):
        load(_rewrite(tmp_path / "missing.npz", header, arrays))


@pytest.mark.parametrize("key", ["version", "settings", "objects"])
def test_a_header_without_its_parts_is_refused(saved, key, tmp_path):
    path, header, arrays = saved
    del header[key]
    with pytest.raises(DamagedModelFile, match=f"an incomplete model file \\(no {key}\\)"):
        load(_rewrite(tmp_path / "incomplete.npz", header, arrays))


def test_layouts(saved, tmp_path):
    path, header, arrays = saved
    assert header["sklearn_struct_model"] == MODEL_FORMAT
    header["sklearn_struct_model"] = 99
    with pytest.raises(ValueError, match="a model file of layout 99 .* reads layouts 3 to "
                                         f"{MODEL_FORMAT}: fit or learn the model again"):
        load(_rewrite(tmp_path / "other.npz", header, arrays))


def test_a_grammar_whose_rules_name_missing_symbols_is_refused(fitted, tmp_path):
    dump(fitted["cfg", "EGCRF"][0], tmp_path / "cfg.npz")
    with np.load(tmp_path / "cfg.npz", allow_pickle=False) as archive:
        arrays = dict(archive)
    header = json.loads(str(arrays.pop("header")))
    grammar = header["objects"]["estimator"]["state"]["structure_"]["state"]["grammar"]
    rules = grammar["state"]["binary_rules"]["__array__"]
    arrays[rules] = arrays[rules] + 100
    with pytest.raises(DamagedModelFile, match="the rules of a Grammar do not index"):
        load(_rewrite(tmp_path / "bad.npz", header, arrays))


def test_a_command_line_model_file_is_named_as_one(fitted, tmp_path):
    model = fitted["chain", "EGCRF"][0]
    vectorizer = SequenceDictVectorizer().fit([[{"w": "a"}]])
    save_model(tmp_path / "cli.npz", {"task": "tag"},
               {"vectorizer": vectorizer, "estimator": model})
    with pytest.raises(ValueError, match="a model file of 'sklearn-struct learn' .* load_model"):
        load(tmp_path / "cli.npz")
    version, settings, objects = load_model(tmp_path / "cli.npz")
    assert settings == {"task": "tag"} and set(objects) == {"vectorizer", "estimator"}


# ------------------------------------------------------------------ refused objects
@pytest.mark.parametrize("name", ["EGCRF", "L1M3N", "SMLogisticRegression"])
def test_an_unfitted_estimator_is_refused(name, tmp_path):
    with pytest.raises(NotFittedError, match=f"dump: this {name} is not fitted yet"):
        dump(getattr(sklearn_struct, name)(), tmp_path / "m.npz")
    assert not (tmp_path / "m.npz").exists()


@pytest.mark.parametrize("obj, match", [
    (make_pipeline(SequenceDictVectorizer()), "Pipeline.*dump its steps one to a file"),
    ({"weights": np.zeros(3)}, "got a builtins.dict"),
    (np.zeros(3), "got a numpy.ndarray"),
])
def test_other_objects_are_refused(obj, match, tmp_path):
    with pytest.raises(TypeError, match=f"dump: saves an estimator.*{match}"):
        dump(obj, tmp_path / "m.npz")
    assert not (tmp_path / "m.npz").exists()


def test_a_value_that_cannot_be_saved_safely_is_refused(fitted, tmp_path):
    fitted_model = fitted["multiclass", "EGCRF"][0]
    fitted_model.history_["callback"] = print  # a user's object in the state
    try:
        with pytest.raises(TypeError, match="a builtins.builtin_function_or_method cannot be "
                                            "saved in a model file"):
            dump(fitted_model, tmp_path / "m.npz")
    finally:
        del fitted_model.history_["callback"]


@pytest.mark.parametrize("name", ["EGCRF", "SMLogisticRegression", "StructuredPerceptron"])
def test_labels_in_object_arrays_round_trip(name, tmp_path):
    """Labels of an object array (a pandas Series of str, a list of mixed-length strings)."""
    X, y = valid("multiclass")
    y = np.array(["no", "yes", "maybe"], dtype=object)[y]
    model = make_estimator(name, "multiclass")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, y)
    assert model.classes_.dtype == object
    dump(model, tmp_path / "m.npz")
    loaded = load(tmp_path / "m.npz")
    _assert_identical(loaded.classes_, model.classes_)
    _assert_identical(loaded.predict(X), model.predict(X))


def test_arrays_of_other_objects_are_refused(fitted, tmp_path):
    model = fitted["multiclass", "SMLogisticRegression"][0]
    model.extra_ = np.array([{"a": 1}], dtype=object)
    try:
        with pytest.raises(TypeError, match="extra_: an array of Python objects other than "
                                            "strings and numbers cannot be saved safely"):
            dump(model, tmp_path / "m.npz")
    finally:
        del model.extra_


# ------------------------------------------------------------------ random damage
_HOSTILE = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 10 ** 6) | st.floats(allow_nan=True)
    | st.text(max_size=6) | st.sampled_from(list(ALLOWED_CLASSES) + ["a0", "a1", "os.system"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["__object__", "state", "fields", "__array__", "__tuple__", "__csr__",
                         "__items__", "__objects__", "shape", "matrix"]) | st.text(max_size=4),
        inner, max_size=3), max_leaves=12)


def _places(value, path=()):
    yield path
    items = value.items() if isinstance(value, dict) else (
        enumerate(value) if isinstance(value, list) else ())
    for key, item in items:
        yield from _places(item, path + (key,))


@settings(derandomize=True, max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pair=st.sampled_from([("cfg", "EGCRF"), ("matching", "L1M3N"), ("pruned_chain", "EGCRF"),
                             ("semimarkov", "StructuredPerceptron"),
                             ("multiclass", "SMLogisticRegression"), ("mincut", "L1M3N")]),
       choice=st.integers(0, 10 ** 6), value=_HOSTILE, delete=st.booleans())
def test_edited_files_load_or_are_refused_cleanly(fitted, tmp_path, pair, choice, value, delete):
    """One place of a real file's header replaced or deleted: a ValueError naming the file
    (DamagedModelFile among them), or an object of the allowed classes -- nothing else."""
    path = tmp_path / "model.npz"
    dump(fitted[pair][0], path)
    with np.load(path, allow_pickle=False) as archive:
        arrays = dict(archive)
    header = json.loads(str(arrays.pop("header")))
    places = [place for place in _places(header) if place]
    place = places[choice % len(places)]
    parent = header
    for key in place[:-1]:
        parent = parent[key]
    if delete and isinstance(parent, dict):
        del parent[place[-1]]
    else:
        parent[place[-1]] = value
    _rewrite(path, header, arrays)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # an edited version
            loaded = load(path)
    except ValueError as error:
        assert str(error).startswith(f"{path}: ")
    else:
        assert type(loaded).__name__ in ALLOWED_CLASSES
