"""Per-example numba operations of a structure, and how generic loops get them.

A structure that wants every learner to run at numba speed describes one
example at a time with a few ``@njit`` functions (a :class:`KernelOps`), all
taking the structure's *kernel data* (a tuple of arrays and scalars built by
:meth:`BaseStructure.kernel_data`) and an example index ``i``:

``part_scores(data, i, w, scale, out)``
    ``out[r] = (scale * w) . phi(x_i, r)`` for the parts ``r`` of example ``i``
    (``out`` has exactly that many entries; ``scale`` has length 0 for none).
``add_features(data, i, coef, scale, w)``
    ``w += scale * sum_r coef[r] phi(x_i, r)`` (the adjoint of ``part_scores``).
``marginals(data, i, theta, mu)``
    Part marginals of ``p(y) ~ exp(sum_{r in y} theta_r)`` into ``mu``;
    returns ``log Z``.
``log_partition(data, i, theta, scratch)``
    ``log Z`` alone, optional: the default calls ``marginals`` with ``scratch``
    (as many numbers as ``theta``) for ``mu``; a structure gives its own when
    ``log Z`` costs less than the marginals (a chain's forward pass alone).
``argmax(data, i, scores, y_out)``
    Highest-scoring output, as encoded output units, into ``y_out``; ``-1`` in every
    unit when the example has no output of finite score.
``encode(data, i, y, z_out)``
    Part vector of the output ``y`` (units of example ``i``) into ``z_out``.
``part_losses(data, i, y, out)``
    The loss of every part of example ``i`` against its true output ``y``, for a loss
    that is not the Hamming loss of labelled parts (which ``LabelledParts`` derives).
``project(data, i, v, out)``
    Euclidean projection of ``v`` onto the example's relaxed output polytope.
``add_features_norm(data, i, coef, scale, w, w_scratch, part_scratch)``
    ``add_features``, returning the squared norm ``||scale * F_i coef||^2`` of
    what it added (the online EG step's dual gain needs it), optional: the
    default scores the example before and after adding (see
    :func:`_default_add_features_norm`); a structure whose features it sums
    on the example's distinct weights before adding them has the norm for a
    square per weight.
``part_scores_at(data, i, w, scale, parts, out, scratch)``
    ``out[j]`` = the score of part ``parts[j]`` of example ``i``, optional: the
    default scores every part into ``scratch`` (as many numbers as the example's
    parts) and picks them; a structure gives its own when a few parts cost less
    than all (the working-set solver scores only the parts of its outputs).
``add_features_at(data, i, parts, coef, scale, w, scratch)``
    ``w += scale * sum_j coef[j] phi(x_i, parts[j])``, optional: the default
    scatters ``coef`` into ``scratch`` (the example's parts; zero on entry, and
    left zero) for ``add_features``.

A structure whose whole batch runs faster in one loop of its own than example by example
(a chain's examples share one exponentiated transition matrix; all of a batch's tokens
are scored in one pass) may also give that loop, with the signature of the generic loop it
replaces (:data:`BATCH_LOOPS`, :mod:`._generic_kernels`); the batch operations then call
it, and ``check_structure`` holds it against the generic loop.

Weights inside the kernels are in the structure's *kernel layout*
(:meth:`BaseStructure.kernel_weights`), which may differ from its public layout
to make the inner loops contiguous.

Generic loops (the batch operations in :mod:`._generic_kernels`, the online
EG and subgradient epochs in :mod:`sklearn_struct.solvers`) are written once
as plain Python *templates* that call these operations by the global names
``part_scores_op``, ``add_features_op``, ... :func:`specialize` compiles a
template for one :class:`KernelOps` by binding those names, under a function
name derived from the operations, so that numba's on-disk cache holds one
entry per (template, structure) pair and a new process reuses it.  (Passing
the operations as arguments instead would work too, but numba does not cache
functions that take other compiled functions as arguments.)
"""

import functools
import hashlib
import inspect
import sys
import types
from pathlib import Path

import numpy as np
from numba import njit

from . import _semiring

__all__ = ["BATCH_LOOPS", "KERNEL_OPERATIONS", "KernelOps", "kernel_provides", "specialize"]

#: Names of the per-example operations, as the templates call them (with ``_op``).
KERNEL_OPERATIONS = ("part_scores", "add_features", "marginals", "log_partition", "argmax",
                     "encode", "part_losses", "project", "add_features_norm", "part_scores_at",
                     "add_features_at", "hypergraph_size", "hypergraph", "decode", "k_best",
                     "sample")

#: The generic batch loops that a structure may replace with its own (same signature),
#: each with the per-example operation it must give too.
BATCH_LOOPS = {"batch_part_scores": "part_scores", "batch_add_features": "add_features",
               "batch_marginals": "marginals", "batch_log_partition": "log_partition",
               "batch_argmax": "argmax"}

#: What a structure's hypergraph gives (:mod:`._semiring`), unless it gives its own.
_FROM_HYPERGRAPH = {"marginals": _semiring.dp_marginals,
                    "log_partition": _semiring.dp_log_partition,
                    "argmax": _semiring.dp_argmax,
                    "k_best": _semiring.dp_k_best,
                    "sample": _semiring.dp_sample}


class KernelOps:
    """The per-example numba operations of a structure.

    Parameters
    ----------
    part_scores, add_features : numba dispatcher
        Required: the maps ``F_i^T`` and ``F_i`` of one example (see the
        module docstring for the signatures).
    marginals, log_partition, argmax, encode, part_losses, project, add_features_norm, \
part_scores_at, add_features_at : numba dispatcher, optional
        The operations the structure can perform on one example; a missing
        one makes the generic loops that need it unavailable (``log_partition``,
        ``add_features_norm``, ``part_scores_at`` and ``add_features_at`` have
        defaults, see the module docstring).
    decode : numba dispatcher, optional
        ``decode(data, i, z, y_out)`` writes the output whose part vector is ``z``.
    hypergraph_size, hypergraph : numba dispatcher, optional
        A dynamic program, given together and with ``decode``:
        ``hypergraph_size(data, i)`` returns the number of nodes and at most how
        many hyperedges example ``i`` has, and ``hypergraph(data, i, edges)``
        writes them (see :mod:`._semiring`) and returns their number.  Marginals,
        log-partition, argmax, k-best outputs and samples follow from them unless
        given (or excluded).
    batch_part_scores, batch_add_features, batch_marginals, batch_log_partition, \
batch_argmax : numba dispatcher, optional
        A loop over a whole batch in place of the generic one of the same name in
        :mod:`._generic_kernels` (same signature), beside the per-example operation: a
        numba function, or a Python function that runs numba kernels (called from
        Python alone, it adds no compilation of its own).
    exclude : tuple of str, default=()
        Operations not to derive from the hypergraph (see :meth:`without`).

    Attributes
    ----------
    given : tuple of str
        Names of the operations given.
    provided : tuple of str
        Names of the operations given or derived from the hypergraph
        (marginals, log-partition, argmax, k-best and samples).

    See Also
    --------
    sklearn_struct.structures.BaseStructure : Where a structure sets its ``kernel_ops``.

    Examples
    --------
    The chain and multiclass structures share one set of operations:

    >>> from sklearn_struct.structures import ChainStructure, MulticlassStructure
    >>> ops = MulticlassStructure.kernel_ops
    >>> ops.provides("part_scores", "marginals", "project")
    True
    >>> ChainStructure.kernel_ops.provides("project")
    False
    """

    def __init__(self, *, part_scores, add_features, marginals=None, log_partition=None,
                 argmax=None, encode=None, part_losses=None, project=None,
                 add_features_norm=None, part_scores_at=None, add_features_at=None,
                 hypergraph_size=None, hypergraph=None, decode=None, batch_part_scores=None,
                 batch_add_features=None, batch_marginals=None, batch_log_partition=None,
                 batch_argmax=None, exclude=()):
        given = dict(part_scores=part_scores, add_features=add_features, marginals=marginals,
                     log_partition=log_partition, argmax=argmax, encode=encode,
                     part_losses=part_losses, project=project,
                     add_features_norm=add_features_norm,
                     part_scores_at=part_scores_at, add_features_at=add_features_at,
                     hypergraph_size=hypergraph_size, hypergraph=hypergraph, decode=decode)
        self.functions = {name: op for name, op in given.items() if op is not None}
        for name, op in self.functions.items():
            if not hasattr(op, "py_func"):
                raise TypeError(f"KernelOps: {name} must be a numba @njit function, got {op!r}.")
        self.given = tuple(self.functions)
        loops = dict(batch_part_scores=batch_part_scores, batch_add_features=batch_add_features,
                     batch_marginals=batch_marginals, batch_log_partition=batch_log_partition,
                     batch_argmax=batch_argmax)
        batch_loops = {name: loop for name, loop in loops.items() if loop is not None}
        for name, loop in batch_loops.items():
            if not callable(loop) or BATCH_LOOPS[name] not in self.functions:
                raise TypeError(f"KernelOps: {name} must be a function, given with the "
                                f"per-example {BATCH_LOOPS[name]}.")
        self.batch_loops = batch_loops
        dynamic_program = ("hypergraph_size", "hypergraph", "decode")
        if any(name in self.functions for name in dynamic_program[:2]) and not all(
                name in self.functions for name in dynamic_program):
            raise TypeError("KernelOps: a dynamic program needs hypergraph_size, hypergraph "
                            "and decode together.")
        self._specialized = {}
        if "hypergraph" in self.functions:
            for name, template in _FROM_HYPERGRAPH.items():
                # (a structure's own marginals give its log-partition, as below)
                if name in self.functions or name in exclude or (
                        name == "log_partition" and marginals is not None):
                    continue
                self.functions[name] = specialize(template, self)
        self.provided = tuple(self.functions)
        if "add_features_norm" not in self.functions:
            self.functions["add_features_norm"] = specialize(_default_add_features_norm, self)
        if "log_partition" not in self.functions and "marginals" in self.functions:
            self.functions["log_partition"] = specialize(_default_log_partition, self)
        for name, default in (("part_scores_at", _default_part_scores_at),
                              ("add_features_at", _default_add_features_at)):
            if name not in self.functions:
                self.functions[name] = specialize(default, self)

    def digest(self, names):
        """Digest of the names and source code of the named operations.

        The source is that of every module of each operation's package (of its
        own module outside a package), since an operation's compiled code
        includes the functions it calls, and numba's cache only watches the
        file of the function it compiles.

        Parameters
        ----------
        names : iterable of str
            Operations among those held (given, or the defaults).

        Returns
        -------
        digest : str
            16 hexadecimal digits.
        """
        digest = hashlib.sha1()
        for name in KERNEL_OPERATIONS:
            op = self.functions.get(name)
            if name in names and op is not None:
                digest.update(f"{name}={op.py_func.__module__}.{op.py_func.__qualname__}".encode())
                digest.update(_package_source(op.py_func).encode())
        return digest.hexdigest()[:16]

    def without(self, *names):
        """The same operations but the named ones, which are not derived either (nor given
        as a batch loop: leaving out ``argmax`` leaves out ``batch_argmax``).

        Parameters
        ----------
        *names : str
            Operations to leave out.

        Returns
        -------
        ops : KernelOps
            A new object (its specialized loops are compiled separately).
        """
        given = {name: op for name, op in self.functions.items()
                 if name in self.given and name not in names}
        given.update({name: loop for name, loop in self.batch_loops.items()
                      if name not in names and BATCH_LOOPS[name] not in names})
        return KernelOps(**given, exclude=names)

    def loop(self, template):
        """The batch loop of a template of :mod:`._generic_kernels` for these operations:
        the structure's own where it gives one, else the template compiled with them.

        Parameters
        ----------
        template : function
            A generic loop, such as ``_generic_kernels.batch_marginals``.

        Returns
        -------
        kernel : numba dispatcher
            The loop, called with the template's arguments.
        """
        return self.batch_loops.get(template.__name__) or specialize(template, self)

    def generic(self):
        """These operations with the dynamic program's marginals, log-partition and argmax
        in place of the structure's own, and no batch loop of its own (what
        ``check_structure`` holds them against).

        Returns
        -------
        ops : KernelOps
            A new object (its specialized loops are compiled separately).
        """
        return KernelOps(**{name: op for name, op in self.functions.items() if name in self.given
                            and name not in ("marginals", "log_partition", "argmax")})

    def provides(self, *names):
        """Whether every named operation was given or derived from the hypergraph.

        Parameters
        ----------
        *names : str
            Operation names, among ``KERNEL_OPERATIONS``.

        Returns
        -------
        provided : bool
            Whether all of them are available.
        """
        return all(name in self.provided for name in names)


def kernel_provides(structure, *names):
    """Whether a structure has kernel operations and they provide every named one."""
    return structure.kernel_ops is not None and structure.kernel_ops.provides(*names)


@njit(cache=True, nogil=True, inline="always")
def example_buffers(part_offsets, unit_offsets):
    """Scratch for kernels that visit one example at a time: two part vectors
    (scores, an encoding) for the largest example's parts and an output for its units."""
    max_parts = 0
    max_units = 0
    for i in range(part_offsets.shape[0] - 1):
        max_parts = max(max_parts, part_offsets[i + 1] - part_offsets[i])
        max_units = max(max_units, unit_offsets[i + 1] - unit_offsets[i])
    return np.empty(max_parts), np.empty(max_parts), np.empty(max_units, dtype=np.int64)


@njit(cache=True, nogil=True, inline="always")
def example_views(i, part_offsets, unit_offsets, scores_buf, z_buf, y_buf):
    """Example ``i``'s first part and its views of the buffers of :func:`example_buffers`."""
    p0 = part_offsets[i]
    n_parts = part_offsets[i + 1] - p0
    return p0, scores_buf[:n_parts], z_buf[:n_parts], y_buf[:unit_offsets[i + 1] - unit_offsets[i]]


@functools.lru_cache(maxsize=None)
def _package_text(folder):
    return "".join(path.read_text() for path in sorted(Path(folder).rglob("*.py")))


def _package_source(function):
    """The source of every module of the function's top-level package (of its own module
    for a function outside a package)."""
    try:
        package = sys.modules.get(function.__module__.partition(".")[0])
        if getattr(package, "__path__", None):
            return _package_text(str(Path(package.__file__).parent))
        return Path(inspect.getsourcefile(function)).read_text()
    except (OSError, TypeError):  # defined interactively: fall back on the bytecode
        return function.__code__.co_code.hex()


def specialize(template, ops):
    """Compile ``template`` with the operations of ``ops`` bound to its ``*_op`` globals.

    Parameters
    ----------
    template : function
        A plain Python function written against ``part_scores_op``,
        ``add_features_op``, ... (and any other global of its module).
    ops : KernelOps

    Returns
    -------
    kernel : numba dispatcher
        Compiled on first call and cached on disk; the same object for the
        same ``(template, ops)`` within a process.  Its name digests the
        operations that the template calls, and only those: structures whose
        operations differ elsewhere (chains have no ``project``, multiclass
        has) share the compiled and cached loop.
    """
    cache = ops._specialized
    kernel = cache.get(template)
    if kernel is None:
        namespace = dict(template.__globals__)
        namespace.update({f"{name}_op": op for name, op in ops.functions.items()})
        called = [name for name in KERNEL_OPERATIONS if f"{name}_op" in template.__code__.co_names]
        name = f"{template.__name__}__{ops.digest(called)}"
        function = types.FunctionType(template.__code__, namespace, name,
                                      template.__defaults__, template.__closure__)
        function.__qualname__ = name
        function.__module__ = template.__module__
        kernel = njit(cache=True, nogil=True)(function)
        cache[template] = kernel
    return kernel


def _default_add_features_norm(data, i, coef, scale, w, w_scratch, part_scratch):
    """``add_features``, returning ``||scale * F_i coef||^2 = coef . F_i^T (scale^2 * F_i
    coef)``: the change of the example's scores times ``coef``.

    ``part_scratch`` holds at least ``2 * len(coef)`` numbers; ``w_scratch`` is
    unused.
    """
    n = coef.shape[0]
    before = part_scratch[:n]
    after = part_scratch[n:2 * n]
    part_scores_op(data, i, w, scale, before)  # noqa: F821 (bound by specialize)
    add_features_op(data, i, coef, scale, w)  # noqa: F821
    part_scores_op(data, i, w, scale, after)  # noqa: F821
    total = 0.0
    for r in range(n):
        total += coef[r] * (after[r] - before[r])
    return max(total, 0.0)


def _default_part_scores_at(data, i, w, scale, parts, out, scratch):
    """The listed parts' scores, from every part's into ``scratch``."""
    part_scores_op(data, i, w, scale, scratch)  # noqa: F821 (bound by specialize)
    for j in range(parts.shape[0]):
        out[j] = scratch[parts[j]]


def _default_add_features_at(data, i, parts, coef, scale, w, scratch):
    """``add_features`` of ``coef`` scattered into ``scratch`` (zero on entry and exit)."""
    for j in range(parts.shape[0]):
        scratch[parts[j]] += coef[j]
    add_features_op(data, i, scratch, scale, w)  # noqa: F821
    for j in range(parts.shape[0]):
        scratch[parts[j]] = 0.0


def _default_log_partition(data, i, theta, scratch):
    """``log Z`` through the marginals (into ``scratch``, discarded)."""
    mu = scratch[:theta.shape[0]]
    return marginals_op(data, i, theta, mu)  # noqa: F821 (bound by specialize)


def empty_scale():
    """The ``scale`` argument meaning "no rescaling"."""
    return np.zeros(0)
