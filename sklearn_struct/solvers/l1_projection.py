"""Exact Euclidean projection onto the L1 ball.

The sort-based method of Duchi, Shalev-Shwartz, Singer and Chandra, "Efficient
projections onto the l1-ball for learning in high dimensions" (ICML 2008),
Figure 1: with ``u`` the absolute values sorted in decreasing order and
``rho = max{j : u_j - (sum_{r<=j} u_r - radius) / j > 0}``, the projection is
the soft threshold ``sign(v) * max(|v| - theta, 0)`` at
``theta = (sum_{r<=rho} u_r - radius) / rho``.  Cost ``O(n log n)``.

Soft thresholding is what makes the L1-constrained subgradient method primal
sparse: coordinates below ``theta`` become exact zeros.

With some coordinates ``M`` also kept non-negative (the edge weights of a
min-cut model), the projection onto ``{||w||_1 <= radius, w_j >= 0 for j in
M}`` is the L1-ball projection of ``u``, the point ``v`` with its negative
coordinates in ``M`` set to 0.  Proof: for ``j`` in ``M`` with ``v_j < 0`` and
any ``w_j >= 0``, ``(w_j - v_j)^2 = (w_j - u_j)^2 + v_j^2 + 2 w_j |v_j| >=
(w_j - u_j)^2 + v_j^2``, with equality at ``w_j = 0``; so over the constrained
set ``||w - v||^2 >= ||w - u||^2 + const``.  The ball projection of ``u``
minimises ``||w - u||^2`` over the larger set (the whole ball), lies in the
constrained set (soft thresholding keeps signs, so ``u_j >= 0`` stays ``>= 0``)
and is 0 where ``u_j = 0``, where the bound is tight: it minimises ``||w - v||^2``
over the constrained set.
"""

import numpy as np
from numba import njit

__all__ = ["clip_nonnegative", "project_l1_ball", "l1_ball_threshold"]


@njit(cache=True)
def l1_ball_threshold(v, radius):
    """Soft-threshold level ``theta >= 0`` of the projection of ``v`` onto the L1 ball.

    ``theta`` is 0 when ``v`` already lies in the ball.  Callable from other
    numba code.
    """
    abs_v = np.abs(v)
    if abs_v.sum() <= radius:
        return 0.0
    u = np.sort(abs_v)[::-1]
    cumulative = 0.0
    theta = 0.0
    for j in range(u.shape[0]):
        cumulative += u[j]
        candidate = (cumulative - radius) / (j + 1)
        # The sorted condition u_j > candidate holds for a prefix of j; the
        # threshold of the last index satisfying it is the answer.
        if u[j] > candidate:
            theta = candidate
        else:
            break
    return theta


@njit(cache=True)
def _soft_threshold(v, theta):
    out = np.empty_like(v)
    for k in range(v.shape[0]):
        magnitude = abs(v[k]) - theta
        if magnitude > 0.0:
            out[k] = magnitude if v[k] > 0.0 else -magnitude
        else:
            out[k] = 0.0
    return out


@njit(cache=True)
def _project_l1_ball(v, radius):
    theta = l1_ball_threshold(v, radius)
    if theta == 0.0:
        return v.copy()
    return _soft_threshold(v, theta)


def project_l1_ball(v, radius, nonnegative=None):
    """Euclidean projection of ``v`` onto ``{w : ||w||_1 <= radius}``.

    With ``nonnegative``, onto its intersection with ``{w : w_j >= 0 where
    nonnegative[j]}``: the masked coordinates are clipped at 0, then the point
    is projected onto the ball (exact; see the module docstring).

    Parameters
    ----------
    v : array-like of shape (n,)
        Point to project (not modified).
    radius : float
        Radius of the ball, ``> 0``.
    nonnegative : array-like of bool of shape (n,), default=None
        Coordinates constrained to be ``>= 0``; ``None``: none.

    Returns
    -------
    w : ndarray of shape (n,)
        ``argmin_{||w||_1 <= radius} ||w - v||_2``, with exact zeros wherever
        ``|v_k|`` is below the soft-threshold level.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.solvers.l1_projection import project_l1_ball
    >>> project_l1_ball(np.array([3.0, -1.0, 0.2]), 2.0)
    array([2., 0., 0.])
    """
    v = np.ascontiguousarray(v, dtype=np.float64)
    if v.ndim != 1:
        raise ValueError(f"project_l1_ball expects a 1-D vector, got shape {v.shape}.")
    if not np.all(np.isfinite(v)):
        raise ValueError("project_l1_ball: v contains NaN or infinity.")
    radius = float(radius)
    if not radius > 0.0:
        raise ValueError(f"project_l1_ball: radius must be > 0, got {radius}.")
    if nonnegative is not None:
        nonnegative = np.asarray(nonnegative)
        if nonnegative.dtype != bool or nonnegative.shape != v.shape:
            raise ValueError(
                f"project_l1_ball: nonnegative must be a boolean mask of shape {v.shape}, got "
                f"dtype {nonnegative.dtype} and shape {nonnegative.shape}."
            )
        v = clip_nonnegative(v, nonnegative)
    return _project_l1_ball(v, radius)


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
