"""Structures: the parts abstraction and its inference (see :mod:`._base`)."""

from ._base import BaseStructure, UnsupportedOperation
from .chain import ChainBatch, ChainStructure
from .multiclass import MulticlassBatch, MulticlassStructure

__all__ = [
    "BaseStructure",
    "ChainBatch",
    "ChainStructure",
    "MulticlassBatch",
    "MulticlassStructure",
    "UnsupportedOperation",
]
