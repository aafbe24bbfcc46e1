"""Tree-reweighted sum-product on the graphs of ``GraphStructure`` (Wainwright, Jaakkola and
Willsky 2005), in log space.

Every edge ``e`` of a graph gets an appearance probability ``rho_e``: the fraction of a set
of its spanning forests that hold it (:func:`appearance_probabilities`), so that ``rho``
lies in the spanning-tree polytope.  Then, over the local polytope (node and edge marginals
that agree on every edge),

    A(theta) = max  theta . tau + sum_v H(tau_v) - sum_e rho_e I(tau_e)

with ``H`` the entropy and ``I`` an edge's mutual information.  The tree-reweighted entropy
is the ``rho``-average of the forests' entropies, each at least the true entropy of any
distribution with those marginals, and the local polytope holds every distribution's
marginals: so ``A`` bounds ``log Z`` from above.  It is convex in ``theta``, with gradient
its maximiser ``tau`` (the pseudo-marginals).  :func:`trw` reaches it by message passing,
damped once it oscillates; on a forest every ``rho_e = 1`` and it is sum-product, undamped:
the exact ``log Z`` and marginals.

Scores of a graph of ``n`` nodes, ``m`` edges and ``K`` labels are in the part layout of
``_kernels.py``: node ``v``, label ``k`` at ``v * K + k``, then edge ``e``, labels ``(a, b)``
of its tail and head at ``n * K + e * K * K + a * K + b``.
"""

import numpy as np
from numba import njit

from .._log_space import logsumexp

__all__ = ["DAMPING", "MIN_FORESTS", "appearance_probabilities", "trw"]

#: The share of its old value that a message keeps at each update, once a sweep's largest
#: change has grown over the sweep before's (a sign of oscillation, which undamped message
#: passing on a graph with cycles may fall into; until then, damping only slows it down).
DAMPING = 0.5

#: Spanning forests averaged into the edge appearance probabilities, at the least (more
#: when some edge is in none of them yet): the more, the more even ``rho``.
MIN_FORESTS = 8

_PARK_MILLER = 2147483647  # the modulus of the Park-Miller generator, 2^31 - 1


@njit(cache=True, nogil=True)
def appearance_probabilities(tails, heads, node_offsets, edge_offsets):
    """Every edge's appearance probability in the spanning forests of its graph.

    Parameters
    ----------
    tails, heads : ndarray of int64 of shape (n_edges_total,)
        The edges' endpoints, local to their graph.
    node_offsets, edge_offsets : ndarray of int64 of shape (n_samples + 1,)
        Graph ``i`` owns nodes and edges between its two offsets.

    Returns
    -------
    rho : ndarray of shape (n_edges_total,)
        In ``(0, 1]``: the fraction of the graph's spanning forests that hold the edge
        (exactly 1 for an edge on no cycle).  Each graph's forests depend on it alone, not
        on the other graphs of the batch.
    """
    rho = np.ones(tails.shape[0])
    for i in range(node_offsets.shape[0] - 1):
        e0, e1 = edge_offsets[i], edge_offsets[i + 1]
        _forest_average(tails[e0:e1], heads[e0:e1], node_offsets[i + 1] - node_offsets[i],
                        rho[e0:e1])
    return rho


@njit(cache=True, nogil=True, inline="always")
def _root(parent, v):
    """The representative of ``v``'s set in a union-find forest, halving the path."""
    while parent[v] != v:
        parent[v] = parent[parent[v]]
        v = parent[v]
    return v


@njit(cache=True, nogil=True)
def _forest_average(tails, heads, n, rho):
    """One graph's ``rho`` (written in place): the average over minimum spanning forests
    (Kruskal) under the weights ``times taken + a pseudo-random number in (0, 1)``, so that
    the edges taken least come first.  Forests are added until every edge is in one and at
    least ``MIN_FORESTS`` are; each forest takes an edge not taken before while one is left
    (the first in the order joins two trees), so that ends within ``m + MIN_FORESTS``."""
    m = tails.shape[0]
    if m == 0:
        return
    taken = np.zeros(m)
    weights = np.empty(m)
    parent = np.empty(n, dtype=np.int64)
    state = 1  # the same seed for every graph: its forests do not depend on the batch
    forests, never_taken = 0, m
    while never_taken > 0 or forests < MIN_FORESTS:
        for e in range(m):
            state = state * 48271 % _PARK_MILLER
            weights[e] = taken[e] + state / _PARK_MILLER
        for v in range(n):
            parent[v] = v
        for e in np.argsort(weights):
            tail, head = _root(parent, tails[e]), _root(parent, heads[e])
            if tail != head:
                parent[tail] = head
                if taken[e] == 0:
                    never_taken -= 1
                taken[e] += 1
        forests += 1
    for e in range(m):
        rho[e] = taken[e] / forests


@njit(cache=True, nogil=True)
def _send(scores, n, K, tails, heads, rho, e, into_head, messages, belief, keep, update):
    """Update edge ``e``'s message into its head (``into_head``) or its tail, damped by
    ``keep``, and the receiving node's ``belief``.  Returns the largest change that the
    undamped update would make to the message's logs (the fixed point's residual).

    TRW's message from ``u`` is ``log sum_s exp(theta_e / rho_e + theta_u(s) + sum over
    u's other edges of rho * message - (1 - rho_e) * message back)``: ``u``'s belief less
    the whole message it got back along ``e``.
    """
    base = n * K + e * K * K
    sender = tails[e] if into_head else heads[e]
    receiver = heads[e] if into_head else tails[e]
    out = 1 if into_head else 0  # the message updated, and the one back
    back = 1 - out
    inverse_rho = 1.0 / rho[e]
    for r in range(K):
        top = -np.inf
        for s in range(K):
            pair = base + (s * K + r if into_head else r * K + s)
            top = max(top, scores[pair] * inverse_rho + belief[sender, s]
                      - messages[e, back, s])
        total = 0.0
        for s in range(K):
            pair = base + (s * K + r if into_head else r * K + s)
            total += np.exp(scores[pair] * inverse_rho + belief[sender, s]
                            - messages[e, back, s] - top)
        update[r] = top + np.log(total)
    norm = logsumexp(update)
    residual = 0.0
    for r in range(K):
        update[r] -= norm
        residual = max(residual, abs(update[r] - messages[e, out, r]))
        update[r] = keep * messages[e, out, r] + (1.0 - keep) * update[r]
    # messages are kept normalized (their log-sum-exp 0) for the residual to compare them
    norm = logsumexp(update) if keep > 0.0 else 0.0
    for r in range(K):
        new = update[r] - norm
        belief[receiver, r] += rho[e] * (new - messages[e, out, r])
        messages[e, out, r] = new
    return residual


@njit(cache=True, nogil=True)
def trw(scores, n, K, tails, heads, rho, max_iter, tol, mu):
    """Tree-reweighted sum-product on one graph: the pseudo-marginals into ``mu`` (the part
    layout).  Returns the tree-reweighted bound on log Z.

    Each sweep updates both messages of every edge in turn, damped by ``DAMPING`` from the
    first sweep whose largest change exceeds the sweep before's (never on a forest); it
    stops when no update changes a message's logs by more than ``tol`` or after
    ``max_iter`` sweeps (the beliefs of the last sweep then, a bound only approximately).
    """
    m = tails.shape[0]
    # each node's log belief, theta_v + sum_e rho_e * (e's log message into v), kept up to
    # date as its messages change
    belief = np.empty((n, K))
    for v in range(n):
        for k in range(K):
            belief[v, k] = scores[v * K + k]
    messages = np.zeros((m, 2, K))  # [e, 0] into e's tail, [e, 1] into its head
    # sum-product on a forest converges undamped, within its diameter in sweeps
    has_cycles = False
    for e in range(m):
        has_cycles |= rho[e] < 1.0
    keep, previous = 0.0, np.inf
    update = np.empty(K)
    sweeps = 0
    while sweeps < max_iter:
        sweeps += 1
        residual = 0.0
        for e in range(m):
            residual = max(residual, _send(scores, n, K, tails, heads, rho, e, True, messages,
                                           belief, keep, update))
            residual = max(residual, _send(scores, n, K, tails, heads, rho, e, False,
                                           messages, belief, keep, update))
        if residual <= tol:
            break
        if has_cycles and residual > previous:
            keep = DAMPING
        previous = residual
    return _free_energy(scores, n, K, tails, heads, rho, messages, belief, mu)


@njit(cache=True, nogil=True)
def _free_energy(scores, n, K, tails, heads, rho, messages, belief, mu):
    """The beliefs of the messages into ``mu``; returns the tree-reweighted free energy
    ``theta . mu + sum_v H(mu_v) - sum_e rho_e I(mu_e)`` (at the fixed point, the bound
    on log Z, whose gradient is ``mu``)."""
    m = tails.shape[0]
    log_node = np.empty((n, K))
    value = 0.0
    for v in range(n):
        norm = logsumexp(belief[v])
        for k in range(K):
            log_node[v, k] = belief[v, k] - norm
            mu[v * K + k] = np.exp(log_node[v, k])
            value += mu[v * K + k] * (scores[v * K + k] - log_node[v, k])
    log_pair = np.empty(K * K)
    for e in range(m):
        u, v, base = tails[e], heads[e], n * K + e * K * K
        for a in range(K):
            for b in range(K):
                log_pair[a * K + b] = (scores[base + a * K + b] / rho[e]
                                       + belief[u, a] - messages[e, 0, a]
                                       + belief[v, b] - messages[e, 1, b])
        norm = logsumexp(log_pair)
        for a in range(K):
            for b in range(K):
                log_tau = log_pair[a * K + b] - norm
                tau = np.exp(log_tau)
                mu[base + a * K + b] = tau
                value += tau * (scores[base + a * K + b]
                                - rho[e] * (log_tau - log_node[u, a] - log_node[v, b]))
    return value
