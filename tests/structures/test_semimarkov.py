"""The semi-Markov chain against enumeration of every segmentation, and in the learners."""

import numpy as np
import pytest

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
