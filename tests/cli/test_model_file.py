"""Model files: arrays and JSON, never unpickled; a round trip predicts as before."""

import json
import os
import pickle

import numpy as np
import pytest

from sklearn_struct import EGCRF, EGStructuredSVM, StructuredPerceptron
from sklearn_struct import __version__
from sklearn_struct.cli import main
from sklearn_struct.cli._model_file import load_model, save_model
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
        f"{__version__}); this sklearn-struct ({__version__}) reads layout 2: learn the model "
        "again\n")


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
