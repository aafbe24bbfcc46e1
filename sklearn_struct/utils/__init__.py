"""Utilities for developers of structures and learners (see :mod:`.estimator_checks`)."""

from .estimator_checks import check_structure

__all__ = ["check_structure"]
