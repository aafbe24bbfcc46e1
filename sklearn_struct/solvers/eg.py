"""Exponentiated-gradient (EG) training of log-linear and max-margin models.

Collins, Globerson, Koo, Carreras and Bartlett (JMLR 2008), sections 2-4 and 7;
Bartlett, Collins, Taskar and McAllester (NIPS 2004).

Objective (scikit-learn convention; the paper's ``C`` is ``1 / C`` here)::

    P(w) = 1/2 ||w||^2 + C sum_i s_i loss_i(w)

with ``loss_i`` the negative conditional log-likelihood (``loss="log"``) or
the structured hinge loss ``max_y [e(y_i, y) - w . (phi(x_i, y_i) - phi(x_i, y))]``
(``loss="hinge"``).  Its dual over one distribution ``alpha_i`` per example is::

    D(alpha) = C sum_i s_i term_i(alpha_i) - 1/2 ||w(alpha)||^2,
    w(alpha) = C sum_i s_i (phi(x_i, y_i) - E_{alpha_i} phi(x_i, y)),

with ``term_i`` the entropy of ``alpha_i`` (log loss) or its expected loss
``E_{alpha_i} e(y_i, y)`` (hinge).  ``P(w(alpha)) >= D(alpha)`` with equality
at the optimum, so ``P - D`` is an exact duality gap.

``alpha_i`` is held implicitly as a Gibbs distribution over outputs with one
parameter ``theta_{i,r}`` per part (section 4); every quantity above depends on
``alpha_i`` only through the marginals ``mu_i`` and the log-partition.  The
solver keeps ``theta``, ``mu``, the per-example dual terms and ``w`` up to
date; these arrays are the *state* that a warm start reuses.

The hinge dual has its optimum on the boundary of the simplex (``theta``
infinite), where plain EG steps, bounded by the curvature of ``||w||^2``, crawl.
The online solver therefore anneals a temperature instead of ``C``: it ascends
the dual of the hinge smoothed at inverse temperature ``beta``,
``C sum_i s_i (E_{alpha_i} e + H(alpha_i) / beta) - 1/2 ||w||^2`` (the dual of
the softmax-margin loss ``1/beta log sum_y exp(beta (e + w . phi))``), whose EG
step is the log-loss step on the scores ``beta (e + w . phi)`` and converges
fast, and doubles ``beta`` whenever the entropy term ``C sum_i s_i H_i / beta``
makes up half of the hinge duality gap (shrinking the per-example rates as
the sharper datafit's curvature requires, :func:`sharpened_rates`; each rate
follows a model of the dual gain, see :mod:`._eg_kernels`).  The gap it
reports and stops on is the exact gap of the hinge: the hinge dual drops the entropy term, and the
primal is evaluated on the hinge, at a running average of ``w`` over the last
passes (``AVERAGE_WINDOW``) rather than at ``w(alpha)``: any ``w`` bounds the
optimum from above, and the average's primal is much closer to it (the fit
returns that average).

This module knows nothing of scikit-learn: it works on a structure and a batch
(see :mod:`sklearn_struct.structures`).  The online epoch runs inside numba
for any structure whose kernel operations include marginals
(:mod:`._eg_kernels`); the batch solver needs only the batch operations.
"""

import time
from dataclasses import dataclass, field

import numpy as np

from ..structures._base import require_kernel
from ._eg_dual import (AVERAGE_WINDOW, BETA_GATE, BETA_GROWTH, BETA_START_C, EGState, LOSSES,
                       attach_state, check_dual_dtype, example_gaps, hinge_dual, initial_state,
                       joined_states, l2_dual, sharpened_rates, truth_state)
from ._eg_execution import ONLINE_KERNEL_OPERATIONS, BatchPasses, OnlineEpoch, online_threads
from ._kernel_shards import check_cache_dir
from ._eg_schedule import (ANNEALING_GROWTH, ANNEALING_MAX_GROWTH, ORDERS, gap_rate,
                           gap_visit_probabilities, next_annealed_C, passes_to_next_check,
                           uniform_start_C, visit_order)
from .loss import StructuredLoss


__all__ = ["EGResult", "EGState", "FLOAT32_MIN_TOL", "STARTS", "check_cache_dir", "eg_solve",
           "new_examples_state", "next_annealed_C", "uniform_start_C"]

#: A cold start's dual points (:func:`eg_solve`'s ``start``).
STARTS = ("uniform", "truth")
#: Where the visits can give their examples' gaps (the online log loss on a structure whose
#: kernel operations provide ``log_partition``, in an order other than "gap", at the target
#: ``C``), a pass on which the geometric schedule checks the gap has its visits give them,
#: and the gap is evaluated exactly only if their sum, the lagged gap, divided by this
#: factor is at most ``tol`` (see :func:`_lagged_relative_gap`); otherwise that estimate
#: stands in for the evaluation in the schedule.  After an evaluation, the factor is the
#: lagged gap's ratio to the exact one then, kept between 1 and this value (a gap that
#: falls slowly falls little in the pass that the lagged one lags, and the exact gap of
#: the online weights is noisy).
LAGGED_GAP_FACTOR = 2.0
#: The lagged gap is estimated from the visits of a sample of the examples, the first
#: ``GAP_VISIT_FRACTION`` of a pass's random order (at least ``MIN_GAP_VISITS``; all of a
#: cyclic order): a log partition per visit costs about a third of a parser's pass, and
#: the estimate only decides whether to evaluate the gap exactly, which alone certifies.
GAP_VISIT_FRACTION = 0.25
MIN_GAP_VISITS = 1000


@dataclass
class EGResult:
    """What :func:`eg_solve` returns: the final state and the per-pass history."""

    state: EGState
    history: dict = field(default_factory=dict)
    n_iter: int = 0
    converged: bool = False


def eg_solve(
    structure, batch, Y, *, loss="log", C=1.0, sample_weight=None, solver="online",
    order="shuffle", learning_rate="adaptive", eta0=0.5, tol=1e-4, max_iter=100,
    annealing=False, start="uniform", smoothing=False, state=None, random_state=None,
    n_jobs=None, verbose=0, callback=None, feature_scale=None, keep_dual=True, center=None,
    truth=None, part_losses=None, cache_size=None, cache_dir=None, dual_dtype=None,
):
    """Minimise ``1/2||w - center||^2 + C sum_i s_i loss_i(w)`` by EG on the dual.

    Parameters
    ----------
    structure : BaseStructure
        Must support ``part_scores``, ``expected_features``, ``encode``, ``part_losses``,
        ``marginals`` (and ``loss_augmented_argmax`` for the hinge); the online solver
        also needs the kernel operations ``ONLINE_KERNEL_OPERATIONS``.
    batch : batch of ``structure``
    Y : ndarray of int64
        Encoded outputs (flat over output units).
    loss : {"log", "hinge"}
    C : float > 0
    sample_weight : ndarray of shape (n_samples,), optional
    solver : {"online", "batch"}
        Randomized/cyclic online EG (Figures 2-3) or batch EG (Figure 1).
    order : {"random", "shuffle", "cyclic", "gap"}
        Online visiting order: uniform draws with replacement, a new random
        permutation every pass, ``0..n-1``, or gap sampling (Osokin et al.
        2016): systematic draws in proportion to the examples' duality gaps per
        part at the last gap evaluation, mixed with uniform ones (see
        :func:`gap_visit_probabilities` and :func:`visit_order`; a permutation
        until the first evaluation).
    learning_rate : "adaptive" or float
        Section 7: per-example (online) or global (batch) rate, halved until the dual
        improves, then multiplied by 1.05 (``_eg_kernels.RATE_GROWTH``; online EG on the
        log loss: ``LOG_LOSS_RATE_GROWTH``).  A float is a fixed rate.
    eta0 : float
        Initial adaptive rate.
    tol : float
        Stop when ``(primal - dual) <= tol * |primal|``.  The gap (one inference per
        example) is checked on a geometric schedule (``CHECK_SPACING``), first from the
        visits' own gaps where they give them (``LAGGED_GAP_FACTOR``); after every pass
        while ``C`` is annealed or when ``tol=0``.
    max_iter : float
        Maximum number of effective passes (step sizes tried / n_samples).
    annealing : bool
        Anneal ``C`` (section 7.1.1) from a uniform cold start: begin at ``min(C,
        uniform_start_C)`` and move ``C`` to its target as in :func:`next_annealed_C`.
    start : {"uniform", "truth"}
        A cold start's dual point: uniform, or all on the truth (``w = 0``; online only).
    smoothing : bool
        For the hinge with the online solver: anneal the temperature of the
        smoothed hinge instead, from a start on the truth (see the module
        docstring); ``C`` is then not annealed.
    state : EGState, optional
        Dual variables of an earlier fit on the same examples (warm start).
    random_state : numpy.random.RandomState
    n_jobs : int, optional
        joblib workers for batch marginals and primal/gap evaluation; the online solver
        instead runs its passes and its evaluations on that many threads (at most one per
        core), the passes sharing ``w`` asynchronously (see ``OnlineEpoch``).
    verbose : int
    callback : callable, optional
        Called as ``callback(epoch, state)`` after every pass; a true return value
        stops the passes (early stopping).
    feature_scale : ndarray of shape (n_weights,), optional
        Solve the datafit whose features are rescaled weight by weight,
        ``phi'(x, r) = feature_scale * phi(x, r)`` (in the structure's weight
        layout), e.g. for the EM reweighting of the adaptive M3N; the state's
        ``w`` is then ``w(alpha)`` of the rescaled datafit; the online epoch
        applies the rescaling inside numba.
    keep_dual : bool, default=True
        Return the dual variables ``theta`` and ``mu`` in the state (what a
        warm start needs).  With False they are None, and batch EG does not
        bring them back from its chunks (on a cluster, from the workers).
    center : ndarray of shape (n_weights,), optional
        The center ``v`` of the L2 penalty (None: 0): the proximal step
        ``argmin_w 1/2 ||w - v||^2 + C sum_i s_i loss_i(w)``, whose dual is the
        dual above with ``w(alpha) = v + C sum_i s_i (phi(x_i, y_i) - E_{alpha_i}
        phi(x_i, y))`` and ``||v||^2 / 2`` added.  It is the full dual of a larger
        data set with the dual variables of the examples not given here frozen
        inside ``v`` (block-coordinate ascent), what ``partial_fit`` solves.  The
        distributions near the truth give ``w = v``, a sensible start at any
        ``C``: ``C`` is not annealed with a center (``annealing`` is ignored).
    truth, part_losses : ndarray of shape (n_parts_total,), optional
        The targets' part vector and part losses in place of those of ``Y``
        (see :class:`~sklearn_struct.solvers.loss.StructuredLoss`): soft targets
        (expected encodings) for the log loss, the loss of the known units for
        the hinge; online solver only.  What :mod:`.latent` solves.
    dual_dtype : {None, numpy.float64, numpy.float32}
        Of ``theta`` and ``mu`` (:data:`._eg_dual.DUAL_DTYPES`); float32 needs the online
        solver.  None: float32 for the online log loss at ``tol >= FLOAT32_MIN_TOL``.

    Returns
    -------
    EGResult
    """
    _check_arguments(structure, loss, order, solver, truth is not None or part_losses is not None,
                     start)
    check_cache_dir(cache_dir)
    dual_dtype = _dual_dtype(dual_dtype, solver, loss, tol)  # (refused before any work)
    datafit = StructuredLoss(structure, batch, Y, loss, sample_weight, feature_scale, n_jobs,
                             center, truth=truth, part_losses=part_losses)
    annealing = annealing and center is None  # w(alpha) is not linear in C about a center
    smoothed = smoothing and loss == "hinge" and solver == "online"
    state, epoch_runner, schedule = _starting_point(
        datafit, state, solver, C, eta0, annealing, smoothed, start,
        online_threads(n_jobs, datafit.n_samples), (cache_size, cache_dir), dual_dtype)
    history = {k: [] for k in ("passes", "C", "dual", "primal", "gap", "seconds",
                               "eval_seconds", "beta")}
    rng = random_state if random_state is not None else np.random.RandomState(0)
    try:  # the online runner's shards on disk go, whatever happens
        epoch, converged = _passes(
            datafit, state, epoch_runner, schedule, history, solver=solver, order=order,
            rng=rng, learning_rate=learning_rate, eta0=eta0, tol=tol, max_iter=max_iter,
            callback=callback, verbose=verbose)
    finally:
        if isinstance(epoch_runner, OnlineEpoch):
            epoch_runner.close()
    _finish(state, epoch_runner, keep_dual, schedule.now, schedule.unfinished(epoch))
    return EGResult(state=state, history={k: np.asarray(v) for k, v in history.items()},
                    n_iter=epoch, converged=converged)


@dataclass
class _Annealing:
    """Where ``C`` stands in a fit: its ``target``, its value ``now`` and for the ``next``
    pass, the value the annealing ``start``-ed from and the passes it ran before this fit
    (``epoch0``, a warm start's)."""

    target: float
    now: float
    next: float
    start: float
    epoch0: int = 0

    def move(self, state):
        """Take ``C`` (and ``w(alpha)``, linear in ``C``) to its next value."""
        if self.next != self.now:
            state.w *= self.next / self.now
            state.C = self.now = self.next

    def plan(self, epoch, primal, gap, loss):
        """The next value of ``C`` after pass ``epoch`` of this fit, from its gap."""
        self.next = next_annealed_C(
            self.target, self.start, self.epoch0 + epoch, self.now, primal, gap,
            max_growth=ANNEALING_MAX_GROWTH if loss == "log" else ANNEALING_GROWTH)

    def unfinished(self, epoch):
        """What a warm start needs to go on annealing after pass ``epoch``, or None when
        ``C`` reached its target."""
        if self.now == self.target:
            return None
        return (self.target, self.start, self.epoch0 + epoch, self.next)


def _passes(datafit, state, epoch_runner, schedule, history, *, solver, order, rng,
            learning_rate, eta0, tol, max_iter, callback, verbose):
    """The passes of :func:`eg_solve` (its parameters), with the duality gap checked on its
    schedule; returns ``(passes run, converged)``.

    ``schedule`` (an :class:`_Annealing`) and ``history`` follow the passes.
    """
    n, loss = datafit.n_samples, datafit.kind
    adaptive = isinstance(learning_rate, str)
    eta = eta0 if adaptive else float(learning_rate)
    total_tries, epoch = 0, 0
    budget_total = int(np.ceil(max_iter * n))
    check_at, last_check, rate, pass_seconds = 0, None, None, 0.0  # check_at: steps tried
    gap_sampling = order == "gap" and solver == "online"
    # where the visits can give their examples' gaps, they decide whether a check needs an
    # evaluation (see LAGGED_GAP_FACTOR), unless gap sampling needs the evaluations' own
    # fresh gaps (drawn from the visits' lagged gaps, or from rare evaluations, fits took
    # more passes than in a new permutation every pass)
    lagged = solver == "online" and epoch_runner.visit_gaps and not gap_sampling and tol > 0
    visit_gaps = np.zeros(n) if lagged else None
    factor = LAGGED_GAP_FACTOR  # the lagged gap over the exact one
    part_counts = np.diff(datafit.batch.part_offsets)
    visit_probabilities = (gap_visit_probabilities(state.gaps, part_counts)
                           if gap_sampling and state.gaps is not None else None)
    batch_passes = epoch_runner if solver == "batch" else None
    while total_tries < budget_total:
        epoch += 1
        schedule.move(state)
        # (a pass tries n steps at most: this one ends on a check if it tries n)
        asked = lagged and schedule.now == schedule.target and total_tries + n >= check_at
        start = time.perf_counter()
        total_tries += _run_pass(epoch_runner, solver, state, budget_total - total_tries, n,
                                 order, rng, visit_probabilities, loss, adaptive, eta,
                                 schedule.now, visit_gaps if asked else None)
        pass_seconds += time.perf_counter() - start
        passes = total_tries / n
        if _after_pass(state, epoch, batch_passes, callback):
            return epoch, False
        last_pass = total_tries >= budget_total
        if not (tol == 0 or schedule.now != schedule.target or last_pass
                or total_tries >= check_at):
            continue
        lagged_gap = _lagged_relative_gap(datafit, state, visit_gaps) if asked else None
        if lagged_gap is not None and lagged_gap > factor * tol and not last_pass:
            check = (passes, lagged_gap / factor)  # far from tol: the estimate stands in
        else:
            primal, gap, entropy_term = _evaluate(datafit, state, epoch_runner, schedule.target,
                                                  schedule.now, gap_sampling, history, passes,
                                                  pass_seconds, verbose)
            if gap_sampling:
                visit_probabilities = gap_visit_probabilities(state.gaps, part_counts)
            pass_seconds = 0.0
            if schedule.now == schedule.target and gap <= tol * abs(primal):
                return epoch, True
            if state.beta is not None and entropy_term >= BETA_GATE * gap:
                _sharpen(datafit, state)
            check = (passes, gap / max(abs(primal), 1e-300))
            if lagged_gap:
                factor = min(max(lagged_gap / max(check[1], 1e-300), 1.0), LAGGED_GAP_FACTOR)
            schedule.plan(epoch, primal, gap, loss)
        rate = gap_rate(last_check, check, rate)
        check_at = total_tries + n * passes_to_next_check(passes, check[1], rate, tol)
        last_check = check
    return epoch, False


def _run_pass(epoch_runner, solver, state, budget, n, order, rng, visit_probabilities, loss,
              adaptive, eta, C, gaps=None):
    """One pass over the ``n`` examples, of at most ``budget`` steps tried; returns how many
    were.  Online EG visits them in an order of :func:`visit_order` (writing their gaps into
    ``gaps``, if given); batch EG steps on all of them at once."""
    if solver == "online":
        visits = visit_order(order, n, rng, visit_probabilities)
        if gaps is not None:
            _ask_gaps(gaps, visits, order)
        return epoch_runner.run(state, visits, min(budget, n), loss, adaptive, eta, C, gaps)
    return epoch_runner.run(state, budget // n, loss, adaptive, eta, C)


def _ask_gaps(gaps, visits, order):
    """Ask the first visits of a pass (see ``GAP_VISIT_FRACTION``) for their examples'
    gaps: their entries of ``gaps`` negative, the others NaN."""
    n = len(gaps)
    asked = n if order == "cyclic" else min(n, max(MIN_GAP_VISITS, int(np.ceil(
        GAP_VISIT_FRACTION * n))))
    gaps.fill(np.nan)
    gaps[visits[:asked]] = -1.0


def _lagged_relative_gap(datafit, state, visit_gaps):
    """The relative duality gap that the visits' gaps (each asked example's at the weights
    its visit found; a zero-weight example's stays negative: 0) add up to, scaled from the
    asked examples to all: the lagged gap over the primal it implies, dual plus gap."""
    asked = visit_gaps[~np.isnan(visit_gaps)]
    gap = float(np.maximum(asked, 0.0).sum()) * len(visit_gaps) / len(asked)
    primal = l2_dual(datafit, state.terms, state.w, state.C) + gap
    return gap / max(abs(primal), 1e-300)


def _after_pass(state, epoch, batch_passes, callback):
    """After pass ``epoch``: the smoothed hinge's running average of ``w``, then
    ``callback(epoch, state)`` (batch EG's dual variables brought back from its chunks,
    ``batch_passes``, first); returns whether the callback asks to stop."""
    if state.w_average is not None:
        weight = min(1.0, 1.0 / (AVERAGE_WINDOW * epoch))
        state.w_average += weight * (state.w - state.w_average)
    if callback is not None:
        if batch_passes is not None:
            batch_passes.store(state)
        return bool(callback(epoch, state))
    return False


def _finish(state, epoch_runner, keep_dual, C_now, schedule):
    """The state a fit returns: its dual variables (brought back from batch EG's chunks)
    or none, its ``C`` and, if it stopped while annealing, its schedule."""
    if not keep_dual:
        state.theta = state.mu = None
    elif isinstance(epoch_runner, BatchPasses):
        epoch_runner.store(state)
    state.C = C_now
    state.schedule = schedule


def _check_arguments(structure, loss, order, solver, given_targets, start):
    """The errors :func:`eg_solve` raises before any work (``given_targets``: ``truth`` or
    ``part_losses`` given)."""
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {sorted(LOSSES)}, got {loss!r}.")
    if start not in STARTS:
        raise ValueError(f"start must be one of {sorted(STARTS)}, got {start!r}.")
    if start == "truth" and solver != "online":
        raise ValueError("eg_solve: start='truth' needs solver='online' (batch EG starts from "
                         "the uniform distributions).")
    if order not in ORDERS:
        raise ValueError(f"order must be one of {sorted(ORDERS)}, got {order!r}.")
    if given_targets and solver != "online":
        raise ValueError("eg_solve: truth and part_losses need solver='online'.")
    if solver == "online":
        require_kernel(structure, ONLINE_KERNEL_OPERATIONS, "online EG",
                       "; use solver='batch' for a structure with batch marginals only")


def _evaluate(datafit, state, epoch_runner, C, C_now, gap_sampling, history, passes,
              pass_seconds, verbose):
    """Evaluate the duality gap at ``C_now`` after ``passes`` (see :func:`_objectives`),
    append it to ``history`` and report it; returns ``(primal, gap, entropy_term)``."""
    start = time.perf_counter()
    primal, dual, entropy_term = _objectives(datafit, state, epoch_runner, C_now, gap_sampling)
    gap = primal - dual
    for key, value in (("passes", passes), ("C", C_now), ("dual", dual), ("primal", primal),
                       ("gap", gap), ("seconds", pass_seconds),
                       ("eval_seconds", time.perf_counter() - start),
                       ("beta", np.nan if state.beta is None else state.beta)):
        history[key].append(value)
    if verbose:
        # objectives and gap are those of the current C, not yet of the target
        annealed = f" (annealing towards C={C:.4g})" if C_now != C else ""
        print(f"[EG] pass {passes:7.2f}  C={C_now:.4g}{annealed}  primal={primal:.8g}  "
              f"dual={dual:.8g}  rel.gap={gap / max(abs(primal), 1e-300):.3e}  "
              f"({pass_seconds:.2f}s)")
    return primal, gap, entropy_term


#: The smallest ``tol`` at which a fit keeps its dual state in float32 unless told (see
#: :func:`eg_solve`'s ``dual_dtype``): the dual of a float32 state is exact to the rounding
#: of its marginals (about 6e-8 of each), whose effect on the gap, first order in the
#: distance to the optimum, stays far below a relative gap of 1e-8; below it, and for
#: ``tol=0`` (training curves read to any precision), the state is float64.
FLOAT32_MIN_TOL = 1e-8


def _dual_dtype(dual_dtype, solver, loss, tol):
    """The dtype of a fit's ``theta`` and ``mu`` (see :func:`eg_solve`'s ``dual_dtype``)."""
    if dual_dtype is None:
        narrow = solver == "online" and loss == "log" and tol >= FLOAT32_MIN_TOL
        return np.float32 if narrow else np.float64
    dual_dtype = check_dual_dtype(dual_dtype)
    if dual_dtype != np.float64 and solver != "online":
        raise ValueError("eg_solve: dual_dtype=float32 needs solver='online' (batch EG keeps "
                         "its dual variables in float64 on its chunks).")
    return dual_dtype


def _starting_point(datafit, state, solver, C, eta0, annealing, smoothed, start, threads, cache,
                    dual_dtype=np.float64):
    """The dual point a fit starts from, the runner of its passes and its ``C`` schedule.

    ``cache`` is ``(cache_size, cache_dir)`` of the online runner's kernel data;
    ``dual_dtype`` that of a cold start's ``theta`` and ``mu`` (a warm start keeps its own).
    Returns ``(state, epoch_runner, schedule)``, the schedule an :class:`_Annealing`.
    Annealing starts a cold fit (uniform duals) where they make sense; a cold start on the
    truth (``start``, the smoothed hinge, a center; :func:`truth_state`, or near it for
    targets given as part vectors) needs none, and a warm start already has a good dual
    point, unless it stopped while annealing.
    """
    batch, cold_start = datafit.batch, state is None
    near_truth = smoothed or start == "truth" or datafit.center is not None
    if not cold_start and not np.array_equal(state.part_offsets, batch.part_offsets):
        raise ValueError(
            f"warm start: the stored dual variables cover {len(state.part_offsets) - 1} "
            f"examples with {state.part_offsets[-1]} parts but this training set has "
            f"{datafit.n_samples} examples with {batch.part_offsets[-1]} parts; fit on the same "
            "examples or set warm_start=False."
        )
    # (the online runner's kernel data serve the start's F mu as well as the passes)
    epoch_runner = OnlineEpoch(datafit, threads, *cache) if solver == "online" else None
    expected = None  # scale * F mu of the state's marginals, when known
    point_masses = cold_start and solver == "online" and near_truth and not datafit.soft_truth
    if cold_start and solver == "batch":  # created where batch EG keeps it, on the chunks
        epoch_runner, terms, expected = BatchPasses.uniform(datafit)
        state = initial_state(datafit, eta0, terms=terms)
    elif point_masses:  # no inference: F mu of the targets is the observed features
        state = truth_state(datafit, eta0, dtype=dual_dtype)
        expected = datafit.observed
    elif cold_start:
        # with F mu once, for both the annealing's start and w
        state = initial_state(datafit, eta0, near_truth=near_truth, dtype=dual_dtype)
        expected = epoch_runner.expected_features(state.mu)
    if cold_start and smoothed:
        state.beta = min(1.0, BETA_START_C / C)
    C_now = C_next = C_start = C
    epoch0 = 0
    if annealing and cold_start and not near_truth:
        C_now = C_next = C_start = min(C, uniform_start_C(datafit, state, expected))
    elif annealing and state.schedule is not None and state.schedule[0] == C:
        _, C_start, epoch0, C_next = state.schedule
        C_now = state.C
    attach_state(datafit, state, C_now, expected, point_masses)
    state.w_average = state.w.copy() if state.beta is not None and AVERAGE_WINDOW > 0 else None
    if solver == "batch" and not cold_start:
        epoch_runner = BatchPasses.from_state(datafit, state)
    return state, epoch_runner, _Annealing(C, C_now, C_next, C_start, epoch0)


def _objectives(datafit, state, epoch_runner, C, gap_sampling):
    """Primal, dual and (smoothed hinge) entropy term at ``C``; with ``gap_sampling``, also
    every example's gap, into ``state.gaps``."""
    entropy_term = 0.0
    if datafit.kind == "hinge":
        dual, entropy_term = hinge_dual(datafit, state, C)
    else:
        dual = l2_dual(datafit, state.terms, state.w, C)
    if gap_sampling:
        primal, losses, margins = epoch_runner.primal(state.primal_weights, C,
                                                      margins_of=state.mu)
        state.gaps = example_gaps(datafit, state, C, losses, margins)
    else:
        primal = epoch_runner.primal(state.primal_weights, C)
    return primal, dual, entropy_term


def _sharpen(datafit, state):
    """Smoothed hinge: the dual terms keep their expected losses, the entropies weigh less."""
    expected = datafit.expected_losses(state.mu)
    state.terms = expected + (state.terms - expected) / BETA_GROWTH
    state.beta *= BETA_GROWTH
    state.etas = sharpened_rates(state.etas, BETA_GROWTH)


def new_examples_state(structure, batch, Y, *, loss="log", C=1.0, sample_weight=None,
                       eta0=0.5, smoothing=False, kept=None):
    """Dual variables for new examples, after those ``kept`` of earlier ones (``partial_fit``).

    The new examples' distributions start near the truth (see
    :func:`initial_state`): their share of ``w(alpha)`` is about 0, so the
    weights start at the center of the proximal step (:func:`eg_solve`'s
    ``center``), a sensible dual point at any ``C``.  The smoothed hinge
    (``smoothing``) continues ``kept``'s temperature, or starts one as a cold
    fit does.
    """
    datafit = StructuredLoss(structure, batch, Y, loss, sample_weight)
    state = initial_state(datafit, eta0, near_truth=True)
    if kept is not None:
        return joined_states(kept, state)
    if smoothing and loss == "hinge":
        state.beta = min(1.0, BETA_START_C / C)
    return state
