"""CRFs and max-margin Markov networks trained by exponentiated gradient.

:class:`EGCRF` (regularised log-likelihood) and :class:`EGStructuredSVM`
(structured hinge loss) minimise ``1/2 ||w||^2 + C sum_i s_i loss_i(w)`` by the
exponentiated-gradient algorithms of Collins et al. (JMLR 2008) on the dual;
:func:`eg_path` fits a warm-started sequence of ``C`` values (section 7.1.2).
The mathematics lives in :mod:`sklearn_struct.solvers.eg`.
"""

import copy
import os
import warnings
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import _fit_context, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.metaestimators import available_if

from .base import (STRUCTURE_CONSTRAINT, StructuredEstimator, as_history,
                   check_path_arguments, restored_on_failure)
from .solvers._eg_dual import dual_weights, last_examples_state
from .solvers.eg import EGState, check_cache_dir, eg_solve, new_examples_state
from .solvers.latent import latent_solve
from .solvers.loss import StructuredLoss
from .solvers.working_set import working_set_solve

__all__ = ["EGCRF", "EGStructuredSVM", "eg_path"]


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
        "warm_start": ["boolean"],
        "annealing": ["boolean"],
        "partial_fit_memory": [None, Interval(Integral, 0, None, closed="left")],
        "max_latent_iter": [Interval(Integral, 1, None, closed="left")],
        "n_jobs": [None, Integral],
        "cache_size": [None, Interval(Real, 0, None, closed="neither")],
        "cache_dir": [None, str, os.PathLike],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(
        self, *, C=1.0, structure=None, solver="online", order="gap",
        learning_rate="adaptive", eta0=0.5, tol=1e-4, max_iter=100, warm_start=False,
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

    def _check_cache_arguments(self):
        """Refuse, before any work, a cache folder that cannot be written and a cache bound
        that the solver cannot keep."""
        check_cache_dir(self.cache_dir)
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
            self.structure_.training_structure(), batch, Y, loss=self._loss,
            solver=self.solver, order=self.order, learning_rate=self.learning_rate,
            eta0=self.eta0, max_iter=self.max_iter, annealing=self.annealing,
            smoothing=self._smoothing(), n_jobs=self.n_jobs,
            keep_dual=bool(self.warm_start), **self._cache_arguments(),
            **self._solver_arguments(sample_weight, state, callback))

    @restored_on_failure
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None, callback=None):
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

        Returns
        -------
        self : object
            The fitted estimator.
        """
        self._check_cache_arguments()
        batch, Y, sample_weight, constraint_scores = self._validate_fit_data(
            X, y, sample_weight, partial=True)
        on_pass = self._pass_callback(callback, batch, lambda state: state.primal_weights)
        if constraint_scores is not None:
            return self._fit_partial_labels(batch, Y, sample_weight, constraint_scores, on_pass)
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
        self.__dict__.pop("_partial_fit_kept", None)  # a later partial_fit starts from here
        # the dual variables are as large as the training set: kept only for warm starts
        self._dual_state = result.state if self.warm_start else None
        self._dual_state_classes = self.classes_
        self._dual_state_kind = self._state_kind()
        if not result.converged:
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
        start_scores = self.structure_.output_space().partial_label_start(batch,
                                                                          constraint_scores)
        result = latent_solve(
            self.structure_.training_structure(), batch, Y, constraint_scores, loss=self._loss,
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
        self._check_cache_arguments()
        X, batch, Y, sample_weight = self._validate_partial_fit_data(X, y, classes,
                                                                     sample_weight)
        structure = self.structure_.training_structure()
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


class EGCRF(_BaseEG):
    """Conditional random field (multinomial logistic regression) trained by EG.

    Minimises ``1/2 ||w||^2 + C sum_i s_i (-log p(y_i | x_i; w))`` with the
    randomized online exponentiated-gradient algorithm on the dual (Collins,
    Globerson, Koo, Carreras and Bartlett, JMLR 2008): one Gibbs distribution
    per training example, parameterised over the parts of the structure,
    marginals from forward-backward (chains) or a softmax (flat multiclass).
    Convergence is checked on the exact duality gap.

    With flat ``X`` (2-D array or sparse matrix) this is multinomial logistic
    regression without intercept, the optimum of
    ``LogisticRegression(C=C, fit_intercept=False)``.  With ``X`` a list of
    per-token feature matrices it is a linear-chain CRF.

    Parameters
    ----------
    C : float, default=1.0
        Inverse regularisation strength (scikit-learn convention; the paper's
        ``C`` is ``1 / C``).
    structure : str, BaseStructure or None, default=None
        A name of the registry ``sklearn_struct.structures.STRUCTURES`` (see
        :ref:`parameters`), a structure object, or None.
        Output structure; ``None`` picks multiclass for flat ``X`` and a chain
        (with start/end parts) for a list of sequences; ``"dependency"`` is
        :class:`~sklearn_struct.structures.DependencyTreeStructure` (sentences
        encoded by :class:`~sklearn_struct.preprocessing.DependencyTokenEncoder`,
        one head array per sentence as ``y``).  Any structure object
        supporting marginals works (the online solver also needs its kernel
        operations); it is used as given and never modified.  With flat
        outputs (``None``, ``"multiclass"``) the estimator is a scikit-learn
        classifier.
    solver : {"online", "batch"}, default="online"
        Online EG updates one example at a time (Figure 2/3 of the paper);
        batch EG updates all examples at once (Figure 1), much slower.
    order : {"gap", "random", "shuffle", "cyclic"}, default="gap"
        Online visiting order.  "gap": a quarter of each pass's visits are
        uniform, the rest in proportion to the examples' shares of the duality
        gap at the last gap evaluation per part (the gap a unit of inference
        work can remove), each example visited the floor or the
        ceiling of its expected number of times (gap sampling, as Osokin et
        al., ICML 2016, do for block-coordinate Frank-Wolfe; a random
        permutation until the first evaluation): late in a fit the gap
        concentrates on few examples, and gap sampling reaches a given gap in
        fewer passes (``benchmarks/results/eg_conll.md``).  "random": uniform
        draws with replacement
        (the paper's randomized algorithm); "shuffle": a new random
        permutation every pass (every example visited once per pass);
        "cyclic": a fixed cycle ``0..n-1``.
    learning_rate : "adaptive" or float, default="adaptive"
        "adaptive": per-example rate halved until that example's step improves
        the dual, then multiplied by 1.05 (section 7; 1.02 for the log loss of
        online EG, whose rates settle: fewer rejected steps); a float is a
        fixed rate.
    eta0 : float, default=0.5
        Initial adaptive rate.
    tol : float, default=1e-4
        Stop when the duality gap is at most ``tol`` times the primal objective.
        The gap costs one inference per example: it is evaluated after the
        passes 1, 2, 3, ... spaced geometrically (every quarter of the passes
        done), sooner when its rate predicts ``tol`` sooner, after every pass
        while ``C`` is annealed, after the last pass, and after every pass
        when ``tol=0`` (a training curve).
    max_iter : float, default=100
        Maximum number of effective passes over the data (examples visited /
        n_samples, every tried step size counting as a visit).
    warm_start : bool, default=False
        Start the next ``fit`` from the solution of the previous one: here the
        dual variables, kept for that purpose (for a path over ``C``; see
        :func:`eg_path`); the next ``fit`` must use the same examples.
    annealing : bool, default=True
        Section 7.1.1: a cold fit starts at a small ``C`` where the uniform
        dual start is sensible (see
        :func:`sklearn_struct.solvers.eg.uniform_start_C`) and moves ``C`` up
        to the target at the paper's pace, or faster (doubling it, or more
        when the gap is far smaller) after each pass that ends within a
        relative duality gap of 0.2.  No effect
        when ``C`` is already that small, or on a warm start (except to
        finish an interrupted annealing).  Without it, at
        large ``C`` the uniform start gives ``w(alpha)`` of size
        ``C * n_samples``, every example saturates and EG crawls.
    partial_fit_memory : int or None, default=1000
        The number of most recent examples whose inputs and dual variables
        :meth:`partial_fit` keeps and revisits with each new chunk (the dual
        variables of older examples stay frozen, their share folded into the
        weights); ``None`` keeps every example, so that the calls over chunks
        solve the problem over all of them, as ``fit`` does, in memory that
        grows with the data; 0 makes each call the proximal step from the last
        weights over its chunk alone.  See :ref:`partial_fit`.
    max_latent_iter : int, default=30
        Outer steps of a fit on partially labelled sequences (``None`` or a
        set of labels among a sequence's labels, see :ref:`partial_labels`):
        the latent-variable CRF (Tsuboi et al., 2008) by EM, each step the
        marginals of the outputs consistent with the known labels (E-step),
        then EG on the CRF with those expected targets (M-step, to a relative
        gap that tightens to ``tol`` as the objective settles, within
        ``max_iter`` passes).  The latent objective ``1/2 ||w||^2 + C sum_i s_i
        (log Z_i - log Z_i^c)`` never increases; the fit stops when it decreases
        by less than ``tol`` times its value.  ``history_`` then holds one entry
        per outer step.  No effect on fully labelled targets.
    n_jobs : int, default=None
        joblib workers over chunks of examples, for batch marginals,
        objective evaluation and prediction (works with
        ``joblib.parallel_config(backend="dask")``).  The online solver also
        runs each pass on that many threads of this process (at most one per
        core), which share the weights without locks; the weights are rebuilt
        exactly after every pass, so the objectives and gap are exact, but
        such fits are not reproducible bit for bit.  Its gap evaluations run
        on the same threads.
    cache_size : float or None, default=None
        Megabytes of the online solver's training cache (what the structure
        keeps for a fit: a dependency parser's hashed feature ids, the token
        structures' Gram blocks) held in memory at once.  When the cache is
        estimated to exceed it, it is built in shards of about a third of
        ``cache_size``, written to ``cache_dir`` and read back in turn by
        every pass, which then visits the examples shard by shard: a fit on
        more data than fits in memory.  None keeps the whole cache in memory.
        The batch solver keeps no cache.  See :ref:`memory`.
    cache_dir : str, path or None, default=None
        The folder for those shards (None: the system's temporary folder); a
        scratch folder inside it is removed when the fit ends.
    random_state : int, RandomState instance or None, default=None
        Seeds the order of the online updates.
    verbose : int, default=0
        Print one line per pass: the ``C`` of the pass (followed by
        ``(annealing towards C=...)`` while it is still being annealed towards
        the target), the primal and dual objectives at that ``C`` and their
        relative gap.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Labels seen in training (over all tokens for sequences).
    weights_ : ndarray of shape (n_weights,)
        All weights in the structure's layout; the attributes below are views
        of it (the structure's ``weight_attributes``).
    coef_ : ndarray of shape (n_classes, n_features)
        Per-label input weights.
    transition_ : ndarray of shape (n_classes, n_classes)
        Chains only: score of label ``a`` followed by label ``b`` at ``[a, b]``.
    start_transition_, end_transition_ : ndarray of shape (n_classes,)
        Chains with start/end parts only: scores of the first and last label.
    structure_ : BaseStructure
        The structure used (the ``structure`` object itself when one is given,
        unless it names labels to resolve, such as a chain's tagging scheme:
        see :meth:`~sklearn_struct.structures.OutputSpace.for_classes`).
    n_features_in_ : int
        Number of input features (columns of ``X`` or of every sequence).
    feature_names_in_ : ndarray of str
        Column names of a flat ``X`` given as a DataFrame with string columns.
    n_iter_ : int
        Number of passes run (each of at most ``n_samples`` visits).
    history_ : dict of ndarray
        Per gap evaluation (see ``tol``): ``passes`` (cumulative effective
        passes), ``C``, ``dual``, ``primal``, ``gap`` (primal - dual),
        ``seconds`` (training time since the previous evaluation),
        ``eval_seconds`` (objective evaluation) and ``beta`` (inverse
        temperature of :class:`EGStructuredSVM`'s smoothed hinge, NaN
        otherwise).
    primal_objective_, dual_objective_, duality_gap_ : float
        At the end of training (partial labels: of the last convex step).
    latent_objective_ : float
        Only after a fit on partial labels: the latent objective at the end
        (``history_`` then has, per outer step and first at ``w = 0``:
        ``objective``, the latent objective; ``primal``, ``dual`` and ``gap``
        of that step's convex problem; ``passes``, cumulative; ``seconds``;
        and ``n_iter_`` counts the passes of every step).

    See Also
    --------
    EGStructuredSVM : the max-margin counterpart.
    eg_path : warm-started regularisation path.

    Notes
    -----
    :meth:`predict_marginals` gives the posterior marginals of every label of
    every sample or token; :meth:`predict_proba` and :meth:`predict_log_proba`
    exist only for flat outputs (``hasattr(crf, "predict_proba")`` is False
    once fitted on sequences).  For two classes :meth:`decision_function`
    returns one score per sample, that of ``classes_[1]`` minus that of
    ``classes_[0]``.

    *Numerical range.*  The problem depends on ``C`` and the features only through
    ``C * R**2`` (``R`` the largest feature norm of an example), so very large
    features act as a very large ``C``.  Measured on small flat and chain problems
    (``tests/estimators/test_numerical_limits.py``) for ``C`` from 1e-8 to 1e8 and features
    scaled by 1e-6 to 1e6, the weights are always finite; with the default
    ``tol`` and ``max_iter`` the fit converges (certified by the duality gap) for
    ``C * R**2`` up to about 1e2 (``C = 10`` for a few unit-variance features),
    and beyond it stops at ``max_iter`` with a ``ConvergenceWarning`` (its
    weights still finite and usable: raise ``max_iter``, use :func:`eg_path`, or
    rescale the features).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.eg import EGCRF
    >>> X = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]])
    >>> clf = EGCRF(C=10.0, random_state=0).fit(X, ["a", "a", "b", "b"])
    >>> clf.predict([[0.8, 0.2]])
    array(['a'], dtype='<U1')
    >>> sequences = [np.eye(3), np.eye(3)[[2, 0]]]
    >>> crf = EGCRF(random_state=0).fit(sequences, [["x", "y", "z"], ["z", "x"]])
    >>> [list(labels) for labels in crf.predict(sequences)]
    [['x', 'y', 'z'], ['z', 'x']]
    """

    _loss = "log"
    _probabilistic = True


class EGStructuredSVM(_BaseEG):
    """Structured SVM (max-margin Markov network) trained by EG.

    Minimises ``1/2 ||w||^2 + C sum_i s_i max_y [e(y_i, y) - w . (phi(x_i, y_i)
    - phi(x_i, y))]`` with the Hamming loss ``e`` of the structure (0/1 loss
    for flat samples), by exponentiated gradient on the dual quadratic program
    (Bartlett et al., NIPS 2004; Collins et al., JMLR 2008, section 8).  The
    primal objective is evaluated exactly by loss-augmented inference, so the
    reported duality gap is exact.

    Parameters
    ----------
    C : float, default=1.0
        Inverse regularisation strength (scikit-learn convention).
    structure : str, BaseStructure or None, default=None
        A name of the registry ``sklearn_struct.structures.STRUCTURES`` (see
        :ref:`parameters`), a structure object, or None.
        See :class:`EGCRF`; the working-set solver needs no marginals.
    solver : {"online", "batch", "working_set"}, default="online"
        Online or batch EG (see :class:`EGCRF`), or ``"working_set"``: the
        dual on a small working set of outputs per example (the truth and the
        loss-augmented argmaxes met so far), solved by pairwise (SMO) steps
        between oracle passes of loss-augmented inference, each of which
        certifies the duality gap (see :mod:`sklearn_struct.solvers.working_set`;
        the row generation with SMO that the NIPS 2004 EG paper compares EG
        against), accelerated by Catalyst's proximal-point extrapolation when
        ``C`` is far above the data's scale.  It pays at weak regularisation,
        where EG's smoothing sharpens slowly; at small ``C`` online EG is faster
        (``benchmarks/results/ssvm_bcfw.md``).
        ``max_iter`` then counts oracle passes; ``order``, ``learning_rate``,
        ``eta0`` and ``annealing`` do not apply, and it runs on one core.
    order : {"shuffle", "gap", "random", "cyclic"}, default="shuffle"
        See :class:`EGCRF`.  Gap sampling does not pay for the hinge: the
        annealed smoothing, not the visiting order, sets the pace (on OCR
        letters, passes to a relative gap of 1e-2 unchanged or up to 2 more).
    learning_rate : "adaptive" or float, default="adaptive"
        Per-example adaptive rate (section 7) or a fixed rate; see :class:`EGCRF`.
    eta0 : float, default=0.5
        Initial adaptive rate.
    tol : float, default=1e-3
        Relative duality gap at which to stop (the hinge dual converges at the
        slower ``O(1/eps)`` rate, hence a looser default than :class:`EGCRF`).
    max_iter : float, default=100
        Maximum number of effective passes.
    warm_start : bool, default=False
        Keep the dual variables for the next ``fit`` (see :class:`EGCRF`).
    annealing : bool, default=True
        Anneal ``C``, as :class:`EGCRF` does; not while ``smoothing`` applies,
        whose start near the truth is sensible at any ``C``.
    partial_fit_memory : int or None, default=1000
        Examples whose dual variables :meth:`partial_fit` keeps and revisits
        (see :class:`EGCRF`).
    max_latent_iter : int, default=30
        Outer steps of a fit on partially labelled sequences (see
        :ref:`partial_labels`): the latent structured SVM (Yu and Joachims,
        2009) by CCCP, each step imputing the best output consistent with the
        known labels (the constrained argmax; the first, at ``w = 0``, breaks
        ties by the known labels' frequencies), then solving the structured SVM
        on the imputed outputs with the Hamming loss of the known tokens only.
        The latent objective never increases (see :class:`EGCRF`).
    smoothing : bool, default=True
        With the online solver: anneal a temperature instead.  A cold fit
        starts near the truth (``w`` near 0) and ascends the dual of the hinge
        smoothed by ``H(alpha_i) / beta`` (the softmax-margin loss at inverse
        temperature ``beta``, from ``min(1, 0.1 / C)``), whose EG steps
        converge fast, and doubles ``beta`` whenever the smoothing makes up
        half of the hinge duality gap; the gap reported and stopped on is the
        hinge's, its primal evaluated at (and ``coef_`` set to) a running
        average of the weights over the last tenth of the passes (see
        :mod:`sklearn_struct.solvers.eg`).  A warm start continues the
        temperature.  ``False``: EG on the hinge dual itself from uniform
        duals (annealing ``C`` if ``annealing``).
    accelerate : bool, default=True
        With the working-set solver: Catalyst's proximal-point extrapolation
        when ``C`` is far above the data's scale (see
        :mod:`sklearn_struct.solvers.working_set`).  It pays on data whose
        optimum keeps hinge losses, but not on nearly separable data, whose
        plain passes converge well
        (``benchmarks/results/working_set_acceleration.md``): set it to
        ``False`` there.  A warm start that changes it keeps the working sets
        and puts the weight back on the truth.
    n_jobs : int, default=None
        joblib workers for batch marginals, objective evaluation and
        prediction; the online solver's passes run on that many threads (see
        :class:`EGCRF`).
    cache_size : float or None, default=None
        Megabytes of the online solver's training cache held in memory at
        once (see :class:`EGCRF`); not with ``solver="working_set"``.
    cache_dir : str, path or None, default=None
        The folder of the cache's shards (see :class:`EGCRF`).
    random_state : int, RandomState instance or None, default=None
        Seeds the order of the online updates.
    verbose : int, default=0
        One line per pass, as for :class:`EGCRF`.

    Attributes
    ----------
    classes_, weights_, coef_, transition_, start_transition_, end_transition_, \
structure_, n_features_in_, feature_names_in_, n_iter_, history_, primal_objective_, \
dual_objective_, duality_gap_, latent_objective_
        As in :class:`EGCRF`.

    See Also
    --------
    EGCRF : the log-linear counterpart.

    Notes
    -----
    *Numerical range.*  The problem depends on ``C`` and the features only through
    ``C * R**2`` (``R`` the largest feature norm of an example), so very large
    features act as a very large ``C``.  Measured on small flat and chain problems
    (``tests/estimators/test_numerical_limits.py``) for ``C`` from 1e-8 to 1e8 and features
    scaled by 1e-6 to 1e6, the weights are always finite; with the default
    ``tol`` and ``max_iter`` the fit converges (certified by the duality gap) for
    ``C * R**2`` up to about 10 (``C = 1`` for a few unit-variance features; the
    hinge converges more slowly than the log loss), and beyond it stops at
    ``max_iter`` with a ``ConvergenceWarning`` (its weights still finite and
    usable: raise ``max_iter``, use :func:`eg_path`, or rescale the features).
    ``solver="working_set"`` converges at about ten times larger ``C``: on those
    problems at ``C = 100`` (flat) and ``C = 10`` (chain), where online EG ends
    ``max_iter`` at relative gaps of 0.28 and 0.15.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.eg import EGStructuredSVM
    >>> sequences = [np.eye(3), np.eye(3)[[2, 0]]]
    >>> svm = EGStructuredSVM(C=1.0, random_state=0).fit(sequences, [[0, 1, 2], [2, 0]])
    >>> [list(labels) for labels in svm.predict(sequences)]
    [[0, 1, 2], [2, 0]]
    """

    _loss = "hinge"
    _parameter_constraints = {
        **_BaseEG._parameter_constraints,
        "solver": [StrOptions({"online", "batch", "working_set"})],
        "smoothing": ["boolean"],
        "accelerate": ["boolean"],
    }

    def __init__(
        self, *, C=1.0, structure=None, solver="online", order="shuffle",
        learning_rate="adaptive", eta0=0.5, tol=1e-3, max_iter=100, warm_start=False,
        annealing=True, smoothing=True, accelerate=True, partial_fit_memory=1000,
        max_latent_iter=30, n_jobs=None, cache_size=None, cache_dir=None, random_state=None,
        verbose=0,
    ):
        super().__init__(
            C=C, structure=structure, solver=solver, order=order, learning_rate=learning_rate,
            eta0=eta0, tol=tol, max_iter=max_iter, warm_start=warm_start, annealing=annealing,
            partial_fit_memory=partial_fit_memory, max_latent_iter=max_latent_iter,
            n_jobs=n_jobs, cache_size=cache_size, cache_dir=cache_dir,
            random_state=random_state, verbose=verbose,
        )
        self.smoothing = smoothing
        self.accelerate = accelerate

    def _smoothing(self):
        return self.smoothing

    def _convergence_advice(self):
        if self.solver == "working_set":
            return "increase max_iter"
        # EG's smoothing of the hinge sharpens slowly at large C, where more passes help
        # little and the working set converges
        return ("increase max_iter, or use solver='working_set', which converges at larger "
                "C")

    def _solve(self, batch, Y, sample_weight, state, callback):
        if self.solver != "working_set":
            return super()._solve(batch, Y, sample_weight, state, callback)
        return working_set_solve(
            self.structure_.training_structure(), batch, Y,
            max_iter=int(np.ceil(self.max_iter)), accelerate=self.accelerate,
            **self._solver_arguments(sample_weight, state, callback))


def eg_path(estimator, X, y, Cs, *, sample_weight=None, X_val=None, y_val=None, scoring=None):
    """Fit a sequence of ``C`` values, each warm-started from the previous dual.

    Section 7.1.2 of Collins et al. (2008): start at the strongest
    regularisation (smallest ``C``), solve to the estimator's ``tol``, then
    move to the next ``C`` keeping the dual variables.  Each step typically
    needs only a few passes.

    Parameters
    ----------
    estimator : EGCRF or EGStructuredSVM
        Template (cloned; ``warm_start`` is switched on, and its ``random_state``
        seeds one random stream that runs through the whole path).
    X : array-like or sparse matrix, or list of arrays / sparse matrices
        Training inputs as in ``fit``.
    y : array-like, or list of array-like
        Training labels as in ``fit``.
    Cs : sequence of float
        Values of ``C``; fitted in increasing order.
    sample_weight : array-like of shape (n_samples,), default=None
        Weight of each example's loss term.
    X_val, y_val : validation data, optional
        When given, the path reports a validation score per ``C``.
    scoring : callable, default=None
        ``scoring(estimator, X_val, y_val) -> float`` (a scikit-learn scorer,
        e.g. from :func:`sklearn.metrics.make_scorer`, or any function of that
        signature); ``None`` uses ``estimator.score``.

    Returns
    -------
    path : dict of ndarray
        ``C`` (increasing), ``passes`` (effective passes spent on each ``C``),
        ``total_passes`` (cumulative), ``seconds`` (training time per ``C``),
        ``primal`` and ``gap`` (final, per ``C``), ``converged``, and
        ``validation_score`` (NaN without validation data).  ``estimator`` is
        the model of the last ``C``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.eg import EGCRF, eg_path
    >>> X = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]])
    >>> path = eg_path(EGCRF(random_state=0), X, [0, 0, 1, 1], [0.1, 1.0, 10.0])
    >>> path["C"].tolist()
    [0.1, 1.0, 10.0]
    >>> bool(path["converged"].all())
    True
    """
    Cs = check_path_arguments("eg_path", Cs, scoring)
    # one random stream through the path: re-seeding at every C visits the examples in the
    # same order each time, which costs passes (benchmarks/results/eg_mnist_paper.md)
    model = clone(estimator).set_params(
        warm_start=True, random_state=check_random_state(estimator.random_state))
    rows = []
    for C in Cs:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            model.set_params(C=C).fit(X, y, sample_weight=sample_weight)
        history = model.history_
        if X_val is None:
            score = np.nan
        else:
            score = model.score(X_val, y_val) if scoring is None else scoring(model, X_val, y_val)
        rows.append((C, history["passes"][-1], history["seconds"].sum(), model.primal_objective_,
                     model.duality_gap_,
                     not any(issubclass(w.category, ConvergenceWarning) for w in caught), score))
    columns = list(zip(*rows))
    path = {key: np.asarray(col) for key, col in zip(
        ("C", "passes", "seconds", "primal", "gap", "converged", "validation_score"), columns)}
    path["total_passes"] = np.cumsum(path["passes"])
    final = copy.copy(model)
    final._dual_state = None
    path["estimator"] = final.set_params(warm_start=False, random_state=estimator.random_state)
    return path
