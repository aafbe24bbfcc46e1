"""Markov random fields whose label graph is a tree or a forest."""

from .structure import TreeBatch, TreeStructure

__all__ = ["TreeBatch", "TreeStructure"]
