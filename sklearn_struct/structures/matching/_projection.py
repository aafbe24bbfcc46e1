"""The Euclidean projection onto the bipartite matching polytope (see :mod:`.._flow_kernels`)."""

import numpy as np
from numba import njit

from .._flow_kernels import _cholesky_solve, _find


# --------------------------------------------------------------------------
# Matching polytope: {z >= 0, sum_k z_jk <= 1 for all j, sum_j z_jk <= 1}
# (z <= 1 is implied).  Dual: prices p >= 0 on the n_source + n_target
# degree constraints, z_e(p) = max(v_e - p_source(e) - p_target(e), 0), and
# the dual minimises g(p) = 1/2 sum_e z_e(p)^2 + sum_a p_a over p >= 0:
# gradient 1 - degree(z(p)), generalised Hessian the signless Laplacian of
# the edges with z_e > 0.
# --------------------------------------------------------------------------


@njit(cache=True)
def _matching_state(v, ends, prices, reduced, gradient):
    """Reduced scores r = v - p_a - p_b and the dual gradient; returns the KKT residual.

    The residual is ``max_a |min(p_a, 1 - degree_a)|`` (z = max(r, 0) is
    non-negative and optimal for these prices by construction).
    """
    gradient[:] = 1.0
    for e in range(v.shape[0]):
        r = v[e] - prices[ends[e, 0]] - prices[ends[e, 1]]
        reduced[e] = r
        if r > 0.0:
            gradient[ends[e, 0]] -= r
            gradient[ends[e, 1]] -= r
    residual = 0.0
    for a in range(prices.shape[0]):
        residual = max(residual, abs(min(prices[a], gradient[a])))
    return residual


@njit(cache=True)
def _matching_components(ends, is_source, reduced, fixed, parent, size, balance, grounded):
    """Join the free nodes along the edges with r > 0 (union-find in ``parent``).

    Per component root: ``grounded``, whether it has such an edge to a fixed node;
    ``balance``, its sources less its targets; ``size``, its nodes.
    """
    n = parent.shape[0]
    for a in range(n):
        parent[a] = a
        grounded[a] = False
        size[a] = 0.0
        balance[a] = 0.0
    for e in range(reduced.shape[0]):
        if reduced[e] > 0.0:
            a, b = ends[e, 0], ends[e, 1]
            if fixed[a] and fixed[b]:
                continue
            if fixed[a] or fixed[b]:
                grounded[_find(parent, b if fixed[a] else a)] = True
            else:
                ra, rb = _find(parent, a), _find(parent, b)
                if ra != rb:
                    parent[ra] = rb
                    grounded[rb] = grounded[rb] or grounded[ra]
    for a in range(n):
        if not fixed[a]:
            root = _find(parent, a)
            balance[root] += 1.0 if is_source[a] else -1.0
            size[root] += 1.0


@njit(cache=True)
def _linear_directions(ends, is_source, reduced, prices, fixed, parent, size, balance,
                       grounded, direction, index):
    """The directions of the components where the dual is linear, and which nodes enter
    the linear system (``index`` 0, else -1); returns ``(n_kept, n_eliminated)``, the
    system's target and source nodes.

    A component with as many sources as targets is consistent (one node pinned); the
    others move along their steepest descent, scaled to reach their first breakpoint
    (an edge entering the support, a price reaching zero) at alpha = 1, like the Newton
    part, so that one step length suits every component.  ``size`` is overwritten.
    """
    n = parent.shape[0]
    n_kept = 0
    n_eliminated = 0
    for a in range(n):
        direction[a] = 0.0
        index[a] = -1
        if fixed[a]:
            continue
        root = _find(parent, a)
        if grounded[root] or (balance[root] == 0.0 and root != a):
            index[a] = 0  # in the linear system
            if is_source[a]:
                n_eliminated += 1
            else:
                n_kept += 1
        elif balance[root] != 0.0:
            sign = 1.0 if is_source[a] else -1.0
            direction[a] = -sign * balance[root] / size[root]
    reach = size
    for a in range(n):
        reach[a] = np.inf
    for e in range(reduced.shape[0]):
        rate = -(direction[ends[e, 0]] + direction[ends[e, 1]])
        if reduced[e] < 0.0 and rate > 0.0:
            for x in (ends[e, 0], ends[e, 1]):
                if direction[x] != 0.0:
                    root = _find(parent, x)
                    reach[root] = min(reach[root], -reduced[e] / rate)
    for a in range(n):
        if direction[a] < 0.0 and prices[a] > 0.0:
            root = _find(parent, a)
            reach[root] = min(reach[root], prices[a] / -direction[a])
    for a in range(n):
        if direction[a] != 0.0 and reach[_find(parent, a)] < np.inf:
            direction[a] *= reach[_find(parent, a)]
    return n_kept, n_eliminated


@njit(cache=True)
def _schur_newton(ends, is_source, reduced, gradient, eliminate_sources, direction, index,
                  diag, system, rhs, start, members):
    """The Newton direction of the nodes in the linear system (``index`` 0), solved on the
    Schur complement after eliminating the sources (``eliminate_sources``) or the targets.
    """
    n = gradient.shape[0]
    n_edges = reduced.shape[0]
    m = 0
    for a in range(n):
        diag[a] = 0.0
        if index[a] >= 0:
            if is_source[a] != eliminate_sources:
                index[a] = m
                rhs[m] = -gradient[a]
                m += 1
            else:
                index[a] = -2
    # the kept neighbours of every eliminated node, by node in members[start[a]:start[a+1]]
    for a in range(n + 1):
        start[a] = 0
    for e in range(n_edges):
        if reduced[e] > 0.0:
            a, b = ends[e, 0], ends[e, 1]
            if index[a] != -1:
                diag[a] += 1.0
            if index[b] != -1:
                diag[b] += 1.0
            elim, kept = (a, b) if eliminate_sources else (b, a)
            if index[elim] == -2 and index[kept] >= 0:
                start[elim + 1] += 1
    for a in range(n):
        start[a + 1] += start[a]
    for e in range(n_edges):
        if reduced[e] > 0.0:
            a, b = ends[e, 0], ends[e, 1]
            elim, kept = (a, b) if eliminate_sources else (b, a)
            if index[elim] == -2 and index[kept] >= 0:
                members[start[elim]] = index[kept]
                start[elim] += 1
    for a in range(n, 0, -1):
        start[a] = start[a - 1]
    start[0] = 0
    system[:m, :m] = 0.0
    for a in range(n):
        if index[a] >= 0:
            system[index[a], index[a]] = diag[a]
    for a in range(n):
        if index[a] == -2:
            weight = 1.0 / diag[a]
            shift = -gradient[a] * weight
            for i in range(start[a], start[a + 1]):
                ki = members[i]
                rhs[ki] -= shift
                for j in range(start[a], start[a + 1]):
                    system[ki, members[j]] -= weight
    _cholesky_solve(system, rhs, m)
    for a in range(n):
        if index[a] >= 0:
            direction[a] = rhs[index[a]]
    for a in range(n):
        if index[a] == -2:
            s = -gradient[a]
            for i in range(start[a], start[a + 1]):
                s -= rhs[members[i]]
            direction[a] = s / diag[a]


@njit(cache=True)
def _matching_direction(ends, is_source, reduced, prices, gradient, fixed, direction, parent,
                        size, balance, grounded, index, diag, system, rhs, start, members):
    """Newton direction on the prices of the nodes not ``fixed`` (held at zero).

    Nodes joined by edges with r > 0 form components.  The Hessian is
    singular on a component with no such edge to a fixed node (+1 on its
    sources, -1 on its targets): when the component has as many sources as
    targets the system is consistent and one node is pinned, otherwise the
    dual is linear along that vector and the direction is its steepest
    descent.  The rest is solved exactly through the Schur complement on one
    side of the bipartite graph (the Hessian's diagonal blocks are diagonal).
    """
    _matching_components(ends, is_source, reduced, fixed, parent, size, balance, grounded)
    n_kept, n_eliminated = _linear_directions(ends, is_source, reduced, prices, fixed, parent,
                                              size, balance, grounded, direction, index)
    if n_kept + n_eliminated == 0:
        return
    # eliminate the side with more system nodes
    _schur_newton(ends, is_source, reduced, gradient, n_eliminated >= n_kept, direction,
                  index, diag, system, rhs, start, members)


@njit(cache=True)
def _matching_search(ends, reduced, prices, direction, slope, points, which):
    """Exact minimiser of the dual on the segment p + alpha d, 0 <= alpha <= alpha_max.

    alpha_max keeps the prices non-negative.  The derivative is
    ``sum_a d_a - sum_e s_e max(r_e - alpha s_e, 0)`` (s_e = d_a + d_b),
    piecewise linear with one breakpoint per edge crossing zero.
    """
    alpha_max = np.inf
    c0 = 0.0
    for a in range(prices.shape[0]):
        c0 += direction[a]
        if direction[a] < 0.0:
            alpha_max = min(alpha_max, prices[a] / -direction[a])
    c1 = 0.0
    m = 0
    for e in range(reduced.shape[0]):
        s = direction[ends[e, 0]] + direction[ends[e, 1]]
        slope[e] = s
        r = reduced[e]
        if r > 0.0 or (r == 0.0 and s < 0.0):
            c0 -= s * r
            c1 += s * s
            if s > 0.0 and r / s < alpha_max:
                points[m] = r / s
                which[m] = e
                m += 1
        elif s < 0.0 and r / s < alpha_max:
            points[m] = r / s
            which[m] = e
            m += 1
    order = np.argsort(points[:m])
    low = 0.0
    for k in range(m):
        e = which[order[k]]
        high = points[order[k]]
        if c0 + c1 * high >= 0.0:
            return max(low, -c0 / c1) if c1 > 0.0 else low
        s, r = slope[e], reduced[e]
        if s > 0.0:  # the edge leaves the support
            c0 += s * r
            c1 -= s * s
        else:
            c0 -= s * r
            c1 += s * s
        low = high
    if c1 > 0.0 and c0 + c1 * alpha_max >= 0.0:
        return max(low, -c0 / c1)
    return alpha_max


@njit(cache=True)
def matching_project(v, src, tgt, n_src, n_tgt, z, prices, tol, max_iter):
    """Euclidean projection of ``v`` onto one matching polytope.

    Parameters
    ----------
    v : (E,) float64 point to project.
    src, tgt : (E,) int64 local source / target node of each edge.
    n_src, n_tgt : node counts.
    z : (E,) output projection.
    prices : (n_src + n_tgt,) dual prices (sources, then targets); used as
        warm start, overwritten with the final ones.
    tol : KKT residual to reach.
    max_iter : cap on Newton iterations.

    Returns
    -------
    residual : float, the KKT residual of the returned point.
    """
    n = n_src + n_tgt
    n_edges = v.shape[0]
    if n_edges == 0:
        prices[:] = 0.0
        return 0.0
    ends = np.empty((n_edges, 2), dtype=np.int64)
    for e in range(n_edges):
        ends[e, 0] = src[e]
        ends[e, 1] = n_src + tgt[e]
    is_source = np.zeros(n, dtype=np.bool_)
    is_source[:n_src] = True
    for a in range(n):
        prices[a] = max(prices[a], 0.0)
    # workspaces, one block per kind (rows: contiguous arrays)
    node_values = np.empty((6, n))
    gradient, direction, size = node_values[0], node_values[1], node_values[2]
    balance, diag, rhs = node_values[3], node_values[4], node_values[5]
    node_flags = np.empty((2, n), dtype=np.bool_)
    fixed, grounded = node_flags[0], node_flags[1]
    node_ids = np.empty((2, n), dtype=np.int64)
    parent, index = node_ids[0], node_ids[1]
    edge_values = np.empty((3, n_edges))
    reduced, slope, points = edge_values[0], edge_values[1], edge_values[2]
    edge_ids = np.empty((2, n_edges), dtype=np.int64)
    members, which = edge_ids[0], edge_ids[1]
    system = np.empty((n, n))
    start = np.empty(n + 1, dtype=np.int64)
    residual = _matching_state(v, ends, prices, reduced, gradient)
    it = 0
    while residual > tol and it < max_iter:
        it += 1
        # Nodes at zero price whose gradient keeps them there are held; the
        # others move.  A moving node at zero that the Newton step would
        # push negative is held too and the step recomputed; if nothing
        # moves, the node at zero with the most negative gradient is freed.
        for a in range(n):
            fixed[a] = prices[a] == 0.0 and gradient[a] >= 0.0
        released = -1
        for _ in range(2 * n + 2):
            _matching_direction(ends, is_source, reduced, prices, gradient, fixed, direction,
                                parent, size, balance, grounded, index, diag, system, rhs,
                                start, members)
            blocked = False
            for a in range(n):
                if (not fixed[a] and a != released and prices[a] == 0.0
                        and direction[a] < 0.0):
                    fixed[a] = True
                    blocked = True
            if blocked:
                continue
            moving = False
            for a in range(n):
                moving = moving or direction[a] != 0.0
            if moving:
                break
            worst = 0.0
            released = -1
            for a in range(n):
                if fixed[a] and gradient[a] < worst:
                    worst = gradient[a]
                    released = a
            if released < 0:
                break
            fixed[released] = False
        alpha = _matching_search(ends, reduced, prices, direction, slope, points, which)
        for a in range(n):
            if direction[a] < 0.0 and prices[a] / -direction[a] <= alpha:
                prices[a] = 0.0  # reached the bound
            else:
                prices[a] = max(prices[a] + alpha * direction[a], 0.0)
        residual = _matching_state(v, ends, prices, reduced, gradient)
    for e in range(n_edges):
        z[e] = min(max(reduced[e], 0.0), 1.0)  # z <= 1 holds up to rounding
    return residual


@njit(cache=True)
def matching_project_batch(v, edges, edge_offsets, node_counts, z, prices, tol, max_iter):
    """Project every example of a batch; returns the largest KKT residual.

    ``prices`` (length ``node_counts.sum()``, example ``i``'s source then
    target prices in turn) is the warm start and receives the final duals.
    """
    worst = 0.0
    p0 = 0
    for i in range(edge_offsets.shape[0] - 1):
        lo, hi = edge_offsets[i], edge_offsets[i + 1]
        n_src, n_tgt = node_counts[i, 0], node_counts[i, 1]
        res = matching_project(
            v[lo:hi], edges[lo:hi, 0], edges[lo:hi, 1], n_src, n_tgt,
            z[lo:hi], prices[p0:p0 + n_src + n_tgt], tol, max_iter,
        )
        p0 += n_src + n_tgt
        worst = max(worst, res)
    return worst
