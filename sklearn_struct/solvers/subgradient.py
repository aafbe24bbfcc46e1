"""Proximal subgradient method for the L1-regularised structured hinge loss.

Solves problem P1 of Zhu, Xing & Zhang, "Primal sparse max-margin Markov
networks" (KDD 2009), in the package's convention (``C`` on the losses, unit
weight on the L1 norm)::

    minimize_w  F(w) = ||w||_1 + C sum_i H_i(w),
    H_i(w) = max_y [loss(y_i, y) - w . (f(x_i, y_i) - f(x_i, y))]

(and ``w_j >= 0`` on the weights the structure needs non-negative, e.g.
min-cut edge weights).  The paper's Algorithm 2 solves the constrained form
P1' (``||w||_1 <= lambda``) by projected subgradient steps; the radius that
matches a given ``C`` is ``||w*_C||_1``, unknown before the fit, so here the
penalised form itself is solved: a subgradient step on the hinge part, then
the proximal step of the L1 norm (soft thresholding, :mod:`.l1_projection`),
which produces exact zeros as the ball projection does::

    w <- prox_{eta_t ||.||_1}(w - eta_t C g_t),   g_t = sum_i f(x_i, y*_i) - f(x_i, y_i)

with ``y*_i`` the loss-augmented prediction.  Step sizes follow "distance over
gradients" (DoG, Ivgi, Hinder & Carmon, ICML 2023): ``eta_t = eta0 r_t /
sqrt(sum_{s<=t} ||C g_s||^2)`` with ``r_t`` the largest distance travelled from
the start, so the step follows the scale of the weights and needs no tuning
across feature scales and values of ``C``.

Certificate.  Every distribution ``alpha_i`` over the outputs of example ``i``
gives ``H_i(w) >= E_alpha_i[loss] + w . E_alpha_i[f - f(x_i, y_i)]`` (a
convex combination of the terms of the max), and ``H_i >= 0``.  Summed: ``R(w)
= sum_i H_i(w) >= L + w . G`` for the pair ``(L, G)`` of total expected loss and
expected feature difference, so for ``s`` in ``[0, 1]``::

    F(w) >= s C L + sum_j (|w_j| + s C G_j w_j) >= s C L   when  s C nu(G) <= 1,

with ``nu(G) = max_j |G_j|`` (``max(-G_j, 0)`` on non-negative weights), the
dual norm: :func:`l1_hinge_lower_bound`.  (This is LP duality for P1: ``(C
alpha)`` is dual feasible after the scaling ``s``.)  The most violated outputs
at every iterate give such pairs, and so do their weighted averages (weights
``eta_t``), which converge to a dual optimum; the solver keeps the best bound
and the best iterate and stops on a certified relative duality gap ``tol``.
"""

from collections import deque
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog

from ..structures._base import require_kernel
from ..structures._kernel import specialize
from . import _subgradient_kernels
from .l1_projection import clip_nonnegative, prox_l1
from .loss import L1

__all__ = ["L1Result", "SubgradientResult", "aggregated_lower_bound", "l1_hinge_lower_bound",
           "l1_proximal_subgradient", "sparsest_certified"]

#: Relative rounding allowance of a lower bound computed as a difference of large terms.
ROUNDING = 1e-12
#: Relative cuts tried by :func:`sparsest_certified` (fractions of ``||w||_1``).
SPARSITY_CUTS = (1e-4, 1e-3, 1e-2, 3e-2, 1e-1)
#: Dual points (most violated outputs of recent iterations) kept for the aggregated
#: bound, and how often (iterations) that bound's LP is solved.
AGGREGATED_POINTS = 100
AGGREGATED_EVERY = 25
#: Kernel operations of the online (per-example) subgradient epoch.
ONLINE_KERNEL_OPERATIONS = ("part_scores", "add_features", "argmax", "encode")


def l1_hinge_lower_bound(C, expected_loss, G, nonnegative, upper=np.inf):
    """Certified lower bound on ``min_w ||w||_1 + C sum_i H_i(w)`` from one dual point.

    Parameters
    ----------
    C : float
    expected_loss, G : float and ndarray of shape (n_weights,)
        A pair from :meth:`~.loss.StructuredLoss.dual_pair` (``sum_i H_i(w) >= L + w . G``).
    nonnegative : ndarray of bool of shape (n_weights,)
    upper : float
        A known bound on ``||w*||_1`` (any objective value, e.g. the best
        found); used when ``C nu(G) > 1``.

    Returns
    -------
    bound : float
        ``max_{s in [0, 1]}`` of ``s C L`` (valid when ``s C nu <= 1``) and of
        ``s C L - (s C nu - 1) upper`` (valid when ``||w*||_1 <= upper``); see the
        module docstring.
    """
    nu = L1.dual_norm(G, nonnegative)
    scaled = C * expected_loss * min(1.0, 1.0 / (C * nu)) if C * nu > 0 else C * expected_loss
    full = -np.inf
    if C * nu > 1.0 and np.isfinite(upper):
        # a difference of two large terms: less their rounding error, so that a huge C
        # cannot turn rounding into a bound above the optimum
        big = C * expected_loss + C * nu * upper
        full = C * expected_loss - (C * nu - 1.0) * upper - ROUNDING * big
    return max(0.0, scaled, full)


def aggregated_lower_bound(C, expected_losses, Gs, nonnegative):
    """The best bound of :func:`l1_hinge_lower_bound` over combinations of dual points.

    A non-negative combination ``sum_t lambda_t (L_t, G_t)`` with ``sum_t lambda_t
    <= 1`` mixes the distributions behind the pairs (and scales them down), so
    ``C sum_t lambda_t L_t`` is a lower bound whenever ``C nu(sum_t lambda_t G_t)
    <= 1``; the best combination is a small LP (one variable per pair), solved
    by HiGHS.  It certifies what no single pair does when each pair violates
    the dual constraint on a few coordinates.

    Parameters
    ----------
    C : float
    expected_losses : sequence of float of length T
    Gs : sequence of ndarray of shape (n_weights,), length T
    nonnegative : ndarray of bool of shape (n_weights,)

    Returns
    -------
    bound : float
    """
    G = np.asarray(Gs, dtype=np.float64).T * C  # (n_weights, T)
    free = ~np.asarray(nonnegative, dtype=bool)
    A_ub = np.vstack([G[free], -G, np.ones((1, G.shape[1]))])
    b_ub = np.ones(A_ub.shape[0])
    result = linprog(-C * np.asarray(expected_losses, dtype=np.float64), A_ub=A_ub, b_ub=b_ub,
                     bounds=(0, None), method="highs")
    if result.status != 0:
        return 0.0
    # re-derive the bound from the normalised combination (valid whatever HiGHS's
    # tolerances; the scaling s of l1_hinge_lower_bound replaces the LP's total weight)
    weights = np.maximum(result.x, 0.0)  # HiGHS may leave a weight below 0 by its tolerance
    if not weights.sum() > 0.0:
        return 0.0
    weights = weights / weights.sum()
    return l1_hinge_lower_bound(C, float(weights @ np.asarray(expected_losses, dtype=np.float64)),
                                G @ weights / C, nonnegative)


def sparsest_certified(hinge, C, coef, objective, lower_bound, tol):
    """The sparsest of ``coef`` with its small weights cut that stays certified.

    Weights below ``cut * ||coef||_1`` are set to zero for a few growing cuts;
    the sparsest candidate whose objective is still within the relative gap
    ``tol`` of ``lower_bound`` is returned with its objective (``coef`` itself
    when none is).  Iterative solvers approach zeros of the optimum without
    reaching them (EM's discarded variances fade geometrically, subgradient
    iterates oscillate around 0); this makes the zeros exact at no cost to the
    certificate.
    """
    scale = np.abs(coef).sum()
    for cut in SPARSITY_CUTS[::-1]:
        candidate = np.where(np.abs(coef) < cut * scale, 0.0, coef)
        if np.count_nonzero(candidate) == np.count_nonzero(coef):
            continue
        value = np.abs(candidate).sum() + C * hinge.evaluate(candidate)[0].sum()
        if value - lower_bound <= tol * value:
            return candidate, value
    return coef, objective


@dataclass
class L1Result:
    """Outcome of a solver of P1, ``min ||w||_1 + C sum_i H_i(w)``.

    Attributes
    ----------
    coef : ndarray of shape (n_weights,)
        The solution returned.
    objective : float
        ``||coef||_1 + C sum_i H_i(coef)``, the P1 objective.
    lower_bound : float
        Certified lower bound on the optimum of P1.
    n_iter : int
        Passes over the training data.
    converged : bool
        Whether the relative gap reached ``tol``.
    history : dict of lists
        Per iteration, as the solver states.
    """

    coef: np.ndarray
    objective: float
    lower_bound: float
    n_iter: int
    converged: bool
    history: dict


@dataclass
class SubgradientResult(L1Result):
    """Outcome of :func:`l1_proximal_subgradient` (an :class:`L1Result`).

    ``coef`` is the best iterate found (lowest objective), with exact zeros from the
    prox; ``n_iter`` counts iterations (batch) or epochs (online); ``history`` holds per
    iteration or epoch ``objective`` (at the evaluated point), ``best_objective``,
    ``lower_bound`` and ``n_nonzero``.
    """


def check_C(C):
    """The weight of the summed hinge losses must be positive."""
    if not C > 0:
        raise ValueError(f"C must be > 0, got {C}.")


def certified_stop(hinge, C, coef, objective, lower_bound, tol):
    """``(converged, coef, objective)``: whether ``objective`` is within the relative gap
    ``tol`` of ``lower_bound``, and then the sparsest certified form of ``coef``
    (:func:`sparsest_certified`), else ``coef`` itself."""
    if not objective - lower_bound <= tol * objective:
        return False, coef, objective
    return (True, *sparsest_certified(hinge, C, coef, objective, lower_bound, tol))


def l1_proximal_subgradient(
    hinge,
    C,
    *,
    max_iter=1000,
    tol=1e-3,
    eta0=1.0,
    online=False,
    coef_init=None,
    random_state=None,
    verbose=0,
):
    """Proximal subgradient method for P1, ``min ||w||_1 + C sum_i H_i(w)``.

    Parameters
    ----------
    hinge : StructuredLoss
        The data set (weights in ``hinge.nonnegative`` stay non-negative).
    C : float
        Weight of the summed hinge losses (``> 0``).
    max_iter : int
        Most passes over the training data: steps of the batch method, or
        epochs of the online one (one proximal step per example, in a random
        order).
    tol : float
        Stop when ``best objective - lower bound <= tol * best objective``.
    eta0 : float
        Multiplier of the step size (see module docstring).
    online : bool
        Per-example steps (stochastic subgradient) instead of full-batch steps.
        The certificate is then evaluated on the full batch once per epoch.
    coef_init : ndarray of shape (n_weights,), optional
        Starting point (clipped at 0 on ``hinge.nonnegative``); zeros by default.
    random_state : numpy.random.RandomState, optional
        Order of the examples in the online variant.
    verbose : int
        Print progress every iteration/epoch when > 0.

    Returns
    -------
    result : SubgradientResult
    """
    check_C(C)
    structure = hinge.structure
    if online:
        require_kernel(structure, ONLINE_KERNEL_OPERATIONS, "the online subgradient method",
                       "; use online=False")
    nonnegative = hinge.nonnegative
    w = (np.zeros(hinge.n_weights) if coef_init is None
         else clip_nonnegative(np.asarray(coef_init, dtype=np.float64), nonnegative))
    start = w.copy()
    rng = np.random.RandomState(0) if random_state is None else random_state
    history = {"objective": [], "best_objective": [], "lower_bound": [], "n_nonzero": []}
    best_w, best_objective = w.copy(), np.inf
    lower_bound = 0.0
    squared_norms = 0.0  # sum of ||C g_s||^2
    distance = None  # largest ||w - start|| so far, from a first guess (below)
    weight_sum, weighted_loss, weighted_G = 0.0, 0.0, np.zeros_like(w)
    recent_losses = deque(maxlen=AGGREGATED_POINTS)
    recent_Gs = deque(maxlen=AGGREGATED_POINTS)
    converged = False
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        losses, subgradient, violated = hinge.evaluate(w)
        total = losses.sum()
        objective = np.abs(w).sum() + C * total
        if objective < best_objective:
            best_objective, best_w = objective, w.copy()
        g_norm2 = C * C * float(subgradient @ subgradient)
        if distance is None:
            # first step's scale, in units of w: the hinge's zero along the subgradient
            distance = 1e-2 * (total / np.sqrt(g_norm2 / (C * C)) if g_norm2 > 0 else 1.0)
            distance = max(distance, 1e-2 * np.abs(w).sum())
        # the most violated outputs at w, alone and averaged: dual points (module docstring)
        expected_loss = hinge.expected_loss(violated)
        step_weight = distance / np.sqrt(squared_norms + g_norm2) if g_norm2 > 0 else 1.0
        weight_sum += step_weight
        weighted_loss += step_weight * expected_loss
        weighted_G += step_weight * subgradient
        lower_bound = max(
            lower_bound,
            l1_hinge_lower_bound(C, expected_loss, subgradient, nonnegative, best_objective),
            l1_hinge_lower_bound(C, weighted_loss / weight_sum, weighted_G / weight_sum,
                                 nonnegative, best_objective),
        )
        recent_losses.append(expected_loss)
        recent_Gs.append(subgradient)
        if (n_iter % AGGREGATED_EVERY == 0 or n_iter == max_iter) and (
                best_objective - lower_bound > tol * best_objective):
            lower_bound = max(lower_bound, aggregated_lower_bound(
                C, list(recent_losses) + [weighted_loss / weight_sum],
                list(recent_Gs) + [weighted_G / weight_sum], nonnegative))
        history["objective"].append(objective)
        history["best_objective"].append(best_objective)
        history["lower_bound"].append(lower_bound)
        history["n_nonzero"].append(int(np.count_nonzero(w)))
        if verbose:
            print(
                f"[L1 subgradient] {'epoch' if online else 'iter'} {n_iter}: F={objective:.6g} "
                f"best={best_objective:.6g} lower={lower_bound:.6g} nnz={history['n_nonzero'][-1]}"
            )
        converged, best_w, best_objective = certified_stop(hinge, C, best_w, best_objective,
                                                           lower_bound, tol)
        if converged or n_iter == max_iter:
            break
        if online:
            w, squared_norms, distance = _online_epoch(hinge, w, start, C, eta0, distance,
                                                       squared_norms, rng)
        else:
            squared_norms += g_norm2
            step = eta0 * distance / np.sqrt(squared_norms) if squared_norms > 0 else distance
            w = prox_l1(w - step * C * subgradient, step, nonnegative)
            distance = max(distance, float(np.linalg.norm(w - start)))
    return SubgradientResult(best_w, best_objective, lower_bound, n_iter, converged, history)


def _online_epoch(hinge, w, start, C, eta0, distance, squared_norms, rng):
    """One pass of per-example proximal steps in a random order, inside numba."""
    structure, batch = hinge.structure, hinge.batch
    epoch = specialize(_subgradient_kernels.online_epoch, structure.kernel_ops)
    w_kernel = structure.kernel_weights(batch, w)
    start_kernel = structure.kernel_weights(batch, start)
    nonnegative = structure.kernel_weights(batch, hinge.nonnegative.astype(np.float64)) > 0.0
    squared_norms, distance = epoch(
        rng.permutation(hinge.n_samples).astype(np.int64), structure.kernel_data(batch),
        batch.part_offsets, batch.unit_offsets, hinge.truth, hinge.part_losses, w_kernel,
        start_kernel, nonnegative, float(C * hinge.n_samples), float(eta0), float(distance),
        float(squared_norms))
    return structure.contract_weights(batch, w_kernel), squared_norms, distance
