"""Log-space numerics shared by the chain's and the label tree's recursions and by
tree-reweighted sum-product on graphs (numba).

Sums of exponentials are scaled by their largest term; an entry whose scaled sum is too
small to be accurate falls back to an exact log-sum-exp (see the chain's kernels,
``chain/_kernels.py``, for the whole scheme).
"""

import numpy as np
from numba import njit

__all__ = ["TINY_CONDITIONAL", "TINY_SUM", "UNDERFLOW", "VECTORISE", "exp_transition",
           "largest", "logsumexp"]

# A scaled sum s >= TINY_SUM is accurate to full precision: every term lost to
# underflow is below 1e-307, so the relative error is below K * 1e-307 / TINY_SUM.
TINY_SUM = 1e-250
# Conditionals use p(b | a) = E[a, b] q_b / s_a: the absolute error from
# underflowed terms is below K * 1e-307 / s_a, negligible when s_a >= 1e-20.
TINY_CONDITIONAL = 1e-20
# Exponents below this give exactly 0.0 or a subnormal (< 1e-305): such terms
# cannot change a sum whose largest term is 1 and are skipped in the exact path.
UNDERFLOW = -700.0
# Let LLVM reorder sums (SIMD over labels); no assumptions about NaN/inf.
VECTORISE = {"reassoc", "contract"}


@njit(cache=True, nogil=True, inline="always")
def largest(values):
    """``values.max()`` of a non-empty vector, as a loop (the method compiles slowly)."""
    top = values[0]
    for k in range(1, values.shape[0]):
        top = max(top, values[k])
    return top


@njit(cache=True, nogil=True)
def logsumexp(values):
    """Exact log-sum-exp; exponentials only for the terms that do not underflow."""
    top = largest(values)
    if top == -np.inf:  # every term is exp(-inf) = 0
        return top
    total = 0.0
    for v in values:
        if v - top > UNDERFLOW:
            total += np.exp(v - top)
    return top + np.log(total)


@njit(cache=True, nogil=True, inline="always")
def exp_transition(transition, exp_transition_out, row_max_out):
    """``exp_transition_out[a] = exp(transition[a] - row_max_out[a])``, row by row.

    Each row is scaled by its own maximum, so a row of the matrix never
    underflows as a whole however far apart the rows' scores are (the backward
    recursion and the conditionals ``p(b | a)`` sum one row at a time).
    Computed once per distinct transition matrix and passed to the chain's
    ``chain_forward_backward_scaled`` and the label tree's recursions.
    """
    K = transition.shape[0]
    for a in range(K):
        top = largest(transition[a])
        row_max_out[a] = top
        for b in range(K):
            exp_transition_out[a, b] = np.exp(transition[a, b] - top)
