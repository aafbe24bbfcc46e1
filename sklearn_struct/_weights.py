"""The fitted weights of the structured estimators: storage, views, pruning and pickling.

:class:`WeightsMixin` gives :class:`~sklearn_struct.base.StructuredEstimator` the flat
weight vector ``weights_`` with the structure's views of it (``coef_``,
``transition_``, ...), ``prune_weights``, the weights keyed by feature and label names
(``named_weights``, ``state_features_``, ``transition_features_``), and a pickle that
holds the weights once, sparse when mostly zero.
"""

from numbers import Real
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

__all__ = ["WeightsMixin"]


class WeightView(NamedTuple):
    """Where a weight attribute lies in ``weights_`` (its pickled form)."""

    offset: int
    shape: tuple
    strides: tuple


class WeightsMixin:
    """Weight storage of :class:`~sklearn_struct.base.StructuredEstimator`.

    Notes
    -----
    ``_weights_prunable`` (a class attribute) says whether :meth:`prune_weights`
    is offered.
    """

    def _set_weights(self, batch, w):
        """Store ``weights_`` and the structure's named views of it, dropping stale ones."""
        for attribute in self.__dict__.pop("_weight_attribute_names", ()):
            self.__dict__.pop(attribute, None)
        self.weights_ = np.array(w, dtype=np.float64)
        attributes = self.structure_.output_space().weight_attributes(batch, self.weights_)
        for attribute, value in attributes.items():
            setattr(self, attribute, value)
        self._weight_attribute_names = tuple(attributes)

    def _weight_attributes(self):
        return {name: getattr(self, name) for name in self._weight_attribute_names}

    def __getstate__(self):
        # pickle the weights once: each view (coef_, transition_, ...) would be copied, so
        # it is stored as its place in weights_; mostly-zero weights (L1, prune_weights)
        # are stored sparse
        state = super().__getstate__()
        if "weights_" not in state:
            return state
        state = dict(state)
        w = state["weights_"]
        base = w.__array_interface__["data"][0]
        for name in state.get("_weight_attribute_names", ()):
            view = state[name]
            if isinstance(view, np.ndarray) and view.size and np.shares_memory(view, w):
                offset = view.__array_interface__["data"][0] - base
                state[name] = WeightView(offset, view.shape, view.strides)
        if np.count_nonzero(w) * 12 < w.size * 8:  # int32 index + float64 value per non-zero
            state["weights_"] = sp.csr_array(w.reshape(1, -1))
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        w = self.__dict__.get("weights_")
        if sp.issparse(w):
            self.weights_ = np.zeros(w.shape[1])
            self.weights_[w.indices] = w.data
        for name in self.__dict__.get("_weight_attribute_names", ()):
            view = self.__dict__[name]
            if isinstance(view, WeightView):
                setattr(self, name, np.ndarray(view.shape, np.float64, buffer=self.weights_,
                                               offset=view.offset, strides=view.strides))

    def _prunable(self):
        return self._weights_prunable

    @available_if(_prunable)
    def prune_weights(self, threshold):
        """Set the weights whose magnitude is below ``threshold`` to zero.

        A pruned model predicts almost as the full one when ``threshold`` is
        small, and it is small on disk: a model whose weights are mostly zero
        (after pruning or an L1 penalty) is pickled with its weights sparse.

        Parameters
        ----------
        threshold : float
            Weights with ``|w| < threshold`` become 0 (non-negative; 0 keeps
            every weight).

        Returns
        -------
        self : object
            The estimator, pruned in place (``weights_`` and its views).
        """
        check_is_fitted(self)
        if not isinstance(threshold, Real) or not threshold >= 0:
            raise ValueError(f"{type(self).__name__}.prune_weights: threshold must be a "
                             f"non-negative number, got {threshold!r}.")
        self.weights_[np.abs(self.weights_) < threshold] = 0.0  # the views follow
        return self

    # ------------------------------------------------------------ named weights
    def named_weights(self, feature_names=None):
        """Fitted weights keyed by feature and label names, as in sklearn-crfsuite.

        Parameters
        ----------
        feature_names : array-like of str of shape (n_features,), default=None
            Names of the input features.  In a :class:`~sklearn.pipeline.Pipeline`
            the estimator only sees matrices: pass the names of the steps
            before it, ``pipe[:-1].get_feature_names_out()`` (for instance those
            of a :class:`~sklearn_struct.preprocessing.SequenceDictVectorizer`),
            or use :func:`sklearn_struct.inspection.explain_weights` on the
            pipeline.  ``None`` uses ``feature_names_in_`` when the estimator
            has it, else scikit-learn's names for unnamed columns,
            ``"x0"``, ``"x1"``, ...

        Returns
        -------
        named : dict of str to dict
            The structure's named views
            (:meth:`~sklearn_struct.structures.OutputSpace.named_weights`):
            for chains ``"state_features_"``, ``{(feature_name, label):
            weight}`` over the non-zero input weights, and
            ``"transition_features_"``, ``{(label_from, label_to): weight}``;
            multiclass models have ``"state_features_"`` only.
        """
        check_is_fitted(self)
        if feature_names is None:
            feature_names = self.__dict__.get("feature_names_in_")
        if feature_names is None:
            feature_names = [f"x{j}" for j in range(self.n_features_in_)]
        feature_names = np.asarray(feature_names, dtype=object)
        if feature_names.shape != (self.n_features_in_,):
            raise ValueError(
                f"{type(self).__name__}: feature_names holds {feature_names.size} names but the "
                f"model has {self.n_features_in_} input features.")
        return self.structure_.output_space().named_weights(self._weight_attributes(),
                                                            feature_names, self.classes_)

    def _named_view(self, key):
        named = self.named_weights()
        if key not in named:
            raise AttributeError(f"{type(self).__name__} over {type(self.structure_).__name__} "
                                 f"has no {key}.")
        return named[key]

    @property
    def state_features_(self):
        """``{(feature_name, label): weight}`` of the non-zero input weights.

        Feature names as in :meth:`named_weights` (``feature_names_in_`` or
        ``"x0"``, ...; in a pipeline use ``named_weights(names)``).
        """
        return self._named_view("state_features_")

    @property
    def transition_features_(self):
        """``{(label_from, label_to): weight}`` of a chain (and tree) model."""
        return self._named_view("transition_features_")
