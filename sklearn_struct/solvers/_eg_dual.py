"""The mathematics of EG on the dual (Collins et al. 2008, sections 2-4): the dual state,
its weights, terms and objective, its start and the per-example gaps.

See :mod:`.eg` for the objective and its dual.
"""

from dataclasses import dataclass

import numpy as np

from . import _eg_kernels
from ._chunks import ExampleChunks
from ._objective import DOT_BLOCK_PARTS, segment_dots


LOSSES = {"log": _eg_kernels.LOG_LOSS, "hinge": _eg_kernels.HINGE_LOSS}
#: Step halvings tried on one example before leaving it unchanged for this visit.
MAX_HALVINGS = 30
#: The hinge's cold start: every wrong part down-weighted by this many nats, so that
#: the dual point sits near the truth (``w`` near 0) whatever ``C``.
TRUTH_LOGIT = 10.0
#: Smoothed hinge: initial inverse temperature ``min(1, BETA_START_C / C)`` ...
BETA_START_C = 0.1
#: ... multiplied by ``BETA_GROWTH`` when the entropy term is at least
#: ``BETA_GATE`` times the hinge duality gap.
BETA_GROWTH = 2.0
BETA_GATE = 0.5
#: Smoothed hinge: the primal is evaluated at a running average of the pass-end
#: ``w`` over about the last ``AVERAGE_WINDOW`` of the passes (pass ``k`` enters with
#: weight ``min(1, 1 / (AVERAGE_WINDOW * k))``): ``w(alpha)`` trails the slowly sharpening
#: smoothed optimum with online noise, and its primal is several times further from the
#: optimum than the dual; the average's is closer.
AVERAGE_WINDOW = 0.1


@dataclass
class EGState:
    """Dual variables of an EG fit (everything a warm start needs).

    Attributes
    ----------
    theta : ndarray of shape (n_parts_total,)
        Gibbs parameters of every example's dual distribution (None when
        :func:`eg_solve` was told not to keep them).
    mu : ndarray of shape (n_parts_total,)
        Their part marginals (idem).
    terms : ndarray of shape (n_samples,)
        Per-example dual terms (entropy, or expected loss for the hinge).
        With ``beta``, the smoothed hinge's ``E e + H / beta``.
    etas : ndarray of shape (n_samples,)
        Per-example adaptive learning rates (online solver).
    part_offsets : ndarray of shape (n_samples + 1,)
        Part layout of the examples the state belongs to.
    eta : float
        Global adaptive learning rate (batch solver).
    w : ndarray of shape (n_weights,)
        ``w(alpha)`` in the structure's weight layout, for the ``C`` it was built with.
    C : float
    schedule : tuple or None
        ``(target C, C_start, passes done, C of the next pass)`` of an
        annealing that has not reached its target yet; a warm start towards the
        same target continues it (so that fits of one pass each retrace one
        long fit).
    beta : float or None
        Inverse temperature of the smoothed hinge (online hinge with annealing);
        ``None`` for the plain duals.  A warm start continues it.
    w_average : ndarray of shape (n_weights,) or None
        Smoothed hinge: running average of ``w`` over the last passes of the
        latest fit (see ``AVERAGE_WINDOW``; a warm start begins a new one), the
        point whose primal is evaluated and returned; ``None`` otherwise.
    gaps : ndarray of shape (n_samples,) or None
        ``order="gap"``: every example's share of the duality gap at the last
        gap evaluation (:func:`example_gaps`), from which the next passes draw
        their visits, a warm start's included; ``None`` before the first.
    """

    theta: np.ndarray
    mu: np.ndarray
    terms: np.ndarray
    etas: np.ndarray
    eta: float
    part_offsets: np.ndarray
    w: np.ndarray = None
    C: float = None
    schedule: tuple = None
    beta: float = None
    w_average: np.ndarray = None
    gaps: np.ndarray = None

    @property
    def primal_weights(self):
        """The weights whose primal the fit reports: ``w_average``, else ``w``."""
        return self.w if self.w_average is None else self.w_average


# ----------------------------------------------------------------- helpers
def batch_marginals(structure, chunks, theta):
    """Marginals and log-partitions of every example (in parallel chunks)."""
    out = chunks.map(structure.marginals, (theta,))
    if len(out) == 1:  # (a copy would hold the marginals twice)
        return out[0]
    return np.concatenate([m for m, _ in out]), np.concatenate([z for _, z in out])


def dual_terms(loss, mu, log_partition, theta, part_losses, part_offsets):
    """Entropy (log loss) or expected loss (hinge) of each example's distribution."""
    if loss == "log":
        return log_partition - segment_dots(mu, theta, part_offsets)
    return segment_dots(mu, part_losses, part_offsets)


# ------------------------------------------------------------------ the solver
def dual_weights(datafit, mu, C, expected=None):
    """``w(alpha) = center + C sum_i s_i (phi(x_i, y_i) - F_i mu_i)`` (features scaled).

    ``center``: that of the datafit's L2 penalty (None: 0).  ``expected``:
    ``scale * sum_i s_i F_i mu_i`` when already known (batch EG's chunks compute
    it where they keep ``mu``).
    """
    if expected is None:
        expected = datafit.features(datafit.batch, mu, datafit.sample_weight)
    w = datafit.weights_from(expected, C)
    return w if datafit.center is None else datafit.center + w


def scaled(datafit, features):
    """``feature_scale * features`` (features summed over chunks, in the structure's layout)."""
    return features if datafit.feature_scale is None else datafit.feature_scale * features


def l2_dual(datafit, terms, w, C):
    """The dual objective of the L2 penalty: ``C sum_i s_i (term_i + offset_i) - ||w||^2 / 2``
    (the hinge's per-example dual terms are kept without the loss offsets, constant in alpha),
    plus ``||center||^2 / 2`` when the penalty has a center: the dual of
    ``1/2 ||w - center||^2 + C sum_i s_i loss_i(w)``, at ``w = w(alpha)``.
    """
    dual = (C * (float(datafit.sample_weight @ terms)
                 + float(datafit.sample_weight @ datafit.loss_offsets)) - 0.5 * float(w @ w))
    center = datafit.center
    return dual if center is None else dual + 0.5 * float(center @ center)


def initial_state(datafit, eta0, near_truth=False, terms=None, dtype=np.float64):
    """Uniform dual distributions (``theta = 0``), the paper's starting point.

    With ``near_truth``, ``theta = -TRUTH_LOGIT * part_losses`` instead: the
    distributions concentrate on the zero-loss outputs (the truth), the dual
    point of ``w = 0``, sensible at any ``C``.  ``terms``: the uniform start's dual
    terms when batch EG's chunks computed them where they keep the dual variables;
    the state then holds no ``theta`` and ``mu`` (see :meth:`BatchPasses.store`).

    ``dtype``: that of ``theta`` and ``mu`` (see :data:`DUAL_DTYPES`).  A float32 state
    holds ``theta`` rounded, and the marginals of the rounded ``theta``, rounded; the
    dual terms are those of the stored values, as the online epoch computes them.
    It is made a block of examples at a time (:func:`_narrow_initial_state`), so that no
    float64 vector over all the parts is made.
    """
    dtype = check_dual_dtype(dtype)
    etas = np.full(datafit.n_samples, float(eta0))
    part_offsets = datafit.batch.part_offsets.copy()
    if terms is not None:
        return EGState(theta=None, mu=None, terms=terms, etas=etas, eta=float(eta0),
                       part_offsets=part_offsets)
    if dtype != np.float64:
        return _narrow_initial_state(datafit, eta0, etas, near_truth, dtype)
    theta = (-TRUTH_LOGIT * datafit.part_losses if near_truth
             else np.zeros(int(datafit.batch.part_offsets[-1])))
    mu, log_partition = batch_marginals(datafit.structure, datafit.chunks, theta)
    return EGState(
        theta=theta, mu=mu,
        terms=dual_terms(datafit.kind, mu, log_partition, theta,
                         datafit.part_losses if datafit.kind == "hinge" else None,
                         datafit.batch.part_offsets),
        etas=etas, eta=float(eta0), part_offsets=part_offsets,
    )


#: Parts per block of the examples whose marginals :func:`initial_state` computes at once
#: for a float32 state (float64 marginals of the whole batch would be the largest arrays
#: of the fit's start).
NARROW_START_BLOCK_PARTS = 1 << 23


def _narrow_initial_state(datafit, eta0, etas, near_truth, dtype):
    """:func:`initial_state` in ``dtype`` (float32): the marginals of blocks of consecutive
    examples in turn, each block's rounded into the state, with its dual terms."""
    structure, batch = datafit.structure, datafit.batch
    part_offsets = batch.part_offsets.copy()
    n_parts = int(part_offsets[-1])
    # (zeros: their pages cost no memory until the first pass writes them)
    theta = np.zeros(n_parts, dtype)
    mu = np.empty(n_parts, dtype)
    terms = np.empty(datafit.n_samples)
    blocks = ExampleChunks(structure, batch, max_parts=NARROW_START_BLOCK_PARTS)
    for (sub, parts, _), (a, b) in zip(blocks, blocks.bounds):
        theta_block = np.zeros(parts.stop - parts.start)
        if near_truth:
            theta_block = _rounded(-TRUTH_LOGIT * datafit.part_losses[parts], dtype)
            theta[parts] = theta_block
        mu_block, log_partition = structure.marginals(sub, theta_block)
        mu_block = _rounded(mu_block, dtype)
        mu[parts] = mu_block
        terms[a:b] = dual_terms(datafit.kind, mu_block, log_partition, theta_block,
                                datafit.part_losses[parts] if datafit.kind == "hinge" else None,
                                sub.part_offsets)
        del sub, mu_block, theta_block
    return EGState(theta=theta, mu=mu, terms=terms, etas=etas, eta=float(eta0),
                   part_offsets=part_offsets)


def truth_state(datafit, eta0, dtype=np.float64):
    """The dual point on the truth itself, without inference: each ``alpha_i`` all on its
    target, its marginals the target's encoding, so ``w(alpha)`` is the center.

    The dual terms are those of a point mass: no entropy, the expected loss of the target.
    A point mass has no finite ``theta``; the state holds ``-TRUTH_LOGIT * part_losses``
    as the point its first step moves from; the adaptive rate keeps that step only if the
    dual (of the point mass) improves.  For targets given as part vectors
    (``datafit.soft_truth``: not a point mass) use :func:`initial_state` near the truth.
    """
    dtype = check_dual_dtype(dtype)
    structure, batch = datafit.structure, datafit.batch
    n_parts = int(batch.part_offsets[-1])
    theta, mu = np.empty(n_parts, dtype), np.empty(n_parts, dtype)
    # block by block: no float64 vector over all the parts
    blocks = ExampleChunks(structure, batch, max_parts=NARROW_START_BLOCK_PARTS)
    for sub, parts, units in blocks:
        mu[parts] = structure.encode(sub, datafit.Y[units])
        theta[parts] = -TRUTH_LOGIT * datafit.part_losses[parts]
        del sub
    terms = (datafit.expected_losses(mu) if datafit.kind == "hinge"
             else np.zeros(datafit.n_samples))
    return EGState(theta=theta, mu=mu, terms=terms, etas=np.full(datafit.n_samples, float(eta0)),
                   eta=float(eta0), part_offsets=batch.part_offsets.copy())


def _rounded(values, dtype):
    """Float64 ``values`` rounded to ``dtype`` and back, in place, a block at a time."""
    for start in range(0, len(values), DOT_BLOCK_PARTS):
        block = slice(start, start + DOT_BLOCK_PARTS)
        values[block] = values[block].astype(dtype)
    return values


#: The dtypes a dual state's ``theta`` and ``mu`` may have.  float32 halves the memory of
#: a fit that holds one float per part in each (a chain's ``K * K`` transition parts per
#: sentence make them the largest arrays of a tagging fit): the online epoch works on the
#: rounded values (``_eg_kernels._stored``), so that ``w`` stays ``w(alpha)`` of the stored
#: marginals and the duality gap it reports stays that of the stored state.
DUAL_DTYPES = (np.float64, np.float32)


def check_dual_dtype(dtype):
    """``dtype`` as a numpy dtype of :data:`DUAL_DTYPES`; a clear error otherwise."""
    try:
        resolved = np.dtype(dtype)
    except TypeError:
        resolved = None
    if resolved is None or resolved not in [np.dtype(d) for d in DUAL_DTYPES]:
        raise ValueError(f"dual_dtype must be numpy.float64 or numpy.float32, got {dtype!r}.")
    return resolved.type


def attach_state(datafit, state, C, expected=None, point_masses=False):
    """Make a (possibly warm) state consistent with this datafit and ``C``.

    The marginals and entropies depend on ``theta`` alone, so a warm start
    only rebuilds ``w`` (one product with the feature map, no inference) and,
    for the hinge, the expected losses under the current labels (and, smoothed,
    the entropies, from one inference per example).  ``expected``: ``F mu`` of
    the state's marginals, when known (see :func:`dual_weights`).
    ``point_masses``: the state is :func:`truth_state`'s, whose terms are exact already
    (its entropies are 0).
    """
    hinge_terms = datafit.kind == "hinge" and not point_masses
    if hinge_terms and state.mu is not None:  # (None: on batch EG's chunks,
        state.terms = datafit.expected_losses(state.mu)  # which computed the terms)
    if hinge_terms and state.beta is not None:
        mu, log_partition = batch_marginals(datafit.structure, datafit.chunks, state.theta)
        state.terms += dual_terms("log", mu, log_partition, state.theta, None,
                                  datafit.batch.part_offsets) / state.beta
    state.w = dual_weights(datafit, state.mu, C, expected)
    state.C = C


def example_gaps(datafit, state, C, losses, margins):
    """Every example's share of the duality gap, ``C s_i (loss_i(w) + margin_i - term_i)``.

    ``losses`` and ``margins`` are the losses and expected margins under the
    state's marginals (:func:`example_losses` with ``margins_of``) at the ``w``
    whose primal was evaluated, ``term_i`` the example's dual term.  Each share
    is at least 0 at any ``w``: ``C s_i KL(alpha_i || p_w(. | x_i))`` for the log
    loss, the Frank-Wolfe gap of example ``i``'s block for the hinge (the
    loss-augmented maximum against its mean under ``alpha_i``); at ``w =
    w(alpha)`` they sum to ``P(w) - D(alpha)``.
    """
    if datafit.kind == "log":
        terms = state.terms
    else:  # the hinge's expected losses, without the smoothing's entropies
        terms = datafit.expected_losses(state.mu) + datafit.loss_offsets
    return np.maximum(C * datafit.sample_weight * (losses + margins - terms), 0.0)


def hinge_dual(datafit, state, C):
    """The hinge dual and the smoothing's entropy term ``C sum_i s_i H_i / beta``."""
    if state.beta is None:  # unsmoothed: the dual terms are the expected losses
        return l2_dual(datafit, state.terms, state.w, C), 0.0
    expected = datafit.expected_losses(state.mu)
    entropy_term = (C * float(datafit.sample_weight @ (state.terms - expected))
                    if state.beta is not None else 0.0)
    return l2_dual(datafit, expected, state.w, C), entropy_term


def sharpened_rates(etas, growth):
    """Per-example rates of the smoothed hinge after ``beta`` grows by ``growth``.

    A rate limited by the curvature of ``||w||^2`` against the entropy's,
    ``kappa_i = C s_i beta ||F_i||^2`` in the model ``eta_i = 1 / (1 + kappa_i)``,
    becomes ``1 / (1 + growth kappa_i) = eta_i / (growth - (growth - 1) eta_i)``;
    a rate of 1 or more (no such limit) stays.  Without this, every example
    spends one rejected step per sharpening; the step rule's model regrows a
    rate that was not limited.
    """
    return etas / (growth - (growth - 1.0) * np.minimum(etas, 1.0))


# ------------------------------------------------- incremental fits (partial_fit)
def last_examples_state(state, first):
    """The dual variables of the examples ``first, first + 1, ...`` of ``state``.

    What ``partial_fit`` keeps of its last problem (the examples it revisits with
    the next chunk); ``w`` is rebuilt by :func:`attach_state` with the next datafit.
    """
    start = int(state.part_offsets[first])
    return EGState(
        theta=state.theta[start:].copy(), mu=state.mu[start:].copy(),
        terms=state.terms[first:].copy(), etas=state.etas[first:].copy(), eta=state.eta,
        part_offsets=state.part_offsets[first:] - start, beta=state.beta)


def joined_states(kept, new):
    """The dual variables of the examples of ``kept`` followed by those of ``new``.

    ``kept``'s inverse temperature (smoothed hinge) and global rate carry on.
    """
    return EGState(
        theta=np.concatenate([kept.theta, new.theta]), mu=np.concatenate([kept.mu, new.mu]),
        terms=np.concatenate([kept.terms, new.terms]),
        etas=np.concatenate([kept.etas, new.etas]), eta=kept.eta,
        part_offsets=np.concatenate([kept.part_offsets[:-1],
                                     kept.part_offsets[-1] + new.part_offsets]),
        beta=kept.beta)
