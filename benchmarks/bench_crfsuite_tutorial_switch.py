"""sklearn-crfsuite's tutorial with the import changed, beside sklearn-crfsuite (issue 48).

Runs ``examples/crfsuite_tutorial_switch.py`` (CoNLL-2003 English, train on eng.train,
test on eng.testb; the tutorial's features and ``CRF(algorithm="lbfgs", c1=0.1, c2=0.1,
max_iterations=100, all_possible_transitions=True)``) with ``from sklearn_struct import
CRF`` and with ``from sklearn_crfsuite import CRF``, one after the other in this process,
and records the tutorial's weighted flat F1, conlleval's entity F1 and the training time of
each, with the load average before and after.

Run from benchmarks/:
    python bench_crfsuite_tutorial_switch.py
"""

import os
import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _record import markdown_table, record  # noqa: E402

DATA = os.environ.get("SKLEARN_STRUCT_SHARED_DATA", HERE.parents[1] / "shared" / "data")


def main():
    example = runpy.run_path(str(HERE.parent / "examples" / "crfsuite_tutorial_switch.py"))
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
