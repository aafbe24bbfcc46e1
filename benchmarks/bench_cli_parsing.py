"""Dependency parsing on UD English-EWT from the command line against the Python API.

The command line runs as a user runs it, one process per command:
``sklearn-struct learn --format conllu --label head`` on EWT train (the parser
and its relation labeller), ``tag`` on EWT test (the file written back with
HEAD and DEPREL predicted) and ``eval`` (UAS and LAS as the CoNLL 2018 shared
task counts them, every word, and without punctuation by the CoNLL-X rule).
The Python API then fits the same steps in this process:
``DependencyTokenEncoder`` and the estimator over ``DependencyTreeStructure``
on the projective training sentences, ``relation_features`` with a
``SequenceDictVectorizer`` and the estimator over ``TreeStructure`` (edges
typed by the arc's direction) on the gold trees, and scores the test
predictions with ``attachment_score``.  The two must agree word for word.

Run from benchmarks/:
    python bench_cli_parsing.py [--estimator perceptron] [--max-iter 10] [--hash-bits 23]
        [--inputs form,upos,xpos] [--C C] [--max-sentences N]
"""

import argparse
import gzip
import os
import re
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _record import markdown_table, record  # noqa: E402

from sklearn_struct import EGCRF, EGStructuredSVM, StructuredPerceptron  # noqa: E402
from sklearn_struct.cli import relation_features  # noqa: E402
from sklearn_struct.datasets import filter_projective, load_conllu  # noqa: E402
from sklearn_struct.metrics import attachment_score  # noqa: E402
from sklearn_struct.preprocessing import (  # noqa: E402
    DependencyTokenEncoder,
    SequenceDictVectorizer,
)
from sklearn_struct.structures import DependencyTreeStructure, TreeStructure  # noqa: E402

ESTIMATORS = {"crf": EGCRF, "svm": EGStructuredSVM, "perceptron": StructuredPerceptron}


def first_sentences(source, target, n):
    """The first ``n`` sentences of a gzip CoNLL-U file, written to ``target``."""
    with gzip.open(source, "rt", encoding="utf-8") as handle:
        text = handle.read()
    if n is not None:
        text = "".join(block + "\n\n" for block in text.split("\n\n")[:n])
    target.write_text(text, encoding="utf-8")


def run(*args):
    """``sklearn-struct ARGS`` in a new process; its standard output and seconds."""
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "sklearn_struct.cli", *map(str, args)],
                            capture_output=True, text=True)
    if result.returncode:
        sys.exit(f"sklearn-struct {args[0]} failed:\n{result.stderr}")
    return result.stdout, time.perf_counter() - start


def universal(deprels):
    return [[label.split(":")[0] for label in sentence] for sentence in deprels]


def api(args, train, test):
    """The Python API's predicted heads and relations of ``test``, and its fit seconds."""
    names = args.inputs.split(",")
    tags = [name for name in names if name in ("upos", "xpos")]
    pos = "both" if len(tags) == 2 else tags[0]

    def sentences(data):
        return [{name: data[name][i] for name in names} for i in range(len(data.form))]

    def columns(data):
        return [[data[name][i] for name in names] for i in range(len(data.form))]

    params = {"random_state": 0}
    if args.max_iter is not None:
        params["max_iter"] = args.max_iter
    if args.C is not None:
        params["C"] = args.C
    Estimator = ESTIMATORS[args.estimator]
    start = time.perf_counter()
    encoder = DependencyTokenEncoder(pos=pos).fit(sentences(train))
    X, heads, _ = filter_projective(encoder.transform(sentences(train)), train.head)
    parser = Estimator(structure=DependencyTreeStructure(hash_bits=args.hash_bits), **params)
    parser.fit(X, heads)
    vectorizer = SequenceDictVectorizer().fit(
        [relation_features(c, names, h) for c, h in zip(columns(train), train.head)])

    def trees(data, heads):
        X = vectorizer.transform([relation_features(c, names, h)
                                  for c, h in zip(columns(data), heads)])
        return [(x, np.asarray(h) - 1, (np.arange(len(h)) > np.asarray(h) - 1).astype(int))
                for x, h in zip(X, heads)]

    labeller = Estimator(structure=TreeStructure(n_edge_types=2), **params)
    labeller.fit(trees(train, train.head), [np.asarray(d, dtype=str) for d in train.deprel])
    seconds = time.perf_counter() - start
    predicted = parser.predict(encoder.transform(sentences(test)))
    return predicted, labeller.predict(trees(test, predicted)), seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    default = Path(__file__).resolve().parents[2] / "shared" / "data" / "ud_en_ewt_r2.16"
    parser.add_argument("--data", type=Path, default=default)
    parser.add_argument("--estimator", choices=sorted(ESTIMATORS), default="perceptron")
    parser.add_argument("--max-iter", type=int, default=None)
    parser.add_argument("--C", type=float, default=None)
    parser.add_argument("--hash-bits", type=int, default=20)
    parser.add_argument("--inputs", default="form,upos,xpos",
                        help="the CoNLL-U columns read (form and at least one tag column)")
    parser.add_argument("--max-sentences", type=int, default=None,
                        help="the first N training and test sentences only (a quick check)")
    args = parser.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    load_start = os.getloadavg()
    options = ["--estimator", args.estimator, "--hash-bits", args.hash_bits,
               "--inputs", args.inputs]
    if args.max_iter is not None:
        options += ["--max-iter", args.max_iter]
    if args.C is not None:
        options += ["--C", args.C]
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        train, test = folder / "train.conllu", folder / "test.conllu"
        first_sentences(args.data / "en_ewt-ud-train.conllu.gz", train, args.max_sentences)
        first_sentences(args.data / "en_ewt-ud-test.conllu.gz", test, args.max_sentences)
        learnt, learn_seconds = run("learn", train, "--format", "conllu", "--label", "head",
                                    "-o", folder / "parser.npz", *options)
        print(learnt, flush=True)
        model_bytes = (folder / "parser.npz").stat().st_size
        _, tag_seconds = run("tag", folder / "parser.npz", test, "-o", folder / "parsed.conllu")
        report, _ = run("eval", test, folder / "parsed.conllu", "--label", "head")
        print(report, flush=True)
        parsed = load_conllu(folder / "parsed.conllu")
        fit_seconds = {key: float(value) for key, value in re.findall(
            r"trained the (parser|relation labeller) \(\w+\) in ([0-9.]+)s", learnt)}
        train_data, test_data = load_conllu(train), load_conllu(test)
    heads, relations, api_seconds = api(args, train_data, test_data)
    load_end = os.getloadavg()

    different = sum(int(np.sum(ours != theirs)) for ours, theirs in zip(parsed.head, heads))
    different += sum(a != b for ours, theirs in zip(parsed.deprel, relations)
                     for a, b in zip(ours, theirs))
    gold = universal(test_data.deprel)
    rows = []
    cli_scores = re.findall(r"UAS:\s+([0-9.]+)%\s+LAS:\s+([0-9.]+)%", report)
    for label, forms, cli in (("every word (CoNLL 2018)", None, cli_scores[0]),
                              ("punctuation excluded (CoNLL-X)", test_data.form,
                               cli_scores[1])):
        uas = 100 * attachment_score(test_data.head, heads, forms=forms)
        las = 100 * attachment_score(test_data.head, heads, forms=forms, labels_true=gold,
                                     labels_pred=universal(relations))
        rows.append([label, cli[0], cli[1], f"{uas:.2f}", f"{las:.2f}"])
    table = markdown_table(["EWT test", "UAS, command line", "LAS, command line",
                            "UAS, Python API", "LAS, Python API"], rows)
    n_train = len(train_data.form)
    summary = (
        f"**{args.estimator}**, inputs {args.inputs} (gold tags), 2^{args.hash_bits} hashed "
        f"parser weights, {n_train} training sentences, {len(test_data.form)} test "
        f"sentences. Command line: `learn` {learn_seconds:.0f} s in all (parser fit "
        f"{fit_seconds.get('parser', float('nan')):.0f} s, relation labeller fit "
        f"{fit_seconds.get('relation labeller', float('nan')):.0f} s), `tag` "
        f"{tag_seconds:.0f} s, model file {model_bytes / 1e6:.1f} MB. Python API: "
        f"{api_seconds:.0f} s from reading to both fits. Words whose predicted head or "
        f"relation differs between the command line and the API: **{different}**. Load "
        f"average {load_start[0]:.2f} at the start and {load_end[0]:.2f} at the end (2 "
        "cores shared with other sessions; run with nice: seconds are not comparable "
        "across runs).")
    print(summary)
    print(table)
    argv = " ".join(sys.argv[1:])
    section = f"Parsing EWT from the command line and the Python API: {args.estimator}"
    if args.max_sentences is not None:
        section += f", first {args.max_sentences} sentences"
    record(section, f"{summary}\n\n{table}", f"cd benchmarks && python bench_cli_parsing.py "
           f"{argv}".strip())


if __name__ == "__main__":
    main()
