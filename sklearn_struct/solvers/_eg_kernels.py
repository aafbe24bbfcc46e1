"""numba kernels of the online exponentiated-gradient (EG) solver.

One *visit* of example ``i`` is the randomized online EG step of Collins et al.
(2008, Figure 3) in the parts/theta parameterisation (section 4): compute the
part scores ``w . phi(x_i, r)`` under the maintained weights, move ``theta_i``,
get the new marginals ``mu_i'`` and dual term by inference, and, with the
adaptive rate of section 7, keep halving the step until the dual objective
improves.  On acceptance the weights absorb the change
``w += -C s_i F_i (mu_i' - mu_i)`` so that ``w == w(alpha)`` at all times.

Both fast structures share the kernel: a multiclass problem is a chain whose
examples have a single token and no transition parts (inference is a softmax).

Weight layout inside these kernels is *feature-major*: the per-label input
weights are stored as ``(n_features, n_states)`` row-major, so that a non-zero
feature touches ``n_states`` contiguous numbers; then, for chains, the
``n_states**2`` transition weights and optionally the start and end weights
(as in the structure contract).  ``sklearn_struct.solvers.eg`` converts to and
from the contract layout ``W.ravel()`` with ``W`` of shape
``(n_states, n_features)``.

Features arrive as CSR arrays (``data``, ``indices``, ``indptr``) or as a dense
C-contiguous matrix flattened into ``data`` with ``dense_width`` columns
(``indices``/``indptr`` unused); ``dense_width == 0`` means CSR.
"""

import numpy as np
from numba import njit

from ..structures._chain_kernels import chain_forward_backward

LOG_LOSS = 0
HINGE_LOSS = 1
#: Relative rounding level of the closed-form dual change.  Steps on saturated
#: distributions (probabilities of 1e-100) change the dual by less than the
#: rounding of its summands (log-partitions and scores of size |theta|, marginals
#: accurate to ~1e-15 absolute): such steps count as neither gain nor loss.
ROUNDING = 1e-12


@njit(cache=True, nogil=True)
def _row_span(row, data_width, indptr):
    if data_width > 0:
        return row * data_width, (row + 1) * data_width
    return indptr[row], indptr[row + 1]


@njit(cache=True, nogil=True)
def _node_scores(data, indices, indptr, dense_width, tok0, n_tokens, n_states, w, scale, out):
    """``out[t, k] = x_t . (scale * W)[k]`` for the tokens of one example
    (feature-major ``w``; ``scale`` of length 0 means no rescaling)."""
    scaled = scale.shape[0] > 0
    for t in range(n_tokens):
        for k in range(n_states):
            out[t, k] = 0.0
        start, stop = _row_span(tok0 + t, dense_width, indptr)
        for p in range(start, stop):
            value = data[p]
            if value == 0.0:
                continue
            j = p - start if dense_width > 0 else indices[p]
            base = j * n_states
            if scaled:
                for k in range(n_states):
                    out[t, k] += value * w[base + k] * scale[base + k]
            else:
                for k in range(n_states):
                    out[t, k] += value * w[base + k]


@njit(cache=True, nogil=True)
def _add_node_features(data, indices, indptr, dense_width, tok0, n_tokens, n_states, coef,
                       scale, w):
    """``W[k] += scale * sum_t coef[t, k] x_t`` (feature-major ``w``)."""
    scaled = scale.shape[0] > 0
    for t in range(n_tokens):
        start, stop = _row_span(tok0 + t, dense_width, indptr)
        for p in range(start, stop):
            value = data[p]
            if value == 0.0:
                continue
            j = p - start if dense_width > 0 else indices[p]
            base = j * n_states
            if scaled:
                for k in range(n_states):
                    w[base + k] += value * coef[t, k] * scale[base + k]
            else:
                for k in range(n_states):
                    w[base + k] += value * coef[t, k]


@njit(cache=True, nogil=True)
def token_gram(data, indices, indptr, dense_width, n_features, unit_offsets):
    """Gram matrices ``x_t . x_s`` of the tokens of every example, flattened.

    Example ``i`` owns ``gram[gram_offsets[i]:gram_offsets[i + 1]]``, a
    ``(T_i, T_i)`` row-major block.  They give the exact squared norm of a
    weight change ``F_i dmu`` in ``O(T_i^2 K)`` operations, which the adaptive
    rate needs once per tried step.
    """
    n_samples = unit_offsets.shape[0] - 1
    gram_offsets = np.zeros(n_samples + 1, dtype=np.int64)
    for i in range(n_samples):
        n_tokens = unit_offsets[i + 1] - unit_offsets[i]
        gram_offsets[i + 1] = gram_offsets[i] + n_tokens * n_tokens
    gram = np.zeros(gram_offsets[n_samples])
    scratch = np.zeros(n_features)
    for i in range(n_samples):
        tok0 = unit_offsets[i]
        n_tokens = unit_offsets[i + 1] - tok0
        g0 = gram_offsets[i]
        for t in range(n_tokens):
            start, stop = _row_span(tok0 + t, dense_width, indptr)
            for p in range(start, stop):
                j = p - start if dense_width > 0 else indices[p]
                scratch[j] += data[p]
            for s in range(t, n_tokens):
                start2, stop2 = _row_span(tok0 + s, dense_width, indptr)
                acc = 0.0
                for p in range(start2, stop2):
                    j = p - start2 if dense_width > 0 else indices[p]
                    acc += scratch[j] * data[p]
                gram[g0 + t * n_tokens + s] = acc
                gram[g0 + s * n_tokens + t] = acc
            for p in range(start, stop):
                j = p - start if dense_width > 0 else indices[p]
                scratch[j] = 0.0
    return gram, gram_offsets


@njit(cache=True, nogil=True)
def _inference(theta, mu, n_tokens, n_states, chain, start_end, zeros):
    """Marginals ``mu`` (same layout as ``theta``) and log-partition of one example."""
    n_node = n_tokens * n_states
    if not chain:
        # multiclass: one token, no transitions -> softmax
        top = theta[0]
        for k in range(1, n_states):
            top = max(top, theta[k])
        total = 0.0
        for k in range(n_states):
            mu[k] = np.exp(theta[k] - top)
            total += mu[k]
        for k in range(n_states):
            mu[k] /= total
        return top + np.log(total)
    n_trans = n_states * n_states
    node_theta = theta[:n_node].reshape((n_tokens, n_states))
    trans_theta = theta[n_node:n_node + n_trans].reshape((n_states, n_states))
    node_mu = mu[:n_node].reshape((n_tokens, n_states))
    trans_mu = mu[n_node:n_node + n_trans].reshape((n_states, n_states))
    if start_end:
        e0 = n_node + n_trans
        log_z = chain_forward_backward(
            node_theta, trans_theta, theta[e0:e0 + n_states],
            theta[e0 + n_states:e0 + 2 * n_states], node_mu, trans_mu,
        )
        for k in range(n_states):
            mu[e0 + k] = node_mu[0, k]
            mu[e0 + n_states + k] = node_mu[n_tokens - 1, k]
        return log_z
    return chain_forward_backward(node_theta, trans_theta, zeros, zeros, node_mu, trans_mu)


@njit(cache=True, nogil=True)
def _change_sq_norm(dmu, n_tokens, n_states, n_parts, gram, g0):
    """``||F_i dmu||^2``: node parts through the token Gram matrix, the rest are unit features."""
    total = 0.0
    for t in range(n_tokens):
        for s in range(t, n_tokens):
            g = gram[g0 + t * n_tokens + s]
            if g == 0.0:
                continue
            acc = 0.0
            for k in range(n_states):
                acc += dmu[t * n_states + k] * dmu[s * n_states + k]
            total += g * acc if s == t else 2.0 * g * acc
    for r in range(n_tokens * n_states, n_parts):
        total += dmu[r] * dmu[r]
    return total


@njit(cache=True, nogil=True)
def _scaled_change_sq_norm(data, indices, indptr, dense_width, tok0, n_tokens, n_states,
                           n_features, dmu, n_parts, scale, scratch):
    """``||scale * F_i dmu||^2`` through an explicit sparse accumulation of
    ``F_i dmu`` (the token Gram matrix cannot carry a per-weight scale).
    ``scratch`` (length ``n_features * n_states``) is zero on entry and exit."""
    _add_node_features(data, indices, indptr, dense_width, tok0, n_tokens, n_states,
                       dmu[:n_tokens * n_states].reshape((n_tokens, n_states)), scale[:0],
                       scratch)
    total = 0.0
    for t in range(n_tokens):
        start, stop = _row_span(tok0 + t, dense_width, indptr)
        for p in range(start, stop):
            j = p - start if dense_width > 0 else indices[p]
            base = j * n_states
            for k in range(n_states):
                value = scale[base + k] * scratch[base + k]
                total += value * value
                scratch[base + k] = 0.0  # a feature repeated in the example counts once
    off = n_features * n_states
    n_node = n_tokens * n_states
    for r in range(n_node, n_parts):
        value = scale[off + r - n_node] * dmu[r]
        total += value * value
    return total


@njit(cache=True, nogil=True)
def _visit(
    i, loss, adaptive, eta_fixed, max_halvings,
    data, indices, indptr, dense_width, n_features,
    unit_offsets, part_offsets, gram, gram_offsets, part_losses, sample_weight, C,
    n_states, chain, start_end, w, scale, theta, mu, terms, etas,
    scores, theta_new, mu_new, dmu, zeros, scratch,
):
    """One EG step on example ``i``; returns the number of step sizes tried."""
    tok0 = unit_offsets[i]
    n_tokens = unit_offsets[i + 1] - tok0
    p0 = part_offsets[i]
    n_parts = part_offsets[i + 1] - p0
    n_node = n_tokens * n_states
    cs = C * sample_weight[i]
    if cs == 0.0:
        return 1  # a zero-weight example has no say in the dual

    # part scores F_i^T w, laid out like theta_i
    scaled = scale.shape[0] > 0
    _node_scores(data, indices, indptr, dense_width, tok0, n_tokens, n_states, w, scale,
                 scores[:n_node].reshape((n_tokens, n_states)))
    off = n_features * n_states
    for r in range(n_node, n_parts):
        scores[r] = w[off + r - n_node] * scale[off + r - n_node] if scaled else w[off + r - n_node]

    eta = etas[i] if adaptive else eta_fixed
    tries = 0
    accepted = False
    while True:
        tries += 1
        # Lemma 1: theta' = theta - eta g with g the per-part gradient, divided by
        # s_i (EG in the s_i-weighted KL geometry, so the step is scale-free).
        if loss == LOG_LOSS:
            for r in range(n_parts):
                theta_new[r] = (1.0 - eta) * theta[p0 + r] + eta * scores[r]
        else:
            for r in range(n_parts):
                theta_new[r] = theta[p0 + r] + eta * (part_losses[p0 + r] + scores[r])
        log_z = _inference(theta_new, mu_new, n_tokens, n_states, chain, start_end, zeros)
        # the example's dual term: entropy of alpha_i (log-linear) or its expected loss
        term = 0.0
        if loss == LOG_LOSS:
            for r in range(n_parts):
                term += mu_new[r] * theta_new[r]
            term = log_z - term
        else:
            for r in range(n_parts):
                term += mu_new[r] * part_losses[p0 + r]
        linear = 0.0
        magnitude = abs(log_z) + abs(term) + abs(terms[i])  # size of the summands, for rounding
        for r in range(n_parts):
            dmu[r] = mu_new[r] - mu[p0 + r]
            linear += dmu[r] * scores[r]
            magnitude += abs(theta_new[r]) + abs(scores[r])
        if not adaptive:
            accepted = True
            break
        # closed-form change of the dual D = C sum_i s_i term_i - ||w||^2 / 2 when
        # w moves by delta = -C s_i F_i dmu: w.delta = -C s_i scores.dmu
        if scaled:
            sq = _scaled_change_sq_norm(data, indices, indptr, dense_width, tok0, n_tokens,
                                        n_states, n_features, dmu, n_parts, scale, scratch)
        else:
            sq = _change_sq_norm(dmu, n_tokens, n_states, n_parts, gram, gram_offsets[i])
        gain = cs * (term - terms[i] + linear) - 0.5 * cs * cs * sq
        rounding = ROUNDING * (cs * magnitude + cs * cs * sq)
        if gain >= -rounding:
            accepted = True
            # grow the rate only after a real improvement: steps on a saturated
            # example change nothing and must not inflate its rate
            etas[i] = eta * 1.05 if gain > rounding else eta
            break
        if tries > max_halvings:
            etas[i] = eta
            break
        eta *= 0.5
    if not accepted:
        return tries
    for r in range(n_parts):
        dmu[r] *= -cs
        theta[p0 + r] = theta_new[r]
        mu[p0 + r] = mu_new[r]
    terms[i] = term
    _add_node_features(data, indices, indptr, dense_width, tok0, n_tokens, n_states,
                       dmu[:n_node].reshape((n_tokens, n_states)), scale, w)
    for r in range(n_node, n_parts):
        w[off + r - n_node] += dmu[r] * scale[off + r - n_node] if scaled else dmu[r]
    return tries


@njit(cache=True, nogil=True)
def online_epoch(
    order, budget, loss, adaptive, eta_fixed, max_halvings,
    data, indices, indptr, dense_width, n_features,
    unit_offsets, part_offsets, gram, gram_offsets, part_losses, sample_weight, C,
    n_states, chain, start_end, w, scale, theta, mu, terms, etas,
):
    """Visit the examples of ``order`` in turn until ``budget`` steps were tried.

    Updates ``w`` (feature-major), ``theta``, ``mu``, ``terms`` and ``etas`` in
    place; returns the number of step sizes tried (the paper's visits).
    ``scale`` (feature-major like ``w``, or of length 0 for none) rescales every
    weight's feature: ``phi'(x, r) = scale * phi(x, r)``.
    """
    max_parts = 0
    for i in range(part_offsets.shape[0] - 1):
        max_parts = max(max_parts, part_offsets[i + 1] - part_offsets[i])
    scores = np.empty(max_parts)
    theta_new = np.empty(max_parts)
    mu_new = np.empty(max_parts)
    dmu = np.empty(max_parts)
    zeros = np.zeros(n_states)
    scratch = np.zeros(n_features * n_states if scale.shape[0] > 0 else 0)
    tries = 0
    for i in order:
        if tries >= budget:
            break
        tries += _visit(
            i, loss, adaptive, eta_fixed, max_halvings,
            data, indices, indptr, dense_width, n_features,
            unit_offsets, part_offsets, gram, gram_offsets, part_losses, sample_weight, C,
            n_states, chain, start_end, w, scale, theta, mu, terms, etas,
            scores, theta_new, mu_new, dmu, zeros, scratch,
        )
    return tries
