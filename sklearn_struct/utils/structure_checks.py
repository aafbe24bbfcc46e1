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

import copy
import dataclasses
import itertools
import pickle
import zlib

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog
from scipy.special import logsumexp
from sklearn.utils import check_random_state

from ..structures._base import BaseStructure, UnsupportedOperation
from ..structures._kernel import empty_scale, kernel_provides

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

#: Most outputs tried per example by the default enumeration.
MAX_CANDIDATES = 4096
#: Tolerances of the comparisons with enumeration (relative, absolute).
RTOL, ATOL = 1e-7, 1e-9


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


# ---------------------------------------------------------------- the checks


def _supports(inst):
    """Every operation named by ``supports`` is callable; the others raise UnsupportedOperation."""
    s, b = inst.structure, inst.batch
    rng = inst.rng("supports")
    z = rng.rand(inst.n_parts)
    calls = {
        "part_scores": lambda: s.part_scores(b, np.zeros(inst.n_weights)),
        "expected_features": lambda: s.expected_features(b, z),
        "encode": lambda: s.encode(b, inst.Y),
        "decode": lambda: s.decode(b, z),
        "part_losses": lambda: s.part_losses(b, inst.Y),
        "argmax": lambda: s.argmax(b, np.zeros(inst.n_parts)),
        "loss_augmented_argmax": lambda: s.loss_augmented_argmax(b, np.zeros(inst.n_parts),
                                                                 inst.Y),
        "marginals": lambda: s.marginals(b, np.zeros(inst.n_parts)),
        "project": lambda: s.project(b, z),
        "k_best": lambda: s.k_best(b, np.zeros(inst.n_parts), 2),
        "sample": lambda: s.sample(b, np.zeros(inst.n_parts), 2, random_state=0),
    }
    for op, call in calls.items():
        if s.supports(op) or getattr(type(s), op) is None:  # withdrawn by the structure
            continue
        try:
            call()
        except UnsupportedOperation:
            continue
        except Exception as error:
            raise AssertionError(f"{op} is not supported but raises {type(error).__name__} "
                                 f"({error}) instead of UnsupportedOperation.") from error
        raise AssertionError(f"{op} is not supported (supports({op!r}) is False) but it "
                             "runs; raise UnsupportedOperation.")


def _enumeration(inst):
    """The enumerated outputs are valid, distinct, and include the true outputs."""
    for i in range(inst.n_samples):
        outputs, encodings = inst.outputs[i], inst.encodings[i]
        if len(outputs) == 0:
            raise AssertionError(f"example {i} has no output.")
        if len({tuple(y) for y in outputs}) != len(outputs):
            raise AssertionError(f"example {i}: the enumerated outputs repeat.")
        if len({tuple(np.round(e, 12)) for e in encodings}) != len(outputs):
            raise AssertionError(f"example {i}: two different outputs have the same encoding.")
        if not np.isfinite(encodings).all():
            raise AssertionError(f"example {i}: encode gives non-finite values.")
        if inst.index(i, inst.Y[inst.units[i]]) < 0:
            raise AssertionError(
                f"example {i}: the true output {inst.Y[inst.units[i]].tolist()} is not among "
                "the enumerated outputs (check_outputs rejects it, or its encoding is not a "
                "vertex of the projection's polytope).")
        for y_i in outputs:
            Y = inst.with_output(i, y_i)
            checked = inst.structure.check_outputs(inst.batch, Y)
            if checked.dtype != np.int64 or not np.array_equal(checked, Y):
                raise AssertionError(f"check_outputs does not return the int64 outputs of "
                                     f"example {i} {y_i.tolist()} unchanged.")
    try:
        inst.structure.check_outputs(inst.batch, np.zeros(inst.n_units + 1, dtype=np.int64))
    except ValueError:
        pass
    else:
        raise AssertionError("check_outputs accepts outputs with one unit too many.")


def _targets(inst):
    """Target codec and encode/decode round trips, the output space's score of the truth."""
    s, b, codec = inst.structure, inst.batch, inst.codec
    space = s.output_space()
    for attribute in ("classes_", "n_states"):
        if not hasattr(codec, attribute):
            raise AssertionError(f"the codec has no attribute {attribute!r}.")
    decoded = codec.decode(b, inst.Y)
    difference = _target_difference(inst.y, decoded)
    if difference:
        raise AssertionError(f"codec round trip: decode(encode(y)) differs from y: "
                             f"{difference}.")
    if not np.array_equal(codec.encode(b, decoded), inst.Y):
        raise AssertionError("codec round trip: encode(decode(Y)) differs from Y.")
    if s.supports("decode"):
        for i in range(inst.n_samples):
            for y_i in inst.outputs[i]:
                Y = inst.with_output(i, y_i)
                back = np.asarray(s.decode(b, s.encode(b, Y)))
                if not np.array_equal(back, Y):
                    raise AssertionError(f"decode(encode(Y)) gives {back.tolist()} for the "
                                         f"output {Y.tolist()} (example {i} varied).")
    for sample_weight in (None, inst.rng("targets").rand(inst.n_samples) + 0.5):
        score = space.score(b, inst.Y, inst.Y, sample_weight=sample_weight)
        if not np.isclose(score, 1.0):
            raise AssertionError(f"the score of the truth against itself is {score}, not 1.")
    values = space.unit_values(b, np.zeros(inst.n_parts))
    if len(values) != inst.n_samples:
        raise AssertionError(f"unit_values gives {len(values)} entries for "
                             f"{inst.n_samples} examples.")
    n_features = space.n_features_in(b)
    if not isinstance(n_features, (int, np.integer)) or n_features < 0:
        raise AssertionError(f"n_features_in is {n_features!r}, not a non-negative integer.")


def _weights(inst):
    """``weight_attributes`` views cover ``w``; ``nonnegative_weights``, ``feature_support``."""
    s, b, n = inst.structure, inst.batch, inst.n_weights
    space = s.output_space()
    w = np.arange(n, dtype=np.float64)
    attributes = space.weight_attributes(b, w)
    if not isinstance(attributes, dict) or not attributes:
        raise AssertionError("weight_attributes must return a non-empty dict.")
    if next(iter(attributes)) != "coef_":
        raise AssertionError(f"the first weight attribute is {next(iter(attributes))!r}, "
                             "not 'coef_'.")
    for name, value in attributes.items():
        if not name.endswith("_") or name.startswith("_"):
            raise AssertionError(f"weight attribute {name!r} is not a fitted-attribute name.")
        # (an empty view shares no memory: 0 feature columns give empty blocks)
        if not isinstance(value, np.ndarray) or value.size and not np.shares_memory(value, w):
            raise AssertionError(f"weight attribute {name!r} is not a view of w.")
    values = np.concatenate([value.ravel() for value in attributes.values()])
    if values.size != n or not np.array_equal(np.sort(values), w):
        raise AssertionError(f"the weight attributes {list(attributes)} do not cover each of "
                             f"the {n} weights exactly once.")
    mask = np.asarray(s.nonnegative_weights(b))
    if mask.dtype != np.bool_ or mask.shape != (n,):
        raise AssertionError(f"nonnegative_weights gives {mask.dtype} of shape {mask.shape}, "
                             f"expected bool of shape ({n},).")
    n_features = space.n_features_in(b)
    for weights in (np.zeros(n), inst.rng("weights").randn(n)):
        support = np.asarray(space.feature_support(b, weights))
        if support.dtype != np.bool_ or support.shape != (n_features,):
            raise AssertionError(f"feature_support gives {support.dtype} of shape "
                                 f"{support.shape}, expected bool of shape ({n_features},).")
    if space.feature_support(b, np.zeros(n)).any():
        raise AssertionError("feature_support of zero weights is not all False.")


def _take(inst):
    """Sub-batches from ``take`` agree with the full batch, example by example."""
    s, b, n = inst.structure, inst.batch, inst.n_samples
    rng = inst.rng("take")
    mask = np.arange(n) % 2 == 0
    selections = {"reversed order": np.arange(n)[::-1].copy(), "the last (index -1)": [-1],
                  "a boolean mask": mask}
    w = inst.weights(rng)[1][1]
    z = rng.rand(inst.n_parts)
    scores = inst.score_draws(rng)[1][1]
    for what, indices in selections.items():
        chosen = np.flatnonzero(indices) if np.asarray(indices).dtype == bool else \
            np.asarray(indices) % n
        sub = s.take(b, indices)
        where = f"take({what})"
        if type(sub) is not type(b):
            raise AssertionError(f"{where} returns a {type(sub).__name__}, not a "
                                 f"{type(b).__name__}.")
        if sub.n_samples != len(chosen) or sub.n_weights != b.n_weights:
            raise AssertionError(f"{where} has {sub.n_samples} examples and {sub.n_weights} "
                                 f"weights, expected {len(chosen)} and {b.n_weights}.")
        for name in ("unit_offsets", "part_offsets"):
            expected = _offsets(np.diff(getattr(b, name))[chosen])
            if not np.array_equal(getattr(sub, name), expected):
                raise AssertionError(f"{where}: {name} {getattr(sub, name).tolist()}, expected "
                                     f"{expected.tolist()}.")

        def parts(v):
            return np.concatenate([v[inst.parts[i]] for i in chosen])

        Y_sub = np.concatenate([inst.Y[inst.units[i]] for i in chosen])
        if s.supports("part_scores"):
            _assert_close(s.part_scores(sub, w), parts(s.part_scores(b, w)),
                          f"{where}: part_scores")
        if s.supports("expected_features"):
            weight = np.zeros(n)
            weight[chosen] = 1.0
            _assert_close(s.expected_features(sub, parts(z)),
                          s.expected_features(b, z, sample_weight=weight),
                          f"{where}: expected_features")
        if s.supports("encode"):
            _assert_close(s.encode(sub, Y_sub), parts(s.encode(b, inst.Y)), f"{where}: encode")
        if s.supports("part_losses"):
            _assert_close(s.part_losses(sub, Y_sub), parts(s.part_losses(b, inst.Y)),
                          f"{where}: part_losses")
        _assert_close(s.loss_offsets(sub, Y_sub), s.loss_offsets(b, inst.Y)[chosen],
                      f"{where}: loss_offsets")
        if s.supports("argmax"):
            sub_scores = parts(scores)
            best = inst.example_values(s.argmax(b, scores), scores)[chosen]
            got = _example_values(s, sub, s.argmax(sub, sub_scores), sub_scores)
            _assert_close(got, best, f"{where}: score of the argmax outputs")
        if s.supports("marginals"):
            mu, log_z = s.marginals(b, scores)
            mu_sub, log_z_sub = s.marginals(sub, parts(scores))
            _assert_close(mu_sub, parts(mu), f"{where}: marginals")
            _assert_close(log_z_sub, log_z[chosen], f"{where}: log-partition")
        if s.supports("project"):
            v = rng.randn(inst.n_parts)
            _assert_close(s.project(sub, parts(v)), parts(s.project(b, v)), f"{where}: project",
                          atol=1e-8)
        if kernel_provides(s, "part_scores"):
            _assert_close(BaseStructure.part_scores(s, sub, w),
                          parts(BaseStructure.part_scores(s, b, w)),
                          f"{where}: part_scores of the kernel operations")


def _expected_features(inst):
    """``expected_features`` is ``F z`` with ``F`` read off ``part_scores`` (adjointness)."""
    s, b = inst.structure, inst.batch
    if not (s.supports("part_scores") and s.supports("expected_features")):
        return "needs part_scores and expected_features"
    rng = inst.rng("expected_features")
    F = inst.feature_matrix()
    z = rng.randn(inst.n_parts)
    _assert_close(s.expected_features(b, z), F @ z, "expected_features(z) against F z")
    sample_weight = rng.rand(inst.n_samples) + 0.5
    sample_weight[0] = 0.0
    per_part = np.repeat(sample_weight, np.diff(b.part_offsets))
    _assert_close(s.expected_features(b, z, sample_weight=sample_weight), F @ (per_part * z),
                  "expected_features(z, sample_weight) against F (s z)")
    _assert_close(s.expected_features(b, z, sample_weight=2.5), 2.5 * (F @ z),
                  "expected_features(z, sample_weight=2.5) against 2.5 F z")
    w = rng.randn(inst.n_weights)
    _assert_close(s.part_scores(b, w) @ z, w @ s.expected_features(b, z),
                  "adjointness part_scores(w) . z == w . expected_features(z)")
    features = s.expected_features(b, inst.encode(inst.Y))
    if np.shape(features) != (inst.n_weights,):
        raise AssertionError(f"expected_features has shape {np.shape(features)}, expected "
                             f"({inst.n_weights},).")


def _part_losses(inst):
    """``encode(y) . part_losses(Y) + loss_offsets`` is the declared loss; the truth costs 0."""
    s, b = inst.structure, inst.batch
    if not s.supports("part_losses"):
        return "part_losses unsupported"
    losses = np.asarray(s.part_losses(b, inst.Y))
    offsets = np.asarray(s.loss_offsets(b, inst.Y))
    if losses.shape != (inst.n_parts,) or offsets.shape != (inst.n_samples,):
        raise AssertionError(f"part_losses / loss_offsets have shapes {losses.shape} / "
                             f"{offsets.shape}, expected ({inst.n_parts},) / "
                             f"({inst.n_samples},).")
    for i in range(inst.n_samples):
        truth = inst.Y[inst.units[i]]
        got = inst.encodings[i] @ losses[inst.parts[i]] + offsets[i]
        expected = np.array([inst.loss(truth, y_i) for y_i in inst.outputs[i]], dtype=float)
        k = inst.index(i, truth)
        if k >= 0 and not np.isclose(got[k], 0.0, atol=ATOL):
            raise AssertionError(f"example {i}: the part losses of the true output sum to "
                                 f"{got[k]} (with loss_offsets), not 0.")
        bad = np.flatnonzero(~np.isclose(got, expected, rtol=RTOL, atol=ATOL))
        if bad.size:
            y_i = inst.outputs[i][bad[0]]
            raise AssertionError(
                f"example {i}: encode(y) . part_losses(Y) + loss_offsets is {got[bad[0]]} "
                f"for y = {y_i.tolist()} but the declared loss is {expected[bad[0]]} (true "
                f"output {truth.tolist()}).")


def _argmax(inst):
    """``argmax`` and ``loss_augmented_argmax`` reach the best enumerated score."""
    s, b = inst.structure, inst.batch
    if not s.supports("argmax"):
        return "argmax unsupported"
    rng = inst.rng("argmax")
    for what, scores in inst.score_draws(rng):
        inst.check_best(s.argmax(b, scores), scores, f"argmax ({what})")
        if s.supports("loss_augmented_argmax"):
            augmented = scores + s.part_losses(b, inst.Y)
            inst.check_best(s.loss_augmented_argmax(b, scores, inst.Y), augmented,
                            f"loss_augmented_argmax ({what}), scored with scores + part_losses")


def _marginals(inst):
    """Marginals and log-partition equal enumeration; ``d log Z / d scores`` is the marginals."""
    s, b = inst.structure, inst.batch
    if not s.supports("marginals"):
        return "marginals unsupported"
    rng = inst.rng("marginals")
    for what, scores in inst.score_draws(rng):
        mu, log_z = s.marginals(b, scores)
        mu, log_z = np.asarray(mu), np.asarray(log_z)
        if mu.shape != (inst.n_parts,) or log_z.shape != (inst.n_samples,):
            raise AssertionError(f"marginals gives shapes {mu.shape} and {log_z.shape}, "
                                 f"expected ({inst.n_parts},) and ({inst.n_samples},).")
        for i in range(inst.n_samples):
            values = inst.encodings[i] @ scores[inst.parts[i]]
            reference = logsumexp(values)
            _assert_close(log_z[i], reference, f"log-partition of example {i} ({what})")
            _assert_close(mu[inst.parts[i]], np.exp(values - reference) @ inst.encodings[i],
                          f"marginals of example {i} ({what})")
        _assert_close(s.log_partition(b, scores), log_z,
                      f"log_partition against marginals(...)[1] ({what})")
    scores = inst.score_draws(rng)[1][1]
    step = 1e-5 * max(1.0, np.abs(scores).max())
    gradient = np.empty(inst.n_parts)
    owner = np.repeat(np.arange(inst.n_samples), np.diff(b.part_offsets))
    for r in range(inst.n_parts):
        plus, minus = scores.copy(), scores.copy()
        plus[r] += step
        minus[r] -= step
        i = owner[r]
        gradient[r] = (s.log_partition(b, plus)[i] - s.log_partition(b, minus)[i]) / (2 * step)
    _assert_close(gradient, s.marginals(b, scores)[0],
                  "finite-difference gradient of log_partition against the marginals",
                  rtol=1e-5, atol=1e-6)


def _dynamic_program(inst):
    """The generic dynamic program on the structure's hypergraph against enumeration.

    Its log-partition and marginals (so the hypergraph derives each output
    exactly once) and its argmax, also where the structure overrides them with
    its own; ``k_best`` lists every output once, best first, and its first
    output is the argmax's; ``sample`` draws outputs with the enumerated
    probabilities (a G-test with a fixed seed).
    """
    s, b = inst.structure, inst.batch
    ops = s.kernel_ops
    if ops is None or not ops.provides("hypergraph"):
        return "no dynamic program"
    generic = ops.generic()
    data = s.kernel_data(b)
    rng = inst.rng("dynamic_program")
    for what, scores in inst.score_draws(rng):
        for i in range(inst.n_samples):
            theta = np.ascontiguousarray(scores[inst.parts[i]])
            values = inst.encodings[i] @ theta
            reference = logsumexp(values)
            mu = np.empty(inst.n_parts_of(i))
            log_z = generic.functions["marginals"](data, i, theta, mu)
            _assert_close(log_z, reference, f"the hypergraph's log-partition of example {i} "
                          f"({what}): an output derived twice or never?")
            _assert_close(mu, np.exp(values - reference) @ inst.encodings[i],
                          f"the hypergraph's marginals of example {i} ({what})")
            y_i = np.zeros(inst.n_units_of(i), dtype=np.int64)
            generic.functions["argmax"](data, i, theta, y_i)
            inst.check_best_of_example(i, y_i, scores, f"the hypergraph's argmax ({what})")
        n_outputs = max(len(outputs) for outputs in inst.outputs)
        Y, best = s.k_best(b, scores, n_outputs + 1)
        _assert_close(Y[0], s.argmax(b, scores), f"k_best's first outputs against argmax "
                      f"({what})", rtol=0, atol=0)
        for i in range(inst.n_samples):
            values = np.sort(inst.encodings[i] @ scores[inst.parts[i]])[::-1]
            n_i = len(values)
            _assert_close(best[i, :n_i], values, f"k_best's scores of example {i} ({what})")
            if not np.all(np.isneginf(best[i, n_i:])):
                raise AssertionError(f"k_best ({what}): example {i} has {n_i} outputs but "
                                     f"k_best scores {best[i].tolist()}.")
            found = [inst.index(i, y) for y in Y[:n_i, inst.units[i]]]
            if sorted(found) != list(range(n_i)):
                raise AssertionError(f"k_best ({what}): example {i}: the outputs listed are "
                                     "not each of the enumerated outputs once.")
            for j, k in enumerate(found):
                own = inst.encodings[i][k] @ scores[inst.parts[i]]
                _assert_close(best[i, j], own, f"k_best ({what}): example {i}, output {j}'s "
                              "score")
    _check_samples(inst, inst.score_draws(rng)[0][1])


#: Draws of the sampling check, and the G-test's level (with a fixed seed it is a
#: fixed verdict: a correct sampler passes it at any seed but a 1e-6 share of them).
N_DRAWS, SAMPLE_LEVEL = 4000, 1e-6


def _check_samples(inst, scores):
    from scipy.stats import chi2

    s, b = inst.structure, inst.batch
    Y = s.sample(b, scores, N_DRAWS, random_state=inst.seed)
    for i in range(inst.n_samples):
        values = inst.encodings[i] @ scores[inst.parts[i]]
        expected = N_DRAWS * np.exp(values - logsumexp(values))
        counts = np.zeros(len(values))
        for y in Y[:, inst.units[i]]:
            k = inst.index(i, y)
            if k < 0:
                raise AssertionError(f"sample: example {i} draws {y.tolist()}, which is not "
                                     "one of its enumerated outputs.")
            counts[k] += 1
        seen = counts > 0
        if np.any(seen & (expected < 1e-9 * N_DRAWS)):
            raise AssertionError(f"sample: example {i} draws an output of probability 0.")
        g = 2.0 * np.sum(counts[seen] * np.log(counts[seen] / expected[seen]))
        p_value = chi2.sf(g, max(len(values) - 1, 1))
        if p_value < SAMPLE_LEVEL:
            raise AssertionError(f"sample: example {i}: the frequencies of {N_DRAWS} draws "
                                 f"{counts.astype(int).tolist()} do not fit the probabilities "
                                 f"{np.round(expected / N_DRAWS, 4).tolist()} (G-test p = "
                                 f"{p_value:.2g}).")


def _project(inst):
    """``project`` is the Euclidean projection onto the polytope; warm starts change nothing.

    The polytope of example ``i`` is the convex hull of its encodings ``E`` plus
    the cone of its rays ``R``.  ``p`` is the projection of ``v`` iff ``p`` lies in
    it (checked by a linear program) and ``(v - p) . (e - p) <= tol`` for every
    encoding ``e`` and ``(v - p) . r <= tol`` for every ray ``r``.  When clarabel
    is installed the projection is also compared with a generic QP solution.
    """
    s, b = inst.structure, inst.batch
    if not s.supports("project"):
        return "project unsupported"
    rng = inst.rng("project")
    vertex = np.concatenate([inst.encodings[i][rng.randint(len(inst.encodings[i]))]
                             for i in range(inst.n_samples)])
    draws = {"random v": rng.randn(inst.n_parts),
             "large random v": 3.0 * rng.randn(inst.n_parts) + 0.5,
             "v an encoded output": vertex,
             "v near an encoded output": vertex + 1e-3 * rng.randn(inst.n_parts),
             "v zero": np.zeros(inst.n_parts)}
    for what, v in draws.items():
        p = np.asarray(s.project(b, v))
        if p.shape != v.shape:
            raise AssertionError(f"project gives shape {p.shape}, expected {v.shape}.")
        for i in range(inst.n_samples):
            inst.check_projection(i, v[inst.parts[i]], p[inst.parts[i]], what)
        if what == "v an encoded output":
            _assert_close(p, v, "project of an encoded output (a vertex is its own projection)",
                          atol=1e-8)
        state = {}
        first = s.project(b, v, warm_start=state)
        second = s.project(b, v, warm_start=state)
        _assert_close(first, p, f"project with an empty warm_start dict ({what})", atol=1e-8)
        _assert_close(second, p, f"project warm-started by its own result ({what})", atol=1e-8)
        nearby = v + 1e-2 * rng.randn(inst.n_parts)
        _assert_close(s.project(b, nearby, warm_start=state), s.project(b, nearby),
                      f"project of a nearby point, warm against cold ({what})", atol=1e-8)


def _feature_bounds(inst):
    """``feature_bounds`` bounds the feature norms it promises, for each geometry it accepts."""
    s, b = inst.structure, inst.batch
    if not s.supports("feature_bounds"):
        return "feature_bounds unsupported"
    F = inst.feature_matrix()
    accepted = []
    for geometry in ("entropic", "euclidean"):
        try:
            bounds = np.asarray(s.feature_bounds(b, geometry), dtype=float)
        except UnsupportedOperation:
            continue
        accepted.append(geometry)
        if bounds.shape != (inst.n_samples,) or not np.all(np.isfinite(bounds)) \
                or np.any(bounds < 0):
            raise AssertionError(f"feature_bounds({geometry!r}) must be finite, non-negative "
                                 f"and of shape ({inst.n_samples},), got {bounds}.")
        for i in range(inst.n_samples):
            block = F[:, inst.parts[i]]
            if geometry == "entropic":
                needed = np.abs(inst.encodings[i] @ block.T).max(initial=0.0)
                what = "max over outputs y of ||f_i(y)||_inf"
            else:
                needed = np.sqrt((block ** 2).sum(axis=1)).max(initial=0.0)
                what = "largest 2-norm of a weight's feature column"
            if needed > bounds[i] * (1 + 1e-9) + ATOL:
                raise AssertionError(f"feature_bounds({geometry!r})[{i}] = {bounds[i]} is "
                                     f"below the {what}, {needed}.")
    if not accepted:
        raise AssertionError("feature_bounds is supported but refuses both geometries.")


def _kernel_ops(inst):
    """Per-example kernel operations agree with the batch operations.

    Each operation of ``kernel_ops`` is called on each example, with an empty
    ``scale`` and with a random positive one (``part_scores`` then scores with
    ``scale * w`` and ``add_features`` adds ``scale * F coef``), and compared
    with the batch methods; the generic batch loops (the defaults of
    :class:`BaseStructure`) are compared with the structure's batch methods;
    ``add_features_norm`` adds as ``add_features`` does and returns
    ``||scale * F_i coef||^2`` from ``expected_features``, ``part_scores_at`` and
    ``add_features_at`` agree with ``part_scores`` and ``add_features`` on the
    listed parts, all of them on the
    kernel data for prediction and on that for training (where a structure may
    cache features); ``kernel_weights`` and ``contract_weights`` are inverse.
    """
    s, b = inst.structure, inst.batch
    ops = s.kernel_ops
    if ops is None:
        return "no kernel_ops"
    rng = inst.rng("kernel_ops")
    n_weights = inst.n_weights
    data = s.kernel_data(b)
    if not isinstance(data, tuple):
        raise AssertionError(f"kernel_data returns a {type(data).__name__}, not a tuple.")
    data_training = s.kernel_data(b, training=True)
    w = rng.randn(n_weights)
    w_kernel = np.asarray(s.kernel_weights(b, w))
    if w_kernel.shape != (n_weights,) or np.shares_memory(w_kernel, w):
        raise AssertionError("kernel_weights must return a new array of shape (n_weights,).")
    _assert_close(s.contract_weights(b, w_kernel.copy()), w,
                  "contract_weights(kernel_weights(w)) against w", rtol=0, atol=0)
    _assert_close(s.kernel_weights(b, s.contract_weights(b, w.copy())), w,
                  "kernel_weights(contract_weights(w)) against w", rtol=0, atol=0)
    scales = {"no scale": empty_scale(), "a random scale": rng.rand(n_weights) + 0.5}
    op = _checking_caller(ops.functions)
    # part_scores and add_features: the maps F_i^T and F_i, with and without a scale, on
    # kernel data for prediction and for training (which may cache features)
    for purpose, kdata in (("", data), (", training data", data_training)):
        for what, scale in scales.items():
            _feature_ops(inst, op, kdata, kdata is data_training, w_kernel, scale,
                         what + purpose, rng)
    _generic_loops_and_inference(inst, op, data, w, rng)


def _checking_caller(functions):
    """``op(name, *args)``: call the kernel operation ``name``, checking that it leaves its
    inputs alone."""

    def op(name, *args):
        before = copy.deepcopy(args)
        result = functions[name](*args)
        difference = _difference(before[:3], args[:3], f"{name}'s inputs")
        if name in ("part_scores", "add_features", "add_features_norm"):
            difference = difference or _difference(before[3:4], args[3:4], f"{name}'s scale")
        elif name in ("part_scores_at", "add_features_at"):
            difference = difference or _difference(before[3:5], args[3:5],
                                                   f"{name}'s parts, coefficients or scale")
        if difference:
            raise AssertionError(f"the kernel operation {name} modified {difference}.")
        return result

    return op


def _feature_ops(inst, op, kdata, training, w_kernel, scale, what, rng):
    """The feature maps of :func:`_kernel_ops` on one kernel data (``training``: built for
    a fit) and one ``scale``: ``part_scores``, ``add_features``, ``add_features_norm``
    (training data only), ``part_scores_at`` and ``add_features_at``."""
    s, b = inst.structure, inst.batch
    n, n_weights = inst.n_samples, inst.n_weights
    scaled = w_kernel * scale if scale.size else w_kernel
    if s.supports("part_scores"):
        expected = s.part_scores(b, s.contract_weights(b, scaled.copy()))
        for i in range(n):
            out = np.full(inst.n_parts_of(i), np.nan)
            op("part_scores", kdata, i, w_kernel, scale, out)
            _assert_close(out, expected[inst.parts[i]],
                          f"kernel part_scores of example {i} ({what})")
    if s.supports("expected_features"):
        for i in range(n):
            coef = rng.randn(inst.n_parts_of(i))
            start = rng.randn(n_weights)
            out = start.copy()
            op("add_features", kdata, i, coef, scale, out)
            z = np.zeros(inst.n_parts)
            z[inst.parts[i]] = coef
            added = np.asarray(s.kernel_weights(b, s.expected_features(b, z)))
            _assert_close(out, start + (scale * added if scale.size else added),
                          f"kernel add_features of example {i} ({what})")
    # add_features_norm: add_features and ||scale * F_i coef||^2, a training operation
    # (its kernel data may be built for training only)
    max_parts = max(inst.n_parts_of(i) for i in range(n))
    for i in range(n if training else 0):
        coef = rng.randn(inst.n_parts_of(i))
        start = rng.randn(n_weights)
        out = start.copy()
        w_scratch = np.zeros(n_weights)
        value = op("add_features_norm", kdata, i, coef, scale, out, w_scratch,
                   np.zeros(2 * max_parts))
        z = np.zeros(inst.n_parts)
        z[inst.parts[i]] = coef
        change = np.asarray(s.kernel_weights(b, s.expected_features(b, z)))
        if scale.size:
            change = change * scale
        _assert_close(out, start + change,
                      f"kernel add_features_norm of example {i} ({what})")
        _assert_close(value, change @ change, f"add_features_norm of example {i} "
                      f"({what}) against ||scale * F_i coef||^2")
        _assert_close(w_scratch, np.zeros(n_weights),
                      f"add_features_norm's w_scratch after example {i} ({what}): zero "
                      "on entry, it must be zero on exit", atol=1e-10)
    # part_scores_at and add_features_at: the listed parts (some repeated) alone
    for i in range(n):
        n_parts = inst.n_parts_of(i)
        if n_parts == 0:
            continue
        parts = rng.randint(0, n_parts, size=n_parts // 2 + 2).astype(np.int64)
        full = np.full(n_parts, np.nan)
        op("part_scores", kdata, i, w_kernel, scale, full)
        out = np.full(len(parts), np.nan)
        op("part_scores_at", kdata, i, w_kernel, scale, parts, out, np.zeros(n_parts))
        _assert_close(out, full[parts], f"part_scores_at of example {i} ({what}) against "
                      "part_scores")
        coef = rng.randn(len(parts))
        dense = np.zeros(n_parts)
        np.add.at(dense, parts, coef)
        start = rng.randn(n_weights)
        expected, out = start.copy(), start.copy()
        op("add_features", kdata, i, dense, scale, expected)
        scratch = np.zeros(n_parts)
        op("add_features_at", kdata, i, parts, coef, scale, out, scratch)
        _assert_close(out, expected, f"add_features_at of example {i} ({what}) against "
                      "add_features")
        _assert_close(scratch, np.zeros(n_parts), f"add_features_at's scratch after "
                      f"example {i} ({what}): zero on entry, it must be zero on exit")


def _generic_loops_and_inference(inst, op, data, w, rng):
    """The rest of :func:`_kernel_ops`: the generic batch loops against the structure's
    batch methods, and the kernels' ``encode``, ``argmax``, ``marginals``,
    ``log_partition`` and ``project``."""
    s, b, n = inst.structure, inst.batch, inst.n_samples
    # the generic batch loops (BaseStructure's defaults) against the structure's batch methods
    z = rng.randn(inst.n_parts)
    sample_weight = rng.rand(n) + 0.5
    if kernel_provides(s, "part_scores") and s.supports("part_scores"):
        _assert_close(BaseStructure.part_scores(s, b, w), s.part_scores(b, w),
                      "part_scores of the generic loop")
    if kernel_provides(s, "add_features") and s.supports("expected_features"):
        for weights in (None, sample_weight):
            _assert_close(BaseStructure.expected_features(s, b, z, sample_weight=weights),
                          s.expected_features(b, z, sample_weight=weights),
                          "expected_features of the generic loop"
                          + (" with sample_weight" if weights is not None else ""))
    if kernel_provides(s, "encode"):
        for i in range(n):
            for k, y_i in enumerate(inst.outputs[i]):
                out = np.zeros(inst.n_parts_of(i))
                op("encode", data, i, y_i.copy(), out)
                _assert_close(out, inst.encodings[i][k],
                              f"kernel encode of output {y_i.tolist()} of example {i}")
        _assert_close(BaseStructure.encode(s, b, inst.Y), s.encode(b, inst.Y),
                      "encode of the generic loop")
    draws = inst.score_draws(rng)
    if kernel_provides(s, "argmax"):
        for what, scores in draws:
            for i in range(n):
                y_out = np.zeros(inst.n_units_of(i), dtype=np.int64)
                op("argmax", data, i, scores[inst.parts[i]].copy(), y_out)
                inst.check_best_of_example(i, y_out, scores, f"kernel argmax ({what})")
            inst.check_best(BaseStructure.argmax(s, b, scores), scores,
                            f"argmax of the generic loop ({what})")
    if kernel_provides(s, "marginals"):
        for what, scores in draws:
            mu, log_z = inst.reference_marginals(scores)
            for i in range(n):
                out = np.full(inst.n_parts_of(i), np.nan)
                value = op("marginals", data, i, scores[inst.parts[i]].copy(), out)
                _assert_close(value, log_z[i], f"kernel log-partition of example {i} ({what})")
                _assert_close(out, mu[inst.parts[i]], f"kernel marginals of example {i} ({what})")
                scratch = np.full(inst.n_parts_of(i), np.nan)
                value = op("log_partition", data, i, scores[inst.parts[i]].copy(), scratch)
                _assert_close(value, log_z[i], f"kernel log_partition of example {i} ({what})")
            generic = BaseStructure.marginals(s, b, scores)
            _assert_close(generic[0], mu, f"marginals of the generic loop ({what})")
            _assert_close(generic[1], log_z, f"log-partition of the generic loop ({what})")
    if kernel_provides(s, "project"):
        v = 2.0 * rng.randn(inst.n_parts)
        for i in range(n):
            out = np.full(inst.n_parts_of(i), np.nan)
            op("project", data, i, v[inst.parts[i]].copy(), out)
            inst.check_projection(i, v[inst.parts[i]], out, "kernel project")
        generic = BaseStructure.project(s, b, v)
        for i in range(n):
            inst.check_projection(i, v[inst.parts[i]], generic[inst.parts[i]],
                                  "project of the generic loop")


def _input_variants(inst):
    """Dense, sparse and read-only inputs (or the caller's ``variants``) give the same results."""
    s = inst.structure
    given = inst.variants
    if given is None:
        variants = {"read-only": (_read_only(inst.X), _read_only(inst.y))}
        sparse, converted = _sparse(inst.X)
        if converted:
            variants["sparse"] = (sparse, inst.y)
        dense, converted = _dense(inst.X)
        if converted:
            variants["dense"] = (dense, inst.y)
    else:
        found = given(inst.X)
        items = found.items() if isinstance(found, dict) else enumerate(found)
        variants = {f"variant {name!r}": (X, inst.y) for name, X in items}
    rng = inst.rng("input_variants")
    probes = _probe_inputs(inst, rng)
    reference = _probe(inst, inst.batch, probes)
    ran = []
    for name, (X, y) in variants.items():
        try:
            codec = s.output_space().codec(y)
            batch = s.make_batch(X, n_states=codec.n_states)
        except (TypeError, ValueError) as error:
            if given is None and name == "sparse":
                continue  # a structure may refuse sparse input, with a clear error
            raise AssertionError(f"{name} input: make_batch raises {type(error).__name__}: "
                                 f"{error}") from error
        ran.append(name)
        Y = codec.encode(batch, y)
        if not np.array_equal(Y, inst.Y):
            raise AssertionError(f"{name} input: the encoded targets differ.")
        for attribute in ("n_samples", "n_weights"):
            if getattr(batch, attribute) != getattr(inst.batch, attribute):
                raise AssertionError(f"{name} input: batch.{attribute} differs.")
        for attribute in ("unit_offsets", "part_offsets"):
            if not np.array_equal(getattr(batch, attribute), getattr(inst.batch, attribute)):
                raise AssertionError(f"{name} input: batch.{attribute} differs.")
        results = _probe(inst, batch, probes)
        for key, expected in reference.items():
            _assert_close(results[key], expected, f"{name} input: {key}", rtol=1e-9, atol=1e-10)
    if not ran:
        return "no input variant accepted"


def _no_mutation(inst):
    """No operation modifies its arguments, the batch, the data or the structure.

    Every operation is called with fresh arguments, which are compared with
    copies afterwards, as are the batch, ``X``, ``y`` and the structure's
    attributes (``copy.deepcopy(vars(structure))``): an operation writes no
    attribute on the structure.  Then every operation is called again with
    read-only arguments.
    """
    s, b = inst.structure, inst.batch
    difference = _difference(inst.initial_state, vars(s), "the structure's attributes")
    if difference:
        raise AssertionError(f"operations called while enumerating the outputs (check_outputs, "
                             f"encode, project) changed {difference}.")
    calls = _operation_calls(inst, inst.rng("no_mutation"))
    for read_only in (False, True):
        for name, function, args in calls:
            if read_only:
                args = _read_only(args)
            before = copy.deepcopy(args)
            state = copy.deepcopy(vars(s))
            try:
                function(*args)
            except UnsupportedOperation:
                continue
            except Exception as error:
                if read_only:
                    raise AssertionError(f"{name} fails with read-only arguments: "
                                         f"{type(error).__name__}: {error}") from error
                raise
            for what, old, new in (("its arguments", before, args),
                                   ("the structure's attributes", state, vars(s)),
                                   ("the batch", inst.batch_state, b),
                                   ("the data (X, y)", inst.data_state, (inst.X, inst.y))):
                difference = _difference(old, new, what)
                if difference:
                    raise AssertionError(f"{name} modified {difference}.")


def _final_state(inst):
    """After all checks: the structure, the batch and the data are as they were."""
    for what, old, new in (("the structure's attributes", inst.initial_state,
                            vars(inst.structure)),
                           ("the batch", inst.batch_state, inst.batch),
                           ("the data (X, y)", inst.data_state, (inst.X, inst.y))):
        difference = _difference(old, new, what)
        if difference:
            raise AssertionError(f"the operations called by the checks modified {difference}.")


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


# ------------------------------------------------------------- the data set


def _hamming(Y_true, Y):
    return float(np.count_nonzero(np.asarray(Y_true) != np.asarray(Y)))


class _Instance:
    """A tiny data set with its batch, true outputs and every enumerated output."""

    def __init__(self, structure, X, y, *, enumerate_outputs=None, loss=None,
                 polytope_rays=None, variants=None, random_state=0):
        self.structure = structure
        self.initial_state = copy.deepcopy(vars(structure))
        self.X, self.y = X, y
        self.data_state = copy.deepcopy((X, y))
        self.loss = _hamming if loss is None else loss
        self.polytope_rays = polytope_rays
        self.variants = variants
        self.seed = int(check_random_state(random_state).randint(2 ** 31 - 1))
        if not structure.supports("encode"):
            raise AssertionError("the checks need encode, which the structure does not "
                                 "support.")
        self.codec = structure.output_space().codec(y)
        self.batch = b = structure.make_batch(X, n_states=self.codec.n_states)
        self.batch_state = copy.deepcopy(b)
        self.Y = structure.check_outputs(b, self.codec.encode(b, y)).copy()
        self.n_samples = int(b.n_samples)
        self.n_units = int(b.unit_offsets[-1])
        self.n_parts = int(b.part_offsets[-1])
        self.n_weights = int(b.n_weights)
        self.units = [slice(int(b.unit_offsets[i]), int(b.unit_offsets[i + 1]))
                      for i in range(self.n_samples)]
        self.parts = [slice(int(b.part_offsets[i]), int(b.part_offsets[i + 1]))
                      for i in range(self.n_samples)]
        self.outputs, self.encodings, self._index = [], [], []
        for i in range(self.n_samples):
            if enumerate_outputs is None:
                outputs = self._enumerate(i)
            else:
                outputs = [np.asarray(y_i, dtype=np.int64).reshape(self.n_units_of(i))
                           for y_i in enumerate_outputs(b, i)]
            # (explicit row counts: -1 is ambiguous for an example without units or parts)
            self.outputs.append(np.asarray(outputs, dtype=np.int64).reshape(
                len(outputs), self.n_units_of(i)))
            self.encodings.append(np.array([self.encode(self.with_output(i, y_i))[self.parts[i]]
                                            for y_i in self.outputs[i]]).reshape(
                                                len(outputs), self.n_parts_of(i)))
            self._index.append({tuple(y_i): k for k, y_i in enumerate(self.outputs[i])})
            if not len(self.outputs[i]):
                raise AssertionError(f"example {i} has no output.")
        self._features = None

    # ---------------------------------------------------------- enumeration
    def _enumerate(self, i):
        s, b = self.structure, self.batch
        n_states = self.codec.n_states or 2
        n_units = self.n_units_of(i)
        if n_states ** n_units > MAX_CANDIDATES:
            raise ValueError(f"example {i} has {n_states ** n_units} candidate outputs, more "
                             f"than {MAX_CANDIDATES}: make the data sets smaller.")
        outputs = []
        for candidate in itertools.product(range(n_states), repeat=n_units):
            Y = self.with_output(i, candidate)
            try:
                s.check_outputs(b, Y)
            except ValueError:
                continue
            if s.supports("project"):
                z = self.encode(Y)
                p = np.asarray(s.project(b, z))
                if not np.allclose(p[self.parts[i]], z[self.parts[i]], rtol=0, atol=1e-7):
                    continue  # not a vertex of the polytope: not an output
            outputs.append(np.array(candidate, dtype=np.int64))
        return outputs

    def with_output(self, i, y_i):
        """The true outputs with example ``i``'s replaced by ``y_i``."""
        Y = self.Y.copy()
        Y[self.units[i]] = y_i
        return Y

    def encode(self, Y):
        return np.asarray(self.structure.encode(self.batch, Y), dtype=np.float64)

    def index(self, i, y_i):
        """Position of ``y_i`` among the outputs of example ``i``, or -1."""
        return self._index[i].get(tuple(np.asarray(y_i, dtype=np.int64).tolist()), -1)

    def n_units_of(self, i):
        return self.units[i].stop - self.units[i].start

    def n_parts_of(self, i):
        return self.parts[i].stop - self.parts[i].start

    def rng(self, name):
        """A random generator per check, so that checks do not depend on their order."""
        return np.random.RandomState((self.seed + zlib.crc32(name.encode())) % 2 ** 31)

    # ------------------------------------------------------------ references
    def feature_matrix(self):
        """``F`` (n_weights, n_parts): row ``j`` is ``part_scores`` of the unit vector ``e_j``."""
        if self._features is None:
            eye = np.eye(self.n_weights)
            self._features = np.array([self.structure.part_scores(self.batch, eye[j])
                                       for j in range(self.n_weights)]).reshape(
                                           self.n_weights, self.n_parts)
        return self._features

    def weights(self, rng):
        """Named weight vectors respecting the sign constraints."""
        n = self.n_weights
        mask = np.asarray(self.structure.nonnegative_weights(self.batch), dtype=bool)
        draws = [("zero weights", np.zeros(n)), ("random weights", rng.randn(n)),
                 ("large random weights", 5.0 * rng.randn(n))]
        for _, w in draws:
            w[mask] = np.abs(w[mask])
        return draws

    def score_draws(self, rng):
        """Named part-score vectors: ``part_scores`` of :meth:`weights`, and arbitrary ones
        when no weight is sign-constrained and inference accepts them."""
        s, b = self.structure, self.batch
        if not s.supports("part_scores"):
            return [("zero scores", np.zeros(self.n_parts)),
                    ("random scores", rng.randn(self.n_parts)),
                    ("large random scores", 5.0 * rng.randn(self.n_parts))]
        draws = [(f"scores of {what}", np.asarray(s.part_scores(b, w), dtype=np.float64))
                 for what, w in self.weights(rng)]
        arbitrary = 2.0 * rng.randn(self.n_parts)
        if not np.any(s.nonnegative_weights(b)) and self._accepts(arbitrary):
            draws.append(("arbitrary part scores", arbitrary))
        return draws

    def _accepts(self, scores):
        """Whether inference accepts these part scores (min-cut edge parts must score <= 0
        even when no weight is sign-constrained, e.g. without edge features)."""
        if not self.structure.supports("argmax"):
            return True
        try:
            self.structure.argmax(self.batch, scores)
        except ValueError:
            return False
        return True

    def example_values(self, Y, scores):
        """Score of outputs ``Y`` in every example."""
        return _example_values(self.structure, self.batch, Y, scores)

    def reference_marginals(self, scores):
        mu = np.empty(self.n_parts)
        log_z = np.empty(self.n_samples)
        for i in range(self.n_samples):
            values = self.encodings[i] @ scores[self.parts[i]]
            log_z[i] = logsumexp(values)
            mu[self.parts[i]] = np.exp(values - log_z[i]) @ self.encodings[i]
        return mu, log_z

    def check_best(self, Y, scores, what):
        """Outputs ``Y`` are valid and each scores the best enumerated score."""
        Y = np.asarray(Y)
        if Y.shape != (self.n_units,) or not np.issubdtype(Y.dtype, np.integer):
            raise AssertionError(f"{what}: expected {self.n_units} integer outputs, got "
                                 f"{Y.dtype} of shape {Y.shape}.")
        for i in range(self.n_samples):
            self.check_best_of_example(i, Y[self.units[i]], scores, what)

    def check_best_of_example(self, i, y_i, scores, what):
        k = self.index(i, y_i)
        if k < 0:
            raise AssertionError(f"{what}: example {i} gets {np.asarray(y_i).tolist()}, which "
                                 "is not one of its enumerated outputs.")
        values = self.encodings[i] @ scores[self.parts[i]]
        best = values.max()
        if values[k] < best - (RTOL * abs(best) + ATOL):
            raise AssertionError(
                f"{what}: example {i} gets {np.asarray(y_i).tolist()} scoring "
                f"{float(values[k])!r}, but {self.outputs[i][values.argmax()].tolist()} scores "
                f"{float(best)!r}.")

    def rays(self, i):
        if self.polytope_rays is None:
            return np.zeros((0, self.n_parts_of(i)))
        return np.asarray(self.polytope_rays(self.batch, i), dtype=float).reshape(
            -1, self.n_parts_of(i))

    def check_projection(self, i, v, p, what):
        """``p`` is the projection of ``v`` onto the polytope of example ``i`` (KKT, LP, QP)."""
        if not np.all(np.isfinite(p)):
            raise AssertionError(f"{what}: example {i}: the projection has non-finite values.")
        if v.size == 0:
            return
        points, rays = self.encodings[i], self.rays(i)
        scale = max(1.0, np.abs(v).max(), np.abs(points).max())
        tol = 1e-7 * scale * scale
        residual = v - p
        violation = max((points - p) @ residual)
        if rays.size:
            violation = max(violation, max(rays @ residual))
        if violation > tol:
            raise AssertionError(
                f"{what}: example {i}: project({np.round(v, 4).tolist()}) = "
                f"{np.round(p, 6).tolist()} is not optimal: (v - p) . (e - p) = {violation:.3g} "
                f"> 0 for an encoded output e (or a ray).")
        distance = _hull_distance(p, points, rays)
        if distance > 1e-7 * scale:
            raise AssertionError(
                f"{what}: example {i}: project({np.round(v, 4).tolist()}) = "
                f"{np.round(p, 6).tolist()} lies outside the polytope (L1 distance "
                f"{distance:.3g}).")
        # an objective accurate to tol is a point accurate to sqrt(tol): a loose comparison
        reference = _qp_projection(v, points, rays)
        if reference is not None and not np.allclose(p, reference, rtol=0, atol=1e-5 * scale):
            raise AssertionError(
                f"{what}: example {i}: project({np.round(v, 4).tolist()}) = "
                f"{np.round(p, 6).tolist()} but a generic QP solver finds "
                f"{np.round(reference, 6).tolist()}.")


def _example_values(structure, batch, Y, scores):
    weighted = np.asarray(structure.encode(batch, Y), dtype=float) * scores
    return np.array([weighted[batch.part_offsets[i]:batch.part_offsets[i + 1]].sum()
                     for i in range(batch.n_samples)])


def _offsets(lengths):
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


def _hull_distance(p, points, rays):
    """L1 distance from ``p`` to ``conv(points) + cone(rays)``, by a linear program."""
    n, m, r = p.size, len(points), len(rays)
    cost = np.r_[np.zeros(m + r), np.ones(2 * n)]
    A = np.zeros((n + 1, m + r + 2 * n))
    A[:n, :m] = points.T
    A[:n, m:m + r] = rays.T
    A[:n, m + r:m + r + n] = np.eye(n)
    A[:n, m + r + n:] = -np.eye(n)
    A[n, :m] = 1.0
    result = linprog(cost, A_eq=A, b_eq=np.r_[p, 1.0], bounds=(0, None), method="highs")
    if result.status != 0:
        raise RuntimeError(f"the membership linear program failed: {result.message}")
    return float(result.fun)


def _qp_projection(v, points, rays):
    """Projection of ``v`` onto ``conv(points) + cone(rays)`` by clarabel, or None without it."""
    try:
        import clarabel
    except ImportError:
        return None
    m, r = len(points), len(rays)
    M = np.vstack([points, rays]).T
    P = sp.csc_matrix(np.triu(M.T @ M))
    q = -M.T @ v
    A = sp.csc_matrix(np.vstack([np.r_[np.ones(m), np.zeros(r)][None, :], -np.eye(m + r)]))
    b = np.r_[1.0, np.zeros(m + r)]
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = 1e-13
    settings.tol_ktratio = 1e-12
    settings.max_iter = 500
    solver = clarabel.DefaultSolver(P, q, A, b, [clarabel.ZeroConeT(1),
                                                 clarabel.NonnegativeConeT(m + r)], settings)
    solution = solver.solve()
    if str(solution.status) != "Solved":
        return None
    return M @ np.asarray(solution.x)


# ------------------------------------------------------ operation batteries


def _operation_calls(inst, rng):
    """``(name, function, args)`` for every protocol operation of the structure."""
    s, b, Y = inst.structure, inst.batch, inst.Y
    n_parts = inst.n_parts
    w = inst.weights(rng)[1][1]
    z, v = rng.rand(n_parts), rng.randn(n_parts)
    scores = inst.score_draws(rng)[1][1]
    sample_weight = rng.rand(inst.n_samples) + 0.5
    codec, space = inst.codec, s.output_space()
    calls = [
        ("output_space", s.output_space, ()),
        ("codec", space.codec, (inst.y,)),
        ("codec.encode", codec.encode, (b, inst.y)),
        ("codec.decode", codec.decode, (b, Y.copy())),
        ("check_outputs", s.check_outputs, (b, Y.copy())),
        ("take", s.take, (b, np.arange(inst.n_samples)[::-1].copy())),
        ("n_features_in", space.n_features_in, (b,)),
        ("score", space.score, (b, Y.copy(), Y.copy(), sample_weight)),
        ("unit_values", space.unit_values, (b, v.copy())),
        ("weight_attributes", space.weight_attributes, (b, w.copy())),
        ("feature_support", space.feature_support, (b, w.copy())),
        ("nonnegative_weights", s.nonnegative_weights, (b,)),
        ("loss_offsets", s.loss_offsets, (b, Y.copy())),
    ]
    supported = {
        "part_scores": [(b, w.copy())],
        "expected_features": [(b, z.copy()), (b, z.copy(), sample_weight.copy())],
        "encode": [(b, Y.copy())],
        "decode": [(b, z.copy())],
        "part_losses": [(b, Y.copy())],
        "argmax": [(b, scores.copy())],
        "loss_augmented_argmax": [(b, scores.copy(), Y.copy())],
        "marginals": [(b, scores.copy())],
        "project": [(b, v.copy())],
    }
    for op, argument_lists in supported.items():
        if s.supports(op):
            calls += [(op, getattr(s, op), args) for args in argument_lists]
    if s.supports("marginals"):
        calls.append(("log_partition", s.log_partition, (b, scores.copy())))
    if s.supports("project"):
        state = {}
        calls.append(("project with warm_start",
                      lambda batch, point: s.project(batch, point, warm_start=state),
                      (b, v.copy())))
    if s.supports("feature_bounds"):
        calls += [("feature_bounds", s.feature_bounds, (b, geometry))
                  for geometry in ("entropic", "euclidean")]
    if s.kernel_ops is not None:
        w_kernel = np.asarray(s.kernel_weights(b, w.copy()))
        calls += [("kernel_data", s.kernel_data, (b,)),
                  ("kernel_data(training=True)", s.kernel_data, (b, True)),
                  ("kernel_weights", s.kernel_weights, (b, w.copy())),
                  ("contract_weights", s.contract_weights, (b, w_kernel))]
    return calls


def _probe_inputs(inst, rng):
    """Random arguments for :func:`_probe`, drawn once and shared by all input variants."""
    return {"weights": [w for _, w in inst.weights(rng)],
            "scores": [scores for _, scores in inst.score_draws(rng)],
            "z": rng.randn(inst.n_parts), "v": 2.0 * rng.randn(inst.n_parts),
            "sample_weight": rng.rand(inst.n_samples) + 0.5,
            "scale": rng.rand(inst.n_weights) + 0.5}


def _probe(inst, batch, inputs):
    """Results of every supported operation on a batch, by name (for comparing variants)."""
    s, Y = inst.structure, inst.Y
    space = s.output_space()
    out = {"loss_offsets": s.loss_offsets(batch, Y),
           "nonnegative_weights": s.nonnegative_weights(batch),
           "n_features_in": space.n_features_in(batch),
           "score": space.score(batch, Y, Y)}
    for k, w in enumerate(inputs["weights"]):
        if s.supports("part_scores"):
            out[f"part_scores of weights {k}"] = s.part_scores(batch, w)
        out[f"feature_support of weights {k}"] = space.feature_support(batch, w)
    z, sample_weight = inputs["z"], inputs["sample_weight"]
    if s.supports("expected_features"):
        out["expected_features"] = s.expected_features(batch, z)
        out["expected_features with sample_weight"] = s.expected_features(batch, z,
                                                                          sample_weight)
    if s.supports("encode"):
        out["encode"] = s.encode(batch, Y)
    if s.supports("decode"):
        out["decode"] = s.decode(batch, z)
    if s.supports("part_losses"):
        out["part_losses"] = s.part_losses(batch, Y)
    for k, scores in enumerate(inputs["scores"]):
        if s.supports("argmax"):
            out[f"score of argmax of scores {k}"] = _example_values(
                s, inst.batch, s.argmax(batch, scores), scores)
        if s.supports("loss_augmented_argmax") and s.supports("part_losses"):
            augmented = scores + s.part_losses(inst.batch, Y)
            out[f"score of loss_augmented_argmax of scores {k}"] = _example_values(
                s, inst.batch, s.loss_augmented_argmax(batch, scores, Y), augmented)
        if s.supports("marginals"):
            mu, log_z = s.marginals(batch, scores)
            out[f"marginals of scores {k}"] = mu
            out[f"log-partition of scores {k}"] = log_z
    if s.supports("project"):
        out["project"] = s.project(batch, inputs["v"])
    if s.supports("feature_bounds"):
        for geometry in ("entropic", "euclidean"):
            try:
                out[f"feature_bounds({geometry!r})"] = s.feature_bounds(batch, geometry)
            except UnsupportedOperation:
                pass
    if s.kernel_ops is not None:
        w = inputs["weights"][1]
        if kernel_provides(s, "part_scores"):
            out["kernel part_scores"] = BaseStructure.part_scores(s, batch, w)
        if kernel_provides(s, "add_features"):
            out["kernel expected_features"] = BaseStructure.expected_features(
                s, batch, z, sample_weight)
        if kernel_provides(s, "encode"):
            out["kernel encode"] = BaseStructure.encode(s, batch, Y)
        scores = inputs["scores"][1]
        if kernel_provides(s, "argmax"):
            out["score of kernel argmax"] = _example_values(
                s, inst.batch, BaseStructure.argmax(s, batch, scores), scores)
        if kernel_provides(s, "marginals"):
            mu, log_z = BaseStructure.marginals(s, batch, scores)
            out["kernel marginals"], out["kernel log-partition"] = mu, log_z
        if kernel_provides(s, "project"):
            out["kernel project"] = BaseStructure.project(s, batch, inputs["v"])
        data = s.kernel_data(batch, training=True)
        add_norm = s.kernel_ops.functions["add_features_norm"]
        for what, scale in (("no scale", empty_scale()), ("a scale", inputs["scale"])):
            values, added = [], np.zeros(inst.n_weights)
            for i in range(inst.n_samples):
                n_parts = inst.n_parts_of(i)
                values.append(add_norm(data, i, z[inst.parts[i]].copy(), scale, added,
                                       np.zeros(inst.n_weights), np.zeros(2 * n_parts)))
            out[f"add_features_norm ({what})"] = np.array(values)
            out[f"add_features_norm's additions ({what})"] = added
    return out


# ------------------------------------------------------------------ helpers


def _assert_close(actual, expected, what, rtol=RTOL, atol=ATOL):
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    if actual.shape != expected.shape:
        raise AssertionError(f"{what}: got shape {actual.shape}, expected {expected.shape}.")
    close = np.isclose(actual, expected, rtol=rtol, atol=atol)
    if not np.all(close):
        k = np.unravel_index(np.argmin(close), close.shape) if actual.ndim else ()
        detail = (f"; got {np.round(actual, 6).tolist()}, expected "
                  f"{np.round(expected, 6).tolist()}" if actual.size <= 30 else "")
        raise AssertionError(
            f"{what}: {float(actual[k])!r} instead of {float(expected[k])!r}"
            + (f" at index {k[0] if len(k) == 1 else k}" if actual.ndim else "")
            + f" (largest difference {np.max(np.abs(actual - expected)):.3g}){detail}.")


def _target_difference(y, decoded):
    """Where decoded targets differ from the user's targets (None when equal)."""
    if len(y) != len(decoded):
        return f"{len(decoded)} entries instead of {len(y)}"
    for i, (a, b) in enumerate(zip(y, decoded)):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or not np.all(a == b):
            return f"entry {i} is {b.tolist()}, expected {a.tolist()}"
    return None


def _map_arrays(obj, function):
    """``obj`` with every ndarray and sparse matrix replaced by ``function(x)`` (lists,
    tuples and dicts are rebuilt)."""
    if isinstance(obj, np.ndarray) or sp.issparse(obj):
        return function(obj)
    if isinstance(obj, tuple):
        return tuple(_map_arrays(item, function) for item in obj)
    if isinstance(obj, list):
        return [_map_arrays(item, function) for item in obj]
    if isinstance(obj, dict):
        return {key: _map_arrays(value, function) for key, value in obj.items()}
    return obj


def _read_only(obj):
    """A copy of ``obj`` whose arrays (and sparse matrices' arrays) are read-only."""
    def freeze(x):
        x = x.copy()
        arrays = [x] if isinstance(x, np.ndarray) else [
            getattr(x, name) for name in ("data", "indices", "indptr") if hasattr(x, name)]
        for array in arrays:
            array.setflags(write=False)
        return x

    return _map_arrays(obj, freeze)


def _sparse(obj):
    """A copy of ``obj`` with its 2-D floating-point arrays as CSR matrices; and whether any."""
    converted = []

    def convert(x):
        if isinstance(x, np.ndarray) and x.ndim == 2 and np.issubdtype(x.dtype, np.floating):
            converted.append(True)
            return sp.csr_matrix(x)
        return x

    return _map_arrays(obj, convert), bool(converted)


def _dense(obj):
    """A copy of ``obj`` with its sparse matrices as dense arrays; and whether any."""
    converted = []

    def convert(x):
        if sp.issparse(x):
            converted.append(True)
            return x.toarray()
        return x

    return _map_arrays(obj, convert), bool(converted)


def _difference(old, new, path):
    """Description of the first difference between a deep copy ``old`` and ``new``, or None."""
    if type(old) is not type(new):
        return f"{path} (type {type(old).__name__} became {type(new).__name__})"
    if isinstance(old, np.ndarray):
        if old.shape != new.shape or old.dtype != new.dtype:
            return f"{path} (shape or dtype)"
        equal_nan = old.dtype.kind in "fc"
        return None if np.array_equal(old, new, equal_nan=equal_nan) else f"{path} (values)"
    if sp.issparse(old):
        if old.shape != new.shape:
            return f"{path} (shape)"
        names = [name for name in ("data", "indices", "indptr", "row", "col")
                 if hasattr(old, name)]
        for name in names:
            difference = _difference(getattr(old, name), getattr(new, name), f"{path}.{name}")
            if difference:
                return difference
        return None
    if isinstance(old, dict):
        added = [key for key in new if key not in old]
        removed = [key for key in old if key not in new]
        if added:
            return f"{path} (added {', '.join(map(repr, added))})"
        if removed:
            return f"{path} (removed {', '.join(map(repr, removed))})"
        for key in old:
            difference = _difference(old[key], new[key], f"{path}[{key!r}]")
            if difference:
                return difference
        return None
    if isinstance(old, (list, tuple)):
        if len(old) != len(new):
            return f"{path} (length {len(old)} became {len(new)})"
        for k, (a, b) in enumerate(zip(old, new)):
            difference = _difference(a, b, f"{path}[{k}]")
            if difference:
                return difference
        return None
    if dataclasses.is_dataclass(old) and not isinstance(old, type):
        return _difference({f.name: getattr(old, f.name) for f in dataclasses.fields(old)},
                           {f.name: getattr(new, f.name) for f in dataclasses.fields(new)},
                           path)
    if isinstance(old, (str, bytes, int, float, complex, bool, type(None), np.generic)):
        same = old == new or (old != old and new != new)  # NaN equals NaN here
        return None if same else f"{path} ({old!r} became {new!r})"
    if hasattr(old, "__dict__") and not callable(old):
        return _difference(vars(old), vars(new), path)
    try:
        return None if pickle.dumps(old) == pickle.dumps(new) else f"{path} (value)"
    except Exception:
        return None
