import itertools

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_struct.structures import _flow_kernels as kernels
from sklearn_struct.structures.matching import MatchingStructure

from _qp_reference import matching_constraints, qp_project


def random_graph(rng, n_src, n_tgt, density, d=3):
    edges = np.argwhere(rng.rand(n_src, n_tgt) < density).astype(np.int64)
    return rng.randn(len(edges), d), edges


def brute_force_matching(scores, edges):
    best, best_set = 0.0, ()
    for r in range(1, len(edges) + 1):
        for subset in itertools.combinations(range(len(edges)), r):
            chosen = edges[list(subset)]
            if len(set(chosen[:, 0])) == r and len(set(chosen[:, 1])) == r:
                value = scores[list(subset)].sum()
                if value > best:
                    best, best_set = value, subset
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


def test_degree_price_is_exact():
    r = np.array([1.5, 0.7, 0.2, -1.0])
    p = kernels._degree_price(r, 4, np.empty(8), np.empty(8))
    assert abs(np.clip(r - p, 0, 1).sum() - 1.0) < 1e-14


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
