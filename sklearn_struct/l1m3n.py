"""L1-norm max-margin Markov network (primal-sparse M3N) with three solvers."""

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .base import STRUCTURE_NAMES, StructuredEstimator, as_history
from .solvers.adaptive_m3n import adaptive_m3n
from .solvers.cutting_plane import l1_cutting_plane
from .solvers.subgradient import HINGE_OPERATIONS, StructuredHinge, l1_projected_subgradient
from .structures import BaseStructure

__all__ = ["L1M3N"]

#: Default number of iterations of each solver when ``max_iter=None``.
DEFAULT_MAX_ITER = {"cutting_plane": 200, "subgradient": 1000, "online_subgradient": 50, "em": 30}


class L1M3N(StructuredEstimator):
    """Primal-sparse max-margin Markov network (L1-M3N).

    The structured hinge loss ``H_i(w) = max_y [loss(y_i, y) - w . (f(x_i, y_i)
    - f(x_i, y))]`` under an L1 penalty, after Zhu, Xing & Zhang, "Primal
    sparse max-margin Markov networks" (KDD 2009).  The L1 norm sets the
    weights of irrelevant features to exact zeros, so the model also selects
    input features (:attr:`support_`, :meth:`get_support`; usable inside
    :class:`~sklearn.feature_selection.SelectFromModel` for flat data).

    Each solver solves its own (equivalent) form of the problem, with its own
    regularisation parameter; the forms share the solution path, not the
    parameter values:

    ``solver="cutting_plane"`` -- P1, regularised by ``C``::

        minimize_w  ||w||_1 + C sum_i H_i(w)

      Algorithm 1: working sets of most violated outputs and the restricted
      LP re-solved by HiGHS, to precision ``epsilon`` (exact up to it).
      ``lam`` is ignored.  (The paper writes ``1/2 ||w||_1``: its ``C`` is
      half of ours.)

    ``solver="subgradient"`` -- P1', regularised by ``lam``, the L1-ball radius::

        minimize_w  1/N sum_i H_i(w)   subject to  ||w||_1 <= lam

      Algorithm 2: projected subgradient with the exact L1-ball projection,
      full-batch steps or, with ``online=True``, one step per example.  Step
      size ``eta0 * lam / sqrt(sum_s ||g_s||^2)`` (AdaGrad-norm); stops on a
      certified relative duality gap ``tol``.  ``C`` is ignored.

    ``solver="em"`` -- the adaptive-M3N form P4, regularised by ``lam`` at fixed ``C``::

        minimize_w  (lam / K) ||w||_1^2 + C sum_i H_i(w)

      (``K`` = number of weights; the paper's adaptive M3N P2 with ``tau``
      eliminated, same ``C`` and ``lam`` as the paper.)  Algorithm 3: alternate
      an M3N solved by max-margin exponentiated gradient on features rescaled
      by ``beta`` (warm-started) with the closed-form update ``beta_k^2 = lam
      tau_k = K |w_k| / ||w||_1``; weights whose ``tau_k`` falls below
      ``tau_threshold`` leave the model.  Only ``C / lam`` matters; the paper
      keeps ``C`` fixed and tunes ``lam``.

    Larger ``C`` or ``lam``-radius (subgradient) means weaker regularisation
    and more non-zero weights; larger ``lam`` in the EM form means stronger
    regularisation.  The user guide (:ref:`l1m3n`) maps the three forms to the
    paper's notation and compares the solvers.

    Parameters
    ----------
    structure : {"multiclass", "chain", "matching", "mincut"}, BaseStructure or None, \
            default=None
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
        Weight of the summed hinge losses (cutting plane, EM).
    lam : float, default=1.0
        L1-ball radius (subgradient) or weight of ``||w||_1^2 / K`` (EM); > 0.
    max_iter : int or None, default=None
        Iterations of the solver: cutting-plane passes (default 200),
        subgradient steps (1000) or epochs when ``online`` (50), EM iterations
        (30; the paper runs 15).  (Unlike the EG estimators, whose
        ``max_iter`` counts passes over the data, a subgradient step or an EM
        iteration is not one pass.)
    tol : float, default=1e-3
        Subgradient: certified relative duality gap.  EM: largest change of
        a scaling factor ``beta_k`` in one iteration (``mean(beta^2) = 1``).
        (The cutting plane stops on ``epsilon``.)
    epsilon : float, default=1e-3
        Cutting-plane precision: outputs violating their margin by more than
        ``epsilon`` beyond the current slack enter the working set.
    eta0 : float, default=0.1
        Subgradient step-size multiplier.
    online : bool, default=False
        Subgradient: one projected step per example instead of full batches.
    inner_max_iter : int, default=50
        EM: passes of each exponentiated-gradient M3N step.
    tau_threshold : float, default=1e-4
        EM: a weight whose adaptive variance ``tau_k = beta_k^2 / lam`` falls
        below it leaves the model for good (the paper's ``1e-4``, read as a
        threshold on ``tau``; see :mod:`sklearn_struct.solvers.adaptive_m3n`).
        Since ``mean(tau) = 1 / lam``, it removes weights smaller than
        ``1e-4 * lam`` times the mean absolute weight.  ``0`` disables it.
    warm_start : bool, default=False
        Start from the previous solution: the subgradient method from the
        previous weights, EM from the previous scaling factors (and, on the
        same number of parts, the previous EG dual variables), the cutting
        plane with its first separation at the previous weights (its working
        sets restart, as they belong to the previous examples).
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
        see :meth:`~sklearn_struct.structures.BaseStructure.for_classes`).
    support_ : ndarray of bool of shape (n_features,)
        Input features with a non-zero weight for at least one label; for
        matching and min-cut, the non-zero weights (``n_features = n_weights``).
    n_features_in_ : int
        Number of input features; for matching and min-cut, the number of
        weights.
    feature_names_in_ : ndarray of str
        Column names of a flat ``X`` given as a DataFrame with string columns.
    n_iter_ : int
        Passes, steps/epochs or EM iterations run.
    objective_ : float
        Final objective of the solver's formulation (P1, P1' or P4).
    history_ : dict of ndarray
        Per iteration of the solver: ``objective``, bounds (``lower_bound``,
        ...) and ``n_nonzero`` weights, one 1-D array per key.
    beta_ : ndarray of shape (n_weights,)
        EM only: final scaling factors.

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
        "structure": [BaseStructure, StrOptions(set(STRUCTURE_NAMES)),
                      None],
        "solver": [StrOptions({"cutting_plane", "subgradient", "em"})],
        "C": [Interval(Real, 0, None, closed="neither")],
        "lam": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left"), None],
        "tol": [Interval(Real, 0, None, closed="left")],
        "epsilon": [Interval(Real, 0, None, closed="left")],
        "eta0": [Interval(Real, 0, None, closed="neither")],
        "online": ["boolean"],
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
        structure=None,
        solver="cutting_plane",
        C=1.0,
        lam=1.0,
        max_iter=None,
        tol=1e-3,
        epsilon=1e-3,
        eta0=0.1,
        online=False,
        inner_max_iter=50,
        tau_threshold=1e-4,
        warm_start=False,
        n_jobs=None,
        random_state=None,
        verbose=0,
    ):
        self.structure = structure
        self.solver = solver
        self.C = C
        self.lam = lam
        self.max_iter = max_iter
        self.tol = tol
        self.epsilon = epsilon
        self.eta0 = eta0
        self.online = online
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
        hinge = StructuredHinge(self.structure_.training_structure(), batch, Y,
                                n_jobs=self.n_jobs)
        result = self._solve(hinge, previous)
        self._set_weights(batch, result.coef)
        self.support_ = np.asarray(self.structure_.feature_support(batch, self.weights_),
                                   dtype=bool)
        self.n_iter_ = int(result.n_iter)
        self.objective_ = float(result.objective)
        self.history_ = as_history(result.history)
        if self.solver != "em":  # EM's scaling factors and duals of an earlier fit are stale
            self.__dict__.pop("beta_", None)
            self.__dict__.pop("_eg_state", None)
        if not result.converged:
            warnings.warn(
                f"L1M3N(solver={self.solver!r}) did not converge in {self.n_iter_} iterations "
                f"({self._convergence_criterion()}); increase max_iter.",
                ConvergenceWarning,
            )
        return self

    def _operations_needed(self, structure):
        """Structure operations the chosen solver needs (checked before training)."""
        return HINGE_OPERATIONS + ("argmax",) + (("marginals",) if self.solver == "em" else ())

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
                hinge, self.C, epsilon=self.epsilon, coef_init=previous, verbose=self.verbose,
                max_iter=self.max_iter or DEFAULT_MAX_ITER["cutting_plane"],
            )
        if self.solver == "subgradient":
            default = DEFAULT_MAX_ITER["online_subgradient" if self.online else "subgradient"]
            return l1_projected_subgradient(
                hinge, self.lam, max_iter=self.max_iter or default, tol=self.tol,
                eta0=self.eta0, online=self.online, coef_init=previous, random_state=rng,
                verbose=self.verbose,
            )
        eg_state = self.__dict__.get("_eg_state")
        same_examples = (
            previous is not None and eg_state is not None
            and eg_state.theta.shape[0] == int(hinge.batch.part_offsets[-1])
        )
        beta = self.__dict__.get("beta_") if previous is not None else None
        result = adaptive_m3n(
            hinge, self.lam, self.C, max_iter=self.max_iter or DEFAULT_MAX_ITER["em"],
            tol=self.tol, inner_max_iter=self.inner_max_iter,
            tau_threshold=self.tau_threshold, beta_init=beta,
            eg_state=eg_state if same_examples else None, random_state=rng,
            n_jobs=self.n_jobs, verbose=self.verbose,
        )
        self.beta_ = result.beta
        self._eg_state = result.eg_state
        return result

    def _convergence_criterion(self):
        if self.solver == "cutting_plane":
            return f"outputs still violating their margin by more than epsilon={self.epsilon}"
        if self.solver == "subgradient":
            return f"certified relative duality gap above tol={self.tol}"
        return f"scaling factors beta still moving by more than tol={self.tol} per iteration"
