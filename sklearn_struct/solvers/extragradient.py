"""Dual extragradient for max-margin structured learning (Taskar, Lacoste-Julien & Jordan 2006).

The max-margin problem is the bilinear saddle point (eq. 13)

    min_{w in W} max_{z in Z}  L(w, z) = sum_i w.F_i z_i + c_i.z_i - w.f_i(y_i)

with ``W`` a norm ball (optionally with non-negative coordinates) and ``Z``
the product of the examples' relaxed output polytopes.  With
``D(u) = (-(F z - f), F^T w + c)`` (the paper's ``-(F u - a)``), Nesterov's
dual extragradient (Figures 2 and 4) iterates

    v = T(u_hat, s);   u = T(v, D(v));   s += D(u)

and returns the average of the ``u``.  ``T`` is a Euclidean projection step
(``geometry="euclidean"``) or a Bregman proximal step (``"entropic"``: the
L1 ball through the simplex of Example 1 for ``w``; for ``z`` chain
marginals (Example 2) when the structure has marginals, Euclidean
projections otherwise).  ``memory="low"`` is Figure 6: only ``s_w`` and the
averaged ``w`` are kept, ``s_z = t (F^T w_bar + c)`` is rebuilt one chunk of
examples at a time -- the same iterates up to rounding; part losses, the
objective and gap, and the power iteration for ``L`` run over the same chunks,
so that no vector over all parts is ever held.

Structures are used only through their parts operations; nothing here knows
scikit-learn.
"""

from dataclasses import dataclass, field

import numpy as np

from ._chunks import ExampleChunks
from ._objective import example_losses
from .l1_projection import clip_nonnegative

__all__ = ["ExtragradientResult", "dual_extragradient", "estimate_lipschitz"]


@dataclass
class ExtragradientResult:
    """Output of :func:`dual_extragradient`.

    Attributes
    ----------
    coef : ndarray of shape (n_weights,)
        The averaged weights ``w_bar``.
    n_iter : int
        Passes run.
    converged : bool
        Whether the relative gap reached ``tol`` (always False when the gap is
        not defined, i.e. for an unbounded Euclidean ball).
    lipschitz : float
        ``L``; the step size is ``1 / L``.
    objective : list of float
        Sum of hinge losses (eq. 8/15 objective) at ``w_bar`` after every pass.
    gap : list of float
        Gap function (eq. 18) at ``(w_bar, z_bar)`` after every pass (``inf``
        when ``W`` is unbounded).
    state : dict
        Everything a later call needs to continue the same run
        (``state=`` of :func:`dual_extragradient`): the accumulated direction
        ``s_w``, the averages ``w_bar``, ``feature_bar`` and ``loss_bar``, the
        number of passes ``t`` they cover, ``lipschitz`` and the part count.
    """

    coef: np.ndarray
    n_iter: int
    converged: bool
    lipschitz: float
    objective: list = field(default_factory=list)
    gap: list = field(default_factory=list)
    state: dict = None


# ------------------------------------------------------------ w-side setups
class _EuclideanBall:
    """``W = {||w||_2 <= radius, w[nonneg] >= 0}``, Euclidean steps."""

    def __init__(self, n_weights, radius, nonneg, step):
        self.radius, self.nonneg, self.step = radius, nonneg, step
        self.n_weights = n_weights

    def project(self, w):
        w = clip_nonnegative(w, self.nonneg)
        norm = np.linalg.norm(w)
        if norm > self.radius:
            w *= self.radius / norm
        return w

    def initial(self):
        return np.zeros(self.n_weights)

    def from_sum(self, s):
        """``T(u_hat, s)`` with centre ``w_hat = 0``."""
        return self.project(self.step * s)

    def advance(self, v, s_v, direction):
        """``T(v, direction)``; ``s_v`` is the accumulated direction that gave ``v``."""
        return self.project(v + self.step * direction)

    def min_linear(self, g):
        """``min_{w in W} w . g`` (``-inf`` on an unbounded ball)."""
        h = g.copy()
        h[self.nonneg] = np.minimum(h[self.nonneg], 0.0)
        norm = np.linalg.norm(h)
        if norm == 0.0:
            return 0.0
        return -self.radius * norm


class _EntropicL1Ball:
    """``W = {||w||_1 <= radius, w[nonneg] >= 0}`` via the simplex of Example 1.

    ``w = radius (v+ - v-)`` with ``v = (v0, v+, v-)`` on the simplex (no
    ``v-`` for non-negative coordinates) and negative entropy as ``h``.
    Proximal steps compose, so ``w`` is a function of the accumulated
    direction only: ``v ~ exp(step * radius * (0, +s, -s))``.
    """

    def __init__(self, n_weights, radius, nonneg, step):
        self.radius, self.nonneg, self.step = radius, nonneg, step
        self.n_weights = n_weights

    def initial(self):
        return np.zeros(self.n_weights)

    def from_sum(self, s):
        a = self.step * self.radius * s
        negative = np.where(self.nonneg, -np.inf, -a)
        top = max(0.0, a.max(), negative.max())
        plus, minus = np.exp(a - top), np.exp(negative - top)
        return self.radius * (plus - minus) / (np.exp(-top) + plus.sum() + minus.sum())

    def advance(self, v, s_v, direction):
        return self.from_sum(s_v + direction)

    def min_linear(self, g):
        h = g.copy()
        h[self.nonneg] = np.minimum(h[self.nonneg], 0.0)
        return -self.radius * np.abs(h).max(initial=0.0)


# ------------------------------------------------------------ z-side setups
class _EuclideanPolytope:
    """Euclidean projections onto the structure's relaxed polytope, centre = truth.

    With ``warm=True`` (full memory only) the duals of the previous ``v`` and
    ``u`` projections start the next ones, when the structure accepts it.
    """

    def __init__(self, structure, step, warm=False):
        self.structure, self.step = structure, step
        self.warm = [{}, {}] if warm else [None, None]

    def centre(self, batch, Y):
        return self.structure.encode(batch, Y)

    def _project(self, batch, point, which):
        return self.structure.project(batch, point, warm_start=self.warm[which])

    def from_sum(self, batch, centre, s):
        return self._project(batch, centre + self.step * s, 0)

    def advance(self, batch, v, s_v, direction):
        return self._project(batch, v + self.step * direction, 1)


class _EntropicMarginals:
    """KL steps on the marginal polytope (Example 2): natural parameters add up."""

    def __init__(self, structure, step, warm=False):
        self.structure, self.step = structure, step

    def centre(self, batch, Y):
        return None  # the uniform distribution: natural parameters 0

    def from_sum(self, batch, centre, s):
        return self.structure.marginals(batch, self.step * s)[0]

    def advance(self, batch, v, s_v, direction):
        return self.structure.marginals(batch, self.step * (s_v + direction))[0]


# ------------------------------------------------------------------ helpers
def estimate_lipschitz(structure, batch, n_iter=100, tol=1e-10, random_state=0,
                       chunk_parts=None):
    """``||F||_2`` (largest singular value of the feature map) by power iteration.

    ``F F^T x`` is accumulated over chunks of at most ``chunk_parts`` parts
    (``None``: the whole batch at once), so that no vector over all parts is
    ever held.
    """
    rng = np.random.RandomState(random_state)
    x = rng.standard_normal(batch.n_weights)
    x /= np.linalg.norm(x)
    value = 0.0
    for _ in range(n_iter):
        y = np.zeros(batch.n_weights)
        for sub, _, _ in ExampleChunks(structure, batch, max_parts=chunk_parts):
            y += structure.expected_features(sub, structure.part_scores(sub, x))
        new_value = np.linalg.norm(y)
        if new_value == 0.0:
            return 0.0
        x = y / new_value
        if abs(new_value - value) <= tol * new_value:
            value = new_value
            break
        value = new_value
    # power iteration approaches ||F||^2 from below: a small margin keeps 1/L safe
    return float(np.sqrt(value)) * (1.0 + 1e-6)


def _nothing_to_learn(structure, chunks, n_weights, Y, callback):
    """The result when no feature is ever non-zero (``L = 0``, e.g. 0 feature columns).

    The scores do not depend on ``w``, so ``w = 0`` is optimal and the gap is 0
    after one (empty) pass; a step of ``1 / L`` would overflow the z-steps.
    """
    coef = np.zeros(n_weights)
    result = ExtragradientResult(coef=coef, n_iter=1, converged=True, lipschitz=0.0)
    result.objective.append(float(example_losses(structure, chunks, coef, Y).sum()))
    result.gap.append(0.0)
    if callback is not None:
        callback(1, coef)
    return result


# ---------------------------------------------------------------- the solver
def dual_extragradient(
    structure,
    batch,
    Y,
    *,
    radius=np.inf,
    geometry="euclidean",
    memory="full",
    max_iter=100,
    tol=1e-3,
    lipschitz=None,
    track_objective=True,
    callback=None,
    chunk_parts=1 << 13,
    state=None,
):
    """Learn ``w`` by the dual extragradient method.

    Parameters
    ----------
    structure : BaseStructure
        Needs ``part_scores``, ``expected_features``, ``encode``,
        ``part_losses``, ``loss_augmented_argmax``, and ``project`` (Euclidean
        z-steps, warm-started in full memory) or ``marginals`` (entropic
        z-steps); ``feature_bounds`` for the entropic step size.  Its
        ``nonnegative_weights`` stay in the orthant and its ``loss_offsets``
        complete the objective.
    batch : the structure's batch.
    Y : ndarray of int64, encoded true outputs, flat over output units.
    radius : float, default=inf
        ``gamma``: ``W = {||w|| <= gamma}`` (2-norm for Euclidean, 1-norm for
        entropic geometry, which needs it finite).
    geometry : {"euclidean", "entropic"}
    memory : {"full", "low"}
        ``"low"``: Figure 6.  Between passes only vectors of the size of ``w``
        are kept; the z-steps, the part losses, the objective and gap and the
        power iteration for ``L`` all run over chunks of examples of at most
        ``chunk_parts`` parts, taken one at a time.
    max_iter : int
        Passes over the data.
    tol : float
        Stop when ``gap <= tol * max(objective, 1)``.
    lipschitz : float, optional
        ``L`` (step ``1 / L``); default: power iteration on ``F`` (Euclidean)
        or the bound ``2 gamma sum_i B_i`` (entropic).
    track_objective : bool
        Compute objective and gap at ``w_bar`` after every pass (one
        loss-augmented inference per example).
    callback : callable(t, coef) -> bool, optional
        Called after every pass with the averaged weights; returning True stops.
    chunk_parts : int, default=8192
        Chunk size of ``memory="low"`` (ignored otherwise).
    state : dict, optional
        ``result.state`` of an earlier call on the same examples and
        parameters: the run continues where it stopped (``s_z`` is rebuilt
        from the averaged weights, ``s_z = t (F^T w_bar + c)``), so that two
        calls of ``n`` passes give the iterates of one call of ``2 n``.

    Returns
    -------
    ExtragradientResult
    """
    _check_arguments(geometry, memory, radius)
    entropic_z = geometry == "entropic" and structure.supports("marginals")
    if memory == "full":
        chunk_parts = None

    chunks = ExampleChunks(structure, batch, max_parts=chunk_parts)
    n_weights = batch.n_weights
    nonneg = np.asarray(structure.nonnegative_weights(batch), dtype=bool)
    n_parts = int(batch.part_offsets[-1])
    if state is not None:
        _check_warm_start(state, n_weights, n_parts)
        lipschitz = state["lipschitz"]
    if lipschitz is None:
        lipschitz = _default_lipschitz(structure, batch, chunks, geometry, entropic_z, radius,
                                       chunk_parts)
    if float(lipschitz) == 0.0:
        return _nothing_to_learn(structure, chunks, n_weights, Y, callback)
    step = 1.0 / float(lipschitz)
    w_setup = (_EuclideanBall if geometry == "euclidean" else _EntropicL1Ball)(
        n_weights, radius, nonneg, step
    )
    z_setup = (_EntropicMarginals if entropic_z else _EuclideanPolytope)(
        structure, step, warm=memory == "full"
    )

    truth_features, offsets = _truth_features(structure, chunks, Y, n_weights)
    t0, s_w, w_bar, feature_bar, loss_bar = _starting_sums(state, n_weights, w_setup)
    result = ExtragradientResult(coef=w_bar, n_iter=0, converged=False, lipschitz=lipschitz)
    if memory == "full":
        full_z = _FullMemoryZ(structure, batch, Y, z_setup, t0, w_bar)

    for t in range(t0, t0 + max_iter):
        v_w = w_setup.from_sum(s_w)
        if memory == "full":
            u_w, features_u, loss_u = full_z.step(w_setup, s_w, v_w, truth_features)
        else:
            dir_w, features_u, loss_u = _low_memory_z_step(structure, chunks, Y, z_setup, t,
                                                           w_bar, v_w, truth_features)
            u_w = w_setup.advance(v_w, s_w, dir_w)
        s_w += truth_features - features_u
        w_bar = w_bar + (u_w - w_bar) / (t + 1)
        feature_bar += (features_u - feature_bar) / (t + 1)
        loss_bar += (loss_u - loss_bar) / (t + 1)
        result.coef, result.n_iter = w_bar, t + 1 - t0
        result.state = dict(t=t + 1, s_w=s_w.copy(), w_bar=w_bar, feature_bar=feature_bar.copy(),
                            loss_bar=loss_bar, lipschitz=lipschitz, n_parts=n_parts)
        if track_objective:
            objective = float(example_losses(structure, chunks, w_bar, Y).sum())
            gap = (objective - offsets
                   - w_setup.min_linear(feature_bar - truth_features) - loss_bar)
            result.objective.append(objective)
            result.gap.append(gap)
            result.converged = gap <= tol * max(objective, 1.0)
        stop = callback is not None and callback(t + 1 - t0, w_bar)
        if stop or result.converged:
            break
    return result


def _check_arguments(geometry, memory, radius):
    """The errors :func:`dual_extragradient` raises on its settings."""
    if geometry not in ("euclidean", "entropic"):
        raise ValueError(f"geometry must be 'euclidean' or 'entropic', got {geometry!r}.")
    if memory not in ("full", "low"):
        raise ValueError(f"memory must be 'full' or 'low', got {memory!r}.")
    if geometry == "entropic" and not np.isfinite(radius):
        raise ValueError("geometry='entropic' needs a finite radius (the L1 ball).")


def _starting_sums(state, n_weights, w_setup):
    """``(t0, s_w, w_bar, feature_bar, loss_bar)``: the passes run, the sum of the
    w-directions, the averaged weights and the running means of ``F u_z`` and ``c . u_z``
    (for the gap), at the start or of a stored run ``state``."""
    if state is None:
        return 0, np.zeros(n_weights), w_setup.initial(), np.zeros(n_weights), 0.0
    return (state["t"], state["s_w"].copy(), state["w_bar"].copy(),
            state["feature_bar"].copy(), state["loss_bar"])


def _check_warm_start(state, n_weights, n_parts):
    """A stored run (``result.state``) must be of a training set of the same size."""
    if state["s_w"].shape != (n_weights,) or state["n_parts"] != n_parts:
        raise ValueError(
            f"warm start: the stored run has {state['s_w'].shape[0]} weights and "
            f"{state['n_parts']} parts but this training set has {n_weights} and {n_parts}; "
            "fit on the same examples or set warm_start=False.")


class _FullMemoryZ:
    """The z-side of a pass in full memory: the sum ``s_z`` of the z-directions kept over
    every part, rebuilt for a warm start from the averaged weights ``w_bar`` after ``t0``
    passes."""

    def __init__(self, structure, batch, Y, z_setup, t0, w_bar):
        self.structure, self.batch, self.z_setup = structure, batch, z_setup
        self.losses = structure.part_losses(batch, Y)
        self.centre = z_setup.centre(batch, Y)
        self.s_z = t0 * (structure.part_scores(batch, w_bar) + self.losses)

    def step(self, w_setup, s_w, v_w, truth_features):
        """One extragradient pass from the w-side's ``v_w``: returns ``(u_w, F u_z,
        c . u_z)``, ``s_z`` moved on."""
        structure, batch, losses = self.structure, self.batch, self.losses
        v_z = self.z_setup.from_sum(batch, self.centre, self.s_z)
        dir_w = truth_features - structure.expected_features(batch, v_z)
        dir_z = structure.part_scores(batch, v_w) + losses
        u_z = self.z_setup.advance(batch, v_z, self.s_z, dir_z)
        features_u, loss_u = structure.expected_features(batch, u_z), float(losses @ u_z)
        u_w = w_setup.advance(v_w, s_w, dir_w)
        self.s_z += structure.part_scores(batch, u_w) + losses
        return u_w, features_u, loss_u


def _default_lipschitz(structure, batch, chunks, geometry, entropic_z, radius, chunk_parts):
    """The Lipschitz constant :func:`dual_extragradient` steps by when none is given: its
    estimate in the Euclidean geometry, the bound ``2 radius sum_i ||F_i||`` in the
    entropic one."""
    if geometry == "euclidean":
        return estimate_lipschitz(structure, batch, chunk_parts=chunk_parts)
    z_geometry = "entropic" if entropic_z else "euclidean"
    return 2.0 * radius * sum(float(structure.feature_bounds(sub, z_geometry).sum())
                              for sub, _, _ in chunks)


def _truth_features(structure, chunks, Y, n_weights):
    """``F y`` of the targets, and the sum of their loss offsets, chunk by chunk."""
    truth_features = np.zeros(n_weights)
    offsets = 0.0
    for sub, _, units in chunks:
        truth_features += structure.expected_features(sub, structure.encode(sub, Y[units]))
        offsets += float(structure.loss_offsets(sub, Y[units]).sum())
    return truth_features, offsets


def _low_memory_z_step(structure, chunks, Y, z_setup, t, w_bar, v_w, truth_features):
    """The ``z`` half of pass ``t`` with ``memory="low"``, chunk by chunk: each chunk's
    ``s_z`` rebuilt from ``w_bar`` (``s_z = t (F^T w_bar + c)``), its prediction ``v_z``
    and correction ``u_z``.  Returns the ``w`` direction ``F y - F v_z``, ``F u_z`` and
    ``c . u_z``."""
    dir_w = truth_features.copy()
    features_u = np.zeros(truth_features.shape[0])
    loss_u = 0.0
    for sub, _, units in chunks:
        losses_sub = structure.part_losses(sub, Y[units])
        s_sub = t * (structure.part_scores(sub, w_bar) + losses_sub)
        v_sub = z_setup.from_sum(sub, z_setup.centre(sub, Y[units]), s_sub)
        dir_w -= structure.expected_features(sub, v_sub)
        dir_sub = structure.part_scores(sub, v_w) + losses_sub
        u_sub = z_setup.advance(sub, v_sub, s_sub, dir_sub)
        features_u += structure.expected_features(sub, u_sub)
        loss_u += float(losses_sub @ u_sub)
    return dir_w, features_u, loss_u
