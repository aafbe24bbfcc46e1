"""Per-example numba operations of the semi-Markov chain (see ``structure.py`` for the layout)."""

from collections import namedtuple

import numpy as np
from numba import njit

from .._token_kernels import TokenData, _add_node_features, _node_scores

FIRST, INSIDE, LAST, SINGLE, FIRST_AFTER_SAME, SINGLE_AFTER_SAME = range(6)


#: Kernel data: the token features and offsets as :class:`.._token_kernels.TokenData` holds
#: them, the number of segment labels, the longest segment, the segment label of ``O`` (one
#: token per segment; -1 if there is none) and how tags map to segments and back: each tag's
#: segment label, whether it starts (B-, S-) or ends (E-, S-) its segment, and the tag of a
#: segment's token by position (``FIRST`` ... ``SINGLE_AFTER_SAME``).
SemiMarkovData = namedtuple("SemiMarkovData", TokenData._fields[:6] + (
    "n_labels", "max_length", "outside", "tag_label", "tag_opens", "tag_closes",
    "segment_tags"))


@njit(cache=True, nogil=True, inline="always")
def _shape(data, i):
    """Tokens, first token, labels, longest segment and the segment parts' count."""
    tok0 = data.unit_offsets[i]
    n_tokens = data.unit_offsets[i + 1] - tok0
    L, M = data.n_labels, data.max_length
    return n_tokens, tok0, L, M, n_tokens * M * L


@njit(cache=True, nogil=True, inline="always")
def _scaled(w, scale, r):
    return w[r] * scale[r] if scale.shape[0] > 0 else w[r]


@njit(cache=True, nogil=True)
def semimarkov_part_scores(data, i, w, scale, out):
    T, tok0, L, M, n_segment = _shape(data, i)
    node = np.empty((T, 3 * L))  # token scores of the sum, first-token and last-token weights
    _node_scores(data.values, data.indices, data.indptr, data.dense_width, tok0, T, 3 * L, w,
                 scale, node)
    prefix = np.zeros((T + 1, L))
    for t in range(T):
        for label in range(L):
            prefix[t + 1, label] = prefix[t, label] + node[t, label]
    lengths = data.n_features * 3 * L
    for s in range(T):
        for length in range(1, M + 1):
            for label in range(L):
                r = ((s * M) + length - 1) * L + label
                if s + length > T:
                    out[r] = 0.0
                    continue
                out[r] = (prefix[s + length, label] - prefix[s, label] + node[s, L + label]
                          + node[s + length - 1, 2 * L + label]
                          + _scaled(w, scale, lengths + label * M + length - 1))
    tail = lengths + L * M
    for r in range(out.shape[0] - n_segment):
        out[n_segment + r] = _scaled(w, scale, tail + r)


@njit(cache=True, nogil=True)
def semimarkov_add_features(data, i, coef, scale, w):
    T, tok0, L, M, n_segment = _shape(data, i)
    token_coef = np.zeros((T, 3 * L))
    change = np.zeros((T + 1, L))  # the sum weights' coefficients, as differences over tokens
    lengths = data.n_features * 3 * L
    for s in range(T):
        for length in range(1, min(M, T - s) + 1):
            for label in range(L):
                c = coef[((s * M) + length - 1) * L + label]
                if c == 0.0:
                    continue
                change[s, label] += c
                change[s + length, label] -= c
                token_coef[s, L + label] += c
                token_coef[s + length - 1, 2 * L + label] += c
                w[lengths + label * M + length - 1] += c * (
                    scale[lengths + label * M + length - 1] if scale.shape[0] > 0 else 1.0)
    for label in range(L):
        running = 0.0
        for t in range(T):
            running += change[t, label]
            token_coef[t, label] = running
    _add_node_features(data.values, data.indices, data.indptr, data.dense_width, tok0, T, 3 * L,
                       token_coef, scale, w)
    tail = lengths + L * M
    for r in range(coef.shape[0] - n_segment):
        w[tail + r] += coef[n_segment + r] * (scale[tail + r] if scale.shape[0] > 0 else 1.0)


@njit(cache=True, nogil=True, inline="always")
def opens_segment(data, previous_tag, tag):
    """Whether ``tag`` starts a segment after ``previous_tag`` (as conlleval reads chunks)."""
    label, previous = data.tag_label[tag], data.tag_label[previous_tag]
    return (label == data.outside or previous == data.outside or label != previous
            or data.tag_opens[tag] or data.tag_closes[previous_tag])


@njit(cache=True, nogil=True)
def semimarkov_encode(data, i, y, z_out):
    T, _, L, M, n_segment = _shape(data, i)
    z_out[:] = 0.0
    start, previous_label = 0, -1
    for t in range(1, T + 1):
        if t < T and not opens_segment(data, y[t - 1], y[t]):
            continue
        label, length = data.tag_label[y[start]], t - start
        if length > M:
            raise ValueError("a segment is longer than max_length (check_outputs rejects it)")
        z_out[((start * M) + length - 1) * L + label] += 1.0
        if previous_label < 0:
            z_out[n_segment + L * L + label] += 1.0
        else:
            z_out[n_segment + previous_label * L + label] += 1.0
        start, previous_label = t, label
    z_out[n_segment + L * L + L + previous_label] += 1.0


@njit(cache=True, nogil=True)
def semimarkov_decode(data, i, z, y_out):
    """The tags of the segments that ``z`` holds (at each segment start, its largest part)."""
    T, _, L, M, _ = _shape(data, i)
    s, previous = 0, -1
    while s < T:
        best, best_length, best_label = -np.inf, 1, 0
        for length in range(1, min(M, T - s) + 1):
            for label in range(L):
                value = z[((s * M) + length - 1) * L + label]
                if value > best:
                    best, best_length, best_label = value, length, label
        after_same = best_label == previous
        tags = data.segment_tags[best_label]
        if best_length == 1:
            y_out[s] = tags[SINGLE_AFTER_SAME] if after_same else tags[SINGLE]
        else:
            y_out[s] = tags[FIRST_AFTER_SAME] if after_same else tags[FIRST]
            for t in range(s + 1, s + best_length - 1):
                y_out[t] = tags[INSIDE]
            y_out[s + best_length - 1] = tags[LAST]
        s, previous = s + best_length, best_label


@njit(cache=True, nogil=True)
def semimarkov_hypergraph_size(data, i):
    T, _, L, M, _ = _shape(data, i)
    return 3 * L * T + 1, T * (L * L + L + 2 * M * L) + L


@njit(cache=True, nogil=True, inline="always")
def _renderable(data, label, length, after_same):
    """Whether the tags exist to write a segment (after one of the same label)."""
    tags = data.segment_tags[label]
    if length == 1:
        return tags[SINGLE_AFTER_SAME if after_same else SINGLE] >= 0
    return (tags[FIRST_AFTER_SAME if after_same else FIRST] >= 0 and tags[LAST] >= 0
            and (length == 2 or tags[INSIDE] >= 0))


@njit(cache=True, nogil=True, inline="always")
def _edge(edges, n, head, tail, part):
    edges[n, 0], edges[n, 1], edges[n, 2], edges[n, 3], edges[n, 4] = head, tail, -1, part, -1
    return n + 1


@njit(cache=True, nogil=True)
def semimarkov_hypergraph(data, i, edges):
    """The forward recursion over segments, with the transition factored out of the
    segment: at each token ``p``, node ``3 L p + l`` (the *entry* of label ``l`` at ``p``)
    holds the segmentations of tokens ``0..p-1`` followed by a transition into ``l``, and
    node ``3 L p + 2 L + l`` those of tokens ``0..p`` whose last segment has label ``l``.
    A label whose tags write a segment differently after one of the same label (IOB1's
    ``B-X``) has a second entry, ``3 L p + L + l``, from that label alone; a segment that
    the tags cannot write, or an ``O`` segment of more than one token, has no edge.
    ``O(T (L^2 + max_length L))`` edges."""
    T, _, L, M, n_segment = _shape(data, i)
    transitions, starts, ends = n_segment, n_segment + L * L, n_segment + L * L + L
    split = np.zeros(L, dtype=np.bool_)  # labels whose segments depend on the previous label
    for label in range(L):
        for length in range(1, M + 1):
            split[label] |= (_renderable(data, label, length, True)
                             != _renderable(data, label, length, False))
    n = 0
    for p in range(T):
        entries, ends_at = 3 * L * p, 3 * L * p + 2 * L
        for label in range(L):
            if p == 0:
                n = _edge(edges, n, entries + label, -1, starts + label)
                continue
            for previous in range(L):
                if not (split[label] and previous == label):
                    n = _edge(edges, n, entries + label, ends_at - 3 * L + previous,
                              transitions + previous * L + label)
        for label in range(L):
            if p > 0 and split[label]:
                n = _edge(edges, n, entries + L + label, ends_at - 3 * L + label,
                          transitions + label * L + label)
        for label in range(L):
            longest = 1 if label == data.outside else min(M, p + 1)
            for length in range(1, longest + 1):
                s = p - length + 1
                part = ((s * M) + length - 1) * L + label
                if _renderable(data, label, length, False):
                    n = _edge(edges, n, ends_at + label, 3 * L * s + label, part)
                if split[label] and s > 0 and _renderable(data, label, length, True):
                    n = _edge(edges, n, ends_at + label, 3 * L * s + L + label, part)
    for label in range(L):
        n = _edge(edges, n, 3 * L * T, 3 * L * (T - 1) + 2 * L + label, ends + label)
    return n


@njit(cache=True, nogil=True)
def segment_losses(data, Y, part_offsets, token_loss, ends_marked, out):
    """Part losses of every example: per token (tokens whose segment label, start or, when
    ``ends_marked``, end differ from the truth's), or per segment (0 for a true segment, else 1)."""
    for i in range(part_offsets.shape[0] - 1):
        T, _, L, M, n_segment = _shape(data, i)
        y = Y[data.unit_offsets[i]:data.unit_offsets[i + 1]]
        starts = np.zeros(T + 1, dtype=np.bool_)
        starts[0] = starts[T] = True
        for t in range(1, T):
            starts[t] = opens_segment(data, y[t - 1], y[t])
        ends = np.roll(starts, -1)[:T]
        losses = out[part_offsets[i]:part_offsets[i + 1]]
        losses[:] = 0.0
        for s in range(T):
            for length in range(1, min(M, T - s) + 1):
                e = s + length - 1
                true_segment = starts[s] and starts[s + length]
                for t in range(s + 1, s + length):
                    true_segment = true_segment and not starts[t]
                for label in range(L):
                    r = ((s * M) + length - 1) * L + label
                    if not token_loss:
                        losses[r] = 0.0 if true_segment and data.tag_label[y[s]] == label else 1.0
                        continue
                    for t in range(s, e + 1):
                        if (data.tag_label[y[t]] != label or starts[t] != (t == s)
                                or (ends_marked and ends[t] != (t == e))):
                            losses[r] += 1.0
