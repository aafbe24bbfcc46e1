"""Exact Euclidean projection onto the L1 ball.

The sort-based method of Duchi, Shalev-Shwartz, Singer and Chandra, "Efficient
projections onto the l1-ball for learning in high dimensions" (ICML 2008),
Figure 1: with ``u`` the absolute values sorted in decreasing order and
``rho = max{j : u_j - (sum_{r<=j} u_r - radius) / j > 0}``, the projection is
the soft threshold ``sign(v) * max(|v| - theta, 0)`` at
``theta = (sum_{r<=rho} u_r - radius) / rho``.  Cost ``O(n log n)``.

Soft thresholding is what makes the L1-constrained subgradient method primal
sparse: coordinates below ``theta`` become exact zeros.
"""

import numpy as np
from numba import njit

__all__ = ["project_l1_ball", "l1_ball_threshold"]


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


def project_l1_ball(v, radius):
    """Euclidean projection of ``v`` onto ``{w : ||w||_1 <= radius}``.

    Parameters
    ----------
    v : array-like of shape (n,)
        Point to project (not modified).
    radius : float
        Radius of the ball, ``> 0``.

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
    return _project_l1_ball(v, radius)
