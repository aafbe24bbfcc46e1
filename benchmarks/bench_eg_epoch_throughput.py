"""Online EG throughput of the generic (protocol) epoch against an earlier commit.

The structure protocol replaced the chain/multiclass-specific numba EG epoch by
one epoch compiled for any structure's kernel operations.  This script checks
that chains and multiclass problems did not slow down: it checks out a
baseline commit into a temporary folder (``git worktree``) and runs the same
fits with both versions, alternating between them in fresh processes (so that
the machine's load affects both alike), and reports seconds per effective pass
of the online epoch alone (``history_["seconds"]``, without the per-pass
objective evaluation), steady state (after a warm-up fit that compiles), and
the first fit of a fresh process separately.

Problems: CoNLL-2000 chunking (sparse chain, first ``--n-sentences`` training
sentences; EGCRF and EGStructuredSVM) and MNIST (dense multiclass, first
``--n-images`` training images; EGCRF).  Both use ``annealing=False``,
``tol=0`` and the same seed, so both versions do the same visits.

Run from benchmarks/:  python bench_eg_epoch_throughput.py [--baseline REV] [--candidate REV]
"""

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DATA = REPO.parent / "shared" / "data"
PROBLEMS = ("chain-log", "chain-hinge", "multiclass-log")


def load_problem(name, args):
    if name.startswith("chain"):
        from sklearn_struct.datasets import load_conll
        from sklearn_struct.preprocessing import SequenceDictVectorizer, conll_token_features

        train = load_conll(DATA / "conll2000_chunking" / "train.txt.gz")
        n = args["n_sentences"]
        features = [conll_token_features(w, p) for w, p in zip(train.word[:n], train.pos[:n])]
        return SequenceDictVectorizer().fit_transform(features), train.tags[:n]
    from sklearn_struct.datasets import load_mnist_idx

    folder = DATA / "mnist_partial"
    data = load_mnist_idx(folder / "train-images-idx3-ubyte.gz",
                          folder / "train-labels-idx1-ubyte.gz")
    n = args["n_images"]
    return data.data[:n].astype(np.float64) / 255.0, data.target[:n].astype(np.int64)


def worker(args):
    """Fit every problem with the installed/imported version; print JSON timings."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    from sklearn_struct.eg import EGCRF, EGStructuredSVM
    from sklearn_struct.structures import ChainStructure, MulticlassStructure

    warnings.simplefilter("ignore", ConvergenceWarning)
    out = {}
    for name in args["problems"]:
        X, y = load_problem(name, args)
        chain = name.startswith("chain")
        Estimator = EGStructuredSVM if name.endswith("hinge") else EGCRF
        structure = ChainStructure(start_end=False) if chain else MulticlassStructure()
        params = dict(C=args["C"], structure=structure, tol=0, annealing=False, random_state=0)
        if "smoothing" in Estimator().get_params():  # plain EG on the hinge, in every version
            params["smoothing"] = False
        start = time.perf_counter()
        Estimator(max_iter=1, **params).fit(X[:3], y[:3])
        first = time.perf_counter() - start
        per_pass = []
        for _ in range(args["repeat"]):
            model = Estimator(max_iter=args["passes"], **params).fit(X, y)
            per_pass.append(float(np.sum(model.history_["seconds"]) / model.history_["passes"][-1]))
        out[name] = {"first_fit": first, "per_pass": per_pass,
                     "primal": float(model.history_["primal"][-1])}
    print(json.dumps(out))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--baseline", default="7cbc097",
                        help="commit with the structure-specific epoch (default: the last one)")
    parser.add_argument("--candidate", default=None,
                        help="commit to compare (default: the working tree)")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--passes", type=float, default=3)
    parser.add_argument("--n-sentences", type=int, default=2000)
    parser.add_argument("--n-images", type=int, default=10000)
    parser.add_argument("--C", type=float, default=1.0)
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    cli = parser.parse_args()
    if cli.worker is not None:
        return worker(json.loads(cli.worker))

    sys.path.insert(0, str(HERE))
    from _ab import checkout, least_and_median, remove, run_worker
    from _record import markdown_table, record

    args = dict(problems=PROBLEMS, repeat=cli.repeat, passes=cli.passes, C=cli.C,
                n_sentences=cli.n_sentences, n_images=cli.n_images)
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        base_dir, base_rev = Path(tmp) / "baseline", None
        cand_dir = REPO
        try:
            base_rev = checkout(cli.baseline, base_dir)
            cand_rev = "working tree"
            if cli.candidate is not None:
                cand_dir = Path(tmp) / "candidate"
                cand_rev = checkout(cli.candidate, cand_dir)
            results = {"baseline": [], "candidate": []}
            for round_ in range(cli.rounds):
                for side, source in (("baseline", base_dir), ("candidate", cand_dir)):
                    results[side].append(run_worker(__file__, source, args))
                    print(f"round {round_ + 1} {side}: {results[side][-1]}", flush=True)
        finally:
            for folder in (base_dir, Path(tmp) / "candidate"):
                remove(folder)

    rows = []
    for name in PROBLEMS:
        per, median = least_and_median(results, lambda run: run[name]["per_pass"])
        first = {side: np.median([run[name]["first_fit"] for run in runs[1:]])
                 for side, runs in results.items()}
        cold = {side: runs[0][name]["first_fit"] for side, runs in results.items()}
        primal = {side: runs[-1][name]["primal"] for side, runs in results.items()}
        difference = abs(primal["candidate"] - primal["baseline"]) / abs(primal["baseline"])
        rows.append([name, f"{per['baseline']:.3f}", f"{per['candidate']:.3f}",
                     f"{per['candidate'] / per['baseline']:.3f}",
                     f"{median['candidate'] / median['baseline']:.3f}",
                     f"{cold['baseline']:.2f}", f"{cold['candidate']:.2f}",
                     f"{first['baseline']:.2f}", f"{first['candidate']:.2f}",
                     f"{difference:.1e}"])
    header = ["problem", f"s/pass {base_rev}", f"s/pass {cand_rev}", "ratio (least)",
              "ratio (median)",
              f"compile s {base_rev}", f"compile s {cand_rev}",
              f"first fit s {base_rev}", f"first fit s {cand_rev}", "rel. primal diff"]
    table = markdown_table(header, rows)
    print(table)
    body = (
        f"{table}\n\nSeconds per effective pass of the online epoch (the least over "
        f"{cli.rounds} alternating fresh processes x {cli.repeat} fits of {cli.passes} passes, "
        "objective evaluation excluded; ratios above 1: this tree is slower, of the least and "
        "of the medians, which move with the load), CoNLL-2000 first "
        f"{cli.n_sentences} training sentences (sparse chain, no start/end parts) and MNIST "
        f"first {cli.n_images} training images (dense multiclass), C = {cli.C}, annealing "
        "off, same seed: both versions visit the same examples in the same order (the last "
        "column compares their final primal). 'compile' is a one-pass fit on 3 examples in "
        "the first process of each checkout (empty numba cache: compilation, in problem "
        "order, so a kernel shared by several problems is counted once); 'first fit' is the "
        "same in the later fresh processes (warm cache: import and cache load). Load average "
        f"at the start: {load:.2f}."
    )
    command = "cd benchmarks && python bench_eg_epoch_throughput.py" + "".join(
        f" {a}" for a in sys.argv[1:])
    # the default baseline is the last structure-specific epoch; another is a later change's A/B
    section = ("EG epoch throughput: generic protocol epoch vs structure-specific kernel"
               if cli.baseline == parser.get_default("baseline")
               else f"EG epoch throughput against {cli.baseline}")
    record(section, body, command)


if __name__ == "__main__":
    main()
