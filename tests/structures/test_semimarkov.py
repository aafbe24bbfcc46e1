"""The semi-Markov chain against enumeration of every segmentation, and in the learners."""

import warnings

import numpy as np
import pytest
from scipy.special import logsumexp
from sklearn.exceptions import ConvergenceWarning

from sklearn_struct import EGCRF, EGStructuredSVM, StructuredPerceptron
from sklearn_struct.structures import SemiMarkovStructure
from sklearn_struct.utils import check_structure

SCHEMES = {
    "IOB2": (["B-A", "B-B", "I-A", "I-B", "O"],
             [["B-A"], ["B-A", "I-A", "B-A"], ["O", "B-B", "I-B"]]),
    "IOB1": (["B-A", "I-A", "I-B", "O"],
             [["I-A"], ["I-A", "I-A", "B-A"], ["O", "I-B", "I-B"]]),
    "BIOES": (["B-A", "E-A", "O", "S-A", "S-B"],
              [["S-A"], ["B-A", "E-A", "S-B"], ["O", "S-A", "O"]]),
}


def _segmentations(n, segment_labels, max_length, outside):
    """Every segmentation of ``n`` tokens: lists of ``(label, length)``."""
    if n == 0:
        yield []
        return
    for label in segment_labels:
        for length in range(1, (1 if label == outside else max_length) + 1):
            if length <= n:
                for rest in _segmentations(n - length, segment_labels, max_length, outside):
                    yield [(label, length)] + rest


def _render(segmentation, scheme):
    tags, previous = [], None
    for label, length in segmentation:
        if label == "O":
            tags.append("O")
        elif scheme == "BIOES":
            tags += [f"S-{label}"] if length == 1 else (
                [f"B-{label}"] + [f"I-{label}"] * (length - 2) + [f"E-{label}"])
        else:
            first = "B" if scheme == "IOB2" or previous == label else "I"
            tags += [f"{first}-{label}"] + [f"I-{label}"] * (length - 1)
        previous = label
    return tags


def _read(tags):
    """The segmentation that tags mark: a segment starts at B-, S- and O, after E-, S- and
    O, and where the type changes."""
    segments = []
    for position, tag in enumerate(tags):
        label = tag[2:] or "O"
        previous = tags[position - 1] if position else "O"
        if (tag[0] in "BSO" or previous[0] in "ESO" or previous[2:] != tag[2:]):
            segments.append([label, 0])
        segments[-1][1] += 1
    return [tuple(segment) for segment in segments]


def _enumerate(structure, scheme, classes):
    index = {tag: k for k, tag in enumerate(classes)}
    types = sorted({tag[2:] for tag in classes if tag != "O"}) + ["O"]

    def enumerate_outputs(batch, i):
        n = int(batch.unit_offsets[i + 1] - batch.unit_offsets[i])
        outputs = []
        for segmentation in _segmentations(n, types, structure.max_length, "O"):
            tags = _render(segmentation, scheme)  # kept if the classes write it unambiguously
            if set(tags) <= set(classes) and _read(tags) == segmentation:
                outputs.append([index[tag] for tag in tags])
        return np.array(outputs)
    return enumerate_outputs


def _segment_loss(classes):
    def spans(Y):
        segments, start = set(), 0
        for label, length in _read([classes[k] for k in Y]):
            segments.add((label, start, length))
            start += length
        return segments

    def loss(Y_true, Y):
        return len(spans(Y) - spans(Y_true))
    return loss


def _token_loss(classes, ends_marked):
    """Tokens whose segment label, start or (when the tags mark them) end differ."""
    def units(Y):
        marks = []
        for label, length in _read([classes[k] for k in Y]):
            marks += [(label, t == 0, ends_marked and t == length - 1) for t in range(length)]
        return marks

    def loss(Y_true, Y):
        return sum(a != b for a, b in zip(units(Y_true), units(Y)))
    return loss


@pytest.mark.parametrize("scheme", sorted(SCHEMES))
@pytest.mark.parametrize("loss", ["token", "segment"])
def test_conforms_against_every_segmentation(scheme, loss):
    classes, y = SCHEMES[scheme]
    space = SemiMarkovStructure(max_length=2, scheme=scheme, loss=loss).output_space()
    structure = space.for_classes(classes, y)

    def instances(rng):
        return [rng.randn(len(tags), 2) for tags in y], y

    options = {"loss": _segment_loss(classes) if loss == "segment" else
               _token_loss(classes, ends_marked=scheme == "BIOES")}
    report = check_structure(structure, instances,
                             enumerate_outputs=_enumerate(structure, scheme, classes), **options)
    assert report["check_dynamic_program"] == "passed", report
    assert report["check_part_losses"] == "passed", report
    assert report["check_kernel_ops"] == "passed", report


def test_max_length_is_fitted_and_checked():
    classes, y = SCHEMES["IOB2"]
    structure = SemiMarkovStructure().output_space().for_classes(classes, y)
    assert structure.max_length == 2
    short = SemiMarkovStructure(max_length=1).output_space().for_classes(classes, y)
    batch = short.make_batch([np.ones((len(tags), 1)) for tags in y], n_states=len(classes))
    Y = np.array([classes.index(tag) for tags in y for tag in tags])
    with pytest.raises(ValueError, match=r"sequence 1, tokens 0 to 1: a segment of 2 tokens "
                                         r"\(B-A...\), longer than max_length=1"):
        short.check_outputs(batch, Y)
    with pytest.raises(ValueError, match="use for_classes"):
        SemiMarkovStructure().make_batch([np.ones((2, 1))], n_states=5)
    with pytest.raises(ValueError, match="IOB2 labels are"):
        SemiMarkovStructure().output_space().for_classes(["E-A", "O"])


def _chunked_sequences(rng, n):
    """Tokens whose first feature says 'a chunk starts here' and second 'inside a chunk'."""
    X, y = [], []
    for _ in range(n):
        tags = []
        while len(tags) < 8:
            kind = rng.randint(3)
            tags += ["O"] if kind == 0 else ["B-A"] + ["I-A"] * rng.randint(3) if kind == 1 \
                else ["B-B"] + ["I-B"] * rng.randint(3)
        features = np.array([[tag.startswith("B"), tag.startswith("I"), tag.endswith("A"),
                              tag.endswith("B"), 1.0] for tag in tags], dtype=float)
        X.append(features + 0.1 * rng.randn(*features.shape))
        y.append(np.array(tags, dtype=object))
    return X, y


@pytest.mark.parametrize("Model", [EGCRF, EGStructuredSVM, StructuredPerceptron])
def test_learners_fit_and_predict_whole_chunks(Model):
    rng = np.random.RandomState(0)
    X, y = _chunked_sequences(rng, 40)
    model = Model(structure=SemiMarkovStructure(), random_state=0).fit(X[:30], y[:30])
    assert model.structure_.max_length == 3
    predicted = model.predict(X[30:])
    accuracy = np.mean(np.concatenate(predicted) == np.concatenate(y[30:]))
    assert accuracy > 0.97, accuracy
    for tags in predicted:  # IOB2 output: every I- continues a chunk of its type
        assert all(tag[0] != "I" or previous[2:] == tag[2:] and previous != "O"
                   for previous, tag in zip(["O"] + list(tags), tags))


# ------------------------------------------------------------------ partial labels
@pytest.mark.parametrize("scheme", ["IOB2", "BIOES"])
def test_partial_labels_match_every_consistent_segmentation(scheme):
    classes, y = SCHEMES[scheme]
    structure = SemiMarkovStructure(max_length=2, scheme=scheme).output_space().for_classes(
        classes, y)
    space = structure.output_space()
    rng = np.random.RandomState(0)
    lengths = (1, 2, 3, 4, 4)
    X = [rng.randn(n, 2) for n in lengths]
    batch = structure.make_batch(X, n_states=len(classes))
    outputs = [_enumerate(structure, scheme, classes)(batch, i) for i in range(len(lengths))]
    truth = np.concatenate([o[rng.randint(len(o))] for o in outputs])
    allowed = rng.rand(len(truth), len(classes)) < 0.4
    allowed[np.arange(len(truth)), truth] = True  # some segmentation stays consistent
    bias = space.partial_label_scores(batch, allowed)
    scores = structure.part_scores(batch, rng.randn(batch.n_weights))
    log_z = structure.log_partition(batch, scores + bias)
    best = structure.argmax(batch, scores + bias)
    start = space.partial_label_start(batch, bias)
    consistent, known_tags = [], []
    for i, n in enumerate(lengths):
        u0 = batch.unit_offsets[i]
        ok = np.array([o for o in outputs[i] if allowed[u0 + np.arange(n), o].all()])
        consistent.append(ok)
        known_tags += [ok[0, t] for t in range(n) if (ok[:, t] == ok[0, t]).all()]
    counts = np.bincount(known_tags, minlength=len(classes)) + 1.0
    log_frequency = np.log(counts / counts.sum())
    for i, ok in enumerate(consistent):
        sub = structure.take(batch, np.array([i]))
        lo, hi = batch.part_offsets[i], batch.part_offsets[i + 1]
        u0 = batch.unit_offsets[i]
        values = np.array([scores[lo:hi] @ structure.encode(sub, o) for o in ok])
        assert log_z[i] == pytest.approx(logsumexp(values))
        assert best[u0:u0 + lengths[i]].tolist() == ok[int(np.argmax(values))].tolist()
        for o in outputs[i]:  # the start: the sum of the tags' log-frequencies
            assert start[lo:hi] @ structure.encode(sub, o) == pytest.approx(
                log_frequency[o].sum())
    assert sum(map(len, consistent)) < sum(map(len, outputs))  # the labels forbid some


@pytest.mark.parametrize("Model", [EGCRF, EGStructuredSVM, StructuredPerceptron])
def test_learners_fit_from_partial_labels(Model):
    rng = np.random.RandomState(0)
    X, y = _chunked_sequences(rng, 40)
    partial = [[None if rng.rand() < 0.4 else tag for tag in tags] for tags in y[:30]]
    partial[0][1] = {"B-A", "I-A", "O"}
    model = Model(structure=SemiMarkovStructure(max_length=3), random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X[:30], partial)
    if Model is not StructuredPerceptron:
        assert "objective" in model.history_
    accuracy = np.mean(np.concatenate(model.predict(X[30:])) == np.concatenate(y[30:]))
    assert accuracy > 0.95, accuracy


def test_partial_labels_refused_under_iob1_and_when_contradictory():
    rng = np.random.RandomState(0)
    X = [rng.randn(3, 2) for _ in range(3)]
    with pytest.raises(ValueError, match=r"scheme='IOB1'\): partial labels .* convert the tags"):
        EGCRF(structure=SemiMarkovStructure(scheme="IOB1")).fit(
            X, [["I-A", None, "O"], ["O", "I-A", "I-A"], ["I-B", "O", "O"]])
    y = [["B-A", "I-A", "O"], ["O", "B-B", None], ["O", "I-A", None]]  # I-A cannot follow O
    with pytest.raises(ValueError, match=r"y\[2\]: no output of example 2 is consistent .* "
                                         r"token 1 \(there: \['I-A'\]\)"):
        EGCRF(structure=SemiMarkovStructure()).fit(X, y)
