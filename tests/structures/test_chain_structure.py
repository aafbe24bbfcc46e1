import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import logsumexp

from sklearn_struct.structures import ChainStructure
from sklearn_struct.structures.chain._kernels import (
    chain_forward_backward,
    chain_forward_backward_edges,
    chain_log_partition,
    chain_viterbi,
    csr_add_node_features,
    csr_node_scores,
    dense_add_node_features,
    dense_node_scores,
)


# ------------------------------------------------------------- references
def _blocks(scores, lengths, n_states, start_end):
    """Per-sequence (node, transition, start, end) read from the documented flat layout."""
    K, p, blocks = n_states, 0, []
    for T in lengths:
        node = scores[p:p + T * K].reshape(T, K)
        p += T * K
        transition = scores[p:p + K * K].reshape(K, K)
        p += K * K
        if start_end:
            start, end = scores[p:p + K], scores[p + K:p + 2 * K]
            p += 2 * K
        else:
            start, end = np.zeros(K), np.zeros(K)
        blocks.append((node, transition, start, end))
    assert p == len(scores)
    return blocks


def _enumerate(node, transition, start, end):
    """Every labelling with its score, by brute force."""
    T, K = node.shape
    Ys = np.array(list(itertools.product(range(K), repeat=T)))
    scores = (
        start[Ys[:, 0]]
        + end[Ys[:, -1]]
        + node[np.arange(T)[None, :], Ys].sum(axis=1)
        + transition[Ys[:, :-1], Ys[:, 1:]].sum(axis=1)
    )
    return Ys, scores


def _brute_force(node, transition, start, end):
    T, K = node.shape
    Ys, scores = _enumerate(node, transition, start, end)
    log_z = logsumexp(scores)
    p = np.exp(scores - log_z)
    node_marginals = np.zeros((T, K))
    edge_marginals = np.zeros((T - 1, K, K))
    for t in range(T):
        np.add.at(node_marginals[t], Ys[:, t], p)
    for t in range(T - 1):
        np.add.at(edge_marginals[t], (Ys[:, t], Ys[:, t + 1]), p)
    best = np.argmax(scores)
    return log_z, node_marginals, edge_marginals, Ys[best], scores[best]


def _phi(x, y, n_states, start_end):
    """Joint feature vector of one labelled sequence, written out from its definition."""
    K = n_states
    W = np.zeros((K, x.shape[1]))
    transition = np.zeros((K, K))
    start, end = np.zeros(K), np.zeros(K)
    for t in range(len(y)):
        W[y[t]] += x[t]
    for t in range(1, len(y)):
        transition[y[t - 1], y[t]] += 1
    start[y[0]] += 1
    end[y[-1]] += 1
    parts = [W.ravel(), transition.ravel()] + ([start, end] if start_end else [])
    return np.concatenate(parts)


def _random_sequences(rng, lengths, n_features, sparse=False):
    X = []
    for T in lengths:
        x = rng.randn(T, n_features)
        x[rng.rand(T, n_features) < 0.5] = 0.0
        X.append(sp.csr_matrix(x) if sparse else x)
    return X


def _tolerances(scale):
    # brute force itself loses ~ scale * 1e-16 in every exponent
    return dict(rtol=1e-12, atol=1e-12 * max(scale, 1.0) * 10)


# --------------------------------------------------------- brute force tests
@pytest.mark.parametrize("start_end", [True, False])
@pytest.mark.parametrize("scale", [1.0, 30.0, 1e4])
def test_marginals_and_viterbi_equal_brute_force(start_end, scale):
    rng = np.random.RandomState(int(scale) + start_end)
    structure = ChainStructure(start_end=start_end)
    for n_states in (2, 3, 5):
        lengths = [1, 2, 3, 6] if n_states < 5 else [1, 2, 4, 5]
        X = _random_sequences(rng, lengths, n_features=3)
        batch = structure.make_batch(X, n_states)
        scores = scale * rng.randn(batch.part_offsets[-1])
        # sequences 0-2 share their transition scores (the kernel reuses exp(transition))
        shared = batch.transition_part_starts[:, None] + np.arange(n_states ** 2)
        scores[shared[1:3]] = scores[shared[0]]
        mu, log_z = structure.marginals(batch, scores)
        forward_only = structure.log_partition(batch, scores)
        labels = structure.argmax(batch, scores)
        edges = structure.edge_marginals(batch, scores)
        assert np.all(np.isfinite(mu)) and np.all(np.isfinite(log_z))
        tol = _tolerances(scale)
        mu_blocks = _blocks(mu, lengths, n_states, start_end)
        score_blocks = _blocks(scores, lengths, n_states, start_end)
        for i, (block, mu_block) in enumerate(zip(score_blocks, mu_blocks)):
            T = lengths[i]
            ref_log_z, ref_node, ref_edges, ref_best, ref_score = _brute_force(*block)
            assert log_z[i] == pytest.approx(ref_log_z, rel=1e-13, abs=1e-12)
            assert forward_only[i] == pytest.approx(ref_log_z, rel=1e-13, abs=1e-12)
            node, transition, start, end = mu_block
            np.testing.assert_allclose(node, ref_node, **tol)
            np.testing.assert_allclose(transition, ref_edges.sum(axis=0), **tol)
            np.testing.assert_allclose(edges[i], ref_edges, **tol)
            if start_end:
                np.testing.assert_allclose(start, ref_node[0], **tol)
                np.testing.assert_allclose(end, ref_node[-1], **tol)
            # marginals sum correctly
            np.testing.assert_allclose(node.sum(axis=1), 1.0, **tol)
            assert transition.sum() == pytest.approx(T - 1, rel=tol["atol"], abs=tol["atol"])
            np.testing.assert_allclose(edges[i].sum(axis=2), node[:-1], **tol)
            np.testing.assert_allclose(edges[i].sum(axis=1), node[1:], **tol)
            unit = slice(batch.unit_offsets[i], batch.unit_offsets[i + 1])
            np.testing.assert_array_equal(labels[unit], ref_best)

            # the single-sequence kernels agree with the batch wrappers
            node_out, transition_out = np.empty((T, n_states)), np.empty((n_states, n_states))
            edges_out = np.empty((T - 1, n_states, n_states))
            assert chain_forward_backward(*block, node_out, transition_out) == log_z[i]
            assert chain_forward_backward_edges(*block, node_out, edges_out) == log_z[i]
            assert chain_log_partition(*block) == pytest.approx(ref_log_z, rel=1e-13, abs=1e-12)
            best = np.empty(T, dtype=np.int64)
            assert chain_viterbi(*block, best) == pytest.approx(ref_score, rel=1e-13, abs=1e-12)
            np.testing.assert_array_equal(best, ref_best)
            np.testing.assert_array_equal(node_out, node)
            np.testing.assert_array_equal(edges_out, edges[i])


def test_kernels_with_mixed_magnitudes_and_forbidden_transitions_equal_brute_force():
    """Positions whose scores differ by up to 4.5 orders of magnitude, and forbidden
    transitions, drive the recursions off their fast path (messages held in log space,
    exact log-sum-exps, exact conditionals) at some positions and onto it at others."""
    rng = np.random.RandomState(0)
    for _ in range(300):
        T, K = rng.randint(1, 6), rng.randint(1, 4)
        node = rng.randn(T, K) * 10 ** rng.uniform(0, 4.5, size=(T, 1))
        transition = rng.randn(K, K) * 10 ** rng.uniform(0, 4)
        if rng.rand() < 0.4:
            transition[rng.rand(K, K) < 0.3] = -np.inf
        start, end = (rng.randn(K) * 10 ** rng.uniform(0, 3) if rng.rand() < 0.5
                      else np.zeros(K) for _ in range(2))
        node_out, transition_out = np.empty((T, K)), np.empty((K, K))
        log_z = chain_forward_backward(node, transition, start, end, node_out, transition_out)
        forward_only = chain_log_partition(node, transition, start, end)
        Ys, scores = _enumerate(node, transition, start, end)
        if np.all(scores == -np.inf):
            assert log_z == forward_only == -np.inf
            continue
        ref_log_z, ref_node, ref_edges, _, _ = _brute_force(node, transition, start, end)
        scale = max(1.0, abs(ref_log_z))
        assert log_z == pytest.approx(ref_log_z, rel=1e-13, abs=1e-12 * scale)
        assert forward_only == pytest.approx(ref_log_z, rel=1e-13, abs=1e-12 * scale)
        np.testing.assert_allclose(node_out, ref_node, rtol=0, atol=1e-9)
        np.testing.assert_allclose(transition_out, ref_edges.sum(axis=0), rtol=0, atol=1e-9)


@pytest.mark.parametrize("start_end", [True, False])
def test_marginals_are_the_gradient_of_log_partition(start_end):
    rng = np.random.RandomState(3)
    structure = ChainStructure(start_end=start_end)
    batch = structure.make_batch(_random_sequences(rng, [1, 3, 4], 2), 3)
    scores = rng.randn(batch.part_offsets[-1])
    mu, _ = structure.marginals(batch, scores)
    eps = 1e-5
    gradient = np.empty_like(scores)
    for r in range(len(scores)):
        bump = np.zeros_like(scores)
        bump[r] = eps
        up = structure.marginals(batch, scores + bump)[1].sum()
        down = structure.marginals(batch, scores - bump)[1].sum()
        gradient[r] = (up - down) / (2 * eps)
    np.testing.assert_allclose(mu, gradient, atol=1e-8)


@pytest.mark.parametrize("scale", [1.0, 1e4])
def test_loss_augmented_argmax_equals_brute_force(scale):
    rng = np.random.RandomState(4)
    n_states, lengths = 4, [1, 3, 5]
    weights = np.array([1.0, 3.0, 0.5, 2.0])
    for loss_weights in (None, weights):
        structure = ChainStructure(loss_weights=loss_weights)
        batch = structure.make_batch(_random_sequences(rng, lengths, 3), n_states)
        Y = rng.randint(n_states, size=batch.unit_offsets[-1])
        # scale only the scores, so that the loss matters at scale 1
        scores = scale * rng.randn(batch.part_offsets[-1])
        found = structure.loss_augmented_argmax(batch, scores, Y)
        w_true = np.ones(n_states) if loss_weights is None else weights
        for i, block in enumerate(_blocks(scores, lengths, n_states, True)):
            unit = slice(batch.unit_offsets[i], batch.unit_offsets[i + 1])
            Ys, s = _enumerate(*block)
            augmented = s + (w_true[Y[unit]][None, :] * (Ys != Y[unit][None, :])).sum(axis=1)
            np.testing.assert_array_equal(found[unit], Ys[np.argmax(augmented)])


def test_part_losses_give_weighted_hamming_loss():
    rng = np.random.RandomState(5)
    weights = np.array([1.0, 3.0, 0.5])
    structure = ChainStructure(loss_weights=weights)
    batch = structure.make_batch(_random_sequences(rng, [2, 4, 1], 2), 3)
    Y = rng.randint(3, size=7)
    losses = structure.part_losses(batch, Y)
    for _ in range(5):
        Y_other = rng.randint(3, size=7)
        expected = np.sum(weights[Y] * (Y != Y_other))
        assert structure.encode(batch, Y_other) @ losses == pytest.approx(expected)


# --------------------------------------------------- features and encoding
@pytest.mark.parametrize("start_end", [True, False])
@pytest.mark.parametrize("sparse", [False, True])
def test_encode_features_and_adjoint(start_end, sparse):
    rng = np.random.RandomState(6)
    n_states, lengths = 3, [3, 1, 5]
    structure = ChainStructure(start_end=start_end)
    X = _random_sequences(rng, lengths, 4, sparse=sparse)
    batch = structure.make_batch(X, n_states)
    assert batch.n_weights == n_states * 4 + n_states ** 2 + (2 * n_states if start_end else 0)
    Y = rng.randint(n_states, size=sum(lengths))
    z = structure.encode(batch, Y)
    np.testing.assert_array_equal(structure.decode(batch, z), Y)
    Xd = [x.toarray() if sparse else x for x in X]
    phis = [
        _phi(x, Y[batch.unit_offsets[i]:batch.unit_offsets[i + 1]], n_states, start_end)
        for i, x in enumerate(Xd)
    ]
    sample_weight = rng.rand(3)
    np.testing.assert_allclose(structure.expected_features(batch, z), sum(phis), atol=1e-12)
    np.testing.assert_allclose(
        structure.expected_features(batch, z, sample_weight),
        sum(s * phi for s, phi in zip(sample_weight, phis)),
        atol=1e-12,
    )
    # score of a labelling = w . phi(x, y) = encode(y) . part_scores(w)
    w = rng.randn(batch.n_weights)
    scores = structure.part_scores(batch, w)
    for i, phi in enumerate(phis):
        part = slice(batch.part_offsets[i], batch.part_offsets[i + 1])
        assert z[part] @ scores[part] == pytest.approx(w @ phi)
    # adjoint: <F^T w, z> == <w, F z> for an arbitrary part vector
    v = rng.randn(batch.part_offsets[-1])
    assert scores @ v == pytest.approx(w @ structure.expected_features(batch, v), rel=1e-12)


def test_dense_and_sparse_give_identical_results():
    rng = np.random.RandomState(7)
    structure = ChainStructure()
    X = [rng.randn(T, 5) * (rng.rand(T, 5) < 0.8) for T in (4, 1, 6)]  # mostly non-zero
    dense = structure.make_batch(X, 4)
    sparse = structure.make_batch([sp.csr_matrix(x) for x in X], 4)
    mixed = structure.make_batch([X[0], sp.csc_matrix(X[1]), X[2]], 4)
    assert sp.issparse(sparse.X) and sp.issparse(mixed.X) and not sp.issparse(dense.X)
    # mostly-zero dense rows are kept as CSR, which the kernels read faster
    assert sp.issparse(structure.make_batch(_random_sequences(rng, [3], 5), 4).X)
    w = rng.randn(dense.n_weights)
    z = rng.rand(dense.part_offsets[-1])
    scores = structure.part_scores(dense, w)
    for other in (sparse, mixed):
        np.testing.assert_allclose(structure.part_scores(other, w), scores, rtol=1e-14)
        np.testing.assert_allclose(
            structure.expected_features(other, z), structure.expected_features(dense, z),
            rtol=1e-14,
        )
        np.testing.assert_array_equal(
            structure.argmax(other, structure.part_scores(other, w)),
            structure.argmax(dense, scores),
        )
        np.testing.assert_allclose(
            structure.marginals(other, structure.part_scores(other, w))[0],
            structure.marginals(dense, scores)[0], rtol=1e-13,
        )


def test_node_feature_kernels_match_numpy_on_row_ranges():
    rng = np.random.RandomState(8)
    X = rng.randn(7, 5)
    X[rng.rand(7, 5) < 0.5] = 0
    W = rng.randn(3, 5)
    Xs = sp.csr_matrix(X)
    out = np.empty((3, 3))
    csr_node_scores(Xs.data, Xs.indices, Xs.indptr, 2, 5, np.ascontiguousarray(W.T), out)
    np.testing.assert_allclose(out, X[2:5] @ W.T)
    dense_node_scores(X[2:5], W, out)
    np.testing.assert_allclose(out, X[2:5] @ W.T)
    node_weights = rng.randn(3, 3)
    acc_dense = np.ones((3, 5))
    dense_add_node_features(X[2:5], node_weights, 0.5, acc_dense)
    acc_sparse = np.ones((5, 3))  # feature-major
    csr_add_node_features(Xs.data, Xs.indices, Xs.indptr, 2, 5, node_weights, 0.5, acc_sparse)
    np.testing.assert_allclose(acc_dense, 1 + 0.5 * node_weights.T @ X[2:5])
    np.testing.assert_allclose(acc_sparse.T, acc_dense)


def test_take_selects_sequences():
    rng = np.random.RandomState(9)
    structure = ChainStructure()
    X = _random_sequences(rng, [2, 5, 1, 3], 3, sparse=True)
    batch = structure.make_batch(X, 3)
    sub = structure.take(batch, [3, 1, 3])
    np.testing.assert_array_equal(sub.lengths, [3, 5, 3])
    reference = structure.make_batch([X[3], X[1], X[3]], 3)
    w = rng.randn(batch.n_weights)
    np.testing.assert_allclose(structure.part_scores(sub, w), structure.part_scores(reference, w))
    np.testing.assert_array_equal(sub.part_offsets, reference.part_offsets)
    assert structure.take(batch, np.array([False, True, True, False])).n_samples == 2
    np.testing.assert_array_equal(structure.take(batch, [-1, 0]).lengths, [3, 2])
    with pytest.raises(ValueError, match="out of range"):
        structure.take(batch, [4])


# -------------------------------------------------------------- validation
def test_bad_inputs_are_rejected_naming_the_sequence():
    structure = ChainStructure()
    good = np.ones((3, 2))
    with pytest.raises(ValueError, match="at least one sequence"):
        structure.make_batch([], 2)
    with pytest.raises(ValueError, match="sequence 1: has no rows"):
        structure.make_batch([good, np.ones((0, 2))], 2)
    with pytest.raises(ValueError, match="sequence 2 has 3 feature columns but sequence 0 has 2"):
        structure.make_batch([good, good, np.ones((2, 3))], 2)
    with pytest.raises(ValueError, match="sequence 1: features contain NaN"):
        structure.make_batch([good, np.array([[np.inf, 0.0]])], 2)
    with pytest.raises(ValueError, match=r"sequence 0: expected a 2-D array.*reshape\(-1, 1\)"):
        structure.make_batch([np.ones(3)], 2)
    with pytest.raises(TypeError, match="got a single ndarray"):
        structure.make_batch(good, 2)
    with pytest.raises(TypeError, match="sequence 0: expected real numeric"):
        structure.make_batch([np.array([["a", "b"]])], 2)
    batch = structure.make_batch([good, good[:1]], 2)
    with pytest.raises(ValueError, match="example 1 has encoded output 2"):
        structure.encode(batch, [0, 1, 0, 2])
    with pytest.raises(ValueError, match="expected 4 encoded outputs"):
        structure.encode(batch, [0, 1, 0])
    with pytest.raises(ValueError, match="NaN or infinity"):
        structure.marginals(batch, np.full(batch.part_offsets[-1], np.nan))
    with pytest.raises(ValueError, match="built with start_end=True"):
        ChainStructure(start_end=False).argmax(batch, np.zeros(batch.part_offsets[-1]))


def test_inputs_are_not_modified():
    rng = np.random.RandomState(10)
    X = _random_sequences(rng, [3, 2], 3)
    X_before = [x.copy() for x in X]
    structure = ChainStructure()
    batch = structure.make_batch(X, 2)
    scores = rng.randn(batch.part_offsets[-1])
    scores_before = scores.copy()
    Y = np.array([0, 1, 1, 0, 1])
    structure.marginals(batch, scores)
    structure.loss_augmented_argmax(batch, scores, Y)
    for x, x_before in zip(X, X_before):
        np.testing.assert_array_equal(x, x_before)
    np.testing.assert_array_equal(scores, scores_before)
    np.testing.assert_array_equal(Y, [0, 1, 1, 0, 1])
