"""Per-example numba operations of the pruned chain (:class:`.structure.PrunedChainStructure`).

Kernel data, a :class:`PrunedChainData`: the token features as
:func:`.._token_kernels.token_features` gives them, the token offsets, the number of
labels ``L``, ``start_end``, and the candidates: token ``u`` (of the whole batch) may
take the labels ``labels[candidate_offsets[u]:candidate_offsets[u + 1]]`` (sorted), and
owns ``pair_offsets[u + 1] - pair_offsets[u]`` transition parts, the pairs of its
predecessor's candidates and its own (none for a sentence's first token).

Parts of example ``i`` (tokens ``u0..u1-1``, ``N`` candidates, ``P`` pairs): node part
``(u, c)`` at ``candidate_offsets[u] - candidate_offsets[u0] + c``; the pair
``(a, b)`` into token ``u`` at ``N + pair_offsets[u] - pair_offsets[u0] + a * k_u + b``;
with ``start_end``, the first token's candidates' start parts, then the last token's
end parts.  The weights: one per (feature, label) pair of the *support*, the sorted keys
``j * L + label`` of the pairs a training token's features and candidates make (feature
``j``'s are ``support[support_offsets[j]:support_offsets[j + 1]]``; a pair outside it has
no weight and scores 0), then the chain's ``transition`` ``(L, L)``, ``start``, ``end``.

Inference is the generic dynamic program (:mod:`.._semiring`) on :func:`pruned_hypergraph`,
whose nodes are the node parts: O(sum_t k_{t-1} k_t) per example.
"""

from collections import namedtuple

import numpy as np
from numba import njit

from .._kernel import KernelOps
from .._token_kernels import TokenData, _row_span

__all__ = ["KERNEL_OPS", "PrunedChainData"]


#: Kernel data of the pruned chain (see the module docstring): the token features of
#: ``TokenData``, then the candidates and the weight support.
PrunedChainData = namedtuple("PrunedChainData", TokenData._fields[:7] + (
    "start_end", "candidate_offsets", "labels", "pair_offsets", "support", "support_offsets"))


@njit(cache=True, nogil=True)
def _weights_of(data, j, u, index):
    """``index[c]``: the weight of feature ``j`` and token ``u``'s candidate ``c``, -1 for
    none (both lists sorted: one merge over feature ``j``'s stretch of the support)."""
    key0 = j * data.n_states
    s, stop = data.support_offsets[j], data.support_offsets[j + 1]
    first, last = data.candidate_offsets[u], data.candidate_offsets[u + 1]
    for c in range(first, last):
        label = key0 + data.labels[c]
        while s < stop and data.support[s] < label:
            s += 1
        index[c - first] = s if s < stop and data.support[s] == label else -1


@njit(cache=True, nogil=True)
def _layout(data, i):
    """Example ``i``'s first and last token, first candidate, candidates and pairs."""
    u0, u1 = data.unit_offsets[i], data.unit_offsets[i + 1]
    c0 = data.candidate_offsets[u0]
    n_nodes = data.candidate_offsets[u1] - c0
    n_pairs = data.pair_offsets[u1] - data.pair_offsets[u0]
    return u0, u1, c0, n_nodes, n_pairs


@njit(cache=True, nogil=True)
def _tail_weights(data, i):
    """The weight of every part past the node parts (transitions, start, end), in order."""
    u0, u1, c0, n_nodes, n_pairs = _layout(data, i)
    L, offsets, labels = data.n_states, data.candidate_offsets, data.labels
    first = offsets[u0 + 1] - offsets[u0]
    last = offsets[u1] - offsets[u1 - 1]
    out = np.empty(n_pairs + (first + last if data.start_end else 0), dtype=np.int64)
    base = data.support.shape[0]
    n = 0
    for u in range(u0 + 1, u1):
        for a in range(offsets[u - 1], offsets[u]):
            for b in range(offsets[u], offsets[u + 1]):
                out[n] = base + labels[a] * L + labels[b]
                n += 1
    if data.start_end:
        for c in range(offsets[u0], offsets[u0 + 1]):
            out[n] = base + L * L + labels[c]
            n += 1
        for c in range(offsets[u1 - 1], offsets[u1]):
            out[n] = base + L * L + L + labels[c]
            n += 1
    return out


@njit(cache=True, nogil=True)
def pruned_part_scores(data, i, w, scale, out):
    u0, u1, c0, n_nodes, _ = _layout(data, i)
    offsets = data.candidate_offsets
    scaled = scale.shape[0] > 0
    out[:n_nodes] = 0.0
    index = np.empty(data.n_states, dtype=np.int64)
    for u in range(u0, u1):
        start, stop = _row_span(u, data.dense_width, data.indptr)
        for p in range(start, stop):
            value = data.values[p]
            _weights_of(data, p - start if data.dense_width > 0 else data.indices[p], u, index)
            for c in range(offsets[u + 1] - offsets[u]):
                r = index[c]
                if r >= 0:
                    out[offsets[u] - c0 + c] += value * w[r] * (scale[r] if scaled else 1.0)
    tail = _tail_weights(data, i)
    for n in range(tail.shape[0]):
        r = tail[n]
        out[n_nodes + n] = w[r] * (scale[r] if scaled else 1.0)


@njit(cache=True, nogil=True)
def pruned_add_features(data, i, coef, scale, w):
    u0, u1, c0, n_nodes, _ = _layout(data, i)
    offsets = data.candidate_offsets
    scaled = scale.shape[0] > 0
    index = np.empty(data.n_states, dtype=np.int64)
    for u in range(u0, u1):
        start, stop = _row_span(u, data.dense_width, data.indptr)
        for p in range(start, stop):
            value = data.values[p]
            _weights_of(data, p - start if data.dense_width > 0 else data.indices[p], u, index)
            for c in range(offsets[u + 1] - offsets[u]):
                r = index[c]
                if r >= 0:
                    w[r] += value * coef[offsets[u] - c0 + c] * (scale[r] if scaled else 1.0)
    tail = _tail_weights(data, i)
    for n in range(tail.shape[0]):
        r = tail[n]
        w[r] += coef[n_nodes + n] * (scale[r] if scaled else 1.0)


@njit(cache=True, nogil=True)
def pruned_hypergraph_size(data, i):
    u0, u1, c0, n_nodes, n_pairs = _layout(data, i)
    offsets = data.candidate_offsets
    return n_nodes + 1, n_pairs + offsets[u0 + 1] - offsets[u0] + offsets[u1] - offsets[u1 - 1]


@njit(cache=True, nogil=True)
def pruned_hypergraph(data, i, edges):
    """The chain's forward recursion over the candidates: node ``(u, c)`` (its node part's
    index) holds the labellings of the tokens up to ``u`` that end in candidate ``c``;
    the goal, node ``N``, ends the sentence."""
    u0, u1, c0, n_nodes, n_pairs = _layout(data, i)
    offsets, pairs = data.candidate_offsets, data.pair_offsets
    first = offsets[u0 + 1] - offsets[u0]
    ends = n_nodes + n_pairs  # the start parts, then the end parts
    n = 0
    for c in range(first):
        edges[n, 0], edges[n, 1], edges[n, 2], edges[n, 3] = c, -1, -1, c
        edges[n, 4] = ends + c if data.start_end else -1
        n += 1
    for u in range(u0 + 1, u1):
        k = offsets[u + 1] - offsets[u]
        pair0 = n_nodes + pairs[u] - pairs[u0]
        for b in range(k):
            for a in range(offsets[u] - offsets[u - 1]):
                edges[n, 0], edges[n, 1] = offsets[u] - c0 + b, offsets[u - 1] - c0 + a
                edges[n, 2], edges[n, 3] = -1, offsets[u] - c0 + b
                edges[n, 4] = pair0 + a * k + b
                n += 1
    for b in range(offsets[u1] - offsets[u1 - 1]):
        edges[n, 0], edges[n, 1], edges[n, 2] = n_nodes, offsets[u1 - 1] - c0 + b, -1
        edges[n, 3] = ends + first + b if data.start_end else -1
        edges[n, 4] = -1
        n += 1
    return n


@njit(cache=True, nogil=True)
def _candidate(data, u, label):
    """Position of ``label`` among token ``u``'s candidates, -1 if absent."""
    for c in range(data.candidate_offsets[u], data.candidate_offsets[u + 1]):
        if data.labels[c] == label:
            return c - data.candidate_offsets[u]
    return -1


@njit(cache=True, nogil=True)
def pruned_encode(data, i, y, z_out):
    """Part vector of labels ``y`` (every one among its token's candidates)."""
    u0, u1, c0, n_nodes, n_pairs = _layout(data, i)
    offsets, pairs = data.candidate_offsets, data.pair_offsets
    z_out[:] = 0.0
    previous = 0
    for u in range(u0, u1):
        c = _candidate(data, u, y[u - u0])
        z_out[offsets[u] - c0 + c] = 1.0
        if u > u0:
            k = offsets[u + 1] - offsets[u]
            z_out[n_nodes + pairs[u] - pairs[u0] + previous * k + c] = 1.0
        previous = c
    if data.start_end:
        ends = n_nodes + n_pairs
        z_out[ends + _candidate(data, u0, y[0])] = 1.0
        z_out[ends + offsets[u0 + 1] - offsets[u0] + previous] = 1.0


@njit(cache=True, nogil=True)
def pruned_decode(data, i, z, y_out):
    """Each token's label: its largest node part."""
    u0, u1, c0, _, _ = _layout(data, i)
    offsets = data.candidate_offsets
    for u in range(u0, u1):
        best = offsets[u]
        for c in range(offsets[u] + 1, offsets[u + 1]):
            if z[c - c0] > z[best - c0]:
                best = c
        y_out[u - u0] = data.labels[best]


KERNEL_OPS = KernelOps(
    part_scores=pruned_part_scores, add_features=pruned_add_features, encode=pruned_encode,
    hypergraph_size=pruned_hypergraph_size, hypergraph=pruned_hypergraph,
    decode=pruned_decode,
)
