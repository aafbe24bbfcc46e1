"""A dynamic-programming structure writes at most 4 protocol methods beside its kernels.

Counted: the public methods of the structure protocol (those ``BaseStructure`` documents,
but ``supports`` and ``check_supports``, which no structure writes) that a structure
class defines in its own body; what it inherits from a shared base (``SequenceInputs``'s
``make_batch``, ``LabelledParts``'s ``part_losses``, ``NodeLabels``'s ``decode``,
``NodeWeights``'s ``kernel_weights`` and ``contract_weights``) is
derived once, not written again.  ``feature_bounds``, the dual extragradient's optional
step-size geometry, is counted apart.  The kernels (``kernel_ops``) and private helpers
(``_batch``, ``_labelled_parts``) are not counted.

The exceptions below may shrink but not grow: each names its count and why.
"""

import inspect

import numpy as np
import pytest

from sklearn_struct import structures
from sklearn_struct.structures import BaseStructure, Grammar, WeightedCFGStructure

MOST = 4
APART = {"feature_bounds"}
PROTOCOL = {name for name, _ in inspect.getmembers(BaseStructure, inspect.isfunction)
            if not name.startswith("_")} - {"supports", "check_supports"} - APART

#: Structures above MOST, with their count and why; a count may only go down.
KNOWN_EXCEPTIONS = {
    "ChainStructure": (11, "its fast path: hand-written scaled forward-backward and Viterbi "
                           "(argmax, marginals, log_partition), vectorised scores, features "
                           "and encoding, constraints that only decoding keeps "
                           "(training_structure)"),
    "MulticlassStructure": (12, "a flat classifier, every operation one vectorised matrix "
                                "product (no per-example loop), and its own projection"),
    "WeightedCFGStructure": (7, "CKY's own argmax, trees decoded from anchored rules, and the "
                                "labelled-bracket loss, which is not a Hamming loss over units"),
}


def _dp_structures():
    """Every exported structure class with a dynamic program (a hypergraph kernel)."""
    grammar = Grammar(["X"], ["t"], [[0, 0, 0]], [[0, 0]], [0])
    found = {}
    for name in structures.__all__:
        cls = getattr(structures, name)
        if not (inspect.isclass(cls) and issubclass(cls, BaseStructure)) or cls is BaseStructure:
            continue
        structure = cls(grammar) if cls is WeightedCFGStructure else cls()
        if structure.kernel_ops is not None and "hypergraph" in structure.kernel_ops.given:
            found[name] = cls
    return found


def _own_protocol_methods(cls):
    return sorted(name for name in vars(cls) if name in PROTOCOL)


def test_the_dynamic_programs_are_found():
    # a structure that lost its dynamic program would leave the count silently
    assert {"MonotoneAlignmentStructure", "SemiMarkovStructure", "PrunedChainStructure",
            "SiblingDependencyStructure", "ChainStructure", "TreeStructure",
            "DependencyTreeStructure", "WeightedCFGStructure",
            "MulticlassStructure"} <= set(_dp_structures())


@pytest.mark.parametrize("name", sorted(_dp_structures()))
def test_dp_structure_writes_at_most_four_protocol_methods(name):
    own = _own_protocol_methods(getattr(structures, name))
    most, why = KNOWN_EXCEPTIONS.get(name, (MOST, None))
    assert len(own) <= most, (
        f"{name} writes {len(own)} protocol methods ({', '.join(own)}), at most {most}; "
        "derive what can be derived (take from the batch's declared fields, Hamming losses "
        "from LabelledParts, make_batch from SequenceInputs)")
    if why is not None:
        assert len(own) > MOST, (f"{name} is down to {len(own)} protocol methods: remove it "
                                 "from KNOWN_EXCEPTIONS")
        assert len(own) == most, (f"{name} writes {len(own)} protocol methods: lower its "
                                  f"count in KNOWN_EXCEPTIONS from {most}")


def test_exceptions_name_dynamic_programs():
    assert set(KNOWN_EXCEPTIONS) <= set(_dp_structures())


def test_count_reads_own_methods_only():
    class Derived(structures.MonotoneAlignmentStructure):
        def part_losses(self, batch, Y):
            return np.zeros(int(batch.part_offsets[-1]))

    assert _own_protocol_methods(Derived) == ["part_losses"]
