"""Inference over the dependency trees of one sentence, in numba.

A sentence has tokens ``1..n`` and the root ``0``.  Arc scores are an
``(n + 1, n + 1)`` matrix ``S[h, m]`` (head ``h``, modifier ``m``; column 0 and
the diagonal are never read).  A tree is a head array ``heads`` of length
``n``: ``heads[m - 1]`` is the head of token ``m``.  ``single_root=True`` admits
only trees in which exactly one token hangs from the root (the UD convention).

Projective trees (Eisner 1996, first order, O(n^3)): :func:`eisner` (argmax)
and :func:`projective_marginals` (inside in log space, arc marginals as the
gradient of ``log Z`` by a reverse pass over the same recursions).  The
spans are the classic ones: ``I`` incomplete spans ``[s, t]`` headed at one end
with the arc between the ends, ``C`` complete spans headed at one end.  With a
single root the recursions run over tokens ``1..n`` only and the root picks the
one token that heads the whole sentence: ``log Z = logsumexp_m S[0, m] +
CL[1, m] + CR[m, n]``.

Non-projective trees: :func:`matrix_tree_marginals` (the Matrix-Tree theorem,
Koo, Globerson, Carreras & Collins 2007: ``Z`` is the determinant of a
Laplacian of the exponentiated scores, the single-root variant replacing one
row by the root scores; marginals from its inverse).
"""

import numpy as np
from numba import njit

NEG_INF = -np.inf


@njit(cache=True, nogil=True)
def _log_add(a, b):
    if a == NEG_INF:
        return b
    if b == NEG_INF:
        return a
    if a > b:
        return a + np.log1p(np.exp(b - a))
    return b + np.log1p(np.exp(a - b))


@njit(cache=True, nogil=True)
def _span_tables(N):
    """Empty (-inf) tables of complete and incomplete spans: CL, CR, IL, IR."""
    return (np.full((N, N), NEG_INF), np.full((N, N), NEG_INF), np.full((N, N), NEG_INF),
            np.full((N, N), NEG_INF))


@njit(cache=True, nogil=True)
def _inside(S, first, last, CL, CR, IL, IR):
    """Inside log-scores of all spans over positions ``first..last`` (tables indexed by position).

    ``first == 0`` lets the root head spans (never be a modifier); ``first == 1``
    leaves it out.  Each log-sum-exp is taken in two passes (maximum, then a
    sum of exponentials): one logarithm per span instead of one per term.
    """
    N = S.shape[0]
    terms = np.empty(N)
    for s in range(first, last + 1):
        CL[s, s] = 0.0
        CR[s, s] = 0.0
    for k in range(1, last - first + 1):
        for s in range(first, last - k + 1):
            t = s + k
            for r in range(s, t):
                terms[r - s] = CR[s, r] + CL[r + 1, t]
            inner = _log_sum_exp(terms, k)
            IR[s, t] = inner + S[s, t]
            IL[s, t] = inner + S[t, s] if s > 0 else NEG_INF
            for r in range(s, t):
                terms[r - s] = CL[s, r] + IL[r, t]
            CL[s, t] = _log_sum_exp(terms, k)
            for r in range(s + 1, t + 1):
                terms[r - s - 1] = IR[s, r] + CR[r, t]
            CR[s, t] = _log_sum_exp(terms, k)


@njit(cache=True, nogil=True)
def _log_sum_exp(values, count):
    """``log sum_j exp(values[j])`` over the first ``count`` values (-inf when all are)."""
    top = NEG_INF
    for j in range(count):
        if values[j] > top:
            top = values[j]
    if top == NEG_INF:
        return NEG_INF
    total = 0.0
    for j in range(count):
        total += np.exp(values[j] - top)
    return top + np.log(total)


@njit(cache=True, nogil=True)
def _share(grad_out, total, value):
    """Adjoint of one term of ``total = logsumexp(..., value, ...)``."""
    if grad_out == 0.0 or value == NEG_INF or total == NEG_INF:
        return 0.0
    return grad_out * np.exp(value - total)


@njit(cache=True, nogil=True)
def _outside(S, first, last, CL, CR, IL, IR, gCL, gCR, gIL, gIR, gS):
    """Reverse pass of :func:`_inside`: adds d(log Z)/d(table) into the ``g`` arrays and gS."""
    terms = np.empty(S.shape[0])
    for k in range(last - first, 0, -1):
        for s in range(first, last - k + 1):
            t = s + k
            g = gCR[s, t]
            for r in range(s + 1, t + 1):
                share = _share(g, CR[s, t], IR[s, r] + CR[r, t])
                gIR[s, r] += share
                gCR[r, t] += share
            g = gCL[s, t]
            for r in range(s, t):
                share = _share(g, CL[s, t], CL[s, r] + IL[r, t])
                gCL[s, r] += share
                gIL[r, t] += share
            g_inner = 0.0
            if gIR[s, t] != 0.0:
                gS[s, t] += gIR[s, t]
                g_inner += gIR[s, t]
            if s > 0 and gIL[s, t] != 0.0:
                gS[t, s] += gIL[s, t]
                g_inner += gIL[s, t]
            if g_inner != 0.0:
                # recomputed, not IR - S: a forbidden arc (S = -inf) would give NaN
                for r in range(s, t):
                    terms[r - s] = CR[s, r] + CL[r + 1, t]
                inner = _log_sum_exp(terms, t - s)
                for r in range(s, t):
                    share = _share(g_inner, inner, CR[s, r] + CL[r + 1, t])
                    gCR[s, r] += share
                    gCL[r + 1, t] += share


@njit(cache=True, nogil=True)
def projective_marginals(S, single_root, marginals_out):
    """Arc marginals over projective trees and ``log Z`` (inside-outside in log space).

    Parameters
    ----------
    S : ndarray of shape (n + 1, n + 1)
        Arc scores ``S[h, m]``.
    single_root : bool
        Only trees with exactly one root child.
    marginals_out : ndarray of shape (n + 1, n + 1)
        Overwritten with ``p((h, m) in y)`` (zero on column 0 and the diagonal).

    Returns
    -------
    log_z : float
    """
    N = S.shape[0]
    n = N - 1
    CL, CR, IL, IR = _span_tables(N)
    gCL = np.zeros((N, N))
    gCR = np.zeros((N, N))
    gIL = np.zeros((N, N))
    gIR = np.zeros((N, N))
    marginals_out[:, :] = 0.0
    if not single_root:
        _inside(S, 0, n, CL, CR, IL, IR)
        log_z = CR[0, n]
        gCR[0, n] = 1.0
        _outside(S, 0, n, CL, CR, IL, IR, gCL, gCR, gIL, gIR, marginals_out)
        return log_z
    _inside(S, 1, n, CL, CR, IL, IR)
    log_z = NEG_INF
    for m in range(1, n + 1):
        log_z = _log_add(log_z, S[0, m] + CL[1, m] + CR[m, n])
    for m in range(1, n + 1):
        share = _share(1.0, log_z, S[0, m] + CL[1, m] + CR[m, n])
        marginals_out[0, m] += share
        gCL[1, m] += share
        gCR[m, n] += share
    _outside(S, 1, n, CL, CR, IL, IR, gCL, gCR, gIL, gIR, marginals_out)
    return log_z


@njit(cache=True, nogil=True)
def _best_spans(S, first, last, CL, CR, IL, IR, bCL, bCR, bI):
    """Viterbi version of :func:`_inside` with split points for the back-trace."""
    for s in range(first, last + 1):
        CL[s, s] = 0.0
        CR[s, s] = 0.0
    for k in range(1, last - first + 1):
        for s in range(first, last - k + 1):
            t = s + k
            best, arg = NEG_INF, s
            for r in range(s, t):
                value = CR[s, r] + CL[r + 1, t]
                if value > best:
                    best, arg = value, r
            bI[s, t] = arg
            IR[s, t] = best + S[s, t]
            IL[s, t] = best + S[t, s] if s > 0 else NEG_INF
            best, arg = NEG_INF, s
            for r in range(s, t):
                value = CL[s, r] + IL[r, t]
                if value > best:
                    best, arg = value, r
            CL[s, t], bCL[s, t] = best, arg
            best, arg = NEG_INF, t
            for r in range(s + 1, t + 1):
                value = IR[s, r] + CR[r, t]
                if value > best:
                    best, arg = value, r
            CR[s, t], bCR[s, t] = best, arg


@njit(cache=True, nogil=True)
def _trace(s, t, kind, bCL, bCR, bI, heads):
    """Fill ``heads`` from the back-pointers of span ``[s, t]`` (kind: 0 CL, 1 CR, 2 IL, 3 IR)."""
    stack = [(s, t, kind)]
    while len(stack) > 0:
        s, t, kind = stack.pop()
        if s == t:
            continue
        if kind == 0:
            r = bCL[s, t]
            stack.append((s, r, 0))
            stack.append((r, t, 2))
        elif kind == 1:
            r = bCR[s, t]
            stack.append((s, r, 3))
            stack.append((r, t, 1))
        else:
            if kind == 2:
                heads[s - 1] = t
            else:
                heads[t - 1] = s
            r = bI[s, t]
            stack.append((s, r, 1))
            stack.append((r + 1, t, 0))


@njit(cache=True, nogil=True)
def eisner(S, single_root, heads_out):
    """Highest-scoring projective tree (Eisner's algorithm); returns its score.

    Parameters
    ----------
    S : ndarray of shape (n + 1, n + 1)
        Arc scores ``S[h, m]``.
    single_root : bool
        Only trees with exactly one root child.
    heads_out : ndarray of int64 of shape (n,)
        Overwritten with the heads of the best tree.

    Returns
    -------
    score : float
    """
    N = S.shape[0]
    n = N - 1
    CL, CR, IL, IR = _span_tables(N)
    bCL = np.zeros((N, N), dtype=np.int64)
    bCR = np.zeros((N, N), dtype=np.int64)
    bI = np.zeros((N, N), dtype=np.int64)
    if not single_root:
        _best_spans(S, 0, n, CL, CR, IL, IR, bCL, bCR, bI)
        _trace(0, n, 1, bCL, bCR, bI, heads_out)
        return CR[0, n]
    _best_spans(S, 1, n, CL, CR, IL, IR, bCL, bCR, bI)
    best, child = NEG_INF, 1
    for m in range(1, n + 1):
        value = S[0, m] + CL[1, m] + CR[m, n]
        if value > best:
            best, child = value, m
    heads_out[child - 1] = 0
    _trace(1, child, 0, bCL, bCR, bI, heads_out)
    _trace(child, n, 1, bCL, bCR, bI, heads_out)
    return best


#: Largest error of a Matrix-Tree marginal's column sum accepted (see matrix_tree_marginals).
MTT_TOLERANCE = 1e-7


@njit(cache=True, nogil=True)
def matrix_tree_marginals(S, single_root, marginals_out):
    """Arc marginals over all (non-projective) trees and ``log Z`` by the Matrix-Tree theorem.

    Parameters
    ----------
    S : ndarray of shape (n + 1, n + 1)
        Arc scores ``S[h, m]``.
    single_root : bool
        Only trees with exactly one root child (Koo et al. 2007: the first row
        of the token Laplacian replaced by the root scores).
    marginals_out : ndarray of shape (n + 1, n + 1)
        Overwritten with ``p((h, m) in y)``.

    Returns
    -------
    log_z : float
        NaN (and NaN marginals) when the result would not be accurate: the
        marginals of each word must sum to one within ``MTT_TOLERANCE``,
        which fails only for near-deterministic scores whose dominant arcs
        form a cycle (a nearly singular Laplacian; differences of arc scores
        beyond about 40 with multiple roots).
    """
    N = S.shape[0]
    n = N - 1
    # scale the arcs into each word by their largest score: every tree has exactly one arc
    # into each word, so log Z shifts by the sum of these maxima (and the Laplacian's
    # columns, one per word, are scaled exactly, which keeps it well conditioned)
    shift = 0.0
    A = np.zeros((N, N))
    for m in range(1, N):
        top = NEG_INF
        for h in range(N):
            if h != m and S[h, m] > top:
                top = S[h, m]
        if top == NEG_INF:  # a word no arc can reach: no tree at all
            marginals_out[:, :] = 0.0
            return NEG_INF
        shift += top
        for h in range(N):
            if h != m:
                A[h, m] = np.exp(S[h, m] - top)
    L = np.zeros((n, n))  # token m is row/column m - 1
    for m in range(1, N):
        for h in range(1, N):
            if h != m:
                L[h - 1, m - 1] = -A[h, m]
                L[m - 1, m - 1] += A[h, m]
        if not single_root:
            L[m - 1, m - 1] += A[0, m]
    root_scale = 1.0
    if single_root:
        # the root row is scaled by its largest entry: exact for the determinant (a
        # factor) and for the marginals (the formulas below read the scaled row), and it
        # keeps the matrix well conditioned when every root arc is unlikely
        root_scale = 0.0
        for m in range(1, N):
            root_scale = max(root_scale, A[0, m])
        if root_scale == 0.0:
            marginals_out[:, :] = 0.0
            return NEG_INF
        for m in range(1, N):
            A[0, m] /= root_scale
            L[0, m - 1] = A[0, m]
    sign, log_det = np.linalg.slogdet(L)
    marginals_out[:, :] = 0.0
    if sign <= 0.0:  # every word reachable, so Z > 0: rounding ate the determinant
        marginals_out[:, :] = np.nan
        return np.nan
    inverse = np.linalg.inv(L)
    for m in range(1, N):
        j = m - 1
        # d log det / d L[a, b] = inverse[b, a]
        diagonal = 0.0 if (single_root and j == 0) else inverse[j, j]
        marginals_out[0, m] = A[0, m] * (inverse[j, 0] if single_root else diagonal)
        for h in range(1, N):
            if h == m:
                continue
            off = 0.0 if (single_root and h == 1) else inverse[j, h - 1]
            marginals_out[h, m] = A[h, m] * (diagonal - off)
    # Near-deterministic scores whose dominant arcs form a cycle make the Laplacian
    # nearly singular: its determinant and the differences of inverse entries above
    # then cancel catastrophically.  Every word has exactly one head, so the error
    # shows in the column sums: beyond MTT_TOLERANCE the result is refused (NaN).
    for m in range(1, N):
        total = 0.0
        for h in range(N):
            total += marginals_out[h, m]
            if marginals_out[h, m] < -MTT_TOLERANCE:
                total = np.nan
        if not abs(total - 1.0) <= MTT_TOLERANCE:
            marginals_out[:, :] = np.nan
            return np.nan
    return log_det + shift + np.log(root_scale)


@njit(cache=True, nogil=True)
def _find_cycle(best_in, active, n_nodes, stamp, cycle):
    """Members of a cycle of the ``best_in`` pointers among active nodes; returns its size."""
    stamp[:n_nodes] = -1
    for start in range(1, n_nodes):
        if not active[start] or stamp[start] != -1:
            continue
        node = start
        while node != 0 and stamp[node] == -1:
            stamp[node] = start
            node = best_in[node]
        if node != 0 and stamp[node] == start:  # walked into this walk's own path: a cycle
            size = 0
            member = node
            while True:
                cycle[size] = member
                size += 1
                member = best_in[member]
                if member == node:
                    return size
    return 0


@njit(cache=True, nogil=True)
def _maximum_arborescence(S, heads_out):
    """Chu-Liu-Edmonds: best tree rooted at 0 (any number of root children); its score."""
    N = S.shape[0]
    M = 2 * N  # every contraction adds a node
    W = np.full((M, M), NEG_INF)
    for h in range(N):
        for m in range(1, N):
            if h != m:
                W[h, m] = S[h, m]
    active = np.zeros(M, dtype=np.bool_)
    active[:N] = True
    best_in = np.zeros(M, dtype=np.int64)
    cycle_head = np.full(M, -1, dtype=np.int64)
    parent = np.full(M, -1, dtype=np.int64)
    enter = np.full((M, M), -1, dtype=np.int64)
    leave = np.full((M, M), -1, dtype=np.int64)
    stamp = np.empty(M, dtype=np.int64)
    cycle = np.empty(M, dtype=np.int64)
    n_nodes = N
    while True:
        for v in range(1, n_nodes):
            if active[v]:
                best, arg = NEG_INF, 0
                for u in range(n_nodes):
                    if active[u] and u != v and W[u, v] > best:
                        best, arg = W[u, v], u
                best_in[v] = arg
        size = _find_cycle(best_in, active, n_nodes, stamp, cycle)
        if size == 0:
            break
        c = n_nodes
        n_nodes += 1
        for j in range(size):
            v = cycle[j]
            active[v] = False
            parent[v] = c
            cycle_head[v] = best_in[v]
        for u in range(c):
            if not active[u]:
                continue
            best, arg = NEG_INF, -1
            for j in range(size):  # entering the cycle at v breaks the arc best_in[v] -> v
                v = cycle[j]
                value = W[u, v] - W[cycle_head[v], v]
                if value > best:
                    best, arg = value, v
            W[u, c], enter[c, u] = best, arg
            best, arg = NEG_INF, -1
            for j in range(size):
                v = cycle[j]
                if W[v, u] > best:
                    best, arg = W[v, u], v
            W[c, u], leave[c, u] = best, arg
        W[c, 0] = NEG_INF
        active[c] = True
    head = np.full(M, -1, dtype=np.int64)
    for v in range(1, n_nodes):
        if active[v]:
            head[v] = best_in[v]
    for c in range(n_nodes - 1, N - 1, -1):  # expand the newest contraction first
        u = head[c]
        for v in range(c):
            if parent[v] == c:
                head[v] = cycle_head[v]
        head[enter[c, u]] = u
        for w in range(n_nodes):
            if head[w] == c:
                head[w] = leave[c, w]
    score = 0.0
    for m in range(1, N):
        heads_out[m - 1] = head[m]
        score += S[head[m], m]
    return score


@njit(cache=True, nogil=True)
def chu_liu_edmonds(S, single_root, heads_out):
    """Highest-scoring tree, projective or not (Chu-Liu-Edmonds); returns its score.

    With ``single_root`` and an unconstrained optimum with several root
    children, the best tree is searched among those whose only root arc is
    ``(0, c)``, for every token ``c`` (exact; ``n`` more runs in that case).

    Parameters
    ----------
    S : ndarray of shape (n + 1, n + 1)
        Arc scores ``S[h, m]``.
    single_root : bool
        Only trees with exactly one root child.
    heads_out : ndarray of int64 of shape (n,)
        Overwritten with the heads of the best tree.

    Returns
    -------
    score : float
    """
    N = S.shape[0]
    score = _maximum_arborescence(S, heads_out)
    n_root_children = 0
    for m in range(N - 1):
        if heads_out[m] == 0:
            n_root_children += 1
    if not single_root or n_root_children <= 1:
        return score
    best = NEG_INF
    candidate = np.empty(N - 1, dtype=np.int64)
    restricted = S.copy()
    for c in range(1, N):
        for m in range(1, N):
            restricted[0, m] = S[0, m] if m == c else NEG_INF
        value = _maximum_arborescence(restricted, candidate)
        if value > best:
            best = value
            heads_out[:] = candidate
    return best
