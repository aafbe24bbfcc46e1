"""EGCRF against python-crfsuite's L-BFGS on CoNLL-2000 chunking (identical model).

Model: first-order chain CRF over the standard token features of
``sklearn_struct.preprocessing.conll_token_features`` (word, lower case, suffixes,
shape, POS, +-1 window), every (feature, label) pair and every label transition
(crfsuite: feature.possible_states=1, feature.possible_transitions=1; no start/end
parts, as crfsuite has none), features fitted on the training sentences.
Objectives: crfsuite minimises -LL + c2 ||w||^2, i.e. ``C = 1 / (2 c2)`` in the
scikit-learn convention used by EGCRF (1/2||w||^2 + C * -LL).

Reported: effective passes and wall seconds until the primal objective is within
0.1% of the optimum (the best value either method reaches), the final objective and
the test chunk F1 of both.  EGCRF runs with ``tol=1e-3``: it stops when its own
duality gap certifies 0.1% of the optimum, and its time is the whole fit, every
gap evaluation included (they follow a geometric schedule); it runs once on one
core and once with ``n_jobs=--n-jobs`` (the online passes on that many threads
sharing the weights, and the gap evaluations on as many threads).  CRFsuite's time
is that of its first iterate within 0.1% (it cannot know it is there); crfsuite passes count
objective/gradient evaluations (line search included), as in section 7 of
Collins et al. (2008); its seconds include its setup inside ``train()`` (reading
the items, generating the features: the wall time of ``train()`` minus its
iterations).  EGCRF runs with its default annealing of C (section 7.1.1, started
where the uniform dual start is sensible); ``--no-annealing`` starts directly at
the target C from uniform duals.  With ``--path`` also the warm-started path over
20 values of C (Table 3 of the paper).

Run from benchmarks/:  python bench_eg_conll.py [--data DIR] [--c2 0.1] [--path] [--n-jobs 2]
"""

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _record import markdown_table, record  # noqa: E402

from sklearn_struct.datasets import load_conll  # noqa: E402
from sklearn_struct.eg import EGCRF, eg_path  # noqa: E402
from sklearn_struct.metrics import chunk_f1_score  # noqa: E402
from sklearn_struct.preprocessing import SequenceDictVectorizer, conll_token_features  # noqa: E402
from sklearn_struct.structures.chain.structure import ChainStructure  # noqa: E402


def crfsuite_items(matrix, names):
    """Token feature dicts {name: value} of one CSR sequence, for crfsuite."""
    items = []
    for t in range(matrix.shape[0]):
        row = slice(matrix.indptr[t], matrix.indptr[t + 1])
        items.append({names[j]: float(v) for j, v in zip(matrix.indices[row], matrix.data[row])})
    return items


def time_to_reach(passes, seconds, values, target):
    hit = np.flatnonzero(np.asarray(values) <= target)
    return (passes[hit[0]], seconds[hit[0]]) if hit.size else (np.nan, np.nan)


def run_crfsuite(X, y, X_test, names, c2, max_iterations):
    import pycrfsuite

    trainer = pycrfsuite.Trainer(algorithm="lbfgs", verbose=False)
    for matrix, labels in zip(X, y):
        trainer.append(pycrfsuite.ItemSequence(crfsuite_items(matrix, names)), list(labels))
    trainer.set_params({"c1": 0.0, "c2": c2, "max_iterations": max_iterations,
                        "feature.possible_states": True, "feature.possible_transitions": True,
                        "epsilon": 1e-7, "delta": 1e-7, "period": 10})
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        trainer.train(str(Path(tmp) / "model.crfsuite"))
        seconds = time.perf_counter() - start
        tagger = pycrfsuite.Tagger()
        tagger.open(str(Path(tmp) / "model.crfsuite"))
        predicted = [tagger.tag(pycrfsuite.ItemSequence(crfsuite_items(m, names))) for m in X_test]
    log = trainer.logparser.iterations
    losses = np.array([it["loss"] for it in log])
    # wall time of each iterate: crfsuite's setup inside train() (reading the items,
    # generating the features) before the first iteration, then the iterations
    iterations = np.cumsum([it["time"] for it in log])
    elapsed = seconds - iterations[-1] + iterations
    evaluations = np.cumsum([it.get("linesearch_trials", 1) for it in log])
    return losses, evaluations, elapsed, seconds, predicted


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    default = Path(__file__).resolve().parents[2] / "shared" / "data" / "conll2000_chunking"
    parser.add_argument("--data", type=Path, default=default)
    parser.add_argument("--c2", type=float, default=0.1)
    parser.add_argument("--max-passes", type=float, default=200)
    parser.add_argument("--no-annealing", dest="annealing", action="store_false")
    parser.add_argument("--n-jobs", type=int, default=2,
                        help="EGCRF's n_jobs in a second EG run: threads of the online "
                        "passes and chunks of the gap evaluation (1: no second run)")
    parser.add_argument("--crfsuite-iterations", type=int, default=1000,
                        help="crfsuite's max_iterations (it reaches 0.1%% after ~400)")
    parser.add_argument("--tol", type=float, default=1e-3,
                        help="EG's relative duality gap (1e-3 certifies 0.1%% of the optimum)")
    parser.add_argument("--n-train", type=int, default=None, help="first sentences only")
    parser.add_argument("--path", action="store_true", help="also run the 20-C warm-started path")
    parser.add_argument("--path-only", action="store_true", help="run only the path")
    args = parser.parse_args()
    C = 1.0 / (2.0 * args.c2)

    train, test = load_conll(args.data / "train.txt.gz"), load_conll(args.data / "test.txt.gz")
    if args.n_train is not None:
        train = {key: train[key][:args.n_train] for key in ("word", "pos", "tags")}
        train = type("Subset", (), train)
    features = [conll_token_features(w, p) for w, p in zip(train.word, train.pos)]
    vectorizer = SequenceDictVectorizer().fit(features)
    X = vectorizer.transform(features)
    X_test = vectorizer.transform([conll_token_features(w, p) for w, p in zip(test.word, test.pos)])
    names = vectorizer.get_feature_names_out().tolist()
    print(f"{len(X)} train sentences, {len(X_test)} test, {len(names)} features", flush=True)

    EGCRF(max_iter=1, tol=0, structure=ChainStructure(start_end=False)).fit(X[:5], train.tags[:5])
    if not args.path_only:
        compare_with_crfsuite(args, C, X, train, X_test, test, names)
    if args.path or args.path_only:
        run_path(args, C, X, train)


def run_eg(args, C, X, train, X_test, test, n_jobs):
    load = os.getloadavg()[0]
    start = time.perf_counter()
    eg = EGCRF(C=C, structure=ChainStructure(start_end=False), tol=args.tol,
               max_iter=args.max_passes, annealing=args.annealing, n_jobs=n_jobs,
               random_state=0, verbose=1).fit(X, train.tags)
    seconds = time.perf_counter() - start
    return eg, seconds, load, chunk_f1_score(test.tags, eg.predict(X_test))


def compare_with_crfsuite(args, C, X, train, X_test, test, names):
    fits = {n_jobs: run_eg(args, C, X, train, X_test, test, n_jobs)
            for n_jobs in ((None,) if args.n_jobs in (None, 1) else (None, args.n_jobs))}
    load_crfsuite = os.getloadavg()[0]
    losses, evaluations, elapsed, cs_seconds, cs_pred = run_crfsuite(
        X, train.tags, X_test, names, args.c2, args.crfsuite_iterations)
    cs_f1 = chunk_f1_score(test.tags, cs_pred)
    optimum = min([losses.min()] + [  # EG's primal at the target C (not while annealing)
        eg.history_["primal"][eg.history_["C"] == C].min() / C for eg, *_ in fits.values()])
    target = optimum * 1.001
    cs_passes, cs_time = time_to_reach(evaluations, elapsed, losses, target)
    rows = []
    for n_jobs, (eg, seconds, load, f1) in fits.items():
        h = eg.history_
        values = np.where(h["C"] == C, h["primal"] / C, np.inf)  # in crfsuite's scale
        first = time_to_reach(h["passes"], np.cumsum(h["seconds"] + h["eval_seconds"]),
                              values, target)
        name = f"EGCRF ({'1 core' if n_jobs is None else f'n_jobs={n_jobs}'})"
        certified = eg.duality_gap_ <= args.tol * eg.primal_objective_
        rows.append([
            name, f"{h['passes'][-1]:.0f}" + ("" if certified else " (not certified)"),
            f"{seconds:.1f}", f"{seconds / cs_time:.2f}", f"{first[0]:.0f} / {first[1]:.1f}",
            f"{len(h['passes'])} ({h['eval_seconds'].sum():.1f} s)", f"{values[-1]:.2f}",
            f"{f1:.4f}", f"{load:.2f}"])
    rows.append(["python-crfsuite L-BFGS", f"{cs_passes:.0f}", f"{cs_time:.1f}", "1",
                 f"{cs_passes:.0f} / {cs_time:.1f}", "-", f"{losses[-1]:.2f}", f"{cs_f1:.4f}",
                 f"{load_crfsuite:.2f}"])
    header = ["method", "passes to 0.1% (EG: certified)", "seconds to 0.1% (EG: certified)",
              "ratio to CRFsuite", "first primal within 0.1%: passes / seconds",
              "gap evaluations (seconds)", "final objective", "test chunk F1", "load"]
    body = (
        f"CoNLL-2000, {len(X)} training sentences, {len(names)} input features x 22 labels "
        f"+ transitions; c2={args.c2} (C={C:g}); optimum (best reached) {optimum:.2f}. "
        f"All run one after the other in this process (CRFsuite: {cs_seconds:.1f} s for "
        f"{evaluations[-1]:.0f} evaluations to its own stop); load = 1-minute load average "
        f"when each started (2 cores).\n\n"
        + markdown_table(header, rows)
    )
    print(body, flush=True)
    record("EGCRF vs CRFsuite on CoNLL-2000", body, _command())


def _command():
    return " ".join(["cd benchmarks && python bench_eg_conll.py"] + sys.argv[1:])


def run_path(args, C, X, train):
    """Table 3: 20 values of C from C * 0.7**19 up to C, each warm-started."""
    Cs = C * 0.7 ** np.arange(19, -1, -1)
    path = eg_path(EGCRF(structure=ChainStructure(start_end=False), tol=1e-3, max_iter=200,
                         n_jobs=args.n_jobs, random_state=0), X, train.tags, Cs)
    rows = [[f"{c:.4g}", f"{p:.2f}", f"{t:.2f}", f"{s:.1f}", bool(ok)]
            for c, p, t, s, ok in zip(path["C"], path["passes"], path["total_passes"],
                                      path["seconds"], path["converged"])]
    body = ("Warm-started path (section 7.1.2, relative gap 1e-3 per C), CoNLL-2000 train, "
            "C increasing (the paper's C decreasing).\n\n"
            + markdown_table(["C", "passes", "total passes", "seconds", "converged"], rows))
    print(body, flush=True)
    record("EGCRF warm-started C path on CoNLL-2000", body, _command())


if __name__ == "__main__":
    main()
