import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment

from sklearn.exceptions import ConvergenceWarning

from sklearn_struct.structures import BaseStructure, UnsupportedOperation
from sklearn_struct.structures.matching import structure as matching
from sklearn_struct.structures import _generic_kernels
from sklearn_struct.structures.matching._kernels import max_weight_matching
from sklearn_struct.structures._kernel import specialize
from sklearn_struct.structures.matching.structure import MatchingStructure

from _qp_reference import matching_constraints, qp_project


def random_graph(rng, n_src, n_tgt, density, d=3):
    edges = np.argwhere(rng.rand(n_src, n_tgt) < density).astype(np.int64)
    return rng.randn(len(edges), d), edges


def brute_force_matching(scores, edges):
    best = 0.0
    for r in range(1, len(edges) + 1):
        for subset in itertools.combinations(range(len(edges)), r):
            chosen = edges[list(subset)]
            if len(set(chosen[:, 0])) == r and len(set(chosen[:, 1])) == r:
                value = scores[list(subset)].sum()
                if value > best:
                    best = value
    return best


@pytest.mark.parametrize("seed", range(8))
def test_projection_matches_generic_qp(seed):
    pytest.importorskip("clarabel")
    rng = np.random.RandomState(seed)
    n_src, n_tgt = (30, 30) if seed < 2 else rng.randint(1, 31, size=2)
    features, edges = random_graph(rng, n_src, n_tgt, rng.uniform(0.2, 1.0))
    if len(edges) == 0:
        return
    v = rng.randn(len(edges)) * rng.choice([0.3, 1.0, 3.0]) + rng.choice([0.0, 0.5])
    structure = MatchingStructure()
    batch = structure.make_batch([(features, edges, (n_src, n_tgt))])
    state = {}
    z = structure.project(batch, v, warm_start=state)
    assert state["residual"] <= 1e-9
    reference = qp_project(v, *matching_constraints(edges, n_src, n_tgt))
    np.testing.assert_allclose(z, reference, atol=1e-7)


def test_projection_kkt_residual_and_warm_start():
    rng = np.random.RandomState(3)
    features, edges = random_graph(rng, 12, 15, 0.6)
    structure = MatchingStructure()
    batch = structure.make_batch([(features, edges)] * 3)
    v = rng.randn(batch.part_offsets[-1]) * 2
    state = {}
    z_cold = structure.project(batch, v, warm_start=state)
    z_warm = structure.project(batch, v + 1e-3, warm_start=state)
    assert state["residual"] <= 1e-9
    np.testing.assert_allclose(z_warm, structure.project(batch, v + 1e-3), atol=1e-8)
    # projecting a point of the polytope returns it
    integral = structure.encode(batch, structure.argmax(batch, v))
    np.testing.assert_allclose(structure.project(batch, integral), integral, atol=1e-12)
    assert z_cold.min() >= 0 and z_cold.max() <= 1


def kkt_violation(v, edges, n_src, n_tgt, z, prices):
    """Largest violation of the KKT conditions of min 1/2||z - v||^2 over the matching polytope.

    Prices p >= 0 of the degree constraints certify optimality when
    z = max(v - p_source - p_target, 0), degrees <= 1 and p (1 - degree) = 0
    (z <= 1 is implied by the degrees).
    """
    p_src, p_tgt = prices[:n_src], prices[n_src:]
    degree = np.r_[np.bincount(edges[:, 0], z, n_src), np.bincount(edges[:, 1], z, n_tgt)]
    stationarity = np.abs(z - np.maximum(v - p_src[edges[:, 0]] - p_tgt[edges[:, 1]], 0.0))
    return max(stationarity.max(initial=0.0), -prices.min(initial=0.0),
               (degree - 1.0).max(initial=0.0), np.abs(prices * (1.0 - degree)).max(initial=0.0))


@pytest.mark.parametrize("seed", range(12))
def test_projection_kkt_certificate_on_degenerate_points(seed):
    # ties everywhere (v on a coarse grid), integral points, far-away points,
    # graphs with isolated nodes: the returned z and prices certify optimality
    rng = np.random.RandomState(100 + seed)
    n_src, n_tgt = rng.randint(1, 16, size=2)
    features, edges = random_graph(rng, n_src, n_tgt, rng.uniform(0.2, 1.0))
    if len(edges) == 0:
        edges = np.array([[0, 0]])
        features = np.ones((1, 3))
    n_src, n_tgt = n_src + 2, n_tgt + 1  # isolated nodes
    kind = seed % 4
    if kind == 0:
        v = np.round(rng.randn(len(edges)) * 2) / 2
    elif kind == 1:
        structure = MatchingStructure()
        batch = structure.make_batch([(features, edges, (n_src, n_tgt))])
        v = structure.encode(batch, structure.argmax(batch, rng.randn(len(edges))))
    elif kind == 2:
        v = rng.randn(len(edges)) * 100
    else:
        v = np.full(len(edges), 0.75)
    structure = MatchingStructure()
    batch = structure.make_batch([(features, edges, (n_src, n_tgt))])
    state = {}
    z = structure.project(batch, v, warm_start=state)
    assert state["residual"] <= 1e-12 * max(1.0, np.abs(v).max())
    assert kkt_violation(v, edges, n_src, n_tgt, z, state["duals"]) <= 1e-9 * max(
        1.0, np.abs(v).max())
    if kind == 1:
        np.testing.assert_array_equal(z, v)  # a vertex of the polytope projects to itself
    # warm started at its own solution the projection returns it again
    np.testing.assert_allclose(structure.project(batch, v, warm_start=state), z, atol=1e-12)


def test_projection_of_a_batch_keeps_examples_apart():
    rng = np.random.RandomState(5)
    graphs = [random_graph(rng, 6, 7, 0.7), random_graph(rng, 9, 4, 0.5)]
    structure = MatchingStructure()
    batch = structure.make_batch(graphs)
    v = rng.randn(batch.part_offsets[-1]) * 2
    z = structure.project(batch, v)
    for i, graph in enumerate(graphs):
        lo, hi = batch.part_offsets[i], batch.part_offsets[i + 1]
        alone = structure.make_batch([graph])
        np.testing.assert_allclose(z[lo:hi], structure.project(alone, v[lo:hi]), atol=1e-12)


def test_projection_warns_when_stopped_early(monkeypatch):
    rng = np.random.RandomState(0)
    structure = MatchingStructure()
    batch = structure.make_batch([random_graph(rng, 5, 5, 1.0)])
    monkeypatch.setattr(matching, "MAX_NEWTON_ITER", 0)
    with pytest.warns(ConvergenceWarning, match="KKT residual"):
        structure.project(batch, rng.randn(batch.part_offsets[-1]) + 1.0)


@pytest.mark.parametrize("seed", range(6))
def test_argmax_matches_brute_force(seed):
    rng = np.random.RandomState(seed)
    features, edges = random_graph(rng, 3, 4, 0.7)
    structure = MatchingStructure()
    batch = structure.make_batch([(features, edges)])
    scores = rng.randn(len(edges))
    Y = structure.argmax(batch, scores)
    assert scores @ Y == pytest.approx(brute_force_matching(scores, edges))
    assert np.all(scores[Y == 1] > 0)


def test_losses_are_weighted_hamming():
    rng = np.random.RandomState(0)
    graphs = [random_graph(rng, 4, 5, 0.8) for _ in range(3)]
    structure = MatchingStructure(false_positive_cost=1.0, false_negative_cost=3.0)
    batch = structure.make_batch(graphs)
    truth = structure.argmax(batch, rng.randn(batch.part_offsets[-1]))
    other = structure.argmax(batch, rng.randn(batch.part_offsets[-1]))
    per_example = structure.encode(batch, other) * structure.part_losses(batch, truth)
    owner = np.repeat(np.arange(3), np.diff(batch.unit_offsets))
    value = np.bincount(owner, per_example) + structure.loss_offsets(batch, truth)
    expected = np.bincount(owner, 1.0 * (other & ~truth & 1) + 3.0 * (truth & ~other & 1))
    np.testing.assert_allclose(value, expected)


@pytest.mark.parametrize("sparse", [False, True])
def test_feature_maps_are_adjoint_and_take(sparse):
    rng = np.random.RandomState(1)
    graphs = [random_graph(rng, 5, 4, 0.7, d=6) for _ in range(4)]
    if sparse:
        graphs = [(sp.csr_matrix(f), e) for f, e in graphs]
    structure = MatchingStructure()
    batch = structure.make_batch(graphs)
    w, z = rng.randn(6), rng.rand(batch.part_offsets[-1])
    assert structure.part_scores(batch, w) @ z == pytest.approx(
        w @ structure.expected_features(batch, z))
    sub = structure.take(batch, [2, 0])
    direct = structure.make_batch([graphs[2], graphs[0]])
    np.testing.assert_allclose(structure.part_scores(sub, w), structure.part_scores(direct, w))
    np.testing.assert_array_equal(sub.node_counts, direct.node_counts)


def test_bad_input():
    structure = MatchingStructure()
    f = np.ones((2, 3))
    with pytest.raises(ValueError, match="example 1.*duplicate"):
        structure.make_batch([(f, np.array([[0, 0], [1, 1]])), (f, np.array([[0, 1], [0, 1]]))])
    with pytest.raises(ValueError, match="example 0.*out of range"):
        structure.make_batch([(f, np.array([[0, 0], [2, 1]]), (2, 2))])
    with pytest.raises(ValueError, match="example 0.*non-negative"):
        structure.make_batch([(f, np.array([[0, 0], [-1, 1]]))])
    with pytest.raises(ValueError, match=r"example 0.*\(n_edges, 2\)"):
        structure.make_batch([(f, np.array([[0, 0, 1], [1, 1, 0]]))])
    with pytest.raises(ValueError, match="example 1.*same feature width"):
        structure.make_batch([(f, np.array([[0, 0], [1, 1]])),
                              (np.ones((2, 4)), np.array([[0, 0], [1, 1]]))])
    with pytest.raises(ValueError, match="example 0.*3 rows|2 edges but 3"):
        structure.make_batch([(np.ones((3, 3)), np.array([[0, 0], [1, 1]]))])
    with pytest.raises(TypeError, match="list"):
        structure.make_batch((f, np.array([[0, 0], [1, 1]])))
    with pytest.raises(TypeError, match="example 0"):
        structure.make_batch([f])
    with pytest.raises(NotImplementedError, match="marginals"):
        structure.marginals(structure.make_batch([(f, np.array([[0, 0], [1, 1]]))]), np.ones(2))


# ------------------------------------------------------------ protocol methods


def random_batch(rng, n_graphs=5, sparse=False, d=3):
    graphs = []
    for _ in range(n_graphs):
        n_src, n_tgt = rng.randint(1, 7, size=2)
        features, edges = random_graph(rng, n_src, n_tgt, rng.uniform(0.3, 1.0), d=d)
        graphs.append((sp.csr_matrix(features) if sparse else features, edges,
                       (n_src + 1, n_tgt)))  # an isolated source node
    return graphs


def test_project_writes_nothing_on_the_structure():
    rng = np.random.RandomState(0)
    structure = MatchingStructure(false_positive_cost=2.0)
    batch = structure.make_batch(random_batch(rng))
    before = dict(vars(structure))
    v = rng.randn(batch.part_offsets[-1])
    structure.project(batch, v)
    state = {}
    structure.project(batch, v, warm_start=state)
    assert vars(structure) == before
    assert set(state) == {"duals", "residual"}
    assert 0.0 <= state["residual"] <= 1e-12 * max(1.0, np.abs(v).max())
    assert state["duals"].shape == (int(batch.node_counts.sum()),)


def test_target_codec_round_trip_and_errors():
    rng = np.random.RandomState(1)
    structure = MatchingStructure()
    graphs = random_batch(rng, n_graphs=3)
    batch = structure.make_batch(graphs)
    Y = structure.argmax(batch, rng.randn(batch.part_offsets[-1]))
    y = np.split(Y, batch.unit_offsets[1:-1])
    codec = structure.output_space().codec(y)
    np.testing.assert_array_equal(codec.classes_, [0, 1])
    np.testing.assert_array_equal(codec.encode(batch, y), Y)
    for decoded, original in zip(codec.decode(batch, Y), y):
        np.testing.assert_array_equal(decoded, original)
    bad = [yi.copy() for yi in y]
    bad[1][0] = 2
    with pytest.raises(ValueError, match=r"y\[1\]: value .*2\)? at edge 0; labels must be 0 or 1"):
        codec.encode(batch, bad)
    with pytest.raises(ValueError, match=r"y\[2\]: expected \d+ labels \(one per edge\)"):
        codec.encode(batch, y[:2] + [np.r_[y[2], 0]])
    with pytest.raises(ValueError, match="3 examples but y has 2"):
        codec.encode(batch, y[:2])


def test_n_features_in_and_feature_bounds():
    rng = np.random.RandomState(2)
    structure = MatchingStructure()
    for sparse in (False, True):
        graphs = random_batch(rng, sparse=sparse, d=4)
        graphs.append((np.zeros((0, 4)), np.zeros((0, 2), dtype=int), (2, 2)))  # no edge
        batch = structure.make_batch(graphs)
        assert structure.output_space().n_features_in(batch) == 4
        bounds = structure.feature_bounds(batch, "euclidean")
        expected = [np.sqrt((np.asarray(sp.csr_matrix(f).todense()) ** 2).sum(axis=0)).max(
            initial=0.0) for f, _, _ in graphs]
        np.testing.assert_allclose(bounds, expected)
        assert bounds[-1] == 0.0
    with pytest.raises(UnsupportedOperation, match="MatchingStructure.*entropic"):
        structure.feature_bounds(batch, "entropic")
    with pytest.raises(ValueError, match="geometry"):
        structure.feature_bounds(batch, "spherical")


def test_score_outputs_is_pooled_edge_f1():
    structure = MatchingStructure()
    edges = np.array([[0, 0], [0, 1], [1, 1]])
    batch = structure.make_batch([(np.ones((3, 1)), edges), (np.ones((3, 1)), edges)])
    truth = np.array([1, 0, 1, 0, 1, 0])
    predicted = np.array([1, 0, 0, 0, 1, 0])
    # TP = 2, predicted 2, true 3: F1 = 4 / 5 (not the accuracy 5 / 6)
    assert structure.output_space().score(batch, predicted, truth) == pytest.approx(0.8)
    # weights repeat per edge: graph 0 counts 3 times, TP = 3 + 1, 3 + 1 predicted, 6 + 1 true
    assert structure.output_space().score(batch, predicted, truth,
                                          sample_weight=np.array([3.0, 1.0])
                                          ) == pytest.approx(8.0 / 11.0)
    empty = np.zeros(6, dtype=np.int64)
    assert structure.output_space().score(batch, empty, empty) == 1.0
    assert structure.output_space().score(batch, empty, truth) == 0.0
    assert structure.output_space().score(batch, truth, truth) == 1.0


def test_loss_offsets():
    structure = MatchingStructure(false_negative_cost=2.5)
    edges = np.array([[0, 0], [1, 1]])
    batch = structure.make_batch([(np.ones((2, 1)), edges)] * 2)
    np.testing.assert_allclose(structure.loss_offsets(batch, [1, 1, 0, 1]), [5.0, 2.5])


# ------------------------------------------------------- per-example kernels


@pytest.mark.parametrize("sparse", [False, True])
def test_kernel_feature_maps_match_batch_methods(sparse):
    rng = np.random.RandomState(3)
    structure = MatchingStructure()
    graphs = random_batch(rng, n_graphs=6, sparse=sparse, d=5)
    graphs.append((np.zeros((0, 5)), np.zeros((0, 2), dtype=int)))
    batch = structure.make_batch(graphs)
    data = structure.kernel_data(batch)
    assert isinstance(data, tuple)
    assert all(isinstance(x, (np.ndarray, int, float)) for x in data)
    n_parts = int(batch.part_offsets[-1])
    w, scale = rng.randn(5), rng.rand(5) + 0.5
    # unbound BaseStructure methods drive the generic loops over the kernel operations
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
    Y = structure.argmax(batch, rng.randn(n_parts))
    np.testing.assert_array_equal(BaseStructure.encode(structure, batch, Y),
                                  structure.encode(batch, Y))
    # the default add_features_norm goes through the two maps
    add_features_norm = structure.kernel_ops.functions["add_features_norm"]
    lo, hi = batch.part_offsets[0], batch.part_offsets[1]
    dmu = rng.randn(hi - lo)
    z = np.zeros(n_parts)
    z[lo:hi] = dmu
    change = scale * structure.expected_features(batch, z)
    start = rng.randn(5)
    w = start.copy()
    value = add_features_norm(data, 0, dmu, scale, w, np.zeros(5), np.zeros(2 * (hi - lo)))
    assert value == pytest.approx(change @ change)
    np.testing.assert_allclose(w, start + change, atol=1e-12)


@pytest.mark.parametrize("seed", range(40))
def test_kernel_argmax_matches_brute_force_and_scipy(seed):
    rng = np.random.RandomState(seed)
    n_src, n_tgt = rng.randint(1, 5, size=2)
    features, edges = random_graph(rng, n_src, n_tgt, rng.uniform(0.3, 1.0))
    if len(edges) == 0:
        return
    scores = rng.randn(len(edges)) + rng.choice([-0.5, 0.0, 0.5])  # some negative scores
    y = np.full(len(edges), -1, dtype=np.int64)
    best = max_weight_matching(scores, edges[:, 0].copy(), edges[:, 1].copy(), n_src, n_tgt, y)
    assert set(np.unique(y)) <= {0, 1}
    chosen = edges[y == 1]
    assert len(set(chosen[:, 0])) == len(chosen) and len(set(chosen[:, 1])) == len(chosen)
    assert np.all(scores[y == 1] > 0)
    assert best == pytest.approx(scores @ y)
    assert best == pytest.approx(brute_force_matching(scores, edges))
    # scipy on the full weight matrix, non-edges and negative edges weighing 0
    weight = np.zeros((n_src, n_tgt))
    weight[edges[:, 0], edges[:, 1]] = np.maximum(scores, 0.0)
    rows, cols = linear_sum_assignment(weight, maximize=True)
    assert best == pytest.approx(weight[rows, cols].sum())
    # the batch argmax (scipy on positive edges) gives the same (generically unique) matching
    structure = MatchingStructure()
    batch = structure.make_batch([(features, edges, (n_src, n_tgt))])
    np.testing.assert_array_equal(y, structure.argmax(batch, scores))


@pytest.mark.parametrize("seed", range(6))
def test_kernel_argmax_on_large_and_tied_graphs(seed):
    rng = np.random.RandomState(50 + seed)
    n_src, n_tgt = rng.randint(10, 40, size=2)
    features, edges = random_graph(rng, n_src, n_tgt, rng.uniform(0.1, 1.0))
    scores = rng.randn(len(edges))
    if seed % 2:
        scores = np.round(scores * 2) / 2  # many ties and exact zeros
    weight = np.zeros((n_src, n_tgt))
    weight[edges[:, 0], edges[:, 1]] = np.maximum(scores, 0.0)
    rows, cols = linear_sum_assignment(weight, maximize=True)
    y = np.zeros(len(edges), dtype=np.int64)
    best = max_weight_matching(scores, edges[:, 0].copy(), edges[:, 1].copy(), n_src, n_tgt, y)
    assert best == pytest.approx(weight[rows, cols].sum())
    assert best == pytest.approx(scores @ y)
    assert np.all(scores[y == 1] > 0)
    degree = np.r_[np.bincount(edges[:, 0], y, n_src), np.bincount(edges[:, 1], y, n_tgt)]
    assert degree.max(initial=0) <= 1


def test_kernel_argmax_and_project_through_generic_loops():
    rng = np.random.RandomState(7)
    structure = MatchingStructure()
    batch = structure.make_batch(random_batch(rng, n_graphs=8))
    n_parts = int(batch.part_offsets[-1])
    scores = rng.randn(n_parts)
    Y = BaseStructure.argmax(structure, batch, scores)
    np.testing.assert_array_equal(Y, structure.argmax(batch, scores))
    truth = structure.argmax(batch, rng.randn(n_parts))
    np.testing.assert_array_equal(
        BaseStructure.argmax(structure, batch, scores + structure.part_losses(batch, truth)),
        structure.loss_augmented_argmax(batch, scores, truth))
    for v in (2.0 * rng.randn(n_parts), 100.0 * rng.randn(n_parts),
              structure.encode(batch, truth)):
        z = BaseStructure.project(structure, batch, v)
        np.testing.assert_allclose(z, structure.project(batch, v),
                                   atol=1e-9 * max(1.0, np.abs(v).max()))
    # the per-example kernel projects one example cold, into a slice
    project = structure.kernel_ops.functions["project"]
    data = structure.kernel_data(batch)
    lo, hi = batch.part_offsets[2], batch.part_offsets[3]
    out = np.full(hi - lo, np.nan)
    project(data, 2, v[lo:hi].copy(), out)
    np.testing.assert_allclose(out, structure.project(structure.take(batch, [2]), v[lo:hi]),
                               atol=1e-12)
