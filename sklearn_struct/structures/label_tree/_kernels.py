"""Numba kernels of tree-shaped label graphs: sum-product, max-product, node orders.

An example is a forest of ``N`` nodes given by its parent array (``parent[n]``
a node index, or -1 for a root) and a *top-down order* of its nodes, every
parent before its children (from :func:`tree_orders`).  A node ``n`` with a
parent hangs from it by an edge of type ``edge_type[n]``.  Its scores are

* ``node[n, k]``, shape ``(N, K)``: node ``n`` labelled ``k``;
* ``transition[e, a, b]``, shape ``(n_edge_types, K, K)``: an edge of type
  ``e`` whose parent is labelled ``a`` and child ``b``.  Transition parts are
  tied over the edges of a type, so their marginals are expected counts.

Sum-product runs an upward pass (children before parents) that sends every
node's message to its parent, then a downward pass that propagates node
marginals from the roots through the conditionals ``p(y_child | y_parent)``,
which gives the edge marginals on the way.  Both are in log space with the
numerics of the chain's forward-backward (:mod:`.._log_space`): a scaled
sum with one exponential per label, and an exact log-sum-exp for an entry
whose scaled sum is too small to be accurate.  Max-product runs the same
upward pass with maxima and back-pointers, then reads the labels top-down.

Per-example kernel operations (:class:`._kernel.KernelOps`) of
:class:`~sklearn_struct.structures.TreeStructure`; kernel data
(:func:`tree_kernel_data`) is the token kernel data
(:func:`._token_kernels.token_kernel_data`, whose node-score, feature and
``add_features_norm`` operations serve unchanged: node parts first, then the tied
transition parts mapped one to one on the weights after the node weights)
followed by ``(parents, order, edge_types, n_edge_types)``, per-node arrays
stacked like the node features, with node indices local to each example.
"""

from collections import namedtuple

import numpy as np
from numba import njit

from .._kernel import KernelOps
from .._log_space import (
    TINY_CONDITIONAL, TINY_SUM, UNDERFLOW, VECTORISE, exp_transition, logsumexp)
from .._token_kernels import (
    TokenData,
    token_add_features,
    token_add_features_norm,
    token_decode,
    token_kernel_data,
    token_part_scores,
)

__all__ = ["TREE_KERNEL_OPS", "TreeData", "tree_kernel_data", "tree_orders"]


#: Kernel data of tree MRFs: :class:`.._token_kernels.TokenData`'s fields, then the forests
#: (see the module docstring).
TreeData = namedtuple("TreeData", TokenData._fields + ("parents", "order", "edge_types",
                                                       "n_edge_types"))


# ------------------------------------------------------------------ orders
@njit(cache=True, nogil=True)
def tree_orders(parents, unit_offsets, order_out):
    """Breadth-first top-down order of the nodes of every example, or a node on a cycle.

    Parameters
    ----------
    parents : ndarray of int64 of shape (n_nodes_total,)
        Parent of every node, local to its example, in ``[-1, N_i)``.
    unit_offsets : ndarray of int64 of shape (n_samples + 1,)
        Example ``i`` owns nodes ``unit_offsets[i]:unit_offsets[i + 1]``.
    order_out : ndarray of int64 of shape (n_nodes_total,)
        Overwritten with the local node indices of every example, roots first
        (in index order), every parent before its children.

    Returns
    -------
    example, node : int
        An example whose parent array has a cycle and a node on that cycle,
        or ``(-1, -1)`` when every example is a forest.
    """
    for i in range(unit_offsets.shape[0] - 1):
        u0 = unit_offsets[i]
        N = unit_offsets[i + 1] - u0
        parent = parents[u0:u0 + N]
        order = order_out[u0:u0 + N]
        # children of node p: children[first_child[p]:first_child[p + 1]]
        first_child = np.zeros(N + 1, dtype=np.int64)
        for n in range(N):
            if parent[n] >= 0:
                first_child[parent[n] + 1] += 1
        for n in range(N):
            first_child[n + 1] += first_child[n]
        fill = first_child[:N].copy()
        children = np.empty(N, dtype=np.int64)
        for n in range(N):
            p = parent[n]
            if p >= 0:
                children[fill[p]] = n
                fill[p] += 1
        size = 0
        for n in range(N):
            if parent[n] < 0:
                order[size] = n
                size += 1
        head = 0
        while head < size:
            n = order[head]
            head += 1
            for c in range(first_child[n], first_child[n + 1]):
                order[size] = children[c]
                size += 1
        if size < N:
            # a node never reached hangs below a cycle: N steps up from it land on the cycle
            reached = np.zeros(N, dtype=np.bool_)
            for j in range(size):
                reached[order[j]] = True
            n = 0
            while reached[n]:
                n += 1
            for _ in range(N):
                n = parent[n]
            return i, n
    return -1, -1


# ------------------------------------------------------------- sum-product
@njit(cache=True, nogil=True, fastmath=VECTORISE)
def _upward(node, transition, parent, order, edge_type, exp_trans, row_max, inside, message,
            scaled, totals):
    """Upward sum-product pass; returns ``log Z`` (summed over the trees of the forest).

    Fills ``inside[n, b]``, the log-sum of the scores of the subtree of ``n``
    with ``y_n = b``, and ``message[n, a] = log sum_b exp(transition[e, a, b]
    + inside[n, b])``, the message of ``n`` to its parent labelled ``a``.
    ``scaled[n, b] = exp(inside[n, b] - max_b inside[n])`` and
    ``totals[n, a] = sum_b exp_trans[e, a, b] scaled[n, b]`` are kept for the
    downward pass.
    """
    N, K = node.shape
    # a loop, not inside[:] = node: numba's slice assignment from an array compiles a
    # string-formatting error message, seconds of a first run
    for n in range(N):
        for b in range(K):
            inside[n, b] = node[n, b]
    terms = np.empty(K)
    log_z = 0.0
    for j in range(N - 1, -1, -1):
        n = order[j]
        p = parent[n]
        if p < 0:
            log_z += logsumexp(inside[n])
            continue
        e = edge_type[n]
        shift = inside[n].max()
        for b in range(K):
            scaled[n, b] = np.exp(inside[n, b] - shift)
        for a in range(K):
            total = 0.0
            for b in range(K):
                total += exp_trans[e, a, b] * scaled[n, b]
            totals[n, a] = total
            if total >= TINY_SUM:
                message[n, a] = row_max[e, a] + shift + np.log(total)
            else:
                for b in range(K):
                    terms[b] = transition[e, a, b] + inside[n, b]
                message[n, a] = logsumexp(terms)
            inside[p, a] += message[n, a]
    return log_z


@njit(cache=True, nogil=True, fastmath=VECTORISE)
def _downward(transition, parent, order, edge_type, exp_trans, inside, message, scaled, totals,
              node_mu, transition_mu, edge_mu, per_edge):
    """Downward pass: node marginals, and tied transition or per-edge marginals.

    A root's marginals are the softmax of its inside scores; a child's follow
    from its parent's through ``p(y_n = b | y_p = a) = exp(transition[e, a, b]
    + inside[n, b] - message[n, a])``, read off the scaled sums of the upward
    pass when they are accurate.
    """
    N, K = inside.shape
    if per_edge:
        edge_mu[:] = 0.0
    else:
        transition_mu[:] = 0.0
    for j in range(N):
        n = order[j]
        p = parent[n]
        if p < 0:
            log_z = logsumexp(inside[n])
            for b in range(K):
                node_mu[n, b] = np.exp(inside[n, b] - log_z)
            continue
        e = edge_type[n]
        node_mu[n] = 0.0
        for a in range(K):
            marginal = node_mu[p, a]
            if marginal == 0.0:
                continue
            if totals[n, a] >= TINY_CONDITIONAL:
                factor = marginal / totals[n, a]
                for b in range(K):
                    joint = factor * exp_trans[e, a, b] * scaled[n, b]
                    node_mu[n, b] += joint
                    if per_edge:
                        edge_mu[n, a, b] = joint
                    else:
                        transition_mu[e, a, b] += joint
            else:
                for b in range(K):
                    exponent = transition[e, a, b] + inside[n, b] - message[n, a]
                    if exponent <= UNDERFLOW:
                        continue
                    joint = marginal * np.exp(exponent)
                    node_mu[n, b] += joint
                    if per_edge:
                        edge_mu[n, a, b] = joint
                    else:
                        transition_mu[e, a, b] += joint


@njit(cache=True, nogil=True)
def _exp_transitions(transition):
    """``exp_transition`` of every edge type's matrix: scaled exponentials and row maxima."""
    n_types, K = transition.shape[0], transition.shape[1]
    exp_trans = np.empty((n_types, K, K))
    row_max = np.empty((n_types, K))
    for e in range(n_types):
        exp_transition(transition[e], exp_trans[e], row_max[e])
    return exp_trans, row_max


@njit(cache=True, nogil=True)
def tree_sum_product(node, transition, parent, order, edge_type, node_mu, transition_mu,
                     edge_mu, per_edge):
    """Marginals and ``log Z`` of one forest.

    Parameters
    ----------
    node : ndarray of shape (N, K)
    transition : ndarray of shape (n_edge_types, K, K)
    parent, order, edge_type : ndarray of int64 of shape (N,)
        See the module docstring.
    node_mu : ndarray of shape (N, K)
        Overwritten with ``p(y_n = k)``.
    transition_mu : ndarray of shape (n_edge_types, K, K)
        Overwritten with the expected number of edges of type ``e`` labelled
        ``(a, b)`` (unless ``per_edge``).
    edge_mu : ndarray of shape (N, K, K)
        With ``per_edge``, overwritten with ``p(y_parent(n) = a, y_n = b)``
        (zeros for roots).
    per_edge : bool

    Returns
    -------
    log_Z : float
    """
    N, K = node.shape
    exp_trans, row_max = _exp_transitions(transition)
    inside = np.empty((N, K))
    message = np.empty((N, K))
    scaled = np.empty((N, K))
    totals = np.empty((N, K))
    log_z = _upward(node, transition, parent, order, edge_type, exp_trans, row_max, inside,
                    message, scaled, totals)
    _downward(transition, parent, order, edge_type, exp_trans, inside, message, scaled, totals,
              node_mu, transition_mu, edge_mu, per_edge)
    return log_z


# ------------------------------------------------------------- max-product
@njit(cache=True, nogil=True)
def tree_max_product(node, transition, parent, order, edge_type, labels_out):
    """Highest-scoring labelling of one forest (lowest labels on ties); returns its score.

    ``labels_out`` (int64, shape (N,)) is overwritten.
    """
    N, K = node.shape
    best = node.copy()  # best[n, b]: best score of the subtree of n with y_n = b
    backpointer = np.empty((N, K), dtype=np.int64)
    for j in range(N - 1, -1, -1):
        n = order[j]
        p = parent[n]
        if p < 0:
            continue
        e = edge_type[n]
        for a in range(K):
            top = transition[e, a, 0] + best[n, 0]
            label = 0
            for b in range(1, K):
                value = transition[e, a, b] + best[n, b]
                if value > top:
                    top = value
                    label = b
            backpointer[n, a] = label
            best[p, a] += top
    total = 0.0
    for j in range(N):
        n = order[j]
        p = parent[n]
        if p >= 0:
            labels_out[n] = backpointer[n, labels_out[p]]
            continue
        label = 0
        for k in range(1, K):
            if best[n, k] > best[n, label]:
                label = k
        labels_out[n] = label
        total += best[n, label]
    return total


# ------------------------------------------------- per-example operations
@njit(cache=True, nogil=True)
def _graph(data, i):
    """Parent array, top-down order and edge types of example ``i`` (local node indices)."""
    unit_offsets = data.unit_offsets
    u0, u1 = unit_offsets[i], unit_offsets[i + 1]
    return data.parents[u0:u1], data.order[u0:u1], data.edge_types[u0:u1]


@njit(cache=True, nogil=True, inline="always")
def _blocks(data, parts, n_nodes):
    """An example's part vector as its node block ``(N, K)`` and its transition block
    ``(n_edge_types, K, K)`` (views)."""
    K = data.n_states
    return (parts[:n_nodes * K].reshape((n_nodes, K)),
            parts[n_nodes * K:].reshape((data.n_edge_types, K, K)))


@njit(cache=True, nogil=True)
def tree_marginals(data, i, theta, mu):
    parent, order, edge_type = _graph(data, i)
    node, transition = _blocks(data, theta, parent.shape[0])
    node_mu, transition_mu = _blocks(data, mu, parent.shape[0])
    return tree_sum_product(node, transition, parent, order, edge_type, node_mu, transition_mu,
                            np.empty((0, 0, 0)), False)


@njit(cache=True, nogil=True)
def tree_log_partition(data, i, theta, scratch):
    """``log Z`` of example ``i``: the upward pass alone (``scratch`` unused)."""
    parent, order, edge_type = _graph(data, i)
    node, transition = _blocks(data, theta, parent.shape[0])
    exp_trans, row_max = _exp_transitions(transition)
    shape = node.shape
    return _upward(node, transition, parent, order, edge_type, exp_trans, row_max,
                   np.empty(shape), np.empty(shape), np.empty(shape), np.empty(shape))


@njit(cache=True, nogil=True)
def tree_argmax(data, i, scores, y_out):
    parent, order, edge_type = _graph(data, i)
    node, transition = _blocks(data, scores, parent.shape[0])
    tree_max_product(node, transition, parent, order, edge_type, y_out)


@njit(cache=True, nogil=True)
def tree_encode(data, i, y, z_out):
    parent, _, edge_type = _graph(data, i)
    K = data.n_states
    n_node = parent.shape[0] * K
    z_out[:] = 0.0
    for n in range(parent.shape[0]):
        z_out[n * K + y[n]] = 1.0
        if parent[n] >= 0:
            z_out[n_node + (edge_type[n] * K + y[parent[n]]) * K + y[n]] += 1.0


@njit(cache=True, nogil=True)
def tree_hypergraph_size(data, i):
    parent = _graph(data, i)[0]
    N, K = parent.shape[0], data.n_states
    roots = 0
    for n in range(N):
        roots += parent[n] < 0
    return N * K + 2 * K * (N - roots) + 2 * roots - 1, N * K + (N - roots) * (K * K + K) + \
        roots * (K + 1)


@njit(cache=True, nogil=True)
def tree_hypergraph(data, i, edges):
    """Sum-product as a hypergraph, children before parents: ``S(n, k, j)`` is node ``n``
    labelled ``k`` with the messages of its first ``j`` children, and the message of a
    child ``c`` to its parent's label ``k`` sums over ``c``'s labels; the goal multiplies
    the roots' sums over their labels."""
    parent, order, edge_type = _graph(data, i)
    N, K = parent.shape[0], data.n_states
    n_node = N * K
    first_child = np.full(N, -1, dtype=np.int64)  # children as linked lists
    next_sibling = np.full(N, -1, dtype=np.int64)
    for n in range(N - 1, -1, -1):
        if parent[n] >= 0:
            next_sibling[n] = first_child[parent[n]]
            first_child[parent[n]] = n
    subtree = np.empty((N, K), dtype=np.int64)  # the node of n's labelled subtree
    current = np.empty(K, dtype=np.int64)
    nodes, count = 0, 0
    for position in range(N - 1, -1, -1):
        n = order[position]
        for k in range(K):
            edges[count, 0], edges[count, 1], edges[count, 2] = nodes, -1, -1
            edges[count, 3], edges[count, 4] = n * K + k, -1
            current[k] = nodes
            nodes += 1
            count += 1
        c = first_child[n]
        while c >= 0:
            message = nodes
            for k in range(K):
                for b in range(K):
                    edges[count, 0], edges[count, 1], edges[count, 2] = message + k, \
                        subtree[c, b], -1
                    edges[count, 3] = n_node + (edge_type[c] * K + k) * K + b
                    edges[count, 4] = -1
                    count += 1
            nodes += K
            for k in range(K):
                edges[count, 0], edges[count, 1], edges[count, 2] = nodes, current[k], message + k
                edges[count, 3], edges[count, 4] = -1, -1
                current[k] = nodes
                nodes += 1
                count += 1
            c = next_sibling[c]
        subtree[n] = current
    forest = -1
    for n in range(N):
        if parent[n] >= 0:
            continue
        for k in range(K):  # the root's sum over its labels
            edges[count, 0], edges[count, 1], edges[count, 2] = nodes, subtree[n, k], -1
            edges[count, 3], edges[count, 4] = -1, -1
            count += 1
        nodes += 1
        if forest >= 0:
            edges[count, 0], edges[count, 1], edges[count, 2] = nodes, forest, nodes - 1
            edges[count, 3], edges[count, 4] = -1, -1
            count += 1
            nodes += 1
        forest = nodes - 1
    return count


TREE_KERNEL_OPS = KernelOps(
    part_scores=token_part_scores, add_features=token_add_features,
    marginals=tree_marginals, log_partition=tree_log_partition, argmax=tree_argmax,
    encode=tree_encode,
    add_features_norm=token_add_features_norm, hypergraph_size=tree_hypergraph_size,
    hypergraph=tree_hypergraph, decode=token_decode,
)


def tree_kernel_data(X, unit_offsets, n_states, parents, order, edge_types, n_edge_types,
                     training):
    """Kernel data of node features ``X`` (dense or CSR) and the forests of a batch."""
    return TreeData(*token_kernel_data(X, unit_offsets, n_states, chain=True, start_end=False,
                                       training=training),
                    parents, order, edge_types, n_edge_types)


# ------------------------------------------------------------------- batch
@njit(cache=True, nogil=True)
def _example_blocks(scores, unit_offsets, part_offsets, n_states, n_edge_types, i):
    """Views of example i's node scores (N, K) and transitions (n_edge_types, K, K)."""
    K = n_states
    N = unit_offsets[i + 1] - unit_offsets[i]
    p = part_offsets[i]
    return (scores[p:p + N * K].reshape((N, K)),
            scores[p + N * K:part_offsets[i + 1]].reshape((n_edge_types, K, K)))


@njit(cache=True, nogil=True)
def tree_edge_marginals_batch(scores, unit_offsets, part_offsets, n_states, n_edge_types,
                              parents, order, edge_types, edge_out, log_z_out):
    """Per-edge marginals of every example, flat: the nodes of example ``i`` own
    ``edge_out[unit_offsets[i]:unit_offsets[i + 1]]``, each a ``(K, K)`` block."""
    for i in range(unit_offsets.shape[0] - 1):
        u0, u1 = unit_offsets[i], unit_offsets[i + 1]
        node, transition = _example_blocks(scores, unit_offsets, part_offsets, n_states,
                                           n_edge_types, i)
        log_z_out[i] = tree_sum_product(node, transition, parents[u0:u1], order[u0:u1],
                                        edge_types[u0:u1], np.empty(node.shape),
                                        np.empty((0, 0, 0)), edge_out[u0:u1], True)
