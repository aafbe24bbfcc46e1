"""DualExtragradientMatcher: max-margin learning of matchings, min-cuts and chains."""

import copy
import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .base import (
    LabelEncoding,
    encode_binary_outputs,
    is_graph_structure,
    output_score,
    resolve_structure,
    split_units,
    unit_label_arrays,
)
from .solvers.extragradient import dual_extragradient
from .structures import BaseStructure
from .structures.chain import ChainStructure

__all__ = ["DualExtragradientMatcher"]


class DualExtragradientMatcher(BaseEstimator):
    """Max-margin structured learner by the dual extragradient method.

    Solves ``min_{w in W} sum_i max_y [w.f_i(y) + loss_i(y)] - w.f_i(y_i)``
    (Taskar, Lacoste-Julien & Jordan 2006, eq. 8) as a saddle point with
    ``W = {||w|| <= radius}`` (plus ``w_edge >= 0`` for min-cut), by the
    Euclidean dual extragradient of Figure 2 or its Bregman version
    (Figure 4), with step ``1/L`` and averaged output.

    Parameters
    ----------
    structure : {"matching", "mincut", "chain"} or BaseStructure, default="matching"
        ``"matching"``: ``X[i] = (edge_features, edges)`` and ``y[i]`` a 0/1
        vector over the edges (:class:`MatchingStructure`; pass
        ``MatchingStructure(false_positive_cost=1, false_negative_cost=3)`` for
        the costs of eq. 10).  ``"mincut"``: ``X[i] = (node_features, edges,
        edge_features)``, ``y[i]`` a 0/1 vector over the nodes.  ``"chain"``:
        ``X[i]`` a ``(T_i, d)`` array, ``y[i]`` labels of any type.
    radius : float, default=inf
        ``gamma``, radius of the parameter ball (2-norm, or 1-norm with
        ``geometry="entropic"``).  Smaller = stronger regularisation; ``inf``
        runs the unregularised path of section 6 (use with early stopping).
    geometry : {"euclidean", "entropic"}, default="euclidean"
        ``"entropic"``: L1 ball through the entropic simplex setup of
        Example 1 (needs a finite radius) and, for structures with marginals
        (chains), KL projections = marginals (Example 2).
    memory : {"full", "low"}, default="full"
        ``"low"``: the memory-efficient variant of Figure 6: besides the
        data, memory of the size of ``w`` plus one chunk of examples (the
        steps, losses, objective, gap and step size are all computed chunk by
        chunk); same iterates.  Costs a copy of every chunk's rows per pass.
    max_iter : int, default=100
        Passes over the training data.
    tol : float, default=1e-3
        Stop when the gap function (eq. 18) falls below ``tol`` times the
        objective (finite radius only).
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
    random_state : int, RandomState or None, default=None
        Only used for the validation split.

    Attributes
    ----------
    coef_ : ndarray of shape (n_weights,)
        Learned weights (the averaged iterate, or the best one on the
        validation set with early stopping).
    structure_ : BaseStructure
        The structure object used: a new one for a name, a copy of
        ``structure`` when an object is passed (never modified).
    classes_ : ndarray
        Labels (``[0, 1]`` for matching and min-cut).
    n_iter_ : int
        Number of passes run.
    objective_ : ndarray
        Sum of training hinge losses after every pass.
    gap_ : ndarray
        Gap function after every pass (``inf`` for an infinite radius).
    validation_scores_ : ndarray or None
        Score on the validation set after every pass (early stopping).
    best_iteration_ : int
        Pass whose weights are kept.
    lipschitz_ : float
        ``L``; the step size is ``1/L``.
    n_features_in_ : int
        Number of weights of the model (the length of ``coef_``).

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
        "structure": [StrOptions({"matching", "mincut", "chain"}), BaseStructure],
        "radius": [Interval(numbers.Real, 0, np.inf, closed="right")],
        "geometry": [StrOptions({"euclidean", "entropic"})],
        "memory": [StrOptions({"full", "low"})],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "early_stopping": ["boolean"],
        "validation_fraction": [Interval(numbers.Real, 0, 1, closed="neither")],
        "n_iter_no_change": [Interval(numbers.Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        structure="matching",
        *,
        radius=np.inf,
        geometry="euclidean",
        memory="full",
        max_iter=100,
        tol=1e-3,
        early_stopping=False,
        validation_fraction=0.1,
        n_iter_no_change=10,
        random_state=None,
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
        self.random_state = random_state

    # ------------------------------------------------------------ plumbing
    def _resolve_structure(self):
        if isinstance(self.structure, BaseStructure):
            # a copy: operations such as project() record diagnostics on the structure,
            # and fit must not modify its parameters
            return copy.deepcopy(self.structure)
        return resolve_structure(self.structure, None)

    def _encode(self, structure, batch, y, fitting):
        """Flat encoded outputs from a list of per-example label vectors."""
        if is_graph_structure(structure):
            if fitting:
                self.classes_ = np.array([0, 1])
            return encode_binary_outputs(structure, batch, y)
        labels = unit_label_arrays(
            batch, y, "token" if isinstance(structure, ChainStructure) else "unit"
        )
        if fitting:
            self._label_encoding = LabelEncoding.fit([(yi, yi) for yi in labels])
            self.classes_ = self._label_encoding.classes_
        return np.concatenate([self._label_encoding.transform(yi, where=f"y[{i}]")
                               for i, yi in enumerate(labels)])

    def _make_batch(self, structure, X):
        n_states = len(self.classes_) if hasattr(self, "classes_") else None
        return structure.make_batch(X, n_states=n_states)

    # ------------------------------------------------------------------ fit
    def fit(self, X, y):
        """Learn the weights.

        Parameters
        ----------
        X : list
            Training inputs, one per example, in the form ``structure`` reads:
            ``(edge_features, edges)`` tuples (matching), ``(node_features,
            edges, edge_features)`` tuples (min-cut) or ``(T_i, n_features)``
            arrays (chain).
        y : list of array-like of shape (n_units_i,)
            True output of every example: 0/1 per candidate edge (matching) or
            per node (min-cut), one label per token (chain).

        Returns
        -------
        self : object
            The fitted estimator.
        """
        self._validate_params()
        for name in ("classes_", "_label_encoding"):
            self.__dict__.pop(name, None)
        structure = self._resolve_structure()
        needed = ("part_scores", "expected_features", "encode", "part_losses",
                  "loss_augmented_argmax")
        z_step = "marginals" if (self.geometry == "entropic"
                                 and structure.supports("marginals")) else "project"
        structure.check_supports(*needed, z_step, needed_by=type(self).__name__)
        if self.geometry == "entropic" and not np.isfinite(self.radius):
            raise ValueError("geometry='entropic' needs a finite radius (an L1 ball).")
        if isinstance(structure, ChainStructure):
            # labels first: the chain batch needs the number of states
            if isinstance(y, (str, bytes)) or not hasattr(y, "__len__"):
                raise TypeError("y must be a list with one label vector per example.")
            self._label_encoding = LabelEncoding.fit([(np.asarray(yi), yi) for yi in y])
            self.classes_ = self._label_encoding.classes_
        batch = self._make_batch(structure, X)
        Y = self._encode(structure, batch, y, fitting=True)
        self.structure_ = structure
        self.n_features_in_ = batch.n_weights

        validation = None
        if self.early_stopping:
            rng = check_random_state(self.random_state)
            order = rng.permutation(batch.n_samples)
            n_val = int(np.ceil(self.validation_fraction * batch.n_samples))
            if n_val < 1 or n_val >= batch.n_samples:
                raise ValueError(
                    f"validation_fraction={self.validation_fraction} leaves no training or no "
                    f"validation example out of {batch.n_samples}."
                )
            val_idx, train_idx = np.sort(order[:n_val]), np.sort(order[n_val:])
            validation = (structure.take(batch, val_idx), _take_units(batch, Y, val_idx))
            Y = _take_units(batch, Y, train_idx)
            batch = structure.take(batch, train_idx)

        scores, best = [], {"score": -np.inf, "coef": None, "iteration": 0}

        def callback(t, coef):
            if validation is None:
                return False
            score = self._score_encoded(structure, validation[0], validation[1], coef)
            scores.append(score)
            if score > best["score"]:
                best.update(score=score, coef=coef.copy(), iteration=t)
            return t - best["iteration"] >= self.n_iter_no_change

        result = dual_extragradient(
            structure, batch, Y, radius=float(self.radius), geometry=self.geometry,
            memory=self.memory, max_iter=self.max_iter, tol=self.tol, callback=callback,
        )
        self.coef_ = result.coef if validation is None else best["coef"]
        self.best_iteration_ = result.n_iter if validation is None else best["iteration"]
        self.n_iter_ = result.n_iter
        self.objective_ = np.asarray(result.objective)
        self.gap_ = np.asarray(result.gap)
        self.lipschitz_ = result.lipschitz
        self.validation_scores_ = np.asarray(scores) if validation is not None else None
        if (np.isfinite(self.radius) and not result.converged and validation is None
                and self.tol > 0):
            warnings.warn(
                f"DualExtragradientMatcher did not reach tol={self.tol} in {self.max_iter} "
                f"passes (relative gap {self.gap_[-1] / max(self.objective_[-1], 1.0):.2e}); "
                "increase max_iter.",
                ConvergenceWarning,
            )
        return self

    # -------------------------------------------------------------- predict
    def _check_X(self, X):
        check_is_fitted(self)
        batch = self._make_batch(self.structure_, X)
        if batch.n_weights != self.n_features_in_:
            raise ValueError(
                f"X gives {batch.n_weights} weights per model, but {type(self).__name__} was "
                f"fitted with {self.n_features_in_}."
            )
        return batch

    def decision_function(self, X):
        """Part scores ``F^T w`` of every example, flat.

        Parameters
        ----------
        X : list
            Inputs, one per example, in the form used for :meth:`fit`.

        Returns
        -------
        scores : ndarray of shape (n_parts_total,)
            Scores of the parts of all examples, concatenated: one per edge
            (matching), per node then per edge (min-cut), or the parts of
            every sequence in the :class:`~sklearn_struct.structures.ChainBatch`
            layout (chain).
        """
        batch = self._check_X(X)
        return self.structure_.part_scores(batch, self.coef_)

    def predict(self, X):
        """Best output of every example.

        Parameters
        ----------
        X : list
            Inputs, one per example, in the form used for :meth:`fit`.

        Returns
        -------
        y : list of ndarray
            0/1 per edge (matching) or per node (min-cut), labels per token (chain).
        """
        batch = self._check_X(X)
        codes = self.structure_.argmax(batch, self.structure_.part_scores(batch, self.coef_))
        if isinstance(self.structure_, ChainStructure):
            codes = self._label_encoding.inverse_transform(codes)
        return split_units(batch, codes)

    def _score_encoded(self, structure, batch, Y, coef):
        predicted = structure.argmax(batch, structure.part_scores(batch, coef))
        return output_score(structure, batch, predicted, Y)

    def score(self, X, y):
        """F1 of the predicted edges (matching) or accuracy over nodes / tokens.

        Parameters
        ----------
        X : list
            Test inputs, one per example, in the form used for :meth:`fit`.
        y : list of array-like of shape (n_units_i,)
            True outputs, in the form used for :meth:`fit`.

        Returns
        -------
        score : float
            For matchings, the F1 score of the predicted edges pooled over all
            examples (1.0 when neither truth nor prediction has an edge);
            otherwise the fraction of correct node or token labels.
        """
        batch = self._check_X(X)
        Y = self._encode(self.structure_, batch, y, fitting=False)
        return self._score_encoded(self.structure_, batch, Y, self.coef_)


def _take_units(batch, Y, indices):
    return np.concatenate([Y[batch.unit_offsets[i]:batch.unit_offsets[i + 1]]
                           for i in indices])
