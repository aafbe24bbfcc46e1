"""Numba kernels for the matching and min-cut structures.

Euclidean projections onto the bipartite matching polytope (Figure 3 of
Taskar, Lacoste-Julien & Jordan, JMLR 2006) and onto the relaxed min-cut
polytope (their Appendix A) are min-cost *quadratic* flow problems.  Both are
solved here by the same dedicated scheme:

1. exact block-coordinate ascent on the dual flow problem (each coordinate
   step solves a one-dimensional piecewise-linear equation exactly by walking
   its breakpoints -- Bertsekas' relaxation method for quadratic network flow);
2. every few sweeps, the active set read off the current dual point (which
   node constraints are tight, which edges are free / at a bound / tied) is
   *polished*: the KKT system restricted to that active set is linear and is
   solved directly, giving the exact projection as soon as the active set is
   right (finite termination, independent of how slowly step 1 converges on
   ill-conditioned instances);
3. the KKT residual of the returned primal-dual pair is computed and returned,
   so callers can check the <= 1e-9 guarantee.

Max-flow (for the min-cut argmax) is Dinic's algorithm on float capacities.

All functions are free ``@njit(cache=True)`` functions on flat arrays; the
``*_batch`` wrappers loop over examples given offsets.
"""

import numpy as np
from numba import njit

# --------------------------------------------------------------------------
# Matching polytope: {0 <= z <= 1, sum_k z_jk <= 1 for all j, sum_j z_jk <= 1}
# Dual: prices p >= 0 on the n_source + n_target degree constraints,
# z_e(p) = clip(v_e - p_source(e) - p_target(e), 0, 1).
# --------------------------------------------------------------------------


@njit(cache=True)
def _node_adjacency(ends, n_nodes):
    """CSR incidence lists (node -> edges) for a list of edge endpoints."""
    counts = np.zeros(n_nodes + 1, dtype=np.int64)
    for e in range(ends.shape[0]):
        counts[ends[e] + 1] += 1
    for a in range(n_nodes):
        counts[a + 1] += counts[a]
    order = np.empty(ends.shape[0], dtype=np.int64)
    fill = counts[:-1].copy()
    for e in range(ends.shape[0]):
        order[fill[ends[e]]] = e
        fill[ends[e]] += 1
    return counts, order


@njit(cache=True)
def _find(parent, j):
    """Union-find root with path halving."""
    while parent[j] != j:
        parent[j] = parent[parent[j]]
        j = parent[j]
    return j


@njit(cache=True)
def _degree_price(r, n_r, breakpoints, kinds):
    """Smallest p >= 0 with sum_e clip(r_e - p, 0, 1) <= 1 (exact).

    ``r[:n_r]`` are the reduced scores of the node's edges; ``breakpoints``
    and ``kinds`` are scratch arrays of length >= 2 * n_r.
    """
    total = 0.0
    slope = 0.0  # d/dp of sum clip(r_e - p, 0, 1)
    for i in range(n_r):
        ri = r[i]
        if ri > 1.0:
            total += 1.0
        elif ri > 0.0:
            total += ri
            slope -= 1.0
    if total <= 1.0:
        return 0.0
    # Walk breakpoints p = r_e - 1 (edge leaves the upper bound: slope -1)
    # and p = r_e (edge reaches zero: slope +1) to the right of 0.
    m = 0
    for i in range(n_r):
        if r[i] - 1.0 > 0.0:
            breakpoints[m] = r[i] - 1.0
            kinds[m] = -1.0
            m += 1
        if r[i] > 0.0:
            breakpoints[m] = r[i]
            kinds[m] = 1.0
            m += 1
    order = np.argsort(breakpoints[:m])
    p = 0.0
    excess = total - 1.0
    for idx in range(m):
        b = breakpoints[order[idx]]
        next_excess = excess + slope * (b - p)
        if next_excess <= 0.0:
            return p + excess / (-slope)
        p = b
        excess = next_excess
        slope += kinds[order[idx]]
    return p  # unreachable: all edges end at zero past the last breakpoint


@njit(cache=True)
def _matching_primal(v, src, tgt, n_src, prices, z):
    for e in range(v.shape[0]):
        r = v[e] - prices[src[e]] - prices[n_src + tgt[e]]
        z[e] = min(max(r, 0.0), 1.0)


@njit(cache=True)
def _matching_residual(v, src, tgt, n_src, n_tgt, prices, z):
    """Natural KKT residual max_a |min(p_a, 1 - degree_a(z))| (z = z(p))."""
    _matching_primal(v, src, tgt, n_src, prices, z)
    degree = np.zeros(n_src + n_tgt)
    for e in range(v.shape[0]):
        degree[src[e]] += z[e]
        degree[n_src + tgt[e]] += z[e]
    res = 0.0
    for a in range(n_src + n_tgt):
        res = max(res, abs(min(prices[a], 1.0 - degree[a])))
    return res


@njit(cache=True)
def _matching_polish(v, src, tgt, n_src, n_tgt, prices, out):
    """Solve the KKT system on the active set read off ``prices`` into ``out``."""
    n_nodes = n_src + n_tgt
    index = -np.ones(n_nodes, dtype=np.int64)
    n_tight = 0
    for a in range(n_nodes):
        if prices[a] > 0.0:
            index[a] = n_tight
            n_tight += 1
    out[:] = 0.0
    if n_tight == 0:
        return
    system = np.zeros((n_tight, n_tight))
    rhs = np.ones(n_tight)
    for e in range(v.shape[0]):
        a, b = src[e], n_src + tgt[e]
        r = v[e] - prices[a] - prices[b]
        ia, ib = index[a], index[b]
        if r >= 1.0:
            if ia >= 0:
                rhs[ia] -= 1.0
            if ib >= 0:
                rhs[ib] -= 1.0
        elif r > 0.0:
            # free edge: z_e = v_e - p_a - p_b enters both degree equations
            for i, j in ((ia, ib), (ib, ia)):
                if i >= 0:
                    rhs[i] -= v[e]
                    system[i, i] -= 1.0
                    if j >= 0:
                        system[i, j] -= 1.0
    # -system is a signless Laplacian, singular on bipartite components whose
    # nodes are all tight; a tiny ridge picks (nearly) the minimum-norm
    # solution of the consistent system, the null-space shift is fixed below.
    ridge = 1e-13 * max(1.0, -system.min())
    for i in range(n_tight):
        system[i, i] -= ridge
    solution = np.linalg.solve(system, rhs)
    for a in range(n_nodes):
        if index[a] >= 0:
            out[a] = solution[index[a]]
    # On a component of tight nodes closed under free edges, prices may move
    # by +t on sources and -t on targets without changing z: pick t so that
    # they are non-negative where possible.
    parent = np.arange(n_nodes)
    leaks = np.zeros(n_nodes, dtype=np.bool_)
    for e in range(v.shape[0]):
        a, b = src[e], n_src + tgt[e]
        r = v[e] - prices[a] - prices[b]
        if 0.0 < r < 1.0:
            if index[a] >= 0 and index[b] >= 0:
                ra, rb = _find(parent, a), _find(parent, b)
                if ra != rb:
                    parent[ra] = rb
            else:
                leaks[a] = True
                leaks[b] = True
    low = np.full(n_nodes, -np.inf)
    high = np.full(n_nodes, np.inf)
    closed = np.zeros(n_nodes, dtype=np.bool_)
    for a in range(n_nodes):
        if index[a] >= 0:
            closed[_find(parent, a)] = True
    for a in range(n_nodes):
        if index[a] >= 0:
            root = _find(parent, a)
            if leaks[a]:
                closed[root] = False
            if a < n_src:
                low[root] = max(low[root], -out[a])
            else:
                high[root] = min(high[root], out[a])
    # ... and so that edges leaving the component keep their bound
    for e in range(v.shape[0]):
        a, b = src[e], n_src + tgt[e]
        r = v[e] - prices[a] - prices[b]
        if 0.0 < r < 1.0:
            continue
        r_new = v[e] - out[a] - out[b]
        ra = _find(parent, a) if index[a] >= 0 else -1
        rb = _find(parent, b) if index[b] >= 0 else -1
        if ra == rb:
            continue
        for root, sign in ((ra, 1.0), (rb, -1.0)):
            if root >= 0 and closed[root]:
                # r_new - sign * t must stay <= 0 (lower) or >= 1 (upper)
                if r <= 0.0:
                    bound = r_new * sign
                    if sign > 0:
                        low[root] = max(low[root], bound)
                    else:
                        high[root] = min(high[root], bound)
                else:
                    bound = (r_new - 1.0) * sign
                    if sign > 0:
                        high[root] = min(high[root], bound)
                    else:
                        low[root] = max(low[root], bound)
    for a in range(n_nodes):
        if index[a] >= 0:
            root = _find(parent, a)
            if closed[root] and low[root] <= high[root]:
                t = min(max(0.0, low[root]), high[root])
                out[a] += t if a < n_src else -t


@njit(cache=True)
def _matching_try_polish(v, src, tgt, n_src, n_tgt, prices, z, polished, z_trial, residual):
    """Newton step on the active set; kept (prices, z updated) when it lowers the residual."""
    _matching_polish(v, src, tgt, n_src, n_tgt, prices, polished)
    trial = _matching_residual(v, src, tgt, n_src, n_tgt, polished, z_trial)
    if trial >= residual:
        return residual
    for a in range(n_src + n_tgt):
        prices[a] = max(polished[a], 0.0)
    return _matching_residual(v, src, tgt, n_src, n_tgt, prices, z)


@njit(cache=True)
def matching_project(v, src, tgt, n_src, n_tgt, z, prices, tol, max_sweeps):
    """Euclidean projection of ``v`` onto one matching polytope.

    Parameters
    ----------
    v : (E,) float64 point to project.
    src, tgt : (E,) int64 local source / target node of each edge.
    n_src, n_tgt : node counts.
    z : (E,) output projection.
    prices : (n_src + n_tgt,) dual prices; used as warm start, overwritten.
    tol : KKT residual to reach.
    max_sweeps : cap on coordinate-ascent sweeps.

    Returns
    -------
    residual : float, the KKT residual of the returned point.
    """
    n_nodes = n_src + n_tgt
    n_edges = v.shape[0]
    if n_edges == 0:
        return 0.0
    for a in range(n_nodes):
        prices[a] = max(prices[a], 0.0)
    # incidence lists of all nodes: sources first, then targets
    src_ptr, src_order = _node_adjacency(src, n_src)
    tgt_ptr, tgt_order = _node_adjacency(tgt, n_tgt)
    max_degree = 1
    for a in range(n_src):
        max_degree = max(max_degree, src_ptr[a + 1] - src_ptr[a])
    for a in range(n_tgt):
        max_degree = max(max_degree, tgt_ptr[a + 1] - tgt_ptr[a])
    r = np.empty(max_degree)
    breakpoints = np.empty(2 * max_degree)
    kinds = np.empty(2 * max_degree)
    polished = np.empty(n_nodes)
    z_trial = np.empty(n_edges)
    residual = _matching_residual(v, src, tgt, n_src, n_tgt, prices, z)
    sweep = 0
    next_polish = 2
    while residual > tol and sweep < max_sweeps:
        if sweep == 0:  # a warm start often has the right active set already
            residual = _matching_try_polish(
                v, src, tgt, n_src, n_tgt, prices, z, polished, z_trial, residual
            )
            if residual <= tol:
                break
        for a in range(n_src):
            n_r = 0
            for idx in range(src_ptr[a], src_ptr[a + 1]):
                e = src_order[idx]
                r[n_r] = v[e] - prices[n_src + tgt[e]]
                n_r += 1
            prices[a] = _degree_price(r, n_r, breakpoints, kinds)
        for b in range(n_tgt):
            n_r = 0
            for idx in range(tgt_ptr[b], tgt_ptr[b + 1]):
                e = tgt_order[idx]
                r[n_r] = v[e] - prices[src[e]]
                n_r += 1
            prices[n_src + b] = _degree_price(r, n_r, breakpoints, kinds)
        sweep += 1
        residual = _matching_residual(v, src, tgt, n_src, n_tgt, prices, z)
        if residual > tol and sweep >= next_polish:
            next_polish = sweep + 2 + sweep // 8
            residual = _matching_try_polish(
                v, src, tgt, n_src, n_tgt, prices, z, polished, z_trial, residual
            )
    return residual


@njit(cache=True)
def matching_project_batch(v, edges, edge_offsets, node_counts, z, prices, tol, max_sweeps):
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
            z[lo:hi], prices[p0:p0 + n_src + n_tgt], tol, max_sweeps,
        )
        p0 += n_src + n_tgt
        worst = max(worst, res)
    return worst


# --------------------------------------------------------------------------
# Relaxed min-cut polytope (Appendix A):
#   min 1/2 ||z_nodes - v_nodes||^2 + 1/2 ||z_edges - v_edges||^2
#   s.t. 0 <= z_j <= 1,  |z_j - z_k| <= z_jk.
# Eliminating z_jk = max(|z_j - z_k|, v_jk) leaves the node problem
#   min sum_j 1/2 (z_j - v_j)^2 + sum_e phi_e(z_tail - z_head),
#   phi_e(d) = 1/2 (|d| - v_e)_+^2   (convex for either sign of v_e),
# whose dual is a quadratic flow problem on the edges (the paper's eq. 22,
# written with one signed flow f_e per edge): z_j = clip(v_j - div_j(f), 0, 1)
# and optimality f_e in d phi_e(z_tail - z_head).
# --------------------------------------------------------------------------


@njit(cache=True)
def _edge_prox(x, v_edge):
    """prox of phi_e at x (phi_e(d) = 1/2 (|d| - v_edge)_+^2)."""
    ax = abs(x)
    if (v_edge >= 0.0 and ax <= v_edge) or (v_edge < 0.0 and ax <= -v_edge):
        return x if v_edge >= 0.0 else 0.0
    return np.sign(x) * (ax + v_edge) / 2.0


@njit(cache=True)
def _conjugate_slope(f, v_edge, side):
    """One-sided derivative of phi_e^* at f (side = -1 left, +1 right)."""
    if v_edge >= 0.0:
        if f == 0.0:
            return side * v_edge
        return f + v_edge * np.sign(f)
    if abs(f) <= -v_edge:
        return 0.0
    return f + v_edge * np.sign(f)


@njit(cache=True)
def _flow_gap(f, a, b, v_edge, side):
    """G(f) = clip(a - f) - clip(b + f) - d phi^*(f): decreasing in f."""
    return (
        min(max(a - f, 0.0), 1.0)
        - min(max(b + f, 0.0), 1.0)
        - _conjugate_slope(f, v_edge, side)
    )


@njit(cache=True)
def _edge_flow(a, b, v_edge, points):
    """Exact maximiser over one edge flow: the root of the monotone G."""
    points[0] = a - 1.0
    points[1] = a
    points[2] = -b
    points[3] = 1.0 - b
    if v_edge >= 0.0:
        points[4] = 0.0
        points[5] = 0.0
    else:
        points[4] = v_edge
        points[5] = -v_edge
    points.sort()
    previous = 0.0
    for i in range(6):
        p = points[i]
        right = _flow_gap(p, a, b, v_edge, 1.0)
        if right <= 0.0:
            left = _flow_gap(p, a, b, v_edge, -1.0)
            if left > 0.0:
                return p  # the root sits on a jump of d phi^*
            if i == 0:
                return p + left  # G has slope -1 left of all breakpoints
            g0 = _flow_gap(previous, a, b, v_edge, 1.0)
            if g0 <= 0.0:
                return previous
            return previous + g0 * (p - previous) / (g0 - left)
        previous = p
    return points[5] + _flow_gap(points[5], a, b, v_edge, 1.0)


@njit(cache=True)
def _divergence(f, tail, head, n_nodes, u):
    u[:] = 0.0
    for e in range(f.shape[0]):
        u[tail[e]] += f[e]
        u[head[e]] -= f[e]


@njit(cache=True)
def _mincut_residual(v_nodes, v_edges, tail, head, z, f, u):
    """KKT residual of (z, f): node clip condition and edge prox condition."""
    _divergence(f, tail, head, z.shape[0], u)
    res = 0.0
    for j in range(z.shape[0]):
        res = max(res, abs(z[j] - min(max(v_nodes[j] - u[j], 0.0), 1.0)))
    for e in range(f.shape[0]):
        d = z[tail[e]] - z[head[e]]
        res = max(res, abs(d - _edge_prox(d + f[e], v_edges[e])))
    return res


@njit(cache=True)
def _mincut_polish(v_nodes, v_edges, tail, head, f, u, z_out, f_out):
    """Solve the KKT system on the active set read off the flows ``f``.

    Node states: clipped at 0 / 1, or free.  Edge states: inactive (f = 0,
    v >= 0), active (f = d - v sign f), tied (v < 0, |f| <= -v, so that
    z_tail = z_head).  Tied nodes merge into groups (union-find); the free
    group values solve an SPD system (group sizes + Laplacian of the active
    edges) by conjugate gradients; flows of tied edges follow on a spanning
    forest of each group by leaf elimination.  Returns False when the active
    set is inconsistent (a group tied to both bounds).
    """
    n_nodes, n_edges = v_nodes.shape[0], v_edges.shape[0]
    fixed = -np.ones(n_nodes)  # node value if clipped, else -1
    for j in range(n_nodes):
        t = v_nodes[j] - u[j]
        if t <= 0.0:
            fixed[j] = 0.0
        elif t >= 1.0:
            fixed[j] = 1.0
    kind = np.zeros(n_edges, dtype=np.int64)  # 0 inactive, 1 active, 2 tied
    parent = np.arange(n_nodes)
    for e in range(n_edges):
        if v_edges[e] < 0.0 and abs(f[e]) <= -v_edges[e]:
            kind[e] = 2
            ra, rb = _find(parent, tail[e]), _find(parent, head[e])
            if ra != rb:
                parent[ra] = rb
        elif f[e] != 0.0 or v_edges[e] < 0.0:
            kind[e] = 1
    group = np.empty(n_nodes, dtype=np.int64)
    group_of_root = -np.ones(n_nodes, dtype=np.int64)
    n_groups = 0
    for j in range(n_nodes):
        r = _find(parent, j)
        if group_of_root[r] < 0:
            group_of_root[r] = n_groups
            n_groups += 1
        group[j] = group_of_root[r]
    value = -np.ones(n_groups)
    size = np.zeros(n_groups)
    rhs = np.zeros(n_groups)
    root = -np.ones(n_groups, dtype=np.int64)
    slack = np.full(n_groups, -np.inf)
    for j in range(n_nodes):
        g = group[j]
        size[g] += 1.0
        rhs[g] += v_nodes[j]
        if fixed[j] >= 0.0:
            if value[g] >= 0.0 and value[g] != fixed[j]:
                return False
            value[g] = fixed[j]
            # the root absorbs the group's rounding: pick the most slack clipped node
            t = v_nodes[j] - u[j]
            s = t - 1.0 if fixed[j] == 1.0 else -t
            if s > slack[g]:
                slack[g] = s
                root[g] = j
        elif root[g] < 0:
            root[g] = j
    # active edges between different groups couple the group equations
    for e in range(n_edges):
        if kind[e] == 1:
            gt, gh = group[tail[e]], group[head[e]]
            if gt != gh:
                shift = v_edges[e] * np.sign(f[e])
                rhs[gt] += shift
                rhs[gh] -= shift
                if value[gh] >= 0.0:
                    rhs[gt] += value[gh]
                if value[gt] >= 0.0:
                    rhs[gh] += value[gt]
    zeta = np.zeros(n_groups)
    for j in range(n_nodes):
        zeta[group[j]] += min(max(v_nodes[j] - u[j], 0.0), 1.0) / size[group[j]]
    for g in range(n_groups):
        if value[g] >= 0.0:
            zeta[g] = value[g]

    def matvec(x, out):
        for g in range(n_groups):
            out[g] = size[g] * x[g] if value[g] < 0.0 else 0.0
        for e in range(n_edges):
            if kind[e] == 1:
                gt, gh = group[tail[e]], group[head[e]]
                if gt != gh:
                    if value[gt] < 0.0:
                        out[gt] += x[gt] - (x[gh] if value[gh] < 0.0 else 0.0)
                    if value[gh] < 0.0:
                        out[gh] += x[gh] - (x[gt] if value[gt] < 0.0 else 0.0)

    # conjugate gradients on the free groups (fixed ones are masked out)
    x = np.where(value < 0.0, zeta, 0.0)
    residual = np.empty(n_groups)
    matvec(x, residual)
    scale = 1.0
    for g in range(n_groups):
        if value[g] < 0.0:
            residual[g] = rhs[g] - residual[g]
            scale = max(scale, abs(rhs[g]))
        else:
            residual[g] = 0.0
    direction = residual.copy()
    product = np.empty(n_groups)
    rr = np.dot(residual, residual)
    for _ in range(2 * n_groups + 50):
        if np.sqrt(rr) <= 1e-15 * scale:
            break
        matvec(direction, product)
        alpha = rr / np.dot(direction, product)
        x += alpha * direction
        residual -= alpha * product
        rr_new = np.dot(residual, residual)
        direction = residual + (rr_new / rr) * direction
        rr = rr_new
    for g in range(n_groups):
        if value[g] < 0.0:
            zeta[g] = x[g]
    for j in range(n_nodes):
        z_out[j] = zeta[group[j]]
    # flows: active and inactive edges are explicit; tied edges keep their
    # current flow off a spanning forest and are solved on it.
    accumulated = np.zeros(n_nodes)
    tie_count = np.zeros(n_nodes + 1, dtype=np.int64)
    for e in range(n_edges):
        if kind[e] == 0:
            f_out[e] = 0.0
        elif kind[e] == 1:
            f_out[e] = z_out[tail[e]] - z_out[head[e]] - v_edges[e] * np.sign(f[e])
        else:
            f_out[e] = f[e]
            tie_count[tail[e] + 1] += 1
            tie_count[head[e] + 1] += 1
    for j in range(n_nodes):
        tie_count[j + 1] += tie_count[j]
    tie_edges = np.empty(tie_count[n_nodes], dtype=np.int64)
    fill = tie_count[:-1].copy()
    for e in range(n_edges):
        if kind[e] == 2:
            tie_edges[fill[tail[e]]] = e
            fill[tail[e]] += 1
            tie_edges[fill[head[e]]] = e
            fill[head[e]] += 1
    parent_edge = -np.ones(n_nodes, dtype=np.int64)
    visited = np.zeros(n_nodes, dtype=np.bool_)
    in_tree = np.zeros(n_edges, dtype=np.bool_)
    order = np.empty(n_nodes, dtype=np.int64)
    n_order = 0
    for g in range(n_groups):
        r = root[g]
        visited[r] = True
        order[n_order] = r
        head_idx = n_order
        n_order += 1
        while head_idx < n_order:
            j = order[head_idx]
            head_idx += 1
            for idx in range(tie_count[j], tie_count[j + 1]):
                e = tie_edges[idx]
                k = head[e] if tail[e] == j else tail[e]
                if not visited[k]:
                    visited[k] = True
                    in_tree[e] = True
                    parent_edge[k] = e
                    order[n_order] = k
                    n_order += 1
    for e in range(n_edges):
        if not in_tree[e]:
            accumulated[tail[e]] += f_out[e]
            accumulated[head[e]] -= f_out[e]
    for idx in range(n_nodes - 1, -1, -1):
        j = order[idx]
        e = parent_edge[j]
        if e < 0:
            continue
        g = group[j]
        if value[g] < 0.0:
            target = v_nodes[j] - z_out[j]
        elif value[g] == 1.0:
            target = min(u[j], v_nodes[j] - 1.0)
        else:
            target = max(u[j], v_nodes[j])
        if tail[e] == j:
            f_out[e] = target - accumulated[j]
            accumulated[head[e]] -= f_out[e]
        else:
            f_out[e] = accumulated[j] - target
            accumulated[tail[e]] += f_out[e]
    return True


@njit(cache=True)
def mincut_project(v_nodes, v_edges, tail, head, z_nodes, z_edges, f, tol, max_sweeps):
    """Euclidean projection onto one relaxed min-cut polytope (Appendix A).

    Parameters
    ----------
    v_nodes, v_edges : (N,), (E,) point to project (node and edge parts).
    tail, head : (E,) int64 local endpoints of each edge.
    z_nodes, z_edges : outputs.
    f : (E,) dual edge flows; warm start, overwritten.
    tol, max_sweeps : KKT residual to reach, cap on ascent sweeps.

    Returns
    -------
    residual : float, the KKT residual of the returned point.
    """
    n_nodes, n_edges = v_nodes.shape[0], v_edges.shape[0]
    u = np.empty(n_nodes)
    u_trial = np.empty(n_nodes)
    z_trial = np.empty(n_nodes)
    f_trial = np.empty(n_edges)
    points = np.empty(6)
    _divergence(f, tail, head, n_nodes, u)
    for j in range(n_nodes):
        z_nodes[j] = min(max(v_nodes[j] - u[j], 0.0), 1.0)
    residual = _mincut_residual(v_nodes, v_edges, tail, head, z_nodes, f, u_trial)
    sweep = 0
    next_polish = 0  # a warm start often has the right active set already
    while residual > tol and sweep < max_sweeps:
        if sweep >= next_polish:
            next_polish = sweep + 2 + sweep // 4
            if _mincut_polish(v_nodes, v_edges, tail, head, f, u, z_trial, f_trial):
                trial = _mincut_residual(
                    v_nodes, v_edges, tail, head, z_trial, f_trial, u_trial
                )
                if trial <= tol:
                    z_nodes[:] = z_trial
                    f[:] = f_trial
                    residual = trial
                    break
        for e in range(n_edges):
            t, h = tail[e], head[e]
            old = f[e]
            a = v_nodes[t] - (u[t] - old)
            b = v_nodes[h] - (u[h] + old)
            new = _edge_flow(a, b, v_edges[e], points)
            f[e] = new
            u[t] += new - old
            u[h] -= new - old
        sweep += 1
        _divergence(f, tail, head, n_nodes, u)  # no drift from the updates
        for j in range(n_nodes):
            z_nodes[j] = min(max(v_nodes[j] - u[j], 0.0), 1.0)
        residual = _mincut_residual(v_nodes, v_edges, tail, head, z_nodes, f, u_trial)
    for e in range(n_edges):
        z_edges[e] = max(abs(z_nodes[tail[e]] - z_nodes[head[e]]), v_edges[e])
    return residual


@njit(cache=True)
def mincut_project_batch(
    v, part_offsets, node_offsets, edges, edge_offsets, z, flows, tol, max_sweeps
):
    """Project every example; parts of example i are its nodes then its edges.

    ``flows`` (one per edge) is the warm start and receives the final duals.
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
            flows[e0:e1], tol, max_sweeps,
        )
        worst = max(worst, res)
    return worst


# --------------------------------------------------------------------------
# Max-flow (Dinic) on float capacities, for the min-cut argmax.
# --------------------------------------------------------------------------


@njit(cache=True)
def _dinic_levels(source, sink, first, nxt, head, cap, level, queue, eps):
    level[:] = -1
    level[source] = 0
    queue[0] = source
    lo, hi = 0, 1
    while lo < hi:
        x = queue[lo]
        lo += 1
        a = first[x]
        while a >= 0:
            y = head[a]
            if cap[a] > eps and level[y] < 0:
                level[y] = level[x] + 1
                queue[hi] = y
                hi += 1
            a = nxt[a]
    return level[sink] >= 0


@njit(cache=True)
def _dinic_augment(source, sink, nxt, head, cap, level, current, path, eps):
    """Push flow along one shortest augmenting path; returns the amount (0: none)."""
    depth = 0
    x = source
    while True:
        if x == sink:
            amount = np.inf
            for i in range(depth):
                amount = min(amount, cap[path[i]])
            for i in range(depth):
                cap[path[i]] -= amount
                cap[path[i] ^ 1] += amount
            return amount
        advanced = False
        while current[x] >= 0:
            a = current[x]
            y = head[a]
            if cap[a] > eps and level[y] == level[x] + 1:
                path[depth] = a
                depth += 1
                x = y
                advanced = True
                break
            current[x] = nxt[a]
        if not advanced:
            if depth == 0:
                return 0.0
            level[x] = -1  # dead end: prune it from the level graph
            depth -= 1
            x = head[path[depth] ^ 1]
            current[x] = nxt[current[x]]


@njit(cache=True)
def mincut_argmax(node_scores, edge_weights, tail, head, labels):
    """Maximise sum_j s_j y_j - sum_e c_e [y_tail != y_head] over y in {0,1}^N.

    ``edge_weights`` must be non-negative (submodular).  Source side of the
    minimum s-t cut = label 1.  Returns the optimal score.
    """
    n_nodes, n_edges = node_scores.shape[0], edge_weights.shape[0]
    source, sink = n_nodes, n_nodes + 1
    n_arcs = 2 * (n_nodes + n_edges)
    first = -np.ones(n_nodes + 2, dtype=np.int64)
    nxt = np.empty(n_arcs, dtype=np.int64)
    head_of = np.empty(n_arcs, dtype=np.int64)
    cap = np.zeros(n_arcs)
    scale = 0.0
    m = 0
    # arcs come in pairs (a, a ^ 1) = (arc, reverse arc)
    for j in range(n_nodes):
        s = node_scores[j]
        x, y, c = (source, j, s) if s > 0.0 else (j, sink, -s)
        head_of[m], cap[m], nxt[m], first[x] = y, c, first[x], m
        head_of[m + 1], cap[m + 1], nxt[m + 1], first[y] = x, 0.0, first[y], m + 1
        m += 2
        scale = max(scale, abs(s))
    for e in range(n_edges):
        x, y, c = tail[e], head[e], edge_weights[e]
        head_of[m], cap[m], nxt[m], first[x] = y, c, first[x], m
        head_of[m + 1], cap[m + 1], nxt[m + 1], first[y] = x, c, first[y], m + 1
        m += 2
        scale = max(scale, c)
    eps = 1e-13 * scale
    level = np.empty(n_nodes + 2, dtype=np.int64)
    queue = np.empty(n_nodes + 2, dtype=np.int64)
    path = np.empty(n_nodes + 2, dtype=np.int64)
    while _dinic_levels(source, sink, first, nxt, head_of, cap, level, queue, eps):
        current = first.copy()
        while _dinic_augment(source, sink, nxt, head_of, cap, level, current, path, eps) > 0.0:
            pass
    _dinic_levels(source, sink, first, nxt, head_of, cap, level, queue, eps)
    best = 0.0
    for j in range(n_nodes):
        labels[j] = 1 if level[j] >= 0 else 0
        best += node_scores[j] * labels[j]
    for e in range(n_edges):
        if labels[tail[e]] != labels[head[e]]:
            best -= edge_weights[e]
    return best


@njit(cache=True)
def mincut_argmax_batch(scores, part_offsets, node_offsets, edges, edge_offsets, labels):
    """Argmax of every example from flat part scores (node scores, then -edge weights)."""
    for i in range(part_offsets.shape[0] - 1):
        p0 = part_offsets[i]
        n0, n1 = node_offsets[i], node_offsets[i + 1]
        e0, e1 = edge_offsets[i], edge_offsets[i + 1]
        n_nodes = n1 - n0
        weights = -scores[p0 + n_nodes:p0 + n_nodes + e1 - e0]
        mincut_argmax(
            scores[p0:p0 + n_nodes], weights, edges[e0:e1, 0], edges[e0:e1, 1],
            labels[n0:n1],
        )
