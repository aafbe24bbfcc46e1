"""The online EG solver's training cache in shards streamed from disk (``cache_size``)."""

import os
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_struct import EGCRF, EGStructuredSVM
from sklearn_struct.datasets import load_ocr_default
from sklearn_struct.solvers._kernel_shards import SHARDS_PER_WINDOW, KernelShards
from sklearn_struct.structures import (ChainStructure, DependencyTreeStructure,
                                       SiblingDependencyStructure)

from _trees import plausible_heads


def _letters(n=120):
    data = load_ocr_default()
    return data.X[:n], data.y[:n]


def _sentences(n=40, seed=0):
    rng = np.random.RandomState(seed)
    X = [rng.randint(4, 60, size=(length, 3)) for length in rng.randint(1, 12, size=n)]
    return X, [plausible_heads(len(x), rng) for x in X]


def _fit(Model, X, y, structure=None, **params):
    plain = {"smoothing": False} if Model is EGStructuredSVM else {}
    model = Model(C=1.0, structure=structure, max_iter=4, tol=1e-12, random_state=0, **plain,
                  **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(X, y)


def _data_and_structure(kind):
    if kind == "chain":
        return (*_letters(), None)
    structure = (DependencyTreeStructure(hash_bits=12) if kind == "arcs"
                 else SiblingDependencyStructure(hash_bits=12))
    return (*_sentences(), structure)


@pytest.mark.parametrize("kind", ["chain", "arcs", "siblings"])
@pytest.mark.parametrize("Model", [EGCRF, EGStructuredSVM])
def test_streamed_fit_equals_the_fit_in_memory(Model, kind, tmp_path):
    """In the cyclic order, which shards do not change, a fit whose cache streams from disk
    in many shards takes the same steps as the fit with its cache in memory: same weights,
    primal and gaps, bit for bit; its scratch folder is gone afterwards."""
    X, y, structure = _data_and_structure(kind)
    whole = _fit(Model, X, y, structure, order="cyclic")
    budget = KernelShards._estimated_bytes(whole.structure_, whole.structure_.make_batch(
        X, n_states=len(whole.classes_) if whole.classes_ is not None else None)) / 2 ** 20 / 3
    streamed = _fit(Model, X, y, structure, order="cyclic", cache_size=budget,
                    cache_dir=tmp_path)
    np.testing.assert_array_equal(streamed.weights_, whole.weights_)
    np.testing.assert_array_equal(streamed.history_["gap"], whole.history_["gap"])
    assert os.listdir(tmp_path) == []


def test_a_small_cache_size_makes_many_shards_on_disk():
    X, y = _letters()
    structure = ChainStructure()
    batch = structure.make_batch(X, n_states=26)
    whole = KernelShards(structure, batch)
    shards = KernelShards(structure, batch, cache_size=whole.nbytes / 2 ** 20 / 10)
    try:
        assert len(whole) == 1 and not whole.streamed
        assert shards.streamed and len(shards) >= 20
        assert [s.start for s in shards.shards] == sorted(s.start for s in shards.shards)
        assert shards.shards[0].start == 0 and shards.shards[-1].stop == len(X)
        assert all(a.stop == b.start for a, b in zip(shards.shards, shards.shards[1:]))
        # every shard holds at most its share of a window (a third of the budget), or one
        # example
        share = whole.nbytes / 10 / 3 / SHARDS_PER_WINDOW
        assert all(s.nbytes <= share or s.stop - s.start == 1 for s in shards.shards)
        assert len(os.listdir(shards.folder)) == len(shards)
        folder = shards.folder
    finally:
        shards.close()
    assert not os.path.exists(folder)


def test_windows_regroup_the_shards_in_every_pass_and_keep_the_visits_order():
    X, y = _letters()
    structure = ChainStructure()
    batch = structure.make_batch(X, n_states=26)
    shards = KernelShards(structure, batch, cache_size=0.1)
    try:
        assert len(shards) >= 4 * SHARDS_PER_WINDOW
        starts = np.array([shard.start for shard in shards.shards])
        together = []
        for seed in range(2):
            visits = np.random.RandomState(seed).randint(0, len(X), size=3 * len(X))
            windows = shards.windows(visits)
            shard_of = np.searchsorted(starts, visits, side="right") - 1
            # each visited shard in one window, in the order of the shards' first visits
            first = dict.fromkeys(shard_of.tolist())
            assert [k for window, _ in windows for k in window] == list(first)
            for window, window_visits in windows:
                assert sum(shards.shards[k].nbytes for k in window) <= shards.window_bytes
                # the window's visits in their own order, every example's first visit before
                # any second one
                mine = visits[np.isin(shard_of, window)]
                rounds = [mine[[list(mine[:j]).count(i) == r for j, i in enumerate(mine)]]
                          for r in range(np.bincount(mine).max())]
                np.testing.assert_array_equal(window_visits, np.concatenate(rounds))
                # cut into runs of one shard, as local indices
                runs = shards.runs(window_visits)
                assert all(a != b for (a, _), (b, _) in zip(runs, runs[1:]))
                np.testing.assert_array_equal(
                    np.concatenate([local + shards.shards[k].start for k, local in runs]),
                    window_visits)
            together.append({frozenset(window) for window, _ in windows})
        # the examples visited together change from pass to pass
        assert together[0] != together[1]
    finally:
        shards.close()


def test_streamed_gap_order_takes_about_the_passes_of_the_fit_in_memory():
    """With one shard to a window, the streamed fit visited the same examples together
    in every pass and took twice the passes of the fit in memory to a gap of 1e-4."""
    X, y = _letters(200)
    whole = KernelShards(ChainStructure(), ChainStructure().make_batch(X, n_states=26))
    passes = [EGCRF(C=1.0, max_iter=300, tol=1e-4, random_state=0,
                    cache_size=cache_size).fit(X, y).history_["passes"][-1]
              for cache_size in (None, whole.nbytes / 2 ** 20 / 10)]
    assert passes[1] <= 1.3 * passes[0]


def test_gap_order_streamed_reaches_the_same_optimum(tmp_path):
    """With gap sampling the streamed fit visits shard by shard, another path to the same
    optimum: both certify a relative gap of 1e-6, and the primals agree within it."""
    X, y = _letters(60)
    models = [EGCRF(C=0.5, max_iter=300, tol=1e-6, random_state=0, cache_size=cache_size,
                    cache_dir=tmp_path).fit(X, y) for cache_size in (None, 0.05)]
    primals = [model.primal_objective_ for model in models]
    assert all(model.history_["gap"][-1] <= 1e-6 * primal
               for model, primal in zip(models, primals))
    assert primals[1] == pytest.approx(primals[0], rel=2e-6)


def test_streamed_threads_and_partial_labels(tmp_path):
    X, y = _letters(60)
    threaded = [EGCRF(C=0.5, max_iter=200, tol=1e-5, random_state=0, n_jobs=2,
                      cache_size=cache_size).fit(X, y) for cache_size in (None, 0.05)]
    assert threaded[1].primal_objective_ == pytest.approx(threaded[0].primal_objective_,
                                                          rel=2e-5)
    partial = [list(labels) for labels in y]
    for labels in partial[::3]:
        labels[0] = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        fits = [EGCRF(C=0.5, max_iter=5, max_latent_iter=2, order="cyclic", random_state=0,
                      cache_size=cache_size, cache_dir=tmp_path).fit(X, partial)
                for cache_size in (None, 0.05)]
    np.testing.assert_array_equal(fits[1].weights_, fits[0].weights_)
    assert os.listdir(tmp_path) == []


def test_a_cache_dir_that_cannot_be_written_is_refused_before_any_work(tmp_path):
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    X, y = _letters(10)
    for cache_dir in (not_a_folder, tmp_path / "missing"):
        model = EGCRF(cache_size=1.0, cache_dir=cache_dir)
        with pytest.raises(ValueError, match=r"cache_dir='.*' is not a writable folder"):
            model.fit(X, y)
        assert not hasattr(model, "weights_")


def test_a_cache_size_too_small_for_one_example_names_it(tmp_path):
    X, y = _sentences(6)
    X[3] = np.random.RandomState(0).randint(4, 60, size=(30, 3))  # the largest by far
    y[3] = plausible_heads(30, np.random.RandomState(0))
    structure = DependencyTreeStructure(hash_bits=12)
    one = structure.kernel_data(structure.make_batch(X[3:4]), training=True)
    size = sum(getattr(one, name).nbytes for name in one._fields
               if isinstance(getattr(one, name), np.ndarray)) / 2 ** 20
    model = EGCRF(structure=structure, cache_size=size, cache_dir=tmp_path)
    with pytest.raises(ValueError, match=r"cache_size=.* MB is too small for example 3: its "
                                         r"feature cache alone takes"):
        model.fit(X, y)
    assert not hasattr(model, "weights_")
    assert os.listdir(tmp_path) == []


def test_the_working_set_solver_refuses_a_cache_size():
    X, y = _letters(10)
    with pytest.raises(ValueError, match="solver='working_set' keeps its whole cache"):
        EGStructuredSVM(solver="working_set", cache_size=10.0).fit(X, y)


def test_a_walk_of_every_shard_reads_those_read_last_first():
    X, y = _letters()
    structure = ChainStructure()
    shards = KernelShards(structure, structure.make_batch(X, n_states=26), cache_size=0.1)
    try:
        n = len(shards)

        def walked(windows=None):
            return [[s.start for s in loaded] for loaded in shards.walk(windows)]

        everything = walked()
        assert sum(everything, []) == [s.start for s in shards.shards]
        assert len(everything) > 1  # in windows that fit the budget
        windows = [[3, 0], [5]]
        loaded = list(shards.walk(windows))
        assert [[s.start for s in window] for window in loaded] == [
            [shards.shards[k].start for k in window] for window in windows]
        # with its kernel data read back as it was built
        batch = structure.make_batch(X, n_states=26)
        first = shards.shards[0]
        built = structure.kernel_data(structure.take(batch, np.arange(first.start, first.stop)),
                                      training=True)
        for name, value in zip(built._fields, built):
            read = getattr(loaded[0][1].data, name)
            if isinstance(value, np.ndarray):
                assert read.dtype == value.dtype and read.flags.aligned
                np.testing.assert_array_equal(read, value)
            else:
                assert read == value
        expected = [5, 0, 3] + [k for k in range(n) if k not in (0, 3, 5)]
        assert sum(walked(), []) == [shards.shards[k].start for k in expected]
    finally:
        shards.close()


@pytest.mark.parametrize("Model", [EGCRF, EGStructuredSVM])
def test_partial_fit_streams_its_cache_and_checks_the_folder(Model, tmp_path):
    """partial_fit ignored cache_size and cache_dir (a file as cache_dir was accepted);
    streamed in the cyclic order, its calls give the weights of the calls in memory."""
    X, y = _sentences(30)
    structure = DependencyTreeStructure(hash_bits=12)
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    model = Model(structure=structure, cache_size=1.0, cache_dir=not_a_folder)
    with pytest.raises(ValueError, match=r"cache_dir='.*file' is not a writable folder"):
        model.partial_fit(X[:10], y[:10])
    assert not hasattr(model, "weights_")
    budget = KernelShards._estimated_bytes(structure, structure.make_batch(X)) / 2 ** 20 / 2
    models = [Model(structure=structure, order="cyclic", max_iter=3, tol=1e-12,
                    partial_fit_memory=None, **cache) for cache in
              ({}, {"cache_size": budget, "cache_dir": tmp_path})]
    for model in models:
        for start in (0, 15):
            model.partial_fit(X[start:start + 15], y[start:start + 15])
    np.testing.assert_array_equal(models[1].weights_, models[0].weights_)
    assert os.listdir(tmp_path) == ["file"]


def test_a_boolean_cache_size_is_refused():
    X, y = _letters(10)
    model = EGCRF(cache_size=True)
    with pytest.raises(TypeError, match="cache_size must be a number of megabytes or None, "
                                        "got True"):
        model.fit(X, y)
    assert not hasattr(model, "weights_")
