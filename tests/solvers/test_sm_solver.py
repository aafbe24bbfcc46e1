"""The SM solvers against the equations of Zhang, Kwok & Yeung (2007), written out by brute
force, and against scipy.optimize on the exact objectives."""

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse as sp
from scipy.special import expit, logsumexp, softmax

from sklearn_struct.solvers.sm import (
    METHODS,
    BinaryExponentialLoss,
    BinaryLogisticLoss,
    M2ExponentialLoss,
    MHExponentialLoss,
    MultinomialLogisticLoss,
    _balanced_coordinates,
    log_linear_sm,
    sm_minimize,
)


def _binary_problem(seed=0, n=60, d=5):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d) * rng.uniform(0.5, 2.0, d) + 0.2
    y = np.where(X @ rng.randn(d) + rng.randn(n) > 0, 1.0, -1.0)
    return X, y


def _multiclass_problem(seed=0, n=80, d=4, K=3):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d) + 0.3
    y = np.argmax(X @ rng.randn(d, K) + rng.randn(n, K), axis=1)
    return X, y


def _one_step(X, loss, method, coef0, fit_intercept=False):
    return sm_minimize(
        X, loss, method, C=np.inf, fit_intercept=fit_intercept, max_iter=1, objective_tol=0.0,
        coef_init=coef0, intercept_init=np.zeros(coef0.shape[0]),
    )


# ----------------------------------------------------------------- one step = the paper's update


def _paper_binary_step(method, X, y, coef0):
    """lambda(t+1) from eq. 13, 16, 22, 25, 27, 20 with g_ij = -y_i h_j(x_i), normalised so that
    sum_j |g_ij| <= 1 by one global factor (eq. 10); returned in the units of X."""
    scale = 1.0 / np.abs(X).sum(axis=1).max()
    G = -y[:, None] * X * scale  # rows g_i
    lam = coef0.ravel() / scale
    p = expit(G @ lam)
    n, m = G.shape
    if method == "sm1":  # eq. 13
        new = np.array([
            lam[j] - sum(p[i] * G[i, j] for i in range(n))
            / sum(p[i] * (1 - p[i]) * abs(G[i, j]) for i in range(n))
            for j in range(m)
        ])
    elif method == "sm2":  # eq. 16
        v = G @ lam
        beta = np.tanh(np.abs(v) / 2) / np.abs(v)
        new = -np.linalg.solve(sum(beta[i] * np.outer(G[i], G[i]) for i in range(n)), G.sum(0))
    elif method == "sm3":  # eq. 22
        new = lam - 4 * np.linalg.solve(G.T @ G, G.T @ p)
    elif method == "sm4":  # eq. 25
        new = np.array([
            lam[j] + 0.5 * np.log(
                sum(abs(G[i, j]) * p[i] for i in range(n) if G[i, j] < 0)
                / sum(abs(G[i, j]) * p[i] for i in range(n) if G[i, j] > 0)
            )
            for j in range(m)
        ])
    elif method == "sm5":  # eq. 27
        new = np.array([
            lam[j] - 4 * sum(p[i] * G[i, j] for i in range(n)) / sum(abs(G[i, j]) for i in range(n))
            for j in range(m)
        ])
    else:  # Newton, eq. 20
        hessian = sum(p[i] * (1 - p[i]) * np.outer(G[i], G[i]) for i in range(n))
        new = lam - np.linalg.solve(hessian, G.T @ p)
    return scale * new


@pytest.mark.parametrize("method", METHODS)
def test_one_binary_step_is_the_paper_update(method):
    X, y = _binary_problem()
    coef0 = np.random.RandomState(1).uniform(-0.3, 0.3, (1, X.shape[1]))
    result = _one_step(X, BinaryLogisticLoss(y, np.ones(len(y))), method, coef0)
    expected = _paper_binary_step(method, X, y, coef0)
    np.testing.assert_allclose(result.coef.ravel(), expected, rtol=1e-10)


@pytest.mark.parametrize("method", ["sm1", "sm4", "sm5"])
def test_csm_intercept_step(method):
    # CSM (section 5): after the coefficient step, one surrogate step on b with g_ib = -y_i
    X, y = _binary_problem(seed=3)
    coef0 = np.random.RandomState(2).uniform(-0.3, 0.3, (1, X.shape[1]))
    result = _one_step(X, BinaryLogisticLoss(y, np.ones(len(y))), method, coef0, fit_intercept=True)
    coef1 = _paper_binary_step(method, X, y, coef0)
    np.testing.assert_allclose(result.coef.ravel(), coef1, rtol=1e-10)
    p = expit(-y * (X @ coef1))  # probability of the wrong label at (lambda(t+1), b(t) = 0)
    expected = {
        "sm4": 0.5 * np.log(p[y > 0].sum() / p[y < 0].sum()),
        "sm5": 4 * (p * y).sum() / len(y),
        "sm1": (p * y).sum() / (p * (1 - p)).sum(),
    }[method]
    np.testing.assert_allclose(result.intercept, [expected], rtol=1e-10)


def test_one_multinomial_step_is_eq_35():
    X, y = _multiclass_problem()
    K, d = 3, X.shape[1]
    coef0 = np.random.RandomState(4).uniform(-0.2, 0.2, (K, d))
    result = _one_step(X, MultinomialLogisticLoss(y, K, np.ones(len(y))), "sm3", coef0)
    # H_i maps class scores to features: H_i[(k, j), l] = x_ij [l = k]
    bound = np.zeros((K * d, K * d))
    score = np.zeros(K * d)
    for i in range(len(y)):
        H = np.kron(np.eye(K), X[i][:, None])
        q = softmax(H.T @ coef0.ravel())
        bound += 0.5 * H @ (np.eye(K) - np.full((K, K), 1 / K)) @ H.T
        score += H @ (np.eye(K)[y[i]] - q)
    expected = coef0.ravel() + np.linalg.pinv(bound) @ score
    np.testing.assert_allclose(result.coef.ravel(), expected, rtol=1e-9, atol=1e-12)


def _paper_parallel_update(X, y, coef0, K, variant):
    """Eq. 37 (multinomial) and section 7 (M2, MH) by brute force over (i, l) and s = (k, j):
    lambda_s += 1/2 ln(sum_{S_s^-} |g_ils| w_il / sum_{S_s^+} |g_ils| w_il), with w the
    multinomial posterior or exp(lambda . g_il)."""
    n, d = X.shape
    coupling = 1 if variant == "mh" else 2
    scale = 1.0 / (coupling * np.abs(X).sum(axis=1).max())
    Xs = X * scale
    lam = coef0 / scale
    g = np.zeros((n, K, K, d))  # g[i, l, k, j]
    for i in range(n):
        for label in range(K):
            if variant == "mh":
                g[i, label, label] = -(1.0 if label == y[i] else -1.0) * Xs[i]
            else:
                g[i, label, label] += Xs[i]
                g[i, label, y[i]] -= Xs[i]
    exponent = np.einsum("ilkj,kj->il", g, lam)
    weight = softmax(exponent, axis=1) if variant == "multinomial" else np.exp(exponent)
    plus = np.einsum("ilkj,il->kj", np.where(g > 0, g, 0), weight)
    minus = np.einsum("ilkj,il->kj", np.where(g < 0, -g, 0), weight)
    return scale * (lam + 0.5 * np.log(minus / plus))


@pytest.mark.parametrize(
    "variant, loss_class",
    [
        ("multinomial", MultinomialLogisticLoss),
        ("m2", M2ExponentialLoss),
        ("mh", MHExponentialLoss),
    ],
)
def test_one_parallel_update_is_eq_37_and_section_7(variant, loss_class):
    X, y = _multiclass_problem(seed=5)
    K = 3
    coef0 = np.random.RandomState(6).uniform(-0.2, 0.2, (K, X.shape[1]))
    result = _one_step(X, loss_class(y, K, np.ones(len(y))), "sm4", coef0)
    expected = _paper_parallel_update(X, y, coef0, K, variant)
    np.testing.assert_allclose(result.coef, expected, rtol=1e-10)


def test_one_binary_adaboost_step_is_section_7():
    X, y = _binary_problem(seed=7)
    coef0 = np.random.RandomState(8).uniform(-0.3, 0.3, (1, X.shape[1]))
    result = _one_step(X, BinaryExponentialLoss(y, np.ones(len(y))), "sm4", coef0)
    scale = 1.0 / np.abs(X).sum(axis=1).max()
    G = -y[:, None] * X * scale
    w = np.exp(G @ (coef0.ravel() / scale))
    expected = coef0.ravel() / scale + 0.5 * np.log(
        np.where(G < 0, -G, 0).T @ w / (np.where(G > 0, G, 0).T @ w)
    )
    np.testing.assert_allclose(result.coef.ravel(), scale * expected, rtol=1e-10)


# ----------------------------------------------------------------- penalised M-step of sm4


def test_balanced_coordinates_solve_the_penalised_m_step():
    rng = np.random.RandomState(0)
    m = 300
    log_plus, log_minus = rng.randn(m) * 3, rng.randn(m) * 3
    current = rng.randn(m) * 2
    log_plus[:20] = -np.inf
    log_minus[20:40] = -np.inf
    log_plus[40:50] = log_minus[40:50] = -np.inf
    rho = 0.37
    t = _balanced_coordinates(log_plus, log_minus, current, rho)
    for i in range(m):
        def derivative(u, i=i):  # of A+ e^(u - c) + A- e^(c - u) + rho/2 u^2, increasing in u
            return (
                np.exp(log_plus[i] + u - current[i]) - np.exp(log_minus[i] + current[i] - u)
                + rho * u
            )
        root = scipy.optimize.brentq(derivative, -200.0, 200.0, xtol=1e-14, rtol=1e-15)
        assert abs(t[i] - root) <= 1e-12 * (1 + abs(root))
    np.testing.assert_array_equal(t[40:50], 0.0)  # unused features shrink to zero
    unpenalised = _balanced_coordinates(log_plus, log_minus, current, 0.0)
    closed_form = current[50:] + 0.5 * (log_minus[50:] - log_plus[50:])
    np.testing.assert_allclose(unpenalised[50:], closed_form)
    np.testing.assert_array_equal(unpenalised[40:50], current[40:50])
    assert np.all(unpenalised[:20] == current[:20] + 30.0)  # clipped move towards +infinity


# ----------------------------------------------------------------- monotone descent, optimum


def _exact_objective(loss_name, X, y, K, C, fit_intercept, sample_weight):
    d = X.shape[1]

    def objective(theta):
        W = theta[:K * d].reshape(K, d)
        b = theta[K * d:] if fit_intercept else np.zeros(K)
        F = np.asarray(X @ W.T) + b
        if loss_name == "binary_logistic":
            loss = np.logaddexp(0, -y * F[:, 0])
        elif loss_name == "multinomial":
            loss = logsumexp(F, axis=1) - F[np.arange(len(y)), y]
        elif loss_name == "binary_exponential":
            loss = np.exp(-y * F[:, 0])
        elif loss_name == "m2":
            loss = np.exp(F - F[np.arange(len(y)), y][:, None]).sum(axis=1)
        else:
            signs = -np.ones((len(y), K))
            signs[np.arange(len(y)), y] = 1
            loss = np.exp(-signs * F).sum(axis=1)
        return sample_weight @ loss + (0 if np.isinf(C) else (W**2).sum() / (2 * C))

    return objective


_LOSSES = {
    "binary_logistic": lambda y, K, s: BinaryLogisticLoss(y, s),
    "multinomial": lambda y, K, s: MultinomialLogisticLoss(y, K, s),
    "binary_exponential": lambda y, K, s: BinaryExponentialLoss(y, s),
    "m2": lambda y, K, s: M2ExponentialLoss(y, K, s),
    "mh": lambda y, K, s: MHExponentialLoss(y, K, s),
}
_CASES = [("binary_logistic", m) for m in METHODS] + [
    ("multinomial", m) for m in ("sm3", "sm4", "sm5", "newton")
] + [("binary_exponential", "sm4"), ("m2", "sm4"), ("mh", "sm4")]


@pytest.mark.parametrize("loss_name, method", _CASES)
@pytest.mark.parametrize("C, fit_intercept", [(0.5, True), (np.inf, False)])
def test_monotone_descent_to_the_exact_optimum(loss_name, method, C, fit_intercept):
    binary = loss_name.startswith("binary")
    make = _binary_problem if binary else _multiclass_problem
    X, y = make(seed=11, n=50, d=4)
    K = 1 if binary else 3
    rng = np.random.RandomState(12)
    X = sp.csr_matrix(np.where(rng.rand(*X.shape) < 0.7, X, 0.0))  # sparse input
    weights = rng.uniform(0.5, 2.0, len(y))
    result = sm_minimize(
        X, _LOSSES[loss_name](y, K, weights), method, C=C, fit_intercept=fit_intercept,
        max_iter=30000, objective_tol=1e-13,
    )
    steps = np.diff(result.objective)
    assert np.all(steps <= 1e-12 * result.objective[0]), steps.max()
    objective = _exact_objective(loss_name, X, y, K, C, fit_intercept, weights)
    reference = scipy.optimize.minimize(
        objective, np.zeros(K * X.shape[1] + K * fit_intercept), method="BFGS",
        options={"gtol": 1e-10, "maxiter": 20000},
    ).fun
    theta = np.concatenate([result.coef.ravel(), result.intercept if fit_intercept else []])
    assert objective(theta) == pytest.approx(result.objective[-1], rel=1e-12)
    assert result.objective[-1] == pytest.approx(reference, rel=1e-8)


def test_sample_weights_equal_repetitions():
    X, y = _binary_problem(seed=13, n=30)
    weights = np.random.RandomState(0).randint(0, 4, len(y)).astype(float)
    for method in METHODS:
        weighted = sm_minimize(X, BinaryLogisticLoss(y, weights), method, C=1.0, max_iter=50)
        repeated = sm_minimize(
            np.repeat(X, weights.astype(int), axis=0),
            BinaryLogisticLoss(np.repeat(y, weights.astype(int)), np.ones(int(weights.sum()))),
            method, C=1.0, max_iter=50,
        )
        np.testing.assert_allclose(weighted.objective, repeated.objective, rtol=1e-10)
        np.testing.assert_allclose(weighted.coef, repeated.coef, rtol=1e-8, atol=1e-12)


def test_unsupported_method_for_loss():
    X, y = _multiclass_problem()
    with pytest.raises(ValueError, match="sm2.*MultinomialLogisticLoss"):
        sm_minimize(X, MultinomialLogisticLoss(y, 3, np.ones(len(y))), "sm2")
    with pytest.raises(ValueError, match="sm3.*M2ExponentialLoss"):
        sm_minimize(X, M2ExponentialLoss(y, 3, np.ones(len(y))), "sm3")


# ----------------------------------------------------------------- section 8: GIS


def _log_linear_problem(seed=0, n_constraints=4, n_cells=12):
    rng = np.random.RandomState(seed)
    A = rng.rand(n_constraints, n_cells)
    A /= A.sum(axis=0)
    prior = rng.rand(n_cells) + 0.1
    prior /= prior.sum()
    h = A @ rng.dirichlet(np.ones(n_cells))
    return A, h, prior


def test_log_linear_sm_is_the_i_projection():
    A, h, prior = _log_linear_problem()
    result = log_linear_sm(A, h, prior, max_iter=20000, moment_tol=1e-12)
    assert result.converged
    p = result.probabilities
    np.testing.assert_allclose(A @ p, h, atol=1e-12)
    assert p.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.all(np.diff(result.dual_objective) >= -1e-14)

    def negative_dual(eta):  # eq. 44
        return eta @ h + logsumexp(np.log(prior) - eta @ A)

    best = scipy.optimize.minimize(
        negative_dual, np.zeros(len(h)), method="BFGS", options={"gtol": 1e-12}
    )
    assert result.dual_objective[-1] == pytest.approx(-best.fun, abs=1e-10)
    reference = softmax(np.log(prior) - best.x @ A)
    np.testing.assert_allclose(p, reference, atol=1e-7)


def test_gis_iterates_are_the_sm_iterates_unnormalised():
    A, h, prior = _log_linear_problem(seed=1)
    for n_iter in (1, 5, 30):
        sm_result = log_linear_sm(A, h, prior, method="sm", max_iter=n_iter, moment_tol=0)
        gis_result = log_linear_sm(A, h, prior, method="gis", max_iter=n_iter, moment_tol=0)
        assert gis_result.probabilities.sum() <= 1 + 1e-12
        normalised = gis_result.probabilities / gis_result.probabilities.sum()
        np.testing.assert_allclose(normalised, sm_result.probabilities, rtol=1e-10)
        np.testing.assert_allclose(gis_result.dual_objective, sm_result.dual_objective, rtol=1e-12)
    # Darroch & Ratcliff's update, written out
    p = prior.copy()
    for _ in range(30):
        p = p * np.prod((h / (A @ p))[:, None] ** A, axis=0)
    np.testing.assert_allclose(gis_result.probabilities, p, rtol=1e-10)
