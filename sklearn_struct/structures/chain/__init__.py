"""First-order linear chains: per-token labels and tied label transitions."""

from .structure import ChainBatch, ChainStructure

__all__ = ["ChainBatch", "ChainStructure"]
