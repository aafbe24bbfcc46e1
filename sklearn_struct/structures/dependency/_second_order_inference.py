"""Second-order Eisner written out in numba: argmax and inside-outside marginals.

The recursion of :mod:`._second_order` (whose hypergraph the generic dynamic
program runs, and against which ``check_structure`` holds these overrides) on
``(n + 1, n + 1)`` tables of span values instead of a list of hyperedges: the
hypergraph of a sentence of ``n`` words has about ``5 n^3 / 6`` edges of five
integers each, rebuilt on every call, which made the generic marginals 3.5 and
the generic argmax 20 times slower than the first order's hand-written ones
on EWT sentences.

Tables: ``IR[s, t]`` (arc ``s -> t``), ``IL[s, t]`` (arc ``t -> s``), with
``IRi`` and ``ILi`` the same without the arc's score; ``CR``, ``CL`` the
complete spans; ``SB[s, t]`` the sibling spans.  One pass computes them in
the log semiring (``viterbi=False``) or the max-plus one, keeping the
position of each span's best term for the back-trace; the marginals are the
gradient of ``log Z`` by a reverse pass over the same recursions.  The
marginals are computed in real space (:func:`_real_spans`, :func:`_real_outside`)
as in the first order (:func:`._inference.projective_marginals`), unless
``Z`` is too small there; then in log space.
"""

import numpy as np
from numba import njit

from ._arc_features import arc_index
from ._inference import (
    KAPPA, SAFE, TINY, _flush, _scaled_weights, _share, split_adjoint, split_sum)
from ._log_numerics import NEG_INF, NEGLIGIBLE, _log_add
from ._sibling_features import sibling_index

CL, CR, IL, IR, SB = 0, 1, 2, 3, 4


@njit(cache=True, nogil=True, inline="always")
def _sib(theta, h, s, m, n):
    return theta[n * n + sibling_index(h, s, m, n)]


@njit(cache=True, nogil=True, inline="always")
def _inner_sum(kind, s, t):
    """What the inner sum of incomplete span ``[s, t]`` adds up, for either direction
    (``kind`` IR: arc ``s -> t``, IL: arc ``t -> s``): the arc's head ``h`` and modifier
    ``m``; the complete span ``T[near, near_s, near_t]`` beside ``m`` when it is ``h``'s
    child next to ``h``; and the spans ``T[left, s, r]``, ``T[right, r, t]`` around each
    inner sibling ``r``, whose sibling part is ``(h, r, m)``."""
    if kind == IR:
        return s, t, CL, s + 1, t, IR, SB
    return t, s, CR, s, t - 1, SB, IL


@njit(cache=True, nogil=True)
def _reduce(terms, count, viterbi):
    """``(log-sum-exp, 0)`` or ``(max, first position of the max)`` of ``terms[:count]``."""
    top, arg = NEG_INF, 0
    for j in range(count):
        if terms[j] > top:
            top, arg = terms[j], j
    if viterbi or top == NEG_INF:
        return top, arg
    total = 0.0
    for j in range(count):
        total += np.exp(max(terms[j] - top, NEGLIGIBLE))
    return top + np.log(total), 0


@njit(cache=True, nogil=True, inline="always")
def _inner_terms(theta, n, kind, s, t, T, terms):
    """The terms of an incomplete span's inner sum (see :func:`_inner_sum`) into
    ``terms[:t - s]``, the next-to-head child's first."""
    h, m, near, near_s, near_t, left, right = _inner_sum(kind, s, t)
    terms[0] = T[near, near_s, near_t] + _sib(theta, h, h, m, n)
    for r in range(s + 1, t):
        terms[r - s] = T[left, s, r] + T[right, r, t] + _sib(theta, h, r, m, n)


@njit(cache=True, nogil=True)
def _spans(theta, n, first, T, inner, back, viterbi):
    """Fill the span tables ``T[kind, s, t]`` over positions ``first..n`` (0: the root
    heads spans too); ``inner[0 or 1, s, t]``: IL and IR without their arc."""
    terms = np.empty(n + 2)
    for s in range(first, n + 1):
        T[CL, s, s] = 0.0
        T[CR, s, s] = 0.0
    for w in range(1, n - first + 1):
        for s in range(first, n - w + 1):
            t = s + w
            # arc s -> t: t first right child of s, or after its inner sibling r
            _inner_terms(theta, n, IR, s, t, T, terms)
            inner[1, s, t], back[IR, s, t] = _reduce(terms, w, viterbi)
            T[IR, s, t] = inner[1, s, t] + theta[arc_index(s, t, n)]
            if s > 0:  # arc t -> s
                _inner_terms(theta, n, IL, s, t, T, terms)
                inner[0, s, t], back[IL, s, t] = _reduce(terms, w, viterbi)
                T[IL, s, t] = inner[0, s, t] + theta[arc_index(t, s, n)]
            for r in range(s, t):
                terms[r - s] = T[CL, s, r] + T[IL, r, t]
            T[CL, s, t], back[CL, s, t] = _reduce(terms, w, viterbi)
            for r in range(s + 1, t + 1):
                terms[r - s - 1] = T[IR, s, r] + T[CR, r, t]
            T[CR, s, t], back[CR, s, t] = _reduce(terms, w, viterbi)
            if s > 0:
                for r in range(s, t):
                    terms[r - s] = T[CR, s, r] + T[CL, r + 1, t]
                T[SB, s, t], back[SB, s, t] = _reduce(terms, w, viterbi)


@njit(cache=True, nogil=True)
def _tables(n):
    N = n + 1
    return (np.full((5, N, N), NEG_INF), np.full((2, N, N), NEG_INF),
            np.zeros((5, N, N), dtype=np.int64))


@njit(cache=True, nogil=True)
def _root_term(theta, T, n, m):
    """The single-root goal's term of root child ``m``."""
    return (theta[arc_index(0, m, n)] + _sib(theta, 0, 0, m, n) + T[CL, 1, m]
            + T[CR, m, n])


@njit(cache=True, nogil=True)
def _trace(s, t, kind, back, heads):
    """Fill ``heads`` from the back-pointers of span ``[s, t]`` of the given kind."""
    stack = [(s, t, kind)]
    while len(stack) > 0:
        s, t, kind = stack.pop()
        if s == t:
            continue
        k = back[kind, s, t]
        if kind == CL:
            stack.append((s, s + k, CL))
            stack.append((s + k, t, IL))
        elif kind == CR:
            stack.append((s, s + 1 + k, IR))
            stack.append((s + 1 + k, t, CR))
        elif kind == SB:
            stack.append((s, s + k, CR))
            stack.append((s + k + 1, t, CL))
        elif kind == IL:
            heads[s - 1] = t
            if k == 0:
                stack.append((s, t - 1, CR))
            else:
                stack.append((s, s + k, SB))
                stack.append((s + k, t, IL))
        else:
            heads[t - 1] = s
            if k == 0:
                stack.append((s + 1, t, CL))
            else:
                stack.append((s, s + k, IR))
                stack.append((s + k, t, SB))


@njit(cache=True, nogil=True)
def second_order_eisner(data, i, scores, y_out):
    """Highest-scoring projective tree under arc and sibling scores, into ``y_out``."""
    n = data.unit_offsets[i + 1] - data.unit_offsets[i]
    T, inner, back = _tables(n)
    if not data.single_root:
        _spans(scores, n, 0, T, inner, back, True)
        _trace(0, n, CR, back, y_out)
        return
    _spans(scores, n, 1, T, inner, back, True)
    best, child = NEG_INF, 1
    for m in range(1, n + 1):
        value = _root_term(scores, T, n, m)
        if value > best:
            best, child = value, m
    y_out[child - 1] = 0
    _trace(1, child, CL, back, y_out)
    _trace(child, n, CR, back, y_out)


@njit(cache=True, nogil=True)
def _spread(g, total, theta, n, terms_kind, s, t, T, G, mu):
    """Adjoint of an incomplete span's inner sum (``terms_kind`` IR or IL) into ``G`` and
    the sibling parts' marginals."""
    A = n * n
    h, m, near, near_s, near_t, left, right = _inner_sum(terms_kind, s, t)
    value = T[near, near_s, near_t] + _sib(theta, h, h, m, n)
    share = _share(g, total, value)
    G[near, near_s, near_t] += share
    mu[A + sibling_index(h, h, m, n)] += share
    for r in range(s + 1, t):
        value = T[left, s, r] + T[right, r, t] + _sib(theta, h, r, m, n)
        share = _share(g, total, value)
        G[left, s, r] += share
        G[right, r, t] += share
        mu[A + sibling_index(h, r, m, n)] += share


@njit(cache=True, nogil=True)
def _outside(theta, n, first, T, inner, G, mu):
    """Reverse pass of :func:`_spans` (log semiring): d(log Z)/d(span) into ``G``, the part
    marginals into ``mu``."""
    for w in range(n - first, 0, -1):
        for s in range(first, n - w + 1):
            t = s + w
            g = G[SB, s, t]
            if s > 0 and g != 0.0:
                for r in range(s, t):
                    share = _share(g, T[SB, s, t], T[CR, s, r] + T[CL, r + 1, t])
                    G[CR, s, r] += share
                    G[CL, r + 1, t] += share
            g = G[CR, s, t]
            if g != 0.0:
                for r in range(s + 1, t + 1):
                    share = _share(g, T[CR, s, t], T[IR, s, r] + T[CR, r, t])
                    G[IR, s, r] += share
                    G[CR, r, t] += share
            g = G[CL, s, t]
            if g != 0.0:
                for r in range(s, t):
                    share = _share(g, T[CL, s, t], T[CL, s, r] + T[IL, r, t])
                    G[CL, s, r] += share
                    G[IL, r, t] += share
            g = G[IL, s, t]
            if s > 0 and g != 0.0:
                mu[arc_index(t, s, n)] += g
                _spread(g, inner[0, s, t], theta, n, IL, s, t, T, G, mu)
            g = G[IR, s, t]
            if g != 0.0:
                mu[arc_index(s, t, n)] += g
                _spread(g, inner[1, s, t], theta, n, IR, s, t, T, G, mu)


@njit(cache=True, nogil=True)
def _real_weights(theta, n, single_root, W):
    """Scaled weights of the sibling parts with their arcs, ``W[sibling_index(h, s, m, n)] =
    exp(arc(h, m) + sib(h, s, m) - c_m) / KAPPA`` with ``c_m`` the largest such score into
    ``m`` (every tree has one arc and one sibling part per word: see
    :data:`._inference.KAPPA`), flushed below :data:`._inference.TINY`; returns the shift
    of ``log Z``, ``sum_m c_m + n log KAPPA``.  With a single root only ``(0, 0, m)`` of
    the root's parts is ever used.  The parts of one arc are consecutive, by the distance
    of ``s`` from ``h``."""
    shift = 0.0
    for m in range(1, n + 1):
        top = NEG_INF
        for h in range(n + 1):
            if h != m:
                j = sibling_index(h, h, m, n)
                for k in range(1 if h == 0 and single_root else abs(h - m)):
                    value = theta[arc_index(h, m, n)] + theta[n * n + j + k]
                    if value > top:
                        top = value
        shift += top + np.log(KAPPA)
        for h in range(n + 1):
            if h != m:
                j = sibling_index(h, h, m, n)
                for k in range(1 if h == 0 and single_root else abs(h - m)):
                    # NaN for a word no part reaches: flushed
                    W[j + k] = theta[arc_index(h, m, n)] + theta[n * n + j + k] - top
    _scaled_weights(W)
    return shift


@njit(cache=True, nogil=True, inline="always")
def _real_inner_sum(W, n, kind, s, t, T):
    """The value of an incomplete span in real space (see :func:`_inner_sum`), each arc in
    its sibling parts' weights, flushed."""
    h, m, near, near_s, near_t, left, right = _inner_sum(kind, s, t)
    base = sibling_index(h, h, m, n)  # the parts of the arc, by the distance of r from h
    total = T[near, near_s, near_t] * W[base]
    for r in range(s + 1, t):
        total += _flush(T[left, s, r] * T[right, r, t]) * W[base + abs(r - h)]
    return _flush(total)


@njit(cache=True, nogil=True)
def _real_spans(W, n, first, T):
    """:func:`_spans` in real space on the weights of :func:`_real_weights` (each arc in its
    sibling parts' weights), into zero tables.

    Span values and products of two values are flushed to zero below
    :data:`._inference.TINY` before any further product, so that every product is a
    normal number.
    """
    for s in range(first, n + 1):
        T[CL, s, s] = 1.0
        T[CR, s, s] = 1.0
    for w in range(1, n - first + 1):
        for s in range(first, n - w + 1):
            t = s + w
            T[IR, s, t] = _real_inner_sum(W, n, IR, s, t, T)
            if s > 0:
                T[IL, s, t] = _real_inner_sum(W, n, IL, s, t, T)
            T[CL, s, t] = _flush(split_sum(T[CL], T[IL], s, t, s, t, 0))
            T[CR, s, t] = _flush(split_sum(T[IR], T[CR], s, t, s + 1, t + 1, 0))
            if s > 0:
                T[SB, s, t] = _flush(split_sum(T[CR], T[CL], s, t, s, t, 1))


@njit(cache=True, nogil=True, inline="always")
def _real_spread(g, W, n, kind, s, t, T, G, mu):
    """:func:`_spread` in real space: the adjoint of an incomplete span's inner sum at
    gradient ``g`` into ``G`` and the sibling parts' marginals."""
    A = n * n
    h, m, near, near_s, near_t, left, right = _inner_sum(kind, s, t)
    base = sibling_index(h, h, m, n)  # the parts of the arc, by the distance of r from h
    gw = _flush(g * W[base])
    mu[A + base] = gw * T[near, near_s, near_t]
    G[near, near_s, near_t] += gw
    for r in range(s + 1, t):
        j = base + abs(r - h)
        gw = _flush(g * W[j])
        product = _flush(T[left, s, r] * T[right, r, t])
        if product > 0.0:
            mu[A + j] = gw * product
            G[left, s, r] += gw * T[right, r, t]
            G[right, r, t] += gw * T[left, s, r]


@njit(cache=True, nogil=True)
def _real_outside(W, n, first, T, G, mu):
    """Reverse pass of :func:`_real_spans`: ``d(log Z)/d(value)`` into ``G``, the part
    marginals (``G`` times the part's share of a span value) into ``mu``.

    As in :func:`._inference._real_outside`, flushed values pass nothing on, nor ``G``
    below ``TINY``; a sibling term's ``G`` times weight is flushed like its inside product.
    """
    for w in range(n - first, 0, -1):
        for s in range(first, n - w + 1):
            t = s + w
            g = G[SB, s, t]
            if g >= TINY and T[SB, s, t] > 0.0:
                split_adjoint(g, T[CR], T[CL], G[CR], G[CL], s, t, s, t, 1)
            g = G[CR, s, t]
            if g >= TINY and T[CR, s, t] > 0.0:
                split_adjoint(g, T[IR], T[CR], G[IR], G[CR], s, t, s + 1, t + 1, 0)
            g = G[CL, s, t]
            if g >= TINY and T[CL, s, t] > 0.0:
                split_adjoint(g, T[CL], T[IL], G[CL], G[IL], s, t, s, t, 0)
            g = G[IL, s, t]
            if g >= TINY and T[IL, s, t] > 0.0:
                mu[arc_index(t, s, n)] = g * T[IL, s, t]
                _real_spread(g, W, n, IL, s, t, T, G, mu)
            g = G[IR, s, t]
            if g >= TINY and T[IR, s, t] > 0.0:
                mu[arc_index(s, t, n)] = g * T[IR, s, t]
                _real_spread(g, W, n, IR, s, t, T, G, mu)


@njit(cache=True, nogil=True)
def _real_inside(theta, n, single_root):
    """Real-space inside pass: ``(Z, shift, W, T, sides)`` with ``log Z = log(Z) + shift``,
    the scaled weights, the span tables of :func:`_real_spans` and, with a single root, the
    flushed products ``CL[1, m] CR[m, n]`` of each root child ``m``."""
    N = n + 1
    W = np.full(theta.shape[0] - n * n, NEG_INF)  # the root's unused parts weigh 0
    shift = _real_weights(theta, n, single_root, W)
    T = np.zeros((5, N, N))
    sides = np.zeros(N)
    if not single_root:
        _real_spans(W, n, 0, T)
        return T[CR, 0, n], shift, W, T, sides
    _real_spans(W, n, 1, T)
    z = 0.0
    for m in range(1, n + 1):
        sides[m] = _flush(T[CL, 1, m] * T[CR, m, n])
        z += W[sibling_index(0, 0, m, n)] * sides[m]
    return z, shift, W, T, sides


@njit(cache=True, nogil=True, inline="always")
def _is_safe(z, shift, n):
    """Whether the real-space ``Z`` stands: at least ``SAFE N^4``, where flushing changes
    ``Z`` and the marginals by under ``1e-18`` relative (under ``100 N^4 TINY`` of ``Z`` is
    flushed, as in :data:`._inference.TINY`, with up to ``N^3`` products of two values
    flushed too)."""
    return z >= SAFE * (n + 1) ** 4 and np.isfinite(shift)


@njit(cache=True, nogil=True)
def _real_marginals(theta, n, single_root, mu):
    """:func:`second_order_marginals` in real space; NaN (``mu`` undefined) unless
    :func:`_is_safe`."""
    z, shift, W, T, sides = _real_inside(theta, n, single_root)
    if not _is_safe(z, shift, n):
        return np.nan
    G = np.zeros((5, n + 1, n + 1))
    mu[:] = 0.0
    if not single_root:
        G[CR, 0, n] = 1.0 / z
        _real_outside(W, n, 0, T, G, mu)
        return np.log(z) + shift
    for m in range(1, n + 1):
        j = sibling_index(0, 0, m, n)
        g = W[j] / z
        mu[arc_index(0, m, n)] = mu[n * n + j] = g * sides[m]
        if sides[m] > 0.0:
            G[CL, 1, m] += g * T[CR, m, n]
            G[CR, m, n] += g * T[CL, 1, m]
    _real_outside(W, n, 1, T, G, mu)
    return np.log(z) + shift


@njit(cache=True, nogil=True)
def second_order_marginals(data, i, theta, mu):
    """Arc and sibling marginals of ``p(y) ~ exp(theta . z(y))`` into ``mu``; returns ``log Z``.

    In real space (:func:`_real_marginals`) unless ``Z`` is too small there, then in log
    space (:func:`_log_space_marginals`).
    """
    n = data.unit_offsets[i + 1] - data.unit_offsets[i]
    log_z = _real_marginals(theta, n, data.single_root, mu)
    if log_z != log_z:
        log_z = _log_space_marginals(theta, n, data.single_root, mu)
    return log_z


@njit(cache=True, nogil=True)
def second_order_log_partition(data, i, theta, scratch):
    """``log Z`` alone (a gap evaluation's need): the inside pass without the outside, in
    real space unless ``Z`` is too small there (``scratch`` unused)."""
    n = data.unit_offsets[i + 1] - data.unit_offsets[i]
    z, shift = _real_inside(theta, n, data.single_root)[:2]
    if _is_safe(z, shift, n):
        return np.log(z) + shift
    return _log_space_inside(theta, n, data.single_root)[0]


@njit(cache=True, nogil=True)
def _log_space_inside(theta, n, single_root):
    """Log-space inside pass (:func:`_spans`): ``(log Z, T, inner)``."""
    T, inner, back = _tables(n)
    if not single_root:
        _spans(theta, n, 0, T, inner, back, False)
        return T[CR, 0, n], T, inner
    _spans(theta, n, 1, T, inner, back, False)
    log_z = NEG_INF
    for m in range(1, n + 1):
        log_z = _log_add(log_z, _root_term(theta, T, n, m))
    return log_z, T, inner


@njit(cache=True, nogil=True)
def _log_space_marginals(theta, n, single_root, mu):
    """:func:`second_order_marginals` in log space (:func:`_spans`, :func:`_outside`)."""
    log_z, T, inner = _log_space_inside(theta, n, single_root)
    G = np.zeros((5, n + 1, n + 1))
    mu[:] = 0.0
    if not single_root:
        G[CR, 0, n] = 1.0
        _outside(theta, n, 0, T, inner, G, mu)
        return log_z
    for m in range(1, n + 1):
        share = _share(1.0, log_z, _root_term(theta, T, n, m))
        mu[arc_index(0, m, n)] += share
        mu[n * n + sibling_index(0, 0, m, n)] += share
        G[CL, 1, m] += share
        G[CR, m, n] += share
    _outside(theta, n, 1, T, inner, G, mu)
    return log_z
