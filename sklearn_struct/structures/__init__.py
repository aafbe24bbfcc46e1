"""Structures: the parts abstraction and its inference (see :mod:`._base`).

To add a structure, subclass :class:`BaseStructure`, give it per-example numba
operations in a :class:`KernelOps` (every learner then runs it inside numba),
and check it with :func:`sklearn_struct.utils.check_structure`.
"""

from ._base import BaseStructure, UnsupportedOperation
from ._kernel import KernelOps
from ._output_space import LabelledUnits, OutputSpace
from ._targets import BinaryUnitCodec, FlatLabelCodec, UnitLabelCodec
from .chain import ChainBatch, ChainStructure
from .dependency import (DependencyBatch, DependencyTreeStructure, HeadsCodec,
                         SiblingDependencyStructure)
from .grammar import Grammar, ParseBatch, TreeCodec, WeightedCFGStructure
from .graph import GraphBatch, GraphStructure
from .matching import MatchingBatch, MatchingStructure
from .mincut import MinCutBatch, MinCutStructure
from .monotone import MonotoneAlignmentStructure, MonotoneBatch
from .multiclass import MulticlassBatch, MulticlassStructure
from .pruned_chain import PrunedChainBatch, PrunedChainStructure
from .semimarkov import SemiMarkovBatch, SemiMarkovStructure
from .label_tree import TreeBatch, TreeStructure

#: The registry of structure names: what an estimator's ``structure="..."`` builds (with
#: the structure's defaults).
STRUCTURES = {
    "multiclass": MulticlassStructure,
    "chain": ChainStructure,
    "pruned_chain": PrunedChainStructure,
    "matching": MatchingStructure,
    "mincut": MinCutStructure,
    "graph": GraphStructure,
    "dependency": DependencyTreeStructure,
    "sibling_dependency": SiblingDependencyStructure,
    "tree": TreeStructure,
    "semimarkov": SemiMarkovStructure,
    "monotone": MonotoneAlignmentStructure,
}

#: Names of structures that no default builds, and how to build them instead.
NEEDS_ARGUMENTS = {
    "cfg": "WeightedCFGStructure(Grammar.from_trees(trees)): a grammar structure needs its "
           "grammar",
}

__all__ = [
    "BaseStructure",
    "BinaryUnitCodec",
    "ChainBatch",
    "ChainStructure",
    "DependencyBatch",
    "DependencyTreeStructure",
    "FlatLabelCodec",
    "Grammar",
    "GraphBatch",
    "GraphStructure",
    "HeadsCodec",
    "KernelOps",
    "LabelledUnits",
    "MatchingBatch",
    "MatchingStructure",
    "MinCutBatch",
    "MinCutStructure",
    "MonotoneAlignmentStructure",
    "MonotoneBatch",
    "MulticlassBatch",
    "MulticlassStructure",
    "OutputSpace",
    "ParseBatch",
    "PrunedChainBatch",
    "PrunedChainStructure",
    "SemiMarkovBatch",
    "SemiMarkovStructure",
    "SiblingDependencyStructure",
    "TreeBatch",
    "TreeCodec",
    "TreeStructure",
    "WeightedCFGStructure",
    "UnitLabelCodec",
    "UnsupportedOperation",
]
