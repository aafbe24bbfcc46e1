"""The checks of the parts operations against enumeration."""

import functools

import numpy as np
from scipy.special import logsumexp

from ...structures._base import BaseStructure, UnsupportedOperation
from ...structures._kernel import kernel_provides
from ._comparison import ATOL, RTOL, _assert_close, _target_difference
from ._instance import _example_values, _offsets


def _requires(operation):
    """Run the decorated check only where the structure supports ``operation``; elsewhere
    it reports the operation unsupported (what ``check_structure`` lists as skipped)."""
    def decorate(check):
        @functools.wraps(check)
        def run(inst):
            if not inst.structure.supports(operation):
                return f"{operation} unsupported"
            return check(inst)
        return run
    return decorate


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


@_requires("part_losses")
def _part_losses(inst):
    """``encode(y) . part_losses(Y) + loss_offsets`` is the declared loss; the truth costs 0."""
    s, b = inst.structure, inst.batch
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


@_requires("argmax")
def _argmax(inst):
    """``argmax`` and ``loss_augmented_argmax`` reach the best enumerated score."""
    s, b = inst.structure, inst.batch
    for what, scores in inst.score_draws(inst.rng("argmax")):
        inst.check_best(s.argmax(b, scores), scores, f"argmax ({what})")
        if s.supports("loss_augmented_argmax"):
            augmented = scores + s.part_losses(b, inst.Y)
            inst.check_best(s.loss_augmented_argmax(b, scores, inst.Y), augmented,
                            f"loss_augmented_argmax ({what}), scored with scores + part_losses")


@_requires("marginals")
def _marginals(inst):
    """Marginals and log-partition equal enumeration; ``d log Z / d scores`` is the marginals."""
    s, b = inst.structure, inst.batch
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


@_requires("project")
def _project(inst):
    """``project`` is the Euclidean projection onto the polytope; warm starts change nothing.

    The polytope of example ``i`` is the convex hull of its encodings ``E`` plus
    the cone of its rays ``R``.  ``p`` is the projection of ``v`` iff ``p`` lies in
    it (checked by a linear program) and ``(v - p) . (e - p) <= tol`` for every
    encoding ``e`` and ``(v - p) . r <= tol`` for every ray ``r``.  When clarabel
    is installed the projection is also compared with a generic QP solution.
    """
    s, b = inst.structure, inst.batch
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


@_requires("feature_bounds")
def _feature_bounds(inst):
    """``feature_bounds`` bounds the feature norms it promises, for each geometry it accepts."""
    s, b = inst.structure, inst.batch
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
