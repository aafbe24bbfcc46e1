"""A structure written outside the package plugs into every learner: the protocol's proof.

:class:`SubsetStructure` is defined only here, through the public protocol: "choose a
subset of at most ``k`` of the ``m`` candidate labels of an example".  An example is a
``(m, n_features)`` matrix of candidate features; its output is a 0/1 vector over the
candidates with at most ``k`` ones; there is one part per candidate, scored
``features_j . w``.  Its inference lives in numba kernel operations written below
(top-``k`` argmax, a dynamic program over the number of chosen candidates for the
marginals, a bisection on the dual for the projection onto
``{0 <= z <= 1, sum z <= k}``); every batch operation comes from the defaults of
:class:`BaseStructure`.  It passes :func:`check_structure` and trains with EG (log-loss
and hinge), the L1-M3N subgradient method and the dual extragradient method.
"""

import warnings
from dataclasses import dataclass
from functools import partial

import numpy as np
import pytest
import scipy.sparse as sp
from numba import njit
from sklearn.exceptions import ConvergenceWarning

from sklearn_struct import L1M3N, DualExtragradientMatcher, EGCRF, EGStructuredSVM
from sklearn_struct.solvers import _eg_kernels, _subgradient_kernels
from sklearn_struct.structures import BaseStructure, BinaryUnitCodec, KernelOps, OutputSpace
from sklearn_struct.structures._base import OPERATIONS
from sklearn_struct.utils import check_structure

# ------------------------------------------------------- per-example kernels
# Kernel data: (X, unit_offsets, k); candidate j of example i is row unit_offsets[i] + j.


@njit(cache=True)
def subset_part_scores(data, i, w, scale, out):
    X, offsets = data[0], data[1]
    scaled = scale.shape[0] > 0
    for j in range(out.shape[0]):
        row = offsets[i] + j
        total = 0.0
        for f in range(X.shape[1]):
            total += X[row, f] * (w[f] * scale[f] if scaled else w[f])
        out[j] = total


@njit(cache=True)
def subset_add_features(data, i, coef, scale, w):
    X, offsets = data[0], data[1]
    scaled = scale.shape[0] > 0
    for j in range(coef.shape[0]):
        if coef[j] == 0.0:
            continue
        row = offsets[i] + j
        for f in range(X.shape[1]):
            w[f] += coef[j] * X[row, f] * (scale[f] if scaled else 1.0)


@njit(cache=True)
def _log_add(a, b):
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    top = max(a, b)
    return top + np.log(np.exp(a - top) + np.exp(b - top))


@njit(cache=True)
def subset_marginals(data, i, theta, mu):
    """Exact marginals over the subsets of at most ``k`` candidates.

    ``forward[j, c]`` (``backward[j, c]``) is the log of the total weight of the
    subsets of candidates before ``j`` (from ``j`` on) with ``c`` of them chosen;
    candidate ``j`` is chosen with ``a`` chosen before it and ``b`` after it when
    ``a + 1 + b <= k``.
    """
    m = theta.shape[0]
    k = min(data[2], m)
    forward = np.full((m + 1, k + 1), -np.inf)
    backward = np.full((m + 1, k + 1), -np.inf)
    forward[0, 0] = 0.0
    backward[m, 0] = 0.0
    for j in range(m):
        for c in range(k + 1):
            forward[j + 1, c] = forward[j, c]
            if c > 0:
                forward[j + 1, c] = _log_add(forward[j + 1, c], forward[j, c - 1] + theta[j])
    for j in range(m - 1, -1, -1):
        for c in range(k + 1):
            backward[j, c] = backward[j + 1, c]
            if c > 0:
                backward[j, c] = _log_add(backward[j, c], backward[j + 1, c - 1] + theta[j])
    log_z = -np.inf
    for c in range(k + 1):
        log_z = _log_add(log_z, forward[m, c])
    for j in range(m):
        total = -np.inf
        for a in range(k):
            for b in range(k - a):
                total = _log_add(total, forward[j, a] + backward[j + 1, b])
        mu[j] = np.exp(total + theta[j] - log_z)
    return log_z


@njit(cache=True)
def subset_argmax(data, i, scores, y_out):
    """The (at most) ``k`` candidates of largest positive score."""
    order = np.argsort(-scores)
    y_out[:] = 0
    for r in range(min(data[2], scores.shape[0])):
        if scores[order[r]] <= 0.0:
            break
        y_out[order[r]] = 1


@njit(cache=True)
def subset_encode(data, i, y, z_out):
    for j in range(y.shape[0]):
        z_out[j] = y[j]


@njit(cache=True)
def _clipped_sum(v, tau):
    total = 0.0
    for j in range(v.shape[0]):
        total += min(max(v[j] - tau, 0.0), 1.0)
    return total


@njit(cache=True)
def subset_project(data, i, v, out):
    """Projection onto ``{0 <= z <= 1, sum z <= k}``: ``z = clip(v - tau, 0, 1)``.

    ``tau = 0`` when that point is feasible; otherwise the multiplier of the sum
    constraint solves ``sum clip(v - tau, 0, 1) = k``, found by bisection and
    then solved exactly on the candidates strictly inside the box.
    """
    k = data[2]
    tau = 0.0
    if _clipped_sum(v, 0.0) > k:
        low, high = 0.0, v.max()  # the sum is 0 <= k at tau = max(v)
        for _ in range(200):
            middle = 0.5 * (low + high)
            if middle <= low or middle >= high:
                break
            if _clipped_sum(v, middle) > k:
                low = middle
            else:
                high = middle
        tau = high
        n_free, free_sum, n_ones = 0, 0.0, 0
        for j in range(v.shape[0]):
            if v[j] - tau >= 1.0:
                n_ones += 1
            elif v[j] - tau > 0.0:
                n_free += 1
                free_sum += v[j]
        if n_free > 0:
            exact = (free_sum + n_ones - k) / n_free
            if abs(_clipped_sum(v, exact) - k) <= abs(_clipped_sum(v, tau) - k):
                tau = exact
    for j in range(v.shape[0]):
        out[j] = min(max(v[j] - tau, 0.0), 1.0)


# ------------------------------------------------------------- the structure


@dataclass(frozen=True)
class SubsetBatch:
    """Candidates of all examples stacked; one unit and one part per candidate."""

    X: np.ndarray
    n_samples: int
    n_features: int
    unit_offsets: np.ndarray
    part_offsets: np.ndarray
    n_weights: int


class SubsetStructure(BaseStructure):
    """Choose at most ``k`` of an example's candidate labels (one part per candidate).

    Loss: Hamming over the candidates, ``sum_j [y_j != y'_j] = sum_j y_j +
    sum_j (1 - 2 y_j) y'_j``: part losses ``1 - 2 y_j`` and loss offsets the
    number of true candidates.
    """

    kernel_ops = KernelOps(part_scores=subset_part_scores, add_features=subset_add_features,
                           marginals=subset_marginals, argmax=subset_argmax,
                           encode=subset_encode, project=subset_project)

    def __init__(self, k=2):
        self.k = k

    def make_batch(self, X, n_states=None):
        if not isinstance(X, (list, tuple)) or not X:
            raise TypeError("SubsetStructure: X must be a non-empty list of (m_i, n_features) "
                            "candidate matrices.")
        rows = []
        for i, x in enumerate(X):
            x = x.toarray() if sp.issparse(x) else np.asarray(x, dtype=np.float64)
            if x.ndim != 2 or x.shape[0] == 0 or (rows and x.shape[1] != rows[0].shape[1]):
                raise ValueError(f"SubsetStructure: example {i} has shape {x.shape}; expected "
                                 "(m_i >= 1, n_features) like example 0.")
            if not np.isfinite(x).all():
                raise ValueError(f"SubsetStructure: example {i} has non-finite features.")
            rows.append(x)
        return self._batch(np.vstack(rows), [len(x) for x in rows])

    @staticmethod
    def _batch(X, lengths):
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        X = np.ascontiguousarray(X, dtype=np.float64)
        return SubsetBatch(X=X, n_samples=len(lengths), n_features=X.shape[1],
                           unit_offsets=offsets, part_offsets=offsets.copy(),
                           n_weights=X.shape[1])

    def take(self, batch, indices):
        indices = np.asarray(indices)
        if indices.dtype == bool:
            indices = np.flatnonzero(indices)
        indices = np.where(indices < 0, indices + batch.n_samples, indices)
        offsets = batch.unit_offsets
        rows = [batch.X[offsets[i]:offsets[i + 1]] for i in indices]
        return self._batch(np.vstack(rows), [len(x) for x in rows])

    def check_outputs(self, batch, Y):
        Y = super().check_outputs(batch, Y)
        offsets = batch.unit_offsets
        for i in range(batch.n_samples):
            y = Y[offsets[i]:offsets[i + 1]]
            if np.any((y != 0) & (y != 1)) or y.sum() > self.k:
                raise ValueError(f"SubsetStructure: example {i}: outputs must be 0/1 with at "
                                 f"most {self.k} ones, got {y.tolist()}.")
        return Y

    def decode(self, batch, z):
        z = np.asarray(z, dtype=np.float64)
        Y = np.zeros(batch.unit_offsets[-1], dtype=np.int64)
        for i in range(batch.n_samples):
            start = batch.unit_offsets[i]
            values = z[start:batch.unit_offsets[i + 1]]
            best = np.argsort(-values, kind="stable")[:self.k]
            Y[start + best[values[best] > 0.5]] = 1
        return Y

    def part_losses(self, batch, Y):
        return 1.0 - 2.0 * self.check_outputs(batch, Y)

    def loss_offsets(self, batch, Y):
        Y = self.check_outputs(batch, Y)
        offsets = batch.unit_offsets
        return np.array([Y[offsets[i]:offsets[i + 1]].sum() for i in range(batch.n_samples)],
                        dtype=np.float64)

    def output_space(self):
        return OutputSpace(self, codec=partial(BinaryUnitCodec, unit="candidate"))

    def kernel_data(self, batch, training=False):
        return (batch.X, batch.unit_offsets, int(self.k))


# ------------------------------------------------------------------- tests


def subset_instances(k):
    """Data sets of three examples of 3, 4 and 2 candidates with at most ``k`` chosen."""

    def make_instances(rng):
        X = [rng.randn(m, 3) for m in (3, 4, 2)]
        y = []
        for x in X:
            chosen = rng.choice(len(x), size=rng.randint(0, min(k, len(x)) + 1), replace=False)
            y.append(np.isin(np.arange(len(x)), chosen).astype(int))
        return X, y

    return make_instances


@pytest.mark.parametrize("k", [1, 2])
def test_subset_structure_conforms(k):
    structure = SubsetStructure(k=k)
    report = check_structure(structure, subset_instances(k))
    skipped = {name: reason for name, reason in report.items() if reason != "passed"}
    assert skipped == {"check_feature_bounds": "feature_bounds unsupported",
                       "check_dynamic_program": "no dynamic program"}
    assert [op for op in OPERATIONS if structure.supports(op)] == [
        "part_scores", "expected_features", "encode", "decode", "part_losses", "argmax",
        "loss_augmented_argmax", "marginals", "project"]


def planted_subsets(n_samples=40, n_candidates=5, n_features=4, k=2, seed=0):
    """Candidates whose true subset is the top-``k`` positive scores of a planted ``w``."""
    rng = np.random.RandomState(seed)
    w = rng.randn(n_features)
    X = [rng.randn(n_candidates, n_features) for _ in range(n_samples)]
    structure = SubsetStructure(k=k)
    batch = structure.make_batch(X)
    Y = structure.argmax(batch, structure.part_scores(batch, w))
    return X, np.split(Y, batch.unit_offsets[1:-1])


def _check_fit(model, X, y, converges=True):
    """Fit (without convergence warnings if ``converges``); the training score beats chance."""
    with warnings.catch_warnings():
        warnings.simplefilter("error" if converges else "ignore", ConvergenceWarning)
        model.fit(X, y)
    truth = np.concatenate(y)
    chance = max(truth.mean(), 1.0 - truth.mean())  # the better constant prediction
    score = model.score(X, y)
    assert score >= 0.9 and score >= chance + 0.2, (score, chance)
    predicted = model.predict(X)
    assert all(p.shape == t.shape and p.sum() <= 2 for p, t in zip(predicted, y))
    return model


def _compiled_for(template):
    """The numba loop that ``template`` became for SubsetStructure, if it was compiled."""
    kernel = SubsetStructure.kernel_ops._specialized.get(template)
    return kernel is not None and len(kernel.signatures) > 0


@pytest.mark.parametrize("Model", [EGCRF, EGStructuredSVM])
def test_eg_learns_subsets(Model):
    X, y = planted_subsets()
    model = _check_fit(Model(C=1.0, structure=SubsetStructure(k=2), tol=1e-3, max_iter=300,
                             random_state=0), X, y)
    assert model.duality_gap_ <= 1e-3 * abs(model.primal_objective_)
    # the online epoch ran inside numba, compiled for this structure's kernel operations
    assert _compiled_for(_eg_kernels.online_epoch)


@pytest.mark.parametrize("online", [False, True])
def test_l1m3n_subgradient_learns_subsets(online):
    X, y = planted_subsets()
    # the objective settles long before the subgradient method certifies it: score only
    _check_fit(L1M3N(structure=SubsetStructure(k=2), solver="subgradient", C=5.0,
                     max_iter=100 if online else 1000, online=online, random_state=0), X, y,
               converges=False)
    assert _compiled_for(_subgradient_kernels.online_epoch) or not online


def test_l1m3n_cutting_plane_and_em_learn_subsets():
    X, y = planted_subsets()
    for solver in ("cutting_plane", "em"):
        _check_fit(L1M3N(structure=SubsetStructure(k=2), solver=solver, C=1.0,
                         random_state=0), X, y, converges=False)


def test_dual_extragradient_learns_subsets():
    X, y = planted_subsets()
    # O(1/t) convergence: a moderate radius and tolerance keep the test short
    _check_fit(DualExtragradientMatcher(structure=SubsetStructure(k=2), radius=3.0,
                                        max_iter=1000, tol=0.05), X, y)
