"""CRFsuite's chain CRF: its elastic-net objective on the weights CRFsuite makes (issue 48).

:class:`ElasticNetChainCRF` minimises ``NLL(w) + c1 |w|_1 + c2 |w|^2`` by OWL-QN
(:func:`~sklearn_struct.solvers.elastic_net.elastic_net_solve`) over the weights of
:func:`crfsuite_support`, the (attribute, label) and label pairs that CRFsuite's feature
generation makes; the others stay 0.  It is the model of
:class:`sklearn_struct.crfsuite.CRF` with ``algorithm="lbfgs"``, on feature matrices.
"""

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval

from .base import StructuredEstimator, as_history, restored_on_failure
from .solvers.elastic_net import MEMORY, PERIOD, elastic_net_solve
from .solvers.loss import StructuredLoss
from .structures import ChainStructure

__all__ = ["ElasticNetChainCRF", "crfsuite_support"]


def crfsuite_support(X, Y, unit_offsets, n_labels, all_possible_states=False,
                     all_possible_transitions=False, min_freq=0.0, zeros=None):
    """The (attribute, label) and (label, label) pairs that CRFsuite makes weights of.

    CRFsuite's feature generation (``crf1df_generate``): a state feature for every
    attribute and label of a training token (an attribute of value 0, such as a ``False``,
    included), its frequency the sum of the attribute's values there; a transition for
    every pair of consecutive training labels, its frequency their count; with
    ``all_possible_states`` (``_transitions``) every pair, at frequency 0 when unseen; and
    only those of frequency ``>= min_freq``.

    Parameters
    ----------
    X : sparse matrix of shape (n_tokens, n_attributes)
        The training tokens' attribute values, stacked.
    Y : ndarray of int of shape (n_tokens,)
        Their encoded labels.
    unit_offsets : ndarray of int of shape (n_sentences + 1,)
        Sentence ``i`` is tokens ``unit_offsets[i]:unit_offsets[i+1]``.
    n_labels : int
        The number of labels.
    all_possible_states, all_possible_transitions : bool, default=False
        CRFsuite's ``feature.possible_states`` and ``feature.possible_transitions``.
    min_freq : float, default=0.0
        CRFsuite's ``feature.minfreq``.
    zeros : sparse matrix of shape (n_tokens, n_attributes), default=None
        Non-zero where a token has the attribute at value 0, which ``X`` does not show;
        None: nowhere.

    Returns
    -------
    states : ndarray of bool of shape (n_labels, n_attributes)
    transitions : ndarray of bool of shape (n_labels, n_labels)

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from sklearn_struct.elastic_net import crfsuite_support
    >>> X = sp.csr_matrix(np.array([[1.0, 0.0], [1.0, 2.0]]))
    >>> states, transitions = crfsuite_support(X, np.array([0, 1]), np.array([0, 2]), 2)
    >>> states.astype(int).tolist(), transitions.astype(int).tolist()
    ([[1, 0], [1, 1]], [[0, 1], [0, 0]])
    """
    X = sp.csr_matrix(X)
    Y = np.asarray(Y, dtype=np.int64)
    labels = sp.csr_matrix((np.ones(len(Y)), (Y, np.arange(len(Y)))),
                           shape=(n_labels, len(Y)))
    frequency = (labels @ X).toarray()
    present = (X != 0).astype(np.float64)
    if zeros is not None:
        present = present + (sp.csr_matrix(zeros) != 0).astype(np.float64)
    seen = (labels @ present).toarray() > 0
    states = frequency >= min_freq
    if not all_possible_states:
        states &= seen
    follows = np.ones(len(Y), dtype=bool)
    follows[np.asarray(unit_offsets)[:-1]] = False  # a sentence's first token follows none
    pairs = np.flatnonzero(follows)
    counts = np.zeros((n_labels, n_labels))
    np.add.at(counts, (Y[pairs - 1], Y[pairs]), 1.0)
    transitions = counts >= min_freq
    if not all_possible_transitions:
        transitions &= counts > 0
    return states, transitions


class ElasticNetChainCRF(StructuredEstimator):
    """A chain CRF with CRFsuite's elastic-net objective and weights, by OWL-QN.

    The model of :class:`CRF` with ``algorithm="lbfgs"``: minimises
    ``NLL(w) + c1 |w|_1 + c2 |w|^2`` over the weights of :func:`crfsuite_support` (the
    others stay 0) with :func:`~sklearn_struct.solvers.elastic_net.elastic_net_solve`.
    Takes the feature matrices of a
    :class:`~sklearn_struct.preprocessing.SequenceDictVectorizer`.

    Parameters
    ----------
    c1 : float, default=0.0
        The L1 coefficient.
    c2 : float, default=1.0
        The L2 coefficient (of the squared norm itself, CRFsuite's scaling).
    max_iter : int, default=10000
        Most OWL-QN iterations.
    tol : float, default=1e-7
        Stop once the certified duality gap is at most ``tol`` times the objective.
    delta : float, default=1e-5
        Stop, as CRFsuite, once the objective fell by less than ``delta`` (relative)
        over the last ``period`` iterations.
    period : int, default=10
        See ``delta``.
    memory : int, default=6
        L-BFGS pairs kept (CRFsuite's ``num_memories``).
    all_possible_states, all_possible_transitions : bool, default=False
        Give every (attribute, label), every (label, label) pair a weight.
    min_freq : float, default=0.0
        Drop the pairs of training frequency below it (:func:`crfsuite_support`).
    structure : BaseStructure, default=None
        None: ``ChainStructure(start_end=False)``, CRFsuite's chain.
    n_jobs : int, default=None
        joblib workers for prediction.
    verbose : int, default=0
        Print one line per iteration.

    Attributes
    ----------
    weights_ : ndarray of shape (n_weights,)
        ``coef_`` (labels x features) and ``transition_`` are views of it.
    classes_ : ndarray of shape (n_labels,)
    structure_ : ChainStructure
    n_features_in_ : int
    n_iter_ : int
    objective_ : float
        The objective at the weights.
    duality_gap_ : float
        Its certified bound (``nan`` when ``c2 = 0``).
    history_ : dict of ndarray
        Per iteration: ``primal``, ``gap``, ``nnz``, ``evaluations``, ``seconds``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.elastic_net import ElasticNetChainCRF
    >>> X = [np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([[0.0, 1.0], [1.0, 0.0]])]
    >>> y = [np.array(["a", "b"]), np.array(["b", "a"])]
    >>> model = ElasticNetChainCRF(c2=0.1).fit(X, y)
    >>> [labels.tolist() for labels in model.predict(X)]
    [['a', 'b'], ['b', 'a']]
    """

    _parameter_constraints = {
        "c1": [Interval(Real, 0, None, closed="left")],
        "c2": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "delta": [None, Interval(Real, 0, None, closed="left")],
        "period": [Interval(Integral, 1, None, closed="left")],
        "memory": [Interval(Integral, 1, None, closed="left")],
        "all_possible_states": ["boolean"],
        "all_possible_transitions": ["boolean"],
        "min_freq": [Interval(Real, None, None, closed="neither")],
        "structure": [None, ChainStructure],
        "n_jobs": [None, Integral],
        "verbose": ["verbose"],
    }
    _required_operations = ("part_scores", "argmax", "marginals")
    _probabilistic = True

    def __init__(self, *, c1=0.0, c2=1.0, max_iter=10_000, tol=1e-7, delta=1e-5,
                 period=PERIOD, memory=MEMORY, all_possible_states=False,
                 all_possible_transitions=False, min_freq=0.0, structure=None, n_jobs=None,
                 verbose=0):
        self.c1 = c1
        self.c2 = c2
        self.max_iter = max_iter
        self.tol = tol
        self.delta = delta
        self.period = period
        self.memory = memory
        self.all_possible_states = all_possible_states
        self.all_possible_transitions = all_possible_transitions
        self.min_freq = min_freq
        self.structure = structure
        self.n_jobs = n_jobs
        self.verbose = verbose

    @restored_on_failure
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, callback=None, zeros=None):
        """Minimise the elastic-net objective over CRFsuite's weights.

        Parameters
        ----------
        X : list of array-like or sparse matrix of shape (T_i, n_features)
            One feature matrix per sequence.
        y : list of array-like of shape (T_i,)
            One label sequence per sequence.
        callback : callable, default=None
            ``callback(iteration, estimator)`` after every iteration, the estimator
            holding that iteration's weights.
        zeros : list of sparse matrix of shape (T_i, n_features), default=None
            Non-zero where a token has the feature at value 0, which ``X`` does not show
            (CRFsuite makes a weight of it, see ``crfsuite_support``); None: nowhere.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        structure = self.structure
        self.structure = ChainStructure(start_end=False) if structure is None else structure
        try:
            batch, Y, _ = self._validate_fit_data(X, y)
        finally:
            self.structure = structure
        stacked = sp.csr_matrix(batch.X)  # the tokens' rows, stacked by make_batch
        states, transitions = crfsuite_support(
            stacked, Y, batch.unit_offsets, len(self.classes_), self.all_possible_states,
            self.all_possible_transitions, self.min_freq,
            None if zeros is None else sp.vstack(zeros, format="csr"))
        support = np.zeros(batch.n_weights)
        views = self.structure_.output_space().weight_attributes(batch, support)
        views["coef_"][...] = states
        views["transition_"][...] = transitions
        loss = StructuredLoss(self.structure_.output_space().training_structure(), batch, Y,
                              kind="log")

        on_pass = self._pass_callback(callback, batch, lambda w: w)

        def on_iteration(iteration, w):  # (returns nothing: the solver runs on)
            if self.verbose:
                print(f"iteration {iteration}: {np.count_nonzero(w)} non-zero weights",
                      flush=True)
            if on_pass is not None:
                on_pass(iteration, w)

        result = elastic_net_solve(
            loss, self.c1, self.c2, tol=self.tol, delta=self.delta, max_iter=self.max_iter,
            memory=self.memory, period=self.period, support=support.astype(bool),
            callback=on_iteration)
        self._set_weights(batch, result.w)
        self.n_iter_ = result.n_iter
        self.objective_ = float(result.primal)
        self.duality_gap_ = float(result.gap)
        self.history_ = as_history(result.history)
        return self
