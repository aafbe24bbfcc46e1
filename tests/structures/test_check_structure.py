"""The conformance suite passes the built-in structures and catches broken ones."""

import numpy as np
import pytest
import scipy.sparse as sp
from numba import njit

from sklearn_struct.structures import (
    ChainStructure,
    KernelOps,
    MatchingStructure,
    MinCutStructure,
    MulticlassStructure,
)
from sklearn_struct.structures._token_kernels import (
    chain_batch_marginals,
    token_add_features,
    token_argmax,
    token_encode,
    token_part_scores,
)
from sklearn_struct.utils import check_structure
from sklearn_struct.utils.structure_checks import (
    check_argmax,
    check_marginals,
    check_part_losses,
    check_project,
)

# ------------------------------------------------------------ tiny data sets


def chain_instances(rng):
    """Three sequences of 1, 2 and 3 tokens, labels of three kinds (27 outputs at most)."""
    lengths = (1, 2, 3)
    X = [rng.randn(length, 2) for length in lengths]
    y = [rng.choice(["B", "I", "O"], size=length) for length in lengths[:-1]]
    y.append(rng.permutation(["B", "I", "O"]))  # every label occurs
    return X, y


def sparse_chain_instances(rng):
    """Sequences given as CSR matrices (the suite compares them with dense copies)."""
    X, y = chain_instances(rng)
    return [sp.csr_matrix(x) for x in X], y


def multiclass_instances(rng):
    return rng.randn(3, 2), rng.permutation(["cat", "dog", "eel"])


def matching_instances(rng):
    """A complete 2 x 2 graph, a path with an isolated target, and a 1 x 2 star."""
    full = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
    path = np.array([[0, 0], [1, 0], [1, 1]])
    star = np.array([[0, 0], [0, 1]])
    X = [(rng.randn(4, 2), full), (rng.randn(3, 2), path, (2, 3)), (rng.randn(2, 2), star)]
    y = [[1, 0, 0, 1] if rng.rand() < 0.5 else [0, 1, 1, 0], [0, 1, 0], [0, 0]]
    return X, y


def mincut_instances(rng):
    """A path and a triangle of three nodes: eight labellings each."""
    path = np.array([[0, 1], [1, 2]])
    triangle = np.array([[0, 1], [1, 2], [0, 2]])
    X = [(rng.randn(3, 2), path, rng.rand(2, 1)), (rng.randn(3, 2), triangle, rng.rand(3, 1))]
    y = [rng.randint(2, size=3) for _ in X]
    return X, y


def mincut_rays(batch, i):
    """The relaxed min-cut polytope bounds the edge parts only from below."""
    n_nodes = batch.unit_offsets[i + 1] - batch.unit_offsets[i]
    n_parts = batch.part_offsets[i + 1] - batch.part_offsets[i]
    return np.eye(n_parts)[n_nodes:]


LOSS_WEIGHTS = np.array([1.0, 2.0, 0.5])


def weighted_token_loss(Y_true, Y):
    """The chain's declared loss with ``loss_weights``: the cost of a token's true label."""
    return float(np.sum(LOSS_WEIGHTS[Y_true] * (Y_true != Y)))


BUILT_IN = {
    "chain": (ChainStructure(), chain_instances, {}),
    "chain-no-start-end": (ChainStructure(start_end=False), chain_instances, {}),
    "chain-loss-weights": (ChainStructure(loss_weights=LOSS_WEIGHTS), chain_instances,
                           {"loss": weighted_token_loss}),
    "chain-sparse-input": (ChainStructure(), sparse_chain_instances, {}),
    "multiclass": (MulticlassStructure(), multiclass_instances, {}),
    "matching": (MatchingStructure(), matching_instances, {}),
    "mincut": (MinCutStructure(), mincut_instances, {"polytope_rays": mincut_rays}),
}


@pytest.mark.parametrize("name", list(BUILT_IN))
def test_built_in_structures_conform(name):
    structure, make_instances, options = BUILT_IN[name]
    report = check_structure(structure, make_instances, **options)
    for op, check in (("argmax", "check_argmax"), ("marginals", "check_marginals"),
                      ("project", "check_project")):
        assert (report[check] == "passed") == structure.supports(op), (check, report[check])
    expected = "no kernel_ops" if structure.kernel_ops is None else "passed"
    assert report["check_kernel_ops"] == expected
    assert report["check_input_variants"] == "passed"
    assert report["check_no_mutation"] == "passed"


def test_individual_checks_and_skips():
    rng = np.random.RandomState(0)
    X, y = multiclass_instances(rng)
    assert check_argmax(MulticlassStructure(), X, y) is None
    X, y = matching_instances(rng)
    assert check_marginals(MatchingStructure(), X, y) == "marginals unsupported"
    X, y = chain_instances(rng)
    assert check_project(ChainStructure(), X, y) == "project unsupported"


def test_declared_loss_option():
    # costs (2, 1): the loss is a weighted Hamming loss, not the default one
    structure = MatchingStructure(false_positive_cost=2.0, false_negative_cost=1.0)
    X, y = matching_instances(np.random.RandomState(1))
    with pytest.raises(AssertionError, match="check_part_losses failed for MatchingStructure"):
        check_part_losses(structure, X, y)

    def weighted_hamming(Y_true, Y):
        return 2.0 * np.sum((Y == 1) & (Y_true == 0)) + 1.0 * np.sum((Y == 0) & (Y_true == 1))

    assert check_part_losses(structure, X, y, loss=weighted_hamming) is None


def test_enumerate_outputs_option():
    # the caller lists the outputs: here the matchings of each graph, by brute force
    structure = MatchingStructure()
    X, y = matching_instances(np.random.RandomState(2))

    def matchings(batch, i):
        edges = batch.edges[batch.unit_offsets[i]:batch.unit_offsets[i + 1]]
        for bits in np.ndindex(*(2,) * len(edges)):
            chosen = edges[np.array(bits, dtype=bool)]
            if len(set(chosen[:, 0])) == len(set(chosen[:, 1])) == len(chosen):
                yield bits

    assert check_argmax(structure, X, y, enumerate_outputs=matchings) is None
    with pytest.raises(AssertionError, match="check_argmax.*not one of its enumerated outputs"):
        check_argmax(structure, X, y, enumerate_outputs=lambda batch, i: [y[i]])


def test_bad_arguments():
    with pytest.raises(TypeError, match="BaseStructure"):
        check_structure(object(), multiclass_instances)
    with pytest.raises(TypeError, match="make_instances"):
        check_structure(MulticlassStructure(), None)


# ---------------------------------------------------------- broken structures


class ArgminMulticlass(MulticlassStructure):
    def argmax(self, batch, scores):
        return np.asarray(scores).reshape(batch.n_samples, batch.n_states).argmin(axis=1)


class OffMarginalsChain(ChainStructure):
    def marginals(self, batch, scores):
        mu, log_z = super().marginals(batch, scores)
        return 1.01 * mu, log_z


class NonAdjointMulticlass(MulticlassStructure):
    def expected_features(self, batch, z, sample_weight=None):
        return 1.5 * super().expected_features(batch, z, sample_weight)


class RecordingMulticlass(MulticlassStructure):
    """Counts its projections on itself: a structure must stay configuration only."""

    def project(self, batch, v, warm_start=None):
        self.n_projections_ = vars(self).get("n_projections_", 0) + 1
        return super().project(batch, v, warm_start)


class InPlaceMulticlass(MulticlassStructure):
    """Shifts the caller's scores in place."""

    def marginals(self, batch, scores):
        scores = np.asarray(scores)
        scores -= scores.max()
        return super().marginals(batch, scores)


class OffsetChain(ChainStructure):
    def loss_offsets(self, batch, Y):
        return np.ones(batch.n_samples)


class ClippingMulticlass(MulticlassStructure):
    """Projects onto the cube instead of the simplex."""

    def project(self, batch, v, warm_start=None):
        return np.clip(np.asarray(v, dtype=float), 0.0, 1.0)


class SortedTakeChain(ChainStructure):
    """Ignores the order of the indices."""

    def take(self, batch, indices):
        indices = np.asarray(indices)
        if indices.dtype != bool:
            indices = np.sort(indices % batch.n_samples)
        return super().take(batch, indices)


class SparseDriftMulticlass(MulticlassStructure):
    def part_scores(self, batch, w):
        return super().part_scores(batch, w) + (1e-3 if sp.issparse(batch.X) else 0.0)


@njit
def uniform_marginals(data, i, theta, mu):
    for r in range(theta.shape[0]):
        mu[r] = 1.0 / theta.shape[0]
    return np.log(theta.shape[0])


class WrongKernelChain(ChainStructure):
    """Its batch marginals (the chain's own loop) are right, its per-example kernel ignores
    the scores."""

    kernel_ops = KernelOps(part_scores=token_part_scores, add_features=token_add_features,
                           marginals=uniform_marginals, argmax=token_argmax,
                           encode=token_encode, batch_marginals=chain_batch_marginals)


@njit
def first_part_scores_at(data, i, w, scale, parts, out, scratch):
    """Scores every listed part as the first one."""
    token_part_scores(data, i, w, scale, scratch)
    for j in range(parts.shape[0]):
        out[j] = scratch[parts[0]]


@njit
def dropping_add_features_at(data, i, parts, coef, scale, w, scratch):
    """Leaves out the last listed part."""
    for j in range(parts.shape[0] - 1):
        scratch[parts[j]] += coef[j]
    token_add_features(data, i, scratch, scale, w)
    for j in range(parts.shape[0]):
        scratch[parts[j]] = 0.0


def replaced(ops, **changes):
    """``ops`` with some operations given anew."""
    return KernelOps(**{**{name: ops.functions[name] for name in ops.given}, **changes})


class WrongPartialScoresChain(ChainStructure):
    kernel_ops = replaced(ChainStructure.kernel_ops, part_scores_at=first_part_scores_at)


class WrongPartialFeaturesChain(ChainStructure):
    kernel_ops = replaced(ChainStructure.kernel_ops, add_features_at=dropping_add_features_at)


BROKEN = [
    (ArgminMulticlass(), multiclass_instances, "check_argmax", "argmax"),
    (OffMarginalsChain(), chain_instances, "check_marginals", "marginals of example"),
    (NonAdjointMulticlass(), multiclass_instances, "check_expected_features", "F z"),
    (RecordingMulticlass(), multiclass_instances, "check_no_mutation", "n_projections_"),
    (InPlaceMulticlass(), multiclass_instances, "check_no_mutation",
     "marginals modified its arguments"),
    (OffsetChain(), chain_instances, "check_part_losses", "true output sum to 1.0"),
    (ClippingMulticlass(), multiclass_instances, "check_project", "outside the polytope"),
    (SortedTakeChain(), chain_instances, "check_take", "reversed order"),
    (SparseDriftMulticlass(), multiclass_instances, "check_input_variants",
     "sparse input: part_scores"),
    (WrongKernelChain(), chain_instances, "check_kernel_ops", "kernel log-partition"),
    (WrongPartialScoresChain(), chain_instances, "check_kernel_ops", "part_scores_at of example"),
    (WrongPartialFeaturesChain(), chain_instances, "check_kernel_ops",
     "add_features_at of example"),
]


@pytest.mark.parametrize("structure, make_instances, check, message", BROKEN,
                         ids=[type(case[0]).__name__ for case in BROKEN])
def test_broken_structures_are_caught(structure, make_instances, check, message):
    with pytest.raises(AssertionError) as error:
        check_structure(structure, make_instances, n_instances=1)
    text = str(error.value)
    assert text.startswith(f"{check} failed for {structure!r}"), text
    assert message in text, text
