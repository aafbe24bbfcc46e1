"""L1-norm max-margin Markov network (primal-sparse M3N) with three solvers."""

import copy
import time
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import _fit_context, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .base import (STRUCTURE_CONSTRAINT, StructuredEstimator, as_history, check_path_arguments,
                   fit_path_point, path_point_score)
from .solvers.adaptive_m3n import adaptive_m3n
from .solvers.cutting_plane import l1_cutting_plane
from .solvers.loss import L1, LOSS_OPERATIONS, StructuredLoss
from .solvers.subgradient import l1_proximal_subgradient

__all__ = ["L1M3N", "l1m3n_min_C", "l1m3n_path"]

#: Inverse temperature of the Gibbs distribution of the part losses that
#: :func:`l1m3n_min_C` uses to spread over the outputs of maximal loss
#: (others keep a mass of about ``exp(-TIE_SHARPNESS * loss gap)``).
TIE_SHARPNESS = 50.0
#: Default passes over the training data of each solver when ``max_iter=None`` (EM: 60 EM
#: iterations of at most 200 EG passes each, its default before it counted passes).
DEFAULT_MAX_ITER = {"cutting_plane": 200, "subgradient": 1000, "online_subgradient": 50,
                    "em": 12000}


class L1M3N(StructuredEstimator):
    """Primal-sparse max-margin Markov network (L1-M3N).

    The structured hinge loss ``H_i(w) = max_y [loss(y_i, y) - w . (f(x_i, y_i)
    - f(x_i, y))]`` under an L1 penalty, after Zhu, Xing & Zhang, "Primal
    sparse max-margin Markov networks" (KDD 2009).  The L1 norm sets the
    weights of irrelevant features to exact zeros, so the model also selects
    input features (:attr:`support_`, :meth:`get_support`; usable inside
    :class:`~sklearn.feature_selection.SelectFromModel` for flat data).

    Every solver minimises the same objective, P1 of the paper::

        F(w) = ||w||_1 + C sum_i H_i(w)

    with the one regularisation parameter ``C`` (larger ``C``: weaker
    regularisation, more non-zero weights), as in scikit-learn's linear models
    (``LinearSVC(penalty="l1")``, ``LogisticRegression``), and ``objective_`` is
    ``F`` whatever the solver, so values of ``C`` and objectives compare
    across solvers and ``GridSearchCV`` over ``C`` means the same thing for
    each.  ``C`` rather than a Lasso-like ``alpha`` because the package's
    other max-margin estimators read ``C`` too; :func:`l1m3n_min_C` gives the
    data-derived scale (the ``C`` below which ``w = 0``, the analogue of
    ``Lasso``'s ``alpha_max``) and :func:`l1m3n_path` a grid above it.  The
    paper's other forms -- the L1 ball (P1', its Algorithm 2) and the adaptive
    M3N (P2/P4, Algorithm 3) -- share P1's solution path but not its
    parameter values (their parameters map to ``C`` through ``||w*||_1``, which is
    unknown before the fit); the user guide (:ref:`l1m3n`) gives the mapping.

    ``solver="cutting_plane"`` -- Algorithm 1: working sets of most violated
    outputs and the restricted LP re-solved by HiGHS, exact up to ``epsilon``.

    ``solver="subgradient"`` -- proximal subgradient steps on P1 (a
    subgradient step on the hinge part, then soft thresholding, which makes
    exact zeros as the paper's L1-ball projection does), full-batch or, with
    ``online=True``, one step per example; steps scaled by the distance
    travelled (no tuning across feature scales).  Stops on a certified
    relative duality gap ``tol``.

    ``solver="em"`` -- Algorithm 3: alternates an M3N on features rescaled by
    ``sqrt(tau)`` (solved by max-margin exponentiated gradient) with the
    closed-form variances ``tau_k = |w_k|``; weights whose variance falls
    below ``tau_threshold`` times the total leave the model, and come back
    when the dual certificate asks for them.  Stops on a certified relative
    duality gap ``tol`` (EG's dual distributions are dual points of P1).

    Numerical range.  Scaling the features by ``s`` is the same problem as
    multiplying ``C`` by ``s`` (``F`` is divided by ``s``), and
    :func:`l1m3n_min_C` scales as ``1 / s``, so ``C / l1m3n_min_C`` is the
    scale-free measure of how hard a problem is.  Measured on a 60 x 8
    standardised problem (``tests/estimators/test_l1m3n_limits.py`` runs ``C`` from
    ``1e-8`` to ``1e8`` and features scaled by ``1e-6`` to ``1e6``):

    * every solver certifies ``w = 0`` at once for ``C <= l1m3n_min_C``;
    * the cutting plane converges to the LP optimum (relative gap ``< tol``)
      for ``C`` times the feature scale up to about ``1e12``; beyond, ``C``
      multiplies the rounding of the hinge losses, the objective is not
      resolved in double precision and it warns;
    * the subgradient method certifies ``tol = 1e-3`` within its 1000 steps
      for ``C`` up to about 10 times ``l1m3n_min_C``, EM (60 iterations) up
      to about 100 times, and on smaller problems further (the 17-example
      problem of issue 16: up to ``C = 1e8`` and features x1e6); above, P1
      approaches a hard-margin problem on which subgradient steps and EG
      crawl, and they stop at ``max_iter``
      with a :class:`~sklearn.exceptions.ConvergenceWarning` giving the
      certified gap and what failed -- never a silent wrong answer.

    Results are finite throughout, and ``objective_`` and ``lower_bound_``
    bracket the optimum.

    Parameters
    ----------
    structure : str, BaseStructure or None, default=None
        A name of the registry ``sklearn_struct.structures.STRUCTURES`` (see
        :ref:`parameters`), a structure object, or None.
        The output structure.  ``None``: multiclass when ``X`` is a 2-D array
        or sparse matrix, chain when it is a list of per-sequence 2-D arrays.
        ``"matching"`` (:class:`~sklearn_struct.structures.MatchingStructure`;
        pass an instance for other false positive / negative costs):
        ``X[i] = (edge_features, edges)`` and ``y[i]`` a 0/1 vector over the
        edges.  ``"mincut"``
        (:class:`~sklearn_struct.structures.MinCutStructure`): ``X[i] =
        (node_features, edges, edge_features)`` and ``y[i]`` a 0/1 vector over
        the nodes; the edge weights are kept non-negative (submodular
        inference).  Must support loss-augmented inference (and marginals for
        ``solver="em"``, which matchings and min-cuts lack).  A structure
        object is used as given and never modified.  With flat outputs
        (``None``, ``"multiclass"``) the estimator is a scikit-learn classifier.
    solver : {"cutting_plane", "subgradient", "em"}, default="cutting_plane"
    C : float, default=1.0
        Weight of the summed hinge losses against the unit-weight L1 norm, for
        every solver; ``w = 0`` for ``C <= l1m3n_min_C(estimator, X, y)``.
    max_iter : int or None, default=None
        Most passes over the training data, as for every estimator: one per
        cutting-plane iteration (default 200), subgradient step (1000) or
        online epoch (50); EM counts the passes of its EG M3N steps and one
        per EM iteration (default 12000).
    tol : float, default=1e-3
        Certified relative duality gap ``(F - lower bound) / F`` at which the
        subgradient method and EM stop; the cutting plane, which stops on
        ``epsilon``, warns when its final gap exceeds it.
    epsilon : float, default=1e-3
        Cutting-plane precision: outputs violating their margin by more than
        ``epsilon`` beyond the current slack enter the working set.
    eta0 : float, default=1.0
        Subgradient step-size multiplier (of the distance travelled over the
        root of the summed squared subgradients).
    online : bool, default=False
        Subgradient: one projected step per example instead of full batches.
    max_em_iter : int or None, default=None
        EM: most EM iterations (the paper runs 15; certifying the optimum at
        large ``C`` takes up to about 50); None: as many as ``max_iter``
        allows.
    inner_max_iter : int, default=200
        EM: most passes of each exponentiated-gradient M3N step (each stops
        earlier at a relative duality gap of ``1e-3``).
    tau_threshold : float, default=1e-3
        EM: a weight whose variance ``tau_k = |w_k|`` falls below
        ``tau_threshold * sum_j tau_j`` leaves the model (the paper's ``1e-4``
        on ``tau`` in its normalisation is about ``1e-3`` here; see
        :mod:`sklearn_struct.solvers.adaptive_m3n`); it comes back if the dual
        certificate needs it.  ``0`` disables it.
    warm_start : bool, default=False
        Start from the previous solution: the subgradient method from the
        previous weights, EM from the previous variances, the cutting plane
        with its first separation at the previous weights (its working sets
        restart, as they belong to the previous examples).  This is what
        :func:`l1m3n_path` uses.
    n_jobs : int, default=None
        joblib workers over chunks of examples: loss-augmented inference (and
        EM's EG evaluations) during training, and prediction.
    random_state : int, RandomState instance or None, default=None
        Example order of the online subgradient and EG steps.
    verbose : int, default=0
        Print the objective, bounds and number of non-zero weights after each
        iteration when > 0.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Labels seen in training (over all tokens for sequences); ``[0, 1]``
        for matching and min-cut.
    coef_ : ndarray of shape (n_classes, n_features) or (n_weights,)
        Flat data and chains: per-label weights of the input features (exact
        zeros where pruned).  Matching and min-cut: the weight vector itself,
        one weight per edge feature (matching) or the node weights followed by
        the (non-negative) edge weights (min-cut).
    transition_ : ndarray of shape (n_classes, n_classes)
        Chains only: weights of label ``a`` followed by label ``b``.
    start_transition_, end_transition_ : ndarray of shape (n_classes,)
        Chains with start/end parts only: weights of the first and last label.
    weights_ : ndarray of shape (n_weights,)
        All weights in the structure's layout; ``coef_`` and the transition
        weights are views of it (the structure's ``weight_attributes``).
    structure_ : BaseStructure
        The structure used (the ``structure`` object itself when one is given,
        unless it names labels to resolve, such as a chain's tagging scheme:
        see :meth:`~sklearn_struct.structures.OutputSpace.for_classes`).
    support_ : ndarray of bool of shape (n_features,)
        Input features with a non-zero weight for at least one label; for
        matching and min-cut, the non-zero weights (``n_features = n_weights``).
    n_features_in_ : int
        Number of input features; for matching and min-cut, the number of
        weights.
    feature_names_in_ : ndarray of str
        Column names of a flat ``X`` given as a DataFrame with string columns.
    n_iter_ : int
        Passes over the training data run (as ``max_iter`` counts them).
    objective_ : float
        ``||w||_1 + C sum_i H_i(w)`` at the returned weights, for every solver.
    lower_bound_ : float
        Certified lower bound on the optimum of that objective (the last LP's
        value for the cutting plane, the dual certificate for the others):
        ``objective_ - lower_bound_`` bounds the distance to the optimum.
    history_ : dict of ndarray
        Per iteration of the solver: ``objective``, ``lower_bound`` and
        ``n_nonzero`` weights (and solver-specific keys), one 1-D array per key.
    tau_ : ndarray of shape (n_weights,)
        EM only: variances for the next M3N step (``|w_k|``; 0 where removed).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.l1m3n import L1M3N
    >>> rng = np.random.RandomState(0)
    >>> X = rng.standard_normal((60, 8))
    >>> y = (X[:, 0] + X[:, 1] > 0).astype(int)
    >>> model = L1M3N(C=0.2).fit(X, y)
    >>> model.get_support(indices=True)
    array([0, 1])
    """

    _weights_prunable = False  # support_ follows the zeros of the L1 solution

    _parameter_constraints = {
        "structure": STRUCTURE_CONSTRAINT,
        "solver": [StrOptions({"cutting_plane", "subgradient", "em"})],
        "C": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left"), None],
        "tol": [Interval(Real, 0, None, closed="left")],
        "epsilon": [Interval(Real, 0, None, closed="left")],
        "eta0": [Interval(Real, 0, None, closed="neither")],
        "online": ["boolean"],
        "max_em_iter": [Interval(Integral, 1, None, closed="left"), None],
        "inner_max_iter": [Interval(Integral, 1, None, closed="left")],
        "tau_threshold": [Interval(Real, 0, None, closed="left")],
        "warm_start": ["boolean"],
        "n_jobs": [Integral, None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    #: The penalty, for :class:`~sklearn.feature_selection.SelectFromModel`
    #: (its default threshold for L1 models keeps exactly the non-zero weights).
    penalty = "l1"

    def __init__(
        self,
        *,
        structure=None,
        solver="cutting_plane",
        C=1.0,
        max_iter=None,
        tol=1e-3,
        epsilon=1e-3,
        eta0=1.0,
        online=False,
        max_em_iter=None,
        inner_max_iter=200,
        tau_threshold=1e-3,
        warm_start=False,
        n_jobs=None,
        random_state=None,
        verbose=0,
    ):
        self.structure = structure
        self.solver = solver
        self.C = C
        self.max_iter = max_iter
        self.tol = tol
        self.epsilon = epsilon
        self.eta0 = eta0
        self.online = online
        self.max_em_iter = max_em_iter
        self.inner_max_iter = inner_max_iter
        self.tau_threshold = tau_threshold
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------ scikit-learn
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit the L1-M3N.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features), or list
            Flat data, or one 2-D array / sparse matrix per sequence (one row
            per token) for chains, or one graph tuple per example for matching
            (``(edge_features, edges)``) and min-cut (``(node_features, edges,
            edge_features)``).
        y : array-like of shape (n_samples,), or list of 1-D arrays
            Labels (one array per sequence for chains, one 0/1 vector over the
            edges or nodes per graph).

        Returns
        -------
        self : L1M3N
            The fitted estimator.
        """
        previous = self.__dict__.get("weights_") if self.warm_start else None
        batch, Y, _ = self._validate_fit_data(X, y)
        if previous is not None and previous.shape[0] != batch.n_weights:
            raise ValueError(
                f"warm_start: the previous fit has {previous.shape[0]} weights but this "
                f"data needs {batch.n_weights}; use the same features and labels or "
                "warm_start=False."
            )
        hinge = StructuredLoss(self.structure_.output_space().training_structure(), batch, Y,
                               "hinge", n_jobs=self.n_jobs)
        result = self._solve(hinge, previous)
        self._set_weights(batch, result.coef)
        space = self.structure_.output_space()
        self.support_ = np.asarray(space.feature_support(batch, self.weights_), dtype=bool)
        self.n_iter_ = int(result.n_iter)
        self.objective_ = float(result.objective)
        self.lower_bound_ = float(result.lower_bound)
        self.history_ = as_history(result.history)
        if self.solver != "em":  # EM's variances of an earlier fit are stale
            self.__dict__.pop("tau_", None)
        if not result.converged:
            warnings.warn(
                f"L1M3N(solver={self.solver!r}, C={self.C:g}) did not converge in "
                f"{self.n_iter_} passes: {self._convergence_failure(result)}",
                ConvergenceWarning,
            )
        return self

    def _operations_needed(self, structure):
        """Structure operations the chosen solver needs (checked before training)."""
        em = ("marginals",) if self.solver == "em" else ()
        return LOSS_OPERATIONS["hinge"] + ("argmax",) + em

    def get_support(self, indices=False):
        """Mask (or indices) of the input features used by the model.

        Parameters
        ----------
        indices : bool, default=False
            Return integer indices instead of a boolean mask.

        Returns
        -------
        support : ndarray
            Boolean mask of shape (n_features,) over the input features (a copy
            of :attr:`support_`), or the indices of its True entries.
        """
        check_is_fitted(self)
        return np.flatnonzero(self.support_) if indices else self.support_.copy()

    # ---------------------------------------------------------------- helpers
    def _solve(self, hinge, previous):
        rng = check_random_state(self.random_state)
        if self.solver == "cutting_plane":
            return l1_cutting_plane(
                hinge, self.C, epsilon=self.epsilon, tol=self.tol, coef_init=previous,
                verbose=self.verbose,
                max_iter=self.max_iter or DEFAULT_MAX_ITER["cutting_plane"],
            )
        if self.solver == "subgradient":
            default = DEFAULT_MAX_ITER["online_subgradient" if self.online else "subgradient"]
            return l1_proximal_subgradient(
                hinge, self.C, max_iter=self.max_iter or default, tol=self.tol,
                eta0=self.eta0, online=self.online, coef_init=previous, random_state=rng,
                verbose=self.verbose,
            )
        result = adaptive_m3n(
            hinge, self.C, max_iter=self.max_iter or DEFAULT_MAX_ITER["em"],
            max_em_iter=self.max_em_iter, tol=self.tol, inner_max_iter=self.inner_max_iter,
            tau_threshold=self.tau_threshold,
            tau_init=self.__dict__.get("tau_") if previous is not None else None,
            random_state=rng, n_jobs=self.n_jobs, verbose=self.verbose,
        )
        self.tau_ = result.tau
        return result

    def _convergence_failure(self, result):
        """What failed, for the ConvergenceWarning."""
        gap = (result.objective - result.lower_bound) / max(result.objective, 1e-300)
        if self.solver == "cutting_plane":
            if result.n_iter == (self.max_iter or DEFAULT_MAX_ITER["cutting_plane"]):
                return (f"outputs still violate their margin by more than epsilon="
                        f"{self.epsilon} (objective {result.objective:.6g}, LP lower bound "
                        f"{result.lower_bound:.6g}); increase max_iter.")
            return (f"no output violates its margin, but the relative gap {gap:.3g} between "
                    f"the objective {result.objective:.6g} and the LP lower bound "
                    f"{result.lower_bound:.6g} exceeds tol={self.tol}: C times the feature "
                    "scale is too large for the hinge losses to be resolved in double "
                    "precision; rescale the features or lower C.")
        advice = ("increase max_iter, or use solver='cutting_plane', which is exact at any C "
                  "and feature scale")
        if self.solver == "em" and not all(result.history["eg_converged"]):
            advice = (f"the exponentiated-gradient M3N steps did not reach their tolerance "
                      f"within inner_max_iter={self.inner_max_iter} passes (hard-margin regime: "
                      f"large C or large features); {advice}")
        return (f"certified relative duality gap {gap:.3g} > tol={self.tol} (objective "
                f"{result.objective:.6g}, lower bound {result.lower_bound:.6g}); {advice}.")


def l1m3n_min_C(estimator, X, y):
    """Largest ``C`` certified to give ``w = 0``: the start of the regularisation path.

    ``w = 0`` minimises ``||w||_1 + C sum_i H_i(w)`` when some subgradient ``g``
    of ``sum_i H_i`` at 0 has ``C ||g||_inf <= 1`` (``max(-g_j, 0)`` on weights
    kept non-negative), the analogue of ``alpha_max`` for scikit-learn's
    ``Lasso``.  At ``w = 0`` every output of maximal loss is a most violated
    one, and any mixture of them gives a subgradient: the one of a single
    loss-augmented prediction, and -- for structures with marginals -- the
    mixture that spreads evenly over the tied outputs (the Gibbs distribution
    of the part losses at a high inverse temperature, ``TIE_SHARPNESS``), whose
    features average out and so usually give a larger threshold.  The larger
    of the two thresholds is returned.  It is exact when the most violated
    output is unique (e.g. two labels); with ties (more labels, chains) the
    exact threshold, the smallest norm over all mixtures, can be larger still.

    Parameters
    ----------
    estimator : L1M3N
        Template whose ``structure`` reads the data (not modified).
    X : array-like or sparse matrix, or list
        Training inputs as in :meth:`L1M3N.fit`.
    y : array-like, or list of array-like
        Training labels as in :meth:`L1M3N.fit`.

    Returns
    -------
    C_min : float
        ``1 / ||g||_inf``; ``inf`` when the hinge is 0 at ``w = 0`` (every ``C``
        gives ``w = 0``).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.l1m3n import L1M3N, l1m3n_min_C
    >>> X = np.array([[1.0, 0.0], [-1.0, 0.0]])
    >>> float(l1m3n_min_C(L1M3N(), X, [1, 0]))
    0.5
    """
    model = clone(estimator)
    batch, Y, _ = model._validate_fit_data(X, y)
    structure = model.structure_
    hinge = StructuredLoss(structure, batch, Y, "hinge", n_jobs=model.n_jobs)
    _, subgradient, _ = hinge.evaluate(np.zeros(hinge.n_weights))
    norm = L1.dual_norm(subgradient, hinge.nonnegative)
    if structure.supports("marginals"):
        spread = structure.marginals(batch, TIE_SHARPNESS * hinge.part_losses)[0]
        # the mixture's expected loss must be the maximal one, up to rounding
        if hinge.expected_loss(spread) >= (1 - 1e-12) * hinge.expected_loss(
                structure.encode(batch, structure.loss_augmented_argmax(
                    batch, np.zeros_like(hinge.part_losses), Y))):
            norm = min(norm, L1.dual_norm(hinge.dual_pair(spread)[1], hinge.nonnegative))
    return 1.0 / norm if norm > 0.0 else np.inf


def l1m3n_path(estimator, X, y, Cs=None, *, n_Cs=10, C_ratio=1e3, X_val=None, y_val=None,
               scoring=None):
    """Fit a sequence of ``C`` values, each warm-started from the previous solution.

    The L1 analogue of :func:`sklearn_struct.eg.eg_path` (and of scikit-learn's
    ``lasso_path``): from the strongest regularisation (smallest ``C``) to the
    weakest, each fit starts from the previous weights (EM: variances), so a
    whole sparsity/accuracy curve costs a few fits.  Without ``Cs`` the grid
    is data-derived: ``n_Cs`` values spaced geometrically from
    :func:`l1m3n_min_C` (where ``w = 0``) to ``C_ratio`` times it.

    Parameters
    ----------
    estimator : L1M3N
        Template (cloned; ``warm_start`` is switched on).
    X : array-like or sparse matrix, or list
        Training inputs as in :meth:`L1M3N.fit`.
    y : array-like, or list of array-like
        Training labels as in :meth:`L1M3N.fit`.
    Cs : sequence of float, default=None
        Values of ``C``; fitted in increasing order.  ``None``: the data-derived grid.
    n_Cs : int, default=10
        Size of the data-derived grid.
    C_ratio : float, default=1e3
        Its span: the last ``C`` over the first (``> 1``).
    X_val, y_val : validation data, optional
        When given, the path reports a validation score per ``C``.
    scoring : callable, default=None
        ``scoring(estimator, X_val, y_val) -> float``; ``None`` uses ``estimator.score``.

    Returns
    -------
    path : dict
        One entry per ``C`` (increasing): ``C``, ``n_nonzero`` (non-zero
        weights), ``n_selected`` (input features in ``support_``),
        ``objective`` and ``lower_bound`` (of ``||w||_1 + C sum_i H_i``),
        ``converged``, ``n_iter``, ``seconds``, ``validation_score`` (NaN
        without validation data) as arrays; ``coefs``, the weights (one row per
        ``C``, the ``weights_`` layout); and ``estimator``, the model of the last
        ``C``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.l1m3n import L1M3N, l1m3n_path
    >>> rng = np.random.RandomState(0)
    >>> X = rng.standard_normal((60, 6))
    >>> y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    >>> path = l1m3n_path(L1M3N(), X, y, n_Cs=4, C_ratio=100.0)
    >>> path["n_selected"].tolist()
    [0, 2, 5, 6]
    """
    if Cs is None:
        if not (isinstance(n_Cs, Integral) and n_Cs >= 1):
            raise ValueError(f"l1m3n_path: n_Cs must be an integer >= 1, got {n_Cs!r}.")
        if not (isinstance(C_ratio, Real) and C_ratio > 1.0):
            raise ValueError(f"l1m3n_path: C_ratio must be a number > 1, got {C_ratio!r}.")
        C_min = l1m3n_min_C(estimator, X, y)
        if not np.isfinite(C_min):
            raise ValueError("l1m3n_path: the structured hinge loss is 0 at w = 0 (every "
                             "example is already predicted right by the all-zero model), so "
                             "w = 0 at every C and the path is empty; pass Cs explicitly.")
        Cs = np.geomspace(C_min, C_min * C_ratio, n_Cs)
    Cs = check_path_arguments("l1m3n_path", Cs, scoring)
    model = clone(estimator).set_params(warm_start=True)
    rows, coefs = [], []
    for C in Cs:
        start = time.perf_counter()
        converged, caught = fit_path_point(model, C, X, y)
        seconds = time.perf_counter() - start
        for warning in caught:  # pass them on: a path point may be unconverged
            warnings.warn_explicit(warning.message, warning.category, warning.filename,
                                   warning.lineno)
        rows.append((C, np.count_nonzero(model.weights_), int(model.support_.sum()),
                     model.objective_, model.lower_bound_, converged, model.n_iter_, seconds,
                     path_point_score(model, X_val, y_val, scoring)))
        coefs.append(model.weights_.copy())
    keys = ("C", "n_nonzero", "n_selected", "objective", "lower_bound", "converged", "n_iter",
            "seconds", "validation_score")
    path = {key: np.asarray(column) for key, column in zip(keys, zip(*rows))}
    path["coefs"] = np.vstack(coefs)
    final = copy.copy(model)
    path["estimator"] = final.set_params(warm_start=False)
    return path
