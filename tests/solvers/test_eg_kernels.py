"""The numba online EG epoch against a slow Python reference of the same algorithm.

The reference visits examples one at a time through the structure's *batch*
operations on single-example sub-batches, with the features rescaled at the
Python level; the numba epoch (compiled for the structure's kernel operations)
must take exactly the same steps.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_struct.solvers import _eg_dual, _eg_execution, _eg_kernels
from sklearn_struct.solvers.loss import StructuredLoss
from sklearn_struct.solvers._kernel_shards import KernelShards
from sklearn_struct.solvers._objective import example_losses
from sklearn_struct.structures import (ChainStructure, DependencyTreeStructure, MulticlassStructure,
                                       SiblingDependencyStructure)
from sklearn_struct.structures._kernel import empty_scale, kernel_provides, specialize
from sklearn_struct.structures.mincut.structure import MinCutStructure


def _reference_epoch(problem, state, order, loss, C):
    """Figure 3 of Collins et al. (2008) with the adaptive rate, one example at a time.

    ``loss="smoothed"``: the hinge smoothed at inverse temperature ``state.beta``, the
    log-loss step on the scores ``beta * (e + w . phi)`` with the dual term
    ``E e + H / beta``, and the rate set by the quadratic model of the gain through
    its first-order part (the gradient of the dual at the old marginals . dmu).
    """
    structure, batch = problem.structure, problem.batch
    po = batch.part_offsets
    for i in order:
        sub, a, b = structure.take(batch, [i]), po[i], po[i + 1]
        cs = C * problem.sample_weight[i]
        scores = problem.scores(sub, state.w)
        step = state.etas[i]
        for attempt in range(_eg_dual.MAX_HALVINGS + 1):
            augmented = problem.part_losses[a:b] + scores
            if loss == "log":
                theta = (1.0 - step) * state.theta[a:b] + step * scores
            elif loss == "smoothed":
                theta = (1.0 - step) * state.theta[a:b] + step * state.beta * augmented
            else:
                theta = state.theta[a:b] + step * augmented
            mu, log_z = structure.marginals(sub, theta)
            if loss == "smoothed":
                entropy = _eg_dual.dual_terms("log", mu, log_z, theta, None, sub.part_offsets)[0]
                term = mu @ problem.part_losses[a:b] + entropy / state.beta
            else:
                term = _eg_dual.dual_terms(loss, mu, log_z, theta, problem.part_losses[a:b],
                                           sub.part_offsets)[0]
            dmu = mu - state.mu[a:b]
            change = problem.features(sub, dmu)
            gain = cs * (term - state.terms[i] + dmu @ scores) - 0.5 * cs * cs * (change @ change)
            size = (np.abs(theta).sum() + np.abs(scores).sum() + abs(log_z[0]) + abs(term)
                    + abs(state.terms[i]))
            rounding = _eg_kernels.ROUNDING * (cs * size + cs * cs * (change @ change))
            factor = None
            if loss == "smoothed":
                gradient = problem.part_losses[a:b] - state.theta[a:b] / state.beta + scores
                first = cs * (dmu @ gradient)
                if first > rounding and first - gain > rounding:
                    factor = first / (2 * (first - gain))
            if gain >= -rounding:
                state.theta[a:b], state.mu[a:b], state.terms[i] = theta, mu, term
                state.w = state.w - cs * change
                if gain <= rounding:
                    state.etas[i] = step
                elif factor is not None:
                    state.etas[i] = step * min(factor, _eg_kernels.MAX_RATE_GROWTH)
                else:
                    state.etas[i] = step * (_eg_kernels.LOG_LOSS_RATE_GROWTH if loss == "log"
                                            else _eg_kernels.RATE_GROWTH)
                break
            if attempt == _eg_dual.MAX_HALVINGS:
                state.etas[i] = step
                break
            step *= 0.5 if factor is None else min(max(factor, _eg_kernels.MIN_RATE_FACTOR),
                                                   0.5)


def _chains(n, seed):
    rng = np.random.RandomState(seed)
    X, y = [], []
    for _ in range(n):
        T = rng.randint(1, 5)
        labels = rng.randint(0, 3, T)
        x = rng.randn(T, 4)
        x[np.arange(T), labels] += 1.0
        X.append(x)
        y.append(labels)
    return X, np.concatenate(y)


@pytest.mark.parametrize("loss", ["log", "hinge", "smoothed"])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("scaled", [False, True])
@pytest.mark.parametrize("structure", [ChainStructure(), ChainStructure(start_end=False),
                                       MulticlassStructure()], ids=repr)
def test_numba_epoch_takes_the_steps_of_the_python_reference(structure, loss, sparse, scaled):
    rng = np.random.RandomState(3)
    if structure.output_space().flat:
        X, Y = rng.randn(30, 4), rng.randint(0, 3, 30)
        X[np.arange(30), Y] += 1.0
        X = sp.csr_matrix(X) if sparse else X
    else:
        X, Y = _chains(12, seed=4)
        X = [sp.csr_matrix(x) for x in X] if sparse else X
    batch = structure.make_batch(X, n_states=3)
    scale = None
    if scaled:  # weight-wise rescaling, zeros included (the adaptive M3N's beta)
        scale = rng.uniform(0.2, 2.0, batch.n_weights)
        scale[rng.rand(batch.n_weights) < 0.2] = 0.0
    sample_weight = rng.uniform(0.5, 2.0, batch.n_samples)
    C = 0.8
    smoothed = loss == "smoothed"
    problem = StructuredLoss(structure, batch, Y, "hinge" if smoothed else loss, sample_weight,
                             scale)
    fast = _eg_dual.initial_state(problem, 0.5, near_truth=smoothed)
    slow = _eg_dual.initial_state(problem, 0.5, near_truth=smoothed)
    for state in (fast, slow):
        state.beta = 3.0 if smoothed else None
        _eg_dual.attach_state(problem, state, C)
    epoch = _eg_execution.OnlineEpoch(problem)
    for _ in range(3):
        order = rng.randint(0, batch.n_samples, batch.n_samples).astype(np.int64)
        epoch.run(fast, order, len(order) * (_eg_dual.MAX_HALVINGS + 1), problem.kind, True, 0.5, C)
        _reference_epoch(problem, slow, order, loss, C)
    np.testing.assert_allclose(fast.theta, slow.theta, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(fast.mu, slow.mu, atol=1e-11)
    np.testing.assert_allclose(fast.etas, slow.etas, rtol=1e-12)
    np.testing.assert_allclose(fast.w, slow.w, atol=1e-10)
    # w(alpha) is maintained exactly: it equals the weights rebuilt from the marginals
    np.testing.assert_allclose(fast.w, _eg_dual.dual_weights(problem, fast.mu, C), atol=1e-10)
    if smoothed:  # the dual terms are E e + H / beta of the maintained marginals
        rebuilt = _eg_dual.initial_state(problem, 0.5)
        rebuilt.theta, rebuilt.mu, rebuilt.beta = fast.theta, fast.mu, fast.beta
        _eg_dual.attach_state(problem, rebuilt, C)
        np.testing.assert_allclose(fast.terms, rebuilt.terms, rtol=1e-9, atol=1e-11)
    if scaled:
        assert np.all(fast.w[scale == 0.0] == 0.0)


def test_sequences_without_feature_columns_train_on_transitions():
    """Dense tokens with 0 columns (once a crash: dense_width == 0 is the CSR flag)."""
    from sklearn_struct import EGCRF

    rng = np.random.RandomState(0)
    y = [rng.randint(0, 3, rng.randint(1, 5)) for _ in range(10)]
    empty = [np.zeros((len(labels), 0)) for labels in y]
    zero_column = [np.zeros((len(labels), 1)) for labels in y]
    a = EGCRF(tol=0, max_iter=5, random_state=0).fit(empty, y)
    b = EGCRF(tol=0, max_iter=5, random_state=0).fit(zero_column, y)
    assert a.coef_.shape == (3, 0)
    np.testing.assert_allclose(a.transition_, b.transition_, rtol=1e-12, atol=1e-14)
    assert [p.tolist() for p in a.predict(empty)] == [p.tolist() for p in b.predict(zero_column)]


@pytest.mark.parametrize("loss", ["log", "hinge"])
@pytest.mark.parametrize("flat", [False, True])
def test_mostly_zero_dense_features_reach_the_kernels_as_csr(flat, loss, monkeypatch):
    """Dense features with at most half non-zeros go to the kernels as CSR, with the same
    fit bit for bit as through the dense kernels (the same non-zero terms in the same
    order); dense features stay dense."""
    from sklearn_struct import EGCRF, EGStructuredSVM
    from sklearn_struct.structures import _token_kernels

    rng = np.random.RandomState(3)
    if flat:
        X = rng.rand(60, 8) * (rng.rand(60, 8) < 0.3)
        y = rng.randint(0, 3, 60)
        X[np.arange(60), y] += 1.0
        structure = MulticlassStructure()
    else:
        X, labels = _chains(20, seed=2)
        X = [x * (rng.rand(*x.shape) < 0.3) for x in X]
        y = np.split(labels, np.cumsum([len(x) for x in X])[:-1])
        structure = ChainStructure()
    Model = EGCRF if loss == "log" else EGStructuredSVM

    def fit():
        return Model(C=0.5, structure=structure, tol=0, max_iter=6, random_state=0).fit(X, y)

    batch = structure.make_batch(X, n_states=3)  # (a batch keeps its rows in kernel form)
    assert structure.kernel_data(batch).dense_width == 0  # CSR
    through_csr = fit()
    monkeypatch.setattr(_token_kernels, "SPARSE_KERNEL_DENSITY", 0.0)
    batch = structure.make_batch(X, n_states=3)
    assert structure.kernel_data(batch).dense_width == batch.X.shape[1]
    through_dense = fit()
    np.testing.assert_array_equal(through_csr.coef_, through_dense.coef_)
    np.testing.assert_array_equal(through_csr.history_["primal"],
                                  through_dense.history_["primal"])
    dense = structure.make_batch([rng.randn(4, 3)] if not flat else rng.randn(4, 3),
                                 n_states=3)
    monkeypatch.undo()
    assert structure.kernel_data(dense).dense_width == 3


def _grid_graph(rng, height, width):
    """A min-cut example: node features, grid edges, edge features (with loss offsets)."""
    nodes = np.arange(height * width).reshape(height, width)
    edges = np.array([(a, b) for a, b in zip(nodes[:, :-1].ravel(), nodes[:, 1:].ravel())]
                     + [(a, b) for a, b in zip(nodes[:-1].ravel(), nodes[1:].ravel())])
    return rng.randn(height * width, 2), edges, np.abs(rng.randn(len(edges), 2))


def _evaluation_problem(structure, loss, seed, scaled):
    """A few examples of ``structure`` with true outputs, weights, an optional feature
    scale and random marginals (the expected margins are linear in them)."""
    rng = np.random.RandomState(seed)
    if isinstance(structure, MinCutStructure):
        X = [_grid_graph(rng, 2, 3), _grid_graph(rng, 3, 3), _grid_graph(rng, 1, 4)]
        batch = structure.make_batch(X)
        Y = rng.randint(0, 2, batch.unit_offsets[-1])
    elif isinstance(structure, DependencyTreeStructure):
        X = [rng.randint(4, 9, size=(n, 3)) for n in (1, 3, 5, 4)]
        Y = np.concatenate([np.r_[0, np.arange(1, n)] for n in (1, 3, 5, 4)])
        batch = structure.make_batch(X)
    elif structure.output_space().flat:
        X, Y = rng.randn(30, 4), rng.randint(0, 3, 30)
        batch = structure.make_batch(X, n_states=3)
    else:
        X, _ = _chains(12, seed=4)
        batch = structure.make_batch(X, n_states=3)
        Y = structure.argmax(batch, rng.randn(batch.part_offsets[-1]))  # allowed labellings
    scale = rng.uniform(0.2, 2.0, batch.n_weights) if scaled else None
    w = rng.randn(batch.n_weights)
    problem = StructuredLoss(structure, batch, Y, loss, rng.uniform(0.5, 2.0, batch.n_samples),
                             scale)
    return problem, w, rng.uniform(0.0, 1.0, batch.part_offsets[-1])


def _check_online_primal(problem, w, mu, expected, expected_margins):
    """The online solver's evaluation, on one thread and on two sharing the examples,
    gives the primal, losses and expected margins of the batch evaluation."""
    for n_threads in (1, 2):
        epoch = _eg_execution.OnlineEpoch(problem, n_threads)
        assert epoch.loss_kernel is not None
        assert epoch.primal(w, 0.7) == pytest.approx(problem.primal(w, 0.7), rel=1e-12)
        primal, losses, margins = epoch.primal(w, 0.7, margins_of=mu)
        assert primal == pytest.approx(problem.primal(w, 0.7), rel=1e-12)
        np.testing.assert_allclose(losses, expected, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(margins, expected_margins, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("scaled", [False, True])
@pytest.mark.parametrize("structure", [ChainStructure(), ChainStructure(start_end=False),
                                       MulticlassStructure(), MinCutStructure()], ids=repr)
def test_numba_hinge_primal_matches_the_batch_evaluation(structure, scaled):
    """The gap evaluations of the online hinge solver (one loss-augmented argmax per
    example inside numba) give the batch evaluation's per-example hinge losses, and
    the expected margins under given marginals."""
    problem, w, mu = _evaluation_problem(structure, "hinge", 5, scaled)
    batch, scale = problem.batch, problem.feature_scale
    expected, expected_margins = example_losses(structure, problem.chunks, w, problem.Y,
                                                "hinge", scale, margins_of=mu)
    scores = problem.scores(batch, w)
    np.testing.assert_allclose(  # E_mu w . (phi(x_i, y_i) - phi(x_i, y)), written out
        expected_margins,
        [scores[a:b] @ (problem.truth[a:b] - mu[a:b])
         for a, b in zip(batch.part_offsets[:-1], batch.part_offsets[1:])], rtol=1e-12)
    assert np.any(expected > 0)
    if kernel_provides(structure, *_eg_execution.ONLINE_KERNEL_OPERATIONS):
        _check_online_primal(problem, w, mu, expected, expected_margins)
    # straight through the kernel (min-cut has no marginals, hence no online EG, but has
    # loss offsets)
    for marginals in (np.empty(0), mu):
        losses, margins = np.empty(batch.n_samples), np.full(batch.n_samples, np.nan)
        specialize(_eg_kernels.hinge_losses, structure.kernel_ops)(
            np.arange(batch.n_samples), structure.kernel_data(batch), batch.part_offsets,
            batch.unit_offsets, problem.truth, problem.part_losses, problem.loss_offsets,
            structure.kernel_weights(batch, w),
            empty_scale() if scale is None else structure.kernel_weights(batch, scale), losses,
            marginals, margins)
        np.testing.assert_allclose(losses, expected, rtol=1e-12, atol=1e-12)
        if marginals.size:
            np.testing.assert_allclose(margins, expected_margins, rtol=1e-12, atol=1e-12)
        else:  # no marginals, no margins
            assert np.all(np.isnan(margins))


def test_smoothed_hinge_visits_never_decrease_the_smoothed_dual():
    """Every visit under the step model (and across a sharpening with the rescaled rates)
    keeps or raises the dual of the smoothed hinge it ascends."""
    X, Y = _chains(25, seed=8)
    structure = ChainStructure(start_end=False)
    batch = structure.make_batch(X, n_states=3)
    C = 3.0
    problem = StructuredLoss(structure, batch, Y, "hinge")
    state = _eg_dual.initial_state(problem, 0.5, near_truth=True)
    state.beta = 1.0
    _eg_dual.attach_state(problem, state, C)
    epoch = _eg_execution.OnlineEpoch(problem)
    rng = np.random.RandomState(0)
    duals, grown = [_eg_dual.l2_dual(problem, state.terms, state.w, C)], 0
    for visit in range(400):
        if visit % 100 == 99:  # sharpen: beta doubles, the rates shrink where limited
            expected = problem.expected_losses(state.mu)
            state.terms = expected + (state.terms - expected) / 2.0
            state.beta *= 2.0
            state.etas = _eg_dual.sharpened_rates(state.etas, 2.0)
            duals.append(_eg_dual.l2_dual(problem, state.terms, state.w, C))
        before = state.etas.copy()
        epoch.run(state, rng.randint(0, batch.n_samples, 1).astype(np.int64),
                  _eg_dual.MAX_HALVINGS + 1, "hinge", True, 0.5, C)
        grown += np.any(state.etas > _eg_kernels.RATE_GROWTH * before)
        dual = _eg_dual.l2_dual(problem, state.terms, state.w, C)
        assert dual >= duals[-1] - 1e-12 * abs(dual)
        duals.append(dual)
    assert duals[-1] > duals[0]
    assert grown > 0  # the model grows some rates faster than the section 7 rule


def test_sharpened_rates_follow_the_curvature_model():
    etas = np.array([0.01, 0.5, 1.0, 3.0])
    kappa = 1.0 / etas[:2] - 1.0
    np.testing.assert_allclose(_eg_dual.sharpened_rates(etas, 2.0)[:2], 1.0 / (1.0 + 2.0 * kappa))
    np.testing.assert_array_equal(_eg_dual.sharpened_rates(etas, 2.0)[2:], etas[2:])


@pytest.mark.parametrize("scaled", [False, True])
@pytest.mark.parametrize("structure", [
    ChainStructure(), ChainStructure(start_end=False),
    ChainStructure(allowed_transitions=np.array([[1, 1, 0], [1, 1, 1], [0, 1, 1]], dtype=bool)),
    MulticlassStructure(), DependencyTreeStructure(hash_bits=8)], ids=repr)
def test_numba_log_primal_matches_the_batch_evaluation(structure, scaled):
    """The gap evaluations of the online log-loss solver (one log_partition per example
    inside numba: the chain's forward pass, the dependency tree's default through its
    marginals) give the batch evaluation's per-example losses and expected margins."""
    problem, w, mu = _evaluation_problem(structure, "log", 6, scaled)
    expected, expected_margins = example_losses(structure, problem.chunks, w, problem.Y, "log",
                                                problem.feature_scale, margins_of=mu)
    assert np.any(expected > 0)  # (a one-word sentence has one tree: loss 0)
    _check_online_primal(problem, w, mu, expected, expected_margins)


def test_log_partition_defaults_to_the_marginals_only_when_there_are_some():
    ops = DependencyTreeStructure(projective=False).kernel_ops  # through its own marginals
    assert "log_partition" in ops.functions and not ops.provides("log_partition")
    # projective trees give their inside pass alone (check_structure holds it to enumeration)
    assert DependencyTreeStructure(projective=True).kernel_ops.provides("log_partition")
    assert ChainStructure.kernel_ops.provides("log_partition")
    assert "log_partition" not in MinCutStructure.kernel_ops.functions


@pytest.mark.parametrize("structure", [ChainStructure(), DependencyTreeStructure(hash_bits=8)],
                         ids=repr)
def test_online_log_loss_keeps_no_part_vector_of_the_targets(structure):
    """The online solver's log-loss evaluation encodes each example's outputs inside the
    kernel: the datafit never builds the targets' part vector or the part losses (one
    float per part each), and the losses and margins are the batch evaluation's."""
    problem, w, mu = _evaluation_problem(structure, "log", 3, False)
    epoch = _eg_execution.OnlineEpoch(problem)
    primal, losses, margins = epoch.primal(w, 0.7, margins_of=mu)
    assert "truth" not in problem.__dict__ and "part_losses" not in problem.__dict__
    expected, expected_margins = example_losses(structure, problem.chunks, w, problem.Y,
                                                "log", None, margins_of=mu)
    np.testing.assert_allclose(losses, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(margins, expected_margins, rtol=1e-12, atol=1e-12)
    assert primal == pytest.approx(problem.primal(w, 0.7), rel=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("structure", [ChainStructure(), DependencyTreeStructure(hash_bits=8),
                                       SiblingDependencyStructure(hash_bits=8)], ids=repr)
def test_the_passes_kernel_data_give_the_expected_features(structure, dtype, tmp_path):
    """``F mu`` from the online runner's training data (the dependency structures' cached
    feature ids), on one thread, on two and from shards on disk, is the structure's own
    ``expected_features`` (scaled, weighted), for float64 and float32 marginals."""
    rng = np.random.RandomState(9)
    if isinstance(structure, DependencyTreeStructure):  # (enough sentences for 2+ shards)
        lengths = rng.randint(2, 6, 16)
        batch = structure.make_batch([rng.randint(4, 9, size=(n, 3)) for n in lengths])
        Y = np.concatenate([np.r_[0, np.arange(1, n)] for n in lengths])
    else:
        batch = structure.make_batch(_chains(12, seed=4)[0], n_states=3)
        Y = structure.argmax(batch, rng.randn(batch.part_offsets[-1]))
    problem = StructuredLoss(structure, batch, Y, "log", rng.uniform(0.5, 2.0, batch.n_samples),
                             rng.uniform(0.2, 2.0, batch.n_weights))
    mu = rng.uniform(0.0, 1.0, batch.part_offsets[-1]).astype(dtype)
    reference = problem.features(problem.batch, mu.astype(np.float64), problem.sample_weight)
    assert np.count_nonzero(reference) > 10
    whole = KernelShards(problem.structure, problem.batch).nbytes / 2 ** 20
    for n_threads, cache in ((1, (None, None)), (2, (None, None)), (1, (0.9 * whole, tmp_path))):
        epoch = _eg_execution.OnlineEpoch(problem, n_threads, *cache)
        assert len(epoch.shards) > 1 or cache[0] is None
        np.testing.assert_allclose(epoch.expected_features(mu), reference, rtol=1e-12,
                                   atol=1e-12)
        epoch.close()


@pytest.mark.parametrize("structure", [ChainStructure(), MulticlassStructure(),
                                       DependencyTreeStructure(hash_bits=8)], ids=repr)
def test_each_visit_gives_its_examples_gap_at_the_weights_it_found(structure):
    """A visit's gap is its example's share of the exact duality gap (``example_gaps``, from
    an evaluation) at the weights before the visit: checked for visits in turn, each
    against the evaluation of the state that visit started from.  Only the examples asked
    (a negative entry) write theirs."""
    problem, _, _ = _evaluation_problem(structure, "log", 8, scaled=True)
    C = 0.7
    state = _eg_dual.initial_state(problem, 0.5)
    _eg_dual.attach_state(problem, state, C)
    epoch = _eg_execution.OnlineEpoch(problem)
    assert epoch.visit_gaps
    gaps = np.full(problem.n_samples, np.nan)
    for i in np.random.RandomState(0).permutation(problem.n_samples):
        _, losses, margins = epoch.primal(state.w, C, margins_of=state.mu)
        exact = _eg_dual.example_gaps(problem, state, C, losses, margins)
        gaps[i] = -1.0
        epoch.run(state, np.array([i]), _eg_dual.MAX_HALVINGS + 1, "log", True, 0.5, C, gaps)
        assert gaps[i] == pytest.approx(exact[i], rel=1e-9, abs=1e-12)
    assert np.sum(gaps > 1e-3) >= problem.n_samples // 2  # (not all examples at their optimum)
    before = gaps.copy()
    gaps[:2] = np.nan
    epoch.run(state, np.arange(problem.n_samples), problem.n_samples, "log", True, 0.5, C,
              gaps)
    assert np.isnan(gaps[:2]).all()
    np.testing.assert_array_equal(gaps[2:], before[2:])  # answered already: not asked again


def test_visits_give_no_gaps_without_a_log_partition_of_their_own():
    """The hinge, and a structure whose log partition is its marginals', keep the geometric
    schedule: a log partition per visit would cost a whole inference."""
    problem, _, _ = _evaluation_problem(DependencyTreeStructure(hash_bits=8, projective=False),
                                        "log", 8, scaled=False)
    assert not _eg_execution.OnlineEpoch(problem).visit_gaps
    problem, _, _ = _evaluation_problem(ChainStructure(), "hinge", 8, scaled=False)
    assert not _eg_execution.OnlineEpoch(problem).visit_gaps
