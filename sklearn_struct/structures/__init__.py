"""Structures: the parts abstraction and its inference (see :mod:`._base`)."""

from ._base import BaseStructure, UnsupportedOperation
from .chain import ChainBatch, ChainStructure
from .matching import MatchingBatch, MatchingStructure
from .mincut import MinCutBatch, MinCutStructure
from .multiclass import MulticlassBatch, MulticlassStructure

__all__ = [
    "BaseStructure",
    "ChainBatch",
    "ChainStructure",
    "MatchingBatch",
    "MatchingStructure",
    "MinCutBatch",
    "MinCutStructure",
    "MulticlassBatch",
    "MulticlassStructure",
    "UnsupportedOperation",
]
