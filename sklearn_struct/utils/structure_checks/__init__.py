"""Conformance checks of structures against brute-force enumeration.

:func:`check_structure` plays for a structure (a subclass of
:class:`~sklearn_struct.structures.BaseStructure`) the role that
:func:`sklearn.utils.estimator_checks.check_estimator` plays for an estimator:
on tiny data sets whose outputs can all be listed, it checks every operation
the structure supports (:meth:`~sklearn_struct.structures.BaseStructure.supports`
and the kernel operations) against brute force, and the rules of the protocol
(nothing is mutated, sub-batches agree with the full batch, dense, sparse and
read-only inputs agree, ...).
A structure that passes plugs into every learner of the package.

The checks are also public functions, ``check_<name>(structure, X, y,
**options)``, which run one check on one data set; each raises an
``AssertionError`` whose message starts with the name of the check and the
structure.  In the order :func:`check_structure` runs them:

* :func:`check_no_mutation` -- no operation modifies its arguments, the
  batch, the data or the structure (no attribute is written), and read-only
  arguments work;
* :func:`check_supports` -- unsupported operations raise
  ``UnsupportedOperation``;
* :func:`check_enumeration` -- the enumerated outputs are valid and include
  the truth;
* :func:`check_targets` -- target codec and encode/decode round trips;
* :func:`check_weights` -- weight attributes, sign constraints, feature support;
* :func:`check_take` -- sub-batches agree with the full batch;
* :func:`check_expected_features` -- ``expected_features`` is the adjoint of
  ``part_scores``;
* :func:`check_part_losses` -- part losses and offsets give the declared loss;
* :func:`check_argmax`, :func:`check_marginals`, :func:`check_project`,
  :func:`check_feature_bounds` -- inference against enumeration;
* :func:`check_dynamic_program` -- the generic dynamic program on the
  structure's hypergraph (marginals, argmax, k-best, samples) against
  enumeration;
* :func:`check_kernel_ops` -- per-example numba operations and generic loops
  against the batch operations;
* :func:`check_input_variants` -- dense, sparse and read-only inputs agree.

Enumerating outputs
-------------------
The checks compare operations with sums and maxima over *all outputs* of every
example.  By default the outputs of example ``i`` are found through the
protocol only: every integer vector over the example's output units with
values in ``range(n_states)`` (``n_states`` of the structure's target codec, 2
when it is ``None``: binary units) is tried, and kept when

* :meth:`~sklearn_struct.structures.BaseStructure.check_outputs` accepts it
  (a structure rejects outputs outside its output set with a ``ValueError``),
  and,
* when the structure supports ``project``, its encoding is a fixed point of
  the projection (an integral point of the relaxed polytope, which rules out,
  e.g., 0/1 edge vectors that are not matchings).

A caller whose structure cannot tell its outputs that way passes
``enumerate_outputs(batch, i)``, returning the outputs of example ``i`` (an
iterable of integer vectors over its units).  Keep the data sets tiny: a few
examples of 2-4 units with 2-3 states.

Options
-------
The options of :func:`check_structure` (also accepted by every check):

``enumerate_outputs``
    See above.
``loss(Y_true_i, Y_i)``
    The structure's declared loss between two encoded outputs of one example,
    which its ``part_losses`` and ``loss_offsets`` must reproduce; default
    Hamming (the number of differing output units).
``polytope_rays(batch, i)``
    Directions of the recession cone of example ``i``'s relaxed polytope when
    it is unbounded, an array of shape ``(n_rays, n_parts_i)``: the polytope
    is then the convex hull of the encodings plus the cone of these rays (the
    min-cut relaxation leaves the edge parts unbounded above).  Default: none,
    the polytope is the convex hull.
``variants(X)``
    Alternative inputs equal to ``X`` (a list, or a dict naming them), which
    must give the same results.  Default: a read-only copy (every array
    ``setflags(write=False)``), a copy whose 2-D floating-point arrays are
    CSR matrices and, when ``X`` holds sparse matrices, a dense copy; a
    structure that refuses the sparse copy with a ``TypeError`` or
    ``ValueError`` skips that variant.
``random_state``
    Seed of the random weights, scores and part vectors the checks draw.
"""

from sklearn.utils import check_random_state

from ...structures._base import BaseStructure
from ._enumeration_checks import (_argmax, _dynamic_program, _enumeration, _expected_features,
                                  _feature_bounds, _marginals, _part_losses, _project,
                                  _supports, _take, _targets, _weights)
from ._instance import _Instance
from ._kernel_checks import _kernel_ops
from ._protocol_checks import _final_state, _input_variants, _no_mutation

__all__ = [
    "check_argmax",
    "check_dynamic_program",
    "check_enumeration",
    "check_expected_features",
    "check_feature_bounds",
    "check_input_variants",
    "check_kernel_ops",
    "check_marginals",
    "check_no_mutation",
    "check_part_losses",
    "check_project",
    "check_structure",
    "check_supports",
    "check_take",
    "check_targets",
    "check_weights",
]


def check_structure(structure, make_instances, *, enumerate_outputs=None, loss=None,
                    polytope_rays=None, variants=None, random_state=0, n_instances=3):
    """Check a structure against brute-force enumeration and the protocol's rules.

    Draws ``n_instances`` tiny data sets from ``make_instances`` and runs every
    check of this module on each (see the module documentation for what each
    checks and how outputs are enumerated).  Checks of operations the
    structure does not support are skipped; kernel checks are skipped when
    ``structure.kernel_ops`` is None.

    Parameters
    ----------
    structure : BaseStructure
        The structure to check (never modified by a conforming structure).
    make_instances : callable
        ``make_instances(rng)`` returns ``(X, y)``: the inputs of a few
        examples in the structure's input form and their targets in its
        target form, small enough to enumerate every output; ``rng`` is a
        :class:`numpy.random.RandomState`.
    enumerate_outputs : callable, default=None
        ``enumerate_outputs(batch, i)`` returns the outputs of example ``i`` of
        a batch, as integer vectors over its output units.  ``None``: find
        them through ``check_outputs`` and ``project`` (module documentation).
    loss : callable, default=None
        ``loss(Y_true_i, Y_i)``, the declared loss between two encoded outputs
        of one example; ``None`` is the Hamming loss.
    polytope_rays : callable, default=None
        ``polytope_rays(batch, i)`` returns the rays ``(n_rays, n_parts_i)``
        of the recession cone of example ``i``'s relaxed polytope when it is
        unbounded; ``None``: it is the convex hull of the encodings.
    variants : callable, default=None
        ``variants(X)`` returns inputs equal to ``X`` in other forms (a list,
        or a dict naming them); ``None``: read-only and sparse copies.
    random_state : int, RandomState instance or None, default=0
        Seed of the data sets and of the random vectors of the checks.
    n_instances : int, default=3
        Number of data sets drawn.

    Returns
    -------
    report : dict of str to str
        For every check, ``"passed"`` or why it was skipped (on the last
        data set).

    Raises
    ------
    AssertionError
        At the first failing check, with a message naming the check, the
        structure and what went wrong.

    See Also
    --------
    sklearn_struct.structures.BaseStructure : The protocol being checked.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.structures import MulticlassStructure
    >>> from sklearn_struct.utils import check_structure
    >>> def make_instances(rng):
    ...     return rng.randn(3, 2), np.array(["a", "b", "a"])
    >>> report = check_structure(MulticlassStructure(), make_instances, n_instances=1)
    >>> report["check_argmax"], report["check_project"]
    ('passed', 'passed')
    """
    if not isinstance(structure, BaseStructure):
        raise TypeError(f"check_structure expects a BaseStructure, got {type(structure).__name__}.")
    if not callable(make_instances):
        raise TypeError("check_structure: make_instances must be a callable rng -> (X, y).")
    rng = check_random_state(random_state)
    options = dict(enumerate_outputs=enumerate_outputs, loss=loss, polytope_rays=polytope_rays,
                   variants=variants)
    report = {}
    for _ in range(n_instances):
        X, y = make_instances(rng)
        options["random_state"] = int(rng.randint(2 ** 31 - 1))
        instance = _setup("check_structure", structure, X, y, options)
        for body in _CHECKS:
            report[_check_name(body)] = _run(body, structure, X, y, options, instance) or "passed"
        # whatever the order of the checks: nothing they called changed the structure or data
        _run(_final_state, structure, X, y, options, instance)
    return report


#: The checks, in the order check_structure runs them.
_CHECKS = (_no_mutation, _supports, _enumeration, _targets, _weights, _take,
           _expected_features, _part_losses, _argmax, _marginals, _dynamic_program, _project,
           _feature_bounds, _kernel_ops, _input_variants)


def _check_name(body):
    if body is _final_state:
        return "check_no_mutation"
    return "check" + body.__name__


def _setup(name, structure, X, y, options):
    try:
        return _Instance(structure, X, y, **options)
    except Exception as error:
        raise AssertionError(f"{name} failed for {structure!r} while setting up the data set "
                             f"(codec, make_batch, encoding and enumerating the "
                             f"outputs): {type(error).__name__}: {error}") from error


def _run(body, structure, X, y, options, instance=None):
    """Run one check body; any failure becomes an AssertionError naming check and structure."""
    name = _check_name(body)
    if instance is None:
        instance = _setup(name, structure, X, y, options)
    try:
        return body(instance)
    except AssertionError as error:
        raise AssertionError(f"{name} failed for {structure!r}: {error}") from error
    except Exception as error:
        raise AssertionError(f"{name} failed for {structure!r}: {type(error).__name__}: "
                             f"{error}") from error


_CHECK_DOC = """{summary}

{description}

Parameters
----------
structure : BaseStructure
    The structure to check.
X : object
    Inputs of a tiny data set in the structure's input form.
y : object
    Their targets in the structure's target form.
**options : dict
    ``enumerate_outputs``, ``loss``, ``polytope_rays``, ``variants`` and
    ``random_state``, as for :func:`check_structure`.

Returns
-------
skipped : str or None
    Why the check does not apply to this structure (an operation it does not
    support), or None when it ran.

Raises
------
AssertionError
    Naming the check, the structure and what went wrong.

See Also
--------
check_structure : Run every check on several data sets.
"""


def _public(body, description):
    """The public check ``check_<name>(structure, X, y, **options)`` of a check body."""

    def check(structure, X, y, **options):
        return _run(body, structure, X, y, options)

    check.__name__ = check.__qualname__ = _check_name(body)
    check.__module__ = __name__
    summary = body.__doc__.strip().splitlines()[0]
    check.__doc__ = _CHECK_DOC.format(summary=summary, description=description)
    return check


check_supports = _public(_supports, (
    "Every parts operation the structure does not support (by ``supports``) raises\n"
    ":class:`UnsupportedOperation`."))
check_enumeration = _public(_enumeration, (
    "Every example has at least one output, ``check_outputs`` accepts every enumerated\n"
    "output (and rejects a vector of the wrong length), different outputs have different\n"
    "encodings, and the true outputs are among the enumerated ones."))
check_targets = _public(_targets, (
    "The output space's ``codec(y)`` decodes its encoding back to ``y``;\n"
    "``decode(encode(Y))`` is ``Y`` for every enumerated output; the score of the truth\n"
    "against itself is 1; ``unit_values`` has an entry per example."))
check_weights = _public(_weights, (
    "The output space's ``weight_attributes`` returns views of ``w`` (``coef_`` first)\n"
    "covering every weight\n"
    "once; ``nonnegative_weights`` and ``feature_support`` give boolean masks of the\n"
    "right shapes."))
check_take = _public(_take, (
    "Sub-batches of reordered, negative and boolean-mask indices have the offsets and\n"
    "the scores, features, encodings, losses, argmax, marginals and projections of the\n"
    "examples they select."))
check_expected_features = _public(_expected_features, (
    "``F`` is built row by row from ``part_scores`` on unit weight vectors; then\n"
    "``expected_features(z) == F z``, with per-example and scalar ``sample_weight``,\n"
    "and ``part_scores(w) . z == w . expected_features(z)``."))
check_part_losses = _public(_part_losses, (
    "For every enumerated output ``y`` of every example,\n"
    "``encode(y) . part_losses(Y) + loss_offsets(Y)`` equals ``loss(Y_i, y)`` (option\n"
    "``loss``, Hamming by default), and it is 0 for the true output."))
check_argmax = _public(_argmax, (
    "For zero, random and large random scores (``part_scores`` of weights respecting\n"
    "``nonnegative_weights``; also arbitrary part scores when no weight is\n"
    "sign-constrained) the outputs are valid and score as high as the best enumerated\n"
    "output (ties allowed)."))
check_marginals = _public(_marginals, (
    "Marginals and log-partition equal the Gibbs averages over the enumerated outputs;\n"
    "``log_partition`` equals ``marginals(...)[1]``; a central finite-difference\n"
    "gradient of ``log_partition`` equals the marginals."))
check_dynamic_program = _public(_dynamic_program, (
    "On a structure with a hypergraph, the generic dynamic program's log-partition,\n"
    "marginals and argmax equal enumeration (also where the structure overrides them);\n"
    "``k_best`` lists every output once, best first, its first outputs are ``argmax``'s;\n"
    "``sample`` draws with the enumerated probabilities (G-test, fixed seed)."))
check_project = _public(_project, (
    "The polytope of an example is the convex hull of its enumerated encodings (plus the\n"
    "cone of ``polytope_rays``).  ``p`` is the projection of ``v`` iff ``p`` lies in the\n"
    "polytope (a linear program) and ``(v - p) . (e - p) <= tol`` for every encoding\n"
    "``e`` (and ``(v - p) . r <= tol`` for every ray ``r``); with clarabel installed the\n"
    "projection is also compared with a generic QP.  Passing the same ``warm_start`` dict\n"
    "again, or for a nearby point, gives the cold projection."))
check_feature_bounds = _public(_feature_bounds, (
    "For each geometry the structure accepts, the bounds are at least the largest\n"
    "``||f_i(y)||_inf`` over the enumerated outputs (entropic) or the largest 2-norm of a\n"
    "weight's feature column (euclidean)."))
check_kernel_ops = _public(_kernel_ops, (
    "When ``kernel_ops`` is not None: every per-example operation, called directly on\n"
    "``kernel_data``, agrees with the batch methods, with an empty and a random positive\n"
    "``scale`` (``log_partition``, given or the default through ``marginals``, with the\n"
    "reference log-partition); the generic batch loops agree with the batch methods;\n"
    "``add_features_norm`` adds as ``add_features`` does and returns\n"
    "``||scale * F_i coef||^2``; ``part_scores_at`` and\n"
    "``add_features_at`` agree with ``part_scores`` and ``add_features`` on listed parts;\n"
    "``kernel_weights`` and ``contract_weights`` are inverse; no operation modifies its\n"
    "inputs."))
check_input_variants = _public(_input_variants, (
    "Read-only and sparse copies of the inputs (or the option ``variants``) give the same\n"
    "batch layout, encoded targets and results of every supported operation, including\n"
    "the kernel operations."))
check_no_mutation = _public(_no_mutation, (
    "Every operation is called with fresh arguments, compared with copies afterwards, as\n"
    "are the batch, the data and ``copy.deepcopy(vars(structure))`` (no attribute is\n"
    "written on the structure); then again with read-only arguments, which must work."))
