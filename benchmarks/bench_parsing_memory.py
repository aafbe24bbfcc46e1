"""Parsing memory: the training feature cache whole in memory or streamed from disk, and growth.

A first-order fit on UD English-EWT keeps every arc's hashed feature ids (4.5 GB), a
second-order fit also every sibling pair's.  ``cache_size`` bounds what a fit holds at
once: the cache is built in shards, written to disk and streamed by every pass (see
``sklearn_struct/solvers/_kernel_shards.py``).  Every fit runs in a child process,
measured from outside by ``/usr/bin/time -v`` (peak resident set of the whole process,
loading and encoding the treebank included).  Fits: EGCRF at C = 0.1 (the EWT record's
C, annealed), ``--passes`` effective passes with ``tol=1e-12`` (the gap evaluated on its
schedule), hashed features with ``2 ** 23`` weights, gold UPOS and XPOS, projective
single-root trees on the projective training sentences; test UAS with punctuation
excluded (the CoNLL-X rule).  Seconds per pass are the epochs' and gap evaluations' time
divided by the passes (``history_``), the cache's construction apart.

* ``--experiment bound``: first and second order, the cache in memory (``cache_size=None``)
  against the cache streamed within ``--cache-size`` megabytes.
* ``--experiment converged``: the fits of ``bound`` to a certified relative duality gap of
  ``--tol`` (at most ``--passes``): streamed fits visit the examples shard by shard, another
  path to the same optimum, so their UAS is compared there.
* ``--experiment growth``: EWT train repeated 1, 2, 4 and 8 times (98k sentences), every copy
  with its own word forms (``form`` + ``"~k"`` in copy ``k``), so that no copy shares a word
  feature with another; first order, streamed (``benchmark_page.py`` draws it).
* ``--experiment out-of-core``: the 8x treebank under an address-space bound (``ulimit -v``,
  ``--bound-gb``) smaller than its feature cache, against the same fit without the bound.

Run from benchmarks/:
    python bench_parsing_memory.py --experiment bound --passes 10 --cache-size 512
    python bench_parsing_memory.py --experiment converged --orders 1 --passes 40 --tol 1e-3
    python bench_parsing_memory.py --experiment growth --passes 2 --cache-size 1024
    python bench_parsing_memory.py --experiment out-of-core --passes 2 --cache-size 1024
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _child import peak_rss_gb, worker_result  # noqa: E402
from _record import markdown_table, record  # noqa: E402

DATA = HERE.parents[1] / "shared" / "data" / "ud_en_ewt_r2.16"
C = 0.1


def sentences(data, copy=0):
    """Token dictionaries of a treebank; copy ``k > 0`` gets word forms of its own."""
    suffix = f"~{copy}" if copy else ""
    return [{"form": [w + suffix for w in f], "upos": u, "xpos": x}
            for f, u, x in zip(data.form, data.upos, data.xpos)]


def worker(args):
    """One fit; prints its measurements as JSON (the parent adds the peak RSS)."""
    import warnings

    import numpy as np
    from sklearn.exceptions import ConvergenceWarning

    from sklearn_struct import EGCRF
    from sklearn_struct.datasets import filter_projective, load_conllu
    from sklearn_struct.metrics import attachment_score
    from sklearn_struct.preprocessing import DependencyTokenEncoder
    from sklearn_struct.structures import DependencyTreeStructure, SiblingDependencyStructure

    warnings.simplefilter("ignore", ConvergenceWarning)
    start = time.perf_counter()
    train = load_conllu(DATA / "en_ewt-ud-train.conllu.gz")
    X_text, y = [], []
    for copy in range(args["copies"]):
        kept, heads, _ = filter_projective(sentences(train, copy), train.head)
        X_text += kept
        y += heads
    encoder = DependencyTokenEncoder(pos="both").fit(X_text)
    X = encoder.transform(X_text)
    del X_text
    test = load_conllu(DATA / "en_ewt-ud-test.conllu.gz")
    load_seconds = time.perf_counter() - start
    Structure = DependencyTreeStructure if args["order"] == 1 else SiblingDependencyStructure
    scratch = tempfile.mkdtemp(prefix="bench-parsing-memory-")
    model = EGCRF(structure=Structure(hash_bits=23), C=C, max_iter=args["passes"],
                  tol=args.get("tol", 1e-12), random_state=0, cache_size=args["cache_size"],
                  cache_dir=scratch)
    model.fit(X[:5], y[:5])  # compile, or load the compiled kernels
    disk = []

    def on_pass(*_):
        """The streamed cache's files, measured once (the fit removes them at its end)."""
        if not disk:
            disk.append(sum(f.stat().st_size for f in Path(scratch).rglob("*") if f.is_file()))

    start = time.perf_counter()
    model.fit(X, y, callback=on_pass)
    fit_seconds = time.perf_counter() - start
    os.rmdir(scratch)
    history = model.history_
    passes = float(history["passes"][-1])
    pass_seconds = float(np.sum(history["seconds"]) + np.sum(history["eval_seconds"])) / passes
    result = {"sentences": len(X), "passes": passes, "fit_seconds": fit_seconds,
              "relative_gap": float(history["gap"][-1] / abs(history["primal"][-1])),
              "pass_seconds": pass_seconds, "load_seconds": load_seconds,
              "cache_seconds": fit_seconds - pass_seconds * passes,
              "cache_disk_gb": disk[0] / 1e9 if disk else 0.0}
    if args["evaluate"]:
        heads = model.predict(encoder.transform(sentences(test)))
        result["test_uas"] = 100 * attachment_score(test.head, heads, forms=test.form)
    print(json.dumps(result))


def run(order, copies, cache_size, passes, evaluate=True, bound_gb=None, tol=1e-12):
    """A fit in a child process under ``/usr/bin/time -v``; its JSON plus peak RSS (GB)."""
    job = json.dumps({"order": order, "copies": copies, "cache_size": cache_size,
                      "passes": passes, "evaluate": evaluate, "tol": tol})
    command = ["/usr/bin/time", "-v", sys.executable, __file__, "--worker", job]
    limit = None
    if bound_gb is not None:
        kib = int(bound_gb * 2 ** 20)
        command = ["bash", "-c", f"ulimit -v {kib} && exec \"$@\"", "bound", *command]
        limit = f"ulimit -v {kib}"
    done = subprocess.run(command, capture_output=True, text=True, cwd=HERE)
    if done.returncode != 0:
        tail = "\n".join(done.stderr.splitlines()[-15:])
        return {"failed": f"exit {done.returncode}: {tail}", "limit": limit,
                "peak_rss_gb": peak_rss_gb(done.stderr)}
    result = worker_result("a fit", done.returncode, done.stdout, done.stderr)
    result["limit"] = limit
    return result


def bound(args):
    rows = []
    for order in args.orders:
        for cache_size in (None, args.cache_size):
            r = run(order, 1, cache_size, args.passes)
            print(order, cache_size, r, flush=True)
            rows.append([order, "in memory" if cache_size is None else f"streamed, {cache_size} MB",
                         r["sentences"], f"{r['peak_rss_gb']:.2f}", f"{r['pass_seconds']:.2f}",
                         f"{r['cache_seconds']:.1f}", f"{r['test_uas']:.2f}"])
    return markdown_table(["order", "feature cache", "training sentences", "peak RSS GB",
                           "s/pass (with gap evaluations)", "cache built s", "test UAS"], rows)


def converged(args):
    """The fits of ``bound`` run to a certified relative duality gap of ``--tol``."""
    rows = []
    for order in args.orders:
        for cache_size in (None, args.cache_size):
            r = run(order, 1, cache_size, args.passes, tol=args.tol)
            print(order, cache_size, r, flush=True)
            rows.append([order, "in memory" if cache_size is None else f"streamed, {cache_size} MB",
                         f"{r['passes']:.0f}", f"{r['relative_gap']:.1e}",
                         f"{r['peak_rss_gb']:.2f}", f"{r['test_uas']:.2f}"])
    return markdown_table(["order", "feature cache", "passes", "relative gap", "peak RSS GB",
                           "test UAS"], rows)


GROWTH_NOTE = """

A pass reads the streamed cache twice, for the epoch and for its gap evaluation. Its files
are coded (`solvers/_varint.py`): the parser's sorted feature positions take about a
quarter of their bytes, and the cache on disk half of what it takes in memory (4.5 GB per
copy). What the operating system's page cache (about 21 GB here) does not hold is read
from the disk (1.2 GB/s here, `dd`) on every walk."""


def growth(args):
    rows, points = [], []
    for copies in (1, 2, 4, 8):
        r = run(1, copies, args.cache_size, args.passes, evaluate=False)
        print(copies, r, flush=True)
        per_sentence = 1e6 * r["pass_seconds"] / r["sentences"]
        points.append((r["sentences"], per_sentence, r["peak_rss_gb"]))
        rows.append([f"{copies}x", r["sentences"], f"{r['pass_seconds']:.1f}",
                     f"{per_sentence:.0f}", f"{per_sentence / points[0][1]:.2f}",
                     f"{r['cache_seconds']:.0f}", f"{r['cache_disk_gb']:.1f}",
                     f"{r['peak_rss_gb']:.2f}"])
    return markdown_table(["treebank", "training sentences", "s/pass", "µs/sentence per pass",
                           "against 1x", "cache built s", "cache on disk GB", "peak RSS GB"],
                          rows) + GROWTH_NOTE


def out_of_core(args):
    rows = []
    for bound_gb in (args.bound_gb, None):
        r = run(1, 8, args.cache_size, args.passes, bound_gb=bound_gb)
        print(bound_gb, r, flush=True)
        if "failed" in r:
            rows.append([r["limit"] or "none", "failed", "", "", r["failed"].splitlines()[-1]])
            continue
        rows.append([r["limit"] or "none", r["sentences"], f"{r['peak_rss_gb']:.2f}",
                     f"{r['pass_seconds']:.1f}", f"{r['test_uas']:.2f}"])
    return markdown_table(["address-space bound", "training sentences", "peak RSS GB",
                           "s/pass", "test UAS"], rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--experiment", choices=["bound", "converged", "growth", "out-of-core"])
    parser.add_argument("--tol", type=float, default=1e-3,
                        help="converged: the relative duality gap a fit stops at")
    parser.add_argument("--orders", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--passes", type=int, default=10)
    parser.add_argument("--cache-size", type=float, default=512.0)
    parser.add_argument("--bound-gb", type=float, default=8.0)
    args = parser.parse_args()
    if args.worker:
        return worker(json.loads(args.worker))
    load = os.getloadavg()[0]
    body = {"bound": bound, "converged": converged, "growth": growth,
            "out-of-core": out_of_core}[args.experiment](args)
    command = "cd benchmarks && python " + " ".join(
        [Path(__file__).name] + [a for a in sys.argv[1:]])
    load_after = os.getloadavg()[0]
    title = {"bound": "The feature cache in memory or streamed (EWT)",
             "converged": "In memory or streamed, to a certified gap (EWT)",
             "growth": "Growth from 1x to 8x EWT (first order, streamed)",
             "out-of-core": "The 8x treebank under an address-space bound"}[args.experiment]
    record(title, f"{body}\n\nLoad average {load:.2f} at the start and {load_after:.2f} at "
           "the end.", command)


if __name__ == "__main__":
    main()
