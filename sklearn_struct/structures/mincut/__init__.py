"""Binary labellings by minimum cuts (image segmentation)."""

from .structure import MinCutBatch, MinCutStructure

__all__ = ["MinCutBatch", "MinCutStructure"]
