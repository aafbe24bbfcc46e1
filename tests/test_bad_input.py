"""Bad input gets a clear error before any work, naming the example (and row).

A start of the catalogue of issue 16: every case below is refused by every
estimator that takes that input form, with the error type and a message that
says what is wrong and where.
"""

import numpy as np
import pytest

from sklearn_struct import (
    L1M3N,
    DualExtragradientMatcher,
    EGCRF,
    EGStructuredSVM,
    StructuredPerceptron,
    eg_path,
)

ESTIMATORS = {
    "EGCRF": lambda: EGCRF(max_iter=2),
    "EGStructuredSVM": lambda: EGStructuredSVM(max_iter=2),
    "L1M3N": lambda: L1M3N(max_iter=2),
    "DualExtragradientMatcher": lambda: DualExtragradientMatcher(
        "chain", geometry="entropic", radius=1.0, max_iter=2),
}
FLAT = ("EGCRF", "EGStructuredSVM", "L1M3N")
ones = np.ones

SEQUENCE_CASES = {
    "empty lists": ([], [], ValueError, "X is an empty list"),
    "a sequence of 0 tokens": ([ones((2, 3)), ones((0, 3))], [[0, 1], []], ValueError,
                               "sequence 1: has no rows"),
    "3-D sequences": ([ones((2, 3, 1))] * 2, [[0, 1]] * 2, ValueError,
                      r"sequence 0: expected a 2-D array .* shape \(2, 3, 1\)"),
    "1-D sequences": ([ones(3), ones(2)], [[0, 1, 0], [1, 0]], ValueError,
                      r"sequence 0: expected a 2-D array .*reshape\(-1, 1\)"),
    "one 3-D array": (ones((2, 3, 4)), [[0, 1, 0], [1, 0, 1]], ValueError,
                      r"X is a 3-D array of shape \(2, 3, 4\); pass sequences as a list"),
    "a label sequence given as a string": ([ones((2, 3)), ones((1, 3))], ["ab", "c"], TypeError,
                                           r"y\[0\]: expected a 1-D sequence of labels"),
    "mixed label types in one sequence": (
        [ones((2, 3)), ones((1, 3))], [np.array(["a", 1], dtype=object), [1]], TypeError,
        "example 0 has labels of types number and str"),
    "label types differing between sequences": (
        [ones((2, 3)), ones((1, 3))], [["a", "b"], [1]], TypeError,
        "example 1 has labels of type number but earlier labels are of type str"),
    "a single class": ([ones((2, 3)), ones((1, 3))], [[0, 0], [0]], ValueError,
                       "single class"),
    "NaN in a sequence": ([ones((2, 3)), np.array([[1.0, np.nan, 0.0]])], [[0, 1], [1]],
                          ValueError, "sequence 1: features contain NaN or infinity"),
    "labels of the wrong length": ([ones((2, 3)), ones((1, 3))], [[0, 1], [1, 0]], ValueError,
                                   r"y\[1\]: expected 1 labels"),
}

FLAT_CASES = {
    "NaN in a row": (np.array([[1.0, 2.0], [np.nan, 1.0], [0.0, 1.0]]), [0, 1, 0], ValueError,
                     "X row 1 contains NaN or infinity"),
    "infinity in a sparse row": (None, [0, 1, 0], ValueError, "X row 2 contains NaN or infinity"),
    "continuous targets": (np.random.RandomState(0).randn(40, 3),
                           np.random.RandomState(1).randn(40), ValueError,
                           "Unknown label type: continuous"),
    "0 rows": (ones((0, 3)), [], ValueError, r"0 sample\(s\)"),
    "a single class": (ones((3, 2)), ["a", "a", "a"], ValueError, "one class only"),
}


@pytest.mark.parametrize("case", SEQUENCE_CASES)
@pytest.mark.parametrize("name", ESTIMATORS)
def test_bad_sequence_input_is_refused_clearly(name, case):
    X, y, error, message = SEQUENCE_CASES[case]
    with pytest.raises(error, match=message):
        ESTIMATORS[name]().fit(X, y)


@pytest.mark.parametrize("case", FLAT_CASES)
@pytest.mark.parametrize("name", FLAT)
def test_bad_flat_input_is_refused_clearly(name, case):
    import scipy.sparse as sp

    X, y, error, message = FLAT_CASES[case]
    if X is None:
        X = sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 1.0], [0.0, np.inf]]))
    with pytest.raises(error, match=message):
        ESTIMATORS[name]().fit(X, y)


TOKEN_DICTS = [[{"w": "the", "bias": 1.0}, {"w": "cat", "bias": 1.0}], [{"w": "sat"}]]
SEQUENCE_ESTIMATORS = {**ESTIMATORS, "StructuredPerceptron": lambda: StructuredPerceptron(
    max_iter=2)}


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("name", SEQUENCE_ESTIMATORS)
def test_token_dicts_point_to_the_vectorizer(name):
    # sklearn-crfsuite's input format: numpy alone fails with "inhomogeneous shape"
    message = (r"X\[1\] is a sequence of dicts \(token features, the sklearn-crfsuite format\)"
               r".*SequenceDictVectorizer, e.g. make_pipeline\(SequenceDictVectorizer\(\), "
               + name + r"\(\)\)")
    X = [ones((2, 1)), TOKEN_DICTS[1]]
    with pytest.raises(TypeError, match=message):
        SEQUENCE_ESTIMATORS[name]().fit(X, [["a", "b"], ["a"]])
    estimator = SEQUENCE_ESTIMATORS[name]()
    if name != "DualExtragradientMatcher":  # its structure is always given
        estimator.set_params(structure="chain")
    with pytest.raises(TypeError, match=r"X\[0\] is a sequence of dicts"):
        estimator.fit(TOKEN_DICTS, [["a", "b"], ["a"]])
    with pytest.raises(TypeError, match=r"X\[0\] is a dict; "):
        estimator.fit(TOKEN_DICTS[0], ["a", "b"])
    fitted = SEQUENCE_ESTIMATORS[name]().set_params(structure="chain").fit(
        [ones((2, 1)), ones((1, 1))], [["a", "b"], ["a"]])
    for method in ("predict", "score"):
        args = (TOKEN_DICTS,) if method == "predict" else (TOKEN_DICTS, [["a", "b"], ["a"]])
        with pytest.raises(TypeError, match=r"X\[0\] is a sequence of dicts"):
            getattr(fitted, method)(*args)


def test_predict_names_the_bad_row():
    model = EGCRF(max_iter=3).fit(np.eye(3), [0, 1, 2])
    with pytest.raises(ValueError, match="X row 2 contains NaN or infinity"):
        model.predict(np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [np.inf, 0.0, 0.0]]))


def test_chains_need_the_entropic_geometry_in_the_extragradient():
    with pytest.raises(ValueError, match="use geometry='entropic' with a finite radius"):
        DualExtragradientMatcher("chain").fit([ones((2, 3))], [[0, 1]])


def test_eg_path_without_values_of_C():
    with pytest.raises(ValueError, match="Cs holds no value of C"):
        eg_path(EGCRF(), np.eye(2), [0, 1], [])
