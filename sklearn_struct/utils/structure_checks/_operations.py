"""Every protocol operation of a structure, called on fresh arguments (for the protocol checks)."""


import numpy as np

from ...structures._base import BaseStructure, UnsupportedOperation
from ...structures._kernel import empty_scale, kernel_provides
from ._instance import _example_values


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
