"""Side-by-side runs of two versions of the package: a baseline commit and this tree.

A script checks the baseline out into a temporary folder (``git worktree``) and runs
itself as a worker in fresh processes, alternating between the versions, so that the
machine's load falls on both alike.  Its ratios are of the least time over all processes
(:func:`least_and_median`): a process that shares the cores with other work can only be
slowed down, so the least is the version's own speed, where the median moves with the load.
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def checkout(revision, folder):
    """Check ``revision`` out into ``folder``; return its short hash."""
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(folder), revision],
                   check=True, capture_output=True)
    return subprocess.run(["git", "-C", str(folder), "rev-parse", "--short", "HEAD"],
                          check=True, capture_output=True, text=True).stdout.strip()


def remove(folder):
    """Remove a checkout made by :func:`checkout` (if it exists)."""
    if Path(folder).exists():
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(folder)],
                       capture_output=True)


def run_worker(script, source, args, **env):
    """Run ``script --worker ARGS`` with the package of ``source``; return its last JSON line."""
    environment = dict(os.environ, PYTHONPATH=str(source), **{k: str(v) for k, v in env.items()})
    command = [sys.executable, str(Path(script).resolve()), "--worker", json.dumps(args)]
    result = subprocess.run(command, env=environment, cwd=str(source), capture_output=True,
                            text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def alternate(script, baseline, rounds, args):
    """Run ``script``'s worker with ``baseline`` checked out and with this tree, in turn,
    ``rounds`` times each; return ``(baseline's short hash, {"baseline": runs,
    "candidate": runs})``, the runs the workers' JSON results."""
    with tempfile.TemporaryDirectory() as tmp:
        base_dir = Path(tmp) / "baseline"
        try:
            base_rev = checkout(baseline, base_dir)
            results = {"baseline": [], "candidate": []}
            for round_ in range(rounds):
                for side, source in (("baseline", base_dir), ("candidate", REPO)):
                    results[side].append(run_worker(script, source, args))
                    print(f"round {round_ + 1} {side}: {results[side][-1]}", flush=True)
        finally:
            remove(base_dir)
    return base_rev, results


def least_and_median(results, values):
    """Per side of ``results`` (``{"baseline": runs, "candidate": runs}``), the least and the
    median of the numbers that ``values(run)`` lists for each run, over all runs."""
    import numpy as np

    pooled = {side: [v for run in runs for v in values(run)] for side, runs in results.items()}
    return ({side: min(v) for side, v in pooled.items()},
            {side: float(np.median(v)) for side, v in pooled.items()})


def agree(results, name):
    """Whether every run of both sides gave the same check (``run[name][1]``) for ``name``."""
    return len({run[name][1] for runs in results.values() for run in runs}) == 1


def fastest(function, repeat=3):
    """``(least wall seconds of repeat calls of function, the last call's result)``."""
    import time

    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return min(times), result


def ewt_arguments(description, n_train_help):
    """The options of a script that compares versions on UD English-EWT: ``--data``,
    ``--baseline``, ``--rounds``, ``--n-train``, ``--no-record`` and the worker's own."""
    import argparse

    parser = argparse.ArgumentParser(description=description,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    default = REPO.parent / "shared" / "data"
    parser.add_argument("--data", type=Path,
                        default=Path(os.environ.get("SKLEARN_STRUCT_SHARED_DATA", default))
                        / "ud_en_ewt_r2.16")
    parser.add_argument("--baseline", default="HEAD")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--n-train", type=int, default=None, help=n_train_help)
    parser.add_argument("--no-record", action="store_true")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    return parser.parse_args()
