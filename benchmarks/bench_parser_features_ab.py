"""A parser's hashed features, by a baseline commit and by this tree: cache and prediction.

Every fit of a dependency parser first hashes the features of every arc (and, at second
order, of every part of adjacent siblings) of its training sentences once, into the cache
that its passes read (``kernel_data(batch, training=True)``); on UD English-EWT train that
build is a large share of a perceptron's fit.  Prediction hashes every part of every
sentence again and reads its weights (``part_scores`` on the kernel data without the
cache), nearly all of a second-order parser's time.  This script times both for
:class:`DependencyTreeStructure` (first order) and :class:`SiblingDependencyStructure`
(second order) with ``2 ** 23`` hashed weights (random normal weights for the part
scores), with gold UPOS+XPOS (the loading of ``bench_dependency_second_order.py``: the
projective training sentences, all test sentences), in fresh processes that alternate
between the baseline (checked out by ``git worktree``) and this tree.  Each process builds
each cache once, and scores the test set three times (the least is kept), after a run on
five sentences that compiles or loads the kernels.  The table gives the least and the
median seconds over the rounds, and whether both versions gave the same result (a
checksum of the cache's arrays, or the sum of the scores).

Run from benchmarks/ (about 10 minutes)::

    python bench_parser_features_ab.py --baseline 333613b [--rounds 3] [--n-train N]
"""

import json
import os
import sys
import time
import types
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
HASH_BITS = 23


def worker(args):
    """Time each order's cache and test part scores with the imported version; print JSON
    ``{row: [s, checksum]}``."""
    sys.path.insert(0, str(HERE))
    import bench_dependency_second_order as setup
    from _ab import fastest

    options = types.SimpleNamespace(data=Path(args["data"]), n_train=args["n_train"])
    _, X_train, _, _, X_eval = setup.load(options)
    out = {}
    for order in (1, 2):
        structure = setup.structure_of(order, HASH_BITS)
        structure.kernel_data(structure.make_batch(X_train[:5]), training=True)
        batch = structure.make_batch(X_train)
        start = time.perf_counter()
        data = structure.kernel_data(batch, training=True)
        seconds = time.perf_counter() - start
        checksum = sum(int(np.sum(value, dtype=np.int64)) for value in data
                       if isinstance(value, np.ndarray) and value.dtype.kind == "i")
        out[f"training cache, order {order} (EWT train)"] = [seconds, checksum]
        del data, batch
        test = structure.make_batch(X_eval["test"])
        w = np.random.RandomState(0).randn(test.n_weights)
        structure.part_scores(structure.make_batch(X_eval["test"][:5]), w)
        seconds, scores = fastest(lambda: structure.part_scores(test, w))
        out[f"part scores, order {order} (EWT test)"] = [seconds, float(scores.sum())]
    print(json.dumps(out))


def main():
    sys.path.insert(0, str(HERE))
    from _ab import agree, alternate, ewt_arguments, least_and_median
    from _record import markdown_table, record

    cli = ewt_arguments(__doc__, "the first N training sentences (default: all)")
    if cli.worker is not None:
        return worker(json.loads(cli.worker))

    args = dict(data=str(cli.data.resolve()), n_train=cli.n_train)
    load = os.getloadavg()[0]
    base_rev, results = alternate(__file__, cli.baseline, cli.rounds, args)
    rows = []
    for name in results["candidate"][0]:
        least, median = least_and_median(results, lambda run: [run[name][0]])
        rows.append([name, f"{least['baseline']:.2f}", f"{least['candidate']:.2f}",
                     f"{least['candidate'] / least['baseline']:.3f}",
                     f"{median['candidate'] / median['baseline']:.3f}",
                     "yes" if agree(results, name) else "no"])
    table = markdown_table(["work", f"s {base_rev}", "s working tree", "ratio (least)",
                            "ratio (median)", "same result"], rows)
    subset = "all" if cli.n_train is None else f"the first {cli.n_train}"
    body = (f"{table}\n\nSeconds to build the training feature cache of EWT train ({subset} "
            "training sentences, the projective ones kept), and to score every part of EWT "
            f"test as prediction does; the least over {cli.rounds} alternating fresh "
            "processes (ratios: of the least, and of the medians).  'same result': the sum of "
            "the cache's integer arrays, or of the part scores, equal to the last digit in "
            f"every process.  Load average at the start: {load:.2f}, at the end: "
            f"{os.getloadavg()[0]:.2f}.")
    print(body)
    if cli.no_record:
        return
    record("A parser's hashed features against a baseline", body,
           "cd benchmarks && python bench_parser_features_ab.py" + "".join(
               f" {a}" for a in sys.argv[1:]))


if __name__ == "__main__":
    main()
