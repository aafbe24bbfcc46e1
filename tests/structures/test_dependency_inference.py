"""Dependency-tree inference against brute-force enumeration of every tree."""

import itertools
from math import comb

import numpy as np
import pytest
from scipy.special import logsumexp

from sklearn_struct.structures.dependency._inference import (
    _FLUSH_EXPONENT,
    KAPPA,
    _is_safe,
    _log_space_marginals,
    _real_projective_inside,
    _scaled_weights,
    chu_liu_edmonds,
    eisner,
    matrix_tree_marginals,
    projective_log_partition,
    projective_marginals,
)
from sklearn_struct.structures.dependency._matrix_tree import _subtraction_free

from _trees import plausible_heads


def _is_tree(heads):
    """Every token reaches the root 0 without a cycle."""
    n = len(heads)
    for m in range(1, n + 1):
        seen, node = set(), m
        while node != 0:
            if node in seen:
                return False
            seen.add(node)
            node = heads[node - 1]
    return True


def _is_projective(heads):
    """No two arcs cross when drawn above the sentence, the root at position 0."""
    arcs = [(min(h, m), max(h, m)) for m, h in enumerate(heads, start=1)]
    return not any(a < c < b < d for a, b in arcs for c, d in arcs)


def all_trees(n, projective, single_root):
    trees = []
    for heads in itertools.product(range(n + 1), repeat=n):
        if any(h == m for m, h in enumerate(heads, start=1)) or not _is_tree(heads):
            continue
        if single_root and sum(h == 0 for h in heads) != 1:
            continue
        if projective and not _is_projective(heads):
            continue
        trees.append(heads)
    return np.array(trees)


TREES = {(n, p, r): all_trees(n, p, r) for n in range(1, 7) for p in (True, False)
         for r in (True, False) if p or n <= 5}


def tree_scores(S, trees):
    n = trees.shape[1]
    return S[trees, np.arange(1, n + 1)].sum(axis=1)


def test_tree_counts():
    # single-root projective trees: 1, 2, 7, 30, 143, 728
    assert [len(TREES[n, True, True]) for n in range(1, 7)] == [1, 2, 7, 30, 143, 728]
    # multi-root projective trees: C(3n, n) / (2n + 1)
    assert [len(TREES[n, True, False]) for n in range(1, 7)] == [
        comb(3 * n, n) // (2 * n + 1) for n in range(1, 7)]
    # all trees rooted at 0 (Cayley): (n + 1)^(n - 1); one root child: n^(n - 1)
    assert [len(TREES[n, False, False]) for n in range(1, 6)] == [
        (n + 1) ** (n - 1) for n in range(1, 6)]
    assert [len(TREES[n, False, True]) for n in range(1, 6)] == [
        n ** (n - 1) for n in range(1, 6)]


def random_scores(n, rng, scale=1.0, forbidden=0.0, keep=None):
    """Gaussian scores; a fraction of arcs forbidden (-inf), except the arcs of ``keep``."""
    S = scale * rng.randn(n + 1, n + 1)
    mask = rng.rand(n + 1, n + 1) < forbidden
    if keep is not None:
        mask[keep, np.arange(1, n + 1)] = False
    S[mask] = -np.inf
    return S


@pytest.mark.parametrize("single_root", [True, False])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
def test_eisner_finds_the_best_projective_tree(n, single_root):
    rng = np.random.RandomState(n)
    trees = TREES[n, True, single_root]
    for trial in range(20):
        S = random_scores(n, rng, scale=1e3 if trial % 5 == 0 else 1.0)
        heads = np.zeros(n, dtype=np.int64)
        score = eisner(S, single_root, heads)
        scores = tree_scores(S, trees)
        assert score == pytest.approx(scores.max(), rel=1e-12)
        assert tuple(heads) in {tuple(t) for t in trees}
        assert tree_scores(S, heads[None])[0] == pytest.approx(score, rel=1e-12)


@pytest.mark.parametrize("projective, n", [(True, n) for n in range(1, 7)]
                         + [(False, n) for n in range(1, 6)])
@pytest.mark.parametrize("single_root", [True, False])
def test_marginals_and_log_partition_match_enumeration(n, single_root, projective):
    rng = np.random.RandomState(10 + n)
    trees = TREES[n, projective, single_root]
    inference = projective_marginals if projective else matrix_tree_marginals
    for trial in range(5):
        S = random_scores(n, rng, scale=30.0 if trial == 4 else 1.0,
                          forbidden=0.3 if (trial == 3 and projective) else 0.0,
                          keep=trees[rng.randint(len(trees))])
        mu = np.empty_like(S)
        log_z = inference(S, single_root, mu)
        scores = tree_scores(S, trees)
        expected_log_z = logsumexp(scores)
        assert log_z == pytest.approx(expected_log_z, rel=1e-10, abs=1e-10)
        p = np.exp(scores - expected_log_z)
        expected = np.zeros_like(S)
        for weight, heads in zip(p, trees):
            expected[heads, np.arange(1, n + 1)] += weight
        np.testing.assert_allclose(mu, expected, atol=1e-9)


def _enumerated(S, trees):
    scores = tree_scores(S, trees)
    log_z = logsumexp(scores)
    expected = np.zeros_like(S)
    n = trees.shape[1]
    for weight, heads in zip(np.exp(scores - log_z), trees):
        expected[heads, np.arange(1, n + 1)] += weight
    return log_z, expected


@pytest.mark.parametrize("single_root", [True, False])
@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_matrix_tree_is_accurate_on_dominant_cycles(n, single_root):
    # dominant arcs forming a cycle make the Laplacian nearly singular (its inverse loses
    # every digit beyond differences of about 40); beyond 700 the weights underflow
    trees = TREES[n, False, single_root]
    rng = np.random.RandomState(n)
    for size in (5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 80.0, 200.0, 800.0, 5e3):
        S = random_scores(n, rng)
        cycle = rng.permutation(np.arange(1, n + 1))[:max(2, n - 1)]
        for a, b in zip(cycle, np.roll(cycle, -1)):
            S[a, b] += size
        mu = np.empty_like(S)
        log_z = matrix_tree_marginals(S, single_root, mu)
        expected_log_z, expected = _enumerated(S, trees)
        np.testing.assert_allclose(mu, expected, atol=1e-10)
        assert log_z == pytest.approx(expected_log_z, rel=1e-12, abs=1e-10)


@pytest.mark.parametrize("single_root", [True, False])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
def test_matrix_tree_matches_enumeration_at_any_scale(n, single_root):
    # from nearly uniform to deterministic scores: at 1e4 every exponential but the best
    # underflows, and the elimination runs on log-weights
    if n == 6:
        trees = all_trees(6, False, single_root)
    else:
        trees = TREES[n, False, single_root]
    rng = np.random.RandomState(30 + n)
    for scale in (1e-3, 1e-1, 1.0, 10.0, 100.0, 1e3, 1e4):
        for _ in range(3):
            S = random_scores(n, rng, scale=scale)
            mu = np.empty_like(S)
            log_z = matrix_tree_marginals(S, single_root, mu)
            expected_log_z, expected = _enumerated(S, trees)
            np.testing.assert_allclose(mu, expected, atol=1e-10)
            assert log_z == pytest.approx(expected_log_z, rel=1e-12, abs=1e-10)


@pytest.mark.parametrize("single_root", [True, False])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_subtraction_free_route_matches_enumeration(n, single_root):
    # called directly, also where the inverse route would have been accepted
    trees = TREES[n, False, single_root]
    rng = np.random.RandomState(20 + n)
    for scale in (0.001, 0.1, 1.0, 3.0):
        S = random_scores(n, rng, scale=scale)
        # the kernel's input: scores into each word shifted to a largest of 0 (and the root
        # row too with a single root); log Z shifts by the sum of the shifts
        logA = np.where(np.eye(n + 1, dtype=bool), -np.inf, S)
        logA[:, 0] = -np.inf
        top = logA[:, 1:].max(axis=0)
        logA[:, 1:] -= top
        shift = top.sum()
        if single_root:
            shift += logA[0, 1:].max()
            logA[0, 1:] -= logA[0, 1:].max()
        mu = np.zeros_like(S)
        log_z = _subtraction_free(logA, single_root, mu)
        expected_log_z, expected = _enumerated(S, trees)
        np.testing.assert_allclose(mu, expected, atol=1e-11)
        assert log_z + shift == pytest.approx(expected_log_z, rel=1e-10)


@pytest.mark.parametrize("projective", [True, False])
@pytest.mark.parametrize("single_root", [True, False])
def test_marginals_are_the_gradient_of_log_z(single_root, projective):
    rng = np.random.RandomState(3)
    n = 6
    inference = projective_marginals if projective else matrix_tree_marginals
    S = rng.randn(n + 1, n + 1)
    mu = np.empty_like(S)
    inference(S, single_root, mu)
    step = 1e-6
    scratch = np.empty_like(S)
    for h in range(n + 1):
        for m in range(1, n + 1):
            if h == m:
                continue
            up, down = S.copy(), S.copy()
            up[h, m] += step
            down[h, m] -= step
            slope = (inference(up, single_root, scratch)
                     - inference(down, single_root, scratch)) / (2 * step)
            assert slope == pytest.approx(mu[h, m], abs=1e-7)


@pytest.mark.parametrize("n", [5, 6])
def test_loss_augmented_argmax_is_the_argmax_of_augmented_scores(n):
    rng = np.random.RandomState(5)
    trees = TREES[n, True, True]
    truth = trees[17]
    S = rng.randn(n + 1, n + 1)
    augmented = S + (np.arange(n + 1)[:, None] != np.r_[0, truth][None, :])
    heads = np.zeros(n, dtype=np.int64)
    eisner(augmented, True, heads)
    hamming = (trees != truth).sum(axis=1)
    best = (tree_scores(S, trees) + hamming).max()
    assert tree_scores(S, heads[None])[0] + (heads != truth).sum() == pytest.approx(best)


@pytest.mark.parametrize("single_root", [True, False])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_chu_liu_edmonds_finds_the_best_tree(n, single_root):
    rng = np.random.RandomState(20 + n)
    trees = TREES[n, False, single_root]
    for trial in range(30):
        S = random_scores(n, rng, scale=1e3 if trial % 5 == 0 else 1.0)
        heads = np.zeros(n, dtype=np.int64)
        score = chu_liu_edmonds(S, single_root, heads)
        assert score == pytest.approx(tree_scores(S, trees).max(), rel=1e-12)
        assert tuple(heads) in {tuple(t) for t in trees}
        assert tree_scores(S, heads[None])[0] == pytest.approx(score, rel=1e-12)


def test_chu_liu_edmonds_agrees_with_networkx():
    nx = pytest.importorskip("networkx")
    rng = np.random.RandomState(7)
    for n in (6, 12, 30):
        for _ in range(5):
            S = rng.randn(n + 1, n + 1)
            graph = nx.DiGraph()
            graph.add_weighted_edges_from((h, m, S[h, m]) for h in range(n + 1)
                                          for m in range(1, n + 1) if h != m)
            tree = nx.maximum_spanning_arborescence(graph)
            expected = sum(S[h, m] for h, m in tree.edges)
            heads = np.zeros(n, dtype=np.int64)
            assert chu_liu_edmonds(S, False, heads) == pytest.approx(expected, rel=1e-12)


def _log_space(S, single_root):
    mu = np.empty_like(S)
    return _log_space_marginals(S, single_root, mu), mu


def test_scaled_weights_are_the_library_exponentials_flushed():
    # the series and the exponent bits against np.exp to 2 ulp, on the whole range the
    # recursions use, and the flush at its threshold
    rng = np.random.RandomState(0)
    exponents = np.r_[rng.uniform(_FLUSH_EXPONENT, 0.0, 100_000), rng.uniform(-1.0, 0.0, 1000),
                      0.0, -0.5 * np.log(2.0), _FLUSH_EXPONENT, np.nextafter(_FLUSH_EXPONENT, 0.0),
                      np.nextafter(_FLUSH_EXPONENT, -np.inf), -700.0, -np.inf, np.nan]
    weights = exponents.copy()
    _scaled_weights(weights)
    kept = exponents >= _FLUSH_EXPONENT
    expected = np.exp(exponents[kept]) / KAPPA
    assert np.all(np.abs(weights[kept] - expected) <= 2 * np.spacing(expected))
    assert np.all(weights[~kept] == 0.0) and (~kept).sum() == 4


def _real_space_is_safe(S, single_root):
    z, shift = _real_projective_inside(S, single_root)[:2]
    return _is_safe(z, shift, S.shape[0])


@pytest.mark.parametrize("single_root", [True, False])
@pytest.mark.parametrize("spread", [1.0, 10.0, 100.0, 1000.0])
def test_real_space_inside_outside_matches_log_space(spread, single_root):
    rng = np.random.RandomState(int(spread) + single_root)
    n_real = 0
    for n in (2, 3, 5, 8, 13, 21, 34, 45, 60):
        for _ in range(3):
            S = random_scores(n, rng, scale=spread)
            if spread > 10.0:  # keep some sentences in range: each word one plausible head
                S[plausible_heads(n, rng), np.arange(1, n + 1)] = S.max() + rng.rand(n)
            n_real += _real_space_is_safe(S, single_root)
            expected_log_z, expected = _log_space(S, single_root)
            mu = np.full_like(S, np.nan)
            log_z = projective_marginals(S, single_root, mu)
            np.testing.assert_allclose(mu, expected, atol=1e-10, rtol=0)
            assert log_z == pytest.approx(expected_log_z, rel=1e-9)
            assert projective_log_partition(S, single_root) == log_z
    assert n_real >= 9  # the real-space route was taken (and checked) that often


@pytest.mark.parametrize("single_root", [True, False])
def test_real_space_falls_back_to_log_space(single_root):
    rng = np.random.RandomState(4)
    for n, spread in [(6, 3e3), (12, 1e3), (30, 300.0), (200, 1.0), (40, 1e5)]:
        S = random_scores(n, rng, scale=spread)
        if n < 200:  # every word's best head one word to its right: a cycle at the end
            S[np.r_[2:n + 1, n - 1], np.arange(1, n + 1)] = 2 * spread * n
        assert not _real_space_is_safe(S, single_root)
        expected_log_z, expected = _log_space(S, single_root)
        assert np.isfinite(expected_log_z)
        mu = np.full_like(S, np.nan)
        assert projective_marginals(S, single_root, mu) == expected_log_z
        np.testing.assert_array_equal(mu, expected)
        assert projective_log_partition(S, single_root) == expected_log_z


@pytest.mark.parametrize("single_root", [True, False])
@pytest.mark.parametrize("n", [4, 6, 30])
def test_real_space_forbidden_arcs_have_zero_marginals(n, single_root):
    rng = np.random.RandomState(n)
    keep = np.array([m - 1 for m in range(1, n + 1)])  # the chain 0 -> 1 -> ... -> n
    for trial in range(5):
        S = random_scores(n, rng, scale=1.0 + trial, forbidden=0.5, keep=keep)
        assert _real_space_is_safe(S, single_root)
        mu = np.empty_like(S)
        log_z = projective_marginals(S, single_root, mu)
        assert np.all(mu[np.isneginf(S)] == 0.0)
        assert np.all(mu[:, 0] == 0.0) and np.all(np.diag(mu) == 0.0)
        np.testing.assert_allclose(mu.sum(axis=0)[1:], 1.0, atol=1e-12)
        expected_log_z, expected = _log_space(S, single_root)
        np.testing.assert_allclose(mu, expected, atol=1e-10, rtol=0)
        assert log_z == pytest.approx(expected_log_z, rel=1e-9)
        if n <= 6:
            trees = TREES[n, True, single_root]
            assert log_z == pytest.approx(logsumexp(tree_scores(S, trees)), rel=1e-12)


@pytest.mark.parametrize("single_root", [True, False])
def test_real_space_without_any_tree(single_root):
    S = np.random.RandomState(0).randn(5, 5)
    S[:, 3] = -np.inf  # no arc into word 3
    mu = np.empty_like(S)
    assert projective_marginals(S, single_root, mu) == -np.inf
    assert projective_log_partition(S, single_root) == -np.inf
