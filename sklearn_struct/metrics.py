"""Metrics for structured outputs: token and sequence accuracy, chunk F1, alignment error rate,
attachment score and labelled brackets.

Sequence metrics take ``y_true`` and ``y_pred`` as lists (one entry per sequence) of
1-D arrays or lists of labels, as chain estimators return them. Alignment metrics take,
per sentence pair, a collection of ``(english, french)`` position pairs.
"""

import unicodedata
from collections import Counter

import numpy as np
from sklearn.metrics import make_scorer

from ._chunk_tags import chunk_ends, chunk_starts, split_tag, strict_chunk_spans, strict_scheme

__all__ = [
    "alignment_error_rate",
    "alignment_precision_recall",
    "attachment_score",
    "chunk_classification_report",
    "chunk_f1_score",
    "chunk_precision_recall_fscore_support",
    "get_scorer",
    "get_scorer_names",
    "parseval",
    "sequence_accuracy_score",
    "token_accuracy_score",
]


# ----------------------------------------------------------------------------- sequences
def _check_sequences(y_true, y_pred):
    """Lists of 1-D object arrays, after checking counts and lengths match."""
    for name, y in (("y_true", y_true), ("y_pred", y_pred)):
        if isinstance(y, (str, bytes)) or not hasattr(y, "__len__"):
            raise TypeError(f"{name} must be a list of label sequences, got {type(y).__name__}")
    if len(y_true) != len(y_pred):
        raise ValueError(
            f"y_true has {len(y_true)} sequences but y_pred has {len(y_pred)}"
        )
    if len(y_true) == 0:
        raise ValueError("y_true and y_pred hold no sequence")
    true_list, pred_list = [], []
    for index, (true_seq, pred_seq) in enumerate(zip(y_true, y_pred)):
        true_seq = _as_sequence(true_seq, "y_true", index)
        pred_seq = _as_sequence(pred_seq, "y_pred", index)
        if true_seq.shape != pred_seq.shape:
            raise ValueError(
                f"sequence {index}: y_true has {true_seq.shape[0]} labels but y_pred has "
                f"{pred_seq.shape[0]}"
            )
        true_list.append(true_seq)
        pred_list.append(pred_seq)
    return true_list, pred_list


def _as_sequence(seq, name, index):
    if isinstance(seq, (str, bytes)):
        raise TypeError(f"{name}[{index}] must be a sequence of labels, got a string")
    values = list(seq)
    if any(isinstance(value, (list, np.ndarray)) for value in values):
        raise ValueError(f"{name}[{index}] must be a 1-D sequence of labels")
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array


def token_accuracy_score(y_true, y_pred):
    """Fraction of tokens whose predicted label is right (1 - Hamming loss per token).

    Parameters
    ----------
    y_true, y_pred : list of array-like of shape (T_i,)
        True and predicted label sequences; sequence ``i`` must have the same length in
        both.

    Returns
    -------
    score : float
        Correct tokens over all tokens, in ``[0, 1]``.

    Examples
    --------
    >>> from sklearn_struct.metrics import token_accuracy_score
    >>> token_accuracy_score([["a", "b"], ["c", "d"]], [["a", "c"], ["c", "d"]])
    0.75
    """
    true_list, pred_list = _check_sequences(y_true, y_pred)
    n_tokens = sum(seq.shape[0] for seq in true_list)
    if n_tokens == 0:
        raise ValueError("y_true and y_pred hold no token")
    n_correct = sum(int(np.sum(t == p)) for t, p in zip(true_list, pred_list))
    return n_correct / n_tokens


def attachment_score(y_true, y_pred, *, forms=None, labels_true=None, labels_pred=None):
    """Attachment score: the fraction of words given their true head (UAS), or head and label (LAS).

    Parameters
    ----------
    y_true, y_pred : list of array-like of int
        One head array per sentence (``heads[m - 1]`` the head of word ``m``,
        0 the root), as predicted by a dependency parser.
    forms : list of list of str, default=None
        The words of every sentence.  When given, words whose form consists
        entirely of punctuation characters (Unicode categories ``P*``) are not
        scored: the CoNLL-X shared-task convention ("punctuation excluded").
    labels_true, labels_pred : list of array-like, default=None
        The true and predicted relation labels (e.g. UD ``deprel``) of every
        word, both or neither.  When given, a word counts only if its head
        *and* its label are right: the labelled attachment score (LAS).

    Returns
    -------
    score : float
        Correct words over scored words, in ``[0, 1]``.

    Raises
    ------
    ValueError
        If the numbers of sentences or of words differ, naming the sentence,
        if only one of ``labels_true`` and ``labels_pred`` is given, or if no
        word is left to score.

    See Also
    --------
    token_accuracy_score : The same count for any labels.

    Examples
    --------
    >>> from sklearn_struct.metrics import attachment_score
    >>> attachment_score([[2, 0, 2]], [[2, 0, 1]])
    0.6666666666666666
    >>> attachment_score([[2, 0, 2]], [[2, 0, 1]], forms=[["It", "rains", "."]])
    1.0
    >>> attachment_score([[2, 0, 2]], [[2, 0, 1]], labels_true=[["expl", "root", "punct"]],
    ...                  labels_pred=[["nsubj", "root", "punct"]])
    0.3333333333333333
    """
    true_list, pred_list = _check_sequences(y_true, y_pred)
    n_sentences = len(true_list)
    if (labels_true is None) != (labels_pred is None):
        raise ValueError("labels_true and labels_pred must be given together (for the "
                         "labelled attachment score) or not at all")
    if labels_true is not None:
        for name, labels in (("labels_true", labels_true), ("labels_pred", labels_pred)):
            if isinstance(labels, (str, bytes)) or not hasattr(labels, "__len__"):
                raise TypeError(f"{name} must be a list of label sequences, got "
                                f"{type(labels).__name__}")
            if len(labels) != n_sentences:
                raise ValueError(f"{name} has {len(labels)} sentences but y_true has "
                                 f"{n_sentences}")
            for index, (sentence, heads) in enumerate(zip(labels, true_list)):
                if len(sentence) != len(heads):
                    raise ValueError(f"sentence {index}: {name} has {len(sentence)} labels but "
                                     f"there are {len(heads)} heads")
        label_true_list, label_pred_list = _check_sequences(labels_true, labels_pred)
    if forms is not None:
        if len(forms) != n_sentences:
            raise ValueError(f"forms has {len(forms)} sentences but y_true has "
                             f"{n_sentences}")
        for index, (words, heads) in enumerate(zip(forms, true_list)):
            if len(words) != len(heads):
                raise ValueError(f"sentence {index}: {len(words)} forms but {len(heads)} heads")
    correct = total = 0
    for index, (true_heads, pred_heads) in enumerate(zip(true_list, pred_list)):
        scored = np.ones(len(true_heads), dtype=bool)
        if forms is not None:
            scored = np.array([not is_punctuation(word) for word in forms[index]], dtype=bool)
        right = true_heads == pred_heads
        if labels_true is not None:
            right &= label_true_list[index] == label_pred_list[index]
        correct += int(np.sum(right & scored))
        total += int(scored.sum())
    if total == 0:
        raise ValueError("no word to score (every word is punctuation)")
    return correct / total


def is_punctuation(word):
    """Whether a word is made of punctuation characters only (the CoNLL-X rule).

    Parameters
    ----------
    word : str
        A word form.

    Returns
    -------
    bool
        True when the word is not empty and every character is in a Unicode
        punctuation category.
    """
    return len(word) > 0 and all(unicodedata.category(c).startswith("P") for c in word)


def sequence_accuracy_score(y_true, y_pred):
    """Fraction of sequences predicted entirely right (0/1 loss per sequence).

    Parameters
    ----------
    y_true, y_pred : list of array-like of shape (T_i,)
        True and predicted label sequences.

    Returns
    -------
    score : float
        Entirely correct sequences over all sequences, in ``[0, 1]``.

    Examples
    --------
    >>> from sklearn_struct.metrics import sequence_accuracy_score
    >>> sequence_accuracy_score([["a", "b"], ["c"]], [["a", "c"], ["c"]])
    0.5
    """
    true_list, pred_list = _check_sequences(y_true, y_pred)
    n_right = sum(bool(np.all(t == p)) for t, p in zip(true_list, pred_list))
    return n_right / len(true_list)


# -------------------------------------------------------------------------------- chunks
def conlleval_counts(y_true, y_pred):
    """Chunk counts per type, computed exactly as the conlleval script does.

    Sentences are processed as one stream separated by boundary tokens tagged ``O`` (as
    conlleval reads blank lines), with conlleval's state machine: a chunk is correct when
    true and predicted chunks start together with the same type and end together.

    Parameters
    ----------
    y_true, y_pred : list of array-like of str
        True and predicted chunk tags per sentence.

    Returns
    -------
    correct, n_true, n_pred : Counter
        Per chunk type: correctly found chunks, true chunks, predicted chunks.
    """
    true_list, pred_list = _check_sequences(y_true, y_pred)
    parsed = {}  # tag -> (prefix, type); tag sets are small

    def parse(tag, name, index):
        try:
            return parsed[tag]
        except KeyError:
            if not isinstance(tag, str):
                raise TypeError(
                    f"{name}[{index}] holds {tag!r}; chunk metrics need string tags such as "
                    "'B-NP'"
                ) from None
            parsed[tag] = split_tag(tag)
            return parsed[tag]

    correct, n_true, n_pred = Counter(), Counter(), Counter()
    in_correct = False
    last_t, last_t_type, last_p, last_p_type = "O", "", "O", ""
    boundary = [("O", "")]
    for index, (true_seq, pred_seq) in enumerate(zip(true_list, pred_list)):
        true_parts = [parse(tag, "y_true", index) for tag in true_seq] + boundary
        pred_parts = [parse(tag, "y_pred", index) for tag in pred_seq] + boundary
        for (t, t_type), (p, p_type) in zip(true_parts, pred_parts):
            if in_correct:
                true_ends = chunk_ends(last_t, t, last_t_type, t_type)
                pred_ends = chunk_ends(last_p, p, last_p_type, p_type)
                if true_ends and pred_ends and last_p_type == last_t_type:
                    in_correct = False
                    correct[last_t_type] += 1
                elif true_ends != pred_ends or p_type != t_type:
                    in_correct = False
            true_starts = chunk_starts(last_t, t, last_t_type, t_type)
            pred_starts = chunk_starts(last_p, p, last_p_type, p_type)
            if true_starts and pred_starts and p_type == t_type:
                in_correct = True
            if true_starts:
                n_true[t_type] += 1
            if pred_starts:
                n_pred[p_type] += 1
            last_t, last_t_type, last_p, last_p_type = t, t_type, p, p_type
    if in_correct:
        correct[last_t_type] += 1
    return correct, n_true, n_pred


def precision_recall_f1(n_correct, n_true, n_pred):
    """Precision, recall and F1 from counts, each 0 where its denominator is 0.

    Parameters
    ----------
    n_correct : int
        Items found that are right.
    n_true : int
        Items to find.
    n_pred : int
        Items found.

    Returns
    -------
    precision, recall, f1 : float
        In ``[0, 1]``.
    """
    precision = n_correct / n_pred if n_pred else 0.0
    recall = n_correct / n_true if n_true else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def strict_chunk_counts(y_true, y_pred, scheme):
    """Chunk counts per type, with chunks read strictly by a tagging scheme.

    A true chunk is found when a predicted chunk has its type, first and last token.
    Chunks are those of :func:`~sklearn_struct._chunk_tags.strict_chunk_spans`: written
    as the scheme writes them, or not at all (seqeval's ``mode="strict"``).

    Parameters
    ----------
    y_true, y_pred : list of array-like of str
        True and predicted chunk tags per sentence.
    scheme : {"IOB2", "IOE2", "BIOES", "BILOU"} or an alias ("BIO", "IOBES")
        The tagging scheme of both.

    Returns
    -------
    correct, n_true, n_pred : Counter
        Per chunk type: correctly found chunks, true chunks, predicted chunks.
    """
    strict_scheme(scheme)  # (an unknown scheme before any sequence is read)
    true_list, pred_list = _check_sequences(y_true, y_pred)
    correct, n_true, n_pred = Counter(), Counter(), Counter()
    for index, (true_seq, pred_seq) in enumerate(zip(true_list, pred_list)):
        spans = []
        for name, seq in (("y_true", true_seq), ("y_pred", pred_seq)):
            try:
                spans.append(set(strict_chunk_spans(seq, scheme)))
            except ValueError as error:
                raise ValueError(f"{name}[{index}]: {error}") from None
        true_spans, pred_spans = spans
        n_true.update(chunk_type for chunk_type, _, _ in true_spans)
        n_pred.update(chunk_type for chunk_type, _, _ in pred_spans)
        correct.update(chunk_type for chunk_type, _, _ in true_spans & pred_spans)
    return correct, n_true, n_pred


#: The ways chunks are read from tags (``mode`` of the chunk metrics).
CHUNK_MODES = ("conlleval", "strict")
#: The averages of the chunk metrics.
CHUNK_AVERAGES = ("micro", "macro", "weighted", None)


def _chunk_counts(y_true, y_pred, mode, scheme):
    if mode not in CHUNK_MODES:
        raise ValueError(f"mode must be one of {CHUNK_MODES}, got {mode!r}")
    if mode == "strict":
        if scheme is None:
            raise ValueError("mode='strict' needs the tagging scheme: scheme='IOB2', 'IOE2', "
                             "'BIOES' or 'BILOU'")
        return strict_chunk_counts(y_true, y_pred, scheme)
    if scheme is not None:
        raise ValueError(f"scheme={scheme!r} is read only with mode='strict'; conlleval's "
                         "reading takes IOB1, IOB2 and BIOES tags alike")
    return conlleval_counts(y_true, y_pred)


def chunk_precision_recall_fscore_support(y_true, y_pred, average="micro", *,
                                          mode="conlleval", scheme=None):
    """Chunk (phrase, entity) precision, recall and F1, identical to ``conlleval`` or seqeval.

    A chunk counts as found only if its type, first and last token all match.  By default
    chunks are read with the rules of the CoNLL evaluation script ``conlleval``
    (2004-01-26), so IOB1 and IOB2 tags are both handled (an ``I-X`` after ``O`` or after
    another type starts a chunk; ``B-X`` starts one even inside an ``X`` chunk) and the
    numbers equal conlleval's, as fractions instead of percentages.  With
    ``mode="strict"``, chunks are read strictly by ``scheme``, as seqeval's strict mode
    reads them: a chunk that the scheme does not write (an IOB2 ``I-X`` after ``O``, a
    BIOES ``B-X`` that no ``E-X`` closes) is no chunk.  Sentence boundaries end chunks.

    Parameters
    ----------
    y_true, y_pred : list of array-like of str
        True and predicted chunk tags per sentence, e.g. ``["B-NP", "I-NP", "O"]``.
    average : {"micro", "macro", "weighted", None}, default="micro"
        ``"micro"``: from the counts of all types (the overall scores conlleval prints
        first).  ``"macro"``: the mean of the per-type scores; ``"weighted"``: their mean
        weighted by the types' true chunks.  ``None``: one score per chunk type (types in
        sorted order, as conlleval lists them).
    mode : {"conlleval", "strict"}, default="conlleval"
        How chunks are read from tags (see above).
    scheme : {"IOB2", "IOE2", "BIOES", "BILOU"}, default=None
        The tagging scheme, with ``mode="strict"`` only (aliases ``"BIO"`` and
        ``"IOBES"``).  A tag with another prefix is an error.

    Returns
    -------
    precision, recall, f1 : float or ndarray
        0 where undefined (no predicted / no true chunk), as conlleval prints.
    support : int or ndarray
        Number of true chunks.
    types : ndarray of str
        Only if ``average is None``: the chunk types, sorted.

    Examples
    --------
    >>> from sklearn_struct.metrics import chunk_precision_recall_fscore_support
    >>> y_true = [["B-NP", "I-NP", "O", "B-VP"]]
    >>> y_pred = [["B-NP", "I-NP", "O", "B-NP"]]
    >>> chunk_precision_recall_fscore_support(y_true, y_pred)
    (0.5, 0.5, 0.5, 2)

    Read strictly, an ``I-`` after ``O`` starts no chunk:

    >>> y_pred = [["I-NP", "I-NP", "O", "B-VP"]]
    >>> chunk_precision_recall_fscore_support(y_true, y_pred, mode="strict", scheme="IOB2")
    (1.0, 0.5, 0.6666666666666666, 2)
    """
    if average not in CHUNK_AVERAGES:
        raise ValueError(f"average must be one of {CHUNK_AVERAGES}, got {average!r}")
    correct, n_true, n_pred = _chunk_counts(y_true, y_pred, mode, scheme)
    if average == "micro":
        totals = sum(correct.values()), sum(n_true.values()), sum(n_pred.values())
        return (*precision_recall_f1(*totals), totals[1])
    types = sorted(set(n_true) | set(n_pred))
    scores = np.array([precision_recall_f1(correct[t], n_true[t], n_pred[t])
                       for t in types]).reshape(-1, 3)
    support = np.array([n_true[t] for t in types], dtype=np.int64)
    if average is None:
        return scores[:, 0], scores[:, 1], scores[:, 2], support, np.array(types, dtype=str)
    total = int(support.sum())
    if average == "weighted":
        weights = support / total if total else np.zeros(len(types))
    else:
        weights = np.full(len(types), 1.0 / len(types)) if types else np.zeros(0)
    return (*(float(weights @ scores[:, k]) for k in range(3)), total)


def chunk_f1_score(y_true, y_pred, *, average="micro", mode="conlleval", scheme=None):
    """Chunk F1, as ``conlleval`` computes it (as a fraction, not a percentage) or strictly.

    See :func:`chunk_precision_recall_fscore_support` for the chunk rules, the averages
    and the strict mode.

    Parameters
    ----------
    y_true, y_pred : list of array-like of str
        True and predicted chunk tags per sentence (IOB1 or IOB2).
    average : {"micro", "macro", "weighted"}, default="micro"
        How the types' scores are combined.
    mode : {"conlleval", "strict"}, default="conlleval"
        How chunks are read from tags.
    scheme : {"IOB2", "IOE2", "BIOES", "BILOU"}, default=None
        The tagging scheme, with ``mode="strict"`` only.

    Returns
    -------
    f1 : float
        Harmonic mean of chunk precision and recall, in ``[0, 1]`` (0 when no
        chunk is found correctly).

    Examples
    --------
    >>> from sklearn_struct.metrics import chunk_f1_score
    >>> chunk_f1_score([["I-PER", "I-PER", "O"]], [["B-PER", "I-PER", "O"]])
    1.0
    """
    if average is None:
        raise ValueError("chunk_f1_score gives one number: average must be 'micro', 'macro' "
                         "or 'weighted' (chunk_precision_recall_fscore_support gives the "
                         "scores per type)")
    return chunk_precision_recall_fscore_support(y_true, y_pred, average, mode=mode,
                                                 scheme=scheme)[2]


def chunk_classification_report(y_true, y_pred, digits=2, output_dict=False, *,
                                mode="conlleval", scheme=None):
    """Per-type chunk precision, recall, F1 and counts, as conlleval reports them.

    Parameters
    ----------
    y_true, y_pred : list of array-like of str
        True and predicted chunk tags per sentence (IOB1 or IOB2).
    digits : int, default=2
        Digits of the printed scores.
    output_dict : bool, default=False
        Return a dict instead of a string.
    mode : {"conlleval", "strict"}, default="conlleval"
        How chunks are read from tags (see :func:`chunk_precision_recall_fscore_support`).
    scheme : {"IOB2", "IOE2", "BIOES", "BILOU"}, default=None
        The tagging scheme, with ``mode="strict"`` only.

    Returns
    -------
    report : str or dict
        One row per chunk type (sorted) and an ``overall`` row (conlleval's first line),
        with ``precision``, ``recall``, ``f1-score``, ``support`` (true chunks) and
        ``predicted`` (predicted chunks, conlleval's last column).

    Examples
    --------
    >>> from sklearn_struct.metrics import chunk_classification_report
    >>> report = chunk_classification_report([["B-NP", "O"]], [["B-NP", "B-VP"]],
    ...                                      output_dict=True)
    >>> report["NP"]["f1-score"], report["overall"]["precision"]
    (1.0, 0.5)
    """
    correct, n_true, n_pred = _chunk_counts(y_true, y_pred, mode, scheme)
    rows = {}
    for chunk_type in sorted(set(n_true) | set(n_pred)):
        rows[chunk_type] = (correct[chunk_type], n_true[chunk_type], n_pred[chunk_type])
    rows["overall"] = (sum(correct.values()), sum(n_true.values()), sum(n_pred.values()))
    report = {}
    for name, (n_correct, n_t, n_p) in rows.items():
        precision, recall, f1 = precision_recall_f1(n_correct, n_t, n_p)
        report[name] = {
            "precision": precision,
            "recall": recall,
            "f1-score": f1,
            "support": n_t,
            "predicted": n_p,
        }
    if output_dict:
        return report
    width = max(len("overall"), *(len(name) for name in report))
    header = f"{'':>{width}} {'precision':>9} {'recall':>9} {'f1-score':>9} {'support':>9} "
    header += f"{'predicted':>9}"
    lines = [header, ""]
    for name, row in report.items():
        if name == "overall":
            lines.append("")
        scores = " ".join(f"{row[k]:>9.{digits}f}" for k in ("precision", "recall", "f1-score"))
        lines.append(f"{name:>{width}} {scores} {row['support']:>9} {row['predicted']:>9}")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------- scorers
def _chunk_precision(y_true, y_pred):
    return chunk_precision_recall_fscore_support(y_true, y_pred)[0]


def _chunk_recall(y_true, y_pred):
    return chunk_precision_recall_fscore_support(y_true, y_pred)[1]


#: Scorer names and the metric each scores with (greater is better for all).
_SCORER_METRICS = {
    "token_accuracy": token_accuracy_score,
    "sequence_accuracy": sequence_accuracy_score,
    "chunk_f1": chunk_f1_score,
    "chunk_precision": _chunk_precision,
    "chunk_recall": _chunk_recall,
    "attachment_score": attachment_score,
}


def get_scorer_names():
    """The names that :func:`get_scorer` knows.

    Returns
    -------
    names : list of str
        Sorted.

    Examples
    --------
    >>> from sklearn_struct.metrics import get_scorer_names
    >>> get_scorer_names()[:2]
    ['attachment_score', 'chunk_f1']
    """
    return sorted(_SCORER_METRICS)


def get_scorer(scoring):
    """A scikit-learn scorer of a structured metric, by name.

    For ``scoring`` in :class:`~sklearn.model_selection.GridSearchCV`,
    :func:`~sklearn.model_selection.cross_val_score` and the like, alone or in a dict of
    several.  The chunk scorers read chunks as ``conlleval`` does; ``attachment_score``
    scores every word (UAS).  For other settings make a scorer of the metric with
    :func:`sklearn.metrics.make_scorer`, for example ``make_scorer(chunk_f1_score,
    mode="strict", scheme="BIOES")``.

    Parameters
    ----------
    scoring : str
        One of :func:`get_scorer_names`: ``"token_accuracy"``, ``"sequence_accuracy"``,
        ``"chunk_f1"``, ``"chunk_precision"``, ``"chunk_recall"``,
        ``"attachment_score"``.

    Returns
    -------
    scorer : callable
        ``scorer(estimator, X, y)``: the metric of ``estimator.predict(X)`` against ``y``.

    Examples
    --------
    >>> from sklearn_struct.metrics import get_scorer
    >>> get_scorer("chunk_f1")
    make_scorer(chunk_f1_score, response_method='predict')
    """
    if scoring not in _SCORER_METRICS:
        raise ValueError(f"{scoring!r} is not a scorer of sklearn_struct; the names are "
                         f"{get_scorer_names()}. Scikit-learn's own names (such as "
                         "'accuracy') go to scoring as they are.")
    return make_scorer(_SCORER_METRICS[scoring])


# ---------------------------------------------------------------------------- alignments
def _link_sets(links_per_sentence, name, n_sentences=None):
    if isinstance(links_per_sentence, (str, bytes)) or not hasattr(links_per_sentence, "__len__"):
        raise TypeError(f"{name} must be a list with one collection of links per sentence pair")
    if n_sentences is not None and len(links_per_sentence) != n_sentences:
        raise ValueError(
            f"{name} has {len(links_per_sentence)} sentence pairs, expected {n_sentences}"
        )
    sets = []
    for index, links in enumerate(links_per_sentence):
        array = np.asarray(list(links))
        if array.size == 0:
            sets.append(set())
            continue
        if array.ndim != 2 or array.shape[1] != 2 or not np.issubdtype(array.dtype, np.integer):
            raise ValueError(
                f"{name}[{index}] must hold (english, french) pairs of integer positions, "
                f"got an array of shape {array.shape} and dtype {array.dtype}"
            )
        sets.append(set(map(tuple, array.tolist())))
    return sets


def _alignment_counts(sure, possible, predicted):
    sure_sets = _link_sets(sure, "sure")
    possible_sets = _link_sets(possible, "possible", len(sure_sets))
    predicted_sets = _link_sets(predicted, "predicted", len(sure_sets))
    n_predicted = n_sure = hit_sure = hit_possible = 0
    for s, p, a in zip(sure_sets, possible_sets, predicted_sets):
        p = p | s  # the definitions assume S is a subset of P
        n_predicted += len(a)
        n_sure += len(s)
        hit_sure += len(a & s)
        hit_possible += len(a & p)
    return n_predicted, n_sure, hit_sure, hit_possible


def alignment_error_rate(sure, possible, predicted):
    """Alignment error rate (Och & Ney, 2003) of predicted word links over a corpus.

    ``AER = 1 - (|A & S| + |A & P|) / (|A| + |S|)`` with ``A`` the predicted links, ``S``
    the sure and ``P`` the possible gold links, counts summed over all sentence pairs.
    ``P`` is taken as ``P | S`` (the definition assumes ``S`` is a subset of ``P``).

    Parameters
    ----------
    sure, possible, predicted : list of collections of (int, int)
        One entry per sentence pair: an ``(n_links, 2)`` integer array or an iterable of
        ``(english_position, french_position)`` pairs (as returned by
        :func:`~sklearn_struct.datasets.load_hansards_alignments`; any consistent
        indexing works).

    Returns
    -------
    aer : float
        In ``[0, 1]``; 0.0 when there is neither a predicted nor a sure link.

    Examples
    --------
    >>> from sklearn_struct.metrics import alignment_error_rate
    >>> sure = [[(0, 0)]]
    >>> possible = [[(0, 0), (1, 1)]]
    >>> alignment_error_rate(sure, possible, [[(0, 0), (1, 1)]])
    0.0
    >>> alignment_error_rate(sure, possible, [[(1, 1)]])
    0.5
    """
    n_predicted, n_sure, hit_sure, hit_possible = _alignment_counts(sure, possible, predicted)
    if n_predicted + n_sure == 0:
        return 0.0
    return 1.0 - (hit_sure + hit_possible) / (n_predicted + n_sure)


def alignment_precision_recall(sure, possible, predicted):
    """Alignment precision ``|A & P| / |A|`` and recall ``|A & S| / |S|`` over a corpus.

    Parameters
    ----------
    sure, possible, predicted : list of collections of (int, int)
        As in :func:`alignment_error_rate`.

    Returns
    -------
    precision, recall : float
        0.0 where the denominator is 0.

    Examples
    --------
    >>> from sklearn_struct.metrics import alignment_precision_recall
    >>> alignment_precision_recall([[(0, 0)]], [[(1, 1)]], [[(1, 1), (2, 2)]])
    (0.5, 0.0)
    """
    n_predicted, n_sure, hit_sure, hit_possible = _alignment_counts(sure, possible, predicted)
    precision = hit_possible / n_predicted if n_predicted else 0.0
    recall = hit_sure / n_sure if n_sure else 0.0
    return precision, recall


# ------------------------------------------------------------------------ constituents
#: Part-of-speech tags of the words evalb's COLLINS.prm leaves out of the brackets.
EVALB_PUNCTUATION = (",", ":", "``", "''", ".")


def parseval(y_true, y_pred, *, punctuation_tags=EVALB_PUNCTUATION, ignore_labels=("TOP",),
             equivalent_labels=(("ADVP", "PRT"),)):
    """Labelled bracket precision, recall and F1 of predicted parse trees (evalb conventions).

    The brackets of a tree are its constituents above the part-of-speech
    level as labelled spans.  As evalb does with ``COLLINS.prm``: words
    tagged as punctuation (in the *gold* tree) are deleted before the spans
    are computed, constituents left empty are dropped, the labels in
    ``ignore_labels`` (the outermost ``TOP``) are not scored, equivalent
    labels count as one, and brackets are matched as multisets over the whole
    corpus (micro average).

    Parameters
    ----------
    y_true, y_pred : list of Tree
        Gold and predicted trees (:class:`~sklearn_struct.datasets.Tree`),
        the same words in the same order for each sentence.
    punctuation_tags : sequence of str, default=EVALB_PUNCTUATION
        Tags of the words left out.
    ignore_labels : sequence of str, default=("TOP",)
        Constituent labels not scored.
    equivalent_labels : sequence of (str, str), default=(("ADVP", "PRT"),)
        Pairs of labels that match each other.

    Returns
    -------
    scores : dict
        ``precision``, ``recall``, ``f1``, the bracket counts ``n_correct``,
        ``n_true``, ``n_pred``, and ``exact_match`` (fraction of sentences
        whose scored brackets all match).

    Examples
    --------
    >>> from sklearn_struct.datasets import Tree
    >>> from sklearn_struct.metrics import parseval
    >>> gold = Tree.fromstring("(TOP (S (NP (DT The) (NN dog)) (VP (VBZ barks)) (. .)))")
    >>> pred = Tree.fromstring("(TOP (S (DT The) (VP (NN dog) (VBZ barks)) (. .)))")
    >>> scores = parseval([gold], [pred])
    >>> scores["precision"], scores["recall"]
    (0.5, 0.3333333333333333)
    """
    if len(y_true) != len(y_pred):
        raise ValueError(f"y_true has {len(y_true)} trees but y_pred has {len(y_pred)}.")
    canonical = {}
    for a, b in equivalent_labels:
        canonical[b] = canonical.get(a, a)
    punctuation, ignored = set(punctuation_tags), set(ignore_labels)
    n_correct = n_true = n_pred = exact = 0
    for index, (gold, pred) in enumerate(zip(y_true, y_pred)):
        if gold.leaves() != pred.leaves():
            raise ValueError(f"sentence {index}: the predicted tree has other words than the "
                             f"gold tree ({pred.leaves()[:8]} vs {gold.leaves()[:8]}).")
        kept = np.cumsum([0] + [tag not in punctuation for tag in gold.tags()])
        true, predicted = (Counter(_scored_brackets(tree, kept, ignored, canonical))
                           for tree in (gold, pred))
        correct = sum((true & predicted).values())
        n_correct += correct
        n_true += sum(true.values())
        n_pred += sum(predicted.values())
        exact += true == predicted
    precision, recall, f1 = precision_recall_f1(n_correct, n_true, n_pred)
    return {"precision": precision, "recall": recall, "f1": f1, "n_correct": n_correct,
            "n_true": n_true, "n_pred": n_pred, "exact_match": exact / max(len(y_true), 1)}


def _scored_brackets(tree, kept, ignored, canonical):
    """Labelled spans over the kept words (``kept[i]``: kept words before word ``i``)."""
    for label, start, end in tree.brackets():
        if label in ignored:
            continue
        start, end = kept[start], kept[end]
        if end > start:
            yield canonical.get(label, label), int(start), int(end)
