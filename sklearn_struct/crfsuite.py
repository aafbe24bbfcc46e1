"""A drop-in for sklearn-crfsuite's ``CRF``: its parameters, methods and attributes (issue 48).

A script written for ``sklearn_crfsuite.CRF`` runs with the import changed::

    from sklearn_struct.crfsuite import CRF      # was: from sklearn_crfsuite import CRF

:class:`CRF` is a thin estimator over a :class:`~sklearn_struct.preprocessing.
SequenceDictVectorizer` (CRFsuite's attribute names, ``separator=":"``) and a chain model
without start and end weights (``ChainStructure(start_end=False)``, CRFsuite's model).
Each of CRFsuite's training algorithms maps to a learner of the same kind of model:

==========  ======================================================================
``lbfgs``   CRFsuite's objective ``NLL + c1 |w|_1 + c2 |w|^2`` by OWL-QN
            (:class:`~sklearn_struct.elastic_net.ElasticNetChainCRF`), on the
            weights CRFsuite's model has (``all_possible_states``/``_transitions``,
            ``min_freq``)
``l2sgd``   the same likelihood with the L2 penalty alone, by
            :class:`~sklearn_struct.EGCRF` at ``C = 1 / (2 c2)``
``ap``      the averaged perceptron, :class:`~sklearn_struct.StructuredPerceptron`
``pa``      the max-margin model (PA-I), :class:`~sklearn_struct.EGStructuredSVM` at
            ``C = c``
``arow``    refused: no learner here keeps a covariance of the weights
==========  ======================================================================

The user guide's page :ref:`crfsuite` has the table of every parameter.
"""

import time
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import Interval, Options, StrOptions
from sklearn.utils.validation import check_is_fitted

from .eg import EGCRF, EGStructuredSVM
from .elastic_net import ElasticNetChainCRF
from .perceptron import StructuredPerceptron
from .preprocessing import SequenceDictVectorizer
from .solvers.elastic_net import MEMORY, PERIOD
from .structures import ChainStructure

__all__ = ["CRF"]

#: CRFsuite's defaults of the parameters given as None.
DEFAULTS = {"algorithm": "lbfgs", "c1": 0.0, "c2": 1.0, "min_freq": 0.0, "delta": 1e-5,
            "period": PERIOD, "num_memories": MEMORY, "c": 1.0, "pa_type": 1}
#: CRFsuite's default ``max_iterations`` per algorithm (lbfgs: unlimited; here its rule
#: on ``delta`` stops it first).
MAX_ITERATIONS = {"lbfgs": 10_000, "l2sgd": 1000, "ap": 100, "pa": 100}

#: Parameters each algorithm reads; any other given (not None) is refused, as CRFsuite
#: refuses a parameter its algorithm does not have.
READS = {
    "lbfgs": {"c1", "c2", "num_memories", "period", "delta", "min_freq",
              "all_possible_states", "all_possible_transitions"},
    "l2sgd": {"c2", "all_possible_transitions", "all_possible_states"},
    "ap": {"all_possible_transitions", "all_possible_states"},
    "pa": {"c", "pa_type", "error_sensitive", "averaging", "all_possible_transitions",
           "all_possible_states"},
}
#: What to use instead of a parameter that has no meaning here (any algorithm).
NO_MEANING = {
    "epsilon": "CRFsuite's gradient-norm (lbfgs) or loss (ap, pa) threshold: lbfgs stops on "
               "`delta` over `period` iterations, or a certified duality gap; the others "
               "after `max_iterations` passes or when they converge",
    "linesearch": "OWL-QN here runs a backtracking line search projected on the orthant "
                  "(CRFsuite's own choice when c1 > 0); leave linesearch=None",
    "max_linesearch": "the backtracking line search halves the step up to 40 times; leave "
                      "max_linesearch=None",
    "calibration_eta": "l2sgd is EGCRF here, whose step sizes adapt per sequence; leave the "
                       "calibration_* parameters None",
    "calibration_rate": "see calibration_eta",
    "calibration_samples": "see calibration_eta",
    "calibration_candidates": "see calibration_eta",
    "calibration_max_trials": "see calibration_eta",
    "variance": "AROW is not offered (algorithm='arow' says why)",
    "gamma": "AROW is not offered (algorithm='arow' says why)",
    "model_filename": "there is no CRFsuite model file: pickle or joblib.dump the fitted CRF",
    "trainer_cls": "training runs in this package, not through a pycrfsuite.Trainer; use "
                   "verbose=True for the per-iteration lines",
}
AROW = ("algorithm='arow' has no learner here: AROW (Crammer, Kulesza and Dredze, 2009) "
        "learns a Gaussian over the weights, a per-weight variance (`variance`, `gamma`) "
        "that sets each weight's step, with a squared hinge; the max-margin learner here "
        "(EGStructuredSVM) has a linear hinge and no covariance, so the same parameters "
        "could not mean the same. Use algorithm='pa' (the max-margin model, EGStructuredSVM "
        "with C = c) or algorithm='ap' (the averaged perceptron).")


def _check_sequences(X, y, owner, name="X"):
    """Refuse, before any work, what CRFsuite's data cannot be: naming sentence and token."""
    if isinstance(X, (str, bytes, dict)) or not hasattr(X, "__len__"):
        raise ValueError(f"{owner}: {name} must be a list of sentences (lists of feature "
                         f"dicts), got {type(X).__name__}.")
    if y is not None and len(X) != len(y):
        raise ValueError(f"{owner}: {name} has {len(X)} sentences but its labels have "
                         f"{len(y)}.")
    for i, sentence in enumerate(X):
        if isinstance(sentence, (str, bytes, dict)) or not hasattr(sentence, "__len__"):
            raise ValueError(f"{owner}: sentence {i} of {name} must be a list of feature "
                             f"dicts, got {type(sentence).__name__}.")
        for t, token in enumerate(sentence):
            if not isinstance(token, dict):
                raise ValueError(f"{owner}: token {t} of sentence {i} of {name} must be a "
                                 f"dict of features, got {type(token).__name__}.")
        if y is None:
            continue
        labels = y[i]
        if isinstance(labels, (str, bytes)) or not hasattr(labels, "__len__"):
            raise ValueError(f"{owner}: the labels of sentence {i} of {name} must be a list "
                             f"of labels, got {type(labels).__name__}.")
        if len(labels) != len(sentence):
            where = min(len(labels), len(sentence))
            what = "no label" if len(labels) < len(sentence) else "a label but no token"
            raise ValueError(f"{owner}: sentence {i} of {name} has {len(sentence)} tokens "
                             f"but {len(labels)} labels (token {where} has {what}).")
        if len(sentence) == 0:
            raise ValueError(f"{owner}: sentence {i} of {name} has no token.")


def _zero_valued(token):
    """The items of a token dict whose value is 0 (a ``False``), their values 1: CRFsuite
    makes weights of these attributes, which the vectorizer's matrix does not show."""
    zeros = {}
    for key, value in token.items():
        if isinstance(value, (str, bytes)):
            continue
        if isinstance(value, dict):
            inner = _zero_valued(value)
            if inner:
                zeros[key] = inner
        elif isinstance(value, (bool, int, float, np.number)):
            if value == 0:
                zeros[key] = 1.0
        elif isinstance(value, (list, tuple, np.ndarray)) and len(value) \
                and not isinstance(value[0], (str, bytes)) and not all(value):
            zeros[key] = [1.0] * len(value)
    return zeros


class _DevLog:
    """The per-iteration record of :attr:`CRF.training_log_`, the dev score included."""

    def __init__(self, X_dev, y_dev):
        self.X_dev, self.y_dev = X_dev, y_dev
        self.rows = {}
        self.start = time.perf_counter()

    def __call__(self, iteration, estimator):
        row = self.rows.setdefault(int(iteration), {"iteration": int(iteration)})
        row["seconds"] = time.perf_counter() - self.start
        if self.X_dev is not None:
            row["dev_accuracy"] = float(estimator.score(self.X_dev, self.y_dev))

    def log(self, history):
        """The rows, each with the solver's record of its iteration where it has one."""
        history = {key: np.asarray(value) for key, value in history.items()}
        names = {"primal": "objective", "mistakes": "mistakes", "gap": "gap", "nnz": "nnz",
                 "dual": "dual"}
        n = len(next(iter(history.values()))) if history else 0
        iterations = (np.rint(history["passes"]).astype(int) if "passes" in history
                      else np.arange(1, n + 1))
        for k, iteration in enumerate(iterations.tolist()):
            row = self.rows.setdefault(iteration, {"iteration": iteration})
            for key, name in names.items():
                if key in history and k < len(history[key]):
                    value = history[key][k].item()
                    row[name] = value
        return [self.rows[i] for i in sorted(self.rows) if i > 0]


class CRF(BaseEstimator):
    """sklearn-crfsuite's ``CRF``, trained here: the same parameters, methods and attributes.

    Takes what ``sklearn_crfsuite.CRF`` takes -- a list of sentences, each a list of token
    feature dicts (values str, bytes, numbers, bool, lists of str, nested dicts), and a
    list of label sequences -- and gives what it gives.  The parameters are
    sklearn-crfsuite's, in its order, so that ``CRF("lbfgs", c1=0.1)`` means what it
    meant; None stands for CRFsuite's default.  A parameter that the chosen algorithm
    does not read, or that cannot mean here what it means in CRFsuite, is refused at
    ``fit`` with a ``ValueError`` naming what to use (see :ref:`crfsuite`).

    Parameters
    ----------
    algorithm : {"lbfgs", "l2sgd", "ap", "pa", "arow"}, default=None
        None is "lbfgs".  "lbfgs": CRFsuite's objective by OWL-QN
        (:class:`ElasticNetChainCRF`); "l2sgd": the L2-regularised likelihood by
        :class:`~sklearn_struct.EGCRF` with ``C = 1 / (2 c2)``; "ap": the averaged
        :class:`~sklearn_struct.StructuredPerceptron`; "pa": the max-margin model by
        :class:`~sklearn_struct.EGStructuredSVM` with ``C = c``; "arow" is refused (no
        learner here keeps a covariance of the weights), naming "pa" and "ap".
    min_freq : float, default=None
        lbfgs: drop the (attribute, label) and label pairs whose training frequency is
        below it (CRFsuite's ``feature.minfreq``; None: 0).
    all_possible_states : bool, default=None
        lbfgs: a weight for every (attribute, label) pair, else only for those seen in
        training (None: False).  The other algorithms learn every pair.
    all_possible_transitions : bool, default=None
        lbfgs: a weight for every label pair, else only for the pairs seen (None:
        False).  The other algorithms learn every pair.
    c1 : float, default=None
        lbfgs: the L1 coefficient (None: 0).
    c2 : float, default=None
        lbfgs and l2sgd: the L2 coefficient, of ``|w|^2`` (None: 1).
    max_iterations : int, default=None
        OWL-QN iterations (lbfgs; None: until ``delta`` stops it), passes (l2sgd, pa;
        None: 1000 and 100, EG stopping earlier on its duality gap) or epochs (ap; None:
        100).
    num_memories : int, default=None
        lbfgs: L-BFGS pairs kept (None: 6).
    epsilon : float, default=None
        Refused: CRFsuite's gradient-norm or loss threshold has no counterpart here.
    period : int, default=None
        lbfgs: iterations over which ``delta`` is measured (None: 10).
    delta : float, default=None
        lbfgs: stop once the objective fell by less than ``delta`` (relative) over the
        last ``period`` iterations (None: 1e-5), or at a certified relative duality gap
        of 1e-7.
    linesearch : str, default=None
        Refused: the line search here is OWL-QN's backtracking.
    max_linesearch : int, default=None
        Refused, as ``linesearch``.
    calibration_eta : float, default=None
        Refused: EG's step sizes adapt by themselves.
    calibration_rate : float, default=None
        Refused, as ``calibration_eta``.
    calibration_samples : int, default=None
        Refused, as ``calibration_eta``.
    calibration_candidates : int, default=None
        Refused, as ``calibration_eta``.
    calibration_max_trials : int, default=None
        Refused, as ``calibration_eta``.
    pa_type : {0, 1, 2}, default=None
        pa: 1 (None), PA-I, the structured SVM's linear slack; 0 (no slack) and 2
        (squared slack) are refused, naming ``pa_type=1``.
    c : float, default=None
        pa: the aggressiveness, which bounds each update as ``C`` bounds each
        sequence's dual variables in :class:`~sklearn_struct.EGStructuredSVM` (None: 1).
    error_sensitive : bool, default=None
        pa: True (None) scales the margin by the labels predicted wrong (the Hamming
        loss); False is refused.
    averaging : bool, default=None
        pa: True (None): the regularised optimum stands for the averaged weights; False
        (the last iterate) is refused.
    variance : float, default=None
        Refused: arow only.
    gamma : float, default=None
        Refused: arow only.
    verbose : bool, default=False
        Print the learner's progress.
    model_filename : str, default=None
        Refused: there is no CRFsuite model file; pickle the fitted estimator.
    keep_tempfiles : bool, default=False
        Accepted at False or None (there are no temporary files).
    trainer_cls : type, default=None
        Refused: there is no pycrfsuite trainer.

    Attributes
    ----------
    classes_ : list of str
        The labels, in the order of their first appearance in training (CRFsuite's).
    state_features_ : dict
        ``{(attribute, label): weight}`` of the non-zero weights.
    transition_features_ : dict
        ``{(label_from, label_to): weight}`` of the non-zero weights.
    attributes_ : list of str
        The attributes with a non-zero weight, sorted.
    training_log_ : list of dict
        One dict per iteration (pass, epoch): ``iteration``, ``seconds`` since the
        start of ``fit``, the learner's record where it has one (``objective``, ``gap``,
        ``nnz`` for lbfgs; ``objective``, ``dual``, ``gap`` where EG evaluated them;
        ``mistakes`` for ap) and ``dev_accuracy`` (token accuracy on ``X_dev``) when a
        dev set is given.
    vectorizer_ : SequenceDictVectorizer
        The fitted vectorizer (``separator=":"``: CRFsuite's attribute names).
    model_ : StructuredEstimator
        The fitted chain model (:class:`ElasticNetChainCRF`, ``EGCRF``,
        ``StructuredPerceptron`` or ``EGStructuredSVM``).

    See Also
    --------
    sklearn_struct.preprocessing.SequenceDictVectorizer : The dicts to matrices.
    ElasticNetChainCRF : The lbfgs model on feature matrices.

    Notes
    -----
    The constructor's arguments may be positional (sklearn-crfsuite's users write
    ``CRF("lbfgs")``), unlike the package's other estimators.

    Examples
    --------
    >>> from sklearn_struct.crfsuite import CRF
    >>> X = [[{"w": "the"}, {"w": "cat"}], [{"w": "a"}, {"w": "dog"}]]
    >>> y = [["DT", "NN"], ["DT", "NN"]]
    >>> crf = CRF("lbfgs", c2=0.1).fit(X, y)
    >>> crf.predict_single([{"w": "the"}, {"w": "dog"}])
    ['DT', 'NN']
    >>> crf.classes_
    ['DT', 'NN']
    """

    _parameter_constraints = {
        "algorithm": [None, StrOptions({"lbfgs", "l2sgd", "ap", "pa", "arow"})],
        "min_freq": [None, Interval(Real, 0, None, closed="left")],
        "all_possible_states": [None, "boolean"],
        "all_possible_transitions": [None, "boolean"],
        "c1": [None, Interval(Real, 0, None, closed="left")],
        "c2": [None, Interval(Real, 0, None, closed="left")],
        "max_iterations": [None, Interval(Integral, 1, None, closed="left")],
        "num_memories": [None, Interval(Integral, 1, None, closed="left")],
        "epsilon": [None, Real],
        "period": [None, Interval(Integral, 1, None, closed="left")],
        "delta": [None, Interval(Real, 0, None, closed="left")],
        "linesearch": [None, str],
        "max_linesearch": [None, Integral],
        "calibration_eta": [None, Real],
        "calibration_rate": [None, Real],
        "calibration_samples": [None, Integral],
        "calibration_candidates": [None, Integral],
        "calibration_max_trials": [None, Integral],
        "pa_type": [None, Options(Integral, {0, 1, 2})],
        "c": [None, Interval(Real, 0, None, closed="neither")],
        "error_sensitive": [None, "boolean"],
        "averaging": [None, "boolean"],
        "variance": [None, Real],
        "gamma": [None, Real],
        "verbose": ["verbose"],
        "model_filename": "no_validation",
        "keep_tempfiles": [None, "boolean"],
        "trainer_cls": "no_validation",
    }

    def __init__(self, algorithm=None, min_freq=None, all_possible_states=None,
                 all_possible_transitions=None, c1=None, c2=None, max_iterations=None,
                 num_memories=None, epsilon=None, period=None, delta=None, linesearch=None,
                 max_linesearch=None, calibration_eta=None, calibration_rate=None,
                 calibration_samples=None, calibration_candidates=None,
                 calibration_max_trials=None, pa_type=None, c=None, error_sensitive=None,
                 averaging=None, variance=None, gamma=None, verbose=False,
                 model_filename=None, keep_tempfiles=False, trainer_cls=None):
        self.algorithm = algorithm
        self.min_freq = min_freq
        self.all_possible_states = all_possible_states
        self.all_possible_transitions = all_possible_transitions
        self.c1 = c1
        self.c2 = c2
        self.max_iterations = max_iterations
        self.num_memories = num_memories
        self.epsilon = epsilon
        self.period = period
        self.delta = delta
        self.linesearch = linesearch
        self.max_linesearch = max_linesearch
        self.calibration_eta = calibration_eta
        self.calibration_rate = calibration_rate
        self.calibration_samples = calibration_samples
        self.calibration_candidates = calibration_candidates
        self.calibration_max_trials = calibration_max_trials
        self.pa_type = pa_type
        self.c = c
        self.error_sensitive = error_sensitive
        self.averaging = averaging
        self.variance = variance
        self.gamma = gamma
        self.verbose = verbose
        self.model_filename = model_filename
        self.keep_tempfiles = keep_tempfiles
        self.trainer_cls = trainer_cls

    # ------------------------------------------------------------ parameters
    def _value(self, name):
        value = getattr(self, name)
        return DEFAULTS.get(name) if value is None else value

    def _check_parameters(self):
        """Refuse what the algorithm does not read or what cannot mean the same here."""
        algorithm = self._value("algorithm")
        if algorithm == "arow":
            raise ValueError(f"CRF: {AROW}")
        for name, why in NO_MEANING.items():
            if getattr(self, name) is not None:
                raise ValueError(f"CRF: {name}={getattr(self, name)!r} has no meaning here: "
                                 f"{why}.")
        if self.keep_tempfiles:
            raise ValueError("CRF: keep_tempfiles=True has no meaning here: training makes "
                             "no temporary files; leave it False.")
        reads = READS[algorithm]
        for name in ("min_freq", "c1", "c2", "num_memories", "period", "delta", "pa_type",
                     "c", "error_sensitive", "averaging"):
            if getattr(self, name) is not None and name not in reads:
                users = sorted(a for a, names in READS.items() if name in names)
                raise ValueError(f"CRF: algorithm={algorithm!r} does not read {name} (as in "
                                 f"CRFsuite, which refuses it too); {name} is a parameter of "
                                 f"algorithm {' or '.join(map(repr, users))}.")
        if algorithm == "l2sgd" and self._value("c2") == 0:
            raise ValueError("CRF: algorithm='l2sgd' needs c2 > 0 (it is EGCRF with "
                             "C = 1 / (2 c2)); for the unregularised likelihood use "
                             "algorithm='lbfgs' with c2=0.")
        if algorithm == "pa":
            if self._value("pa_type") != 1:
                raise ValueError(f"CRF: pa_type={self.pa_type!r} has no learner here: the "
                                 "max-margin model (EGStructuredSVM) has the linear slack "
                                 "of PA-I; use pa_type=1 (a large c comes near pa_type=0).")
            for name in ("error_sensitive", "averaging"):
                if getattr(self, name) is False:
                    raise ValueError(
                        f"CRF: {name}=False has no meaning here: the max-margin model "
                        "(EGStructuredSVM) scales its margin by the Hamming loss and gives "
                        "its regularised optimum (what averaging approximates); use "
                        f"{name}=True, or algorithm='ap'.")
        return algorithm

    def _model(self, algorithm):
        chain = ChainStructure(start_end=False)
        max_iter = self.max_iterations or MAX_ITERATIONS[algorithm]
        verbose = int(bool(self.verbose))
        if algorithm == "lbfgs":
            return ElasticNetChainCRF(
                c1=self._value("c1"), c2=self._value("c2"), max_iter=max_iter,
                delta=self._value("delta"), period=self._value("period"),
                memory=self._value("num_memories"),
                all_possible_states=bool(self.all_possible_states),
                all_possible_transitions=bool(self.all_possible_transitions),
                min_freq=self._value("min_freq"), structure=chain, verbose=verbose)
        if algorithm == "l2sgd":
            return EGCRF(C=1.0 / (2.0 * self._value("c2")), structure=chain,
                         max_iter=max_iter, random_state=0, verbose=verbose)
        if algorithm == "ap":
            return StructuredPerceptron(structure=chain, max_iter=max_iter, average=True,
                                        random_state=0, verbose=verbose)
        return EGStructuredSVM(C=self._value("c"), structure=chain, solver="online",
                               max_iter=max_iter, random_state=0, verbose=verbose)

    # ------------------------------------------------------------------- fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, X_dev=None, y_dev=None):
        """Train the model on token feature dicts.

        Parameters
        ----------
        X : list of list of dict
            Feature dicts, a list per sentence (sklearn-crfsuite's format).
        y : list of list of str
            Labels, a list per sentence.
        X_dev : list of list of dict, default=None
            Held-out sentences, scored after every iteration (``training_log_``); they
            do not change the model.
        y_dev : list of list of str, default=None
            Their labels.

        Returns
        -------
        self : CRF
            The fitted estimator.
        """
        if (X_dev is None) != (y_dev is None):
            raise ValueError("CRF: pass both X_dev and y_dev to use the holdout data.")
        _check_sequences(X, y, "CRF")
        if X_dev is not None:
            _check_sequences(X_dev, y_dev, "CRF", name="X_dev")
        algorithm = self._check_parameters()
        vectorizer = SequenceDictVectorizer(separator=":")
        matrices = vectorizer.fit_transform(X)
        labels = [np.asarray(list(sequence), dtype=object) for sequence in y]
        dev = None
        if X_dev is not None:
            dev = (vectorizer.transform(X_dev),
                   [np.asarray(list(sequence), dtype=object) for sequence in y_dev])
        log = _DevLog(*(dev or (None, None)))
        model = self._model(algorithm)
        if algorithm == "lbfgs":  # CRFsuite weighs the attributes of value 0 too
            zeros = vectorizer.transform([[_zero_valued(token) for token in sentence]
                                          for sentence in X])
            model.fit(matrices, labels, callback=log, zeros=zeros)
        else:
            model.fit(matrices, labels, callback=log)
        self.vectorizer_ = vectorizer
        self.model_ = model
        self.classes_ = list(dict.fromkeys(label for sequence in y for label in sequence))
        self.training_log_ = log.log(model.history_)
        return self

    # ------------------------------------------------------------ prediction
    def _matrices(self, X):
        check_is_fitted(self)
        _check_sequences(X, None, "CRF")
        return self.vectorizer_.transform(X)

    def _per_sentence(self, X, method):
        """``method`` of the chain model on the non-empty sentences; [] for empty ones."""
        matrices = self._matrices(X)
        present = [i for i, sentence in enumerate(X) if len(sentence)]
        results = [[] for _ in X]
        if present:
            values = getattr(self.model_, method)([matrices[i] for i in present])
            for i, value in zip(present, values):
                results[i] = value
        return results

    def predict(self, X):
        """Predict the labels of every sentence.

        Parameters
        ----------
        X : list of list of dict
            Feature dicts, a list per sentence.

        Returns
        -------
        y : ndarray of object of shape (n_sentences,)
            A list of labels per sentence.
        """
        predicted = self._per_sentence(X, "predict")
        out = np.empty(len(predicted), dtype=object)
        out[:] = [np.asarray(labels).tolist() for labels in predicted]
        return out

    def predict_single(self, xseq):
        """Predict the labels of one sentence.

        Parameters
        ----------
        xseq : list of dict
            Feature dicts, one per token.

        Returns
        -------
        y : list of str
            A label per token.
        """
        return self.predict([xseq])[0]

    def predict_marginals(self, X):
        """The probability of every label at every token.

        Parameters
        ----------
        X : list of list of dict
            Feature dicts, a list per sentence.

        Returns
        -------
        marginals : ndarray of object of shape (n_sentences,)
            Per sentence a list of ``{label: probability}`` dicts, one per token.
        """
        if not hasattr(self.__dict__.get("model_"), "predict_marginals"):
            check_is_fitted(self)
            raise AttributeError(f"CRF: algorithm={self._value('algorithm')!r} trains no "
                                 "probabilistic model; use 'lbfgs' or 'l2sgd'.")
        labels = self.model_.classes_.tolist()
        out = np.empty(len(X), dtype=object)
        out[:] = [[dict(zip(labels, row.tolist())) for row in np.asarray(mu)]
                  for mu in self._per_sentence(X, "predict_marginals")]
        return out

    def predict_marginals_single(self, xseq):
        """The probability of every label at every token of one sentence.

        Parameters
        ----------
        xseq : list of dict
            Feature dicts, one per token.

        Returns
        -------
        marginals : list of dict
            ``{label: probability}`` per token.
        """
        return self.predict_marginals([xseq])[0]

    def score(self, X, y):
        """Token accuracy (sklearn-crfsuite's ``score``).

        Parameters
        ----------
        X : list of list of dict
            Feature dicts, a list per sentence.
        y : list of list of str
            The true labels.

        Returns
        -------
        score : float
            The fraction of tokens predicted right.
        """
        _check_sequences(X, y, "CRF")
        predicted = self.predict(X)
        right = sum(int(a == b) for true, pred in zip(y, predicted) for a, b in zip(true, pred))
        total = sum(len(true) for true in y)
        return right / total if total else 0.0

    # -------------------------------------------------------- fitted weights
    def _named(self):
        check_is_fitted(self)
        return self.model_.named_weights(self.vectorizer_.feature_names_)

    @property
    def state_features_(self):
        """``{(attribute, label): weight}`` of the non-zero state weights."""
        return self._named()["state_features_"]

    @property
    def transition_features_(self):
        """``{(label_from, label_to): weight}`` of the non-zero transition weights."""
        return {pair: weight for pair, weight in self._named()["transition_features_"].items()
                if weight != 0.0}

    @property
    def attributes_(self):
        """The attributes with a non-zero weight, sorted."""
        return sorted({attribute for attribute, _ in self.state_features_})
