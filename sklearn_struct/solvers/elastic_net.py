"""CRFsuite's objective, the log loss with an elastic net, by OWL-QN with a certified gap.

Minimises ``P(w) = sum_i s_i (log Z_i(w) - w . phi(x_i, y_i)) + c1 ||w||_1 + c2 ||w||^2``:
the negative log-likelihood with CRFsuite's penalties in its scaling (``c2`` multiplies the
squared norm itself).  The method is the orthant-wise limited-memory quasi-Newton method of
Andrew and Gao (2007), which CRFsuite's L-BFGS trainer runs when ``c1 > 0``: L-BFGS
directions from the smooth part's curvature, taken along the pseudo-gradient of ``P``,
kept in the orthant of the current point (or of the pseudo-gradient's descent where a
weight is 0), and a backtracking line search that projects each trial point back onto
that orthant, so that weights reach exactly 0.

The certificate (for ``c2 > 0``).  ``s_i log Z_i(w) = max_mu s_i (w . F_i mu_i + H(mu_i))``
over the marginals, so for any marginals ``mu`` and any ``w'``,
``P(w') >= D(mu) = sum_i s_i H(mu_i) - h*(sum_i s_i (phi_i - F_i mu_i))`` with
``h(w) = c1 ||w||_1 + c2 ||w||^2`` and ``h*(u) = sum_j max(|u_j| - c1, 0)^2 / (4 c2)``.  At
the marginals of the current ``w`` every term of ``D`` comes from the evaluation that
gives the gradient (``sum_i s_i (phi_i - F_i mu_i)`` is minus the log loss's gradient), so
each iteration reports ``P(w) - D(mu(w)) >= P(w) - P(w*)`` at no extra inference; the
solver stops when it is at most ``tol`` times ``|P(w)|``.  The bound is loose until ``w``
is near the optimum (a coordinate's gradient error ``e`` costs ``e^2 / (4 c2)``), so the
solver also stops as CRFsuite does, when ``P`` fell by less than ``delta`` (relative)
over the last ``period`` iterations.  With ``c2 = 0``, ``h*`` is infinite off a box and
the gap is not certified: only ``delta`` and ``max_iter`` stop it.

A ``support`` restricts the problem to some weights, the others held at 0: CRFsuite's
model without ``feature.possible_states`` has a weight only for the (attribute, label)
pairs seen in training (and without ``feature.possible_transitions`` only for the label
pairs seen).  The gradient is kept on the support, so every iterate stays there, and the
certificate is that of the restricted problem (``h*`` over the support's coordinates).
"""

import time
from dataclasses import dataclass, field

import numpy as np
from threadpoolctl import threadpool_limits

from ._elastic_net_kernels import keep_descent, orthant_step, pseudo_gradient
from ._objective import segment_dots

__all__ = ["ElasticNetResult", "elastic_net_solve"]

#: Pairs of the L-BFGS memory (CRFsuite's default, ``num_memories``).
MEMORY = 6
#: CRFsuite's stopping rule: the relative decrease of the objective over this many
#: iterations (its ``period``) ...
PERIOD = 10
#: Armijo constant of the backtracking line search and the most halvings it tries.
ARMIJO = 1e-4
MAX_HALVINGS = 40


@dataclass
class ElasticNetResult:
    """What :func:`elastic_net_solve` found.

    Attributes
    ----------
    w : ndarray of shape (n_weights,)
    primal : float
        ``P(w)``.
    gap : float
        ``P(w) - D(mu(w))`` (``nan`` without a certificate, ``c2 = 0``).
    n_iter : int
        Iterations (one or more evaluations of the log loss each).
    converged : bool
        The relative gap reached ``tol``, or the objective stopped falling (``delta``).
    history : dict of lists
        Per iteration: ``primal``, ``gap``, ``nnz`` (non-zero weights), ``evaluations``
        (inference passes so far) and ``seconds`` (since the start).
    """

    w: np.ndarray
    primal: float
    gap: float
    n_iter: int
    converged: bool
    history: dict = field(default_factory=dict)


def _log_loss(loss, w):
    """``(sum_i s_i log Z_i, sum_i s_i loss_i, its gradient)`` at ``w``: one inference."""
    batch, structure = loss.batch, loss.structure
    scores = loss.scores(batch, w)
    mu, log_partition = structure.marginals(batch, scores)
    true_scores = segment_dots(loss.truth, scores, batch.part_offsets)
    del scores
    s = loss.sample_weight
    expected = loss.features(batch, mu, s)
    gradient = -loss.weights_from(expected, 1.0)  # expected - observed
    return float(s @ log_partition), float(s @ (log_partition - true_scores)), gradient, \
        expected


def _conjugate(u, c1, c2):
    """``h*(u)`` of ``h(w) = c1 ||w||_1 + c2 ||w||^2`` (``c2 > 0``)."""
    excess = np.maximum(np.abs(u) - c1, 0.0)
    return float(excess @ excess) / (4.0 * c2)


def _two_loop(q, pairs):
    """``H q`` for the L-BFGS inverse-Hessian estimate of the stored ``(s, y, 1/s.y)``."""
    q = q.copy()
    alphas = []
    for s, y, rho in reversed(pairs):
        alpha = rho * float(s @ q)
        q -= alpha * y
        alphas.append(alpha)
    if pairs:
        s, y, _ = pairs[-1]
        q *= float(s @ y) / float(y @ y)
    for (s, y, rho), alpha in zip(pairs, reversed(alphas)):
        q += (alpha - rho * float(y @ q)) * s
    return q


def elastic_net_solve(loss, c1, c2, tol=1e-4, delta=1e-5, max_iter=100, w0=None,
                      memory=MEMORY, callback=None, support=None, period=PERIOD):
    """Minimise CRFsuite's elastic-net log loss by OWL-QN (see the module docstring).

    The vector operations (dot products and updates over the weights) run on one BLAS
    thread: on threads they were up to 100 times slower on a busy 2-core machine.

    Parameters
    ----------
    loss : StructuredLoss
        A log loss (``kind="log"``); its sample weights are the ``s_i``.
    c1, c2 : float
        The L1 and L2 coefficients, ``>= 0``.
    tol : float, default=1e-4
        Stop once the certified gap is at most ``tol * |P(w)|`` (``c2 > 0``).
    delta : float or None, default=1e-5
        Also stop once ``P`` fell by less than ``delta * |P(w)|`` over the last
        ``PERIOD`` iterations (CRFsuite's rule and default); None: only on the gap.
    max_iter : int, default=100
        Most iterations.
    w0 : ndarray of shape (n_weights,), default=None
        Starting point (None: 0).
    memory : int, default=MEMORY
        Pairs kept by the L-BFGS estimate.
    callback : callable, default=None
        ``callback(iteration, w)`` after every iteration.
    support : ndarray of bool of shape (n_weights,), default=None
        The weights the problem has (see the module docstring); the others stay 0.
        None: every weight.
    period : int, default=PERIOD
        The iterations over which ``delta`` measures the decrease (CRFsuite's ``period``).

    Returns
    -------
    result : ElasticNetResult
    """
    if loss.kind != "log":
        raise ValueError(f"elastic_net_solve minimises the log loss, got a {loss.kind} loss.")
    with threadpool_limits(limits=1, user_api="blas"):
        return _owlqn(loss, float(c1), float(c2), tol, delta, max_iter, w0, memory, callback,
                      support, period)


def _owlqn(loss, c1, c2, tol, delta, max_iter, w0, memory, callback, support, period):
    """The iterations of :func:`elastic_net_solve`."""
    start = time.perf_counter()
    w = np.zeros(loss.n_weights) if w0 is None else np.array(w0, dtype=np.float64)
    off_support = None
    if support is not None:
        support = np.asarray(support, dtype=bool)
        if support.shape != w.shape:
            raise ValueError(f"support has shape {support.shape}, the weights {w.shape}.")
        off_support = ~support
        w[off_support] = 0.0
    history = {key: [] for key in ("primal", "gap", "nnz", "evaluations", "seconds")}
    evaluations = 0

    def evaluate(x):
        """The gradient of the smooth part ``loss + c2 ||x||^2``, ``P`` and the gap."""
        nonlocal evaluations
        evaluations += 1
        log_z, value, gradient, expected = _log_loss(loss, x)
        if off_support is not None:  # the restricted problem: no move off the support
            gradient[off_support] = 0.0
        primal = value + c2 * float(x @ x) + c1 * float(np.abs(x).sum())
        gap = np.nan
        if c2 > 0.0:
            dual = log_z - float(x @ expected) - _conjugate(gradient, c1, c2)
            gap = max(primal - dual, 0.0)
        gradient += 2.0 * c2 * x
        return gradient, primal, gap

    g, primal, gap = evaluate(w)
    pg = np.empty_like(w)
    pairs, iteration, converged = [], 0, gap <= tol * abs(primal)
    while not converged and iteration < max_iter:
        iteration += 1
        pseudo_gradient(w, g, c1, pg)
        direction = _two_loop(pg, pairs)
        direction *= -1.0
        if c1 > 0.0:
            keep_descent(direction, pg)  # coordinate by coordinate, as -pg descends
        if float(pg @ direction) >= 0.0:  # the estimate lost its way: start it again
            pairs, direction = [], -pg
        step = 1.0 if pairs else 1.0 / max(float(np.sqrt(pg @ pg)), 1e-12)
        trial = np.empty_like(w)
        for _ in range(MAX_HALVINGS):
            if c1 > 0.0:
                decrease = orthant_step(w, direction, step, pg, trial)
            else:  # (plain L-BFGS: no orthant to keep)
                np.add(w, step * direction, out=trial)
                decrease = step * float(pg @ direction)
            g_new, primal_new, gap_new = evaluate(trial)
            if primal_new <= primal + ARMIJO * decrease:
                break
            step *= 0.5
        else:
            break  # no decrease left at the precision of the evaluations
        s, y = trial - w, g_new - g
        if float(s @ y) > 0.0:
            pairs = (pairs + [(s, y, 1.0 / float(s @ y))])[-memory:]
        w, g, primal, gap = trial, g_new, primal_new, gap_new
        converged = gap <= tol * abs(primal) or (
            delta is not None and iteration > period
            and history["primal"][-period] - primal <= delta * abs(primal))
        for key, value in (("primal", primal), ("gap", gap), ("nnz", int(np.count_nonzero(w))),
                           ("evaluations", evaluations),
                           ("seconds", time.perf_counter() - start)):
            history[key].append(value)
        if callback is not None:
            callback(iteration, w)
    return ElasticNetResult(w=w, primal=primal, gap=gap, n_iter=iteration,
                            converged=bool(converged), history=history)
