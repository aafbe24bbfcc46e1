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
the sharper problem's curvature requires, :func:`sharpened_rates`; each rate
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

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

import numpy as np
from joblib import effective_n_jobs

from ..structures._kernel import empty_scale, specialize
from . import _eg_kernels
from ._chunks import ExampleChunks
from ._objective import example_losses, score_losses, segment_sums

__all__ = ["EGResult", "EGState", "eg_solve", "next_annealed_C", "predict_marginals",
           "predict_outputs", "uniform_start_C"]

LOSSES = {"log": _eg_kernels.LOG_LOSS, "hinge": _eg_kernels.HINGE_LOSS}
ORDERS = ("random", "shuffle", "cyclic", "gap")
#: Kernel operations the online epoch needs.
ONLINE_KERNEL_OPERATIONS = ("part_scores", "add_features", "marginals")
#: ... and those that let it evaluate the hinge primal inside numba too.
HINGE_KERNEL_OPERATIONS = ("argmax", "encode")
#: Step halvings tried on one example before leaving it unchanged for this visit.
MAX_HALVINGS = 30
#: The hinge's cold start: every wrong part down-weighted by this many nats, so that
#: the dual point sits near the truth (``w`` near 0) whatever ``C``.
TRUTH_LOGIT = 10.0
#: Smoothed hinge: initial inverse temperature ``min(1, BETA_START_C / C)`` ...
BETA_START_C = 0.1
#: ... multiplied by ``BETA_GROWTH`` when the entropy term is at least
#: ``BETA_GATE`` times the hinge duality gap.
BETA_GROWTH = 2.0
BETA_GATE = 0.5
#: Smoothed hinge: the primal is evaluated at a running average of the pass-end
#: ``w`` over about the last ``AVERAGE_WINDOW`` of the passes (pass ``k`` enters with
#: weight ``min(1, 1 / (AVERAGE_WINDOW * k))``): ``w(alpha)`` trails the slowly sharpening
#: smoothed optimum with online noise, and its primal is several times further from the
#: optimum than the dual (on OCR letters at C=0.1, 5.4e-3 against 1.7e-3 after 63
#: passes; 3.0e-3 for the average).
AVERAGE_WINDOW = 0.1
#: The duality gap (a primal evaluation: one inference per example) is evaluated
#: after pass ``k`` and then again ``max(1, CHECK_SPACING * k)`` passes later, or
#: sooner when the rate of the last two gaps predicts ``tol`` sooner.
CHECK_SPACING = 0.25
#: Annealing: relative duality gap at the current ``C`` that lets ``C`` grow ...
ANNEALING_GATE = 0.2
#: ... by this factor, by up to ``ANNEALING_MAX_GROWTH`` when the gap is that many
#: times below the gate, or to the target once within ``ANNEALING_SNAP`` of it.
ANNEALING_GROWTH = 2.0
ANNEALING_MAX_GROWTH = 8.0
ANNEALING_SNAP = 1.1
#: ``order="gap"``: share of the visits drawn uniformly; the rest are drawn in
#: proportion to the examples' duality gaps (per part, :func:`gap_visit_probabilities`)
#: at the last gap evaluation, which go stale as the other examples move ``w`` (a gap
#: then small may have grown).  Passes to a relative gap of 1e-3 on CoNLL-2000
#: (systematic draws, see :func:`visit_order`): at C=5, 65 (uniform permutations:
#: 99), at C=50 256 (permutations: 1.1e-2 after 300), at C=0.5 21 (permutations: 24);
#: drawing in proportion to whole gaps, share 0.25 took 63, 246 and 21, share 0.5 59,
#: 250 and 21, share 0.1 259 at C=50.
GAP_UNIFORM_SHARE = 0.25


@dataclass
class EGState:
    """Dual variables of an EG fit (everything a warm start needs).

    Attributes
    ----------
    theta : ndarray of shape (n_parts_total,)
        Gibbs parameters of every example's dual distribution (None when
        :func:`eg_solve` was told not to keep them).
    mu : ndarray of shape (n_parts_total,)
        Their part marginals (idem).
    terms : ndarray of shape (n_samples,)
        Per-example dual terms (entropy, or expected loss for the hinge).
        With ``beta``, the smoothed hinge's ``E e + H / beta``.
    etas : ndarray of shape (n_samples,)
        Per-example adaptive learning rates (online solver).
    part_offsets : ndarray of shape (n_samples + 1,)
        Part layout of the examples the state belongs to.
    eta : float
        Global adaptive learning rate (batch solver).
    w : ndarray of shape (n_weights,)
        ``w(alpha)`` in the structure's weight layout, for the ``C`` it was built with.
    C : float
    schedule : tuple or None
        ``(target C, C_start, passes done, C of the next pass)`` of an
        annealing that has not reached its target yet; a warm start towards the
        same target continues it (so that fits of one pass each retrace one
        long fit).
    beta : float or None
        Inverse temperature of the smoothed hinge (online hinge with annealing);
        ``None`` for the plain duals.  A warm start continues it.
    w_average : ndarray of shape (n_weights,) or None
        Smoothed hinge: running average of ``w`` over the last passes of the
        latest fit (see ``AVERAGE_WINDOW``; a warm start begins a new one), the
        point whose primal is evaluated and returned; ``None`` otherwise.
    gaps : ndarray of shape (n_samples,) or None
        ``order="gap"``: every example's share of the duality gap at the last
        gap evaluation (:func:`example_gaps`), from which the next passes draw
        their visits, a warm start's included; ``None`` before the first.
    """

    theta: np.ndarray
    mu: np.ndarray
    terms: np.ndarray
    etas: np.ndarray
    eta: float
    part_offsets: np.ndarray
    w: np.ndarray = None
    C: float = None
    schedule: tuple = None
    beta: float = None
    w_average: np.ndarray = None
    gaps: np.ndarray = None

    @property
    def primal_weights(self):
        """The weights whose primal the fit reports: ``w_average``, else ``w``."""
        return self.w if self.w_average is None else self.w_average


@dataclass
class EGResult:
    """What :func:`eg_solve` returns: the final state and the per-pass history."""

    state: EGState
    history: dict = field(default_factory=dict)
    n_iter: int = 0
    converged: bool = False


def next_annealed_C(C, C_start, epoch, C_now, primal, gap, max_growth=ANNEALING_MAX_GROWTH):
    """``C`` of pass ``epoch + 1`` of the annealing (section 7.1.1) towards ``C``.

    The paper moves ``C`` from an easy value to the target on a fixed schedule:
    10 times the target (paper convention) for five passes, then an excess that
    decays by 0.7 per pass; here, from ``C_start``, ``C / (1 + (C / C_start - 1)
    * 0.7**(epoch - 5))``.  A fixed schedule wastes passes where EG keeps up
    easily (small ``C``), so ``C`` also doubles after every pass that ends
    within a relative duality gap of ``ANNEALING_GATE`` at the current ``C``
    (each ``C`` solved loosely before moving, as on the warm-started path of
    section 7.1.2), and by 4 or 8 (up to ``max_growth``) when the gap is that
    many times below the gate (at small ``C`` one pass solves each ``C`` of
    the log loss to a few percent: on EWT dependency parsing ten doublings from
    ``C = 8e-5`` each ended at gaps of 5-7%; the plain hinge, annealed so for
    the adaptive M3N's inner steps, stalled the EM after such jumps and keeps
    ``max_growth=2``): the faster of the two rules wins, the schedule
    guarantees arrival.  The target is taken once within 10% of it.
    """
    if C_now >= C:
        return C
    scheduled = C / (1.0 + (C / C_start - 1.0) * 0.7 ** max(epoch - 4, 0))
    gated = C_now
    if gap <= ANNEALING_GATE * abs(primal):
        # a power of the growth factor: the C values stay exact multiples of C_start
        # (gaps that differ by rounding give the same path)
        below_gate = ANNEALING_GATE * abs(primal) / max(gap, 1e-300)
        powers = np.floor(np.log(below_gate) / np.log(ANNEALING_GROWTH))
        gated = C_now * min(max_growth, ANNEALING_GROWTH ** max(1.0, powers))
    C_next = max(scheduled, gated, C_now)
    return C if C_next * ANNEALING_SNAP >= C else C_next


def uniform_start_C(problem, state, expected=None):
    """Largest ``C`` at which the uniform start is a better dual point than ``w = 0``.

    At uniform ``alpha``, ``w(alpha) = C g0`` with ``g0 = sum_i s_i (phi(x_i, y_i)
    - E_uniform phi(x_i, y))`` and ``D = C sum_i s_i term_i - C^2 ||g0||^2 / 2``,
    while the point mass on the truth (``w = 0``) has ``D = 0``.  Beyond
    ``2 sum_i s_i term_i / ||g0||^2`` the quadratic term dominates: ``w(alpha)``
    grows like ``C`` times the number of examples, far beyond the optimum's
    weights, every example saturates and EG crawls.  Annealing starts here,
    where the uniform start is sensible.  ``expected``: ``F mu`` of the
    state's marginals, when known (see :meth:`_Problem.weights`).
    """
    g0 = problem.weights(state.mu, 1.0, expected)
    norm = float(g0 @ g0)
    entropy = float(problem.sample_weight @ state.terms) + problem.dual_constant
    return 2.0 * entropy / norm if norm > 0.0 and entropy > 0.0 else np.inf


# ----------------------------------------------------------------- helpers
def batch_marginals(structure, chunks, theta):
    """Marginals and log-partitions of every example (in parallel chunks)."""
    out = chunks.map(structure.marginals, (theta,))
    return np.concatenate([m for m, _ in out]), np.concatenate([z for _, z in out])


def dual_terms(loss, mu, log_partition, theta, part_losses, part_offsets):
    """Entropy (log loss) or expected loss (hinge) of each example's distribution."""
    if loss == "log":
        return log_partition - segment_sums(mu * theta, part_offsets)
    return segment_sums(mu * part_losses, part_offsets)


def predict_outputs(structure, batch, w, n_jobs=None):
    """MAP outputs of every example under weights ``w`` (flat over output units)."""
    out = ExampleChunks(structure, batch, n_jobs).map(_chunk_argmax, shared=(structure, w))
    return np.concatenate(out)


def predict_marginals(structure, batch, w, n_jobs=None):
    """Part marginals of every example under the Gibbs distribution of ``w``."""
    out = ExampleChunks(structure, batch, n_jobs).map(_chunk_marginals, shared=(structure, w))
    return np.concatenate(out)


def _chunk_argmax(sub, structure, w):
    return structure.argmax(sub, structure.part_scores(sub, w))


def _chunk_marginals(sub, structure, w):
    return structure.marginals(sub, structure.part_scores(sub, w))[0]


# ------------------------------------------------------------------ the solver
class _Problem:
    """Fixed data of one fit: batch, encodings, losses, weights, parallel chunks."""

    def __init__(self, structure, batch, Y, loss, sample_weight, n_jobs, feature_scale=None):
        self.structure = structure
        self.feature_scale = feature_scale
        self.batch = batch
        self.Y = Y
        self.loss = loss
        self.n_samples = batch.n_samples
        self.sample_weight = (
            np.ones(batch.n_samples) if sample_weight is None
            else np.ascontiguousarray(sample_weight, dtype=np.float64)
        )
        self.truth = structure.encode(batch, Y)
        self.part_losses = structure.part_losses(batch, Y)
        # the per-example dual terms are kept without the loss offsets (constant over
        # alpha): their weighted sum enters the hinge dual here
        self.loss_offsets = structure.loss_offsets(batch, Y) if loss == "hinge" else None
        self.dual_constant = (0.0 if self.loss_offsets is None
                              else float(self.sample_weight @ self.loss_offsets))
        self.chunks = ExampleChunks(structure, batch, n_jobs)
        # the weighted observed features sum_i s_i phi(x_i, y_i), fixed during the fit
        self.observed = self.features(batch, self.truth, self.sample_weight)

    def scores(self, batch, w):
        """Part scores ``F^T (scale * w)`` (features rescaled weight-wise)."""
        return self.structure.part_scores(
            batch, w if self.feature_scale is None else self.feature_scale * w)

    def features(self, batch, z, sample_weight=None):
        """``scale * F z``."""
        out = self.structure.expected_features(batch, z, sample_weight)
        return out if self.feature_scale is None else self.feature_scale * out

    def weights(self, mu, C, expected=None):
        """``w(alpha) = C sum_i s_i (phi(x_i, y_i) - F_i mu_i)``.

        ``expected``: ``scale * sum_i s_i F_i mu_i`` when already known (batch
        EG's chunks compute it where they keep ``mu``).
        """
        if expected is None:
            expected = self.features(self.batch, mu, self.sample_weight)
        return C * (self.observed - expected)

    def expected(self, summaries):
        """``scale * F mu`` from the chunks' summaries ``(..., F_chunk mu_chunk)``."""
        expected = sum(summary[-1] for summary in summaries)
        return expected if self.feature_scale is None else self.feature_scale * expected

    def dual(self, terms, w, C):
        return C * (float(self.sample_weight @ terms) + self.dual_constant) - 0.5 * float(w @ w)

    def primal(self, w, C, losses=None):
        """``P(w)``; ``losses``: the per-example losses at ``w``, when already known."""
        if losses is None:
            losses = example_losses(self.structure, self.chunks, w, self.Y, self.loss,
                                    self.feature_scale)
        return 0.5 * float(w @ w) + C * float(self.sample_weight @ losses)


def initial_state(problem, eta0, near_truth=False, marginals=None):
    """Uniform dual distributions (``theta = 0``), the paper's starting point.

    With ``near_truth``, ``theta = -TRUTH_LOGIT * part_losses`` instead: the
    distributions concentrate on the zero-loss outputs (the truth), the dual
    point of ``w = 0``, sensible at any ``C``.  ``marginals``: their marginals
    and log-partitions when already computed (batch EG's chunks compute them
    where they keep them).
    """
    theta = (-TRUTH_LOGIT * problem.part_losses if near_truth
             else np.zeros(int(problem.batch.part_offsets[-1])))
    mu, log_partition = (batch_marginals(problem.structure, problem.chunks, theta)
                         if marginals is None else marginals)
    return EGState(
        theta=theta, mu=mu,
        terms=dual_terms(problem.loss, mu, log_partition, theta, problem.part_losses,
                         problem.batch.part_offsets),
        etas=np.full(problem.n_samples, float(eta0)), eta=float(eta0),
        part_offsets=problem.batch.part_offsets.copy(),
    )


def _attach(problem, state, C, expected=None):
    """Make a (possibly warm) state consistent with this problem and ``C``.

    The marginals and entropies depend on ``theta`` alone, so a warm start
    only rebuilds ``w`` (one product with the feature map, no inference) and,
    for the hinge, the expected losses under the current labels (and, smoothed,
    the entropies, from one inference per example).  ``expected``: ``F mu`` of
    the state's marginals, when known (see :meth:`_Problem.weights`).
    """
    if problem.loss == "hinge":
        state.terms = expected_losses(problem, state)
    if problem.loss == "hinge" and state.beta is not None:
        mu, log_partition = batch_marginals(problem.structure, problem.chunks, state.theta)
        state.terms += dual_terms("log", mu, log_partition, state.theta, None,
                                  problem.batch.part_offsets) / state.beta
    state.w = problem.weights(state.mu, C, expected)
    state.C = C


def expected_losses(problem, state):
    """``E_{alpha_i} e(y_i, y)`` of every example (without the loss offsets)."""
    return segment_sums(state.mu * problem.part_losses, problem.batch.part_offsets)


def example_gaps(problem, state, C, losses, margins):
    """Every example's share of the duality gap, ``C s_i (loss_i(w) + margin_i - term_i)``.

    ``losses`` and ``margins`` are the losses and expected margins under the
    state's marginals (:func:`example_losses` with ``margins_of``) at the ``w``
    whose primal was evaluated, ``term_i`` the example's dual term.  Each share
    is at least 0 at any ``w``: ``C s_i KL(alpha_i || p_w(. | x_i))`` for the log
    loss, the Frank-Wolfe gap of example ``i``'s block for the hinge (the
    loss-augmented maximum against its mean under ``alpha_i``); at ``w =
    w(alpha)`` they sum to ``P(w) - D(alpha)``.
    """
    if problem.loss == "log":
        terms = state.terms
    else:  # the hinge's expected losses, without the smoothing's entropies
        terms = expected_losses(problem, state) + problem.loss_offsets
    return np.maximum(C * problem.sample_weight * (losses + margins - terms), 0.0)


def gap_visit_probabilities(gaps, part_counts):
    """Visiting probabilities of ``order="gap"``; None (uniform) when every gap is 0.

    ``GAP_UNIFORM_SHARE`` uniform, the rest in proportion to each example's gap
    per part (``part_counts``: its number of parts), the gap a unit of its
    inference work can remove: the parts measure the work of a visit (tokens on
    a chain; arcs and more on a dependency tree, where in proportion to the gap
    alone the visits went to longer sentences and an EWT pass took 1.75x as
    long: the gap grows with the sentence, correlation 0.68 with its length, so
    the average visit had 3.1x the cubic inside-outside cost; per part 0.57x).
    """
    density = gaps / np.maximum(part_counts, 1)
    total = float(density.sum())
    if not total > 0.0:
        return None
    return GAP_UNIFORM_SHARE / len(gaps) + (1.0 - GAP_UNIFORM_SHARE) * density / total


def visit_order(order, n, rng, probabilities=None):
    """The examples one online pass visits, in turn (``probabilities``: ``order="gap"``).

    ``order="gap"`` draws its ``n`` visits systematically: laid end to end in a
    random order, the examples cover ``n p_i`` of a line of length ``n``, and
    the visits fall at ``u, u + 1, ...`` for one uniform ``u``, so that example
    ``i`` is visited ``floor(n p_i)`` or ``ceil(n p_i)`` times, then the visits
    are shuffled.  Uniform probabilities give a permutation, as "shuffle"
    (which beats independent draws: on the OCR letters main job 19 passes,
    against 23 for independent draws from the gap probabilities and 18 for
    systematic ones).
    """
    if order == "random":
        visits = rng.randint(0, n, size=n)
    elif order == "gap" and probabilities is not None:
        examples = rng.permutation(n)
        ends = np.cumsum(n * probabilities[examples])
        visits = examples[np.minimum(np.searchsorted(ends, rng.uniform() + np.arange(n)), n - 1)]
        rng.shuffle(visits)
    elif order in ("shuffle", "gap"):  # gap sampling before the first gap evaluation
        visits = rng.permutation(n)
    else:
        visits = np.arange(n)
    return visits.astype(np.int64)


def hinge_dual(problem, state, C):
    """The hinge dual and the smoothing's entropy term ``C sum_i s_i H_i / beta``."""
    if state.beta is None:  # unsmoothed: the dual terms are the expected losses
        return problem.dual(state.terms, state.w, C), 0.0
    expected = expected_losses(problem, state)
    entropy_term = (C * float(problem.sample_weight @ (state.terms - expected))
                    if state.beta is not None else 0.0)
    return problem.dual(expected, state.w, C), entropy_term


def sharpened_rates(etas, growth):
    """Per-example rates of the smoothed hinge after ``beta`` grows by ``growth``.

    A rate limited by the curvature of ``||w||^2`` against the entropy's,
    ``kappa_i = C s_i beta ||F_i||^2`` in the model ``eta_i = 1 / (1 + kappa_i)``,
    becomes ``1 / (1 + growth kappa_i) = eta_i / (growth - (growth - 1) eta_i)``;
    a rate of 1 or more (no such limit) stays.  Without this, every example
    spends one rejected step per sharpening (on OCR letters at C=0.1, about 10
    of 65 passes); the step rule's model regrows a rate that was not limited.
    """
    return etas / (growth - (growth - 1.0) * np.minimum(etas, 1.0))


def passes_to_next_check(passes, relative_gap, rate, tol):
    """Whole passes to run before evaluating the duality gap again (see ``CHECK_SPACING``).

    ``relative_gap``: that of the evaluation after ``passes``; ``rate``: the
    change of its logarithm per pass between the last two evaluations at which
    it fell (None before), see :func:`gap_rate`.  (The solver counts them in
    steps tried, exactly: counted in fractional passes, rounding once put an
    evaluation a pass late, CoNLL-2000's certification at pass 65 instead of 64.)
    """
    wait = max(1.0, np.floor(CHECK_SPACING * passes))
    if rate is not None and tol > 0 and relative_gap > tol:
        wait = min(wait, max(1.0, np.ceil(np.log(tol / relative_gap) / rate)))
    return int(wait)


def gap_rate(previous, current, rate):
    """The gap's rate for :func:`passes_to_next_check` after the evaluation ``current``.

    ``previous`` and ``current`` are ``(passes, relative gap)`` of the last two
    evaluations (``previous`` may be None).  When the gap did not fall (the
    online primal is noisy: with gap sampling it rose from 1.07e-3 to 1.15e-3 in
    one CoNLL-2000 pass), the last rate at which it fell stands: without it the
    next evaluation waited a quarter of the passes done, 14 passes at a gap
    within 15% of the tolerance.
    """
    if previous is not None and 0 < current[1] < previous[1]:
        return np.log(current[1] / previous[1]) / (current[0] - previous[0])
    return rate


def online_threads(n_jobs, n_samples):
    """Threads of the online epoch: one per joblib worker, at most one per core."""
    if n_jobs in (None, 1):
        return 1
    return int(max(1, min(effective_n_jobs(n_jobs), os.cpu_count() or 1, n_samples)))


class _OnlineEpoch:
    """Online epochs inside numba, through the structure's kernel operations.

    With ``n_threads > 1`` the examples are dealt to threads (example ``i`` to
    thread ``i % n_threads``, so that no two threads touch one example's dual
    variables) that run the epoch at once on one shared ``w`` without locks
    (asynchronous updates, as in Hogwild!): a step reads ``w`` with the other
    threads' latest steps in it.  Two threads adding to one weight at the same
    instant can lose an addition (weights every example touches, such as a
    chain's transitions, drifted by up to 0.5% in a pass), so after each pass
    ``w`` is rebuilt exactly as ``w(alpha)`` from the marginals (one product
    with the feature map, each thread summing its examples' share): every pass
    starts from the exact ``w``, and every dual, primal and gap the solver
    reports is exact.  On CoNLL-2000 the fit then needs as many passes as on
    one thread (108 against 100 to a relative gap of 1e-3; rebuilding only
    before gap evaluations took 127).  Threaded passes are not reproducible bit
    for bit (the threads' interleaving varies).  The gap evaluations run on the
    same threads (each example's loss is its own: no race), through the
    structure's numba loss kernels when it has their operations.
    """

    def __init__(self, problem, n_threads=1):
        structure, batch = problem.structure, problem.batch
        self.problem = problem
        self.n_threads = n_threads
        self.kernel = specialize(_eg_kernels.online_epoch, structure.kernel_ops)
        self.data = structure.kernel_data(batch, training=True)
        self.scale = (empty_scale() if problem.feature_scale is None
                      else structure.kernel_weights(batch, problem.feature_scale))
        self.features_kernel = None  # compiled for the first threaded pass
        # the gap evaluations' per-example losses in numba as well, on the epoch's
        # threads: called as (examples, w, scale, out, mu, margins)
        self.loss_kernel = None
        fixed = (self.data, batch.part_offsets, batch.unit_offsets, problem.truth)
        if problem.loss == "log":  # (online EG has marginals, hence log_partition)
            self.loss_kernel = specialize(_eg_kernels.log_losses, structure.kernel_ops)
        elif structure.kernel_supports(*HINGE_KERNEL_OPERATIONS):
            self.loss_kernel = specialize(_eg_kernels.hinge_losses, structure.kernel_ops)
            fixed += (problem.part_losses, problem.loss_offsets)
        self.loss_kernel_args = fixed

    def primal(self, w, C, margins_of=None):
        """The primal objective at ``w``, as :meth:`_Problem.primal` computes it.

        With ``margins_of`` (part marginals), return ``(primal, losses,
        margins)``: also the per-example losses and expected margins of
        :func:`example_losses`.
        """
        p = self.problem
        if self.loss_kernel is None and margins_of is None:
            return p.primal(w, C)
        if self.loss_kernel is None:
            losses, margins = example_losses(p.structure, p.chunks, w, p.Y, p.loss,
                                             p.feature_scale, margins_of=margins_of)
        else:
            losses, margins = np.empty(p.n_samples), np.empty(p.n_samples)
            w_kernel = p.structure.kernel_weights(p.batch, w)
            mu = np.empty(0) if margins_of is None else margins_of

            def share(examples):
                self.loss_kernel(examples, *self.loss_kernel_args, w_kernel, self.scale, losses,
                                 mu, margins)
                return 0

            self._on_threads(share, np.arange(p.n_samples, dtype=np.int64))
        primal = p.primal(w, C, losses)
        return primal if margins_of is None else (primal, losses, margins)

    def run(self, state, order, budget, loss, adaptive, eta, C):
        p = self.problem
        w_kernel = p.structure.kernel_weights(p.batch, state.w)
        smoothed = loss == "hinge" and state.beta is not None

        def epoch(examples):  # a thread's share of the order and of the budget
            return self.kernel(
                examples, int(np.ceil(budget * len(examples) / max(len(order), 1))),
                _eg_kernels.SMOOTHED_HINGE if smoothed else LOSSES[loss],
                adaptive, eta, MAX_HALVINGS, self.data, p.batch.part_offsets, p.part_losses,
                p.sample_weight, C, w_kernel, self.scale, state.theta, state.mu, state.terms,
                state.etas, state.beta if smoothed else 0.0,
            )

        tries = self._on_threads(epoch, order)
        if self.n_threads == 1:
            state.w = p.structure.contract_weights(p.batch, w_kernel)
        else:
            state.w = self.rebuilt_weights(state.mu, C, w_kernel.shape[0])
        return tries

    def _on_threads(self, work, examples):
        """The sum of ``work(share)`` over the epoch's threads, example ``i`` in the share
        of thread ``i % n_threads``."""
        if self.n_threads == 1:
            return work(examples)
        with ThreadPoolExecutor(self.n_threads) as pool:
            return sum(pool.map(work, [examples[examples % self.n_threads == k]
                                       for k in range(self.n_threads)]))

    def rebuilt_weights(self, mu, C, n_weights):
        """``w(alpha)`` from the marginals, ``F mu`` summed on the epoch's threads
        (``n_weights``: the length of the kernel layout)."""
        p = self.problem
        if self.features_kernel is None:
            self.features_kernel = specialize(_eg_kernels.add_expected_features,
                                              p.structure.kernel_ops)

        def share(examples):
            w = np.zeros(n_weights)
            self.features_kernel(examples, self.data, p.batch.part_offsets,
                                 p.batch.unit_offsets, mu, p.sample_weight, self.scale, w)
            return w

        expected = self._on_threads(share, np.arange(p.n_samples, dtype=np.int64))
        return p.weights(None, C, p.structure.contract_weights(p.batch, expected))


@dataclass
class _ChunkDual:
    """Batch EG's dual variables of one chunk of examples, kept where the chunk lives.

    ``scores`` are the part scores of the shared ``w`` (see
    :meth:`_BatchPasses.share`) once the duality gap has been evaluated there,
    kept for the step that follows; None once the chunk has stepped.
    """

    structure: object
    batch: object
    y: np.ndarray
    part_losses: np.ndarray
    sample_weight: np.ndarray
    theta: np.ndarray
    mu: np.ndarray
    scores: np.ndarray = None


def _chunk_dual(batch, theta, mu, Y, sample_weight, structure):
    return _ChunkDual(structure, batch, Y, structure.part_losses(batch, Y), sample_weight,
                      theta, mu), None


def _chunk_uniform_dual(batch, Y, sample_weight, structure):
    """The uniform start (``theta = 0``) of a chunk; its marginals, log-partitions and
    ``F mu``."""
    theta = np.zeros(int(batch.part_offsets[-1]))
    mu, log_partition = structure.marginals(batch, theta)
    return (_chunk_dual(batch, theta, mu, Y, sample_weight, structure)[0],
            (mu, log_partition, structure.expected_features(batch, mu, sample_weight)))


def _chunk_scores(dual, w_shared):
    """The chunk's part scores of the shared ``w``: the kept ones, if any."""
    if dual.scores is not None:
        return dual.scores
    return dual.structure.part_scores(dual.batch, w_shared)


def _chunk_evaluate(dual, w_shared, factor, loss):
    """The primal's losses of the chunk's examples at ``factor * w_shared``.

    The chunk keeps the part scores for the step (``w`` is linear in ``C``:
    ``factor`` carries a change of ``C`` since ``w`` was shared).
    """
    scores = _chunk_scores(dual, w_shared)
    losses, _ = score_losses(dual.structure, dual.batch,
                             scores if factor == 1.0 else factor * scores, dual.y, loss)
    return replace(dual, scores=scores), losses


def _chunk_step(dual, w_shared, factor, step, loss):
    """Figure 1's step on one chunk from ``w = factor * w_shared``: new dual variables;
    their terms and ``F mu``."""
    structure, batch = dual.structure, dual.batch
    scores = _chunk_scores(dual, w_shared)
    if factor != 1.0:
        scores = factor * scores
    if loss == "log":
        theta = (1.0 - step) * dual.theta + step * scores
    else:
        theta = dual.theta + step * (dual.part_losses + scores)
    mu, log_partition = structure.marginals(batch, theta)
    terms = dual_terms(loss, mu, log_partition, theta, dual.part_losses, batch.part_offsets)
    new = replace(dual, theta=theta, mu=mu, scores=None)
    return new, (terms, structure.expected_features(batch, mu, dual.sample_weight))


def _chunk_parts(dual):
    return dual.theta, dual.mu


class _BatchPasses:
    """Batch EG (Figure 1): every example steps at once; adaptive global rate.

    The dual variables live in chunks (:meth:`ExampleChunks.resident`): on a
    cluster each worker keeps its chunk's ``theta`` and ``mu`` across passes.
    Each new ``w`` is shared with the chunks once (:meth:`share`); a step
    brings back the dual terms and ``F mu`` of every chunk; the primal is
    evaluated on the chunks too (:meth:`primal`), whose part scores the next
    step reuses: a pass ships ``w`` and scores the parts once, duality gap or
    not.  The dual variables come back into the state in :meth:`store`.
    """

    def __init__(self, problem, duals):
        self.problem, self.duals = problem, duals
        self.shared_C = None  # C of the w shared with the chunks; None: not shared yet

    @classmethod
    def from_state(cls, problem, state):
        """The chunks take the dual variables of ``state`` (a warm start)."""
        duals, _ = problem.chunks.resident(
            _chunk_dual, part_arrays=(state.theta, state.mu), **cls._per_chunk(problem))
        return cls(problem, duals)

    @classmethod
    def uniform(cls, problem):
        """The chunks create the uniform start (a cold start): nothing of the size of
        the parts goes out to them.  Returns the runner, the start's marginals and
        log-partitions, and its ``F mu`` (see :meth:`_Problem.weights`)."""
        duals, summaries = problem.chunks.resident(_chunk_uniform_dual,
                                                   **cls._per_chunk(problem))
        mu, log_partition = (np.concatenate(arrays) for arrays in list(zip(*summaries))[:2])
        return cls(problem, duals), (mu, log_partition), problem.expected(summaries)

    @staticmethod
    def _per_chunk(problem):
        return dict(unit_arrays=(problem.Y,), example_arrays=(problem.sample_weight,),
                    shared=(problem.structure,))

    def share(self, w, C):
        """Send ``w`` (of ``C``) to the chunks, for the evaluations and steps from it."""
        scale = self.problem.feature_scale
        self.w_shared = self.problem.chunks.share(w if scale is None else scale * w)
        self.shared_C = C

    def primal(self, w, C):
        """``P(w)`` at the current ``w = w(alpha)`` (of ``C``), from the chunks' part scores."""
        p = self.problem
        if self.shared_C is None:
            self.share(w, C)
        self.duals, losses = p.chunks.advance(
            _chunk_evaluate, self.duals, shared=(self.w_shared, C / self.shared_C, p.loss))
        return p.primal(w, C, np.concatenate(losses))

    def run(self, state, budget, loss, adaptive, eta, C):
        p = self.problem
        if self.shared_C is None:
            self.share(state.w, state.C)
        step = state.eta if adaptive else eta
        old_dual = p.dual(state.terms, state.w, C)
        tries = 0
        while tries < min(max(budget, 1), MAX_HALVINGS + 1):
            tries += 1
            duals, summaries = p.chunks.advance(
                _chunk_step, self.duals, shared=(self.w_shared, C / self.shared_C, step, loss))
            terms = np.concatenate([chunk_terms for chunk_terms, _ in summaries])
            w = p.weights(None, C, p.expected(summaries))
            if not adaptive or p.dual(terms, w, C) >= old_dual:
                self.duals, state.terms, state.w = duals, terms, w
                self.share(w, C)
                step *= 1.05
                break
            step *= 0.5
        if adaptive:
            state.eta = step
        return tries * p.n_samples

    def store(self, state):
        """Bring the chunks' dual variables back into ``state``."""
        parts = self.problem.chunks.collect(self.duals, _chunk_parts)
        state.theta = np.concatenate([theta for theta, _ in parts])
        state.mu = np.concatenate([mu for _, mu in parts])


def eg_solve(
    structure, batch, Y, *, loss="log", C=1.0, sample_weight=None, solver="online",
    order="shuffle", learning_rate="adaptive", eta0=0.5, tol=1e-4, max_iter=100,
    annealing=False, state=None, random_state=None, n_jobs=None, verbose=0, callback=None,
    feature_scale=None, keep_dual=True,
):
    """Minimise ``1/2||w||^2 + C sum_i s_i loss_i(w)`` by EG on the dual.

    Parameters
    ----------
    structure : BaseStructure
        Must support ``part_scores``, ``expected_features``, ``encode``,
        ``part_losses``, ``marginals`` (and ``loss_augmented_argmax`` for the
        hinge); the online solver also needs the kernel operations
        ``ONLINE_KERNEL_OPERATIONS``.
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
        Section 7: per-example (online) or global (batch) rate, halved until
        the dual improves, then multiplied by 1.05 (``_eg_kernels.RATE_GROWTH``;
        online EG on the log loss: ``LOG_LOSS_RATE_GROWTH``).  A float is a
        fixed rate.
    eta0 : float
        Initial adaptive rate.
    tol : float
        Stop when ``(primal - dual) <= tol * |primal|``.  The gap (one
        inference per example) is evaluated on a geometric schedule (see
        ``CHECK_SPACING``), after every pass while ``C`` is annealed, and after
        every pass when ``tol=0`` (a training curve).
    max_iter : float
        Maximum number of effective passes (step sizes tried / n_samples).
    annealing : bool or "C"
        Section 7.1.1, for a cold start: begin at ``min(C, uniform_start_C)``
        (see :func:`uniform_start_C`) and move ``C`` to its target as in
        :func:`next_annealed_C`.  For the hinge with the online solver, anneal
        the temperature of the smoothed hinge instead, from a start near the
        truth (see the module docstring); ``"C"`` anneals ``C`` for every loss
        (the inner M3N steps of the adaptive M3N need it: at ``C = 1e4`` on
        their rescaled features the smoothed start stalled).
    state : EGState, optional
        Dual variables of an earlier fit on the same examples (warm start).
    random_state : numpy.random.RandomState
    n_jobs : int, optional
        joblib workers for batch marginals and primal/gap evaluation; the
        online solver instead runs its passes and its evaluations on that many
        threads (at most one per core), the passes sharing ``w``
        asynchronously (see ``_OnlineEpoch``).
    verbose : int
    callback : callable, optional
        Called as ``callback(epoch, state)`` after every pass.
    feature_scale : ndarray of shape (n_weights,), optional
        Solve the problem whose features are rescaled weight by weight,
        ``phi'(x, r) = feature_scale * phi(x, r)`` (in the structure's weight
        layout), e.g. for the EM reweighting of the adaptive M3N; the state's
        ``w`` is then ``w(alpha)`` of the rescaled problem; the online epoch
        applies the rescaling inside numba.
    keep_dual : bool, default=True
        Return the dual variables ``theta`` and ``mu`` in the state (what a
        warm start needs).  With False they are None, and batch EG does not
        bring them back from its chunks (on a cluster, from the workers).

    Returns
    -------
    EGResult
    """
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {sorted(LOSSES)}, got {loss!r}.")
    if order not in ORDERS:
        raise ValueError(f"order must be one of {sorted(ORDERS)}, got {order!r}.")
    if solver == "online":
        structure.require_kernel(ONLINE_KERNEL_OPERATIONS, "online EG",
                                 "; use solver='batch' for a structure with batch marginals only")
    adaptive = isinstance(learning_rate, str)
    eta = eta0 if adaptive else float(learning_rate)
    rng = random_state if random_state is not None else np.random.RandomState(0)
    problem = _Problem(structure, batch, Y, loss, sample_weight, n_jobs, feature_scale)
    n = problem.n_samples

    cold_start = state is None
    smoothed = annealing is True and loss == "hinge" and solver == "online"
    expected = None  # scale * F mu of the state's marginals, when known
    if cold_start and solver == "batch":  # created where batch EG keeps it, on the chunks
        epoch_runner, marginals, expected = _BatchPasses.uniform(problem)
        state = initial_state(problem, eta0, marginals=marginals)
    elif cold_start:
        state = initial_state(problem, eta0, near_truth=smoothed)
        if smoothed:
            state.beta = min(1.0, BETA_START_C / C)
    elif not np.array_equal(state.part_offsets, batch.part_offsets):
        raise ValueError(
            f"warm start: the stored dual variables cover {len(state.part_offsets) - 1} "
            f"examples with {state.part_offsets[-1]} parts but this training set has {n} "
            f"examples with {batch.part_offsets[-1]} parts; fit on the same examples or set "
            "warm_start=False."
        )
    # annealing starts a cold fit (uniform duals) where they make sense; a warm
    # start already has a good dual point, unless it stopped while annealing
    C_now = C_next = C_start = C
    epoch0 = 0
    if annealing and cold_start and not smoothed:
        C_now = C_next = C_start = min(C, uniform_start_C(problem, state, expected))
    elif annealing and state.schedule is not None and state.schedule[0] == C:
        _, C_start, epoch0, C_next = state.schedule
        C_now = state.C
    _attach(problem, state, C_now, expected)
    state.w_average = state.w.copy() if state.beta is not None and AVERAGE_WINDOW > 0 else None

    if solver == "online":
        epoch_runner = _OnlineEpoch(problem, online_threads(n_jobs, n))
    elif not cold_start:
        epoch_runner = _BatchPasses.from_state(problem, state)
    history = {k: [] for k in ("passes", "C", "dual", "primal", "gap", "seconds",
                               "eval_seconds", "beta")}
    total_tries, epoch, converged = 0, 0, False
    budget_total = int(np.ceil(max_iter * n))
    check_at, last_check, rate, pass_seconds = 0, None, None, 0.0  # check_at: steps tried
    gap_sampling = order == "gap" and solver == "online"
    part_counts = np.diff(batch.part_offsets)
    visit_probabilities = (gap_visit_probabilities(state.gaps, part_counts)
                           if gap_sampling and state.gaps is not None else None)
    while total_tries < budget_total:
        epoch += 1
        if C_next != C_now:  # w(alpha) is linear in C
            state.w *= C_next / C_now
            state.C = C_now = C_next
        start = time.perf_counter()
        budget = budget_total - total_tries
        if solver == "online":
            visits = visit_order(order, n, rng, visit_probabilities)
            total_tries += epoch_runner.run(state, visits, min(budget, n), loss, adaptive, eta,
                                            C_now)
        else:
            total_tries += epoch_runner.run(state, budget // n, loss, adaptive, eta, C_now)
        pass_seconds += time.perf_counter() - start
        passes = total_tries / n
        if state.w_average is not None:
            weight = min(1.0, 1.0 / (AVERAGE_WINDOW * epoch))
            state.w_average += weight * (state.w - state.w_average)
        if callback is not None:
            if solver == "batch":
                epoch_runner.store(state)
            callback(epoch, state)
        if not (tol == 0 or C_now != C or total_tries >= budget_total
                or total_tries >= check_at):
            continue
        start = time.perf_counter()
        if loss == "hinge":
            dual, entropy_term = hinge_dual(problem, state, C_now)
        else:
            dual = problem.dual(state.terms, state.w, C_now)
        if gap_sampling:
            primal, losses, margins = epoch_runner.primal(state.primal_weights, C_now,
                                                          margins_of=state.mu)
            state.gaps = example_gaps(problem, state, C_now, losses, margins)
            visit_probabilities = gap_visit_probabilities(state.gaps, part_counts)
        else:
            primal = epoch_runner.primal(state.primal_weights, C_now)
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
        pass_seconds = 0.0
        if C_now == C and gap <= tol * abs(primal):
            converged = True
            break
        if state.beta is not None and entropy_term >= BETA_GATE * gap:
            # sharpen: the dual terms keep their expected losses, the entropies weigh less
            expected = expected_losses(problem, state)
            state.terms = expected + (state.terms - expected) / BETA_GROWTH
            state.beta *= BETA_GROWTH
            state.etas = sharpened_rates(state.etas, BETA_GROWTH)
        check = (passes, gap / max(abs(primal), 1e-300))
        rate = gap_rate(last_check, check, rate)
        check_at = total_tries + n * passes_to_next_check(passes, check[1], rate, tol)
        last_check = check
        C_next = next_annealed_C(
            C, C_start, epoch0 + epoch, C_now, primal, gap,
            max_growth=ANNEALING_MAX_GROWTH if loss == "log" else ANNEALING_GROWTH)
    if not keep_dual:
        state.theta = state.mu = None
    elif solver == "batch":
        epoch_runner.store(state)
    state.C = C_now
    state.schedule = (C, C_start, epoch0 + epoch, C_next) if C_now != C else None
    return EGResult(state=state, history={k: np.asarray(v) for k, v in history.items()},
                    n_iter=epoch, converged=converged)
