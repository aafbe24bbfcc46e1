"""Surrogate minimisation (SM) solvers of Zhang, Kwok & Yeung (Machine Learning 2007).

Every solver here minimises, over a coefficient matrix ``W`` (``K x d``) and an
intercept ``b`` (``K``), the penalised empirical risk

    J(W, b) = sum_i s_i loss(F_i, y_i) + ||W||^2 / (2 C),        F_i = W x_i + b,

(the scikit-learn objective ``1/2 ||W||^2 + C sum_i s_i loss_i`` divided by ``C``; ``C =
inf`` is the paper's unpenalised problem) by iterating: build a surrogate ``Q(.|theta_t)
>= J`` touching ``J`` at ``theta_t``, then (approximately) minimise it.  The losses are the
binary and multinomial logistic losses (sections 4-6) and the exponential losses of
binary AdaBoost, AdaBoost.M2 and AdaBoost.MH (section 7); section 8's log-linear model
(GIS) is :func:`log_linear_sm`.

Normalised parametrisation
    The Jensen-type surrogates (sm1, sm4, sm5) assume ``sum_j |g_ij| <= 1`` (eq. 10) for
    the signed features ``g_ij = -y_i x_ij``.  Instead of changing the data, the features
    are scaled by one global factor ``scale = 1 / (coupling * max_i ||x_i||_1)`` (rows of
    positive weight), an exact reparametrisation ``W = scale * Lam``; the penalty becomes
    ``rho / 2 ||Lam||^2`` with ``rho = scale^2 / C``.  ``coupling`` is the number of
    coefficient rows one (example, label) term touches: 1 for binary losses and
    AdaBoost.MH, 2 for the multinomial loss and AdaBoost.M2, where ``g_ilj =
    h_j(x_i, l) - h_j(x_i, y_i)`` has two non-zero blocks (eq. 36).

Penalised surrogates (our extension; the paper is unpenalised)
    The penalty is a convex quadratic, so adding it exactly to any surrogate of the loss
    gives a surrogate of ``J``; each M-step below minimises that sum, keeping every
    standard/generalised SM method monotone:

    * sm1 (eq. 13): one Newton step on ``Q_z + rho/2 ||Lam||^2`` (diagonal curvature
      ``sum_i s_i p_i (1 - p_i) |x_ij| + rho``).
    * sm2 (eq. 16): ``(sum_i s_i beta_i x_i x_i^T + 2 rho P) theta = sum_i s_i y_i x_i``.
    * sm3 (eq. 22), multinomial eq. 35: ``theta += -(Gamma (x) K + rho I (x) P)^+ grad`` with
      ``K = sum_i s_i x_i x_i^T`` and the class-space bound ``Gamma = 1/4`` (binary) or
      ``1/2 (I - 11^T / c)`` (Bohning); factorised once for the whole run.
    * sm4 (eq. 25), multinomial eq. 37, AdaBoost (section 7): per coordinate minimise
      ``A+ e^delta + A- e^-delta + rho/2 (lam + delta)^2``; without penalty this is the
      closed form ``delta = 1/2 ln(A- / A+)``, with it the unique root of a strictly
      increasing function, bracketed between the unpenalised step and ``-lam`` and found
      by safeguarded Newton (:func:`_balanced_coordinates`).
    * sm5 (eq. 27): ``delta = -(grad + rho lam) / (gamma D + rho)``, ``D_j = sum_i s_i
      |x_ij|``; multinomial: the same with Bohning's class bound (``x x^T <= ||x||_1
      diag|x|`` replaces ``K`` by ``diag(D)``).
    * newton (eq. 20): full Newton step on ``J``.

    ``P`` is the identity on coefficients and zero on the (unpenalised) intercept.

Intercept
    sm2, sm3 and newton treat the intercept as one more (unpenalised) feature of value 1,
    as section 5 notes they may.  sm1, sm4 and sm5 use the CSM alternation of section 5:
    one surrogate step on the coefficients, then one on the intercepts with the same kind
    of surrogate (a one-dimensional block, so Jensen's inequality is trivial; with
    ``coupling = 2`` the intercept block is halved as any other feature).  Section 5 as
    printed adds ``b`` to ``lambda^T g_i`` without the label's sign, which makes the loss
    monotone in ``b``; we use the ordinary intercept ``g_ib = -y_i``.

sm1 and newton are not SM algorithms (no majorisation guarantees descent); when a full
step would increase ``J`` it is halved until it does not.  This never alters an iterate
of the pure method when the pure method descends.

Stopping rule (section 4.6): ``|J_{t+1} - J_t| <= objective_tol * |J_0|``.
"""

from typing import NamedTuple

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from numba import njit
from scipy.special import expit, logsumexp, softmax

__all__ = [
    "METHODS",
    "BinaryLogisticLoss",
    "MultinomialLogisticLoss",
    "BinaryExponentialLoss",
    "M2ExponentialLoss",
    "MHExponentialLoss",
    "SMResult",
    "LogLinearResult",
    "sm_minimize",
    "log_linear_sm",
]

METHODS = ("sm1", "sm2", "sm3", "sm4", "sm5", "newton")

# Unpenalised sm4 steps are clipped to +-_MAX_LOG_STEP: when a signed feature never takes
# one sign (A+ or A- is 0) the exact surrogate minimiser is at infinity, and any finite
# move towards it still decreases the surrogate (a generalised SM step).
_MAX_LOG_STEP = 30.0
_HALVINGS = 60


# --------------------------------------------------------------------------- losses


class _BinaryLoss:
    """Signed labels ``y_i`` in {-1, +1} and sample weights of a one-output loss."""

    n_outputs = 1
    coupling = 1

    def __init__(self, y, sample_weight):
        self.y = np.asarray(y, dtype=np.float64)
        self.sample_weight = np.asarray(sample_weight, dtype=np.float64)

    def subset(self, mask):
        return type(self)(self.y[mask], self.sample_weight[mask])


class _MulticlassLoss:
    """Class indices ``y_i`` in 0..K-1 and sample weights of a K-output loss."""

    def __init__(self, y, n_classes, sample_weight):
        self.y = np.asarray(y, dtype=np.intp)
        self.n_outputs = int(n_classes)
        self.sample_weight = np.asarray(sample_weight, dtype=np.float64)

    def subset(self, mask):
        return type(self)(self.y[mask], self.n_outputs, self.sample_weight[mask])


class BinaryLogisticLoss(_BinaryLoss):
    """``loss_i = ln(1 + exp(-y_i F_i))`` with ``y_i`` in {-1, +1} (eq. 9), one output."""

    class_bound = np.array([[0.25]])  # p (1 - p) <= 1/4 (section 4.3)
    shift_invariant = False

    def value(self, F):
        return float(self.sample_weight @ np.logaddexp(0.0, -self.y * F[:, 0]))

    def residual(self, F):
        """dJ/dF: ``-y_i s_i p_i`` with ``p_i`` the probability of the wrong label."""
        return (-self.y * self.sample_weight * expit(-self.y * F[:, 0]))[:, None]

    def hessian_weights(self, F):
        p = expit(F[:, 0])
        return (self.sample_weight * p * (1.0 - p))[None, None, :]

    def jaakkola_jordan_weights(self, F):
        """``s_i beta_i`` of eq. 15, ``beta = tanh(|v|/2) / |v|`` (1/2 at v = 0)."""
        v = np.abs(F[:, 0])
        tiny = v < 1e-8
        beta = np.where(tiny, 0.5, np.tanh(0.5 * v) / np.where(tiny, 1.0, v))
        return self.sample_weight * beta


class MultinomialLogisticLoss(_MulticlassLoss):
    """``loss_i = ln sum_l exp(F_il) - F_{i y_i}`` (section 6), ``y_i`` in 0..K-1."""

    coupling = 2
    shift_invariant = True  # adding one constant to all F_il changes nothing

    def __init__(self, y, n_classes, sample_weight):
        super().__init__(y, n_classes, sample_weight)
        k = self.n_outputs
        self.class_bound = 0.5 * (np.eye(k) - np.full((k, k), 1.0 / k))  # Bohning (eq. 35)

    def value(self, F):
        rows = np.arange(F.shape[0])
        return float(self.sample_weight @ (logsumexp(F, axis=1) - F[rows, self.y]))

    def residual(self, F):
        R = softmax(F, axis=1)
        R[np.arange(F.shape[0]), self.y] -= 1.0
        return R * self.sample_weight[:, None]

    def hessian_weights(self, F):
        P = softmax(F, axis=1)
        W = -P.T[:, None, :] * P.T[None, :, :]
        W[np.arange(self.n_outputs), np.arange(self.n_outputs)] += P.T
        return W * self.sample_weight


class BinaryExponentialLoss(_BinaryLoss):
    """Binary AdaBoost: ``loss_i = exp(-y_i F_i)`` (eq. 38), one output."""

    class_bound = None

    def value(self, F):
        return float(self.sample_weight @ np.exp(-self.y * F[:, 0]))

    def residual(self, F):
        return (-self.y * self.sample_weight * np.exp(-self.y * F[:, 0]))[:, None]


class MHExponentialLoss(_MulticlassLoss):
    """AdaBoost.MH: ``loss_i = sum_l exp(-yt_il F_il)``, ``yt_il = +1`` iff ``l = y_i`` (eq. 40)."""

    coupling = 1
    class_bound = None

    def __init__(self, y, n_classes, sample_weight):
        super().__init__(y, n_classes, sample_weight)
        self.signs = -np.ones((self.y.size, self.n_outputs))
        self.signs[np.arange(self.y.size), self.y] = 1.0

    def value(self, F):
        return float(self.sample_weight @ np.exp(-self.signs * F).sum(axis=1))

    def residual(self, F):
        return -self.signs * np.exp(-self.signs * F) * self.sample_weight[:, None]


class M2ExponentialLoss(_MulticlassLoss):
    """AdaBoost.M2: ``loss_i = sum_l exp(F_il - F_{i y_i})`` (eq. 39, the ``l = y_i`` term is 1)."""

    coupling = 2
    class_bound = None

    def _ratios(self, F):
        return np.exp(F - F[np.arange(F.shape[0]), self.y][:, None])

    def value(self, F):
        return float(self.sample_weight @ self._ratios(F).sum(axis=1))

    def residual(self, F):
        E = self._ratios(F)
        rows = np.arange(F.shape[0])
        E[rows, self.y] -= E.sum(axis=1)
        return E * self.sample_weight[:, None]


# --------------------------------------------------------------------------- linear algebra


def _psd_solver(A):
    """Solve with a symmetric PSD matrix: Cholesky, or the Moore-Penrose inverse if singular.

    The pseudo-inverse is what section 4.3 prescribes for a singular bound; for the
    quadratic surrogates here the right-hand side lies in the range of ``A``, so it is an
    exact minimiser.
    """
    try:
        factor = scipy.linalg.cho_factor(A, check_finite=False)
        if np.all(np.isfinite(factor[0])):
            return lambda B: scipy.linalg.cho_solve(factor, B, check_finite=False)
    except np.linalg.LinAlgError:
        pass
    eigenvalues, eigenvectors = scipy.linalg.eigh(A, check_finite=False)
    cutoff = max(eigenvalues.max(initial=0.0), 0.0) * A.shape[0] * np.finfo(float).eps
    kept = eigenvalues > cutoff
    inverse = np.zeros_like(eigenvalues)
    inverse[kept] = 1.0 / eigenvalues[kept]
    return lambda B: eigenvectors @ (inverse * (eigenvectors.T @ B))


def _divide_or_zero(numerator, denominator):
    """``numerator / denominator`` with 0 where the denominator is 0 (an unused coordinate)."""
    safe = np.where(denominator > 0, denominator, 1.0)
    return np.where(denominator > 0, numerator / safe, 0.0)


class _Design:
    """The scaled design matrix and the derived matrices the surrogates need (built lazily)."""

    def __init__(self, X, scale, fit_intercept):
        if sp.issparse(X):
            self.X = sp.csr_matrix(X, dtype=np.float64, copy=True)
            self.X.data *= scale
        else:
            self.X = np.asarray(X, dtype=np.float64) * scale
        self.fit_intercept = fit_intercept
        self._signed = None
        self._abs = None

    @property
    def n_features(self):
        return self.X.shape[1]

    def scores(self, coef, intercept):
        return np.asarray(self.X @ coef.T) + intercept

    def gradient(self, R):
        """``R^T X`` as a (K, d) array."""
        return np.asarray(self.X.T @ R).T

    def abs_weighted_sums(self, weights):
        """``sum_i w_ik |x_ij|`` as a (K, d) array (``weights`` is (n, K))."""
        if self._abs is None:
            self._abs = abs(self.X)
        return np.asarray(self._abs.T @ weights).T

    def signed_sums(self, R):
        """``(A+, A-)`` of eq. 25/37: sums of ``|r_ik| |x_ij|`` over the entries where the signed
        feature ``r_ik x_ij`` is positive / negative, each (K, d)."""
        if self._signed is None:
            if sp.issparse(self.X):
                positive, negative = self.X.maximum(0).tocsr(), (-self.X).maximum(0).tocsr()
            else:
                positive, negative = np.maximum(self.X, 0.0), np.maximum(-self.X, 0.0)
            has_negative = negative.nnz > 0 if sp.issparse(negative) else bool(negative.any())
            self._signed = (positive, negative if has_negative else None)
        positive, negative = self._signed
        K = R.shape[1]
        both = np.hstack([np.maximum(R, 0.0), np.maximum(-R, 0.0)])
        on_positive = np.asarray(positive.T @ both)
        plus, minus = on_positive[:, :K], on_positive[:, K:]
        if negative is not None:
            on_negative = np.asarray(negative.T @ both)
            plus = plus + on_negative[:, K:]
            minus = minus + on_negative[:, :K]
        return plus.T, minus.T

    def augmented_gram(self, weights):
        """``sum_i w_i xt_i xt_i^T`` with ``xt_i = (x_i, 1)`` when fitting an intercept."""
        X = self.X
        if sp.issparse(X):
            gram = np.asarray((X.T @ X.multiply(weights[:, None]).tocsr()).todense())
        else:
            gram = X.T @ (X * weights[:, None])
        if not self.fit_intercept:
            return gram
        column = np.asarray(X.T @ weights).ravel()
        d = X.shape[1]
        out = np.empty((d + 1, d + 1))
        out[:d, :d] = gram
        out[:d, d] = out[d, :d] = column
        out[d, d] = weights.sum()
        return out

    def penalty_mask(self):
        """Diagonal of ``P``: 1 on coefficients, 0 on the intercept."""
        mask = np.ones(self.n_features + self.fit_intercept)
        if self.fit_intercept:
            mask[-1] = 0.0
        return mask


def _balanced_coordinates(log_plus, log_minus, current, rho):
    """Coordinate-wise minimiser ``t`` of ``A+ e^(t - c) + A- e^(c - t) + rho/2 t^2``.

    ``A+ = exp(log_plus)`` and ``A- = exp(log_minus)`` (``-inf`` for an empty sum),
    ``c = current``, all of one shape.  Without penalty: ``t = c + 1/2 ln(A-/A+)`` (eq.
    25, 37), clipped to ``+-_MAX_LOG_STEP`` around ``c``.  With ``rho > 0`` the
    stationarity condition ``phi(t) = e^(a + t) - e^(b - t) + rho t = 0`` (``a = ln A+ - c``,
    ``b = ln A- + c``) has a strictly increasing left side; its root lies between 0 and
    the unpenalised solution (``-e^a / rho`` or ``e^b / rho`` when one sum is empty) and is
    found by Newton's method safeguarded by bisection.
    """
    shape = np.shape(current)
    out = np.empty(int(np.prod(shape)))
    _balanced_coordinates_kernel(
        np.ascontiguousarray(log_plus, dtype=np.float64).ravel(),
        np.ascontiguousarray(log_minus, dtype=np.float64).ravel(),
        np.ascontiguousarray(current, dtype=np.float64).ravel(),
        float(rho),
        _MAX_LOG_STEP,
        out,
    )
    return out.reshape(shape)


@njit(cache=True)
def _balanced_coordinates_kernel(log_plus, log_minus, current, rho, max_step, out):
    for index in range(current.size):
        lp, lm, c = log_plus[index], log_minus[index], current[index]
        if rho == 0.0:
            if lp == -np.inf and lm == -np.inf:
                out[index] = c  # unused feature
            else:
                step = 0.5 * (lm - lp)
                out[index] = c + min(max(step, -max_step), max_step)
            continue
        a = lp - c
        b = lm + c
        if a == b:  # phi(0) = 0 (includes an unused feature: both sums empty)
            out[index] = 0.0
            continue
        if a > b:  # root in [lower, 0]
            upper = 0.0
            lower = c + 0.5 * (lm - lp) if lm > -np.inf else -np.exp(min(a, 700.0)) / rho
            t = lower
        else:  # root in [0, upper]
            lower = 0.0
            upper = c + 0.5 * (lm - lp) if lp > -np.inf else np.exp(min(b, 700.0)) / rho
            t = upper
        for _ in range(200):
            grow = np.exp(a + t)
            shrink = np.exp(b - t)
            phi = grow - shrink + rho * t
            if phi == 0.0:
                break
            if phi < 0.0:
                lower = t
            else:
                upper = t
            new_t = t - phi / (grow + shrink + rho)
            if not (lower <= new_t <= upper):
                new_t = 0.5 * (lower + upper)
            if abs(new_t - t) <= 1e-15 * (1.0 + abs(t)):
                t = new_t
                break
            t = new_t
        out[index] = t


# --------------------------------------------------------------------------- steppers


class _Stepper:
    """One SM iteration of a method; the state is ``(coef, intercept, F, objective)``."""

    def __init__(self, design, loss, rho):
        self.design = design
        self.loss = loss
        self.rho = rho
        self.fit_intercept = design.fit_intercept

    def objective(self, F, coef):
        return self.loss.value(F) + 0.5 * self.rho * float(np.sum(coef * coef))

    def _joint(self, coef, intercept):
        return np.hstack([coef, intercept[:, None]]) if self.fit_intercept else coef.copy()

    def _split(self, theta):
        if self.fit_intercept:
            return theta[:, :-1], theta[:, -1]
        return theta, np.zeros(theta.shape[0])

    def _joint_gradient(self, F, theta):
        R = self.loss.residual(F)
        grad = self.design.gradient(R)
        if self.fit_intercept:
            grad = np.hstack([grad, R.sum(axis=0)[:, None]])
        return grad + self.rho * theta * self.design.penalty_mask()

    def _joint_direction_scores(self, delta):
        coef, intercept = self._split(delta)
        return self.design.scores(coef, intercept)

    def _step_size(self, coef, delta_coef, F, delta_F, objective):
        """Largest ``t = 2^-k`` (k >= 0) with ``J(theta + t delta) <= J(theta)``.

        Returns ``(t, F, objective)`` at the accepted point (``t = 0`` if none is found).
        """
        t = 1.0
        for _ in range(_HALVINGS):
            trial_F = F + t * delta_F
            trial = self.objective(trial_F, coef + t * delta_coef)
            if trial <= objective:
                return t, trial_F, trial
            t *= 0.5
        return 0.0, F, objective


class _GradientSM(_Stepper):
    """sm1, eq. 13: one Newton step on the Jensen surrogate ``Q_z`` (diagonal curvature)."""

    def step(self, coef, intercept, F, objective):
        R = self.loss.residual(F)
        curvature = self.loss.hessian_weights(F)[0, 0][:, None]
        grad = self.design.gradient(R) + self.rho * coef
        delta = -_divide_or_zero(grad, self.design.abs_weighted_sums(curvature) + self.rho)
        delta_F = np.asarray(self.design.X @ delta.T)
        t, F, objective = self._step_size(coef, delta, F, delta_F, objective)
        coef = coef + t * delta
        if self.fit_intercept:
            R = self.loss.residual(F)
            curvature = self.loss.hessian_weights(F)[0, 0]
            delta_b = -_divide_or_zero(R.sum(axis=0), np.array([curvature.sum()]))
            t, F, objective = self._step_size(coef, 0.0, F, delta_b[None, :], objective)
            intercept = intercept + t * delta_b
        return coef, intercept, F, objective


class _JaakkolaJordan(_Stepper):
    """sm2, eq. 16: minimise the first-order-Taylor (Jaakkola-Jordan) quadratic bound."""

    def __init__(self, design, loss, rho):
        super().__init__(design, loss, rho)
        X = design.X
        rhs = np.asarray(X.T @ (loss.sample_weight * loss.y)).ravel()
        if self.fit_intercept:
            rhs = np.append(rhs, loss.sample_weight @ loss.y)
        self.rhs = rhs
        self.penalty = 2.0 * rho * design.penalty_mask()

    def step(self, coef, intercept, F, objective):
        system = self.design.augmented_gram(self.loss.jaakkola_jordan_weights(F))
        system[np.diag_indices_from(system)] += self.penalty
        theta = _psd_solver(system)(self.rhs)[None, :]
        coef, intercept = self._split(theta)
        F = self.design.scores(coef, intercept)
        return coef, intercept, F, self.objective(F, coef)


def _class_space(loss):
    """Eigen-decomposition of the class-space bound ``Gamma`` (round-off zeros made exact)."""
    gammas, rotation = np.linalg.eigh(loss.class_bound)
    return np.where(gammas > 1e-12, gammas, 0.0), rotation


class _QuadraticBound(_Stepper):
    """sm3, eq. 22 (binary) and eq. 35 (multinomial): the constant low quadratic bound
    ``Gamma (x) K + rho I (x) P``, diagonalised in class space and factorised once."""

    def __init__(self, design, loss, rho):
        super().__init__(design, loss, rho)
        gram = design.augmented_gram(loss.sample_weight)
        penalty = rho * design.penalty_mask()
        self.gammas, self.rotation = _class_space(loss)
        self.solvers = [_psd_solver(gamma * gram + np.diag(penalty)) for gamma in self.gammas]

    def step(self, coef, intercept, F, objective):
        theta = self._joint(coef, intercept)
        rotated = self.rotation.T @ self._joint_gradient(F, theta)
        delta = -self.rotation @ np.vstack([solve(g) for solve, g in zip(self.solvers, rotated)])
        coef, intercept = self._split(theta + delta)
        F = F + self._joint_direction_scores(delta)
        return coef, intercept, F, self.objective(F, coef)


class _DiagonalBound(_Stepper):
    """sm5, eq. 27: Jensen + low quadratic bound, a diagonal bound ``Gamma (x) diag(D)``;
    the intercept block is updated after the coefficients (CSM)."""

    def __init__(self, design, loss, rho):
        super().__init__(design, loss, rho)
        self.gammas, self.rotation = _class_space(loss)
        weights = loss.sample_weight[:, None]
        self.diagonal = self.design.abs_weighted_sums(weights)[0]
        self.total_weight = loss.sample_weight.sum()

    def step(self, coef, intercept, F, objective):
        grad = self.design.gradient(self.loss.residual(F)) + self.rho * coef
        curvature = self.gammas[:, None] * self.diagonal[None, :] + self.rho
        delta = -self.rotation @ _divide_or_zero(self.rotation.T @ grad, curvature)
        coef = coef + delta
        F = F + np.asarray(self.design.X @ delta.T)
        if self.fit_intercept:
            grad_b = self.rotation.T @ self.loss.residual(F).sum(axis=0)
            delta_b = -self.rotation @ _divide_or_zero(grad_b, self.gammas * self.total_weight)
            intercept = intercept + delta_b
            F = F + delta_b
        return coef, intercept, F, self.objective(F, coef)


class _ParallelUpdate(_Stepper):
    """sm4, eq. 25 / 37 / section 7: Jensen + first-order Taylor, the parallel-update
    Bregman algorithm of Collins et al.; intercepts by CSM."""

    def step(self, coef, intercept, F, objective):
        plus, minus = self.design.signed_sums(self.loss.residual(F))
        with np.errstate(divide="ignore"):
            new_coef = _balanced_coordinates(np.log(plus), np.log(minus), coef, self.rho)
        F = F + np.asarray(self.design.X @ (new_coef - coef).T)
        coef = new_coef
        if self.fit_intercept:
            # the intercept is a feature of value 1 / coupling in the Jensen weights
            R = self.loss.residual(F)
            with np.errstate(divide="ignore"):
                log_ratio = np.log(np.maximum(-R, 0.0).sum(axis=0)) - np.log(
                    np.maximum(R, 0.0).sum(axis=0)
                )
            log_ratio = np.where(np.isnan(log_ratio), 0.0, log_ratio)
            step = 0.5 * np.clip(log_ratio, -2 * _MAX_LOG_STEP, 2 * _MAX_LOG_STEP)
            delta_b = step / self.loss.coupling
            intercept = intercept + delta_b
            F = F + delta_b
        return coef, intercept, F, self.objective(F, coef)


class _Newton(_Stepper):
    """Newton's method, eq. 20 (the paper's reference), on the penalised objective."""

    def step(self, coef, intercept, F, objective):
        theta = self._joint(coef, intercept)
        K, width = theta.shape
        weights = self.loss.hessian_weights(F)
        hessian = np.empty((K * width, K * width))
        for k in range(K):
            rows_k = slice(k * width, (k + 1) * width)
            for other in range(k, K):
                rows_other = slice(other * width, (other + 1) * width)
                block = self.design.augmented_gram(weights[k, other])
                hessian[rows_k, rows_other] = block
                hessian[rows_other, rows_k] = block
        mask = self.design.penalty_mask()
        hessian[np.diag_indices_from(hessian)] += self.rho * np.tile(mask, K)
        if self.loss.shift_invariant:
            # J does not change along "same vector added to every class row" for the
            # unpenalised coordinates; the gradient is orthogonal to those directions, so
            # adding their projector only removes the singularity.
            free = (mask == 0) if self.rho > 0 else np.ones(width, dtype=bool)
            hessian += np.kron(np.full((K, K), 1.0 / K), np.diag(free.astype(float)))
        grad = self._joint_gradient(F, theta)
        delta = -_psd_solver(hessian)(grad.ravel()).reshape(K, width)
        delta_coef, _ = self._split(delta)
        t, F, objective = self._step_size(
            coef, delta_coef, F, self._joint_direction_scores(delta), objective
        )
        coef, intercept = self._split(theta + t * delta)
        return coef, intercept, F, objective


_STEPPERS = {
    "sm1": _GradientSM,
    "sm2": _JaakkolaJordan,
    "sm3": _QuadraticBound,
    "sm4": _ParallelUpdate,
    "sm5": _DiagonalBound,
    "newton": _Newton,
}


def _supported(method, loss):
    if method in ("sm1", "sm2"):
        return isinstance(loss, BinaryLogisticLoss)
    if method in ("sm3", "sm5"):
        return loss.class_bound is not None
    if method == "newton":
        return hasattr(loss, "hessian_weights")
    return True


# --------------------------------------------------------------------------- driver


class SMResult(NamedTuple):
    """Output of :func:`sm_minimize` (coefficients in the caller's feature units)."""

    coef: np.ndarray  # (K, d)
    intercept: np.ndarray  # (K,)
    n_iter: int
    objective: np.ndarray  # J at the start and after each iteration, (n_iter + 1,)
    converged: bool


def sm_minimize(
    X,
    loss,
    method="sm4",
    C=1.0,
    fit_intercept=True,
    max_iter=1000,
    objective_tol=1e-5,
    coef_init=None,
    intercept_init=None,
    verbose=0,
):
    """Minimise ``sum_i s_i loss_i + ||W||^2 / (2C)`` with the SM method ``method``.

    Parameters
    ----------
    X : ndarray or scipy sparse matrix of shape (n_samples, n_features)
        Features (finite; not modified).
    loss : loss object
        One of the loss classes of this module, holding the targets and sample weights.
    method : {"sm1", "sm2", "sm3", "sm4", "sm5", "newton"}
        The surrogate (see the module docstring); sm1/sm2 need :class:`BinaryLogisticLoss`,
        sm3/sm5/newton a logistic loss, sm4 works for every loss.
    C : float
        Inverse penalty strength; ``np.inf`` for none.
    fit_intercept : bool
    max_iter : int
    objective_tol : float
        Stop when ``|J_{t+1} - J_t| <= objective_tol * |J_0|`` (section 4.6).
    coef_init, intercept_init : ndarray of shape (K, d) and (K,), default zeros
    verbose : int
        Print the objective every 10 iterations (every iteration when ``>= 2``).

    Returns
    -------
    result : SMResult
    """
    if method not in _STEPPERS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if not _supported(method, loss):
        raise ValueError(f"method {method!r} is not available for {type(loss).__name__}")
    K, n_features = loss.n_outputs, X.shape[1]
    active = loss.sample_weight > 0
    if not np.all(active):  # zero-weight rows change nothing but the scale and could overflow
        X, loss = X[active], loss.subset(active)
    row_l1 = np.asarray(abs(X).sum(axis=1)).ravel()
    largest = row_l1.max(initial=0.0)
    coupling = loss.coupling if method == "sm4" else 1
    scale = 1.0 / (coupling * largest) if largest > 0 else 1.0
    rho = 0.0 if np.isinf(C) else scale**2 / C
    design = _Design(X, scale, fit_intercept)
    stepper = _STEPPERS[method](design, loss, rho)

    coef = np.zeros((K, n_features)) if coef_init is None else np.array(coef_init, float) / scale
    intercept = np.zeros(K) if intercept_init is None else np.array(intercept_init, float)
    if not fit_intercept:
        intercept = np.zeros(K)
    F = design.scores(coef, intercept)
    objective = stepper.objective(F, coef)
    history = [objective]
    converged = False
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        coef, intercept, F, objective = stepper.step(coef, intercept, F, objective)
        history.append(objective)
        if verbose >= 2 or (verbose and n_iter % 10 == 0):
            print(f"[{method}] iteration {n_iter}: objective {objective:.12g}")
        if abs(history[-2] - objective) <= objective_tol * abs(history[0]):
            converged = True
            break
    if verbose:
        state = "converged" if converged else "stopped at max_iter"
        print(f"[{method}] {state} after {n_iter} iterations: objective {objective:.12g}")
    return SMResult(scale * coef, intercept, n_iter, np.asarray(history), converged)


# --------------------------------------------------------------------------- log-linear model


class LogLinearResult(NamedTuple):
    """Output of :func:`log_linear_sm`."""

    probabilities: np.ndarray  # p_i, (n_cells,)
    multipliers: np.ndarray  # eta_r, (n_constraints,)
    n_iter: int
    dual_objective: np.ndarray  # F(eta) of eq. 44 at the start and after each iteration
    converged: bool


def log_linear_sm(A, h, prior, method="sm", max_iter=1000, moment_tol=1e-10):
    """Fit ``p_i = pi_i prod_r lambda_r^{a_ri}`` subject to ``sum_i a_ri p_i = h_r`` (section 8).

    The SM algorithm maximises the dual ``F(eta) = -eta.h - ln sum_i pi_i exp(-sum_r
    eta_r a_ri)`` (eq. 44) with the surrogate from the convexity of ``-ln`` and ``exp``:
    ``eta_r <- eta_r - ln(h_r / g_r)``, ``g_r = sum_i a_ri p_i`` (eq. 45-46), ``p``
    normalised.  ``method="gis"`` is Darroch & Ratcliff's GIS, the same update with ``p``
    left unnormalised (``p(0) = pi``); both produce the same ``F`` sequence, which never
    decreases.

    Parameters
    ----------
    A : ndarray of shape (n_constraints, n_cells)
        ``a_ri >= 0`` with columns summing to 1.
    h : ndarray of shape (n_constraints,)
        Positive targets summing to 1.
    prior : ndarray of shape (n_cells,)
        Positive ``pi``.
    method : {"sm", "gis"}
    max_iter : int
    moment_tol : float
        Stop when ``max_r |g_r - h_r| <= moment_tol``.

    Returns
    -------
    result : LogLinearResult
    """
    A = np.asarray(A, dtype=np.float64)
    h = np.asarray(h, dtype=np.float64)
    log_prior = np.log(np.asarray(prior, dtype=np.float64))
    eta = np.zeros(A.shape[0])

    def state(eta):
        log_weights = log_prior - eta @ A
        log_partition = logsumexp(log_weights)
        if method == "sm":
            p = np.exp(log_weights - log_partition)
        else:
            p = np.exp(log_weights)
        return p, -eta @ h - log_partition

    p, dual = state(eta)
    history = [dual]
    converged = False
    n_iter = 0
    while True:
        expected = A @ p
        if np.max(np.abs(expected - h)) <= moment_tol:
            converged = True
            break
        if n_iter == max_iter:
            break
        eta = eta - np.log(h / expected)
        p, dual = state(eta)
        history.append(dual)
        n_iter += 1
    return LogLinearResult(p, eta, n_iter, np.asarray(history), converged)
