"""Inference over the dependency trees of one sentence, in numba.

A sentence has tokens ``1..n`` and the root ``0``.  Arc scores are an
``(n + 1, n + 1)`` matrix ``S[h, m]`` (head ``h``, modifier ``m``; column 0 and
the diagonal are never read).  A tree is a head array ``heads`` of length
``n``: ``heads[m - 1]`` is the head of token ``m``.  ``single_root=True`` admits
only trees in which exactly one token hangs from the root (the UD convention).

Projective trees (Eisner 1996, first order, O(n^3)): :func:`eisner` (argmax),
:func:`projective_marginals` (inside, arc marginals as the gradient of ``log Z``
by a reverse pass over the same recursions; in real space on scaled weights
unless ``Z`` would be too small there, else in log space) and
:func:`projective_log_partition` (the inside pass alone).  The
spans are the classic ones: ``I`` incomplete spans ``[s, t]`` headed at one end
with the arc between the ends, ``C`` complete spans headed at one end.  With a
single root the recursions run over tokens ``1..n`` only and the root picks the
one token that heads the whole sentence: ``log Z = logsumexp_m S[0, m] +
CL[1, m] + CR[m, n]``.

Non-projective trees: :func:`matrix_tree_marginals` (the Matrix-Tree theorem,
Koo, Globerson, Carreras & Collins 2007: ``Z`` is the determinant of a
Laplacian of the exponentiated scores), by a subtraction-free elimination of
that Laplacian that stays accurate on near-deterministic scores, in O(n^3).
"""

import numpy as np
from numba import njit

NEG_INF = -np.inf
#: A term further than this (in log space) below the largest of a sum counts as this far:
#: it adds under 1e-30 of the sum either way, far below rounding, but its exponential
#: could otherwise be subnormal, which costs the processor many times a normal one (the
#: scores of trained models spread over hundreds).  Clamping keeps the loop free of
#: branches, which skipping the term would not.
NEGLIGIBLE = -70.0


@njit(cache=True, nogil=True)
def _log_add(a, b):
    """``log(exp(a) + exp(b))``; a term below ``exp(-40)`` of the other (under half an
    ulp) is skipped, which makes sums of near-deterministic weights cheap."""
    if a < b:
        a, b = b, a
    if b == NEG_INF or a - b > 40.0:
        return a
    return a + np.log1p(np.exp(b - a))


@njit(cache=True, nogil=True)
def _span_tables(N):
    """Empty (-inf) tables of complete and incomplete spans: CL, CR, IL, IR."""
    return (np.full((N, N), NEG_INF), np.full((N, N), NEG_INF), np.full((N, N), NEG_INF),
            np.full((N, N), NEG_INF))


@njit(cache=True, nogil=True)
def _inside(S, first, last, CL, CR, IL, IR, inner_out):
    """Inside log-scores of all spans over positions ``first..last`` (tables indexed by position).

    ``first == 0`` lets the root head spans (never be a modifier); ``first == 1``
    leaves it out.  Each log-sum-exp is taken in two passes (maximum, then a
    sum of exponentials): one logarithm per span instead of one per term.  The
    log-sum over split points that both incomplete spans of ``s..t`` share goes
    into ``inner_out[s, t]`` for the outside pass (not ``IR - S``: a forbidden
    arc, ``S = -inf``, would give NaN).
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
            inner_out[s, t] = inner
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
        total += np.exp(max(values[j] - top, NEGLIGIBLE))
    return top + np.log(total)


@njit(cache=True, nogil=True)
def _share(grad_out, total, value):
    """Adjoint of one term of ``total = logsumexp(..., value, ...)``."""
    if grad_out == 0.0 or value == NEG_INF or total == NEG_INF:
        return 0.0
    return grad_out * np.exp(max(value - total, NEGLIGIBLE))


@njit(cache=True, nogil=True)
def _outside(S, first, last, CL, CR, IL, IR, inner, gCL, gCR, gIL, gIR, gS):
    """Reverse pass of :func:`_inside`: adds d(log Z)/d(table) into the ``g`` arrays and gS."""
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
                for r in range(s, t):
                    share = _share(g_inner, inner[s, t], CR[s, r] + CL[r + 1, t])
                    gCR[s, r] += share
                    gCL[r + 1, t] += share


@njit(cache=True, nogil=True)
def _projective_inside(S, single_root):
    """``log Z`` over projective trees and the inside tables of :func:`_inside`."""
    N = S.shape[0]
    n = N - 1
    CL, CR, IL, IR = _span_tables(N)
    inner = np.full((N, N), NEG_INF)
    if not single_root:
        _inside(S, 0, n, CL, CR, IL, IR, inner)
        return CR[0, n], CL, CR, IL, IR, inner
    _inside(S, 1, n, CL, CR, IL, IR, inner)
    log_z = NEG_INF
    for m in range(1, n + 1):
        log_z = _log_add(log_z, S[0, m] + CL[1, m] + CR[m, n])
    return log_z, CL, CR, IL, IR, inner


#: Real-space inside-outside (:func:`_real_inside`, :func:`_real_outside`): every tree has
#: exactly one arc into each word, so the weights ``exp(S[h, m] - c_m) / KAPPA``, with
#: ``c_m`` the largest score into ``m``, scale every tree by the same factor: the
#: marginals do not change and ``log Z`` shifts by ``sum_m c_m + n log KAPPA``.  Weights
#: are then at most ``1 / KAPPA``, and as a span of ``k`` arcs has at most
#: ``C(3k, k) / (2k + 1) <= KAPPA^k`` projective structures, every inside value and ``Z``
#: stay at most ``KAPPA`` (no overflow at any length).
KAPPA = 27.0 / 4.0
#: Weights and span values below ``TINY`` are flushed to zero, so that every product of two
#: is a normal double (``TINY^2 > 2.2e-308``): subnormals cost many times a normal number.
#: A flushed value has an outside weight below ``n + 1`` (its completions number at most
#: ``(n + 1) KAPPA^(n - k)``), so flushing removes under ``10 N^3 TINY`` of ``Z`` in all.
TINY = 1e-150
#: The real-space result stands when ``Z >= SAFE N^3`` (scaled as above): flushing then
#: changes ``Z`` and the marginals by under ``10 TINY / SAFE = 1e-19`` relative.  Otherwise
#: (scores spread so widely that ``Z`` is tiny, or no tree) the log-space recursion runs.
SAFE = 1e-130
#: Exponents below this give weights under ``TINY``: flushed before taking the exponential.
_FLUSH_EXPONENT = np.log(TINY * KAPPA)


@njit(cache=True, nogil=True, inline="always")
def _flush(value):
    """``value``, or zero below :data:`TINY` (which also catches NaN)."""
    return value if value >= TINY else 0.0


@njit(cache=True, nogil=True)
def _real_weights(S, W):
    """Scaled weights ``W[h, m] = exp(S[h, m] - c_m) / KAPPA`` (see :data:`KAPPA`), flushed
    below :data:`TINY`; returns the shift of ``log Z``, ``sum_m c_m + n log KAPPA``."""
    N = S.shape[0]
    shift = 0.0
    for m in range(1, N):
        top = NEG_INF
        for h in range(N):
            if h != m and S[h, m] > top:
                top = S[h, m]
        shift += top + np.log(KAPPA)
        for h in range(N):
            exponent = S[h, m] - top  # NaN for a word no arc reaches: flushed
            W[h, m] = np.exp(exponent) / KAPPA if exponent >= _FLUSH_EXPONENT else 0.0
    return shift


@njit(cache=True, nogil=True, inline="always")
def split_sum(A, B, s, t, lo, hi, shift):
    """``sum_{r = lo}^{hi - 1} A[s, r] B[r + shift, t]``: a span made of two adjacent ones,
    over its split points (real space)."""
    total = 0.0
    for r in range(lo, hi):
        total += A[s, r] * B[r + shift, t]
    return total


@njit(cache=True, nogil=True, inline="always")
def split_adjoint(g, A, B, gA, gB, s, t, lo, hi, shift):
    """Adjoint of :func:`split_sum` at gradient ``g``: into ``gA`` and ``gB``."""
    for r in range(lo, hi):
        gA[s, r] += g * B[r + shift, t]
        gB[r + shift, t] += g * A[s, r]


@njit(cache=True, nogil=True)
def _real_inside(W, first, last, CL, CR, IL, IR, inner):
    """:func:`_inside` on scaled weights in real space (sums of products), into zero tables.

    Each span value is flushed to zero below :data:`TINY`, so every product of two
    values or of a value and a weight is a normal number.
    """
    for s in range(first, last + 1):
        CL[s, s] = 1.0
        CR[s, s] = 1.0
    for k in range(1, last - first + 1):
        for s in range(first, last - k + 1):
            t = s + k
            inner[s, t] = _flush(split_sum(CR, CL, s, t, s, t, 1))
            IR[s, t] = _flush(inner[s, t] * W[s, t])
            if s > 0:
                IL[s, t] = _flush(inner[s, t] * W[t, s])
            CL[s, t] = _flush(split_sum(CL, IL, s, t, s, t, 0))
            CR[s, t] = _flush(split_sum(IR, CR, s, t, s + 1, t + 1, 0))


@njit(cache=True, nogil=True)
def _real_outside(W, first, last, CL, CR, IL, IR, inner, gCL, gCR, gIL, gIR, marginals_out):
    """Reverse pass of :func:`_real_inside`: adds ``d(log Z)/d(value)`` into the ``g`` tables
    and the arc marginals (``g`` times the arc's span value) into ``marginals_out``.

    A span whose value was flushed passes nothing on (the derivative of the flush), nor
    one whose ``g`` is below :data:`TINY` (its span is in a tree with a probability under
    ``TINY KAPPA``), which keeps every product normal.
    """
    for k in range(last - first, 0, -1):
        for s in range(first, last - k + 1):
            t = s + k
            g = gCR[s, t]
            if g >= TINY and CR[s, t] > 0.0:
                split_adjoint(g, IR, CR, gIR, gCR, s, t, s + 1, t + 1, 0)
            g = gCL[s, t]
            if g >= TINY and CL[s, t] > 0.0:
                split_adjoint(g, CL, IL, gCL, gIL, s, t, s, t, 0)
            g = 0.0
            if gIR[s, t] >= TINY and IR[s, t] > 0.0:
                marginals_out[s, t] = gIR[s, t] * IR[s, t]
                g += gIR[s, t] * W[s, t]
            if s > 0 and gIL[s, t] >= TINY and IL[s, t] > 0.0:
                marginals_out[t, s] = gIL[s, t] * IL[s, t]
                g += gIL[s, t] * W[t, s]
            if g >= TINY and inner[s, t] > 0.0:
                split_adjoint(g, CR, CL, gCR, gCL, s, t, s, t, 1)


@njit(cache=True, nogil=True)
def _real_projective_inside(S, single_root):
    """Real-space inside pass: ``(Z, shift)`` with ``log Z = log(Z) + shift`` (see
    :data:`KAPPA`), the weights, the tables of :func:`_real_inside` and, with a single root,
    the flushed products ``CL[1, m] CR[m, n]`` of each root child ``m``."""
    N = S.shape[0]
    n = N - 1
    W = np.zeros((N, N))
    shift = _real_weights(S, W)
    CL, CR, IL, IR, inner = (np.zeros((N, N)), np.zeros((N, N)), np.zeros((N, N)),
                             np.zeros((N, N)), np.zeros((N, N)))
    sides = np.zeros(N)
    if not single_root:
        _real_inside(W, 0, n, CL, CR, IL, IR, inner)
        return CR[0, n], shift, W, CL, CR, IL, IR, inner, sides
    _real_inside(W, 1, n, CL, CR, IL, IR, inner)
    z = 0.0
    for m in range(1, n + 1):
        sides[m] = _flush(CL[1, m] * CR[m, n])
        z += W[0, m] * sides[m]
    return z, shift, W, CL, CR, IL, IR, inner, sides


@njit(cache=True, nogil=True)
def _is_safe(z, shift, N):
    """Whether the real-space ``Z`` stands (see :data:`SAFE`)."""
    return z >= SAFE * N ** 3 and np.isfinite(shift)


@njit(cache=True, nogil=True)
def projective_log_partition(S, single_root):
    """``log Z`` over projective trees (the inside pass of :func:`projective_marginals`)."""
    z, shift = _real_projective_inside(S, single_root)[:2]
    if _is_safe(z, shift, S.shape[0]):
        return np.log(z) + shift
    return _projective_inside(S, single_root)[0]


@njit(cache=True, nogil=True)
def projective_marginals(S, single_root, marginals_out):
    """Arc marginals over projective trees and ``log Z`` (inside-outside).

    In real space on scaled weights (:func:`_real_inside`, :func:`_real_outside`),
    unless ``Z`` is too small there for flushing tiny values to be negligible (see
    :data:`SAFE`): then in log space (:func:`_log_space_marginals`).

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
    z, shift, W, CL, CR, IL, IR, inner, sides = _real_projective_inside(S, single_root)
    if not _is_safe(z, shift, N):
        return _log_space_marginals(S, single_root, marginals_out)
    gCL, gCR, gIL, gIR = np.zeros((N, N)), np.zeros((N, N)), np.zeros((N, N)), np.zeros((N, N))
    marginals_out[:, :] = 0.0
    if not single_root:
        gCR[0, n] = 1.0 / z
        _real_outside(W, 0, n, CL, CR, IL, IR, inner, gCL, gCR, gIL, gIR, marginals_out)
        return np.log(z) + shift
    for m in range(1, n + 1):
        g = W[0, m] / z
        marginals_out[0, m] = g * sides[m]
        if sides[m] > 0.0:
            gCL[1, m] += g * CR[m, n]
            gCR[m, n] += g * CL[1, m]
    _real_outside(W, 1, n, CL, CR, IL, IR, inner, gCL, gCR, gIL, gIR, marginals_out)
    return np.log(z) + shift


@njit(cache=True, nogil=True)
def _log_space_marginals(S, single_root, marginals_out):
    """:func:`projective_marginals` in log space (:func:`_inside`, :func:`_outside`)."""
    N = S.shape[0]
    n = N - 1
    log_z, CL, CR, IL, IR, inner = _projective_inside(S, single_root)
    gCL, gCR, gIL, gIR = np.zeros((N, N)), np.zeros((N, N)), np.zeros((N, N)), np.zeros((N, N))
    marginals_out[:, :] = 0.0
    if not single_root:
        gCR[0, n] = 1.0
        _outside(S, 0, n, CL, CR, IL, IR, inner, gCL, gCR, gIL, gIR, marginals_out)
        return log_z
    for m in range(1, n + 1):
        share = _share(1.0, log_z, S[0, m] + CL[1, m] + CR[m, n])
        marginals_out[0, m] += share
        gCL[1, m] += share
        gCR[m, n] += share
    _outside(S, 1, n, CL, CR, IL, IR, inner, gCL, gCR, gIL, gIR, marginals_out)
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
def matrix_tree_marginals(S, single_root, marginals_out):
    """Arc marginals over all (non-projective) trees and ``log Z`` by the Matrix-Tree theorem.

    Parameters
    ----------
    S : ndarray of shape (n + 1, n + 1)
        Arc scores ``S[h, m]``.
    single_root : bool
        Only trees with exactly one root child.
    marginals_out : ndarray of shape (n + 1, n + 1)
        Overwritten with ``p((h, m) in y)``.

    Returns
    -------
    log_z : float

    Notes
    -----
    ``Z`` is the determinant of the Laplacian of the exponentiated scores
    (scores shifted per word: every tree has one arc into each word), and the
    marginals come from its inverse (:func:`_inverse_route`) while that is
    accurate.  On confident scores whose best arcs form a cycle the Laplacian
    is nearly singular and its inverse loses every digit; then it is
    eliminated without subtractions (Grassmann-Taksar-Heyman), so the pivots,
    ``log Z`` and the marginals (escape probabilities of a walk up the head
    candidates) are accurate to rounding at any score scale, and eliminating
    the words by halves gives every word's marginals in O(n^3) altogether (on
    log-weights when root weights fall below ``exp(-LINEAR_SPREAD)``).  There a
    single root is the limit of multi-root trees with root weights scaled by
    ``t -> 0`` (``Z(t) = t Z_1 + t^2 Z_2 + ...``): ``t`` shrinks until the
    expected number of root children is one within ``SINGLE_ROOT_SLACK``, and
    ``log Z_1 = log Z(t) - log t - (that excess)`` to first order.
    """
    N = S.shape[0]
    # shift the arcs into each word by their largest score: every tree has exactly one arc
    # into each word, so log Z shifts by the sum of these maxima
    shift = 0.0
    logA = np.full((N, N), NEG_INF)
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
                logA[h, m] = S[h, m] - top
    root_shift = 0.0
    if single_root:
        # one root arc per tree: the root row shifts by its largest score exactly
        root_shift = NEG_INF
        for m in range(1, N):
            root_shift = max(root_shift, logA[0, m])
        if root_shift == NEG_INF:
            marginals_out[:, :] = 0.0
            return NEG_INF
        for m in range(1, N):
            logA[0, m] -= root_shift
    log_z = _inverse_route(logA, single_root, marginals_out)
    if log_z != log_z:  # NaN: inaccurate
        log_z = _subtraction_free(logA, single_root, marginals_out)
    return log_z + shift + root_shift


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
