"""Cutting-plane method for the L1-norm max-margin Markov network (problem P1).

Zhu, Xing & Zhang, "Primal sparse max-margin Markov networks" (KDD 2009),
Algorithm 1, for::

    P1:  minimize_{w, xi}  ||w||_1 + C sum_i xi_i
         subject to  w . df_i(y) >= loss(y_i, y) - xi_i,   xi_i >= 0,   all i, y

with ``df_i(y) = f(x_i, y_i) - f(x_i, y)``.  (The paper writes ``1/2 ||w||_1``;
our ``C`` is twice the paper's.)  Each example keeps a working set of outputs;
an output enters when its margin violation ``H_i(y; w) = loss(y_i, y) - w .
df_i(y)`` exceeds ``xi_i = max(0, max_{y in S_i} H_i(y; w))`` by more than
``epsilon``.  The LP of P1 restricted to the working sets, with ``w = mu - nu``
and ``mu, nu >= 0`` so that ``||w||_1 = sum(mu + nu)`` at the optimum, is solved
by HiGHS (:func:`scipy.optimize.linprog`).  Weights the structure needs
non-negative (``hinge.nonnegative``: the edge weights of a min-cut model) get
``nu_j = 0`` through the variable bounds.

One difference from the paper's listing: the most violated outputs of *all*
examples are found with the current ``w`` and added together before the LP is
re-solved (one LP per pass instead of one per added constraint).  The stopping
rule is unchanged -- no example violated by more than ``epsilon`` -- so on
termination ``||w||_1 + C sum_i H_i(w) <= LP optimum + C N epsilon``, while the
LP optimum is a lower bound on the optimum of P1: the solver reports both.
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from .l1_projection import clip_nonnegative
from .subgradient import L1Result

__all__ = ["CuttingPlaneResult", "LPSolverError", "l1_cutting_plane", "solve_l1_margin_lp"]


class LPSolverError(RuntimeError):
    """HiGHS did not return an optimal solution of a restricted LP."""


@dataclass
class CuttingPlaneResult(L1Result):
    """Outcome of :func:`l1_cutting_plane` (an :class:`~.subgradient.L1Result`).

    ``coef`` is the solution of the last restricted LP (exact zeros at non-basic
    weights), ``objective`` its P1 objective (an upper bound) and ``lower_bound`` the
    optimum of that LP; ``n_iter`` counts the passes over the data (rounds of separation
    and LP solve); ``converged`` says that a pass added no constraint, with the relative
    gap within ``tol``; ``history`` holds per pass ``objective``, ``lower_bound``,
    ``n_constraints``, ``max_violation`` (largest ``H_i(y*) - xi_i``) and ``n_nonzero``.

    Attributes
    ----------
    n_constraints : int
        Size of the final working set.
    """

    n_constraints: int


def solve_l1_margin_lp(rows, losses, owners, n_samples, *, C, nonnegative=None):
    """Solve the L1 margin LP P1, ``min ||w||_1 + C sum xi``, over explicit constraints.

    Constraint ``c`` reads ``w . rows[c] >= losses[c] - xi[owners[c]]``.

    Parameters
    ----------
    rows : sparse matrix of shape (n_constraints, n_weights)
        Feature differences ``df_i(y)``.
    losses : ndarray of shape (n_constraints,)
    owners : ndarray of int of shape (n_constraints,)
        Example index of each constraint.
    n_samples : int
    C : float
    nonnegative : ndarray of bool of shape (n_weights,), optional
        Weights constrained to be ``>= 0`` (``nu_j = 0``).

    Returns
    -------
    w : ndarray of shape (n_weights,)
    xi : ndarray of shape (n_samples,)
    value : float
        Optimal value of the LP.
    """
    rows = sp.csr_matrix(rows)
    n_constraints, n_weights = rows.shape
    slack_columns = sp.csr_matrix(
        (-np.ones(n_constraints), (np.arange(n_constraints), owners)),
        shape=(n_constraints, n_samples),
    )
    # Variables [mu, nu, xi] >= 0;  -df.mu + df.nu - xi_i <= -loss.
    A_ub = sp.hstack([-rows, rows, slack_columns], format="csr")
    b_ub = -np.asarray(losses, dtype=np.float64)
    cost = np.concatenate([np.ones(2 * n_weights), np.full(n_samples, float(C))])
    bounds = np.zeros((cost.size, 2))
    bounds[:, 1] = np.inf
    if nonnegative is not None:
        nonnegative = np.asarray(nonnegative, dtype=bool)
        bounds[n_weights:2 * n_weights][nonnegative, 1] = 0.0
    result = linprog(cost, A_ub=A_ub, b_ub=b_ub, bounds=bounds, method="highs")
    if result.status != 0 or result.x is None:
        raise LPSolverError(
            f"HiGHS did not solve the restricted L1-M3N LP ({n_constraints} constraints, "
            f"{cost.size} variables): status {result.status}, {result.message!r}. This LP is "
            "always feasible and bounded, so the features or losses are probably badly scaled "
            "or non-finite."
        )
    x = result.x
    w = x[:n_weights] - x[n_weights:2 * n_weights]
    # HiGHS may leave basic variables below their bound by its feasibility tolerance
    w = clip_nonnegative(w, nonnegative)
    # Non-basic weights are exactly zero; clean the rounding noise of basic ones.
    w[np.abs(w) <= 1e-12 * max(1.0, np.abs(w).max(initial=0.0))] = 0.0
    return w, x[2 * n_weights:], float(result.fun)


def l1_cutting_plane(hinge, C, *, epsilon=1e-3, tol=1e-3, max_iter=200, coef_init=None,
                     verbose=0):
    """Cutting-plane training (Algorithm 1) of the L1 max-margin Markov network P1.

    Parameters
    ----------
    hinge : StructuredLoss
        Data set, structure and loss-augmented inference; the weights in
        ``hinge.nonnegative`` are kept non-negative.
    C : float
        Weight of the summed hinge losses (P1, scikit-learn convention).
    epsilon : float
        Precision: an output enters the working set when it violates its
        margin by more than ``epsilon`` beyond the current slack.
    tol : float
        Convergence also needs the relative gap between the objective and the
        LP's lower bound to be ``<= tol`` when no output is left to add: at
        very large ``C`` times feature scale the objective is not resolved in
        double precision (``C`` multiplies the rounding of the hinge losses)
        and the gap stays open -- reported, not hidden.
    max_iter : int
        Maximum number of passes (each followed by one LP solve).
    coef_init : ndarray of shape (n_weights,), optional
        Weights used to find the first violated outputs (warm start; clipped
        at 0 on ``hinge.nonnegative``).
    verbose : int

    Returns
    -------
    result : CuttingPlaneResult

    Raises
    ------
    LPSolverError
        When HiGHS does not return an optimal solution.
    """
    n, n_weights = hinge.n_samples, hinge.n_weights
    nonnegative = hinge.nonnegative
    w = np.zeros(n_weights) if coef_init is None else np.asarray(coef_init, dtype=np.float64)
    w = clip_nonnegative(w, nonnegative)
    rows, losses, owners = [], [], []
    seen = [set() for _ in range(n)]  # working sets, as part encodings
    history = {
        "objective": [], "lower_bound": [], "n_constraints": [], "max_violation": [],
        "n_nonzero": [],
    }
    lower_bound, converged, n_iter = 0.0, False, 0
    constraint_matrix = sp.csr_matrix((0, n_weights))
    for n_iter in range(1, max_iter + 1):
        h, _, violated_parts = hinge.evaluate(w)
        objective = np.abs(w).sum() + C * h.sum()
        # xi_i over the working set at the current w (Algorithm 1, line 5).
        xi = np.zeros(n)
        if losses:
            margins = np.asarray(losses) - constraint_matrix @ w
            np.maximum.at(xi, np.asarray(owners), margins)
        violation = h - xi
        history["max_violation"].append(float(violation.max()))
        if n_iter > 1:
            history["objective"].append(objective)
            history["lower_bound"].append(lower_bound)
            history["n_constraints"].append(len(losses))
            history["n_nonzero"].append(int(np.count_nonzero(w)))
        added = 0
        for i in np.flatnonzero(violation > epsilon):
            parts = hinge.example_slice(i)
            z_star = violated_parts[parts]
            key = z_star.tobytes()
            if key in seen[i]:
                continue  # already in S_i: its violation is below xi_i up to LP tolerance
            seen[i].add(key)
            rows.append(sp.csr_matrix(hinge.example_features(i, hinge.truth[parts] - z_star)))
            losses.append(float(z_star @ hinge.part_losses[parts] + hinge.loss_offsets[i]))
            owners.append(i)
            added += 1
        if verbose:
            print(
                f"[L1 cutting plane] pass {n_iter}: P1={objective:.6g} LP={lower_bound:.6g} "
                f"added={added} constraints={len(losses)} nnz={np.count_nonzero(w)}"
            )
        if added == 0:
            converged = objective - lower_bound <= tol * objective
            break
        if n_iter == max_iter:
            break
        constraint_matrix = sp.vstack(rows, format="csr")
        w, _, lower_bound = solve_l1_margin_lp(
            constraint_matrix, np.asarray(losses), np.asarray(owners), n, C=C,
            nonnegative=nonnegative,
        )
    return CuttingPlaneResult(w, objective, lower_bound, n_iter, converged, history,
                              n_constraints=len(losses))
