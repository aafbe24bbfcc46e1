"""Dependency trees: projective (Eisner) and non-projective (Chu-Liu-Edmonds, Matrix-Tree),
and second-order projective trees with adjacent siblings."""

from .structure import DependencyBatch, DependencyTreeStructure, HeadsCodec
from .siblings import SiblingDependencyStructure

__all__ = ["DependencyBatch", "DependencyTreeStructure", "HeadsCodec",
           "SiblingDependencyStructure"]
