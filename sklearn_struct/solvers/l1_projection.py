"""Proximal operator of the L1 norm, optionally on the non-negative orthant.

``prox_l1(v, t) = argmin_w 1/2 ||w - v||^2 + t ||w||_1`` is the soft threshold
``sign(v) * max(|v| - t, 0)``: coordinates below ``t`` in magnitude become
exact zeros, which is what makes the proximal subgradient method of the L1-M3N
primal sparse.

With some coordinates ``M`` also kept non-negative (the edge weights of a
min-cut model), the problem separates over coordinates; for ``j`` in ``M`` the
minimiser of ``1/2 (w_j - v_j)^2 + t w_j`` over ``w_j >= 0`` is ``max(v_j - t,
0)``, i.e. the soft threshold of ``v_j`` clipped at 0.
"""

import numpy as np
from numba import njit

__all__ = ["clip_nonnegative", "prox_l1", "soft_threshold_inplace"]


@njit(cache=True)
def soft_threshold_inplace(w, threshold, nonnegative):
    """``w <- prox_l1(w, threshold)`` in place, ``w_j >= 0`` where ``nonnegative[j]``.

    Callable from other numba code.
    """
    for k in range(w.shape[0]):
        magnitude = abs(w[k]) - threshold
        if magnitude <= 0.0 or (nonnegative[k] and w[k] < 0.0):
            w[k] = 0.0
        else:
            w[k] = magnitude if w[k] > 0.0 else -magnitude


def prox_l1(v, threshold, nonnegative=None):
    """``argmin_w 1/2 ||w - v||^2 + threshold ||w||_1`` (over ``w_j >= 0`` on a mask).

    Parameters
    ----------
    v : array-like of shape (n,)
        Point (not modified).
    threshold : float
        Weight of the L1 norm, ``>= 0``.
    nonnegative : array-like of bool of shape (n,), default=None
        Coordinates constrained to be ``>= 0``; ``None``: none.

    Returns
    -------
    w : ndarray of shape (n,)
        The soft threshold of ``v`` (clipped at 0 on ``nonnegative``), with
        exact zeros wherever ``|v_k| <= threshold``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.solvers.l1_projection import prox_l1
    >>> prox_l1(np.array([3.0, -1.0, 0.2]), 0.5)
    array([ 2.5, -0.5,  0. ])
    """
    w = np.array(v, dtype=np.float64)
    if w.ndim != 1:
        raise ValueError(f"prox_l1 expects a 1-D vector, got shape {w.shape}.")
    if not np.all(np.isfinite(w)):
        raise ValueError("prox_l1: v contains NaN or infinity.")
    threshold = float(threshold)
    if not threshold >= 0.0:
        raise ValueError(f"prox_l1: threshold must be >= 0, got {threshold}.")
    if nonnegative is None:
        nonnegative = np.zeros(w.shape, dtype=bool)
    nonnegative = np.asarray(nonnegative)
    if nonnegative.dtype != bool or nonnegative.shape != w.shape:
        raise ValueError(
            f"prox_l1: nonnegative must be a boolean mask of shape {w.shape}, got "
            f"dtype {nonnegative.dtype} and shape {nonnegative.shape}."
        )
    soft_threshold_inplace(w, threshold, nonnegative)
    return w


def clip_nonnegative(w, nonnegative):
    """``w`` with its negative coordinates where ``nonnegative`` is True set to 0.

    Parameters
    ----------
    w : ndarray of shape (n,)
        Weights (not modified).
    nonnegative : ndarray of bool of shape (n,) or None
        Coordinates constrained to be ``>= 0``; ``None``: none.

    Returns
    -------
    clipped : ndarray of shape (n,)
        A new array (``w`` itself when ``nonnegative`` is None).
    """
    if nonnegative is None:
        return w
    return np.where(nonnegative & (w < 0.0), 0.0, w)
