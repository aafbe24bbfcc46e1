"""Weighted context-free grammars in Chomsky normal form: CKY and inside-outside."""

from ._grammar import Grammar
from .structure import ParseBatch, TreeCodec, WeightedCFGStructure

__all__ = ["Grammar", "ParseBatch", "TreeCodec", "WeightedCFGStructure"]
