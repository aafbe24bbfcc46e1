"""The checks of the protocol's rules: nothing mutated, every input variant agrees."""

import copy

import numpy as np

from ...structures._base import UnsupportedOperation
from ._comparison import _assert_close, _dense, _difference, _read_only, _sparse
from ._operations import _operation_calls, _probe, _probe_inputs


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
