"""EGCRF against python-crfsuite on the first CoNLL-2003 NER sentences (identical model).

The first ``--n-train`` sentences (default 1,500) of CoNLL-2003 English ``eng.train``,
seven dict features per token (word, lower case, 3-letter prefix and suffix,
title case, upper case, POS), every (feature, label) pair and every label
transition, no start/end parts (crfsuite: ``feature.possible_states=1``,
``feature.possible_transitions=1``); ``C=1`` (crfsuite's ``c2 = 1 / (2 C)``).

As in ``bench_eg_conll.py``: EGCRF runs with ``tol=1e-3`` (its own duality gap
certifies 0.1% of the optimum; its time is the whole fit, every gap evaluation
included); CRFsuite's time is that of its first iterate within 0.1% of the
optimum (the best value either reaches), after which it would still need to
find out that it has converged; it includes crfsuite's setup inside ``train()``.

Run from benchmarks/:  python bench_eg_ner.py [--n-train 1500] [--C 1]
"""

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _record import markdown_table, record  # noqa: E402
from bench_eg_conll import run_crfsuite, time_to_reach  # noqa: E402

from sklearn_struct.datasets import load_conll  # noqa: E402
from sklearn_struct.eg import EGCRF  # noqa: E402
from sklearn_struct.preprocessing import SequenceDictVectorizer  # noqa: E402
from sklearn_struct.structures.chain.structure import ChainStructure  # noqa: E402


def token_features(words, pos):
    return [{"word": w, "lower": w.lower(), "prefix3": w[:3], "suffix3": w[-3:],
             "title": float(w.istitle()), "upper": float(w.isupper()), "pos": p}
            for w, p in zip(words, pos)]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    default = Path(__file__).resolve().parents[2] / "shared" / "data" / "conll2003_ner_en"
    parser.add_argument("--data", type=Path, default=default)
    parser.add_argument("--n-train", type=int, default=1500)
    parser.add_argument("--C", type=float, default=1.0)
    args = parser.parse_args()
    data = load_conll(args.data / "eng.train.gz")
    words, pos, tags = (data.word[:args.n_train], data.pos[:args.n_train],
                        data.tags[:args.n_train])
    vectorizer = SequenceDictVectorizer().fit([token_features(w, p) for w, p in zip(words, pos)])
    X = vectorizer.transform([token_features(w, p) for w, p in zip(words, pos)])
    names = vectorizer.get_feature_names_out().tolist()
    labels = sorted({t for sentence in tags for t in sentence})
    print(f"{len(X)} sentences, {sum(len(t) for t in tags)} tokens, {len(names)} features, "
          f"{len(labels)} labels", flush=True)
    EGCRF(max_iter=1, tol=0, structure=ChainStructure(start_end=False)).fit(X[:5], tags[:5])

    load_eg = os.getloadavg()[0]
    start = time.perf_counter()
    eg = EGCRF(C=args.C, structure=ChainStructure(start_end=False), tol=1e-3, max_iter=500,
               random_state=0).fit(X, tags)
    eg_seconds = time.perf_counter() - start
    h = eg.history_
    load_crfsuite = os.getloadavg()[0]
    losses, evaluations, elapsed, cs_seconds, _ = run_crfsuite(
        X, tags, X[:1], names, 1.0 / (2.0 * args.C), 1000)
    values = np.where(h["C"] == args.C, h["primal"] / args.C, np.inf)  # crfsuite's scale
    optimum = min(losses.min(), values.min())
    target = optimum * 1.001
    cs_passes, cs_time = time_to_reach(evaluations, elapsed, losses, target)
    first = time_to_reach(h["passes"], np.cumsum(h["seconds"] + h["eval_seconds"]), values,
                          target)
    rows = [
        ["EGCRF (1 core, certified)", f"{h['passes'][-1]:.0f}", f"{eg_seconds:.2f}",
         f"{eg_seconds / cs_time:.2f}", f"{first[0]:.0f} / {first[1]:.2f}",
         f"{len(h['passes'])} ({h['eval_seconds'].sum():.2f} s)", f"{values[-1]:.3f}",
         f"{load_eg:.2f}"],
        ["python-crfsuite L-BFGS", f"{cs_passes:.0f}", f"{cs_time:.2f}", "1",
         f"{cs_passes:.0f} / {cs_time:.2f}", "-", f"{losses[-1]:.3f}", f"{load_crfsuite:.2f}"],
    ]
    body = (
        f"CoNLL-2003 English NER, first {len(X)} training sentences, 7 dict features per "
        f"token ({len(names)} input features) x {len(labels)} labels + transitions, no "
        f"start/end; C={args.C:g} (c2={1.0 / (2.0 * args.C):g}); optimum (best reached) "
        f"{optimum:.3f}. Both run one after the other in this process (CRFsuite: "
        f"{cs_seconds:.2f} s for {evaluations[-1]:.0f} evaluations to its own stop); load = "
        f"1-minute load average when each started (2 cores).\n\n"
        + markdown_table(["method", "passes to 0.1% (EG: certified)",
                          "seconds to 0.1% (EG: certified)", "ratio to CRFsuite",
                          "first primal within 0.1%: passes / seconds",
                          "gap evaluations (seconds)", "final objective", "load"], rows)
    )
    print(body, flush=True)
    record("EGCRF vs CRFsuite on CoNLL-2003 NER (first sentences)", body,
           "cd benchmarks && python bench_eg_ner.py " + " ".join(sys.argv[1:]))


if __name__ == "__main__":
    main()
