"""Pairwise Markov networks on any graph, with LP-relaxed MAP inference."""

from .structure import GraphBatch, GraphStructure

__all__ = ["GraphBatch", "GraphStructure"]
