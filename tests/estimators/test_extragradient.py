import tracemalloc

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV

from sklearn_struct.extragradient import DualExtragradientMatcher
from sklearn_struct.solvers.extragradient import dual_extragradient, estimate_lipschitz
from sklearn_struct.structures.matching.structure import MatchingStructure
from sklearn_struct.structures.mincut.structure import MinCutStructure

from _qp_reference import grid_edges, max_margin_matching_optimum


def alignment_problem(n_samples, d=4, noise=1.0, seed=0):
    rng = np.random.RandomState(seed)
    w_true = rng.randn(d)
    X = []
    for _ in range(n_samples):
        n_src, n_tgt = rng.randint(3, 7, size=2)
        edges = np.argwhere(rng.rand(n_src, n_tgt) < 0.7)
        X.append((rng.randn(len(edges), d), edges))
    structure = MatchingStructure(false_positive_cost=1.0, false_negative_cost=3.0)
    batch = structure.make_batch(X)
    Y = structure.argmax(batch, structure.part_scores(batch, w_true)
                         + noise * rng.randn(batch.part_offsets[-1]))
    y = np.split(Y, batch.unit_offsets[1:-1])
    return structure, batch, Y, X, y


def segmentation_problem(n_samples, seed=0):
    rng = np.random.RandomState(seed)
    X, y = [], []
    for _ in range(n_samples):
        height, width = 5, 6
        labels = (np.arange(width)[None, :] + rng.randint(-1, 2, size=(height, 1)) >= 3)
        labels = labels.astype(int).ravel()
        node_features = np.c_[labels + 0.8 * rng.randn(labels.size), np.ones(labels.size)]
        edges = grid_edges(height, width)
        X.append((node_features, edges, np.ones((len(edges), 1))))
        y.append(labels)
    return X, y


def test_reaches_max_margin_optimum_of_eq15():
    pytest.importorskip("clarabel")
    structure, batch, Y, _, _ = alignment_problem(6)
    optimum = max_margin_matching_optimum(structure, batch, Y, radius=1.0)
    result = dual_extragradient(structure, batch, Y, radius=1.0, max_iter=400, tol=0.0)
    assert np.linalg.norm(result.coef) <= 1.0 + 1e-12
    assert result.objective[-1] >= optimum - 1e-6 * optimum  # the optimum is a lower bound
    assert (result.objective[-1] - optimum) / optimum < 1e-3
    # the gap certifies it: objective - gap <= optimum <= objective
    assert result.objective[-1] - result.gap[-1] <= optimum + 1e-6


def test_gap_decreases_as_one_over_t():
    structure, batch, Y, _, _ = alignment_problem(6, seed=1)
    radius = 1.0
    result = dual_extragradient(structure, batch, Y, radius=radius, max_iter=200, tol=0.0)
    gap = np.asarray(result.gap)
    assert np.all(gap >= -1e-9)
    # Nesterov's bound (eq. 19): gap_T <= (D_w + D_z) L / (T + 1), with
    # D_w = radius^2 / 2 and D_z = sum_i |E_i| / 2 covering the whole sets.
    bound = (radius ** 2 / 2 + batch.part_offsets[-1] / 2) * result.lipschitz
    t = np.arange(1, len(gap) + 1)
    assert np.all(gap * t <= bound)
    assert gap[-1] < gap[9] / 5


@pytest.mark.parametrize("kind", ["matching", "mincut", "chain-entropic"])
def test_low_memory_gives_the_same_iterates(kind):
    geometry = "euclidean"
    if kind == "matching":
        structure, batch, Y, _, _ = alignment_problem(5, seed=2)
    elif kind == "mincut":
        X, y = segmentation_problem(4)
        structure = MinCutStructure()
        batch = structure.make_batch(X)
        Y = np.concatenate(y)
    else:
        from sklearn_struct.structures.chain.structure import ChainStructure

        rng = np.random.RandomState(2)
        structure, geometry = ChainStructure(), "entropic"
        batch = structure.make_batch([rng.randn(5, 3) for _ in range(6)], n_states=2)
        Y = (rng.rand(30) > 0.5).astype(np.int64)
    full = dual_extragradient(structure, batch, Y, radius=3.0, max_iter=30, tol=0.0,
                              geometry=geometry)
    low = dual_extragradient(structure, batch, Y, radius=3.0, max_iter=30, tol=0.0,
                             geometry=geometry, memory="low", chunk_parts=40)
    assert low.lipschitz == pytest.approx(full.lipschitz, rel=1e-12)
    np.testing.assert_allclose(low.coef, full.coef, atol=1e-8)
    np.testing.assert_allclose(low.gap, full.gap, rtol=1e-6, atol=1e-8)


def test_low_memory_state_does_not_grow_with_the_data():
    # extra memory = tracemalloc peak of the solver, the batch being allocated before
    structure, batch, Y, _, _ = alignment_problem(800, seed=4)

    def traced_peak(n_samples, memory):
        sub, Y_sub = structure.take(batch, np.arange(n_samples)), Y[:batch.unit_offsets[n_samples]]
        tracemalloc.start()
        try:
            dual_extragradient(structure, sub, Y_sub, radius=3.0, max_iter=1, tol=0.0,
                               memory=memory, chunk_parts=600)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    for memory in ("full", "low"):  # compile the kernels outside the trace
        traced_peak(60, memory)
    full = [traced_peak(n, "full") for n in (200, 800)]
    low = [traced_peak(n, "low") for n in (200, 800)]
    n_parts = [batch.unit_offsets[n] for n in (200, 800)]
    assert n_parts[1] > 3.5 * n_parts[0]
    # full memory keeps vectors over all parts: its extra memory grows with them ...
    assert full[1] > 3.0 * full[0]
    assert full[1] > 40 * n_parts[1]
    # ... low memory keeps O(|w|) plus one chunk of 600 parts, whatever the data size
    assert low[1] < 1.5 * low[0]
    assert low[1] < 300 * 600
    assert low[1] < full[1] / 4


def test_lipschitz_is_the_largest_singular_value():
    structure, batch, _, X, _ = alignment_problem(4)
    features = np.vstack([x for x, _ in X])
    assert estimate_lipschitz(structure, batch) == pytest.approx(
        np.linalg.norm(features, 2), rel=1e-5)
    # accumulated chunk by chunk (memory="low"): the same value
    assert estimate_lipschitz(structure, batch, chunk_parts=10) == pytest.approx(
        estimate_lipschitz(structure, batch), rel=1e-12)


def test_fit_does_not_modify_the_structure_passed():
    X, y = segmentation_problem(3)
    structure = MinCutStructure()
    before = dict(vars(structure))
    model = DualExtragradientMatcher(structure=structure, radius=2.0, max_iter=5, tol=0.0).fit(X, y)
    assert vars(structure) == before  # structures write no state
    assert model.structure_ is structure  # used as given
    _, _, _, Xm, ym = alignment_problem(3)
    matching = MatchingStructure(false_positive_cost=1.0, false_negative_cost=3.0)
    before = dict(vars(matching))
    DualExtragradientMatcher(structure=matching, radius=2.0, max_iter=5, tol=0.0).fit(Xm, ym)
    assert vars(matching) == before


def test_mincut_learner_segments_and_keeps_edge_weights_nonnegative():
    X, y = segmentation_problem(8)
    model = DualExtragradientMatcher(structure="mincut", radius=5.0, max_iter=60, tol=0.0).fit(X, y)
    assert model.coef_[-1] >= 0.0
    # the Potts edges help over an independent per-pixel classifier
    from sklearn.linear_model import LogisticRegression

    pixels = LogisticRegression().fit(np.vstack([x[0] for x in X]), np.concatenate(y))
    baseline = pixels.score(np.vstack([x[0] for x in X]), np.concatenate(y))
    assert model.score(X, y) > baseline + 0.03
    assert model.history_["objective"][-1] < model.history_["objective"][0]
    assert model.objective_ == model.history_["objective"][-1]
    predictions = model.predict(X)
    assert [p.shape for p in predictions] == [t.shape for t in y]


def test_entropic_geometry_on_chains_and_matchings():
    from sklearn_struct.structures.chain.structure import ChainStructure

    rng = np.random.RandomState(0)
    X = [rng.randn(6, 3) for _ in range(6)]
    y = [(x[:, 0] > 0).astype(int) for x in X]
    model = DualExtragradientMatcher(structure=ChainStructure(), radius=5.0, geometry="entropic",
                                     max_iter=40, tol=0.0).fit(X, y)
    assert np.abs(model.coef_).sum() <= 5.0 + 1e-9
    assert model.history_["gap"][-1] < model.history_["gap"][0]
    assert model.score(X, y) > 0.8
    _, _, _, Xm, ym = alignment_problem(5)
    matcher = DualExtragradientMatcher(radius=2.0, geometry="entropic", max_iter=30,
                                       tol=0.0).fit(Xm, ym)
    assert np.abs(matcher.coef_).sum() <= 2.0 + 1e-9
    assert matcher.history_["gap"][-1] < matcher.history_["gap"][0]


def test_the_default_geometry_fits_the_structure():
    """geometry='auto': Euclidean where the structure has a projection, entropic otherwise."""
    assert DualExtragradientMatcher().get_params()["geometry"] == "auto"
    rng = np.random.RandomState(0)
    X = [rng.randn(4, 3) for _ in range(4)]
    y = [(x[:, 0] > 0).astype(int) for x in X]
    chain = DualExtragradientMatcher(structure="chain", radius=5.0, max_iter=20,
                                     tol=0.0).fit(X, y)
    explicit = DualExtragradientMatcher(structure="chain", radius=5.0, max_iter=20, tol=0.0,
                                        geometry="entropic").fit(X, y)
    assert chain.geometry_ == "entropic"
    np.testing.assert_array_equal(chain.weights_, explicit.weights_)
    _, _, _, Xm, ym = alignment_problem(3)
    matcher = DualExtragradientMatcher(max_iter=5, tol=0.0).fit(Xm, ym)
    assert matcher.geometry_ == "euclidean"
    np.testing.assert_array_equal(
        matcher.weights_,
        DualExtragradientMatcher(max_iter=5, tol=0.0, geometry="euclidean").fit(Xm, ym).weights_)
    with pytest.raises(ValueError, match=r"^geometry='auto' takes 'entropic' for ChainStructure "
                                         r"\(it has no Euclidean projection\), which needs a "
                                         r"finite radius \(an L1 ball\); pass radius="):
        DualExtragradientMatcher(structure="chain").fit(X, y)


def test_estimator_fit_predict_early_stopping_and_grid_search():
    _, _, _, X, y = alignment_problem(20, noise=0.3, seed=3)
    model = DualExtragradientMatcher(max_iter=40, early_stopping=True, validation_fraction=0.25,
                                     n_iter_no_change=5, random_state=0).fit(X, y)
    assert 1 <= model.best_iteration_ <= model.n_iter_
    assert model.validation_scores_.max() == pytest.approx(
        model.validation_scores_[model.best_iteration_ - 1])
    assert model.score(X, y) > 0.7
    search = GridSearchCV(DualExtragradientMatcher(max_iter=15, tol=0.0),
                          {"radius": [0.5, 5.0]}, cv=2).fit(X, y)
    assert search.best_params_["radius"] in (0.5, 5.0)


def test_convergence_warning_and_bad_input():
    _, _, _, X, y = alignment_problem(3)
    with pytest.warns(ConvergenceWarning):
        DualExtragradientMatcher(radius=1.0, max_iter=2, tol=1e-9).fit(X, y)
    with pytest.raises(ValueError, match="finite radius"):
        DualExtragradientMatcher(geometry="entropic").fit(X, y)
    with pytest.raises(ValueError, match=r"y\[1\]"):
        DualExtragradientMatcher().fit(X, [y[0], y[1][:-1], y[2]])
    with pytest.raises(ValueError, match=r"y\[0\].*0 or 1"):
        DualExtragradientMatcher().fit(X, [2 * y[0], y[1], y[2]])
    with pytest.raises(ValueError, match="structure"):
        DualExtragradientMatcher(structure="hypergraph").fit(X, y)
    seg_X, seg_y = segmentation_problem(2)
    bad = [(seg_X[0][0], seg_X[0][1], -seg_X[0][2])]
    with pytest.raises(ValueError, match="non-negative"):
        DualExtragradientMatcher(structure="mincut").fit(bad, seg_y[:1])
    model = DualExtragradientMatcher(max_iter=2).fit(X, y)
    with pytest.raises(ValueError, match="fitted with 4"):
        model.predict([(np.ones((2, 3)), np.array([[0, 0], [1, 1]]))])


@pytest.mark.parametrize("memory", ["full", "low"])
def test_a_continued_run_gives_the_iterates_of_one_long_run(memory):
    structure, batch, Y, _, _ = alignment_problem(30, seed=5)
    kwargs = dict(radius=3.0, tol=0.0, memory=memory, chunk_parts=200)
    long = dual_extragradient(structure, batch, Y, max_iter=10, **kwargs)
    first = dual_extragradient(structure, batch, Y, max_iter=4, **kwargs)
    second = dual_extragradient(structure, batch, Y, max_iter=6, state=first.state, **kwargs)
    assert second.n_iter == 6
    np.testing.assert_allclose(second.coef, long.coef, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(first.gap + second.gap, long.gap, rtol=1e-8, atol=1e-10)
    other, other_batch, other_Y, _, _ = alignment_problem(12, seed=6)
    with pytest.raises(ValueError, match="warm start: the stored run"):
        dual_extragradient(other, other_batch, other_Y, max_iter=1, state=first.state, **kwargs)


def test_estimator_warm_start_continues_the_run():
    structure, batch, Y, X, y = alignment_problem(30, seed=7)
    params = dict(radius=3.0, tol=0.0, random_state=0)
    long = DualExtragradientMatcher(max_iter=10, **params).fit(X, y)
    warm = DualExtragradientMatcher(max_iter=4, warm_start=True, **params).fit(X, y)
    warm.set_params(max_iter=6).fit(X, y)
    np.testing.assert_allclose(warm.coef_, long.coef_, rtol=1e-10, atol=1e-12)
    cold = DualExtragradientMatcher(max_iter=4, **params).fit(X, y).set_params(max_iter=6)
    assert not np.allclose(cold.fit(X, y).coef_, long.coef_)
