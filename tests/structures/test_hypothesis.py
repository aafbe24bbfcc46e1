"""Property-based tests: random shapes and sizes for every structure and the chain kernels.

Hypothesis draws the shapes (examples, tokens, nodes, edges, feature columns
including 0, labels, dense or CSR features); a seed drawn with them fills in
the values.  Every structure then goes through
:func:`~sklearn_struct.utils.check_structure`, which compares its argmax,
marginals, log-partition and projection with brute-force enumeration and checks
that nothing is mutated; the numba chain kernels are compared with enumeration
directly, on sequences of 0 to 3 tokens, and so are the dependency-tree kernels
(Eisner, inside-outside, Chu-Liu-Edmonds, Matrix-Tree) on every tree of 1 to 5
words at score scales from 1e-3 to 1e4.  The settings are derandomised so that
CI runs the same examples every time.
"""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import logsumexp

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from sklearn_struct.structures import (  # noqa: E402
    ChainStructure,
    DependencyTreeStructure,
    MatchingStructure,
    MinCutStructure,
    MulticlassStructure,
    TreeStructure,
)
from sklearn_struct.structures.chain import _kernels as kernels  # noqa: E402
from sklearn_struct.structures.dependency import _inference as tree_kernels  # noqa: E402
from sklearn_struct.utils import check_structure  # noqa: E402

PROPERTIES = settings(max_examples=25, deadline=None, derandomize=True)
seeds = st.integers(0, 2 ** 31 - 1)


def _features(rng, n_rows, n_features, sparse):
    x = rng.randn(n_rows, n_features)
    if sparse:
        x[rng.rand(n_rows, n_features) < 0.5] = 0.0
        return sp.csr_matrix(x)
    return x


def _labels_with_two_classes(rng, lengths, n_states):
    """Random labels per example, the first two tokens overall labelled 0 and 1."""
    flat = rng.randint(n_states, size=sum(lengths))
    flat[:2] = [0, 1]
    return np.split(flat, np.cumsum(lengths)[:-1])


def _all_passed(report, unsupported=()):
    skipped = {check: why for check, why in report.items()
               if why != "passed" and check not in unsupported}
    assert not skipped, skipped


# ------------------------------------------------------------------ flat samples
@PROPERTIES
@given(n_samples=st.integers(2, 4), n_features=st.integers(0, 3), n_states=st.integers(2, 4),
       sparse=st.booleans(), seed=seeds)
def test_multiclass(n_samples, n_features, n_states, sparse, seed):
    def make_instances(rng):
        y = rng.randint(n_states, size=n_samples)
        y[:2] = [0, 1]
        return _features(rng, n_samples, n_features, sparse), y

    report = check_structure(MulticlassStructure(), make_instances, random_state=seed,
                             n_instances=1)
    _all_passed(report)


# --------------------------------------------------------------------- sequences
@PROPERTIES
@given(lengths=st.lists(st.integers(1, 3), min_size=1, max_size=3).filter(
           lambda sizes: sum(sizes) >= 2),
       n_features=st.integers(0, 3), n_states=st.integers(2, 3), sparse=st.booleans(),
       start_end=st.booleans(), seed=seeds)
def test_chain(lengths, n_features, n_states, sparse, start_end, seed):
    def make_instances(rng):
        X = [_features(rng, T, n_features, sparse) for T in lengths]
        return X, _labels_with_two_classes(rng, lengths, n_states)

    report = check_structure(ChainStructure(start_end=start_end), make_instances,
                             random_state=seed, n_instances=1)
    _all_passed(report, unsupported=("check_project",))


@PROPERTIES
@given(sizes=st.lists(st.integers(1, 4), min_size=1, max_size=3).filter(
           lambda sizes: sum(sizes) >= 2),
       n_features=st.integers(0, 2), n_states=st.integers(2, 3), n_edge_types=st.integers(1, 2),
       sparse=st.booleans(), seed=seeds)
def test_tree(sizes, n_features, n_states, n_edge_types, sparse, seed):
    def make_instances(rng):
        X = []
        for n_nodes in sizes:
            order, parents = rng.permutation(n_nodes), np.full(n_nodes, -1)
            for j in range(1, n_nodes):
                if rng.rand() < 0.8:
                    parents[order[j]] = order[rng.randint(j)]
            X.append((_features(rng, n_nodes, n_features, sparse), parents,
                      rng.randint(n_edge_types, size=n_nodes)))
        return X, _labels_with_two_classes(rng, sizes, n_states)

    report = check_structure(TreeStructure(n_edge_types=n_edge_types), make_instances,
                             random_state=seed, n_instances=1)
    _all_passed(report, unsupported=("check_project",))


# ------------------------------------------------------------------------ graphs
@PROPERTIES
@given(shapes=st.lists(st.tuples(st.integers(1, 3), st.integers(1, 3)), min_size=1, max_size=3),
       n_features=st.integers(0, 2), sparse=st.booleans(), seed=seeds)
def test_matching(shapes, n_features, sparse, seed):
    def make_instances(rng):
        X, y = [], []
        for n_src, n_tgt in shapes:
            pairs = np.array(list(itertools.product(range(n_src), range(n_tgt))))
            edges = pairs[rng.rand(len(pairs)) < 0.7].reshape(-1, 2)  # possibly no edge
            chosen, used = np.zeros(len(edges), dtype=int), set()
            for e in rng.permutation(len(edges)):  # a random matching as the truth
                if rng.rand() < 0.6 and ("s", edges[e, 0]) not in used \
                        and ("t", edges[e, 1]) not in used:
                    chosen[e] = 1
                    used |= {("s", edges[e, 0]), ("t", edges[e, 1])}
            X.append((_features(rng, len(edges), n_features, sparse), edges, (n_src, n_tgt)))
            y.append(chosen)
        return X, y

    report = check_structure(MatchingStructure(), make_instances, random_state=seed,
                             n_instances=1)
    _all_passed(report, unsupported=("check_marginals", "check_dynamic_program"))


def _mincut_rays(batch, i):
    n_nodes = batch.unit_offsets[i + 1] - batch.unit_offsets[i]
    n_parts = batch.part_offsets[i + 1] - batch.part_offsets[i]
    return np.eye(n_parts)[n_nodes:]


@PROPERTIES
@given(sizes=st.lists(st.integers(1, 3), min_size=1, max_size=3),
       n_node_features=st.integers(0, 2), n_edge_features=st.integers(0, 2), seed=seeds)
def test_mincut(sizes, n_node_features, n_edge_features, seed):
    def make_instances(rng):
        X, y = [], []
        for n_nodes in sizes:
            pairs = np.array(list(itertools.combinations(range(n_nodes), 2)))
            edges = pairs[rng.rand(len(pairs)) < 0.7].reshape(-1, 2)
            X.append((rng.randn(n_nodes, n_node_features), edges,
                      rng.rand(len(edges), n_edge_features)))
            y.append(rng.randint(2, size=n_nodes))
        return X, y

    report = check_structure(MinCutStructure(), make_instances, random_state=seed,
                             polytope_rays=_mincut_rays, n_instances=1)
    _all_passed(report, unsupported=("check_marginals", "check_dynamic_program"))


# ------------------------------------------------------------- dependency trees
def _heads(n, projective, single_root):
    """Every dependency tree over ``n`` words (heads 0..n, 0 the root), by brute force."""
    trees = []
    for heads in itertools.product(range(n + 1), repeat=n):
        if any(h == m for m, h in enumerate(heads, start=1)):
            continue
        if single_root and heads.count(0) != 1:
            continue
        reaches_root = True
        for m in range(1, n + 1):
            seen, node = set(), m
            while node != 0 and reaches_root:
                reaches_root = node not in seen
                seen.add(node)
                node = heads[node - 1]
        if not reaches_root:
            continue
        arcs = [(min(h, m), max(h, m)) for m, h in enumerate(heads, start=1)]
        crossing = any(a < c < b < d for (a, b), (c, d) in itertools.permutations(arcs, 2))
        if projective and crossing:
            continue
        trees.append(np.array(heads, dtype=np.int64))
    return trees


@PROPERTIES
@given(lengths=st.lists(st.integers(1, 3), min_size=1, max_size=3), projective=st.booleans(),
       single_root=st.booleans(), seed=seeds)
def test_dependency(lengths, projective, single_root, seed):
    def make_instances(rng):
        X = [rng.randint(4, 9, size=(n, 3)) for n in lengths]
        trees = [_heads(n, projective, single_root) for n in lengths]
        y = [options[rng.randint(len(options))] for options in trees]
        return X, y

    def enumerate_outputs(batch, i):
        return np.array(_heads(int(np.diff(batch.unit_offsets)[i]), projective, single_root))

    structure = DependencyTreeStructure(projective=projective, single_root=single_root,
                                        hash_bits=8)
    report = check_structure(structure, make_instances, enumerate_outputs=enumerate_outputs,
                             random_state=seed, n_instances=1)
    _all_passed(report, unsupported=("check_project", "check_feature_bounds") + (
        () if projective else ("check_dynamic_program",)))


_TREES = {}


def _tree_array(n, projective, single_root):
    key = n, projective, single_root
    if key not in _TREES:
        _TREES[key] = np.array(_heads(n, projective, single_root))
    return _TREES[key]


@settings(max_examples=300, deadline=None, derandomize=True)  # cheap: many scales
@given(n=st.integers(1, 5), projective=st.booleans(), single_root=st.booleans(),
       log_scale=st.floats(-3.0, 4.0), cycle=st.floats(0.0, 3.0), forbidden=st.booleans(),
       seed=seeds)
def test_tree_kernels_against_enumeration(n, projective, single_root, log_scale, cycle,
                                          forbidden, seed):
    # score scales from 1e-3 (nearly uniform) to 1e4 (deterministic), optionally a dominant
    # cycle of up to 10^3 (the ill-conditioned Matrix-Tree case) and forbidden (-inf) arcs
    rng = np.random.RandomState(seed)
    trees = _tree_array(n, projective, single_root)
    S = 10.0 ** log_scale * rng.randn(n + 1, n + 1)
    if n > 1:
        members = rng.permutation(np.arange(1, n + 1))[:rng.randint(2, n + 1)]
        S[members, np.roll(members, -1)] += 10.0 ** cycle - 1.0
    if forbidden:
        keep = trees[rng.randint(len(trees))]
        mask = rng.rand(n + 1, n + 1) < 0.3
        mask[keep, np.arange(1, n + 1)] = False
        S[mask] = -np.inf
    scores = S[trees, np.arange(1, n + 1)].sum(axis=1)
    log_z = logsumexp(scores)
    expected = np.zeros_like(S)
    for weight, heads in zip(np.exp(scores - log_z), trees):
        expected[heads, np.arange(1, n + 1)] += weight
    argmax = tree_kernels.eisner if projective else tree_kernels.chu_liu_edmonds
    marginals = (tree_kernels.projective_marginals if projective
                 else tree_kernels.matrix_tree_marginals)
    before = S.copy()

    heads = np.zeros(n, dtype=np.int64)
    best = argmax(S, single_root, heads)
    assert best == pytest.approx(scores.max(), rel=1e-12, abs=1e-9)
    assert any((heads == tree).all() for tree in trees)
    assert S[heads, np.arange(1, n + 1)].sum() == pytest.approx(best, rel=1e-12, abs=1e-9)
    mu = np.full_like(S, np.nan)
    assert marginals(S, single_root, mu) == pytest.approx(log_z, rel=1e-12, abs=1e-9)
    np.testing.assert_allclose(mu, expected, atol=1e-9)
    np.testing.assert_array_equal(S, before)  # nothing mutated


# ---------------------------------------------------------- the numba chain kernels
def _paths(T, K):
    return np.array(list(itertools.product(range(K), repeat=T)), dtype=np.int64).reshape(K ** T, T)


def _path_scores(paths, node, transition, start, end):
    T = node.shape[0]
    if T == 0:
        return np.zeros(1)
    scores = node[np.arange(T), paths].sum(axis=1) + start[paths[:, 0]] + end[paths[:, -1]]
    for t in range(1, T):
        scores += transition[paths[:, t - 1], paths[:, t]]
    return scores


@PROPERTIES
@given(T=st.integers(0, 3), K=st.integers(1, 3), scale=st.sampled_from([1.0, 30.0, 1e3]),
       start_end=st.booleans(), seed=seeds)
def test_chain_kernels_against_enumeration(T, K, scale, start_end, seed):
    rng = np.random.RandomState(seed)
    node, transition = scale * rng.randn(T, K), scale * rng.randn(K, K)
    start, end = (scale * rng.randn(K), scale * rng.randn(K)) if start_end else (np.zeros(K),) * 2
    inputs = [a.copy() for a in (node, transition, start, end)]
    paths = _paths(T, K)
    scores = _path_scores(paths, node, transition, start, end)
    log_z = logsumexp(scores)
    p = np.exp(scores - log_z)

    assert kernels.chain_log_partition(node, transition, start, end) == pytest.approx(
        log_z, rel=1e-9, abs=1e-9)
    labels = np.full(T, -1, dtype=np.int64)
    best = kernels.chain_viterbi(node, transition, start, end, labels)
    assert best == pytest.approx(scores.max(), rel=1e-12, abs=1e-9)
    if T:
        assert _path_scores(labels[None], node, transition, start, end)[0] == pytest.approx(
            scores.max(), rel=1e-12, abs=1e-9)

    node_mu, trans_mu = np.full((T, K), np.nan), np.full((K, K), np.nan)
    value = kernels.chain_forward_backward(node, transition, start, end, node_mu, trans_mu)
    assert value == pytest.approx(log_z, rel=1e-9, abs=1e-9)
    expected_node = np.array([[p[paths[:, t] == k].sum() for k in range(K)] for t in range(T)])
    expected_trans = np.zeros((K, K))
    for t in range(1, T):
        np.add.at(expected_trans, (paths[:, t - 1], paths[:, t]), p)
    np.testing.assert_allclose(node_mu, expected_node.reshape(T, K), atol=1e-9)
    np.testing.assert_allclose(trans_mu, expected_trans, atol=1e-9)
    for before, after in zip(inputs, (node, transition, start, end)):
        np.testing.assert_array_equal(before, after)  # nothing mutated


# ---------------------------------------------------------------- weighted CFGs
@PROPERTIES
@given(lengths=st.lists(st.integers(1, 3), min_size=1, max_size=3), seed=seeds)
def test_weighted_cfg(lengths, seed):
    """The toy grammar of test_cfg_structure; its derivations are enumerated there."""
    import test_cfg_structure as cfg

    def make_instances(rng):
        X, y = [], []
        for n in lengths:
            trees = []
            while not trees:  # a tag sequence that the grammar derives
                tags = list(rng.choice(["a", "b"], size=n))
                words = [f"w{rng.randint(5)}" for _ in range(n)]
                trees = list(cfg.derivations(words, tags))
            X.append(list(zip(words, tags)))
            y.append(trees[rng.randint(len(trees))])
            cfg.SENTENCES[2 * n - 1] = X[-1]  # the span loss reads the spans, not the words
        return X, y

    report = check_structure(cfg.STRUCTURE, make_instances,
                             enumerate_outputs=cfg.enumerate_outputs, loss=cfg.span_loss,
                             random_state=seed, n_instances=1)
    _all_passed(report, unsupported=("check_project", "check_feature_bounds"))
