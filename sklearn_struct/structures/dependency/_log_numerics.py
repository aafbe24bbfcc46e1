"""Log-space sums of the dependency parsers' inference (first and second order)."""

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
