"""Eisner's recursion for projective dependency trees, as a hypergraph (:mod:`._semiring`).

Items are the complete and incomplete spans ``[s, t]`` of positions ``0..n``
(0 the root) in the two directions; an incomplete span carries the arc between
its ends.  Node ``(4 * (w * N + s) + kind)`` is the span of width ``w`` that
starts at ``s`` (``N = n + 1``), so that narrower spans come first:

* ``LEFT_ARC`` ``[s, t]``: the arc ``t -> s`` and the words between;
* ``RIGHT_ARC`` ``[s, t]``: the arc ``s -> t`` and the words between;
* ``LEFT`` ``[s, t]``: the subtree of ``t`` over ``s..t``;
* ``RIGHT`` ``[s, t]``: the subtree of ``s`` over ``s..t``.

With ``single_root`` the goal takes exactly one root arc ``0 -> m`` and the
spans ``[1, m]`` and ``[m, n]``; otherwise it is the right span ``[0, n]``.
Each projective tree has exactly one derivation.
"""

from numba import njit

from ._arc_features import arc_index

__all__ = ["heads_decode", "projective_hypergraph", "projective_hypergraph_size"]

LEFT_ARC, RIGHT_ARC, LEFT, RIGHT = 0, 1, 2, 3


@njit(cache=True, nogil=True, inline="always")
def _node(s, t, kind, N):
    return 4 * ((t - s) * N + s) + kind


@njit(cache=True, nogil=True, inline="always")
def span_hypergraph_size(n, kinds):
    """``(nodes, edges)`` of Eisner's hypergraph, first or second order, over ``n`` words
    with ``kinds`` kinds of span: ``kinds * w`` edges for each of the ``N - w`` span
    starts of width ``w``, and ``2 N + n + 1`` more."""
    N = n + 1
    n_edges = 2 * N + n + 1
    for w in range(1, N):
        n_edges += kinds * w * (N - w)
    return kinds * N * N + 1, n_edges


@njit(cache=True, nogil=True)
def projective_hypergraph_size(data, i):
    return span_hypergraph_size(data.unit_offsets[i + 1] - data.unit_offsets[i], 4)


@njit(cache=True, nogil=True, inline="always")
def _edge(edges, n, head, tail0, tail1, part):
    edges[n, 0], edges[n, 1], edges[n, 2], edges[n, 3], edges[n, 4] = head, tail0, tail1, part, -1
    return n + 1


@njit(cache=True, nogil=True)
def projective_hypergraph(data, i, edges):
    unit_offsets, single_root = data.unit_offsets, data.single_root
    n = unit_offsets[i + 1] - unit_offsets[i]
    N = n + 1
    first = 1 if single_root else 0  # where the spans start: the root's own arcs come last
    count = 0
    for s in range(first, N):
        count = _edge(edges, count, _node(s, s, LEFT, N), -1, -1, -1)
        count = _edge(edges, count, _node(s, s, RIGHT, N), -1, -1, -1)
    for w in range(1, N):
        for s in range(first, N - w):
            t = s + w
            if s > 0:  # the root is no word's modifier
                for r in range(s, t):
                    count = _edge(edges, count, _node(s, t, LEFT_ARC, N), _node(s, r, RIGHT, N),
                                  _node(r + 1, t, LEFT, N), arc_index(t, s, n))
            for r in range(s, t):
                count = _edge(edges, count, _node(s, t, RIGHT_ARC, N), _node(s, r, RIGHT, N),
                              _node(r + 1, t, LEFT, N), arc_index(s, t, n))
            for r in range(s, t):
                count = _edge(edges, count, _node(s, t, LEFT, N), _node(s, r, LEFT, N),
                              _node(r, t, LEFT_ARC, N), -1)
            for r in range(s + 1, t + 1):
                count = _edge(edges, count, _node(s, t, RIGHT, N), _node(s, r, RIGHT_ARC, N),
                              _node(r, t, RIGHT, N), -1)
    goal = 4 * N * N
    if single_root:
        for m in range(1, N):
            count = _edge(edges, count, goal, _node(1, m, LEFT, N), _node(m, n, RIGHT, N),
                          arc_index(0, m, n))
    else:
        count = _edge(edges, count, goal, _node(0, n, RIGHT, N), -1, -1)
    return count


@njit(cache=True, nogil=True)
def heads_decode(data, i, z, y_out):
    """Each word's head: its arc of largest value."""
    n = y_out.shape[0]
    for m in range(1, n + 1):
        best, best_value = 0, z[arc_index(0, m, n)]
        for h in range(1, n + 1):
            if h != m and z[arc_index(h, m, n)] > best_value:
                best, best_value = h, z[arc_index(h, m, n)]
        y_out[m - 1] = best
