"""TreeStructure: exact inference on tree-shaped label graphs (forests, typed edges)."""

import itertools
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import logsumexp
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

from sklearn_struct import L1M3N, EGCRF, EGStructuredSVM, StructuredPerceptron
from sklearn_struct.solvers import _eg_kernels
from sklearn_struct.structures import ChainStructure, TreeBatch, TreeStructure
from sklearn_struct.utils import check_structure


# ------------------------------------------------------------- references
def random_parents(rng, n_nodes, p_root=0.2):
    """A random forest over ``n_nodes`` nodes, numbered in a random order."""
    order = rng.permutation(n_nodes)
    parents = np.full(n_nodes, -1)
    for j in range(1, n_nodes):
        if rng.rand() >= p_root:
            parents[order[j]] = order[rng.randint(j)]
    return parents


def brute_force(node, transition, parents, edge_types):
    """Every labelling of one forest scored from the model's definition, not from ``encode``.

    Returns the labellings, their scores, log Z, node marginals ``(N, K)``, per-edge
    marginals ``(N, K, K)`` and tied transition marginals ``(n_edge_types, K, K)``.
    """
    N, K = node.shape
    child = np.flatnonzero(parents >= 0)
    Ys = np.array(list(itertools.product(range(K), repeat=N)))
    scores = node[np.arange(N), Ys].sum(axis=1) + transition[
        edge_types[child], Ys[:, parents[child]], Ys[:, child]].sum(axis=1)
    log_z = logsumexp(scores)
    p = np.exp(scores - log_z)
    node_mu = np.zeros((N, K))
    edge_mu = np.zeros((N, K, K))
    transition_mu = np.zeros_like(transition)
    for y, prob in zip(Ys, p):
        node_mu[np.arange(N), y] += prob
        edge_mu[child, y[parents[child]], y[child]] += prob
        np.add.at(transition_mu, (edge_types[child], y[parents[child]], y[child]), prob)
    return Ys, scores, log_z, node_mu, edge_mu, transition_mu


LABELS = np.array(["a", "b", "c"])


def forest_instances(n_edge_types, n_states=3, sizes=(1, 3, 4), sparse=False):
    """``make_instances`` for check_structure: small forests with string labels."""

    def make_instances(rng):
        X, y = [], []
        for n_nodes in sizes:
            features = rng.randn(n_nodes, 2)
            if sparse:
                features[rng.rand(n_nodes, 2) < 0.5] = 0.0
                features = sp.csr_matrix(features)
            parents = random_parents(rng, n_nodes)
            if n_edge_types == 1 and rng.rand() < 0.5:
                X.append((features, parents))
            else:
                X.append((features, parents, rng.randint(n_edge_types, size=n_nodes)))
            y.append(LABELS[rng.randint(n_states, size=n_nodes)])
        y[-1][:n_states] = LABELS[:n_states]  # every class occurs
        return X, y

    return make_instances


# ------------------------------------------------------ conformance (brute force)
@pytest.mark.parametrize("n_edge_types, n_states, sparse", [
    (1, 2, False), (1, 3, False), (2, 2, False), (3, 3, True)])
def test_check_structure_on_small_forests(n_edge_types, n_states, sparse):
    report = check_structure(TreeStructure(n_edge_types=n_edge_types),
                             forest_instances(n_edge_types, n_states, sparse=sparse),
                             n_instances=2)
    skipped = {name: reason for name, reason in report.items() if reason != "passed"}
    assert skipped == {"check_project": "project unsupported"}


def test_check_structure_with_loss_weights():
    weights = np.array([1.0, 2.5, 0.5])

    def loss(truth, y):
        return float(weights[truth][truth != y].sum())

    report = check_structure(TreeStructure(loss_weights=weights), forest_instances(1),
                             loss=loss, n_instances=2)
    assert report["check_part_losses"] == report["check_argmax"] == "passed"


@pytest.mark.parametrize("parents", [
    [-1, 0, 1, 2, 3],          # a chain
    [-1, 0, 0, 0, 0],          # a star
    [2, 2, -1, 1, 1],          # children listed before their parents
    [-1, -1, 1, -1, 3],        # a forest of three trees
    [3, 4, 4, -1, 3],          # root in the middle, two levels
])
@pytest.mark.parametrize("scale", [1.0, 30.0])
def test_inference_against_brute_force(parents, scale):
    rng = np.random.RandomState(len(parents) + int(scale))
    parents = np.array(parents)
    N, K, n_types, d = len(parents), 3, 2, 3
    edge_types = rng.randint(n_types, size=N)
    structure = TreeStructure(n_edge_types=n_types)
    batch = structure.make_batch([(rng.randn(N, d), parents, edge_types)], n_states=K)
    scores = scale * rng.randn(batch.part_offsets[-1])
    node, transition = scores[:N * K].reshape(N, K), scores[N * K:].reshape(n_types, K, K)
    Ys, values, log_z, node_mu, edge_mu, transition_mu = brute_force(
        node, transition, parents, edge_types)

    y_hat = structure.argmax(batch, scores)
    assert np.isclose(structure.encode(batch, y_hat) @ scores, values.max())
    np.testing.assert_array_equal(y_hat, Ys[values.argmax()])
    mu, log_partition = structure.marginals(batch, scores)
    np.testing.assert_allclose(log_partition, [log_z], rtol=1e-12)
    np.testing.assert_allclose(structure.log_partition(batch, scores), [log_z], rtol=1e-12)
    np.testing.assert_allclose(mu[:N * K].reshape(N, K), node_mu, atol=1e-12)
    np.testing.assert_allclose(mu[N * K:].reshape(n_types, K, K), transition_mu, atol=1e-12)
    np.testing.assert_allclose(structure.edge_marginals(batch, scores)[0], edge_mu, atol=1e-12)

    truth = rng.randint(K, size=N)
    augmented = values + (Ys != truth).sum(axis=1)
    y_aug = structure.loss_augmented_argmax(batch, scores, truth)
    np.testing.assert_array_equal(y_aug, Ys[augmented.argmax()])


# ----------------------------------------------------------- chains as trees
def chains(seed, n=8, n_features=4, max_len=6, n_states=3):
    rng = np.random.RandomState(seed)
    X = [rng.randn(rng.randint(1, max_len + 1), n_features) for _ in range(n)]
    y = [rng.randint(n_states, size=len(x)) for x in X]
    y[0][0], y[-1][-1] = 0, n_states - 1  # every label occurs
    y[1 % n][0] = 1
    return X, y


def as_trees(X):
    return [(x, np.arange(len(x)) - 1) for x in X]


def test_chain_parents_give_the_chain_without_start_end():
    X, _ = chains(0)
    chain, tree = ChainStructure(start_end=False), TreeStructure()
    cb, tb = chain.make_batch(X, n_states=3), tree.make_batch(as_trees(X), n_states=3)
    np.testing.assert_array_equal(tb.part_offsets, cb.part_offsets)
    assert tb.n_weights == cb.n_weights
    rng = np.random.RandomState(1)
    for scale in (1.0, 50.0):
        w = scale * rng.randn(cb.n_weights)
        scores = chain.part_scores(cb, w)
        np.testing.assert_allclose(tree.part_scores(tb, w), scores, rtol=1e-13, atol=1e-13)
        mu_chain, log_z_chain = chain.marginals(cb, scores)
        mu_tree, log_z_tree = tree.marginals(tb, scores)
        np.testing.assert_allclose(mu_tree, mu_chain, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(log_z_tree, log_z_chain, rtol=1e-12)
        np.testing.assert_allclose(tree.log_partition(tb, scores), log_z_chain, rtol=1e-12)
        Y = chain.argmax(cb, scores)
        np.testing.assert_array_equal(tree.argmax(tb, scores), Y)
        np.testing.assert_array_equal(tree.encode(tb, Y), chain.encode(cb, Y))
        np.testing.assert_array_equal(tree.part_losses(tb, Y), chain.part_losses(cb, Y))
        z = rng.rand(tb.part_offsets[-1])
        np.testing.assert_allclose(tree.expected_features(tb, z), chain.expected_features(cb, z),
                                   rtol=1e-12)
        for edges_tree, edges_chain in zip(tree.edge_marginals(tb, scores),
                                           chain.edge_marginals(cb, scores)):
            np.testing.assert_allclose(edges_tree[1:], edges_chain, rtol=1e-9, atol=1e-12)
            assert not edges_tree[0].any()  # the root has no edge


def test_node_numbering_does_not_matter():
    """A chain whose nodes are listed in a random order: the same model, permuted."""
    rng = np.random.RandomState(2)
    T, K, d = 7, 3, 2
    x = rng.randn(T, d)
    permutation = rng.permutation(T)  # node j of the tree is token permutation[j]
    position = np.argsort(permutation)
    parents = np.where(permutation > 0, position[np.maximum(permutation - 1, 0)], -1)
    structure = TreeStructure()
    chain = structure.make_batch([(x, np.arange(T) - 1)], n_states=K)
    shuffled = structure.make_batch([(x[permutation], parents)], n_states=K)
    w = rng.randn(chain.n_weights)
    node_scores = structure.output_space().unit_values(chain, structure.part_scores(chain, w))[0]
    np.testing.assert_allclose(
        structure.output_space().unit_values(shuffled, structure.part_scores(shuffled, w))[0],
        node_scores[permutation])
    scores, scores_shuffled = (structure.part_scores(b, w) for b in (chain, shuffled))
    np.testing.assert_array_equal(structure.argmax(shuffled, scores_shuffled),
                                  structure.argmax(chain, scores)[permutation])
    (mu, log_z), (mu_s, log_z_s) = (structure.marginals(b, s) for b, s in
                                    ((chain, scores), (shuffled, scores_shuffled)))
    np.testing.assert_allclose(log_z_s, log_z, rtol=1e-12)
    np.testing.assert_allclose(mu_s[:T * K].reshape(T, K), mu[:T * K].reshape(T, K)[permutation],
                               atol=1e-12)
    np.testing.assert_allclose(mu_s[T * K:], mu[T * K:], atol=1e-12)


def test_egcrf_on_chains_matches_the_chain_structure():
    X, y = chains(3, n=12)
    fits = [EGCRF(C=2.0, structure=structure, tol=1e-10, max_iter=2000, random_state=0).fit(
        data, y) for structure, data in ((ChainStructure(start_end=False), X),
                                         (TreeStructure(), as_trees(X)))]
    chain, tree = fits
    assert tree.transition_.shape == (1, 3, 3)
    np.testing.assert_allclose(tree.coef_, chain.coef_, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(tree.transition_[0], chain.transition_, rtol=1e-6, atol=1e-8)
    assert tree.primal_objective_ == pytest.approx(chain.primal_objective_, rel=1e-9)


# ------------------------------------------------------ learning a tree task
def planted_trees(n_samples, seed, noise=1.0):
    """Forests whose labels follow the parent's through a permutation per edge type.

    A child's label is ``PERMUTATIONS[type][parent label]`` with probability 0.9;
    node features are the one-hot label plus Gaussian noise, so a node's own
    features are a weak guide and the transitions carry most of the information.
    """
    rng = np.random.RandomState(seed)
    X, y = [], []
    for _ in range(n_samples):
        n_nodes = rng.randint(4, 13)
        parents = random_parents(rng, n_nodes, p_root=0.0)
        edge_types = rng.randint(2, size=n_nodes)
        labels = np.full(n_nodes, -1)
        while (labels < 0).any():  # parents first
            for n in np.flatnonzero(labels < 0):
                p = parents[n]
                if p < 0:
                    labels[n] = rng.randint(3)
                elif labels[p] >= 0:
                    follow = rng.rand() < 0.9
                    labels[n] = PERMUTATIONS[edge_types[n]][labels[p]] if follow else \
                        rng.randint(3)
        features = np.eye(3)[labels] + noise * rng.randn(n_nodes, 3)
        X.append((features, parents, edge_types))
        y.append(np.array(["det", "noun", "verb"])[labels])
    return X, y


PERMUTATIONS = np.array([[1, 2, 0], [2, 0, 1]])


def _fit(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(X, y)


def test_egcrf_learns_a_tree_task():
    X, y = planted_trees(80, seed=0)
    X_test, y_test = planted_trees(80, seed=1)
    model = _fit(EGCRF(C=10.0, structure=TreeStructure(n_edge_types=2), tol=1e-3,
                       max_iter=300, random_state=0), X, y)
    # the online epoch ran inside numba, compiled for the tree's kernel operations
    assert len(TreeStructure.kernel_ops._specialized[_eg_kernels.online_epoch].signatures)
    # the transition of every parent label under each edge type is the planted one
    np.testing.assert_array_equal(model.transition_.argmax(axis=2), PERMUTATIONS)
    predictions = model.predict(X_test)
    assert all(p.dtype.kind == "U" and len(p) == len(t) for p, t in zip(predictions, y_test))
    score = model.score(X_test, y_test)
    # the nodes alone (a multiclass model of the same features) do much worse
    flat = EGCRF(C=10.0, structure="multiclass", random_state=0).fit(
        np.vstack([x[0] for x in X]), np.concatenate(y))
    flat_score = flat.score(np.vstack([x[0] for x in X_test]), np.concatenate(y_test))
    assert score >= 0.8 and score >= flat_score + 0.15, (score, flat_score)
    marginals = model.predict_marginals(X_test[:2])
    assert [m.shape for m in marginals] == [(len(x[0]), 3) for x in X_test[:2]]
    np.testing.assert_allclose(np.concatenate(marginals).sum(axis=1), 1.0)


def test_tree_crf_beats_per_node_logistic_regression():
    """A child's label follows its parent's; a node's own features barely tell its label.

    One edge type: the child of a node labelled ``a`` is labelled ``(a + 1) % 3``
    with probability 0.85.  Per-node ``LogisticRegression`` (given its best C *on
    the test set*, a generous reference) sees only the noisy node features; the
    tree CRF also scores the parent-child label pairs.
    """
    def sample(n_samples, seed):
        rng = np.random.RandomState(seed)
        X, y = [], []
        for _ in range(n_samples):
            n_nodes = rng.randint(5, 15)
            parents = np.array([-1] + [rng.randint(n) for n in range(1, n_nodes)])
            labels = np.empty(n_nodes, dtype=int)
            labels[0] = rng.randint(3)
            for n in range(1, n_nodes):  # parents come first
                follow = rng.rand() < 0.85
                labels[n] = (labels[parents[n]] + 1) % 3 if follow else rng.randint(3)
            X.append((np.eye(3)[labels] + 1.5 * rng.randn(n_nodes, 3), parents))
            y.append(labels)
        return X, y

    X, y = sample(60, seed=3)
    X_test, y_test = sample(100, seed=4)
    tree = _fit(EGCRF(C=1.0, structure=TreeStructure(), tol=1e-3, max_iter=200,
                      random_state=0), X, y)
    nodes, nodes_test = np.vstack([x[0] for x in X]), np.vstack([x[0] for x in X_test])
    lr_score = max(LogisticRegression(C=C).fit(nodes, np.concatenate(y)).score(
        nodes_test, np.concatenate(y_test)) for C in (0.01, 0.1, 1.0, 10.0))
    tree_score = tree.score(X_test, y_test)
    # the learned transitions put most weight on a -> (a + 1) % 3
    np.testing.assert_array_equal(tree.transition_[0].argmax(axis=1), [1, 2, 0])
    assert tree_score >= lr_score + 0.1, (tree_score, lr_score)


@pytest.mark.parametrize("make_model", [
    lambda: EGStructuredSVM(C=10.0, structure=TreeStructure(n_edge_types=2), tol=1e-2,
                            max_iter=100, random_state=0),
    lambda: StructuredPerceptron(structure=TreeStructure(n_edge_types=2), max_iter=10,
                                 random_state=0),
    lambda: L1M3N(structure=TreeStructure(n_edge_types=2), solver="subgradient", online=True,
                  C=30.0, max_iter=30, random_state=0),
], ids=["EGStructuredSVM", "StructuredPerceptron", "L1M3N-subgradient"])
def test_other_learners_learn_the_tree_task(make_model):
    X, y = planted_trees(80, seed=0)
    X_test, y_test = planted_trees(80, seed=1)
    model = _fit(make_model(), X, y)
    np.testing.assert_array_equal(model.transition_.argmax(axis=2), PERMUTATIONS)
    assert model.score(X_test, y_test) >= 0.8


def test_registered_by_name():
    X, y = planted_trees(10, seed=2)
    model = _fit(EGCRF(structure="tree", max_iter=5, random_state=0),
                 [x[:2] for x in X], y)
    assert repr(model.structure_) == "TreeStructure()"
    assert model.transition_.shape == (1, 3, 3)


# ----------------------------------------------------------------- bad input
GOOD = (np.ones((3, 2)), [-1, 0, 0])


@pytest.mark.parametrize("example, n_edge_types, message", [
    ((np.ones((3, 2)), [1, 2, 0]), 1,
     r"example 1: node 0 lies on a cycle of the parent array \(0 -> 1 -> 2 -> 0"),
    ((np.ones((3, 2)), [-1, 1, 1]), 1, r"example 1: node 1 lies on a cycle .*\(1 -> 1,"),
    ((np.ones((4, 2)), [-1, 2, 3, 1]), 1, r"example 1: node \d lies on a cycle"),
    ((np.ones((3, 2)), [-1, 0]), 1,
     r"example 1: parents must hold one integer per node \(3 nodes\), got shape \(2,\)"),
    ((np.ones((3, 2)), [-1, 0, 3]), 1, r"example 1: node 2 has parent 3, out of range"),
    ((np.ones((3, 2)), [-1, -2, 0]), 1, r"example 1: node 1 has parent -2, out of range"),
    ((np.ones((3, 2)), [-1, 0, 0], [0, 0, 2]), 2,
     r"example 1: node 2 has edge type 2, expected an integer in \[0, 2\)"),
    ((np.ones((3, 2)), [-1, 0, 0], [0, -1, 0]), 2, r"example 1: node 1 has edge type -1"),
    ((np.ones((3, 2)), [-1, 0, 0], [0, 0]), 2,
     r"example 1: edge_types must hold one integer per node \(3 nodes\)"),
    ((np.ones((3, 3)), [-1, 0, 0]), 1, r"example 1: 3 node features but example 0 has 2"),
    ((np.ones((0, 2)), []), 1, r"example 1 node_features: has no rows"),
    ((np.array([[1.0, np.nan]]), [-1]), 1, r"example 1 node_features: .*NaN"),
])
def test_bad_input_names_example_and_node(example, n_edge_types, message):
    structure = TreeStructure(n_edge_types=n_edge_types)
    with pytest.raises(ValueError, match=message):
        structure.make_batch([GOOD, example], n_states=2)


def test_bad_input_through_an_estimator():
    X = [GOOD, (np.ones((3, 2)), [2, 0, 1])]
    with pytest.raises(ValueError, match=r"example 1: node 0 lies on a cycle"):
        EGCRF(structure=TreeStructure(), max_iter=2).fit(X, [["a", "b", "a"]] * 2)


@pytest.mark.parametrize("X, error, message", [
    ([(np.ones((2, 2)), [-1.0, 0.5])], TypeError, r"example 0: parents must be integers"),
    ([(np.ones((2, 2)), ["root", 0])], TypeError, r"example 0: parents must be integers"),
    ([(np.ones((2, 2)), [-1, 0], [0, 0.5])], TypeError, r"edge_types must be integers"),
    ([(np.ones((2, 2)),)], TypeError, r"example 0: expected a tuple \(node_features, parents\)"),
    ((np.ones((3, 2)), np.array([-1, 0, 0])), TypeError, r"single tuple \(wrap it in a list\)"),
    ([], ValueError, r"X must be a non-empty list"),
])
def test_malformed_examples(X, error, message):
    with pytest.raises(error, match=message):
        TreeStructure().make_batch(X, n_states=2)


@pytest.mark.parametrize("n_edge_types, error", [(0, ValueError), (1.5, TypeError),
                                                 (True, TypeError)])
def test_bad_n_edge_types(n_edge_types, error):
    with pytest.raises(error, match="n_edge_types"):
        TreeStructure(n_edge_types=n_edge_types).make_batch([GOOD], n_states=2)


def test_integral_float_parents_and_batch_checks():
    structure = TreeStructure(n_edge_types=2)
    batch = structure.make_batch([(np.ones((3, 2)), np.array([-1.0, 0.0, 0.0]), [5, 1, 0])],
                                 n_states=2)
    assert isinstance(batch, TreeBatch)
    np.testing.assert_array_equal(batch.parents, [-1, 0, 0])
    np.testing.assert_array_equal(batch.edge_types, [-1, 1, 0])  # a root's type is ignored
    with pytest.raises(ValueError, match="built with n_edge_types=2"):
        TreeStructure().part_losses(batch, [0, 1, 0])
    chain_batch = ChainStructure().make_batch([np.ones((3, 2))], n_states=2)
    with pytest.raises(TypeError, match="expected a TreeBatch"):
        structure.marginals(chain_batch, np.zeros(chain_batch.part_offsets[-1]))


def test_named_weights_of_typed_edges_key_each_transition_by_its_edge_type():
    structure = TreeStructure(n_edge_types=2)
    space = structure.output_space()
    attributes = {"coef_": np.array([[0.0, 1.5], [0.0, 0.0]]),
                  "transition_": np.arange(8.0).reshape(2, 2, 2)}
    named = space.named_weights(attributes, np.array(["f0", "f1"]), np.array(["A", "B"]))
    assert named["state_features_"] == {("f1", "A"): 1.5}
    assert named["transition_features_"][(1, "B", "A")] == 6.0
    assert len(named["transition_features_"]) == 8
