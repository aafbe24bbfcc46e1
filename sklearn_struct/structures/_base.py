"""The parts abstraction shared by every structure.

A *structure* knows how an output ``y`` of an input ``x`` decomposes into parts
``r`` (a chain node with its label, a label transition, a matching edge, a cut
edge), how features and losses decompose over those parts, and how to run
inference over part scores.  Solvers only ever talk to structures through the
operations of :class:`BaseStructure`; kernels (numba) sit underneath.

Conventions
-----------
A structure object is configuration only (hyper-parameters such as whether a
chain has start/end parts).  The data of a training or test set live in a
*batch*, built once by :meth:`BaseStructure.make_batch` and passed back to every
operation.  A batch stores ragged per-example data as flat arrays plus offsets:

``batch.n_samples``
    number of examples.
``batch.unit_offsets``
    ``(n_samples + 1,)`` int64.  Outputs are flat integer arrays with one entry
    per *output unit* (a token of a chain, a sample of a multiclass problem, an
    edge of a matching, a node of a min-cut graph); example ``i`` owns
    ``Y[unit_offsets[i]:unit_offsets[i + 1]]``.
``batch.part_offsets``
    ``(n_samples + 1,)`` int64.  Every vector over parts (scores, marginals,
    encodings, losses) is flat; example ``i`` owns
    ``v[part_offsets[i]:part_offsets[i + 1]]``.
``batch.n_weights``
    length of the weight vector ``w`` (the map ``F`` goes from part space to
    weight space, ``F^T`` back).

Outputs ``Y`` are always *encoded* integers (state indices ``0..n_states-1``
for chains and multiclass, ``0/1`` for matching edges and cut nodes); mapping
user labels to state indices is the estimator's job.

An operation a structure cannot perform raises :class:`UnsupportedOperation`
(a ``NotImplementedError``) naming the structure and the operation, so that an
estimator can call :meth:`BaseStructure.check_supports` before any work.
"""

from abc import ABC, abstractmethod

import numpy as np

__all__ = ["BaseStructure", "UnsupportedOperation"]


class UnsupportedOperation(NotImplementedError):
    """Raised when a structure is asked for an operation it cannot perform."""


#: Names of the parts operations, in the order of DESIGN.md.
OPERATIONS = (
    "part_scores",
    "expected_features",
    "encode",
    "decode",
    "part_losses",
    "argmax",
    "loss_augmented_argmax",
    "marginals",
    "project",
)


class BaseStructure(ABC):
    """Abstract base of all structures (the parts abstraction).

    Subclasses implement :meth:`make_batch` and the subset of the parts
    operations they support; every other operation raises
    :class:`UnsupportedOperation`.  ``supported_operations`` lists what a
    structure can do.
    """

    #: Operations this structure implements (subclasses override).
    supported_operations = ()

    # ------------------------------------------------------------------ data
    @abstractmethod
    def make_batch(self, X, n_states=None):
        """Validate ``X`` and build the flat batch representation.

        Parameters
        ----------
        X : structure-specific container
            The inputs of a data set (see the subclass documentation).
        n_states : int, optional
            Number of output states, fixed by the estimator from the training
            labels (chains, multiclass).  Ignored by binary structures.

        Returns
        -------
        batch : object
            Holds at least ``n_samples``, ``unit_offsets``, ``part_offsets``
            and ``n_weights``.  Raises ``ValueError``/``TypeError`` naming the
            offending example for malformed input.
        """

    @abstractmethod
    def take(self, batch, indices):
        """Sub-batch of the examples ``indices`` (for CV folds and parallel chunks)."""

    def check_outputs(self, batch, Y):
        """Validate encoded outputs ``Y`` against ``batch``; return an int64 array.

        Raises ``ValueError`` naming the first example whose length or values
        do not fit.
        """
        Y = np.asarray(Y)
        n_units = int(batch.unit_offsets[-1])
        if Y.ndim != 1 or Y.shape[0] != n_units:
            raise ValueError(
                f"{type(self).__name__}: expected {n_units} encoded outputs in total, "
                f"got an array of shape {Y.shape}."
            )
        return Y.astype(np.int64, copy=False)

    # ------------------------------------------------------- parts operations
    def part_scores(self, batch, w):
        """``theta_r = w . phi(x, r)`` for all parts of all examples (the map ``F^T``)."""
        self._unsupported("part_scores")

    def expected_features(self, batch, z, sample_weight=None):
        """``sum_i s_i sum_r z_r phi(x_i, r)`` for part weights ``z`` (the map ``F``).

        ``sample_weight`` (``s_i``, default 1) scales each example's
        contribution.  Returns a vector of length ``batch.n_weights``.
        """
        self._unsupported("expected_features")

    def encode(self, batch, Y):
        """Part indicator (or part count) vector of the outputs ``Y``."""
        self._unsupported("encode")

    def decode(self, batch, z):
        """Outputs ``Y`` from an integral part vector ``z`` (inverse of :meth:`encode`)."""
        self._unsupported("decode")

    def part_losses(self, batch, Y):
        """Per-part loss ``l(x, y_true, r)`` so that ``loss(y_true, y) = encode(y) . l``."""
        self._unsupported("part_losses")

    def argmax(self, batch, scores):
        """MAP outputs ``argmax_y sum_{r in y} scores_r``, one per example."""
        self._unsupported("argmax")

    def loss_augmented_argmax(self, batch, scores, Y):
        """``argmax_y sum_{r in y} (scores_r + l(x, Y, r))``: the most violated outputs."""
        self._unsupported("loss_augmented_argmax")

    def marginals(self, batch, scores):
        """Part marginals and log-partition under ``p(y) ~ exp(sum_{r in y} scores_r)``.

        Returns
        -------
        mu : ndarray of shape (n_parts_total,)
        log_partition : ndarray of shape (n_samples,)
        """
        self._unsupported("marginals")

    def project(self, batch, v):
        """Euclidean projection of the part vector ``v`` onto the relaxed output polytope."""
        self._unsupported("project")

    # --------------------------------------------------------------- helpers
    def supports(self, operation):
        """Whether this structure implements ``operation``."""
        return operation in self.supported_operations

    def check_supports(self, *operations, needed_by=None):
        """Raise :class:`UnsupportedOperation` unless every operation is supported."""
        missing = [op for op in operations if not self.supports(op)]
        if missing:
            who = f" (needed by {needed_by})" if needed_by else ""
            raise UnsupportedOperation(
                f"{type(self).__name__} does not support {', '.join(missing)}{who}; "
                f"it supports: {', '.join(self.supported_operations) or 'nothing'}."
            )

    def _unsupported(self, operation):
        raise UnsupportedOperation(
            f"{type(self).__name__} cannot compute {operation!r}; "
            f"it supports: {', '.join(self.supported_operations) or 'nothing'}."
        )
