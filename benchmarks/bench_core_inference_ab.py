"""Inference through the structure protocol, this tree against an earlier commit.

The light core (issue 28) moved every structure into a subpackage, derived its
batch operations from its kernel operations and cut the protocol; the chain's
and the dependency trees' inference must not have slowed down.  This script
checks out a baseline commit into a temporary folder (``git worktree``) and
times the same batch operations with both versions, alternating between them
in fresh processes (so that the machine's load affects both alike):

* chains: ``ChainStructure.marginals`` (forward-backward) and ``argmax``
  (Viterbi) on OCR-like batches (26 labels, 128 dense binary features, 4 to 12
  tokens) and CoNLL-like ones (23 labels, 20,000 sparse features with 15
  active per token, 10 to 38 tokens), as ``bench_chain_inference.py`` builds
  them;
* dependency trees: ``DependencyTreeStructure.marginals`` and ``argmax``,
  projective (inside-outside, Eisner) and not (Matrix-Tree, Chu-Liu-Edmonds),
  on 300 sentences of 10 to 40 words with random arc scores.

Steady state is the best of ``--repeat`` calls in each process, and a version's rate that of
its best process (``_ab.least_and_median``; the median over the processes is given
beside it); the first call of the first process of each version runs with an empty numba
cache (compilation).

Run from benchmarks/:  python bench_core_inference_ab.py [--baseline REV] [--rounds N]
"""

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
OPERATIONS = ("marginals", "argmax")


def chain_batches(rng):
    """The OCR-like and CoNLL-like inputs of ``bench_chain_inference.py``."""
    ocr = [(rng.rand(T, 128) < 0.3).astype(np.float64) for T in rng.randint(4, 13, size=2000)]
    conll = []
    for T in rng.randint(10, 39, size=600):
        indices = np.concatenate([rng.choice(20000, 15, replace=False) for _ in range(T)])
        conll.append(sp.csr_matrix((np.ones(T * 15), indices, np.arange(T + 1) * 15),
                                   shape=(T, 20000)))
    return {"chain OCR-like": (ocr, 26), "chain CoNLL-like": (conll, 23)}


def sentences(rng):
    """300 sentences of 10 to 40 words: word, tag and prefix ids."""
    return [np.column_stack([rng.randint(1, 5000, n), rng.randint(1, 40, n),
                             rng.randint(1, 2000, n)])
            for n in rng.randint(10, 41, size=300)]


def best_seconds(function, repeat):
    best = np.inf
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def worker(args):
    """Time every problem with the imported version; print JSON (units per second)."""
    from sklearn_struct.structures import ChainStructure, DependencyTreeStructure

    rng = np.random.RandomState(0)
    problems = {}
    for name, (X, K) in chain_batches(rng).items():
        structure = ChainStructure()
        batch = structure.make_batch(X, K)
        scores = structure.part_scores(batch, 0.1 * rng.randn(batch.n_weights))
        problems[name] = (structure, batch, scores, int(batch.unit_offsets[-1]))
    words = sentences(rng)
    for projective in (True, False):
        structure = DependencyTreeStructure(projective=projective)
        batch = structure.make_batch(words)
        scores = rng.randn(int(batch.part_offsets[-1]))
        name = "dependency " + ("projective" if projective else "non-projective")
        problems[name] = (structure, batch, scores, batch.n_samples)
    out, first = {}, {}
    for name, (structure, batch, scores, units) in problems.items():
        for operation in OPERATIONS:
            call = getattr(structure, operation)
            start = time.perf_counter()
            call(batch, scores)
            first[f"{name} {operation}"] = time.perf_counter() - start
            seconds = best_seconds(lambda: call(batch, scores), args["repeat"])
            out[f"{name} {operation}"] = units / seconds
    print(json.dumps({"rates": out, "first": first}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="38b44e2",
                        help="commit to compare with (default: before the light core)")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    cli = parser.parse_args()
    if cli.worker is not None:
        return worker(json.loads(cli.worker))

    sys.path.insert(0, str(HERE))
    from _ab import checkout, least_and_median, remove, run_worker
    from _record import markdown_table, record

    args = {"repeat": cli.repeat}
    load = os.getloadavg()[0]
    results = {"baseline": [], "candidate": []}
    with tempfile.TemporaryDirectory() as tmp:
        base_dir = Path(tmp) / "baseline"
        caches = {side: Path(tmp) / f"cache-{side}" for side in results}
        try:
            base_rev = checkout(cli.baseline, base_dir)
            for round_ in range(cli.rounds):
                for side, source in (("baseline", base_dir), ("candidate", REPO)):
                    results[side].append(run_worker(__file__, source, args,
                                                    NUMBA_CACHE_DIR=caches[side]))
                    print(f"round {round_ + 1} {side}: done", flush=True)
        finally:
            remove(base_dir)
    end_load = os.getloadavg()[0]

    rows = []
    for task in results["candidate"][0]["rates"]:
        # seconds per unit, so that the least is the best process
        least, median = least_and_median(results, lambda run: [1.0 / run["rates"][task]])
        cold = {side: runs[0]["first"][task] for side, runs in results.items()}
        rows.append([task, f"{1.0 / least['baseline']:,.0f}", f"{1.0 / least['candidate']:,.0f}",
                     f"{least['baseline'] / least['candidate']:.3f}",
                     f"{median['baseline'] / median['candidate']:.3f}",
                     f"{cold['baseline']:.2f}", f"{cold['candidate']:.2f}"])
    header = ["operation", f"units/s {base_rev}", "units/s this tree", "ratio (best)",
              "ratio (median)", f"first call s {base_rev}", "first call s this tree"]
    table = markdown_table(header, rows)
    print(table)
    body = (
        f"{table}\n\nUnits are tokens for chains and sentences for dependency trees; rates "
        f"are those of the best of {cli.rounds} alternating fresh processes, each the best of "
        f"{cli.repeat} calls (ratio above 1: this tree is faster; beside it the ratio of the "
        "medians over the processes, which moves with the load). 'first call' is the first "
        "call of each operation in the first process of each version, with an empty numba "
        "cache, in the order of the table (a kernel shared by several operations compiles "
        f"once). Load average {load:.2f} at the start and {end_load:.2f} at the end."
    )
    command = "cd benchmarks && python bench_core_inference_ab.py" + "".join(
        f" {a}" for a in sys.argv[1:])
    record("Inference through the protocol, against the commit before the light core", body,
           command)


if __name__ == "__main__":
    main()
