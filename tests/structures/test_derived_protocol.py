"""What the protocol derives for a structure: take from its batch's declared fields, Hamming
losses from its labelled parts, the declared acceptance of ``-inf`` scores, decoding and the
log-partition from kernels."""

from dataclasses import dataclass

import numpy as np
import pytest

from sklearn_struct.structures import (DependencyTreeStructure, MinCutStructure,
                                       MonotoneAlignmentStructure)
from sklearn_struct.structures._batch import Batch


def test_take_selects_every_declared_ragged_field_by_its_own_offsets():
    rng = np.random.RandomState(0)
    graphs = [(rng.randn(n, 2), np.array([[0, 1], [1, 2]]), rng.rand(2, 1)) for n in (3, 4, 5)]
    structure = MinCutStructure()
    batch = structure.make_batch(graphs)
    sub = structure.take(batch, [2, 0])
    expected = structure.make_batch([graphs[2], graphs[0]])
    for name in ("node_X", "edge_X", "edges", "unit_offsets", "edge_offsets", "part_offsets"):
        np.testing.assert_array_equal(getattr(sub, name), getattr(expected, name))


def test_take_refuses_an_empty_selection_and_an_undeclared_batch():
    structure = MonotoneAlignmentStructure()
    batch = structure.make_batch([np.ones((2, 3))], n_states=2)
    with pytest.raises(ValueError, match="at least one example"):
        structure.take(batch, [])

    @dataclass(frozen=True)
    class Undeclared(Batch):
        X: np.ndarray

    undeclared = Undeclared(n_samples=1, n_features=3, unit_offsets=batch.unit_offsets,
                            part_offsets=batch.part_offsets, n_weights=6, X=batch.X)
    with pytest.raises(TypeError, match="declares no ragged fields"):
        structure.take(undeclared, [0])


def test_dependency_losses_cost_every_arc_but_the_true_one_by_word_weight():
    attrs = np.array([[5, 6, 3, 0], [7, 8, 3, 1], [5, 6, 3, 0]])  # word 2 is punctuation
    structure = DependencyTreeStructure(punctuation_weight=0.5)
    batch = structure.make_batch([attrs])
    heads = np.array([2, 0, 2])
    losses = structure.part_losses(batch, heads)
    # the arc (h, m) of word m stands at (m - 1) * n + (h if h < m else h - 1)
    expected = np.repeat([1.0, 0.5, 1.0], 3)
    expected[[0 * 3 + 1, 1 * 3 + 0, 2 * 3 + 2]] = 0.0
    np.testing.assert_array_equal(losses, expected)


def test_forbidden_parts_are_declared():
    structure = MonotoneAlignmentStructure()
    assert structure.accepts_forbidden_parts
    batch = structure.make_batch([np.eye(3)], n_states=2)
    scores = np.zeros(batch.part_offsets[-1])
    scores[0] = -np.inf  # frame 0 may not take state 0: so no frame does
    np.testing.assert_array_equal(structure.argmax(batch, scores), [1, 1, 1])
    mu, _ = structure.marginals(batch, scores)
    assert mu[0] == 0.0

    tree = DependencyTreeStructure()
    assert not tree.accepts_forbidden_parts
    tree_batch = tree.make_batch([np.full((2, 3), 5)])
    with pytest.raises(ValueError, match="NaN or infinity"):
        tree.argmax(tree_batch, np.array([-np.inf, 0.0, 0.0, 0.0]))


def test_decode_kernel_alone_serves_non_projective_trees():
    from sklearn_struct.structures._kernel import KernelOps
    from sklearn_struct.structures.dependency._projective import (
        heads_decode, projective_hypergraph)

    ops = DependencyTreeStructure(projective=False).kernel_ops
    assert ops.provides("decode") and not ops.provides("k_best")
    with pytest.raises(TypeError, match="needs hypergraph_size, hypergraph and decode"):
        KernelOps(part_scores=ops.functions["part_scores"],
                  add_features=ops.functions["add_features"], hypergraph=projective_hypergraph,
                  decode=heads_decode)
    # decode inverts encode on non-projective trees, with crossing arcs
    structure = DependencyTreeStructure(projective=False, hash_bits=6)
    rng = np.random.RandomState(0)
    batch = structure.make_batch([rng.randint(0, 5, (n, 3)) for n in (4, 3)])
    heads = np.array([3, 4, 0, 3, 2, 0, 2])  # the arcs 3 -> 1 and 4 -> 2 cross
    np.testing.assert_array_equal(structure.decode(batch, structure.encode(batch, heads)), heads)


def test_log_partition_runs_the_kernel_and_equals_the_marginals():
    from sklearn_struct.structures import TreeStructure

    rng = np.random.RandomState(0)
    tree = TreeStructure(n_edge_types=2)
    forests = [(rng.randn(n, 3), np.r_[-1, rng.randint(0, 1, n - 1)], rng.randint(0, 2, n))
               for n in (1, 4, 6)]
    for structure, X, k in ((tree, forests, 3),
                            (MonotoneAlignmentStructure(), [rng.randn(n, 2) for n in (2, 5)], 3)):
        batch = structure.make_batch(X, n_states=k)
        assert structure.kernel_ops.provides("log_partition")
        scores = rng.randn(int(batch.part_offsets[-1]))
        np.testing.assert_allclose(structure.log_partition(batch, scores),
                                   structure.marginals(batch, scores)[1], rtol=1e-12)
