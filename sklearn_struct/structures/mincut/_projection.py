"""The Euclidean projection onto the relaxed min-cut polytope (see :mod:`.._flow_kernels`)."""

import numpy as np
from numba import njit

from ._newton import _mincut_newton_direction
from ._path_search import _mincut_search


# --------------------------------------------------------------------------
# Relaxed min-cut polytope (Appendix A):
#   min 1/2 ||z_nodes - a||^2 + 1/2 ||z_edges - b||^2
#   s.t. 0 <= z_j <= 1,  |z_t - z_h| <= z_th.
# Eliminating z_th = max(|z_t - z_h|, b_th) leaves the node problem
#   min sum_j 1/2 (z_j - a_j)^2 + sum_e phi_e(z_t - z_h) over [0, 1]^N,
#   phi_e(d) = 1/2 (|d| - b_e)_+^2   (convex for either sign of b_e),
# whose dual is the quadratic flow problem of the paper's eq. (22), written
# with one signed flow f_e per edge: minimise over f
#   G(f) = sum_e phi_e^*(f_e) - sum_j min_{z in [0, 1]} (1/2 (z - a_j)^2 + u_j z),
#   u = D^T f (u_t += f_e, u_h -= f_e),  z_j(f) = clip(a_j - u_j, 0, 1),
# phi_e^*(f) = b |f| + f^2 / 2 for b >= 0 (a kink at 0: the flow of an edge
# with |z_t - z_h| <= b is zero) and (|f| + b)_+^2 / 2 for b < 0 (flat on
# |f| <= -b: such an edge ties z_t = z_h).
# --------------------------------------------------------------------------

# first-order warm-up of the min-cut projection (see _mincut_first_order)
FIRST_ORDER_MAX_ITER = 200
FIRST_ORDER_PATIENCE = 5


@njit(cache=True)
def _edge_prox(x, b):
    """prox of phi(d) = 1/2 (|d| - b)_+^2 at x."""
    ax = abs(x)
    if b >= 0.0:
        if ax <= b:
            return x
        return np.sign(x) * (ax + b) / 2.0
    if ax <= -b:
        return 0.0
    return np.sign(x) * (ax + b) / 2.0


@njit(cache=True)
def _flow_prox(x, b, step):
    """prox of step * phi_e^* at x."""
    if b >= 0.0:  # soft-thresholding of the kink at zero, then shrinkage
        shrunk = abs(x) - step * b
        return np.sign(x) * shrunk / (1.0 + step) if shrunk > 0.0 else 0.0
    if abs(x) <= -b:  # flat piece
        return x
    return (x - step * b * np.sign(x)) / (1.0 + step)


@njit(cache=True)
def _mincut_first_order(a, b, tail, head, f, u, z, y, previous, step, pieces, max_iter,
                        patience):
    """Accelerated proximal-gradient steps on the dual, to start Newton near its solution.

    The node part of G has a gradient (-(z_t - z_h) per edge) whose Hessian
    D D^T is at most diag(deg_t + deg_h) (its absolute row sums), so the
    per-edge steps 1 / (deg_t + deg_h) are safe, and phi_e^* has a
    closed-form prox: FISTA with the gradient restart of O'Donoghue &
    Candes.  Its iterations are a few passes over the arrays, far cheaper
    than a Newton iteration, and they settle the pieces of phi_e^* (the
    Newton model) quickly on well-scaled points; they stop once those
    pieces have not changed for ``patience`` iterations.  ``f`` is updated
    in place; returns the number of iterations.
    """
    n, m = a.shape[0], b.shape[0]
    for j in range(n):
        u[j] = 0.0
    for e in range(m):  # node degrees, in u until the loop needs it
        u[tail[e]] += 1.0
        u[head[e]] += 1.0
    for e in range(m):
        step[e] = 1.0 / (u[tail[e]] + u[head[e]])
        y[e] = f[e]
        pieces[e] = f[e] != 0.0 if b[e] > 0.0 else abs(f[e]) > -b[e]
    momentum = 1.0
    stable = 0
    it = 0
    while it < max_iter and stable < patience:
        it += 1
        for j in range(n):
            u[j] = 0.0
        for e in range(m):
            u[tail[e]] += y[e]
            u[head[e]] -= y[e]
        for j in range(n):
            z[j] = min(max(a[j] - u[j], 0.0), 1.0)
        changed = False
        restart = 0.0
        for e in range(m):
            previous[e] = f[e]
            x = _flow_prox(y[e] + step[e] * (z[tail[e]] - z[head[e]]), b[e], step[e])
            piece = x != 0.0 if b[e] > 0.0 else abs(x) > -b[e]
            changed = changed or piece != pieces[e]
            pieces[e] = piece
            f[e] = x
            restart += (y[e] - x) * (x - previous[e])
        stable = 0 if changed else stable + 1
        next_momentum = (1.0 + np.sqrt(1.0 + 4.0 * momentum * momentum)) / 2.0
        beta = (momentum - 1.0) / next_momentum
        if restart > 0.0:  # the momentum points uphill: drop it
            next_momentum, beta = 1.0, 0.0
        momentum = next_momentum
        for e in range(m):
            y[e] = f[e] + beta * (f[e] - previous[e])
    return it


@njit(cache=True)
def _mincut_state(a, b, tail, head, f, u, z):
    """Divergence u = D^T f and z = clip(a - u, 0, 1); returns the KKT residual.

    The node conditions hold by construction; the residual is the edge one,
    ``max_e |d_e - prox_phi_e(d_e + f_e)|`` with d = z_t - z_h (zero iff
    f_e is a subgradient of phi_e at d_e).
    """
    u[:] = 0.0
    for e in range(f.shape[0]):
        u[tail[e]] += f[e]
        u[head[e]] -= f[e]
    for j in range(a.shape[0]):
        z[j] = min(max(a[j] - u[j], 0.0), 1.0)
    residual = 0.0
    for e in range(f.shape[0]):
        d = z[tail[e]] - z[head[e]]
        residual = max(residual, abs(d - _edge_prox(d + f[e], b[e])))
    return residual


@njit(cache=True)
def mincut_project(a, b, tail, head, z_nodes, z_edges, f, tol, max_iter):
    """Euclidean projection onto one relaxed min-cut polytope (Appendix A).

    Parameters
    ----------
    a, b : (N,), (E,) point to project (node and edge parts).
    tail, head : (E,) int64 local endpoints of each edge.
    z_nodes, z_edges : outputs.
    f : (E,) dual edge flows; warm start, overwritten with the final ones.
    tol : KKT residual to reach.
    max_iter : cap on Newton iterations.

    Returns
    -------
    residual : float, the KKT residual of the returned point.
    """
    n, m = a.shape[0], b.shape[0]
    width = max(n, 1)
    u = np.empty(n)
    clamp = np.empty(n, dtype=np.int64)
    kind = np.empty(m, dtype=np.int64)
    sign = np.zeros(m)
    direction = np.empty(m)
    fw = np.empty((11, width))
    iw = np.empty((8, width + 1), dtype=np.int64)
    iw[4] = -1
    bw = np.empty((3, width), dtype=np.bool_)
    ew = np.empty((4, m), dtype=np.int64)
    eb = np.empty((2, m), dtype=np.bool_)
    adj = np.empty(2 * m + 1, dtype=np.int64)
    fw2 = np.empty((6, n + m))
    iw2 = np.empty((2, n + m), dtype=np.int64)
    heap_size = 2 * (n + m) + 4 * m + 8
    keys = np.empty(heap_size)
    items = np.empty(heap_size, dtype=np.int64)
    stamps = np.empty(heap_size, dtype=np.int64)
    if not np.any(f):
        # a cold start: first-order steps find the Newton model cheaply (fw2
        # and eb are Newton workspaces, free until the loop); a warm start
        # is usually in the model of the solution already
        _mincut_first_order(a, b, tail, head, f, u, z_nodes, fw2[0], fw2[1], fw2[2], eb[0],
                            FIRST_ORDER_MAX_ITER, FIRST_ORDER_PATIENCE)
    residual = _mincut_state(a, b, tail, head, f, u, z_nodes)
    it = 0
    while residual > tol and it < max_iter:
        it += 1
        for j in range(n):
            # a node within rounding of 0 or 1 counts as free: held as a
            # clamped node it would absorb split flows one unit at a time
            t = a[j] - u[j]
            clamp[j] = 0 if t < -tol else (1 if t > 1.0 + tol else 2)
        _mincut_newton_direction(a, b, tail, head, f, u, z_nodes, clamp, kind, sign,
                                 direction, fw, iw, bw, ew, eb, adj)
        _mincut_search(a, b, tail, head, f, u, direction, fw2, iw2, keys, items, stamps)
        residual = _mincut_state(a, b, tail, head, f, u, z_nodes)
    for e in range(m):
        z_edges[e] = max(abs(z_nodes[tail[e]] - z_nodes[head[e]]), b[e])
    return residual


@njit(cache=True)
def mincut_project_batch(v, part_offsets, node_offsets, edges, edge_offsets, z, flows, tol,
                         max_iter):
    """Project every example; parts of example i are its nodes then its edges.

    ``flows`` (one per edge) is the warm start and receives the final duals.
    Returns the largest KKT residual.
    """
    worst = 0.0
    for i in range(part_offsets.shape[0] - 1):
        p0 = part_offsets[i]
        n_nodes = node_offsets[i + 1] - node_offsets[i]
        e0, e1 = edge_offsets[i], edge_offsets[i + 1]
        res = mincut_project(
            v[p0:p0 + n_nodes], v[p0 + n_nodes:p0 + n_nodes + e1 - e0],
            edges[e0:e1, 0], edges[e0:e1, 1],
            z[p0:p0 + n_nodes], z[p0 + n_nodes:p0 + n_nodes + e1 - e0],
            flows[e0:e1], tol, max_iter,
        )
        worst = max(worst, res)
    return worst
