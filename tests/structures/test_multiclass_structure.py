import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import brentq
from scipy.special import logsumexp, softmax

from sklearn_struct.structures import MulticlassStructure


def _problem(seed, n_samples=7, n_features=5, n_states=4, sparse=False):
    rng = np.random.RandomState(seed)
    X = rng.randn(n_samples, n_features)
    X[rng.rand(*X.shape) < 0.4] = 0.0
    if sparse:
        X = sp.csr_matrix(X)
    Y = rng.randint(n_states, size=n_samples)
    return rng, X, Y


def _phi(x, k, n_states):
    """Joint feature map of one sample, written out from the definition e_k (x) x."""
    W = np.zeros((n_states, x.shape[0]))
    W[k] = x
    return W.ravel()


@pytest.mark.parametrize("sparse", [False, True])
def test_part_scores_and_expected_features_match_feature_map(sparse):
    n_states = 4
    rng, X, Y = _problem(0, sparse=sparse)
    Xd = X.toarray() if sparse else X
    structure = MulticlassStructure()
    batch = structure.make_batch(X, n_states)
    assert batch.n_weights == n_states * Xd.shape[1]
    w = rng.randn(batch.n_weights)
    scores = structure.part_scores(batch, w)
    expected = [w @ _phi(Xd[i], k, n_states) for i in range(len(Xd)) for k in range(n_states)]
    np.testing.assert_allclose(scores, expected, atol=1e-12)
    # expected_features(encode(y)) is sum_i phi(x_i, y_i), and weighted by samples
    sample_weight = rng.rand(len(Xd))
    phi_sum = sum(sample_weight[i] * _phi(Xd[i], Y[i], n_states) for i in range(len(Xd)))
    np.testing.assert_allclose(
        structure.expected_features(batch, structure.encode(batch, Y), sample_weight),
        phi_sum,
        atol=1e-12,
    )
    # adjoint: <F^T w, z> == <w, F z>
    z = rng.randn(int(batch.part_offsets[-1]))
    np.testing.assert_allclose(
        structure.part_scores(batch, w) @ z, w @ structure.expected_features(batch, z), rtol=1e-12
    )


def test_dense_and_sparse_give_identical_results():
    rng, X, Y = _problem(1)
    structure = MulticlassStructure(loss_weights=[1.0, 2.0, 0.5, 3.0])
    dense = structure.make_batch(X, 4)
    sparse = structure.make_batch(sp.csr_matrix(X), 4)
    w = rng.randn(dense.n_weights)
    z = rng.rand(int(dense.part_offsets[-1]))
    np.testing.assert_allclose(structure.part_scores(dense, w), structure.part_scores(sparse, w))
    np.testing.assert_allclose(
        structure.expected_features(dense, z), structure.expected_features(sparse, z)
    )
    scores = structure.part_scores(dense, w)
    np.testing.assert_array_equal(
        structure.loss_augmented_argmax(dense, scores, Y),
        structure.loss_augmented_argmax(sparse, scores, Y),
    )


def test_encode_decode_round_trip_and_weighted_zero_one_loss():
    rng, X, Y = _problem(2)
    weights = np.array([1.0, 2.0, 0.5, 3.0])
    structure = MulticlassStructure(loss_weights=weights)
    batch = structure.make_batch(X, 4)
    z = structure.encode(batch, Y)
    assert z.shape == (len(Y) * 4,) and z.sum() == len(Y)
    np.testing.assert_array_equal(structure.decode(batch, z), Y)
    losses = structure.part_losses(batch, Y)
    for _ in range(5):
        Y_other = rng.randint(4, size=len(Y))
        expected = np.sum(weights[Y] * (Y != Y_other))
        assert structure.encode(batch, Y_other) @ losses == pytest.approx(expected)


@pytest.mark.parametrize("scale", [1.0, 1e4])
def test_argmax_and_loss_augmented_argmax_equal_brute_force(scale):
    rng, X, Y = _problem(3, n_samples=20)
    weights = np.array([1.0, 2.0, 0.5, 3.0])
    structure = MulticlassStructure(loss_weights=weights)
    batch = structure.make_batch(X, 4)
    scores = scale * rng.randn(20 * 4)
    S = scores.reshape(20, 4)
    np.testing.assert_array_equal(structure.argmax(batch, scores), [np.argmax(s) for s in S])
    augmented = [
        np.argmax([S[i, k] + weights[Y[i]] * (k != Y[i]) for k in range(4)]) for i in range(20)
    ]
    np.testing.assert_array_equal(structure.loss_augmented_argmax(batch, scores, Y), augmented)


@pytest.mark.parametrize("scale", [1.0, 1e4])
def test_marginals_softmax_logsumexp_and_gradient_of_log_partition(scale):
    rng, X, _ = _problem(4)
    structure = MulticlassStructure()
    batch = structure.make_batch(X, 4)
    scores = scale * rng.randn(7 * 4)
    mu, log_z = structure.marginals(batch, scores)
    S = scores.reshape(7, 4)
    assert np.all(np.isfinite(mu)) and np.all(np.isfinite(log_z))
    np.testing.assert_allclose(mu, softmax(S, axis=1).ravel(), atol=1e-12)
    np.testing.assert_allclose(log_z, logsumexp(S, axis=1), rtol=1e-13)
    np.testing.assert_allclose(structure.log_partition(batch, scores), log_z, rtol=1e-15)
    if scale == 1.0:
        eps = 1e-6
        for r in range(0, 28, 3):
            bumped = scores.copy()
            bumped[r] += eps
            gradient = (structure.marginals(batch, bumped)[1] - log_z).sum() / eps
            assert gradient == pytest.approx(mu[r], abs=1e-5)


def _simplex_projection_by_bisection(v):
    tau = brentq(lambda t: np.maximum(v - t, 0).sum() - 1.0, v.min() - 1.0, v.max())
    return np.maximum(v - tau, 0)


def test_project_onto_simplex_is_exact():
    rng, X, _ = _problem(5, n_samples=30)
    structure = MulticlassStructure()
    batch = structure.make_batch(X, 4)
    v = 3 * rng.randn(30 * 4)
    v[:4] = [0.25, 0.25, 0.25, 0.25]  # already on the simplex
    v[4:8] = [5.0, 5.0, -1.0, 5.0]  # ties
    p = structure.project(batch, v).reshape(30, 4)
    V = v.reshape(30, 4)
    assert np.all(p >= 0)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(p[0], 0.25)
    np.testing.assert_allclose(p[1], [1 / 3, 1 / 3, 0, 1 / 3])
    for row, proj in zip(V, p):
        np.testing.assert_allclose(proj, _simplex_projection_by_bisection(row), atol=1e-10)
        # optimality: <v - p, q - p> <= 0 for every vertex q of the simplex
        residual = row - proj
        assert residual.max() <= residual @ proj + 1e-10


def test_take_selects_samples():
    rng, X, Y = _problem(6)
    structure = MulticlassStructure()
    batch = structure.make_batch(sp.csr_matrix(X), 4)
    sub = structure.take(batch, [4, 0, 4])
    assert sub.n_samples == 3 and sub.part_offsets[-1] == 12
    w = rng.randn(batch.n_weights)
    full = structure.part_scores(batch, w).reshape(7, 4)
    np.testing.assert_allclose(structure.part_scores(sub, w).reshape(3, 4), full[[4, 0, 4]])
    mask = np.zeros(7, dtype=bool)
    mask[[1, 2]] = True
    assert structure.take(batch, mask).n_samples == 2


def test_inputs_are_validated_and_not_modified():
    structure = MulticlassStructure()
    X = np.array([[1.0, 2.0], [3.0, 4.0]])
    X_before = X.copy()
    batch = structure.make_batch(X, 3)
    structure.expected_features(batch, np.ones(6), sample_weight=[2.0, 3.0])
    np.testing.assert_array_equal(X, X_before)
    with pytest.raises(ValueError, match="needs n_states"):
        structure.make_batch(X)
    with pytest.raises(ValueError, match="NaN or infinity"):
        structure.make_batch(np.array([[np.nan, 1.0]]), 2)
    with pytest.raises(ValueError, match="2-D array"):
        structure.make_batch(np.ones(3), 2)
    with pytest.raises(ValueError, match="NaN or infinity"):
        structure.make_batch(sp.csr_matrix(np.array([[np.inf, 1.0]])), 2)
    with pytest.raises(ValueError, match="vector of 6 part values"):
        structure.marginals(batch, np.zeros(5))
    with pytest.raises(ValueError, match="example 1 has encoded output 3"):
        structure.encode(batch, [0, 3])
    with pytest.raises(ValueError, match="loss_weights has shape"):
        MulticlassStructure(loss_weights=[1.0, 2.0]).part_losses(batch, [0, 1])


def test_read_only_and_64_bit_inputs_reach_the_kernels_compiled_for_the_others(tmp_path):
    """numba compiles every kernel again for a read-only array or 64-bit sparse indices: the
    kernel data of a memory map, or of a CSR matrix with int64 indices, is converted."""
    import warnings

    from sklearn_struct import EGCRF
    from sklearn_struct.solvers._eg_kernels import online_epoch
    from sklearn_struct.structures._token_kernels import token_features

    rng = np.random.RandomState(0)
    X = rng.rand(30, 4)
    y = rng.randint(0, 3, 30)
    path = tmp_path / "X.npy"
    np.save(path, X)
    mapped = np.load(path, mmap_mode="r")
    wide = sp.csr_matrix(X * (X > 0.7))
    wide.indices, wide.indptr = wide.indices.astype(np.int64), wide.indptr.astype(np.int64)
    for x in (mapped, wide):
        values, indices, indptr, _ = token_features(x)
        assert values.dtype == np.float64 and values.flags.writeable
        assert indices.dtype == indptr.dtype == np.int32
    assert not mapped.flags.writeable  # what the user passed is not changed
    assert wide.indices.dtype == np.int64
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        EGCRF(max_iter=2, random_state=0).fit(X, y).predict(X)
        # (other tests in this process may have compiled other signatures before)
        epoch = MulticlassStructure.kernel_ops._specialized[online_epoch]
        compiled = list(epoch.signatures)
        for x in (mapped, wide):
            EGCRF(max_iter=2, random_state=0).fit(x, y).predict(x)
    assert epoch.signatures == compiled
