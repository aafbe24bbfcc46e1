"""The data set a check runs on: the batch, the encoded targets and every output by enumeration."""

import copy
import itertools
import zlib

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog
from scipy.special import logsumexp
from sklearn.utils import check_random_state
from ._comparison import ATOL, RTOL

#: Most outputs tried per example by the default enumeration.
MAX_CANDIDATES = 4096


def _hamming(Y_true, Y):
    return float(np.count_nonzero(np.asarray(Y_true) != np.asarray(Y)))


class _Instance:
    """A tiny data set with its batch, true outputs and every enumerated output."""

    def __init__(self, structure, X, y, *, enumerate_outputs=None, loss=None,
                 polytope_rays=None, variants=None, random_state=0):
        self.structure = structure
        self.initial_state = copy.deepcopy(vars(structure))
        self.X, self.y = X, y
        self.data_state = copy.deepcopy((X, y))
        self.loss = _hamming if loss is None else loss
        self.polytope_rays = polytope_rays
        self.variants = variants
        self.seed = int(check_random_state(random_state).randint(2 ** 31 - 1))
        if not structure.supports("encode"):
            raise AssertionError("the checks need encode, which the structure does not "
                                 "support.")
        self.codec = structure.output_space().codec(y)
        self.batch = b = structure.make_batch(X, n_states=self.codec.n_states)
        self.batch_state = copy.deepcopy(b)
        self.Y = structure.check_outputs(b, self.codec.encode(b, y)).copy()
        self.n_samples = int(b.n_samples)
        self.n_units = int(b.unit_offsets[-1])
        self.n_parts = int(b.part_offsets[-1])
        self.n_weights = int(b.n_weights)
        self.units = [slice(int(b.unit_offsets[i]), int(b.unit_offsets[i + 1]))
                      for i in range(self.n_samples)]
        self.parts = [slice(int(b.part_offsets[i]), int(b.part_offsets[i + 1]))
                      for i in range(self.n_samples)]
        self.outputs, self.encodings, self._index = [], [], []
        for i in range(self.n_samples):
            if enumerate_outputs is None:
                outputs = self._enumerate(i)
            else:
                outputs = [np.asarray(y_i, dtype=np.int64).reshape(self.n_units_of(i))
                           for y_i in enumerate_outputs(b, i)]
            # (explicit row counts: -1 is ambiguous for an example without units or parts)
            self.outputs.append(np.asarray(outputs, dtype=np.int64).reshape(
                len(outputs), self.n_units_of(i)))
            self.encodings.append(np.array([self.encode(self.with_output(i, y_i))[self.parts[i]]
                                            for y_i in self.outputs[i]]).reshape(
                                                len(outputs), self.n_parts_of(i)))
            self._index.append({tuple(y_i): k for k, y_i in enumerate(self.outputs[i])})
            if not len(self.outputs[i]):
                raise AssertionError(f"example {i} has no output.")
        self._features = None

    # ---------------------------------------------------------- enumeration
    def _enumerate(self, i):
        s, b = self.structure, self.batch
        n_states = self.codec.n_states or 2
        n_units = self.n_units_of(i)
        if n_states ** n_units > MAX_CANDIDATES:
            raise ValueError(f"example {i} has {n_states ** n_units} candidate outputs, more "
                             f"than {MAX_CANDIDATES}: make the data sets smaller.")
        outputs = []
        for candidate in itertools.product(range(n_states), repeat=n_units):
            Y = self.with_output(i, candidate)
            try:
                s.check_outputs(b, Y)
            except ValueError:
                continue
            if s.supports("project"):
                z = self.encode(Y)
                p = np.asarray(s.project(b, z))
                if not np.allclose(p[self.parts[i]], z[self.parts[i]], rtol=0, atol=1e-7):
                    continue  # not a vertex of the polytope: not an output
            outputs.append(np.array(candidate, dtype=np.int64))
        return outputs

    def with_output(self, i, y_i):
        """The true outputs with example ``i``'s replaced by ``y_i``."""
        Y = self.Y.copy()
        Y[self.units[i]] = y_i
        return Y

    def encode(self, Y):
        return np.asarray(self.structure.encode(self.batch, Y), dtype=np.float64)

    def index(self, i, y_i):
        """Position of ``y_i`` among the outputs of example ``i``, or -1."""
        return self._index[i].get(tuple(np.asarray(y_i, dtype=np.int64).tolist()), -1)

    def n_units_of(self, i):
        return self.units[i].stop - self.units[i].start

    def n_parts_of(self, i):
        return self.parts[i].stop - self.parts[i].start

    def rng(self, name):
        """A random generator per check, so that checks do not depend on their order."""
        return np.random.RandomState((self.seed + zlib.crc32(name.encode())) % 2 ** 31)

    # ------------------------------------------------------------ references
    def feature_matrix(self):
        """``F`` (n_weights, n_parts): row ``j`` is ``part_scores`` of the unit vector ``e_j``."""
        if self._features is None:
            eye = np.eye(self.n_weights)
            self._features = np.array([self.structure.part_scores(self.batch, eye[j])
                                       for j in range(self.n_weights)]).reshape(
                                           self.n_weights, self.n_parts)
        return self._features

    def weights(self, rng):
        """Named weight vectors respecting the sign constraints."""
        n = self.n_weights
        mask = np.asarray(self.structure.nonnegative_weights(self.batch), dtype=bool)
        draws = [("zero weights", np.zeros(n)), ("random weights", rng.randn(n)),
                 ("large random weights", 5.0 * rng.randn(n))]
        for _, w in draws:
            w[mask] = np.abs(w[mask])
        return draws

    def score_draws(self, rng):
        """Named part-score vectors: ``part_scores`` of :meth:`weights`, and arbitrary ones
        when no weight is sign-constrained and inference accepts them."""
        s, b = self.structure, self.batch
        if not s.supports("part_scores"):
            return [("zero scores", np.zeros(self.n_parts)),
                    ("random scores", rng.randn(self.n_parts)),
                    ("large random scores", 5.0 * rng.randn(self.n_parts))]
        draws = [(f"scores of {what}", np.asarray(s.part_scores(b, w), dtype=np.float64))
                 for what, w in self.weights(rng)]
        arbitrary = 2.0 * rng.randn(self.n_parts)
        if not np.any(s.nonnegative_weights(b)) and self._accepts(arbitrary):
            draws.append(("arbitrary part scores", arbitrary))
        return draws

    def _accepts(self, scores):
        """Whether inference accepts these part scores (min-cut edge parts must score <= 0
        even when no weight is sign-constrained, e.g. without edge features)."""
        if not self.structure.supports("argmax"):
            return True
        try:
            self.structure.argmax(self.batch, scores)
        except ValueError:
            return False
        return True

    def example_values(self, Y, scores):
        """Score of outputs ``Y`` in every example."""
        return _example_values(self.structure, self.batch, Y, scores)

    def reference_marginals(self, scores):
        mu = np.empty(self.n_parts)
        log_z = np.empty(self.n_samples)
        for i in range(self.n_samples):
            values = self.encodings[i] @ scores[self.parts[i]]
            log_z[i] = logsumexp(values)
            mu[self.parts[i]] = np.exp(values - log_z[i]) @ self.encodings[i]
        return mu, log_z

    def check_best(self, Y, scores, what):
        """Outputs ``Y`` are valid and each scores the best enumerated score."""
        Y = np.asarray(Y)
        if Y.shape != (self.n_units,) or not np.issubdtype(Y.dtype, np.integer):
            raise AssertionError(f"{what}: expected {self.n_units} integer outputs, got "
                                 f"{Y.dtype} of shape {Y.shape}.")
        for i in range(self.n_samples):
            self.check_best_of_example(i, Y[self.units[i]], scores, what)

    def check_best_of_example(self, i, y_i, scores, what):
        k = self.index(i, y_i)
        if k < 0:
            raise AssertionError(f"{what}: example {i} gets {np.asarray(y_i).tolist()}, which "
                                 "is not one of its enumerated outputs.")
        values = self.encodings[i] @ scores[self.parts[i]]
        best = values.max()
        if values[k] < best - (RTOL * abs(best) + ATOL):
            raise AssertionError(
                f"{what}: example {i} gets {np.asarray(y_i).tolist()} scoring "
                f"{float(values[k])!r}, but {self.outputs[i][values.argmax()].tolist()} scores "
                f"{float(best)!r}.")

    def rays(self, i):
        if self.polytope_rays is None:
            return np.zeros((0, self.n_parts_of(i)))
        return np.asarray(self.polytope_rays(self.batch, i), dtype=float).reshape(
            -1, self.n_parts_of(i))

    def check_projection(self, i, v, p, what):
        """``p`` is the projection of ``v`` onto the polytope of example ``i`` (KKT, LP, QP)."""
        if not np.all(np.isfinite(p)):
            raise AssertionError(f"{what}: example {i}: the projection has non-finite values.")
        if v.size == 0:
            return
        points, rays = self.encodings[i], self.rays(i)
        scale = max(1.0, np.abs(v).max(), np.abs(points).max())
        tol = 1e-7 * scale * scale
        residual = v - p
        violation = max((points - p) @ residual)
        if rays.size:
            violation = max(violation, max(rays @ residual))
        if violation > tol:
            raise AssertionError(
                f"{what}: example {i}: project({np.round(v, 4).tolist()}) = "
                f"{np.round(p, 6).tolist()} is not optimal: (v - p) . (e - p) = {violation:.3g} "
                f"> 0 for an encoded output e (or a ray).")
        distance = _hull_distance(p, points, rays)
        if distance > 1e-7 * scale:
            raise AssertionError(
                f"{what}: example {i}: project({np.round(v, 4).tolist()}) = "
                f"{np.round(p, 6).tolist()} lies outside the polytope (L1 distance "
                f"{distance:.3g}).")
        # an objective accurate to tol is a point accurate to sqrt(tol): a loose comparison
        reference = _qp_projection(v, points, rays)
        if reference is not None and not np.allclose(p, reference, rtol=0, atol=1e-5 * scale):
            raise AssertionError(
                f"{what}: example {i}: project({np.round(v, 4).tolist()}) = "
                f"{np.round(p, 6).tolist()} but a generic QP solver finds "
                f"{np.round(reference, 6).tolist()}.")


def _example_values(structure, batch, Y, scores):
    weighted = np.asarray(structure.encode(batch, Y), dtype=float) * scores
    return np.array([weighted[batch.part_offsets[i]:batch.part_offsets[i + 1]].sum()
                     for i in range(batch.n_samples)])


def _offsets(lengths):
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


def _hull_distance(p, points, rays):
    """L1 distance from ``p`` to ``conv(points) + cone(rays)``, by a linear program."""
    n, m, r = p.size, len(points), len(rays)
    cost = np.r_[np.zeros(m + r), np.ones(2 * n)]
    A = np.zeros((n + 1, m + r + 2 * n))
    A[:n, :m] = points.T
    A[:n, m:m + r] = rays.T
    A[:n, m + r:m + r + n] = np.eye(n)
    A[:n, m + r + n:] = -np.eye(n)
    A[n, :m] = 1.0
    result = linprog(cost, A_eq=A, b_eq=np.r_[p, 1.0], bounds=(0, None), method="highs")
    if result.status != 0:
        raise RuntimeError(f"the membership linear program failed: {result.message}")
    return float(result.fun)


def _qp_projection(v, points, rays):
    """Projection of ``v`` onto ``conv(points) + cone(rays)`` by clarabel, or None without it."""
    try:
        import clarabel
    except ImportError:
        return None
    m, r = len(points), len(rays)
    M = np.vstack([points, rays]).T
    P = sp.csc_matrix(np.triu(M.T @ M))
    q = -M.T @ v
    A = sp.csc_matrix(np.vstack([np.r_[np.ones(m), np.zeros(r)][None, :], -np.eye(m + r)]))
    b = np.r_[1.0, np.zeros(m + r)]
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = 1e-13
    settings.tol_ktratio = 1e-12
    settings.max_iter = 500
    solver = clarabel.DefaultSolver(P, q, A, b, [clarabel.ZeroConeT(1),
                                                 clarabel.NonnegativeConeT(m + r)], settings)
    solution = solver.solve()
    if str(solution.status) != "Solved":
        return None
    return M @ np.asarray(solution.x)
