"""Learning from partially labelled outputs by alternation: EM (log loss) and CCCP (hinge).

A partial label restricts example ``i`` to the outputs ``Y_i`` consistent with
what is known of its target; the restriction is a part-score vector
``constraint_scores`` (0 on allowed parts, ``-inf`` on forbidden ones), so that
the structure's own inference on ``scores + constraint_scores`` gives the
*constrained* marginals, log-partition ``log Z_i^c(w)`` and argmax.  No
operation is added to the structure.

Log loss (latent-variable CRF, Tsuboi et al., COLING 2008)::

    J(w) = 1/2 ||w||^2 + C sum_i s_i [log Z_i(w) - log Z_i^c(w)]

is not convex.  EM alternates an E-step, the constrained marginals ``q_i``
under the current ``w``, and an M-step, the convex CRF whose targets are the
expected encodings ``q_i`` (``log Z_i(w) - w . F q_i``), solved by EG
(:func:`~sklearn_struct.solvers.eg.eg_solve` with ``truth=q``), each from an
annealed cold start (see ``WARM_START_LOG``).  Since ``log Z_i^c(w) >= w . F q_i +
H(q_i)`` with equality at the ``w`` that gave ``q_i``, an M-step that lowers its
own objective lowers ``J``.

Hinge (latent structured SVM, Yu and Joachims, ICML 2009)::

    J(w) = 1/2 ||w||^2 + C sum_i s_i [max_y (D_i(y) + w . phi(x_i, y))
                                      - max_{h in Y_i} w . phi(x_i, h)]

with ``D_i`` the structure's loss against the first imputation ``h_i^0``
counted on the forbidden parts only (on a chain, the Hamming loss of the units
whose label is known; 0 on unknown units), which does not depend on the later
imputations.  (``Y`` is an output consistent with the partial labels; ``h_i^0`` is the
best one under the first imputation's scores.)
CCCP imputes ``h_i``, the constrained argmax under the current ``w`` (the
concave part linearised), and solves the convex structured SVM whose truth is
``h_i``; ``J`` does not increase.

The start: at ``w = 0`` every consistent output is equally good, and EM's first
E-step is uniform over them (an unknown token as likely an entity as not).  The
first E-step (imputation) instead runs on ``start_scores``, part scores that
describe the known labels, e.g. the log of each label's frequency among the
units whose label is known (the output space's ``partial_label_start``): EM
then starts from ``q_i`` proportional to ``exp(start . z)`` over the consistent
outputs ``z``.  Any such ``q_i`` bounds ``log Z_i^c(w) >= w . F q_i + H(q_i)``,
with ``H(q_i) = log Z_i^s - start . q_i`` (``Z_i^s`` the start's constrained
partition function), so the first M-step's own objective at ``w = 0`` (which
is at least ``J(0)``) is the bound that step must lower, and ``J`` decreases
from the first step on.

The convex steps start inexact (``INITIAL_INNER_TOL``) and tighten as ``J``
settles; a step whose solution would raise ``J`` is solved further (its dual
variables kept) at a tighter tolerance, and only once solved to ``tol`` (or
after ``MAX_RETRIES`` tries) is its solution refused.  Every outer step
records ``J`` at its end; the loop stops when ``J`` decreases by less than
``tol * |J|``, or when a convex step solved to ``tol`` would raise ``J``, or
after ``max_outer_iter`` steps.
Nothing here knows scikit-learn.
"""

import time
from dataclasses import dataclass, field

import numpy as np

from ._objective import segment_sums
from .eg import eg_solve

__all__ = ["LatentResult", "latent_objective", "latent_solve"]

#: The convex steps are solved inexactly at first (a generalised EM / CCCP): the first to
#: a relative duality gap of ``INITIAL_INNER_TOL``, each next one to ``INNER_TOL_SHARE``
#: times the last decrease of ``J`` relative to the next convex objective (never looser
#: than before, never tighter than ``tol``).  A step whose solution would raise ``J`` is
#: solved further (its dual variables kept) at a tenth of its tolerance, or with another
#: ``max_iter`` passes when it stopped short of ``tol``, at most ``MAX_RETRIES`` times in a row.
INITIAL_INNER_TOL = 0.1
INNER_TOL_SHARE = 0.1
MAX_RETRIES = 5
#: Whether an M-step of the latent CRF starts from the last one's dual variables.  It does
#: not: its weights ``w(alpha) = C sum_i s_i F (q_i - mu_i)`` jump by ``C F (q_new - q_old)``
#: when the targets change, and on 2000 CoNLL-2000 sentences (C = 5, 30% of the labels
#: unknown) the second warm M-step was still at a relative gap of 0.6 after 50 passes (and
#: raised J), where an annealed cold start converges in 20 to 50 passes.  The hinge's
#: imputations change few labels, and CCCP's steps do start warm.
WARM_START_LOG = False


@dataclass
class LatentResult:
    """What :func:`latent_solve` returns.

    ``weights``: the final weights; ``inner``: the last convex step's
    :class:`~sklearn_struct.solvers.eg.EGResult` (its state, objectives and
    passes); ``history``: one entry per outer step (the first at ``w = 0``);
    ``n_iter``: the EG passes (epochs) of every convex step, retries included;
    ``n_steps``: outer steps taken; ``converged``: whether ``J`` stopped
    decreasing before ``max_outer_iter``.
    """

    weights: np.ndarray
    inner: object = None
    history: dict = field(default_factory=dict)
    n_iter: int = 0
    n_steps: int = 0
    converged: bool = False


def _consistent(structure, batch, scores, constraint_scores, loss, extra=None):
    """The E-step (log) or the imputation (hinge) at ``scores``.

    Returns ``(target, value, labels)``: the target part vector (constrained
    marginals, or the encoding of the constrained argmax), the constrained
    value of every example (``log Z_i^c``, or the best consistent score), and
    the constrained argmax's labels (hinge; None for the log loss).  ``extra``:
    scores added for this inference only (a tie-break at ``w = 0``).
    """
    restricted = scores + constraint_scores
    if extra is not None:
        restricted = restricted + extra
    if loss == "log":
        target, log_z = structure.marginals(batch, restricted)
        if extra is not None:  # the value at the scores themselves
            log_z = structure.log_partition(batch, scores + constraint_scores)
        return target, log_z, None
    labels = structure.argmax(batch, restricted)
    target = structure.encode(batch, labels)
    return target, segment_sums(scores * target, batch.part_offsets), labels


def _unconstrained(structure, batch, scores, loss, part_losses):
    """``log Z_i(w)``, or ``max_y D_i(y) + w . phi(x_i, y)``, of every example."""
    if loss == "log":
        return structure.log_partition(batch, scores)
    augmented = scores + part_losses
    worst = structure.encode(batch, structure.argmax(batch, augmented))
    return segment_sums(augmented * worst, batch.part_offsets)


def known_part_losses(structure, batch, Y, constraint_scores):
    """The latent hinge's part losses: the structure's, on the forbidden parts only.

    ``Y``: an output consistent with the partial labels (the first imputation).
    On a chain these are the part losses of the units whose label is known; an
    unknown unit costs nothing whatever its label.
    """
    return structure.part_losses(batch, Y) * np.isinf(constraint_scores)


def latent_objective(structure, batch, w, constraint_scores, *, loss, C, sample_weight=None,
                     part_losses=None):
    """``J(w)`` of the module docstring (``part_losses``: the hinge's, see
    :func:`known_part_losses`).

    Parameters
    ----------
    structure : BaseStructure
        Must support ``part_scores``, ``marginals`` or ``argmax`` and ``log_partition``.
    batch : batch of ``structure``
    w : ndarray of shape (n_weights,)
    constraint_scores : ndarray of shape (n_parts_total,)
        0 on allowed parts, ``-inf`` on forbidden ones.
    loss : {"log", "hinge"}
    C : float
    sample_weight : ndarray of shape (n_samples,), optional
    part_losses : ndarray of shape (n_parts_total,), optional
        Required for the hinge.

    Returns
    -------
    objective : float
    """
    s = np.ones(batch.n_samples) if sample_weight is None else sample_weight
    scores = structure.part_scores(batch, w)
    _, value, _ = _consistent(structure, batch, scores, constraint_scores, loss)
    full = _unconstrained(structure, batch, scores, loss, part_losses)
    return 0.5 * float(w @ w) + C * float(s @ (full - value))


def latent_solve(structure, batch, Y, constraint_scores, *, loss="log", C=1.0,
                 sample_weight=None, start_scores=None, max_outer_iter=30, tol=1e-4, verbose=0,
                 callback=None, **eg_arguments):
    """Minimise the latent objective ``J(w)`` by EM (log loss) or CCCP (hinge), EG inside.

    Parameters
    ----------
    structure : BaseStructure
        The structure learning runs its inference on (``part_scores``,
        ``marginals``, ``log_partition``, ``argmax``, ``encode``, ``part_losses``
        and the online EG's kernel operations).
    batch : batch of ``structure``
    Y : ndarray of int64 of shape (n_units_total,)
        Encoded outputs consistent with the partial labels (an output of the
        structure, whose loss EG may read).
    constraint_scores : ndarray of shape (n_parts_total,)
        0 on the parts consistent with the partial labels, ``-inf`` elsewhere;
        every example must keep a consistent output.
    loss : {"log", "hinge"}
    C : float > 0
    sample_weight : ndarray of shape (n_samples,), optional
    start_scores : ndarray of shape (n_parts_total,), optional
        Part scores added to the first E-step (log loss) or imputation (hinge)
        only, at ``w = 0`` (e.g. the log-frequency of each label among the
        known units; see the module docstring).  None: the exact E-step at
        ``w = 0`` (uniform over the consistent outputs), or the structure's
        own tie-break among the consistent outputs.
    max_outer_iter : int
        Outer steps (E-steps or imputations, each followed by one EG solve).
    tol : float
        The last convex steps' relative duality gap (the first ones looser, see
        ``INITIAL_INNER_TOL``), and the outer stopping rule: ``J`` decreased by
        less than ``tol * |J|``.
    verbose : int
        One line per outer step (and the EG solves' own lines when above 1).
    callback : callable, optional
        Passed on to every EG solve (``callback(pass, state)``).
    **eg_arguments
        Passed on to :func:`~sklearn_struct.solvers.eg.eg_solve` (``solver``
        must be ``"online"``).

    Returns
    -------
    LatentResult
    """
    s = np.ones(batch.n_samples) if sample_weight is None else np.asarray(sample_weight)
    w = np.zeros(batch.n_weights)
    start = time.perf_counter()
    scores = structure.part_scores(batch, w)
    target, value, labels = _consistent(structure, batch, scores, constraint_scores, loss,
                                        start_scores)
    losses = (known_part_losses(structure, batch, labels, constraint_scores) if loss == "hinge"
              else None)
    full = _unconstrained(structure, batch, scores, loss, losses)
    objective = C * float(s @ (full - value))
    bound = objective  # what the first convex step must lower
    if loss == "log" and start_scores is not None:  # J(0) plus the start's entropy deficit
        start_log_z = structure.log_partition(batch, constraint_scores + start_scores)
        entropy = start_log_z - segment_sums(start_scores * target, batch.part_offsets)
        bound = C * float(s @ (full - entropy))
    history = {k: [] for k in ("objective", "primal", "dual", "gap", "passes", "seconds")}

    def record(objective, primal, dual, passes, seconds):
        for key, v in (("objective", objective), ("primal", primal), ("dual", dual),
                       ("gap", primal - dual), ("passes", passes), ("seconds", seconds)):
            history[key].append(v)
        if verbose:
            print(f"[latent {loss}] step {len(history['objective']) - 1:3d}  "
                  f"objective={objective:.8g}  inner primal={primal:.8g}  passes={passes:.1f}  "
                  f"({seconds:.2f}s)")

    record(objective, np.nan, np.nan, 0.0, time.perf_counter() - start)
    state, inner, passes, converged = None, None, 0.0, False
    inner_tol, retries = max(tol, INITIAL_INNER_TOL), 0
    step = epochs = 0
    while step < max_outer_iter:
        step += 1
        start = time.perf_counter()
        result = eg_solve(structure, batch, Y if labels is None else labels, loss=loss, C=C,
                          sample_weight=sample_weight, truth=target, part_losses=losses,
                          state=state, keep_dual=True, verbose=max(verbose - 1, 0),
                          callback=callback, tol=inner_tol, **eg_arguments)
        passes += float(result.history["passes"][-1]) if len(result.history["passes"]) else 0.0
        epochs += result.n_iter
        w_new = result.state.primal_weights.copy()
        scores_new = structure.part_scores(batch, w_new)
        target_new, value_new, labels_new = _consistent(structure, batch, scores_new,
                                                        constraint_scores, loss)
        full_new = _unconstrained(structure, batch, scores_new, loss, losses)
        objective_new = 0.5 * float(w_new @ w_new) + C * float(s @ (full_new - value_new))
        state = result.state  # the same convex step goes on from its dual variables
        if objective_new > (bound if step == 1 else objective):  # an inexact step that did
            # not help: keep w
            step -= 1
            if (inner_tol > tol or not result.converged) and retries < MAX_RETRIES:
                inner_tol, retries = max(tol, inner_tol / 10), retries + 1  # solve it further
                continue
            converged = True
            break
        inner, retries = result, 0
        if loss == "log" and not WARM_START_LOG:  # the next M-step starts cold (annealed)
            state = None
        w, target, labels, previous, objective = (w_new, target_new, labels_new,
                                                  bound if step == 1 else objective,
                                                  objective_new)
        record(objective, float(result.history["primal"][-1]),
               float(result.history["dual"][-1]), passes, time.perf_counter() - start)
        if previous - objective <= tol * abs(objective):
            converged = True
            break
        # the next convex objective at the current w (J plus, log loss, the targets' entropies)
        current = 0.5 * float(w @ w) + C * float(s @ (full_new - segment_sums(
            scores_new * target, batch.part_offsets)))
        inner_tol = min(inner_tol, max(tol, INNER_TOL_SHARE * (previous - objective)
                                       / max(abs(current), 1e-300)))
    return LatentResult(weights=w, inner=inner,
                        history={k: np.asarray(v) for k, v in history.items()},
                        n_iter=epochs, n_steps=step, converged=converged)
