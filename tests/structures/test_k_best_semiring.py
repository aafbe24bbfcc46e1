"""Property-based tests of the k-best semiring (``structures/_semiring.py``) at any ``k``.

On the hypergraphs of chains, multiclass and projective dependency trees, with
integer-valued part scores (ties everywhere) and forbidden (``-inf``) parts,
:func:`_semiring.k_best` must list the outputs of finite score in the documented
order: by score, ties by the edge and then the tails' ranks, node by node (the
order the reference below builds by brute force over derivations); the
derivations must be the enumerated outputs, each once; ``k`` runs from 1 to beyond
the number of outputs, and to sizes that could never be allocated.  The
settings are derandomised so that CI runs the same examples every time.
"""

import itertools

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from sklearn_struct.structures import (  # noqa: E402
    ChainStructure,
    DependencyTreeStructure,
    MulticlassStructure,
)
from sklearn_struct.structures import _semiring  # noqa: E402
from sklearn_struct.structures._semiring import HEAD, PART0, PART1, TAIL0, TAIL1  # noqa: E402

from _trees import dependency_trees  # noqa: E402

PROPERTIES = settings(max_examples=40, deadline=None, derandomize=True)
HUGE = (10 ** 5, 2 ** 40, 2 ** 62)


def _example(kind, size, rng):
    """A structure, its batch of one example of ``size`` and every output of it."""
    if kind == "chain":
        n_tokens, n_states = size
        structure = ChainStructure()
        batch = structure.make_batch([rng.randn(n_tokens, 1)], n_states=n_states)
        outputs = itertools.product(range(n_states), repeat=n_tokens)
    elif kind == "multiclass":
        structure = MulticlassStructure()
        batch = structure.make_batch(rng.randn(1, 2), n_states=size[1] + 1)
        outputs = [[c] for c in range(size[1] + 1)]
    else:
        structure = DependencyTreeStructure(projective=True, hash_bits=6)
        batch = structure.make_batch([rng.randint(4, 9, size=(size[0], 3))])
        outputs = dependency_trees(size[0], True, True)
    encodings = [structure.encode(batch, np.array(y, dtype=np.int64)) for y in outputs]
    return structure, batch, np.array(encodings)


def _hypergraph(structure, batch):
    ops, data = structure.kernel_ops, structure.kernel_data(batch)
    n_nodes, max_edges = ops.functions["hypergraph_size"](data, 0)
    edges = np.empty((max_edges, 5), dtype=np.int64)
    return edges[:ops.functions["hypergraph"](data, 0, edges)], n_nodes


def _reference(edges, n_nodes, theta):
    """Every derivation of the goal of finite score, in the documented order, by brute force:
    ``(score, part counts)``, each node's list sorted by score, then edge, then tails' ranks."""
    derivations = [[] for _ in range(n_nodes)]
    for v in range(n_nodes):
        candidates = []
        for f in np.flatnonzero(edges[:, HEAD] == v):
            score, parts = 0.0, np.zeros(theta.shape[0])
            for column in (PART0, PART1):
                if edges[f, column] >= 0:
                    score += theta[edges[f, column]]
                    parts[edges[f, column]] += 1
            if score == -np.inf:
                continue
            tails = [derivations[edges[f, c]] if edges[f, c] >= 0 else [(0.0, 0.0)]
                     for c in (TAIL0, TAIL1)]
            for (r0, (v0, z0)), (r1, (v1, z1)) in itertools.product(*map(enumerate, tails)):
                value = score
                if edges[f, TAIL0] >= 0:
                    value += v0
                if edges[f, TAIL1] >= 0:
                    value += v1
                candidates.append(((-value, f, r0, r1), (value, parts + z0 + z1)))
        candidates.sort(key=lambda c: c[0])
        derivations[v] = [c[1] for c in candidates]
    return derivations[n_nodes - 1]


def _k_best(edges, n_nodes, theta, k):
    values, back, start, found = _semiring._best_derivations(edges, n_nodes, theta, k)
    goal = n_nodes - 1
    listed = []
    for j in range(found[goal]):
        z = np.zeros(theta.shape[0])
        _semiring.derivation_parts(edges, back, start, goal, j,
                                   np.empty((n_nodes, 2), dtype=np.int64), z)
        listed.append((values[start[goal] + j], z))
    return listed


examples = st.one_of(
    st.tuples(st.just("chain"), st.tuples(st.integers(1, 4), st.integers(1, 3))),
    st.tuples(st.just("multiclass"), st.tuples(st.just(1), st.integers(0, 4))),
    st.tuples(st.just("dependency"), st.tuples(st.integers(1, 4), st.just(0))),
)


@PROPERTIES
@given(example=examples, scale=st.integers(0, 3), forbidden=st.sampled_from([0.0, 0.1, 0.4]),
       ks=st.lists(st.integers(1, 90), min_size=1, max_size=4),
       seed=st.integers(0, 2 ** 31 - 1))
def test_k_best_lists_the_outputs_in_the_order_of_ties(example, scale, forbidden, ks, seed):
    rng = np.random.RandomState(seed)
    structure, batch, encodings = _example(*example, rng)
    edges, n_nodes = _hypergraph(structure, batch)
    theta = rng.randint(-scale, scale + 1, size=encodings.shape[1]).astype(float)
    theta[rng.rand(theta.shape[0]) < forbidden] = -np.inf
    expected = _reference(edges, n_nodes, theta)
    # the reference's derivations are the enumerated outputs of finite score, each once
    with np.errstate(invalid="ignore"):  # (a part counted 0 times adds 0, even at -inf)
        scores = np.where(encodings > 0, encodings * theta, 0.0).sum(axis=1)
    finite = np.isfinite(scores)
    assert sorted(tuple(z) for _, z in expected) == sorted(map(tuple, encodings[finite]))
    np.testing.assert_array_equal([v for v, _ in expected], np.sort(scores[finite])[::-1])
    counts = np.empty(n_nodes)
    _semiring.count_derivations(edges, n_nodes, theta, counts)
    assert counts[-1] == len(expected)
    for k in ks + [len(expected), len(expected) + 1, *HUGE]:
        listed = _k_best(edges, n_nodes, theta, k)
        assert len(listed) == min(k, len(expected))
        for (value, z), (value_ref, z_ref) in zip(listed, expected):
            assert value == value_ref
            np.testing.assert_array_equal(z, z_ref)


@PROPERTIES
@given(n_tokens=st.integers(1, 3), n_states=st.integers(1, 3), k=st.sampled_from((3, *HUGE)),
       seed=st.integers(0, 2 ** 31 - 1))
def test_structure_k_best_has_a_row_per_output_at_most(n_tokens, n_states, k, seed):
    """Ties (zero scores): every output once, rows capped at the most outputs of an example."""
    rng = np.random.RandomState(seed)
    structure = ChainStructure()
    lengths = [n_tokens, max(1, n_tokens - 1)]
    batch = structure.make_batch([rng.randn(n, 1) for n in lengths], n_states=n_states)
    Y, best = structure.k_best(batch, np.zeros(int(batch.part_offsets[-1])), k)
    n_outputs = [n_states ** n for n in lengths]
    assert Y.shape == (min(k, max(n_outputs)), sum(lengths))
    assert best.shape == (2, Y.shape[0])
    for i, (n, offset) in enumerate(zip(n_outputs, [0, n_tokens])):
        listed = {tuple(row) for row in Y[:min(k, n), offset:offset + lengths[i]]}
        assert len(listed) == min(k, n)
        np.testing.assert_array_equal(best[i, :min(k, n)], 0.0)
        assert np.all(np.isneginf(best[i, min(k, n):]))


def test_many_outputs_count_and_k_best_still_runs():
    """3**700 outputs: the count is infinite (not a wrong size), and a few best come out."""
    structure = ChainStructure()
    batch = structure.make_batch([np.zeros((700, 1))], n_states=3)
    edges, n_nodes = _hypergraph(structure, batch)
    theta = np.random.RandomState(0).randint(-2, 3, size=int(batch.part_offsets[-1]))
    counts = np.empty(n_nodes)
    _semiring.count_derivations(edges, n_nodes, theta.astype(float), counts)
    assert counts[-1] == np.inf and not np.any(np.isnan(counts))
    Y, best = structure.k_best(batch, theta.astype(float), 5)
    assert Y.shape == (5, 700) and len({tuple(y) for y in Y}) == 5
    assert np.all(np.diff(best[0]) <= 0)
