import itertools
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn.exceptions import ConvergenceWarning

from sklearn_struct.structures import BaseStructure, UnsupportedOperation
from sklearn_struct.structures.mincut import structure as mincut
from sklearn_struct.structures import _generic_kernels
from sklearn_struct.structures._kernel import specialize
from sklearn_struct.structures.mincut.structure import MinCutStructure

from _qp_reference import grid_edges, mincut_constraints, qp_project


def random_grid(rng, height, width, d=2):
    edges = grid_edges(height, width)
    return rng.randn(height * width, d), edges, rng.rand(len(edges), 1)


@pytest.mark.parametrize("seed", range(6))
def test_projection_matches_generic_qp(seed):
    pytest.importorskip("clarabel")
    rng = np.random.RandomState(seed)
    height, width = (10, 20) if seed < 3 else rng.randint(1, 12, size=2)
    edges = grid_edges(height, width)
    n_nodes = height * width
    scale = rng.choice([0.3, 1.0, 3.0])
    v = np.r_[rng.randn(n_nodes) * scale + 0.5, rng.randn(len(edges)) * scale]
    structure = MinCutStructure()
    batch = structure.make_batch([(np.ones((n_nodes, 1)), edges, np.ones((len(edges), 1)))])
    state = {}
    z = structure.project(batch, v, warm_start=state)
    assert state["residual"] <= 1e-9
    reference = qp_project(v, *mincut_constraints(edges, n_nodes))
    np.testing.assert_allclose(z, reference, atol=1e-7)


def test_projection_on_random_graph_with_warm_start():
    pytest.importorskip("clarabel")
    rng = np.random.RandomState(7)
    n_nodes = 40
    pairs = np.array([(j, k) for j in range(n_nodes) for k in range(j + 1, n_nodes)])
    edges = pairs[rng.rand(len(pairs)) < 0.1]
    structure = MinCutStructure()
    batch = structure.make_batch([(np.ones((n_nodes, 1)), edges, np.ones((len(edges), 1)))])
    v = rng.randn(batch.part_offsets[-1])
    state = {}
    structure.project(batch, v, warm_start=state)
    z = structure.project(batch, v + 0.01, warm_start=state)
    np.testing.assert_allclose(z, qp_project(v + 0.01, *mincut_constraints(edges, n_nodes)),
                               atol=1e-7)


def kkt_violation(v, edges, n_nodes, z, flows):
    """Largest violation of the KKT conditions of eq. (21) given the edge flows.

    With mu_+- = ((z_jk - v_jk) +- f) / 2 the multipliers of
    +-(z_j - z_k) <= z_jk, optimality is: mu >= 0, complementarity,
    feasibility, and z_j = clip(v_j - (D^T f)_j, 0, 1) (box multipliers).
    """
    a, b = v[:n_nodes], v[n_nodes:]
    z_nodes, z_edges = z[:n_nodes], z[n_nodes:]
    tail, head = edges[:, 0], edges[:, 1]
    divergence = np.bincount(tail, flows, n_nodes) - np.bincount(head, flows, n_nodes)
    d = z_nodes[tail] - z_nodes[head]
    mu_plus, mu_minus = (z_edges - b + flows) / 2, (z_edges - b - flows) / 2
    return max(np.abs(z_nodes - np.clip(a - divergence, 0.0, 1.0)).max(),
               -mu_plus.min(initial=0.0), -mu_minus.min(initial=0.0),
               (np.abs(d) - z_edges).max(initial=0.0),
               np.abs(mu_plus * (d - z_edges)).max(initial=0.0),
               np.abs(mu_minus * (-d - z_edges)).max(initial=0.0))


@pytest.mark.parametrize("seed", range(12))
def test_projection_kkt_certificate_on_degenerate_points(seed):
    # ties everywhere (v on a coarse grid), encoded labellings, far-away
    # points, isolated nodes, a repeated edge, graphs without edges
    rng = np.random.RandomState(200 + seed)
    n_nodes = rng.randint(2, 30)
    pairs = np.array([(j, k) for j in range(n_nodes - 1) for k in range(j + 1, n_nodes - 1)],
                     dtype=np.int64).reshape(-1, 2)
    edges = pairs[rng.rand(len(pairs)) < 0.3]
    if seed % 3 == 0:
        edges = np.vstack([edges, edges[:1]])
    if seed == 11:
        edges = np.zeros((0, 2), dtype=np.int64)
    structure = MinCutStructure()
    batch = structure.make_batch([(np.ones((n_nodes, 1)), edges, np.ones((len(edges), 1)))])
    n_parts = batch.part_offsets[-1]
    kind = seed % 4
    if kind == 0:
        v = np.round(rng.randn(n_parts) * 2) / 2
    elif kind == 1:
        v = structure.encode(batch, rng.randint(2, size=n_nodes))
    elif kind == 2:
        v = rng.randn(n_parts) * 100
    else:
        v = np.r_[rng.rand(n_nodes), -0.5 * rng.rand(len(edges))]
    state = {}
    z = structure.project(batch, v, warm_start=state)
    scale = max(1.0, np.abs(v).max())
    assert state["residual"] <= 1e-12 * scale
    assert kkt_violation(v, edges, n_nodes, z, state["duals"]) <= 1e-9 * scale
    if kind == 1:
        np.testing.assert_allclose(z, v, atol=1e-12)  # a vertex projects to itself
    np.testing.assert_allclose(structure.project(batch, v, warm_start=state), z, atol=1e-12)


def test_projection_of_a_batch_keeps_examples_apart():
    rng = np.random.RandomState(4)
    graphs = [random_grid(rng, 3, 5), random_grid(rng, 4, 2)]
    structure = MinCutStructure()
    batch = structure.make_batch(graphs)
    v = rng.randn(batch.part_offsets[-1])
    z = structure.project(batch, v)
    for i, graph in enumerate(graphs):
        lo, hi = batch.part_offsets[i], batch.part_offsets[i + 1]
        alone = structure.make_batch([graph])
        np.testing.assert_allclose(z[lo:hi], structure.project(alone, v[lo:hi]), atol=1e-12)


def test_projection_warns_when_stopped_early(monkeypatch):
    rng = np.random.RandomState(0)
    structure = MinCutStructure()
    batch = structure.make_batch([random_grid(rng, 3, 3)])
    monkeypatch.setattr(mincut, "MAX_NEWTON_ITER", 0)
    with pytest.warns(ConvergenceWarning, match="KKT residual"):
        structure.project(batch, rng.randn(batch.part_offsets[-1]))


@pytest.mark.parametrize("seed", range(6))
def test_argmax_matches_brute_force(seed):
    rng = np.random.RandomState(seed)
    node_features, edges, edge_features = random_grid(rng, 3, 3)
    structure = MinCutStructure()
    batch = structure.make_batch([(node_features, edges, edge_features)])
    w = np.r_[rng.randn(2), rng.rand(1) * 2]
    scores = structure.part_scores(batch, w)
    Y = structure.argmax(batch, scores)
    best = max(scores @ structure.encode(batch, np.array(y))
               for y in itertools.product([0, 1], repeat=9))
    assert scores @ structure.encode(batch, Y) == pytest.approx(best)


def test_encode_losses_and_adjoint():
    rng = np.random.RandomState(0)
    graphs = [random_grid(rng, 2, 3), random_grid(rng, 3, 2)]
    structure = MinCutStructure()
    batch = structure.make_batch(graphs)
    truth = rng.randint(2, size=12)
    other = rng.randint(2, size=12)
    owner = np.repeat([0, 1], 6)
    loss = (np.bincount(owner, structure.encode(batch, other)[structure._node_parts(batch)]
                        * structure.part_losses(batch, truth)[structure._node_parts(batch)])
            + structure.loss_offsets(batch, truth))
    np.testing.assert_allclose(loss, np.bincount(owner, truth != other))
    w, z = rng.randn(3), rng.rand(batch.part_offsets[-1])
    assert structure.part_scores(batch, w) @ z == pytest.approx(
        w @ structure.expected_features(batch, z))
    np.testing.assert_array_equal(structure.nonnegative_weights(batch), [False, False, True])
    sub = structure.take(batch, [1])
    np.testing.assert_allclose(structure.part_scores(sub, w),
                               structure.part_scores(structure.make_batch([graphs[1]]), w))


def test_bad_input():
    structure = MinCutStructure()
    nodes, edges = np.ones((3, 2)), np.array([[0, 1], [1, 2]])
    with pytest.raises(ValueError, match="example 1.*non-negative"):
        structure.make_batch([(nodes, edges, np.ones((2, 1))), (nodes, edges, -np.ones((2, 1)))])
    with pytest.raises(ValueError, match="example 0.*out of range"):
        structure.make_batch([(nodes, np.array([[0, 3], [1, 2]]), np.ones((2, 1)))])
    with pytest.raises(ValueError, match="example 1.*node features"):
        structure.make_batch([(nodes, edges, np.ones((2, 1))),
                              (np.ones((3, 5)), edges, np.ones((2, 1)))])
    with pytest.raises(ValueError, match="self-loop"):
        structure.make_batch([(nodes, np.array([[0, 0], [1, 2]]), np.ones((2, 1)))])
    with pytest.raises(TypeError, match="example 0"):
        structure.make_batch([(nodes, edges)])
    batch = structure.make_batch([(nodes, edges, np.ones((2, 1)))])
    with pytest.raises(ValueError, match="submodular"):
        structure.argmax(batch, np.r_[np.zeros(3), 1.0, 1.0])


def far_grid_point(seed):
    """A small grid and a far-away point (|v| up to 1e6): most nodes clamped."""
    rng = np.random.RandomState(seed)
    height, width = rng.randint(2, 5, size=2)
    scale = 10.0 ** rng.randint(2, 7)
    edges = grid_edges(height, width)
    v = np.r_[(rng.randn(height * width) + 0.5) * scale, rng.randn(len(edges)) * scale]
    return edges, height * width, v


# most of these used to stall: a node within rounding of 0 or 1
# held as clamped absorbed the flow of every split step one unit at a time
@pytest.mark.parametrize("seed", [3, 4, 7, 11, 17, 20, 92, 280])
def test_projection_of_far_points_converges(seed):
    edges, n_nodes, v = far_grid_point(seed)
    structure = MinCutStructure()
    batch = structure.make_batch([(np.ones((n_nodes, 1)), edges, np.ones((len(edges), 1)))])
    state = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        z = structure.project(batch, v, warm_start=state)
    scale = np.abs(v).max()
    assert state["residual"] <= 1e-12 * scale
    assert kkt_violation(v, edges, n_nodes, z, state["duals"]) <= 1e-9 * scale


@pytest.mark.parametrize("scale", [1e3, 1e6])
def test_projection_of_far_points_on_a_grid_matches_generic_qp(scale):
    pytest.importorskip("clarabel")
    rng = np.random.RandomState(int(np.log10(scale)))
    edges = grid_edges(10, 20)
    v = np.r_[(rng.randn(200) + 0.5) * scale, rng.randn(len(edges)) * scale]
    structure = MinCutStructure()
    batch = structure.make_batch([(np.ones((200, 1)), edges, np.ones((len(edges), 1)))])
    state = {}
    z = structure.project(batch, v, warm_start=state)
    assert state["residual"] <= 1e-12 * scale
    reference = qp_project(v, *mincut_constraints(edges, 200))
    np.testing.assert_allclose(z, reference, atol=1e-9 * scale)


@pytest.mark.parametrize("seed", range(4))
def test_cold_and_warm_projections_agree(seed):
    # cold starts run first-order steps before Newton, warm starts do not
    rng = np.random.RandomState(300 + seed)
    node_features, edges, edge_features = random_grid(rng, 6, 9)
    structure = MinCutStructure()
    batch = structure.make_batch([(node_features, edges, edge_features)])
    v = np.r_[rng.randn(54) + 0.5, rng.randn(len(edges))] * (1.0, 5.0, 30.0, 0.1)[seed]
    other = v + rng.randn(v.shape[0])
    cold = structure.project(batch, v)
    state = {}
    structure.project(batch, other, warm_start=state)
    warm = structure.project(batch, v, warm_start=state)
    scale = max(1.0, np.abs(v).max())
    assert state["residual"] <= 1e-12 * scale
    np.testing.assert_allclose(warm, cold, atol=1e-9 * scale)
    np.testing.assert_allclose(structure.project(batch, v, warm_start=state), cold,
                               atol=1e-9 * scale)


# ------------------------------------------------------------ protocol methods


def random_graphs(rng, n_graphs=5, sparse=False, d_node=3, d_edge=2):
    """Random graphs of 1 to 7 nodes (some without edges), non-negative edge features."""
    graphs = []
    for _ in range(n_graphs):
        n_nodes = rng.randint(1, 8)
        pairs = np.array([(j, k) for j in range(n_nodes) for k in range(j + 1, n_nodes)],
                         dtype=np.int64).reshape(-1, 2)
        edges = pairs[rng.rand(len(pairs)) < 0.5]
        node_features = rng.randn(n_nodes, d_node)
        edge_features = rng.rand(len(edges), d_edge) * (rng.rand(len(edges), d_edge) < 0.7)
        if sparse:
            node_features, edge_features = sp.csr_matrix(node_features), sp.csr_matrix(
                edge_features)
        graphs.append((node_features, edges, edge_features))
    return graphs


def test_project_writes_nothing_on_the_structure():
    rng = np.random.RandomState(0)
    structure = MinCutStructure()
    batch = structure.make_batch(random_graphs(rng))
    before = dict(vars(structure))
    v = rng.randn(batch.part_offsets[-1])
    structure.project(batch, v)
    state = {}
    structure.project(batch, v, warm_start=state)
    assert vars(structure) == before
    assert set(state) == {"duals", "residual"}
    assert 0.0 <= state["residual"] <= 1e-12 * max(1.0, np.abs(v).max())
    assert state["duals"].shape == (int(batch.edge_offsets[-1]),)


def test_target_codec_round_trip_and_errors():
    rng = np.random.RandomState(1)
    structure = MinCutStructure()
    batch = structure.make_batch(random_graphs(rng, n_graphs=3))
    Y = rng.randint(2, size=batch.unit_offsets[-1])
    y = np.split(Y, batch.unit_offsets[1:-1])
    codec = structure.output_space().codec(y)
    np.testing.assert_array_equal(codec.classes_, [0, 1])
    assert codec.n_states is None
    np.testing.assert_array_equal(codec.encode(batch, y), Y)
    for decoded, original in zip(codec.decode(batch, Y), y):
        np.testing.assert_array_equal(decoded, original)
    bad = [yi.copy() for yi in y]
    bad[2][-1] = -1
    with pytest.raises(ValueError, match=r"y\[2\]: value .*-1\)? at node \d+; labels must"):
        codec.encode(batch, bad)
    with pytest.raises(ValueError, match=r"y\[0\]: expected \d+ labels \(one per node\)"):
        codec.encode(batch, [np.r_[y[0], 1]] + y[1:])


def test_n_features_in_feature_bounds_and_score():
    rng = np.random.RandomState(2)
    structure = MinCutStructure()
    for sparse in (False, True):
        graphs = random_graphs(rng, sparse=sparse)
        batch = structure.make_batch(graphs)
        assert structure.output_space().n_features_in(batch) == 5 == batch.n_weights
        bounds = structure.feature_bounds(batch, "euclidean")

        def column_norm(X):
            X = np.asarray(sp.csr_matrix(X).todense())
            return np.sqrt((X ** 2).sum(axis=0)).max(initial=0.0)

        expected = [max(column_norm(nodes), column_norm(edge_features))
                    for nodes, _, edge_features in graphs]
        np.testing.assert_allclose(bounds, expected)
    with pytest.raises(UnsupportedOperation, match="MinCutStructure.*entropic"):
        structure.feature_bounds(batch, "entropic")
    with pytest.raises(ValueError, match="geometry"):
        structure.feature_bounds(batch, "euclidian")
    # the default score: node accuracy, sample weights repeated per node
    Y = rng.randint(2, size=batch.unit_offsets[-1])
    other = Y.copy()
    other[0] = 1 - other[0]
    n_units = Y.shape[0]
    assert structure.output_space().score(batch, other, Y) == pytest.approx(1 - 1 / n_units)
    weights = np.ones(batch.n_samples)
    weights[0] = 0.0
    assert structure.output_space().score(batch, other, Y, sample_weight=weights) == 1.0
    np.testing.assert_allclose(structure.loss_offsets(batch, Y),
                               np.add.reduceat(Y, batch.unit_offsets[:-1]))
    mask = structure.nonnegative_weights(batch)
    np.testing.assert_array_equal(mask, [False] * 3 + [True] * 2)


# ------------------------------------------------------- per-example kernels


@pytest.mark.parametrize("sparse", ["dense", "sparse", "mixed"])
def test_kernel_feature_maps_match_batch_methods(sparse):
    rng = np.random.RandomState(3)
    structure = MinCutStructure()
    graphs = random_graphs(rng, n_graphs=6, sparse=sparse == "sparse")
    if sparse == "mixed":  # dense node features, sparse edge features
        graphs = [(nodes, edges, sp.csr_matrix(features)) for nodes, edges, features in graphs]
    batch = structure.make_batch(graphs)
    data = structure.kernel_data(batch)
    assert isinstance(data, tuple)
    assert all(isinstance(x, (np.ndarray, int, float)) for x in data)
    n_parts = int(batch.part_offsets[-1])
    w, scale = rng.randn(5), rng.rand(5) + 0.5
    np.testing.assert_allclose(BaseStructure.part_scores(structure, batch, w),
                               structure.part_scores(batch, w), atol=1e-12)
    out = np.full(n_parts, np.nan)
    specialize(_generic_kernels.batch_part_scores, structure.kernel_ops)(
        data, batch.part_offsets, w, scale, out)
    np.testing.assert_allclose(out, structure.part_scores(batch, scale * w), atol=1e-12)
    z, sample_weight = rng.randn(n_parts), rng.rand(batch.n_samples)
    for weights in (None, sample_weight):
        np.testing.assert_allclose(
            BaseStructure.expected_features(structure, batch, z, sample_weight=weights),
            structure.expected_features(batch, z, sample_weight=weights), atol=1e-12)
    added = rng.randn(5)
    expected = added + scale * structure.expected_features(batch, z, sample_weight)
    specialize(_generic_kernels.batch_add_features, structure.kernel_ops)(
        data, batch.part_offsets, z, sample_weight, scale, added)
    np.testing.assert_allclose(added, expected, atol=1e-12)
    Y = rng.randint(2, size=batch.unit_offsets[-1])
    np.testing.assert_array_equal(BaseStructure.encode(structure, batch, Y),
                                  structure.encode(batch, Y))
    add_features_norm = structure.kernel_ops.functions["add_features_norm"]
    lo, hi = batch.part_offsets[1], batch.part_offsets[2]
    dmu = rng.randn(hi - lo)
    z = np.zeros(n_parts)
    z[lo:hi] = dmu
    change = scale * structure.expected_features(batch, z)
    start = rng.randn(5)
    w = start.copy()
    value = add_features_norm(data, 1, dmu, scale, w, np.zeros(5), np.zeros(2 * (hi - lo)))
    assert value == pytest.approx(change @ change)
    np.testing.assert_allclose(w, start + change, atol=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_kernel_argmax_matches_batch_and_brute_force(seed):
    rng = np.random.RandomState(seed)
    structure = MinCutStructure()
    graphs = random_graphs(rng, n_graphs=4)
    batch = structure.make_batch(graphs)
    w = np.r_[rng.randn(3), rng.rand(2) * 2]
    scores = structure.part_scores(batch, w)
    Y = BaseStructure.argmax(structure, batch, scores)
    np.testing.assert_array_equal(Y, structure.argmax(batch, scores))
    for i, graph in enumerate(graphs):
        alone = structure.make_batch([graph])
        own = structure.part_scores(alone, w)
        n_nodes = alone.unit_offsets[-1]
        best = max(own @ structure.encode(alone, np.array(y))
                   for y in itertools.product([0, 1], repeat=n_nodes))
        y_i = Y[batch.unit_offsets[i]:batch.unit_offsets[i + 1]]
        assert own @ structure.encode(alone, y_i) == pytest.approx(best)
    truth = rng.randint(2, size=batch.unit_offsets[-1])
    np.testing.assert_array_equal(
        BaseStructure.argmax(structure, batch, scores + structure.part_losses(batch, truth)),
        structure.loss_augmented_argmax(batch, scores, truth))


def test_kernel_argmax_clips_positive_edge_scores():
    # the batch argmax refuses a positive edge score; the kernel treats it as 0
    structure = MinCutStructure()
    nodes, edges = np.ones((3, 2)), np.array([[0, 1], [1, 2]])
    batch = structure.make_batch([(nodes, edges, np.ones((2, 1)))])
    scores = np.array([1.0, -2.0, 0.5, 3.0, -0.25])
    with pytest.raises(ValueError, match="submodular"):
        structure.argmax(batch, scores)
    clipped = np.r_[scores[:3], np.minimum(scores[3:], 0.0)]
    np.testing.assert_array_equal(BaseStructure.argmax(structure, batch, scores),
                                  structure.argmax(batch, clipped))
    np.testing.assert_array_equal(structure.argmax(batch, clipped), [1, 0, 1])


def test_kernel_project_matches_batch_project():
    rng = np.random.RandomState(7)
    structure = MinCutStructure()
    grid = grid_edges(5, 6)
    batch = structure.make_batch(random_graphs(rng, n_graphs=8)
                                 + [(rng.randn(30, 3), grid, rng.rand(len(grid), 2))])
    n_parts = int(batch.part_offsets[-1])
    for v in (2.0 * rng.randn(n_parts), 1e3 * rng.randn(n_parts),
              structure.encode(batch, rng.randint(2, size=batch.unit_offsets[-1]))):
        z = BaseStructure.project(structure, batch, v)
        np.testing.assert_allclose(z, structure.project(batch, v),
                                   atol=1e-9 * max(1.0, np.abs(v).max()))
    project = structure.kernel_ops.functions["project"]
    data = structure.kernel_data(batch)
    i = batch.n_samples - 1
    lo, hi = batch.part_offsets[i], batch.part_offsets[i + 1]
    out = np.full(hi - lo, np.nan)
    project(data, i, v[lo:hi].copy(), out)
    np.testing.assert_allclose(out, structure.project(structure.take(batch, [i]), v[lo:hi]),
                               atol=1e-12)
