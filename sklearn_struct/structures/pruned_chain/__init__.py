"""The pruned chain: a first-order chain over the candidate labels of a tag dictionary."""

from .structure import PrunedChainBatch, PrunedChainOutputs, PrunedChainStructure

__all__ = ["PrunedChainBatch", "PrunedChainOutputs", "PrunedChainStructure"]
