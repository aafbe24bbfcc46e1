"""``learn`` and ``tag`` for sequence labelling: column files and CoNLL-U tag columns."""

import sys
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.pipeline import Pipeline

from .._chunk_tags import is_iob_tag
from ..datasets._io import check_file, iter_lines, malformed
from ..metrics import chunk_f1_score
from ..persistence import save_model
from ..preprocessing import (SequenceDictVectorizer, TagDictionary, column_window_features,
                             conll_token_features)
from ..structures import PrunedChainStructure
from ._common import (CONLLU_COLUMN_INDEX, check_output, count, gold_inputs_note,
                      make_estimator, output_file, parse_inputs, read_conllu, unannotated)

TEMPLATES = ("window", "words")
#: Past this many training labels, ``learn`` tags with a pruned chain (``--tag-dictionary
#: auto``): the exact chain's transitions grow as the square of the labels.
TAG_DICTIONARY_LABELS = 100
#: ``n_iter_no_change`` of a ``--dev`` fit without ``--patience``: every pass runs.
NEVER_STOP = 10 ** 9
#: Names of the attribute columns of a column file in feature names: words, then tags.
_COLUMN_NAMES = ("w", "pos")


class _Sentence:
    """One sentence of an input file: its attribute columns and its labels."""

    def __init__(self, columns, labels):
        self.columns = columns  # list (one per attribute) of lists of str
        self.labels = labels  # list of str, or None when the file has no labels


def read_column_file(path):
    """Sentences of a whitespace-separated column file and the lines between them.

    Returns ``(blocks, n_columns)``: ``blocks`` lists, in file order, either a
    list of ``(line_number, line, fields)`` (a sentence) or a separator line
    (blank or ``-DOCSTART-``), kept so that ``tag`` writes them back.
    """
    path = check_file(path)
    blocks, current, n_columns = [], [], None
    for line_number, line in iter_lines(path):
        fields = line.split()
        if not fields or fields[0] == "-DOCSTART-":
            if current:
                blocks.append(current)
                current = []
            blocks.append(line)
            continue
        if n_columns is None:
            n_columns = len(fields)
        elif len(fields) != n_columns:
            raise malformed(path, line_number, f"expected {n_columns} columns like the first "
                            f"token line, got {len(fields)}: {line!r}")
        current.append((line_number, line, fields))
    if current:
        blocks.append(current)
    if n_columns is None:
        raise ValueError(f"{path}: no token line (expected one token per line, "
                         "whitespace-separated columns)")
    return blocks, n_columns


def _column_sentences(blocks, n_attributes, has_labels):
    sentences = []
    for block in blocks:
        if isinstance(block, str):
            continue
        fields = [entry[2] for entry in block]
        columns = [[row[c] for row in fields] for c in range(n_attributes)]
        labels = [row[n_attributes] for row in fields] if has_labels else None
        sentences.append(_Sentence(columns, labels))
    return sentences


def _conllu_sentences(path, source, with_labels):
    """The CoNLL-U sentences of ``path`` (all, to write back) and the model's view of them."""
    conllu, inputs = read_conllu(path, source["columns"])
    parts = source["label"].split("+")  # upos+feats: one label, "NOUN|Number=Sing"
    labels = [["|".join(values) for values in zip(*(sentence.column(part) for part in parts))]
              for sentence in conllu if sentence.words]
    if with_labels:
        for sentence in conllu:
            for line_number, fields in sentence.words:
                for part in parts:
                    if unannotated(part, fields[CONLLU_COLUMN_INDEX[part]]):
                        raise malformed(path, line_number, f"no {part.upper()} ('_') "
                                        "to learn from")
    return conllu, [_Sentence(columns, sentence_labels)
                    for columns, sentence_labels in zip(inputs, labels)]


def _read_training_file(path, args):
    """Sentences and the input description (stored in the model) of a training file."""
    if args.format == "conllu":
        columns = parse_inputs(args.inputs or "form", args.label)
        source = {"format": "conllu", "label": args.label, "columns": columns}
        return _conllu_sentences(path, source, True)[1], source
    blocks, n_columns = read_column_file(path)
    if n_columns < 2:
        raise ValueError(f"{path}: one column only; a training file needs attribute columns "
                         "and the label as the last column")
    n_attributes = n_columns - 1
    names = [_COLUMN_NAMES[c] if c < len(_COLUMN_NAMES) else f"c{c}"
             for c in range(n_attributes)]
    return (_column_sentences(blocks, n_attributes, True),
            {"format": "columns", "n_attributes": n_attributes, "names": names})


def _read_input_file(path, source):
    """What to write back and the sentences of a file to tag with a model of ``source``."""
    if source["format"] == "conllu":
        return _conllu_sentences(path, source, False)
    blocks, n_columns = read_column_file(path)
    n_attributes = source["n_attributes"]
    if n_columns not in (n_attributes, n_attributes + 1):
        first = next(block for block in blocks if not isinstance(block, str))[0]
        raise malformed(path, first[0], f"{count(n_columns, 'column')}, but the model was "
                        f"learnt on {count(n_attributes, 'attribute column')}: expected "
                        f"{n_attributes}, or {n_attributes + 1} with the label last")
    return blocks, _column_sentences(blocks, n_attributes, n_columns == n_attributes + 1)


def token_features(columns, names, template="window", window=2):
    """Token feature dicts of one sentence's attribute columns, by the CLI's templates.

    Parameters
    ----------
    columns : list of list of str
        The attribute columns (words first, then tags).
    names : list of str
        Their names in the feature names (``w``, ``pos``, ... in a column
        file; the CoNLL-U column names, ``form``, ``upos``, ...).
    template : {"window", "words"}, default="window"
        :func:`~sklearn_struct.preprocessing.column_window_features` or
        :func:`~sklearn_struct.preprocessing.conll_token_features` (words and,
        if there is a second column, its tags).
    window : int, default=2
        Neighbours on each side.

    Returns
    -------
    features : list of dict
        One dict per token, for :class:`~sklearn_struct.preprocessing.SequenceDictVectorizer`.
    """
    if template == "window":
        return column_window_features(columns, names, window=window)
    return conll_token_features(columns[0], columns[1] if len(columns) > 1 else None,
                                window=window)


def _features(sentences, settings):
    source = settings["input"]
    names = source["columns"] if source["format"] == "conllu" else source["names"]
    return [token_features(s.columns, names, settings["template"], settings["window"])
            for s in sentences]


def label_kind(labels):
    """``"chunks"`` when every label is an IOB tag and one is not ``O``, else ``"tokens"``."""
    labels = set(labels)
    if labels - {"O"} and all(is_iob_tag(label) for label in labels):
        return "chunks"
    return "tokens"


def _scores(kind, y_true, y_pred):
    """``(name, value)`` of the headline score: chunk F1 or token accuracy, in percent."""
    if kind == "chunks":
        return "F1", 100 * chunk_f1_score(y_true, y_pred)
    n = sum(len(labels) for labels in y_true)
    right = sum(int(np.sum(np.asarray(t) == np.asarray(p))) for t, p in zip(y_true, y_pred))
    return "accuracy", 100 * right / n


def learn(args):
    """``learn`` for a sequence labeller (column files, CoNLL-U tag columns)."""
    template = args.template or "window"
    window = 2 if args.window is None else args.window
    n_inputs = len((args.inputs or "form").split(","))
    if template == "words" and args.format == "conllu" and n_inputs > 2:
        raise ValueError("--template words reads a word and its tag: give at most two "
                         "--inputs (e.g. form,upos), or use --template window")
    estimator = make_estimator(args)
    check_output(args.output)
    started = time.perf_counter()
    sentences, source = _read_training_file(args.train, args)
    settings = {"task": "tag", "input": source, "template": template, "window": window,
                "estimator": args.estimator}
    X = _features(sentences, settings)
    y = [np.asarray(s.labels, dtype=str) for s in sentences]
    settings["label_kind"] = label_kind(label for labels in y for label in labels)
    dev = None
    if args.dev is not None:
        _, dev_sentences = _read_input_file(args.dev, source)
        if dev_sentences and dev_sentences[0].labels is None:
            raise ValueError(f"{args.dev}: the development file has no label column")
        dev = (_features(dev_sentences, settings), [s.labels for s in dev_sentences])
    vectorizer = SequenceDictVectorizer()
    Xt = vectorizer.fit_transform(X)
    print(f"{len(sentences)} sentences, {sum(len(labels) for labels in y)} tokens, "
          f"{len(vectorizer.vocabulary_)} features, labels: {settings['label_kind']} "
          f"(read in {time.perf_counter() - started:.1f}s)", flush=True)
    if source["format"] == "conllu":
        note = gold_inputs_note(source["columns"], args.train)
        if note:
            print(note, flush=True)
    X_dev = None if dev is None else vectorizer.transform(dev[0])
    _choose_structure(args, estimator, vectorizer, settings, y)

    def score_dev(n_pass, fitted):
        if n_pass % args.dev_every == 0:
            name, value = _scores(settings["label_kind"], dev[1], fitted.predict(X_dev))
            print(f"pass {n_pass}: dev {name} {value:.2f}", flush=True)

    fit_params = {}
    if dev is not None:  # the model keeps the pass of the best dev token accuracy
        estimator.set_params(early_stopping=True,
                             n_iter_no_change=args.patience or NEVER_STOP)
        fit_params = dict(callback=score_dev, X_val=X_dev,
                          y_val=[np.asarray(labels, dtype=str) for labels in dev[1]])
    started = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        estimator.fit(Xt, y, **fit_params)
    seconds = time.perf_counter() - started
    if args.prune is not None:
        estimator.prune_weights(args.prune)
    save_model(args.output, settings, {"vectorizer": vectorizer, "estimator": estimator})
    line = f"trained {type(estimator).__name__} in {seconds:.1f}s ({estimator.n_iter_} passes)"
    if dev is not None:
        name, value = _scores(settings["label_kind"], dev[1], estimator.predict(X_dev))
        line += (f"; kept pass {estimator.best_iteration_} (the best dev token accuracy, "
                 f"{100 * estimator.validation_scores_.max():.2f}): dev {name} {value:.2f}")
    print(f"{line}; model written to {args.output}", flush=True)
    for warning in caught:
        print(f"note: {warning.message}", file=sys.stderr)


def _word_prefix(settings):
    """The feature-name prefix of a token's own word under the model's template."""
    if settings["template"] == "words":
        return "word="
    source = settings["input"]
    names = source["columns"] if source["format"] == "conllu" else source["names"]
    return f"{names[0]}[0]="


def _choose_structure(args, estimator, vectorizer, settings, y):
    """A pruned chain over a tag dictionary (``--tag-dictionary``) for many labels."""
    n_labels = len({label for labels in y for label in labels})
    automatic = args.tag_dictionary == "auto" and n_labels > TAG_DICTIONARY_LABELS
    wanted = args.tag_dictionary == "on" or automatic
    if not wanted:
        return
    prefix = _word_prefix(settings)
    words = np.array(sorted(j for name, j in vectorizer.vocabulary_.items()
                            if name.startswith(prefix)), dtype=np.int64)
    min_count = 5 if args.min_count is None else args.min_count
    estimator.set_params(structure=PrunedChainStructure(word_features=words,
                                                        min_count=min_count))
    print(f"tag dictionary: {n_labels} labels; candidates per token from the {prefix} "
          f"features; words seen fewer than {min_count} times also take the most frequent "
          "labels of rare words",
          flush=True)


def check_model(settings, objects):
    """Tag one sentence of one-letter tokens: what a model must do to be one (raises on failure)."""
    source = settings["input"]
    n_columns = len(source["columns"]) if source["format"] == "conllu" else \
        source["n_attributes"]
    sentence = _Sentence([["x"] for _ in range(n_columns)], None)
    X = objects["vectorizer"].transform(_features([sentence], settings))
    objects["estimator"].predict(X)
    objects["estimator"].decision_function(X)


def _pipeline(objects):
    return Pipeline([("vectorizer", objects["vectorizer"]), ("estimator", objects["estimator"])])


def tag(args, settings, objects):
    """``tag`` with a sequence labeller: one labelling per sentence, or the ``--nbest``."""
    if args.nbest is not None:
        return _tag_nbest(args, settings, objects)
    pipeline = _pipeline(objects)
    estimator = pipeline[-1]
    source = settings["input"]
    if args.n_jobs is not None:
        estimator.set_params(n_jobs=args.n_jobs)
    if args.marginals != "none":
        if not hasattr(estimator, "predict_marginals"):
            raise ValueError(f"--marginals needs a probabilistic model (crf); this one is "
                             f"{type(estimator).__name__}")
        if source["format"] == "conllu":
            raise ValueError("--marginals adds columns, and CoNLL-U has ten: it is for "
                             "column files")
    written, sentences = _read_input_file(args.input, source)
    X = pipeline[:-1].transform(_features(sentences, settings))
    allowed = _allowed_labels(args, estimator, source, written, sentences)
    predicted = _constrained(args, estimator.predict, X, allowed)
    with output_file(args.output) as out:
        if source["format"] == "conllu":  # the file as read, the label's column predicted
            labels = iter(predicted)
            parts = source["label"].split("+")
            for sentence in written:
                replace = None
                if sentence.words:  # upos+feats: UPOS before the first "|", FEATS after it
                    split = [str(label).split("|", len(parts) - 1) for label in next(labels)]
                    replace = {part: [values[k] for values in split]
                               for k, part in enumerate(parts)}
                out.write(sentence.text(replace))
            return
        marginals = (_constrained(args, estimator.predict_marginals, X, allowed)
                     if args.marginals in ("label", "all") else
                     _chunk_columns(args, estimator, X, allowed) if args.marginals == "chunk"
                     else None)
        rows = []  # one list of extra fields per token
        for index, labels in enumerate(predicted):
            for t, label in enumerate(labels):
                fields = [str(label)]
                if args.marginals == "chunk":
                    fields.append(marginals[index][t])
                elif args.marginals == "label":
                    k = int(np.searchsorted(estimator.classes_, label))
                    fields.append(f"{marginals[index][t, k]:.4f}")
                elif args.marginals == "all":
                    fields += [f"{c}:{p:.4f}"
                               for c, p in zip(estimator.classes_, marginals[index][t])]
                rows.append(fields)
        token = iter(rows)
        for block in written:
            if isinstance(block, str):
                out.write(block + "\n")
                continue
            for _, line, _ in block:
                out.write(line + " " + " ".join(next(token)) + "\n")


def _allowed_labels(args, estimator, source, written, sentences):
    """The ``allowed_labels`` of ``--allowed-labels``: per sentence and token, the labels
    that the lexicon gives the token's word (the first column, or FORM), or None."""
    if args.allowed_labels is None:
        return None
    dictionary = TagDictionary.read(args.allowed_labels, classes=estimator.classes_.tolist())
    words = ([sentence.column("form") for sentence in written if sentence.words]
             if source["format"] == "conllu" else
             [sentence.columns[0] for sentence in sentences])
    return dictionary.allowed_labels(words)


def _constrained(args, method, X, allowed, **kwargs):
    """``method(X, allowed_labels=allowed)``, its refusal naming the input file."""
    if allowed is None:
        return method(X, **kwargs)
    try:
        return method(X, allowed_labels=allowed, **kwargs)
    except ValueError as error:
        raise ValueError(f"{args.input}: with --allowed-labels {args.allowed_labels}: "
                         f"{str(error).split(': ', 1)[-1]}") from None


def _chunk_columns(args, estimator, X, allowed):
    """Per sentence and token, the probability of the predicted chunk it is in, or "-"."""
    try:  # (``predict`` has already accepted ``allowed``, so an error here is the scheme's)
        chunks = estimator.predict_chunks(X, scheme="IOB2", allowed_labels=allowed)
    except ValueError as error:
        raise ValueError(f"--marginals chunk reads IOB2 chunk tags: {error}") from None
    columns = []
    for sentence, found in zip(X, chunks):
        column = ["-"] * sentence.shape[0]
        for _, start, end, probability in found:
            column[start:end] = [f"{probability:.4f}"] * (end - start)
        columns.append(column)
    return columns


def _tag_nbest(args, settings, objects):
    """The ``nbest`` best labellings of every sentence, in CRF++'s or Wapiti's layout.

    ``--nbest-layout crfpp`` (CRF++'s ``crf_test -n``): per sentence and rank ``i``
    (from 0, best first), a line ``# i p`` with the labelling's conditional
    probability ``p``, the sentence's lines with that labelling's label as a new
    last column (after a space), and a blank line; CRFs only.  ``wapiti``
    (Wapiti's ``label -n K -s``): a line ``# i score`` with the labelling's
    unnormalised score ``w . Phi(x, y)``, then per token the line, a tab, the
    label, a tab and ``label/score_t``, the token's share of the score (its
    label's score, the transition into it, and the start or end score at the
    ends: they add up to the labelling's score), and a blank line; any sequence
    model.  A sentence with fewer labellings than ``nbest`` gets all of them.
    Column files only.
    """
    layout = getattr(args, "nbest_layout", "crfpp")
    if args.marginals != "none":
        raise ValueError("--nbest writes each labelling's probability; it does not combine "
                         "with --marginals")
    if settings["input"]["format"] != "columns":
        raise ValueError("--nbest writes column files (CRF++'s format); this model reads "
                         "CoNLL-U: tag without --nbest")
    pipeline = _pipeline(objects)
    estimator = pipeline[-1]
    if layout == "crfpp" and not hasattr(estimator, "sample_y"):  # only CRFs: probabilities
        raise ValueError(f"--nbest writes each labelling's probability and needs a "
                         f"probabilistic model (crf); this one is {type(estimator).__name__} "
                         "(--nbest-layout wapiti writes scores instead)")
    blocks, sentences = _read_input_file(args.input, settings["input"])
    X = pipeline[:-1].transform(_features(sentences, settings))
    allowed = _allowed_labels(args, estimator, settings["input"], blocks, sentences)
    if layout == "wapiti":
        node_scores = estimator.decision_function(X)
    sentence = iter(range(len(sentences)))
    with output_file(args.output) as out:
        for block in blocks:
            if isinstance(block, str):  # blank lines come with every labelling
                if block.strip():
                    out.write(block + "\n\n")
                continue
            index = next(sentence)
            # a sentence at a time: the memory holds its labellings alone, however large K
            ranked = _constrained(args, estimator.predict_k_best, X[index:index + 1],
                                  None if allowed is None else allowed[index:index + 1],
                                  k=args.nbest, return_proba=layout == "crfpp")
            outputs, sentence_values = ranked[0][0], ranked[-1][0]
            for rank, (labels, value) in enumerate(zip(outputs, sentence_values)):
                out.write(f"# {rank} {value:.6f}\n")
                if layout == "crfpp":
                    for (_, line, _), label in zip(block, labels):
                        out.write(f"{line} {label}\n")
                else:
                    shares = _token_scores(estimator, node_scores[index], labels)
                    for (_, line, _), label, share in zip(block, labels, shares):
                        out.write(f"{line}\t{label}\t{label}/{share:.6f}\n")
                out.write("\n")


def _token_scores(estimator, node_scores, labels):
    """Every token's share of a labelling's score: its label's score, the transition into
    it, and the start (first token) or end (last token) score."""
    states = np.searchsorted(estimator.classes_, labels)
    shares = node_scores[np.arange(len(states)), states].astype(float)
    shares[1:] += estimator.transition_[states[:-1], states[1:]]
    start = getattr(estimator, "start_transition_", None)
    if start is not None:
        shares[0] += start[states[0]]
        shares[-1] += estimator.end_transition_[states[-1]]
    return shares
