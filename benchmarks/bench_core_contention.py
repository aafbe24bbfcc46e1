"""How much two processes on this machine slow each other down: the ceiling of a 2-worker cluster.

Each half of CoNLL-2000 is fitted by online EGCRF (the fused numba epoch and the numba
gap evaluation, the least memory-bound code the package has) in a process of its own:
first each half alone, then both halves at once.  Two workers can be at most
``2 / slowdown`` times faster than one process on work that splits perfectly, before any
data moves between them; the issue's target for batch EG on a 2-worker ``LocalCluster``
is 1.3x.  The rounds alternate alone and together, so that the load of a shared
machine falls on both alike.

Run from benchmarks/:  python bench_core_contention.py [--rounds 3] [--passes 8]
"""

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _record import markdown_table, record  # noqa: E402

WORKER = r"""
import sys, time, warnings
from sklearn_struct.datasets import load_conll
from sklearn_struct.eg import EGCRF
from sklearn_struct.preprocessing import SequenceDictVectorizer, conll_token_features
from sklearn_struct.structures import ChainStructure

path, half, passes, go = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
train = load_conll(path)
features = [conll_token_features(w, p) for w, p in zip(train.word, train.pos)]
X = SequenceDictVectorizer().fit(features).transform(features)
n = len(X) // 2
X, y = X[half * n:(half + 1) * n], train.tags[half * n:(half + 1) * n]
EGCRF(max_iter=1, tol=0, structure=ChainStructure(start_end=False)).fit(X[:20], y[:20])
time.sleep(max(0.0, go - time.time()))  # both processes start their fits together
warnings.simplefilter("ignore")  # tol=0: a ConvergenceWarning by design
model = EGCRF(C=5.0, structure=ChainStructure(start_end=False), tol=0, max_iter=passes,
              annealing=False, random_state=0).fit(X, y)
h = model.history_
print(h["seconds"][2:].mean(), h["eval_seconds"][2:].mean(), len(X))
"""


def run(path, halves, passes, setup_seconds):
    """Fit the given halves, each in its own process, all starting at once; per half,
    its seconds per epoch and per gap evaluation, and its number of sentences."""
    go = time.time() + setup_seconds
    processes = [subprocess.Popen([sys.executable, "-c", WORKER, str(path), str(half),
                                   str(passes), str(go)], stdout=subprocess.PIPE, text=True)
                 for half in halves]
    return [tuple(map(float, p.communicate()[0].split())) for p in processes]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    default = Path(__file__).resolve().parents[2] / "shared" / "data" / "conll2000_chunking"
    parser.add_argument("--data", type=Path, default=default)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--passes", type=int, default=8)
    parser.add_argument("--setup-seconds", type=float, default=25.0,
                        help="time each process gets to load, vectorise and compile")
    args = parser.parse_args()
    path = args.data / "train.txt.gz"
    alone, together = {0: [], 1: []}, {0: [], 1: []}
    loads = [os.getloadavg()[0]]
    for _ in range(args.rounds):
        for half in (0, 1):
            alone[half] += run(path, [half], args.passes, args.setup_seconds)
        for half, result in zip((0, 1), run(path, [0, 1], args.passes, args.setup_seconds)):
            together[half].append(result)
        loads.append(os.getloadavg()[0])
    rows, slowdowns = [], []
    for half in (0, 1):
        a, t = (np.median(np.array(runs)[:, :2], axis=0) for runs in (alone[half], together[half]))
        slowdowns.append(t / a)  # (epoch, gap evaluation)
        rows.append([f"half {half}", f"{a[0]:.3f}", f"{t[0]:.3f}", f"{t[0] / a[0]:.2f}x",
                     f"{a[1]:.3f}", f"{t[1]:.3f}", f"{t[1] / a[1]:.2f}x"])
    step_slowdown, eval_slowdown = np.mean(slowdowns, axis=0)
    body = (
        f"CoNLL-2000 train split in two halves of {int(alone[0][0][2])} sentences; online "
        f"EGCRF (C=5, no annealing), {args.passes} passes, seconds per pass from pass 3 on, "
        f"medians of {args.rounds} rounds; each fit in a process of its own, alone or both at "
        f"once. Load average (1 minute) from {min(loads):.2f} to {max(loads):.2f}.\n\n"
        + markdown_table(["data", "epoch s/pass alone", "epoch s/pass together", "slowdown",
                          "gap evaluation s alone", "gap evaluation s together",
                          "slowdown"], rows)
        + f"\n\nTwo processes slow each other down by {step_slowdown:.2f}x on the epochs and "
        f"{eval_slowdown:.2f}x on the gap evaluations: two workers are at most "
        f"{2 / step_slowdown:.2f}x and {2 / eval_slowdown:.2f}x faster than one process on "
        "this work, before any data moves between them.\n"
    )
    print(body, flush=True)
    record("Two processes at once on this machine", body,
           " ".join(["cd benchmarks && python bench_core_contention.py"] + sys.argv[1:]))


if __name__ == "__main__":
    main()
