"""The batch operations a structure derives from its kernel operations.

:class:`DerivedOperations` holds the parts operations (``_base.OPERATIONS``) that come
from a structure's per-example numba operations (``BaseStructure.kernel_ops``): each
checks its inputs, then runs one numba loop over the examples: the structure's own
(``KernelOps.batch_loops``) or that of ``_generic_kernels``.
``BaseStructure`` inherits them; a structure overrides one with a hand-written batch
method (a chain's forward-backward), and ``BaseStructure.supports`` reads which it
performs.
"""

import numpy as np

from . import _generic_kernels
from ._batch import check_part_vector, check_sample_weight
from ._kernel import empty_scale, kernel_provides
from ._semiring import MAX_K

__all__ = ["DerivedOperations"]


def _count(value, name, owner):
    """``value`` as a Python int of at least 1, or a ValueError naming the parameter."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{owner}: {name} must be an integer of at least 1, got {value!r}.")
    return int(value)


class DerivedOperations:
    """The parts operations derived from the kernel operations (a base of ``BaseStructure``).

    Each runs the structure's ``kernel_ops`` over a batch, and raises
    ``UnsupportedOperation`` when they do not give it.  They use the
    structure's ``kernel_data``, ``kernel_weights``, ``contract_weights``,
    ``check_outputs``, ``part_losses`` and ``_kernel_for``, which ``BaseStructure`` defines.
    """

    # ------------------------------------------------------- parts operations
    def part_scores(self, batch, w):
        """Scores ``theta_r = w . phi(x_i, r)`` of all parts of all examples.

        This is the map ``F^T`` from weight space to part space.

        Parameters
        ----------
        batch : batch object
            A batch returned by :meth:`make_batch`.
        w : array-like of shape (batch.n_weights,)
            Weight vector, in the structure's weight layout.

        Returns
        -------
        scores : ndarray of shape (n_parts_total,)
            Flat part scores (``n_parts_total`` is ``batch.part_offsets[-1]``);
            example ``i`` owns ``scores[part_offsets[i]:part_offsets[i + 1]]``.

        Raises
        ------
        UnsupportedOperation
            If the structure does not implement this operation.
        """
        ops = self._kernel_for("part_scores")
        w = check_part_vector(w, batch.n_weights, type(self).__name__, "weights w")
        out = np.empty(int(batch.part_offsets[-1]))
        ops.loop(_generic_kernels.batch_part_scores)(
            self.kernel_data(batch), batch.part_offsets, self.kernel_weights(batch, w),
            empty_scale(), out)
        return out

    def expected_features(self, batch, z, sample_weight=None):
        """Features ``sum_i s_i sum_r z_r phi(x_i, r)`` of a weighting ``z`` of the parts.

        This is the map ``F`` from part space to weight space, the adjoint of
        :meth:`part_scores`: ``part_scores(batch, w) @ z ==
        w @ expected_features(batch, z)``.  With ``z`` the encoding of outputs
        it gives their joint feature vector ``sum_i phi(x_i, y_i)``; with ``z``
        the marginals, the expected features.

        Parameters
        ----------
        batch : batch object
            A batch returned by :meth:`make_batch`.
        z : array-like of shape (n_parts_total,)
            A value for every part of every example, flat.
        sample_weight : array-like of shape (batch.n_samples,) or float, default=None
            Weight ``s_i`` of each example's contribution; ``None`` weighs
            every example 1.

        Returns
        -------
        features : ndarray of shape (batch.n_weights,)
            The weighted sum of part feature vectors, in the weight layout.

        Raises
        ------
        UnsupportedOperation
            If the structure does not implement this operation.
        """
        ops = self._kernel_for("expected_features")
        name = type(self).__name__
        z = check_part_vector(z, batch.part_offsets[-1], name, "z")
        sample_weight = check_sample_weight(sample_weight, batch.n_samples, name)
        out = np.zeros(batch.n_weights)
        ops.loop(_generic_kernels.batch_add_features)(
            self.kernel_data(batch), batch.part_offsets, z,
            np.zeros(0) if sample_weight is None else sample_weight, empty_scale(), out)
        return self.contract_weights(batch, out)

    def encode(self, batch, Y):
        """Part vector of outputs: how often each part occurs in each output.

        An indicator vector for parts that belong to one position; a count for
        parts shared by all positions of an example (the tied transition parts
        of a chain), so that ``encode(batch, Y) @ part_scores(batch, w)`` is
        the total score ``sum_i w . phi(x_i, y_i)`` in every case.

        Parameters
        ----------
        batch : batch object
            A batch returned by :meth:`make_batch`.
        Y : array-like of int of shape (n_units_total,)
            Encoded outputs of all examples, flat.

        Returns
        -------
        z : ndarray of float64 of shape (n_parts_total,)
            The part vector of ``Y``.

        Raises
        ------
        UnsupportedOperation
            If the structure does not implement this operation.
        """
        ops = self._kernel_for("encode")
        Y = self.check_outputs(batch, Y)
        z = np.zeros(int(batch.part_offsets[-1]))
        ops.loop(_generic_kernels.batch_encode)(
            self.kernel_data(batch), batch.part_offsets, batch.unit_offsets, Y, z)
        return z

    def part_losses(self, batch, Y):
        """Loss of every part ``l(x_i, y_i, r)`` with respect to the true outputs.

        The loss of any candidate output ``y`` is linear in its encoding,
        ``loss(Y, y) = encode(batch, y) @ part_losses(batch, Y)``, up to a
        per-example constant that does not depend on ``y`` (zero for chains
        and multiclass), which is what loss-augmented inference needs.

        Parameters
        ----------
        batch : batch object
            A batch returned by :meth:`make_batch`.
        Y : array-like of int of shape (n_units_total,)
            True encoded outputs of all examples, flat.

        Returns
        -------
        losses : ndarray of shape (n_parts_total,)
            Flat part losses.

        Raises
        ------
        UnsupportedOperation
            If the structure does not implement this operation.
        """
        ops = self._kernel_for("part_losses")
        Y = self.check_outputs(batch, Y)
        losses = np.empty(int(batch.part_offsets[-1]))
        ops.loop(_generic_kernels.batch_part_losses)(
            self.kernel_data(batch), batch.part_offsets, batch.unit_offsets, Y, losses)
        return losses

    def decode(self, batch, z):
        """Outputs from a part vector (the inverse of :meth:`encode`).

        Exact for the encoding of an output; a fractional vector (marginals,
        a point of the relaxed polytope) is rounded per output unit (its
        largest part, or a threshold of 1/2 for binary parts).

        Parameters
        ----------
        batch : batch object
            A batch returned by :meth:`make_batch`.
        z : array-like of shape (n_parts_total,)
            Part vector of all examples, flat.

        Returns
        -------
        Y : ndarray of int64 of shape (n_units_total,)
            Encoded outputs, flat.

        Raises
        ------
        UnsupportedOperation
            If the structure does not implement this operation.
        """
        ops = self._kernel_for("decode")
        z = check_part_vector(z, batch.part_offsets[-1], type(self).__name__, "z")
        Y = np.empty(int(batch.unit_offsets[-1]), dtype=np.int64)
        ops.loop(_generic_kernels.batch_decode)(
            self.kernel_data(batch), batch.part_offsets, batch.unit_offsets, z, Y)
        return Y

    def argmax(self, batch, scores):
        """Highest-scoring output ``argmax_y sum_{r in y} scores_r`` of every example.

        Parameters
        ----------
        batch : batch object
            A batch returned by :meth:`make_batch`.
        scores : array-like of shape (n_parts_total,)
            Part scores, flat, e.g. from :meth:`part_scores`.

        Returns
        -------
        Y : ndarray of int64 of shape (n_units_total,)
            The MAP outputs of all examples, flat.

        Raises
        ------
        ValueError
            If an example has no output of finite score (naming it).
        UnsupportedOperation
            If the structure does not implement this operation.
        """
        ops = self._kernel_for("argmax")
        scores = self._check_scores(batch, scores)
        Y = np.zeros(int(batch.unit_offsets[-1]), dtype=np.int64)
        ops.loop(_generic_kernels.batch_argmax)(
            self.kernel_data(batch), batch.part_offsets, batch.unit_offsets, scores, Y)
        failed = np.flatnonzero(Y < 0)  # (the kernels' mark of an example without an output)
        if failed.size:
            i = int(np.searchsorted(batch.unit_offsets, failed[0], side="right") - 1)
            raise ValueError(f"{type(self).__name__}: example {i} has no output of finite "
                             "score (under this structure's rules, every output of it crosses "
                             "a part scored -inf, or there is none).")
        return Y

    def _check_scores(self, batch, scores):
        """Part scores for :meth:`argmax` and :meth:`marginals`: finite, or ``-inf`` too
        where the structure declares :attr:`accepts_forbidden_parts`."""
        return check_part_vector(scores, batch.part_offsets[-1], type(self).__name__,
                                 forbidden=self.accepts_forbidden_parts)

    def loss_augmented_argmax(self, batch, scores, Y):
        """Most violated outputs ``argmax_y sum_{r in y} (scores_r + l(x, Y, r))``.

        The inference step of max-margin learners (subgradient, cutting
        plane, duality gaps).  By default :meth:`argmax` of
        ``scores + part_losses(batch, Y)``.

        Parameters
        ----------
        batch : batch object
            A batch returned by :meth:`make_batch`.
        scores : array-like of shape (n_parts_total,)
            Part scores, flat.
        Y : array-like of int of shape (n_units_total,)
            True encoded outputs, flat; they define the loss.

        Returns
        -------
        Y_hat : ndarray of int64 of shape (n_units_total,)
            The loss-augmented MAP outputs, flat.

        Raises
        ------
        UnsupportedOperation
            If the structure does not implement this operation.
        """
        if not self.supports("loss_augmented_argmax"):
            self._unsupported("loss_augmented_argmax")
        scores = check_part_vector(scores, batch.part_offsets[-1], type(self).__name__)
        return self.argmax(batch, scores + self.part_losses(batch, Y))

    def marginals(self, batch, scores):
        """Part marginals and log-partition under ``p(y) ~ exp(sum_{r in y} scores_r)``.

        The Gibbs distribution of each example is normalised separately.  The
        marginal of a part is the expected value of its entry in
        :meth:`encode`, so ``expected_features(batch, mu)`` gives the expected
        features (the gradient of the log-partition in weight space).

        Parameters
        ----------
        batch : batch object
            A batch returned by :meth:`make_batch`.
        scores : array-like of shape (n_parts_total,)
            Part scores, flat.

        Returns
        -------
        mu : ndarray of shape (n_parts_total,)
            Part marginals, flat.
        log_partition : ndarray of shape (n_samples,)
            ``log Z_i = log sum_y exp(sum_{r in y} scores_r)`` of every example.

        Raises
        ------
        UnsupportedOperation
            If the structure does not implement this operation.
        """
        ops = self._kernel_for("marginals")
        scores = self._check_scores(batch, scores)
        mu = np.empty_like(scores)
        log_partition = np.empty(batch.n_samples)
        ops.loop(_generic_kernels.batch_marginals)(
            self.kernel_data(batch), batch.part_offsets, scores, mu, log_partition)
        return mu, log_partition

    def log_partition(self, batch, scores):
        """``log Z_i`` of every example, the second output of :meth:`marginals`.

        From the structure's ``log_partition`` kernel where its kernel operations
        provide one (a dynamic program's inside pass alone, or a structure's own
        upward pass), else from :meth:`marginals`.

        Parameters
        ----------
        batch : batch object
            A batch returned by :meth:`make_batch`.
        scores : array-like of shape (n_parts_total,)
            Part scores, flat.

        Returns
        -------
        log_partition : ndarray of shape (n_samples,)
            ``log Z_i = log sum_y exp(sum_{r in y} scores_r)`` of every example.

        Raises
        ------
        UnsupportedOperation
            If the structure does not implement :meth:`marginals`.
        """
        if not kernel_provides(self, "log_partition"):
            return self.marginals(batch, scores)[1]
        scores = self._check_scores(batch, scores)
        log_partition = np.empty(batch.n_samples)
        self.kernel_ops.loop(_generic_kernels.batch_log_partition)(
            self.kernel_data(batch), batch.part_offsets, scores, log_partition)
        return log_partition

    def k_best(self, batch, scores, k):
        """The ``k`` highest-scoring outputs of every example, best first.

        The k-best max-plus semiring on the structure's dynamic program
        (:mod:`._semiring`); ties are broken in a fixed order, so the result
        is deterministic, and the first output is :meth:`argmax`'s.

        Parameters
        ----------
        batch : batch object
            A batch returned by :meth:`make_batch`.
        scores : array-like of shape (n_parts_total,)
            Part scores, flat.
        k : int
            How many outputs per example, at least 1: any number, the work and
            the memory grow with ``n_best`` below, not with ``k``.

        Returns
        -------
        Y : ndarray of int64 of shape (n_best, n_units_total)
            Row ``j`` holds the ``j``-th best output of every example, flat;
            zeros where an example has fewer than ``j + 1`` outputs.
            ``n_best = min(k, the most outputs of an example)``, at least 1
            (the outputs of finite score, counted by the counting semiring).
        best_scores : ndarray of shape (n_samples, n_best)
            The outputs' scores; ``-inf`` where there is no such output.

        Raises
        ------
        UnsupportedOperation
            If the structure has no dynamic program.
        """
        ops = self._kernel_for("k_best")
        k = min(_count(k, "k", type(self).__name__), MAX_K)  # no more can exist
        scores = self._check_scores(batch, scores)
        return ops.loop(_generic_kernels.batch_k_best)(
            self.kernel_data(batch), batch.part_offsets, batch.unit_offsets, scores, k)

    def sample(self, batch, scores, n_draws, random_state=None):
        """Exact samples of ``p(y) ~ exp(sum_{r in y} scores_r)`` for every example.

        Forward in the log semiring, then top-down sampling of the
        structure's dynamic program (:mod:`._semiring`).

        Parameters
        ----------
        batch : batch object
            A batch returned by :meth:`make_batch`.
        scores : array-like of shape (n_parts_total,)
            Part scores, flat.
        n_draws : int
            Samples per example, at least 1.
        random_state : int, RandomState instance or None, default=None
            Seeds the draws.

        Returns
        -------
        Y : ndarray of int64 of shape (n_draws, n_units_total)
            Row ``j`` holds the ``j``-th sample of every example, flat.

        Raises
        ------
        UnsupportedOperation
            If the structure has no dynamic program.
        """
        from sklearn.utils import check_random_state

        ops = self._kernel_for("sample")
        n_draws = _count(n_draws, "n_draws", type(self).__name__)
        scores = self._check_scores(batch, scores)
        seed = int(check_random_state(random_state).randint(np.iinfo(np.int32).max))
        Y = np.zeros((n_draws, int(batch.unit_offsets[-1])), dtype=np.int64)
        ops.loop(_generic_kernels.batch_sample)(
            self.kernel_data(batch), batch.part_offsets, batch.unit_offsets, scores, seed, Y)
        return Y

    def project(self, batch, v, warm_start=None):
        """Euclidean projection of a part vector onto the relaxed output polytope.

        The polytope of each example is the convex hull (or its exact linear
        relaxation) of the encodings of its outputs; examples are projected
        independently.  Used by the dual extragradient method.

        Parameters
        ----------
        batch : batch object
            A batch returned by :meth:`make_batch`.
        v : array-like of shape (n_parts_total,)
            Part vector of all examples, flat.
        warm_start : dict or None, default=None
            A dictionary owned by the caller, empty at first, passed again with
            every projection of a sequence of nearby points of the same batch:
            a structure whose projection is iterative keeps its duals there
            and starts the next projection from them.  Structures with a
            closed-form or one-shot projection ignore it.

        Returns
        -------
        projection : ndarray of shape (n_parts_total,)
            The closest point of the polytope of every example, flat.

        Raises
        ------
        UnsupportedOperation
            If the structure does not implement this operation.
        """
        ops = self._kernel_for("project")
        v = check_part_vector(v, batch.part_offsets[-1], type(self).__name__, "v")
        out = np.empty_like(v)
        ops.loop(_generic_kernels.batch_project)(
            self.kernel_data(batch), batch.part_offsets, v, out)
        return out
