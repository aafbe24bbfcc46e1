"""The prediction API of the structured estimators, and predictions in parallel chunks.

:class:`PredictionMixin` gives :class:`~sklearn_struct.base.StructuredEstimator` every
method that uses a fitted model: ``predict``, ``score``, ``decision_function``,
``predict_marginals``, ``predict_proba``, ``predict_log_proba`` (only where they work),
``predict_k_best`` and ``sample_y``.  :func:`predict_outputs` and
:func:`predict_marginals` compute the MAP outputs and the part marginals of a fitted
linear model over any structure, in parallel chunks of examples.
"""

import re

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from ._chunk_tags import chunk_event, strict_chunk_spans
from ._validation import (_FORMS, _check_data_set, _check_finite_rows, _declared_structure,
                          _input_form, _reject_token_dicts)
from .solvers._chunks import ExampleChunks

__all__ = ["PredictionMixin", "predict_marginals", "predict_outputs"]

#: The name of the targets in the codec's messages, which ``allowed_labels`` take the form of.
_RENAMED_TARGET = re.compile(r"\by(?=\[| has | must | is required)")


def predict_outputs(structure, batch, w, n_jobs=None):
    """MAP outputs of every example under weights ``w`` (flat over output units)."""
    out = ExampleChunks(structure, batch, n_jobs).map(_chunk_argmax, shared=(structure, w))
    return np.concatenate(out)


def predict_marginals(structure, batch, w, n_jobs=None):
    """Part marginals of every example under the Gibbs distribution of ``w``."""
    out = ExampleChunks(structure, batch, n_jobs).map(_chunk_marginals, shared=(structure, w))
    return np.concatenate(out)


def _chunk_argmax(sub, structure, w):
    return structure.argmax(sub, structure.part_scores(sub, w))


def _chunk_marginals(sub, structure, w):
    return structure.marginals(sub, structure.part_scores(sub, w))[0]


class PredictionMixin:
    """The prediction API of :class:`~sklearn_struct.base.StructuredEstimator`.

    Reads the fitted attributes that ``fit`` sets (``structure_``, ``weights_``,
    the target codec and the input layout) and checks inputs against them with
    the estimator's ``_check_input_shape`` and ``_check_sample_weight``.

    Notes
    -----
    ``_probabilistic`` (a class attribute) says whether the model is a Gibbs
    distribution (a CRF): ``predict_marginals``, ``predict_proba``,
    ``predict_log_proba``, ``sample_y`` and ``predict_k_best(return_proba=True)``
    need it.
    """

    # ------------------------------------------------------------- prediction
    def _validate_predict_data(self, X):
        """Batch of ``X`` for the fitted model, in the input form and width of ``fit``."""
        check_is_fitted(self)
        name = type(self).__name__
        _check_data_set(X, name)
        _reject_token_dicts(X, name)
        table = _input_form(X) == "table"
        if table != self._table_input:
            raise ValueError(
                f"{name} was fitted on {_FORMS['table' if self._table_input else 'examples']}; "
                f"got {type(X).__name__}."
            )
        if table:
            _check_finite_rows(X, name)
            X = validate_data(self, X, reset=False, accept_sparse="csr", dtype=np.float64)
        batch = self.structure_.make_batch(X, n_states=self._codec.n_states)
        self._check_input_shape(batch, name)
        return batch

    def _part_scores(self, batch, allowed_labels=None, method="predict"):
        """The part scores of ``batch``; with ``allowed_labels``, ``-inf`` on every part
        of a label that a unit may not take (checked before any inference)."""
        scores = self.structure_.part_scores(batch, self.weights_)
        if allowed_labels is None:
            return scores
        return scores + self._constraint_scores(batch, allowed_labels, method)

    def _constraint_scores(self, batch, allowed_labels, method):
        """``0`` on the parts that ``allowed_labels`` allow, ``-inf`` on the others."""
        allowed = self._allowed_mask(batch, allowed_labels, method)
        return self._mask_scores(batch, allowed, f"{type(self).__name__}.{method}")

    def _allowed_mask(self, batch, allowed_labels, method):
        """``allowed[u, k]``: whether ``allowed_labels`` let unit ``u`` take label ``k``."""
        name = f"{type(self).__name__}.{method}"
        codec, structure = self._codec, self.structure_
        if not (hasattr(codec, "encode_partial") and structure.accepts_forbidden_parts):
            raise ValueError(
                f"{name}: allowed_labels restrict the labels of the units of sequences or "
                f"trees (chains, semi-Markov chains, label trees); {type(structure).__name__}'s "
                "outputs take no such constraints.")
        try:
            Y, allowed = codec.encode_partial(batch, allowed_labels)
        except (TypeError, ValueError) as error:  # the codec's message names y, as in fit
            message = _RENAMED_TARGET.sub("allowed_labels", str(error))
            raise type(error)(f"{name}: {message}") from None
        return np.eye(codec.n_states, dtype=bool)[Y] if allowed is None else allowed

    def _mask_scores(self, batch, allowed, name):
        try:
            return self.structure_.output_space().partial_label_scores(batch, allowed,
                                                                       self.structure_)
        except ValueError as error:
            raise ValueError(f"{name}: allowed_labels leave no output: {error}") from None

    def _predict_encoded(self, batch):
        return predict_outputs(self.structure_, batch, self.weights_, self.n_jobs)

    def _encode_scored(self, batch, y):
        """Encoded true outputs for ``score``: labels unseen in training become -1 (wrong)."""
        codec = self._codec
        if codec.n_states is None:  # binary outputs: every value must be valid
            return codec.encode(batch, y)
        flat = self.structure_.output_space().flat
        try:
            groups = [y] if flat else list(y)
        except TypeError:
            return codec.encode(batch, y)  # the codec explains what y should be
        known = set(codec.classes_.tolist())
        fixed, unseen = [], []
        for labels in groups:
            array = np.asarray(labels)
            if array.ndim != 1:
                return codec.encode(batch, y)
            try:
                mask = np.fromiter((v not in known for v in array.tolist()), bool, len(array))
            except TypeError:  # unhashable labels
                return codec.encode(batch, y)
            if mask.any():  # stand-ins that the codec accepts, marked -1 afterwards
                labels = np.empty(len(array), dtype=object)
                labels[:] = array.tolist()
                labels[mask] = codec.classes_[0]
                array = labels
            fixed.append(array)
            unseen.append(mask)
        if not any(mask.any() for mask in unseen):
            return codec.encode(batch, y)
        Y = codec.encode(batch, fixed[0] if flat else fixed).copy()
        Y[np.concatenate(unseen)] = -1
        return Y

    def predict(self, X, allowed_labels=None):
        """Predict the best output of every example.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features), or list
            Inputs in the form used for ``fit``: one 2-D matrix (flat samples),
            a list of ``(T_i, n_features)`` arrays or sparse matrices
            (sequences) or a list of graph tuples (matching, min-cut).
        allowed_labels : list of array-like of shape (n_units_i,), default=None
            Constraints on the outputs of sequences and trees (see
            :ref:`constraints_at_prediction`): per example, one entry per unit,
            ``None`` (any label), a label (that label), or a ``set`` of the
            labels allowed there, as the partial labels of ``fit``.  The best
            output among those that obey them.

        Returns
        -------
        y : ndarray of shape (n_samples,), or list of ndarray of shape (n_units_i,)
            Predicted labels (elements of ``classes_``): one per sample, or one
            array per sequence (a label per token) or per graph (0/1 per
            candidate edge or per node).
        """
        batch = self._validate_predict_data(X)
        if allowed_labels is None:
            return self._codec.decode(batch, self._predict_encoded(batch))
        scores = self._part_scores(batch, allowed_labels, "predict")
        return self._codec.decode(batch, self.structure_.argmax(batch, scores))

    def score(self, X, y, sample_weight=None):
        """Score of the predictions: the structure's ``score_outputs``.

        Accuracy over samples, tokens or nodes; the F1 score of the predicted
        edges for matchings.  Labels never seen in training count as wrong.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features), or list
            Test inputs, in the form accepted by :meth:`predict`.
        y : array-like of shape (n_samples,), or list of array-like of shape (n_units_i,)
            True labels, in the form given to ``fit``: one label per sample, or
            one label sequence per input sequence, or one 0/1 vector per graph.
        sample_weight : array-like of shape (n_samples,), default=None
            Per-example weights (a sequence's or graph's weight counts for each
            of its tokens, nodes or edges).

        Returns
        -------
        score : float
            For the built-in structures, the weighted fraction of correctly
            predicted labels in ``[0, 1]``, or for matchings the F1 score of the
            predicted edges pooled over all graphs.
        """
        batch = self._validate_predict_data(X)
        if self._table_input:  # as in fit: a column vector of labels is accepted
            y = column_or_1d(y, warn=True)
        Y_true = self._encode_scored(batch, y)
        sample_weight = self._check_sample_weight(sample_weight, batch.n_samples)
        Y_pred = self._predict_encoded(batch)
        return float(self.structure_.output_space().score(batch, Y_pred, Y_true, sample_weight))

    def decision_function(self, X):
        """Part scores ``w . phi(x, r)`` of every output unit.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features), or list
            Inputs in the form used for ``fit``.

        Returns
        -------
        scores : ndarray or list of ndarray
            The structure's per-unit view of the part scores
            (:meth:`~sklearn_struct.structures.OutputSpace.unit_values`):
            for flat samples an ``(n_samples, n_classes)`` array, or of shape
            ``(n_samples,)`` with the score of ``classes_[1]`` minus that of
            ``classes_[0]`` for two classes (scikit-learn's binary
            convention); for sequences one ``(T_i, n_classes)`` array of label
            scores per sequence (the transition scores add up along a path);
            for graphs one array of part scores per graph.
        """
        batch = self._validate_predict_data(X)
        space = self.structure_.output_space()
        values = space.unit_values(batch, self._part_scores(batch))
        if space.flat and len(self.classes_) == 2:
            values = np.asarray(values)
            return values[:, 1] - values[:, 0]
        return values

    # -------------------------------------------------- probabilistic outputs
    def _current_structure(self):
        """The fitted structure, or the one the parameter stands for (None if invalid)."""
        fitted = self.__dict__.get("structure_")
        return fitted if fitted is not None else _declared_structure(self.structure)

    def _marginals_available(self):
        structure = self._current_structure()
        return (self._probabilistic and structure is not None
                and structure.supports("marginals"))

    def _proba_available(self):
        return self._marginals_available() and self._current_structure().output_space().flat

    @available_if(_marginals_available)
    def predict_marginals(self, X, allowed_labels=None):
        """Posterior marginal probabilities of every label of every output unit.

        Only for probabilistic models (CRFs) over structures with marginals.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features), or list
            Inputs in the form used for ``fit``, as for :meth:`decision_function`.
        allowed_labels : list of array-like of shape (n_units_i,), default=None
            Constraints, as for :meth:`predict`: the marginals are then those of
            the distribution conditioned on the outputs that obey them.

        Returns
        -------
        marginals : ndarray or list of ndarray
            The structure's per-unit view of the part marginals: an
            ``(n_samples, n_classes)`` array for flat samples, one
            ``(T_i, n_classes)`` array per sequence.
        """
        batch = self._validate_predict_data(X)
        if allowed_labels is None:
            mu = predict_marginals(self.structure_, batch, self.weights_, self.n_jobs)
        else:
            scores = self._part_scores(batch, allowed_labels, "predict_marginals")
            mu = self.structure_.marginals(batch, scores)[0]
        return self.structure_.output_space().unit_values(batch, mu)

    @available_if(_marginals_available)
    def predict_chunks(self, X, scheme="IOB2", allowed_labels=None):
        """The chunks of the predicted tags, each with its exact probability.

        The tags of the best output (:meth:`predict`) are read strictly by
        ``scheme`` (:func:`~sklearn_struct.metrics.chunk_f1_score`'s
        ``mode="strict"``).  A chunk's probability is that of the outputs in
        which the same tokens form the same chunk: under a strict scheme they
        are the outputs whose tokens carry the chunk's tags (and whose
        neighbour does not continue it), so it is a ratio of two partition
        functions, computed by the structure's dynamic program (chains,
        semi-Markov chains).

        Parameters
        ----------
        X : list
            Inputs in the form used for ``fit``.
        scheme : {"IOB2", "IOE2", "BIOES", "BILOU"} or an alias ("BIO", "IOBES"), \
                default="IOB2"
            How the labels (``classes_``) write chunks.
        allowed_labels : list of array-like of shape (n_units_i,), default=None
            Constraints, as for :meth:`predict`: the best output and the
            probabilities are then those conditioned on them.

        Returns
        -------
        chunks : list of list of tuple
            Per example, its chunks ``(chunk_type, start, end, probability)``
            in order (``end`` exclusive).

        Raises
        ------
        ValueError
            If ``classes_`` are not tags of ``scheme``, before any inference.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_struct import EGCRF
        >>> X = [np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])] * 4
        >>> y = [np.array(["B-PER", "I-PER", "O"])] * 4
        >>> crf = EGCRF(C=10.0).fit(X, y)
        >>> [(kind, start, end) for kind, start, end, _ in crf.predict_chunks(X[:1])[0]]
        [('PER', 0, 2)]
        >>> bool(0.5 < crf.predict_chunks(X[:1])[0][0][3] <= 1.0)
        True
        """
        name = f"{type(self).__name__}.predict_chunks"
        try:
            strict_chunk_spans(self.classes_.tolist(), scheme)
        except ValueError as error:
            raise ValueError(f"{name}: classes_ are not {scheme!r} chunk tags ({error}).") from None
        batch = self._validate_predict_data(X)
        structure, K = self.structure_, len(self.classes_)
        allowed = (np.ones((int(batch.unit_offsets[-1]), K), dtype=bool)
                   if allowed_labels is None
                   else self._allowed_mask(batch, allowed_labels, "predict_chunks"))
        scores = self._part_scores(batch)
        if allowed_labels is not None:
            scores = scores + self._mask_scores(batch, allowed, name)
        tags = self._codec.decode(batch, structure.argmax(batch, scores))
        index = {label: k for k, label in enumerate(self.classes_.tolist())}
        found, examples, masks = [], [], []
        for i, sentence in enumerate(tags):
            found.append(strict_chunk_spans(sentence.tolist(), scheme))
            units = allowed[batch.unit_offsets[i]:batch.unit_offsets[i + 1]]
            for chunk_type, start, end in found[-1]:
                mask = units.copy()
                for position, tag, required in chunk_event(chunk_type, start, end,
                                                           len(sentence), scheme):
                    keep = np.full(K, not required)
                    if tag in index:
                        keep[index[tag]] = required
                    mask[position] &= keep
                examples.append(i)
                masks.append(mask)
        if not examples:
            return [[] for _ in found]
        events = structure.take(batch, np.asarray(examples))
        event_scores = structure.part_scores(events, self.weights_) + self._mask_scores(
            events, np.concatenate(masks), name)
        log_ratio = (structure.log_partition(events, event_scores)
                     - structure.log_partition(batch, scores)[examples])
        probabilities = iter(np.exp(np.minimum(log_ratio, 0.0)).tolist())
        return [[(*chunk, next(probabilities)) for chunk in chunks] for chunks in found]

    @available_if(_proba_available)
    def predict_proba(self, X):
        """Class probabilities of flat samples.

        Only for probabilistic models over flat outputs (multiclass).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Flat samples.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Probability of each class (columns ordered as ``classes_``).
        """
        return np.asarray(self.predict_marginals(X))

    @available_if(_proba_available)
    def predict_log_proba(self, X):
        """Log class probabilities of flat samples.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Flat samples, as for :meth:`predict_proba`.

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
            Natural logarithm of :meth:`predict_proba`.
        """
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    # ------------------------------------------------ k-best outputs, samples
    def _check_dp_operation(self, operation, method):
        """Fitted, and the fitted structure performs ``operation``; before any work."""
        check_is_fitted(self)
        self.structure_.check_supports(operation, needed_by=f"{type(self).__name__}.{method}")

    def _decode_rows(self, batch, Y, present):
        """Per example, the decoded outputs of the rows of ``Y`` where ``present[:, i]``.

        A flat structure's outputs come as an ``(n_samples, n_rows)`` label
        array (every sample has as many outputs); otherwise as one list of
        outputs (each as :meth:`predict` gives it) per example.
        """
        offsets = batch.unit_offsets
        Y = Y.copy()
        for j in range(1, Y.shape[0]):  # missing outputs: stand-ins, dropped after decoding
            for i in np.flatnonzero(~present[j]):
                Y[j, offsets[i]:offsets[i + 1]] = Y[0, offsets[i]:offsets[i + 1]]
        rows = [self._codec.decode(batch, Y[j]) for j in range(Y.shape[0])]
        if self.structure_.output_space().flat:
            n_kept = int(present.sum(axis=0).min()) if present.size else 0
            return np.stack([np.asarray(row) for row in rows[:n_kept]], axis=1)
        return [[rows[j][i] for j in range(Y.shape[0]) if present[j, i]]
                for i in range(batch.n_samples)]

    def predict_k_best(self, X, k, return_proba=False, allowed_labels=None):
        """The ``k`` highest-scoring outputs of every example, best first.

        Exact, from the structure's dynamic program (chains, with their
        allowed transitions, semi-Markov chains, label trees, projective
        dependency trees, grammars, multiclass); ties are broken in a fixed
        order and the first output is :meth:`predict`'s.  Outputs the
        structure forbids (a chain's ``allowed_transitions``) are never among
        them.  Structures without a dynamic program (matchings, min-cuts,
        non-projective trees) raise :class:`~sklearn_struct.structures.UnsupportedOperation`.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features), or list
            Inputs in the form used for ``fit``.
        k : int
            How many outputs per example, at least 1: any number.  An example
            with fewer outputs gets all of them; the time and memory grow with
            the outputs returned, not with ``k`` (the structure counts its
            outputs first).
        return_proba : bool, default=False
            Also return each output's probability ``exp(score - log Z)``
            under the model's Gibbs distribution (CRFs only, such as
            :class:`~sklearn_struct.EGCRF`).
        allowed_labels : list of array-like of shape (n_units_i,), default=None
            Constraints, as for :meth:`predict`: the ``k`` best outputs among
            those that obey them, and their probabilities conditioned on them.

        Returns
        -------
        y_k : ndarray of shape (n_samples, n_best), or list of list of ndarray
            For flat samples, the labels of the ``n_best = min(k, n_classes)``
            best classes of every sample; otherwise one list per example of
            up to ``k`` outputs, each in the form :meth:`predict` gives it
            (a label array for a sequence).
        scores : ndarray of shape (n_samples, n_best), or list of ndarray
            The outputs' scores ``w . Phi(x, y)``, in the same layout.
        proba : ndarray of shape (n_samples, n_best), or list of ndarray
            Only with ``return_proba=True``: the outputs' probabilities
            ``p(y | x)``, in the same layout; they sum to at most 1 per example.

        Raises
        ------
        ValueError
            If ``k`` is not a positive integer, or ``return_proba`` is asked
            of a model that is not probabilistic.
        UnsupportedOperation
            If the structure has no dynamic program.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_struct import EGCRF
        >>> X = [np.array([[1.0], [0.0]]), np.array([[0.0], [1.0], [1.0]])]
        >>> y = [np.array(["a", "b"]), np.array(["b", "a", "a"])]
        >>> crf = EGCRF(C=10.0).fit(X, y)
        >>> y_k, scores, proba = crf.predict_k_best(X, 3, return_proba=True)
        >>> [labels.tolist() for labels in y_k[0]][0] == crf.predict(X)[0].tolist()
        True
        >>> bool(proba[0].sum() <= 1.0 and np.all(np.diff(scores[0]) <= 0))
        True
        """
        name = type(self).__name__
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
            raise TypeError(f"{name}.predict_k_best: k must be an integer, got {k!r}.")
        if k < 1:
            raise ValueError(f"{name}.predict_k_best: k must be at least 1, got {k}.")
        if return_proba and not self._probabilistic:
            raise ValueError(
                f"{name}.predict_k_best: return_proba=True needs a probabilistic model (a CRF "
                f"such as EGCRF); {name} scores outputs but gives them no probability.")
        self._check_dp_operation("k_best", "predict_k_best")
        if return_proba:
            self._check_dp_operation("marginals", "predict_k_best(return_proba=True)")
        batch = self._validate_predict_data(X)
        part_scores = self._part_scores(batch, allowed_labels, "predict_k_best")
        Y, best = self.structure_.k_best(batch, part_scores, int(k))
        present = np.isfinite(best).T  # (k, n_samples)
        y_k = self._decode_rows(batch, Y, present)
        proba = None
        if return_proba:
            log_z = self.structure_.log_partition(batch, part_scores)
            with np.errstate(invalid="ignore"):
                proba = np.exp(best - log_z[:, None])
            proba[~present.T] = 0.0
        if self.structure_.output_space().flat:
            n_kept = y_k.shape[1]
            scores = best[:, :n_kept]
            proba = None if proba is None else proba[:, :n_kept]
        else:
            scores = [best[i][present[:, i]] for i in range(batch.n_samples)]
            if proba is not None:
                proba = [proba[i][present[:, i]] for i in range(batch.n_samples)]
        return (y_k, scores, proba) if return_proba else (y_k, scores)

    @available_if(lambda self: self._probabilistic)
    def sample_y(self, X, n_samples=1, random_state=None, allowed_labels=None):
        """Exact samples of the outputs of every example from the model's distribution.

        Draws from the Gibbs distribution ``p(y | x) ~ exp(w . Phi(x, y))`` of
        a CRF by the structure's dynamic program (forward in the log
        semiring, then top-down sampling), as scikit-learn's
        ``GaussianProcessRegressor.sample_y`` draws targets at ``X``.  Outputs
        the structure forbids are never drawn.  Structures without a dynamic
        program raise :class:`~sklearn_struct.structures.UnsupportedOperation`.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples_X, n_features), or list
            Inputs in the form used for ``fit``.
        n_samples : int, default=1
            Draws per example, at least 1.
        random_state : int, RandomState instance or None, default=None
            Seeds the draws: an int gives the same draws every call.
        allowed_labels : list of array-like of shape (n_units_i,), default=None
            Constraints, as for :meth:`predict`: draws from the distribution
            conditioned on the outputs that obey them.

        Returns
        -------
        y_samples : ndarray of shape (n_samples_X, n_samples), or list of list of ndarray
            For flat samples, the drawn labels; otherwise one list per example
            of ``n_samples`` drawn outputs, each in the form :meth:`predict`
            gives it.

        Raises
        ------
        ValueError
            If ``n_samples`` is not a positive integer, or ``random_state``
            cannot seed a generator.
        UnsupportedOperation
            If the structure has no dynamic program to draw from.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_struct import EGCRF
        >>> X, y = [np.eye(3)], [np.array(["a", "b", "a"])]
        >>> draws = EGCRF(C=10.0).fit(X, y).sample_y(X, n_samples=4, random_state=0)
        >>> len(draws), len(draws[0]), draws[0][0].shape
        (1, 4, (3,))
        """
        name = type(self).__name__
        if isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer)):
            raise TypeError(f"{name}.sample_y: n_samples must be an integer, got {n_samples!r}.")
        if n_samples < 1:
            raise ValueError(f"{name}.sample_y: n_samples must be at least 1, got {n_samples}.")
        try:
            random_state = check_random_state(random_state)
        except ValueError as error:  # numpy's and scikit-learn's messages name no method
            raise ValueError(
                f"{name}.sample_y: random_state must be None, an int in [0, 2**32 - 1] or a "
                f"numpy RandomState, got {random_state!r} ({error})") from None
        self._check_dp_operation("sample", "sample_y")
        batch = self._validate_predict_data(X)
        scores = self._part_scores(batch, allowed_labels, "sample_y")
        Y = self.structure_.sample(batch, scores, int(n_samples),
                                   random_state=random_state)
        return self._decode_rows(batch, Y, np.ones((Y.shape[0], batch.n_samples), dtype=bool))
