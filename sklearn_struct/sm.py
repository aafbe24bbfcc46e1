"""Surrogate minimisation classifiers (Zhang, Kwok & Yeung, Machine Learning 2007).

:class:`SMLogisticRegression` fits (binary, multinomial or one-vs-rest) logistic
regression with the SM algorithms SM-1 ... SM-5 of the paper or Newton's method;
:class:`SMAdaBoostClassifier` fits the exponential loss of binary AdaBoost, AdaBoost.M2
or AdaBoost.MH over fixed features with the parallel-update SM algorithm (section 7);
:func:`fit_log_linear` is the SM variant of generalized iterative scaling (section 8).
The mathematics is in :mod:`sklearn_struct.solvers.sm`.
"""

import warnings
from numbers import Integral, Real

import numpy as np
from scipy.special import expit, softmax
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from ._validation import _check_data_set, _check_label_kinds, _first_nonfinite
from .utils._renamed import refuse_renamed
from .solvers.sm import (
    METHODS,
    BinaryExponentialLoss,
    BinaryLogisticLoss,
    M2ExponentialLoss,
    MHExponentialLoss,
    MultinomialLogisticLoss,
    log_linear_sm,
    sm_minimize,
)

__all__ = ["SMLogisticRegression", "SMAdaBoostClassifier", "fit_log_linear"]

#: ``tol`` means a certified relative duality gap everywhere else; surrogate maximization has none.
_OBJECTIVE_TOL = {"tol": ("objective_tol", "surrogate maximization has no duality gap to "
                          "certify, and tol means a certified relative duality gap elsewhere "
                          "in the package")}

#: methods with a multinomial form: eq. 35 (sm3), eq. 37 (sm4), the diagonal bound (sm5), Newton
MULTINOMIAL_METHODS = ("sm3", "sm4", "sm5", "newton")


class _BaseSMClassifier(ClassifierMixin, BaseEstimator):
    """Validation, label handling, the fit loop over sub-problems and prediction.

    Subclasses define ``_problems`` (the losses to minimise), ``_link_scale`` and
    ``_softmax_link`` (how decision scores map to probabilities).
    """

    def __new__(cls, *args, **kwargs):
        # before __init__, which Python would fail with no word of the new name
        old = {name: kwargs[name] for name in _OBJECTIVE_TOL.keys() & kwargs}
        refuse_renamed(cls.__name__, old, _OBJECTIVE_TOL)
        return super().__new__(cls)

    _parameter_constraints = {
        "C": [Interval(Real, 0, None, closed="right")],
        "penalty": [StrOptions({"l2"}), None],
        "fit_intercept": ["boolean"],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "objective_tol": [Interval(Real, 0, None, closed="left")],
        "verbose": ["verbose"],
        "warm_start": ["boolean"],
    }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the model to the training data.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training vectors (sparse matrices are used as CSR without densifying).
        y : array-like of shape (n_samples,)
            Class labels (any hashable labels, at least two distinct classes).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights; each example's loss is multiplied by its weight.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        _check_data_set(X, type(self).__name__, flat_only=True)
        _check_label_kinds(y)
        X, y = validate_data(
            self, X, y, accept_sparse="csr", dtype=np.float64, order="C", ensure_all_finite=False
        )
        _check_finite(X)
        check_classification_targets(y)
        sample_weight = _check_sample_weight(
            sample_weight, X, dtype=np.float64, ensure_non_negative=True
        )
        self.classes_, encoded = np.unique(y, return_inverse=True)
        weight_per_class = np.bincount(encoded, weights=sample_weight, minlength=len(self.classes_))
        present = self.classes_[weight_per_class > 0]
        if len(present) < 2:
            raise ValueError(
                f"{type(self).__name__} needs examples of at least 2 classes with positive "
                f"sample_weight; got {len(present)} class ({present.tolist()})."
            )
        C = np.inf if self.penalty is None else self.C
        problems = self._problems(encoded, len(self.classes_), sample_weight)
        n_rows = len(problems) if len(problems) > 1 else problems[0][0].n_outputs
        coef_init = intercept_init = None
        if self.warm_start and getattr(self, "coef_", None) is not None:
            if self.coef_.shape == (n_rows, X.shape[1]):
                coef_init, intercept_init = self.coef_, self.intercept_
        results = []
        for row, (loss, method) in enumerate(problems):
            rows = slice(row, row + 1) if len(problems) > 1 else slice(None)
            results.append(
                sm_minimize(
                    X,
                    loss,
                    method=method,
                    C=C,
                    fit_intercept=self.fit_intercept,
                    max_iter=self.max_iter,
                    objective_tol=self.objective_tol,
                    coef_init=None if coef_init is None else coef_init[rows],
                    intercept_init=None if intercept_init is None else intercept_init[rows],
                    verbose=self.verbose,
                )
            )
        self.coef_ = np.vstack([result.coef for result in results])
        self.intercept_ = np.concatenate([result.intercept for result in results])
        self.n_iter_ = np.array([result.n_iter for result in results], dtype=np.int32)
        self.loss_history_ = _summed_histories([result.objective for result in results])
        if not all(result.converged for result in results):
            warnings.warn(
                f"{type(self).__name__} did not converge in max_iter={self.max_iter} "
                f"iterations (objective_tol={self.objective_tol}); increase max_iter or use a "
                "faster method.",
                ConvergenceWarning,
            )
        return self

    def decision_function(self, X):
        """Linear scores ``X @ coef_.T + intercept_``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
            For two classes, the score of ``classes_[1]``; otherwise one column per class.
        """
        check_is_fitted(self)
        _check_data_set(X, type(self).__name__, flat_only=True)
        X = validate_data(
            self, X, accept_sparse="csr", dtype=np.float64, reset=False, ensure_all_finite=False
        )
        _check_finite(X)
        scores = np.asarray(X @ self.coef_.T) + self.intercept_
        return scores.ravel() if scores.shape[1] == 1 else scores

    def predict(self, X):
        """Predict class labels.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        labels : ndarray of shape (n_samples,)
            Predicted labels, taken from ``classes_``.
        """
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(np.intp)]
        return self.classes_[np.argmax(scores, axis=1)]

    def predict_proba(self, X):
        """Class probabilities.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Probabilities in the order of ``classes_``; see the class notes for the link.
        """
        scores = self._link_scale * self.decision_function(X)
        if scores.ndim == 1:
            positive = expit(scores)
            return np.column_stack([1.0 - positive, positive])
        if self._softmax_link(len(self.classes_)):
            return softmax(scores, axis=1)
        proba = expit(scores)
        return proba / proba.sum(axis=1, keepdims=True)

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
            Log-probabilities in the order of ``classes_``.
        """
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))


def _check_finite(X):
    """Raise a ValueError naming the first example holding NaN or infinity."""
    found = _first_nonfinite(X)
    if found is not None:
        example, feature, value = found
        raise ValueError(
            f"Input X contains NaN or infinity: example {example}, feature {feature} is "
            f"{value}; every feature value must be finite."
        )


def _summed_histories(histories):
    """Sum per-problem objective histories, each held at its final value once it stopped."""
    length = max(len(history) for history in histories)
    return np.sum([np.pad(h, (0, length - len(h)), mode="edge") for h in histories], axis=0)


class SMLogisticRegression(_BaseSMClassifier):
    """Logistic regression fitted by the surrogate minimisation (SM) algorithms of Zhang et al.

    Minimises the scikit-learn objective ``1/2 ||W||^2 + C sum_i s_i loss_i`` (the same as
    :class:`~sklearn.linear_model.LogisticRegression`; ``s_i`` are sample weights and the
    intercept is not penalised) with one of the SM algorithms of Zhang, Kwok & Yeung
    (2007), section 4, or Newton's method.  An SM iteration replaces the objective by a
    surrogate that lies above it and touches it at the current point, then minimises the
    surrogate, so the objective can only decrease.

    ============  ======================================  ====================================
    ``method``    surrogate (paper)                       cost per iteration
    ============  ======================================  ====================================
    ``"sm1"``     Jensen, gradient SM (eq. 12-13)         O(nnz), not guaranteed to descend
    ``"sm2"``     first-order Taylor of ln cosh sqrt      d x d solve (like Newton)
                  (Jaakkola-Jordan, eq. 15-16)
    ``"sm3"``     low quadratic bound 1/4 X^T X           O(d^2) after one factorisation
                  (eq. 21-22; multinomial: eq. 35)
    ``"sm4"``     Jensen + first-order Taylor: the        O(nnz), closed form
                  parallel-update Bregman algorithm
                  of Collins et al. (eq. 24-25; eq. 37)
    ``"sm5"``     Jensen + low quadratic bound            O(nnz), closed form
                  (eq. 26-27)
    ``"newton"``  Newton's method (eq. 20), reference     d x d solve
    ============  ======================================  ====================================

    Parameters
    ----------
    method : {"sm1", "sm2", "sm3", "sm4", "sm5", "newton"}, default="sm4"
        The algorithm (table above).  sm2, sm3 and newton form ``d x d`` matrices
        (``(K d) x (K d)`` for multinomial Newton): for wide sparse data use sm4, sm5 or sm1.
    C : float, default=1.0
        Inverse of the L2 penalty strength, as in scikit-learn (larger is weaker);
        ``np.inf`` removes the penalty (the paper's setting).
    penalty : {"l2", None}, default="l2"
        ``None`` is the same as ``C=np.inf``.
    fit_intercept : bool, default=True
        Fit an unpenalised intercept: jointly as an extra feature for sm2, sm3 and
        newton, by the CSM alternation of section 5 (coefficients, then intercept, each
        with its own surrogate) for sm1, sm4 and sm5.
    multi_class : {"auto", "multinomial", "ovr"}, default="auto"
        For more than two classes: ``"multinomial"`` minimises the softmax loss (all
        rows penalised, as ``LogisticRegression``) with sm3 (Bohning's bound, eq. 35), sm4
        (parallel Bregman update, eq. 37), sm5 (Bohning's bound made diagonal by the
        inequality ``x x^T <= ||x||_1 diag|x|``, our extension) or newton; ``"ovr"`` fits
        one binary problem per class with any method; ``"auto"`` is ``"multinomial"``
        for the methods that have a multinomial form and ``"ovr"`` for sm1 and sm2.
        Ignored for two classes.
    max_iter : int, default=1000
        Maximum number of iterations (per class for one-vs-rest).
    objective_tol : float, default=1e-5
        Stop when the objective changes by at most ``objective_tol`` times its initial value in one
        iteration (the criterion of section 4.6).
    verbose : int, default=0
        Print the objective every 10 iterations (every iteration if ``>= 2``).
    warm_start : bool, default=False
        Start from the previous ``coef_`` and ``intercept_`` when their shapes fit.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
        Coefficients in the units of the input features (one row for two classes).
    intercept_ : ndarray of shape (1,) or (n_classes,)
        Intercepts (zeros if ``fit_intercept=False``).
    n_iter_ : ndarray of shape (1,) or (n_classes,)
        Iterations run (one entry per class for one-vs-rest).
    loss_history_ : ndarray of shape (``max(n_iter_) + 1``,)
        The objective divided by ``C``, ``sum_i s_i loss_i + ||W||^2 / (2 C)``, at the start
        and after every iteration (for one-vs-rest, the sum over classes, each held at its
        final value once it has stopped).  Non-increasing for every method.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Feature names, when ``X`` has string column names.

    See Also
    --------
    sklearn.linear_model.LogisticRegression : the same objective with quasi-Newton and
        coordinate-descent solvers.
    SMAdaBoostClassifier : the exponential loss (section 7).

    Notes
    -----
    *Normalisation.* SM-1, SM-4 and SM-5 assume ``sum_j |x_ij| <= 1`` for every example
    (eq. 10; ``<= 1/2`` for the multinomial eq. 37).  The solver scales all features by
    one factor so that this holds and scales the coefficients back, so ``coef_`` is in
    the units of ``X``.

    *Penalty.* The paper is unpenalised.  The L2 term is a convex quadratic, so it is
    added exactly to each surrogate, which then still majorises the objective; each
    M-step minimises that sum (for sm4 a one-dimensional root per coefficient instead of
    the closed form).  Every method except sm1 and newton is therefore monotone by
    construction; sm1 and newton halve a step that would increase the objective, which
    leaves the pure method unchanged whenever it descends.  Derivations:
    :mod:`sklearn_struct.solvers.sm`.

    *Probabilities.* Binary: ``sigmoid(decision)``; multinomial: softmax; one-vs-rest:
    the per-class sigmoids normalised to sum to one.

    *Numerical range.* The normalisation above makes the features' scale irrelevant to
    the steps: measured on a small multinomial problem
    (``tests/estimators/test_numerical_limits.py``) for ``C`` from 1e-8 to 1e8 and
    features scaled by 1e-6 to 1e6, every fit converges within the default ``max_iter``
    to finite coefficients; a fit that does not converge ends with a ``ConvergenceWarning``.

    References
    ----------
    Z. Zhang, J. T. Kwok and D.-Y. Yeung. Surrogate maximization/minimization algorithms
    and extensions. Machine Learning 69:1-33, 2007.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn_struct.sm import SMLogisticRegression
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = SMLogisticRegression(method="sm3", objective_tol=1e-8).fit(X, y)
    >>> clf.coef_.shape, round(clf.score(X, y), 2)
    ((3, 4), 0.97)
    >>> bool(all(clf.loss_history_[1:] <= clf.loss_history_[:-1]))
    True
    """

    _parameter_constraints = {
        **_BaseSMClassifier._parameter_constraints,
        "method": [StrOptions(set(METHODS))],
        "multi_class": [StrOptions({"auto", "multinomial", "ovr"})],
    }
    _link_scale = 1.0

    def __init__(
        self,
        *,
        method="sm4",
        C=1.0,
        penalty="l2",
        fit_intercept=True,
        multi_class="auto",
        max_iter=1000,
        objective_tol=1e-5,
        verbose=0,
        warm_start=False,
    ):
        self.method = method
        self.C = C
        self.penalty = penalty
        self.fit_intercept = fit_intercept
        self.multi_class = multi_class
        self.max_iter = max_iter
        self.objective_tol = objective_tol
        self.verbose = verbose
        self.warm_start = warm_start

    def _multinomial(self, n_classes):
        if n_classes == 2:
            return False
        if self.multi_class == "multinomial":
            if self.method not in MULTINOMIAL_METHODS:
                raise ValueError(
                    f"method={self.method!r} has no multinomial form; use one of "
                    f"{MULTINOMIAL_METHODS} or multi_class='ovr'."
                )
            return True
        return self.multi_class == "auto" and self.method in MULTINOMIAL_METHODS

    def _problems(self, encoded, n_classes, sample_weight):
        if self._multinomial(n_classes):
            return [(MultinomialLogisticLoss(encoded, n_classes, sample_weight), self.method)]
        if n_classes == 2:
            return [(BinaryLogisticLoss(2.0 * encoded - 1.0, sample_weight), self.method)]
        return [
            (BinaryLogisticLoss(np.where(encoded == k, 1.0, -1.0), sample_weight), self.method)
            for k in range(n_classes)
        ]

    _softmax_link = _multinomial  # one-vs-rest normalises the per-class sigmoids


class SMAdaBoostClassifier(_BaseSMClassifier):
    """Parallel-update AdaBoost over fixed features, fitted by the SM algorithm of section 7.

    The columns of ``X`` are the weak hypotheses ``h_j(x)`` (for instance the outputs of
    decision stumps in {-1, +1}, or any real features); the classifier is the linear
    combination ``F(x) = W h(x) + b`` minimising an exponential loss plus an optional L2
    penalty, ``1/2 ||W||^2 + C sum_i s_i loss_i``:

    * two classes: binary AdaBoost, ``loss_i = exp(-y_i F(x_i))`` (eq. 38);
    * ``multi_class="m2"``: AdaBoost.M2, ``loss_i = sum_l exp(F_l(x_i) - F_{y_i}(x_i))``
      (eq. 39);
    * ``multi_class="mh"``: AdaBoost.MH, ``loss_i = sum_l exp(-yt_il F_l(x_i))`` with
      ``yt_il = +1`` for the true class and -1 otherwise (eq. 40).

    Every coefficient moves at once by the closed-form Jensen update of section 7 (the
    parallel-update algorithm of Collins, Schapire & Singer), so the loss decreases at
    every iteration.  With the penalty each coordinate solves a one-dimensional
    equation instead (see :class:`SMLogisticRegression`, Notes).

    Parameters
    ----------
    C : float, default=1.0
        Inverse of the L2 penalty strength; ``np.inf`` removes it (the paper's
        setting, in which the loss of separable data has no minimiser).
    penalty : {"l2", None}, default="l2"
        ``None`` is the same as ``C=np.inf``.
    fit_intercept : bool, default=True
        Fit an unpenalised intercept (per class), alternating with the coefficients
        (CSM, section 5).
    multi_class : {"m2", "mh"}, default="m2"
        The multi-class exponential loss; ignored for two classes.
    max_iter : int, default=1000
        Maximum number of iterations.
    objective_tol : float, default=1e-5
        Stop when the objective changes by at most ``objective_tol`` times its initial value.
    verbose : int, default=0
        Print the objective every 10 iterations (every iteration if ``>= 2``).
    warm_start : bool, default=False
        Start from the previous ``coef_`` and ``intercept_`` when their shapes fit.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
        Weights of the weak hypotheses (one row for two classes).
    intercept_ : ndarray of shape (1,) or (n_classes,)
        Intercepts.
    n_iter_ : ndarray of shape (1,)
        Iterations run.
    loss_history_ : ndarray of shape (``n_iter_[0] + 1``,)
        ``sum_i s_i loss_i + ||W||^2 / (2 C)`` at the start and after every iteration.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Feature names, when ``X`` has string column names.

    See Also
    --------
    SMLogisticRegression : the logistic loss with the same family of algorithms.

    Notes
    -----
    Probabilities use the population minimisers of the exponential losses (Friedman,
    Hastie & Tibshirani, 2000): ``sigmoid(2 F)`` for two classes, ``softmax(2 F)`` for
    M2, and the per-class ``sigmoid(2 F_l)`` normalised to sum to one for MH.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.sm import SMAdaBoostClassifier
    >>> rng = np.random.RandomState(0)
    >>> X = rng.randn(200, 5)
    >>> y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    >>> stumps = np.sign(X)  # one weak hypothesis per feature
    >>> clf = SMAdaBoostClassifier(C=10.0).fit(stumps, y)
    >>> round(clf.score(stumps, y), 2)
    0.89
    """

    _parameter_constraints = {
        **_BaseSMClassifier._parameter_constraints,
        "multi_class": [StrOptions({"m2", "mh"})],
    }
    _link_scale = 2.0

    def __init__(
        self,
        *,
        C=1.0,
        penalty="l2",
        fit_intercept=True,
        multi_class="m2",
        max_iter=1000,
        objective_tol=1e-5,
        verbose=0,
        warm_start=False,
    ):
        self.C = C
        self.penalty = penalty
        self.fit_intercept = fit_intercept
        self.multi_class = multi_class
        self.max_iter = max_iter
        self.objective_tol = objective_tol
        self.verbose = verbose
        self.warm_start = warm_start

    def _problems(self, encoded, n_classes, sample_weight):
        if n_classes == 2:
            return [(BinaryExponentialLoss(2.0 * encoded - 1.0, sample_weight), "sm4")]
        loss = M2ExponentialLoss if self.multi_class == "m2" else MHExponentialLoss
        return [(loss(encoded, n_classes, sample_weight), "sm4")]

    def _softmax_link(self, n_classes):
        return self.multi_class == "m2"  # MH normalises the per-class sigmoids


def fit_log_linear(A, h, prior=None, *, method="sm", max_iter=10000, moment_tol=1e-10,
                   **renamed):
    """Fit the log-linear model ``p_i = pi_i prod_r lambda_r^{a_ri}`` to linear constraints.

    Finds the distribution ``p`` over cells ``i`` closest to ``prior`` in KL divergence
    subject to ``sum_i a_ri p_i = h_r`` (Darroch & Ratcliff, 1972), by the SM algorithm of
    section 8 (eq. 45-46), which maximises the dual ``F(eta) = -eta.h - ln sum_i pi_i
    exp(-sum_r eta_r a_ri)`` monotonically and keeps ``sum_i p_i = 1`` at every
    iteration, or by the original generalized iterative scaling.

    Parameters
    ----------
    A : array-like of shape (n_constraints, n_cells)
        Non-negative ``a_ri``; every column sums to 1 and every row has a positive entry.
    h : array-like of shape (n_constraints,)
        Positive target expectations summing to 1.
    prior : array-like of shape (n_cells,), default=None
        Positive ``pi`` (uniform if None); normalised to sum to 1.
    method : {"sm", "gis"}, default="sm"
        ``"sm"``: the SM update with ``p`` normalised; ``"gis"``: Darroch & Ratcliff's
        update ``p_i <- p_i prod_r (h_r / g_r)^{a_ri}`` from ``p = pi``, whose iterates sum
        to at most 1 (the two differ only by that normalisation).
    max_iter : int, default=10000
        Maximum number of iterations (GIS converges linearly, often slowly).
    moment_tol : float, default=1e-10
        Stop when ``max_r |sum_i a_ri p_i - h_r| <= moment_tol``.
    **renamed
        Refused: ``tol``, the old name of ``moment_tol``, raises a TypeError
        naming it.

    Returns
    -------
    result : LogLinearResult
        Named tuple ``(probabilities, multipliers, n_iter, dual_objective, converged)``:
        ``p``, the Lagrange multipliers ``eta`` (``lambda_r = exp(-eta_r)`` up to
        normalisation), iterations run, ``F(eta)`` at the start and after each iteration
        (non-decreasing), and whether ``moment_tol`` was reached.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.sm import fit_log_linear
    >>> A = np.array([[1.0, 0.5, 0.0], [0.0, 0.5, 1.0]])
    >>> result = fit_log_linear(A, [0.3, 0.7])
    >>> np.round(A @ result.probabilities, 6)
    array([0.3, 0.7])
    """
    refuse_renamed("fit_log_linear", renamed,
                   {"tol": ("moment_tol", "it bounds the moments' mismatch, not a duality gap")})
    A = np.asarray(A, dtype=np.float64)
    h = np.asarray(h, dtype=np.float64)
    if A.ndim != 2 or h.shape != (A.shape[0],):
        raise ValueError(
            f"A must be 2-D (n_constraints, n_cells) and h of shape (n_constraints,); "
            f"got A {A.shape} and h {h.shape}"
        )
    if not (np.all(np.isfinite(A)) and np.all(np.isfinite(h))):
        raise ValueError("A and h must be finite")
    if np.any(A < 0) or not np.allclose(A.sum(axis=0), 1.0):
        bad = int(np.argmax((A < 0).any(axis=0) | ~np.isclose(A.sum(axis=0), 1.0)))
        raise ValueError(f"column {bad} of A must be non-negative and sum to 1")
    if np.any(A.max(axis=1) <= 0):
        raise ValueError(f"row {int(np.argmin(A.max(axis=1)))} of A has no positive entry")
    if np.any(h <= 0) or not np.isclose(h.sum(), 1.0):
        raise ValueError(f"h must be positive and sum to 1, got {h}")
    prior = np.full(A.shape[1], 1.0) if prior is None else np.asarray(prior, dtype=np.float64)
    if prior.shape != (A.shape[1],) or np.any(~np.isfinite(prior)) or np.any(prior <= 0):
        raise ValueError(f"prior must hold {A.shape[1]} positive finite values")
    if method not in ("sm", "gis"):
        raise ValueError(f"method must be 'sm' or 'gis', got {method!r}")
    result = log_linear_sm(A, h, prior / prior.sum(), method=method, max_iter=max_iter,
                           moment_tol=moment_tol)
    if not result.converged:
        warnings.warn(
            f"fit_log_linear did not reach moment_tol={moment_tol} in max_iter={max_iter} "
            "iterations",
            ConvergenceWarning,
        )
    return result
