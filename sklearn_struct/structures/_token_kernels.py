"""Per-example numba operations of the token structures (chains and multiclass).

A multiclass sample is a chain of one token without transition parts, so both
structures share these operations (:class:`._kernel.KernelOps`); ``chain`` in
the kernel data tells them apart and inference becomes a softmax.

Kernel data (:func:`token_kernel_data`), a :class:`TokenData`::

    (values, indices, indptr, dense_width, n_features, unit_offsets,
     n_states, chain, start_end, gram, gram_offsets, bias)

Token features arrive as CSR arrays (``values``, ``indices``, ``indptr``) or
as a dense C-contiguous matrix flattened into ``values`` with
``dense_width`` columns (``indices``/``indptr`` unused); ``dense_width == 0``
means CSR, which mostly-zero dense features are converted to.  ``gram``
holds the token Gram matrices of every example (only built for training, see
:func:`token_gram`), empty otherwise.  ``bias``
constrains a chain's labellings (empty: none; else ``K * K + 2 * K`` values 0
or ``-inf`` added to the transition, start and end scores, see
:func:`.chain._kernels.biased_blocks`); inference (marginals, argmax) applies
it, the other operations do not depend on it.

Kernel weight layout is *feature-major*: the per-label input weights are
stored as ``(n_features, n_states)`` row-major, so that a non-zero feature
touches ``n_states`` contiguous numbers; then, for chains, the ``n_states**2``
transition weights and optionally the start and end weights, as in the public
layout (:func:`feature_major`, :func:`label_major` convert).

Compile time: the operations are thin and ``inline="always"``, typed into the
loops that :func:`._kernel.specialize` compiles rather than compiled (and
optimised again in every caller) as functions of their own; the feature loops
they share stay functions of their own, because inlining re-runs numba's front
end on every copy (the first run of ``python -m sklearn_struct`` compiled 0.8 s
faster so).
"""

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from numba import njit

from .._memory import random_access_zeros
from .chain._kernels import (LOG_PARTITION, MARGINALS, VITERBI, chain_batch_inference,
                             chain_blocks, chain_forward_backward, chain_gather_parts,
                             chain_log_partition, chain_scatter_parts, chain_viterbi,
                             csr_add_node_features, csr_node_scores)
from ._batch import kernel_array
from ._kernel import KernelOps

__all__ = ["CHAIN_KERNEL_OPS", "MULTICLASS_KERNEL_OPS", "TokenData", "feature_major",
           "kernel_rows", "label_major", "token_features", "token_kernel_data"]


class TokenData(NamedTuple):
    """Kernel data of token structures (see the module docstring)."""

    values: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    dense_width: int
    n_features: int
    unit_offsets: np.ndarray
    n_states: int
    chain: bool
    start_end: bool
    gram: np.ndarray
    gram_offsets: np.ndarray
    bias: np.ndarray


@njit(cache=True, nogil=True, inline="always")
def _example_tokens(data, i):
    """The token features' arrays and width, the number of labels, example ``i``'s first
    token, its number of tokens and of node parts, and the offset from a part past the node
    parts to its weight."""
    tok0 = data.unit_offsets[i]
    n_tokens = data.unit_offsets[i + 1] - tok0
    n_node = n_tokens * data.n_states
    return (data.values, data.indices, data.indptr, data.dense_width, data.n_states, tok0,
            n_tokens, n_node, data.n_features * data.n_states - n_node)


@njit(cache=True, nogil=True)
def _row_span(row, dense_width, indptr):
    if dense_width > 0:
        return row * dense_width, (row + 1) * dense_width
    return indptr[row], indptr[row + 1]


@njit(cache=True, nogil=True)
def _node_scores(values, indices, indptr, dense_width, tok0, n_tokens, n_states, w, scale, out):
    """``out[t, k] = x_t . (scale * W)[k]`` for the tokens of one example."""
    scaled = scale.shape[0] > 0
    for t in range(n_tokens):
        for k in range(n_states):
            out[t, k] = 0.0
        start, stop = _row_span(tok0 + t, dense_width, indptr)
        for p in range(start, stop):
            value = values[p]
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
def _add_node_features(values, indices, indptr, dense_width, tok0, n_tokens, n_states, coef,
                       scale, w):
    """``W[k] += scale * sum_t coef[t, k] x_t`` (feature-major ``w``)."""
    scaled = scale.shape[0] > 0
    for t in range(n_tokens):
        start, stop = _row_span(tok0 + t, dense_width, indptr)
        for p in range(start, stop):
            value = values[p]
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
def _node_score(values, indices, indptr, dense_width, row, k, n_states, w, scale):
    """``x_row . (scale * W)[k]``: one node part's score."""
    total = 0.0
    start, stop = _row_span(row, dense_width, indptr)
    for p in range(start, stop):
        j = p - start if dense_width > 0 else indices[p]
        weight = w[j * n_states + k]
        if scale.shape[0] > 0:
            weight *= scale[j * n_states + k]
        total += values[p] * weight
    return total


@njit(cache=True, nogil=True)
def _add_node_feature(values, indices, indptr, dense_width, row, k, n_states, coef, scale, w):
    """``W[k] += scale * coef x_row``: one node part's features."""
    start, stop = _row_span(row, dense_width, indptr)
    for p in range(start, stop):
        j = p - start if dense_width > 0 else indices[p]
        change = coef * values[p]
        if scale.shape[0] > 0:
            change *= scale[j * n_states + k]
        w[j * n_states + k] += change


@njit(cache=True, nogil=True, inline="always")
def token_part_scores_at(data, i, w, scale, parts, out, scratch):
    """Scores of the listed parts alone (one token's features for a node part)."""
    values, indices, indptr, dense_width, n_states, tok0, _, n_node, off = _example_tokens(data, i)
    for j in range(parts.shape[0]):
        r = parts[j]
        if r < n_node:
            out[j] = _node_score(values, indices, indptr, dense_width, tok0 + r // n_states,
                                 r % n_states, n_states, w, scale)
        elif scale.shape[0] > 0:
            out[j] = w[off + r] * scale[off + r]
        else:
            out[j] = w[off + r]


@njit(cache=True, nogil=True, inline="always")
def token_add_features_at(data, i, parts, coef, scale, w, scratch):
    """The listed parts' features alone (``scratch`` unused)."""
    values, indices, indptr, dense_width, n_states, tok0, _, n_node, off = _example_tokens(data, i)
    for j in range(parts.shape[0]):
        r = parts[j]
        if r < n_node:
            _add_node_feature(values, indices, indptr, dense_width, tok0 + r // n_states,
                              r % n_states, n_states, coef[j], scale, w)
        elif scale.shape[0] > 0:
            w[off + r] += coef[j] * scale[off + r]
        else:
            w[off + r] += coef[j]


@njit(cache=True, nogil=True, inline="always")
def token_part_scores(data, i, w, scale, out):
    values, indices, indptr, dense_width, n_states, tok0, n_tokens, n_node, off = (
        _example_tokens(data, i))
    _node_scores(values, indices, indptr, dense_width, tok0, n_tokens, n_states, w, scale,
                 out[:n_node].reshape((n_tokens, n_states)))
    if scale.shape[0] > 0:
        for r in range(n_node, out.shape[0]):
            out[r] = w[off + r] * scale[off + r]
    else:
        for r in range(n_node, out.shape[0]):
            out[r] = w[off + r]


@njit(cache=True, nogil=True, inline="always")
def token_add_features(data, i, coef, scale, w):
    values, indices, indptr, dense_width, n_states, tok0, n_tokens, n_node, off = (
        _example_tokens(data, i))
    node = coef[:n_node].reshape((n_tokens, n_states))
    _add_node_features(values, indices, indptr, dense_width, tok0, n_tokens, n_states, node,
                       scale, w)
    if scale.shape[0] > 0:
        for r in range(n_node, coef.shape[0]):
            w[off + r] += coef[r] * scale[off + r]
    else:
        for r in range(n_node, coef.shape[0]):
            w[off + r] += coef[r]


@njit(cache=True, nogil=True, inline="always")
def _softmax_log_partition(theta, n_states, mu):
    """``log sum_k exp(theta_k)``; with a non-empty ``mu``, the softmax into it too."""
    top = theta[0]
    for k in range(1, n_states):
        top = max(top, theta[k])
    total = 0.0
    for k in range(n_states):
        term = np.exp(theta[k] - top)
        total += term
        if mu.shape[0] > 0:
            mu[k] = term
    for k in range(mu.shape[0]):
        mu[k] /= total
    return top + np.log(total)


@njit(cache=True, nogil=True, inline="always")
def _chain_blocks(data, i, theta):
    """Node, transition, start and end scores of chain ``i`` (constraints applied)."""
    n_tokens = data.unit_offsets[i + 1] - data.unit_offsets[i]
    return chain_blocks(theta, n_tokens, data.n_states, data.start_end, data.bias,
                        np.zeros(data.n_states))


@njit(cache=True, nogil=True, inline="always")
def token_marginals(data, i, theta, mu):
    unit_offsets, n_states = data.unit_offsets, data.n_states
    chain, start_end = data.chain, data.start_end
    if not chain:  # one token, no transitions: a softmax
        return _softmax_log_partition(theta, n_states, mu)
    n_tokens = unit_offsets[i + 1] - unit_offsets[i]
    n_node = n_tokens * n_states
    node_mu = mu[:n_node].reshape((n_tokens, n_states))
    trans_mu = mu[n_node:n_node + n_states * n_states].reshape((n_states, n_states))
    node_theta, trans_theta, start, end = _chain_blocks(data, i, theta)
    log_z = chain_forward_backward(node_theta, trans_theta, start, end, node_mu, trans_mu)
    if start_end:
        e0 = n_node + n_states * n_states
        for k in range(n_states):
            mu[e0 + k] = node_mu[0, k]
            mu[e0 + n_states + k] = node_mu[n_tokens - 1, k]
    return log_z


@njit(cache=True, nogil=True, inline="always")
def token_log_partition(data, i, theta, scratch):
    """The forward pass alone (``scratch`` unused)."""
    n_states, chain = data.n_states, data.chain
    if not chain:
        return _softmax_log_partition(theta, n_states, scratch[:0])
    node_theta, trans_theta, start, end = _chain_blocks(data, i, theta)
    return chain_log_partition(node_theta, trans_theta, start, end)


@njit(cache=True, nogil=True)
def token_argmax(data, i, scores, y_out):
    n_states = data.n_states
    if not data.chain:
        best = 0
        for k in range(1, n_states):
            if scores[k] > scores[best]:
                best = k
        y_out[0] = best
        return
    node, transition, start, end = _chain_blocks(data, i, scores)
    chain_viterbi(node, transition, start, end, y_out)


@njit(cache=True, nogil=True)
def token_hypergraph_size(data, i):
    unit_offsets, n_states, chain = data.unit_offsets, data.n_states, data.chain
    if not chain:
        return 1, n_states
    n_tokens = unit_offsets[i + 1] - unit_offsets[i]
    return n_tokens * n_states + 1, 2 * n_states + (n_tokens - 1) * n_states * n_states


@njit(cache=True, nogil=True)
def token_hypergraph(data, i, edges):
    """The chain's recursion: node ``t * K + k`` holds the labellings of tokens
    ``0..t`` that end in label ``k``; the goal ends the sequence.  A multiclass
    sample is one edge per label into the goal.  Forbidden transitions, first
    and last labels have no edge."""
    unit_offsets, K, bias = data.unit_offsets, data.n_states, data.bias
    chain, start_end = data.chain, data.start_end
    if not chain:
        for k in range(K):
            edges[k, 0], edges[k, 1], edges[k, 2], edges[k, 3], edges[k, 4] = 0, -1, -1, k, -1
        return K
    n_tokens = unit_offsets[i + 1] - unit_offsets[i]
    n_node = n_tokens * K
    ends = n_node + K * K  # the start parts, then the end parts
    constrained = bias.shape[0] > 0
    n = 0
    for k in range(K):
        if constrained and bias[K * K + k] == -np.inf:
            continue
        edges[n, 0], edges[n, 1], edges[n, 2], edges[n, 3] = k, -1, -1, k
        edges[n, 4] = ends + k if start_end else -1
        n += 1
    for t in range(1, n_tokens):
        for b in range(K):
            for a in range(K):
                if constrained and bias[a * K + b] == -np.inf:
                    continue
                edges[n, 0], edges[n, 1], edges[n, 2] = t * K + b, (t - 1) * K + a, -1
                edges[n, 3], edges[n, 4] = t * K + b, n_node + a * K + b
                n += 1
    for b in range(K):
        if constrained and bias[K * K + K + b] == -np.inf:
            continue
        edges[n, 0], edges[n, 1], edges[n, 2] = n_node, (n_tokens - 1) * K + b, -1
        edges[n, 3] = ends + K + b if start_end else -1
        edges[n, 4] = -1
        n += 1
    return n


@njit(cache=True, nogil=True)
def token_decode(data, i, z, y_out):
    """Each token's label: its largest node part."""
    n_states = data.n_states
    for t in range(y_out.shape[0]):
        best = 0
        for k in range(1, n_states):
            if z[t * n_states + k] > z[t * n_states + best]:
                best = k
        y_out[t] = best


@njit(cache=True, nogil=True)
def token_encode(data, i, y, z_out):
    n_states, chain, start_end = data.n_states, data.chain, data.start_end
    n_tokens = y.shape[0]
    z_out[:] = 0.0
    for t in range(n_tokens):
        z_out[t * n_states + y[t]] = 1.0
    if not chain:
        return
    n_node = n_tokens * n_states
    for t in range(n_tokens - 1):
        z_out[n_node + y[t] * n_states + y[t + 1]] += 1.0
    if start_end:
        e0 = n_node + n_states * n_states
        z_out[e0 + y[0]] += 1.0
        z_out[e0 + n_states + y[n_tokens - 1]] += 1.0


@njit(cache=True, nogil=True)
def _simplex_project(v, out):
    """Euclidean projection of ``v`` onto the probability simplex (sort-based)."""
    u = -np.sort(-v)
    total = 0.0
    tau = 0.0
    for j in range(u.shape[0]):
        total += u[j]
        candidate = (total - 1.0) / (j + 1)
        if u[j] > candidate:
            tau = candidate
    for j in range(v.shape[0]):
        out[j] = max(v[j] - tau, 0.0)


@njit(cache=True, nogil=True)
def token_project(data, i, v, out):
    """Multiclass only: the relaxed output polytope of one sample is the simplex."""
    _simplex_project(v, out)


@njit(cache=True, nogil=True)
def token_add_features_norm(data, i, coef, scale, w, w_scratch, part_scratch):
    """:func:`token_add_features`, returning ``||scale * F_i coef||^2`` (see
    :func:`_token_sq_norm`; ``part_scratch`` unused)."""
    total = _token_sq_norm(data, i, coef, scale, w_scratch)
    token_add_features(data, i, coef, scale, w)
    return total


@njit(cache=True, nogil=True, inline="always")
def _token_sq_norm(data, i, dmu, scale, w_scratch):
    """``||scale * F_i dmu||^2``: through the token Gram matrix without rescaling,
    else by accumulating ``F_i dmu`` in ``w_scratch`` (zero on entry and exit)."""
    values, indices, indptr, dense_width, n_states, tok0, n_tokens, n_node, off = (
        _example_tokens(data, i))
    gram, gram_offsets = data.gram, data.gram_offsets
    n_parts = dmu.shape[0]
    total = 0.0
    if scale.shape[0] == 0:
        g0 = gram_offsets[i]
        for t in range(n_tokens):
            for s in range(t, n_tokens):
                g = gram[g0 + t * n_tokens + s]
                if g == 0.0:
                    continue
                acc = 0.0
                for k in range(n_states):
                    acc += dmu[t * n_states + k] * dmu[s * n_states + k]
                total += g * acc if s == t else 2.0 * g * acc
        for r in range(n_node, n_parts):
            total += dmu[r] * dmu[r]
        return total
    node = dmu[:n_node].reshape((n_tokens, n_states))
    _add_node_features(values, indices, indptr, dense_width, tok0, n_tokens, n_states, node,
                       scale[:0], w_scratch)
    for t in range(n_tokens):
        start, stop = _row_span(tok0 + t, dense_width, indptr)
        for p in range(start, stop):
            j = p - start if dense_width > 0 else indices[p]
            base = j * n_states
            for k in range(n_states):
                value = scale[base + k] * w_scratch[base + k]
                total += value * value
                w_scratch[base + k] = 0.0  # a feature repeated in the example counts once
    for r in range(n_node, n_parts):
        value = scale[off + r] * dmu[r]
        total += value * value
    return total


@njit(cache=True, nogil=True)
def token_gram(values, indices, indptr, dense_width, n_features, unit_offsets):
    """Gram matrices ``x_t . x_s`` of the tokens of every example, flattened.

    Example ``i`` owns ``gram[gram_offsets[i]:gram_offsets[i + 1]]``, a
    ``(T_i, T_i)`` row-major block.  They give the exact squared norm of a
    weight change ``F_i dmu`` in ``O(T_i^2 K)`` operations, which the adaptive
    EG rate needs once per tried step.
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
                scratch[j] += values[p]
            for s in range(t, n_tokens):
                start2, stop2 = _row_span(tok0 + s, dense_width, indptr)
                acc = 0.0
                for p in range(start2, stop2):
                    j = p - start2 if dense_width > 0 else indices[p]
                    acc += scratch[j] * values[p]
                gram[g0 + t * n_tokens + s] = acc
                gram[g0 + s * n_tokens + t] = acc
            for p in range(start, stop):
                j = p - start if dense_width > 0 else indices[p]
                scratch[j] = 0.0
    return gram, gram_offsets


# ------------------------------------------------------------- batch loops
# A batch's node scores are one pass over all its token rows, and a chain batch's examples
# share one exponentiated transition matrix: these loops replace the generic ones of
# ``_generic_kernels`` (same signatures).  They are Python drivers of numba kernels, called
# from Python alone: compiled as numba loops of their own, they added a compilation each,
# and a second one of chain_batch_inference (its task a literal constant), to the first run
# of the main job.  Dense rows go through the per-example kernels' row helpers, so that a
# fit's sums are the same, bit for bit, whether its rows are dense or CSR.

def token_batch_part_scores(data, part_offsets, w, scale, out):
    K, d, n_tokens = data.n_states, data.n_features, int(data.unit_offsets[-1])
    weights = w if scale.shape[0] == 0 else w * scale
    W = weights[:d * K].reshape(d, K)
    node = np.empty((n_tokens, K))
    if data.dense_width > 0:  # (the per-example kernels' sums, bit for bit)
        _node_scores(data.values, data.indices, data.indptr, data.dense_width, 0, n_tokens, K,
                     weights, scale[:0], node)
    else:
        csr_node_scores(data.values, data.indices, data.indptr, 0, n_tokens, W, node)
    chain_scatter_parts(node, np.ascontiguousarray(weights[d * K:]), data.unit_offsets,
                        part_offsets, out)


def token_batch_add_features(data, part_offsets, z, sample_weight, scale, w):
    K, d, n_tokens = data.n_states, data.n_features, int(data.unit_offsets[-1])
    if sample_weight.shape[0] == 0:
        sample_weight = np.ones(len(part_offsets) - 1)
    node = np.empty((n_tokens, K))
    added = np.zeros(w.shape[0])
    chain_gather_parts(z, data.unit_offsets, part_offsets, sample_weight, node, added[d * K:])
    W = added[:d * K].reshape(d, K)
    if data.dense_width > 0:
        _add_node_features(data.values, data.indices, data.indptr, data.dense_width, 0, n_tokens,
                           K, node, scale[:0], added)
    else:
        csr_add_node_features(data.values, data.indices, data.indptr, 0, n_tokens, node, 1.0, W)
    w += added if scale.shape[0] == 0 else scale * added


def chain_batch_marginals(data, part_offsets, theta, mu, log_partition):
    chain_batch_inference(MARGINALS, theta, data.unit_offsets, part_offsets, data.n_states,
                          data.start_end, data.bias, log_partition, mu,
                          np.empty(0, dtype=np.int64))


def chain_batch_log_partition(data, part_offsets, theta, log_partition):
    chain_batch_inference(LOG_PARTITION, theta, data.unit_offsets, part_offsets, data.n_states,
                          data.start_end, data.bias, log_partition, np.empty(0),
                          np.empty(0, dtype=np.int64))


def chain_batch_argmax(data, part_offsets, unit_offsets, scores, Y):
    chain_batch_inference(VITERBI, scores, unit_offsets, part_offsets, data.n_states,
                          data.start_end, data.bias, np.empty(len(part_offsets) - 1),
                          np.empty(0), Y)


_PER_EXAMPLE = dict(
    part_scores=token_part_scores, add_features=token_add_features,
    marginals=token_marginals, log_partition=token_log_partition, argmax=token_argmax,
    encode=token_encode, add_features_norm=token_add_features_norm,
    part_scores_at=token_part_scores_at, add_features_at=token_add_features_at,
    hypergraph_size=token_hypergraph_size, hypergraph=token_hypergraph, decode=token_decode,
    batch_part_scores=token_batch_part_scores, batch_add_features=token_batch_add_features)

#: The chain's operations: no projection, and its batch inference in one loop.
CHAIN_KERNEL_OPS = KernelOps(
    **_PER_EXAMPLE, batch_marginals=chain_batch_marginals,
    batch_log_partition=chain_batch_log_partition, batch_argmax=chain_batch_argmax)

#: Multiclass: a sample is a chain of one token without transitions (a softmax), whose
#: relaxed output polytope is the simplex.
MULTICLASS_KERNEL_OPS = KernelOps(**_PER_EXAMPLE, project=token_project)


#: Dense token features with at most this fraction of non-zero values reach the kernels
#: as CSR: the dense loops test every value for zero, a branch the CPU often mispredicts
#: where zeros and non-zeros mix, and CSR visits the non-zeros only (faster up to about
#: half non-zero, and no slower beyond), for at most 6 bytes per value beside the batch's
#: dense 8.
SPARSE_KERNEL_DENSITY = 0.5


def kernel_rows(X):
    """Token features ``X`` (dense or CSR) in the form the kernels read: CSR with writable
    float64 values and int32 indices (int64 only past 2**31 - 1) when sparse or mostly
    zero (``SPARSE_KERNEL_DENSITY``), else a C-contiguous float64 matrix.

    numba compiles every kernel again for a read-only array (a memory map) or 64-bit
    sparse indices; batches keep their rows in this form, so that their kernel data is
    a view of them.
    """
    if not sp.issparse(X) and np.count_nonzero(X) > SPARSE_KERNEL_DENSITY * X.size:
        return kernel_array(X)
    # (a dense matrix without columns travels as CSR with empty rows: dense_width == 0
    # is the kernels' CSR flag)
    X = sp.csr_matrix(X)
    index = np.int32 if max(X.nnz, X.shape[1]) <= np.iinfo(np.int32).max else np.int64
    return sp.csr_matrix((kernel_array(X.data, np.float64), kernel_array(X.indices, index),
                          kernel_array(X.indptr, index)), shape=X.shape)


def token_features(X):
    """``(values, indices, indptr, dense_width)``: token features ``X`` (dense or CSR) as
    the kernels read them (:func:`kernel_rows`)."""
    X = kernel_rows(X)
    if sp.issparse(X):
        return X.data, X.indices, X.indptr, 0
    return X.reshape(-1), np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32), X.shape[1]


def token_kernel_data(X, unit_offsets, n_states, chain, start_end, training, bias=None):
    """Kernel data of token features ``X`` (dense or CSR) stacked by ``unit_offsets``.

    Mostly-zero dense features are converted to CSR (see ``SPARSE_KERNEL_DENSITY``);
    the kernels' sums see the same non-zero terms in the same order either way.

    ``bias`` constrains the labellings of chains (see the module docstring);
    ``None`` for none.
    """
    values, indices, indptr, dense_width = token_features(X)
    n_features = X.shape[1]
    if training:
        gram, gram_offsets = token_gram(values, indices, indptr, dense_width, n_features,
                                        unit_offsets)
    else:
        gram, gram_offsets = np.zeros(0), np.zeros(0, dtype=np.int64)
    bias = np.zeros(0) if bias is None else np.ascontiguousarray(bias, dtype=np.float64)
    return TokenData(values, indices, indptr, dense_width, n_features, unit_offsets, n_states,
                     bool(chain), bool(start_end), gram, gram_offsets, bias)


def feature_major(w, n_states, n_features):
    """Public layout ``W.ravel()`` (K, d) first -> feature-major (d, K) first (a copy, in
    memory for the kernels' random access: :func:`sklearn_struct._memory.random_access_zeros`)."""
    w = np.ascontiguousarray(w, dtype=np.float64)
    return _transposed_head(w, n_states, n_features, random_access_zeros(w.shape[0]))


def label_major(w, n_states, n_features):
    """The inverse of :func:`feature_major` (a copy)."""
    w = np.ascontiguousarray(w, dtype=np.float64)
    return _transposed_head(w, n_features, n_states, np.empty(w.shape[0]))


def _transposed_head(w, rows, columns, out):
    """``out``, filled with ``w`` whose first ``rows * columns`` numbers, an ``(rows,
    columns)`` matrix, are transposed: written once, with no temporary of its size."""
    _blocked_transpose(w, rows, columns, out)
    return out


#: Columns of the source that one pass of :func:`_blocked_transpose` reads.
_TRANSPOSE_BLOCK = 64


@njit(cache=True, nogil=True)
def _blocked_transpose(w, rows, columns, out):
    """``out``: ``w`` with its ``(rows, columns)`` head transposed, a block of columns at a
    time, so that the rows written stay in cache (numpy's strided copy of a tagger's
    weights took 5 to 8 times as long)."""
    for first in range(0, columns, _TRANSPOSE_BLOCK):
        last = min(first + _TRANSPOSE_BLOCK, columns)
        for r in range(rows):
            source = r * columns
            for j in range(first, last):
                out[j * rows + r] = w[source + j]
    for j in range(rows * columns, w.shape[0]):  # (a slice assignment compiles a message)
        out[j] = w[j]
