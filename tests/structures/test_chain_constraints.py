"""Constrained chains: allowed transitions, first and last labels, and the IOB schemes.

References: every labelling of tiny chains enumerated by brute force (only the allowed
ones count), conlleval's own reading of IOB1/IOB2 (``iob1_to_iob2``/``iob2_to_iob1``),
hand-written BIOES cases, and ``check_structure``.
"""

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

from sklearn_struct import EGCRF, EGStructuredSVM, StructuredPerceptron
from sklearn_struct.datasets import chunk_constraints, iob1_to_iob2, iob2_to_iob1
from sklearn_struct.structures import ChainStructure
from sklearn_struct.utils import check_structure


# ------------------------------------------------------------------ schemes
def _valid(constraints, labels, sequence):
    """Whether a label sequence obeys masks over ``labels``."""
    index = [labels.index(label) for label in sequence]
    transitions = constraints["allowed_transitions"]
    return bool(constraints["allowed_start"][index[0]] and constraints["allowed_end"][index[-1]]
                and all(transitions[a, b] for a, b in zip(index, index[1:])))


IOB_LABELS = ["B-LOC", "B-PER", "I-LOC", "I-PER", "O"]


@pytest.mark.parametrize("scheme, canonical", [("IOB2", iob1_to_iob2), ("BIO", iob1_to_iob2),
                                               ("IOB1", iob2_to_iob1)])
def test_iob_schemes_match_conlleval_reading(scheme, canonical):
    # a sequence is valid in a scheme exactly when rewriting its chunks (as conlleval reads
    # them) in that scheme leaves it unchanged
    constraints = chunk_constraints(IOB_LABELS, scheme)
    n_valid = 0
    for length in (1, 2, 3, 4):
        for sequence in itertools.product(IOB_LABELS, repeat=length):
            expected = canonical(list(sequence)) == list(sequence)
            assert _valid(constraints, IOB_LABELS, sequence) == expected, sequence
            n_valid += expected
    assert 0 < n_valid < sum(5 ** n for n in (1, 2, 3, 4))


@pytest.mark.parametrize("scheme, valid, invalid", [
    ("IOB2",
     [["B-PER", "I-PER", "O"], ["B-PER", "B-PER"], ["O", "B-LOC", "I-LOC"], ["B-LOC", "B-PER"]],
     [["I-PER"], ["O", "I-PER"], ["B-PER", "I-LOC"], ["I-LOC", "I-PER"]]),
    ("IOB1",
     [["I-PER", "I-PER", "O"], ["I-PER", "B-PER"], ["I-LOC", "I-PER"], ["O", "I-LOC"]],
     [["B-PER"], ["O", "B-PER"], ["I-LOC", "B-PER"], ["B-LOC", "B-PER"]]),
])
def test_iob_hand_written_cases(scheme, valid, invalid):
    constraints = chunk_constraints(IOB_LABELS, scheme)
    for sequence in valid:
        assert _valid(constraints, IOB_LABELS, sequence), sequence
    for sequence in invalid:
        assert not _valid(constraints, IOB_LABELS, sequence), sequence


BIOES_LABELS = ["B-PER", "E-LOC", "E-PER", "I-PER", "O", "S-LOC", "S-PER", "B-LOC"]


@pytest.mark.parametrize("sequence, expected", [
    (["S-PER"], True),
    (["O"], True),
    (["B-PER", "E-PER"], True),
    (["B-PER", "I-PER", "I-PER", "E-PER", "S-LOC", "O"], True),
    (["S-PER", "B-LOC", "E-LOC"], True),
    (["B-PER"], False),                # a chunk left open at the end
    (["I-PER", "E-PER"], False),       # continued without being opened
    (["E-PER"], False),
    (["B-PER", "E-LOC"], False),       # closed with another type
    (["B-PER", "O", "E-PER"], False),  # interrupted
    (["B-PER", "S-PER"], False),
    (["O", "I-PER", "E-PER"], False),
    (["B-PER", "I-PER"], False),
])
def test_bioes_hand_written_cases(sequence, expected):
    assert _valid(chunk_constraints(BIOES_LABELS, "BIOES"), BIOES_LABELS, sequence) == expected


def test_chunk_constraints_bad_labels():
    with pytest.raises(ValueError, match="label 1 is 'E-PER'; IOB2 labels are 'O', 'B-<type>'"):
        chunk_constraints(["B-PER", "E-PER"], "IOB2")
    with pytest.raises(ValueError, match="label 0 is 'PER'"):
        chunk_constraints(["PER", "O"], "BIOES")
    with pytest.raises(TypeError, match=r"label 0 \(1\) must be a str"):
        chunk_constraints([1, 2], "IOB1")
    with pytest.raises(ValueError, match="scheme must be one of"):
        chunk_constraints(["O"], "IOBES")


# ------------------------------------------------------------- brute force
def _masked_blocks(scores, lengths, K, start_end, masks):
    """Per-sequence node, transition, start, end with -inf where the masks forbid."""
    transitions, start_mask, end_mask = masks
    p, blocks = 0, []
    for T in lengths:
        node = scores[p:p + T * K].reshape(T, K)
        transition = scores[p + T * K:p + T * K + K * K].reshape(K, K)
        p += T * K + K * K
        start = end = np.zeros(K)
        if start_end:
            start, end = scores[p:p + K], scores[p + K:p + 2 * K]
            p += 2 * K
        blocks.append((node, np.where(transitions, transition, -np.inf),
                       np.where(start_mask, start, -np.inf), np.where(end_mask, end, -np.inf)))
    return blocks


def _allowed_labellings(T, K, masks):
    transitions, start, end = masks
    return np.array([y for y in itertools.product(range(K), repeat=T)
                     if start[y[0]] and end[y[-1]]
                     and all(transitions[a, b] for a, b in zip(y, y[1:]))]).reshape(-1, T)


def _reference(node, transition, start, end, Ys):
    """log Z, node marginals, expected transition counts and the best labelling over Ys."""
    T, K = node.shape
    scores = (start[Ys[:, 0]] + end[Ys[:, -1]] + node[np.arange(T), Ys].sum(axis=1)
              + transition[Ys[:, :-1], Ys[:, 1:]].sum(axis=1))
    log_z = logsumexp(scores)
    p = np.exp(scores - log_z)
    node_marginals = np.zeros((T, K))
    counts = np.zeros((K, K))
    for t in range(T):
        np.add.at(node_marginals[t], Ys[:, t], p)
    for t in range(T - 1):
        np.add.at(counts, (Ys[:, t], Ys[:, t + 1]), p)
    return log_z, node_marginals, counts, Ys[np.argmax(scores)]


def _random_masks(rng, K, with_start_end):
    while True:
        transitions = rng.rand(K, K) < 0.6
        start = rng.rand(K) < 0.6 if with_start_end else np.ones(K, dtype=bool)
        end = rng.rand(K) < 0.6 if with_start_end else np.ones(K, dtype=bool)
        if all(len(_allowed_labellings(T, K, (transitions, start, end))) for T in (1, 2, 3, 4)):
            return transitions, start, end


@pytest.mark.parametrize("start_end", [True, False])
@pytest.mark.parametrize("with_start_end", [True, False])
@pytest.mark.parametrize("scale", [1.0, 1e4])
@pytest.mark.parametrize("seed", range(3))
def test_constrained_inference_matches_brute_force(start_end, with_start_end, scale, seed):
    rng = np.random.RandomState(seed)
    K, lengths = 3, (1, 2, 3, 4)
    masks = _random_masks(rng, K, with_start_end)
    structure = ChainStructure(start_end=start_end, allowed_transitions=masks[0],
                               allowed_start=masks[1] if with_start_end else None,
                               allowed_end=masks[2] if with_start_end else None)
    batch = structure.make_batch([rng.randn(T, 2) for T in lengths], n_states=K)
    scores = scale * rng.randn(batch.part_offsets[-1])
    Y_true = np.concatenate([_allowed_labellings(T, K, masks)[0] for T in lengths])

    mu, log_z = structure.marginals(batch, scores)
    labels = structure.argmax(batch, scores)
    augmented = structure.loss_augmented_argmax(batch, scores, Y_true)
    losses = structure.part_losses(batch, Y_true)
    assert np.isfinite(mu).all() and np.isfinite(log_z).all()
    np.testing.assert_allclose(structure.log_partition(batch, scores), log_z,
                               rtol=1e-12, atol=1e-9 * scale)
    edges = structure.edge_marginals(batch, scores)
    blocks = _masked_blocks(scores, lengths, K, start_end, masks)
    aug_blocks = _masked_blocks(scores + losses, lengths, K, start_end, masks)
    p = 0
    for i, T in enumerate(lengths):
        Ys = _allowed_labellings(T, K, masks)
        ref_log_z, ref_node, ref_counts, ref_best = _reference(*blocks[i], Ys)
        tol = dict(rtol=1e-10, atol=1e-10 * scale)
        np.testing.assert_allclose(log_z[i], ref_log_z, **tol)
        node = mu[p:p + T * K].reshape(T, K)
        counts = mu[p + T * K:p + T * K + K * K].reshape(K, K)
        np.testing.assert_allclose(node, ref_node, **tol)
        np.testing.assert_allclose(counts, ref_counts, **tol)
        np.testing.assert_allclose(edges[i].sum(axis=0), ref_counts, **tol)
        # impossible labels and transitions have probability exactly zero
        assert np.all(node[:, ~np.isin(np.arange(K), Ys)] == 0.0) if T > 0 else True
        assert np.all(counts[~masks[0]] == 0.0)
        assert np.all(node[0][~masks[1]] == 0.0) and np.all(node[-1][~masks[2]] == 0.0)
        if start_end:
            first = p + T * K + K * K
            np.testing.assert_array_equal(mu[first:first + K], node[0])
            np.testing.assert_array_equal(mu[first + K:first + 2 * K], node[-1])
        units = slice(batch.unit_offsets[i], batch.unit_offsets[i + 1])
        np.testing.assert_array_equal(labels[units], ref_best)
        np.testing.assert_array_equal(augmented[units], _reference(*aug_blocks[i], Ys)[3])
        p = batch.part_offsets[i + 1]
    structure.check_outputs(batch, labels)  # the decoded labellings are allowed


def test_no_nan_when_a_label_cannot_follow_or_be_followed():
    # label 2 can neither follow nor be followed by anything: a row and a column of -inf
    transitions = np.array([[True, True, False], [True, True, False], [False, False, False]])
    structure = ChainStructure(allowed_transitions=transitions)
    batch = structure.make_batch([np.ones((1, 1)), np.ones((3, 1))], n_states=3)
    scores = np.random.RandomState(0).randn(batch.part_offsets[-1])
    mu, log_z = structure.marginals(batch, scores)
    assert np.isfinite(mu).all() and np.isfinite(log_z).all()
    assert mu[2] > 0  # alone, label 2 is allowed
    assert np.all(mu[3:].reshape(-1)[[2, 5, 8]] == 0.0)  # not in a sequence of three
    assert 2 not in structure.argmax(batch, 100.0 * np.abs(scores))[1:]


def test_check_outputs_names_the_forbidden_labelling():
    constraints = chunk_constraints(["B-X", "I-X", "O"], "IOB2")
    structure = ChainStructure(**constraints)
    batch = structure.make_batch([np.ones((2, 1)), np.ones((3, 1))], n_states=3)
    structure.check_outputs(batch, [0, 1, 2, 0, 1])
    with pytest.raises(ValueError, match="sequence 1, position 2: label 1 cannot follow label 2"):
        structure.check_outputs(batch, [0, 1, 0, 2, 1])
    with pytest.raises(ValueError, match="sequence 0, position 0: label 1 cannot come first"):
        structure.check_outputs(batch, [1, 1, 0, 1, 1])
    ends = ChainStructure(allowed_end=np.array([False, True, True]))
    with pytest.raises(ValueError, match="sequence 0, position 1: label 0 cannot come last"):
        ends.check_outputs(batch, [0, 0, 0, 1, 1])


def test_bad_constraints():
    X = [np.ones((2, 1))]
    with pytest.raises(ValueError, match=r"allowed_transitions has shape \(2, 2\) but there "
                                         "are 3 labels"):
        ChainStructure(allowed_transitions=np.ones((2, 2), dtype=bool)).make_batch(X, 3)
    with pytest.raises(TypeError, match="allowed_start must be an array of booleans"):
        ChainStructure(allowed_start=[1, 0, 1]).make_batch(X, 3)
    with pytest.raises(ValueError, match="names a tagging scheme, which needs the label names"):
        ChainStructure(allowed_transitions="IOB2").make_batch(X, 3)
    with pytest.raises(ValueError, match="leave allowed_start and allowed_end as None"):
        ChainStructure(allowed_transitions="IOB2", allowed_end=np.ones(3, bool)
                       ).output_space().for_classes(["B-X", "I-X", "O"])
    with pytest.raises(ValueError, match=r"allowed_transitions='BIOES'\): label 1 is 'L-X'"):
        ChainStructure(allowed_transitions="BIOES").output_space().for_classes(["B-X", "L-X"])
    # label 1 only, which cannot follow itself: no labelling of two tokens
    impossible = ChainStructure(allowed_transitions=np.array([[True, False], [False, False]]),
                                allowed_start=np.array([False, True]))
    with pytest.raises(ValueError, match="sequence 1 has 2 tokens, and no labelling"):
        impossible.make_batch([np.ones((1, 1)), np.ones((2, 1))], 2)


def test_scheme_resolution_and_training_structure():
    structure = ChainStructure(allowed_transitions="IOB2")
    resolved = structure.output_space().for_classes(np.array(["B-X", "I-X", "O"]))
    assert structure.allowed_transitions == "IOB2"  # not modified
    np.testing.assert_array_equal(resolved.allowed_start, [True, False, True])
    unconstrained = resolved.output_space().training_structure()
    assert unconstrained.allowed_transitions is None and unconstrained.allowed_start is None
    plain = ChainStructure().output_space().for_classes([0, 1])
    assert plain.output_space().training_structure().allowed_end is None
    kept = ChainStructure(allowed_transitions="IOB2", constrain_training=True
                          ).output_space().for_classes(["B-X", "I-X", "O"])
    assert kept.output_space().training_structure() is kept


def iob2_instances(rng):
    """Three sequences of valid IOB2 tags over B-X, I-X, O (27 labellings at most)."""
    third = [["B-X", "I-X", "O"], ["O", "B-X", "I-X"]][rng.randint(2)]
    y = [["O"], ["B-X", "I-X"], third]
    return [rng.randn(len(labels), 2) for labels in y], y


def bioes_instances(rng):
    third = [["O", "B-X", "E-X"], ["S-X", "O", "S-X"]][rng.randint(2)]
    y = [["S-X"], ["B-X", "E-X"], third]
    return [rng.randn(len(labels), 2) for labels in y], y


@pytest.mark.parametrize("start_end, scheme, labels, instances", [
    (True, "IOB2", ["B-X", "I-X", "O"], iob2_instances),
    (False, "BIOES", ["B-X", "E-X", "O", "S-X"], bioes_instances),
])
def test_check_structure_on_constrained_chain(start_end, scheme, labels, instances):
    structure = ChainStructure(start_end=start_end, **chunk_constraints(labels, scheme))
    report = check_structure(structure, instances)
    assert set(report.values()) <= {"passed", "project unsupported"}, report


# ---------------------------------------------------------------- estimators
def _tagged_sequences(rng, n_sequences, first_looks_inside=False):
    """IOB2-tagged sequences with one chunk each; token features point at the tag.  With
    ``first_looks_inside`` the first token resembles an I-X, so that a model without start
    parts starts some sentences with I-X unless decoding is constrained."""
    X, y = [], []
    for _ in range(n_sequences):
        T = rng.randint(2, 6)
        labels = ["O"] * T
        start = rng.randint(0, T - 1)
        labels[start:start + 2] = ["B-X", "I-X"]
        features = rng.randn(T, 3) * 0.5
        for t, label in enumerate(labels):
            features[t, ["B-X", "I-X", "O"].index(label)] += 1.0
        if first_looks_inside:
            features[0, 1] += 2.0
        X.append(features)
        y.append(labels)
    return X, y


@pytest.mark.parametrize("Estimator, params", [
    (EGCRF, dict(C=10.0)), (EGStructuredSVM, dict(C=1.0, tol=0.05)),
    (StructuredPerceptron, dict(max_iter=5)),
])
def test_estimators_predict_only_valid_sequences(Estimator, params):
    rng = np.random.RandomState(0)
    X, y = _tagged_sequences(rng, 40)
    X_test, _ = _tagged_sequences(rng, 60, first_looks_inside=True)
    constraints = chunk_constraints(["B-X", "I-X", "O"], "IOB2")

    def n_invalid(predictions):
        return sum(not _valid(constraints, ["B-X", "I-X", "O"], list(p)) for p in predictions)

    kwargs = dict(params, random_state=0)
    plain = Estimator(structure=ChainStructure(start_end=False), **kwargs).fit(X, y)
    model = Estimator(structure=ChainStructure(start_end=False, allowed_transitions="IOB2"),
                      **kwargs).fit(X, y)
    assert n_invalid(plain.predict(X_test)) > 0  # the test exercises the constraint
    assert n_invalid(model.predict(X_test)) == 0
    # training is unconstrained by default: the same weights as the plain chain
    np.testing.assert_array_equal(model.weights_, plain.weights_)
    np.testing.assert_array_equal(model.structure_.allowed_start, [True, False, True])
    if Estimator is EGCRF:
        marginals = model.predict_marginals(X_test)
        assert all(m[0, 1] == 0.0 for m in marginals)  # p(first tag is I-X) = 0 exactly
        assert all(np.all(np.isfinite(m)) for m in marginals)


def test_constrained_training_and_its_errors():
    rng = np.random.RandomState(1)
    X, y = _tagged_sequences(rng, 20)
    structure = ChainStructure(allowed_transitions="IOB2", constrain_training=True)
    crf = EGCRF(structure=structure, C=10.0, random_state=0).fit(X, y)
    plain = EGCRF(C=10.0, random_state=0).fit(X, y)
    assert not np.allclose(crf.weights_, plain.weights_)

    def constrained_objective(w):  # 1/2 ||w||^2 + C sum_i -log p(y_i | x_i) over valid paths
        resolved = crf.structure_
        batch = resolved.make_batch(X, n_states=3)
        Y = np.concatenate([[["B-X", "I-X", "O"].index(label) for label in labels]
                            for labels in y])
        scores = resolved.part_scores(batch, w)
        log_likelihood = resolved.encode(batch, Y) @ scores - resolved.log_partition(
            batch, scores).sum()
        return 0.5 * w @ w - 10.0 * log_likelihood

    # the constrained CRF minimises that objective, the plain one does not
    assert constrained_objective(crf.weights_) < constrained_objective(plain.weights_)
    assert constrained_objective(crf.weights_) == pytest.approx(crf.primal_objective_,
                                                                rel=1e-10)
    y_bad = [list(labels) for labels in y]
    y_bad[3][0] = "I-X"
    with pytest.raises(ValueError, match="sequence 3, position 0: label 1 cannot come first"):
        EGCRF(structure=structure).fit(X, y_bad)
    with pytest.raises(ValueError, match="IOB1 labels are 'O', 'B-<type>', 'I-<type>'"):
        EGCRF(structure=ChainStructure(allowed_transitions="IOB1")).fit(
            X, [["Z" if label == "O" else label for label in labels] for labels in y])
