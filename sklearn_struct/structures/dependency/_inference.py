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

from ._log_numerics import NEG_INF, NEGLIGIBLE, _log_add
from ._matrix_tree import _inverse_route, _subtraction_free


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
#: ``log 2`` in two parts, the first with trailing zero bits, so that ``k * _LN2_HIGH`` is
#: exact for the ``|k| < 2^11`` of :func:`_scaled_weights`.
_LN2_HIGH, _LN2_LOW = 6.93147180369123816490e-01, 1.90821492927058770002e-10
#: ``1 / j!`` for ``j = 13, ..., 0``: Taylor's series of ``exp(r)``, ``|r| <= log(2) / 2``,
#: whose remainder (under ``0.35^14 / 14! < 5e-18``) is below rounding.
_EXP_SERIES = tuple(1.0 / float(np.prod(np.arange(1, j + 1))) for j in range(13, -1, -1))


@njit(cache=True, nogil=True, inline="always")
def _flush(value):
    """``value``, or zero below :data:`TINY` (which also catches NaN)."""
    return value if value >= TINY else 0.0


@njit(cache=True, nogil=True)
def _scaled_weights(exponents):
    """``exp(x) / KAPPA`` of every exponent ``x``, in place, zero below
    :data:`_FLUSH_EXPONENT` (and for NaN): the weights of the real-space recursions.

    ``exp(x) = 2^k exp(r)`` with ``k`` the integer nearest ``x / log 2``: the series gives
    ``exp(r)`` and ``2^k`` is written into a double's exponent bits.  Unlike a call of the
    library's ``exp`` per value, the loop has no call and no branch, so LLVM vectorises it:
    a second-order parser takes one exponential per sibling part, about ``n^3 / 3`` per
    sentence, which took more time than the inside pass's sums.  Within two units in the
    last place of ``np.exp``.
    """
    n = exponents.shape[0]
    powers = np.empty(n, np.int64)
    for i in range(n):
        kept = exponents[i] >= _FLUSH_EXPONENT  # (False for NaN)
        x = exponents[i] if kept else _FLUSH_EXPONENT  # k in range for every value
        k = np.floor(x * (1.0 / np.log(2.0)) + 0.5)
        r = (x - k * _LN2_HIGH) - k * _LN2_LOW
        series = 0.0
        for coefficient in _EXP_SERIES:
            series = series * r + coefficient
        exponents[i] = series / KAPPA if kept else 0.0
        powers[i] = (np.int64(k) + 1023) << 52
    scales = powers.view(np.float64)
    for i in range(n):
        exponents[i] *= scales[i]


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
            W[h, m] = S[h, m] - top  # NaN for a word no arc reaches: flushed
    _scaled_weights(W.reshape(N * N))
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
    W = np.full((N, N), NEG_INF)  # no arc into the root: weight 0
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
