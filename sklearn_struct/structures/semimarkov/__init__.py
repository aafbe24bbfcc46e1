"""Semi-Markov chains: labelled segments over chunk-tagged sequences."""

from .structure import SemiMarkovBatch, SemiMarkovStructure

__all__ = ["SemiMarkovBatch", "SemiMarkovStructure"]
