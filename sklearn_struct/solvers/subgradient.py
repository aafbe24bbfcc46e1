"""Projected subgradient method for the L1-constrained structured hinge loss.

Solves problem P1' of Zhu, Xing & Zhang, "Primal sparse max-margin Markov
networks" (KDD 2009), Algorithm 2::

    minimize_w  R(w) = 1/N sum_i max_y [loss(y_i, y) - w . (f(x_i, y_i) - f(x_i, y))]
    subject to  ||w||_1 <= radius   (and w_j >= 0 on the weights the structure
                                     needs non-negative, e.g. min-cut edge weights)

A subgradient of the i-th hinge term is ``f(x_i, y*) - f(x_i, y_i)`` with
``y*`` the loss-augmented prediction (:class:`StructuredHinge`).  Each step
``w <- Proj_{||w||_1 <= radius}(w - eta_t g_t)`` uses the exact sort-based L1-ball
projection (:mod:`.l1_projection`, which also handles the non-negative
weights), which soft-thresholds: small weights become exact zeros.

Step sizes (the paper leaves the schedule open) follow AdaGrad-norm,
``eta_t = eta0 * radius / sqrt(sum_{s<=t} ||g_s||_2^2)``: for subgradients of
constant norm ``G`` this is the classical ``radius / (G sqrt(t))`` schedule,
with the scale taken from the observed subgradients, so it needs no tuning
across data sets and feature scales.

Because ``R`` is convex, every evaluated pair ``(w_t, g_t)`` gives the linear
lower bound ``R(w*) >= R(w_t) + g_t . (w* - w_t) >= R(w_t) - g_t . w_t +
min_{w in W} g_t . w`` over the feasible set ``W`` (``-radius ||g_t||_inf`` for
the plain ball); a convex combination of these bounds (weights ``eta_t``)
is also one.  The solver keeps the best of these lower bounds and the best
iterate, so it reports a certified duality gap and stops on a relative gap of
``tol``.
"""

from dataclasses import dataclass

import numpy as np

from ..structures import UnsupportedOperation
from ..structures._kernel import specialize
from . import _subgradient_kernels
from ._chunks import ExampleChunks
from ._objective import example_losses
from .l1_projection import project_l1_ball

__all__ = ["StructuredHinge", "SubgradientResult", "l1_projected_subgradient"]

#: Operations a structure needs for the structured hinge loss.
HINGE_OPERATIONS = (
    "part_scores",
    "expected_features",
    "encode",
    "part_losses",
    "loss_augmented_argmax",
)
#: Kernel operations of the online (per-example) subgradient epoch.
ONLINE_KERNEL_OPERATIONS = ("part_scores", "add_features", "argmax", "encode")


class StructuredHinge:
    """Structured hinge losses, subgradients and most violated outputs of a data set.

    Parameters
    ----------
    structure : BaseStructure
        Must support the operations in ``HINGE_OPERATIONS``.
    batch : batch of ``structure``
    Y : ndarray of int
        Encoded true outputs of ``batch``.
    n_jobs : int, default=1
        Loss-augmented inference runs over this many chunks of examples in
        parallel through joblib (``None``/1: sequential).

    Attributes
    ----------
    loss_offsets : ndarray of shape (n_samples,)
        Per-example constants completing the part losses: ``loss(y_i, y) =
        loss_offsets[i] + encode(y) . part_losses`` (the structure's
        ``loss_offsets``).
    nonnegative : ndarray of bool of shape (n_weights,)
        Weights the structure needs non-negative (``nonnegative_weights``, the
        edge weights of a min-cut model); solvers keep them in the orthant.

    Notes
    -----
    The hinge term of example ``i`` at ``w`` is
    ``H_i(w) = max_y [loss(y_i, y) + w . f(x_i, y)] - w . f(x_i, y_i) >= 0``.
    """

    def __init__(self, structure, batch, Y, n_jobs=1):
        structure.check_supports(*HINGE_OPERATIONS, needed_by="the structured hinge loss")
        self.structure = structure
        self.batch = batch
        self.Y = structure.check_outputs(batch, Y)
        self.n_samples = int(batch.n_samples)
        self.n_weights = int(batch.n_weights)
        self.true_parts = structure.encode(batch, self.Y)
        self.part_losses = structure.part_losses(batch, self.Y)
        self.true_features = structure.expected_features(batch, self.true_parts)
        self.loss_offsets = np.asarray(structure.loss_offsets(batch, self.Y), dtype=np.float64)
        self.nonnegative = np.asarray(structure.nonnegative_weights(batch), dtype=bool)
        self.chunks = ExampleChunks(structure, batch, n_jobs)
        self._example_batches = {}

    def evaluate(self, w):
        """Hinge terms, summed subgradient and most violated outputs at ``w``.

        Returns
        -------
        hinge : ndarray of shape (n_samples,)
            ``H_i(w)`` per example.
        subgradient : ndarray of shape (n_weights,)
            ``sum_i f(x_i, y*_i) - f(x_i, y_i)``, a subgradient of ``sum_i H_i``.
        violated_parts : ndarray
            Part encoding of the most violated outputs ``y*``.
        """
        hinge, violated_parts = example_losses(self.structure, self.chunks, w, self.Y,
                                               return_worst=True)
        subgradient = (
            self.structure.expected_features(self.batch, violated_parts) - self.true_features
        )
        return hinge, subgradient, violated_parts

    def example_features(self, i, parts_i):
        """``sum_r parts_i[r] phi(x_i, r)`` for the parts of example ``i`` alone."""
        return self.structure.expected_features(self.example_batch(i), parts_i)

    def example_batch(self, i):
        """Batch holding example ``i`` only (cached)."""
        sub = self._example_batches.get(i)
        if sub is None:
            sub = self.structure.take(self.batch, np.array([i]))
            self._example_batches[i] = sub
        return sub

    def example_slice(self, i):
        """Slice of example ``i`` in part vectors."""
        offsets = self.batch.part_offsets
        return slice(int(offsets[i]), int(offsets[i + 1]))


@dataclass
class SubgradientResult:
    """Outcome of :func:`l1_projected_subgradient`.

    Attributes
    ----------
    coef : ndarray of shape (n_weights,)
        Best iterate found (lowest ``R``); exact zeros from the projection.
    objective : float
        ``R(coef)``, the mean structured hinge loss.
    lower_bound : float
        Certified lower bound on the optimum of P1'.
    n_iter : int
        Iterations (batch) or epochs (online) run.
    converged : bool
        Whether the relative gap reached ``tol``.
    history : dict of lists
        Per iteration/epoch: ``objective`` (at the evaluated point),
        ``best_objective``, ``lower_bound``, ``n_nonzero``.
    """

    coef: np.ndarray
    objective: float
    lower_bound: float
    n_iter: int
    converged: bool
    history: dict


def l1_projected_subgradient(
    hinge,
    radius,
    *,
    max_iter=1000,
    tol=1e-3,
    eta0=1.0,
    online=False,
    coef_init=None,
    random_state=None,
    verbose=0,
):
    """Projected subgradient (Algorithm 2) for the L1-constrained hinge loss P1'.

    Parameters
    ----------
    hinge : StructuredHinge
        Data set and structure; the weights in ``hinge.nonnegative`` are kept
        non-negative.
    radius : float
        ``lambda``, the L1-ball radius (``> 0``).
    max_iter : int
        Batch: number of subgradient steps.  Online: number of epochs (passes
        over the examples in a random order, one projected step per example).
    tol : float
        Stop when ``best R - lower bound <= tol * best R``.
    eta0 : float
        Multiplier of the AdaGrad-norm step size (see module docstring).
    online : bool
        Per-example steps (stochastic subgradient) instead of full-batch steps.
        The certificate is then evaluated on the full batch once per epoch.
    coef_init : ndarray of shape (n_weights,), optional
        Starting point (projected onto the ball); zeros by default.
    random_state : numpy.random.RandomState, optional
        Order of the examples in the online variant.
    verbose : int
        Print progress every iteration/epoch when > 0.

    Returns
    -------
    result : SubgradientResult
    """
    if not radius > 0:
        raise ValueError(f"the L1-ball radius must be > 0, got {radius}.")
    structure = hinge.structure
    if online and not structure.kernel_supports(*ONLINE_KERNEL_OPERATIONS):
        raise UnsupportedOperation(
            f"{type(structure).__name__}: the online subgradient method runs inside numba and "
            f"needs the kernel operations {', '.join(ONLINE_KERNEL_OPERATIONS)} (see "
            "KernelOps); use online=False.")
    n = hinge.n_samples
    nonnegative = hinge.nonnegative
    w = (np.zeros(hinge.n_weights) if coef_init is None
         else project_l1_ball(coef_init, radius, nonnegative))
    rng = np.random.RandomState(0) if random_state is None else random_state
    history = {"objective": [], "best_objective": [], "lower_bound": [], "n_nonzero": []}
    best_w, best_objective = w.copy(), np.inf
    lower_bound = 0.0  # R >= 0
    squared_norms = 0.0  # AdaGrad-norm accumulator
    weight_sum, weighted_offsets, weighted_subgradient = 0.0, 0.0, np.zeros_like(w)
    converged = False
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        losses, subgradient, _ = hinge.evaluate(w)
        objective = losses.sum() / n
        g = subgradient / n
        if objective < best_objective:
            best_objective, best_w = objective, w.copy()
        g_norm2 = float(g @ g)
        # Lower bounds: this linearisation alone, and the eta-weighted average.
        bound_weight = eta0 * radius / np.sqrt(squared_norms + g_norm2) if g_norm2 > 0 else 1.0
        offset = objective - g @ w
        weight_sum += bound_weight
        weighted_offsets += bound_weight * offset
        weighted_subgradient += bound_weight * g
        lower_bound = max(
            lower_bound,
            offset + _min_linear(g, radius, nonnegative),
            (weighted_offsets + _min_linear(weighted_subgradient, radius, nonnegative))
            / weight_sum,
        )
        history["objective"].append(objective)
        history["best_objective"].append(best_objective)
        history["lower_bound"].append(lower_bound)
        history["n_nonzero"].append(int(np.count_nonzero(w)))
        if verbose:
            print(
                f"[L1 subgradient] {'epoch' if online else 'iter'} {n_iter}: R={objective:.6g} "
                f"best={best_objective:.6g} lower={lower_bound:.6g} nnz={history['n_nonzero'][-1]}"
            )
        if best_objective - lower_bound <= tol * best_objective or g_norm2 == 0.0:
            converged = True
            break
        if n_iter == max_iter:
            break
        if online:
            w, squared_norms = _online_epoch(hinge, w, radius, eta0, squared_norms, rng)
        else:
            squared_norms += g_norm2
            w = project_l1_ball(w - eta0 * radius / np.sqrt(squared_norms) * g, radius,
                                nonnegative)
    return SubgradientResult(best_w, best_objective, lower_bound, n_iter, converged, history)


def _online_epoch(hinge, w, radius, eta0, squared_norms, rng):
    """One pass of per-example projected steps in a random order, inside numba."""
    structure, batch = hinge.structure, hinge.batch
    epoch = specialize(_subgradient_kernels.online_epoch, structure.kernel_ops)
    w_kernel = structure.kernel_weights(batch, w)
    nonnegative = structure.kernel_weights(batch, hinge.nonnegative.astype(np.float64)) > 0.0
    squared_norms = epoch(rng.permutation(hinge.n_samples).astype(np.int64),
                          structure.kernel_data(batch), batch.part_offsets, batch.unit_offsets,
                          hinge.true_parts, hinge.part_losses, w_kernel, nonnegative,
                          float(radius), float(eta0), float(squared_norms))
    return structure.contract_weights(batch, w_kernel), squared_norms


def _min_linear(g, radius, nonnegative):
    """``min g . w`` over ``{||w||_1 <= radius, w_j >= 0 where nonnegative}``.

    A vertex of the set: ``-radius e_j`` (free ``j``, when ``g_j > 0``) or ``+radius e_j``
    (any ``j``, when ``g_j < 0``), or 0.
    """
    best = np.where(nonnegative, -g, np.abs(g))
    return -radius * max(0.0, float(best.max(initial=0.0)))
