"""Monotone alignment of frames to ordered states: the worked dynamic-programming structure."""

from .structure import MonotoneAlignmentStructure, MonotoneBatch

__all__ = ["MonotoneAlignmentStructure", "MonotoneBatch"]
