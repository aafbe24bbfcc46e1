"""Dependency trees: projective (Eisner) and non-projective (Chu-Liu-Edmonds, Matrix-Tree),
and second-order projective trees with adjacent siblings."""

from ._arc_features import FIRST_ID, NO_PREFIX, POS, PREFIX, PUNCTUATION, SECOND_POS, WORD
from .structure import DependencyBatch, DependencyTreeStructure, HeadsCodec
from .siblings import SiblingDependencyStructure

# The token rows' columns and reserved ids, for the encoder that writes them
# (preprocessing.DependencyTokenEncoder).
__all__ = ["DependencyBatch", "DependencyTreeStructure", "HeadsCodec",
           "SiblingDependencyStructure",
           "FIRST_ID", "NO_PREFIX", "POS", "PREFIX", "PUNCTUATION", "SECOND_POS", "WORD"]
