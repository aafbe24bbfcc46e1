"""The generic dynamic program: semiring algorithms over a structure's hypergraph.

A dynamic-programming structure writes its recursion once, as the hyperedges
of one example (the kernel operation ``hypergraph``), and every inference
operation follows from it here, written once for every such structure:

=================  ==========================  =========================================
semiring           algorithm                   gives
=================  ==========================  =========================================
log (sum-product)  :func:`log_inside`          ``log Z``
log, reversed      :func:`log_marginals`       part marginals (outside pass)
max-plus           :func:`k_best`, k = 1       argmax and loss-augmented argmax
k-best max-plus    :func:`k_best`              the k highest-scoring outputs, in order
counting           :func:`count_derivations`   how many outputs of finite score (caps k)
log, top-down      :func:`sample_parts`        exact samples from ``p(y) ~ exp(score)``
=================  ==========================  =========================================

The hypergraph
--------------
Nodes are numbered ``0 .. n_nodes - 1`` in topological order; the last one is
the goal, whose derivations are the outputs of the example.  A hyperedge is a
row of an int64 array ``(head, tail0, tail1, part0, part1)``: the head is
derived from up to two tails (``-1`` for none) and the edge's score is the sum
of up to two part scores (``-1`` for none).  The rows come grouped by head in
increasing head order, and every tail is smaller than its head.  A node that
heads no edge has no derivation; an edge without tails starts one (an axiom,
of score 0 when it has no parts either).  Each output must have exactly one
derivation (an unambiguous hypergraph), so that sums over derivations are sums
over outputs; :func:`sklearn_struct.utils.check_structure` checks this by
enumeration.  A part may occur in several edges of a derivation (a chain's tied
transitions): its marginal is then its expected count, as ``encode`` counts it.

Forbidden outputs (constraints, partial labels) are edges that the structure
does not emit, or parts scored ``-inf``; both give probability exactly 0.
"""

import numpy as np
from numba import njit

__all__ = ["HEAD", "TAIL0", "TAIL1", "PART0", "PART1", "MAX_K", "log_inside",
           "log_marginals", "count_derivations", "k_best", "sample_parts", "derivation_parts"]

HEAD, TAIL0, TAIL1, PART0, PART1 = 0, 1, 2, 3, 4
NEG_INF = -np.inf


@njit(cache=True, nogil=True, inline="always")
def _indexed_sum(edges, e, first, second, values):
    """``values`` at the edge's two indices in columns ``first`` and ``second`` (-1: none),
    summed: the edge's own score (its parts) or its tails' value."""
    total = 0.0
    if edges[e, first] >= 0:
        total += values[edges[e, first]]
    if edges[e, second] >= 0:
        total += values[edges[e, second]]
    return total


@njit(cache=True, nogil=True, inline="always")
def _edge_score(edges, e, theta):
    return _indexed_sum(edges, e, PART0, PART1, theta)


@njit(cache=True, nogil=True)
def log_inside(edges, n_nodes, theta, inside, edge_share):
    """Inside pass of the log semiring; returns ``log Z`` (the goal's value).

    ``inside[v]`` becomes the log-sum of the scores of node ``v``'s
    derivations, and ``edge_share[e]`` the share of its head's derivations that
    go through edge ``e`` (its probability given the head, 0 for a head without
    derivations).  One ``exp`` per edge and one ``log`` per node: the outside
    pass and the sampler read the shares and need none.
    """
    inside[:n_nodes] = NEG_INF
    n_edges = edges.shape[0]
    e = 0
    while e < n_edges:
        head = edges[e, HEAD]
        stop = e
        top = NEG_INF
        while stop < n_edges and edges[stop, HEAD] == head:
            value = (_edge_score(edges, stop, theta)
                     + _indexed_sum(edges, stop, TAIL0, TAIL1, inside))
            edge_share[stop] = value
            top = max(top, value)
            stop += 1
        if top == NEG_INF:
            inside[head] = NEG_INF
            edge_share[e:stop] = 0.0
        else:
            total = 0.0
            for f in range(e, stop):
                edge_share[f] = np.exp(edge_share[f] - top)
                total += edge_share[f]
            inside[head] = top + np.log(total)
            for f in range(e, stop):
                edge_share[f] /= total
        e = stop
    return inside[n_nodes - 1]


@njit(cache=True, nogil=True)
def log_marginals(edges, n_nodes, theta, mu, inside, edge_share, mass):
    """Part marginals (expected counts) into ``mu``; returns ``log Z``.

    The outside pass runs on probabilities rather than logs: ``mass[v]`` is the
    probability that a derivation uses node ``v``, and an edge into ``v`` takes
    its share (:func:`log_inside`) of it, so every quantity stays in ``[0, 1]``
    and the pass needs no ``exp``.
    """
    log_z = log_inside(edges, n_nodes, theta, inside, edge_share)
    mu[:] = 0.0
    mass[:n_nodes] = 0.0
    mass[n_nodes - 1] = 1.0
    for e in range(edges.shape[0] - 1, -1, -1):
        head = edges[e, HEAD]
        share = mass[head] * edge_share[e]
        if share == 0.0:
            continue
        for column in (PART0, PART1):
            if edges[e, column] >= 0:
                mu[edges[e, column]] += share
        for column in (TAIL0, TAIL1):
            if edges[e, column] >= 0:
                mass[edges[e, column]] += share
    return log_z


#: The largest ``k`` (it must fit in int64; no example could hold more outputs).
MAX_K = 2 ** 62


@njit(cache=True, nogil=True)
def count_derivations(edges, n_nodes, theta, counts):
    """The counting semiring: ``counts[v]`` becomes the number of node ``v``'s derivations
    of finite score, the outputs :func:`k_best` can list (floating point: exact up to
    ``2**53``, ``inf`` past ``1e308``)."""
    counts[:n_nodes] = 0.0
    for e in range(edges.shape[0]):
        n = 1.0
        for column in (TAIL0, TAIL1):
            if edges[e, column] >= 0:
                n *= counts[edges[e, column]]
        if n > 0.0 and _edge_score(edges, e, theta) != NEG_INF:  # (inf * 0 is not 0)
            counts[edges[e, HEAD]] += n


@njit(cache=True, nogil=True, inline="always")
def _before(value, f, r0, r1, other_value, other_f, other_r0, other_r1):
    """Whether candidate ``(f, r0, r1)`` of score ``value`` comes before the other: the
    higher score first, then the smaller ``(edge, rank of tail0, rank of tail1)``."""
    if value != other_value:
        return value > other_value
    if f != other_f:
        return f < other_f
    if r0 != other_r0:
        return r0 < other_r0
    return r1 < other_r1


@njit(cache=True, nogil=True, inline="always")
def _before_row(heap, a, b):
    return _before(heap[a, 0], heap[a, 1], heap[a, 2], heap[a, 3],
                   heap[b, 0], heap[b, 1], heap[b, 2], heap[b, 3])


@njit(cache=True, nogil=True)
def _sift_down(heap, size, hole):
    """Move the candidate at ``hole`` of the binary heap of ``size`` candidates down to its
    place (``heap`` rows: score, edge, rank of tail0, rank of tail1)."""
    value, f, r0, r1 = heap[hole, 0], heap[hole, 1], heap[hole, 2], heap[hole, 3]
    while 2 * hole + 1 < size:
        child = 2 * hole + 1
        if child + 1 < size and _before_row(heap, child + 1, child):
            child += 1
        if not _before(heap[child, 0], heap[child, 1], heap[child, 2], heap[child, 3],
                       value, f, r0, r1):
            break
        _move(heap, child, hole)
        hole = child
    heap[hole, 0], heap[hole, 1], heap[hole, 2], heap[hole, 3] = value, f, r0, r1


@njit(cache=True, nogil=True, inline="always")
def _move(heap, source, target):
    heap[target, 0], heap[target, 1], heap[target, 2], heap[target, 3] = (
        heap[source, 0], heap[source, 1], heap[source, 2], heap[source, 3])


@njit(cache=True, nogil=True)
def _push(heap, size, value, f, r0, r1):
    """Add a candidate to the heap of ``size`` candidates; returns the new size."""
    hole = size
    while hole > 0:
        parent = (hole - 1) // 2
        if not _before(value, f, r0, r1, heap[parent, 0], heap[parent, 1], heap[parent, 2],
                       heap[parent, 3]):
            break
        _move(heap, parent, hole)
        hole = parent
    heap[hole, 0], heap[hole, 1], heap[hole, 2], heap[hole, 3] = value, f, r0, r1
    return size + 1


@njit(cache=True, nogil=True, inline="always")
def _candidate(edges, f, r0, r1, theta, values, start):
    """The value of edge ``f`` on derivation ``r0`` of its tail0 and ``r1`` of its tail1."""
    value = _edge_score(edges, f, theta)
    if edges[f, TAIL0] >= 0:
        value += values[start[edges[f, TAIL0]] + r0]
    if edges[f, TAIL1] >= 0:
        value += values[start[edges[f, TAIL1]] + r1]
    return value


@njit(cache=True, nogil=True)
def k_best(edges, n_nodes, theta, values, back, start, found):
    """The k-best max-plus semiring: each node's best derivations, best first.

    Node ``v`` keeps up to ``start[v + 1] - start[v]`` of them (its share of
    the flat arrays): ``values[start[v] + j]`` is the score of its ``j``-th
    best derivation and ``back[start[v] + j]`` its last step ``(edge, rank of
    tail0, rank of tail1)``; ``found[v]`` says how many it has (fewer where
    there are not that many, finite ones only).  Ties keep the order of the
    edges, then of the tails' ranks, so that the result is deterministic.
    With one derivation per node it is Viterbi.

    Each node pops its derivations from a heap of candidates ``(edge, r0,
    r1)`` as in Huang and Chiang (2005, Algorithm 2): a candidate is beaten by
    the candidates ``(s0, s1) <= (r0, r1)`` of its edge, both in value and in
    the order of ties, so the heap starts from every edge's ``(0, 0)`` and
    popping ``(r0, r1)`` adds ``(r0, r1 + 1)`` and, from the first column,
    ``(r0 + 1, 0)`` (each candidate once).  A node with ``n`` edges that keeps
    ``m`` derivations costs ``O((n + m) log(n + m))``, whatever ``k``.
    """
    n_edges = edges.shape[0]
    found[:n_nodes] = 0
    heap = _heap(edges, start, n_nodes)
    e = 0
    while e < n_edges:
        head = edges[e, HEAD]
        stop = e
        while stop < n_edges and edges[stop, HEAD] == head:
            stop += 1
        kept = start[head + 1] - start[head]
        if kept == 1:
            _best_edge(edges, e, stop, theta, values, back, start, found)
        elif kept > 1:
            _best_candidates(edges, e, stop, theta, values, back, start, found, heap)
        e = stop


@njit(cache=True, nogil=True)
def _heap(edges, start, n_nodes):
    """Room for any heap of :func:`k_best`, a node's edges and its pops (none where no
    node keeps more than one): rows of (score, edge, rank of tail0, rank of tail1),
    exact as floats below ``2**53``."""
    most = 0
    for v in range(n_nodes):
        most = max(most, start[v + 1] - start[v])
    return np.empty((edges.shape[0] + most if most > 1 else 0, 4))


@njit(cache=True, nogil=True)
def _best_edge(edges, e, stop, theta, values, back, start, found):
    """Viterbi at a node that keeps one derivation: its best edge over the tails' best
    (the first of equal ones), as the heap would pop it."""
    head = edges[e, HEAD]
    best, best_edge = NEG_INF, -1
    for f in range(e, stop):
        t0, t1 = edges[f, TAIL0], edges[f, TAIL1]
        if (t0 >= 0 and found[t0] == 0) or (t1 >= 0 and found[t1] == 0):
            continue
        value = _edge_score(edges, f, theta)
        if t0 >= 0:
            value += values[start[t0]]
        if t1 >= 0:
            value += values[start[t1]]
        if value > best:
            best, best_edge = value, f
    if best_edge >= 0:
        j = start[head]
        values[j] = best
        back[j, 0], back[j, 1], back[j, 2] = best_edge, 0, 0
        found[head] = 1


@njit(cache=True, nogil=True)
def _best_candidates(edges, e, stop, theta, values, back, start, found, heap):
    """The node's derivations, popped from the heap of its candidates (see :func:`k_best`):
    every edge's first, heapified at once, then the successors of each one popped."""
    head = edges[e, HEAD]
    size = 0
    for f in range(e, stop):
        t0, t1 = edges[f, TAIL0], edges[f, TAIL1]
        if (t0 >= 0 and found[t0] == 0) or (t1 >= 0 and found[t1] == 0):
            continue
        value = _edge_score(edges, f, theta)
        if value == NEG_INF:
            continue
        if t0 >= 0:
            value += values[start[t0]]
        if t1 >= 0:
            value += values[start[t1]]
        heap[size, 0], heap[size, 1], heap[size, 2], heap[size, 3] = value, f, 0, 0
        size += 1
    for hole in range(size // 2 - 1, -1, -1):
        _sift_down(heap, size, hole)
    wanted = start[head + 1] - start[head]
    while size > 0 and found[head] < wanted:
        j = start[head] + found[head]
        f, r0, r1 = int(heap[0, 1]), int(heap[0, 2]), int(heap[0, 3])
        values[j] = heap[0, 0]
        back[j, 0], back[j, 1], back[j, 2] = f, r0, r1
        found[head] += 1
        size -= 1
        _move(heap, size, 0)
        _sift_down(heap, size, 0)
        t0, t1 = edges[f, TAIL0], edges[f, TAIL1]
        if t1 >= 0 and r1 + 1 < found[t1]:
            size = _push(heap, size, _candidate(edges, f, r0, r1 + 1, theta, values, start),
                         f, r0, r1 + 1)
        if r1 == 0 and t0 >= 0 and r0 + 1 < found[t0]:
            size = _push(heap, size, _candidate(edges, f, r0 + 1, 0, theta, values, start),
                         f, r0 + 1, 0)


@njit(cache=True, nogil=True)
def derivation_parts(edges, back, start, node, rank, stack, z):
    """Add the part counts of derivation ``rank`` of ``node`` (from :func:`k_best`) to ``z``.

    ``stack`` has a row per node.
    """
    depth = 1
    stack[0, 0] = node
    stack[0, 1] = rank
    while depth > 0:
        depth -= 1
        v, r = stack[depth, 0], stack[depth, 1]
        step = start[v] + r
        e = back[step, 0]
        for column in (PART0, PART1):
            if edges[e, column] >= 0:
                z[edges[e, column]] += 1.0
        for column, rank_column in ((TAIL0, 1), (TAIL1, 2)):
            tail = edges[e, column]
            if tail >= 0:
                stack[depth, 0] = tail
                stack[depth, 1] = back[step, rank_column]
                depth += 1


@njit(cache=True, nogil=True)
def sample_parts(edges, n_nodes, edge_share, group_start, uniforms, stack, z):
    """Add the part counts of one exact sample of ``p(y) ~ exp(score)`` to ``z``.

    After :func:`log_inside`, walk down from the goal: at node ``v`` take an
    edge into ``v`` with its share as probability, using the next number of
    ``uniforms`` (one per visited node), and go on to its tails.
    ``group_start[v]`` is the first edge into ``v``; the edges into ``v`` run
    to the next row with another head.
    """
    n_edges = edges.shape[0]
    depth = 1
    stack[0, 0] = n_nodes - 1
    draw = 0
    while depth > 0:
        depth -= 1
        v = stack[depth, 0]
        u = uniforms[draw]
        draw += 1
        chosen = -1
        total = 0.0
        f = group_start[v]
        while f < n_edges and edges[f, HEAD] == v:
            if edge_share[f] > 0.0:
                chosen = f
                total += edge_share[f]
                if total > u:
                    break
            f += 1
        for column in (PART0, PART1):
            if edges[chosen, column] >= 0:
                z[edges[chosen, column]] += 1.0
        for column in (TAIL0, TAIL1):
            if edges[chosen, column] >= 0:
                stack[depth, 0] = edges[chosen, column]
                depth += 1


@njit(cache=True, nogil=True)
def group_starts(edges, n_nodes, out):
    """``out[v]``: the first edge into node ``v``, or -1 where there is none."""
    out[:n_nodes] = -1
    for e in range(edges.shape[0] - 1, -1, -1):
        out[edges[e, HEAD]] = e


# ---------------------------------------------------------------------------
# The per-example operations that a structure's hypergraph gives.  Templates:
# ``hypergraph_size_op``, ``hypergraph_op`` and ``decode_op`` are bound to the
# structure's kernel operations by ``_kernel.specialize`` (which binds a
# template's own globals only, hence the hypergraph's two lines in each).

def dp_log_partition(data, i, theta, scratch):
    n_nodes, max_edges = hypergraph_size_op(data, i)  # noqa: F821 (bound by specialize)
    edges = np.empty((max_edges, 5), dtype=np.int64)
    edges = edges[:hypergraph_op(data, i, edges)]  # noqa: F821
    return log_inside(edges, n_nodes, theta, np.empty(n_nodes), np.empty(edges.shape[0]))


def dp_marginals(data, i, theta, mu):
    n_nodes, max_edges = hypergraph_size_op(data, i)  # noqa: F821 (bound by specialize)
    edges = np.empty((max_edges, 5), dtype=np.int64)
    edges = edges[:hypergraph_op(data, i, edges)]  # noqa: F821
    return log_marginals(edges, n_nodes, theta, mu, np.empty(n_nodes),
                         np.empty(edges.shape[0]), np.empty(n_nodes))


@njit(cache=True, nogil=True)
def _best_derivations(edges, n_nodes, scores, k):
    """:func:`k_best` with each node keeping ``min(k', its derivations)``, ``k'`` the goal's
    ``min(k, its derivations)`` (no node needs more); returns its arrays."""
    start = np.arange(n_nodes + 1)
    if k > 1:
        counts = np.empty(n_nodes)
        count_derivations(edges, n_nodes, scores, counts)
        wanted = min(float(k), counts[n_nodes - 1])
        for v in range(n_nodes):
            start[v + 1] = start[v] + int(min(wanted, counts[v]))
    values = np.empty(start[n_nodes])
    back = np.empty((start[n_nodes], 3), dtype=np.int64)
    found = np.empty(n_nodes, dtype=np.int64)
    k_best(edges, n_nodes, scores, values, back, start, found)
    return values, back, start, found


def dp_k_best(data, i, scores, k, n_units):
    """The ``k`` best outputs of example ``i`` (of ``n_units`` output units), best first, as
    the rows of an array, and their scores: as many as there are, at most ``k``."""
    n_nodes, max_edges = hypergraph_size_op(data, i)  # noqa: F821 (bound by specialize)
    edges = np.empty((max_edges, 5), dtype=np.int64)
    edges = edges[:hypergraph_op(data, i, edges)]  # noqa: F821
    values, back, start, found = _best_derivations(edges, n_nodes, scores, k)
    goal = n_nodes - 1
    Y = np.zeros((found[goal], n_units), dtype=np.int64)
    best = values[start[goal]:start[goal] + found[goal]].copy()
    stack = np.empty((n_nodes, 2), dtype=np.int64)
    z = np.empty(scores.shape[0])
    for j in range(found[goal]):
        z[:] = 0.0
        derivation_parts(edges, back, start, goal, j, stack, z)
        decode_op(data, i, z, Y[j])  # noqa: F821
    return Y, best


def dp_argmax(data, i, scores, y_out):
    n_nodes, max_edges = hypergraph_size_op(data, i)  # noqa: F821 (bound by specialize)
    edges = np.empty((max_edges, 5), dtype=np.int64)
    edges = edges[:hypergraph_op(data, i, edges)]  # noqa: F821
    _, back, start, found = _best_derivations(edges, n_nodes, scores, 1)
    if found[n_nodes - 1] == 0:  # no derivation of finite score
        y_out[:] = -1
        return
    z = np.zeros(scores.shape[0])
    derivation_parts(edges, back, start, n_nodes - 1, 0, np.empty((n_nodes, 2), dtype=np.int64),
                     z)
    decode_op(data, i, z, y_out)  # noqa: F821


def dp_sample(data, i, theta, Y_out):
    """``Y_out.shape[0]`` exact samples of ``p(y) ~ exp(theta)`` into the rows of ``Y_out``,
    drawn with numba's generator (seeded by the caller)."""
    n_nodes, max_edges = hypergraph_size_op(data, i)  # noqa: F821 (bound by specialize)
    edges = np.empty((max_edges, 5), dtype=np.int64)
    edges = edges[:hypergraph_op(data, i, edges)]  # noqa: F821
    edge_share = np.empty(edges.shape[0])
    log_inside(edges, n_nodes, theta, np.empty(n_nodes), edge_share)
    starts = np.empty(n_nodes, dtype=np.int64)
    group_starts(edges, n_nodes, starts)
    stack = np.empty((n_nodes, 2), dtype=np.int64)
    z = np.empty(theta.shape[0])
    for j in range(Y_out.shape[0]):
        z[:] = 0.0
        sample_parts(edges, n_nodes, edge_share, starts, np.random.random(n_nodes), stack, z)
        decode_op(data, i, z, Y_out[j])  # noqa: F821
