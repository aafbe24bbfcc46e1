"""Max-flow (Dinic's algorithm on float capacities): the min-cut argmax."""

import numpy as np
from numba import njit


# --------------------------------------------------------------------------
# Max-flow (Dinic) on float capacities, for the min-cut argmax.
# --------------------------------------------------------------------------


@njit(cache=True)
def _dinic_levels(source, sink, first, nxt, head, cap, level, queue, eps):
    level[:] = -1
    level[source] = 0
    queue[0] = source
    lo, hi = 0, 1
    while lo < hi:
        x = queue[lo]
        lo += 1
        a = first[x]
        while a >= 0:
            y = head[a]
            if cap[a] > eps and level[y] < 0:
                level[y] = level[x] + 1
                queue[hi] = y
                hi += 1
            a = nxt[a]
    return level[sink] >= 0


@njit(cache=True)
def _dinic_augment(source, sink, nxt, head, cap, level, current, path, eps):
    """Push flow along one shortest augmenting path; returns the amount (0: none)."""
    depth = 0
    x = source
    while True:
        if x == sink:
            amount = np.inf
            for i in range(depth):
                amount = min(amount, cap[path[i]])
            for i in range(depth):
                cap[path[i]] -= amount
                cap[path[i] ^ 1] += amount
            return amount
        advanced = False
        while current[x] >= 0:
            a = current[x]
            y = head[a]
            if cap[a] > eps and level[y] == level[x] + 1:
                path[depth] = a
                depth += 1
                x = y
                advanced = True
                break
            current[x] = nxt[a]
        if not advanced:
            if depth == 0:
                return 0.0
            level[x] = -1  # dead end: prune it from the level graph
            depth -= 1
            x = head[path[depth] ^ 1]
            current[x] = nxt[current[x]]


@njit(cache=True)
def mincut_argmax(node_scores, edge_weights, tail, head, labels):
    """Maximise sum_j s_j y_j - sum_e c_e [y_tail != y_head] over y in {0,1}^N.

    ``edge_weights`` must be non-negative (submodular).  Source side of the
    minimum s-t cut = label 1.  Returns the optimal score.
    """
    n_nodes, n_edges = node_scores.shape[0], edge_weights.shape[0]
    source, sink = n_nodes, n_nodes + 1
    n_arcs = 2 * (n_nodes + n_edges)
    first = -np.ones(n_nodes + 2, dtype=np.int64)
    nxt = np.empty(n_arcs, dtype=np.int64)
    head_of = np.empty(n_arcs, dtype=np.int64)
    cap = np.zeros(n_arcs)
    scale = 0.0
    m = 0
    # arcs come in pairs (a, a ^ 1) = (arc, reverse arc)
    for j in range(n_nodes):
        s = node_scores[j]
        x, y, c = (source, j, s) if s > 0.0 else (j, sink, -s)
        head_of[m], cap[m], nxt[m], first[x] = y, c, first[x], m
        head_of[m + 1], cap[m + 1], nxt[m + 1], first[y] = x, 0.0, first[y], m + 1
        m += 2
        scale = max(scale, abs(s))
    for e in range(n_edges):
        x, y, c = tail[e], head[e], edge_weights[e]
        head_of[m], cap[m], nxt[m], first[x] = y, c, first[x], m
        head_of[m + 1], cap[m + 1], nxt[m + 1], first[y] = x, c, first[y], m + 1
        m += 2
        scale = max(scale, c)
    eps = 1e-13 * scale
    level = np.empty(n_nodes + 2, dtype=np.int64)
    queue = np.empty(n_nodes + 2, dtype=np.int64)
    path = np.empty(n_nodes + 2, dtype=np.int64)
    while _dinic_levels(source, sink, first, nxt, head_of, cap, level, queue, eps):
        current = first.copy()
        while _dinic_augment(source, sink, nxt, head_of, cap, level, current, path, eps) > 0.0:
            pass
    _dinic_levels(source, sink, first, nxt, head_of, cap, level, queue, eps)
    best = 0.0
    for j in range(n_nodes):
        labels[j] = 1 if level[j] >= 0 else 0
        best += node_scores[j] * labels[j]
    for e in range(n_edges):
        if labels[tail[e]] != labels[head[e]]:
            best -= edge_weights[e]
    return best


@njit(cache=True)
def mincut_argmax_batch(scores, part_offsets, node_offsets, edges, edge_offsets, labels):
    """Argmax of every example from flat part scores (node scores, then -edge weights)."""
    for i in range(part_offsets.shape[0] - 1):
        p0 = part_offsets[i]
        n0, n1 = node_offsets[i], node_offsets[i + 1]
        e0, e1 = edge_offsets[i], edge_offsets[i + 1]
        n_nodes = n1 - n0
        weights = -scores[p0 + n_nodes:p0 + n_nodes + e1 - e0]
        mincut_argmax(
            scores[p0:p0 + n_nodes], weights, edges[e0:e1, 0], edges[e0:e1, 1],
            labels[n0:n1],
        )
