"""The generic dynamic program: semiring algorithms over a structure's hypergraph.

A dynamic-programming structure writes its recursion once, as the hyperedges
of one example (the kernel operation ``hypergraph``), and every inference
operation follows from it here, written once for every such structure:

=================  ======================  ===========================================
semiring           algorithm               gives
=================  ======================  ===========================================
log (sum-product)  :func:`log_inside`      ``log Z``
log, reversed      :func:`log_marginals`   part marginals (outside pass)
max-plus           :func:`k_best`, k = 1   argmax and loss-augmented argmax
k-best max-plus    :func:`k_best`          the k highest-scoring outputs, in order
log, top-down      :func:`sample_parts`    exact samples from ``p(y) ~ exp(score)``
=================  ======================  ===========================================

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

__all__ = ["HEAD", "TAIL0", "TAIL1", "PART0", "PART1", "log_inside", "log_marginals", "k_best",
           "sample_parts", "derivation_parts"]

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


@njit(cache=True, nogil=True)
def k_best(edges, n_nodes, theta, k, values, back, counts):
    """The k-best max-plus semiring: each node's ``k`` best derivations, best first.

    ``values[v, j]`` is the score of node ``v``'s ``j``-th best derivation and
    ``back[v, j]`` its last step ``(edge, rank of tail0, rank of tail1)``;
    ``counts[v]`` says how many it has (fewer than ``k`` where there are not
    that many, finite ones only).  Ties keep the order of the edges, then of
    the tails' ranks, so that the result is deterministic.  With ``k == 1`` it
    is Viterbi.

    A candidate ``(r0, r1)`` of an edge is beaten by every ``(s0, s1) <=
    (r0, r1)`` of the same edge, so only those with ``(r0 + 1) (r1 + 1) <= k``
    can be among the ``k`` best.
    """
    n_edges = edges.shape[0]
    counts[:n_nodes] = 0
    cand_value = np.empty(0)
    cand_back = np.empty((0, 3), dtype=np.int64)
    e = 0
    while e < n_edges:
        head = edges[e, HEAD]
        stop = e
        while stop < n_edges and edges[stop, HEAD] == head:
            stop += 1
        if k == 1:
            best, best_edge = NEG_INF, -1
            for f in range(e, stop):
                t0, t1 = edges[f, TAIL0], edges[f, TAIL1]
                if (t0 >= 0 and counts[t0] == 0) or (t1 >= 0 and counts[t1] == 0):
                    continue
                value = _edge_score(edges, f, theta)
                if t0 >= 0:
                    value += values[t0, 0]
                if t1 >= 0:
                    value += values[t1, 0]
                if value > best:
                    best, best_edge = value, f
            counts[head] = 0
            if best_edge >= 0:
                values[head, 0] = best
                back[head, 0, 0] = best_edge
                back[head, 0, 1] = 0
                back[head, 0, 2] = 0
                counts[head] = 1
            e = stop
            continue
        if cand_value.shape[0] < (stop - e) * k * k:
            cand_value = np.empty((stop - e) * k * k)
            cand_back = np.empty(((stop - e) * k * k, 3), dtype=np.int64)
        n_cand = 0
        for f in range(e, stop):
            t0, t1 = edges[f, TAIL0], edges[f, TAIL1]
            n0 = counts[t0] if t0 >= 0 else 1
            n1 = counts[t1] if t1 >= 0 else 1
            if n0 == 0 or n1 == 0:
                continue
            score = _edge_score(edges, f, theta)
            if score == NEG_INF:
                continue
            for r0 in range(n0):
                for r1 in range(n1):
                    if (r0 + 1) * (r1 + 1) > k:
                        break
                    value = score
                    if t0 >= 0:
                        value += values[t0, r0]
                    if t1 >= 0:
                        value += values[t1, r1]
                    cand_value[n_cand] = value
                    cand_back[n_cand, 0] = f
                    cand_back[n_cand, 1] = r0
                    cand_back[n_cand, 2] = r1
                    n_cand += 1
        order = np.argsort(-cand_value[:n_cand], kind="mergesort")
        kept = min(k, n_cand)
        for j in range(kept):
            c = order[j]
            values[head, j] = cand_value[c]
            back[head, j, :] = cand_back[c]
        counts[head] = kept
        e = stop


@njit(cache=True, nogil=True)
def derivation_parts(edges, back, node, rank, stack, z):
    """Add the part counts of derivation ``rank`` of ``node`` (from :func:`k_best`) to ``z``.

    ``stack`` has a row per node.
    """
    depth = 1
    stack[0, 0] = node
    stack[0, 1] = rank
    while depth > 0:
        depth -= 1
        v, r = stack[depth, 0], stack[depth, 1]
        e = back[v, r, 0]
        for column in (PART0, PART1):
            if edges[e, column] >= 0:
                z[edges[e, column]] += 1.0
        for column, rank_column in ((TAIL0, 1), (TAIL1, 2)):
            tail = edges[e, column]
            if tail >= 0:
                stack[depth, 0] = tail
                stack[depth, 1] = back[v, r, rank_column]
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
    values = np.empty((n_nodes, k))
    back = np.empty((n_nodes, k, 3), dtype=np.int64)
    counts = np.empty(n_nodes, dtype=np.int64)
    k_best(edges, n_nodes, scores, k, values, back, counts)
    return values, back, counts


def dp_k_best(data, i, scores, k, Y_out, scores_out):
    """The ``k`` best outputs of example ``i`` into the rows of ``Y_out`` and their
    scores into ``scores_out``, best first; returns how many there are (at most ``k``)."""
    n_nodes, max_edges = hypergraph_size_op(data, i)  # noqa: F821 (bound by specialize)
    edges = np.empty((max_edges, 5), dtype=np.int64)
    edges = edges[:hypergraph_op(data, i, edges)]  # noqa: F821
    values, back, counts = _best_derivations(edges, n_nodes, scores, k)
    stack = np.empty((n_nodes, 2), dtype=np.int64)
    z = np.empty(scores.shape[0])
    goal = n_nodes - 1
    for j in range(counts[goal]):
        z[:] = 0.0
        derivation_parts(edges, back, goal, j, stack, z)
        decode_op(data, i, z, Y_out[j])  # noqa: F821
        scores_out[j] = values[goal, j]
    return counts[goal]


def dp_argmax(data, i, scores, y_out):
    n_nodes, max_edges = hypergraph_size_op(data, i)  # noqa: F821 (bound by specialize)
    edges = np.empty((max_edges, 5), dtype=np.int64)
    edges = edges[:hypergraph_op(data, i, edges)]  # noqa: F821
    _, back, _ = _best_derivations(edges, n_nodes, scores, 1)
    z = np.zeros(scores.shape[0])
    derivation_parts(edges, back, n_nodes - 1, 0, np.empty((n_nodes, 2), dtype=np.int64), z)
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
