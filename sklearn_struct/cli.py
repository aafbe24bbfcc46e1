"""The ``sklearn-struct`` command line: sequence labelling on CoNLL files, as with CRFsuite.

``learn`` trains a chain model on a column file (or CoNLL-U) and writes one
model file; ``tag`` adds the predicted labels to a file as a new last column;
``eval`` scores a file whose last two columns are the gold and the predicted
labels (conlleval's report for IOB chunk labels, token accuracy otherwise);
``dump`` prints the strongest features of a model by name.  Every step is the
Python API: the features of :func:`~sklearn_struct.preprocessing.column_window_features`
(or :func:`~sklearn_struct.preprocessing.conll_token_features`), a
:class:`~sklearn_struct.preprocessing.SequenceDictVectorizer` and an estimator,
so a model learnt here is the model the same code would fit in Python.
"""

import argparse
import os
import sys
import time
import warnings

import joblib
import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.pipeline import Pipeline

from . import __version__
from .datasets import load_conllu
from .datasets._io import check_file, iter_lines, malformed
from ._chunk_tags import is_iob_tag
from .eg import EGCRF, EGStructuredSVM
from .inspection import explain_weights
from .metrics import _conlleval_counts, _prf, chunk_f1_score
from .perceptron import StructuredPerceptron
from .preprocessing import SequenceDictVectorizer, column_window_features, conll_token_features

__all__ = ["main", "token_features"]

ESTIMATORS = {"crf": EGCRF, "svm": EGStructuredSVM, "perceptron": StructuredPerceptron}
TEMPLATES = ("window", "words")
MODEL_FORMAT = 1
#: Names of the attribute columns of a column file in feature names: words, then tags.
_COLUMN_NAMES = ("w", "pos")
_CONLLU_LABELS = ("upos", "xpos", "deprel")

_DESCRIPTION = """\
Sequence labelling on CoNLL files (chunking, named entities, POS tags) with
the linear-chain models of sklearn_struct.

  sklearn-struct learn train.txt -o model.joblib --dev dev.txt
  sklearn-struct tag model.joblib test.txt -o tagged.txt
  sklearn-struct eval tagged.txt
  sklearn-struct dump model.joblib

Column files have one token per line, whitespace-separated columns, the
label last, and a blank line between sentences (CoNLL-2000, CoNLL-2003).
Run "sklearn-struct COMMAND --help" for the options of a command.
"""

_TEMPLATE_HELP = """\
feature templates (default: window)
window: CRFsuite's chunking templates.  For each
  input column a and offset i in -W..W: a[i] and
  a[i]|a[i+1]; for every column but the first also
  a[i]|a[i+1]|a[i+2]; a bias; __BOS__ and __EOS__
  on the first and last token.  In a column file
  the input columns are all but the label, named
  w (the first), pos (the second), c2, c3, ...
words: conll_token_features: the word, its lower
  case, suffixes, shape, case and digit flags, the
  POS (second column) and the lower case, case
  flags and POS of the neighbours within W
"""


# ----------------------------------------------------------------------------- reading
class _Sentence:
    """One sentence of an input file: its attribute columns and its labels."""

    def __init__(self, columns, labels):
        self.columns = columns  # list (one per attribute) of lists of str
        self.labels = labels  # list of str, or None when the file has no labels


def _read_column_file(path):
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


def _conllu_sentences(path, label, inputs):
    data = load_conllu(path)
    if not data.form:
        raise ValueError(f"{path}: no sentence (expected CoNLL-U word lines with 10 "
                         "tab-separated columns)")
    return [_Sentence([data[name][i] for name in inputs], data[label][i])
            for i in range(len(data.form))]


def _read_training_file(path, input_format, label):
    """Sentences and the input description (stored in the model) of a training file."""
    if input_format == "conllu":
        inputs = ["form"] + (["upos"] if label != "upos" else [])
        sentences = _conllu_sentences(path, label, inputs)
        return sentences, {"format": "conllu", "label": label, "columns": inputs,
                           "names": list(_COLUMN_NAMES[:len(inputs)])}
    blocks, n_columns = _read_column_file(path)
    if n_columns < 2:
        raise ValueError(f"{path}: one column only; a training file needs attribute columns "
                         "and the label as the last column")
    n_attributes = n_columns - 1
    names = [_COLUMN_NAMES[c] if c < len(_COLUMN_NAMES) else f"c{c}"
             for c in range(n_attributes)]
    return (_column_sentences(blocks, n_attributes, True),
            {"format": "columns", "n_attributes": n_attributes, "names": names})


def _read_input_file(path, source):
    """Sentences of a file to tag or score with a model learnt on ``source``'s format."""
    if source["format"] == "conllu":
        return None, _conllu_sentences(path, source["label"], source["columns"])
    blocks, n_columns = _read_column_file(path)
    n_attributes = source["n_attributes"]
    if n_columns not in (n_attributes, n_attributes + 1):
        first = next(block for block in blocks if not isinstance(block, str))[0]
        raise malformed(path, first[0], f"{_count(n_columns, 'column')}, but the model was "
                        f"learnt on {_count(n_attributes, 'attribute column')}: expected "
                        f"{n_attributes}, or {n_attributes + 1} with the label last")
    return blocks, _column_sentences(blocks, n_attributes, n_columns == n_attributes + 1)


def _count(n, noun):
    return f"{n} {noun}" + ("" if n == 1 else "s")


# ---------------------------------------------------------------------------- features
def token_features(columns, names, template="window", window=2):
    """Token feature dicts of one sentence's attribute columns, by the CLI's templates.

    Parameters
    ----------
    columns : list of list of str
        The attribute columns (words first, then tags).
    names : list of str
        Their names in the feature names (``w``, ``pos``, ...).
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


def _features(sentences, model):
    return [token_features(s.columns, model["input"]["names"], model["template"],
                           model["window"]) for s in sentences]


def _label_kind(labels):
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


# ---------------------------------------------------------------------------- commands
def _estimator(args):
    Estimator = ESTIMATORS[args.estimator]
    params = {"random_state": args.random_state, "n_jobs": args.n_jobs,
              "verbose": int(args.verbose)}
    if args.max_iter is not None:
        params["max_iter"] = args.max_iter
    if args.estimator == "perceptron":
        if args.C is not None or args.tol is not None:
            raise ValueError("--C and --tol are for crf and svm; the perceptron has none "
                             "(its only control is --max-iter, the number of epochs)")
    else:
        if args.C is not None:
            params["C"] = args.C
        if args.tol is not None:
            params["tol"] = args.tol
    return Estimator(**params)


def _learn(args):
    if args.format == "columns" and args.label is not None:
        raise ValueError("--label picks a CoNLL-U column; in a column file the label is the "
                         "last column")
    label = args.label or "upos"
    _check_output(args.output)
    started = time.perf_counter()
    sentences, source = _read_training_file(args.train, args.format, label)
    model = {"sklearn_struct_model": MODEL_FORMAT, "version": __version__, "input": source,
             "template": args.template, "window": args.window}
    X = _features(sentences, model)
    y = [np.asarray(s.labels, dtype=str) for s in sentences]
    model["label_kind"] = _label_kind(label for labels in y for label in labels)
    dev = None
    if args.dev is not None:
        _, dev_sentences = _read_input_file(args.dev, source)
        if dev_sentences and dev_sentences[0].labels is None:
            raise ValueError(f"{args.dev}: the development file has no label column")
        dev = (_features(dev_sentences, model), [s.labels for s in dev_sentences])
    vectorizer = SequenceDictVectorizer()
    Xt = vectorizer.fit_transform(X)
    estimator = _estimator(args)
    print(f"{len(sentences)} sentences, {sum(len(labels) for labels in y)} tokens, "
          f"{len(vectorizer.vocabulary_)} features, labels: {model['label_kind']} "
          f"(read in {time.perf_counter() - started:.1f}s)", flush=True)
    X_dev = None if dev is None else vectorizer.transform(dev[0])

    def score_dev(n_pass, fitted):
        if n_pass % args.dev_every == 0:
            name, value = _scores(model["label_kind"], dev[1], fitted.predict(X_dev))
            print(f"pass {n_pass}: dev {name} {value:.2f}", flush=True)

    started = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        estimator.fit(Xt, y, callback=None if dev is None else score_dev)
    seconds = time.perf_counter() - started
    if args.prune is not None:
        estimator.prune_weights(args.prune)
    model["pipeline"] = Pipeline([("vectorizer", vectorizer), ("estimator", estimator)])
    joblib.dump(model, args.output, compress=3)
    line = f"trained {type(estimator).__name__} in {seconds:.1f}s ({estimator.n_iter_} passes)"
    if dev is not None:
        name, value = _scores(model["label_kind"], dev[1], estimator.predict(X_dev))
        line += f"; dev {name} {value:.2f}"
    print(f"{line}; model written to {args.output}", flush=True)
    for warning in caught:
        print(f"note: {warning.message}", file=sys.stderr)


def _check_output(path):
    """Refuse a model path that cannot be written before training, not after."""
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        raise ValueError(f"-o {path}: the folder '{folder}' does not exist (nothing trained)")
    if os.path.isdir(path):
        raise ValueError(f"-o {path}: is a folder; expected a model file name")
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise ValueError(f"-o {path}: not writable (nothing trained)")


#: What a model file holds besides its format marker, and its input description by
#: format (``_learn``, ``_read_training_file``).
_MODEL_KEYS = ("version", "input", "template", "window", "label_kind", "pipeline")
_INPUT_KEYS = {"conllu": ("label", "columns", "names"), "columns": ("n_attributes", "names")}


def _load_model(path):
    path = check_file(path)
    try:
        model = joblib.load(path)
    except Exception as exc:  # pickle, zlib, EOF, ...: not a model file either way
        raise ValueError(f"{path}: not a model file written by 'sklearn-struct learn' "
                         "(joblib cannot read it)") from exc
    if not isinstance(model, dict) or model.get("sklearn_struct_model") != MODEL_FORMAT:
        raise ValueError(f"{path}: not a model file written by 'sklearn-struct learn'")
    missing = [key for key in _MODEL_KEYS if key not in model]
    source = model.get("input")
    if not missing and isinstance(source, dict):
        keys = _INPUT_KEYS.get(source.get("format"), ("format",))
        missing = [f"input {key}" for key in keys if key not in source]
    elif not missing:
        missing = ["input dict"]
    if not missing and not isinstance(model["pipeline"], Pipeline):
        missing = ["pipeline"]
    if missing:
        raise ValueError(f"{path}: an incomplete model file (no valid "
                         f"{', '.join(map(repr, missing))}); expected a file written by "
                         "'sklearn-struct learn'")
    return model


def _tag(args):
    model = _load_model(args.model)
    blocks, sentences = _read_input_file(args.input, model["input"])
    pipeline = model["pipeline"]
    estimator = pipeline[-1]
    if args.marginals != "none" and not hasattr(estimator, "predict_marginals"):
        raise ValueError(f"--marginals needs a probabilistic model (crf); this one is "
                         f"{type(estimator).__name__}")
    X = pipeline[:-1].transform(_features(sentences, model))
    predicted = estimator.predict(X)
    marginals = estimator.predict_marginals(X) if args.marginals != "none" else None
    rows = []  # one list of extra fields per token
    for index, labels in enumerate(predicted):
        for t, label in enumerate(labels):
            fields = [str(label)]
            if args.marginals == "label":
                k = int(np.searchsorted(estimator.classes_, label))
                fields.append(f"{marginals[index][t, k]:.4f}")
            elif args.marginals == "all":
                fields += [f"{c}:{p:.4f}" for c, p in zip(estimator.classes_, marginals[index][t])]
            rows.append(fields)
    out = sys.stdout if args.output is None else open(args.output, "w", encoding="utf-8")
    try:
        token = iter(rows)
        if blocks is None:  # CoNLL-U: the model's input columns, the gold label, the prediction
            for sentence in sentences:
                for t in range(len(sentence.columns[0])):
                    fields = [column[t] for column in sentence.columns] + [sentence.labels[t]]
                    out.write(" ".join(fields + next(token)) + "\n")
                out.write("\n")
        else:
            for block in blocks:
                if isinstance(block, str):
                    out.write(block + "\n")
                    continue
                for _, line, _ in block:
                    out.write(line + " " + " ".join(next(token)) + "\n")
    finally:
        if out is not sys.stdout:
            out.close()


def _tag_command(args):
    """``tag``: one labelling per sentence, or the K best with ``--nbest K``."""
    return _tag(args) if args.nbest is None else _tag_nbest(args)


def _tag_nbest(args):
    """The ``nbest`` best labellings of every sentence, as CRF++'s ``crf_test -n`` writes them.

    Per sentence and rank ``i`` (from 0, best first): a line ``# i p`` with the
    labelling's conditional probability ``p``, the sentence's lines with that
    labelling's label as a new last column, and a blank line.  A sentence with
    fewer labellings than ``nbest`` gets all of them.  Column files only.
    """
    if args.marginals != "none":
        raise ValueError("--nbest writes each labelling's probability; it does not combine "
                         "with --marginals")
    model = _load_model(args.model)
    if model["input"]["format"] != "columns":
        raise ValueError("--nbest writes column files (CRF++'s format); this model reads "
                         "CoNLL-U: tag without --nbest")
    pipeline = model["pipeline"]
    estimator = pipeline[-1]
    if not hasattr(estimator, "sample_y"):  # only CRFs give outputs a probability
        raise ValueError(f"--nbest writes each labelling's probability and needs a "
                         f"probabilistic model (crf); this one is {type(estimator).__name__}")
    blocks, sentences = _read_input_file(args.input, model["input"])
    X = pipeline[:-1].transform(_features(sentences, model))
    labellings, _, proba = estimator.predict_k_best(X, args.nbest, return_proba=True)
    sentence = iter(zip(labellings, proba))
    out = sys.stdout if args.output is None else open(args.output, "w", encoding="utf-8")
    try:
        for block in blocks:
            if isinstance(block, str):  # blank lines come with every labelling
                if block.strip():
                    out.write(block + "\n\n")
                continue
            outputs, probabilities = next(sentence)
            for rank, (labels, p) in enumerate(zip(outputs, probabilities)):
                out.write(f"# {rank} {p:.6f}\n")
                for (_, line, _), label in zip(block, labels):
                    out.write(f"{line} {label}\n")
                out.write("\n")
    finally:
        if out is not sys.stdout:
            out.close()


def _eval(args):
    blocks, n_columns = _read_column_file(args.input)
    if n_columns < 2:
        raise ValueError(f"{args.input}: one column only; eval reads the gold and the "
                         "predicted labels from the last two columns")
    y_true, y_pred = [], []
    for block in blocks:
        if not isinstance(block, str):
            y_true.append([fields[-2] for _, _, fields in block])
            y_pred.append([fields[-1] for _, _, fields in block])
    kind = args.labels
    if kind == "auto":
        kind = _label_kind(label for labels in y_true + y_pred for label in labels)
    n_tokens = sum(len(labels) for labels in y_true)
    right = sum(t == p for gold, pred in zip(y_true, y_pred) for t, p in zip(gold, pred))
    if kind == "tokens":
        print(f"processed {n_tokens} tokens in {len(y_true)} sentences; "
              f"accuracy: {100 * right / n_tokens:6.2f}%")
        return
    correct, n_true, n_pred = _conlleval_counts(y_true, y_pred)
    totals = sum(correct.values()), sum(n_true.values()), sum(n_pred.values())
    print(f"processed {n_tokens} tokens with {totals[1]} phrases; found: {totals[2]} "
          f"phrases; correct: {totals[0]}.")
    print(f"accuracy: {100 * right / n_tokens:6.2f}%; " + _prf_text(*totals))
    for chunk_type in sorted(set(n_true) | set(n_pred)):
        counts = correct[chunk_type], n_true[chunk_type], n_pred[chunk_type]
        print(f"{chunk_type:>17}: " + _prf_text(*counts) + f"  {counts[2]}")


def _prf_text(n_correct, n_true, n_pred):
    """conlleval's ``precision: ..%; recall: ..%; FB1: ..`` from chunk counts."""
    precision, recall, f1 = _prf(n_correct, n_true, n_pred)
    return (f"precision: {100 * precision:6.2f}%; recall: {100 * recall:6.2f}%; "
            f"FB1: {100 * f1:6.2f}")


def _dump(args):
    model = _load_model(args.model)
    pipeline = model["pipeline"]
    estimator = pipeline[-1]
    n_weights = estimator.weights_.size
    print(f"{type(estimator).__name__} learnt by sklearn-struct {model['version']}: "
          f"{len(estimator.classes_)} labels, {estimator.n_features_in_} features, "
          f"{np.count_nonzero(estimator.weights_)} of {n_weights} weights non-zero")
    print(f"labels: {' '.join(map(str, estimator.classes_))}\n")
    print(explain_weights(pipeline, top=args.top).text, end="")


# ------------------------------------------------------------------------------ parser
def _parser():
    parser = argparse.ArgumentParser(
        prog="sklearn-struct", description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"sklearn-struct {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    raw = argparse.RawTextHelpFormatter

    learn = commands.add_parser(
        "learn", help="train a model on a labelled file", formatter_class=raw,
        description="Train a linear-chain model on a labelled file and write it to one "
        "model file\n(joblib: the feature settings, the vectorizer and the estimator).")
    learn.add_argument("train", help="training file: a column file (label last) or CoNLL-U")
    learn.add_argument("-o", "--output", required=True, help="model file to write")
    learn.add_argument("--format", choices=("columns", "conllu"), default="columns",
                       help="input format (default: columns)")
    learn.add_argument("--label", choices=_CONLLU_LABELS,
                       help="CoNLL-U column to predict (default: upos)")
    learn.add_argument("--dev", help="development file, scored during training")
    learn.add_argument("--dev-every", type=_positive_int, default=5, metavar="K",
                       help="score the development file every K passes (default: 5)")
    learn.add_argument("--estimator", choices=sorted(ESTIMATORS), default="crf",
                       help="crf: EGCRF (default), svm: EGStructuredSVM,\n"
                       "perceptron: averaged StructuredPerceptron")
    learn.add_argument("--C", type=_positive_float,
                       help="inverse regularisation strength (crf, svm; default 1.0)")
    learn.add_argument("--max-iter", type=_positive_int, metavar="N",
                       help="maximum passes over the training set\n"
                       "(default: 100 for crf and svm, 10 for the perceptron)")
    learn.add_argument("--tol", type=_positive_float,
                       help="relative duality gap at which crf and svm stop\n"
                       "(default: 1e-4 for crf, 1e-3 for svm)")
    learn.add_argument("--template", choices=TEMPLATES, default="window", help=_TEMPLATE_HELP)
    learn.add_argument("--window", type=_non_negative_int, default=2, metavar="W",
                       help="neighbours on each side used by the templates (default: 2)")
    learn.add_argument("--prune", type=_non_negative_float, metavar="T",
                       help="set the weights of magnitude below T to zero\n"
                       "(a smaller model file; EG weights are dense)")
    learn.add_argument("--n-jobs", type=int, metavar="N",
                       help="joblib workers (inference and prediction)")
    learn.add_argument("--random-state", type=int, default=0, metavar="SEED",
                       help="seed of the order of the training examples (default: 0)")
    learn.add_argument("-v", "--verbose", action="store_true",
                       help="print one line per pass (objective, duality gap, time)")
    learn.set_defaults(run=_learn)

    tag = commands.add_parser(
        "tag", help="add the predicted labels to a file",
        description="Write the input file back with the predicted label as a new last "
        "column (for CoNLL-U: the model's input columns, the gold label and the "
        "prediction).  A file with its gold labels becomes the input of 'eval'.")
    tag.add_argument("model", help="model file written by 'learn'")
    tag.add_argument("input", help="file to tag, in the format of the training file "
                     "(with or without the label column)")
    tag.add_argument("-o", "--output", help="output file (default: standard output)")
    tag.add_argument("--marginals", choices=("none", "label", "all"), default="none",
                     help="crf only: after the prediction, add its probability (label) or "
                     "one LABEL:PROBABILITY column per label (all)")
    tag.add_argument("--nbest", type=_positive_int, metavar="K",
                     help="crf and column files only: write the K best labellings of every "
                     "sentence as CRF++'s -n does, each after a line '# RANK PROBABILITY' "
                     "and followed by a blank line")
    tag.set_defaults(run=_tag_command)

    evaluate = commands.add_parser(
        "eval", help="score predictions against gold labels",
        description="Score a file whose last two columns are the gold and the predicted "
        "labels: conlleval's report (chunk precision, recall and F1, overall and per type) "
        "for IOB chunk or entity labels, token accuracy for other labels.")
    evaluate.add_argument("input", help="file with gold and predicted labels last")
    evaluate.add_argument("--labels", choices=("auto", "chunks", "tokens"), default="auto",
                          help="chunks (IOB tags), tokens, or auto: chunks when every label "
                          "is O, B-X or I-X (default)")
    evaluate.set_defaults(run=_eval)

    dump = commands.add_parser(
        "dump", help="print the strongest features of a model",
        description="Print the strongest transitions and, per label, the strongest "
        "positive and negative state features of a model, by name.")
    dump.add_argument("model", help="model file written by 'learn'")
    dump.add_argument("--top", type=_positive_int, default=10,
                      help="features of each sign per label (default: 10)")
    dump.set_defaults(run=_dump)
    return parser


def _positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text}")
    return value


def _non_negative_int(text):
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text}")
    return value


def _non_negative_float(text):
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative number, got {text}")
    return value


def _positive_float(text):
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text}")
    return value


def main(argv=None):
    """Run the ``sklearn-struct`` command line.

    Parameters
    ----------
    argv : list of str, optional
        Command-line arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    status : int
        0 on success; 2 for a bad file or bad options, after one line on
        standard error naming the file and line.
    """
    args = _parser().parse_args(argv)
    try:
        args.run(args)
    except BrokenPipeError:  # the reader stopped early (| head): not an error of ours
        sys.stdout = open(os.devnull, "w")
        return 0
    except (OSError, ValueError) as exc:
        print(f"sklearn-struct {args.command}: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
