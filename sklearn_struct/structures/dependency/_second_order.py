"""Second-order projective trees: Eisner's recursion with adjacent siblings, as a hypergraph.

The parts of a sentence of ``n`` words are its ``n * n`` arcs, indexed as the
first-order ones (:func:`~._arc_features.arc_index`), then its sibling parts
``(h, s, m)`` (:mod:`._sibling_features`): the part vector of a sentence is
``[arc block | sibling block]``, ``n * n + n (n + 1) (2 n + 1) / 6`` parts.  A
tree uses one arc and one sibling part per word.

The recursion (McDonald & Pereira 2006, section 3.2; Eisner 1996) adds to
the first-order spans (:mod:`._projective`) a *sibling* span ``[s, t]``: the
right subtree of ``s`` next to the left subtree of ``t``, two adjacent
siblings with the head outside.  An incomplete span takes its arc ``h -> m``
together with the sibling part of ``m``:

* ``RIGHT_ARC [s, t]`` (arc ``s -> t``): ``C_left[s + 1, t]`` with sibling
  ``(s, s, t)`` (``t`` is ``s``'s first right child), or ``RIGHT_ARC [s, r] +
  SIBLING [r, t]`` with sibling ``(s, r, t)``, ``s < r < t``;
* ``LEFT_ARC [s, t]`` (arc ``t -> s``): ``C_right[s, t - 1]`` with sibling
  ``(t, t, s)``, or ``SIBLING [s, r] + LEFT_ARC [r, t]`` with sibling
  ``(t, r, s)``;
* ``SIBLING [s, t] = C_right[s, r] + C_left[r + 1, t]``, ``s <= r < t``;
* the complete spans as in the first order.

Node ``5 * (w * N + s) + kind`` is the span of width ``w`` that starts at
``s`` (``N = n + 1``); within a span an incomplete span comes before the
complete span built from it.  With ``single_root`` the goal takes one root arc
``0 -> m``, its sibling part ``(0, 0, m)`` and the spans ``[1, m]`` and ``[m, n]``;
otherwise it is the right span ``[0, n]``, and the root's children are
siblings like any other head's.  Each projective tree has exactly one
derivation, so that the generic dynamic program (:mod:`.._semiring`) gives
marginals, ``log Z``, argmax, k-best trees and samples.
"""

import numpy as np
from numba import njit

from ._arc_features import (
    arc_add_features, arc_add_features_at, arc_feature_pass, arc_index, arc_local_features,
    arc_local_scores, arc_part_scores, arc_part_scores_at, gather_weights, scatter_features,
    touch_feature)
from ._projective import heads_decode, span_hypergraph_size
from ._sibling_features import (
    MAX_SIBLING_FEATURES, cached_sibling_features, cached_sibling_scores, cell_feature_ids,
    head_cell, pair_row, sibling_add_features, sibling_feature_ids, sibling_index,
    sibling_of_index, sibling_part_scores, triple_feature_ids)

__all__ = ["second_order_hypergraph", "second_order_hypergraph_size", "sibling_parts_of"]

LEFT_ARC, RIGHT_ARC, LEFT, RIGHT, SIBLING = 0, 1, 2, 3, 4


@njit(cache=True, nogil=True, inline="always")
def _node(s, t, kind, N):
    return 5 * ((t - s) * N + s) + kind


@njit(cache=True, nogil=True, inline="always")
def _length(data, i):
    return data.unit_offsets[i + 1] - data.unit_offsets[i]


@njit(cache=True, nogil=True)
def second_order_hypergraph_size(data, i):
    return span_hypergraph_size(_length(data, i), 5)


@njit(cache=True, nogil=True, inline="always")
def _edge(edges, count, head, tail0, tail1, part0, part1):
    edges[count, 0], edges[count, 1], edges[count, 2] = head, tail0, tail1
    edges[count, 3], edges[count, 4] = part0, part1
    return count + 1


@njit(cache=True, nogil=True)
def second_order_hypergraph(data, i, edges):
    n = _length(data, i)
    N = n + 1
    A = n * n  # the sibling block starts after the arcs
    first = 1 if data.single_root else 0
    count = 0
    for s in range(first, N):
        count = _edge(edges, count, _node(s, s, LEFT, N), -1, -1, -1, -1)
        count = _edge(edges, count, _node(s, s, RIGHT, N), -1, -1, -1, -1)
    for w in range(1, N):
        for s in range(first, N - w):
            t = s + w
            if s > 0:  # the root is no word's modifier
                arc = arc_index(t, s, n)
                count = _edge(edges, count, _node(s, t, LEFT_ARC, N), _node(s, t - 1, RIGHT, N),
                              -1, arc, A + sibling_index(t, t, s, n))
                for r in range(s + 1, t):
                    count = _edge(edges, count, _node(s, t, LEFT_ARC, N),
                                  _node(s, r, SIBLING, N), _node(r, t, LEFT_ARC, N), arc,
                                  A + sibling_index(t, r, s, n))
            arc = arc_index(s, t, n)
            count = _edge(edges, count, _node(s, t, RIGHT_ARC, N), _node(s + 1, t, LEFT, N), -1,
                          arc, A + sibling_index(s, s, t, n))
            for r in range(s + 1, t):
                count = _edge(edges, count, _node(s, t, RIGHT_ARC, N), _node(s, r, RIGHT_ARC, N),
                              _node(r, t, SIBLING, N), arc, A + sibling_index(s, r, t, n))
            for r in range(s, t):
                count = _edge(edges, count, _node(s, t, LEFT, N), _node(s, r, LEFT, N),
                              _node(r, t, LEFT_ARC, N), -1, -1)
            for r in range(s + 1, t + 1):
                count = _edge(edges, count, _node(s, t, RIGHT, N), _node(s, r, RIGHT_ARC, N),
                              _node(r, t, RIGHT, N), -1, -1)
            if s > 0:  # two siblings: words, not the root
                for r in range(s, t):
                    count = _edge(edges, count, _node(s, t, SIBLING, N), _node(s, r, RIGHT, N),
                                  _node(r + 1, t, LEFT, N), -1, -1)
    goal = 5 * N * N
    if data.single_root:
        for m in range(1, N):
            count = _edge(edges, count, goal, _node(1, m, LEFT, N), _node(m, n, RIGHT, N),
                          arc_index(0, m, n), A + sibling_index(0, 0, m, n))
    else:
        count = _edge(edges, count, goal, _node(0, n, RIGHT, N), -1, -1, -1)
    return count


@njit(cache=True, nogil=True)
def sibling_parts_of(heads, out):
    """``out[m - 1]``: the sibling part of word ``m`` in the tree ``heads``, as ``(h, s, m)``'s
    position among the sibling parts (``s`` the closest child of ``h`` between ``h`` and ``m``,
    ``h`` itself when none)."""
    n = heads.shape[0]
    for m in range(1, n + 1):
        h = heads[m - 1]
        s = h
        step = 1 if m < h else -1  # from m back towards h
        for j in range(m + step, h, step):
            if heads[j - 1] == h:
                s = j
                break
        out[m - 1] = sibling_index(h, s, m, n)


@njit(cache=True, nogil=True)
def second_order_encode(data, i, y, z_out):
    n = y.shape[0]
    z_out[:] = 0.0
    siblings = np.empty(n, dtype=np.int64)
    sibling_parts_of(y, siblings)
    for m in range(1, n + 1):
        z_out[arc_index(y[m - 1], m, n)] = 1.0
        z_out[n * n + siblings[m - 1]] = 1.0


@njit(cache=True, nogil=True)
def second_order_decode(data, i, z, y_out):
    """Each word's head: its arc of largest value (the sibling block is not read)."""
    n = y_out.shape[0]
    heads_decode(data, i, z[:n * n], y_out)


@njit(cache=True, nogil=True, inline="always")
def _joint_ids(data, i):
    """Cached sentence ``i``'s distinct ids in two runs, its arcs' and its sibling templates'
    others (see :func:`~._sibling_features.sibling_feature_cache`): positions ``0..`` and
    ``len(arcs)..`` of its local weights and features."""
    return (data.distinct_ids[data.distinct_offsets[i]:data.distinct_offsets[i + 1]],
            data.sibling_distinct[data.sibling_distinct_offsets[i]:
                                  data.sibling_distinct_offsets[i + 1]])


@njit(cache=True, nogil=True)
def second_order_part_scores(data, i, w, scale, out):
    n = _length(data, i)
    if data.triple_offsets.shape[0] > 0:  # cached: one gather for arcs and siblings
        arcs, others = _joint_ids(data, i)
        local_w = np.empty(arcs.shape[0] + others.shape[0])
        gather_weights(w, scale, arcs, local_w[:arcs.shape[0]])
        gather_weights(w, scale, others, local_w[arcs.shape[0]:])
        arc_local_scores(data, i, local_w, out[:n * n])
        cached_sibling_scores(data, i, n, local_w, out[n * n:])
        return
    arc_part_scores(data, i, w, scale, out[:n * n])
    sibling_part_scores(data, i, w, scale, out[n * n:])


@njit(cache=True, nogil=True)
def _joint_features(data, i, n, n_local, coef):
    """``F_i coef`` of cached sentence ``i`` on its distinct ids (see :func:`_joint_ids`)."""
    local = np.zeros(n_local)
    arc_local_features(data, i, coef[:n * n], local)
    cached_sibling_features(data, i, n, coef[n * n:], local)
    return local


@njit(cache=True, nogil=True)
def second_order_add_features(data, i, coef, scale, w):
    n = _length(data, i)
    if data.triple_offsets.shape[0] > 0:
        arcs, others = _joint_ids(data, i)
        local = _joint_features(data, i, n, arcs.shape[0] + others.shape[0], coef)
        scatter_features(local[:arcs.shape[0]], scale, arcs, w)
        scatter_features(local[arcs.shape[0]:], scale, others, w)
        return
    arc_add_features(data, i, coef[:n * n], scale, w)
    sibling_add_features(data, i, coef[n * n:], scale, w)


@njit(cache=True, nogil=True)
def _split_parts(parts, n):
    """Positions in ``parts`` of the arcs and of the sibling parts."""
    n_arcs = 0
    for j in range(parts.shape[0]):
        if parts[j] < n * n:
            n_arcs += 1
    arcs = np.empty(n_arcs, dtype=np.int64)
    siblings = np.empty(parts.shape[0] - n_arcs, dtype=np.int64)
    a = 0
    b = 0
    for j in range(parts.shape[0]):
        if parts[j] < n * n:
            arcs[a] = j
            a += 1
        else:
            siblings[b] = j
            b += 1
    return arcs, siblings


@njit(cache=True, nogil=True)
def second_order_part_scores_at(data, i, w, scale, parts, out, scratch):
    """Scores of the listed parts alone (``scratch`` unused)."""
    n = _length(data, i)
    arcs, siblings = _split_parts(parts, n)
    arc_out = np.empty(arcs.shape[0])
    arc_part_scores_at(data, i, w, scale, parts[arcs], arc_out, scratch)
    for j in range(arcs.shape[0]):
        out[arcs[j]] = arc_out[j]
    ids = np.empty(MAX_SIBLING_FEATURES, dtype=np.int64)
    tok0 = data.unit_offsets[i]
    scaled = scale.shape[0] > 0
    for j in siblings:
        h, s, m = sibling_of_index(parts[j] - n * n, n)
        count = sibling_feature_ids(data.attrs, tok0, n, h, s, m, data.hash_bits, ids)
        total = 0.0
        for k in range(count):
            total += w[ids[k]] * scale[ids[k]] if scaled else w[ids[k]]
        out[j] = total


@njit(cache=True, nogil=True)
def second_order_add_features_at(data, i, parts, coef, scale, w, scratch):
    """The listed parts' features alone (``scratch`` unused)."""
    n = _length(data, i)
    arcs, siblings = _split_parts(parts, n)
    arc_add_features_at(data, i, parts[arcs], coef[arcs], scale, w, scratch)
    ids = np.empty(MAX_SIBLING_FEATURES, dtype=np.int64)
    tok0 = data.unit_offsets[i]
    scaled = scale.shape[0] > 0
    for j in siblings:
        if coef[j] == 0.0:
            continue
        h, s, m = sibling_of_index(parts[j] - n * n, n)
        count = sibling_feature_ids(data.attrs, tok0, n, h, s, m, data.hash_bits, ids)
        for k in range(count):
            w[ids[k]] += coef[j] * scale[ids[k]] if scaled else coef[j]


@njit(cache=True, nogil=True, inline="always")
def _touch(ids, count, value, scale, w_scratch, read):
    """:func:`~._arc_features.touch_feature` at each of the ids ``ids[:count]``."""
    total = 0.0
    for j in range(count):
        total += touch_feature(w_scratch, ids[j], value, scale, read)
    return total


@njit(cache=True, nogil=True)
def _feature_pass(data, i, dmu, scale, w_scratch, read):
    """One pass over the features of the parts with ``dmu != 0`` of a sentence without the
    cache (see :func:`~._arc_features.arc_feature_pass`)."""
    attrs, tok0, hash_bits = data.attrs, data.unit_offsets[i], data.hash_bits
    n = _length(data, i)
    ids = np.empty(MAX_SIBLING_FEATURES, dtype=np.int64)
    total = arc_feature_pass(data, i, dmu[:n * n], scale, w_scratch, read)
    r = n * n
    pair = np.zeros((n + 1, n + 1))  # the head-free templates' coefficients, summed over heads
    head = np.zeros((n + 1, n + 1))  # the head-sibling ones', summed over modifiers
    for m in range(1, n + 1):  # the order of sibling_index
        for h in range(n + 1):
            if h == m:
                continue
            for s in range(h, m, 1 if h < m else -1):
                if dmu[r] != 0.0:
                    count = triple_feature_ids(attrs, tok0, n, h, s, m, hash_bits, ids)
                    total += _touch(ids, count, dmu[r], scale, w_scratch, read)
                    pair[pair_row(h, s, m), m] += dmu[r]
                    head[h, head_cell(h, s, m)] += dmu[r]
                r += 1
    total = _touch_cells(attrs, tok0, n, False, hash_bits, ids, pair.T[1:], scale, w_scratch,
                         read, total)
    return _touch_cells(attrs, tok0, n, True, hash_bits, ids, head, scale, w_scratch, read,
                        total)


@njit(cache=True, nogil=True, inline="always")
def _touch_cells(attrs, tok0, n, head_cells, hash_bits, ids, table, scale, w_scratch, read,
                 total):
    """``total`` plus :func:`_touch` at the ids of every cell ``(a, b)`` with ``table[a, b]``
    (see :func:`~._sibling_features.cell_feature_ids`)."""
    for a in range(table.shape[0]):
        for b in range(table.shape[1]):
            if table[a, b] != 0.0:
                count = cell_feature_ids(attrs, tok0, n, head_cells, a, b, hash_bits, ids)
                total += _touch(ids, count, table[a, b], scale, w_scratch, read)
    return total


@njit(cache=True, nogil=True)
def second_order_add_features_norm(data, i, coef, scale, w, w_scratch, part_scratch):
    """:func:`second_order_add_features`, returning ``||scale * F_i coef||^2``: on a cached
    sentence from ``F_i coef`` summed on its distinct ids as it adds them; otherwise from
    two feature passes over the parts that change, which accumulate ``F_i coef`` in
    ``w_scratch`` (zero on entry), then read each touched weight once, squaring and
    clearing it (zero on exit); ``part_scratch`` unused."""
    n = _length(data, i)
    if data.triple_offsets.shape[0] > 0:
        arcs, others = _joint_ids(data, i)
        local = _joint_features(data, i, n, arcs.shape[0] + others.shape[0], coef)
        return (scatter_features(local[:arcs.shape[0]], scale, arcs, w)
                + scatter_features(local[arcs.shape[0]:], scale, others, w))
    _feature_pass(data, i, coef, scale, w_scratch, False)
    total = _feature_pass(data, i, coef, scale, w_scratch, True)
    second_order_add_features(data, i, coef, scale, w)
    return total
