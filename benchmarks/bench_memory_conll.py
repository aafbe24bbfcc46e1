"""Peak memory of training on CoNLL-2000: EGCRF against python-crfsuite, same model.

Each trainer runs in a fresh child process (so that one's peak does not hide
the other's): the child loads and vectorises the training data (the features of
``bench_eg_conll.py``), notes its resident set size, trains, and reports its
peak resident set size.  Reported beside them: the bytes of the training
set's sparse feature matrices (CSR data, indices and row pointers) and of the
model's weights.  EGCRF runs online EG (its default) for ``--passes`` passes at
C = 5 (crfsuite's c2 = 0.1); crfsuite runs L-BFGS for ``--iterations``
iterations.  Memory, not time, is measured, so both stop early.

Run from benchmarks/:  python bench_memory_conll.py [--passes 3] [--iterations 30]
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _record import markdown_table, record  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "conll2000_chunking"


def peak_gb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def current_gb():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**30


def child(which, data, passes, iterations):
    """Train one way and print a JSON line of memory figures."""
    from sklearn.exceptions import ConvergenceWarning

    from bench_eg_conll import crfsuite_items
    from sklearn_struct.datasets import load_conll
    from sklearn_struct.eg import EGCRF
    from sklearn_struct.preprocessing import SequenceDictVectorizer, conll_token_features
    from sklearn_struct.structures.chain.structure import ChainStructure

    train = load_conll(data / "train.txt.gz")
    features = [conll_token_features(w, p) for w, p in zip(train.word, train.pos)]
    vectorizer = SequenceDictVectorizer().fit(features)
    X = vectorizer.transform(features)
    del features
    matrix_bytes = sum(m.data.nbytes + m.indices.nbytes + m.indptr.nbytes for m in X)
    if which == "egcrf":
        # compile on a few sentences first, so that the peak is the fit's, not numba's
        small = EGCRF(max_iter=1, tol=0, structure=ChainStructure(start_end=False))
        small.fit(X[:5], train.tags[:5])
    before = current_gb()
    start = time.perf_counter()
    if which == "egcrf":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = EGCRF(C=5.0, structure=ChainStructure(start_end=False), max_iter=passes,
                          tol=0, annealing=False, random_state=0).fit(X, train.tags)
        model_bytes = model.weights_.nbytes
    else:
        import pycrfsuite

        names = vectorizer.get_feature_names_out().tolist()
        trainer = pycrfsuite.Trainer(algorithm="lbfgs", verbose=False)
        for matrix, labels in zip(X, train.tags):
            trainer.append(pycrfsuite.ItemSequence(crfsuite_items(matrix, names)), list(labels))
        with tempfile.TemporaryDirectory() as tmp:
            trainer.set_params({"c1": 0.0, "c2": 0.1, "max_iterations": iterations,
                                "feature.possible_states": True,
                                "feature.possible_transitions": True})
            trainer.train(str(Path(tmp) / "model.crfsuite"))
            model_bytes = (Path(tmp) / "model.crfsuite").stat().st_size
    print(json.dumps({"matrix_bytes": matrix_bytes, "before_gb": before, "peak_gb": peak_gb(),
                      "model_bytes": model_bytes, "seconds": time.perf_counter() - start,
                      "sentences": len(X), "features": len(vectorizer.get_feature_names_out())}))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--child", choices=["egcrf", "crfsuite"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.data, args.passes, args.iterations)
        return
    load = os.getloadavg()[0]
    results = {}
    for which in ("egcrf", "crfsuite"):
        run = subprocess.run(
            [sys.executable, __file__, "--child", which, "--data", str(args.data),
             "--passes", str(args.passes), "--iterations", str(args.iterations)],
            capture_output=True, text=True, check=True, cwd=Path(__file__).resolve().parent)
        results[which] = json.loads(run.stdout.strip().splitlines()[-1])
        print(which, results[which], flush=True)
    rows = []
    for which, label in (("egcrf", f"EGCRF, online EG, {args.passes} passes"),
                         ("crfsuite", f"python-crfsuite L-BFGS, {args.iterations} iterations")):
        r = results[which]
        rows.append([label, f"{r['matrix_bytes'] / 2**20:.1f}", f"{r['before_gb']:.2f}",
                     f"{r['peak_gb']:.2f}", f"{r['peak_gb'] - r['before_gb']:.2f}",
                     f"{r['model_bytes'] / 2**20:.1f}", f"{r['seconds']:.1f}"])
    r = results["egcrf"]
    body = (
        f"CoNLL-2000 train, {r['sentences']} sentences, {r['features']} input features x 22 "
        f"labels + transitions; load average {load:.2f} at the start.  Each trainer in its own "
        "child process; 'before' is the resident set after loading and vectorising the data "
        "(and, for EGCRF, compiling on 5 sentences), 'peak' the process's peak resident set. "
        "crfsuite keeps its own copy of the data (feature strings and values), built after "
        "'before'.\n\n"
        + markdown_table(["trainer", "sparse feature matrices MB", "RSS before training GB",
                          "peak RSS GB", "peak - before GB", "model MB", "training s"], rows)
    )
    print(body)
    record("Peak memory of training on CoNLL-2000", body,
           " ".join(["cd benchmarks && python bench_memory_conll.py"] + sys.argv[1:]))


if __name__ == "__main__":
    main()
