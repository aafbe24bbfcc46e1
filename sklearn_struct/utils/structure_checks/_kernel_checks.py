"""The checks of the per-example numba operations and the generic loops."""

import copy

import numpy as np

from ...structures._base import BaseStructure
from ...structures._kernel import empty_scale, kernel_provides
from ._comparison import _assert_close, _difference


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
    batch methods (its own methods or batch loops), and the kernels' ``encode``, ``argmax``,
    ``marginals``, ``log_partition`` and ``project``."""
    s, b, n = inst.structure, inst.batch, inst.n_samples
    # the generic batch loops (BaseStructure's defaults on the per-example operations alone)
    # against the structure's batch methods
    generic = s
    if s.kernel_ops.batch_loops:  # the same structure, with its batch loops left out
        generic = copy.copy(s)
        generic.__class__ = type(type(s).__name__, (type(s),),
                                 {"kernel_ops": s.kernel_ops.without(*s.kernel_ops.batch_loops)})
    z = rng.randn(inst.n_parts)
    sample_weight = rng.rand(n) + 0.5
    if kernel_provides(s, "part_scores") and s.supports("part_scores"):
        _assert_close(BaseStructure.part_scores(generic, b, w), s.part_scores(b, w),
                      "part_scores of the generic loop")
    if kernel_provides(s, "add_features") and s.supports("expected_features"):
        for weights in (None, sample_weight):
            _assert_close(BaseStructure.expected_features(generic, b, z, sample_weight=weights),
                          s.expected_features(b, z, sample_weight=weights),
                          "expected_features of the generic loop"
                          + (" with sample_weight" if weights is not None else ""))
    if kernel_provides(s, "encode"):
        for i in range(n):
            for k, y_i in enumerate(inst.outputs[i]):
                out = np.full(inst.n_parts_of(i), np.nan)  # the kernel writes every part
                op("encode", data, i, y_i.copy(), out)
                _assert_close(out, inst.encodings[i][k],
                              f"kernel encode of output {y_i.tolist()} of example {i}")
        _assert_close(BaseStructure.encode(generic, b, inst.Y), s.encode(b, inst.Y),
                      "encode of the generic loop")
    draws = inst.score_draws(rng)
    if kernel_provides(s, "argmax"):
        for what, scores in draws:
            for i in range(n):
                y_out = np.zeros(inst.n_units_of(i), dtype=np.int64)
                op("argmax", data, i, scores[inst.parts[i]].copy(), y_out)
                inst.check_best_of_example(i, y_out, scores, f"kernel argmax ({what})")
            inst.check_best(BaseStructure.argmax(generic, b, scores), scores,
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
            marginals = BaseStructure.marginals(generic, b, scores)
            _assert_close(marginals[0], mu, f"marginals of the generic loop ({what})")
            _assert_close(marginals[1], log_z, f"log-partition of the generic loop ({what})")
            _assert_close(BaseStructure.log_partition(generic, b, scores), log_z,
                          f"log_partition of the generic loop ({what})")
    if kernel_provides(s, "project"):
        v = 2.0 * rng.randn(inst.n_parts)
        for i in range(n):
            out = np.full(inst.n_parts_of(i), np.nan)
            op("project", data, i, v[inst.parts[i]].copy(), out)
            inst.check_projection(i, v[inst.parts[i]], out, "kernel project")
        projected = BaseStructure.project(generic, b, v)
        for i in range(n):
            inst.check_projection(i, v[inst.parts[i]], projected[inst.parts[i]],
                                  "project of the generic loop")
