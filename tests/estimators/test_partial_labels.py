"""Training from partially labelled sequences: targets, constrained inference, EM and CCCP.

References: enumeration of every labelling of tiny chains (constrained marginals,
log-partition and argmax), and scipy's L-BFGS on the latent CRF objective from
several starts, its gradient from enumeration of the consistent labellings.
"""

import itertools
import warnings

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import logsumexp
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.pipeline import Pipeline

from sklearn_struct import EGCRF, EGStructuredSVM, StructuredPerceptron
from sklearn_struct.solvers.eg import eg_solve
from sklearn_struct.solvers.latent import INITIAL_INNER_TOL, latent_objective, latent_solve
from sklearn_struct.solvers.perceptron import PerceptronState, perceptron_solve
from sklearn_struct.structures import ChainStructure, UnitLabelCodec

LABELS = np.array(["a", "b", "c"])


def _data(seed=0, lengths=(2, 3, 3, 4, 2, 3), n_features=3, fraction=0.5):
    rng = np.random.RandomState(seed)
    W = rng.randn(3, n_features) * 2
    X = [rng.randn(n, n_features) for n in lengths]
    y = [LABELS[np.argmax(x @ W.T + 0.5 * rng.randn(len(x), 3), axis=1)] for x in X]
    partial = [[None if rng.rand() < fraction else t for t in yi] for yi in y]
    for p in partial:  # at least one known token each
        if all(t is None for t in p):
            p[0] = "a"
    return X, y, partial


def _fit(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(X, y)


def _labellings(T, K):
    return np.array(list(itertools.product(range(K), repeat=T)), dtype=np.int64)


# ------------------------------------------------------------------------ targets
def test_encode_partial_masks_and_fully_labelled_targets_unchanged():
    y = [["b", None, {"a", "c"}], ["c", "a"]]
    codec = UnitLabelCodec(y)
    assert codec.classes_.tolist() == ["a", "b", "c"]
    batch = ChainStructure().make_batch([np.ones((3, 1)), np.ones((2, 1))], n_states=3)
    Y, allowed = codec.encode_partial(batch, y)
    assert allowed.tolist() == [[False, True, False], [True, True, True], [True, False, True],
                                [False, False, True], [True, False, False]]
    assert Y[[0, 3, 4]].tolist() == [1, 2, 0]
    full = [["b", "a", "c"], ["c", "a"]]
    Y_full, none = codec.encode_partial(batch, full)
    assert none is None and Y_full.tolist() == codec.encode(batch, full).tolist()
    singletons = [[{t} for t in yi] for yi in full]  # sets of one label: fully known
    Y_sets, none = codec.encode_partial(batch, singletons)
    assert none is None and Y_sets.tolist() == Y_full.tolist()


@pytest.mark.parametrize("constrained", [False, True])
def test_constrained_inference_matches_enumeration(constrained):
    rng = np.random.RandomState(1)
    K, lengths = 3, (1, 2, 3, 4)
    chain = ChainStructure(
        allowed_transitions=np.array([[1, 1, 0], [1, 1, 1], [1, 0, 1]], bool) if constrained
        else None, allowed_start=np.array([1, 0, 1], bool) if constrained else None)
    X = [rng.randn(n, 2) for n in lengths]
    batch = chain.make_batch(X, n_states=K)
    allowed = rng.rand(sum(lengths), K) < 0.6
    allowed[np.arange(sum(lengths)), rng.randint(K, size=sum(lengths))] = True
    if constrained:  # label 0 everywhere is allowed by the chain's constraints
        allowed[:, 0] = True
    allowed[0] = [True, False, False]
    space = chain.output_space()
    bias = space.partial_label_scores(batch, allowed)
    scores = chain.part_scores(batch, rng.randn(batch.n_weights))
    mu, log_z = chain.marginals(batch, scores + bias)
    best = chain.argmax(batch, scores + bias)
    for i, T in enumerate(lengths):
        sub = chain.take(batch, np.array([i]))
        lo, hi = batch.part_offsets[i], batch.part_offsets[i + 1]
        u0 = batch.unit_offsets[i]
        values, encodings = [], []
        for labels in _labellings(T, K):
            if not allowed[u0 + np.arange(T), labels].all():
                continue
            try:
                z = chain.encode(sub, labels)
            except ValueError:  # forbidden by the chain's constraints
                continue
            values.append(scores[lo:hi] @ z)
            encodings.append((z, labels))
        values = np.array(values)
        assert log_z[i] == pytest.approx(logsumexp(values))
        p = np.exp(values - logsumexp(values))
        expected = sum(pi * z for pi, (z, _) in zip(p, encodings))
        np.testing.assert_allclose(mu[lo:hi], expected, atol=1e-10)
        assert best[u0:u0 + T].tolist() == encodings[int(np.argmax(values))][1].tolist()


# --------------------------------------------------------------------- bad input
def test_empty_set_names_example_and_token():
    X, _, partial = _data()
    partial[2][1] = set()
    with pytest.raises(ValueError, match=r"y\[2\]: token 1 has an empty set of allowed labels"):
        EGCRF().fit(X, partial)


def test_contradiction_with_the_scheme_names_example_and_token():
    rng = np.random.RandomState(0)
    X = [rng.randn(3, 2) for _ in range(3)]
    y = [["B-NP", "I-NP", "O"], ["O", "B-NP", None], ["O", "I-NP", None]]
    model = EGCRF(structure=ChainStructure(allowed_transitions="IOB2", constrain_training=True))
    with pytest.raises(ValueError, match=r"y\[2\]: no output of example 2 is consistent .* "
                                         r"token 1 "):
        model.fit(X, y)
    # a set that leaves a consistent labelling is fine; one that does not is refused
    y[2] = [{"O", "B-NP"}, "I-NP", None]
    _fit(EGCRF(max_iter=2, max_latent_iter=2, structure=model.structure), X, y)
    y[2] = [None, {"O"}, "I-NP"]
    with pytest.raises(ValueError, match=r"y\[2\]: .* token 2 "):
        model.fit(X, y)


@pytest.mark.parametrize("estimator", [EGCRF, EGStructuredSVM, StructuredPerceptron])
def test_structures_other_than_chains_refuse_partial_labels(estimator):
    # the partial-labels guide promises the example and the token
    rng = np.random.RandomState(0)
    X = [(rng.randn(3, 2), np.array([-1, 0, 0])) for _ in range(3)]
    y = [["a", "b", "b"], ["b", "a", "a"], ["a", {"a", "b"}, None]]
    with pytest.raises(ValueError, match=r"^y\[2\]: node 1 has no single label \(2 of the 2 "
                                         r"labels allowed\); TreeStructure: partial labels .* "
                                         r"on chains"):
        estimator(structure="tree").fit(X, y)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_tuple_is_a_label_of_its_own():
    # the guide: "a list or tuple stays a label of its own" (tuples of any lengths)
    X = [np.eye(3), np.eye(3)[:2]]
    y = [[("B", "NP"), ("O",), ("B", "NP")], [("B", "NP"), ("O",)]]
    model = StructuredPerceptron(max_iter=5).fit(X, y)
    assert model.classes_.tolist() == [("B", "NP"), ("O",)]
    assert [list(p) for p in model.predict(X)] == y
    partial = [[("B", "NP"), None, {("B", "NP"), ("O",)}], y[1]]
    assert StructuredPerceptron(max_iter=2).fit(X, partial).classes_.tolist() == \
        [("B", "NP"), ("O",)]
    with pytest.raises(TypeError, match=r"^labels mix types: example 0 has labels of types "
                                        r"str and tuple"):
        EGCRF(max_iter=2).fit(X, [["a", ("b", "c"), "a"], ["a", "b"]])
    with pytest.raises(TypeError, match=r"^y\[1\]: label \['b', 'c'\] at position 0 is a "
                                        r"list, which cannot be a label \(unhashable\); a "
                                        r"tuple can"):
        EGCRF(max_iter=2).fit(X, [["a", "b", "a"], [["b", "c"], "a"]])


def test_label_outside_classes_is_refused():
    codec = UnitLabelCodec([["a", "b"]])
    batch = ChainStructure().make_batch([np.ones((2, 1))], n_states=2)
    with pytest.raises(ValueError, match=r"y\[0\]: label 'z' at position 1 \(in its set of "
                                         r"allowed labels\) is not among classes_"):
        codec.encode_partial(batch, [["a", {"b", "z"}]])
    with pytest.raises(ValueError, match=r"y\[0\]: label 'z' at position 1"):
        codec.encode_partial(batch, [[None, "z"]])


def test_learners_without_partial_labels_say_so():
    X, _, partial = _data()
    with pytest.raises(ValueError, match=r"y\[0\]: token \d has no single label \(unknown: "
                                         r"None\); partial labels are learnt by the fit of EGCRF"):
        StructuredPerceptron().partial_fit(X, partial, classes=LABELS)
    with pytest.raises(ValueError, match="solver='online' only"):
        EGCRF(solver="batch").fit(X, partial)
    model = EGCRF().partial_fit(X, _data()[1], classes=LABELS)
    with pytest.raises(ValueError, match="no single label"):
        model.partial_fit(X, partial)


# ------------------------------------------------------------- EM and CCCP
@pytest.mark.parametrize("estimator", [EGCRF, EGStructuredSVM])
def test_objective_never_increases(estimator):
    X, _, partial = _data(fraction=0.6)
    model = _fit(estimator(C=2.0, random_state=0, max_latent_iter=15), X, partial)
    objective = model.history_["objective"]
    assert len(objective) >= 3 and model.n_iter_ >= len(objective) - 1
    assert np.all(np.diff(objective) <= 1e-9 * np.abs(objective[1:]))
    assert model.latent_objective_ == objective[-1]
    assert set(model.history_) >= {"objective", "primal", "dual", "gap", "passes", "seconds"}
    # the recorded objective is the latent objective of the fitted weights
    chain = model.structure_.output_space().training_structure()
    batch = chain.make_batch(X, n_states=3)
    Y, allowed = model._codec.encode_partial(batch, partial)
    bias = chain.output_space().partial_label_scores(batch, allowed)
    losses = None
    if estimator is EGStructuredSVM:
        losses = chain.part_losses(batch, Y) * np.isinf(bias)
    value = latent_objective(chain, batch, model.weights_, bias, loss=model._loss, C=2.0,
                             part_losses=losses)
    assert value == pytest.approx(objective[-1], rel=1e-9)
    assert [len(p) for p in model.predict(X)] == [len(x) for x in X]


@pytest.mark.parametrize("estimator", [EGCRF, EGStructuredSVM])
def test_fully_known_targets_are_the_ordinary_fit(estimator):
    X, y, _ = _data()
    ordinary = _fit(estimator(random_state=0), X, y)
    for targets in ([list(t) for t in y], [[{t} for t in yi] for yi in y]):
        model = _fit(estimator(random_state=0), X, targets)
        np.testing.assert_array_equal(model.weights_, ordinary.weights_)
        assert "objective" not in model.history_
        assert not hasattr(model, "latent_objective_")


@pytest.mark.parametrize("loss", ["log", "hinge"])
def test_latent_solver_with_every_label_known_reaches_the_ordinary_optimum(loss):
    X, y, _ = _data()
    estimator = EGCRF if loss == "log" else EGStructuredSVM
    ordinary = _fit(estimator(C=1.0, random_state=0, tol=1e-6, max_iter=2000), X, y)
    chain = ordinary.structure_.output_space().training_structure()
    batch = chain.make_batch(X, n_states=3)
    Y = ordinary._codec.encode(batch, y)
    allowed = np.zeros((len(Y), 3), bool)
    allowed[np.arange(len(Y)), Y] = True
    bias = chain.output_space().partial_label_scores(batch, allowed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        result = latent_solve(chain, batch, Y, bias, loss=loss, C=1.0, tol=1e-6,
                              max_iter=2000, smoothing=loss == "hinge", annealing=True,
                              random_state=np.random.RandomState(0))
    # every label known: the latent objective is the ordinary primal (entropy 0)
    assert result.history["objective"][-1] == pytest.approx(ordinary.primal_objective_,
                                                            rel=1e-4)
    np.testing.assert_allclose(result.weights, ordinary.weights_, atol=2e-2)


def _enumerated(chain, batch):
    """Per example: the feature vectors of every labelling and the labellings."""
    out = []
    for i in range(batch.n_samples):
        sub = chain.take(batch, np.array([i]))
        T = int(batch.unit_offsets[i + 1] - batch.unit_offsets[i])
        labellings = _labellings(T, batch.n_states)
        phi = np.array([chain.expected_features(sub, chain.encode(sub, yl))
                        for yl in labellings])
        out.append((phi, labellings))
    return out


def test_em_reaches_the_latent_crf_optimum_of_lbfgs():
    X, _, partial = _data(seed=3, lengths=(2, 3, 3, 2, 3), n_features=2, fraction=0.5)
    C = 3.0
    model = _fit(EGCRF(C=C, random_state=0, tol=1e-6, max_iter=500, max_latent_iter=200),
                 X, partial)
    chain = model.structure_.output_space().training_structure()
    batch = chain.make_batch(X, n_states=3)
    _, allowed = model._codec.encode_partial(batch, partial)
    enumerated = _enumerated(chain, batch)
    consistent = [allowed[batch.unit_offsets[i] + np.arange(len(lab[0])), lab].all(axis=1)
                  for i, (_, lab) in enumerate(enumerated)]

    def objective(w):
        value, grad = 0.5 * w @ w, w.copy()
        for (phi, _), ok in zip(enumerated, consistent):
            s = phi @ w
            p, pc = np.exp(s - logsumexp(s)), np.exp(s[ok] - logsumexp(s[ok]))
            value += C * (logsumexp(s) - logsumexp(s[ok]))
            grad += C * (p @ phi - pc @ phi[ok])
        return value, grad

    rng = np.random.RandomState(0)
    starts = [np.zeros(batch.n_weights)] + [rng.randn(batch.n_weights) * 2 for _ in range(5)]
    best = min(minimize(objective, w0, jac=True, method="L-BFGS-B",
                        options={"gtol": 1e-9, "maxiter": 5000}).fun for w0 in starts)
    em = objective(model.weights_)[0]
    assert em == pytest.approx(model.latent_objective_, rel=1e-8)
    assert em <= best * (1 + 1e-3)
    # and the EM solution is a stationary point
    assert np.linalg.norm(objective(model.weights_)[1]) <= 1e-2 * np.linalg.norm(
        model.weights_)


# ------------------------------------------------------------------ latent perceptron
def test_latent_perceptron_matches_enumeration():
    X, _, partial = _data(seed=2, lengths=(2, 3, 3, 2, 3), n_features=2, fraction=0.5)
    partial[1][2] = {"a", "c"}
    chain = ChainStructure()
    codec = UnitLabelCodec(partial)
    batch = chain.make_batch(X, n_states=3)
    Y, allowed = codec.encode_partial(batch, partial)
    bias = chain.output_space().partial_label_scores(batch, allowed)
    rng = np.random.RandomState(0)
    w0 = rng.randn(batch.n_weights)  # away from w = 0, where every output ties
    weights = rng.rand(batch.n_samples) + 0.5
    state = PerceptronState(w=chain.kernel_weights(batch, w0),
                            w_sum=np.zeros_like(chain.kernel_weights(batch, w0)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        w, _, history, _ = perceptron_solve(chain, batch, Y, max_iter=2, average=False,
                                            shuffle=False, sample_weight=weights, state=state,
                                            constraint_scores=bias)
    # the reference: every labelling enumerated, the consistent ones by the partial labels
    reference, mistakes = w0.copy(), []
    for _ in range(2):
        wrong = 0
        for i, (phi, labellings) in enumerate(_enumerated(chain, batch)):
            T = labellings.shape[1]
            ok = allowed[batch.unit_offsets[i] + np.arange(T), labellings].all(axis=1)
            s = phi @ reference
            predicted = int(np.argmax(s))
            if ok[predicted]:
                continue
            wrong += 1
            target = np.flatnonzero(ok)[int(np.argmax(s[ok]))]
            reference += weights[i] * (phi[target] - phi[predicted])
        mistakes.append(wrong)
    np.testing.assert_allclose(w, reference, atol=1e-10)
    assert history["mistakes"].tolist() == mistakes and mistakes[0] > 0


def test_latent_perceptron_learns_from_partial_labels():
    X, y, partial = _data(seed=0, lengths=(5,) * 60, n_features=3, fraction=0.5)
    full = _fit(StructuredPerceptron(random_state=0, max_iter=20), X, y)
    model = _fit(StructuredPerceptron(random_state=0, max_iter=20), X, partial)
    accuracy = np.mean(np.concatenate(model.predict(X)) == np.concatenate(y))
    assert accuracy >= 0.9
    assert accuracy >= np.mean(np.concatenate(full.predict(X)) == np.concatenate(y)) - 0.05
    # the prediction of every training example is consistent with its labels by the end
    assert model.history_["mistakes"][-1] <= model.history_["mistakes"][0]
    # every label known, or a set of one label: Collins' perceptron
    singletons = _fit(StructuredPerceptron(random_state=0, max_iter=20), X,
                      [[{t} for t in yi] for yi in y])
    np.testing.assert_array_equal(singletons.weights_, full.weights_)


# ------------------------------------------------------------------------ the start
def _start_example():
    """Two sequences: 'a' known three times, 'b' once; a set {b, c}; two unknown tokens."""
    y = [["a", "a", None], ["b", {"b", "c"}, "a", None]]
    rng = np.random.RandomState(0)
    X = [rng.randn(3, 2), rng.randn(4, 2)]
    chain = ChainStructure()
    codec = UnitLabelCodec(y)
    batch = chain.make_batch(X, n_states=3)
    Y, allowed = codec.encode_partial(batch, y)
    bias = chain.output_space().partial_label_scores(batch, allowed)
    return chain, batch, Y, bias


def test_start_marginals_are_the_known_label_frequencies():
    chain, batch, _, bias = _start_example()
    start = chain.output_space().partial_label_start(batch, bias)
    mu, _ = chain.marginals(batch, bias + start)
    unit = chain.output_space().unit_values(batch, mu)
    # counts a: 3 + 1, b: 1 + 1, c: 0 + 1 (add-one): frequencies 4/7, 2/7, 1/7
    np.testing.assert_allclose(unit[0][2], [4 / 7, 2 / 7, 1 / 7])
    np.testing.assert_allclose(unit[1][3], [4 / 7, 2 / 7, 1 / 7])
    np.testing.assert_allclose(unit[1][1], [0, 2 / 3, 1 / 3])  # b or c, renormalised
    np.testing.assert_allclose(unit[0][0], [1, 0, 0])


def test_first_em_step_starts_from_the_start_scores():
    chain, batch, Y, bias = _start_example()
    start = chain.output_space().partial_label_start(batch, bias)
    arguments = dict(C=2.0, solver="online", max_iter=30, tol=1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        result = latent_solve(chain, batch, Y, bias, loss="log", start_scores=start,
                              max_outer_iter=1, random_state=np.random.RandomState(0),
                              **arguments)
        mu, _ = chain.marginals(batch, bias + start)
        first = eg_solve(chain, batch, Y, loss="log", truth=mu, keep_dual=True,
                         random_state=np.random.RandomState(0),
                         **dict(arguments, tol=INITIAL_INNER_TOL))
    np.testing.assert_array_equal(result.weights, first.state.primal_weights)
    # the start differs from the uniform E-step at w = 0
    uniform, _ = chain.marginals(batch, bias)
    assert not np.allclose(uniform, mu)
    # J(w_1) is below the first M-step's objective at w = 0: C sum (log Z(0) - H(q_0))
    entropy = (chain.log_partition(batch, bias + start)
               - np.add.reduceat(start * mu, batch.part_offsets[:-1]))
    bound = 2.0 * np.sum(chain.log_partition(batch, np.zeros_like(bias)) - entropy)
    assert result.history["objective"][-1] <= bound


# ------------------------------------------------------------------ scikit-learn
def test_clone_and_pipeline():
    X, _, partial = _data()
    model = EGCRF(max_latent_iter=5, random_state=0)
    assert clone(model).get_params()["max_latent_iter"] == 5
    pipe = _fit(Pipeline([("crf", clone(model))]), X, partial)
    direct = _fit(clone(model), X, partial)
    np.testing.assert_array_equal(pipe[-1].weights_, direct.weights_)
    assert [list(p) for p in pipe.predict(X)] == [list(p) for p in direct.predict(X)]
    svm = EGStructuredSVM(max_latent_iter=3)
    assert clone(svm).get_params()["max_latent_iter"] == 3
    with pytest.raises(ValueError, match="max_latent_iter"):
        EGCRF(max_latent_iter=0).fit(X, partial)
