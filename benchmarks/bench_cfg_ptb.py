"""Constituency parsing of the WSJ sample: PCFG baseline, EGCRF and EGStructuredSVM on one grammar.

Data: the NLTK sample of the Penn Treebank (3,914 trees; non-commercial, read
from ``../shared/data``), cleaned (function tags, indices and ``-NONE-``
removed), trained on files wsj_0001-wsj_0159 and tested on wsj_0160-wsj_0199,
sentences of at most ``--max-len`` words.  Gold part-of-speech tags are the
terminals.  Trees are binarised with horizontal markovisation of order
``--markov`` and collapsed unary chains; the grammar keeps the binary rules
seen at least ``--min-count`` times in training (and every lexical rule), and
the training trees it no longer derives are left out (counted).

Models, all over that grammar (``WeightedCFGStructure``, exact CKY and
inside-outside):

* the relative-frequency PCFG (Viterbi parses of the rule log-probabilities);
* ``EGCRF`` (a CRF over parse trees) and ``EGStructuredSVM`` (max-margin
  parsing with the span loss), hashed rule x span features.

Scored with ``metrics.parseval`` (evalb's COLLINS.prm conventions) on the
unbinarised predictions; a test sentence without any derivation under the
grammar gets a flat tree (no bracket).  Also the sentences per second of
inside-outside over the test sentences.

Run from benchmarks/:  python bench_cfg_ptb.py [--max-len 15] [--passes 15]
"""

import argparse
import os
import resource
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _record import add_order_option, markdown_table, order_title, record  # noqa: E402

from sklearn_struct import EGCRF, EGStructuredSVM  # noqa: E402
from sklearn_struct.datasets import Tree, binarize, load_ptb, unbinarize  # noqa: E402
from sklearn_struct.metrics import parseval  # noqa: E402
from sklearn_struct.structures import Grammar, WeightedCFGStructure  # noqa: E402


def split(data_dir, max_len):
    data = load_ptb(data_dir / "wsj_sample.mrg.gz")
    files = [line.split("\t") for line in open(data_dir / "wsj_sample.files.tsv")
             if not line.startswith("#")]
    first_test = next(int(row[4]) for row in files if row[0] == "wsj_0160.mrg")
    short = [len(tree.leaves()) <= max_len for tree in data.trees]
    train = [t for t, keep in zip(data.trees[:first_test], short[:first_test]) if keep]
    test = [t for t, keep in zip(data.trees[first_test:], short[first_test:]) if keep]
    return train, test


def predict_trees(structure, batch, scores, sentences):
    """Unbinarised best trees; a flat tree where the grammar has no derivation."""
    codec = structure.output_space().codec(None)
    trees, failures = [], 0
    for i, sentence in enumerate(sentences):
        one = structure.take(batch, [i])
        part = scores[batch.part_offsets[i]:batch.part_offsets[i + 1]]
        try:
            trees.append(unbinarize(codec.decode(one, structure.argmax(one, part))[0]))
        except ValueError:
            failures += 1
            trees.append(Tree("TOP", [Tree(tag, [word]) for word, tag in sentence]))
    return trees, failures


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    default = Path(__file__).resolve().parents[2] / "shared" / "data" / "ptb_wsj_nltk_sample"
    parser.add_argument("--data", type=Path, default=default)
    parser.add_argument("--max-len", type=int, default=15)
    parser.add_argument("--markov", type=int, default=0)
    parser.add_argument("--min-count", type=int, default=1)
    parser.add_argument("--passes", type=int, default=10)
    parser.add_argument("--C-crf", type=float, default=1.0)
    parser.add_argument("--C-svm", type=float, default=0.1)
    parser.add_argument("--hash-bits", type=int, default=20)
    add_order_option(parser, default=None)  # both models; by default each one's own
    args = parser.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    load = os.getloadavg()[0]
    train, test = split(args.data, args.max_len)
    binary_train = [binarize(tree, args.markov) for tree in train]
    grammar = Grammar.from_trees(binary_train, min_count=args.min_count)
    kept = [tree for tree in binary_train if grammar.covers(tree)]
    structure = WeightedCFGStructure(grammar, hash_bits=args.hash_bits)
    X_train = [tree.pos() for tree in kept]
    X_test = [tree.pos() for tree in test]
    known = set(grammar.terminals)
    unknown_tags = sum(any(tag not in known for _, tag in s) for s in X_test)
    test_pairs = [(s, t) for s, t in zip(X_test, test) if all(tag in known for _, tag in s)]
    X_test, test = [s for s, _ in test_pairs], [t for _, t in test_pairs]
    test_batch = structure.make_batch(X_test)
    rows = []

    # the generative baseline
    binary, lexical, roots = grammar.log_probabilities()
    start = time.perf_counter()
    scores = structure.rule_scores(test_batch, binary, lexical, roots)
    predicted, failures = predict_trees(structure, test_batch, scores, X_test)
    seconds = time.perf_counter() - start
    scores_pcfg = parseval(test, predicted)
    rows.append(["PCFG (relative frequencies)", "", "", f"{seconds:.1f}", failures,
                 *(f"{100 * scores_pcfg[k]:.2f}" for k in ("precision", "recall", "f1"))])
    print(rows[-1], flush=True)

    for name, Model, C in (("EGCRF", EGCRF, args.C_crf),
                           ("EGStructuredSVM", EGStructuredSVM, args.C_svm)):
        order = {} if args.order is None else {"order": args.order}
        model = Model(C=C, structure=structure, max_iter=args.passes, random_state=0, **order)
        start = time.perf_counter()
        model.fit(X_train, kept)
        fit_seconds = time.perf_counter() - start
        scores = model.structure_.part_scores(test_batch, model.weights_)
        predicted, failures = predict_trees(structure, test_batch, scores, X_test)
        result = parseval(test, predicted)
        rows.append([f"{name} C={C:g}", f"{model.history_['passes'][-1]:.0f}",
                     f"{model.history_['gap'][-1] / model.history_['primal'][-1]:.1e}",
                     f"{fit_seconds:.1f}", failures,
                     *(f"{100 * result[k]:.2f}" for k in ("precision", "recall", "f1"))])
        print(rows[-1], flush=True)

    # inference speed: inside-outside over the test sentences, one core
    scores = structure.rule_scores(test_batch, binary, lexical, roots)
    structure.marginals(structure.take(test_batch, [0]), scores[:test_batch.part_offsets[1]])
    start = time.perf_counter()
    structure.marginals(test_batch, scores)
    speed = len(X_test) / (time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    n_parts = np.diff(structure.make_batch(X_train).part_offsets)
    table = markdown_table(["model", "passes", "relative gap", "seconds (fit or parse)",
                            "test sentences without a parse", "precision", "recall", "F1"], rows)
    intro = " ".join([
        f"{len(train)} training trees of at most {args.max_len} words",
        f"({len(train) - len(kept)} not derivable once binary rules seen fewer than",
        f"{args.min_count} times are pruned, left out), {len(X_test)} test sentences",
        f"({unknown_tags} more left out: a tag unseen in training).",
        f" Grammar: {grammar!r}, markovisation order {args.markov};",
        f"{n_parts.sum() / 1e6:.1f}M anchored rules over the training sentences",
        f"(mean {n_parts.mean():.0f}).  Inside-outside: {speed:.1f} test sentences per",
        f"second on one core.  Peak RSS {peak:.2f} GB; load average {load:.2f} at the start."])
    print(intro)
    print(table)
    record(f"Constituency parsing on the WSJ sample{order_title(args)}", f"{intro}\n\n{table}\n\n"
           f"{__doc__.split('Run from')[0]}",
           f"cd benchmarks && python bench_cfg_ptb.py {' '.join(sys.argv[1:])}")


if __name__ == "__main__":
    main()
