"""Brute-force enumeration of dependency trees, the reference of the dependency tests."""

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
