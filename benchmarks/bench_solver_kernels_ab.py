"""Kernels split by issue 46, this tree against an earlier commit, in CPU seconds.

Issue 46 split the long numba kernels by job (the working-set pass, the matching
polytope's Newton direction, the min-cut path search) and moved the dependency parser's
Matrix-Tree routes to a module of their own; none may slow down.  Like
``bench_core_inference_ab.py``, this script checks out a baseline commit into a
temporary folder (``git worktree``) and times the same work with both versions,
alternating between them in fresh processes; it counts the process's CPU time
(``time.process_time``), not the wall time, so that other work on a shared machine
weighs little (all the work is on one thread):

* ``working-set OCR``: ``EGStructuredSVM(solver="working_set")`` on the OCR letters,
  train fold 1 (704 words, raw pixels, a chain without start/end parts), C = 1,
  ``--oracle-passes`` oracle passes (``tol=0``): the working-set passes, oracle and
  cached, are nearly all of the fit;
* ``matching 30x30``: ``MatchingStructure.project`` on complete bipartite graphs of
  30 + 30 nodes, cold (duals from zero);
* ``min-cut 14x14``: ``MinCutStructure.project`` on 4-neighbour grids of 14 x 14
  nodes, cold; the instances are ``bench_projections.py``'s;
* dependency trees, first order projective and not and second order: ``marginals`` and
  ``argmax`` of 300 sentences of 10 to 40 words with random arc scores (the
  sentences of ``bench_core_inference_ab.py``).

Each process reports the least CPU time of ``--repeat`` runs of each after a warm-up
that compiles or loads the numba cache; the table gives the least and the median over
the rounds.

Run from benchmarks/:  python bench_solver_kernels_ab.py [--baseline REV] [--rounds N]
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DATA = REPO.parent / "shared" / "data"


def _best(function, repeat):
    """The least CPU seconds of ``repeat`` calls of ``function``."""
    best = np.inf
    for _ in range(repeat):
        start = time.process_time()
        function()
        best = min(best, time.process_time() - start)
    return best


def _working_set(args):
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    from sklearn_struct.datasets import load_ocr_letters
    from sklearn_struct.eg import EGStructuredSVM
    from sklearn_struct.structures import ChainStructure

    letters = load_ocr_letters(DATA / "ocr_letters_taskar" / "letters_flat.npz")
    train = np.flatnonzero(letters.folds == 1)
    X, y = [letters.X[i] for i in train], [letters.y[i] for i in train]

    def fit(n_passes):
        model = EGStructuredSVM(C=1.0, structure=ChainStructure(start_end=False),
                                solver="working_set", tol=0, max_iter=n_passes, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return model.fit(X, y)

    fit(1)
    seconds = _best(lambda: fit(args["oracle_passes"]), args["repeat"])
    return seconds, float(fit(args["oracle_passes"]).primal_objective_)


def _projection(kind, args):
    sys.path.insert(0, str(REPO / "tests"))
    from _qp_reference import grid_edges

    from sklearn_struct.structures import MatchingStructure, MinCutStructure

    rng = np.random.RandomState(0)
    instances = []
    for _ in range(args["instances"]):
        if kind == "matching":
            edges = np.argwhere(np.ones((30, 30))).astype(np.int64)
            structure = MatchingStructure()
            batch = structure.make_batch([(np.ones((len(edges), 1)), edges)])
            v = rng.randn(len(edges))
        else:
            edges = grid_edges(14, 14)
            structure = MinCutStructure()
            batch = structure.make_batch([(np.ones((196, 1)), edges, np.ones((len(edges), 1)))])
            v = np.r_[rng.randn(196) + 0.5, rng.randn(len(edges))]
        instances.append((structure, batch, v))

    def project_all():
        return [structure.project(batch, v) for structure, batch, v in instances]

    checksum = float(sum(z.sum() for z in project_all()))
    return _best(project_all, args["repeat"]), checksum


def _dependency(args):
    sys.path.insert(0, str(HERE))
    from bench_core_inference_ab import sentences

    from sklearn_struct.structures import DependencyTreeStructure, SiblingDependencyStructure

    rng = np.random.RandomState(0)
    words = sentences(rng)
    out = {}
    for name, structure in (("projective", DependencyTreeStructure(projective=True)),
                            ("non-projective", DependencyTreeStructure(projective=False)),
                            ("second order", SiblingDependencyStructure())):
        batch = structure.make_batch(words)
        scores = rng.randn(int(batch.part_offsets[-1]))
        for operation in ("marginals", "argmax"):
            call = getattr(structure, operation)
            result = call(batch, scores)  # marginals: (mu, log Z); argmax: the heads
            checksum = sum(float(np.sum(part)) for part in
                           (result if isinstance(result, tuple) else (result,)))
            out[f"dependency {name} {operation}"] = (
                _best(lambda: call(batch, scores), args["repeat"]), checksum)
    return out


def worker(args):
    """Time every problem with the imported version; print JSON ``{problem: [s, check]}``."""
    out = {"working-set OCR": _working_set(args),
           "matching 30x30": _projection("matching", args),
           "min-cut 14x14": _projection("mincut", args)}
    out.update(_dependency(args))
    print(json.dumps(out))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--baseline", default="HEAD")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--oracle-passes", type=int, default=20)
    parser.add_argument("--instances", type=int, default=5)
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    cli = parser.parse_args()
    if cli.worker is not None:
        return worker(json.loads(cli.worker))

    sys.path.insert(0, str(HERE))
    from _ab import alternate, least_and_median
    from _record import markdown_table, record

    args = dict(repeat=cli.repeat, oracle_passes=cli.oracle_passes, instances=cli.instances)
    load = os.getloadavg()[0]
    base_rev, results = alternate(__file__, cli.baseline, cli.rounds, args)
    rows = []
    for name in results["candidate"][0]:
        least, median = least_and_median(results, lambda run: [run[name][0]])
        same = results["baseline"][-1][name][1] == results["candidate"][-1][name][1]
        rows.append([name, f"{least['baseline'] * 1e3:.1f}", f"{least['candidate'] * 1e3:.1f}",
                     f"{least['candidate'] / least['baseline']:.3f}",
                     f"{median['candidate'] / median['baseline']:.3f}",
                     "yes" if same else "no"])
    table = markdown_table(["problem", f"CPU ms {base_rev}", "CPU ms working tree",
                            "ratio (least)", "ratio (median)", "same result"], rows)
    body = (f"{table}\n\nCPU milliseconds, the least over {cli.rounds} alternating fresh "
            f"processes of the least of {cli.repeat} runs (ratios: of the least, and of the "
            f"medians over the processes): a working-set fit of {cli.oracle_passes} oracle "
            f"passes, the cold projections of {cli.instances} random instances, or the "
            "inference of 300 sentences.  'same result': the fit's primal objective, or the "
            "sum of the outputs, equal to the last digit in both versions.  Load average at "
            f"the start: {load:.2f}, at the end: {os.getloadavg()[0]:.2f}.")
    print(body)
    record("Split kernels against a baseline", body,
           "cd benchmarks && python bench_solver_kernels_ab.py" + "".join(
               f" {a}" for a in sys.argv[1:]))


if __name__ == "__main__":
    main()
