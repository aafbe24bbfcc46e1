"""EM-style training of the L1 max-margin Markov network through an adaptive M3N.

Zhu, Xing & Zhang, "Primal sparse max-margin Markov networks" (KDD 2009),
section 4.3 and Algorithm 3, driven by the ``C`` of problem P1::

    P1:  minimize_w  F(w) = ||w||_1 + C sum_i H_i(w)

(``H_i`` the structured hinge loss).  The paper's adaptive M3N (P2) gives
every weight its own L2 penalty ``1 / tau_k`` under a budget ``1/K sum_k tau_k
= 1 / lambda``; eliminating ``tau`` leaves the squared-L1 problem P4, ``(lambda /
K) ||w||_1^2 + C' sum_i H_i(w)``, whose solutions are those of P1 with ``C = C' K
/ (2 lambda ||w*||_1)`` -- a data-dependent map.  Here the budget is replaced by
its Lagrangian term, which makes the variances solve P1 at the given ``C``
exactly (``|w_k| = min_{tau_k > 0} (w_k^2 / tau_k + tau_k) / 2``)::

    P2':  minimize_{w, tau > 0}  1/2 sum_k (w_k^2 / tau_k + tau_k) + C sum_i H_i(w),

jointly convex in ``(w, tau)`` (a perspective function), with ``min_tau P2' =
F(w)``.  Alternating exact minimisation is the paper's EM:

* **M3N step** -- with ``beta_k = sqrt(tau_k)`` and ``w = beta * gamma``,
  minimise ``1/2 ||gamma||^2 + C sum_i H_i(beta * gamma)``: an ordinary M3N on
  features rescaled by ``beta`` (problem (5)), solved by max-margin
  exponentiated gradient (:func:`sklearn_struct.solvers.eg.eg_solve`,
  ``loss="hinge"``, ``feature_scale=beta``), from the uniform dual point with
  EG's annealing of ``C``.  (The paper warm-starts each step from the
  previous dual variables; measured on small problems, warm-started steps
  stall once the variances spread over orders of magnitude -- the objective
  stays fixed to 5 digits for 15 EM iterations -- while annealed cold starts
  reach the inner tolerance.)
* **scaling step** -- the closed form ``tau_k = |w_k|`` (the paper's eq. (6),
  ``lambda tau_k = K |w_k| / ||w||_1``, with the budget's multiplier
  ``lambda = K / (2 ||w||_1)`` that makes P4's stationarity that of P1).

A weight with ``tau_k`` below ``tau_threshold`` times ``sum_j tau_j`` leaves the
model (its feature is scaled to zero, so its weight is exactly zero).  The
paper sets "tau (or beta) to be zero if it is less than 1e-4" in P2's
normalisation (``mean tau = 1 / lambda``); in relative terms that is
``tau_k / sum_j tau_j < 1e-4 lambda / K``, about ``1e-3`` at its ``lambda``
(thousands) and ``K`` (hundreds), the default here.  Without it the discarded
weights only fade geometrically.

Convergence is certified, never assumed.  The EG dual distributions of the
M3N step give a lower bound on the optimum of P1
(:func:`~sklearn_struct.solvers.subgradient.l1_hinge_lower_bound`: at the EM
fixed point they are dual optimal for P1), and the solver stops when the
relative gap between the best objective and that bound is ``<= tol``.  A weight
removed by the threshold comes back (with the mean variance of the others)
when the dual point says it should be non-zero (``C |G_k| > 1``).  An M3N step
that collapses to ``w = 0`` is not taken for the optimum: ``w = 0`` is accepted
only when the certificate proves it.
"""

from dataclasses import dataclass

import numpy as np

from .eg import eg_solve
from .subgradient import (L1Result, aggregated_lower_bound, certified_stop, check_C,
                          l1_hinge_lower_bound)

__all__ = ["AdaptiveM3NResult", "adaptive_m3n", "initial_variance"]


@dataclass
class AdaptiveM3NResult(L1Result):
    """Outcome of :func:`adaptive_m3n` (an :class:`~.subgradient.L1Result`).

    ``coef`` is the best iterate ``w = beta * gamma`` (lowest P1 objective), with exact
    zeros for the weights whose variance fell below the threshold; ``n_iter`` counts the
    passes over the training data (rounded up), as ``max_iter`` counts them (the EM
    iterations are ``len(history["objective"])``); ``history`` holds per EM iteration
    ``objective`` (P1), ``lower_bound``, ``n_nonzero``, ``eg_passes``, ``eg_gap``
    (relative duality gap of the M3N step) and ``eg_converged``.

    Attributes
    ----------
    tau : ndarray of shape (n_weights,)
        Variances for the next M3N step (``tau_k = |w_k|``, 0 where removed).
    """

    tau: np.ndarray


def initial_variance(hinge, C):
    """Scale of the starting variances: ``||w*||_1 / K`` guessed from ``w = 0``.

    ``||w*||_1 <= F(0) = C sum_i H_i(0)``, and the hinge at 0 is used up by a
    step of length ``sum_i H_i(0) / ||g_0||_inf`` along the best coordinate of
    its subgradient ``g_0``; the smaller of the two, in units of the weights,
    makes the first M3N step as well scaled as the later ones at any feature
    scale and ``C``.
    """
    losses, g0, _ = hinge.evaluate(np.zeros(hinge.n_weights))
    total, norm = losses.sum(), np.abs(g0).max(initial=0.0)
    if total <= 0.0 or norm <= 0.0:
        return 1.0
    return min(C * total, total / norm) / hinge.n_weights


def adaptive_m3n(
    hinge,
    C,
    *,
    max_iter=12000,
    max_em_iter=None,
    tol=1e-3,
    inner_max_iter=200,
    inner_tol=1e-3,
    tau_threshold=1e-3,
    tau_init=None,
    random_state=None,
    n_jobs=None,
    verbose=0,
):
    """EM algorithm (Algorithm 3) for the L1-M3N P1 through the adaptive M3N P2'.

    Parameters
    ----------
    hinge : StructuredLoss
        Data set, structure and loss-augmented inference (the structure must
        also support ``marginals`` for the EG M3N steps).
    C : float
        Weight of the summed hinge losses (``> 0``).
    max_iter : int
        Most passes over the training data: the effective passes of the EG M3N
        steps, plus one loss-augmented pass per EM iteration and one at ``w = 0``.
    max_em_iter : int or None
        Most EM iterations (the paper runs 15; certifying the optimum at large
        ``C`` takes up to about 50); None: as many as ``max_iter`` allows.
    tol : float
        Stop when the certified relative duality gap of P1 is ``<= tol``.
    inner_max_iter, inner_tol : float
        Passes and relative duality-gap tolerance of each EG M3N step.
    tau_threshold : float
        Weights with ``tau_k < tau_threshold * sum_j tau_j`` are removed
        (``beta_k = 0``).  ``0`` keeps every weight.
    tau_init : ndarray of shape (n_weights,), optional
        Starting variances (warm start); :func:`initial_variance` everywhere by default.
    random_state : numpy.random.RandomState, optional
        Visiting order of the online EG steps.
    n_jobs : int, optional
        joblib workers of the EG evaluations.
    verbose : int

    Returns
    -------
    result : AdaptiveM3NResult
    """
    check_C(C)
    structure, batch, Y = hinge.structure, hinge.batch, hinge.Y
    structure.check_supports("marginals", needed_by="the EM (adaptive M3N) solver")
    n_weights, nonnegative = hinge.n_weights, hinge.nonnegative
    rng = np.random.RandomState(0) if random_state is None else random_state
    history = {"objective": [], "lower_bound": [], "n_nonzero": [], "eg_passes": [],
               "eg_gap": [], "eg_converged": []}
    # w = 0 first: optimal when its subgradient certifies it (C nu(g_0) <= 1)
    zero = np.zeros(n_weights)
    losses, subgradient, violated = hinge.evaluate(zero)
    best_coef, best_objective = zero, C * losses.sum()
    dual_losses, dual_Gs = [hinge.expected_loss(violated)], [subgradient]
    lower_bound = l1_hinge_lower_bound(C, dual_losses[0], subgradient, nonnegative,
                                       best_objective)
    if best_objective - lower_bound <= tol * best_objective:
        return AdaptiveM3NResult(zero, best_objective, lower_bound, 1, True, history,
                                 tau=zero.copy())
    if tau_init is None or not np.any(np.asarray(tau_init) > 0):
        tau = np.full(n_weights, initial_variance(hinge, C))
    else:
        tau = np.array(tau_init, dtype=np.float64)
    converged, passes = False, 1.0  # the pass at w = 0
    n_em_iter = 0
    while passes + 1.0 < max_iter and (max_em_iter is None or n_em_iter < max_em_iter):
        n_em_iter += 1
        beta = np.sqrt(tau)
        eg = eg_solve(
            structure, batch, Y, loss="hinge", C=C, feature_scale=beta, tol=inner_tol,
            max_iter=int(min(inner_max_iter, max(1.0, max_iter - passes - 1.0))),
            annealing=True, order="random", random_state=rng, n_jobs=n_jobs,
        )
        passes += 1.0 + _eg_passes(eg)
        w = np.where(beta > 0.0, beta * eg.state.w, 0.0)
        losses, subgradient, violated = hinge.evaluate(w)
        objective = np.abs(w).sum() + C * losses.sum()
        improved = objective < best_objective
        if improved:
            best_objective, best_coef = objective, w
        # dual points: EG's distributions, and the most violated outputs at w
        expected_loss, G = hinge.dual_pair(eg.state.mu)
        dual_losses += [expected_loss, hinge.expected_loss(violated)]
        dual_Gs += [G, subgradient]
        lower_bound = max(
            lower_bound,
            l1_hinge_lower_bound(C, expected_loss, G, nonnegative, best_objective),
            l1_hinge_lower_bound(C, dual_losses[-1], subgradient, nonnegative, best_objective),
        )
        if best_objective - lower_bound > tol * best_objective:
            lower_bound = max(lower_bound,
                              aggregated_lower_bound(C, dual_losses, dual_Gs, nonnegative))
        _record(history, objective, lower_bound, w, eg)
        if verbose:
            print(
                f"[L1 EM] iter {n_em_iter}: P1={objective:.6g} lower={lower_bound:.6g} "
                f"nnz={history['n_nonzero'][-1]} EG passes={history['eg_passes'][-1]:.1f} "
                f"EG rel.gap={history['eg_gap'][-1]:.2e}"
            )
        converged, best_coef, best_objective = certified_stop(hinge, C, best_coef,
                                                              best_objective, lower_bound, tol)
        if converged:
            break
        if eg.converged or improved:
            tau = _next_variances(w, G, C, tau_threshold, nonnegative, tau)
        # else: an unsolved M3N step that made no progress on P1 says nothing about the
        # variances (re-weighting from it diverged, measured); keep them and solve the
        # step again (EG visits the examples in a new random order)
    return AdaptiveM3NResult(best_coef, best_objective, lower_bound, int(np.ceil(passes)),
                             converged, history, tau=tau)


def _eg_passes(eg):
    """The effective passes an EG M3N step ran."""
    return float(eg.history["passes"][-1]) if len(eg.history["passes"]) else 0.0


def _record(history, objective, lower_bound, w, eg):
    """Append an EM iteration (at ``w``, after the EG M3N step ``eg``) to ``history``."""
    history["objective"].append(objective)
    history["lower_bound"].append(lower_bound)
    history["n_nonzero"].append(int(np.count_nonzero(w)))
    history["eg_passes"].append(_eg_passes(eg))
    history["eg_gap"].append(
        float(eg.history["gap"][-1] / max(abs(eg.history["primal"][-1]), 1e-300))
        if len(eg.history["gap"]) else 0.0)
    history["eg_converged"].append(bool(eg.converged))


def _next_variances(w, G, C, tau_threshold, nonnegative, previous):
    """Scaling step ``tau_k = |w_k|``, with the threshold and the re-admission rule."""
    tau = np.abs(w)
    total = tau.sum()
    tau[tau < tau_threshold * total] = 0.0
    # a removed weight whose dual constraint C |G_k| <= 1 fails must come back
    violated = (tau == 0.0) & (C * np.where(nonnegative, -G, np.abs(G)) > 1.0)
    active = tau > 0.0
    tau[violated] = tau[active].mean() if active.any() else max(total / w.shape[0], 0.0)
    if not np.any(tau > 0.0):
        # w = 0 without a certificate: the L2 penalties 1 / tau were too strong
        tau = 10.0 * np.full(w.shape[0], previous.max())
    return tau
