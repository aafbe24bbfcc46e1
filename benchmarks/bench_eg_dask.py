"""Batch EG on a dask cluster of worker processes against one process, side by side.

Batch EG (``EGCRF(solver="batch")``, Figure 1 of Collins et al. 2008) on

* ``conll``: CoNLL-2000 chunking (``--n-train`` first training sentences), the
  features of ``bench_eg_conll.py``, a chain without start/end parts;
* ``ocr``: the OCR letters shipped in the package (the embedded default job);
* ``ewt``: dependency parsing on UD English-EWT (``--n-train`` first projective
  training sentences), the hashed first-order features of ``bench_dependency_ewt.py``
  (``2 ** --hash-bits`` weights), projective trees with a single root.

Each round fits the same model three ways, in this order: in this process on
one core (``n_jobs=None``), with two joblib threads (``n_jobs=2``), and on a
``dask.distributed.LocalCluster`` of two worker processes with one thread each
(``joblib.parallel_config(backend="dask")``, ``n_jobs=2``).  The cluster is
started, and every way warmed up (numba compilation in each process), before
the rounds; cluster start-up is reported apart.  Reported per way: the median
over rounds of the seconds per pass of the EG steps, of the per-pass objective
and duality-gap evaluation, and of the whole fit, and the final primal (equal
across ways up to summation order).  A step ends by sending the new ``w`` to
the chunks (to the workers, on the cluster); the evaluation scores the parts
there, and the next step reuses those scores.  The CPU seconds of a fit add up
this process and, on the cluster, its workers (the work the distribution adds).

Run from benchmarks/:
    python bench_eg_dask.py --job conll --n-train 3000 --passes 5
    python bench_eg_dask.py --job ocr --passes 20
    python bench_eg_dask.py --job ewt --C 0.1 --passes 3 --rounds 2
"""

import argparse
import os
import resource
import sys
import time
import warnings
from pathlib import Path

import joblib
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _record import markdown_table, record  # noqa: E402

from sklearn.exceptions import ConvergenceWarning  # noqa: E402

from sklearn_struct.eg import EGCRF  # noqa: E402
from sklearn_struct.structures import ChainStructure, DependencyTreeStructure  # noqa: E402


def load_job(args):
    """The job's training data, its structure and a description."""
    if args.job == "ocr":
        from sklearn_struct.datasets import load_ocr_default

        ocr = load_ocr_default()
        return list(ocr.X), list(ocr.y), ChainStructure(start_end=False), "embedded OCR letters"
    if args.job == "ewt":
        from sklearn_struct.datasets import filter_projective, load_conllu
        from sklearn_struct.preprocessing import DependencyTokenEncoder

        train = load_conllu(args.data / "ud_en_ewt_r2.16" / "en_ewt-ud-train.conllu.gz")
        sentences = [{"form": f, "upos": u, "xpos": x}
                     for f, u, x in zip(train.form, train.upos, train.xpos)]
        sentences, heads, _ = filter_projective(sentences, train.head)
        n = len(sentences) if args.n_train is None else args.n_train
        X = DependencyTokenEncoder(pos="both").fit(sentences[:n]).transform(sentences[:n])
        return (X, heads[:n], DependencyTreeStructure(hash_bits=args.hash_bits),
                f"UD English-EWT, first {n} projective training sentences, "
                f"2^{args.hash_bits} hashed weights")
    from sklearn_struct.datasets import load_conll
    from sklearn_struct.preprocessing import SequenceDictVectorizer, conll_token_features

    train = load_conll(args.data / "conll2000_chunking" / "train.txt.gz")
    n = len(train.word) if args.n_train is None else args.n_train
    features = [conll_token_features(w, p) for w, p in zip(train.word[:n], train.pos[:n])]
    X = SequenceDictVectorizer().fit_transform(features)
    return (X, train.tags[:n], ChainStructure(start_end=False),
            f"CoNLL-2000, first {n} training sentences")


def _cpu_seconds():
    return time.process_time()


def fit(X, y, structure, C, passes, n_jobs, client=None):
    """One fit; with ``client``, the CPU seconds of its workers count too."""
    model = EGCRF(C=C, solver="batch", structure=structure, tol=0, max_iter=passes,
                  n_jobs=n_jobs)

    def cpu():
        workers = sum(client.run(_cpu_seconds).values()) if client is not None else 0.0
        return time.process_time() + workers

    cpu_start, start = cpu(), time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, y)
    seconds = time.perf_counter() - start
    h = model.history_
    return {"step": float(np.mean(h["seconds"])), "eval": float(np.mean(h["eval_seconds"])),
            "fit": seconds, "cpu": cpu() - cpu_start, "primal": float(h["primal"][-1])}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    default = Path(__file__).resolve().parents[2] / "shared" / "data"
    parser.add_argument("--job", choices=["conll", "ocr", "ewt"], required=True)
    parser.add_argument("--data", type=Path, default=default)
    parser.add_argument("--n-train", type=int, default=None)
    parser.add_argument("--C", type=float, default=1.0)
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--hash-bits", type=int, default=20, help="ewt: log2 of the weights")
    args = parser.parse_args()
    from dask.distributed import Client, LocalCluster

    X, y, structure, description = load_job(args)
    load_start = os.getloadavg()[0]
    start = time.perf_counter()
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=None)
    client = Client(cluster)
    cluster_seconds = time.perf_counter() - start

    def on_cluster(passes):
        with joblib.parallel_config(backend="dask"):
            return fit(X, y, structure, args.C, passes, 2, client)

    ways = {"one process, one core": lambda p: fit(X, y, structure, args.C, p, None),
            "two joblib threads": lambda p: fit(X, y, structure, args.C, p, 2),
            "dask, two worker processes": on_cluster}
    warm = {name: run(1)["fit"] for name, run in ways.items()}  # compiles in every process
    results = {name: [] for name in ways}
    for _ in range(args.rounds):
        for name, run in ways.items():
            results[name].append(run(args.passes))
            print(name, results[name][-1], flush=True)
    client.close()
    cluster.close()

    serial = {key: np.median([r[key] for r in results["one process, one core"]])
              for key in ("step", "eval", "fit")}
    rows = []
    for name, runs in results.items():
        med = {key: np.median([r[key] for r in runs]) for key in ("step", "eval", "fit", "cpu")}
        rows.append([name, f"{med['step']:.3f}", f"{med['eval']:.3f}", f"{med['fit']:.2f}",
                     f"{serial['step'] / med['step']:.2f}x", f"{serial['eval'] / med['eval']:.2f}x",
                     f"{serial['fit'] / med['fit']:.2f}x", f"{med['cpu']:.2f}",
                     f"{runs[-1]['primal']:.10g}", f"{warm[name]:.1f}"])
    header = ["way", "EG step s/pass", "gap evaluation s/pass", "fit s",
              "step speed-up", "evaluation speed-up", "fit speed-up",
              "fit CPU s (all processes)", "final primal", "first fit s (1 pass, compilation)"]
    body = (
        f"{description}: batch EGCRF, C={args.C:g}, {args.passes} passes per fit, median of "
        f"{args.rounds} rounds (the three ways alternate within each round). Cluster start-up "
        f"{cluster_seconds:.1f} s. Peak RSS of this process "
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GB. "
        f"Load average (1 minute, this benchmark's own processes included) at the start: "
        f"{load_start:.2f}, at the end: {os.getloadavg()[0]:.2f}.\n\n"
        + markdown_table(header, rows)
    )
    print(body)
    record(f"Batch EG on a dask cluster: {args.job}", body,
           " ".join(["cd benchmarks && python bench_eg_dask.py"] + sys.argv[1:]))


if __name__ == "__main__":
    main()
