"""Bipartite matchings (word alignment)."""

from .structure import MatchingBatch, MatchingStructure

__all__ = ["MatchingBatch", "MatchingStructure"]
