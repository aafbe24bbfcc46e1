"""Structures: the parts abstraction and its inference (see :mod:`._base`)."""

from ._base import BaseStructure, UnsupportedOperation

__all__ = ["BaseStructure", "UnsupportedOperation"]
