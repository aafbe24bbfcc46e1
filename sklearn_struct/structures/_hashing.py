"""Feature hashing inside numba, shared by the arc and grammar features.

A feature is a hash of its template id and attribute ids: one multiply-xorshift
round per 64-bit id (:func:`absorb`) from :data:`SEED`, and the MurmurHash3
finaliser (:func:`finish`) cut to ``hash_bits`` bits.
"""

import numpy as np
from numba import njit

__all__ = ["SEED", "absorb", "finish"]

SEED = np.uint64(0x243F6A8885A308D3)
_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)
_FINAL_1 = np.uint64(0xFF51AFD7ED558CCD)
_FINAL_2 = np.uint64(0xC4CEB9FE1A85EC53)
_U32 = np.uint64(32)
_U33 = np.uint64(33)


@njit(cache=True, nogil=True, inline="always")
def absorb(h, value):
    """Mix one 64-bit value into the running hash (a multiply-xorshift round)."""
    h = (h ^ np.uint64(value)) * _MULTIPLIER
    return h ^ (h >> _U32)


@njit(cache=True, nogil=True, inline="always")
def finish(h, hash_bits):
    """The MurmurHash3 finaliser, then the top ``hash_bits`` bits."""
    h = (h ^ (h >> _U33)) * _FINAL_1
    h = (h ^ (h >> _U33)) * _FINAL_2
    h = h ^ (h >> _U33)
    return np.int64(h >> np.uint64(64 - hash_bits))
