"""The exact path search of the min-cut projection's Newton steps (see :mod:`._projection`).

Along ``f + alpha delta`` the dual's derivative is piecewise linear; its breakpoints are
where an edge's flow changes piece of ``phi_e^*`` or a node value enters or leaves a
clamp.  The search visits them in order and stops at the first local minimum.
"""

import numpy as np
from numba import njit

from .._flow_kernels import _heap_push, _heap_sift_down


@njit(cache=True)
def _edge_region(x, d, b):
    """Piece of phi_e^* at x when moving with slope d (ties broken by d)."""
    if b > 0.0:
        return 1 if x > 0.0 or (x == 0.0 and d > 0.0) else -1
    if b < 0.0:
        if x > -b or (x == -b and d > 0.0):
            return 1
        if x < b or (x == b and d < 0.0):
            return -1
    return 0


@njit(cache=True)
def _edge_next(x, d, b, region):
    """Distance in alpha to the next breakpoint of phi_e^*, inf if none."""
    if d == 0.0:
        return np.inf
    if b > 0.0:
        return -x / d if (region > 0) != (d > 0.0) else np.inf  # reaches zero
    if b < 0.0:
        if d > 0.0:
            if region == -1:
                return (b - x) / d
            if region == 0:
                return (-b - x) / d
        else:
            if region == 1:
                return (-b - x) / d
            if region == 0:
                return (b - x) / d
    return np.inf


@njit(cache=True)
def _node_region(t, w):
    """0: clamped at 0, 1: free, 2: clamped at 1, for t - alpha w just after alpha."""
    if w > 0.0:
        return 2 if t > 1.0 else (1 if t > 0.0 else 0)
    if w < 0.0:
        return 0 if t < 0.0 else (1 if t < 1.0 else 2)
    return 0 if t <= 0.0 else (2 if t >= 1.0 else 1)


@njit(cache=True)
def _node_next(t, w, region):
    """Distance in alpha to the next clamp breakpoint of node value t - alpha w."""
    if w > 0.0:
        if region == 2:
            return (t - 1.0) / w
        if region == 1:
            return t / w
    elif w < 0.0:
        if region == 0:
            return t / w
        if region == 1:
            return (t - 1.0) / w
    return np.inf


@njit(cache=True)
def _node_slope(t, w, alpha, region):
    """(c0, c1) with -clip(t - (x - alpha) w, 0, 1) w = c0 + c1 x in ``region``."""
    if region == 1:
        return -(t + alpha * w) * w, w * w
    if region == 2:
        return -w, 0.0
    return 0.0, 0.0


@njit(cache=True)
def _node_piece(i, t, slope, alpha, region, c0s, c1s):
    """Item ``i``, a node of value ``t - (x - alpha) slope`` at ``x >= alpha``: its clamp
    region and its terms of the derivative, into ``region``, ``c0s`` and ``c1s``; returns
    the distance in alpha to its next breakpoint."""
    reg = _node_region(t, slope)
    region[i] = reg
    c0s[i], c1s[i] = _node_slope(t, slope, alpha, reg)
    return _node_next(t, slope, reg)


@njit(cache=True)
def _path_start(a, b, tail, head, f, u, delta, fw2, iw2, keys, items, stamps):
    """The pieces of every edge and node at alpha = 0 and the heap of their first
    breakpoints; returns ``(C0, C1, heap size)``.

    Items ``0..m-1`` are the edges, ``m + j`` node ``j``; per item ``fw2`` holds its
    reference value, the alpha of that reference, its terms ``c0 + c1 alpha`` of the
    derivative and (nodes) the slope ``w`` of its value, ``iw2`` its region and the stamp
    that outdates its older breakpoints in the heap.
    """
    n, m = a.shape[0], b.shape[0]
    x_ref, t_ref, alpha_ref, w, c0s, c1s = fw2[0], fw2[1], fw2[2], fw2[3], fw2[4], fw2[5]
    region, stamp = iw2[0], iw2[1]
    for j in range(n):
        w[j] = 0.0
    for e in range(m):
        w[tail[e]] += delta[e]
        w[head[e]] -= delta[e]
    C0 = 0.0
    C1 = 0.0
    size = 0
    for e in range(m):
        x, d, be = f[e], delta[e], b[e]
        x_ref[e] = x
        alpha_ref[e] = 0.0
        stamp[e] = 0
        reg = _edge_region(x, d, be)
        region[e] = reg
        if d == 0.0 or (be < 0.0 and reg == 0):
            c0s[e] = 0.0
            c1s[e] = 0.0
        else:
            c0s[e] = (x + be * reg) * d
            c1s[e] = d * d
        C0 += c0s[e]
        C1 += c1s[e]
        step = _edge_next(x, d, be, reg)
        if step < np.inf:
            keys[size], items[size], stamps[size] = step, e, 0
            size += 1
    for j in range(n):
        t = a[j] - u[j]
        i = m + j
        t_ref[j] = t
        alpha_ref[i] = 0.0
        stamp[i] = 0
        step = _node_piece(i, t, w[j], 0.0, region, c0s, c1s)
        C0 += c0s[i]
        C1 += c1s[i]
        if step < np.inf:
            keys[size], items[size], stamps[size] = step, i, 0
            size += 1
    for i in range(size // 2 - 1, -1, -1):
        _heap_sift_down(keys, items, stamps, size, i)
    return C0, C1, size


@njit(cache=True)
def _hold_at_zero(e, high, C0, C1, tail, head, delta, fw2, iw2, keys, items, stamps, size):
    """Edge ``e`` (b > 0) reaches its kink at ``alpha = high`` and stays there: its end
    nodes change slope.  Returns ``(C0, C1, heap size)`` updated."""
    m = delta.shape[0]
    x_ref, t_ref, alpha_ref, w, c0s, c1s = fw2[0], fw2[1], fw2[2], fw2[3], fw2[4], fw2[5]
    region, stamp = iw2[0], iw2[1]
    d = delta[e]
    x_ref[e] = 0.0
    alpha_ref[e] = high
    delta[e] = 0.0
    c0s[e] = 0.0
    c1s[e] = 0.0
    stamp[e] += 1
    for end, sgn in ((tail[e], 1.0), (head[e], -1.0)):
        i = m + end
        C0 -= c0s[i]
        C1 -= c1s[i]
        t = t_ref[end] - (high - alpha_ref[i]) * w[end]
        t_ref[end] = t
        alpha_ref[i] = high
        w[end] -= sgn * d
        step = _node_piece(i, t, w[end], high, region, c0s, c1s)
        C0 += c0s[i]
        C1 += c1s[i]
        stamp[i] += 1
        if step < np.inf:
            size = _heap_push(keys, items, stamps, size, high + step, i, stamp[i])
    return C0, C1, size


@njit(cache=True)
def _next_piece(item, high, b, delta, fw2, iw2):
    """Item ``item`` crosses a breakpoint at ``alpha = high``: an edge with b < 0 its
    flow crossing b or -b, or a node entering or leaving a clamp.  Its new piece goes into
    ``fw2`` and ``iw2``; returns the distance in alpha to its next breakpoint."""
    m = delta.shape[0]
    x_ref, t_ref, alpha_ref, w, c0s, c1s = fw2[0], fw2[1], fw2[2], fw2[3], fw2[4], fw2[5]
    region = iw2[0]
    if item < m:
        e = item
        d, be = delta[e], b[e]
        reg = region[e]
        x = (be if reg == -1 else -be) if d > 0.0 else (-be if reg == 1 else be)
        x_ref[e] = x
        alpha_ref[e] = high
        reg += 1 if d > 0.0 else -1
        region[e] = reg
        c0s[e] = (x - high * d + be * reg) * d if reg != 0 else 0.0
        c1s[e] = d * d if reg != 0 else 0.0
        return _edge_next(x, d, be, reg)
    j = item - m
    reg = region[item]
    t = 1.0 if (w[j] > 0.0 and reg == 2) or (w[j] < 0.0 and reg == 1) else 0.0
    t_ref[j] = t
    alpha_ref[item] = high
    reg += -1 if w[j] > 0.0 else 1
    region[item] = reg
    c0s[item], c1s[item] = _node_slope(t, w[j], high, reg)
    return _node_next(t, w[j], reg)


@njit(cache=True)
def _mincut_search(a, b, tail, head, f, u, delta, fw2, iw2, keys, items, stamps):
    """First local minimiser of the dual along f + alpha delta, projected.

    Edges with b > 0 whose flow reaches zero stay there (the kink of
    phi_e^*), which bends the path: their end nodes change slope.  The dual's
    derivative along the path is piecewise linear, C0 + C1 alpha, between
    breakpoints (pieces of phi_e^*, node clamps, frozen edges) visited in
    order from a heap.  Writes the new flows into f; returns alpha.
    """
    m = b.shape[0]
    x_ref, alpha_ref, c0s, c1s, stamp = fw2[0], fw2[2], fw2[4], fw2[5], iw2[1]
    C0, C1, size = _path_start(a, b, tail, head, f, u, delta, fw2, iw2, keys, items, stamps)
    low = 0.0
    alpha = -1.0
    while size > 0:
        high, item, st = keys[0], items[0], stamps[0]
        size -= 1
        keys[0], items[0], stamps[0] = keys[size], items[size], stamps[size]
        _heap_sift_down(keys, items, stamps, size, 0)
        if st != stamp[item]:
            continue  # superseded breakpoint
        if C0 + C1 * high >= 0.0:
            alpha = max(low, -C0 / C1) if C1 > 0.0 else low
            break
        low = high
        C0 -= c0s[item]
        C1 -= c1s[item]
        if item < m and b[item] > 0.0:
            C0, C1, size = _hold_at_zero(item, high, C0, C1, tail, head, delta, fw2, iw2, keys,
                                         items, stamps, size)
            continue
        step = _next_piece(item, high, b, delta, fw2, iw2)
        C0 += c0s[item]
        C1 += c1s[item]
        if step < np.inf:
            size = _heap_push(keys, items, stamps, size, high + step, item, stamp[item])
    if alpha < 0.0:
        alpha = max(low, -C0 / C1) if C1 > 0.0 else low
    for e in range(m):
        f[e] = x_ref[e] + (alpha - alpha_ref[e]) * delta[e]
    return alpha
