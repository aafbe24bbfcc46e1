"""Numba kernels of the linear chain: forward-backward, Viterbi, node scores.

Single-sequence functions are ``@njit(cache=True, nogil=True)`` free functions
on arrays, callable from other numba code (the EG online epoch runs entirely in
numba) and from threads that run concurrently:

``chain_forward_backward(node_scores, transition, start, end,
node_marginals_out, transition_marginals_out) -> log_Z``
    Node marginals ``(T, K)`` and transition marginals summed over positions
    ``(K, K)`` (expected transition counts) of ``p(y) ~ exp(score(y))`` with
    ``score(y) = start[y_0] + sum_t node_scores[t, y_t]
    + sum_{t>=1} transition[y_{t-1}, y_t] + end[y_{T-1}]``.
``chain_forward_backward_edges(..., node_marginals_out, edge_marginals_out)``
    The same with per-position edge marginals ``(T - 1, K, K)``.
``chain_forward_backward_scaled(node_scores, transition, start, end, exp_trans,
row_max, node_marginals_out, transition_marginals_out) -> log_Z``
    The same with ``exp_transition(transition, exp_trans, row_max)``
    precomputed, for callers that run many chains with one transition matrix.
``chain_log_partition(node_scores, transition, start, end) -> log_Z``
    Forward recursion only (``chain_log_partition_scaled`` with the column
    exponentials of :func:`exp_columns` precomputed, for many chains sharing
    one transition matrix).
``chain_viterbi(node_scores, transition, start, end, labels_out) -> best score``
``dense_node_scores`` / ``csr_node_scores`` and ``dense_add_node_features`` /
``csr_add_node_features``: the maps ``F^T`` and ``F`` restricted to node parts
(the CSR ones on feature-major ``(d, K)`` weights).

Batch wrappers run over a whole ragged batch in one call:
``chain_batch_inference`` (marginals, log Z or Viterbi, chosen by a task
argument) and ``chain_edge_marginals_batch``.  They read each example's scores
from the flat part vector of
:class:`~sklearn_struct.structures.ChainStructure` (node parts, then the
``K * K`` tied transition parts, then optionally ``K`` start and ``K`` end parts).
Use zero vectors for ``start``/``end`` when the model has no such parts.

A sequence of ``T = 0`` tokens has one labelling, the empty one, of score 0
(``log_Z = 0``, no marginals); the structure refuses such sequences in its
inputs, but the kernels stay safe on them.  Node scores must be finite;
transition, start and end scores may be ``-inf`` (forbidden), which
constrained decoding uses: a
labelling through a forbidden score has probability exactly 0 and is never
the Viterbi labelling.  A chain in which every labelling is forbidden has
``log_Z = -inf`` and zero marginals.  The batch wrappers take such constraints
as ``bias``: an empty array (no constraint) or ``K * K + 2 * K`` values, each
0 or ``-inf``, added to the transition, start and end scores of every example
(:func:`biased_blocks`).

Compile time (the first run compiles every kernel it calls; later runs load
numba's on-disk cache): thin wrappers and small helpers are
``inline="always"``, typed into their caller instead of compiled as functions
of their own, whose code every caller would link and optimise again.  The
``fastmath`` recursions (``_forward``, ``_forward_backward``) stay functions of
their own, so that their flags do not spread to the callers' arithmetic.  Every
function that calls them is a new compilation unit in which LLVM optimises and
compiles their code again: hence one batch kernel for the three tasks that
training and prediction need, not one each.  Slice assignments from arrays, array
expressions and the ``max`` method are written as loops: numba compiles the
message of their shape check (string formatting) or helpers of their own for
seconds.

Numerics: recursions are in log space.  Each step first uses a fast scaled form
(one exponential per label, shifted by the position's maximum, times
``exp(transition)`` scaled row by row (column by column for the forward pass)
and computed once per transition matrix) and falls back to an exact log-sum-exp
for an entry whose scaled sum is too small to be accurate.  A position whose
scaled sums are all accurate is carried to the next step as those sums and one
shift, without a logarithm per label (a tenth of the forward-backward time and a
fifth of the forward pass's on CoNLL-2000's 22 labels).  The exact path
exponentiates only the terms that can matter (within 700 of the maximum), so
saturated scores of magnitude 1e4 cost about as much as moderate ones and give
neither overflow nor NaN.  Forward-backward runs the backward recursion, then
propagates node marginals forwards through the conditionals
``p(y_{t+1} | y_t)``, which gives the edge marginals at the same time.
"""

import numpy as np
from numba import njit

from .._log_space import (
    TINY_CONDITIONAL, TINY_SUM, UNDERFLOW, VECTORISE, exp_transition, largest, logsumexp)

# A position's messages are carried to the next one without logarithms (see
# :func:`_carried`) when the largest of their scaled exponentials is at least this:
# every term then lost to underflow is below 1e-287 of the largest, which keeps the
# guarantee of TINY_SUM (relative error below K * 1e-287 / TINY_SUM).
_TINY_MESSAGE = 1e-20


@njit(cache=True, nogil=True, inline="always")
def exp_columns(transition, exp_cols_out, col_max_out):
    """``exp_cols_out[b] = exp(transition[:, b] - col_max_out[b])``, column by column.

    The forward sum runs down a column of the transition matrix, so its
    exponentials are scaled per column and stored as rows (transposed), for
    contiguous dot products.  Computed once per distinct transition matrix and
    passed to :func:`chain_log_partition_scaled`.
    """
    K = transition.shape[0]
    for b in range(K):
        top = transition[0, b]
        for a in range(1, K):
            top = max(top, transition[a, b])
        col_max_out[b] = top
        for a in range(K):
            exp_cols_out[b, a] = 0.0 if top == -np.inf else np.exp(transition[a, b] - top)


@njit(cache=True, nogil=True, inline="always")
def _carried(node, scale_max, shift, totals, scaled_out):
    """Carry a position's implicit log-messages ``node + scale_max + shift + log(totals)``
    to the next step without logarithms: ``scaled_out`` gets their exponentials scaled
    so that the largest is 1; returns the new shift (the log of that largest), or
    ``nan`` when the largest is below ``_TINY_MESSAGE`` (``scaled_out`` then unusable)."""
    K = node.shape[0]
    top = node[0] + scale_max[0]
    for k in range(1, K):
        top = max(top, node[k] + scale_max[k])
    largest = 0.0
    for k in range(K):
        value = np.exp(node[k] + scale_max[k] - top) * totals[k]
        scaled_out[k] = value
        largest = max(largest, value)
    if not largest >= _TINY_MESSAGE:
        return np.nan
    inverse = 1.0 / largest
    for k in range(K):
        scaled_out[k] *= inverse
    return top + shift + np.log(largest)


@njit(cache=True, nogil=True, inline="always")
def _explicit(node, scale_max, shift, totals, log_out):
    """``log_out = node + scale_max + shift + log(totals)``: a position's messages in log
    space (every total at least ``TINY_SUM``)."""
    for k in range(node.shape[0]):
        log_out[k] = node[k] + scale_max[k] + shift + np.log(totals[k])


@njit(cache=True, nogil=True, inline="always")
def _accurate(totals):
    """Whether every scaled sum is large enough to be accurate (``TINY_SUM``; not NaN)."""
    for k in range(totals.shape[0]):
        if not totals[k] >= TINY_SUM:
            return False
    return True


@njit(cache=True, nogil=True, fastmath=VECTORISE)
def _forward_log_partition(node_scores, transition, start, end, exp_cols, col_max):
    """``log Z`` by the forward recursion (``exp_cols, col_max`` from :func:`exp_columns`).

    ``log alpha[t, b]``, the log-sum of the scores of the prefixes ending in label
    ``b`` at ``t``, is ``node[t, b] + col_max[b] + shift + log(totals[b])`` with
    ``totals[b] = sum_a exp_cols[b, a] scaled[a]``: while every total is accurate
    it stays implicit (:func:`_carried`), and a step costs ``K`` exponentials and
    no logarithm; an entry whose total is too small is an exact log-sum-exp, and
    its position is then held in log space.
    """
    T, K = node_scores.shape
    if T == 0:
        return 0.0
    log_alpha = np.empty(K)  # the previous position in log space, when held so
    scaled = np.empty(K)
    totals = np.empty(K)
    previous_totals = np.empty(K)
    terms = np.empty(K)
    for k in range(K):
        log_alpha[k] = start[k] + node_scores[0, k]
    explicit = True
    shift = 0.0
    for t in range(1, T):
        previous_shift = shift
        if not explicit:
            carried = _carried(node_scores[t - 1], col_max, shift, totals, scaled)
            if carried == carried:  # not NaN
                shift = carried
            else:
                _explicit(node_scores[t - 1], col_max, shift, totals, log_alpha)
                explicit = True
        if explicit:
            shift = largest(log_alpha)
            if shift == -np.inf:  # no allowed prefix: none can be extended
                return -np.inf
            for a in range(K):
                scaled[a] = np.exp(log_alpha[a] - shift)
        totals, previous_totals = previous_totals, totals
        for b in range(K):
            total = 0.0
            for a in range(K):
                total += exp_cols[b, a] * scaled[a]
            totals[b] = total
        if _accurate(totals):
            explicit = False
            continue
        if not explicit:  # the exact sums need the previous position in log space
            _explicit(node_scores[t - 1], col_max, previous_shift, previous_totals, log_alpha)
        for b in range(K):
            if totals[b] >= TINY_SUM:
                terms[b] = node_scores[t, b] + shift + col_max[b] + np.log(totals[b])
            else:
                for a in range(K):
                    scaled[a] = log_alpha[a] + transition[a, b]
                terms[b] = node_scores[t, b] + logsumexp(scaled)
        for b in range(K):
            log_alpha[b] = terms[b]
        explicit = True
    if not explicit:
        _explicit(node_scores[T - 1], col_max, shift, totals, log_alpha)
    for k in range(K):
        terms[k] = log_alpha[k] + end[k]
    return logsumexp(terms)


@njit(cache=True, nogil=True, inline="always")
def _hold_log_beta(t, row_max, shift, totals, explicit, log_beta):
    """Hold position ``t`` of the backward messages in log space, if not yet."""
    if explicit[t]:
        return
    for a in range(row_max.shape[0]):
        log_beta[t, a] = row_max[a] + shift[t] + np.log(totals[t, a])
    explicit[t] = True


@njit(cache=True, nogil=True, fastmath=VECTORISE)
def _forward_backward(node_scores, transition, start, end, exp_trans, row_max,
                      node_marginals_out, transition_marginals_out, edge_marginals_out):
    """Shared body: summed transition marginals, or per-position edge marginals.

    Exactly one of ``transition_marginals_out`` and ``edge_marginals_out`` is
    ``None``: numba compiles one version per choice, with the other's branches
    pruned (it compiles in a sixth less time than one version with both).

    A backward pass gives log beta and log Z; a forward sweep then propagates
    node marginals through the conditionals ``p(y_t+1 = b | y_t = a)``, which
    yields the edge marginals with no further exponentials in the fast path.
    ``log beta[t, a] = row_max[a] + shift[t] + log(totals[t, a])`` stays implicit
    while every total of position ``t`` is accurate (:func:`_carried` takes it to
    the next step), so that a step costs ``K`` exponentials and no logarithm.
    Entries whose scaled sum is too small to be accurate (only with scores of
    very different magnitudes) take an exact log-sum-exp that exponentiates
    only the terms that do not underflow; their position is held in log space
    (``explicit``), as are the positions that ``log Z`` and the exact
    conditionals read.
    """
    T, K = node_scores.shape
    if T == 0:  # one labelling, the empty one, of score 0
        if transition_marginals_out is not None:
            transition_marginals_out[:] = 0.0
        return 0.0
    log_beta = np.empty((T, K))
    explicit = np.zeros(T, dtype=np.bool_)  # whether log_beta[t] holds position t
    shift = np.empty(T)
    # step t of the backward pass: scaled[t, b] = exp(node[t+1, b] + log_beta[t+1, b] - shift[t])
    # and totals[t, a] = sum_b exp_trans[a, b] * scaled[t, b]
    scaled = np.empty((T, K))
    totals = np.empty((T, K))
    terms = np.empty(K)
    for k in range(K):
        log_beta[T - 1, k] = end[k]
    explicit[T - 1] = True
    for t in range(T - 2, -1, -1):
        if not explicit[t + 1]:
            carried = _carried(node_scores[t + 1], row_max, shift[t + 1], totals[t + 1],
                               scaled[t])
            if carried == carried:  # not NaN
                shift[t] = carried
            else:
                _hold_log_beta(t + 1, row_max, shift, totals, explicit, log_beta)
        if explicit[t + 1]:
            for b in range(K):
                terms[b] = node_scores[t + 1, b] + log_beta[t + 1, b]
            top = largest(terms)
            if top == -np.inf:  # no allowed suffix from position t + 1 on
                log_beta[t] = -np.inf
                explicit[t] = True
                scaled[t] = 0.0
                totals[t] = 0.0
                continue
            shift[t] = top
            for b in range(K):
                scaled[t, b] = np.exp(terms[b] - top)
        for a in range(K):
            total = 0.0
            for b in range(K):
                total += exp_trans[a, b] * scaled[t, b]
            totals[t, a] = total
        if _accurate(totals[t]):
            continue
        _hold_log_beta(t + 1, row_max, shift, totals, explicit, log_beta)
        for a in range(K):
            if totals[t, a] >= TINY_SUM:
                log_beta[t, a] = row_max[a] + shift[t] + np.log(totals[t, a])
            else:
                for b in range(K):
                    terms[b] = transition[a, b] + node_scores[t + 1, b] + log_beta[t + 1, b]
                log_beta[t, a] = logsumexp(terms)
        explicit[t] = True
    _hold_log_beta(0, row_max, shift, totals, explicit, log_beta)
    for k in range(K):
        terms[k] = start[k] + node_scores[0, k] + log_beta[0, k]
    log_z = logsumexp(terms)
    for k in range(K):
        # (no allowed labelling at all: zero marginals rather than exp(-inf + inf))
        node_marginals_out[0, k] = 0.0 if log_z == -np.inf else np.exp(terms[k] - log_z)

    if edge_marginals_out is not None:
        edge_marginals_out[:] = 0.0
    if transition_marginals_out is not None:
        transition_marginals_out[:] = 0.0
    for t in range(T - 1):
        node_marginals_out[t + 1] = 0.0
        for a in range(K):
            marginal = node_marginals_out[t, a]
            if marginal == 0.0:
                continue
            # p(y_t = a, y_t+1 = b) = p(y_t = a) p(b | a)
            if totals[t, a] >= TINY_CONDITIONAL:
                factor = marginal / totals[t, a]
                for b in range(K):
                    joint = factor * exp_trans[a, b] * scaled[t, b]
                    node_marginals_out[t + 1, b] += joint
                    if edge_marginals_out is not None:
                        edge_marginals_out[t, a, b] = joint
                    if transition_marginals_out is not None:
                        transition_marginals_out[a, b] += joint
            else:
                _hold_log_beta(t, row_max, shift, totals, explicit, log_beta)
                _hold_log_beta(t + 1, row_max, shift, totals, explicit, log_beta)
                for b in range(K):
                    exponent = (transition[a, b] + node_scores[t + 1, b] + log_beta[t + 1, b]
                                - log_beta[t, a])
                    if exponent <= UNDERFLOW:
                        continue
                    joint = marginal * np.exp(exponent)
                    node_marginals_out[t + 1, b] += joint
                    if edge_marginals_out is not None:
                        edge_marginals_out[t, a, b] = joint
                    if transition_marginals_out is not None:
                        transition_marginals_out[a, b] += joint
    return log_z


@njit(cache=True, nogil=True, inline="always")
def _exponentiated(transition):
    """New arrays ``exp_trans, row_max`` of :func:`exp_transition` of ``transition``."""
    K = transition.shape[0]
    exp_trans = np.empty((K, K))
    row_max = np.empty(K)
    exp_transition(transition, exp_trans, row_max)
    return exp_trans, row_max


@njit(cache=True, nogil=True, inline="always")
def chain_forward_backward(node_scores, transition, start, end, node_marginals_out,
                           transition_marginals_out):
    """Node marginals, summed transition marginals and log-partition of one chain.

    Parameters
    ----------
    node_scores : ndarray of shape (T, K), T >= 0
    transition : ndarray of shape (K, K)
        ``transition[a, b]`` scores label ``a`` followed by ``b``.
    start, end : ndarray of shape (K,)
        Scores of the first and last label (zeros for none).
    node_marginals_out : ndarray of shape (T, K)
        Overwritten with ``p(y_t = k)``.
    transition_marginals_out : ndarray of shape (K, K)
        Overwritten with ``sum_{t=1}^{T-1} p(y_{t-1} = a, y_t = b)``.

    Returns
    -------
    log_Z : float
    """
    exp_trans, row_max = _exponentiated(transition)
    return _forward_backward(node_scores, transition, start, end, exp_trans, row_max,
                             node_marginals_out, transition_marginals_out, None)


@njit(cache=True, nogil=True, inline="always")
def chain_forward_backward_scaled(node_scores, transition, start, end, exp_trans, row_max,
                                  node_marginals_out, transition_marginals_out):
    """:func:`chain_forward_backward` with ``exp_trans, row_max`` from
    :func:`exp_transition` precomputed (saves ``K * K`` exponentials per call
    when many chains share one transition matrix)."""
    return _forward_backward(node_scores, transition, start, end, exp_trans, row_max,
                             node_marginals_out, transition_marginals_out, None)


@njit(cache=True, nogil=True)
def chain_forward_backward_edges(node_scores, transition, start, end, node_marginals_out,
                                 edge_marginals_out):
    """Like :func:`chain_forward_backward` with per-position edge marginals.

    ``edge_marginals_out`` of shape (T - 1, K, K) is overwritten with
    ``p(y_t = a, y_{t+1} = b)``.  Returns ``log_Z``.
    """
    exp_trans, row_max = _exponentiated(transition)
    return _forward_backward(node_scores, transition, start, end, exp_trans, row_max,
                             node_marginals_out, None, edge_marginals_out)


@njit(cache=True, nogil=True, inline="always")
def chain_log_partition(node_scores, transition, start, end):
    """``log Z`` of one chain (forward pass only)."""
    K = transition.shape[0]
    exp_cols = np.empty((K, K))
    col_max = np.empty(K)
    exp_columns(transition, exp_cols, col_max)
    return chain_log_partition_scaled(node_scores, transition, start, end, exp_cols, col_max)


@njit(cache=True, nogil=True, inline="always")
def chain_log_partition_scaled(node_scores, transition, start, end, exp_cols, col_max):
    """:func:`chain_log_partition` with ``exp_cols, col_max`` from :func:`exp_columns`
    precomputed (saves ``K * K`` exponentials per call when many chains share one
    transition matrix)."""
    return _forward_log_partition(node_scores, transition, start, end, exp_cols, col_max)


@njit(cache=True, nogil=True)
def chain_viterbi(node_scores, transition, start, end, labels_out):
    """Highest-scoring label sequence of one chain (lowest labels on ties).

    ``labels_out`` (int64, shape (T,)) is overwritten; returns its score.
    """
    T, K = node_scores.shape
    if T == 0:
        return 0.0
    best = np.empty((T, K))
    backpointer = np.empty((T, K), dtype=np.int64)
    for k in range(K):
        best[0, k] = start[k] + node_scores[0, k]
    for t in range(1, T):
        # rows of transition are contiguous: sweep b inside (vectorises), a outside
        for b in range(K):
            best[t, b] = best[t - 1, 0] + transition[0, b]
            backpointer[t, b] = 0
        for a in range(1, K):
            previous = best[t - 1, a]
            for b in range(K):
                value = previous + transition[a, b]
                if value > best[t, b]:
                    best[t, b] = value
                    backpointer[t, b] = a
        for b in range(K):
            best[t, b] += node_scores[t, b]
    label = 0
    top = best[T - 1, 0] + end[0]
    for k in range(1, K):
        value = best[T - 1, k] + end[k]
        if value > top:
            top = value
            label = k
    labels_out[T - 1] = label
    for t in range(T - 1, 0, -1):
        label = backpointer[t, label]
        labels_out[t - 1] = label
    return top


# ---------------------------------------------------------------- features
@njit(cache=True, nogil=True)
def dense_node_scores(X, W, out):
    """``out[t, k] = W[k] . X[t]`` for dense token features ``X`` (T, d), ``W`` (K, d)."""
    T, d = X.shape
    K = W.shape[0]
    for t in range(T):
        for k in range(K):
            total = 0.0
            for j in range(d):
                total += X[t, j] * W[k, j]
            out[t, k] = total


@njit(cache=True, nogil=True)
def csr_node_scores(data, indices, indptr, row_start, row_stop, W_features, out):
    """Node scores of CSR rows ``row_start:row_stop`` into ``out`` (row_stop - row_start, K).

    ``W_features`` is feature-major, ``(d, K)`` (``W.T`` made contiguous): the
    ``K`` weights of a feature are adjacent, one cache line instead of ``K``.
    """
    K = W_features.shape[1]
    for t in range(row_stop - row_start):
        for k in range(K):
            out[t, k] = 0.0
        for p in range(indptr[row_start + t], indptr[row_start + t + 1]):
            j = indices[p]
            x = data[p]
            for k in range(K):
                out[t, k] += x * W_features[j, k]


@njit(cache=True, nogil=True)
def dense_add_node_features(X, node_weights, scale, W_out):
    """``W_out += scale * node_weights.T @ X`` (the map ``F`` on node parts)."""
    T, d = X.shape
    K = node_weights.shape[1]
    for t in range(T):
        for k in range(K):
            c = scale * node_weights[t, k]
            if c != 0.0:
                for j in range(d):
                    W_out[k, j] += c * X[t, j]


@njit(cache=True, nogil=True)
def csr_add_node_features(data, indices, indptr, row_start, row_stop, node_weights, scale,
                          W_features_out):
    """CSR version of :func:`dense_add_node_features` for rows ``row_start:row_stop``,
    into feature-major ``(d, K)`` weights (see :func:`csr_node_scores`)."""
    K = node_weights.shape[1]
    for t in range(row_stop - row_start):
        for p in range(indptr[row_start + t], indptr[row_start + t + 1]):
            j = indices[p]
            x = scale * data[p]
            for k in range(K):
                W_features_out[j, k] += x * node_weights[t, k]


@njit(cache=True, nogil=True)
def chain_scatter_parts(node, tail, unit_offsets, part_offsets, out):
    """The flat part vector of a batch from node rows and the shared tail.

    Sequence ``i``'s parts are its node rows ``node[unit_offsets[i]:unit_offsets[i + 1]]``
    (``(T, K)``, position-major) followed by ``tail`` (transition, then start and
    end values, shared by every sequence).
    """
    K = node.shape[1]
    for i in range(part_offsets.shape[0] - 1):
        p = part_offsets[i]
        for t in range(unit_offsets[i], unit_offsets[i + 1]):
            for k in range(K):
                out[p] = node[t, k]
                p += 1
        for e in range(tail.shape[0]):
            out[p + e] = tail[e]


@njit(cache=True, nogil=True)
def chain_gather_parts(z, unit_offsets, part_offsets, sample_weight, node_out, tail_out):
    """The inverse of :func:`chain_scatter_parts`, weighted: ``node_out`` gets each
    sequence's node rows times its ``sample_weight``, ``tail_out`` (zeroed here)
    the weighted sum of the sequences' tails."""
    K = node_out.shape[1]
    for e in range(tail_out.shape[0]):
        tail_out[e] = 0.0
    for i in range(part_offsets.shape[0] - 1):
        p = part_offsets[i]
        s = sample_weight[i]
        for t in range(unit_offsets[i], unit_offsets[i + 1]):
            for k in range(K):
                node_out[t, k] = s * z[p]
                p += 1
        for e in range(tail_out.shape[0]):
            tail_out[e] += s * z[p + e]


# ------------------------------------------------------------------- batch
@njit(cache=True, nogil=True, inline="always")
def chain_blocks(theta, n_tokens, n_states, start_end, bias, zeros):
    """Views of one chain's node scores, transition, start and end in its part vector
    ``theta`` (``zeros`` without start and end parts), with a constraint ``bias`` added
    when it is not empty (then the last three are new arrays)."""
    K = n_states
    n_node = n_tokens * K
    node = theta[:n_node].reshape((n_tokens, K))
    transition = theta[n_node:n_node + K * K].reshape((K, K))
    start = end = zeros
    if start_end:
        p = n_node + K * K
        start, end = theta[p:p + K], theta[p + K:p + 2 * K]
    if bias.shape[0] > 0:
        transition, start, end = biased_blocks(transition, start, end, bias)
    return node, transition, start, end


@njit(cache=True, nogil=True)
def biased_blocks(transition, start, end, bias):
    """``transition``, ``start`` and ``end`` plus a constraint ``bias`` (new arrays).

    ``bias`` holds ``K * K`` transition values (row-major, previous label
    first), then ``K`` start and ``K`` end values, each 0 (allowed) or ``-inf``
    (forbidden).
    """
    K = start.shape[0]
    biased_transition = np.empty((K, K))
    biased_start = np.empty(K)
    biased_end = np.empty(K)
    for a in range(K):
        for b in range(K):
            biased_transition[a, b] = transition[a, b] + bias[a * K + b]
        biased_start[a] = start[a] + bias[K * K + a]
        biased_end[a] = end[a] + bias[K * K + K + a]
    return biased_transition, biased_start, biased_end


@njit(cache=True, nogil=True, inline="always")
def _same(a, b):
    """Whether two (K, K) matrices are equal entry by entry."""
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            if a[i, j] != b[i, j]:
                return False
    return True


@njit(cache=True, nogil=True, inline="always")
def _copy_matrix(source, out):
    """``out[:] = source`` as a loop (see the module docstring)."""
    for i in range(source.shape[0]):
        for j in range(source.shape[1]):
            out[i, j] = source[i, j]


#: Tasks of :func:`chain_batch_inference`.
MARGINALS, LOG_PARTITION, VITERBI = 0, 1, 2


@njit(cache=True, nogil=True)
def chain_batch_inference(task, scores, unit_offsets, part_offsets, n_states, start_end, bias,
                          values_out, mu_out, labels_out):
    """One inference task on every chain of a batch, the transition matrix exponentiated
    once for the examples that share it.

    ``MARGINALS``: log Z into ``values_out`` and part marginals (same layout
    as ``scores``) into ``mu_out``.  ``LOG_PARTITION``: log Z alone (forward
    recursions only).  ``VITERBI``: the best scores into ``values_out`` and
    the Viterbi labels (flat over tokens) into ``labels_out``.  The outputs a
    task does not use may be empty.  Training and prediction need all three
    tasks: one kernel compiles the loop over examples, the bias and the
    log-sum-exp once, where a kernel per task compiled them three times.
    """
    K = n_states
    zeros, no_bias = np.zeros(K), np.zeros(0)
    # the exponentiated transition (by columns for log Z, by rows for the marginals) and
    # the matrix it belongs to: examples usually share the transition scores
    exp_trans = np.empty((K, K))
    trans_max = np.empty(K)
    cached_transition = np.empty((K, K))
    for i in range(len(unit_offsets) - 1):
        node, transition, start, end = chain_blocks(
            scores[part_offsets[i]:part_offsets[i + 1]], unit_offsets[i + 1] - unit_offsets[i],
            K, start_end, bias, zeros)
        if task == VITERBI:
            values_out[i] = chain_viterbi(node, transition, start, end,
                                          labels_out[unit_offsets[i]:unit_offsets[i + 1]])
            continue
        if i == 0 or not _same(transition, cached_transition):
            _copy_matrix(transition, cached_transition)
            if task == LOG_PARTITION:
                exp_columns(transition, exp_trans, trans_max)
            else:
                exp_transition(transition, exp_trans, trans_max)
        if task == LOG_PARTITION:
            values_out[i] = chain_log_partition_scaled(node, transition, start, end, exp_trans,
                                                       trans_max)
            continue
        mu_node, mu_transition, _, _ = chain_blocks(
            mu_out[part_offsets[i]:part_offsets[i + 1]], node.shape[0], K, False, no_bias, zeros)
        values_out[i] = chain_forward_backward_scaled(node, transition, start, end, exp_trans,
                                                      trans_max, mu_node, mu_transition)
        if start_end:
            T = node.shape[0]
            p = part_offsets[i] + T * K + K * K
            for k in range(K):
                mu_out[p + k] = mu_node[0, k]
                mu_out[p + K + k] = mu_node[T - 1, k]


@njit(cache=True, nogil=True)
def chain_edge_marginals_batch(scores, unit_offsets, part_offsets, n_states, start_end, bias,
                               edge_offsets, edge_out, log_z_out):
    """Per-position edge marginals of every chain, flat: example i owns
    ``edge_out[edge_offsets[i]:edge_offsets[i + 1]]`` = (T_i - 1, K, K) raveled."""
    K = n_states
    zeros = np.zeros(K)
    for i in range(len(unit_offsets) - 1):
        node, transition, start, end = chain_blocks(
            scores[part_offsets[i]:part_offsets[i + 1]], unit_offsets[i + 1] - unit_offsets[i],
            K, start_end, bias, zeros)
        T = node.shape[0]
        edges = edge_out[edge_offsets[i]:edge_offsets[i + 1]].reshape((T - 1, K, K))
        log_z_out[i] = chain_forward_backward_edges(node, transition, start, end,
                                                    np.empty((T, K)), edges)
