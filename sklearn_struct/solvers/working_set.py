"""The hinge dual on per-example working sets: cutting planes with SMO steps.

For max-margin models at weak regularisation (large ``C``) the EG solver's
smoothing has to sharpen for many passes, as BCFW's steps shrink
(``benchmarks/results/ssvm_bcfw.md``).  This solver follows the
row-generation approach that the NIPS 2004 EG paper compares against (Taskar
et al.: loss-augmented Viterbi decoding combined with SMO) and that its
section 5 suggests combining with EG: each example's dual distribution
``alpha_i`` is held on a small *working set* of outputs (the truth and the
loss-augmented argmaxes met so far), where the dual is a small quadratic
program solved exactly by pairwise (SMO) steps.

Same datafit and conventions as :mod:`.eg` (``P(w) = 1/2 ||w||^2 + C sum_i s_i
hinge_i(w)``, dual ``C sum_i s_i E_{alpha_i} e - 1/2 ||w(alpha)||^2``).  One
*oracle pass* runs one loss-augmented argmax per example at the current ``w``:
the hinge losses give the primal at ``w`` exactly, so every oracle pass
certifies its duality gap, and each argmax more violated than the
example's working set joins it.  Before the next oracle pass, *cached passes*
(no inference; per example the scores of the parts of its outputs, and SMO
steps on its working set, with the Gram matrix of the set's feature
differences kept) re-solve the dual on the working sets until its own gap is
a fraction (``INNER_GAP_FRACTION``) of the last certified gap, at most
``MAX_CACHED_PASSES`` times; they visit the examples in proportion to their
working-set gaps (gap sampling, as :func:`.eg.visit_order`).  ``max_iter``
counts oracle passes.

Far above the data's scale of ``C`` (:func:`easy_C`) the cached passes need
thousands of sweeps, as every block-coordinate method on this dual does (the
examples' steps undo each other's).  There the solver runs the accelerated
proximal-point scheme Catalyst (Lin, Mairal and Harchaoui, NIPS 2015) around
them: each oracle pass ends one approximate solve of the proximal datafit
``P(w) + kappa/2 ||w - z||^2``, which is the same datafit at ``inner_C = C / (1 +
kappa)`` centred at ``z kappa / (1 + kappa)``, and ``z`` then extrapolates the
last two solutions.  The dual variables stay a point of the original dual (its
``w(alpha)`` is ``C / inner_C`` times ``w`` minus the centre), so every oracle pass
still certifies the primal of its ``w``.  It pays on chains but not on nearly
separable multiclass data, whose plain passes converge well
(``benchmarks/results/working_set_acceleration.md``); ``accelerate=False`` switches
it off.

The working sets are bounded (``MAX_ATOMS`` outputs per example, the truth
included): a new output replaces the least violated one of weight 0, or the
two lightest merge into their mean.  The kernels
(:mod:`._working_set_kernels`) need the structure's kernel operations
``part_scores``, ``add_features``, ``argmax`` and ``encode`` (no marginals),
and call ``part_scores_at`` and ``add_features_at`` (which have defaults).
"""

import time
from dataclasses import dataclass

import numpy as np

from ..structures._base import require_kernel
from ..structures._kernel import empty_scale, specialize
from . import _working_set_kernels
from ._working_set_kernels import TRUTH
from ._eg_dual import l2_dual
from ._eg_schedule import gap_visit_probabilities, visit_order
from .eg import EGResult
from .loss import StructuredLoss

__all__ = ["WorkingSetState", "working_set_solve"]

#: Kernel operations the solver needs.
KERNEL_OPERATIONS = ("part_scores", "add_features", "argmax", "encode")
#: Outputs kept per example, the truth included: room for ``INITIAL_ATOMS``, doubled
#: (for every example: the Gram matrices take ``n_samples`` times its square in numbers)
#: when an example needs more, up to ``MAX_ATOMS``.
INITIAL_ATOMS = 8
MAX_ATOMS = 32
#: Pairwise steps per visit of an example, at most: later steps on one example gain
#: little before the others move ``w`` (10 needs as many oracle passes as 50 and less
#: time; 2 needs far more oracle passes).
MAX_STEPS = 10
#: Cached passes after an oracle pass: until the working sets' gap is below this
#: fraction of the proximal datafit's gap at the last oracle pass, at most
#: ``MAX_CACHED_PASSES``.  A larger fraction is faster on chains, but 0.5 leaves the
#: proximal problems too rough on nearly separable multiclass data, where 0.3 converges
#: (``benchmarks/results/working_set_acceleration.md``).
INNER_GAP_FRACTION = 0.3
MAX_CACHED_PASSES = 30
#: ``inner_C`` is this many times ``sqrt(C easy_C)`` (see :func:`proximal_C`).  Too
#: small a proximal ``C`` stalls the outer sequence on nearly separable data; too large
#: forgoes the acceleration.
PROXIMAL_FACTOR = 4.0


@dataclass
class WorkingSetState:
    """Dual variables of a working-set fit (everything a warm start needs).

    Attributes
    ----------
    mu : ndarray of shape (n_parts_total,)
        Part marginals of every example's dual distribution (the mixture of its
        working set).
    terms : ndarray of shape (n_samples,)
        Expected losses ``sum_r mu_r part_loss_r`` (without the loss offsets).
    w : ndarray of shape (n_weights,)
        ``w(alpha)`` for ``C``, in the structure's weight layout.
    C : float
    part_offsets : ndarray of shape (n_samples + 1,)
    atoms : dict of ndarray
        The working sets: per example the count, weights, losses and Gram
        matrix of its outputs, and their part vectors, sparse, in one pool.
    block_gaps : ndarray of shape (n_samples,)
        Every example's working-set gap at its last visit (``inner_C s_i``-weighted),
        from which the cached passes draw their visits.
    center : ndarray of shape (n_weights,)
        Centre of the proximal datafit being solved (zeros without acceleration):
        ``w = center + inner_C sum_i s_i F_i (z_i - mu_i)``.
    previous : ndarray of shape (n_weights,)
        ``w`` at the oracle pass before the last (the extrapolation's other point).
    accelerate : bool
        Whether the fit runs the proximal sequence when ``C`` is far above the
        data's scale.
    easy_C : float or None
        The data's scale of ``C`` (see :func:`easy_C`), once measured.
    inner_C : float
        ``C`` of the proximal problems (``C`` itself without acceleration).
    gap : float or None
        Duality gap certified by the last oracle pass (None before the first).
    inner_gap : float or None
        Duality gap of the proximal datafit at the last oracle pass.
    primal : float or None
        Primal certified by the last oracle pass.
    rising : bool
        Whether that primal was above the one before (the next extrapolation then
        restarts its momentum).
    """

    mu: np.ndarray
    terms: np.ndarray
    w: np.ndarray
    C: float
    part_offsets: np.ndarray
    atoms: dict
    block_gaps: np.ndarray
    center: np.ndarray
    previous: np.ndarray
    accelerate: bool = True
    easy_C: float = None
    inner_C: float = None
    gap: float = None
    inner_gap: float = None
    primal: float = None
    rising: bool = False

    @property
    def primal_weights(self):
        """The weights whose primal the fit certifies (the last oracle pass's ``w``)."""
        return self.w


def _initial_atoms(truth, part_offsets, size):
    """Working sets holding the truth alone, with weight 1 (``w = 0``)."""
    n = len(part_offsets) - 1
    nonzero = np.flatnonzero(truth)
    lengths = np.diff(np.searchsorted(nonzero, part_offsets))
    example = np.repeat(np.arange(n), lengths)
    capacity = 4 * len(nonzero) + 1024
    pool_idx = np.zeros(capacity, dtype=np.int64)
    pool_val = np.zeros(capacity)
    pool_idx[:len(nonzero)] = nonzero - part_offsets[example]
    pool_val[:len(nonzero)] = truth[nonzero]
    start = np.zeros((n, size), dtype=np.int64)
    length = np.zeros((n, size), dtype=np.int64)
    start[:, TRUTH] = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    length[:, TRUTH] = lengths
    weight = np.zeros((n, size))
    weight[:, TRUTH] = 1.0
    return dict(count=np.ones(n, dtype=np.int64), weight=weight, loss=np.zeros((n, size)),
                start=start, length=length, pool_idx=pool_idx, pool_val=pool_val,
                pool_top=np.array([len(nonzero)], dtype=np.int64),
                gram=np.zeros((n, size, size)))


def _on_the_truth(atoms):
    """The same working sets, all weight on the truth."""
    atoms = dict(atoms)
    atoms["weight"] = np.zeros_like(atoms["weight"])
    atoms["weight"][:, TRUTH] = 1.0
    return atoms


def _grow_working_sets(atoms):
    """Twice the slots per example (at most ``MAX_ATOMS``)."""
    size = atoms["weight"].shape[1]
    extra = min(2 * size, MAX_ATOMS) - size
    for key in ("weight", "loss", "start", "length"):
        atoms[key] = np.pad(atoms[key], ((0, 0), (0, extra)))
    atoms["gram"] = np.pad(atoms["gram"], ((0, 0), (0, extra), (0, extra)))


def _grow_pool(atoms):
    """Make room in the pool of part vectors: drop the space of replaced outputs, and
    double it when it stays more than half full."""
    count, start, length = atoms["count"], atoms["start"], atoms["length"]
    held = np.arange(start.shape[1])[None, :] < count[:, None]
    old_start, lengths = start[held], length[held]
    new_start = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    source = np.repeat(old_start - new_start, lengths) + np.arange(lengths.sum())
    used = int(lengths.sum())
    capacity = len(atoms["pool_idx"]) * (2 if used > len(atoms["pool_idx"]) // 2 else 1)
    for key in ("pool_idx", "pool_val"):
        pool = np.zeros(capacity, dtype=atoms[key].dtype)
        pool[:used] = atoms[key][source]
        atoms[key] = pool
    start[held] = new_start
    atoms["pool_top"][0] = used


class _Passes:
    """The compiled passes over one datafit, with their scratch."""

    def __init__(self, datafit):
        structure, batch = datafit.structure, datafit.batch
        self.kernel = specialize(_working_set_kernels.working_set_pass, structure.kernel_ops)
        self.fixed = (structure.kernel_data(batch, training=True), batch.part_offsets,
                      batch.unit_offsets, datafit.part_losses, datafit.loss_offsets,
                      datafit.sample_weight)
        self.scale = empty_scale()
        self.losses = np.zeros(batch.n_samples)
        self.out = np.zeros(1)  # why a pass stopped early

    def run(self, examples, oracle, update, C, w_kernel, state, w_scratch):
        """One pass over ``examples`` (see :func:`._working_set_kernels.working_set_pass`)."""
        a = state.atoms
        while True:
            stopped = self.kernel(
                examples, oracle, update, MAX_STEPS, MAX_ATOMS, *self.fixed, C, w_kernel,
                self.scale, state.mu, state.terms, self.losses, state.block_gaps, a["count"],
                a["weight"], a["loss"], a["start"], a["length"], a["pool_idx"], a["pool_val"],
                a["pool_top"], a["gram"], w_scratch, self.out)
            if stopped < 0:
                return
            # the pool or a working set ran out at example ``stopped``: resume there
            (_grow_working_sets if self.out[0] else _grow_pool)(a)
            examples = examples[stopped:]


def easy_C(atoms, sample_weight, C):
    """The data's scale of ``C``: ``sum_i s_i e_i / sum_i s_i |g_i|^2`` over the outputs
    the first oracle pass (at ``w = 0``) adds, of loss ``e_i`` and feature difference
    ``g_i``.  Below it an example's optimal step ``e_i / (C |g_i|^2)`` moves all its
    weight, and the dual is easy; far above it the examples' steps undo each other's.
    ``C`` itself when no output was added (nothing to learn)."""
    added = atoms["count"] >= 2
    curvature = float(sample_weight[added] @ atoms["gram"][added, 1, 1])
    if curvature <= 0.0:
        return C
    return float(sample_weight[added] @ atoms["loss"][added, 1]) / curvature


def proximal_C(C, scale, accelerate=True):
    """``C`` of the proximal problems: ``PROXIMAL_FACTOR`` times the geometric mean of
    ``C`` and the data's scale, when that is below ``C``; ``C`` itself without
    acceleration or before the scale is known (``scale`` None)."""
    if not accelerate or scale is None:
        return C
    return min(C, PROXIMAL_FACTOR * float(np.sqrt(C * scale)))


def _extrapolate(structure, batch, state, w_kernel):
    """Move the proximal centre to the next point of the accelerated sequence
    (Catalyst, Lin, Mairal and Harchaoui 2015, for a 1-strongly convex objective and
    proximal weight ``kappa = C / inner_C - 1``), shifting ``w`` (kernel layout) with it."""
    q = state.inner_C / state.C
    momentum = (1.0 - np.sqrt(q)) / (1.0 + np.sqrt(q))
    if state.rising:  # restart the momentum (O'Donoghue and Candes 2015)
        momentum = 0.0
    target = state.w + momentum * (state.w - state.previous)
    state.previous = state.w
    center = (1.0 - q) * target
    w_kernel += structure.kernel_weights(batch, center - state.center)
    state.center = center


def _bounds(datafit, state, losses):
    """The primal at ``w``, the dual at the working sets' weights ``alpha`` (its
    ``w(alpha) = C / inner_C (w - center)``) and the proximal datafit's duality gap."""
    C, inner_C = state.C, state.inner_C
    shift = state.w - state.center
    primal = datafit.primal(state.w, C, losses=losses)
    dual = l2_dual(datafit, state.terms, (C / inner_C) * shift, C)
    inner_gap = (datafit.primal(shift, inner_C, losses=losses)
                 - l2_dual(datafit, state.terms, shift, inner_C) + float(state.center @ shift))
    return primal, dual, inner_gap


def working_set_solve(structure, batch, Y, *, C=1.0, sample_weight=None, tol=1e-3,
                      max_iter=100, accelerate=True, state=None, random_state=None, verbose=0,
                      callback=None):
    """Minimise ``1/2||w||^2 + C sum_i s_i hinge_i(w)`` on working sets (see the module).

    Parameters
    ----------
    structure : BaseStructure
        Needs ``encode``, ``part_losses``, ``loss_offsets`` and the kernel
        operations ``KERNEL_OPERATIONS``.
    batch : batch of ``structure``
    Y : ndarray of int64
        Encoded outputs (flat over output units).
    C : float > 0
    sample_weight : ndarray of shape (n_samples,), optional
    tol : float
        Stop when ``(primal - dual) <= tol * |primal|``, checked after every
        oracle pass.
    max_iter : int
        Maximum number of oracle passes.
    accelerate : bool
        Run the proximal sequence (see the module) when ``C`` is far above the
        data's scale.
    state : WorkingSetState, optional
        Dual variables of an earlier fit on the same examples (warm start; at
        another ``C`` or ``accelerate`` its working sets are kept, their weights
        restart on the truth).
    random_state : numpy.random.RandomState
        Seeds the order of the cached passes.
    verbose : int
    callback : callable, optional
        Called as ``callback(oracle_pass, state)`` after every oracle pass; a true
        return value stops the passes (early stopping).

    Returns
    -------
    EGResult
        With a :class:`WorkingSetState`; the history's ``passes`` count oracle
        passes and ``cached_passes`` the cached passes before each.
    """
    require_kernel(structure, KERNEL_OPERATIONS, "the working-set solver")
    rng = random_state if random_state is not None else np.random.RandomState(0)
    datafit = StructuredLoss(structure, batch, Y, "hinge", sample_weight)
    n = datafit.n_samples
    if state is not None and not np.array_equal(state.part_offsets, batch.part_offsets):
        raise ValueError(
            f"warm start: the stored working sets cover {len(state.part_offsets) - 1} "
            f"examples with {state.part_offsets[-1]} parts but this training set has {n} "
            f"examples with {batch.part_offsets[-1]} parts; fit on the same examples or set "
            "warm_start=False.")
    if state is None or state.C != C or state.accelerate != accelerate:
        # a warm start at another C keeps the working sets but puts the weight back on the
        # truth (the old weights, rescaled, start far from the new optimum, slower than a
        # cold start); the proximal centre restarts at 0
        truth = datafit.truth
        atoms = (_on_the_truth(state.atoms) if state is not None else
                 _initial_atoms(truth, batch.part_offsets, min(INITIAL_ATOMS, MAX_ATOMS)))
        known_scale = None if state is None else state.easy_C
        zeros = np.zeros(datafit.n_weights)
        state = WorkingSetState(
            mu=truth.astype(np.float64), terms=None, w=zeros, C=C,
            part_offsets=batch.part_offsets.copy(), atoms=atoms, block_gaps=np.zeros(n),
            center=zeros.copy(), previous=zeros.copy(), accelerate=accelerate,
            easy_C=known_scale, inner_C=proximal_C(C, known_scale, accelerate))
        state.terms = datafit.expected_losses(state.mu)
    passes = _Passes(datafit)
    w_kernel = structure.kernel_weights(batch, state.w)
    w_scratch = np.zeros_like(w_kernel)
    everyone = np.arange(n, dtype=np.int64)
    part_counts = np.diff(batch.part_offsets)
    history = {k: [] for k in ("passes", "C", "dual", "primal", "gap", "seconds",
                               "eval_seconds", "cached_passes")}
    converged, epoch = False, 0
    while True:
        cached, start = 0, time.perf_counter()
        if state.gap is not None and state.inner_C < C:
            _extrapolate(structure, batch, state, w_kernel)
        # after an oracle pass (this fit's or, warm, the last fit's): re-solve on the
        # working sets, so that fits of one oracle pass each retrace one long fit
        while state.gap is not None and cached < MAX_CACHED_PASSES:
            order = visit_order("gap", n, rng,
                                gap_visit_probabilities(state.block_gaps, part_counts))
            passes.run(order, False, True, state.inner_C, w_kernel, state, w_scratch)
            cached += 1
            if state.block_gaps.sum() <= INNER_GAP_FRACTION * state.inner_gap:
                break
        cached_seconds = time.perf_counter() - start
        start = time.perf_counter()
        passes.run(everyone, True, False, state.inner_C, w_kernel, state, w_scratch)
        if state.easy_C is None:  # the first oracle pass of a cold fit (at w = 0)
            state.easy_C = easy_C(state.atoms, datafit.sample_weight, C)
            state.inner_C = proximal_C(C, state.easy_C, accelerate)
        state.w = structure.contract_weights(batch, w_kernel)
        primal, dual, state.inner_gap = _bounds(datafit, state, passes.losses)
        epoch += 1
        state.rising = state.primal is not None and primal > state.primal
        state.primal, state.gap = primal, primal - dual
        for key, value in (("passes", epoch), ("C", C), ("dual", dual), ("primal", primal),
                           ("gap", state.gap), ("seconds", cached_seconds),
                           ("eval_seconds", time.perf_counter() - start),
                           ("cached_passes", cached)):
            history[key].append(value)
        if verbose:
            print(f"[working set] oracle pass {epoch}  primal={primal:.8g}  dual={dual:.8g}  "
                  f"rel.gap={state.gap / max(abs(primal), 1e-300):.3e}  ({cached} cached "
                  f"passes, {np.mean(state.atoms['count']):.1f} outputs per example"
                  + (f", proximal C={state.inner_C:.3g})" if state.inner_C < C else ")"))
        if callback is not None and callback(epoch, state):
            break
        if state.gap <= tol * abs(primal):
            converged = True
            break
        if epoch >= max_iter:
            break
    return EGResult(state=state, history={k: np.asarray(v) for k, v in history.items()},
                    n_iter=epoch, converged=converged)
