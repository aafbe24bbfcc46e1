"""A dynamic-programming structure writes at most 4 protocol methods beside its kernels.

Counted: the public methods of the structure protocol (those ``BaseStructure`` documents,
but ``supports`` and ``check_supports``, which no structure writes) that a structure
class defines in its own body; what it inherits from a shared base (``SequenceInputs``'s
``make_batch``, ``LabelledParts``'s ``part_losses``, ``NodeLabels``'s ``decode``,
``NodeWeights``'s ``kernel_weights`` and ``contract_weights``) is
derived once, not written again.  ``feature_bounds``, the dual extragradient's optional
step-size geometry, is counted apart.  The kernels (``kernel_ops``) and private helpers
(``_batch``, ``_labelled_parts``) are not counted.

A structure's fast path is numba too: its own loops over a batch (``KernelOps`` batch
loops, the chain's forward-backward) and its own kernels (CKY, the labelled-bracket loss of
a grammar), none of them a protocol method.
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
    assert len(own) <= MOST, (
        f"{name} writes {len(own)} protocol methods ({', '.join(own)}), at most {MOST}; "
        "derive what can be derived (take from the batch's declared fields, Hamming losses "
        "from LabelledParts, make_batch from SequenceInputs, a fast batch path as a KernelOps "
        "batch loop)")


def test_count_reads_own_methods_only():
    class Derived(structures.MonotoneAlignmentStructure):
        def part_losses(self, batch, Y):
            return np.zeros(int(batch.part_offsets[-1]))

    assert _own_protocol_methods(Derived) == ["part_losses"]
