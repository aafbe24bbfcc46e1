"""What :class:`~sklearn_struct.EGCRF` and :class:`~sklearn_struct.EGStructuredSVM` share.

:class:`_BaseEG` holds their parameters' validation, ``fit`` (with partial labels through
:mod:`sklearn_struct.solvers.latent`) and ``partial_fit`` (a proximal step over the new
examples and the last ``partial_fit_memory`` ones, whose dual variables it keeps); the
estimators in :mod:`sklearn_struct.eg` add their loss and its documentation.
"""

import os
import warnings
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.metaestimators import available_if

from ._early_stopping import EARLY_STOPPING_CONSTRAINTS, EarlyStopping
from .base import STRUCTURE_CONSTRAINT, StructuredEstimator, as_history, restored_on_failure
from .solvers._eg_dual import dual_weights, last_examples_state
from .solvers.eg import EGState, check_cache_dir, eg_solve, new_examples_state
from .solvers.latent import latent_solve
from .solvers.loss import StructuredLoss


@dataclass
class _PartialFitKept:
    """What ``partial_fit`` keeps between calls.

    ``center``: the weights of every example no longer kept (their dual
    variables frozen inside it), the center of the next call's proximal step;
    ``X``, ``Y``, ``sample_weight`` and ``state``: the inputs, encoded outputs,
    weights and dual variables of the examples kept, revisited with the next
    chunk (``X`` None when none is kept; ``state`` None for the hinge, see
    ``_BaseEG._kept_after``).
    """

    center: np.ndarray
    X: object = None
    Y: np.ndarray = None
    sample_weight: np.ndarray = None
    state: EGState = None


def _stacked(first, second):
    """The examples of ``first`` followed by those of ``second`` (tables or lists)."""
    if first is None:
        return second
    if isinstance(first, list):
        return first + list(second)
    if sp.issparse(first) or sp.issparse(second):
        return sp.vstack([sp.csr_matrix(first), sp.csr_matrix(second)], format="csr")
    return np.vstack([first, second])


class _BaseEG(StructuredEstimator):
    """Shared parameters and ``fit`` of the EG estimators (the rest: the base class)."""

    _loss = None

    _parameter_constraints = {
        "C": [Interval(Real, 0, None, closed="neither")],
        "structure": STRUCTURE_CONSTRAINT,
        "solver": [StrOptions({"online", "batch"})],
        "order": [StrOptions({"random", "shuffle", "cyclic", "gap"})],
        "learning_rate": [StrOptions({"adaptive"}), Interval(Real, 0, None, closed="neither")],
        "eta0": [Interval(Real, 0, None, closed="neither")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Real, 0, None, closed="neither")],
        **EARLY_STOPPING_CONSTRAINTS,
        "warm_start": ["boolean"],
        "annealing": ["boolean"],
        "partial_fit_memory": [None, Interval(Integral, 0, None, closed="left")],
        "max_latent_iter": [Interval(Integral, 1, None, closed="left")],
        "class_weight": [None, dict, StrOptions({"balanced"})],
        "n_jobs": [None, Integral],
        "cache_size": [None, Interval(Real, 0, None, closed="neither")],
        "cache_dir": [None, str, os.PathLike],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(
        self, *, C=1.0, structure=None, solver="online", order="gap",
        learning_rate="adaptive", eta0=0.5, tol=1e-4, max_iter=100, early_stopping=False,
        validation_fraction=0.1, n_iter_no_change=5, class_weight=None, warm_start=False,
        annealing=True, partial_fit_memory=1000, max_latent_iter=30, n_jobs=None,
        cache_size=None, cache_dir=None, random_state=None, verbose=0,
    ):
        self.C = C
        self.structure = structure
        self.solver = solver
        self.order = order
        self.learning_rate = learning_rate
        self.eta0 = eta0
        self.tol = tol
        self.max_iter = max_iter
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.class_weight = class_weight
        self.warm_start = warm_start
        self.annealing = annealing
        self.partial_fit_memory = partial_fit_memory
        self.max_latent_iter = max_latent_iter
        self.n_jobs = n_jobs
        self.cache_size = cache_size
        self.cache_dir = cache_dir
        self.random_state = random_state
        self.verbose = verbose

    def _operations_needed(self, structure):
        needed = ("part_scores", "expected_features", "encode", "part_losses", "argmax")
        if self.solver != "working_set":
            needed += ("marginals",)
        return needed + (("loss_augmented_argmax",) if self._loss == "hinge" else ())

    def _state_kind(self):
        return "working_set" if self.solver == "working_set" else "eg"

    def _smoothing(self):
        """Whether EG anneals the hinge's temperature (the log loss has none)."""
        return False

    def _start(self):
        """A cold fit's dual point (``eg_solve``'s ``start``)."""
        return "uniform"

    def _check_solver_arguments(self):
        """Refuse, before any work, a cache folder that cannot be written, a cache bound
        that the solver cannot keep, and a start that it cannot make."""
        check_cache_dir(self.cache_dir)
        if self._start() == "truth" and self.solver != "online":
            raise ValueError(f"{type(self).__name__}: start='truth' needs solver='online' "
                             f"(solver={self.solver!r} starts from the uniform distributions).")
        if isinstance(self.cache_size, (bool, np.bool_)):  # (a Real to scikit-learn)
            raise TypeError(f"{type(self).__name__}: cache_size must be a number of megabytes "
                            f"or None, got {self.cache_size!r}.")
        if self.cache_size is not None and self.solver == "working_set":
            raise ValueError(f"{type(self).__name__}: cache_size bounds the online solver's "
                             "feature cache; solver='working_set' keeps its whole cache in "
                             "memory. Use solver='online', or cache_size=None.")

    def _cache_arguments(self):
        """Where the online EG solver keeps its kernel data (see ``cache_size``)."""
        return dict(cache_size=self.cache_size, cache_dir=self.cache_dir)

    def _solver_arguments(self, sample_weight, state, callback):
        """The arguments every solver of ``fit`` takes."""
        return dict(C=float(self.C), sample_weight=sample_weight, tol=self.tol, state=state,
                    random_state=check_random_state(self.random_state),
                    verbose=self.verbose, callback=callback)

    def _solve(self, batch, Y, sample_weight, state, callback):
        """The solver's result (an ``EGResult``) for ``fit``."""
        return eg_solve(
            self.structure_.output_space().training_structure(), batch, Y, loss=self._loss,
            solver=self.solver, order=self.order, learning_rate=self.learning_rate,
            eta0=self.eta0, max_iter=self.max_iter, annealing=self.annealing,
            start=self._start(), smoothing=self._smoothing(), n_jobs=self.n_jobs,
            keep_dual=bool(self.warm_start), **self._cache_arguments(),
            **self._solver_arguments(sample_weight, state, callback))

    @restored_on_failure
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None, callback=None, X_val=None, y_val=None):
        """Fit the model on the dual of its objective (see the class and ``solver``).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features), or list
            of arrays / sparse matrices of shape (T_i, n_features)
            Flat samples (multiclass), or one feature matrix per sequence with
            one row per token (chain).
        y : array-like of shape (n_samples,), or list of array-like of shape (T_i,)
            Labels of any hashable type (one kind: all strings, all numbers, ...).
            Sequences may be partially labelled: an entry ``None`` is an unknown
            label, a ``set`` (or ``frozenset``) of labels the labels allowed
            there; the fit then marginalises (CRF, by EM) or imputes (SVM, by
            CCCP) the outputs consistent with them (see ``max_latent_iter`` and
            :ref:`partial_labels`).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weight of each example's loss term.
        callback : callable, default=None
            Called after every pass as ``callback(pass_number, estimator)``,
            the estimator holding the weights of that pass (so that
            ``estimator.predict`` or ``score`` on a development set work);
            its return value is ignored.  Training does not depend on it.
        X_val : list or array-like, default=None
            Validation inputs for ``early_stopping``, in the form of ``X``
            (instead of holding out ``validation_fraction`` of ``X``).
        y_val : list or array-like, default=None
            Their outputs, fully labelled.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        self._check_solver_arguments()
        batch, Y, sample_weight, constraint_scores = self._validate_fit_data(
            X, y, sample_weight, partial=True)
        if constraint_scores is not None and self.class_weight is not None:
            raise ValueError(f"{type(self).__name__}.fit: class_weight weighs an example by its "
                             "units' labels, which partial labels (None or sets in y) leave "
                             "unknown; give full labels, or weigh examples with sample_weight.")
        sample_weight = self._weighted_by_class(batch, Y, sample_weight)
        if constraint_scores is not None:
            EarlyStopping.refuse_partial_labels(self, X_val)
            on_pass = self._pass_callback(callback, batch, lambda state: state.primal_weights)
            return self._fit_partial_labels(batch, Y, sample_weight, constraint_scores, on_pass)
        batch, Y, sample_weight, stopping = EarlyStopping.split(self, batch, Y, sample_weight,
                                                                X_val, y_val)
        on_pass = self._pass_callback(callback, batch, lambda state: state.primal_weights,
                                      stopping)
        self.__dict__.pop("latent_objective_", None)
        state = None
        previous = self.__dict__.get("_dual_state") if self.warm_start else None
        # (classes_ is None for outputs that are not labels; the working-set solver keeps
        # dual variables of its own, the EG solvers share theirs)
        if (previous is not None and np.array_equal(self._dual_state_classes, self.classes_)
                and self.__dict__.get("_dual_state_kind") == self._state_kind()):
            state = previous
        result = self._solve(batch, Y, sample_weight, state, on_pass)
        self._set_fit_results(batch, result)
        EarlyStopping.finish(self, stopping, batch)
        self.__dict__.pop("_partial_fit_kept", None)  # a later partial_fit starts from here
        # the dual variables are as large as the training set: kept only for warm starts
        self._dual_state = result.state if self.warm_start else None
        self._dual_state_classes = self.classes_
        self._dual_state_kind = self._state_kind()
        if not result.converged and (stopping is None or not stopping.stopped):
            passes = "oracle passes" if self.solver == "working_set" else "effective passes"
            warnings.warn(
                f"{type(self).__name__} did not reach the relative duality gap tol={self.tol} "
                f"within max_iter={self.max_iter} {passes} (relative gap "
                f"{self.duality_gap_ / abs(self.primal_objective_):.3g}); "
                f"{self._convergence_advice()}.",
                ConvergenceWarning,
            )
        return self

    def _convergence_advice(self):
        """What the warning of a fit stopped by ``max_iter`` advises."""
        return "increase max_iter"

    def _fit_partial_labels(self, batch, Y, sample_weight, constraint_scores, on_pass):
        """``fit`` on partially labelled targets: EM (log loss) or CCCP (hinge), EG inside."""
        name = type(self).__name__
        if self.solver != "online":
            raise ValueError(f"{name}: partial labels (None or sets of labels in y) are learnt "
                             f"with solver='online' only; got solver={self.solver!r}.")
        # the first E-step or imputation: the known labels' frequencies, not w = 0's uniform
        space = self.structure_.output_space()
        start_scores = space.partial_label_start(batch, constraint_scores)
        result = latent_solve(
            space.training_structure(), batch, Y, constraint_scores, loss=self._loss,
            C=float(self.C), sample_weight=sample_weight, start_scores=start_scores,
            max_outer_iter=self.max_latent_iter, tol=self.tol, verbose=self.verbose,
            callback=on_pass, solver="online", order=self.order,
            learning_rate=self.learning_rate, eta0=self.eta0, max_iter=self.max_iter,
            annealing=self.annealing, smoothing=self._smoothing(), n_jobs=self.n_jobs,
            random_state=check_random_state(self.random_state), **self._cache_arguments())
        self._set_weights(batch, result.weights)
        self.n_iter_ = result.n_iter
        self.history_ = as_history(result.history)
        self.latent_objective_ = float(self.history_["objective"][-1])
        inner = result.inner.history if result.inner is not None else None
        self.primal_objective_ = float(inner["primal"][-1]) if inner else np.nan
        self.dual_objective_ = float(inner["dual"][-1]) if inner else np.nan
        self.duality_gap_ = self.primal_objective_ - self.dual_objective_
        self.__dict__.pop("_partial_fit_kept", None)
        self._dual_state = None
        if not result.converged:
            warnings.warn(
                f"{name}: the latent objective was still decreasing after "
                f"max_latent_iter={self.max_latent_iter} outer steps; increase max_latent_iter.",
                ConvergenceWarning)
        return self

    def _set_fit_results(self, batch, result):
        """The weights, passes, history and objectives of a solver's result."""
        self._set_weights(batch, result.state.primal_weights)
        self.n_iter_ = result.n_iter
        self.history_ = as_history(result.history)
        self.primal_objective_ = float(self.history_["primal"][-1])
        self.dual_objective_ = float(self.history_["dual"][-1])
        self.duality_gap_ = self.primal_objective_ - self.dual_objective_

    def _has_dual_variables(self):
        """Whether the solver is EG's, whose dual variables ``partial_fit`` keeps."""
        return self.solver != "working_set"

    @available_if(_has_dual_variables)
    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Learn from a chunk of new examples, keeping what was learnt before.

        Each call solves the proximal step ``argmin_w 1/2 ||w - v||^2 + C sum_i
        s_i loss_i(w)`` over the new examples and the last
        ``partial_fit_memory`` examples of earlier calls, ``v`` holding the
        weights of every older example (zero before the first call, the
        fitted weights after ``fit``), by EG on its dual to ``tol`` within
        ``max_iter`` passes (over the new and the kept examples), the new
        examples' dual variables starting near the truth (``w = v``) and
        those of the kept examples where the last call left them (for the
        hinge, near the truth too: its distributions end on the simplex's
        boundary, a start EG crawls from); ``C`` is not annealed.  This is
        exact block-coordinate ascent on the dual of the objective over every
        example seen, the dual variables of the examples no longer kept frozen
        (see :ref:`partial_fit`): with ``partial_fit_memory=None`` (every
        example kept) the calls over the chunks of a data set give ``fit``'s
        solution on it; with 0 each call is the proximal step from the last
        weights.  Every call adds its examples to the objective: an example
        given twice counts twice.
        ``history_``, ``duality_gap_`` and the objectives are those of the
        call's proximal problem; no ``ConvergenceWarning`` is raised.  Only
        for the EG solvers (``solver="online"`` or ``"batch"``).  ``cache_size``
        and ``cache_dir`` bound the online solver's cache of a call's examples (the
        chunk and the kept ones) as they bound ``fit``'s.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features), or list
            of arrays / sparse matrices of shape (T_i, n_features)
            New examples, in the form of the first call (flat samples or one
            feature matrix per sequence) with as many features.
        y : array-like of shape (n_samples,), or list of array-like of shape (T_i,)
            Their labels, all among ``classes_``.
        classes : array-like of shape (n_classes,), default=None
            Every label the model will ever see.  Required on the first call
            when the outputs are labels (flat samples, labelled tokens), as
            for scikit-learn's incremental classifiers; later calls may omit
            it, or must give the same labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weight of each new example's loss term.

        Returns
        -------
        self : object
            The estimator, fitted on everything seen so far.
        """
        fitted = "weights_" in self.__dict__
        self._check_solver_arguments()
        X, batch, Y, sample_weight = self._validate_partial_fit_data(X, y, classes,
                                                                     sample_weight)
        sample_weight = self._weighted_by_class(batch, Y, sample_weight, balanced=False)
        structure = self.structure_.output_space().training_structure()
        if not self._table_input:
            X = list(X)
        if sample_weight is None:
            sample_weight = np.ones(batch.n_samples)
        kept = self.__dict__.get("_partial_fit_kept")
        if kept is None:
            kept = _PartialFitKept(center=self.weights_.copy() if fitted
                                   else np.zeros(batch.n_weights))
        C = float(self.C)
        smoothing = self._smoothing() and self.solver == "online"
        starting = (batch, Y, sample_weight)  # the examples whose duals start near the truth
        if kept.X is not None:  # the kept examples come first
            X = _stacked(kept.X, X)
            Y = np.concatenate([kept.Y, Y])
            sample_weight = np.concatenate([kept.sample_weight, sample_weight])
            batch = self.structure_.make_batch(X, n_states=self._codec.n_states)
        if kept.state is None:  # (the hinge's kept examples: see _kept_after)
            starting = (batch, Y, sample_weight)
        state = new_examples_state(structure, starting[0], starting[1], loss=self._loss, C=C,
                                   sample_weight=starting[2], eta0=self.eta0,
                                   smoothing=smoothing, kept=kept.state)
        result = eg_solve(
            structure, batch, Y, loss=self._loss, solver=self.solver, order=self.order,
            learning_rate=self.learning_rate, eta0=self.eta0, max_iter=self.max_iter,
            smoothing=smoothing, n_jobs=self.n_jobs, center=kept.center,
            **self._cache_arguments(), **self._solver_arguments(sample_weight, state, None))
        self._set_fit_results(batch, result)
        self._partial_fit_kept = self._kept_after(structure, batch, X, Y, sample_weight,
                                                  result.state, kept.center)
        self._dual_state = None  # fit's warm start does not follow partial_fit
        return self

    def _kept_after(self, structure, batch, X, Y, sample_weight, state, center):
        """The last ``partial_fit_memory`` examples and their dual variables; the weights of
        the others folded into the center.

        The hinge's kept examples keep no dual variables: the next call starts them near
        the truth with its new examples (and the smoothing's temperature afresh).  The
        hinge's optimum lies on the simplex's boundary, so its EG steps drive ``theta``
        without bound (the plain hinge's add to it; the smoothing's ``beta`` grows to
        thousands): after a call the distributions give ``exp(-1000)`` and less to
        outputs that the next call's optimum, moved by its new examples, needs, and EG
        crawls back from there.  On 15 sequences in three chunks (``C=0.5``), the third
        call of online EG kept a relative gap of 2e-3 after 1000 passes, where ``fit``
        reaches 1e-4 in 407; on 40 samples, batch EG's 3e-4 after 3000, where ``fit``
        takes 82 and a start near the truth, within ``TRUTH_LOGIT`` nats of every output,
        102.  The log loss's optimum is interior, and its kept distributions a good start.
        """
        n = batch.n_samples
        n_kept = n if self.partial_fit_memory is None else min(n, self.partial_fit_memory)
        n_dropped = n - n_kept
        if n_dropped:
            units = int(batch.unit_offsets[n_dropped])
            dropped = StructuredLoss(structure, structure.take(batch, np.arange(n_dropped)),
                                     Y[:units], self._loss, sample_weight[:n_dropped])
            center = center + dual_weights(
                dropped, state.mu[:int(state.part_offsets[n_dropped])], float(self.C))
        if n_kept == 0:
            return _PartialFitKept(center=center)
        units = int(batch.unit_offsets[n_dropped])
        return _PartialFitKept(
            center=center, X=X[n_dropped:], Y=Y[units:],
            sample_weight=sample_weight[n_dropped:],
            state=None if self._loss == "hinge" else last_examples_state(state, n_dropped))
