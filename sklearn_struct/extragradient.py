"""DualExtragradientMatcher: max-margin learning of matchings, min-cuts and chains."""

import numbers
import time
import warnings

import numpy as np
from sklearn.base import _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions

from ._early_stopping import EARLY_STOPPING_CONSTRAINTS, EarlyStopping
from .base import STRUCTURE_CONSTRAINT, StructuredEstimator
from .solvers.extragradient import dual_extragradient

__all__ = ["DualExtragradientMatcher"]


class DualExtragradientMatcher(StructuredEstimator):
    """Max-margin structured learner by the dual extragradient method.

    Solves ``min_{w in W} sum_i max_y [w.f_i(y) + loss_i(y)] - w.f_i(y_i)``
    (Taskar, Lacoste-Julien & Jordan 2006, eq. 8) as a saddle point with
    ``W = {||w|| <= radius}`` (plus the sign constraints of the structure,
    ``w_edge >= 0`` for min-cut), by the Euclidean dual extragradient of
    Figure 2 or its Bregman version (Figure 4), with step ``1/L`` and averaged
    output.

    Parameters
    ----------
    structure : str, BaseStructure or None, default="matching"
        A name of the registry ``sklearn_struct.structures.STRUCTURES`` (see
        :ref:`parameters`), a structure object, or None.
        ``"matching"``: ``X[i] = (edge_features, edges)`` and ``y[i]`` a 0/1
        vector over the edges (:class:`MatchingStructure`; pass
        ``MatchingStructure(false_positive_cost=1, false_negative_cost=3)`` for
        the costs of eq. 10).  ``"mincut"``: ``X[i] = (node_features, edges,
        edge_features)``, ``y[i]`` a 0/1 vector over the nodes.  ``"chain"``:
        ``X[i]`` a ``(T_i, d)`` array, ``y[i]`` labels of any type.
        ``"multiclass"`` (or ``None`` with a 2-D ``X``): flat samples.  Any
        structure object with loss-augmented inference and a projection (or
        marginals, for ``geometry="entropic"``) works; it is used as given and
        never modified.
    radius : float, default=inf
        ``gamma``, radius of the parameter ball (2-norm, or 1-norm with
        ``geometry="entropic"``).  Smaller = stronger regularisation; ``inf``
        runs the unregularised path of section 6 (use with early stopping).
    geometry : {"auto", "euclidean", "entropic"}, default="auto"
        ``"euclidean"``: 2-norm ball and Euclidean projections of the
        structure's outputs (Figure 2; matching, min-cut).  ``"entropic"``:
        L1 ball through the entropic simplex setup of Example 1 (needs a
        finite radius) and, for structures with marginals (chains), KL
        projections = marginals (Example 2).  ``"auto"``: ``"euclidean"``
        where the structure has a Euclidean projection, ``"entropic"``
        otherwise (chains and flat samples, which then need a finite
        ``radius``); the choice is ``geometry_``.
    memory : {"full", "low"}, default="full"
        ``"low"``: the memory-efficient variant of Figure 6: besides the
        data, memory of the size of ``w`` plus one chunk of examples (the
        steps, losses, objective, gap and step size are all computed chunk by
        chunk); same iterates.  Costs a copy of every chunk's rows per pass.
    max_iter : int, default=100
        Maximum number of passes over the training data.
    tol : float, default=1e-3
        Stop when the gap function (eq. 18) falls below ``tol`` times the
        objective (finite radius only; with ``radius=inf`` the gap is
        infinite and the fit runs ``max_iter`` passes or stops early).
    early_stopping : bool, default=False
        Hold out ``validation_fraction`` of the examples, score the averaged
        weights after every pass, keep the best and stop after
        ``n_iter_no_change`` passes without improvement.
    validation_fraction : float, default=0.1
        Fraction of the examples held out for early stopping, in ``(0, 1)``
        (rounded up to whole examples); used only when ``early_stopping=True``.
    n_iter_no_change : int, default=10
        Passes without a better validation score after which early stopping
        stops; used only when ``early_stopping=True``.
    warm_start : bool, default=False
        Continue the previous run of the solver (its accumulated directions
        and averages) instead of starting from scratch: on the same training
        examples, a fit of ``n`` passes after one of ``m`` passes gives the
        weights of one fit of ``m + n`` passes.  Raises a ``ValueError`` on
        different examples.
    n_jobs : int, default=None
        joblib workers over chunks of examples for prediction, scoring and
        the early-stopping validation; the extragradient passes themselves run
        on the whole batch at once.
    random_state : int, RandomState instance or None, default=None
        Seeds the only random choice of the method: the validation split of
        early stopping.
    verbose : int, default=0
        Print one line per pass (its time, and the validation score with
        early stopping), then the final objective and gap.

    Attributes
    ----------
    weights_ : ndarray of shape (n_weights,)
        Learned weights in the structure's layout (the averaged iterate, or
        the best one on the validation set with early stopping).
    coef_ : ndarray
        The structure's view of the weights (``weight_attributes``): the
        weight vector itself for matching and min-cut, the per-label input
        weights of shape (n_classes, n_features) for chains and flat samples
        (chains add ``transition_``, ``start_transition_`` and
        ``end_transition_``).
    structure_ : BaseStructure
        The structure used: a new one for a name, the ``structure`` object
        itself when one is passed (never modified), unless it names labels to
        resolve (:meth:`~sklearn_struct.structures.OutputSpace.for_classes`).
    classes_ : ndarray
        Labels (``[0, 1]`` for matching and min-cut).
    n_iter_ : int
        Number of passes run.
    objective_ : float
        Sum of training hinge losses at the returned weights.
    history_ : dict of ndarray
        Per pass: ``objective`` (sum of training hinge losses of the averaged
        weights), ``gap`` (gap function, ``inf`` for an infinite radius),
        ``seconds`` (wall time of the pass) and, with early stopping,
        ``validation_score``.
    validation_scores_ : ndarray or None
        Score on the validation set after every pass (early stopping).
    best_iteration_ : int
        Pass whose weights are kept.
    lipschitz_ : float
        ``L``; the step size is ``1/L``.
    geometry_ : {"euclidean", "entropic"}
        The geometry used: ``geometry``, or the one ``"auto"`` chose.
    n_features_in_ : int
        Number of input features per unit (edge features of a matching,
        token features of a chain); for min-cut, the number of weights.

    Notes
    -----
    *Numerical range.*  The step size ``1 / L`` follows the scale of the
    features, so any finite feature scale is handled alike; features that are
    all zero (e.g. 0 feature columns) give ``L = 0``, nothing to learn, and
    zero weights.  Measured on small flat and chain problems
    (``tests/estimators/test_numerical_limits.py``) for ``radius`` from 1e-8 to 1e8 and
    features scaled by 1e-6 to 1e6, the weights are always finite; the gap
    criterion (``tol=1e-3``) is met within the default ``max_iter`` only for
    very small radii (the averaged iterate converges as ``O(1/t)``), otherwise
    the fit ends with a ``ConvergenceWarning`` and finite, usable weights.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.extragradient import DualExtragradientMatcher
    >>> rng = np.random.RandomState(0)
    >>> edges = np.array([[j, k] for j in range(3) for k in range(3)])
    >>> diagonal = (edges[:, 0] == edges[:, 1]).astype(float)
    >>> X = [(np.c_[diagonal, rng.rand(9)], edges) for _ in range(4)]
    >>> y = [diagonal.astype(int) for _ in range(4)]
    >>> model = DualExtragradientMatcher(max_iter=50).fit(X, y)
    >>> model.score(X, y)
    1.0
    """

    _parameter_constraints = {
        "structure": STRUCTURE_CONSTRAINT,
        "radius": [Interval(numbers.Real, 0, np.inf, closed="right")],
        "geometry": [StrOptions({"auto", "euclidean", "entropic"})],
        "memory": [StrOptions({"full", "low"})],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        **EARLY_STOPPING_CONSTRAINTS,
        "warm_start": ["boolean"],
        "n_jobs": [None, numbers.Integral],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        *,
        structure="matching",
        radius=np.inf,
        geometry="auto",
        memory="full",
        max_iter=100,
        tol=1e-3,
        early_stopping=False,
        validation_fraction=0.1,
        n_iter_no_change=10,
        warm_start=False,
        n_jobs=None,
        random_state=None,
        verbose=0,
    ):
        self.structure = structure
        self.radius = radius
        self.geometry = geometry
        self.memory = memory
        self.max_iter = max_iter
        self.tol = tol
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    def _geometry(self, structure):
        """``geometry``, or what ``"auto"`` takes for ``structure``."""
        if self.geometry != "auto":
            return self.geometry
        return "euclidean" if structure.supports("project") else "entropic"

    def _operations_needed(self, structure):
        geometry = self._geometry(structure)
        if (geometry == "euclidean" and not structure.supports("project")
                and structure.supports("marginals")):
            raise ValueError(
                f"{type(structure).__name__} has no Euclidean projection for "
                "geometry='euclidean'; use geometry='entropic' with a finite radius (KL steps "
                "on its marginals, Example 2 of the paper).")
        if geometry == "entropic" and not np.isfinite(self.radius):
            if self.geometry == "auto":
                raise ValueError(
                    f"geometry='auto' takes 'entropic' for {type(structure).__name__} (it has "
                    "no Euclidean projection), which needs a finite radius (an L1 ball); pass "
                    "radius=... (the larger, the weaker the regularisation).")
            raise ValueError("geometry='entropic' needs a finite radius (an L1 ball).")
        z_step = ("marginals" if geometry == "entropic" and structure.supports("marginals")
                  else "project")
        step_size = ("feature_bounds",) if geometry == "entropic" else ()
        return ("part_scores", "expected_features", "encode", "part_losses",
                "loss_augmented_argmax", "argmax", z_step) + step_size

    # ------------------------------------------------------------------ fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Learn the weights.

        Parameters
        ----------
        X : list, or array-like of shape (n_samples, n_features)
            Training inputs, one per example, in the form ``structure`` reads:
            ``(edge_features, edges)`` tuples (matching), ``(node_features,
            edges, edge_features)`` tuples (min-cut), ``(T_i, n_features)``
            arrays (chain) or one 2-D matrix (multiclass).
        y : list of array-like of shape (n_units_i,), or array-like of shape (n_samples,)
            True output of every example: 0/1 per candidate edge (matching) or
            per node (min-cut), one label per token (chain) or per sample.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        batch, Y, _ = self._validate_fit_data(X, y)
        structure = self.structure_
        self.geometry_ = self._geometry(structure)

        batch, Y, _, stopping = EarlyStopping.split(self, batch, Y, None)
        seconds = []
        clock = [time.perf_counter()]

        def callback(t, coef):
            now = time.perf_counter()
            seconds.append(now - clock[0])
            line = f"[DualExtragradient] pass {t}  ({seconds[-1]:.2f}s)"
            stop = False
            if stopping is not None:
                self._set_weights(batch, coef)
                stop = stopping(t)
                line += f"  validation score {stopping.scores[-1]:.6g}"
            if self.verbose:
                print(line)
            clock[0] = time.perf_counter()
            return stop

        previous = getattr(self, "_solver_state", None) if self.warm_start else None
        result = dual_extragradient(
            structure.output_space().training_structure(), batch, Y, radius=float(self.radius),
            geometry=self.geometry_, memory=self.memory, max_iter=self.max_iter, tol=self.tol,
            callback=callback, state=previous,
        )
        # as large as the weights: kept only for warm starts
        self._solver_state = result.state if self.warm_start else None
        self._set_weights(batch, result.coef)
        EarlyStopping.finish(self, stopping, batch)
        if stopping is None:
            self.best_iteration_ = result.n_iter
        self.n_iter_ = result.n_iter
        self.lipschitz_ = result.lipschitz
        history = {"objective": np.asarray(result.objective, dtype=float),
                   "gap": np.asarray(result.gap, dtype=float),
                   "seconds": np.asarray(seconds[:result.n_iter], dtype=float)}
        if stopping is not None:
            history["validation_score"] = self.validation_scores_
        else:
            self.validation_scores_ = None
        self.history_ = history
        objective = history["objective"]
        self.objective_ = (float(objective[self.best_iteration_ - 1]) if len(objective)
                           else float("nan"))
        if self.verbose:
            print(f"[DualExtragradient] {self.n_iter_} passes: objective {self.objective_:.6g}, "
                  f"gap {history['gap'][-1] if len(history['gap']) else float('nan'):.3g}")
        if (np.isfinite(self.radius) and not result.converged and stopping is None
                and self.tol > 0):
            warnings.warn(
                f"DualExtragradientMatcher did not reach tol={self.tol} in {self.max_iter} "
                f"passes (relative gap {history['gap'][-1] / max(objective[-1], 1.0):.2e}); "
                "increase max_iter.",
                ConvergenceWarning,
            )
        return self
