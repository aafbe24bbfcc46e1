"""Second-order sibling parts and their features (McDonald & Pereira 2006), hashed in numba.

A sibling part ``(h, s, m)`` says that ``s`` is the closest child of head
``h`` between ``h`` and its modifier ``m`` (on the same side of ``h``), that
is, ``s`` and ``m`` are adjacent siblings; ``s == h`` (the *null sibling*)
says that ``m`` is ``h``'s innermost child on that side.  A tree has exactly
one sibling part per word, as it has one arc per word.

Indexing
--------
The sibling parts of a sentence of ``n`` words are every ``(h, s, m)`` with
``h`` in ``0..n`` (0 the root), ``m`` in ``1..n``, ``m != h`` and ``s = h`` or
``s`` strictly between ``h`` and ``m``: ``|h - m|`` of them per arc,
``n (n + 1) (2 n + 1) / 6`` in all.  They are ordered like the arcs
(:func:`~._arc_features.arc_index`: by modifier ``m``, then head ``h``), then
by ``k = |s - h|`` (0 the null sibling): :func:`sibling_index`.

Templates
---------
With ``w`` the word id, ``p`` the POS and the null sibling given the
reserved id ``BOUNDARY`` in every column, a sibling part has the templates

* hp + sp + mp (the head's POS with both siblings');
* sp + mp, sw + mw, sw + mp, sp + mw (the two siblings);
* hw + sp + mp, hp + sw + mp, hp + sp + mw (one word of the three, head
  included, with the others' POS: the lexicalized sibling triples of Koo and
  Collins 2010, which let a head's word choose its children's sequence);
* the POS around the two siblings, as the first-order templates have them
  around an arc: (sp, s+1, m-1, mp), (s-1, sp, m-1, mp), (sp, s+1, mp, m+1)
  and (s-1, sp, mp, m+1), ``s+1`` the POS of the word right of ``s`` (the
  root's is ``ROOT``, outside the sentence ``BOUNDARY``; the null sibling's
  own and neighbours' are ``BOUNDARY``): TurboParser scores a sibling pair
  with arc-like templates, and its context tells, say, a coordination from a
  list;
* hp + sp, hw + sp, hp + sw, hw + sw (the head with the inner sibling: that the
  head takes a further child beyond ``s``, or with the null sibling, beyond
  none: how many children a head takes on a side, which the arcs cannot tell);

with a second tag set, the templates holding a POS (all but sw + mw, hw + sw and
the lexicalized triples) once more with its tags (the lexicalized triples are
cached per part, so they use the first tag set alone: see
:func:`sibling_feature_cache`).  Each one is conjoined twice: with
the direction of the arc ``h -> m``, and with the direction and a bin of the
distance between the siblings (the bins of
:func:`~._arc_features.distance_bin`, an eighth bin for the null sibling), but
the head-sibling templates, which do not read ``m``, with that of the distance
between ``h`` and ``s`` (each is scored once per head and sibling, ``n^2``).
Their template ids (301 to 316, and 401, 402, 404, 405 and 409 to 415 for the
second tag set) are not
first-order ids (1 to 183), so no sibling feature shares a hash with an arc
feature but by collision of the hash itself.  A feature is hashed as the
first-order ones are (:func:`~._arc_features.feature_hash`: template id,
attribute ids, then the conjunction code), and its value is 1.
"""

from collections import namedtuple

import numpy as np
from numba import njit

from .._hashing import SEED, absorb, finish
from ._arc_features import (
    BOUNDARY, POS, SECOND_POS, WORD, ArcData, distance_bin, localize, token_attribute)

__all__ = ["MAX_SIBLING_FEATURES", "cell_feature_ids", "head_cell", "n_sibling_parts",
           "pair_feature_ids", "pair_row", "sibling_add_features", "sibling_feature_ids",
           "sibling_index", "sibling_of_index", "sibling_part_scores", "triple_feature_ids"]

#: Sibling templates' ids: ``SIBLING_TEMPLATES + 100 * tag set + (1 .. 16)`` (3, 6 to 8 and
#: 16, the templates without a second POS, in the first tag set only).
SIBLING_TEMPLATES = 300
#: The most ids of one sibling part (two tag sets: 27 templates, each conjoined twice).
MAX_SIBLING_FEATURES = 54
#: Distance bin of the null sibling (those of real siblings are 0 to 6).
NULL_BIN = 7
#: Kernel data of second-order trees: :data:`~._arc_features.ArcData`'s fields, then the
#: sibling templates' ids cached for a fit (:func:`sibling_feature_cache`; arrays of length 0
#: without them).
SiblingData = namedtuple("SiblingData", ArcData._fields + (
    "sibling_distinct", "sibling_distinct_offsets", "triple_ids", "triple_offsets",
    "pair_ids", "pair_offsets", "head_ids", "head_offsets"))


@njit(cache=True, nogil=True, inline="always")
def _triangle(m):
    """``sum_{j=1..m} j (j + 1) / 2``, the sibling parts of arcs shorter than ``m`` on a side."""
    return m * (m + 1) * (m + 2) // 6


@njit(cache=True, nogil=True)
def n_sibling_parts(n):
    """Number of sibling parts of a sentence of ``n`` words: ``n (n + 1) (2 n + 1) / 6``."""
    return n * (n + 1) * (2 * n + 1) // 6


@njit(cache=True, nogil=True, inline="always")
def _modifier_start(m, n):
    """First sibling part of modifier ``m``: the parts of modifiers ``1..m - 1``."""
    return _triangle(m - 1) + _triangle(n - 1) - _triangle(n - m)


@njit(cache=True, nogil=True, inline="always")
def _arc_start(h, m):
    """First sibling part of arc ``(h, m)`` among those of modifier ``m``."""
    if h < m:
        return h * m - h * (h - 1) // 2
    return m * (m + 1) // 2 + (h - m - 1) * (h - m) // 2


@njit(cache=True, nogil=True, inline="always")
def sibling_index(h, s, m, n):
    """Position of sibling part ``(h, s, m)`` among the sibling parts of a sentence."""
    return _modifier_start(m, n) + _arc_start(h, m) + abs(s - h)


@njit(cache=True, nogil=True)
def sibling_of_index(r, n):
    """The sibling part ``(h, s, m)`` at position ``r`` (the inverse of :func:`sibling_index`)."""
    m = 1
    while m < n and _modifier_start(m + 1, n) <= r:
        m += 1
    r -= _modifier_start(m, n)
    for h in range(n + 1):
        if h != m and r < _arc_start(h, m) + abs(h - m):
            k = r - _arc_start(h, m)
            return h, (h + k if h < m else h - k), m
    return -1, -1, -1


@njit(cache=True, nogil=True, inline="always")
def _emit_pair(out, count, template, a, b, c, d, n_values, direction, full, hash_bits):
    """Hash template ``(a, b[, c[, d]])`` conjoined with ``direction`` and with ``full``."""
    h = absorb(absorb(absorb(SEED, template), a), b)
    if n_values >= 3:
        h = absorb(h, c)
    if n_values == 4:
        h = absorb(h, d)
    out[count] = finish(absorb(h, direction), hash_bits)
    out[count + 1] = finish(absorb(h, full), hash_bits)
    return count + 2


@njit(cache=True, nogil=True, inline="always")
def _codes(right, s, m, null):
    """The conjunction codes: direction, then direction and the siblings' distance bin."""
    return 1 + right, 3 + 8 * right + (NULL_BIN if null else distance_bin(s, m))


@njit(cache=True, nogil=True)
def pair_feature_ids(attrs, tok0, n, s, m, right, hash_bits, out):
    """Ids of the templates of a sibling part that do not read its head; returns how many.

    They read the siblings ``s`` and ``m`` (``s = -1`` the null sibling) of a
    sentence of ``n`` words and the direction (``right``: the head is left of
    ``m``), which ``s`` and ``m`` fix unless ``s`` is null: the scores of these
    templates are shared by the sibling parts of every head.  At most 30 ids.
    """
    direction, full = _codes(right, s, m, s < 0)
    count = 0
    mw = attrs[tok0 + m - 1, WORD]
    sw = BOUNDARY if s < 0 else attrs[tok0 + s - 1, WORD]
    for tag_set in range(2 if attrs.shape[1] > SECOND_POS else 1):
        column = POS if tag_set == 0 else SECOND_POS
        base = SIBLING_TEMPLATES + 100 * tag_set
        mp = attrs[tok0 + m - 1, column]
        sp = BOUNDARY if s < 0 else attrs[tok0 + s - 1, column]
        count = _emit_pair(out, count, base + 2, sp, mp, 0, 0, 2, direction, full, hash_bits)
        if tag_set == 0:
            count = _emit_pair(out, count, base + 3, sw, mw, 0, 0, 2, direction, full, hash_bits)
        count = _emit_pair(out, count, base + 4, sw, mp, 0, 0, 2, direction, full, hash_bits)
        count = _emit_pair(out, count, base + 5, sp, mw, 0, 0, 2, direction, full, hash_bits)
        for shape in range(4):  # the POS around the siblings
            s_side = BOUNDARY if s < 0 else token_attribute(
                attrs, tok0, n, s + (1 if shape % 2 == 0 else -1), column)
            m_side = token_attribute(attrs, tok0, n, m + (-1 if shape < 2 else 1), column)
            count = _emit_pair(out, count, base + 9 + shape, sp, s_side, m_side, mp, 4,
                               direction, full, hash_bits)
    return count


@njit(cache=True, nogil=True)
def triple_feature_ids(attrs, tok0, n, h, s, m, hash_bits, out):
    """Ids of the templates of sibling part ``(h, s, m)`` that read its head and its modifier;
    returns how many (8, or 10 with a second tag set)."""
    right = 1 if h < m else 0
    direction, full = _codes(right, s, m, s == h)
    count = 0
    for tag_set in range(2 if attrs.shape[1] > SECOND_POS else 1):
        column = POS if tag_set == 0 else SECOND_POS
        sp = BOUNDARY if s == h else attrs[tok0 + s - 1, column]
        hp = token_attribute(attrs, tok0, n, h, column)
        count = _emit_pair(out, count, SIBLING_TEMPLATES + 100 * tag_set + 1, hp, sp,
                           attrs[tok0 + m - 1, column], 0, 3, direction, full, hash_bits)
    hw = token_attribute(attrs, tok0, n, h, WORD)
    hp = token_attribute(attrs, tok0, n, h, POS)
    sw = BOUNDARY if s == h else attrs[tok0 + s - 1, WORD]
    sp = BOUNDARY if s == h else attrs[tok0 + s - 1, POS]
    mw, mp = attrs[tok0 + m - 1, WORD], attrs[tok0 + m - 1, POS]
    count = _emit_pair(out, count, SIBLING_TEMPLATES + 6, hw, sp, mp, 0, 3, direction, full,
                       hash_bits)
    count = _emit_pair(out, count, SIBLING_TEMPLATES + 7, hp, sw, mp, 0, 3, direction, full,
                       hash_bits)
    return _emit_pair(out, count, SIBLING_TEMPLATES + 8, hp, sp, mw, 0, 3, direction, full,
                      hash_bits)


@njit(cache=True, nogil=True, inline="always")
def head_cell(h, s, m):
    """Cell of ``(h, s, m)``'s head-sibling templates in the ``head`` tables (row ``h``):
    ``s``, or for the null sibling 0 (right of its head) and ``h`` (left)."""
    if s != h:
        return s
    return 0 if h < m else h


@njit(cache=True, nogil=True)
def head_feature_ids(attrs, tok0, n, h, cell, hash_bits, out):
    """Ids of the head-sibling templates of head ``h`` at ``head`` cell ``cell`` (see
    :func:`head_cell`); returns how many (8, or 14 with a second tag set)."""
    null = cell == 0 or cell == h
    right = 1 if cell == 0 or cell > h else 0
    direction, full = _codes(right, h, cell, null)
    hw = token_attribute(attrs, tok0, n, h, WORD)
    sw = BOUNDARY if null else attrs[tok0 + cell - 1, WORD]
    count = 0
    for tag_set in range(2 if attrs.shape[1] > SECOND_POS else 1):
        column = POS if tag_set == 0 else SECOND_POS
        base = SIBLING_TEMPLATES + 100 * tag_set
        hp = token_attribute(attrs, tok0, n, h, column)
        sp = BOUNDARY if null else attrs[tok0 + cell - 1, column]
        count = _emit_pair(out, count, base + 13, hp, sp, 0, 0, 2, direction, full, hash_bits)
        count = _emit_pair(out, count, base + 14, hw, sp, 0, 0, 2, direction, full, hash_bits)
        count = _emit_pair(out, count, base + 15, hp, sw, 0, 0, 2, direction, full, hash_bits)
        if tag_set == 0:
            count = _emit_pair(out, count, base + 16, hw, sw, 0, 0, 2, direction, full,
                               hash_bits)
    return count


@njit(cache=True, nogil=True)
def sibling_feature_ids(attrs, tok0, n, h, s, m, hash_bits, out):
    """Hashed ids of every template instance of sibling part ``(h, s, m)``; returns how many.

    ``attrs`` stacks the token rows of all sentences; the sentence starts at
    row ``tok0`` and has ``n`` tokens.  ``out`` holds at least
    :data:`MAX_SIBLING_FEATURES` ids.
    """
    count = triple_feature_ids(attrs, tok0, n, h, s, m, hash_bits, out)
    count += head_feature_ids(attrs, tok0, n, h, head_cell(h, s, m), hash_bits, out[count:])
    return count + pair_feature_ids(attrs, tok0, n, -1 if s == h else s, m,
                                    1 if h < m else 0, hash_bits, out[count:])


def no_sibling_cache():
    """The empty sibling cache fields of :data:`SiblingData`."""
    empty = np.empty(0, dtype=np.int64)
    no_ids = np.empty(0, dtype=np.int32)
    return no_ids, empty, no_ids, empty, no_ids, empty, no_ids, empty


@njit(cache=True, nogil=True)
def _sibling_counts(attrs):
    """Ids per sibling part of the templates that read the head and the modifier, per pair
    row of those that do not read the head, and per head cell of the head-sibling ones."""
    two = attrs.shape[1] > SECOND_POS
    return (10, 30, 14) if two else (8, 16, 8)


@njit(cache=True, nogil=True)
def sibling_feature_cache(attrs, unit_offsets, hash_bits, arc_distinct, arc_distinct_offsets):
    """Hash the sibling templates of every sentence once, for a fit.

    Returns ``(sibling_distinct, sibling_distinct_offsets, triple_ids,
    triple_offsets, pair_ids, pair_offsets, head_ids, head_offsets)``: sentence ``i``
    uses the distinct
    ids ``distinct``: its arcs' distinct ids (of
    :func:`~._arc_features.arc_feature_cache`: ``arc_distinct`` and
    ``arc_distinct_offsets``), then those of its sibling templates that no arc
    has, ``sibling_distinct[sibling_distinct_offsets[i]:sibling_distinct_offsets[i
    + 1]]``, so that the arc and the sibling parts of a sentence share one vector
    of local weights or features (an id that both hash to is one entry; the arcs'
    ids are not stored twice: on EWT they take 1.4 GB); its sibling part ``r`` has the head
    templates' ids ``distinct[triple_ids[triple_offsets[i] + T r + (0..T-1)]]``
    and the ``pair`` row ``row`` of modifier ``m`` the head-free templates' ids
    ``distinct[pair_ids[pair_offsets[i] + P ((m - 1) (n + 1) + row) + (0..P-1)]]``,
    and head ``h``'s cell ``cell`` the head-sibling templates' ids ``distinct[head_ids[
    head_offsets[i] + Q (h (n + 1) + cell) + (0..Q-1)]]``, ``T``, ``P`` and ``Q`` the counts
    of :func:`_sibling_counts`.
    """
    T, P, Q = _sibling_counts(attrs)
    n_sentences = unit_offsets.shape[0] - 1
    triple_offsets = np.zeros(n_sentences + 1, dtype=np.int64)
    pair_offsets = np.zeros(n_sentences + 1, dtype=np.int64)
    head_offsets = np.zeros(n_sentences + 1, dtype=np.int64)
    for i in range(n_sentences):
        n = unit_offsets[i + 1] - unit_offsets[i]
        triple_offsets[i + 1] = triple_offsets[i] + T * n_sibling_parts(n)
        pair_offsets[i + 1] = pair_offsets[i] + P * n * (n + 1)
        head_offsets[i + 1] = head_offsets[i] + Q * (n + 1) * (n + 1)
    triple_ids = np.empty(triple_offsets[-1], dtype=np.int32)
    pair_ids = np.empty(pair_offsets[-1], dtype=np.int32)
    head_ids = np.empty(head_offsets[-1], dtype=np.int32)
    distinct_offsets = np.zeros(n_sentences + 1, dtype=np.int64)
    distinct_of = []
    out = np.empty(MAX_SIBLING_FEATURES, dtype=np.int64)
    for i in range(n_sentences):
        tok0 = unit_offsets[i]
        n = unit_offsets[i + 1] - tok0
        n_triple = triple_offsets[i + 1] - triple_offsets[i]
        n_pair = pair_offsets[i + 1] - pair_offsets[i]
        arcs = arc_distinct[arc_distinct_offsets[i]:arc_distinct_offsets[i + 1]]
        n_arc = arcs.shape[0]
        ids = np.empty(n_arc + n_triple + n_pair + head_offsets[i + 1] - head_offsets[i],
                       dtype=np.int32)
        ids[:n_arc] = arcs
        k = n_arc
        for m in range(1, n + 1):  # the order of sibling_index
            for h in range(n + 1):
                if h == m:
                    continue
                for s in range(h, m, 1 if h < m else -1):
                    count = triple_feature_ids(attrs, tok0, n, h, s, m, hash_bits, out)
                    ids[k:k + count] = out[:count]
                    k += T
        k = _hash_cells(attrs, tok0, n, False, n, hash_bits, out, ids, k, P)
        k = _hash_cells(attrs, tok0, n, True, n + 1, hash_bits, out, ids, k, Q)
        local = np.empty(ids.shape[0], dtype=np.int32)
        distinct = localize(ids, local)
        k = n_arc + n_triple
        triple_ids[triple_offsets[i]:triple_offsets[i + 1]] = local[n_arc:k]
        pair_ids[pair_offsets[i]:pair_offsets[i + 1]] = local[k:k + n_pair]
        head_ids[head_offsets[i]:head_offsets[i + 1]] = local[k + n_pair:]
        distinct_of.append(distinct[n_arc:].copy())  # (localize keeps the arcs' ids first)
        distinct_offsets[i + 1] = distinct_offsets[i] + distinct.shape[0] - n_arc
    distinct_ids = np.empty(distinct_offsets[-1], dtype=np.int32)
    for i in range(n_sentences):
        distinct_ids[distinct_offsets[i]:distinct_offsets[i + 1]] = distinct_of[i]
    return (distinct_ids, distinct_offsets, triple_ids, triple_offsets, pair_ids, pair_offsets,
            head_ids, head_offsets)


@njit(cache=True, nogil=True, inline="always")
def cell_feature_ids(attrs, tok0, n, head_cells, a, b, hash_bits, out):
    """Ids of cell ``(a, b)`` of the tables whose templates are scored once per cell, laid
    out as the cache lays them out: head ``a``'s cell ``b`` of the head-sibling templates
    (``head_cells``; see :func:`head_cell`), or modifier ``a + 1``'s row ``b`` of the
    head-free ones (see :func:`pair_row`)."""
    if head_cells:
        return head_feature_ids(attrs, tok0, n, a, b, hash_bits, out)
    return row_feature_ids(attrs, tok0, n, b, a + 1, hash_bits, out)


@njit(cache=True, nogil=True, inline="always")
def _hash_cells(attrs, tok0, n, head_cells, n_rows, hash_bits, out, ids, k, width):
    """The ids of the first ``n_rows`` rows of cells (see :func:`cell_feature_ids`) into
    ``ids`` from ``k`` on, ``width`` per cell; returns where they end."""
    for a in range(n_rows):
        for b in range(n + 1):
            count = cell_feature_ids(attrs, tok0, n, head_cells, a, b, hash_bits, out)
            ids[k:k + count] = out[:count]
            k += width
    return k


@njit(cache=True, nogil=True, inline="always")
def _cell_scores(cell_ids, start, width, local_w, table):
    """``table[a, b]``: the sum of ``local_w`` over the ``width`` cached ids of cell ``(a, b)``,
    the cells laid out row by row from ``cell_ids[start]`` (the pair rows, the head cells)."""
    for a in range(table.shape[0]):
        for b in range(table.shape[1]):
            first = start + width * (a * table.shape[1] + b)
            total = 0.0
            for k in cell_ids[first:first + width]:
                total += local_w[k]
            table[a, b] = total


@njit(cache=True, nogil=True, inline="always")
def _cell_features(cell_ids, start, width, table, local):
    """``local += table[a, b]`` at the ids of every cell ``(a, b)`` (see :func:`_cell_scores`)."""
    for a in range(table.shape[0]):
        for b in range(table.shape[1]):
            if table[a, b] != 0.0:
                first = start + width * (a * table.shape[1] + b)
                for k in cell_ids[first:first + width]:
                    local[k] += table[a, b]


@njit(cache=True, nogil=True)
def cached_sibling_scores(data, i, n, local_w, out):
    """Sibling part scores of cached sentence ``i`` from its weights gathered on its
    distinct ids (see :func:`sibling_feature_cache`)."""
    T, P, Q = _sibling_counts(data.attrs)
    pair = np.zeros((n + 1, n + 1))  # pair[row, m], cached by modifier (pair.T[1:])
    _cell_scores(data.pair_ids, data.pair_offsets[i], P, local_w, pair.T[1:])
    head = np.zeros((n + 1, n + 1))
    _cell_scores(data.head_ids, data.head_offsets[i], Q, local_w, head)
    t0 = data.triple_offsets[i]
    r = 0
    for m in range(1, n + 1):
        for h in range(n + 1):
            if h == m:
                continue
            for s in range(h, m, 1 if h < m else -1):
                total = pair[pair_row(h, s, m), m] + head[h, head_cell(h, s, m)]
                for k in data.triple_ids[t0 + T * r:t0 + T * (r + 1)]:
                    total += local_w[k]
                out[r] = total
                r += 1


@njit(cache=True, nogil=True)
def cached_sibling_features(data, i, n, coef, local):
    """``local += F_i coef`` over the sibling parts of cached sentence ``i``, on its
    distinct ids (see :func:`sibling_feature_cache`)."""
    T, P, Q = _sibling_counts(data.attrs)
    pair = np.zeros((n + 1, n + 1))
    head = np.zeros((n + 1, n + 1))
    t0 = data.triple_offsets[i]
    r = 0
    for m in range(1, n + 1):
        for h in range(n + 1):
            if h == m:
                continue
            for s in range(h, m, 1 if h < m else -1):
                if coef[r] != 0.0:
                    for k in data.triple_ids[t0 + T * r:t0 + T * (r + 1)]:
                        local[k] += coef[r]
                    pair[pair_row(h, s, m), m] += coef[r]
                    head[h, head_cell(h, s, m)] += coef[r]
                r += 1
    _cell_features(data.pair_ids, data.pair_offsets[i], P, pair.T[1:], local)
    _cell_features(data.head_ids, data.head_offsets[i], Q, head, local)


@njit(cache=True, nogil=True, inline="always")
def _dot(w, scale, ids, count):
    total = 0.0
    for j in range(count):
        total += w[ids[j]] * scale[ids[j]] if scale.shape[0] > 0 else w[ids[j]]
    return total


@njit(cache=True, nogil=True, inline="always")
def _add(w, scale, ids, count, value):
    for j in range(count):
        w[ids[j]] += value * scale[ids[j]] if scale.shape[0] > 0 else value


@njit(cache=True, nogil=True, inline="always")
def _hashed_cell_scores(attrs, tok0, n, head_cells, hash_bits, w, scale, ids, table):
    """``table[a, b] = (scale * w) . phi(cell (a, b))``, hashing each cell's features
    (see :func:`cell_feature_ids`)."""
    for a in range(table.shape[0]):
        for b in range(table.shape[1]):
            count = cell_feature_ids(attrs, tok0, n, head_cells, a, b, hash_bits, ids)
            table[a, b] = _dot(w, scale, ids, count)


@njit(cache=True, nogil=True)
def sibling_part_scores(data, i, w, scale, out):
    """``out[sibling_index(h, s, m)] = (scale * w) . phi(h, s, m)`` for every sibling part.

    The templates that do not read the head are scored once per pair of
    siblings (``n^2``), those that read the head alone with the sibling once per
    head and sibling (``n^2``), the others once per part.
    """
    attrs, tok0, hash_bits = data.attrs, data.unit_offsets[i], data.hash_bits
    n = data.unit_offsets[i + 1] - tok0
    ids = np.empty(MAX_SIBLING_FEATURES, dtype=np.int64)
    pair = np.zeros((n + 1, n + 1))  # pair[pair_row(h, s, m), m]
    _hashed_cell_scores(attrs, tok0, n, False, hash_bits, w, scale, ids, pair.T[1:])
    head = np.zeros((n + 1, n + 1))  # head[h, head_cell(h, s, m)]
    _hashed_cell_scores(attrs, tok0, n, True, hash_bits, w, scale, ids, head)
    # an arc's parts hashed first, then their weights read: the reads of a part no longer
    # wait behind the hashing of the next, and more of them are in flight at once
    arc_ids = np.empty(n * MAX_SIBLING_FEATURES, dtype=np.int64)
    r = 0
    for m in range(1, n + 1):  # the order of sibling_index
        for h in range(n + 1):
            if h == m:
                continue
            step = 1 if h < m else -1
            count = 0
            for s in range(h, m, step):
                count += triple_feature_ids(attrs, tok0, n, h, s, m, hash_bits,
                                            arc_ids[count:])
            width = count // abs(m - h)  # (8 per part, or 10 with a second tag set)
            k = 0
            for s in range(h, m, step):
                out[r] = (_dot(w, scale, arc_ids[k:], width) + pair[pair_row(h, s, m), m]
                          + head[h, head_cell(h, s, m)])
                k += width
                r += 1


@njit(cache=True, nogil=True, inline="always")
def pair_row(h, s, m):
    """Row of ``(h, s, m)``'s head-free templates in the ``pair`` tables: ``s``, or for the
    null sibling 0 (right of its head) and ``m`` (left)."""
    if s != h:
        return s
    return 0 if h < m else m


@njit(cache=True, nogil=True, inline="always")
def row_feature_ids(attrs, tok0, n, row, m, hash_bits, out):
    """:func:`pair_feature_ids` of the head-free templates at ``pair`` row ``row`` of ``m``."""
    return pair_feature_ids(attrs, tok0, n, -1 if row == 0 or row == m else row, m,
                            1 if row < m else 0, hash_bits, out)


@njit(cache=True, nogil=True)
def sibling_add_features(data, i, coef, scale, w):
    """``w += scale * sum_r coef[r] phi(r)`` over the sibling parts ``r``.

    The coefficients of the templates that do not read the head are summed
    over the heads first, then added once per pair of siblings; those of the
    head-sibling templates summed over the modifiers, then added once per head
    and sibling.
    """
    attrs, tok0, hash_bits = data.attrs, data.unit_offsets[i], data.hash_bits
    n = data.unit_offsets[i + 1] - tok0
    ids = np.empty(MAX_SIBLING_FEATURES, dtype=np.int64)
    pair = np.zeros((n + 1, n + 1))
    head = np.zeros((n + 1, n + 1))
    r = 0
    for m in range(1, n + 1):
        for h in range(n + 1):
            if h == m:
                continue
            step = 1 if h < m else -1
            for s in range(h, m, step):
                value = coef[r]
                r += 1
                if value == 0.0:
                    continue
                count = triple_feature_ids(attrs, tok0, n, h, s, m, hash_bits, ids)
                _add(w, scale, ids, count, value)
                pair[pair_row(h, s, m), m] += value
                head[h, head_cell(h, s, m)] += value
    _add_cells(attrs, tok0, n, False, hash_bits, ids, pair.T[1:], scale, w)
    _add_cells(attrs, tok0, n, True, hash_bits, ids, head, scale, w)


@njit(cache=True, nogil=True, inline="always")
def _add_cells(attrs, tok0, n, head_cells, hash_bits, ids, table, scale, w):
    """``w += scale * table[a, b] phi(cell (a, b))`` over the cells (see
    :func:`cell_feature_ids`), hashing their features."""
    for a in range(table.shape[0]):
        for b in range(table.shape[1]):
            if table[a, b] != 0.0:
                count = cell_feature_ids(attrs, tok0, n, head_cells, a, b, hash_bits, ids)
                _add(w, scale, ids, count, table[a, b])
