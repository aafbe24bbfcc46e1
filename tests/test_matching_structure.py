import itertools

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn.exceptions import ConvergenceWarning

from sklearn_struct.structures import matching
from sklearn_struct.structures.matching import MatchingStructure

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
    z = structure.project(batch, v)
    assert structure.projection_residual_ <= 1e-9
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
    assert structure.projection_residual_ <= 1e-9
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
    assert structure.projection_residual_ <= 1e-12 * max(1.0, np.abs(v).max())
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
