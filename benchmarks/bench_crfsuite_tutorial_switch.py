"""sklearn-crfsuite's tutorial with the import changed, beside sklearn-crfsuite (issue 48).

Runs ``examples/crfsuite_tutorial_switch.py`` (CoNLL-2003 English, train on eng.train,
test on eng.testb; the tutorial's features and ``CRF(algorithm="lbfgs", c1=0.1, c2=0.1,
max_iterations=100, all_possible_transitions=True)``) with ``from sklearn_struct import
CRF`` and with ``from sklearn_crfsuite import CRF``, one after the other in this process,
and records the tutorial's weighted flat F1, conlleval's entity F1 and the training time of
each, with the load average before and after.  ``--others`` records the same for the
other algorithms (``l2sgd`` at ``c2=0.1``, ``ap``, ``pa``, or those of ``--algorithms``),
``--max-iterations`` passes each (0: each trainer's default and stopping rule).

Run from benchmarks/:
    python bench_crfsuite_tutorial_switch.py [--others [--max-iterations 10]
                                             [--algorithms l2sgd ap pa]]
"""

import argparse

import os
import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _record import markdown_table, record  # noqa: E402

DATA = os.environ.get("SKLEARN_STRUCT_SHARED_DATA", HERE.parents[1] / "shared" / "data")


def others(example, max_iterations, algorithms):
    """Every other algorithm, with both CRFs, on the tutorial's dicts."""
    import time

    from sklearn_crfsuite import CRF as Reference

    from sklearn_struct import CRF
    X_train, y_train, X_test, y_test = example["load"](DATA)
    load_before, rows = os.getloadavg(), []
    for algorithm in algorithms:
        params = {"c2": 0.1} if algorithm == "l2sgd" else {}
        for name, cls in (("sklearn_struct", CRF), ("sklearn-crfsuite", Reference)):
            crf = cls(algorithm=algorithm, max_iterations=max_iterations or None,
                      all_possible_transitions=True, **params)
            start = time.perf_counter()
            crf.fit(X_train, y_train)
            seconds = time.perf_counter() - start
            labels = [label for label in crf.classes_ if label != "O"]
            y_pred = crf.predict(X_test)
            rows.append([algorithm, name,
                         f"{example['flat_f1'](y_test, y_pred, labels):.4f}",
                         f"{example['chunk_f1_score'](y_test, [list(p) for p in y_pred]):.4f}",
                         f"{seconds:.1f}"])
            print(rows[-1], flush=True)
    load_after = os.getloadavg()
    passes = (f"``max_iterations={max_iterations}``: passes of each learner, not converged "
              "fits" if max_iterations else "each trainer's default ``max_iterations`` and "
              "stopping rule (EG: a certified relative duality gap of 1e-4; CRFsuite's SGD: "
              "its ``delta`` over ``period`` epochs)")
    body = (f"The tutorial's dicts and test, ``all_possible_transitions=True`` for every "
            "algorithm (``c2=0.1`` for l2sgd, EGCRF's C = 5 here; the defaults otherwise), "
            f"{passes}.  Load average "
            f"{', '.join(f'{x:.2f}' for x in load_before)} before and "
            f"{', '.join(f'{x:.2f}' for x in load_after)} after (another job beside).\n\n"
            + markdown_table(["algorithm", "CRF", "flat F1 (tutorial, weighted)",
                              "entity F1 (conlleval)", "fit s"], rows))
    print(body)
    title = f"{max_iterations} passes" if max_iterations else "to convergence"
    record(f"{', '.join(algorithms)}, {title}", body,
           "cd benchmarks && python " + " ".join([Path(__file__).name] + sys.argv[1:]))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--others", action="store_true")
    parser.add_argument("--max-iterations", type=int, default=10)
    parser.add_argument("--algorithms", nargs="+", default=["l2sgd", "ap", "pa"],
                        choices=["l2sgd", "ap", "pa"])
    args = parser.parse_args()
    example = runpy.run_path(str(HERE.parent / "examples" / "crfsuite_tutorial_switch.py"))
    if args.others:
        return others(example, args.max_iterations, args.algorithms)
    load_before = os.getloadavg()
    results = example["run"](DATA)
    load_after = os.getloadavg()
    rows = [[name, f"{r['flat F1']:.4f}", f"{r['entity F1']:.4f}", f"{r['fit seconds']:.1f}",
             str(r["non-zero state features"])] for name, r in results.items()]
    body = ("CoNLL-2003 English, 14,041 training sentences (203,621 tokens), tested on "
            "eng.testb (3,453 sentences).  The same feature dicts for both; numba's "
            "compilation cached beforehand (a first run compiles).  Load average (1, 5, 15 "
            f"min) {', '.join(f'{x:.2f}' for x in load_before)} before and "
            f"{', '.join(f'{x:.2f}' for x in load_after)} after, on the 2-core machine "
            "(another job ran beside this one: the times depend on it).\n\n"
            + markdown_table(["CRF", "flat F1 (tutorial, weighted)", "entity F1 (conlleval)",
                              "fit s", "non-zero state features"], rows))
    print(body)
    record("The tutorial on CoNLL-2003, the import changed", body,
           "cd benchmarks && python " + " ".join([Path(__file__).name] + sys.argv[1:]))


if __name__ == "__main__":
    main()
