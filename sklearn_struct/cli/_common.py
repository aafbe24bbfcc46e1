"""What the commands share: estimators, CoNLL-U input columns, model files, outputs."""

import contextlib
import os
import sys
import warnings

from ..datasets._conllu import COLUMNS, EMPTY_LIST_COLUMNS, read_conllu_sentences
from ..eg import EGCRF, EGStructuredSVM
from ..parsing import DependencyPipeline
from ..perceptron import StructuredPerceptron
from ..persistence import DamagedModelFile, load_model
from ..preprocessing import DependencyTokenEncoder, SequenceDictVectorizer

ESTIMATORS = {"crf": EGCRF, "svm": EGStructuredSVM, "perceptron": StructuredPerceptron}
#: CoNLL-U columns a model may read (``--inputs``); everything but the form is an annotation.
CONLLU_INPUTS = ("form", "lemma", "upos", "xpos", "feats")
#: CoNLL-U columns a model may predict (``--label``); ``head`` parses (HEAD and DEPREL).
CONLLU_LABELS = ("upos", "xpos", "feats", "deprel", "head")
#: What ``learn`` predicts: a column, or UPOS and FEATS as one label (``NOUN|Number=Sing``).
TAG_LABELS = CONLLU_LABELS + ("upos+feats",)
CONLLU_COLUMN_INDEX = {name: index for index, name in enumerate(COLUMNS)}


def count(n, noun):
    return f"{n} {noun}" + ("" if n == 1 else "s")


def make_estimator(args, **params):
    """The ``--estimator`` with the options of the command line (and ``params``)."""
    params.update(random_state=args.random_state, n_jobs=args.n_jobs,
                  verbose=int(args.verbose))
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
    return ESTIMATORS[args.estimator](**params)


def check_output(path):
    """Refuse a model path that cannot be written before training, not after."""
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        raise ValueError(f"-o {path}: the folder '{folder}' does not exist (nothing trained)")
    if os.path.isdir(path):
        raise ValueError(f"-o {path}: is a folder; expected a model file name")
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise ValueError(f"-o {path}: not writable (nothing trained)")


@contextlib.contextmanager
def output_file(path):
    """The file ``-o`` names, or standard output."""
    if path is None:
        yield sys.stdout
        return
    with open(path, "w", encoding="utf-8") as handle:
        yield handle


def column_list(option, text, allowed, kind):
    """The comma-separated columns of ``option``, each one of ``allowed`` (a ``kind``),
    none named twice."""
    columns = [name.strip() for name in text.split(",")]
    unknown = [name for name in columns if name not in allowed]
    if unknown:
        raise ValueError(f"{option} {text}: {unknown[0]!r} is not {kind}; expected some of "
                         f"{', '.join(allowed)}, comma-separated")
    if len(set(columns)) != len(columns):
        raise ValueError(f"{option} {text}: a column is named twice")
    return columns


def parse_inputs(text, label):
    """The CoNLL-U columns of ``--inputs`` (comma-separated), checked against the label."""
    columns = column_list("--inputs", text, CONLLU_INPUTS, "a CoNLL-U input column")
    for part in (label or "").split("+"):
        if part in columns:
            raise ValueError(f"--inputs {text}: {part} is the label (--label {label}); a model "
                             "cannot read what it predicts")
    return columns


def gold_inputs_note(columns, path):
    """The ``learn`` line saying which annotation columns of the training file are inputs."""
    annotations = [name for name in columns if name != "form"]
    if not annotations:
        return None
    names = ", ".join(name.upper() for name in annotations)
    return (f"inputs: {', '.join(columns)}; the {names} of {path} "
            f"{'is' if len(annotations) == 1 else 'are'} gold annotation: every file to tag "
            f"needs {'that column' if len(annotations) == 1 else 'those columns'} filled "
            "(gold, or predicted by a tagger first)")


def unannotated(name, value):
    """Whether ``value`` in the CoNLL-U column ``name`` says the annotation is missing.

    ``_`` is missing in UPOS, XPOS, LEMMA, HEAD and DEPREL, but in FEATS (and
    MISC) it is the empty list, a value like any other.
    """
    return value == "_" and name not in EMPTY_LIST_COLUMNS


def read_conllu(path, columns, advice=""):
    """The sentences of a CoNLL-U file and, per sentence with words, its input columns.

    An input column other than the form must be filled: a ``_`` there (a file
    not tagged yet) is an error naming the line, not an unknown value; FEATS'
    ``_`` is the empty bundle, a value.  ``advice`` ends that error's message.
    """
    sentences = read_conllu_sentences(path)
    inputs = []
    for sentence in sentences:
        if not sentence.words:
            continue
        for name in columns:
            if name == "form":
                continue
            index = CONLLU_COLUMN_INDEX[name]
            for line_number, fields in sentence.words:
                if unannotated(name, fields[index]):
                    raise ValueError(
                        f"{path}, line {line_number}: no {name.upper()} ('_'), but the model "
                        f"reads it (inputs: {', '.join(columns)}); fill that column first"
                        + advice)
        inputs.append([sentence.column(name) for name in columns])
    if not inputs:
        raise ValueError(f"{path}: no sentence (expected CoNLL-U word lines with 10 "
                         "tab-separated columns)")
    return sentences, inputs


#: The fitted objects of a model file by task, and their kinds.
_MODEL_OBJECTS = {
    "tag": {"vectorizer": (SequenceDictVectorizer,), "estimator": tuple(ESTIMATORS.values())},
    "parse": {"encoder": (DependencyTokenEncoder,), "parser": tuple(ESTIMATORS.values()),
              "vectorizer": (SequenceDictVectorizer,),
              "labeller": tuple(ESTIMATORS.values())},
    "pipeline": {"pipeline": (DependencyPipeline,)}}
#: The settings of a model file by task, and of its input by format.
_SETTINGS = {"tag": ("estimator", "input", "template", "window", "label_kind"),
             "parse": ("estimator", "input"), "pipeline": ("estimator", "input", "tags")}
_INPUT_SETTINGS = {"conllu": ("label", "columns"), "columns": ("n_attributes", "names")}


def _valid_input_setting(key, value):
    """Whether an input setting of a model file has the kind ``learn`` writes."""
    if key == "label":
        return isinstance(value, str)
    if key == "n_attributes":
        return isinstance(value, int) and not isinstance(value, bool) and value >= 0
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def open_model(path, args, notes):
    """The version, settings and objects of a model file, checked against the options given.

    ``tag`` and ``dump`` accept ``--format``, ``--label`` and ``--inputs``
    although the model fixes them: given, they must agree with it.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        version, settings, objects = load_model(path, writer="'sklearn-struct learn'")
    notes.extend(str(warning.message) for warning in caught)
    task = settings.get("task") if isinstance(settings, dict) else None
    task = task if isinstance(task, str) else None  # (an edited file may hold any JSON)
    missing = ["task"] if task not in _SETTINGS else [
        key for key in _SETTINGS[task] if key not in settings]
    if not missing:
        source = settings["input"]
        source_format = source.get("format") if isinstance(source, dict) else None
        keys = _INPUT_SETTINGS.get(source_format) if isinstance(source_format, str) else None
        missing = (["input format"] if keys is None else
                   [f"input {key}" for key in keys
                    if key not in source or not _valid_input_setting(key, source[key])])
    if not missing:
        missing = [key for key, kinds in _MODEL_OBJECTS[task].items()
                   if not isinstance(objects.get(key), kinds)]
    if missing:
        raise DamagedModelFile(f"{path}: an incomplete model file (no valid "
                               f"{', '.join(missing)})")
    source = settings["input"]
    given = {"--format": (getattr(args, "format", None), source["format"]),
             "--label": (getattr(args, "label", None), source.get("label")),
             "--inputs": (getattr(args, "inputs", None),
                          ",".join(source["columns"]) if "columns" in source else None)}
    for option, (value, learnt) in given.items():
        if value is not None and value.replace(" ", "") != learnt:
            learnt_text = f"{option} {learnt}" if learnt else f"no {option}"
            raise ValueError(f"{option} {value}, but {path} was learnt with {learnt_text}; "
                             f"the model fixes it (omit {option})")
    return version, settings, objects
