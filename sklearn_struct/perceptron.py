"""The averaged structured perceptron (Collins 2002): a baseline for every structure."""

import warnings
from numbers import Integral

import numpy as np
from sklearn.base import _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval

from ._early_stopping import EARLY_STOPPING_CONSTRAINTS, EarlyStopping
from .base import STRUCTURE_CONSTRAINT, StructuredEstimator, as_history, restored_on_failure
from .solvers.perceptron import PerceptronState, perceptron_solve

__all__ = ["StructuredPerceptron"]


class StructuredPerceptron(StructuredEstimator):
    """Structured perceptron with weight averaging (Collins 2002).

    Visits the training examples one at a time, predicts each with the
    structure's argmax under the current weights and, when the prediction is
    wrong, adds ``f(x_i, y_i) - f(x_i, y^)`` to the weights.  The averaged
    perceptron keeps the average of the weights over all visits, which
    generalises much better than the last iterate.  There is no loss and no
    regularisation parameter: the number of epochs is the only control.  It is
    the usual baseline of structured learning; on identical features, compare
    it with :class:`~sklearn_struct.EGCRF` and
    :class:`~sklearn_struct.EGStructuredSVM`.

    Every epoch runs inside numba through the structure's kernel operations
    (``part_scores``, ``add_features``, ``argmax``, ``encode``).

    Parameters
    ----------
    structure : str, BaseStructure or None, default=None
        A name of the registry ``sklearn_struct.structures.STRUCTURES`` (see
        :ref:`parameters`), a structure object, or None.
        Output structure; ``None`` picks multiclass for flat ``X`` and a
        chain for a list of sequences (as in :class:`~sklearn_struct.EGCRF`).
        Any structure with the four kernel operations above works, except
        those that constrain the sign of some weights (min-cut), refused when
        ``fit`` starts; the structure is used as given and never modified.
    max_iter : int, default=10
        Maximum number of epochs (passes over the training set).
    early_stopping : bool, default=False
        Score the model of every epoch on a validation set (``X_val``, ``y_val``
        given to ``fit``, else ``validation_fraction`` of the examples held out),
        stop after ``n_iter_no_change`` epochs without a better score, and keep
        the weights of the best epoch (``best_iteration_``); see
        :ref:`early_stopping`.
    validation_fraction : float, default=0.1
        Share of the examples held out for early stopping (rounded up to whole
        examples), when no validation set is given.
    n_iter_no_change : int, default=5
        Epochs without a better validation score after which early stopping
        ends the fit.
    average : bool, default=True
        Predict with the averaged weights (else the last ones).
    shuffle : bool, default=True
        Visit the examples in a new random order every epoch.
    warm_start : bool, default=False
        Continue the previous run (weights, running average and visit count)
        on the same training examples: ``max_iter=1`` fits then run one epoch
        each.
    n_jobs : int, default=None
        joblib workers over chunks of examples, for prediction.
    random_state : int, RandomState instance or None, default=None
        Seeds the visiting order.
    verbose : int, default=0
        Print one line per epoch.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,) or None
        Labels seen in training (over all tokens for sequences); ``None`` for
        structures whose outputs are not labels (dependency heads).
    weights_ : ndarray of shape (n_weights,)
        The (averaged) weights in the structure's layout; ``coef_`` and the
        other weight attributes of the structure are views of it.
    structure_ : BaseStructure
        The structure used.
    n_features_in_ : int
        Number of input features.
    n_iter_ : int
        Epochs run by the last ``fit``.
    best_iteration_ : int
        With ``early_stopping``: the epoch whose weights the model keeps.
    validation_scores_ : ndarray of shape (n_passes,)
        With ``early_stopping``: the validation score of every epoch.
    history_ : dict of ndarray
        Per epoch: ``mistakes`` (training examples predicted wrong, or
        inconsistent with their partial labels, during the epoch) and ``seconds``.

    See Also
    --------
    EGCRF, EGStructuredSVM : Regularised models on the same structures.

    Notes
    -----
    *Numerical range.*  On flat samples the perceptron is scale invariant:
    features scaled by any factor (tested from 1e-6 to 1e6) give the same
    predictions and weights scaled by that factor.  On chains the transition
    features are indicators of scale 1, so token features much smaller than 1
    leave the transitions to decide (and much larger ones the token features).
    An epoch without mistakes ends the fit; when ``max_iter`` epochs end with
    mistakes (data that are not separable, or too few epochs) a
    ``ConvergenceWarning`` says so and the (averaged) weights are returned.

    References
    ----------
    M. Collins. "Discriminative training methods for hidden Markov models:
    theory and experiments with perceptron algorithms." EMNLP 2002.

    X. Sun, T. Matsuzaki, D. Okanohara and J. Tsujii. "Latent variable
    perceptron algorithm for structured classification." IJCAI 2009.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct import StructuredPerceptron
    >>> X = [np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([[0.0, 1.0], [1.0, 0.0]])]
    >>> y = [np.array(["a", "b"]), np.array(["b", "a"])]
    >>> model = StructuredPerceptron(random_state=0).fit(X, y)
    >>> [labels.tolist() for labels in model.predict(X)]
    [['a', 'b'], ['b', 'a']]
    """

    _parameter_constraints = {
        "structure": STRUCTURE_CONSTRAINT,
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        **EARLY_STOPPING_CONSTRAINTS,
        "average": ["boolean"],
        "shuffle": ["boolean"],
        "warm_start": ["boolean"],
        "n_jobs": [None, Integral],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }
    _required_operations = ("part_scores", "argmax", "encode")
    _sign_constraints = False  # an update may make any weight negative

    def __init__(self, *, structure=None, max_iter=10, early_stopping=False,
                 validation_fraction=0.1, n_iter_no_change=5, average=True, shuffle=True,
                 warm_start=False, n_jobs=None, random_state=None, verbose=0):
        self.structure = structure
        self.max_iter = max_iter
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.average = average
        self.shuffle = shuffle
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    @restored_on_failure
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None, callback=None, X_val=None, y_val=None):
        """Run perceptron epochs over the training examples.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features), or list
            of examples
            Flat samples (multiclass) or one input per example (a feature
            matrix per sequence, token attributes per sentence, ...).
        y : array-like of shape (n_samples,), or list of array-like
            Labels (flat) or one output per example.  Sequences may be
            partially labelled (``None`` or a set of labels at a token, see
            :ref:`partial_labels`): the latent perceptron (Sun et al., 2009)
            updates towards the best output consistent with the known labels
            when the prediction is not consistent with them.
        sample_weight : array-like of shape (n_samples,), default=None
            Scales every update made on an example.
        callback : callable, default=None
            Called after every epoch as ``callback(epoch, estimator)``, the
            estimator holding the (averaged) weights of that epoch; its
            return value is ignored.  Training does not depend on it.
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
        batch, Y, sample_weight, constraint_scores = self._validate_fit_data(
            X, y, sample_weight, partial=True)
        stopping = None
        if constraint_scores is None:
            batch, Y, sample_weight, stopping = EarlyStopping.split(
                self, batch, Y, sample_weight, X_val, y_val)
        else:
            EarlyStopping.refuse_partial_labels(self, X_val)
        state = self.__dict__.get("_perceptron_state") if self.warm_start else None
        if state is not None and (self._state_parts != batch.part_offsets[-1]
                                  or not np.array_equal(self._state_classes, self.classes_)):
            state = None  # another training set: start afresh
        on_pass = self._pass_callback(
            callback, batch,
            lambda state: self.structure_.contract_weights(batch, state.weights(self.average)),
            stopping)
        w, state, history, converged = perceptron_solve(
            self.structure_.output_space().training_structure(), batch, Y, max_iter=self.max_iter,
            average=self.average, shuffle=self.shuffle, sample_weight=sample_weight, state=state,
            random_state=check_random_state(self.random_state), verbose=self.verbose,
            callback=on_pass, constraint_scores=constraint_scores)
        self._set_weights(batch, w)
        EarlyStopping.finish(self, stopping, batch)
        self.n_iter_ = len(history["mistakes"])
        self.history_ = as_history(history)
        # the running sum is as large as the weights: kept only for warm starts (and
        # partial_fit, which keeps its own)
        self._perceptron_state = state if self.warm_start else None
        self._state_parts = batch.part_offsets[-1]
        self._state_classes = self.classes_
        if not converged and (stopping is None or not stopping.stopped):
            warnings.warn(
                f"StructuredPerceptron: the last of {self.n_iter_} epochs still predicted "
                f"{history['mistakes'][-1]} training examples wrong (max_iter={self.max_iter}); "
                "the data may not be separable: increase max_iter or accept the (averaged) "
                "weights as they are.", ConvergenceWarning)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Run one perceptron epoch over new examples, continuing the weights and their average.

        As scikit-learn's ``Perceptron.partial_fit``: one epoch per call (in a
        new random order with ``shuffle``), whatever ``max_iter``; the current
        weights, their running sum and the visit count carry over from call
        to call, so that calls on consecutive chunks visited in order
        (``shuffle=False``) give the weights of one ``fit`` epoch over their
        concatenation.  After ``fit`` the epoch continues from the fitted
        weights, the average restarting there (unless ``warm_start`` kept
        ``fit``'s running sum, which then carries on).  No
        ``ConvergenceWarning``: one epoch is what was asked for.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features), or list
            of examples
            New examples, in the form of the first call with as many features.
        y : array-like of shape (n_samples,), or list of array-like
            Their labels (all among ``classes_``) or outputs.
        classes : array-like of shape (n_classes,), default=None
            Every label the model will ever see.  Required on the first call
            when the outputs are labels (flat samples, labelled tokens); later
            calls may omit it, or must give the same labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Scales every update made on an example.

        Returns
        -------
        self : object
            The estimator, updated by the epoch.
        """
        fitted = "weights_" in self.__dict__
        _, batch, Y, sample_weight = self._validate_partial_fit_data(X, y, classes,
                                                                     sample_weight)
        structure = self.structure_.output_space().training_structure()
        state = self.__dict__.get("_perceptron_state")
        if state is None and fitted:  # after fit without warm_start: from the fitted weights
            w = structure.kernel_weights(batch, self.weights_)
            state = PerceptronState(w=w, w_sum=np.zeros_like(w))
        w, state, history, _ = perceptron_solve(
            structure, batch, Y, max_iter=1, average=self.average, shuffle=self.shuffle,
            sample_weight=sample_weight, state=state,
            random_state=check_random_state(self.random_state), verbose=self.verbose)
        self._set_weights(batch, w)
        self.n_iter_ = 1
        self.history_ = as_history(history)
        self._perceptron_state = state
        self._state_parts = batch.part_offsets[-1]
        self._state_classes = self.classes_
        return self
