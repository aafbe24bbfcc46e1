"""First-order arc features of McDonald, Crammer & Pereira (2005), hashed inside numba.

Tokens arrive as integer attribute rows ``(WORD, POS, PREFIX)``
(:class:`~sklearn_struct.preprocessing.DependencyTokenEncoder`); the root is
given the reserved id ``ROOT`` in every column and positions outside the
sentence the id ``BOUNDARY``.  ``PREFIX`` is the id of the 5-character prefix
of a word longer than 5 characters, ``NO_PREFIX`` otherwise.

Templates of an arc from head ``h`` to modifier ``c`` (``w`` word, ``p`` POS,
``x`` prefix):

* unigrams: hw+hp, hw, hp, cw+cp, cw, cp;
* bigrams: hw+hp+cw+cp, hp+cw+cp, hw+cw+cp, hw+hp+cp, hw+hp+cw, hw+cw, hp+cp;
* the templates above that hold a word again with 5-character prefixes in
  place of the words (when one of the words has a prefix);
* in-between: hp + bp + cp for the POS ``bp`` of every word strictly between;
* surrounding POS: (hp, hp+1, cp-1, cp), (hp-1, hp, cp-1, cp),
  (hp, hp+1, cp, cp+1), (hp-1, hp, cp, cp+1), and their trigram back-offs
  (each 4-gram without its head-side context, and without its modifier-side
  context);

every one alone and conjoined with the arc direction and a distance bin (1, 2,
3, 4, 5, 6-10, more than 10).  A feature is the FNV-1a hash of its template id,
the conjunction code and its attribute ids, modulo ``2**hash_bits``; its value
is 1.  Features are generated on the fly: the arcs of a sentence are never
stored as a feature matrix.
"""

import numpy as np
from numba import njit

ROOT = 1
BOUNDARY = 2
NO_PREFIX = 3
#: First id free for vocabulary entries (0 is the unknown value).
FIRST_ID = 4
WORD, POS, PREFIX = 0, 1, 2

_FNV_OFFSET = np.uint64(14695981039346656037)
_FNV_PRIME = np.uint64(1099511628211)
_BYTE = np.uint64(255)


@njit(cache=True, nogil=True)
def feature_hash(values, count, hash_bits):
    """FNV-1a over the 8 bytes of each of ``values[:count]`` (int64), modulo ``2**hash_bits``."""
    h = _FNV_OFFSET
    for j in range(count):
        v = np.uint64(values[j])
        for _ in range(8):
            h = (h ^ (v & _BYTE)) * _FNV_PRIME
            v = v >> np.uint64(8)
    return np.int64(h & ((np.uint64(1) << np.uint64(hash_bits)) - np.uint64(1)))


@njit(cache=True, nogil=True)
def distance_bin(h, c):
    d = abs(h - c)
    if d <= 5:
        return d - 1
    return 5 if d <= 10 else 6


@njit(cache=True, nogil=True)
def _emit(out, count, values, n_values, conjunction, hash_bits):
    """Hash one template instance alone (conjunction 0) and conjoined; returns the new count."""
    values[1] = 0
    out[count] = feature_hash(values, n_values, hash_bits)
    values[1] = conjunction
    out[count + 1] = feature_hash(values, n_values, hash_bits)
    return count + 2


@njit(cache=True, nogil=True)
def _attribute(attrs, tok0, n, position, column):
    if position == 0:
        return ROOT
    if position < 0 or position > n:
        return BOUNDARY
    return attrs[tok0 + position - 1, column]


@njit(cache=True, nogil=True)
def arc_feature_ids(attrs, tok0, n, h, c, hash_bits, values, out):
    """Hashed ids of every template instance of arc ``(h, c)``; returns how many.

    ``attrs`` stacks the token rows of all sentences; the sentence starts at
    row ``tok0`` and has ``n`` tokens.  ``values`` is a scratch of at least 8
    int64; ``out`` must hold ``2 * (35 + n)`` ids.
    """
    hw = _attribute(attrs, tok0, n, h, WORD)
    hp = _attribute(attrs, tok0, n, h, POS)
    hx = _attribute(attrs, tok0, n, h, PREFIX)
    cw = _attribute(attrs, tok0, n, c, WORD)
    cp = _attribute(attrs, tok0, n, c, POS)
    cx = _attribute(attrs, tok0, n, c, PREFIX)
    conjunction = 1 + (1 if h < c else 0) * 8 + distance_bin(h, c)
    count = 0
    # word templates, then (template ids + 20) the same with prefixes
    for variant in range(2):
        if variant == 1:
            if hx == NO_PREFIX and cx == NO_PREFIX:
                break
            hw = hx if hx != NO_PREFIX else hw
            cw = cx if cx != NO_PREFIX else cw
        base = 20 * variant
        values[0] = base + 1
        values[2], values[3] = hw, hp
        count = _emit(out, count, values, 4, conjunction, hash_bits)
        values[0] = base + 2
        count = _emit(out, count, values, 3, conjunction, hash_bits)
        values[0] = base + 4
        values[2], values[3] = cw, cp
        count = _emit(out, count, values, 4, conjunction, hash_bits)
        values[0] = base + 5
        count = _emit(out, count, values, 3, conjunction, hash_bits)
        values[0] = base + 7
        values[2], values[3], values[4], values[5] = hw, hp, cw, cp
        count = _emit(out, count, values, 6, conjunction, hash_bits)
        values[0] = base + 8
        values[2], values[3], values[4] = hp, cw, cp
        count = _emit(out, count, values, 5, conjunction, hash_bits)
        values[0] = base + 9
        values[2], values[3], values[4] = hw, cw, cp
        count = _emit(out, count, values, 5, conjunction, hash_bits)
        values[0] = base + 10
        values[2], values[3], values[4] = hw, hp, cp
        count = _emit(out, count, values, 5, conjunction, hash_bits)
        values[0] = base + 11
        values[2], values[3], values[4] = hw, hp, cw
        count = _emit(out, count, values, 5, conjunction, hash_bits)
        values[0] = base + 12
        values[2], values[3] = hw, cw
        count = _emit(out, count, values, 4, conjunction, hash_bits)
    # POS-only templates
    values[0] = 3
    values[2] = hp
    count = _emit(out, count, values, 3, conjunction, hash_bits)
    values[0] = 6
    values[2] = cp
    count = _emit(out, count, values, 3, conjunction, hash_bits)
    values[0] = 13
    values[2], values[3] = hp, cp
    count = _emit(out, count, values, 4, conjunction, hash_bits)
    # in-between POS
    values[0] = 50
    for b in range(min(h, c) + 1, max(h, c)):
        values[2], values[3], values[4] = hp, _attribute(attrs, tok0, n, b, POS), cp
        count = _emit(out, count, values, 5, conjunction, hash_bits)
    # surrounding POS: 4-grams and their two trigram back-offs
    for shape in range(4):
        h_side = _attribute(attrs, tok0, n, h + (1 if shape % 2 == 0 else -1), POS)
        c_side = _attribute(attrs, tok0, n, c + (-1 if shape < 2 else 1), POS)
        values[0] = 60 + shape
        values[2], values[3], values[4], values[5] = hp, h_side, c_side, cp
        count = _emit(out, count, values, 6, conjunction, hash_bits)
        values[0] = 70 + shape
        values[2], values[3], values[4] = hp, c_side, cp
        count = _emit(out, count, values, 5, conjunction, hash_bits)
        values[0] = 80 + shape
        values[2], values[3], values[4] = hp, h_side, cp
        count = _emit(out, count, values, 5, conjunction, hash_bits)
    return count


@njit(cache=True, nogil=True)
def arc_index(h, c, n):
    """Position of arc ``(h, c)`` among the ``n * n`` parts of a sentence of ``n`` tokens."""
    return (c - 1) * n + (h if h < c else h - 1)


@njit(cache=True, nogil=True)
def arc_part_scores(data, i, w, scale, out):
    attrs, unit_offsets, hash_bits = data[0], data[1], data[2]
    tok0 = unit_offsets[i]
    n = unit_offsets[i + 1] - tok0
    values = np.zeros(8, dtype=np.int64)
    ids = np.empty(2 * (35 + n), dtype=np.int64)
    scaled = scale.shape[0] > 0
    for c in range(1, n + 1):
        for h in range(n + 1):
            if h == c:
                continue
            count = arc_feature_ids(attrs, tok0, n, h, c, hash_bits, values, ids)
            total = 0.0
            for j in range(count):
                total += w[ids[j]] * scale[ids[j]] if scaled else w[ids[j]]
            out[arc_index(h, c, n)] = total


@njit(cache=True, nogil=True)
def arc_add_features(data, i, coef, scale, w):
    attrs, unit_offsets, hash_bits = data[0], data[1], data[2]
    tok0 = unit_offsets[i]
    n = unit_offsets[i + 1] - tok0
    values = np.zeros(8, dtype=np.int64)
    ids = np.empty(2 * (35 + n), dtype=np.int64)
    scaled = scale.shape[0] > 0
    for c in range(1, n + 1):
        for h in range(n + 1):
            if h == c:
                continue
            value = coef[arc_index(h, c, n)]
            if value == 0.0:
                continue
            count = arc_feature_ids(attrs, tok0, n, h, c, hash_bits, values, ids)
            for j in range(count):
                w[ids[j]] += value * scale[ids[j]] if scaled else value
