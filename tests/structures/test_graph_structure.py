"""GraphStructure: pairwise Markov networks on any graph, MAP by the LP relaxation,
marginals by tree-reweighted sum-product.

References: enumeration of every labelling, TreeStructure (exact sum-product on trees),
MinCutStructure (exact min-cut on binary submodular energies) and HiGHS on the same LP.
"""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog
from scipy.special import logsumexp

from sklearn_struct import (EGCRF, L1M3N, DualExtragradientMatcher, EGStructuredSVM,
                            StructuredPerceptron)
from sklearn_struct.structures import (GraphStructure, MinCutStructure, STRUCTURES,
                                       TreeStructure)
from sklearn_struct.utils import check_structure


def random_graph(rng, n, density):
    pairs = [(u, v) for u in range(n) for v in range(u + 1, n) if rng.rand() < density]
    return np.array(pairs, dtype=np.int64).reshape(-1, 2)


def random_tree(rng, n):
    return np.array([(rng.randint(v), v) for v in range(1, n)], dtype=np.int64).reshape(-1, 2)


def tree_pair(rng, n, K):
    """A random tree as a GraphStructure batch and a TreeStructure batch, with weights in
    their shared layout (W, then the (parent, child) pairs)."""
    edges = random_tree(rng, n)
    parents = np.full(n, -1)
    parents[edges[:, 1]] = edges[:, 0]
    features = rng.randn(n, 4)
    graph, tree = GraphStructure(), TreeStructure()
    graph_batch = graph.make_batch([(features, edges)], n_states=K)
    tree_batch = tree.make_batch([(features, parents)], n_states=K)
    assert tree_batch.n_weights == graph_batch.n_weights
    return graph, graph_batch, tree, tree_batch, 2 * rng.randn(graph_batch.n_weights)


def grid(side):
    index = np.arange(side * side).reshape(side, side)
    return np.r_[np.c_[index[:, :-1].ravel(), index[:, 1:].ravel()],
                 np.c_[index[:-1].ravel(), index[1:].ravel()]]


def labelling_scores(scores, n, K, edges):
    """Score of every labelling of one graph (rows in itertools.product order)."""
    labellings = np.array(list(itertools.product(range(K), repeat=n)))
    total = scores[np.arange(n) * K + labellings].sum(axis=1)
    for e, (u, v) in enumerate(edges):
        total += scores[n * K + (e * K + labellings[:, u]) * K + labellings[:, v]]
    return labellings, total


def exact_marginals(scores, n, K, edges):
    """log Z and the part marginals of one graph, by enumeration."""
    labellings, totals = labelling_scores(scores, n, K, edges)
    log_z = logsumexp(totals)
    p = np.exp(totals - log_z)
    mu = np.zeros_like(scores)
    for v in range(n):
        np.add.at(mu, v * K + labellings[:, v], p)
    for e, (u, v) in enumerate(edges):
        np.add.at(mu, n * K + (e * K + labellings[:, u]) * K + labellings[:, v], p)
    return log_z, mu


def highs_lp(scores, n, K, edges):
    """The local-polytope LP of one graph, solved by HiGHS."""
    m, KK = len(edges), K * K
    rows, columns, values, rhs = [], [], [], []

    def constraint(entries, value):
        for column, coefficient in entries:
            rows.append(len(rhs))
            columns.append(column)
            values.append(coefficient)
        rhs.append(value)

    for v in range(n):
        constraint([(v * K + k, 1.0) for k in range(K)], 1.0)
    for e, (u, v) in enumerate(edges):
        base = n * K + e * KK
        for a in range(K):
            constraint([(base + a * K + b, 1.0) for b in range(K)] + [(u * K + a, -1.0)], 0.0)
            constraint([(base + b * K + a, 1.0) for b in range(K)] + [(v * K + a, -1.0)], 0.0)
    A = sp.csr_matrix((values, (rows, columns)), shape=(len(rhs), n * K + m * KK))
    result = linprog(-scores, A_eq=A, b_eq=rhs, bounds=(0, None), method="highs")
    assert result.status == 0
    return -result.fun


def graph_instances(rng):
    """Forests (exact): a path, a star with an isolated node, and a single node."""
    K = 3
    X = [(rng.randn(4, 2), np.array([[0, 1], [1, 2], [2, 3]]), rng.rand(3, 2)),
         (rng.randn(4, 2), np.array([[0, 1], [0, 2]]), rng.rand(2, 2)),
         (rng.randn(1, 2), np.zeros((0, 2), dtype=int), np.zeros((0, 2)))]
    y = [rng.randint(K, size=len(x[0])) for x in X]
    return X, y


@pytest.mark.parametrize("options", [{}, {"symmetric": True}, {"associative": True}])
def test_conforms_on_forests(options):
    check_structure(GraphStructure(**options), graph_instances)


def test_symmetric_weights_tie_the_two_directions_of_an_edge():
    rng = np.random.RandomState(0)
    K, d_edge = 3, 2
    X = [(rng.randn(4, 2), np.array([[0, 1], [1, 2], [3, 2], [0, 3]]), rng.randn(4, d_edge))]
    symmetric, full = GraphStructure(symmetric=True), GraphStructure()
    batch, full_batch = symmetric.make_batch(X, n_states=K), full.make_batch(X, n_states=K)
    assert batch.n_weights == K * 2 + K * (K + 1) // 2 * d_edge
    w = rng.randn(batch.n_weights)
    packed = w[K * 2:].reshape(-1, d_edge)
    rows = {pair: row for row, pair in enumerate(
        (a, b) for a in range(K) for b in range(a, K))}
    pairwise = np.array([[packed[rows[min(a, b), max(a, b)]] for b in range(K)]
                         for a in range(K)])
    # the scores of the full model whose P is the symmetric matrix of the packed rows
    np.testing.assert_allclose(symmetric.part_scores(batch, w),
                               full.part_scores(full_batch, np.r_[w[:K * 2], pairwise.ravel()]))
    reversed_X = [(X[0][0], X[0][1][:, ::-1].copy(), X[0][2])]
    reversed_batch = symmetric.make_batch(reversed_X, n_states=K)
    Y = np.array([0, 1, 2, 2])  # every label, so that the fit below sees K of them
    assert (symmetric.part_scores(batch, w) @ symmetric.encode(batch, Y) == pytest.approx(
        symmetric.part_scores(reversed_batch, w) @ symmetric.encode(reversed_batch, Y)))
    model = EGStructuredSVM(structure=GraphStructure(symmetric=True), solver="working_set",
                            max_iter=5, random_state=0).fit(X, [Y])
    assert model.pairwise_.shape == (K * (K + 1) // 2, d_edge)
    assert np.shares_memory(model.pairwise_, model.weights_)


def test_registered():
    assert STRUCTURES["graph"] is GraphStructure


@pytest.mark.parametrize("seed", range(5))
def test_trees_equal_tree_structure(seed):
    graph, graph_batch, tree, tree_batch, w = tree_pair(np.random.RandomState(seed), 9, 3)
    Y, bound, certified = graph.relaxed_argmax(graph_batch, graph.part_scores(graph_batch, w))
    expected = tree.argmax(tree_batch, tree.part_scores(tree_batch, w))
    np.testing.assert_array_equal(Y, expected)
    assert certified.all()
    np.testing.assert_allclose(bound, graph.part_scores(graph_batch, w) @ graph.encode(
        graph_batch, Y), rtol=1e-9)


@pytest.mark.parametrize("seed", range(5))
def test_binary_submodular_equals_min_cut(seed):
    rng = np.random.RandomState(seed)
    n = 12
    edges = random_graph(rng, n, 0.4)
    node_features, edge_features = rng.randn(n, 3), rng.rand(len(edges), 2)
    w_node, w_edge = rng.randn(3), rng.rand(2)
    cut = MinCutStructure()
    cut_batch = cut.make_batch([(node_features, edges, edge_features)])
    expected = cut.argmax(cut_batch, cut.part_scores(cut_batch, np.r_[w_node, w_edge]))
    graph = GraphStructure()
    batch = graph.make_batch([(node_features, edges, edge_features)], n_states=2)
    pairwise = np.zeros((2, 2, 2))
    pairwise[0, 1] = pairwise[1, 0] = -w_edge  # a cut edge costs w_edge . x_uv
    w = np.r_[np.zeros(3), w_node, pairwise.ravel()]
    scores = graph.part_scores(batch, w)
    Y, bound, certified = graph.relaxed_argmax(batch, scores)
    assert certified.all()
    encode = graph.encode
    assert scores @ encode(batch, Y) == pytest.approx(scores @ encode(batch, expected),
                                                      rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("seed", range(8))
def test_random_graphs_against_highs_and_enumeration(seed):
    rng = np.random.RandomState(seed)
    K, n = 3, 6
    edges = random_graph(rng, n, 0.6)
    graph = GraphStructure()
    batch = graph.make_batch([(rng.randn(n, 2), edges)], n_states=K)
    scores = rng.randn(batch.part_offsets[-1])  # any scores: frustrated cycles included
    reference = highs_lp(scores, n, K, edges)
    z, value = graph.lp_solution(batch, scores)
    assert value[0] == pytest.approx(reference, abs=1e-6)
    Y, bound, certified = graph.relaxed_argmax(batch, scores)
    assert bound[0] >= reference - 1e-9  # a dual value bounds the LP from above
    labellings, totals = labelling_scores(scores, n, K, edges)
    own = scores @ graph.encode(batch, Y)
    assert own <= totals.max() + 1e-12
    if certified[0]:
        assert own == pytest.approx(totals.max(), abs=1e-9)
        assert bound[0] == pytest.approx(reference, abs=1e-9)
    if np.allclose(z, np.round(z), atol=1e-6):  # an integral optimum is the MAP labelling
        assert reference == pytest.approx(totals.max(), abs=1e-6)


def test_a_frustrated_cycle_has_a_fractional_optimum():
    # three nodes that each want a label unlike their neighbours': no labelling of a
    # triangle gives all three edges two different binary labels
    edges = np.array([[0, 1], [1, 2], [0, 2]])
    graph = GraphStructure()
    batch = graph.make_batch([(np.zeros((3, 1)), edges)], n_states=2)
    scores = np.zeros(batch.part_offsets[-1])
    for e in range(3):
        scores[6 + 4 * e + 1] = scores[6 + 4 * e + 2] = 1.0  # (0, 1) and (1, 0)
    z, value = graph.lp_solution(batch, scores)
    assert value[0] == pytest.approx(3.0, abs=1e-6)  # the LP: every edge half (0,1), half (1,0)
    np.testing.assert_allclose(z[:6], 0.5, atol=1e-6)
    Y, bound, certified = graph.relaxed_argmax(batch, scores)
    assert not certified[0] and bound[0] >= 3.0 - 1e-9
    assert scores @ graph.encode(batch, Y) == pytest.approx(2.0)  # the best labelling


def forest(rng, n, n_trees):
    """A random forest on ``n`` nodes: a random tree less ``n_trees - 1`` of its edges."""
    edges = random_tree(rng, n)
    return edges[np.sort(rng.permutation(n - 1)[n_trees - 1:])]


@pytest.mark.parametrize("seed", range(6))
def test_marginals_are_exact_on_forests(seed):
    rng = np.random.RandomState(seed)
    K, n = 2 + seed % 2, 8
    graph = GraphStructure()
    edges = forest(rng, n, 1 + seed % 3)
    batch = graph.make_batch([(rng.randn(n, 2), edges)], n_states=K)
    np.testing.assert_array_equal(batch.edge_appearance, 1.0)  # every edge in every forest
    for scale in (0.5, 3.0, 20.0):
        scores = scale * rng.randn(batch.part_offsets[-1])
        mu, log_z = graph.marginals(batch, scores)
        expected_log_z, expected_mu = exact_marginals(scores, n, K, edges)
        assert log_z[0] == pytest.approx(expected_log_z, rel=1e-12, abs=1e-9)
        np.testing.assert_allclose(mu, expected_mu, rtol=0, atol=1e-9)


@pytest.mark.parametrize("seed", range(3))
def test_marginals_on_trees_equal_tree_structure(seed):
    # the same weights: log Z and the expected features (W, then the (parent, child)
    # pairs summed over the edges) of the two structures agree
    graph, graph_batch, tree, tree_batch, w = tree_pair(np.random.RandomState(seed), 30, 3)
    graph_mu, graph_log_z = graph.marginals(graph_batch, graph.part_scores(graph_batch, w))
    tree_mu, tree_log_z = tree.marginals(tree_batch, tree.part_scores(tree_batch, w))
    np.testing.assert_allclose(graph_log_z, tree_log_z, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(graph.expected_features(graph_batch, graph_mu),
                               tree.expected_features(tree_batch, tree_mu), rtol=0, atol=1e-9)


def test_edge_appearance_is_in_the_spanning_tree_polytope():
    rng = np.random.RandomState(0)
    # a triangle with a pendant edge, a 3x3 grid, a dense graph, two cycles apart
    graphs = [np.array([[0, 1], [1, 2], [0, 2], [2, 3]]), grid(3), random_graph(rng, 7, 0.7),
              np.array([[0, 1], [1, 2], [0, 2], [3, 4], [4, 5], [5, 6], [3, 6]])]
    structure = GraphStructure()
    batch = structure.make_batch([(np.ones((edges.max() + 1, 1)), edges) for edges in graphs],
                                 n_states=2)
    for i, edges in enumerate(graphs):
        rho = batch.edge_appearance[batch.edge_offsets[i]:batch.edge_offsets[i + 1]]
        n = edges.max() + 1
        components = sp.csgraph.connected_components(
            sp.coo_matrix((np.ones(len(edges)), tuple(edges.T)), shape=(n, n)))[0]
        assert np.all(rho > 0) and np.all(rho <= 1)
        # an average of spanning forests: each has n - (number of components) edges
        assert rho.sum() == pytest.approx(n - components, rel=1e-12)
    assert batch.edge_appearance[3] == 1.0  # the pendant edge is in every forest
    # a graph's forests are its own: the same alone as in a batch, kept by take
    alone = structure.make_batch([(np.ones((9, 1)), graphs[1])], n_states=2)
    np.testing.assert_array_equal(alone.edge_appearance, structure.take(
        batch, [1]).edge_appearance)
    np.testing.assert_array_equal(alone.edge_appearance,
                                  batch.edge_appearance[batch.edge_offsets[1]:
                                                        batch.edge_offsets[2]])


@pytest.mark.parametrize("K", [2, 3])
@pytest.mark.parametrize("shape", ["triangle", "grid"])
def test_trw_bounds_log_z_and_its_gradient_is_the_marginals(shape, K):
    rng = np.random.RandomState(K)
    edges = np.array([[0, 1], [1, 2], [0, 2]]) if shape == "triangle" else grid(3)
    n = edges.max() + 1
    graph = GraphStructure(max_iter=100_000, tol=1e-13)
    batch = graph.make_batch([(np.ones((n, 1)), edges)], n_states=K)
    twice = graph.make_batch([(np.ones((n, 1)), edges)] * 2, n_states=K)
    step = 1e-5
    for scale in (0.3, 1.0, 3.0):
        scores = scale * rng.randn(batch.part_offsets[-1])
        mu, log_z = graph.marginals(batch, scores)
        assert log_z[0] >= exact_marginals(scores, n, K, edges)[0]
        # pseudo-marginals: on every simplex, and the edges' agree with their nodes'
        assert mu.min() >= 0
        nodes = mu[:n * K].reshape(n, K)
        pairs = mu[n * K:].reshape(len(edges), K, K)
        np.testing.assert_allclose(nodes.sum(axis=1), 1.0, atol=1e-12)
        np.testing.assert_allclose(pairs.sum(axis=2), nodes[edges[:, 0]], atol=1e-10)
        np.testing.assert_allclose(pairs.sum(axis=1), nodes[edges[:, 1]], atol=1e-10)
        gradient = np.empty_like(scores)
        for r in range(len(scores)):  # both sides of a central difference in one batch
            moved = np.tile(scores, (2, 1))
            moved[:, r] += (step, -step)
            plus, minus = graph.log_partition(twice, moved.ravel())
            gradient[r] = (plus - minus) / (2 * step)
        np.testing.assert_allclose(gradient, mu, rtol=0, atol=1e-5)


def test_no_euclidean_projection_and_entropic_bounds():
    structure = GraphStructure()
    assert structure.supports("marginals") and not structure.supports("project")
    rng = np.random.RandomState(0)
    batch = structure.make_batch([(rng.randn(9, 2), grid(3))], n_states=2)
    # on a grid, edge columns count each edge 1 / rho_e times
    expected = max(np.abs(batch.node_X).sum(axis=0).max(),
                   (1 / batch.edge_appearance).sum())
    assert structure.feature_bounds(batch, "entropic")[0] == pytest.approx(expected)
    with pytest.raises(ValueError, match="no Euclidean projection"):
        DualExtragradientMatcher(structure=structure, geometry="euclidean").fit(
            [(rng.randn(9, 2), grid(3))], [np.zeros(9, dtype=int)])


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("estimator", [
    EGStructuredSVM(solver="working_set", C=10.0, max_iter=50, random_state=0),
    StructuredPerceptron(max_iter=20, random_state=0),
    L1M3N(C=10.0, max_iter=30, random_state=0),
    L1M3N(C=10.0, solver="subgradient", max_iter=300, random_state=0),
    EGCRF(C=1.0, max_iter=50, random_state=0)])
def test_learners_denoise_a_grid(estimator):
    # labels in blocks, node features their one-hot codes plus noise: the edges help
    rng = np.random.RandomState(0)
    K, side = 3, 8
    edges = grid(side)

    def sample():
        labels = np.repeat(np.repeat(rng.randint(K, size=(2, 2)), 4, axis=0), 4, axis=1).ravel()
        return (np.eye(K)[labels] + 1.2 * rng.randn(side * side, K), edges), labels

    train = [sample() for _ in range(20)]
    test = [sample() for _ in range(10)]
    model = estimator.set_params(structure=GraphStructure()).fit(*zip(*train))
    X_test, y_test = zip(*test)
    accuracy = np.mean(np.concatenate(model.predict(list(X_test))) == np.concatenate(y_test))
    nodes_only = np.mean([np.argmax(x[0], axis=1) == y for x, y in test])
    assert accuracy > nodes_only + 0.05


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_dual_extragradient_takes_entropic_steps_on_a_grid():
    # its KL steps on the local polytope are tree-reweighted marginals.  On the grids above
    # it needs far more passes than a test can run (as it does on chains of as many
    # tokens), so a smaller problem: it runs, stays in its L1 ball and closes its gap
    rng = np.random.RandomState(0)
    K, side = 3, 4
    X, y = [], []
    for _ in range(10):
        labels = np.repeat(np.repeat(rng.randint(K, size=(2, 2)), 2, axis=0), 2, axis=1).ravel()
        X.append((np.eye(K)[labels] + 1.2 * rng.randn(side * side, K), grid(side)))
        y.append(labels)
    model = DualExtragradientMatcher(structure=GraphStructure(), radius=5.0, max_iter=1000,
                                     tol=0.0).fit(X, y)
    assert model.geometry_ == "entropic"
    assert np.abs(model.weights_).sum() <= 5.0 + 1e-9
    assert model.history_["gap"][-1] < model.history_["gap"][0]


@pytest.mark.parametrize("make, message", [
    (lambda: [(np.ones((3, 1)), np.array([[0, 3]]))], "example 0: edge endpoint 3 is out of "
                                                      "range for 3 nodes"),
    (lambda: [(np.ones((3, 1)), np.array([[0, 1]])), (np.ones((3, 1)), np.array([[1, 1]]))],
     "example 1: edge 0 is a self-loop"),
    (lambda: [(np.ones((3, 1)), np.array([[0, 1], [2, 1], [1, 0]]))],
     "example 0: the edge between nodes 0 and 1 is given more than once"),
    (lambda: [(np.ones((3, 1)), np.array([[0, 1]]), np.ones((1, 2))),
              (np.ones((2, 1)), np.array([[0, 1]]), np.ones((1, 3)))],
     "example 1: 3 edge features but example 0 has 2"),
    (lambda: [(np.ones((3, 1)), np.array([[0, 1]]), np.ones((2, 2)))],
     "example 0: 1 edges but 2 rows of edge features"),
])
def test_bad_graphs_are_refused_naming_the_example(make, message):
    with pytest.raises(ValueError, match=message):
        GraphStructure().make_batch(make(), n_states=2)


def test_mixed_forms_are_refused():
    edge = np.array([[0, 1]])
    X = [(np.ones((2, 1)), edge), (np.ones((2, 1)), edge, np.ones((1, 1)))]
    with pytest.raises(TypeError, match="example 1: a tuple"):
        GraphStructure().make_batch(X, n_states=2)


def test_graphs_without_edges_are_multiclass_and_disconnected_graphs_are_valid():
    rng = np.random.RandomState(3)
    K = 4
    graph = GraphStructure()
    lonely = (rng.randn(5, 2), np.zeros((0, 2), dtype=int))
    split = (rng.randn(6, 2), np.array([[0, 1], [1, 2], [3, 4]]))  # two parts and node 5
    batch = graph.make_batch([lonely, split], n_states=K)
    scores = rng.randn(batch.part_offsets[-1])
    Y, bound, certified = graph.relaxed_argmax(batch, scores)
    assert certified.all()
    np.testing.assert_array_equal(Y[:5], scores[:5 * K].reshape(5, K).argmax(axis=1))
    parts = slice(batch.part_offsets[1], batch.part_offsets[2])
    _, totals = labelling_scores(scores[parts], 6, K, split[1])
    assert scores[parts] @ graph.encode(batch, Y)[parts] == pytest.approx(totals.max())
