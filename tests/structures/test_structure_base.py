import numpy as np
import pytest

from sklearn_struct.structures import BaseStructure, UnsupportedOperation


class _ArgmaxOnly(BaseStructure):
    def make_batch(self, X, n_states=None):
        return X

    def take(self, batch, indices):
        return batch

    def argmax(self, batch, scores):
        return np.asarray(scores).argmax()


def test_unsupported_operation_names_structure_and_operation():
    structure = _ArgmaxOnly()
    with pytest.raises(UnsupportedOperation,
                       match=r"_ArgmaxOnly cannot compute 'marginals'.*argmax"):
        structure.marginals(None, np.zeros(3))
    assert isinstance(UnsupportedOperation("x"), NotImplementedError)


def test_check_supports_lists_missing_operations():
    structure = _ArgmaxOnly()
    structure.check_supports("argmax")
    with pytest.raises(UnsupportedOperation,
                       match="does not support marginals, project.*needed by EG"):
        structure.check_supports("argmax", "marginals", "project", needed_by="EG")


@pytest.mark.parametrize("name, advice", [
    ("target_codec", "output space's 'codec'"),
    ("score_outputs", "output space's 'score'"),
    ("flat_outputs", "output space's 'flat'"),
    ("supported_operations", "supports\\(\\) reads the methods a structure overrides"),
])
def test_moved_protocol_names_are_refused_with_their_new_place(name, advice):
    with pytest.raises(TypeError, match=f"Old defines '{name}'.*{advice}"):
        type("Old", (_ArgmaxOnly,), {name: None})


def test_supports_reads_overrides_and_withdrawals():
    class WithoutArgmax(_ArgmaxOnly):
        argmax = None

    assert _ArgmaxOnly().supports("argmax")
    assert not _ArgmaxOnly().supports("marginals")
    assert not WithoutArgmax().supports("argmax")
    assert not WithoutArgmax().supports("loss_augmented_argmax")


def test_repr_shows_the_arguments_that_differ_from_their_defaults():
    from sklearn_struct.structures import (ChainStructure, DependencyTreeStructure,
                                           PrunedChainStructure, STRUCTURES)
    for cls in set(STRUCTURES.values()):
        try:
            structure = cls()
        except TypeError:  # a required argument (the grammar)
            continue
        assert repr(structure) == f"{cls.__name__}()"
        assert repr(cls(**structure._params())) == f"{cls.__name__}()"
    chain = ChainStructure(start_end=False, allowed_transitions=np.ones((2, 2), bool))
    assert repr(chain) == "ChainStructure(start_end=False, allowed_transitions=array(...))"
    # an equal value of the default's type is the default; 1 for 1.0 is shown
    assert repr(DependencyTreeStructure(hash_bits=20, punctuation_weight=1)) == \
        "DependencyTreeStructure(punctuation_weight=1)"
    words = [f"w{k}" for k in range(40)]
    assert repr(PrunedChainStructure(word_features=words)) == \
        "PrunedChainStructure(word_features=<list of 40>)"
