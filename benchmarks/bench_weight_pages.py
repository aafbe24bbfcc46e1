"""EG's passes with the weight vector on huge pages and on 4 KB pages, paired in one fit.

A visit of a hashed-feature parser reads and writes tens of thousands of scattered
weights of a ``2 ** 23`` vector (64 MB); on 4 KB pages nearly every one also misses the
address translation cache.  ``sklearn_struct/_memory.py`` gives the kernels' weight
vector fresh memory advised to use huge pages; numpy's own copy, which the package made
before, often reused memory already mapped in 4 KB pages.

This script measures what the pages cost on a whole pass.  Dependency parsing with gold
UPOS+XPOS on the first ``--n-train`` EWT training sentences (the protocol of
``bench_time_to_accuracy.py``), ``EGCRF(C=0.05, start="truth", order="shuffle")`` at first
and second order: one fit each, whose passes alternate the memory of the weights that
the kernels work on (``kernel_weights``, copied at every pass): odd passes
:func:`~sklearn_struct._memory.random_access_copy`, even passes a numpy copy made with
numpy's huge-page advice off.  Alternating pass by pass within one process pairs the
two against the machine's slow drifts, which moved whole fits by 15% between processes.
``/proc/self/smaps`` tells how much of each pass's weights huge pages hold.  The first
pass (which also builds the features) is left out.

Run from benchmarks/ (about 10 minutes)::

    python bench_weight_pages.py [--passes 13] [--n-train 4000]
"""

import argparse
import os
import re
import sys
import time
import types
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def huge_page_megabytes(array):
    """Megabytes of huge pages in the memory mappings that hold ``array``."""
    low, high = array.ctypes.data, array.ctypes.data + array.nbytes
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        bounds = re.match(r"^([0-9a-f]+)-([0-9a-f]+) ", line)
        if bounds:
            inside = int(bounds.group(1), 16) < high and int(bounds.group(2), 16) > low
        elif inside and line.startswith("AnonHugePages:"):
            total += int(line.split()[1]) // 1024
    return total


def small_page_copy(w):
    """A numpy copy of ``w`` on 4 KB pages: numpy's huge-page advice off while it is made."""
    from numpy._core.multiarray import _set_madvise_hugepage

    _set_madvise_hugepage(False)
    try:
        return np.array(w, dtype=np.float64)
    finally:
        _set_madvise_hugepage(True)


def paired_fit(order, n_train, passes, data):
    """One fit whose passes alternate the weights' pages; returns a row per pass:
    ``(pages, seconds, megabytes of huge pages)``."""
    import bench_dependency_second_order as setup
    from bench_time_to_accuracy import HASH_BITS, build

    from sklearn_struct._memory import random_access_copy
    from sklearn_struct.solvers import _eg_execution
    from sklearn_struct.structures import _base

    _, X, y, _, _ = setup.load(types.SimpleNamespace(data=data, n_train=n_train))
    structure = setup.structure_of(order, HASH_BITS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        build("egcrf_shuffled", structure, 1, 1).fit(X[:5], y[:5])  # numba's cache
    huge = {"now": True}

    def kernel_weights(self, batch, w):
        w = np.asarray(w, dtype=np.float64)
        return random_access_copy(w) if huge["now"] else small_page_copy(w)

    rows, run = [], _eg_execution.OnlineEpoch.run

    def timed_run(self, state, *args, **kwargs):
        start = time.perf_counter()
        tried = run(self, state, *args, **kwargs)
        seconds = time.perf_counter() - start
        rows.append(("huge" if huge["now"] else "4 KB", seconds, huge_page_megabytes(state.w)))
        huge["now"] = not huge["now"]
        return tried

    saved = _base.BaseStructure.kernel_weights
    _base.BaseStructure.kernel_weights = kernel_weights
    _eg_execution.OnlineEpoch.run = timed_run
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (a fit stopped at its passes warns)
            build("egcrf_shuffled", structure, passes, passes).fit(X, y)
    finally:
        _base.BaseStructure.kernel_weights = saved
        _eg_execution.OnlineEpoch.run = run
    return rows[1:]


def main():
    from _record import markdown_table, record

    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    default = HERE.parents[1] / "shared" / "data"
    parser.add_argument("--data", type=Path,
                        default=Path(os.environ.get("SKLEARN_STRUCT_SHARED_DATA", default))
                        / "ud_en_ewt_r2.16")
    parser.add_argument("--passes", type=int, default=13)
    parser.add_argument("--n-train", type=int, default=4000)
    parser.add_argument("--no-record", action="store_true")
    cli = parser.parse_args()
    load = os.getloadavg()[0]
    rows, curves = [], []
    for order in (1, 2):
        passes = paired_fit(order, cli.n_train, cli.passes, cli.data)
        seconds = {pages: [s for p, s, _ in passes if p == pages] for pages in ("4 KB", "huge")}
        megabytes = {pages: sorted({m for p, _, m in passes if p == pages})
                     for pages in ("4 KB", "huge")}
        pairs = [(passes[k][1], passes[k + 1][1]) for k in range(0, len(passes) - 1, 2)
                 if passes[k][0] == "4 KB"]
        faster = sum(small > large for small, large in pairs)
        rows.append([order, len(pairs),
                     f"{np.median(seconds['4 KB']):.2f} / {np.median(seconds['huge']):.2f}",
                     f"{min(seconds['4 KB']):.2f} / {min(seconds['huge']):.2f}",
                     f"{np.median(seconds['4 KB']) / np.median(seconds['huge']):.3f}",
                     f"{faster} of {len(pairs)}",
                     f"{megabytes['4 KB']} / {megabytes['huge']}"])
        curves.append(f"order {order}: " + ", ".join(f"{s:.2f} ({p})" for p, s, _ in passes))
        print(rows[-1], flush=True)
    table = markdown_table(
        ["order", "pairs of passes", "s per pass, median (4 KB / huge)", "least",
         "ratio of medians", "pairs where huge pages were faster",
         "MB of huge pages under the weights (4 KB / huge)"], rows)
    body = (f"{table}\n\n`EGCRF(C=0.05, start=\"truth\", order=\"shuffle\")` on the first "
            f"{cli.n_train} EWT training sentences, gold tags, 2^23 hashed weights, "
            f"{cli.passes} passes in one process; passes 2 to {cli.passes}, alternating the "
            "memory of the kernels' weights: 4 KB pages (a numpy copy, numpy's huge-page "
            "advice off), then huge pages (`random_access_zeros`).  A pair is a 4 KB pass "
            "and the huge-page pass after it.  Each pass's seconds, in order:\n\n"
            + "\n".join(f"- {curve}" for curve in curves)
            + f"\n\nLoad average at the start: {load:.2f}, at the end: {os.getloadavg()[0]:.2f}.")
    print(body)
    if not cli.no_record:
        record("EG's passes on huge pages and on 4 KB pages", body,
               "cd benchmarks && python bench_weight_pages.py" + "".join(
                   f" {a}" for a in sys.argv[1:]))


if __name__ == "__main__":
    main()
