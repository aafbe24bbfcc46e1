"""The two routes of :func:`._inference.matrix_tree_marginals` over non-projective trees.

The Laplacian of the exponentiated arc scores is inverted (:func:`_inverse_route`,
LAPACK) while that is accurate, and otherwise eliminated without subtractions
(Grassmann-Taksar-Heyman, :func:`_subtraction_free`): its pivots, ``log Z`` and the arc
marginals (escape probabilities of a walk up the head candidates) are then accurate to
rounding at any score scale, on plain weights or, when root weights fall below
``exp(-LINEAR_SPREAD)``, on their logarithms.
"""

import numpy as np
from numba import njit

from ._log_numerics import NEG_INF, _log_add

#: Root weights (relative to the largest weight into their word) down to
#: ``exp(-LINEAR_SPREAD)`` keep every pivot and escape probability far above the
#: smallest double, so the elimination runs on plain weights; below, on their logarithms.
LINEAR_SPREAD = 600.0
#: Single root by the subtraction-free route: root weights scaled down by ``t``
#: until the expected number of root children exceeds one by at most this.
SINGLE_ROOT_SLACK = 1e-12


@njit(cache=True, nogil=True, inline="always")
def _plus(a, b, log_domain):
    """Sum of two weights, plain or as logarithms."""
    if log_domain:
        return _log_add(a, b)
    return a + b


@njit(cache=True, nogil=True, inline="always")
def _times(a, b, log_domain):
    """Product of two weights, plain or as logarithms."""
    if log_domain:
        return a + b
    return a * b


@njit(cache=True, nogil=True)
def _eliminate(W, r, count, nodes, first, cols, roots, pivots, order, log_domain):
    """Eliminate the first ``count`` nodes of the system ``(W, r)`` without subtractions.

    ``W[i, j]`` is the weight of the arc ``i -> j`` between the system's nodes
    (a walk from ``j`` towards its head ``i``), ``r[j]`` the weight of ``j``'s
    root arc.  Eliminating node ``k`` (Grassmann-Taksar-Heyman) sends the
    weight of every arc into ``k`` along ``k``'s own arcs, in proportion, and
    drops the loops it closes: every entry stays a sum of non-negative terms and
    every pivot (``k``'s total weight) is accurate to rounding, however nearly
    singular the Laplacian.  The column and root weight of the node eliminated
    ``p``-th on the current path (``first + step``) go into ``cols[p]`` (by
    sentence position; zero for nodes already gone), ``roots[p]``, ``pivots[p]``
    and ``order[p]``, for :func:`_escape_marginals`.  Returns False when a
    pivot vanishes: a word that cannot reach the root, so no tree at all.
    """
    s = r.shape[0]
    zero = NEG_INF if log_domain else 0.0
    shares = np.empty(s)
    for k in range(count):
        pivot = r[k]
        for i in range(k + 1, s):
            pivot = _plus(pivot, W[i, k], log_domain)
        if pivot == zero:
            return False
        p = first + k
        for j in range(cols.shape[1]):
            cols[p, j] = zero
        for i in range(k + 1, s):
            cols[p, nodes[i]] = W[i, k]
        roots[p] = r[k]
        pivots[p] = pivot
        order[p] = nodes[k]
        for j in range(k + 1, s):
            shares[j] = W[k, j] - pivot if log_domain else W[k, j] / pivot
            r[j] = _plus(r[j], _times(r[k], shares[j], log_domain), log_domain)
        for i in range(k + 1, s):  # row by row: contiguous in W
            into_k = W[i, k]
            if into_k == zero:
                continue
            for j in range(k + 1, s):
                if j != i:
                    W[i, j] = _plus(W[i, j], _times(into_k, shares[j], log_domain), log_domain)
    return True


@njit(cache=True, nogil=True)
def _escape_marginals(target, n_eliminated, cols, roots, pivots, order, A, log_domain, escape,
                      marginals_out):
    """Marginals of the arcs into word ``target + 1``, once every other word is eliminated.

    ``escape[h]``: probability that the walk from word ``h + 1`` up its head
    candidates reaches the root before the target, by substituting back
    through the eliminations (each a sum of non-negative terms over the
    pivot).  Adding ``h -> target`` closes no cycle exactly then, so the
    marginal of ``h -> target`` is proportional to its weight times
    ``escape[h]`` (the root arc to its weight).  The normaliser is the
    target's own pivot as the last node; returns its log.
    """
    zero = NEG_INF if log_domain else 0.0
    escape[target] = zero
    for p in range(n_eliminated - 1, -1, -1):
        value = roots[p]
        for i in range(cols.shape[1]):
            value = _plus(value, _times(cols[p, i], escape[i], log_domain), log_domain)
        escape[order[p]] = value - pivots[p] if log_domain else value / pivots[p]
    m = target + 1
    total = A[0, m]
    for h in range(1, A.shape[0]):
        if h != m:
            marginals_out[h, m] = _times(A[h, m], escape[h - 1], log_domain)
            total = _plus(total, marginals_out[h, m], log_domain)
    marginals_out[0, m] = A[0, m]
    for h in range(A.shape[0]):
        if h != m:
            if log_domain:
                marginals_out[h, m] = np.exp(marginals_out[h, m] - total)
            else:
                marginals_out[h, m] /= total
    return total if log_domain else np.log(total)


@njit(cache=True, nogil=True)
def _every_word_last(W, r, cols, roots, pivots, order, A, log_domain, escape, marginals_out):
    """Every word as the last node of an elimination, in O(n^3) altogether; returns ``log Z``.

    The system's nodes split in two halves; each half is kept while the other
    is eliminated, then split in turn, down to single nodes (elimination costs
    ``s^3`` at size ``s``, so the halvings sum to a constant times ``n^3``,
    and so do the back-substitutions, ``n^2`` per word).  Depth first with a
    stack of systems, one per level (numba's cache does not keep recursive
    functions).  ``log Z`` is read on the first word's path: the sum of its
    pivots' logs; ``-inf`` when some word cannot reach the root.
    """
    n = r.shape[0]
    depth = 1
    while (n - 1) >> (depth - 1) > 0:  # sizes n, ceil(n / 2), ..., 1
        depth += 1
    sizes = np.empty(depth, dtype=np.int64)
    w_start = np.zeros(depth + 1, dtype=np.int64)
    v_start = np.zeros(depth + 1, dtype=np.int64)
    sizes[0] = n
    for d in range(depth):
        if d > 0:
            sizes[d] = (sizes[d - 1] + 1) // 2
        w_start[d + 1] = w_start[d] + sizes[d] * sizes[d]
        v_start[d + 1] = v_start[d] + sizes[d]
    W_stack = np.empty(w_start[depth])
    r_stack = np.empty(v_start[depth])
    nodes_stack = np.empty(v_start[depth], dtype=np.int64)
    size = np.empty(depth, dtype=np.int64)
    first = np.empty(depth, dtype=np.int64)
    side = np.zeros(depth, dtype=np.int64)
    size[0] = n
    first[0] = 0
    for i in range(n):
        r_stack[i] = r[i]
        nodes_stack[i] = i
        for j in range(n):
            W_stack[i * n + j] = W[i, j]
    log_z = NEG_INF
    d = 0
    while d >= 0:
        s = size[d]
        Wd = W_stack[w_start[d]:w_start[d] + s * s].reshape((s, s))
        rd = r_stack[v_start[d]:v_start[d] + s]
        nodes = nodes_stack[v_start[d]:v_start[d] + s]
        if s == 1 or side[d] == 2:
            if s == 1:
                log_last = _escape_marginals(nodes[0], first[d], cols, roots, pivots, order, A,
                                             log_domain, escape, marginals_out)
                if nodes[0] == 0:
                    log_z = log_last
                    for p in range(first[d]):
                        log_z += pivots[p] if log_domain else np.log(pivots[p])
            d -= 1
            continue
        # the eliminated half first, the kept half after it
        half = s // 2
        count = s - half if side[d] == 0 else half
        Wp = np.empty((s, s))
        rp = np.empty(s)
        nodes_p = np.empty(s, dtype=np.int64)
        for a in range(s):
            pa = (a + half) % s if side[d] == 0 else a
            rp[a] = rd[pa]
            nodes_p[a] = nodes[pa]
            for b in range(s):
                Wp[a, b] = Wd[pa, (b + half) % s if side[d] == 0 else b]
        side[d] += 1
        if not _eliminate(Wp, rp, count, nodes_p, first[d], cols, roots, pivots, order,
                          log_domain):
            return NEG_INF
        kept = s - count
        size[d + 1] = kept
        first[d + 1] = first[d] + count
        side[d + 1] = 0
        for a in range(kept):
            r_stack[v_start[d + 1] + a] = rp[count + a]
            nodes_stack[v_start[d + 1] + a] = nodes_p[count + a]
            for b in range(kept):
                W_stack[w_start[d + 1] + a * kept + b] = Wp[count + a, count + b]
        d += 1
    return log_z


@njit(cache=True, nogil=True)
def _multi_root(logA, log_root, marginals_out):
    """Multi-root ``log Z`` and marginals from log-weights ``logA[h, m]`` and root ``log_root[m]``.

    Plain weights while every root weight is above ``exp(-LINEAR_SPREAD)`` (the
    arc weights into a word at most 1): every pivot then holds its word's root
    weight, so nothing that matters underflows; otherwise log-weights.
    """
    N = logA.shape[0]
    n = N - 1
    log_domain = False
    for m in range(1, N):
        if not log_root[m] >= -LINEAR_SPREAD:
            log_domain = True
    A = np.empty((N, N))
    for h in range(N):
        for m in range(N):
            value = log_root[m] if h == 0 else logA[h, m]
            if h == m or m == 0:
                value = NEG_INF
            A[h, m] = value if log_domain else np.exp(value)
    W = np.empty((n, n))
    r = np.empty(n)
    for j in range(n):
        r[j] = A[0, j + 1]
        for i in range(n):
            W[i, j] = A[i + 1, j + 1]
    cols = np.empty((n, n))
    roots = np.empty(n)
    pivots = np.empty(n)
    order = np.empty(n, dtype=np.int64)
    escape = np.full(n, NEG_INF if log_domain else 0.0)  # read (times zero) before written
    marginals_out[:, :] = 0.0
    log_z = _every_word_last(W, r, cols, roots, pivots, order, A, log_domain, escape,
                             marginals_out)
    if log_z == NEG_INF:
        marginals_out[:, :] = 0.0
    return log_z


#: The inverse route is taken when the subtraction-free elimination of the multi-root
#: Laplacian keeps at least this fraction of every diagonal entry (plain elimination would
#: then lose at most a factor ``1 / ratio`` of accuracy, about 1e-11), and its marginals
#: sum to one per word within MTT_TOLERANCE.
CONDITION_LIMIT = 1e-5
MTT_TOLERANCE = 1e-10


@njit(cache=True, nogil=True)
def _inverse_route(logA, single_root, marginals_out):
    """``log Z`` and marginals from the determinant and inverse of the Laplacian, or NaN.

    Koo et al. (2007): with several roots the Laplacian of the weights
    ``L[m, m] = sum_h A[h, m]``, ``L[h, m] = -A[h, m]`` over the tokens; with a
    single root its first row replaced by the root weights.  Fast (LAPACK),
    but its inverse loses ``1 / ratio`` of accuracy on nearly singular
    Laplacians, which the subtraction-free elimination measures first (and
    whose pivots give the multi-root ``log Z`` exactly): NaN (the caller takes
    the subtraction-free route) beyond ``CONDITION_LIMIT``, when a word's
    marginals do not sum to one within ``MTT_TOLERANCE``, or when a pivot
    vanishes (weights that underflow, or no tree).
    """
    N = logA.shape[0]
    n = N - 1
    A = np.zeros((N, N))
    for h in range(N):
        for m in range(1, N):
            if h != m:
                A[h, m] = np.exp(logA[h, m])
    W = np.empty((n, n))
    r = np.empty(n)
    diagonal = np.zeros(n)
    nodes = np.empty(n, dtype=np.int64)
    for m in range(1, N):
        r[m - 1] = A[0, m]
        nodes[m - 1] = m - 1
        for h in range(N):
            diagonal[m - 1] += A[h, m]
            if h > 0:
                W[h - 1, m - 1] = A[h, m]
    pivots = np.empty(n)
    if not _eliminate(W, r, n, nodes, 0, np.empty((n, n)), np.empty(n), pivots,
                      np.empty(n, dtype=np.int64), False):
        return np.nan
    log_det = 0.0
    for k in range(n):
        if pivots[k] < CONDITION_LIMIT * diagonal[k]:
            return np.nan
        log_det += np.log(pivots[k])
    L = np.zeros((n, n))  # token m is row/column m - 1
    for m in range(1, N):
        L[m - 1, m - 1] = diagonal[m - 1] - A[0, m]
        for h in range(1, N):
            if h != m:
                L[h - 1, m - 1] = -A[h, m]
        if single_root:
            L[0, m - 1] = A[0, m]
        else:
            L[m - 1, m - 1] += A[0, m]
    if single_root:
        sign, log_det = np.linalg.slogdet(L)
        if sign <= 0.0:  # every word reachable, so Z > 0: rounding ate the determinant
            return np.nan
    inverse = np.linalg.inv(L)
    for m in range(1, N):
        j = m - 1
        # d log det / d L[a, b] = inverse[b, a]
        on_diagonal = 0.0 if (single_root and j == 0) else inverse[j, j]
        marginals_out[0, m] = A[0, m] * (inverse[j, 0] if single_root else on_diagonal)
        marginals_out[m, m] = 0.0
        for h in range(1, N):
            if h != m:
                off = 0.0 if (single_root and h == 1) else inverse[j, h - 1]
                marginals_out[h, m] = A[h, m] * (on_diagonal - off)
    for h in range(N):
        marginals_out[h, 0] = 0.0
    for m in range(1, N):  # every word has exactly one head
        total = 0.0
        for h in range(N):
            total += marginals_out[h, m]
            if marginals_out[h, m] < -MTT_TOLERANCE:
                return np.nan
        if not abs(total - 1.0) <= MTT_TOLERANCE:
            return np.nan
    return log_det


@njit(cache=True, nogil=True)
def _subtraction_free(logA, single_root, marginals_out):
    """``log Z`` and marginals from log-weights (each word's largest 0) without subtractions.

    Multi-root directly (:func:`_multi_root`); a single root as the limit of
    multi-root trees with the root weights scaled by ``t -> 0`` (see
    :func:`matrix_tree_marginals`).
    """
    if not single_root:
        return _multi_root(logA, logA[0], marginals_out)
    N = logA.shape[0]
    # the smaller t, the smaller the excess (the first-order error): start as small as plain
    # weights allow, so that most sentences need one elimination (tiny t on log-weights)
    smallest = 0.0
    for m in range(1, N):
        smallest = min(smallest, logA[0, m])
    log_t = -LINEAR_SPREAD + 10.0 - smallest
    if log_t > -30.0:
        log_t = -LINEAR_SPREAD
    growth = 1.0
    log_root = np.empty(N)
    for attempt in range(64):
        for m in range(N):
            log_root[m] = logA[0, m] + log_t
        log_z = _multi_root(logA, log_root, marginals_out)
        if log_z == NEG_INF:
            return NEG_INF
        excess = -1.0
        for m in range(1, N):
            excess += marginals_out[0, m]
        if excess <= SINGLE_ROOT_SLACK:
            return log_z - log_t - max(excess, 0.0)
        # first order once the excess is small (it is then t Z_2 / Z_1); far from it, ever
        # larger steps (confident root arcs can need t below exp(-10^4))
        if excess > 0.5:
            growth *= 2.0
            log_t -= growth * np.log(excess / (0.5 * SINGLE_ROOT_SLACK))
        else:
            log_t -= np.log(excess / (0.5 * SINGLE_ROOT_SLACK))
    return np.nan
