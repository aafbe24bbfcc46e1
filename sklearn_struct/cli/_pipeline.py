"""``learn --label head --tags ...`` and ``tag`` for a parser from word forms.

The model is a :class:`~sklearn_struct.parsing.DependencyPipeline`: taggers for the
columns of ``--tags``, and a parser and a relation labeller trained on their jackknifed
predictions.  It reads the FORM column alone and fills the tag columns, HEAD and DEPREL.
"""

import sys
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ..parsing import PREDICTED_TAGS, DependencyPipeline
from ..persistence import save_model
from ._common import check_output, column_list, make_estimator, output_file, read_conllu
from ._evaluation import attachment_scores
from ._parsing import gold_trees


def parse_tags(text):
    """The columns of ``--tags`` (comma-separated), checked."""
    return column_list("--tags", text, PREDICTED_TAGS, "a column the pipeline tags")


def _annotations(path, tags):
    """The forms and the gold annotation (tags, heads, relations) of a CoNLL-U file."""
    conllu, inputs = read_conllu(path, ["form"])
    heads, deprels = gold_trees(path, conllu, tags)
    words = [sentence for sentence in conllu if sentence.words]
    y = [{"head": h, "deprel": d, **{tag: sentence.column(tag) for tag in tags}}
         for h, d, sentence in zip(heads, deprels, words)]
    return [columns[0] for columns in inputs], y


def learn(args):
    """Fit a :class:`DependencyPipeline` on a CoNLL-U training file, write it."""
    tags = parse_tags(args.tags)
    if args.inputs not in (None, "form"):
        raise ValueError(f"--inputs {args.inputs}: with --tags, the model reads the word forms "
                         "alone and predicts its tags (drop --inputs)")
    if args.patience is not None:
        raise ValueError("--patience stops a tagger or a parser on its dev score; the "
                         "pipeline's models train their --max-iter passes (drop --patience)")
    if args.template is not None or args.window is not None:
        raise ValueError("--template and --window choose the features of the command's "
                         "taggers; the pipeline's are fixed (see 'From word forms to trees' "
                         "in the command-line guide)")
    pipeline = DependencyPipeline(
        tags=tuple(tags), tagger=make_estimator(args), parser=make_estimator(args),
        labeller=make_estimator(args), second_order=args.second_order,
        non_projective=args.non_projective, hash_bits=args.hash_bits, n_folds=args.folds,
        n_jobs=args.n_jobs, random_state=args.random_state)
    check_output(args.output)
    started = time.perf_counter()
    forms, y = _annotations(args.train, tags)
    dev = None if args.dev is None else _annotations(args.dev, tags)
    print(f"{len(forms)} sentences, {sum(map(len, forms))} words; taggers of "
          f"{', '.join(tag.upper() for tag in tags)} from the forms, then a "
          f"{'second-order' if args.second_order else 'first-order'} parser on their "
          f"{args.folds}-fold jackknifed tags (read in {time.perf_counter() - started:.1f}s)",
          flush=True)
    if len(forms) < args.folds:
        raise ValueError(f"{args.train}: {len(forms)} sentences, too few for --folds "
                         f"{args.folds} (the parser's training tags come from taggers trained "
                         "on all folds but one): give a larger treebank or a smaller --folds")
    started = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        pipeline.fit(forms, y)
    seconds = time.perf_counter() - started
    if args.prune is not None:
        for model in (*pipeline.taggers_.values(), pipeline.parser_, pipeline.labeller_):
            model.prune_weights(args.prune)
    settings = {"task": "pipeline", "estimator": args.estimator, "tags": tags,
                "input": {"format": "conllu", "label": "head", "columns": ["form"]}}
    save_model(args.output, settings, {"pipeline": pipeline})
    line = f"trained the pipeline in {seconds:.1f}s"
    if dev is not None:
        line += "; dev " + ", ".join(f"{name} {value:.2f}"
                                     for name, value in _scores(pipeline, *dev, tags))
    print(f"{line}; model written to {args.output}", flush=True)
    for warning in caught:
        print(f"note: {warning.message}", file=sys.stderr)


def _scores(pipeline, forms, y, tags):
    """``(name, percent)`` of every tag column's accuracy, UAS and LAS (every word)."""
    predicted = pipeline.predict(forms)
    n_words = sum(map(len, forms))
    scores = [(tag.upper(), 100 * sum(int(np.sum(np.asarray(t[tag]) == p[tag]))
                                      for t, p in zip(y, predicted)) / n_words)
              for tag in tags]
    attachment = attachment_scores([t["head"] for t in y], [p["head"] for p in predicted],
                                   [t["deprel"] for t in y], [p["deprel"] for p in predicted])
    return scores + list(attachment.items())


def check_model(settings, objects):
    """Tag and parse one sentence of two one-letter words (raises on failure)."""
    objects["pipeline"].predict([["x", "y"]])


def tag(args, settings, objects):
    """``tag``: the input file with the tag columns, HEAD and DEPREL predicted."""
    if args.marginals != "none" or args.nbest is not None or args.allowed_labels is not None:
        raise ValueError("--marginals, --nbest and --allowed-labels are for taggers; this "
                         "model tags and parses")
    pipeline = objects["pipeline"]
    if args.n_jobs is not None:
        for model in (*pipeline.taggers_.values(), pipeline.parser_, pipeline.labeller_):
            model.set_params(n_jobs=args.n_jobs)
    conllu, inputs = read_conllu(args.input, ["form"])
    predicted = iter(pipeline.predict([columns[0] for columns in inputs]))
    with output_file(args.output) as out:
        for sentence in conllu:
            out.write(sentence.text(next(predicted) if sentence.words else None))
