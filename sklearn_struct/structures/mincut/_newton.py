"""The Newton direction of the min-cut projection's dual (see :mod:`._projection`).

At the current flows every edge is held at zero, smooth or tied (:data:`AT_ZERO`,
:data:`SMOOTH`, :data:`TIED`); on that model the values of the unclamped groups of tied
nodes solve an SPD system (group sizes plus the Laplacian of the smooth edges between
groups) by CG, the smooth flows follow, and the tied flows change by (nearly) the
least-norm amount that meets the node balances.  Where the model is flat (a group
clamped at both 0 and 1) the direction is the steepest descent there instead.
"""

import numpy as np
from numba import njit

from .._flow_kernels import _find

# classes of the edges in the Newton model
AT_ZERO = 0  # b > 0, flow held at zero
SMOOTH = 1  # flow = z_t - z_h - b * sign
TIED = 2  # b < 0 and |flow| <= -b: z_t = z_h


@njit(cache=True)
def _cg_step(k, diag, x, r, p, q, rz):
    """A step of Jacobi-preconditioned CG on the first ``k`` unknowns, given ``q = A p``:
    ``x``, the residual ``r`` and the direction ``p`` move where ``diag > 0`` (the others
    are held); returns the new ``r . D^-1 r`` (``rz`` the old)."""
    pq = 0.0
    for i in range(k):
        pq += p[i] * q[i]
    step = rz / pq
    rz_new = 0.0
    for i in range(k):
        if diag[i] > 0.0:
            x[i] += step * p[i]
            r[i] -= step * q[i]
            rz_new += r[i] * r[i] / diag[i]
    beta = rz_new / rz
    for i in range(k):
        if diag[i] > 0.0:
            p[i] = r[i] / diag[i] + beta * p[i]
    return rz_new


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
        rz = _cg_step(k, diag, xs, r, p, q, rz)
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
        rz = _cg_step(n_groups, diag, x, r, p, q, rz)


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
