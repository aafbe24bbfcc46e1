import numpy as np
import pytest

from sklearn_struct.structures import BaseStructure, UnsupportedOperation


class _ArgmaxOnly(BaseStructure):
    supported_operations = ("argmax",)

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
