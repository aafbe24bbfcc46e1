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
row by the root scores; marginals from its inverse; a subtraction-free route
where that Laplacian is too ill-conditioned).
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


#: The determinant-and-inverse route is taken when the multi-root Laplacian keeps at
#: least this fraction of every diagonal entry through elimination (errors of
#: about ``eps / ratio``), and its marginals then sum to one per word within
#: MTT_TOLERANCE; otherwise the subtraction-free route.
CONDITION_LIMIT = 1e-5
MTT_TOLERANCE = 1e-10
#: Single root by the subtraction-free route: root weights scaled down by ``t``
#: until the expected number of root children exceeds one by at most this.
SINGLE_ROOT_SLACK = 1e-12


@njit(cache=True, nogil=True)
def _gth_log_det(W, r):
    """``log det`` of the Laplacian ``L[j, j] = r[j] + sum_i W[i, j]``, ``L[i, j] = -W[i, j]``.

    Gaussian elimination in the Grassmann-Taksar-Heyman way: eliminating a node
    adds non-negative terms to the remaining arc and root weights, and each
    pivot is recomputed as a sum of non-negative terms, never as a difference,
    so every pivot is accurate to rounding whatever the conditioning.
    ``W`` (arc weights ``i -> j`` between nodes, zero diagonal) and ``r`` are
    overwritten.  Also returns the smallest ratio of a pivot to its column's
    diagonal entry before elimination: what plain elimination would have kept
    after cancelling, so ``eps / ratio`` bounds the relative error of the
    determinant-and-inverse route.
    """
    n = r.shape[0]
    diagonal = r.copy()
    for k in range(n):
        for i in range(n):
            diagonal[k] += W[i, k] if i != k else 0.0
    log_det = 0.0
    smallest_ratio = 1.0
    shares = np.empty(n)
    for k in range(n):
        pivot = r[k]
        for i in range(k + 1, n):
            pivot += W[i, k]
        if pivot <= 0.0:
            return NEG_INF, 0.0
        log_det += np.log(pivot)
        smallest_ratio = min(smallest_ratio, pivot / diagonal[k])
        for j in range(k + 1, n):
            shares[j] = W[k, j] / pivot
            r[j] += r[k] * shares[j]
        for i in range(k + 1, n):  # row by row: contiguous in W
            into_k = W[i, k]
            if into_k == 0.0:
                continue
            for j in range(k + 1, n):
                if j != i:
                    W[i, j] += into_k * shares[j]
    return log_det, smallest_ratio


@njit(cache=True, nogil=True)
def _escape_probabilities(W, r, target, work, values_out):
    """``values_out[j]``: probability that the walk from ``j`` reaches the root before ``target``.

    The walk leaves node ``j`` for node ``i`` at rate ``W[i, j]`` (towards a
    head) and for the root at rate ``r[j]``; ``target`` absorbs.  Solved by
    censoring the nodes one by one (GTH elimination, subtraction-free) and
    substituting back.  ``work`` is an ``(n, n)`` scratch.
    """
    n = r.shape[0]
    # rates[j, i]: from j to i; to_root[j], to_target[j]
    rates = work
    to_root = np.empty(n)
    to_target = np.empty(n)
    out = np.empty(n)
    for j in range(n):
        to_root[j] = r[j]
        to_target[j] = W[target, j]
        for i in range(n):
            rates[j, i] = W[i, j] if (i != j and i != target and j != target) else 0.0
    order = np.empty(n - 1, dtype=np.int64)
    count = 0
    for j in range(n):
        if j != target:
            order[count] = j
            count += 1
    for step in range(n - 1):
        k = order[step]
        total = to_root[k] + to_target[k]
        for later in range(step + 1, n - 1):
            total += rates[k, order[later]]
        out[k] = total
        if total == 0.0:
            continue
        for later in range(step + 1, n - 1):
            j = order[later]
            share = rates[j, k] / total
            if share == 0.0:
                continue
            to_root[j] += share * to_root[k]
            to_target[j] += share * to_target[k]
            for later2 in range(step + 1, n - 1):
                i = order[later2]
                if i != j:
                    rates[j, i] += share * rates[k, i]
    values_out[target] = 0.0
    for step in range(n - 2, -1, -1):
        k = order[step]
        if out[k] == 0.0:
            values_out[k] = 0.0
            continue
        value = to_root[k]
        for later in range(step + 1, n - 1):
            value += rates[k, order[later]] * values_out[order[later]]
        values_out[k] = value / out[k]


@njit(cache=True, nogil=True)
def _stable_multi_root(A, root, marginals_out):
    """Multi-root ``log Z`` (without shifts) and marginals, subtraction-free, in O(n^4).

    ``A[h, m]`` (tokens ``1..n``) and ``root[m]`` are exponentiated scores.
    Column ``m`` of the marginals is a normalised distribution: the root with
    weight ``root[m]``, token ``h`` with weight ``A[h, m]`` times the
    probability that the walk from ``h`` up its head candidates reaches the
    root without passing through ``m`` (then adding ``h -> m`` closes no cycle).
    """
    N = A.shape[0]
    n = N - 1
    W = np.zeros((n, n))
    r = np.empty(n)
    for m in range(1, N):
        r[m - 1] = root[m]
        for h in range(1, N):
            W[h - 1, m - 1] = A[h, m] if h != m else 0.0
    log_z = _gth_log_det(W.copy(), r.copy())[0]
    work = np.empty((n, n))
    escape = np.empty(n)
    for m in range(1, N):
        _escape_probabilities(W, r, m - 1, work, escape)
        total = r[m - 1]
        for h in range(1, N):
            if h != m:
                total += W[h - 1, m - 1] * escape[h - 1]
        marginals_out[0, m] = r[m - 1] / total
        for h in range(1, N):
            if h != m:
                marginals_out[h, m] = W[h - 1, m - 1] * escape[h - 1] / total
    return log_z


@njit(cache=True, nogil=True)
def _stable_matrix_tree(A, root, single_root, marginals_out):
    """The subtraction-free route: multi-root directly; single root as the limit of
    multi-root trees with the root weights scaled by ``t -> 0`` (``Z(t) = t Z_1 +
    t^2 Z_2 + ...``), ``t`` shrunk until the expected number of root children is
    one within ``SINGLE_ROOT_SLACK``, and ``log Z_1 = log Z(t) - log t - (that excess)``
    to first order."""
    if not single_root:
        return _stable_multi_root(A, root, marginals_out)
    N = A.shape[0]
    t = 1e-6
    scaled = np.empty(N)
    for attempt in range(40):
        for m in range(N):
            scaled[m] = t * root[m]
        log_z = _stable_multi_root(A, scaled, marginals_out)
        excess = -1.0
        for m in range(1, N):
            excess += marginals_out[0, m]
        if excess <= SINGLE_ROOT_SLACK:
            return log_z - np.log(t) - max(excess, 0.0)
        t *= max(1e-8, 0.5 * SINGLE_ROOT_SLACK / excess)
    return np.nan


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

    Notes
    -----
    The inverse of the Laplacian (O(n^3)) loses accuracy on near-deterministic
    scores whose dominant arcs form a cycle: the Laplacian is then nearly
    singular (arc score differences beyond about 10).  Its elimination is
    first done without subtractions (Grassmann-Taksar-Heyman), which gives
    ``log Z`` with multiple roots and measures how much plain elimination
    would cancel.  Beyond ``CONDITION_LIMIT``, or when the marginals of a
    word do not sum to one within ``MTT_TOLERANCE``, everything is computed
    by a subtraction-free route (escape probabilities of a walk up the head
    candidates for the marginals, O(n^4)), accurate to rounding.
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
    # elimination of the multi-root Laplacian without subtractions: its log det (exact
    # for multiple roots) and how much plain elimination would cancel
    W = np.zeros((n, n))
    for m in range(1, N):
        for h in range(1, N):
            if h != m:
                W[h - 1, m - 1] = A[h, m]
    log_det, ratio = _gth_log_det(W, A[0, 1:].copy())
    marginals_out[:, :] = 0.0
    if ratio < CONDITION_LIMIT:
        return _stable_matrix_tree(A, A[0], single_root, marginals_out) + shift + \
            np.log(root_scale)
    if single_root:
        sign, log_det = np.linalg.slogdet(L)
        if sign <= 0.0:  # every word reachable, so Z > 0: rounding ate the determinant
            return _stable_matrix_tree(A, A[0], single_root, marginals_out) + shift + \
                np.log(root_scale)
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
    # a last check: every word has exactly one head
    for m in range(1, N):
        total = 0.0
        for h in range(N):
            total += marginals_out[h, m]
            if marginals_out[h, m] < -MTT_TOLERANCE:
                total = np.nan
        if not abs(total - 1.0) <= MTT_TOLERANCE:
            return _stable_matrix_tree(A, A[0], single_root, marginals_out) + shift + \
                np.log(root_scale)
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
            for m in range(N - 1):  # a loop: a slice copy compiles an error message
                heads_out[m] = candidate[m]
    return best
