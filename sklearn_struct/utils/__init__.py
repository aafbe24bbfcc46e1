"""Utilities for developers of structures and learners (see :mod:`.structure_checks`)."""

from .structure_checks import check_structure

__all__ = ["check_structure"]
