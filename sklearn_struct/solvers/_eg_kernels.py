"""The online exponentiated-gradient (EG) epoch, for any structure with kernel operations.

One *visit* of example ``i`` is the randomized online EG step of Collins et al.
(2008, Figure 3) in the parts/theta parameterisation (section 4), for the log
loss, the hinge, or the hinge smoothed at inverse temperature ``beta`` (the dual
term ``E_alpha e + H(alpha) / beta``, whose step is the log-loss step on the
scaled loss-augmented scores ``beta * (e + w . phi)``): compute the
part scores ``w . phi(x_i, r)`` under the maintained weights, move ``theta_i``,
get the new marginals ``mu_i'`` and dual term by inference, and, with the
adaptive rate of section 7, keep halving the step until the dual objective
improves (then grow the example's rate by ``LOG_LOSS_RATE_GROWTH`` or
``RATE_GROWTH``).  For the smoothed hinge the
rate follows a model of the gain instead: the dual is concave in ``mu``, so
the gain of a step is at most its first-order part ``first`` (the gradient at
the old marginals dotted with ``mu_i' - mu_i``, free from the quantities the
visit computes), and the quadratic ``first t - (first - gain) t^2`` through
both peaks at ``t = first / (2 (first - gain))`` times the step tried: the next
rate (at most ``MAX_RATE_GROWTH`` times this one), or the retry of a rejected
step.  The weights absorb the change ``w += -C s_i F_i (mu_i' - mu_i)`` so that
``w == w(alpha)`` at all times: the adaptive step adds it before its test, since
adding it gives the squared norm that the dual gain needs (``add_features_norm``),
and a rejected step takes it back.

:func:`online_epoch` is a template: :func:`sklearn_struct.structures._kernel.specialize`
compiles it for a structure's :class:`~sklearn_struct.structures._kernel.KernelOps`
(``part_scores_op``, ``add_features_op``, ``marginals_op``,
``add_features_norm_op``), so the whole epoch runs inside numba for any
structure; so do the gap evaluations' per-example losses (:func:`log_losses`,
:func:`hinge_losses`).  Weights are in the structure's kernel layout.
"""

import numpy as np
from numba import njit

from ..structures._kernel import example_buffers, example_views

# The ``*_op`` names are bound by ``specialize``; flake8 cannot see them.
# flake8: noqa: F821

LOG_LOSS = 0
HINGE_LOSS = 1
SMOOTHED_HINGE = 2
#: Relative rounding level of the closed-form dual change.  Steps on saturated
#: distributions (probabilities of 1e-100) change the dual by less than the
#: rounding of its summands (log-partitions and scores of size |theta|, marginals
#: accurate to ~1e-15 absolute): such steps count as neither gain nor loss.
ROUNDING = 1e-12
#: ... and with float32 marginals (:func:`_stored`): the dual terms are those of marginals
#: rounded to about 6e-8 of each (of an expected count, for a chain's tied transitions), so
#: a step's computed gain is only that exact; a stricter test rejects steps that gain.
NARROW_ROUNDING = 1e-6
#: A number that float64 tells from 1 and float32 does not.
ONE_UP = 1.0 + 1e-12
#: Growth of an example's rate after a step that improved the dual (the section 7 rule):
#: the paper's 1.05 for the hinge, whose optimum lies on the boundary, where the rates
#: must keep growing (with 1.02 the adaptive M3N's inner hinge steps stall at large C) ...
RATE_GROWTH = 1.05
#: ... and 1.02 for the log loss, whose rates settle: an example whose rate sits at its
#: limit then has one step in 36 rejected instead of one in 15 (1.05^14 ~ 2), and fits
#: reach a given gap in as many effective passes or fewer.
LOG_LOSS_RATE_GROWTH = 1.02
#: Smoothed hinge: largest growth of an example's rate per visit under the step model.
MAX_RATE_GROWTH = 1.5
#: ... and the smallest factor a rejected step is shrunk by (the model's optimum may be
#: far below a rejected step, but not to nothing).
MIN_RATE_FACTOR = 0.05


def online_epoch(order, budget, loss, adaptive, eta_fixed, max_halvings, data, part_offsets,
                 part_losses, sample_weight, C, w, w_scratch, scale, theta, mu, terms, etas,
                 beta, gaps):
    """Visit the examples of ``order`` in turn until ``budget`` steps were tried.

    Updates ``w`` (kernel layout), ``theta``, ``mu`` (float64 or float32: :func:`_stored`),
    ``terms`` and ``etas`` in place; returns the number of step sizes tried (the paper's
    visits).  ``scale`` (kernel layout, or empty: none) rescales each weight's feature,
    ``phi'(x, r) = scale * phi(x, r)``; ``beta``: ``SMOOTHED_HINGE``'s inverse temperature.
    ``w_scratch`` (zero, of ``w``'s length) is ``add_features_norm_op``'s scratch, zero again
    on return: the caller keeps it across epochs (a fresh one would zero a whole weight vector).
    A visit to an example whose entry in ``gaps`` (log loss only; or empty) is negative
    first writes there its example's share of the duality gap at the weights it finds
    (:func:`_visit_gap`): the caller asks for the gaps it needs, as each costs a log partition.
    """
    max_parts = 0
    for i in range(part_offsets.shape[0] - 1):
        max_parts = max(max_parts, part_offsets[i + 1] - part_offsets[i])
    scores_buf, theta_buf = np.empty(max_parts), np.empty(max_parts)
    mu_buf, dmu_buf = np.empty(max_parts), np.empty(max_parts)
    part_scratch, tries = np.empty(2 * max_parts), 0
    theta_cell, mu_cell = np.empty(1, theta.dtype), np.empty(1, mu.dtype)  # see _stored
    level = ROUNDING if _stored(mu_cell, ONE_UP) > 1.0 else NARROW_ROUNDING  # mu's dtype
    for i in order:
        if tries >= budget:
            break
        p0 = part_offsets[i]
        n_parts = part_offsets[i + 1] - p0
        cs = C * sample_weight[i]
        if cs == 0.0:
            tries += 1  # a zero-weight example has no say in the dual
            continue
        scores = scores_buf[:n_parts]
        theta_new = theta_buf[:n_parts]
        mu_new = mu_buf[:n_parts]
        dmu = dmu_buf[:n_parts]
        part_scores_op(data, i, w, scale, scores)
        if gaps.shape[0] > 0 and gaps[i] < 0.0:
            log_z = log_partition_op(data, i, scores, part_scratch[:n_parts])
            gaps[i] = _visit_gap(cs, log_z, scores, mu, p0, terms[i])
        eta = etas[i] if adaptive else eta_fixed
        n_tried = 0
        accepted = False
        term = 0.0
        while True:
            n_tried += 1
            _moved_theta(loss, eta, beta, theta, p0, scores, part_losses, theta_new, theta_cell)
            log_z = marginals_op(data, i, theta_new, mu_new)
            # one sweep over the parts: the change of the marginals, its products with the
            # scores (and the smoothed hinge's gradient at the old point), the size of the
            # summands, and the sum that the example's dual term needs: the entropy of
            # alpha_i (log-linear), its expected loss (hinge), or both, the entropy at
            # weight 1 / beta (smoothed hinge)
            expectation = 0.0
            linear = 0.0
            slope = 0.0  # smoothed hinge: gradient of the dual term at the old point . dmu
            magnitude = 0.0
            for r in range(n_parts):
                mu_new[r] = _stored(mu_cell, mu_new[r])
                dmu[r] = mu_new[r] - mu[p0 + r]
                linear += dmu[r] * scores[r]
                magnitude += abs(theta_new[r]) + abs(scores[r])
                if loss == LOG_LOSS:
                    expectation += mu_new[r] * theta_new[r]
                elif loss == SMOOTHED_HINGE:
                    expectation += mu_new[r] * (theta_new[r] - beta * part_losses[p0 + r])
                    slope += dmu[r] * (part_losses[p0 + r] - theta[p0 + r] / beta)
                else:
                    expectation += mu_new[r] * part_losses[p0 + r]
            if loss == LOG_LOSS:
                term = log_z - expectation
            elif loss == SMOOTHED_HINGE:
                term = (log_z - expectation) / beta
            else:
                term = expectation
            magnitude += abs(log_z) + abs(term) + abs(terms[i])
            if not adaptive:
                accepted = True
                break
            # closed-form change of the dual D = C sum_i s_i term_i - ||w||^2 / 2 when
            # w moves by delta = -C s_i F_i dmu: w.delta = -C s_i scores.dmu, and
            # ||delta||^2 from adding delta
            for r in range(n_parts):
                dmu[r] *= -cs
            sq = add_features_norm_op(data, i, dmu, scale, w, w_scratch, part_scratch)
            gain = cs * (term - terms[i] + linear) - 0.5 * sq
            rounding = level * (cs * magnitude + sq)
            accepted, rate = _rate_after(loss, eta, gain, rounding, cs * (slope + linear))
            if accepted:
                etas[i] = rate
                break
            for r in range(n_parts):  # rejected: take the change back
                dmu[r] = -dmu[r]
            add_features_op(data, i, dmu, scale, w)
            if n_tried > max_halvings:
                etas[i] = eta
                break
            eta *= 0.5 if rate <= 0.0 else min(max(rate, MIN_RATE_FACTOR), 0.5)
        tries += n_tried
        if not accepted:
            continue
        if not adaptive:
            for r in range(n_parts):
                dmu[r] *= -cs
            add_features_op(data, i, dmu, scale, w)
        for r in range(n_parts):
            theta[p0 + r] = theta_new[r]
            mu[p0 + r] = mu_new[r]
        terms[i] = term
    return tries


@njit(cache=True, nogil=True, inline="always")
def _visit_gap(cs, log_z, scores, mu, p0, term):
    """An example's share of the log loss's duality gap at the weights whose part scores
    are ``scores`` (``log_z``: their log-partition; ``cs``: ``C s_i``; ``term``: the entropy
    of ``alpha_i``, whose marginals start at ``mu[p0]``): ``C s_i KL(alpha_i || p_w(. | x_i))
    = C s_i (log Z_i(w) - scores . mu_i - H(alpha_i))``, as :func:`._eg_dual.example_gaps`
    computes it from an evaluation; at least 0 but for rounding."""
    expected = 0.0
    for r in range(scores.shape[0]):
        expected += scores[r] * mu[p0 + r]
    return max(cs * (log_z - expected - term), 0.0)


@njit(cache=True, nogil=True, inline="always")
def _moved_theta(loss, eta, beta, theta, p0, scores, part_losses, theta_new, theta_cell):
    """Lemma 1's step of an example's ``theta`` (from ``theta[p0]``) into ``theta_new``,
    as the dual state stores it: ``theta' = theta - eta g`` with ``g`` the per-part
    gradient divided by ``s_i`` (EG in the ``s_i``-weighted KL geometry)."""
    n_parts = theta_new.shape[0]
    if loss == LOG_LOSS:
        for r in range(n_parts):
            theta_new[r] = (1.0 - eta) * theta[p0 + r] + eta * scores[r]
    elif loss == SMOOTHED_HINGE:
        for r in range(n_parts):
            theta_new[r] = ((1.0 - eta) * theta[p0 + r]
                            + eta * beta * (part_losses[p0 + r] + scores[r]))
    else:
        for r in range(n_parts):
            theta_new[r] = theta[p0 + r] + eta * (part_losses[p0 + r] + scores[r])
    for r in range(n_parts):
        theta_new[r] = _stored(theta_cell, theta_new[r])


@njit(cache=True, nogil=True, inline="always")
def _rate_after(loss, eta, gain, rounding, first):
    """The verdict on a step of rate ``eta`` from its dual ``gain`` (``first``: the
    gain's first-order part): ``(True, the example's next rate)`` or ``(False, the
    factor to shrink the step by``, at most 0: halve it)``.

    The smoothed hinge's dual is concave in ``mu``, so the gain is at most its
    first-order part; a quadratic in the step through both, ``first * t - (first -
    gain) * t^2``, peaks at ``t = first / (2 (first - gain))`` times this step.  The
    other losses follow the section 7 rule (grow on success, halve on failure).
    """
    factor = -1.0
    if loss == SMOOTHED_HINGE and first > rounding and first - gain > rounding:
        factor = first / (2.0 * (first - gain))
    if gain < -rounding:
        return False, factor
    # grow the rate only after a real improvement: steps on a saturated example change
    # nothing and must not inflate its rate
    if gain <= rounding:
        return True, eta
    if factor > 0.0:  # (a step that improves has factor >= 1/2)
        return True, eta * min(factor, MAX_RATE_GROWTH)
    return True, eta * (LOG_LOSS_RATE_GROWTH if loss == LOG_LOSS else RATE_GROWTH)


@njit(cache=True, nogil=True, inline="always")
def _stored(cell, value):
    """``value`` as the dual state stores it: rounded to the dtype of ``cell`` (a float32
    state), or unchanged (float64).

    A visit rounds the new ``theta`` before its inference and the new marginals before
    using them, so that the distribution it moves to is exactly the one the stored
    ``theta`` defines, ``w`` moves by ``F_i`` times the change of the stored marginals
    (``w == w(alpha)`` of the stored ones, without drift), and the dual term is the
    entropy's value at the stored marginals to first order (``log Z - theta . mu``).
    """
    cell[0] = value
    return cell[0]


def add_expected_features(examples, data, part_offsets, unit_offsets, mu, sample_weight, scale,
                          w):
    """``w += scale * sum_i s_i F_i mu_i`` over the ``examples`` (kernel layout).

    The threaded epoch rebuilds ``w(alpha)`` with it, one share of the examples per
    thread.
    """
    coef_buf, _, _ = example_buffers(part_offsets, unit_offsets)
    for i in examples:
        p0 = part_offsets[i]
        coef = coef_buf[:part_offsets[i + 1] - p0]
        for r in range(coef.shape[0]):
            coef[r] = sample_weight[i] * mu[p0 + r]
        add_features_op(data, i, coef, scale, w)


def log_losses(examples, data, part_offsets, unit_offsets, true_parts, Y, w, scale, out, mu,
               margins):
    """Negative log-likelihood of the ``examples`` at ``w`` (kernel layout) into ``out``.

    ``log Z_i - w . phi(x_i, y_i)`` from one ``log_partition_op`` per example,
    as :func:`sklearn_struct.solvers._objective.example_losses` computes it
    batch by batch, but without the arrays over all parts (on CoNLL-2000 each
    of those holds 4.6M numbers, and writing fresh ones took up to four times
    as long as the inference once the memory had gone back to the system).
    The targets' part vector ``true_parts`` may be empty: each example's
    encoding of its outputs ``Y`` (flat over units) is then made here
    (``encode_op``), and a fit keeps no vector of the size of the parts for it.
    Unless ``mu`` is empty, also every example's expected margin under the
    part marginals ``mu`` into ``margins``.
    """
    scores_buf, scratch_buf, _ = example_buffers(part_offsets, unit_offsets)
    encoded = true_parts.shape[0] == 0
    for i in examples:
        p0 = part_offsets[i]
        n_parts = part_offsets[i + 1] - p0
        scores = scores_buf[:n_parts]
        part_scores_op(data, i, w, scale, scores)
        if encoded:
            z = scratch_buf[:n_parts]
            encode_op(data, i, Y[unit_offsets[i]:unit_offsets[i + 1]], z)
            true_score = _true_score(scores, z, 0, mu, p0, margins, i)
        else:
            true_score = _true_score(scores, true_parts, p0, mu, p0, margins, i)
        out[i] = log_partition_op(data, i, scores, scratch_buf[:n_parts]) - true_score


@njit(cache=True, nogil=True, inline="always")
def _true_score(scores, true_parts, t0, mu, p0, margins, i):
    """``w . phi(x_i, y_i)`` from example ``i``'s part scores and its true parts (from
    ``true_parts[t0]``); unless ``mu`` is empty, its expected margin ``w . phi(x_i, y_i) -
    E_mu w . phi(x_i, y)`` (the marginals from ``mu[p0]``) into ``margins[i]``."""
    true_score = 0.0
    expected_score = 0.0
    with_margins = mu.shape[0] > 0
    for r in range(scores.shape[0]):
        true_score += true_parts[t0 + r] * scores[r]
        if with_margins:
            expected_score += mu[p0 + r] * scores[r]
    if with_margins:
        margins[i] = true_score - expected_score
    return true_score


def hinge_losses(examples, data, part_offsets, unit_offsets, true_parts, part_losses,
                 loss_offsets, w, scale, out, mu, margins):
    """Structured hinge loss of the ``examples`` at ``w`` (kernel layout) into ``out``.

    One loss-augmented argmax per example (``argmax_op`` on ``scores +
    part_losses``, the protocol's definition of ``loss_augmented_argmax``), as
    :func:`sklearn_struct.solvers._objective.example_losses` computes it batch by
    batch, but without the arrays over all parts; losses are clipped at 0.
    Unless ``mu`` is empty, also every example's expected margin under the part
    marginals ``mu`` into ``margins`` (``margins_of`` of ``example_losses``).
    """
    scores_buf, z_buf, y_buf = example_buffers(part_offsets, unit_offsets)
    for i in examples:
        p0, scores, z, y_hat = example_views(i, part_offsets, unit_offsets, scores_buf, z_buf,
                                             y_buf)
        part_scores_op(data, i, w, scale, scores)
        true_score = _true_score(scores, true_parts, p0, mu, p0, margins, i)
        for r in range(scores.shape[0]):
            scores[r] += part_losses[p0 + r]
        argmax_op(data, i, scores, y_hat)
        encode_op(data, i, y_hat, z)
        worst = 0.0
        for r in range(scores.shape[0]):
            worst += z[r] * scores[r]
        out[i] = max(worst - true_score + loss_offsets[i], 0.0)
