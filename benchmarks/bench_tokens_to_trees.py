"""From word forms to labelled trees on UD English-EWT: DependencyPipeline against spaCy.

Both are trained on EWT train, with EWT dev for spaCy's checks, and both tag and
parse EWT test from its word forms alone (the gold tokenisation and sentence
boundaries: one sentence per spaCy document, so that spaCy's parser does not
also decide where sentences end).  Scores are counted as the CoNLL 2018 shared
task counts them on the gold tokenisation: every word, the relation compared by
its universal part; the UAS and LAS without punctuation (CoNLL-X) are given too.

* **sklearn_struct**: :class:`~sklearn_struct.parsing.DependencyPipeline` (UPOS
  and XPOS taggers, then a parser and a relation labeller on their 5-fold
  jackknifed tags), ``n_jobs=2`` (the taggers' fits in two processes),
  ``random_state=0``.  Each of ``--pipelines`` is a parser and an order: ``perceptron``
  (the default, averaged perceptrons of 10 epochs throughout) or ``svm`` (the parser
  an ``EGStructuredSVM(C=--svm-C)`` of 10 passes, the rest the default), first or
  second order.  Its training time is the whole ``fit``, featurising included, after
  a warm-up fit and prediction on a few sentences (numba's compilation, or the load
  of its cache, is in neither time); its dev scores are given too, by which
  ``--svm-C`` is chosen.
* **spaCy 3.8** (a benchmark dependency, never the package's): ``spacy init
  config --lang en --pipeline tagger,morphologizer,parser`` (the default CPU
  config, no pretrained vectors), data from ``spacy convert --converter conllu
  --n-sents 1``, trained by ``spacy train`` with its defaults (evaluation on dev
  every 200 steps, patience 1600 steps, at most 20,000 steps) and stopped after
  ``--spacy-minutes`` at the latest.  Its time to its best dev score is the wall
  time from the start of ``spacy train`` to the evaluation whose model spaCy kept
  as ``model-best`` (found by its dev scores); ``model-best`` is what is scored.

Parsing speed is the whole pipeline from word forms (taggers, parser, relations)
over EWT test, in sentences per second, in this process, after a warm-up on a few
sentences.

Run from benchmarks/:
    python bench_tokens_to_trees.py [--spacy-minutes 60]
        [--pipelines perceptron:1 perceptron:2 svm:2] [--svm-C 0.01]
"""

import argparse
import functools
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _record import markdown_table, record  # noqa: E402

from sklearn_struct.datasets import load_conllu  # noqa: E402
from sklearn_struct.eg import EGStructuredSVM  # noqa: E402
from sklearn_struct.metrics import attachment_score  # noqa: E402
from sklearn_struct.parsing import DependencyPipeline  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "ud_en_ewt_r2.16"
#: Sentences of the warm-up fit and prediction before each of our timed ones.
WARM_UP = 30
#: spaCy's score columns in its training log, as named there.
SPACY_COLUMNS = ("TAG_ACC", "POS_ACC", "MORPH_ACC", "DEP_UAS", "DEP_LAS", "SENTS_F", "SCORE")


@functools.lru_cache(maxsize=None)  # (read once for all the pipelines and spaCy)
def treebank(name):
    data = load_conllu(DATA / f"en_ewt-ud-{name}.conllu.gz")
    return [list(form) for form in data.form], data


def scores(test, predicted):
    """UPOS and XPOS accuracy, UAS and LAS (every word; and without punctuation), in %."""
    n_words = sum(len(heads) for heads in test.head)

    def accuracy(column):
        return 100 * sum(int(np.sum(np.asarray(t) == np.asarray(p[column])))
                         for t, p in zip(getattr(test, column), predicted)) / n_words

    def universal(relations):
        return [[label.split(":")[0] for label in sentence] for sentence in relations]

    heads = [p["head"] for p in predicted]
    relations = dict(labels_true=universal(test.deprel),
                     labels_pred=universal([p["deprel"] for p in predicted]))
    return {"UPOS": accuracy("upos"), "XPOS": accuracy("xpos"),
            "UAS": 100 * attachment_score(test.head, heads),
            "LAS": 100 * attachment_score(test.head, heads, **relations),
            "UAS, no punct.": 100 * attachment_score(test.head, heads, forms=test.form),
            "LAS, no punct.": 100 * attachment_score(test.head, heads, forms=test.form,
                                                     **relations)}


def ours(learner, order, svm_C):
    """Fit and score :class:`DependencyPipeline` with one parser (``learner``) and order;
    its test row, and its dev scores."""
    forms, train = treebank("train")
    y = [{"upos": u, "xpos": x, "head": h, "deprel": d}
         for u, x, h, d in zip(train.upos, train.xpos, train.head, train.deprel)]
    parser = (None if learner == "perceptron"
              else EGStructuredSVM(C=svm_C, max_iter=10, random_state=0))
    pipeline = DependencyPipeline(tags=("upos", "xpos"), parser=parser, second_order=order == 2,
                                  hash_bits=23, n_jobs=2, random_state=0)
    test_forms, test = treebank("test")
    with warnings.catch_warnings():  # compiles numba's kernels, or loads them from its cache
        warnings.simplefilter("ignore", ConvergenceWarning)
        clone(pipeline).fit(forms[:WARM_UP], y[:WARM_UP]).predict(test_forms[:WARM_UP])
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        pipeline.fit(forms, y)
    fit_seconds = time.perf_counter() - started
    started = time.perf_counter()
    predicted = pipeline.predict(test_forms)
    speed = len(test_forms) / (time.perf_counter() - started)
    system = f"DependencyPipeline, order {order}" + (
        "" if parser is None else f", EGStructuredSVM(C={svm_C:g}) parser")
    dev_forms, dev = treebank("dev")
    return ({"system": system, **scores(test, predicted), "training s": fit_seconds,
             "to best s": fit_seconds, "sentences/s": speed},
            {"system": system, **scores(dev, pipeline.predict(dev_forms))})


def pipeline_spec(text):
    """``LEARNER:ORDER`` of ``--pipelines``, checked."""
    learner, _, order = text.partition(":")
    if learner not in ("perceptron", "svm") or order not in ("1", "2"):
        raise argparse.ArgumentTypeError(f"{text!r}: expected perceptron or svm, a colon, "
                                         "and the order 1 or 2 (e.g. svm:2)")
    return learner, int(order)


def spacy_training(folder, minutes):
    """Train spaCy; its log rows as ``(seconds since start, {column: value})``."""
    for name in ("train", "dev"):
        conllu = folder / f"{name}.conllu"
        with gzip.open(DATA / f"en_ewt-ud-{name}.conllu.gz", "rt", encoding="utf-8") as source:
            conllu.write_text(source.read(), encoding="utf-8")
        subprocess.run([sys.executable, "-m", "spacy", "convert", str(conllu), str(folder),
                        "--converter", "conllu", "--n-sents", "1"], check=True,
                       capture_output=True)
    subprocess.run([sys.executable, "-m", "spacy", "init", "config", str(folder / "config.cfg"),
                    "--lang", "en", "--pipeline", "tagger,morphologizer,parser"], check=True,
                   capture_output=True)
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "spacy", "train", str(folder / "config.cfg"), "--output",
         str(folder / "model"), "--paths.train", str(folder / "train.spacy"), "--paths.dev",
         str(folder / "dev.spacy")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, env={**os.environ, "PYTHONUNBUFFERED": "1", "ANSI_COLORS_DISABLED": "1"})
    rows, header = [], None
    for line in process.stdout:
        seconds = time.perf_counter() - started
        fields = line.split()
        if "SCORE" in fields:
            header = [name for name in fields if name in SPACY_COLUMNS]
        elif header and re.match(r"\s*\d+\s+\d+\s", line):
            values = [float(value) for value in fields[-len(header):]]
            rows.append((seconds, dict(zip(header, values))))
            print(f"spaCy {seconds:7.0f}s: {line.strip()}", flush=True)
        if seconds > 60 * minutes:
            process.terminate()
            break
    process.wait()
    return rows, time.perf_counter() - started


def best_evaluation(rows, meta):
    """The time of the evaluation whose model spaCy kept as ``model-best``: the log row
    with its dev scores (the log's SCORE has two decimals, too few to find it by)."""
    performance = json.loads(meta.read_text(encoding="utf-8"))["performance"]
    kept = {"TAG_ACC": "tag_acc", "POS_ACC": "pos_acc", "DEP_UAS": "dep_uas",
            "DEP_LAS": "dep_las"}
    for at, row in rows:
        if all(abs(row[column] - 100 * performance[name]) < 0.006
               for column, name in kept.items()):
            return at
    raise RuntimeError(f"no evaluation in spaCy's log has the scores of {meta}")


def spacy_side(minutes):
    """Train spaCy, then tag and parse EWT test from its word forms with its best model."""
    import spacy
    from spacy.tokens import Doc

    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        rows, seconds = spacy_training(folder, minutes)
        to_best = best_evaluation(rows, folder / "model" / "model-best" / "meta.json")
        nlp = spacy.load(folder / "model" / "model-best")
        test_forms, test = treebank("test")
        list(nlp.pipe(Doc(nlp.vocab, words=words) for words in test_forms[:WARM_UP]))
        started = time.perf_counter()
        docs = list(nlp.pipe(Doc(nlp.vocab, words=words) for words in test_forms))
        speed = len(test_forms) / (time.perf_counter() - started)
    predicted = []
    for doc in docs:
        predicted.append({
            "upos": [token.pos_ for token in doc], "xpos": [token.tag_ for token in doc],
            "head": np.array([0 if token.head.i == token.i else token.head.i + 1
                              for token in doc]),
            "deprel": ["root" if token.dep_ == "ROOT" else token.dep_ for token in doc]})
    return ({"system": f"spaCy {spacy.__version__}", **scores(test, predicted),
             "training s": seconds, "to best s": to_best, "sentences/s": speed}, rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spacy-minutes", type=float, default=60.0)
    parser.add_argument("--pipelines", type=pipeline_spec, nargs="+",
                        default=[("perceptron", 1), ("perceptron", 2), ("svm", 2)],
                        metavar="LEARNER:ORDER")
    parser.add_argument("--svm-C", type=float, default=0.01)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    systems, dev_rows = [], []
    for learner, order in args.pipelines:
        row, dev_row = ours(learner, order, args.svm_C)
        print(row, dev_row, flush=True)
        systems.append(row)
        dev_rows.append(dev_row)
    spacy_row, curve = spacy_side(args.spacy_minutes)
    systems.append(spacy_row)
    names = ("UPOS", "XPOS", "UAS", "LAS", "UAS, no punct.", "LAS, no punct.", "training s",
             "to best s", "sentences/s")
    table = markdown_table(["system", *names],
                           [[row["system"]] + [f"{row[name]:.2f}" if name[0].isupper() else
                                               f"{row[name]:.0f}" for name in names]
                            for row in systems])
    scored = names[:6]  # (the scores, without the times)
    dev_table = markdown_table(["system", *scored],
                               [[row["system"]] + [f"{row[name]:.2f}" for name in scored]
                                for row in dev_rows])
    evaluations = markdown_table(
        ["spaCy: s since start", *SPACY_COLUMNS],
        [[f"{at:.0f}"] + [f"{row.get(name, float('nan')):.2f}" for name in SPACY_COLUMNS]
         for at, row in curve])
    body = (f"{table}\n\nEWT test from its word forms (gold tokens and sentences). UPOS, XPOS, "
            "UAS and LAS as CoNLL 2018 counts them (every word; LAS on the relation before "
            "any colon); the last two without punctuation (CoNLL-X). spaCy's default CPU "
            "config (tagger, morphologizer, parser; no vectors), trained by `spacy train` "
            f"with its defaults, stopped after {args.spacy_minutes:.0f} minutes at the "
            "latest; its `model-best` is scored, and \"to best s\" is the time from the start "
            "of `spacy train` to the evaluation whose model spaCy kept as `model-best`. Load "
            f"average {load:.2f} at the start and {os.getloadavg()[0]:.2f} at the end.\n\n"
            "Our pipelines on EWT dev from its word forms (counted as above):\n\n"
            f"{dev_table}\n\n"
            "spaCy's dev evaluations during training (its own scores):\n\n"
            f"{evaluations}\n")
    print(body)
    command = "cd benchmarks && python bench_tokens_to_trees.py " + " ".join(sys.argv[1:])
    record("From word forms to trees on EWT, against spaCy", body, command.strip())


if __name__ == "__main__":
    main()
