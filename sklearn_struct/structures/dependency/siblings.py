"""Second-order projective dependency trees: arcs and adjacent siblings (McDonald & Pereira)."""

import numpy as np

from .._batch import offsets_from_lengths
from .._kernel import KernelOps
from . import _second_order as second
from ._second_order_inference import (
    second_order_eisner, second_order_log_partition, second_order_marginals)
from ._sibling_features import (
    SiblingData, n_sibling_parts, no_sibling_cache, sibling_feature_cache)
from .structure import DependencyTreeStructure

__all__ = ["SiblingDependencyStructure"]

# The hand-written second-order Eisner and inside-outside override the generic program's
# argmax, marginals and log Z (k-best outputs and samples stay generic); check_structure
# holds them against it.
_SIBLING_OPS = KernelOps(
    part_scores=second.second_order_part_scores, add_features=second.second_order_add_features,
    encode=second.second_order_encode, decode=second.second_order_decode,
    add_features_norm=second.second_order_add_features_norm,
    part_scores_at=second.second_order_part_scores_at,
    add_features_at=second.second_order_add_features_at,
    hypergraph_size=second.second_order_hypergraph_size,
    hypergraph=second.second_order_hypergraph, marginals=second_order_marginals,
    log_partition=second_order_log_partition, argmax=second_order_eisner)


class SiblingDependencyStructure(DependencyTreeStructure):
    """Second-order projective dependency trees: arcs and adjacent siblings.

    The parts of a sentence of ``n`` words are its ``n * n`` arcs ``(h, m)``,
    indexed and featured as in :class:`DependencyTreeStructure` (the first
    ``n * n`` entries of its part vector), then its sibling parts
    ``(h, s, m)``: ``s`` is the closest child of ``h`` between ``h`` and
    ``m``, or ``h`` itself when ``m`` is ``h``'s innermost child on that side
    (:mod:`~sklearn_struct.structures.dependency._sibling_features`, which
    also lists the hashed sibling templates: McDonald & Pereira 2006's,
    lexicalized triples after Koo & Collins 2010, the tags around the two
    siblings, and the head with the inner sibling).  A
    tree has one arc and one sibling part per word.  The outputs are the
    projective trees; inference is the second-order Eisner recursion, O(n^3),
    written once as a hypergraph for the generic dynamic program: argmax,
    loss-augmented argmax, marginals, ``log Z``, k-best trees and samples.
    The loss is the number of words given a wrong head, as in the first
    order; sibling parts carry no loss.

    Parameters
    ----------
    single_root : bool, default=True
        Exactly one word hangs from the root (the Universal Dependencies
        convention); False admits several root children, which are then
        siblings like any head's children.
    hash_bits : int, default=20
        The weight vector has ``2 ** hash_bits`` entries, shared by arc and
        sibling features.
    punctuation_weight : float, default=1.0
        Loss of a wrong head on a word flagged as punctuation (the optional
        fourth input column).

    See Also
    --------
    DependencyTreeStructure : First-order trees (arcs only), projective or not.

    Notes
    -----
    A sentence of ``n`` words has ``n^2 + n (n + 1) (2 n + 1) / 6`` parts,
    O(n^3): dual methods (EG) keep a few numbers per part of every training
    sentence (about 64 million parts on the projective sentences of UD
    English-EWT's training set, against 4.9 million arcs).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.structures import SiblingDependencyStructure
    >>> structure = SiblingDependencyStructure(hash_bits=12)
    >>> batch = structure.make_batch([np.array([[5, 6, 3], [7, 8, 3], [5, 6, 3]])])
    >>> batch.part_offsets  # 3 * 3 arcs and 14 sibling parts
    array([ 0, 23])
    >>> z = structure.encode(batch, [2, 0, 2])
    >>> int(z.sum())  # one arc and one sibling part per word
    6
    """

    kernel_ops = _SIBLING_OPS

    @property
    def projective(self):
        """Always True: the outputs are projective trees (the recursion is Eisner's)."""
        return True

    def __init__(self, single_root=True, hash_bits=20, punctuation_weight=1.0):
        self.single_root = single_root
        self.hash_bits = hash_bits
        self.punctuation_weight = punctuation_weight

    def _batch(self, attrs, unit_offsets):
        batch = super()._batch(attrs, unit_offsets)
        lengths = np.diff(unit_offsets)
        parts = lengths * lengths + np.array([n_sibling_parts(n) for n in lengths],
                                             dtype=np.int64)
        return type(batch)(attrs=batch.attrs, n_samples=batch.n_samples,
                           n_features=batch.n_features, unit_offsets=batch.unit_offsets,
                           part_offsets=offsets_from_lengths(parts), n_weights=batch.n_weights)

    def _arcs(self, batch):
        """The first-order batch of the same sentences, and where their arcs are among the
        parts of ``batch``."""
        arc_batch = DependencyTreeStructure._batch(self, batch.attrs, batch.unit_offsets)
        lengths = np.diff(batch.unit_offsets)
        index = np.concatenate([np.arange(p, p + n * n, dtype=np.int64)
                                for p, n in zip(batch.part_offsets[:-1], lengths)])
        return arc_batch, index

    def kernel_data(self, batch, training=False):
        arcs = super().kernel_data(batch, training=training)
        siblings = (sibling_feature_cache(batch.attrs, batch.unit_offsets, int(self.hash_bits),
                                          arcs.distinct_ids, arcs.distinct_offsets)
                    if training else no_sibling_cache())
        return SiblingData(*arcs, *siblings)
