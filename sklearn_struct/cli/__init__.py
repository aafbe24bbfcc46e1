"""The ``sklearn-struct`` command line: tagging and parsing CoNLL files, as with CRFsuite.

``learn`` trains a chain model on a column file or a CoNLL-U column, or a
dependency parser on CoNLL-U trees (``--label head``), and writes one model
file; ``tag`` writes a file back with the predictions (a new last column, or
the CoNLL-U column filled in); ``eval`` scores them (conlleval's report, token
accuracy, UAS and LAS); ``dump`` describes a model.  Every step is the Python
API (feature functions, a vectorizer or encoder, estimators), so a model
learnt here is the model the same code would fit in Python.  Model files are
arrays and JSON (:mod:`sklearn_struct.persistence`, the format of ``dump`` and ``load``
from Python): opening one never runs code.
"""

import argparse
import os
import sys

import numpy as np
from sklearn.pipeline import Pipeline

from .. import __version__
from ..datasets._io import check_file
from ..inspection import explain_weights, format_weights, strongest_weights
from ..persistence import MODEL_FORMAT, DamagedModelFile
from . import _parsing, _pipeline, _tagging
from ._common import CONLLU_LABELS, ESTIMATORS, TAG_LABELS, open_model
from ._evaluation import evaluate
from ._parsing import relation_features
from ._tagging import TEMPLATES, token_features

__all__ = ["MODEL_FORMAT", "main", "relation_features", "token_features"]

_DESCRIPTION = """\
Sequence labelling (chunking, named entities, POS tags) and dependency parsing
on CoNLL files with the models of sklearn_struct.

  sklearn-struct learn train.txt -o model.npz --dev dev.txt
  sklearn-struct tag model.npz test.txt -o tagged.txt
  sklearn-struct eval tagged.txt
  sklearn-struct dump model.npz

  sklearn-struct learn train.conllu --format conllu --label head \\
      --inputs form,upos,xpos -o parser.npz
  sklearn-struct tag parser.npz test.conllu -o parsed.conllu
  sklearn-struct eval test.conllu parsed.conllu

  sklearn-struct learn train.conllu --format conllu --label head \\
      --tags upos,xpos -o pipeline.npz
  sklearn-struct tag pipeline.npz forms_only.conllu -o parsed.conllu

Column files have one token per line, whitespace-separated columns, the
label last, and a blank line between sentences (CoNLL-2000, CoNLL-2003).
Run "sklearn-struct COMMAND --help" for the options of a command.
"""

_TEMPLATE_HELP = """\
feature templates of taggers (default: window)
window: CRFsuite's chunking templates.  For each
  input column a and offset i in -W..W: a[i] and
  a[i]|a[i+1]; for every column but the first also
  a[i]|a[i+1]|a[i+2]; a bias; __BOS__ and __EOS__
  on the first and last token.  In a column file
  the input columns are all but the label, named
  w (the first), pos (the second), c2, c3, ...;
  in CoNLL-U, the --inputs by their names
words: conll_token_features: the word, its lower
  case, suffixes, shape, case and digit flags, the
  POS (second column) and the lower case, case
  flags and POS of the neighbours within W
"""

_FORMAT_HELP = "input format (default: columns)"
_INPUTS_HELP = ("CoNLL-U columns the model reads, comma-separated, from\n"
                "form, lemma, upos, xpos, feats (default: form).  Every\n"
                "file to tag needs them filled: columns other than the\n"
                "form are annotations (gold in a treebank)")


def _learn(args):
    if args.format == "columns":
        for option in ("label", "inputs"):
            if getattr(args, option) is not None:
                raise ValueError(f"--{option} picks CoNLL-U columns: add --format conllu (in "
                                 "a column file the label is the last column and the inputs "
                                 "all the others)")
    elif args.label is None:
        args.label = "upos"
    for option in ("hash_bits", "non_projective", "second_order"):
        if args.label != "head" and getattr(args, option) not in (None, False):
            raise ValueError(f"--{option.replace('_', '-')} is for the parser (--label head)")
    if args.label == "head" and (args.tag_dictionary != "auto" or args.min_count is not None):
        raise ValueError("--tag-dictionary and --min-count are for taggers, not the parser "
                         "(--label head)")
    if args.patience is not None and args.dev is None:
        raise ValueError("--patience stops training on the development file's score: give "
                         "--dev too")
    if args.tag_dictionary == "off" and args.min_count is not None:
        raise ValueError("--min-count sets the tag dictionary, which --tag-dictionary off "
                         "turns off")
    if args.second_order and args.non_projective:
        raise ValueError("--second-order parses with the second-order Eisner algorithm, whose "
                         "trees are projective: drop --non-projective")
    for path in (args.train, args.dev):  # a missing file is refused before any work
        if path is not None:
            check_file(path)
    if args.label != "head" and (args.tags is not None or args.folds is not None):
        raise ValueError("--tags and --folds train taggers for a parser from word forms: "
                         "add --label head")
    if args.label == "head":
        if args.hash_bits is None:
            args.hash_bits = 20
        if args.tags is not None:
            args.folds = 5 if args.folds is None else args.folds
            return _pipeline.learn(args)
        if args.folds is not None:
            raise ValueError("--folds jackknifes the tags that --tags predicts: give --tags")
        return _parsing.learn(args)
    return _tagging.learn(args)


def _task_module(settings):
    return {"parse": _parsing, "pipeline": _pipeline, "tag": _tagging}[settings["task"]]


def _open_model(args, notes):
    """A model file's version, settings and objects, checked to tag a sentence."""
    version, settings, objects = open_model(args.model, args, notes)
    try:
        _task_module(settings).check_model(settings, objects)
    except Exception as exc:  # an untrusted file: any failure of its model is damage
        raise DamagedModelFile(f"{args.model}: a damaged model file (its model cannot tag a "
                               f"sentence: {type(exc).__name__}: {exc})") from exc
    return version, settings, objects


def _tag(args):
    notes = []
    _, settings, objects = _open_model(args, notes)
    _print_notes(notes)
    return _task_module(settings).tag(args, settings, objects)


def _eval(args):
    return evaluate(args)


def _dump(args):
    notes = []
    version, settings, objects = _open_model(args, notes)
    _print_notes(notes)
    print(f"model written by sklearn-struct {version}, --estimator {settings['estimator']}")
    source = settings["input"]
    if source["format"] == "conllu":
        predicted = ([tag.upper() for tag in settings.get("tags", [])] + ["HEAD and DEPREL"]
                     if source["label"] == "head" else [source["label"].upper()])
        print(f"input: CoNLL-U columns {', '.join(source['columns'])}; predicts "
              f"{', '.join(predicted)}")
    else:
        print(f"input: column files of {source['n_attributes']} attribute columns "
              f"({', '.join(source['names'])}), the label last")
    if settings["task"] == "pipeline":
        pipeline = objects["pipeline"]
        for tag, tagger in pipeline.taggers_.items():
            _describe(tagger, f"{tag.upper()} tagger")
        objects = {"parser": pipeline.parser_, "labeller": pipeline.labeller_,
                   "vectorizer": pipeline.relation_vectorizer_}
    if settings["task"] in ("parse", "pipeline"):
        parser, labeller = objects["parser"], objects["labeller"]
        print(f"parser: {type(parser).__name__} over {parser.structure_!r}: "
              f"{np.count_nonzero(parser.weights_)} of {parser.weights_.size} hashed "
              "weights non-zero (its features are hashed, hence not named)")
        _describe(labeller, "relation labeller")
        print(_relation_weights(objects["vectorizer"], labeller, args.top), end="")
        return
    model = Pipeline([("vectorizer", objects["vectorizer"]),
                      ("estimator", objects["estimator"])])
    _describe(model[-1], "tagger")
    print(explain_weights(model, top=args.top).text, end="")


def _describe(estimator, role):
    print(f"{role}: {type(estimator).__name__}: {len(estimator.classes_)} labels, "
          f"{estimator.n_features_in_} features, {np.count_nonzero(estimator.weights_)} of "
          f"{estimator.weights_.size} weights non-zero")
    print(f"labels: {' '.join(map(str, estimator.classes_))}\n")


def _relation_weights(vectorizer, labeller, top):
    """``explain_weights``' table for the relation labeller, transitions per arc direction.

    Its tree has two edge types (the word left or right of its head), so a
    transition is named by the head's relation, the word's and the side.
    """
    names = vectorizer.get_feature_names_out()
    classes = labeller.classes_
    state = []
    for k, label in enumerate(classes):
        items = [(names[j], float(labeller.coef_[k, j]))
                 for j in np.flatnonzero(labeller.coef_[k])]
        state += [(label, name, weight) for name, weight in strongest_weights(items, top)]
    pairs = [((classes[a], f"{classes[b]} ({side} of its head)"), float(weights[a, b]))
             for side, weights in zip(("left", "right"), labeller.transition_)
             for a, b in zip(*np.nonzero(weights))]
    transition = [(a, b, weight) for (a, b), weight in strongest_weights(pairs, top)]
    return format_weights(state, transition, top)


def _print_notes(notes):
    for note in notes:
        print(f"sklearn-struct: warning: {note}", file=sys.stderr)


# ------------------------------------------------------------------------------ parser
def _model_options(command):
    """``--format``, ``--label`` and ``--inputs`` of the commands reading a model."""
    command.add_argument("--format", choices=("columns", "conllu"),
                         help="checked against the model's (it fixes the format)")
    command.add_argument("--label", choices=TAG_LABELS,
                         help="checked against the model's (it fixes the label)")
    command.add_argument("--inputs", metavar="COLUMNS",
                         help="checked against the model's (it fixes the inputs)")


def _prediction_options(tag):
    """What ``tag`` predicts beyond the labelling: probabilities, k best, constraints."""
    tag.add_argument("--marginals", choices=("none", "label", "all", "chunk"), default="none",
                     help="crf and column files only: after the prediction, add its "
                     "probability (label), one LABEL:PROBABILITY column per label (all), or "
                     "the probability of the predicted chunk the token is in, '-' outside "
                     "chunks (chunk: IOB2 labels, chunks read strictly)")
    tag.add_argument("--nbest", type=_positive_int, metavar="K",
                     help="crf and column files only: write the K best labellings of every "
                     "sentence as CRF++'s -n does, each after a line '# RANK PROBABILITY' "
                     "and followed by a blank line")
    tag.add_argument("--nbest-layout", choices=("crfpp", "wapiti"), default="crfpp",
                     help="with --nbest: CRF++'s blocks (crf_test -n: '# RANK PROBABILITY', "
                     "the label as a new last column) or Wapiti's (label -n -s: '# RANK "
                     "SCORE', the score unnormalised, then per token LINE<tab>LABEL<tab>"
                     "LABEL/SCORE, the token's share of the score; any sequence model)")
    tag.add_argument("--allowed-labels", metavar="LEXICON",
                     help="sequence labellers: a file of lines 'WORD LABEL [LABEL ...]'; "
                     "a token whose word (first column, or FORM) is listed takes one of its "
                     "labels, in the labelling, --marginals and --nbest (the model's "
                     "distribution conditioned on them)")


def _tag_dictionary_options(learn):
    """``--tag-dictionary`` and ``--min-count`` of ``learn``."""
    learn.add_argument("--tag-dictionary", choices=("auto", "on", "off"), default="auto",
                       help="tagger: candidate labels per word from the training\n"
                       "data (a pruned chain, O(T k^2) instead of O(T L^2));\n"
                       "auto (default): on past 100 labels")
    learn.add_argument("--min-count", type=_positive_int, metavar="N",
                       help="tag dictionary: words seen fewer than N times also take\n"
                       "the most frequent labels of rare words (default: 5)")


def _dev_options(learn):
    """``--dev``, ``--dev-every`` and ``--patience`` of ``learn``."""
    learn.add_argument("--dev", help="development file, scored during training")
    learn.add_argument("--dev-every", type=_positive_int, default=5, metavar="K",
                       help="score the development file every K passes (default: 5)")
    learn.add_argument("--patience", type=_positive_int, metavar="K",
                       help="with --dev: stop after K passes without a better dev token "
                            "accuracy (default: run every pass); the model keeps the best "
                            "pass either way")


def _parser():
    parser = argparse.ArgumentParser(
        prog="sklearn-struct", description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"sklearn-struct {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    raw = argparse.RawTextHelpFormatter

    learn = commands.add_parser(
        "learn", help="train a tagger or a parser on a labelled file", formatter_class=raw,
        description="Train a linear-chain tagger on a labelled file, or a dependency parser "
        "on CoNLL-U\ntrees (--label head), and write it to one model file (arrays and JSON).")
    learn.add_argument("train", help="training file: a column file (label last) or CoNLL-U")
    learn.add_argument("-o", "--output", required=True, help="model file to write")
    learn.add_argument("--format", choices=("columns", "conllu"), default="columns",
                       help=_FORMAT_HELP)
    learn.add_argument("--label", choices=TAG_LABELS,
                       help="CoNLL-U column to predict (default: upos); head:\n"
                       "a dependency parser, filling HEAD and DEPREL;\n"
                       "upos+feats: both as one label (NOUN|Number=Sing)")
    learn.add_argument("--inputs", metavar="COLUMNS", help=_INPUTS_HELP)
    _dev_options(learn)
    learn.add_argument("--estimator", choices=sorted(ESTIMATORS), default="crf",
                       help="crf: EGCRF (default), svm: EGStructuredSVM,\n"
                       "perceptron: averaged StructuredPerceptron\n"
                       "(a parser's two models both use it)")
    learn.add_argument("--C", type=_positive_float,
                       help="inverse regularisation strength (crf, svm; default 1.0)")
    learn.add_argument("--max-iter", type=_positive_int, metavar="N",
                       help="maximum passes over the training set\n"
                       "(default: 100 for crf and svm, 10 for the perceptron)")
    learn.add_argument("--tol", type=_positive_float,
                       help="relative duality gap at which crf and svm stop\n"
                       "(default: 1e-4 for crf, 1e-3 for svm)")
    learn.add_argument("--template", choices=TEMPLATES, help=_TEMPLATE_HELP)
    learn.add_argument("--window", type=_non_negative_int, metavar="W",
                       help="neighbours on each side used by the templates (default: 2)")
    learn.add_argument("--hash-bits", type=_positive_int, metavar="B",
                       help="parser: 2^B hashed arc-feature weights (default: 20)")
    learn.add_argument("--non-projective", action="store_true",
                       help="parser: Chu-Liu-Edmonds on every training tree instead\n"
                       "of Eisner on the projective ones")
    learn.add_argument("--tags", metavar="COLUMNS",
                       help="parser from word forms: a tagger for each of these\n"
                       "columns (upos, xpos, feats; comma-separated), and a\n"
                       "parser reading the forms and the predicted UPOS and XPOS;\n"
                       "'tag' then needs FORM only and fills the tags too")
    learn.add_argument("--folds", type=_two_or_more, metavar="K",
                       help="with --tags: the parser learns from tags predicted by\n"
                       "taggers trained on the other K-1 folds (default: 5)")
    learn.add_argument("--second-order", action="store_true",
                       help="parser: score adjacent siblings as well as arcs\n"
                       "(McDonald & Pereira 2006; projective trees)")
    _tag_dictionary_options(learn)
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
        "tag", help="add the predictions of a model to a file",
        description="Write the input file back with the predictions: in a column file, "
        "the predicted label as a new last column; in CoNLL-U, every line as read with the "
        "model's column (or HEAD and DEPREL for a parser) filled in.  A column file with "
        "its gold labels becomes the input of 'eval'; CoNLL-U is scored against the file "
        "tagged ('eval GOLD SYSTEM').")
    tag.add_argument("model", help="model file written by 'learn'")
    tag.add_argument("input", help="file to tag, in the format of the training file "
                     "(with or without the label column)")
    tag.add_argument("-o", "--output", help="output file (default: standard output)")
    _model_options(tag)
    _prediction_options(tag)
    tag.add_argument("--n-jobs", type=int, metavar="N", help="joblib workers (prediction)")
    tag.set_defaults(run=_tag)

    evaluate_ = commands.add_parser(
        "eval", help="score predictions against gold labels",
        description="Score a column file whose last two columns are the gold and the "
        "predicted labels: conlleval's report (chunk precision, recall and F1, overall and "
        "per type) for IOB chunk or entity labels, token accuracy for other labels.  Or "
        "score a CoNLL-U file written by 'tag' against its gold file: UPOS, XPOS, UFeats, "
        "DEPREL and AllTags accuracy, and UAS, LAS and CLAS as the CoNLL 2018 shared task "
        "counts them on "
        "the gold tokenisation (syntactic words only; LAS compares the relation before any "
        "colon), with every word and without punctuation.")
    evaluate_.add_argument("input", help="column file with gold and predicted labels last, "
                           "or the gold CoNLL-U file")
    evaluate_.add_argument("system", nargs="?",
                           help="the CoNLL-U file written by 'tag' (CoNLL-U only)")
    evaluate_.add_argument("--format", choices=("columns", "conllu"),
                           help="columns: one file; conllu: a gold and a system file "
                           "(default: conllu for two files or a .conllu name)")
    evaluate_.add_argument("--label", choices=CONLLU_LABELS,
                           help="CoNLL-U: score this column only (head: UAS and LAS)")
    evaluate_.add_argument("--labels", choices=("auto", "chunks", "tokens"), default="auto",
                           help="column files: chunks (IOB tags), tokens, or auto: chunks "
                           "when every label is O, B-X or I-X (default)")
    evaluate_.set_defaults(run=_eval)

    dump = commands.add_parser(
        "dump", help="describe a model and print its strongest features",
        description="Print a model's inputs and labels, the strongest transitions and, per "
        "label, the strongest positive and negative state features, by name (for a parser: "
        "those of its relation labeller).")
    dump.add_argument("model", help="model file written by 'learn'")
    _model_options(dump)
    dump.add_argument("--top", type=_positive_int, default=10,
                      help="features of each sign per label (default: 10)")
    dump.set_defaults(run=_dump)
    return parser


def _positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text}")
    return value


def _two_or_more(text):
    value = int(text)
    if value < 2:
        raise argparse.ArgumentTypeError(f"expected an integer of at least 2, got {text}")
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


#: Options of ``learn`` that decide the model: the other commands read them from it.
_TRAINING_OPTIONS = ("--estimator", "--C", "--max-iter", "--tol", "--template", "--window",
                     "--hash-bits", "--non-projective", "--second-order", "--prune",
                     "--random-state", "--dev", "--dev-every", "--patience", "--tags",
                     "--folds")


def _refuse_learn_options(parser, command, unknown):
    """Say why a training option given to another command than ``learn`` is refused."""
    given = [arg.split("=")[0] for arg in unknown if arg.split("=")[0] in _TRAINING_OPTIONS]
    if not given:
        return
    why = ("eval compares files and reads no model" if command == "eval" else
           "the model file fixes it (learn again to change it)")
    parser.exit(2, f"sklearn-struct {command}: error: {given[0]} is an option of 'learn'; "
                f"{why}\n")


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
    parser = _parser()
    args, unknown = parser.parse_known_args(argv)
    _refuse_learn_options(parser, args.command, unknown)
    args = parser.parse_args(argv)  # argparse's own message for anything else unknown
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
