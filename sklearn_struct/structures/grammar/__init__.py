"""Weighted context-free grammars in Chomsky normal form: CKY and inside-outside."""

from ._grammar import Grammar
from ._tree import UNARY_JOIN, Tree, read_bracketed
from .structure import ParseBatch, TreeCodec, WeightedCFGStructure

# Tree, UNARY_JOIN and read_bracketed: for the treebank reader (datasets.load_ptb).
__all__ = ["Grammar", "ParseBatch", "TreeCodec", "WeightedCFGStructure",
           "Tree", "UNARY_JOIN", "read_bracketed"]
