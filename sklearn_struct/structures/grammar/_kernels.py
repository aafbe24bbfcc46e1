"""Per-sentence numba operations of weighted context-free grammars in Chomsky normal form.

Kernel data (built by ``WeightedCFGStructure.kernel_data``, a ``GrammarData``)::

    (tokens, token_offsets, hash_bits, binary_rules, lexical_rules, lexical_offsets,
     is_root, n_symbols)

``tokens[k] = (word id, tag id)`` for the words of all sentences, stacked.

Parts of a sentence of ``n`` words, in this order:

* binary anchored rules ``<A -> B C, s, m, e>`` (words ``s..m-1`` under ``B``,
  ``m..e-1`` under ``C``): spans by length then start, splits ``m`` in
  order, then rules -- ``binary_offset(s, e, n, R) + (m - s - 1) * R + r``;
* lexical anchored rules ``<A -> t_i, i>``: for each word ``i`` the rules of
  its tag, in the grammar's order.

An output (a binary derivation) is ``2n - 1`` *units*: the local index of the
lexical part chosen at each word, then the local index of the binary part of
each of the ``n - 1`` binary constituents, ordered by span length then start.

Features (hashed like the arc features): a binary part fires its rule alone
and crossed with the first and last word and tag of its span, the tags on
each side of its split point and a span-length bucket; a lexical part fires
its rule alone and crossed with its word.
"""

from collections import namedtuple

import numpy as np
from numba import njit

from .._hashing import SEED, absorb, finish

NEG_INF = -np.inf
#: Kernel data of a batch of sentences under a grammar (see the module docstring).
GrammarData = namedtuple("GrammarData", ("tokens", "token_offsets", "hash_bits", "binary_rules",
                                         "lexical_rules", "lexical_offsets", "is_root",
                                         "n_symbols"))


@njit(cache=True, nogil=True)
def binary_offset(s, e, n, n_rules):
    """First local part of span ``(s, e)`` (spans by length, then start)."""
    length = e - s
    offset = 0
    for k in range(2, length):
        offset += (n - k + 1) * (k - 1)
    return (offset + s * (length - 1)) * n_rules


@njit(cache=True, nogil=True)
def n_binary_parts(n, n_rules):
    return binary_offset(0, n + 1, n, n_rules) if n >= 2 else 0


@njit(cache=True, nogil=True)
def length_bucket(length):
    if length <= 5:
        return length
    return 6 if length <= 10 else (7 if length <= 20 else 8)


@njit(cache=True, nogil=True)
def _feature(a, b, c, hash_bits):
    return finish(absorb(absorb(absorb(SEED, a), b), c), hash_bits)


@njit(cache=True, nogil=True)
def binary_feature_ids(tokens, tok0, rule, s, m, e, hash_bits, out):
    """Hashed ids of the features of ``<rule, s, m, e>`` into ``out`` (8 entries)."""
    r = rule + 1
    out[0] = _feature(1, r, 0, hash_bits)
    out[1] = _feature(2, r, tokens[tok0 + s, 0], hash_bits)
    out[2] = _feature(3, r, tokens[tok0 + e - 1, 0], hash_bits)
    out[3] = _feature(4, r, tokens[tok0 + s, 1], hash_bits)
    out[4] = _feature(5, r, tokens[tok0 + e - 1, 1], hash_bits)
    out[5] = _feature(6, r, tokens[tok0 + m - 1, 1], hash_bits)
    out[6] = _feature(7, r, tokens[tok0 + m, 1], hash_bits)
    out[7] = _feature(8, r, length_bucket(e - s), hash_bits)
    return 8


@njit(cache=True, nogil=True)
def lexical_feature_ids(tokens, tok0, rule, i, hash_bits, out):
    r = rule + 1
    out[0] = _feature(11, r, 0, hash_bits)
    out[1] = _feature(12, r, tokens[tok0 + i, 0], hash_bits)
    return 2


@njit(cache=True, nogil=True)
def _visit_parts(data, i, w, scale, coef, out, adjoint):
    """``out[p] = w . phi(p)`` for every part, or (adjoint) ``w += coef[p] phi(p)``."""
    tokens, token_offsets, hash_bits = data.tokens, data.token_offsets, data.hash_bits
    binary_rules, lexical_offsets = data.binary_rules, data.lexical_offsets
    tok0 = token_offsets[i]
    n = token_offsets[i + 1] - tok0
    n_rules = binary_rules.shape[0]
    ids = np.empty(8, dtype=np.int64)
    scaled = scale.shape[0] > 0
    p = 0
    for length in range(2, n + 1):
        for s in range(0, n - length + 1):
            e = s + length
            for m in range(s + 1, e):
                for rule in range(n_rules):
                    count = binary_feature_ids(tokens, tok0, rule, s, m, e, hash_bits, ids)
                    _apply(w, scale, scaled, coef, out, adjoint, p, ids, count)
                    p += 1
    for position in range(n):
        tag = tokens[tok0 + position, 1]
        for k in range(lexical_offsets[tag], lexical_offsets[tag + 1]):
            count = lexical_feature_ids(tokens, tok0, k, position, hash_bits, ids)
            _apply(w, scale, scaled, coef, out, adjoint, p, ids, count)
            p += 1


@njit(cache=True, nogil=True, inline="always")
def _apply(w, scale, scaled, coef, out, adjoint, p, ids, count):
    if adjoint:
        value = coef[p]
        if value != 0.0:
            for j in range(count):
                w[ids[j]] += value * scale[ids[j]] if scaled else value
    else:
        total = 0.0
        for j in range(count):
            total += w[ids[j]] * scale[ids[j]] if scaled else w[ids[j]]
        out[p] = total


@njit(cache=True, nogil=True)
def cfg_part_scores(data, i, w, scale, out):
    _visit_parts(data, i, w, scale, out, out, False)


@njit(cache=True, nogil=True)
def cfg_add_features(data, i, coef, scale, w):
    _visit_parts(data, i, w, scale, coef, coef, True)


@njit(cache=True, nogil=True)
def _log_add(a, b):
    if a == NEG_INF:
        return b
    if b == NEG_INF:
        return a
    return max(a, b) + np.log1p(np.exp(-abs(a - b)))


@njit(cache=True, nogil=True)
def _lexical_base(tokens, tok0, n, lexical_offsets, n_bin):
    base = np.empty(n + 1, dtype=np.int64)
    base[0] = n_bin
    for position in range(n):
        tag = tokens[tok0 + position, 1]
        base[position + 1] = base[position] + lexical_offsets[tag + 1] - lexical_offsets[tag]
    return base


@njit(cache=True, nogil=True, inline="always")
def _sentence(data, i):
    """First token and length of sentence ``i``, and the first lexical part of each word."""
    tok0 = data.token_offsets[i]
    n = data.token_offsets[i + 1] - tok0
    n_binary = n_binary_parts(n, data.binary_rules.shape[0])
    return tok0, n, _lexical_base(data.tokens, tok0, n, data.lexical_offsets, n_binary)


@njit(cache=True, nogil=True)
def cfg_marginals(data, i, theta, mu):
    """Inside-outside in log space over the anchored rules; returns ``log Z``."""
    tokens, binary_rules, lexical_rules = data.tokens, data.binary_rules, data.lexical_rules
    lexical_offsets, is_root, n_sym = data.lexical_offsets, data.is_root, data.n_symbols
    tok0, n, lex_base = _sentence(data, i)
    n_rules = binary_rules.shape[0]
    inside = np.full((n, n + 1, n_sym), NEG_INF)
    for position in range(n):
        tag = tokens[tok0 + position, 1]
        for k in range(lexical_offsets[tag], lexical_offsets[tag + 1]):
            p = lex_base[position] + k - lexical_offsets[tag]
            a = lexical_rules[k, 0]
            inside[position, position + 1, a] = _log_add(inside[position, position + 1, a],
                                                         theta[p])
    for length in range(2, n + 1):
        for s in range(0, n - length + 1):
            e = s + length
            p = binary_offset(s, e, n, n_rules)
            for m in range(s + 1, e):
                for rule in range(n_rules):
                    b, c = binary_rules[rule, 1], binary_rules[rule, 2]
                    value = theta[p] + inside[s, m, b] + inside[m, e, c]
                    a = binary_rules[rule, 0]
                    inside[s, e, a] = _log_add(inside[s, e, a], value)
                    p += 1
    log_z = NEG_INF
    for a in range(n_sym):
        if is_root[a]:
            log_z = _log_add(log_z, inside[0, n, a])
    mu[:] = 0.0
    if log_z == NEG_INF:
        return log_z
    outside = np.full((n, n + 1, n_sym), NEG_INF)
    for a in range(n_sym):
        if is_root[a]:
            outside[0, n, a] = 0.0
    for length in range(n, 1, -1):
        for s in range(0, n - length + 1):
            e = s + length
            p = binary_offset(s, e, n, n_rules)
            for m in range(s + 1, e):
                for rule in range(n_rules):
                    a, b, c = binary_rules[rule, 0], binary_rules[rule, 1], binary_rules[rule, 2]
                    top = outside[s, e, a] + theta[p]
                    if top != NEG_INF:
                        mu[p] = np.exp(top + inside[s, m, b] + inside[m, e, c] - log_z)
                        outside[s, m, b] = _log_add(outside[s, m, b], top + inside[m, e, c])
                        outside[m, e, c] = _log_add(outside[m, e, c], top + inside[s, m, b])
                    p += 1
    for position in range(n):
        tag = tokens[tok0 + position, 1]
        for k in range(lexical_offsets[tag], lexical_offsets[tag + 1]):
            p = lex_base[position] + k - lexical_offsets[tag]
            a = lexical_rules[k, 0]
            mu[p] = np.exp(outside[position, position + 1, a] + theta[p] - log_z)
    return log_z


@njit(cache=True, nogil=True)
def cfg_argmax(data, i, scores, y_out):
    """CKY: the best derivation, as units (see the module docstring)."""
    tokens, binary_rules, lexical_rules = data.tokens, data.binary_rules, data.lexical_rules
    lexical_offsets, is_root, n_sym = data.lexical_offsets, data.is_root, data.n_symbols
    tok0, n, lex_base = _sentence(data, i)
    n_rules = binary_rules.shape[0]
    best = np.full((n, n + 1, n_sym), NEG_INF)
    back = np.full((n, n + 1, n_sym), -1, dtype=np.int64)  # local part of the best rule
    for position in range(n):
        tag = tokens[tok0 + position, 1]
        for k in range(lexical_offsets[tag], lexical_offsets[tag + 1]):
            p = lex_base[position] + k - lexical_offsets[tag]
            a = lexical_rules[k, 0]
            if scores[p] > best[position, position + 1, a]:
                best[position, position + 1, a] = scores[p]
                back[position, position + 1, a] = p
    for length in range(2, n + 1):
        for s in range(0, n - length + 1):
            e = s + length
            p = binary_offset(s, e, n, n_rules)
            for m in range(s + 1, e):
                for rule in range(n_rules):
                    b, c = binary_rules[rule, 1], binary_rules[rule, 2]
                    value = scores[p] + best[s, m, b] + best[m, e, c]
                    a = binary_rules[rule, 0]
                    if value > best[s, e, a]:
                        best[s, e, a] = value
                        back[s, e, a] = p
                    p += 1
    top = -1
    for a in range(n_sym):
        if is_root[a] and back[0, n, a] >= 0 and (top < 0 or best[0, n, a] > best[0, n, top]):
            top = a
    y_out[:] = -1
    if top < 0:
        return  # no derivation: the caller reports it
    # walk down the chosen constituents; binary units go to their (length, start) slot
    stack_s = np.empty(2 * n, dtype=np.int64)
    stack_e = np.empty(2 * n, dtype=np.int64)
    stack_a = np.empty(2 * n, dtype=np.int64)
    spans_s = np.empty(n, dtype=np.int64)
    spans_e = np.empty(n, dtype=np.int64)
    spans_p = np.empty(n, dtype=np.int64)
    n_spans = 0
    depth = 1
    stack_s[0], stack_e[0], stack_a[0] = 0, n, top
    while depth > 0:
        depth -= 1
        s, e, a = stack_s[depth], stack_e[depth], stack_a[depth]
        p = back[s, e, a]
        if e - s == 1:
            y_out[s] = p
            continue
        spans_s[n_spans], spans_e[n_spans], spans_p[n_spans] = s, e, p
        n_spans += 1
        local = p - binary_offset(s, e, n, n_rules)
        m = s + 1 + local // n_rules
        rule = local % n_rules
        stack_s[depth], stack_e[depth], stack_a[depth] = s, m, binary_rules[rule, 1]
        stack_s[depth + 1], stack_e[depth + 1], stack_a[depth + 1] = m, e, binary_rules[rule, 2]
        depth += 2
    order = np.argsort((spans_e[:n_spans] - spans_s[:n_spans]) * (n + 1) + spans_s[:n_spans])
    for u in range(n_spans):
        y_out[n + u] = spans_p[order[u]]


@njit(cache=True, nogil=True)
def cfg_encode(data, i, y, z_out):
    z_out[:] = 0.0
    for u in range(y.shape[0]):
        if y[u] >= 0:  # (-1: no derivation, reported by the batch argmax)
            z_out[y[u]] = 1.0


@njit(cache=True, nogil=True, inline="always")
def _span_node(s, e, n, n_symbols):
    """Node of symbol 0 over words ``s..e-1``: spans by length, then start."""
    length = e - s
    before = (length - 1) * n - (length - 1) * (length - 2) // 2
    return (before + s) * n_symbols


@njit(cache=True, nogil=True)
def cfg_hypergraph_size(data, i):
    token_offsets, binary_rules = data.token_offsets, data.binary_rules
    lexical_rules, n_sym = data.lexical_rules, data.n_symbols
    n = token_offsets[i + 1] - token_offsets[i]
    n_binary = n_binary_parts(n, binary_rules.shape[0])
    return n * (n + 1) // 2 * n_sym + 1, n_binary + n * lexical_rules.shape[0] + n_sym


@njit(cache=True, nogil=True)
def cfg_hypergraph(data, i, edges):
    """CKY's recursion: node ``(s, e, A)`` derives words ``s..e-1`` from symbol ``A``; the
    goal takes a root symbol over the whole sentence."""
    tokens, binary_rules, lexical_rules = data.tokens, data.binary_rules, data.lexical_rules
    lexical_offsets, is_root, n_sym = data.lexical_offsets, data.is_root, data.n_symbols
    tok0, n, lex_base = _sentence(data, i)
    n_rules = binary_rules.shape[0]
    count = 0
    for position in range(n):
        tag = tokens[tok0 + position, 1]
        node = _span_node(position, position + 1, n, n_sym)
        for a in range(n_sym):
            for k in range(lexical_offsets[tag], lexical_offsets[tag + 1]):
                if lexical_rules[k, 0] == a:
                    edges[count, 0], edges[count, 1], edges[count, 2] = node + a, -1, -1
                    edges[count, 3] = lex_base[position] + k - lexical_offsets[tag]
                    edges[count, 4] = -1
                    count += 1
    for length in range(2, n + 1):
        for s in range(0, n - length + 1):
            e = s + length
            node, first = _span_node(s, e, n, n_sym), binary_offset(s, e, n, n_rules)
            for a in range(n_sym):
                for m in range(s + 1, e):
                    left, right = _span_node(s, m, n, n_sym), _span_node(m, e, n, n_sym)
                    for rule in range(n_rules):
                        if binary_rules[rule, 0] != a:
                            continue
                        edges[count, 0] = node + a
                        edges[count, 1] = left + binary_rules[rule, 1]
                        edges[count, 2] = right + binary_rules[rule, 2]
                        edges[count, 3] = first + (m - s - 1) * n_rules + rule
                        edges[count, 4] = -1
                        count += 1
    goal, whole = n * (n + 1) // 2 * n_sym, _span_node(0, n, n, n_sym)
    for a in range(n_sym):
        if is_root[a]:
            edges[count, 0], edges[count, 1], edges[count, 2] = goal, whole + a, -1
            edges[count, 3], edges[count, 4] = -1, -1
            count += 1
    return count


@njit(cache=True, nogil=True)
def cfg_decode(data, i, z, y_out):
    """Units of the derivation in ``z``: each word's lexical part, then the binary part of
    each constituent by length and start (its largest part, where it has one above 1/2)."""
    tok0, n, lex_base = _sentence(data, i)
    n_rules = data.binary_rules.shape[0]
    for position in range(n):
        best = lex_base[position]
        for p in range(lex_base[position], lex_base[position + 1]):
            if z[p] > z[best]:
                best = p
        y_out[position] = best
    unit = n
    for length in range(2, n + 1):
        for s in range(0, n - length + 1):
            first = binary_offset(s, s + length, n, n_rules)
            best = first
            for p in range(first, first + (length - 1) * n_rules):
                if z[p] > z[best]:
                    best = p
            if z[best] > 0.5 and unit < y_out.shape[0]:
                y_out[unit] = best
                unit += 1


@njit(cache=True, nogil=True)
def cfg_part_losses(data, i, y, out):
    """The paper's loss of each part against the true derivation ``y``: 0 where the part's
    labelled constituent (its symbol over its span) is one of ``y``'s, else 1."""
    tok0, n, lex_base = _sentence(data, i)
    binary_rules, lexical_rules = data.binary_rules, data.lexical_rules
    lexical_offsets, n_rules = data.lexical_offsets, data.binary_rules.shape[0]
    gold = np.zeros((n, n + 1, data.n_symbols), dtype=np.bool_)
    for position in range(n):
        tag = data.tokens[tok0 + position, 1]
        rule = y[position] - lex_base[position] + lexical_offsets[tag]
        gold[position, position + 1, lexical_rules[rule, 0]] = True
    for length in range(2, n + 1):  # a binary unit's span: the block that holds its part
        for s in range(0, n - length + 1):
            first = binary_offset(s, s + length, n, n_rules)
            for u in range(n, y.shape[0]):
                local = y[u] - first
                if 0 <= local < (length - 1) * n_rules:
                    gold[s, s + length, binary_rules[local % n_rules, 0]] = True
    for length in range(2, n + 1):
        for s in range(0, n - length + 1):
            first = binary_offset(s, s + length, n, n_rules)
            for local in range((length - 1) * n_rules):
                known = gold[s, s + length, binary_rules[local % n_rules, 0]]
                out[first + local] = 0.0 if known else 1.0
    for position in range(n):
        tag = data.tokens[tok0 + position, 1]
        for rule in range(lexical_offsets[tag], lexical_offsets[tag + 1]):
            known = gold[position, position + 1, lexical_rules[rule, 0]]
            out[lex_base[position] + rule - lexical_offsets[tag]] = 0.0 if known else 1.0
