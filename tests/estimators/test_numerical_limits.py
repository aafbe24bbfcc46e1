"""Numerical limits (issue 16): extreme C and feature scales give finite weights, and either a
converged solution or a ConvergenceWarning -- never NaN, never a silent wrong answer.

Every estimator except L1M3N (tested with its solvers) is fitted on a small flat
problem and a small chain problem at ``C = 1e-8`` and ``C = 1e8`` (the radius for
the dual extragradient) and with features scaled by ``1e6`` and ``1e-6``.  A fit
that does not warn must be certified: EGCRF's primal objective, recomputed here
from its coefficients, must be within its tolerance of scikit-learn's
``LogisticRegression`` on the same problem (EGCRF on flat samples is multinomial
logistic regression without intercept); the duality-gap solvers' reported gaps
must be below their tolerance.  The ranges measured here are those stated in the
"Numerical range" notes of the docstrings.
"""

import warnings

import numpy as np
import pytest
from scipy.special import logsumexp
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

from sklearn_struct import (
    DualExtragradientMatcher,
    EGCRF,
    EGStructuredSVM,
    SMLogisticRegression,
    StructuredPerceptron,
)

SETTINGS = {  # name: (C or radius, feature scale)
    "C=1e-8": (1e-8, 1.0),
    "C=1e8": (1e8, 1.0),
    "features x1e6": (1.0, 1e6),
    "features x1e-6": (1.0, 1e-6),
}


def flat_problem():
    rng = np.random.RandomState(0)
    X = rng.randn(30, 4)
    return X, np.argmax(X[:, :3] + 0.5 * rng.randn(30, 3), axis=1)


def chain_problem():
    rng = np.random.RandomState(1)
    X, y = [], []
    for _ in range(8):
        labels = rng.randint(0, 3, rng.randint(2, 5))
        x = rng.randn(len(labels), 4)
        x[np.arange(len(labels)), labels] += 1.5
        X.append(x)
        y.append(labels)
    return X, y


def make(name, C):
    return {
        "EGCRF": lambda: EGCRF(C=C, random_state=0),
        "EGStructuredSVM": lambda: EGStructuredSVM(C=C, random_state=0),
        "EGStructuredSVM working set": lambda: EGStructuredSVM(C=C, random_state=0,
                                                               solver="working_set"),
        "DualExtragradientMatcher": lambda: DualExtragradientMatcher(
            structure=None, geometry="entropic", radius=C),
        "StructuredPerceptron": lambda: StructuredPerceptron(random_state=0),
        "SMLogisticRegression": lambda: SMLogisticRegression(C=C),
    }[name]()


def fit_recording(model, X, y):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X, y)
    others = [w for w in caught if not issubclass(w.category, ConvergenceWarning)]
    assert not others, [str(w.message) for w in others]  # no overflow or invalid-value warning
    return any(issubclass(w.category, ConvergenceWarning) for w in caught)


def weights(model):
    return model.weights_ if hasattr(model, "weights_") else np.r_[model.coef_.ravel(),
                                                                   model.intercept_]


def softmax_objective(coef, X, y, C):
    """``C * sum_i -log p(y_i | x_i) + ||W||^2 / 2`` of multinomial logistic regression."""
    scores = X @ coef.T
    return C * float((logsumexp(scores, axis=1) - scores[np.arange(len(y)), y]).sum()) \
        + 0.5 * float((coef ** 2).sum())


ESTIMATORS = ["EGCRF", "EGStructuredSVM", "EGStructuredSVM working set",
              "DualExtragradientMatcher", "StructuredPerceptron", "SMLogisticRegression"]


@pytest.mark.parametrize("setting", SETTINGS)
@pytest.mark.parametrize("name", ESTIMATORS)
@pytest.mark.parametrize("problem", ["flat", "chain"])
def test_extreme_scales_give_finite_weights_and_converge_or_warn(problem, name, setting):
    C, scale = SETTINGS[setting]
    if name == "SMLogisticRegression" and problem == "chain":
        pytest.skip("flat samples only")
    if name == "StructuredPerceptron" and setting.startswith("C="):
        pytest.skip("no C")
    X, y = flat_problem() if problem == "flat" else chain_problem()
    X = X * scale if problem == "flat" else [x * scale for x in X]
    model = make(name, C)
    warned = fit_recording(model, X, y)
    assert np.isfinite(weights(model)).all()
    assert set(np.concatenate([np.ravel(p) for p in model.predict(X)])) <= set(model.classes_)
    if warned:
        return
    # no warning: the solver's own certificate, checked
    if name.startswith("EG"):
        assert model.duality_gap_ <= model.tol * model.primal_objective_
    elif name == "DualExtragradientMatcher":
        gap, objective = model.history_["gap"][-1], model.history_["objective"][-1]
        assert gap <= model.tol * max(objective, 1.0)
    elif name == "StructuredPerceptron":
        assert model.history_["mistakes"][-1] == 0
    if name == "EGCRF" and problem == "flat":
        # ... and an independent one: not worse than scikit-learn's optimum beyond the tolerance
        reference = LogisticRegression(C=C, fit_intercept=False, tol=1e-12, max_iter=10000)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            reference.fit(X, y)
        ours = softmax_objective(model.coef_, X, y, C)
        assert ours == pytest.approx(model.primal_objective_, rel=1e-9)
        assert ours <= softmax_objective(reference.coef_, X, y, C) * (1 + model.tol) + 1e-12


@pytest.mark.parametrize("problem, C", [("flat", 100.0), ("chain", 10.0)])
def test_the_working_set_converges_at_larger_C(problem, C):
    """The "Numerical range" of EGStructuredSVM: where online EG stops at ``max_iter``
    (relative gaps 0.28 and 0.15), and its warning points to the working set, the
    working set certifies ``tol``."""
    X, y = flat_problem() if problem == "flat" else chain_problem()
    with pytest.warns(ConvergenceWarning, match="use solver='working_set'"):
        EGStructuredSVM(C=C, random_state=0).fit(X, y)
    model = EGStructuredSVM(C=C, random_state=0, solver="working_set")
    assert not fit_recording(model, X, y)
    assert model.duality_gap_ <= model.tol * model.primal_objective_
    stopped_early = EGStructuredSVM(C=C, random_state=0, solver="working_set", max_iter=3)
    advice = r"max_iter=3 oracle passes .*; increase max_iter\.$"
    with pytest.warns(ConvergenceWarning, match=advice):
        stopped_early.fit(X, y)


def test_the_perceptron_is_scale_invariant_on_flat_samples():
    """Every update scales with the features: the same mistakes, weights scaled alike."""
    X, y = flat_problem()
    fits = {}
    for scale in (1e-6, 1.0, 1e6):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            fits[scale] = StructuredPerceptron(random_state=0).fit(X * scale, y)
    for scale, model in fits.items():
        np.testing.assert_allclose(model.weights_ / scale, fits[1.0].weights_, rtol=1e-9)
        np.testing.assert_array_equal(model.predict(X * scale), fits[1.0].predict(X))


def test_the_perceptron_warns_when_its_last_epoch_makes_mistakes():
    X = np.array([[1.0], [1.0]])  # identical inputs, different labels: never separable
    with pytest.warns(ConvergenceWarning, match=r"the last of 3 epochs still predicted \d+"):
        StructuredPerceptron(max_iter=3, shuffle=False).fit(X, [0, 1])
