"""CRFs and max-margin Markov networks trained by exponentiated gradient.

:class:`EGCRF` (regularised log-likelihood) and :class:`EGStructuredSVM`
(structured hinge loss) minimise ``1/2 ||w||^2 + C sum_i s_i loss_i(w)`` by the
exponentiated-gradient algorithms of Collins et al. (JMLR 2008) on the dual;
:func:`eg_path` fits a warm-started sequence of ``C`` values (section 7.1.2).
The mathematics lives in :mod:`sklearn_struct.solvers.eg`.
"""

import copy

import numpy as np
from sklearn.base import clone
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import StrOptions

from ._eg_base import _BaseEG
from .base import check_path_arguments, fit_path_point, path_point_score
from .solvers.eg import STARTS
from .solvers.working_set import working_set_solve

__all__ = ["EGCRF", "EGStructuredSVM", "eg_path"]


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
        The gap costs one inference per example: it is checked after the
        passes 1, 2, 3, ... spaced geometrically (every quarter of the passes
        done), sooner when its rate predicts ``tol`` sooner, after every pass
        while ``C`` is annealed, after the last pass, and after every pass
        when ``tol=0`` (a training curve).  With the online solver, an
        ``order`` other than "gap" and a structure with its own log partition,
        the visits of a pass that ends on a check give their examples' shares
        of the gap (one log partition each), and the gap is evaluated only when
        they say it is near ``tol``; see :ref:`when the gap is evaluated
        <eg_gap_schedule>`.
    max_iter : float, default=100
        Maximum number of effective passes over the data (examples visited /
        n_samples, every tried step size counting as a visit).
    early_stopping : bool, default=False
        Score the model of every pass on a validation set (``X_val``, ``y_val``
        given to ``fit``, else ``validation_fraction`` of the examples held out),
        stop after ``n_iter_no_change`` passes without a better score, and keep
        the weights of the best pass (``best_iteration_``); see
        :ref:`early_stopping`.
    validation_fraction : float, default=0.1
        Share of the examples held out for early stopping (rounded up to whole
        examples), when no validation set is given.
    n_iter_no_change : int, default=5
        Passes without a better validation score after which early stopping
        ends the fit.
    class_weight : dict, "balanced" or None, default=None
        Weights of the labels in the likelihood, ``{label: weight}``, or
        ``"balanced"`` (``n_units / (n_classes * count)``, counted over the
        training units).  An example's negative log-likelihood is multiplied by
        the mean weight of its units' true labels (and by ``sample_weight``): on
        flat ``X`` this is ``LogisticRegression``'s ``class_weight``, and a
        sequence whose labels all weigh ``k`` counts as ``k`` copies of it.
        Needs full labels; see :ref:`class_weight`.
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
    start : {"uniform", "truth"}, default="uniform"
        The dual point a cold fit starts from.  "uniform": uniform
        distributions over each example's outputs, the paper's start, with
        ``C`` annealed (``annealing``).  "truth": each distribution all on its
        true output, the dual point of ``w = 0`` (the perceptron's start), found
        without inference, sensible at any ``C`` and therefore not annealed; needs
        ``solver="online"``.  Where annealing takes many passes (``C`` far
        above :func:`~sklearn_struct.solvers.eg.uniform_start_C`, as in
        dependency parsing), "truth" reaches a given gap, and accuracy, in a
        fraction of the passes; see :ref:`eg_start`.  Partially labelled
        fits start from their own first E-step whatever ``start``.
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
    best_iteration_ : int
        With ``early_stopping``: the pass whose weights the model keeps.
    validation_scores_ : ndarray of shape (n_passes,)
        With ``early_stopping``: the validation score of every pass.
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
    _parameter_constraints = {
        **_BaseEG._parameter_constraints,
        "start": [StrOptions(set(STARTS))],
    }

    def __init__(
        self, *, C=1.0, structure=None, solver="online", order="gap",
        learning_rate="adaptive", eta0=0.5, tol=1e-4, max_iter=100, early_stopping=False,
        validation_fraction=0.1, n_iter_no_change=5, class_weight=None, warm_start=False,
        annealing=True, start="uniform", partial_fit_memory=1000, max_latent_iter=30,
        n_jobs=None, cache_size=None, cache_dir=None, random_state=None, verbose=0,
    ):
        super().__init__(
            C=C, structure=structure, solver=solver, order=order, learning_rate=learning_rate,
            eta0=eta0, tol=tol, max_iter=max_iter, early_stopping=early_stopping,
            validation_fraction=validation_fraction, n_iter_no_change=n_iter_no_change,
            class_weight=class_weight, warm_start=warm_start, annealing=annealing,
            partial_fit_memory=partial_fit_memory, max_latent_iter=max_latent_iter,
            n_jobs=n_jobs, cache_size=cache_size, cache_dir=cache_dir,
            random_state=random_state, verbose=verbose,
        )
        self.start = start

    def _start(self):
        return self.start


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
    early_stopping : bool, default=False
        Score the model of every pass on a validation set (``X_val``, ``y_val``
        given to ``fit``, else ``validation_fraction`` of the examples held out),
        stop after ``n_iter_no_change`` passes without a better score, and keep
        the weights of the best pass (``best_iteration_``); see :class:`EGCRF`.
    validation_fraction : float, default=0.1
        Share of the examples held out for early stopping (rounded up to whole
        examples), when no validation set is given.
    n_iter_no_change : int, default=5
        Passes without a better validation score after which early stopping
        ends the fit.
    class_weight : dict, "balanced" or None, default=None
        Weights of the labels in the hinge, ``{label: weight}``, or
        ``"balanced"`` (``n_units / (n_classes * count)`` over the training
        units).  An example's hinge (its slack) is multiplied by the mean weight
        of its units' true labels, as by ``sample_weight``; a sequence whose
        labels all weigh ``k`` counts as ``k`` copies of it.  The margin that a
        mistake on a label demands is the structure's ``loss_weights``.  Needs
        full labels; see :ref:`class_weight`.
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
        starts on the truth (``w = 0``) and ascends the dual of the hinge
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
        learning_rate="adaptive", eta0=0.5, tol=1e-3, max_iter=100, early_stopping=False,
        validation_fraction=0.1, n_iter_no_change=5, class_weight=None, warm_start=False,
        annealing=True, smoothing=True, accelerate=True, partial_fit_memory=1000,
        max_latent_iter=30, n_jobs=None, cache_size=None, cache_dir=None, random_state=None,
        verbose=0,
    ):
        super().__init__(
            C=C, structure=structure, solver=solver, order=order, learning_rate=learning_rate,
            eta0=eta0, tol=tol, max_iter=max_iter, early_stopping=early_stopping,
            validation_fraction=validation_fraction, n_iter_no_change=n_iter_no_change,
            class_weight=class_weight, warm_start=warm_start, annealing=annealing,
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
            self.structure_.output_space().training_structure(), batch, Y,
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
        converged, _ = fit_path_point(model, C, X, y, sample_weight=sample_weight)
        history = model.history_
        rows.append((C, history["passes"][-1], history["seconds"].sum(), model.primal_objective_,
                     model.duality_gap_, converged,
                     path_point_score(model, X_val, y_val, scoring)))
    columns = list(zip(*rows))
    path = {key: np.asarray(col) for key, col in zip(
        ("C", "passes", "seconds", "primal", "gap", "converged", "validation_score"), columns)}
    path["total_passes"] = np.cumsum(path["passes"])
    final = copy.copy(model)
    final._dual_state = None
    path["estimator"] = final.set_params(warm_start=False, random_state=estimator.random_state)
    return path
