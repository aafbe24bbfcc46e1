"""Loaders for the corpora of the papers and generators for their synthetic protocols.

Every loader takes the path of the file to read (nothing is downloaded); a missing file
raises ``FileNotFoundError`` naming it, a malformed one ``ValueError`` naming the file and
the line. Nothing is ever unpickled.
"""

from ._alignment_features import AlignmentFeatureExtractor, alignment_targets, edges_to_links
from ._cachopo import load_cachopo_text
from ._conll import load_conll
from ._conllu import check_heads, filter_projective, is_projective, load_conllu, projectivize
from ._hansards import load_hansards_alignments, load_hansards_sentence_pairs
from ._horses import load_weizmann_horses, make_horse_segmentation
from .._chunk_tags import chunk_constraints, chunk_spans, iob1_to_iob2, iob2_to_iob1
from ._mnist import load_mnist_idx, read_idx
from ._ocr import load_ocr_default, load_ocr_letters
from ._ptb import Tree, binarize, clean_tree, load_ptb, unbinarize
from ._synthetic import make_correlated_chains

__all__ = [
    "AlignmentFeatureExtractor",
    "Tree",
    "binarize",
    "clean_tree",
    "load_ptb",
    "unbinarize",
    "alignment_targets",
    "check_heads",
    "filter_projective",
    "is_projective",
    "projectivize",
    "edges_to_links",
    "load_weizmann_horses",
    "make_horse_segmentation",
    "chunk_constraints",
    "chunk_spans",
    "iob1_to_iob2",
    "iob2_to_iob1",
    "load_cachopo_text",
    "load_conll",
    "load_conllu",
    "load_hansards_alignments",
    "load_hansards_sentence_pairs",
    "load_mnist_idx",
    "load_ocr_default",
    "load_ocr_letters",
    "make_correlated_chains",
    "read_idx",
]
