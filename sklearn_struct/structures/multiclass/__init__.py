"""Flat multiclass classification: one label per sample."""

from .structure import MulticlassBatch, MulticlassStructure

__all__ = ["MulticlassBatch", "MulticlassStructure"]
