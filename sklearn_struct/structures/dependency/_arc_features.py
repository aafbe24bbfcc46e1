"""First-order arc features of McDonald, Crammer & Pereira (2005), hashed inside numba.

Tokens arrive as integer attribute rows ``(WORD, POS, PREFIX, PUNCTUATION[,
SECOND_POS])`` (:class:`~sklearn_struct.preprocessing.DependencyTokenEncoder`),
``SECOND_POS`` the tag of a second tag set (XPOS next to UPOS); the root is
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

with a second tag set, every template holding a POS once more with its tags
(as MSTParser uses coarse and fine tags); every one alone and conjoined with
the arc direction and a distance bin (1, 2, 3, 4, 5, 6-10, more than 10).  A
feature is a hash of its template id, its attribute ids and the conjunction
code (one multiply-xorshift round per 64-bit id and the MurmurHash3 finaliser:
a tenth of the work of byte-wise FNV-1a, which dominated training), cut to
``hash_bits`` bits; its value is 1.
Outside training, features are generated on the fly: the arcs of a sentence are
never stored as a feature matrix.  For a fit, :func:`arc_feature_cache` hashes
every arc once and keeps, per sentence, the distinct ids it uses and, per arc,
the positions of its ids among them.  A visit then gathers the sentence's
weights once into a vector small enough for the processor's cache, and sums,
accumulates and scatters there: an online EG visit reads every arc three to
four times, and random reads of the large weight vector, not the arithmetic,
are what it costs.
"""

from collections import namedtuple

import numpy as np
from numba import njit

from .._hashing import SEED, absorb, finish

ROOT = 1
BOUNDARY = 2
NO_PREFIX = 3
#: First id free for vocabulary entries (0 is the unknown value).
FIRST_ID = 4
#: Columns of a token row; PUNCTUATION is read by the loss only, SECOND_POS is optional.
WORD, POS, PREFIX, PUNCTUATION, SECOND_POS = 0, 1, 2, 3, 4


#: Kernel data of dependency trees: the token attribute rows and offsets, the weight
#: vector's ``2 ** hash_bits`` and whether one word alone attaches to the root (whether
#: trees are projective picks the kernel operations instead), then the feature ids cached
#: for a fit (:func:`arc_feature_cache`; arrays of length 0 without them).
ArcData = namedtuple("ArcData", ("attrs", "unit_offsets", "hash_bits", "single_root",
                                 "distinct_ids", "distinct_offsets", "local_ids", "id_offsets",
                                 "arc_offsets"))


@njit(cache=True, nogil=True)
def _prefix_hash(values, count):
    """Running hash of the template id ``values[0]`` and the attributes ``values[2:count]``."""
    h = absorb(SEED, values[0])
    for j in range(2, count):
        h = absorb(h, values[j])
    return h


@njit(cache=True, nogil=True)
def feature_hash(values, count, hash_bits):
    """Id in ``0 .. 2**hash_bits - 1`` of the feature ``values[:count]``.

    ``values`` is ``(template id, conjunction code, attribute ids...)``.  The
    conjunction code is absorbed last, so that a template's plain (code 0) and
    conjoined copies share the hashing of its attributes.
    """
    return finish(absorb(_prefix_hash(values, count), values[1]), hash_bits)


@njit(cache=True, nogil=True)
def distance_bin(h, c):
    d = abs(h - c)
    if d <= 5:
        return d - 1
    return 5 if d <= 10 else 6


@njit(cache=True, nogil=True)
def _emit(out, count, values, n_values, conjunction, hash_bits):
    """Hash one template instance alone (conjunction 0) and conjoined; returns the new count."""
    h = _prefix_hash(values, n_values)
    out[count] = finish(absorb(h, 0), hash_bits)
    out[count + 1] = finish(absorb(h, conjunction), hash_bits)
    return count + 2


@njit(cache=True, nogil=True)
def token_attribute(attrs, tok0, n, position, column):
    """Column ``column`` of word ``position`` of the sentence of ``n`` words starting at row
    ``tok0``: ``ROOT`` at position 0, ``BOUNDARY`` outside the sentence."""
    if position == 0:
        return ROOT
    if position < 0 or position > n:
        return BOUNDARY
    return attrs[tok0 + position - 1, column]


@njit(cache=True, nogil=True)
def arc_feature_ids(attrs, tok0, n, h, c, hash_bits, values, out):
    """Hashed ids of every template instance of arc ``(h, c)``; returns how many.

    ``attrs`` stacks the token rows of all sentences; the sentence starts at
    row ``tok0`` and has ``n`` tokens.  With a fifth column (a second tag set),
    every template holding a POS is instantiated once per tag set.  ``values``
    is a scratch of at least 8 int64; ``out`` must hold
    :func:`max_arc_features` ``(n)`` ids.
    """
    conjunction = 1 + (1 if h < c else 0) * 8 + distance_bin(h, c)
    hx = token_attribute(attrs, tok0, n, h, PREFIX)
    cx = token_attribute(attrs, tok0, n, c, PREFIX)
    count = 0
    for tag_set in range(2 if attrs.shape[1] > SECOND_POS else 1):
        column = POS if tag_set == 0 else SECOND_POS
        offset = 100 * tag_set  # the second tag set's templates get their own ids
        hw = token_attribute(attrs, tok0, n, h, WORD)
        cw = token_attribute(attrs, tok0, n, c, WORD)
        hp = token_attribute(attrs, tok0, n, h, column)
        cp = token_attribute(attrs, tok0, n, c, column)
        # word templates, then (template ids + 20) the same with prefixes; the
        # templates without a POS (2, 5, 12) only with the first tag set
        for variant in range(2):
            if variant == 1:
                if hx == NO_PREFIX and cx == NO_PREFIX:
                    break
                hw = hx if hx != NO_PREFIX else hw
                cw = cx if cx != NO_PREFIX else cw
            base = offset + 20 * variant
            values[0] = base + 1
            values[2], values[3] = hw, hp
            count = _emit(out, count, values, 4, conjunction, hash_bits)
            if tag_set == 0:
                values[0] = base + 2
                count = _emit(out, count, values, 3, conjunction, hash_bits)
            values[0] = base + 4
            values[2], values[3] = cw, cp
            count = _emit(out, count, values, 4, conjunction, hash_bits)
            if tag_set == 0:
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
            if tag_set == 0:
                values[0] = base + 12
                values[2], values[3] = hw, cw
                count = _emit(out, count, values, 4, conjunction, hash_bits)
        # POS-only templates
        values[0] = offset + 3
        values[2] = hp
        count = _emit(out, count, values, 3, conjunction, hash_bits)
        values[0] = offset + 6
        values[2] = cp
        count = _emit(out, count, values, 3, conjunction, hash_bits)
        values[0] = offset + 13
        values[2], values[3] = hp, cp
        count = _emit(out, count, values, 4, conjunction, hash_bits)
        # in-between POS
        values[0] = offset + 50
        for b in range(min(h, c) + 1, max(h, c)):
            values[2], values[3], values[4] = hp, token_attribute(attrs, tok0, n, b, column), cp
            count = _emit(out, count, values, 5, conjunction, hash_bits)
        # surrounding POS: 4-grams and their two trigram back-offs
        for shape in range(4):
            h_side = token_attribute(attrs, tok0, n, h + (1 if shape % 2 == 0 else -1), column)
            c_side = token_attribute(attrs, tok0, n, c + (-1 if shape < 2 else 1), column)
            values[0] = offset + 60 + shape
            values[2], values[3], values[4], values[5] = hp, h_side, c_side, cp
            count = _emit(out, count, values, 6, conjunction, hash_bits)
            values[0] = offset + 70 + shape
            values[2], values[3], values[4] = hp, c_side, cp
            count = _emit(out, count, values, 5, conjunction, hash_bits)
            values[0] = offset + 80 + shape
            values[2], values[3], values[4] = hp, h_side, cp
            count = _emit(out, count, values, 5, conjunction, hash_bits)
    return count


@njit(cache=True, nogil=True)
def max_arc_features(n):
    """An upper bound on the ids of one arc in a sentence of ``n`` tokens, two tag sets."""
    return 4 * (35 + n)


@njit(cache=True, nogil=True)
def arc_index(h, c, n):
    """Position of arc ``(h, c)`` among the ``n * n`` parts of a sentence of ``n`` tokens."""
    return (c - 1) * n + (h if h < c else h - 1)


@njit(cache=True, nogil=True, inline="always")
def arc_of_index(r, n):
    """The arc ``(h, c)`` at position ``r`` (the inverse of :func:`arc_index`)."""
    c = r // n + 1
    h = r % n
    return (h + 1 if h >= c else h), c


def no_feature_cache():
    """The empty cache fields of :data:`ArcData` (features hashed on every visit)."""
    empty = np.empty(0, dtype=np.int64)
    return np.empty(0, dtype=np.int32), empty, np.empty(0, dtype=np.int32), empty, empty


@njit(cache=True, nogil=True)
def _hash_arcs(attrs, tok0, n, hash_bits, id_offsets, a0, out):
    """Every arc's ids of one sentence in part order into ``out``; with ``out`` empty,
    only their counts into ``id_offsets[a0 + 1:a0 + n * n + 1]`` (as offsets)."""
    values = np.zeros(8, dtype=np.int64)
    ids = np.empty(max_arc_features(n), dtype=np.int32)
    for r in range(n * n):
        h, c = arc_of_index(r, n)
        count = arc_feature_ids(attrs, tok0, n, h, c, hash_bits, values, ids)
        if out.shape[0] == 0:
            id_offsets[a0 + r + 1] = id_offsets[a0 + r] + count
        else:
            start = id_offsets[a0 + r] - id_offsets[a0]
            out[start:start + count] = ids[:count]


@njit(cache=True, nogil=True)
def localize(ids, local_out):
    """The distinct values of ``ids`` (non-negative) in order of appearance; each id's
    position among them into ``local_out``.

    An open-addressing table (sorting cost 20 times as long) of one int64 per slot, the
    id above its position, so that a probe reads one cache line; it has at least as many
    slots as ``ids`` has values, hence more than the distinct ones (a sentence's ids are
    about half distinct: a table twice that size was slower, its probes missing the
    processor's cache more often than they collided).
    """
    size = 1
    while size < ids.shape[0]:
        size *= 2
    table = np.full(size, -1, dtype=np.int64)
    distinct = np.empty(ids.shape[0], dtype=np.int32)
    count = 0
    for j in range(ids.shape[0]):
        key = np.int64(ids[j])
        slot = (key * 2654435761) & (size - 1)  # Knuth's multiplicative hash
        while table[slot] != -1 and (table[slot] >> 32) != key:
            slot = (slot + 1) & (size - 1)
        if table[slot] == -1:
            table[slot] = (key << 32) | count
            distinct[count] = ids[j]
            count += 1
        local_out[j] = table[slot] & 0xFFFFFFFF
    return distinct[:count].copy()


@njit(cache=True, nogil=True)
def _sort_within_arcs(local_ids, offsets, n_distinct):
    """Sort each arc's positions ``local_ids[offsets[a]:offsets[a + 1]]`` (all below
    ``n_distinct``) in place: a counting sort of the sentence's positions, dealt back to
    their arcs in that order (a comparison sort per arc took as long as the hashing)."""
    first, last = offsets[0], offsets[-1]
    starts = np.zeros(n_distinct + 1, dtype=np.int64)
    for j in range(first, last):
        starts[local_ids[j] + 1] += 1
    for k in range(n_distinct):
        starts[k + 1] += starts[k]
    arc_of = np.empty(last - first, dtype=np.int32)
    for a in range(offsets.shape[0] - 1):
        for j in range(offsets[a], offsets[a + 1]):
            arc_of[starts[local_ids[j]]] = a
            starts[local_ids[j]] += 1
    ends = offsets[:-1].copy()  # each arc's next free slot
    position = 0
    for k in range(n_distinct):
        for _ in range(position, starts[k]):
            a = arc_of[position]
            local_ids[ends[a]] = k
            ends[a] += 1
            position += 1


@njit(cache=True, nogil=True)
def arc_feature_cache(attrs, unit_offsets, hash_bits):
    """Hash every arc of every sentence once, for a fit.

    Returns ``(distinct_ids, distinct_offsets, local_ids, id_offsets,
    arc_offsets)``: sentence ``i`` uses the distinct ids
    ``distinct = distinct_ids[distinct_offsets[i]:distinct_offsets[i + 1]]``;
    its arc at part position ``r`` has the ids ``distinct[local_ids[
    id_offsets[a]:id_offsets[a + 1]]]`` with ``a = arc_offsets[i] + r``.  Each arc's
    positions are sorted: a visit reads the gathered weights in order, and the small steps
    between them take few bytes where a streamed cache codes them on disk.
    """
    n_sentences = unit_offsets.shape[0] - 1
    arc_offsets = np.zeros(n_sentences + 1, dtype=np.int64)
    for i in range(n_sentences):
        n = unit_offsets[i + 1] - unit_offsets[i]
        arc_offsets[i + 1] = arc_offsets[i] + n * n
    id_offsets = np.zeros(arc_offsets[-1] + 1, dtype=np.int64)
    no_output = np.empty(0, dtype=np.int32)
    for i in range(n_sentences):  # counts first, to allocate exactly
        tok0 = unit_offsets[i]
        _hash_arcs(attrs, tok0, unit_offsets[i + 1] - tok0, hash_bits, id_offsets,
                   arc_offsets[i], no_output)
    local_ids = np.empty(id_offsets[-1], dtype=np.int32)
    distinct_offsets = np.zeros(n_sentences + 1, dtype=np.int64)
    distinct_of = []
    for i in range(n_sentences):
        tok0 = unit_offsets[i]
        first, last = id_offsets[arc_offsets[i]], id_offsets[arc_offsets[i + 1]]
        ids = np.empty(last - first, dtype=np.int32)
        _hash_arcs(attrs, tok0, unit_offsets[i + 1] - tok0, hash_bits, id_offsets,
                   arc_offsets[i], ids)
        distinct = localize(ids, local_ids[first:last])
        _sort_within_arcs(local_ids, id_offsets[arc_offsets[i]:arc_offsets[i + 1] + 1],
                          distinct.shape[0])
        distinct_of.append(distinct)
        distinct_offsets[i + 1] = distinct_offsets[i] + distinct.shape[0]
    distinct_ids = np.empty(distinct_offsets[-1], dtype=np.int32)
    for i in range(n_sentences):
        distinct_ids[distinct_offsets[i]:distinct_offsets[i + 1]] = distinct_of[i]
    return distinct_ids, distinct_offsets, local_ids, id_offsets, arc_offsets


@njit(cache=True, nogil=True, inline="always")
def _sentence(data, i):
    """Sentence ``i``'s attributes, first token, length and hash bits, with buffers for
    the ids of one arc."""
    attrs, unit_offsets, hash_bits = data.attrs, data.unit_offsets, data.hash_bits
    tok0 = unit_offsets[i]
    n = unit_offsets[i + 1] - tok0
    return (attrs, tok0, n, hash_bits, np.zeros(8, dtype=np.int64),
            np.empty(max_arc_features(n), dtype=np.int32))


@njit(cache=True, nogil=True, inline="always")
def _arc_score(attrs, tok0, n, h, c, hash_bits, values, ids, w, scale):
    """``(scale * w) . phi(arc (h, c))``, hashing its features."""
    count = arc_feature_ids(attrs, tok0, n, h, c, hash_bits, values, ids)
    total = 0.0
    for j in range(count):
        total += w[ids[j]] * scale[ids[j]] if scale.shape[0] > 0 else w[ids[j]]
    return total


@njit(cache=True, nogil=True, inline="always")
def _add_arc(attrs, tok0, n, h, c, hash_bits, values, ids, value, scale, w):
    """``w += value * scale * phi(arc (h, c))``, hashing its features."""
    count = arc_feature_ids(attrs, tok0, n, h, c, hash_bits, values, ids)
    for j in range(count):
        w[ids[j]] += value * scale[ids[j]] if scale.shape[0] > 0 else value


@njit(cache=True, nogil=True, inline="always")
def _distinct(data, i):
    """Cached sentence ``i``'s distinct ids (empty without a cache)."""
    if data.arc_offsets.shape[0] == 0:
        return data.distinct_ids[:0]
    return data.distinct_ids[data.distinct_offsets[i]:data.distinct_offsets[i + 1]]


@njit(cache=True, nogil=True, inline="always")
def _local(data, i, r):
    """Cached sentence ``i``'s arc at part position ``r``: its ids' positions among the
    sentence's distinct ids."""
    a = data.arc_offsets[i] + r
    return data.local_ids[data.id_offsets[a]:data.id_offsets[a + 1]]


@njit(cache=True, nogil=True)
def arc_local_features(data, i, coef, local):
    """``local += F_i coef`` of cached sentence ``i``, on its distinct ids (positions
    ``0..`` of ``local``)."""
    for r in range(coef.shape[0]):
        if coef[r] != 0.0:
            for k in _local(data, i, r):
                local[k] += coef[r]


@njit(cache=True, nogil=True)
def arc_local_scores(data, i, local_w, out):
    """Arc scores of cached sentence ``i`` from its weights gathered on its distinct ids."""
    for r in range(out.shape[0]):
        total = 0.0
        for k in _local(data, i, r):
            total += local_w[k]
        out[r] = total


@njit(cache=True, nogil=True)
def gather_weights(w, scale, ids, local_w):
    """``local_w = (scale * w)[ids]``: the weights of a cached sentence's distinct ids."""
    for j in range(ids.shape[0]):
        local_w[j] = w[ids[j]] * scale[ids[j]] if scale.shape[0] > 0 else w[ids[j]]


@njit(cache=True, nogil=True)
def scatter_features(local, scale, ids, w):
    """``w[ids] += scale[ids] * local``: add features summed on distinct ids (the zeros
    skipped: a perceptron's update reaches a few of a sentence's ids); returns the squared
    norm of what was added, ``||scale[ids] * local||^2``."""
    scaled = scale.shape[0] > 0
    total = 0.0
    for j in range(ids.shape[0]):
        if local[j] != 0.0:
            value = local[j] * scale[ids[j]] if scaled else local[j]
            w[ids[j]] += value
            total += value * value
    return total


@njit(cache=True, nogil=True)
def arc_part_scores(data, i, w, scale, out):
    distinct = _distinct(data, i)
    if distinct.shape[0] == 0:  # no cache: every arc hashed again
        arc_part_scores_at(data, i, w, scale, np.arange(out.shape[0]), out, out)
        return
    local_w = np.empty(distinct.shape[0])
    gather_weights(w, scale, distinct, local_w)
    arc_local_scores(data, i, local_w, out)


@njit(cache=True, nogil=True)
def arc_add_features(data, i, coef, scale, w):
    distinct = _distinct(data, i)
    if distinct.shape[0] > 0:
        scaled = scale.shape[0] > 0
        touched = 0  # ids of the non-zero arcs: a perceptron's update has a few arcs only
        for r in range(coef.shape[0]):
            if coef[r] != 0.0:
                touched += _local(data, i, r).shape[0]
        if touched < distinct.shape[0]:
            for r in range(coef.shape[0]):
                if coef[r] != 0.0:
                    for k in _local(data, i, r):
                        w[distinct[k]] += coef[r] * scale[distinct[k]] if scaled else coef[r]
            return
        local = np.zeros(distinct.shape[0])
        arc_local_features(data, i, coef, local)
        scatter_features(local, scale, distinct, w)
        return
    attrs, tok0, n, hash_bits, values, ids = _sentence(data, i)
    for r in range(coef.shape[0]):
        if coef[r] != 0.0:
            h, c = arc_of_index(r, n)
            _add_arc(attrs, tok0, n, h, c, hash_bits, values, ids, coef[r], scale, w)


@njit(cache=True, nogil=True)
def arc_part_scores_at(data, i, w, scale, parts, out, scratch):
    """Scores of the listed arcs alone (``scratch`` unused)."""
    distinct = _distinct(data, i)
    if distinct.shape[0] > 0:
        scaled = scale.shape[0] > 0
        for j in range(parts.shape[0]):
            total = 0.0
            for k in _local(data, i, parts[j]):
                total += w[distinct[k]] * scale[distinct[k]] if scaled else w[distinct[k]]
            out[j] = total
        return
    attrs, tok0, n, hash_bits, values, ids = _sentence(data, i)
    for j in range(parts.shape[0]):
        h, c = arc_of_index(parts[j], n)
        out[j] = _arc_score(attrs, tok0, n, h, c, hash_bits, values, ids, w, scale)


@njit(cache=True, nogil=True)
def arc_add_features_at(data, i, parts, coef, scale, w, scratch):
    """The listed arcs' features alone (``scratch`` unused)."""
    distinct = _distinct(data, i)
    if distinct.shape[0] > 0:
        scaled = scale.shape[0] > 0
        for j in range(parts.shape[0]):
            if coef[j] != 0.0:
                for k in _local(data, i, parts[j]):
                    w[distinct[k]] += coef[j] * scale[distinct[k]] if scaled else coef[j]
        return
    attrs, tok0, n, hash_bits, values, ids = _sentence(data, i)
    for j in range(parts.shape[0]):
        if coef[j] != 0.0:
            h, c = arc_of_index(parts[j], n)
            _add_arc(attrs, tok0, n, h, c, hash_bits, values, ids, coef[j], scale, w)


@njit(cache=True, nogil=True, inline="always")
def touch_feature(w_scratch, index, value, scale, read):
    """Add ``value`` into ``w_scratch[index]``, or (``read``) return its scaled square and
    clear it (once: later reads of the same index find 0)."""
    if not read:
        w_scratch[index] += value
        return 0.0
    total = w_scratch[index]
    if total == 0.0:
        return 0.0
    w_scratch[index] = 0.0
    total = total * scale[index] if scale.shape[0] > 0 else total
    return total * total


@njit(cache=True, nogil=True)
def arc_feature_pass(data, i, dmu, scale, w_scratch, read):
    """One pass over the features of the arcs with ``dmu != 0``: add ``dmu`` into
    ``w_scratch`` at their ids, or (``read``) sum the scaled squares of ``w_scratch`` there
    and clear it.  Two passes give ``||scale * F_i dmu||^2`` with ``w_scratch`` zero on
    entry and on exit, also when other parts (siblings) add to it between them."""
    distinct = _distinct(data, i)
    total = 0.0
    if distinct.shape[0] > 0:
        for r in range(dmu.shape[0]):
            if dmu[r] != 0.0:
                for k in _local(data, i, r):
                    total += touch_feature(w_scratch, distinct[k], dmu[r], scale, read)
        return total
    attrs, tok0, n, hash_bits, values, ids = _sentence(data, i)
    for r in range(dmu.shape[0]):
        if dmu[r] != 0.0:
            h, c = arc_of_index(r, n)
            for j in range(arc_feature_ids(attrs, tok0, n, h, c, hash_bits, values, ids)):
                total += touch_feature(w_scratch, ids[j], dmu[r], scale, read)
    return total


@njit(cache=True, nogil=True)
def arc_add_features_norm(data, i, coef, scale, w, w_scratch, part_scratch):
    """:func:`arc_add_features`, returning ``||scale * F_i coef||^2``: on a cached sentence
    from ``F_i coef`` summed on its distinct ids as it adds them, otherwise from two passes
    of :func:`arc_feature_pass` (``part_scratch`` unused)."""
    distinct = _distinct(data, i)
    if distinct.shape[0] > 0:
        local = np.zeros(distinct.shape[0])
        arc_local_features(data, i, coef, local)
        return scatter_features(local, scale, distinct, w)
    arc_feature_pass(data, i, coef, scale, w_scratch, False)
    total = arc_feature_pass(data, i, coef, scale, w_scratch, True)
    arc_add_features(data, i, coef, scale, w)
    return total
