"""Model sizes on disk: EGCRF (full, pruned) against CRFsuite on CoNLL-2000, same features.

Features: ``conll_token_features`` of the first ``--n-train`` training sentences, as in
bench_eg_conll.py; the same CSR rows are given to python-crfsuite (the engine of
sklearn-crfsuite) as attribute dicts.  C = 1 / (2 c2).

Rows:

* EGCRF (no start/end parts, as CRFsuite) trained to a relative duality gap of 1e-4 and
  the same model after ``prune_weights(threshold)``.  Sizes: ``pickle.dumps`` of the
  estimator; the same before this package stored each weight once (``estimator.__dict__``
  pickled as is: ``coef_`` and ``transition_`` copied besides ``weights_``); the fitted
  vectorizer + estimator pipeline with ``joblib.dump(compress=3)`` (what ``sklearn-struct
  learn`` writes; the vectorizer holds the feature names, as a CRFsuite file does).
* CRFsuite L-BFGS model files: ``feature.possible_states=1`` (every feature-label pair:
  the model EGCRF fits), CRFsuite's default (only feature-label pairs seen in training,
  sklearn-crfsuite's ``all_possible_states=False``), and with an L1 term (``c1``).

Run from benchmarks/:  python bench_model_size_conll.py [--n-train 1000] [--c2 0.1]
"""

import argparse
import io
import os
import pickle
import sys
import tempfile
import time
from pathlib import Path

import joblib
import numpy as np
from sklearn.pipeline import Pipeline

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _record import add_order_option, markdown_table, order_title, record  # noqa: E402
from bench_eg_conll import crfsuite_items  # noqa: E402

from sklearn_struct.datasets import load_conll  # noqa: E402
from sklearn_struct.eg import EGCRF  # noqa: E402
from sklearn_struct.metrics import chunk_f1_score  # noqa: E402
from sklearn_struct.preprocessing import SequenceDictVectorizer, conll_token_features  # noqa: E402
from sklearn_struct.structures.chain.structure import ChainStructure  # noqa: E402


def joblib_bytes(obj):
    buffer = io.BytesIO()
    joblib.dump(obj, buffer, compress=3)
    return len(buffer.getvalue())


def crfsuite_model(X, y, X_test, names, params):
    """Train python-crfsuite; (model file bytes, test predictions, non-zero weights, seconds)."""
    import pycrfsuite

    trainer = pycrfsuite.Trainer(algorithm="lbfgs", verbose=False)
    for matrix, labels in zip(X, y):
        trainer.append(pycrfsuite.ItemSequence(crfsuite_items(matrix, names)), list(labels))
    trainer.set_params({"max_iterations": 1000, "epsilon": 1e-7, "delta": 1e-7, "period": 10,
                        **params})
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.crfsuite"
        start = time.perf_counter()
        trainer.train(str(path))
        seconds = time.perf_counter() - start
        tagger = pycrfsuite.Tagger()
        tagger.open(str(path))
        info = tagger.info()
        n_nonzero = (sum(w != 0 for w in info.state_features.values())
                     + sum(w != 0 for w in info.transitions.values()))
        predicted = [tagger.tag(pycrfsuite.ItemSequence(crfsuite_items(m, names)))
                     for m in X_test]
        size = path.stat().st_size
    return size, predicted, n_nonzero, seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    default = Path(__file__).resolve().parents[2] / "shared" / "data" / "conll2000_chunking"
    parser.add_argument("--data", type=Path, default=default)
    parser.add_argument("--n-train", type=int, default=1000)
    parser.add_argument("--c2", type=float, default=0.1)
    parser.add_argument("--c1", type=float, default=0.1, help="L1 weight of the sparse CRFsuite")
    parser.add_argument("--thresholds", type=float, nargs="+", default=[0.01, 0.03, 0.1])
    add_order_option(parser)
    args = parser.parse_args()
    C = 1.0 / (2.0 * args.c2)

    train, test = load_conll(args.data / "train.txt.gz"), load_conll(args.data / "test.txt.gz")
    words, tags, y = train.word[:args.n_train], train.pos[:args.n_train], train.tags[:args.n_train]
    features = [conll_token_features(w, p) for w, p in zip(words, tags)]
    vectorizer = SequenceDictVectorizer().fit(features)
    X = vectorizer.transform(features)
    X_test = vectorizer.transform([conll_token_features(w, p)
                                   for w, p in zip(test.word, test.pos)])
    names = vectorizer.get_feature_names_out().tolist()
    load = os.getloadavg()[0]

    start = time.perf_counter()
    crf = EGCRF(C=C, structure=ChainStructure(start_end=False), max_iter=300,
                order=args.order, random_state=0).fit(X, y)
    seconds = time.perf_counter() - start
    rows = []

    def eg_row(label, seconds_text):
        f1 = chunk_f1_score(test.tags, crf.predict(X_test))
        pipeline = Pipeline([("vectorizer", vectorizer), ("estimator", crf)])
        rows.append([label, f"{np.count_nonzero(crf.weights_):,}",
                     f"{len(pickle.dumps(crf)):,}", f"{joblib_bytes(pipeline):,}",
                     f"{100 * f1:.2f}", seconds_text])

    old_pickle = len(pickle.dumps(dict(crf.__dict__)))
    eg_row(f"EGCRF C={C:g} ({crf.n_iter_} passes)", f"{seconds:.1f}")
    for threshold in sorted(args.thresholds):
        crf.prune_weights(threshold)
        eg_row(f"EGCRF, prune_weights({threshold:g})", "")

    for label, params in [
        (f"CRFsuite L2 c2={args.c2:g}, all feature-label pairs",
         {"c1": 0.0, "c2": args.c2, "feature.possible_states": True,
          "feature.possible_transitions": True}),
        (f"CRFsuite L2 c2={args.c2:g}, default (pairs seen in training)",
         {"c1": 0.0, "c2": args.c2}),
        (f"CRFsuite L1+L2 c1={args.c1:g} c2={args.c2:g}, default",
         {"c1": args.c1, "c2": args.c2}),
    ]:
        size, predicted, n_nonzero, cs_seconds = crfsuite_model(X, y, X_test, names, params)
        rows.append([label, f"{n_nonzero:,}", f"{size:,} (model file)", "",
                     f"{100 * chunk_f1_score(test.tags, predicted):.2f}", f"{cs_seconds:.1f}"])

    header = ["model", "non-zero weights", "pickle bytes", "joblib bytes (compress=3, with "
              "vectorizer)", "test chunk F1", "training seconds"]
    body = (
        f"CoNLL-2000, first {len(X)} training sentences, {len(names):,} input features "
        f"(conll_token_features) x {len(crf.classes_)} labels + transitions = "
        f"{crf.weights_.size:,} weights; test set {len(X_test)} sentences; c2={args.c2:g} "
        f"(C={C:g}).  Before weights were stored once, the EGCRF pickle was {old_pickle:,} "
        f"bytes (coef_ and transition_ copied besides weights_).  Load average at the start: "
        f"{load:.2f} (2 cores).\n\n" + markdown_table(header, rows)
    )
    print(body, flush=True)
    record(f"Model size on disk: EGCRF against CRFsuite on CoNLL-2000{order_title(args)}", body,
           " ".join(["cd benchmarks && python bench_model_size_conll.py"] + sys.argv[1:]))


if __name__ == "__main__":
    main()
