"""Per-example numba operations of pairwise Markov networks on any graph.

Kernel data (a ``GraphData``, built by ``GraphStructure.kernel_data``): the node and edge
feature rows (as :func:`.._graph.feature_arrays` gives them), the node and edge offsets of
the examples, the edges' endpoints (``tails``, ``heads``, local to their graph) and
appearance probabilities in spanning forests (``edge_appearance``, see ``_trw.py``), the
number of labels ``K``, whether the pairwise weights are symmetric or associative, and the
inference's sweep cap and
tolerance.

Parts of a graph of ``n`` nodes and ``m`` edges: ``n * K`` node parts (node ``v``, label
``k`` at ``v * K + k``), then ``m * K * K`` edge parts (edge ``e``, labels ``(a, b)`` of its
tail and head at ``n * K + e * K * K + a * K + b``).  Weights: ``W`` (K, d) label-major, then
the pairwise weights, ``(K, K, d_edge)``, or, symmetric, one row per pair ``a <= b`` in
order (``(K (K + 1) / 2, d_edge)``), or, associative, ``(K, d_edge)`` (a pair of equal
labels alone is scored).

MAP inference is the linear program over the local polytope (marginals of nodes and edges
that agree), solved through its dual: the dual variables ``y`` move each edge's scores onto
its endpoints (a reparametrization), and every ``y`` bounds the LP from above by the sum of
each node's and each edge's best reparametrized score.  :func:`mplp` lowers that bound by
exact block coordinate descent, an edge at a time (MPLP, Globerson and Jaakkola 2007), and
decodes each node's best reparametrized label; where the decoded labelling scores the bound,
it is certified optimal.  :func:`lp_solve` reaches the LP's optimum itself, fractional where
the relaxation is not tight, by the primal-dual hybrid gradient (Chambolle and Pock 2011) on
the same Lagrangian: many more iterations, for when a certificate fails.

The marginals are tree-reweighted sum-product's (``_trw.py``): pseudo-marginals in the local
polytope, and an upper bound on log Z for the log partition; both exact on a forest.
"""

from collections import namedtuple

import numpy as np
from numba import njit

from .._graph_kernels import _row_add, _row_dot
from .._kernel import KernelOps
from ._trw import trw

__all__ = ["GRAPH_KERNEL_OPS", "GraphData", "lp_solve", "mplp"]

GraphData = namedtuple("GraphData", (
    "node_values", "node_indices", "node_indptr", "node_width", "edge_values", "edge_indices",
    "edge_indptr", "edge_width", "n_node_features", "n_edge_features", "node_offsets",
    "edge_offsets", "tails", "heads", "edge_appearance", "n_states", "symmetric", "associative",
    "max_iter",
    "tol"))


@njit(cache=True, nogil=True, inline="always")
def _graph(data, i):
    """Example ``i``'s first node and edge, its numbers of nodes and edges, and ``K``."""
    n0, e0 = data.node_offsets[i], data.edge_offsets[i]
    return (n0, e0, data.node_offsets[i + 1] - n0, data.edge_offsets[i + 1] - e0,
            data.n_states)


@njit(cache=True, nogil=True, inline="always")
def _pair_weight(data, a, b):
    """The first pairwise weight of labels ``(a, b)``, or -1 for a pair that has none."""
    K, d, f = data.n_states, data.n_node_features, data.n_edge_features
    if data.associative:
        return K * d + a * f if a == b else -1
    if data.symmetric:  # the upper triangle's row of the pair, rows a <= b in order
        low, high = min(a, b), max(a, b)
        return K * d + (low * K - low * (low - 1) // 2 + high - low) * f
    return K * d + (a * K + b) * f


@njit(cache=True, nogil=True)
def graph_part_scores(data, i, w, scale, out):
    n0, e0, n, m, K = _graph(data, i)
    d = data.n_node_features
    for v in range(n):
        for k in range(K):
            out[v * K + k] = _row_dot(data.node_values, data.node_indices, data.node_indptr,
                                      data.node_width, n0 + v, w, k * d, scale)
    for e in range(m):
        for a in range(K):
            for b in range(K):
                first = _pair_weight(data, a, b)
                out[n * K + (e * K + a) * K + b] = 0.0 if first < 0 else _row_dot(
                    data.edge_values, data.edge_indices, data.edge_indptr, data.edge_width,
                    e0 + e, w, first, scale)


@njit(cache=True, nogil=True)
def graph_add_features(data, i, coef, scale, w):
    n0, e0, n, m, K = _graph(data, i)
    d = data.n_node_features
    for v in range(n):
        for k in range(K):
            _row_add(data.node_values, data.node_indices, data.node_indptr, data.node_width,
                     n0 + v, coef[v * K + k], w, k * d, scale)
    for e in range(m):
        for a in range(K):
            for b in range(K):
                first = _pair_weight(data, a, b)
                if first >= 0:
                    _row_add(data.edge_values, data.edge_indices, data.edge_indptr,
                             data.edge_width, e0 + e, coef[n * K + (e * K + a) * K + b], w,
                             first, scale)


@njit(cache=True, nogil=True)
def graph_encode(data, i, y, z_out):
    n0, e0, n, m, K = _graph(data, i)
    for r in range(z_out.shape[0]):
        z_out[r] = 0.0
    for v in range(n):
        z_out[v * K + y[v]] = 1.0
    for e in range(m):
        z_out[n * K + (e * K + y[data.tails[e0 + e]]) * K + y[data.heads[e0 + e]]] = 1.0


@njit(cache=True, nogil=True, inline="always")
def _labelling_score(scores, tails, heads, n, K, labels):
    total = 0.0
    for v in range(n):
        total += scores[v * K + labels[v]]
    for e in range(tails.shape[0]):
        total += scores[n * K + (e * K + labels[tails[e]]) * K + labels[heads[e]]]
    return total


@njit(cache=True, nogil=True)
def mplp(scores, n, K, tails, heads, y, max_iter, tol, labels):
    """Edge MPLP from the duals ``y`` (``(m, 2, K)``, updated in place); the best decoded
    labelling into ``labels``.  Returns ``(its score, the least upper bound, sweeps)``.

    It stops when the labelling's score reaches the bound within ``tol`` (relative: a
    certificate), when a sweep no longer lowers the bound, or after ``max_iter`` sweeps.
    """
    m = tails.shape[0]
    g = np.empty((n, K))  # each node's reparametrized scores
    for v in range(n):
        for k in range(K):
            g[v, k] = scores[v * K + k]
    for e in range(m):
        for k in range(K):
            g[tails[e], k] += y[e, 0, k]
            g[heads[e], k] += y[e, 1, k]
    rest_tail, rest_head = np.empty(K), np.empty(K)
    to_tail, to_head = np.empty(K), np.empty(K)
    candidate = np.empty(n, dtype=np.int64)
    lower, upper = -np.inf, np.inf
    sweep = 0
    while sweep < max_iter:
        sweep += 1
        for e in range(m):
            u, v, base = tails[e], heads[e], n * K + e * K * K
            for k in range(K):
                rest_tail[k] = g[u, k] - y[e, 0, k]
                rest_head[k] = g[v, k] - y[e, 1, k]
            for a in range(K):
                top_tail, top_head = -np.inf, -np.inf
                for b in range(K):
                    top_tail = max(top_tail, scores[base + a * K + b] + rest_head[b])
                    top_head = max(top_head, scores[base + b * K + a] + rest_tail[b])
                to_tail[a], to_head[a] = top_tail, top_head
            for k in range(K):  # the block's minimiser: each end gets half of the edge
                y[e, 0, k] = 0.5 * (to_tail[k] - rest_tail[k])
                y[e, 1, k] = 0.5 * (to_head[k] - rest_head[k])
                g[u, k] = rest_tail[k] + y[e, 0, k]
                g[v, k] = rest_head[k] + y[e, 1, k]
        bound = 0.0
        for v in range(n):
            best = 0
            for k in range(1, K):
                if g[v, k] > g[v, best]:
                    best = k
            candidate[v] = best
            bound += g[v, best]
        for e in range(m):
            top = -np.inf
            base = n * K + e * K * K
            for a in range(K):
                for b in range(K):
                    top = max(top, scores[base + a * K + b] - y[e, 0, a] - y[e, 1, b])
            bound += top
        value = _labelling_score(scores, tails, heads, n, K, candidate)
        if value > lower:
            lower = value
            for v in range(n):
                labels[v] = candidate[v]
        stalled = upper - bound <= 1e-12 * max(1.0, abs(bound))
        upper = min(upper, bound)
        if upper - lower <= tol * max(1.0, abs(upper)):
            return lower, upper, sweep
        if stalled and sweep > 2:
            break
    # not certified: the decoded labelling, improved a node at a time (ties in the
    # reparametrized scores, where the relaxation is not tight, decode arbitrarily)
    return _improve(scores, n, K, tails, heads, labels), upper, sweep


@njit(cache=True, nogil=True, inline="always")
def _local_score(scores, n, K, tails, heads, labels, incident, start, stop, v, k):
    """Node ``v``'s score and its edges' with label ``k``, the others' labels fixed."""
    value = scores[v * K + k]
    for j in range(start, stop):
        e = incident[j]
        base = n * K + e * K * K
        if tails[e] == v:
            value += scores[base + k * K + labels[heads[e]]]
        else:
            value += scores[base + labels[tails[e]] * K + k]
    return value


@njit(cache=True, nogil=True)
def _improve(scores, n, K, tails, heads, labels):
    """Iterated conditional modes from ``labels`` (in place): each node takes its best
    label given its neighbours', until no node changes.  Returns the labelling's score."""
    m = tails.shape[0]
    first = np.zeros(n + 1, dtype=np.int64)  # each node's incident edges
    for e in range(m):
        first[tails[e] + 1] += 1
        first[heads[e] + 1] += 1
    for v in range(n):
        first[v + 1] += first[v]
    incident = np.empty(2 * m, dtype=np.int64)
    filled = first[:n].copy()
    for e in range(m):
        incident[filled[tails[e]]] = e
        filled[tails[e]] += 1
        incident[filled[heads[e]]] = e
        filled[heads[e]] += 1
    changed = True
    while changed:
        changed = False
        for v in range(n):
            best = labels[v]
            best_value = _local_score(scores, n, K, tails, heads, labels, incident,
                                      first[v], first[v + 1], v, best)
            for k in range(K):
                value = _local_score(scores, n, K, tails, heads, labels, incident, first[v],
                                     first[v + 1], v, k)
                if value > best_value + 1e-12 * max(1.0, abs(best_value)):
                    best, best_value = k, value
            if best != labels[v]:
                labels[v] = best
                changed = True
    return _labelling_score(scores, tails, heads, n, K, labels)


@njit(cache=True, nogil=True)
def _project_simplex(v, out):
    """Euclidean projection of ``v`` onto the probability simplex (sort-based)."""
    u = np.sort(v)
    total, tau = 0.0, 0.0
    for j in range(u.shape[0] - 1, -1, -1):
        total += u[j]
        candidate = (total - 1.0) / (u.shape[0] - j)
        if u[j] > candidate:
            tau = candidate
    for j in range(v.shape[0]):
        out[j] = max(v[j] - tau, 0.0)


@njit(cache=True, nogil=True)
def lp_solve(scores, n, K, tails, heads, max_iter, tol, x):
    """The local-polytope LP's optimum into the part vector ``x`` (node then edge marginals),
    by the primal-dual hybrid gradient on ``max scores . x`` subject to the marginalization
    constraints, ``x`` on each node's and each edge's simplex.  Returns ``(the upper bound
    of the final duals, scores . x, the largest constraint violation, iterations)``; it stops
    when the two values agree within ``tol`` (relative) and the violation is below ``tol``.
    """
    m = tails.shape[0]
    KK = K * K
    degree = np.zeros(n, dtype=np.int64)
    for e in range(m):
        degree[tails[e]] += 1
        degree[heads[e]] += 1
    widest = 2
    for v in range(n):
        widest = max(widest, degree[v])
    step = 0.99 / np.sqrt((K + 1.0) * widest)  # both steps; their product times ||A||^2 < 1
    for v in range(n):
        for k in range(K):
            x[v * K + k] = 1.0 / K
    for r in range(n * K, x.shape[0]):
        x[r] = 1.0 / KK
    y = np.zeros((m, 2, K))
    gradient = np.empty(x.shape[0])
    moved = np.empty(x.shape[0])
    upper = value = violation = np.inf
    iteration = 0
    while iteration < max_iter:
        iteration += 1
        for r in range(n * K):
            gradient[r] = scores[r]
        for e in range(m):
            base = n * K + e * KK
            for a in range(K):
                gradient[tails[e] * K + a] += y[e, 0, a]
                gradient[heads[e] * K + a] += y[e, 1, a]
                for b in range(K):
                    gradient[base + a * K + b] = scores[base + a * K + b] - y[e, 0, a] - y[e, 1, b]
        upper = 0.0  # the dual bound of y: each block's best reparametrized score
        for v in range(n):
            top = -np.inf
            for k in range(K):
                top = max(top, gradient[v * K + k])
            upper += top
        for e in range(m):
            top = -np.inf
            for r in range(KK):
                top = max(top, gradient[n * K + e * KK + r])
            upper += top
        for v in range(n):
            _project_simplex(x[v * K:(v + 1) * K] + step * gradient[v * K:(v + 1) * K],
                             moved[v * K:(v + 1) * K])
        for e in range(m):
            lo, hi = n * K + e * KK, n * K + (e + 1) * KK
            _project_simplex(x[lo:hi] + step * gradient[lo:hi], moved[lo:hi])
        violation = 0.0
        for e in range(m):  # the duals step on the extrapolated point 2 * moved - x
            base = n * K + e * KK
            for a in range(K):
                row, column = 0.0, 0.0
                for b in range(K):
                    row += moved[base + a * K + b]
                    column += moved[base + b * K + a]
                violation = max(violation, abs(row - moved[tails[e] * K + a]),
                                abs(column - moved[heads[e] * K + a]))
                row_x, column_x = 0.0, 0.0
                for b in range(K):
                    row_x += x[base + a * K + b]
                    column_x += x[base + b * K + a]
                y[e, 0, a] += step * (2 * (row - moved[tails[e] * K + a])
                                      - (row_x - x[tails[e] * K + a]))
                y[e, 1, a] += step * (2 * (column - moved[heads[e] * K + a])
                                      - (column_x - x[heads[e] * K + a]))
        for r in range(x.shape[0]):
            x[r] = moved[r]
        value = 0.0
        for r in range(x.shape[0]):
            value += scores[r] * x[r]
        if upper - value <= tol * max(1.0, abs(upper)) and violation <= tol:
            break
    return upper, value, violation, iteration


@njit(cache=True, nogil=True)
def graph_argmax(data, i, scores, y_out):
    """The best labelling that MPLP decodes (optimal where it is certified)."""
    n0, e0, n, m, K = _graph(data, i)
    duals = np.zeros((m, 2, K))
    mplp(scores, n, K, data.tails[e0:e0 + m], data.heads[e0:e0 + m], duals, data.max_iter,
         data.tol, y_out)


@njit(cache=True, nogil=True)
def graph_marginals(data, i, theta, mu):
    """Tree-reweighted pseudo-marginals into ``mu``; returns the tree-reweighted upper bound
    on log Z (both exact on a forest)."""
    n0, e0, n, m, K = _graph(data, i)
    return trw(theta, n, K, data.tails[e0:e0 + m], data.heads[e0:e0 + m],
               data.edge_appearance[e0:e0 + m], data.max_iter, data.tol, mu)


GRAPH_KERNEL_OPS = KernelOps(part_scores=graph_part_scores, add_features=graph_add_features,
                             marginals=graph_marginals, argmax=graph_argmax, encode=graph_encode)
