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

The protocol is closed: solvers and estimators call nothing else on a
structure or a batch than what :class:`BaseStructure` documents, and never ask
which structure they hold.  What a structure *provides* is, in one place, the
methods it overrides and its :attr:`~BaseStructure.kernel_ops`:

* data: :meth:`~BaseStructure.make_batch` (and the ``_batch`` it builds through,
  with the batch class's declared ragged fields, from which
  :meth:`~BaseStructure.take` is derived), :meth:`~BaseStructure.check_outputs`;
* parts: :meth:`~BaseStructure.part_losses` and, where the losses are not
  Hamming, :meth:`~BaseStructure.loss_offsets`;
* kernels: :attr:`~BaseStructure.kernel_ops` and
  :meth:`~BaseStructure.kernel_data`, the per-example numba operations
  (scores, features, encodings, a dynamic program as a hypergraph, or
  combinatorial inference) from which the batch operations below and the
  generic numba loops of the solvers are compiled (:mod:`._kernel`);
* when needed: :meth:`~BaseStructure.feature_bounds` (step sizes),
  :meth:`~BaseStructure.nonnegative_weights` (sign constraints), and
  :meth:`~BaseStructure.output_space`, what only the estimators need (target codec,
  scores, weight names, the structure that training runs: :mod:`._output_space`).

Everything else is derived: the batch operations of :data:`OPERATIONS` (scores,
features, encoding, decoding, argmax, marginals, k-best, samples, projection)
come from the kernels (:mod:`._derived`), ``take`` from the batch's declared fields,
the acceptance of ``-inf`` scores from :attr:`~BaseStructure.accepts_forbidden_parts`,
and :meth:`~BaseStructure.supports` reads what is
provided, so nothing is declared twice.  A structure's own numba loop over a batch (a
chain's forward-backward, whose examples share one exponentiated transition matrix)
replaces the generic one (``KernelOps`` batch loops), and ``check_structure`` compares
them.
A structure object is never modified by an operation: what an operation carries to
its next call (the duals of a warm-started projection) lives in the caller's object.
"""

import inspect
from abc import ABC, abstractmethod

import numpy as np

from .._memory import random_access_copy
from ._batch import check_take_indices, take_fields
from ._derived import DerivedOperations
from ._kernel import kernel_provides
from ._output_space import OutputSpace

__all__ = ["BaseStructure", "UnsupportedOperation", "require_kernel"]


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


def require_kernel(structure, operations, user, advice=""):
    """Raise unless a structure's kernel operations include every named one.

    Parameters
    ----------
    structure : BaseStructure
        The structure a solver holds.
    operations : sequence of str
        Names among :data:`sklearn_struct.structures._kernel.KERNEL_OPERATIONS`.
    user : str
        What needs them, for the message (e.g. ``"online EG"``).
    advice : str, default=""
        What to do instead, appended to the message.

    Raises
    ------
    UnsupportedOperation
        Naming the structure, the user and the operations.
    """
    if not kernel_provides(structure, *operations):
        raise UnsupportedOperation(
            f"{type(structure).__name__}: {user} runs inside numba and needs the kernel "
            f"operations {', '.join(operations)} (see KernelOps){advice}.")


#: Names of the parts operations, in the order of ARCHITECTURE.md's table of the protocol.
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
    "feature_bounds",
    "k_best",
    "sample",
)

#: Parts operations that a structure gets from its per-example kernel operations.
_FROM_KERNEL = {
    "part_scores": ("part_scores",),
    "expected_features": ("add_features",),
    "encode": ("encode",),
    "decode": ("decode",),
    "argmax": ("argmax",),
    "marginals": ("marginals",),
    "project": ("project",),
    "k_best": ("k_best",),
    "sample": ("sample",),
    "part_losses": ("part_losses",),
}


#: Protocol names that moved, and where: a subclass still defining one would be ignored.
_MOVED = {
    **{name: f"it moved to the output space's {new!r} (override output_space())"
       for name, new in (
        ("target_codec", "codec"), ("for_classes", "for_classes"), ("score_outputs", "score"),
        ("unit_values", "unit_values"), ("weight_attributes", "weight_attributes"),
        ("named_weights", "named_weights"), ("n_features_in", "n_features_in"),
        ("input_layout", "input_layout"), ("feature_support", "feature_support"),
        ("flat_outputs", "flat"))},
    "supported_operations": "supports() reads the methods a structure overrides and its "
                            "kernel_ops (set an inherited operation to None to withdraw it)",
}


class BaseStructure(DerivedOperations, ABC):
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

    Subclasses implement :meth:`make_batch` and :meth:`check_outputs` (and
    ``_batch``, from which :meth:`take` rebuilds a sub-batch), and give the rest
    as per-example kernel operations
    (:attr:`kernel_ops` and :meth:`kernel_data`) or as overriding batch
    methods; every operation neither gives raises
    :class:`UnsupportedOperation`.  Their methods inherit the docstrings
    written here.  :func:`sklearn_struct.utils.check_structure` checks a
    structure against brute-force enumeration.

    Attributes
    ----------
    kernel_ops : KernelOps or None
        Per-example numba operations of the structure (class attribute;
        ``None``: no kernels, so no online EG or online subgradient).
    accepts_forbidden_parts : bool
        Whether :meth:`argmax` and :meth:`marginals` accept part scores of
        ``-inf``, a forbidden part (class attribute; default False: finite scores).

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

    #: Per-example numba operations (subclasses set a KernelOps).
    kernel_ops = None

    #: Whether inference takes a part scored ``-inf`` as forbidden (probability 0, never in
    #: the argmax): constraints and partial labels score parts so.  Otherwise part scores
    #: must be finite.
    accepts_forbidden_parts = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in _MOVED.keys() & vars(cls).keys():
            raise TypeError(f"{cls.__name__} defines {name!r}, which is no longer part of the "
                            f"structure protocol; {_MOVED[name]}.")

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

    def take(self, batch, indices):
        """Sub-batch of some examples of a batch (for CV folds and parallel chunks).

        Derived from what the batch's class declares (its ``ragged``,
        ``per_example`` and ``shared`` fields, see
        :class:`~sklearn_struct.structures._batch.Batch`): the selected fields go
        to the structure's ``_batch``, which rebuilds the others.

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

        Raises
        ------
        ValueError
            If no example is selected, or an index is out of range.
        """
        indices = check_take_indices(indices, batch.n_samples)
        if indices.size == 0:
            raise ValueError(f"{type(self).__name__}.take: expected at least one example index.")
        return self._batch(**take_fields(batch, indices))

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

    # ------------------------------------------------------------------ parts
    # ---------------------------------------------------------------- outputs
    def output_space(self):
        """How this structure's outputs and weights look to the user.

        Returns
        -------
        space : OutputSpace
            The target codec, scores, per-unit views and weight names the
            estimators show (:mod:`sklearn_struct.structures._output_space`);
            by default one label per output unit and the weights as ``coef_``.
        """
        return OutputSpace(self)

    # --------------------------------------------------------------- weights
    def nonnegative_weights(self, batch):
        """Weights that must stay non-negative (sign constraints of the model).

        Parameters
        ----------
        batch : batch object
            A batch returned by :meth:`make_batch`.

        Returns
        -------
        mask : ndarray of bool of shape (batch.n_weights,)
            By default all False.  (Min-cut edge weights must be non-negative
            for inference to stay submodular.)
        """
        return np.zeros(batch.n_weights, dtype=bool)

    def feature_bounds(self, batch, geometry):
        """Per-example feature bounds ``B_i`` for the step sizes of the entropic extragradient.

        Parameters
        ----------
        batch : batch object
            A batch returned by :meth:`make_batch`.
        geometry : {"euclidean", "entropic"}
            How the output side is stepped: Euclidean projections
            (``B_i`` bounds the 2-norm of every weight's feature column over
            the parts of example ``i``) or KL steps on the marginals
            (``B_i`` bounds ``||f_i(y)||_inf`` over the outputs ``y``).

        Returns
        -------
        bounds : ndarray of shape (n_samples,)
            The bound ``B_i`` of every example.

        Raises
        ------
        UnsupportedOperation
            If the structure declares no bound.
        """
        self._unsupported("feature_bounds")

    def loss_offsets(self, batch, Y):
        """Per-example constants completing the part losses.

        ``loss(Y_i, y) = loss_offsets[i] + encode(y) . part_losses(batch, Y)``
        for every output ``y`` of example ``i``.

        Parameters
        ----------
        batch : batch object
            A batch returned by :meth:`make_batch`.
        Y : array-like of int of shape (n_units_total,)
            True encoded outputs, flat.

        Returns
        -------
        offsets : ndarray of shape (n_samples,)
            By default zeros (Hamming losses over labelled units).
        """
        return np.zeros(batch.n_samples)

    # --------------------------------------------------------------- kernels
    def kernel_data(self, batch, training=False):
        """Arguments of the per-example kernel operations for a batch.

        Parameters
        ----------
        batch : batch object
            A batch returned by :meth:`make_batch`.
        training : bool, default=False
            Whether the data will also serve the operations only training
            uses (``add_features_norm`` of the online EG epoch); a structure may
            precompute more for them (the chains' token Gram matrices).

        Returns
        -------
        data : tuple
            Arrays and scalars that numba accepts (no Python objects), passed
            as the first argument of every operation of :attr:`kernel_ops`.

        Raises
        ------
        UnsupportedOperation
            If the structure has no kernel operations.
        """
        self._unsupported("kernel_data")

    def kernel_weights(self, batch, w):
        """Weights in the kernels' layout, from the structure's layout.

        Parameters
        ----------
        batch : batch object
            A batch returned by :meth:`make_batch` (it fixes the layout).
        w : ndarray of shape (batch.n_weights,)
            Weights in the structure's layout.

        Returns
        -------
        w_kernel : ndarray of float64 of shape (batch.n_weights,)
            A new array; by default a copy of ``w``, in memory for random access
            (:func:`sklearn_struct._memory.random_access_copy`).
        """
        return random_access_copy(np.asarray(w, dtype=np.float64))

    def contract_weights(self, batch, w_kernel):
        """Weights in the structure's layout, from the kernels' layout.

        The inverse of :meth:`kernel_weights`.

        Parameters
        ----------
        batch : batch object
            A batch returned by :meth:`make_batch` (it fixes the layout).
        w_kernel : ndarray of shape (batch.n_weights,)
            Weights in the kernels' layout.

        Returns
        -------
        w : ndarray of float64 of shape (batch.n_weights,)
            By default ``w_kernel`` itself.
        """
        return w_kernel

    # --------------------------------------------------------------- helpers
    def __repr__(self):
        """The class and the constructor arguments that differ from their defaults."""
        defaults = _constructor_defaults(type(self))
        shown = [f"{name}={_brief(value)}" for name, value in self._params().items()
                 if not _is_default(value, defaults[name])]
        return f"{type(self).__name__}({', '.join(shown)})"

    def _params(self):
        """The constructor's arguments as this structure holds them."""
        return {name: getattr(self, name) for name in _constructor_defaults(type(self))}

    def supports(self, operation):
        """Whether this structure performs a parts operation.

        Nothing is declared: a structure performs what it overrides here and
        what its :attr:`kernel_ops` give (``loss_augmented_argmax`` follows
        from ``argmax`` and ``part_losses``).  A subclass withdraws an
        operation it inherits by setting it to None (``marginals = None``).

        Parameters
        ----------
        operation : str
            Name of the operation, e.g. ``"marginals"``.

        Returns
        -------
        supported : bool
            Whether the operation runs on this structure.
        """
        if operation == "loss_augmented_argmax":
            return self.supports("argmax") and self.supports("part_losses")
        method = getattr(type(self), operation, None)
        if operation not in OPERATIONS or method is None:  # ``marginals = None`` withdraws it
            return False
        if method is not getattr(BaseStructure, operation):
            return True
        return operation in _FROM_KERNEL and kernel_provides(self, *_FROM_KERNEL[operation])

    def check_supports(self, *operations, needed_by=None):
        """Check that every given parts operation is performed, before any work.

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
                f"it supports: {self._supported_text()}.")

    def _supported_text(self):
        return ", ".join(op for op in OPERATIONS if self.supports(op)) or "nothing"

    def _unsupported(self, operation):
        raise UnsupportedOperation(
            f"{type(self).__name__} cannot compute {operation!r}; "
            f"it supports: {self._supported_text()}.")

    def _kernel_for(self, operation):
        """The kernel operations behind a batch operation, or UnsupportedOperation."""
        if not kernel_provides(self, *_FROM_KERNEL[operation]):
            self._unsupported(operation)
        return self.kernel_ops


def _constructor_defaults(cls):
    """``{name: default}`` of the keyword arguments of ``cls.__init__``."""
    return {name: parameter.default
            for name, parameter in inspect.signature(cls.__init__).parameters.items()
            if name != "self" and parameter.kind not in (parameter.VAR_POSITIONAL,
                                                         parameter.VAR_KEYWORD)}


def _is_default(value, default):
    if value is default:
        return True
    # Only plain values compare by equality: an array equal to a default is still shown.
    plain = (bool, int, float, str)
    return type(value) is type(default) and isinstance(value, plain) and value == default


def _brief(value):
    """``repr(value)``, with matrices and long values abbreviated."""
    if (isinstance(value, np.ndarray) and value.ndim > 1) or hasattr(value, "toarray"):
        return "array(...)"
    text = repr(value)
    if len(text) <= 80:
        return text
    size = f" of {len(value)}" if hasattr(value, "__len__") else ""
    return f"<{type(value).__name__}{size}>"
