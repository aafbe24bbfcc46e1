"""Brute-force enumeration of dependency trees, the reference of the dependency tests, and their
shared checks."""

import itertools

import numpy as np

from sklearn_struct.datasets import is_projective


def dependency_trees(n, projective, single_root):
    """Every tree of ``n`` words as a head array (0 the root), by brute force over head arrays:
    acyclic, single-rooted or not, projective or not."""
    for heads in itertools.product(range(n + 1), repeat=n):
        if any(h == m for m, h in enumerate(heads, start=1)):
            continue
        acyclic = True
        for m in range(1, n + 1):
            seen, node = set(), m
            while node != 0 and acyclic:
                acyclic = node not in seen
                seen.add(node)
                node = heads[node - 1]
        if not acyclic or (single_root and heads.count(0) != 1):
            continue
        if projective and not is_projective(heads):
            continue
        yield np.array(heads, dtype=np.int64)


def plausible_heads(n, rng):
    """A random projective tree with one root child that spreads scores can favour: word 1
    heads the sentence, word ``m`` hangs from word 1 or from word ``m - 1``."""
    return np.r_[0, np.where(rng.rand(n - 1) < 0.5, 1, np.arange(1, n))].astype(np.int64)


def assert_cached_route_matches(ops, hashed, cached, i, w, scale, coef):
    """Example ``i``'s kernel operations give the same results on the kernel data for
    prediction (hashing every part) and on that for training (the feature cache): part
    scores, the addition of ``F_i coef`` and its squared norm (``add_features_norm``,
    which must add what ``add_features`` adds)."""
    n_parts = coef.shape[0]
    scores = [np.empty(n_parts), np.empty(n_parts)]
    for data, out in zip((hashed, cached), scores):
        ops["part_scores"](data, i, w, scale, out)
    np.testing.assert_allclose(scores[1], scores[0], rtol=1e-12, atol=1e-12)
    added, norms = [w.copy(), w.copy()], []
    for data, target in zip((hashed, cached), added):
        ops["add_features"](data, i, coef, scale, target)
        with_norm = w.copy()
        norms.append(ops["add_features_norm"](data, i, coef, scale, with_norm,
                                              np.zeros(w.shape[0]), np.empty(0)))
        np.testing.assert_allclose(with_norm, target, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(added[1], added[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(norms[1], norms[0], rtol=1e-12)
    change = added[0] - w
    np.testing.assert_allclose(norms[0], change @ change, rtol=1e-9)
