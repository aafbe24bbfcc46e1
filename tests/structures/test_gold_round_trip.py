"""Gold outside a structure's output set is refused; gold inside it round-trips.

For every structure, on tiny inputs, every candidate target (each unit given
every value in range and one out of range on each side) either is refused by
the checks an estimator runs on its training targets (``check_outputs`` of
the structure that decodes) with a clear error naming the example, or is an
output its decoder can produce: ``decode(encode(Y))`` gives it back, and it is
among the outputs its inference enumerates (``k_best`` on zero scores, or the
argmax of scores that favour it where there is no dynamic program).
"""

import itertools
import re

import numpy as np
import pytest

from sklearn_struct.datasets import Tree
from sklearn_struct.structures import (
    ChainStructure, DependencyTreeStructure, Grammar, MatchingStructure, MinCutStructure,
    MulticlassStructure, SemiMarkovStructure, SiblingDependencyStructure, TreeStructure,
    WeightedCFGStructure)

RNG = np.random.RandomState(0)
FULL = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
#: the example named by a refusal: the structures call it by the kind of input
NAMED = r"(sequence|example|sentence|sample|graph) \d|y\[\d\]"


def _labelled(structure, labels):
    """A structure resolved for labels (a scheme or a longest segment set from them)."""
    return structure.output_space().for_classes(np.array(labels))


def _sequence(structure, n_states, T=3):
    return structure, structure.make_batch([RNG.randn(T, 2)], n_states=n_states), n_states


CASES = {
    "multiclass": lambda: (
        MulticlassStructure(), MulticlassStructure().make_batch(RNG.randn(1, 2), n_states=3), 3),
    "chain": lambda: _sequence(ChainStructure(), 3),
    **{f"chain {scheme}": (lambda scheme=scheme, labels=labels: _sequence(
        _labelled(ChainStructure(allowed_transitions=scheme), labels), len(labels)))
       for scheme, labels in [("IOB2", ["B-X", "I-X", "O"]), ("IOB1", ["B-X", "I-X", "O"]),
                              ("BIOES", ["B-X", "E-X", "I-X", "O", "S-X"])]},
    **{f"semimarkov {scheme} {' '.join(labels)}": (
        lambda scheme=scheme, labels=labels: _sequence(_labelled(
            SemiMarkovStructure(max_length=2, scheme=scheme), labels), len(labels)))
       for scheme, labels in [("IOB2", ["B-X", "I-X", "O"]), ("IOB2", ["I-X", "O"]),
                              ("IOB1", ["B-X", "I-X", "O"]), ("IOB1", ["I-X", "O"]),
                              ("BIOES", ["B-X", "E-X", "I-X", "O", "S-X"]),
                              ("BIOES", ["B-X", "E-X", "O"])]},
    "label tree": lambda: (TreeStructure(), TreeStructure().make_batch(
        [(RNG.randn(3, 2), np.array([-1, 0, 0]))], n_states=2), 2),
    **{f"dependency projective={p} single_root={r}": (
        lambda p=p, r=r: _dependency(DependencyTreeStructure(projective=p, single_root=r,
                                                             hash_bits=6)))
       for p in (True, False) for r in (True, False)},
    "sibling dependency": lambda: _dependency(SiblingDependencyStructure(hash_bits=6)),
    "matching": lambda: (MatchingStructure(), MatchingStructure().make_batch(
        [(RNG.randn(4, 2), FULL)]), 2),
    "mincut": lambda: (MinCutStructure(), MinCutStructure().make_batch(
        [(RNG.randn(3, 2), np.array([[0, 1], [1, 2]]), RNG.rand(2, 1))]), 2),
}


def _dependency(structure):
    words = 3
    return structure, structure.make_batch([RNG.randint(4, 9, size=(words, 3))]), words + 1


def _outputs(structure, batch):
    """Every output the structure's inference can give, as tuples."""
    n_parts = int(batch.part_offsets[-1])
    if structure.supports("k_best"):
        Y, scores = structure.k_best(batch, np.zeros(n_parts), 200)
        return {tuple(row) for row, score in zip(Y, scores[0]) if np.isfinite(score)}
    return None


def _produced(structure, batch, Y, outputs):
    if outputs is not None:
        return tuple(Y) in outputs
    # no dynamic program: the output of no loss, the argmax of minus the part losses
    return np.array_equal(structure.argmax(batch, -structure.part_losses(batch, Y)), Y)


@pytest.mark.parametrize("case", list(CASES))
def test_gold_is_refused_or_round_trips(case):
    structure, batch, n_values = CASES[case]()
    outputs = _outputs(structure, batch)
    n_units = int(batch.unit_offsets[-1])
    accepted = 0
    for candidate in itertools.product(range(-1, n_values + 1), repeat=n_units):
        Y = np.array(candidate, dtype=np.int64)
        try:
            structure.check_outputs(batch, Y)
        except (ValueError, TypeError) as error:
            assert re.search(NAMED, str(error)), (case, candidate, str(error))
            continue
        z = structure.encode(batch, Y)
        assert structure.decode(batch, z).tolist() == list(candidate), (case, candidate)
        assert _produced(structure, batch, Y, outputs), (case, candidate)
        accepted += 1
    if outputs is not None:  # every output is a gold the checks accept
        assert accepted == len(outputs), case
    assert accepted > 0


GRAMMAR = Grammar(["A", "B", "S"], ["a", "b"],
                  binary_rules=[[2, 0, 1], [2, 1, 0], [0, 0, 1], [1, 0, 0]],
                  lexical_rules=[[0, 0], [1, 1], [1, 0]], roots=[2])


def _trees(words, tags, symbols):
    """Every binary tree over ``words`` with every labelling of its nodes."""
    if len(words) == 1:
        return [Tree(a, [words[0]]) for a in symbols]
    return [Tree(a, [left, right]) for split in range(1, len(words)) for a in symbols
            for left in _trees(words[:split], tags[:split], symbols)
            for right in _trees(words[split:], tags[split:], symbols)]


def test_cfg_gold_is_refused_or_round_trips():
    structure = WeightedCFGStructure(GRAMMAR, hash_bits=6)
    sentence = [("w1", "a"), ("w2", "a"), ("w3", "b")]
    batch = structure.make_batch([sentence])
    codec = structure.output_space().codec(None)
    Y, scores = structure.k_best(batch, np.zeros(int(batch.part_offsets[-1])), 500)
    derivations = {tuple(row) for row, score in zip(Y, scores[0]) if np.isfinite(score)}
    accepted = 0
    for tree in _trees(["w1", "w2", "w3"], ["a", "a", "b"], ["A", "B", "S", "Z"]):
        try:
            Y = structure.check_outputs(batch, codec.encode(batch, [tree]))
        except (ValueError, TypeError) as error:
            assert re.search(NAMED, str(error)), (tree, str(error))
            continue
        z = structure.encode(batch, Y)
        back = structure.decode(batch, z)
        assert codec.decode(batch, back)[0] == tree and tuple(back) in derivations
        accepted += 1
    assert accepted == len(derivations)


@pytest.mark.parametrize("structure, message", [
    (SemiMarkovStructure(), r"SemiMarkovStructure: sequence 1, token 0: the IOB2 scheme cannot "
                            r"write the tag 'I-NP' there \(it writes a tag that is not among "
                            r"the labels for the segment that tag is in\)"),
    (ChainStructure(allowed_transitions="IOB2"),
     r"ChainStructure: sequence 1, position 0: label 0 cannot come first \(allowed_start\)")])
def test_estimators_refuse_gold_their_structure_cannot_predict(structure, message):
    """I-NP without B-NP under IOB2: the model could only ever predict O (issue 47)."""
    from sklearn_struct import StructuredPerceptron

    X = [RNG.randn(2, 2), RNG.randn(3, 2)]
    y = [["O", "O"], ["I-NP", "I-NP", "O"]]
    with pytest.raises(ValueError, match=message):
        StructuredPerceptron(structure=structure, max_iter=1).fit(X, y)
