"""Constrained decoding on CoNLL-2003 NER: entity F1 and invalid tag sequences.

Model: first-order chain CRF (EGCRF) over the standard token features of
``sklearn_struct.preprocessing.conll_token_features`` (+-1 window), with and without
start/end parts (CRFsuite has none), trained on the first ``--n-train`` sentences of
eng.train (each value given; 0 is the whole file), tags converted to ``--scheme``
(IOB2 by default; the files are IOB1).  Three models per setting:

* unconstrained: ``ChainStructure()``;
* constrained decoding: ``ChainStructure(allowed_transitions=scheme)``, trained
  without the constraint (the default ``constrain_training=False``), so its weights
  are those of the unconstrained model (checked) and only Viterbi and the marginals
  change;
* constrained training and decoding: ``constrain_training=True`` (a CRF over the
  valid tag sequences only).

Reported on eng.testa and eng.testb: conlleval entity F1 (``chunk_f1_score``), the
number of sentences whose predicted tags break the scheme (an ``I-X`` after ``O`` or
after another type, for IOB2), fit and predict seconds.

Run from benchmarks/:  python bench_constrained_ner.py [--n-train 1000 0] [--C 5] [--max-iter 100]
"""

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _record import add_order_option, markdown_table, order_title, record  # noqa: E402

from sklearn_struct import EGCRF  # noqa: E402
from sklearn_struct.datasets import chunk_constraints, load_conll  # noqa: E402
from sklearn_struct.metrics import chunk_f1_score  # noqa: E402
from sklearn_struct.preprocessing import SequenceDictVectorizer, conll_token_features  # noqa: E402
from sklearn_struct.structures import ChainStructure  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "conll2003_ner_en"
SCHEMES = {"iob2": "IOB2", "iob1": "IOB1"}


def features(data):
    return [conll_token_features(words, pos) for words, pos in zip(data.word, data.pos)]


def n_invalid(tag_sequences, labels, scheme):
    """Sentences whose tags break the scheme's transitions, first or last tags."""
    masks = chunk_constraints(labels, scheme)
    index = {label: k for k, label in enumerate(labels)}
    count = 0
    for tags in tag_sequences:
        y = np.array([index[tag] for tag in tags])
        count += not (masks["allowed_start"][y[0]] and masks["allowed_end"][y[-1]]
                      and masks["allowed_transitions"][y[:-1], y[1:]].all())
    return count


def run_setting(X_train, train_tags, tests, labels, scheme, start_end, args):
    """Rows of the three models for one training set and chain (``labels``: every tag)."""
    structures = {
        "unconstrained": ChainStructure(start_end=start_end),
        "constrained decoding": ChainStructure(start_end=start_end, allowed_transitions=scheme),
        "constrained training + decoding": ChainStructure(
            start_end=start_end, allowed_transitions=scheme, constrain_training=True),
    }
    rows, weights = [], {}
    for name, structure in structures.items():
        model = EGCRF(C=args.C, structure=structure, max_iter=args.max_iter, tol=args.tol,
                      order=args.order, random_state=0, n_jobs=args.n_jobs)
        load = os.getloadavg()[0]
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # the gap is reported
            model.fit(X_train, train_tags)
        fit_seconds = time.perf_counter() - start
        weights[name] = model.weights_
        gap = model.duality_gap_ / abs(model.primal_objective_)
        row = [len(train_tags), "yes" if start_end else "no", name,
               f"{model.n_iter_} ({gap:.0e})", f"{fit_seconds:.0f}", f"{load:.1f}"]
        for X_test, y_test in tests.values():
            start = time.perf_counter()
            predicted = model.predict(X_test)
            predict_seconds = time.perf_counter() - start
            row += [f"{chunk_f1_score(y_test, predicted):.4f}",
                    f"{n_invalid(predicted, labels, scheme)}", f"{predict_seconds:.1f}"]
        rows.append(row)
        print(" | ".join(map(str, row)), flush=True)
    # training without the constraint is training the unconstrained model
    assert np.array_equal(weights["unconstrained"], weights["constrained decoding"])
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--n-train", type=int, nargs="+", default=[1000, 0],
                        help="first sentences of eng.train to train on (0: all)")
    parser.add_argument("--scheme", choices=sorted(SCHEMES), default="iob2")
    parser.add_argument("--C", type=float, default=5.0)
    parser.add_argument("--max-iter", type=int, default=100)
    parser.add_argument("--tol", type=float, default=1e-4)
    parser.add_argument("--n-jobs", type=int, default=None)
    add_order_option(parser)
    args = parser.parse_args()
    scheme = SCHEMES[args.scheme]

    sets = {name: load_conll(args.data / f"eng.{name}.gz", tag_scheme=args.scheme)
            for name in ("train", "testa", "testb")}
    train_features = features(sets["train"])
    # every tag of the three files: a small training set may miss some (B-X in IOB1)
    all_labels = sorted(set(np.concatenate([tags for data in sets.values()
                                            for tags in data.tags]).tolist()))
    rows, sizes = [], []
    for n_train in args.n_train:
        n_train = n_train or len(sets["train"].tags)
        train_tags = sets["train"].tags[:n_train]
        vectorizer = SequenceDictVectorizer()
        X_train = vectorizer.fit_transform(train_features[:n_train])
        tests = {name: (vectorizer.transform(features(sets[name])), sets[name].tags)
                 for name in ("testa", "testb")}
        labels = sorted(set(np.concatenate(train_tags).tolist()))
        sizes.append(f"{n_train} sentences: {sum(map(len, train_tags))} tokens, "
                     f"{X_train[0].shape[1]} input features, {len(labels)} labels")
        for start_end in (True, False):
            rows += run_setting(X_train, train_tags, tests, all_labels, scheme, start_end, args)

    gold_invalid = {name: n_invalid(sets[name].tags, all_labels, scheme)
                    for name in ("testa", "testb")}
    header = ["train sentences", "start/end parts", "model", "passes (rel. gap)", "fit s",
              "load avg", "testa F1", "testa invalid", "testa predict s", "testb F1",
              "testb invalid", "testb predict s"]
    body = (
        f"CoNLL-2003 English NER, tags converted to {scheme}; EGCRF(C={args.C:g}, "
        f"tol={args.tol:g}, max_iter={args.max_iter}), trained on the first sentences of "
        f"eng.train ({'; '.join(sizes)}; the whole file has {len(sets['train'].tags)}), "
        f"tested on all of eng.testa ({len(sets['testa'].tags)} sentences) and eng.testb "
        f"({len(sets['testb'].tags)}).  Entity F1 is conlleval's (`chunk_f1_score`); "
        f"'invalid' counts the test sentences whose predicted tags break {scheme} (gold: "
        f"testa {gold_invalid['testa']}, testb {gold_invalid['testb']}).  Constrained "
        "decoding uses the unconstrained model's weights (checked equal); 'load avg' is "
        "the 1-minute load average when the fit started (2 cores shared with other jobs, "
        "so seconds are only indicative)."
        "\n\n" + markdown_table(header, rows))
    command = "cd benchmarks && python bench_constrained_ner.py " + " ".join(sys.argv[1:])
    record(f"Constrained decoding on CoNLL-2003 NER ({scheme}){order_title(args)}", body,
           command.strip())
    print(body)


if __name__ == "__main__":
    main()
