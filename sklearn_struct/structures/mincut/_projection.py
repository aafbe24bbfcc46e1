"""The Euclidean projection onto the relaxed min-cut polytope (see :mod:`.._flow_kernels`)."""

import numpy as np
from numba import njit

from .._flow_kernels import _find, _heap_push, _heap_sift_down


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

# classes of the edges in the Newton model
AT_ZERO = 0  # b > 0, flow held at zero
SMOOTH = 1  # flow = z_t - z_h - b * sign
TIED = 2  # b < 0 and |flow| <= -b: z_t = z_h


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
def _laplacian_cg(tail, head, active, dirichlet, rhs, x, accuracy, max_iter, local, ct, ch,
                  diag, xs, r, p, q):
    """Solve L x = rhs at the nodes not in ``dirichlet`` (x given there) by Jacobi-CG.

    ``L`` is the Laplacian of the edges with ``active[e]``; the solve runs on
    the compacted subgraph of those edges (``local`` must be all -1 and is
    restored).  Stops when the preconditioned residual norm is below
    ``accuracy * max(1, max |rhs|)`` or after ``max_iter`` iterations.
    """
    k = 0
    n_edges = 0
    for e in range(tail.shape[0]):
        if active[e]:
            for end in (tail[e], head[e]):
                if local[end] < 0:
                    local[end] = k
                    xs[k] = x[end]
                    r[k] = rhs[end]
                    diag[k] = 0.0
                    k += 1
            ct[n_edges] = local[tail[e]]
            ch[n_edges] = local[head[e]]
            n_edges += 1
    for i in range(n_edges):
        diag[ct[i]] += 1.0
        diag[ch[i]] += 1.0
    for e in range(tail.shape[0]):
        if active[e]:
            for end in (tail[e], head[e]):
                if dirichlet[end]:
                    diag[local[end]] = -1.0  # marks a Dirichlet node
    for i in range(n_edges):
        w = xs[ct[i]] - xs[ch[i]]
        r[ct[i]] -= w
        r[ch[i]] += w
    rz = 0.0
    scale = 1.0
    for i in range(k):
        if diag[i] < 0.0:
            r[i] = 0.0
            p[i] = 0.0
        else:
            scale = max(scale, abs(r[i]))
            p[i] = r[i] / diag[i]
            rz += r[i] * p[i]
    threshold = (accuracy * scale) ** 2
    for _ in range(max_iter):
        if rz <= threshold:
            break
        for i in range(k):
            q[i] = 0.0
        for i in range(n_edges):
            w = p[ct[i]] - p[ch[i]]
            q[ct[i]] += w
            q[ch[i]] -= w
        pq = 0.0
        for i in range(k):
            pq += p[i] * q[i]
        step = rz / pq
        rz_new = 0.0
        for i in range(k):
            if diag[i] > 0.0:
                xs[i] += step * p[i]
                r[i] -= step * q[i]
                rz_new += r[i] * r[i] / diag[i]
        beta = rz_new / rz
        rz = rz_new
        for i in range(k):
            if diag[i] > 0.0:
                p[i] = r[i] / diag[i] + beta * p[i]
    for e in range(tail.shape[0]):
        if active[e]:
            for end in (tail[e], head[e]):
                if local[end] >= 0:
                    x[end] = xs[local[end]]
                    local[end] = -1


@njit(cache=True)
def _group_cg(n_groups, cross_a, cross_b, n_cross, diag, rhs, x, accuracy, r, p, q):
    """Solve (diag - adjacency of the crossing pairs) x = rhs by Jacobi-CG from x."""
    for g in range(n_groups):
        r[g] = rhs[g] - diag[g] * x[g]
    for k in range(n_cross):
        r[cross_a[k]] += x[cross_b[k]]
        r[cross_b[k]] += x[cross_a[k]]
    rz = 0.0
    scale = 1.0
    for g in range(n_groups):
        p[g] = r[g] / diag[g]
        rz += r[g] * p[g]
        scale = max(scale, abs(rhs[g]))
    threshold = (accuracy * scale) ** 2
    for _ in range(2 * n_groups + 20):
        if rz <= threshold:
            break
        for g in range(n_groups):
            q[g] = diag[g] * p[g]
        for k in range(n_cross):
            q[cross_a[k]] -= p[cross_b[k]]
            q[cross_b[k]] -= p[cross_a[k]]
        pq = 0.0
        for g in range(n_groups):
            pq += p[g] * q[g]
        step = rz / pq
        rz_new = 0.0
        for g in range(n_groups):
            x[g] += step * p[g]
            r[g] -= step * q[g]
            rz_new += r[g] * r[g] / diag[g]
        beta = rz_new / rz
        rz = rz_new
        for g in range(n_groups):
            p[g] = r[g] / diag[g] + beta * p[g]


@njit(cache=True)
def _tree_flows(tail, head, active, absorbs, need, direction, start, adj, order, up):
    """Add flows on a spanning forest of the ``active`` edges changing node balances by ``need``.

    Each tree is rooted at a node that ``absorbs`` when it has one; such
    nodes take whatever is left (``need`` is consumed).
    """
    n, m = need.shape[0], tail.shape[0]
    start[:] = 0
    for e in range(m):
        if active[e]:
            start[tail[e] + 1] += 1
            start[head[e] + 1] += 1
    for j in range(n):
        start[j + 1] += start[j]
    for e in range(m):
        if active[e]:
            adj[start[tail[e]]] = e
            start[tail[e]] += 1
            adj[start[head[e]]] = e
            start[head[e]] += 1
    for j in range(n, 0, -1):
        start[j] = start[j - 1]
    start[0] = 0
    up[:] = -2  # unvisited
    count = 0
    for sweep in range(2):
        for j in range(n):
            if up[j] != -2 or start[j + 1] == start[j] or (sweep == 0 and not absorbs[j]):
                continue
            up[j] = -1
            order[count] = j
            first = count
            count += 1
            while first < count:
                k = order[first]
                first += 1
                for idx in range(start[k], start[k + 1]):
                    e = adj[idx]
                    other = head[e] if tail[e] == k else tail[e]
                    if up[other] == -2:
                        up[other] = e
                        order[count] = other
                        count += 1
    for idx in range(count - 1, -1, -1):
        k = order[idx]
        e = up[k]
        if e < 0:
            continue
        if absorbs[k]:
            continue
        if tail[e] == k:
            direction[e] += need[k]
            need[head[e]] += need[k]
        else:
            direction[e] -= need[k]
            need[tail[e]] += need[k]


@njit(cache=True)
def _mincut_groups(a, b, tail, head, z, clamp, kind, fw, iw, bw):
    """Groups of nodes joined by tied edges, for :func:`_mincut_solve`.

    Fills ``root`` (iw[1]), ``group`` (iw[2]: index of the unknown of an
    unclamped group, -1 for clamped groups whose value is in fw[0]),
    ``n_tied`` (iw[3], at roots: tied edges minus nodes, >= 0 iff the group
    has a cycle) and starts the group values (fw[3]) at the group means of z.
    Returns the number of unknowns, or -1 when a group has nodes clamped at
    both 0 and 1 (``has_low``/``has_high`` in bw[0], bw[1]).
    """
    n, m = a.shape[0], b.shape[0]
    parent, root, group, n_tied = iw[0], iw[1], iw[2], iw[3]
    has_low, has_high = bw[0], bw[1]
    value, zeta, size = fw[0], fw[3], fw[1]
    for j in range(n):
        parent[j] = j
        has_low[j] = False
        has_high[j] = False
        n_tied[j] = -1
        group[j] = -1
    for e in range(m):
        if kind[e] == TIED:
            ra, rb = _find(parent, tail[e]), _find(parent, head[e])
            if ra != rb:
                parent[ra] = rb
    inconsistent = False
    for j in range(n):
        r = _find(parent, j)
        root[j] = r
        if r != j:
            n_tied[r] -= 1
        if clamp[j] == 0:
            has_low[r] = True
            inconsistent = inconsistent or has_high[r]
        elif clamp[j] == 1:
            has_high[r] = True
            inconsistent = inconsistent or has_low[r]
    for e in range(m):
        if kind[e] == TIED:
            n_tied[root[tail[e]]] += 1
    if inconsistent:
        return -1
    n_groups = 0
    for j in range(n):
        r = root[j]
        if has_low[r] or has_high[r]:
            value[j] = 1.0 if has_high[r] else 0.0
            continue
        if group[r] < 0:
            group[r] = n_groups
            size[n_groups] = 0.0
            zeta[n_groups] = 0.0
            n_groups += 1
        g = group[r]
        group[j] = g
        size[g] += 1.0
        zeta[g] += z[j]
    for g in range(n_groups):
        zeta[g] /= size[g]
    return n_groups


@njit(cache=True)
def _potential_flows(tail, head, active, dirichlet, rhs, pot, direction, accuracy, max_iter,
                     trees_too, iw, ew, fw, eb, adj):
    """Flows on the ``active`` edges whose balance at non-``dirichlet`` nodes is ``rhs``.

    Nearly the least-norm ones, ``pot`` fixed at the Dirichlet nodes:
    potential differences, ``pot`` by a few CG iterations on the Laplacian,
    on the groups with cycles (``n_tied`` >= 0 at the group's root; on all
    groups if ``trees_too``); the balance is then met exactly by flows on a
    spanning forest (Dirichlet nodes absorb).  ``direction`` must be zero on
    the active edges; ``rhs`` is consumed.
    """
    root, n_tied = iw[1], iw[3]
    cyclic = eb[1]
    any_cyclic = False
    for e in range(tail.shape[0]):
        cyclic[e] = active[e] and (trees_too or n_tied[root[tail[e]]] >= 0)
        any_cyclic = any_cyclic or cyclic[e]
    if any_cyclic:
        _laplacian_cg(tail, head, cyclic, dirichlet, rhs, pot, accuracy, max_iter, iw[4],
                      ew[2], ew[3], fw[7], fw[8], fw[9], fw[10], fw[1])
        for e in range(tail.shape[0]):
            if cyclic[e]:
                direction[e] = pot[tail[e]] - pot[head[e]]
                rhs[tail[e]] -= direction[e]
                rhs[head[e]] += direction[e]
    _tree_flows(tail, head, active, dirichlet, rhs, direction, iw[5], adj, iw[6], iw[7])


@njit(cache=True)
def _mincut_split(tail, head, clamp, kind, direction, fw, iw, bw, ew, eb, adj):
    """Steepest descent in the dual's flat directions on inconsistent groups.

    A group with nodes clamped at both 0 and 1 cannot keep a common value:
    the harmonic flow from its 1-nodes to its 0-nodes through its tied edges
    decreases the dual linearly until edges untie.  It is approximated (see
    :func:`_potential_flows`, zero balance at the unclamped nodes so that the
    direction stays flat) and computed accurately if the approximation does
    not carry flow from the 1-nodes to the 0-nodes.
    """
    m = tail.shape[0]
    root = iw[1]
    has_low, has_high, dirichlet = bw[0], bw[1], bw[2]
    rhs, pot = fw[5], fw[6]
    active = eb[0]
    for e in range(m):
        r = root[tail[e]]
        active[e] = kind[e] == TIED and has_low[r] and has_high[r]
    for accuracy, max_iter in ((1e-3, 50), (1e-12, 2 * m + 20)):
        for j in range(clamp.shape[0]):
            dirichlet[j] = clamp[j] < 2
            pot[j] = 1.0 if clamp[j] == 1 else 0.0
            rhs[j] = 0.0
        for e in range(m):
            direction[e] = 0.0
        _potential_flows(tail, head, active, dirichlet, rhs, pot, direction, accuracy, max_iter,
                         True, iw, ew, fw, eb, adj)
        carried = 0.0
        for e in range(m):
            carried += direction[e] * ((clamp[tail[e]] == 1) - (clamp[head[e]] == 1))
        if carried > 0.0:
            return


@njit(cache=True)
def _mincut_solve(a, b, tail, head, f, u, clamp, kind, sign, direction, n_groups,
                  fw, iw, bw, ew, eb, adj):
    """Newton direction on the flows for the model given by ``kind`` / ``sign``.

    The values of the unclamped groups solve an SPD system (group sizes +
    Laplacian of the smooth edges between groups), by CG from the values in
    fw[3]; smooth flows follow, and tied flows change by (nearly) the
    least-norm amount that meets the node balances exactly.
    """
    n, m = a.shape[0], b.shape[0]
    root, group = iw[1], iw[2]
    dirichlet = bw[2]
    value, gdiag, grhs, zeta, z_new, rhs, pot = fw[0], fw[1], fw[2], fw[3], fw[4], fw[5], fw[6]
    cross_a, cross_b = ew[0], ew[1]
    for g in range(n_groups):
        gdiag[g] = 0.0
        grhs[g] = 0.0
    for j in range(n):
        g = group[j]
        if g >= 0:
            gdiag[g] += 1.0
            grhs[g] += a[j]
    n_cross = 0
    any_tied = False
    for e in range(m):
        if kind[e] != SMOOTH:
            any_tied = any_tied or kind[e] == TIED
            continue
        t, h = tail[e], head[e]
        gt, gh = group[t], group[h]
        if gt >= 0 and gt == gh:
            continue
        offset = b[e] * sign[e]
        if gt >= 0:
            gdiag[gt] += 1.0
            grhs[gt] += offset if gh >= 0 else offset + value[h]
        if gh >= 0:
            gdiag[gh] += 1.0
            grhs[gh] -= offset if gt >= 0 else offset - value[t]
        if gt >= 0 and gh >= 0:
            cross_a[n_cross] = gt
            cross_b[n_cross] = gh
            n_cross += 1
    _group_cg(n_groups, cross_a, cross_b, n_cross, gdiag, grhs, zeta, 1e-15,
              fw[7], fw[8], fw[9])
    for j in range(n):
        z_new[j] = zeta[group[j]] if group[j] >= 0 else value[j]
    for e in range(m):
        if kind[e] == SMOOTH:
            direction[e] = z_new[tail[e]] - z_new[head[e]] - b[e] * sign[e] - f[e]
        elif kind[e] == AT_ZERO:
            direction[e] = -f[e]
        else:
            direction[e] = 0.0
    if not any_tied:
        return
    # balance change the tied flows must bring at unclamped nodes (clamped
    # nodes absorb; one node of each unclamped group is pinned, its balance
    # follows from the group equation)
    for j in range(n):
        rhs[j] = a[j] - z_new[j] - u[j]
        dirichlet[j] = clamp[j] < 2 or (group[j] >= 0 and root[j] == j)
        pot[j] = 0.0
    for e in range(m):
        if kind[e] != TIED:
            rhs[tail[e]] -= direction[e]
            rhs[head[e]] += direction[e]
    active = eb[0]
    for e in range(m):
        active[e] = kind[e] == TIED
    _potential_flows(tail, head, active, dirichlet, rhs, pot, direction, 1e-3, 50, False, iw, ew,
                     fw, eb, adj)


@njit(cache=True)
def _mincut_newton_direction(a, b, tail, head, f, u, z, clamp, kind, sign, direction,
                             fw, iw, bw, ew, eb, adj):
    """Classify the edges at the current flows and compute the step direction.

    An edge with b > 0 at zero flow is held there when |z_t - z_h| <= b;
    otherwise it moves, unless the Newton step would push it back through
    zero -- then it is held too and the step recomputed.  If nothing moves,
    the held edge violating its condition most is freed.
    """
    m = b.shape[0]
    for e in range(m):
        d = z[tail[e]] - z[head[e]]
        be, x = b[e], f[e]
        if be > 0.0 and x == 0.0:
            if abs(d) <= be:
                kind[e] = AT_ZERO
            else:
                kind[e] = SMOOTH
                sign[e] = np.sign(d)
        elif be < 0.0 and abs(x) <= -be:
            kind[e] = TIED
        else:
            kind[e] = SMOOTH
            sign[e] = np.sign(x)
    n_groups = _mincut_groups(a, b, tail, head, z, clamp, kind, fw, iw, bw)
    if n_groups < 0:
        _mincut_split(tail, head, clamp, kind, direction, fw, iw, bw, ew, eb, adj)
        return
    released = -1
    for _ in range(2 * m + 2):
        _mincut_solve(a, b, tail, head, f, u, clamp, kind, sign, direction, n_groups,
                      fw, iw, bw, ew, eb, adj)
        blocked = False
        for e in range(m):
            if (kind[e] == SMOOTH and b[e] > 0.0 and f[e] == 0.0 and e != released
                    and sign[e] * direction[e] < 0.0):
                kind[e] = AT_ZERO
                blocked = True
        if blocked:
            continue
        for e in range(m):
            if direction[e] != 0.0:
                return
        worst = 0.0
        released = -1
        for e in range(m):
            if kind[e] == AT_ZERO:
                d = z[tail[e]] - z[head[e]]
                if abs(d) - b[e] > worst:
                    worst = abs(d) - b[e]
                    released = e
        if released < 0:
            return
        kind[released] = SMOOTH
        sign[released] = np.sign(z[tail[released]] - z[head[released]])


@njit(cache=True)
def _edge_region(x, d, b):
    """Piece of phi_e^* at x when moving with slope d (ties broken by d)."""
    if b > 0.0:
        return 1 if x > 0.0 or (x == 0.0 and d > 0.0) else -1
    if b < 0.0:
        if x > -b or (x == -b and d > 0.0):
            return 1
        if x < b or (x == b and d < 0.0):
            return -1
    return 0


@njit(cache=True)
def _edge_next(x, d, b, region):
    """Distance in alpha to the next breakpoint of phi_e^*, inf if none."""
    if d == 0.0:
        return np.inf
    if b > 0.0:
        return -x / d if (region > 0) != (d > 0.0) else np.inf  # reaches zero
    if b < 0.0:
        if d > 0.0:
            if region == -1:
                return (b - x) / d
            if region == 0:
                return (-b - x) / d
        else:
            if region == 1:
                return (-b - x) / d
            if region == 0:
                return (b - x) / d
    return np.inf


@njit(cache=True)
def _node_region(t, w):
    """0: clamped at 0, 1: free, 2: clamped at 1, for t - alpha w just after alpha."""
    if w > 0.0:
        return 2 if t > 1.0 else (1 if t > 0.0 else 0)
    if w < 0.0:
        return 0 if t < 0.0 else (1 if t < 1.0 else 2)
    return 0 if t <= 0.0 else (2 if t >= 1.0 else 1)


@njit(cache=True)
def _node_next(t, w, region):
    """Distance in alpha to the next clamp breakpoint of node value t - alpha w."""
    if w > 0.0:
        if region == 2:
            return (t - 1.0) / w
        if region == 1:
            return t / w
    elif w < 0.0:
        if region == 0:
            return t / w
        if region == 1:
            return (t - 1.0) / w
    return np.inf


@njit(cache=True)
def _node_slope(t, w, alpha, region):
    """(c0, c1) with -clip(t - (x - alpha) w, 0, 1) w = c0 + c1 x in ``region``."""
    if region == 1:
        return -(t + alpha * w) * w, w * w
    if region == 2:
        return -w, 0.0
    return 0.0, 0.0


@njit(cache=True)
def _mincut_search(a, b, tail, head, f, u, delta, fw2, iw2, keys, items, stamps):
    """First local minimiser of the dual along f + alpha delta, projected.

    Edges with b > 0 whose flow reaches zero stay there (the kink of
    phi_e^*), which bends the path: their end nodes change slope.  The dual's
    derivative along the path is piecewise linear, C0 + C1 alpha, between
    breakpoints (pieces of phi_e^*, node clamps, frozen edges) visited in
    order from a heap.  Writes the new flows into f; returns alpha.
    """
    n, m = a.shape[0], b.shape[0]
    x_ref, t_ref, alpha_ref, w, c0s, c1s = fw2[0], fw2[1], fw2[2], fw2[3], fw2[4], fw2[5]
    region, stamp = iw2[0], iw2[1]
    for j in range(n):
        w[j] = 0.0
    for e in range(m):
        w[tail[e]] += delta[e]
        w[head[e]] -= delta[e]
    C0 = 0.0
    C1 = 0.0
    size = 0
    for e in range(m):
        x, d, be = f[e], delta[e], b[e]
        x_ref[e] = x
        alpha_ref[e] = 0.0
        stamp[e] = 0
        reg = _edge_region(x, d, be)
        region[e] = reg
        if d == 0.0 or (be < 0.0 and reg == 0):
            c0s[e] = 0.0
            c1s[e] = 0.0
        else:
            c0s[e] = (x + be * reg) * d
            c1s[e] = d * d
        C0 += c0s[e]
        C1 += c1s[e]
        step = _edge_next(x, d, be, reg)
        if step < np.inf:
            keys[size], items[size], stamps[size] = step, e, 0
            size += 1
    for j in range(n):
        t = a[j] - u[j]
        i = m + j
        t_ref[j] = t
        alpha_ref[i] = 0.0
        stamp[i] = 0
        reg = _node_region(t, w[j])
        region[i] = reg
        c0s[i], c1s[i] = _node_slope(t, w[j], 0.0, reg)
        C0 += c0s[i]
        C1 += c1s[i]
        step = _node_next(t, w[j], reg)
        if step < np.inf:
            keys[size], items[size], stamps[size] = step, i, 0
            size += 1
    for i in range(size // 2 - 1, -1, -1):
        _heap_sift_down(keys, items, stamps, size, i)
    low = 0.0
    alpha = -1.0
    while size > 0:
        high, item, st = keys[0], items[0], stamps[0]
        size -= 1
        keys[0], items[0], stamps[0] = keys[size], items[size], stamps[size]
        _heap_sift_down(keys, items, stamps, size, 0)
        if st != stamp[item]:
            continue  # superseded breakpoint
        if C0 + C1 * high >= 0.0:
            alpha = max(low, -C0 / C1) if C1 > 0.0 else low
            break
        low = high
        C0 -= c0s[item]
        C1 -= c1s[item]
        if item < m and b[item] > 0.0:
            # the flow reaches zero and stays: the end nodes change slope
            e = item
            d = delta[e]
            x_ref[e] = 0.0
            alpha_ref[e] = high
            delta[e] = 0.0
            c0s[e] = 0.0
            c1s[e] = 0.0
            stamp[e] += 1
            for end, sgn in ((tail[e], 1.0), (head[e], -1.0)):
                i = m + end
                C0 -= c0s[i]
                C1 -= c1s[i]
                t = t_ref[end] - (high - alpha_ref[i]) * w[end]
                t_ref[end] = t
                alpha_ref[i] = high
                w[end] -= sgn * d
                reg = _node_region(t, w[end])
                region[i] = reg
                c0s[i], c1s[i] = _node_slope(t, w[end], high, reg)
                C0 += c0s[i]
                C1 += c1s[i]
                stamp[i] += 1
                step = _node_next(t, w[end], reg)
                if step < np.inf:
                    size = _heap_push(keys, items, stamps, size, high + step, i, stamp[i])
            continue
        if item < m:
            # b < 0: the flow crosses b or -b
            e = item
            d, be = delta[e], b[e]
            reg = region[e]
            x = (be if reg == -1 else -be) if d > 0.0 else (-be if reg == 1 else be)
            x_ref[e] = x
            alpha_ref[e] = high
            reg += 1 if d > 0.0 else -1
            region[e] = reg
            c0s[e] = (x - high * d + be * reg) * d if reg != 0 else 0.0
            c1s[e] = d * d if reg != 0 else 0.0
            step = _edge_next(x, d, be, reg)
        else:
            # a node enters or leaves a clamp
            j = item - m
            reg = region[item]
            t = 1.0 if (w[j] > 0.0 and reg == 2) or (w[j] < 0.0 and reg == 1) else 0.0
            t_ref[j] = t
            alpha_ref[item] = high
            reg += -1 if w[j] > 0.0 else 1
            region[item] = reg
            c0s[item], c1s[item] = _node_slope(t, w[j], high, reg)
            step = _node_next(t, w[j], reg)
        C0 += c0s[item]
        C1 += c1s[item]
        if step < np.inf:
            size = _heap_push(keys, items, stamps, size, high + step, item, stamp[item])
    if alpha < 0.0:
        alpha = max(low, -C0 / C1) if C1 > 0.0 else low
    for e in range(m):
        f[e] = x_ref[e] + (alpha - alpha_ref[e]) * delta[e]
    return alpha


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
