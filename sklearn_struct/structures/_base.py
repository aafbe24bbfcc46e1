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

from ._batch import check_part_vector

__all__ = ["BaseStructure", "UnsupportedOperation"]


class UnsupportedOperation(NotImplementedError):
    """Raised when a structure is asked for an operation it cannot perform.

    A subclass of ``NotImplementedError``.  The message names the structure,
    the operation and the operations the structure does support.  Estimators
    call :meth:`BaseStructure.check_supports` when ``fit`` starts so that an
    unsuitable structure fails before any work.

    See Also
    --------
    BaseStructure.check_supports : Raise this error for missing operations.

    Examples
    --------
    >>> from sklearn_struct.structures import ChainStructure, UnsupportedOperation
    >>> try:
    ...     ChainStructure().check_supports("project", needed_by="a solver")
    ... except UnsupportedOperation as error:
    ...     print(error)
    ChainStructure does not support project (needed by a solver); it supports: ...
    """


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

    A structure describes how the output ``y`` of an input ``x`` decomposes
    into parts ``r``, with ``phi(x, y) = sum_{r in y} phi(x, r)`` and
    ``loss(y_true, y) = sum_{r in y} l(x, y_true, r)``, and performs inference
    over part scores.  Learners talk to outputs only through the operations
    below, always on a *batch* built by :meth:`make_batch`: flat arrays with
    ``unit_offsets`` (example ``i`` owns outputs
    ``Y[unit_offsets[i]:unit_offsets[i + 1]]``) and ``part_offsets`` (example
    ``i`` owns parts ``part_offsets[i]:part_offsets[i + 1]`` of every part
    vector).  Read more in the :ref:`User Guide <structures>`.

    Subclasses implement :meth:`make_batch`, :meth:`take` and the subset of the
    parts operations they support, and list that subset in
    ``supported_operations``; every other operation raises
    :class:`UnsupportedOperation`.  Their methods inherit the docstrings
    written here.

    Attributes
    ----------
    supported_operations : tuple of str
        Names of the parts operations this structure implements, among
        ``"part_scores"``, ``"expected_features"``, ``"encode"``, ``"decode"``,
        ``"part_losses"``, ``"argmax"``, ``"loss_augmented_argmax"``,
        ``"marginals"`` and ``"project"``.

    See Also
    --------
    sklearn_struct.structures.ChainStructure : Linear chains (sequence labelling).
    sklearn_struct.structures.MulticlassStructure : Flat multiclass classification.

    Examples
    --------
    Any structure maps part vectors to weight space (``expected_features``, the
    map ``F``) and weights to part scores (``part_scores``, the map ``F^T``);
    the two are adjoint, and the score of an output is its encoding times the
    part scores:

    >>> import numpy as np
    >>> from sklearn_struct.structures import BaseStructure, MulticlassStructure
    >>> structure = MulticlassStructure()
    >>> isinstance(structure, BaseStructure), structure.supports("project")
    (True, True)
    >>> X = np.array([[1.0, 2.0], [3.0, -1.0]])
    >>> batch = structure.make_batch(X, n_states=2)
    >>> w = np.array([0.5, 0.0, -1.0, 1.0])
    >>> z = structure.encode(batch, [1, 0])
    >>> float(structure.part_scores(batch, w) @ z)
    2.5
    >>> float(w @ structure.expected_features(batch, z))
    2.5
    """

    #: Operations this structure implements (subclasses override).
    supported_operations = ()

    # ------------------------------------------------------------------ data
    @abstractmethod
    def make_batch(self, X, n_states=None):
        """Validate the inputs ``X`` of a data set and build their batch.

        The batch is the flat representation every other operation takes;
        build it once per data set.

        Parameters
        ----------
        X : structure-specific container
            The inputs of a data set (see the subclass documentation).
        n_states : int, default=None
            Number of output states, fixed by the estimator from the training
            labels (chains, multiclass).  Ignored by binary structures.

        Returns
        -------
        batch : batch object
            Holds at least ``n_samples``, ``unit_offsets``, ``part_offsets``
            and ``n_weights``.

        Raises
        ------
        ValueError or TypeError
            For malformed input, naming the offending example.
        """

    @abstractmethod
    def take(self, batch, indices):
        """Sub-batch of some examples of a batch (for CV folds and parallel chunks).

        Parameters
        ----------
        batch : batch object
            A batch returned by :meth:`make_batch`.
        indices : array-like of int or of bool
            Indices of the examples to keep, in the order wanted (negative
            indices count from the end), or a boolean mask over the examples.

        Returns
        -------
        sub_batch : batch object
            The batch of the selected examples, of the same type as ``batch``.
        """

    def check_outputs(self, batch, Y):
        """Validate encoded outputs against a batch.

        Parameters
        ----------
        batch : batch object
            A batch returned by :meth:`make_batch`.
        Y : array-like of shape (n_units_total,)
            Encoded outputs of all examples, flat (one integer per output unit;
            ``n_units_total`` is ``batch.unit_offsets[-1]``).

        Returns
        -------
        Y : ndarray of int64 of shape (n_units_total,)
            The outputs, without a copy when they already are int64.

        Raises
        ------
        ValueError
            If ``Y`` does not hold one value per output unit; structures also
            reject values outside their output range, naming the first
            offending example.
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
        self._unsupported("part_scores")

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
        self._unsupported("expected_features")

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
        self._unsupported("encode")

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
        self._unsupported("decode")

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
        self._unsupported("part_losses")

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
        UnsupportedOperation
            If the structure does not implement this operation.
        """
        self._unsupported("argmax")

    def loss_augmented_argmax(self, batch, scores, Y):
        """Most violated outputs ``argmax_y sum_{r in y} (scores_r + l(x, Y, r))``.

        The inference step of max-margin learners (subgradient, cutting
        plane, duality gaps).  A structure that lists it in
        ``supported_operations`` gets it as :meth:`argmax` of
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
        self._unsupported("marginals")

    def log_partition(self, batch, scores):
        """``log Z_i`` of every example, the second output of :meth:`marginals`.

        Structures override it where the log-partition alone is cheaper than
        the marginals (a chain needs only the forward recursion).

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
        return self.marginals(batch, scores)[1]

    def project(self, batch, v):
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

        Returns
        -------
        projection : ndarray of shape (n_parts_total,)
            The closest point of the polytope of every example, flat.

        Raises
        ------
        UnsupportedOperation
            If the structure does not implement this operation.
        """
        self._unsupported("project")

    # --------------------------------------------------------------- helpers
    def supports(self, operation):
        """Whether this structure implements a parts operation.

        Parameters
        ----------
        operation : str
            Name of the operation, e.g. ``"marginals"``.

        Returns
        -------
        supported : bool
            Whether ``operation`` is in ``supported_operations``.
        """
        return operation in self.supported_operations

    def check_supports(self, *operations, needed_by=None):
        """Check that every given parts operation is implemented.

        Estimators call it when ``fit`` starts, before any work.

        Parameters
        ----------
        *operations : str
            Names of the operations needed.
        needed_by : str, default=None
            Who needs them (an estimator or solver name), quoted in the error.

        Raises
        ------
        UnsupportedOperation
            Naming the missing operations and the supported ones.
        """
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
