"""Generic references: convex QPs (clarabel interior point) for the projection tests, and
the L1-M3N linear programs written out over enumerated outputs (HiGHS)."""

import numpy as np
import scipy.sparse as sp


def qp_project(v, A, b):
    """``argmin 1/2 ||z - v||^2 s.t. A z <= b`` by a generic interior-point solver."""
    import clarabel

    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = 1e-12
    settings.tol_ktratio = 1e-10
    settings.max_iter = 500
    A = sp.csc_matrix(A)
    solver = clarabel.DefaultSolver(sp.identity(v.shape[0], format="csc"), -v, A, b,
                                    [clarabel.NonnegativeConeT(A.shape[0])], settings)
    solution = solver.solve()
    assert str(solution.status) == "Solved"
    return np.array(solution.x)


def matching_constraints(edges, n_src, n_tgt):
    """Rows of ``A z <= b`` for the matching polytope."""
    n_edges = len(edges)
    eye = sp.identity(n_edges, format="csr")
    degree_src = sp.csr_matrix((np.ones(n_edges), (edges[:, 0], np.arange(n_edges))),
                               shape=(n_src, n_edges))
    degree_tgt = sp.csr_matrix((np.ones(n_edges), (edges[:, 1], np.arange(n_edges))),
                               shape=(n_tgt, n_edges))
    A = sp.vstack([-eye, eye, degree_src, degree_tgt])
    b = np.r_[np.zeros(n_edges), np.ones(n_edges + n_src + n_tgt)]
    return A, b


def mincut_constraints(edges, n_nodes):
    """Rows of ``A z <= b`` for the relaxed min-cut polytope (Appendix A, eq. 21)."""
    n_edges = len(edges)
    rows = np.arange(n_edges)
    diff = sp.csr_matrix((np.r_[np.ones(n_edges), -np.ones(n_edges)],
                          (np.r_[rows, rows], np.r_[edges[:, 0], edges[:, 1]])),
                         shape=(n_edges, n_nodes))
    eye_n, eye_e = sp.identity(n_nodes), sp.identity(n_edges)
    zeros = sp.csr_matrix((n_nodes, n_edges))
    A = sp.vstack([
        sp.hstack([-eye_n, zeros]), sp.hstack([eye_n, zeros]),
        sp.hstack([diff, -eye_e]), sp.hstack([-diff, -eye_e]),
    ])
    b = np.r_[np.zeros(n_nodes), np.ones(n_nodes), np.zeros(2 * n_edges)]
    return A, b


def grid_edges(height, width):
    """4-neighbour edges of a height x width grid (row-major node ids)."""
    index = np.arange(height * width).reshape(height, width)
    return np.vstack([
        np.c_[index[:, :-1].ravel(), index[:, 1:].ravel()],
        np.c_[index[:-1].ravel(), index[1:].ravel()],
    ]).astype(np.int64)


def max_margin_matching_optimum(structure, batch, Y, radius):
    """Optimal value of eq. (15) (sum of hinge losses over ||w||_2 <= radius) for matchings.

    The loss-augmented LPs are dualised (node prices ``lam``, edge bound
    multipliers ``mu``) and the whole problem handed to a generic conic solver.
    """
    import clarabel

    d = batch.n_weights
    losses = structure.part_losses(batch, Y)
    truth = structure.expected_features(batch, structure.encode(batch, Y))
    X = batch.X.toarray() if sp.issparse(batch.X) else batch.X
    n_edges = X.shape[0]
    ends, base = [], 0
    for i in range(batch.n_samples):
        n_src, n_tgt = batch.node_counts[i]
        e = batch.edges[batch.unit_offsets[i]:batch.unit_offsets[i + 1]]
        ends.append(np.c_[base + e[:, 0], base + n_src + e[:, 1]])
        base += n_src + n_tgt
    ends = np.vstack(ends)
    n = d + base + n_edges  # x = (w, lam, mu)
    q = np.r_[-truth, np.ones(base + n_edges)]
    rows = np.arange(n_edges)
    incidence = sp.csr_matrix(
        (-np.ones(2 * n_edges), (np.r_[rows, rows], np.r_[ends[:, 0], ends[:, 1]])),
        shape=(n_edges, base),
    )
    margin = sp.hstack([sp.csr_matrix(X), incidence, -sp.identity(n_edges)])
    positive = sp.hstack([sp.csr_matrix((base + n_edges, d)), -sp.identity(base + n_edges)])
    A, b = sp.vstack([margin, positive]), np.r_[-losses, np.zeros(base + n_edges)]
    cones = [clarabel.NonnegativeConeT(A.shape[0])]
    if np.isfinite(radius):
        ball = sp.hstack([sp.vstack([sp.csr_matrix((1, d)), -sp.identity(d)]),
                          sp.csr_matrix((d + 1, base + n_edges))])
        A, b = sp.vstack([A, ball]), np.r_[b, radius, np.zeros(d)]
        cones.append(clarabel.SecondOrderConeT(d + 1))
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    solution = clarabel.DefaultSolver(sp.csc_matrix((n, n)), q, sp.csc_matrix(A), b, cones,
                                      settings).solve()
    return solution.obj_val + structure.loss_offsets(batch, Y).sum()


def enumerated_l1_lp(rows, losses, owners, n_samples, C=None, radius=None, nonnegative=None):
    """P1 (with ``C``) or P1' (with ``radius``) of the L1-M3N, dense, solved by HiGHS.

    One margin constraint ``w . rows[k] >= losses[k] - xi_owners[k]`` per
    enumerated output.  Variables ``[mu, nu, xi] >= 0`` with ``w = mu - nu``
    and ``nu_j = 0`` where ``nonnegative``.  Returns the optimal value and ``w``.
    """
    from scipy.optimize import linprog

    R = np.asarray(rows, dtype=float)
    m, n_weights = R.shape
    slack = np.zeros((m, n_samples))
    slack[np.arange(m), owners] = -1.0
    A = np.hstack([-R, R, slack])
    b = -np.asarray(losses, dtype=float)
    if C is not None:
        cost = np.r_[np.ones(2 * n_weights), np.full(n_samples, C)]
    else:
        cost = np.r_[np.zeros(2 * n_weights), np.full(n_samples, 1.0 / n_samples)]
        A = np.vstack([A, np.r_[np.ones(2 * n_weights), np.zeros(n_samples)]])
        b = np.r_[b, radius]
    bounds = [(0, None)] * cost.size
    if nonnegative is not None:
        for j in np.flatnonzero(nonnegative):
            bounds[n_weights + j] = (0, 0)
    result = linprog(cost, A_ub=A, b_ub=b, bounds=bounds, method="highs")
    assert result.status == 0
    return result.fun, result.x[:n_weights] - result.x[n_weights:2 * n_weights]


def multiclass_l1_lp(X, y, C):
    """P1 for flat data with 0/1 loss, every label of every example enumerated.

    Weights laid out label by label (``L1M3N.weights_`` of a multiclass model);
    ``y`` holds label indices.  Returns the optimal value and ``w``.
    """
    n, d = X.shape
    n_labels = int(np.max(y)) + 1
    rows, losses, owners = [], [], []
    for i in range(n):
        for label in range(n_labels):
            row = np.zeros((n_labels, d))
            row[y[i]] += X[i]
            row[label] -= X[i]
            rows.append(row.ravel())
            losses.append(float(label != y[i]))
            owners.append(i)
    return enumerated_l1_lp(rows, losses, owners, n, C=C)
