"""EG's schedules: annealing ``C``, when to evaluate the duality gap, and the order in
which online passes visit the examples."""

import numpy as np

from ._eg_dual import dual_weights


ORDERS = ("random", "shuffle", "cyclic", "gap")
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
#: then small may have grown).  On CoNLL-2000 it takes fewer passes than uniform
#: permutations at every C, and the share matters little between 0.1 and 0.5
#: (``benchmarks/results/eg_conll.md``).
GAP_UNIFORM_SHARE = 0.25


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


def uniform_start_C(datafit, state, expected=None):
    """Largest ``C`` at which the uniform start is a better dual point than ``w = 0``.

    At uniform ``alpha``, ``w(alpha) = C g0`` with ``g0 = sum_i s_i (phi(x_i, y_i)
    - E_uniform phi(x_i, y))`` and ``D = C sum_i s_i term_i - C^2 ||g0||^2 / 2``,
    while the point mass on the truth (``w = 0``) has ``D = 0``.  Beyond
    ``2 sum_i s_i term_i / ||g0||^2`` the quadratic term dominates: ``w(alpha)``
    grows like ``C`` times the number of examples, far beyond the optimum's
    weights, every example saturates and EG crawls.  Annealing starts here,
    where the uniform start is sensible.  ``expected``: ``F mu`` of the
    state's marginals, when known (see :func:`dual_weights`).
    """
    g0 = dual_weights(datafit, state.mu, 1.0, expected)
    norm = float(g0 @ g0)
    entropy = (float(datafit.sample_weight @ state.terms)
               + float(datafit.sample_weight @ datafit.loss_offsets))
    return 2.0 * entropy / norm if norm > 0.0 and entropy > 0.0 else np.inf


def gap_visit_probabilities(gaps, part_counts):
    """Visiting probabilities of ``order="gap"``; None (uniform) when every gap is 0.

    ``GAP_UNIFORM_SHARE`` uniform, the rest in proportion to each example's gap
    per part (``part_counts``: its number of parts), the gap a unit of its
    inference work can remove: the parts measure the work of a visit (tokens on
    a chain; arcs and more on a dependency tree, where a sentence's gap grows
    with its length, so that in proportion to the gap alone the visits went to
    the longest sentences and a pass cost far more inference).
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
    (independent draws, from uniform or gap probabilities, take more passes).
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
    online primal is noisy), the last rate at which it fell stands: without it
    the next evaluation would wait a quarter of the passes done, however close
    the gap was to the tolerance.
    """
    if previous is not None and 0 < current[1] < previous[1]:
        return np.log(current[1] / previous[1]) / (current[0] - previous[0])
    return rate
