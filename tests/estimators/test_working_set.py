"""EGStructuredSVM(solver="working_set") against independent references.

References: the hinge QP over enumerated outputs (SLSQP, ``tests/estimators/test_eg.py``), the
primal written out over enumerated outputs, online EG on the same problem, and the
solver's own runs with other pool sizes.
"""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_struct.datasets import load_ocr_default
from sklearn_struct.eg import EGCRF, EGStructuredSVM, eg_path
from sklearn_struct.solvers import working_set
from sklearn_struct.structures import (DependencyTreeStructure, MulticlassStructure,
                                       TreeStructure, UnsupportedOperation)
from sklearn_struct.structures.chain.structure import ChainStructure

from test_eg import (enumerated_problem, joint_features, make_chains, make_flat, primal_hinge,
                     solve_hinge_qp)


def fit(X, y, C, sample_weight=None, start_end=False, **params):
    """A working-set fit, which must converge unless ``tol=0`` (a fixed number of passes)."""
    params = {"tol": 1e-7, "max_iter": 500, **params}
    with warnings.catch_warnings():
        warnings.simplefilter("error" if params["tol"] > 0 else "ignore", ConvergenceWarning)
        return EGStructuredSVM(C=C, structure=ChainStructure(start_end=start_end),
                               solver="working_set", random_state=0, **params).fit(
            X, y, sample_weight=sample_weight)


@pytest.mark.parametrize("C", [0.01, 0.1, 1.0, 10.0])
@pytest.mark.parametrize("start_end", [False, True])
def test_certifies_the_qp_optimum(C, start_end):
    X, y = make_chains(n=8, n_states=3, max_len=3, seed=5)
    problem = enumerated_problem(X, y, 3, start_end)
    weights = np.ones(len(X))
    optimum = solve_hinge_qp(problem, C, weights, problem[0][0].shape[1])
    svm = fit(X, y, C, start_end=start_end)
    # the primal it reports is the enumerated primal of its weights ...
    assert svm.primal_objective_ == pytest.approx(
        primal_hinge(svm.weights_, problem, C, weights), rel=1e-10)
    # ... the two bounds bracket the QP optimum, within tol of each other
    assert svm.dual_objective_ <= optimum * (1 + 1e-7)
    assert svm.primal_objective_ >= optimum * (1 - 1e-7)
    assert svm.duality_gap_ <= 1e-7 * svm.primal_objective_
    # every oracle pass certified a gap: the history has one row per oracle pass
    history = svm.history_
    assert len(history["primal"]) == svm.n_iter_ == history["passes"][-1]
    assert np.all(history["dual"] <= optimum * (1 + 1e-7))
    assert np.all(history["primal"] >= optimum * (1 - 1e-7))


def test_sample_weights_match_the_weighted_qp():
    X, y = make_chains(n=6, n_states=3, max_len=3, seed=1)
    weights = np.random.RandomState(3).uniform(0.5, 2.0, len(X))
    weights[2] = 0.0  # an example of weight 0 has no say
    problem = enumerated_problem(X, y, 3, False)
    optimum = solve_hinge_qp(problem, 0.7, weights, problem[0][0].shape[1])
    svm = fit(X, y, 0.7, sample_weight=weights)
    assert svm.primal_objective_ == pytest.approx(optimum, rel=1e-6)
    assert svm.primal_objective_ == pytest.approx(
        primal_hinge(svm.weights_, problem, 0.7, weights), rel=1e-10)
    dropped = fit([x for k, x in enumerate(X) if k != 2], [t for k, t in enumerate(y) if k != 2],
                  0.7, sample_weight=np.delete(weights, 2))
    assert dropped.primal_objective_ == pytest.approx(svm.primal_objective_, rel=1e-6)


def test_reaches_online_eg_optimum_on_flat_data():
    X, y = make_flat(n=80, n_classes=4, seed=2)
    svm = EGStructuredSVM(C=1.0, solver="working_set", tol=1e-6, max_iter=300).fit(X, y)
    eg = EGStructuredSVM(C=1.0, tol=1e-6, max_iter=5000, random_state=0).fit(X, y)
    assert svm.primal_objective_ == pytest.approx(eg.primal_objective_, rel=2e-6)
    assert svm.dual_objective_ <= eg.primal_objective_
    assert eg.dual_objective_ <= svm.primal_objective_


def test_pool_growth_does_not_change_the_fit(monkeypatch):
    """A pool of part vectors that has to grow (and to drop replaced outputs) many
    times gives the same iterates as one large enough from the start."""
    X, y = make_chains(n=10, n_states=4, max_len=4, seed=3)
    reference = fit(X, y, 5.0, tol=0, max_iter=15)
    initial = working_set._initial_atoms

    def tiny_pool(truth, part_offsets, size):
        atoms = initial(truth, part_offsets, size)
        used = int(atoms["pool_top"][0])
        atoms["pool_idx"], atoms["pool_val"] = atoms["pool_idx"][:used], atoms["pool_val"][:used]
        return atoms

    grown = []
    real_grow = working_set._grow_pool
    monkeypatch.setattr(working_set, "_initial_atoms", tiny_pool)
    monkeypatch.setattr(working_set, "_grow_pool",
                        lambda atoms: (grown.append(1), real_grow(atoms)))
    small = fit(X, y, 5.0, tol=0, max_iter=15)
    assert len(grown) >= 3
    np.testing.assert_array_equal(small.history_["primal"], reference.history_["primal"])
    np.testing.assert_array_equal(small.weights_, reference.weights_)


def test_full_working_sets_make_room(monkeypatch):
    """With room for the truth and four outputs per example (the optimum holds up to
    seven), outputs of weight 0 make way for new ones, or the two lightest held merge
    into their weighted mean (a fractional part vector), and the fit still
    certifies the optimum."""
    monkeypatch.setattr(working_set, "MAX_ATOMS", 5)
    X, y = make_chains(n=8, n_states=3, max_len=3, seed=6)
    problem = enumerated_problem(X, y, 3, False)
    optimum = solve_hinge_qp(problem, 1.0, np.ones(len(X)), problem[0][0].shape[1])
    states = []
    svm = EGStructuredSVM(C=1.0, structure=ChainStructure(start_end=False),
                          solver="working_set", tol=1e-6, max_iter=500, warm_start=True,
                          random_state=0)
    svm.fit(X, y, callback=lambda epoch, model: states.append(1))
    atoms = svm._dual_state.atoms
    assert atoms["count"].max() == 5 and atoms["gram"].shape == (len(X), 5, 5)
    held = atoms["pool_val"][:atoms["pool_top"][0]]
    assert np.any((held > 0) & (held < 1))  # merged outputs
    assert svm.dual_objective_ <= optimum * (1 + 1e-7) <= svm.primal_objective_ * (1 + 2e-7)
    assert svm.duality_gap_ <= 1e-6 * svm.primal_objective_
    # the dual distributions are the working sets' mixtures
    weight = atoms["weight"]
    assert np.all(weight >= 0) and np.allclose(weight.sum(axis=1), 1.0)
    assert len(states) == svm.n_iter_


def test_warm_started_path_reuses_the_working_sets():
    X, y = make_chains(n=60, n_states=4, max_len=6, n_features=5, seed=0)
    template = EGStructuredSVM(structure=ChainStructure(start_end=False), solver="working_set",
                               tol=1e-3, max_iter=500, random_state=0)
    Cs = [0.1, 1.0, 10.0]
    path = eg_path(template, X, y, Cs)
    assert path["converged"].all()
    cold = [fit(X, y, C, tol=1e-3) for C in Cs]
    for model, primal in zip(cold, path["primal"]):
        # both certified within 1e-3 of the optimum
        assert abs(primal - model.primal_objective_) <= 1e-3 * primal
    # the outputs met at smaller C save oracle passes (measured: 13 and 18 against 16 and
    # 34; fewer cached passes per oracle pass than when the bound was 0.8, 8 and 46 against
    # 16 and 68, so each warm oracle pass gains less)
    assert path["passes"][0] == cold[0].n_iter_
    for passes, model in zip(path["passes"][1:], cold[1:]):
        assert passes <= 0.85 * model.n_iter_, (passes, model.n_iter_)


def test_switching_solver_with_warm_start_starts_cold():
    X, y = make_chains(n=6, n_states=3, max_len=3, seed=1)
    svm = EGStructuredSVM(C=1.0, structure=ChainStructure(start_end=False), warm_start=True,
                          tol=1e-4, max_iter=2000, random_state=0).fit(X, y)
    svm.set_params(solver="working_set").fit(X, y)
    assert svm.history_["passes"][0] == 1 and svm.history_["dual"][0] == 0.0
    svm.set_params(solver="online").fit(X, y)  # back: its own cold start
    assert svm.duality_gap_ <= 1e-4 * svm.primal_objective_


def test_needs_argmax_kernels_not_marginals():
    class NoMarginals(MulticlassStructure):
        marginals = None
        kernel_ops = MulticlassStructure.kernel_ops.without("marginals")

    class NoArgmaxKernel(MulticlassStructure):  # a batch argmax, but no kernel of it
        kernel_ops = MulticlassStructure.kernel_ops.without("argmax")

        def argmax(self, batch, scores):
            return scores.reshape(batch.n_samples, -1).argmax(axis=1)

    X, y = make_flat(n=40, seed=4)
    reference = EGStructuredSVM(solver="working_set", tol=1e-6, max_iter=300,
                                random_state=0).fit(X, y)
    svm = EGStructuredSVM(structure=NoMarginals(), solver="working_set", tol=1e-6,
                          max_iter=300, random_state=0).fit(X, y)
    assert svm.primal_objective_ == reference.primal_objective_
    with pytest.raises(UnsupportedOperation, match="NoMarginals does not support marginals"):
        EGStructuredSVM(structure=NoMarginals()).fit(X, y)
    with pytest.raises(UnsupportedOperation, match="NoArgmaxKernel: the working-set solver .* "
                                                   "argmax, encode"):
        EGStructuredSVM(structure=NoArgmaxKernel(), solver="working_set").fit(X, y)


def test_working_set_is_a_hinge_solver_only():
    X, y = make_flat(n=20)
    with pytest.raises(ValueError, match="solver"):
        EGCRF(solver="working_set").fit(X, y)


@pytest.mark.parametrize("max_atoms", [32, 5])
def test_state_is_the_mixture_of_its_working_sets(monkeypatch, max_atoms):
    """The marginals, expected losses and ``w`` the solver keeps, and every Gram matrix
    (merged outputs included), rebuilt from the working sets' part vectors."""
    monkeypatch.setattr(working_set, "MAX_ATOMS", max_atoms)
    X, y = make_chains(n=8, n_states=3, max_len=3, seed=7)
    svm = fit(X, y, 10.0, tol=0, max_iter=60, warm_start=True)
    state, structure = svm._dual_state, svm.structure_
    batch = structure.make_batch(X, n_states=3)
    Y = np.concatenate(y).astype(np.int64)
    truth, part_losses = structure.encode(batch, Y), structure.part_losses(batch, Y)
    atoms, offsets = state.atoms, batch.part_offsets
    mu = np.zeros_like(state.mu)
    for i in range(len(X)):
        count = atoms["count"][i]
        vectors = np.zeros((count, offsets[-1]))
        for k in range(count):
            span = slice(atoms["start"][i, k], atoms["start"][i, k] + atoms["length"][i, k])
            vectors[k, offsets[i] + atoms["pool_idx"][span]] = atoms["pool_val"][span]
        mu += atoms["weight"][i, :count] @ vectors
        truth_i = np.zeros(offsets[-1])
        truth_i[offsets[i]:offsets[i + 1]] = truth[offsets[i]:offsets[i + 1]]
        differences = np.array([structure.expected_features(batch, truth_i - z)
                                for z in vectors])
        np.testing.assert_allclose(atoms["gram"][i, :count, :count],
                                   differences @ differences.T, atol=1e-9)
        np.testing.assert_allclose(atoms["loss"][i, :count],
                                   vectors @ part_losses - truth[offsets[i]:offsets[i + 1]]
                                   @ part_losses[offsets[i]:offsets[i + 1]], atol=1e-12)
    np.testing.assert_allclose(state.mu, mu, atol=1e-12)
    np.testing.assert_allclose(state.terms, np.add.reduceat(mu * part_losses, offsets[:-1]),
                               atol=1e-12)
    # w is the proximal problem's: its centre plus inner_C F (truth - mu)
    assert state.inner_C < 10.0
    np.testing.assert_allclose(
        svm.weights_, state.center + state.inner_C * structure.expected_features(batch, truth - mu),
        atol=1e-10)


def _dependency_data():
    from _trees import dependency_trees

    rng = np.random.RandomState(0)
    X = [rng.randint(4, 40, size=(n, 3)) for n in (3, 5, 4, 6, 2, 5, 4)]
    trees = [list(dependency_trees(len(x), True, True)) for x in X]
    return X, [options[rng.randint(len(options))] for options in trees]


def _tree_data():
    from test_label_tree_structure import planted_trees

    return planted_trees(20, seed=0)


@pytest.mark.parametrize("make_structure, make_data", [
    (lambda: DependencyTreeStructure(hash_bits=10), _dependency_data),
    (lambda: DependencyTreeStructure(hash_bits=10, projective=False), _dependency_data),
    (lambda: TreeStructure(n_edge_types=2), _tree_data),
], ids=["dependency-projective", "dependency-non-projective", "tree"])
def test_other_structures_reach_the_eg_optimum(make_structure, make_data):
    """Through the protocol alone: online EG and the working sets certify each other."""
    X, y = make_data()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        svm = EGStructuredSVM(C=1.0, structure=make_structure(), solver="working_set",
                              tol=1e-6, max_iter=500, random_state=0).fit(X, y)
        eg = EGStructuredSVM(C=1.0, structure=make_structure(), tol=1e-4, max_iter=5000,
                             random_state=0).fit(X, y)
    assert svm.dual_objective_ <= eg.primal_objective_
    assert eg.dual_objective_ <= svm.primal_objective_
    assert svm.primal_objective_ == pytest.approx(eg.primal_objective_, rel=1e-4)


def test_working_sets_grow_from_two_slots(monkeypatch):
    monkeypatch.setattr(working_set, "INITIAL_ATOMS", 2)
    X, y = make_chains(n=8, n_states=3, max_len=3, seed=5)
    problem = enumerated_problem(X, y, 3, False)
    optimum = solve_hinge_qp(problem, 10.0, np.ones(len(X)), problem[0][0].shape[1])
    svm = fit(X, y, 10.0, tol=1e-6, warm_start=True)
    atoms = svm._dual_state.atoms
    # grown by doubling (2, 4, 8, ...) as far as one example needed
    size = atoms["weight"].shape[1]
    assert size in (4, 8, 16, 32) and atoms["count"].max() > size // 2
    assert atoms["gram"].shape == (len(X), size, size)
    assert svm.dual_objective_ <= optimum * (1 + 1e-7) <= svm.primal_objective_ * (1 + 2e-7)


@pytest.mark.parametrize("C", [1.0, 10.0])  # at 10 the proximal sequence runs
def test_one_pass_warm_fits_continue_one_fit(C):
    """Fits of one oracle pass each (warm) run the cached passes (and the extrapolation)
    a long fit runs between its oracle passes, and reach its certified optimum."""
    X, y = make_chains(n=8, n_states=3, max_len=3, seed=5)
    long = fit(X, y, C, tol=1e-6, warm_start=True)
    assert (long._dual_state.inner_C < C) == (C == 10.0)
    stepwise = EGStructuredSVM(C=C, structure=ChainStructure(start_end=False),
                               solver="working_set", tol=1e-6, max_iter=1, warm_start=True,
                               random_state=0)
    cached, gaps = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for _ in range(3 * long.n_iter_):
            stepwise.fit(X, y)
            cached.append(stepwise.history_["cached_passes"][0])
            gaps.append(stepwise.duality_gap_ / stepwise.primal_objective_)
            if gaps[-1] <= 1e-6:
                break
    assert cached[0] == 0 and min(cached[1:]) >= 1
    assert gaps[-1] <= 1e-6
    assert stepwise.primal_objective_ == pytest.approx(long.primal_objective_, rel=2e-6)


def test_warm_start_on_other_examples_is_refused():
    X, y = make_chains(n=6, n_states=3, max_len=3, seed=1)
    svm = EGStructuredSVM(C=1.0, structure=ChainStructure(start_end=False), warm_start=True,
                          solver="working_set", max_iter=2, tol=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        svm.fit(X, y)
        with pytest.raises(ValueError, match="warm start: the stored working sets cover 6 "
                                             "examples .* but this training set has 5"):
            svm.fit(X[:5], y[:5])


def test_easy_C_is_the_loss_over_the_curvature_of_the_first_outputs():
    """With two labels the first oracle pass (at ``w = 0``) adds each word's unique output
    of largest loss, every label flipped: the data's scale of C is its weighted loss over
    its weighted squared feature difference, written out from the joint features."""
    X, y = make_chains(n=7, n_states=2, max_len=4, seed=2)
    weights = np.random.RandomState(0).uniform(0.5, 2.0, len(X))
    weights[3] = 0.0
    svm = fit(X, y, 1.0, sample_weight=weights, tol=0, max_iter=1, warm_start=True)
    losses = np.array([len(labels) for labels in y], dtype=float)
    curvatures = np.array([np.sum((joint_features(x, labels, 2, False)
                                   - joint_features(x, 1 - labels, 2, False)) ** 2)
                           for x, labels in zip(X, y)])
    assert svm._dual_state.easy_C == pytest.approx(weights @ losses / (weights @ curvatures),
                                                   rel=1e-12)


def test_acceleration_converges_where_block_steps_alone_stall():
    """At C far above the data's scale the proximal sequence certifies 1e-3 within 100
    oracle passes; the same passes without it (``accelerate=False``, ``inner_C = C``) end
    10 times further (measured: 59 passes; 2.0e-2 after 100), and the two fits bound
    each other.  Switching it off on a warm start keeps the working sets and restarts
    their weights on the truth."""
    X, y = make_chains(n=60, n_states=4, max_len=6, n_features=5, seed=0)
    accelerated = fit(X, y, 100.0, tol=1e-3, max_iter=100, warm_start=True)
    assert accelerated._dual_state.inner_C < 100.0
    plain = fit(X, y, 100.0, tol=0, max_iter=100, warm_start=True, accelerate=False)
    assert plain._dual_state.inner_C == 100.0
    assert plain.duality_gap_ >= 10 * 1e-3 * plain.primal_objective_
    assert accelerated.dual_objective_ <= plain.primal_objective_
    assert plain.dual_objective_ <= accelerated.primal_objective_
    held = accelerated._dual_state.atoms["count"].copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        accelerated.set_params(accelerate=False, max_iter=1).fit(X, y)
    state = accelerated._dual_state
    assert state.inner_C == 100.0 and not state.accelerate
    assert np.all(state.atoms["count"] >= held)
    assert accelerated.history_["cached_passes"][0] == 0  # a fresh start on the truth


@pytest.mark.parametrize("C, most_passes", [(1.0, 45), (10.0, 55)])
def test_certifies_1e2_on_ocr_letters_within_100_oracle_passes(C, most_passes):
    """Issue 14's per-C target on the OCR letters shipped in the package (1,330 words),
    where BCFW and online EG end 100 passes far from it (``bench_ssvm_bcfw.py``):
    certified at a relative gap of 1e-2, in at most ``most_passes`` oracle passes
    (measured: 35 and 44)."""
    ocr = load_ocr_default()
    model = fit(list(ocr.X), list(ocr.y), C, tol=1e-2, max_iter=100)
    assert model.duality_gap_ <= 1e-2 * model.primal_objective_
    assert model.n_iter_ <= most_passes


@pytest.mark.parametrize("rising", [False, True])
def test_extrapolation_is_catalysts_step_and_restarts_when_the_primal_rises(rising):
    """The centre moves to ``kappa / (1 + kappa) (w_k + beta (w_k - w_{k-1}))`` with
    Catalyst's ``beta = (1 - sqrt q) / (1 + sqrt q)``, ``q = 1 / (1 + kappa) = inner_C /
    C``, or without the momentum after a rise of the primal; ``w`` moves with it."""
    X, y = make_chains(n=4, n_states=3, max_len=3, seed=0)
    structure = ChainStructure(start_end=False)
    batch = structure.make_batch(X, n_states=3)
    rng = np.random.RandomState(0)
    w, previous, center = (rng.randn(batch.n_weights) for _ in range(3))
    state = working_set.WorkingSetState(
        mu=None, terms=None, w=w, C=9.0, part_offsets=batch.part_offsets, atoms={},
        block_gaps=None, center=center, previous=previous, inner_C=1.0, rising=rising)
    w_kernel = structure.kernel_weights(batch, w)
    working_set._extrapolate(structure, batch, state, w_kernel)
    kappa = 9.0 / 1.0 - 1.0
    beta = 0.0 if rising else (1 - np.sqrt(1 / 9)) / (1 + np.sqrt(1 / 9))
    expected = kappa / (1 + kappa) * (w + beta * (w - previous))
    np.testing.assert_allclose(state.center, expected, rtol=1e-12)
    np.testing.assert_allclose(structure.contract_weights(batch, w_kernel),
                               w + expected - center, rtol=1e-12)
    np.testing.assert_array_equal(state.previous, w)
