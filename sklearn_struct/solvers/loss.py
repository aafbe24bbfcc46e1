"""The parts every solver shares: a structured loss on a data set, and the penalties.

A solver minimises ``penalty(w) + C sum_i s_i loss_i(w)``.  :class:`StructuredLoss`
holds what stays fixed while it does (the true outputs' encodings, the part losses
and their per-example offsets, the observed features, the L2 penalty's center) and
evaluates the loss at a ``w``; :class:`L2` and :class:`L1` are the penalties.  EG, the
working-set solver, the subgradient method, the cutting plane and EM all take the same
loss object.
"""

from functools import cached_property

import numpy as np

from ._chunks import ExampleChunks
from ._objective import example_losses, segment_sums

__all__ = ["COMPACT_OBSERVED", "L1", "L2", "LOSS_OPERATIONS", "OBSERVED_BLOCK_PARTS",
           "StructuredLoss"]

#: :class:`StructuredLoss` keeps the observed features as their non-zero entries (an
#: index and a value each, 16 bytes against 8 per weight) when at most this fraction of
#: the weights has one: a tagger's are its input features seen with their true labels
#: alone, a small share of the ``n_features * n_states`` weights.
COMPACT_OBSERVED = 0.25
#: Past this many parts, :class:`StructuredLoss` sums the observed features over blocks of
#: about as many parts, each block's targets encoded in turn: the encodings of the whole
#: data set would be a vector over all the parts (a float per part) at the fit's start.
OBSERVED_BLOCK_PARTS = 1 << 23

#: The structure operations each kind of loss needs.
LOSS_OPERATIONS = {
    "hinge": ("part_scores", "expected_features", "encode", "part_losses",
              "loss_augmented_argmax"),
    "log": ("part_scores", "expected_features", "encode", "part_losses", "marginals"),
}


class L2:
    """``1/2 ||w - center||^2``, the penalty of CRFs and max-margin Markov networks.

    ``center`` None is 0; another center makes the problem a proximal step from it
    (what ``partial_fit`` solves: the weights stay near those learnt so far).
    """

    def __init__(self, center=None):
        self.center = center

    def value(self, w):
        d = w if self.center is None else w - self.center
        return 0.5 * float(d @ d)


class L1:
    """``||w||_1``, the penalty of primal-sparse max-margin Markov networks."""

    @staticmethod
    def value(w):
        return float(np.abs(w).sum())

    @staticmethod
    def dual_norm(G, nonnegative):
        """``max_j |G_j|``, with ``max(-G_j, 0)`` on the weights kept non-negative.

        The smallest ``nu`` with ``||w||_1 + G . w / nu >= 0`` on the feasible set
        (``w_j >= 0`` where ``nonnegative``).
        """
        return float(np.where(nonnegative, -G, np.abs(G)).max(initial=0.0))


class StructuredLoss:
    """A structured loss of a data set: what stays fixed during a fit, and its value at ``w``.

    Parameters
    ----------
    structure : BaseStructure
        The structure learning runs its inference on.
    batch : batch of ``structure``
    Y : ndarray of int64 of shape (n_units_total,)
        Encoded true outputs.
    kind : {"log", "hinge"}, default="hinge"
        ``"log"``: ``log Z_i(w) - w . phi(x_i, y_i)``; ``"hinge"``:
        ``max_y [loss(y_i, y) + w . phi(x_i, y)] - w . phi(x_i, y_i)``.
    sample_weight : ndarray of shape (n_samples,) or None, default=None
        The examples' weights ``s_i`` (None: all 1).
    feature_scale : ndarray of shape (n_weights,) or None, default=None
        Features rescaled weight-wise: scores are ``F^T (feature_scale * w)``.
    n_jobs : int or None, default=None
        Inference over this many chunks of examples in parallel through joblib.
    center : ndarray of shape (n_weights,) or None, default=None
        The center of the L2 penalty, ``1/2 ||w - center||^2`` (None: 0).
    truth : ndarray of shape (n_parts_total,) or None, default=None
        The targets' part vector in place of ``encode(Y)``: expected encodings
        under a distribution ``q_i`` over outputs make the log loss
        ``log Z_i(w) - E_{q_i} w . phi(x_i, y)`` (the M-step of a latent CRF,
        :mod:`.latent`).  Only where the loss is evaluated from the truth's
        encodings (the online EG); ``Y`` is then a stand-in.
    part_losses : ndarray of shape (n_parts_total,) or None, default=None
        Part losses in place of ``structure.part_losses(batch, Y)`` (the loss on
        the known units only, for a latent structured SVM).

    Attributes
    ----------
    truth : ndarray of shape (n_parts_total,)
        The encodings of the true outputs.
    part_losses : ndarray of shape (n_parts_total,)
        ``loss(y_i, y) = loss_offsets[i] + encode(y) . part_losses``.
    loss_offsets : ndarray of shape (n_samples,)
    observed : ndarray of shape (n_weights,)
        ``feature_scale * sum_i s_i phi(x_i, y_i)``, made anew at each reading when
        it is kept compact (see :meth:`weights_from`).
    observed_support : tuple of ndarray or None
        ``(indices, values)`` of the non-zero entries of ``observed``, how the loss keeps
        it when at most ``COMPACT_OBSERVED`` of them are non-zero (a tagger's features
        observed with their true labels only); None: kept whole.
    nonnegative : ndarray of bool of shape (n_weights,)
        Weights the structure needs non-negative (the edge weights of a min-cut model).
    chunks : ExampleChunks
        The batch's chunks for parallel inference.
    penalty : L2
        The L2 penalty with its center, the default of :meth:`primal`.
    """

    def __init__(self, structure, batch, Y, kind="hinge", sample_weight=None, feature_scale=None,
                 n_jobs=None, center=None, truth=None, part_losses=None):
        if kind not in LOSS_OPERATIONS:
            raise ValueError(f"kind must be 'log' or 'hinge', got {kind!r}.")
        structure.check_supports(*LOSS_OPERATIONS[kind], needed_by=f"the {kind} loss")
        self.structure = structure
        self.batch = batch
        self.soft_truth = truth is not None
        blocked = not self.soft_truth and batch.part_offsets[-1] > OBSERVED_BLOCK_PARTS
        if blocked:  # (encoded block by block below)
            Y = structure.check_outputs(batch, Y)
        else:
            truth = (structure.encode(batch, Y) if truth is None  # checks Y
                     else np.ascontiguousarray(truth, dtype=np.float64))
        if self.soft_truth:  # (else encoded again when read: see truth)
            self.__dict__["truth"] = truth
        self.Y = np.ascontiguousarray(Y, dtype=np.int64)
        self.kind = kind
        self.n_samples = int(batch.n_samples)
        self.n_weights = int(batch.n_weights)
        self.sample_weight = (np.ones(self.n_samples) if sample_weight is None
                              else np.ascontiguousarray(sample_weight, dtype=np.float64))
        self.feature_scale = feature_scale
        if part_losses is not None:  # (else computed when first read: see part_losses)
            self.__dict__["part_losses"] = np.ascontiguousarray(part_losses, dtype=np.float64)
        self.loss_offsets = (np.asarray(structure.loss_offsets(batch, self.Y), dtype=np.float64)
                             if kind == "hinge" else np.zeros(self.n_samples))
        self.nonnegative = np.asarray(structure.nonnegative_weights(batch), dtype=bool)
        self.chunks = ExampleChunks(structure, batch, n_jobs)
        if blocked:
            observed = self._blocked_observed()
        else:
            observed = self.features(batch, truth, self.sample_weight)
            del truth
        self._observed = self.observed_support = None
        support = np.flatnonzero(observed)
        if len(support) <= COMPACT_OBSERVED * len(observed):
            self.observed_support = (support, observed[support])
        else:
            self._observed = observed
        del observed
        self.penalty = L2(None if center is None else np.asarray(center, dtype=np.float64))
        self._example_batches = {}

    @cached_property
    def truth(self):
        """The targets' part vector (the encodings of ``Y``, unless a soft truth was given),
        kept once read: online EG on the log loss encodes each example's outputs where it
        needs them, and keeps no vector of one float per part for them."""
        return self.structure.encode(self.batch, self.Y)

    @cached_property
    def part_losses(self):
        """Every part's loss against the targets, computed when first read: the log loss's
        online EG never reads them, and they take one float per part."""
        return self.structure.part_losses(self.batch, self.Y)

    def _blocked_observed(self):
        """``feature_scale * sum_i s_i phi(x_i, y_i)`` from the encodings of blocks of
        consecutive examples, one block's at a time (no vector over all the parts)."""
        observed = None
        blocks = ExampleChunks(self.structure, self.batch, max_parts=OBSERVED_BLOCK_PARTS)
        for (sub, _, units), (a, b) in zip(blocks, blocks.bounds):
            share = self.features(sub, self.structure.encode(sub, self.Y[units]),
                                  self.sample_weight[a:b])
            observed = share if observed is None else np.add(observed, share, out=observed)
            del sub, share
        return observed

    @property
    def observed(self):
        """``feature_scale * sum_i s_i phi(x_i, y_i)`` (see the class's attributes)."""
        if self._observed is not None:
            return self._observed
        out = np.zeros(self.n_weights)
        support, values = self.observed_support
        out[support] = values
        return out

    def weights_from(self, expected, C):
        """``C * (observed - expected)``, one new vector (no dense ``observed`` made)."""
        w = np.negative(expected)
        if self._observed is not None:
            w += self._observed
        else:  # (the same sums as observed - expected, term for term)
            support, values = self.observed_support
            w[support] += values
        w *= C
        return w

    @property
    def center(self):
        """The L2 penalty's center (None: 0)."""
        return self.penalty.center

    def scores(self, batch, w):
        """Part scores ``F^T (feature_scale * w)``."""
        return self.structure.part_scores(
            batch, w if self.feature_scale is None else self.feature_scale * w)

    def features(self, batch, z, sample_weight=None):
        """``feature_scale * F z``."""
        out = self.structure.expected_features(batch, z, sample_weight)
        return out if self.feature_scale is None else self.feature_scale * out

    def example_losses(self, w, return_worst=False, margins_of=None):
        """Every example's loss at ``w`` (see :func:`._objective.example_losses`)."""
        return example_losses(self.structure, self.chunks, w, self.Y, self.kind,
                              self.feature_scale, return_worst=return_worst,
                              margins_of=margins_of)

    def primal(self, w, C, penalty=None, losses=None):
        """``penalty(w) + C sum_i s_i loss_i(w)``; ``losses``: the losses at ``w`` if known.

        ``penalty`` None is :attr:`penalty` (L2 about the center).
        """
        if losses is None:
            losses = self.example_losses(w)
        penalty = self.penalty if penalty is None else penalty
        return penalty.value(w) + C * float(self.sample_weight @ losses)

    def evaluate(self, w):
        """Hinge terms, a subgradient of their weighted sum and the most violated outputs.

        Returns
        -------
        losses : ndarray of shape (n_samples,)
        subgradient : ndarray of shape (n_weights,)
            ``sum_i s_i (phi(x_i, y*_i) - phi(x_i, y_i))`` (scaled).
        violated : ndarray of shape (n_parts_total,)
            The encodings of the most violated outputs ``y*``.
        """
        losses, violated = self.example_losses(w, return_worst=True)
        return losses, self.features(self.batch, violated, self.sample_weight) - self.observed, \
            violated

    def expected_loss(self, parts):
        """``sum_i s_i E[loss(y_i, y)]`` under part marginals (or encodings) ``parts``."""
        return float(self.sample_weight @ self.expected_losses(parts)
                     + self.sample_weight @ self.loss_offsets)

    def expected_losses(self, parts):
        """``E[loss(y_i, y)]`` of every example, without the loss offsets."""
        return segment_sums(parts * self.part_losses, self.batch.part_offsets)

    def dual_pair(self, parts):
        """``(L, G)``: ``sum_i s_i H_i(w) >= L + w . G`` for every ``w`` (hinge).

        ``L = sum_i s_i E[loss(y_i, y)]`` and ``G = sum_i s_i (E[phi(x_i, y)] -
        phi(x_i, y_i))`` under part marginals ``parts``; with the most violated
        outputs' encodings, ``G`` is :meth:`evaluate`'s subgradient and the bound
        is tight.
        """
        return (self.expected_loss(parts),
                self.features(self.batch, parts, self.sample_weight) - self.observed)

    def example_features(self, i, parts_i):
        """``sum_r parts_i[r] phi(x_i, r)`` for the parts of example ``i`` alone."""
        sub = self._example_batches.get(i)
        if sub is None:
            sub = self._example_batches[i] = self.structure.take(self.batch, np.array([i]))
        return self.features(sub, parts_i)

    def example_slice(self, i):
        """Slice of example ``i`` in part vectors."""
        offsets = self.batch.part_offsets
        return slice(int(offsets[i]), int(offsets[i + 1]))
