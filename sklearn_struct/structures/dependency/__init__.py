"""Dependency trees: projective (Eisner) and non-projective (Chu-Liu-Edmonds, Matrix-Tree)."""

from .structure import DependencyBatch, DependencyTreeStructure, HeadsCodec

__all__ = ["DependencyBatch", "DependencyTreeStructure", "HeadsCodec"]
