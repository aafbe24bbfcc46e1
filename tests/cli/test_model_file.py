"""Model files: arrays and JSON, never unpickled; a round trip predicts as before."""

import json
import os
import pickle
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sklearn_struct import EGCRF, EGStructuredSVM, StructuredPerceptron
from sklearn_struct import __version__
from sklearn_struct.cli import main
from sklearn_struct.persistence import ALLOWED_CLASSES, MODEL_FORMAT, load_model, save_model
from sklearn_struct.preprocessing import DependencyTokenEncoder, SequenceDictVectorizer
from sklearn_struct.structures import DependencyTreeStructure, TreeStructure

TRAIN = "The DT B-NP\ncat NN I-NP\nsat VBD B-VP\n\nA DT B-NP\ndog NN I-NP\nran VBD B-VP\n"


class _Bomb:
    """Unpickling it would run a shell command that creates a file."""

    def __init__(self, witness):
        self.witness = witness

    def __reduce__(self):
        return os.system, (f"touch {self.witness}",)


@pytest.mark.parametrize("wrap", ["pickle", "npz"])
def test_a_pickle_bomb_is_refused_unopened(tmp_path, capsys, wrap):
    witness = tmp_path / "exploded"
    bomb = tmp_path / "model.npz"
    if wrap == "pickle":
        bomb.write_bytes(pickle.dumps(_Bomb(witness)))
    else:  # an archive whose header is a pickled object array
        with open(bomb, "wb") as handle:
            np.savez(handle, header=np.array([_Bomb(witness)], dtype=object))
    (tmp_path / "train.txt").write_text(TRAIN)
    assert main(["tag", str(bomb), str(tmp_path / "train.txt")]) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"sklearn-struct tag: error: {bomb}: not a model file written by "
                            "'sklearn-struct learn' (")
    assert error.count("\n") == 1
    assert not witness.exists()


def _rewrite(path, target, edit):
    """Copy the model file ``path`` to ``target`` with its JSON header edited."""
    with np.load(path, allow_pickle=False) as archive:
        arrays = dict(archive)
    header = json.loads(str(arrays.pop("header")))
    edit(header)
    with open(target, "wb") as handle:
        np.savez(handle, header=np.array(json.dumps(header)), **arrays)


def test_classes_versions_and_layouts(tmp_path, capsys):
    (tmp_path / "train.txt").write_text(TRAIN)
    model = tmp_path / "model.npz"
    assert main(["learn", str(tmp_path / "train.txt"), "-o", str(model), "--max-iter", "2"]) == 0
    capsys.readouterr()
    edited = tmp_path / "edited.npz"

    def foreign_class(header):
        header["objects"]["estimator"]["__object__"] = "Popen"

    _rewrite(model, edited, foreign_class)
    assert main(["dump", str(edited)]) == 2
    assert capsys.readouterr().err == (
        f"sklearn-struct dump: error: {edited}: a damaged model file (it names the class "
        "'Popen', which a model file may not hold)\n")

    def older(header):
        header["version"] = "0.0.1"

    _rewrite(model, edited, older)
    assert main(["tag", str(edited), str(tmp_path / "train.txt")]) == 0
    captured = capsys.readouterr()
    assert captured.err == (
        f"sklearn-struct: warning: {edited}: written by sklearn-struct 0.0.1, read by "
        f"{__version__}; the layout is the same, but predictions may differ if the models "
        "changed: learn it again if they matter\n")
    assert captured.out.splitlines()[0] == "The DT B-NP B-NP"

    def other_layout(header):
        header["sklearn_struct_model"] = 99

    _rewrite(model, edited, other_layout)
    assert main(["dump", str(edited)]) == 2
    assert capsys.readouterr().err == (
        f"sklearn-struct dump: error: {edited}: a model file of layout 99 (sklearn-struct "
        f"{__version__}); this sklearn-struct ({__version__}) reads layouts 3 to "
        f"{MODEL_FORMAT}: fit or learn the model again\n")


def _chain_data():
    X = [[{"w": "the"}, {"w": "cat"}], [{"w": "a"}, {"w": "dog"}, {"w": "ran"}]]
    y = [np.array(["D", "N"]), np.array(["D", "N", "V"])]
    vectorizer = SequenceDictVectorizer()
    return vectorizer, vectorizer.fit_transform(X), y


def _dependency_data():
    sentences = [{"form": ["Dogs", "bark", "."], "upos": ["NOUN", "VERB", "PUNCT"]},
                 {"form": ["The", "cat", "sat"], "upos": ["DET", "NOUN", "VERB"]}]
    encoder = DependencyTokenEncoder().fit(sentences)
    return encoder, encoder.transform(sentences), [np.array([2, 0, 2]), np.array([2, 3, 0])]


def _tree_data():
    vectorizer, X, y = _chain_data()
    return vectorizer, [(x, np.arange(len(x_y)) - 1) for x, x_y in zip(X, y)], y


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("Estimator", [EGCRF, EGStructuredSVM, StructuredPerceptron])
@pytest.mark.parametrize("data, structure", [
    (_chain_data, None), (_dependency_data, lambda: DependencyTreeStructure(hash_bits=10)),
    (_tree_data, lambda: TreeStructure(n_edge_types=1))])
def test_round_trip_predicts_identically(tmp_path, Estimator, data, structure):
    transformer, X, y = data()
    params = {} if structure is None else {"structure": structure()}
    estimator = Estimator(max_iter=3, random_state=0, **params).fit(X, y)
    save_model(tmp_path / "m.npz", {"task": "test"},
               {"transformer": transformer, "estimator": estimator})
    version, settings, objects = load_model(tmp_path / "m.npz")
    assert (version, settings) == (__version__, {"task": "test"})
    assert type(objects["transformer"]) is type(transformer)
    np.testing.assert_array_equal(objects["estimator"].weights_, estimator.weights_)
    for ours, theirs in zip(objects["estimator"].predict(X), estimator.predict(X)):
        np.testing.assert_array_equal(ours, theirs)
    assert objects["estimator"].get_params().keys() == estimator.get_params().keys()


def test_objects_outside_the_allow_list_are_not_written(tmp_path):
    with pytest.raises(TypeError, match="a builtins.set cannot be saved in a model file"):
        save_model(tmp_path / "m.npz", {}, {"estimator": {"classes": {1, 2}}})
    assert not (tmp_path / "m.npz").exists()


# ------------------------------------------------ damaged, hostile and incomplete files
@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """A tagger and a parser written by 'learn', and files to tag with them."""
    folder = tmp_path_factory.mktemp("models")
    (folder / "train.txt").write_text(TRAIN)
    (folder / "train.conllu").write_text(
        "1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\t_\n2\tcat\tcat\tNOUN\tNN\t_\t3\tnsubj\t_\t_\n"
        "3\tsat\tsit\tVERB\tVBD\t_\t0\troot\t_\t_\n\n")
    assert main(["learn", str(folder / "train.txt"), "-o", str(folder / "tagger.npz"),
                 "--max-iter", "2"]) == 0
    assert main(["learn", str(folder / "train.conllu"), "--format", "conllu", "--label",
                 "head", "--estimator", "perceptron", "--max-iter", "2", "--hash-bits", "8",
                 "-o", str(folder / "parser.npz")]) == 0
    return folder


def _header_and_arrays(path):
    with np.load(path, allow_pickle=False) as archive:
        arrays = dict(archive)
    return json.loads(str(arrays.pop("header"))), arrays


def _write(path, header_text, arrays):
    with open(path, "wb") as handle:
        np.savez(handle, header=np.array(header_text), **arrays)


def _one_line_or_success(args, capsys):
    """The command succeeds, or fails with one line on standard error (no traceback)."""
    capsys.readouterr()
    status = main(args)
    err = capsys.readouterr().err
    assert status in (0, 2)
    if status == 2:
        assert err.count("\n") == 1 and err.startswith(f"sklearn-struct {args[0]}: error: ")
    return status, err


def _no_estimator_state(header):
    header["objects"]["estimator"]["state"] = {}


def _structure_without_a_parameter(header):
    del header["objects"]["estimator"]["state"]["structure_"]["state"]["start_end"]


def _a_method_in_the_state(header):
    header["objects"]["estimator"]["state"]["predict"] = 1


def _a_view_outside_the_weights(header):
    header["objects"]["estimator"]["state"]["coef_"]["fields"][0] = 10 ** 6


def _classes_of_another_kind(header):
    header["objects"]["estimator"]["state"]["n_features_in_"] = "many"


def _a_feature_id_out_of_range(header):
    header["objects"]["vectorizer"]["state"]["vocabulary_"]["bias"] = 10 ** 6


def _truncated_labels(header):
    header["objects"]["estimator"]["state"]["_codec"]["state"]["n_states"] = 7


@pytest.mark.parametrize("edit, message", [
    (_no_estimator_state, "the state of a EGCRF has no "),
    (_structure_without_a_parameter, "the state of a ChainStructure has no start_end"),
    (_a_method_in_the_state, "the state of a EGCRF holds 'predict', which is not state"),
    (_a_view_outside_the_weights, "the weight attribute coef_ lies outside weights_"),
    (_classes_of_another_kind, "the n_features_in_ of a EGCRF is not an integer >= 0"),
    (_truncated_labels, "a UnitLabelCodec's n_states is not its number of classes"),
    (_a_feature_id_out_of_range, "the vocabulary_ of a SequenceDictVectorizer names features "
                                 "beyond its feature_names_")])
def test_incomplete_and_hostile_states_are_damaged_model_files(
        models, tmp_path, capsys, edit, message):
    header, arrays = _header_and_arrays(models / "tagger.npz")
    edit(header)
    broken = tmp_path / "broken.npz"
    _write(broken, json.dumps(header), arrays)
    for command in (["tag", str(broken), str(models / "train.txt")], ["dump", str(broken)]):
        status, err = _one_line_or_success(command, capsys)
        assert status == 2 and err.startswith(
            f"sklearn-struct {command[0]}: error: {broken}: a damaged model file ({message}")


def test_a_header_nested_100000_deep_is_a_damaged_model_file(models, tmp_path, capsys):
    broken = tmp_path / "deep.npz"
    _write(broken, '{"sklearn_struct_model": 2, "objects": ' + "[" * 100_000 + "]" * 100_000
           + "}", {})
    status, err = _one_line_or_success(["dump", str(broken)], capsys)
    assert status == 2 and err == (f"sklearn-struct dump: error: {broken}: a damaged model "
                                   "file (its header is nested deeper than 32 levels)\n")


def test_truncated_model_files_are_refused(models, tmp_path, capsys):
    data = (models / "tagger.npz").read_bytes()
    for size in (0, 10, len(data) // 2, len(data) - 1):
        (tmp_path / "cut.npz").write_bytes(data[:size])
        status, err = _one_line_or_success(["dump", str(tmp_path / "cut.npz")], capsys)
        assert status == 2 and "not a model file written by 'sklearn-struct learn'" in err


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 10 ** 6) | st.floats(allow_nan=True)
    | st.text(max_size=8) | st.sampled_from(list(ALLOWED_CLASSES) + ["__array__", "a0", "fields"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["__object__", "state", "fields", "__array__", "__tuple__", "__csr__",
                         "__items__",
                         "shape", "matrix", "task", "input", "objects", "settings", "a0"])
        | st.text(max_size=6), inner, max_size=4), max_leaves=20)
random_arrays = st.dictionaries(
    st.sampled_from([f"a{k}" for k in range(16)]),
    st.builds(lambda shape, kind, seed: np.asarray(
        np.random.RandomState(seed).randn(*shape)).astype(kind),
              st.lists(st.integers(0, 3), max_size=2).map(tuple),
              st.sampled_from(["f8", "i8", "f4", "U2", "?"]), st.integers(0, 100)), max_size=4)


@settings(derandomize=True, max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(header=json_values, arrays=random_arrays)
def test_random_headers_give_a_clean_error(models, tmp_path, capsys, header, arrays):
    """Whatever JSON and arrays a file holds: a model, or one line naming the file."""
    if isinstance(header, dict) and random.Random(str(header)).random() < 0.8:
        header = {"sklearn_struct_model": 2, "version": __version__, **header}
    path = tmp_path / "random.npz"
    _write(path, json.dumps(header), arrays)
    try:
        load_model(path)
    except ValueError as error:  # not a model file, another layout, or DamagedModelFile
        assert str(error).startswith(f"{path}: ")
    _one_line_or_success(["dump", str(path)], capsys)


def _paths(value, path=()):
    """Every place in a decoded JSON value, as a path of keys and indices."""
    yield path
    items = value.items() if isinstance(value, dict) else (
        enumerate(value) if isinstance(value, list) else ())
    for key, item in items:
        yield from _paths(item, path + (key,))


@settings(derandomize=True, max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(["tagger", "parser"]), choice=st.integers(0, 10 ** 6),
       value=json_values, delete=st.booleans(), arrays=random_arrays)
def test_edited_models_give_a_valid_model_or_a_clean_error(
        models, tmp_path, capsys, kind, choice, value, delete, arrays):
    """One place of a real model's header replaced or deleted, some arrays replaced."""
    header, original = _header_and_arrays(models / f"{kind}.npz")
    places = [p for p in _paths(header) if p]
    place = places[choice % len(places)]
    parent = header
    for key in place[:-1]:
        parent = parent[key]
    if delete and isinstance(parent, dict):
        del parent[place[-1]]
    else:
        parent[place[-1]] = value
    path = tmp_path / "edited.npz"
    _write(path, json.dumps(header), {**original, **arrays})
    target = models / ("train.txt" if kind == "tagger" else "train.conllu")
    _one_line_or_success(["tag", str(path), str(target)], capsys)
    _one_line_or_success(["dump", str(path)], capsys)


# --------------------------------------------------- files of the command line's layout 3
#: Written by 'sklearn-struct learn' at b33eb81 (layout 3, before sklearn_struct.persistence):
#:   sklearn-struct learn train.txt -o layout3_tagger.npz --max-iter 2
#:   sklearn-struct learn train.conllu --format conllu --label head --estimator perceptron \
#:       --max-iter 2 --hash-bits 8 -o layout3_parser.npz
#: on the TRAIN text above and the one-sentence CoNLL-U of the models fixture.
LAYOUT_3 = os.path.join(os.path.dirname(__file__), "data")


@pytest.mark.parametrize("kind, expected", [
    ("tagger", "The DT B-NP B-NP\ncat NN I-NP I-NP\nsat VBD B-VP B-VP\n\n"
               "A DT B-NP B-NP\ndog NN I-NP I-NP\nran VBD B-VP B-VP\n"),
    ("parser", "1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\t_\n2\tcat\tcat\tNOUN\tNN\t_\t3\tnsubj\t_\t_\n"
               "3\tsat\tsit\tVERB\tVBD\t_\t0\troot\t_\t_\n")])
def test_layout_3_files_of_the_command_line_still_tag(models, capsys, kind, expected):
    path = os.path.join(LAYOUT_3, f"layout3_{kind}.npz")
    assert _header_and_arrays(path)[0]["sklearn_struct_model"] == 3
    target = models / ("train.txt" if kind == "tagger" else "train.conllu")
    capsys.readouterr()
    assert main(["tag", path, str(target)]) == 0
    assert capsys.readouterr().out.rstrip("\n") == expected.rstrip("\n")
