"""When EGCRF evaluates its duality gap: the visits' lagged gaps against the geometric schedule.

An exact gap evaluation scores every example again and computes its log partition.
Both versions check the gap on the same geometric schedule (after every pass up to the
eighth, then a quarter of the passes done apart, sooner when the gap's rate predicts
``tol``).  Where the visits can give their examples' gaps (the log loss on a structure
with its own log partition, an order other than ``"gap"``, ``C`` at its target), this
tree has the visits of a pass that ends on a check give them, for one log partition
each, and evaluates the gap exactly only when their sum, the lagged gap, says that it is
near ``tol``; the baseline commit evaluated it at every check.  ``order="gap"`` is the
control: its draws need the evaluations' fresh gaps, and both versions evaluate them.
This script checks the baseline out into a temporary folder (``git worktree``) and fits
the same models with both versions, alternating between them in fresh processes:

* ``OCR letters``: the main job's fit, train fold 0 (626 words, raw pixels), C = 0.3,
  ``tol=1e-4``, the default uniform start with ``C`` annealed;
* ``CoNLL-2000``: ``bench_eg_conll.py``'s chunker (8936 sentences, a chain without
  start/end parts), C = 5, ``tol=1e-3``, the default start;
* ``EWT, first order``: the first ``--ewt-sentences`` projective training sentences of
  ``bench_time_to_accuracy.py``'s parser (gold tags, ``2 ** 23`` hashed weights), C = 0.1,
  ``start="truth"``, ``tol=1e-3``.

Each fit runs on one thread; its time is the process's CPU seconds for the whole fit,
gap evaluations included.  The table gives, per version, the passes to the certified
gap, the evaluations and their seconds, the fit's seconds (the least over the rounds)
and the certified relative gap.

Run from benchmarks/:  python bench_eg_gap_schedule.py [--baseline REV] [--rounds N]
"""

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DATA = Path(os.environ.get("SKLEARN_STRUCT_SHARED_DATA", REPO.parent / "shared" / "data"))
ORDERS = ("shuffle", "gap")


def _ocr():
    from sklearn_struct import EGCRF
    from sklearn_struct.datasets import load_ocr_default

    ocr = load_ocr_default()
    X = [x for x, fold in zip(ocr.X, ocr.folds) if fold == 0]
    y = [ocr.target_names[t] for t, fold in zip(ocr.y, ocr.folds) if fold == 0]
    return X, y, lambda order: EGCRF(C=0.3, tol=1e-4, max_iter=300, order=order,
                                     random_state=0)


def _conll():
    from sklearn_struct import EGCRF
    from sklearn_struct.datasets import load_conll
    from sklearn_struct.preprocessing import SequenceDictVectorizer, conll_token_features
    from sklearn_struct.structures import ChainStructure

    train = load_conll(DATA / "conll2000_chunking" / "train.txt.gz")
    features = [conll_token_features(w, p) for w, p in zip(train.word, train.pos)]
    X = SequenceDictVectorizer().fit_transform(features)
    return X, train.tags, lambda order: EGCRF(
        C=5.0, structure=ChainStructure(start_end=False), tol=1e-3, max_iter=300, order=order,
        random_state=0)


def _ewt(n_sentences):
    import bench_dependency_second_order as setup
    from sklearn_struct import EGCRF

    args = argparse.Namespace(data=DATA / "ud_en_ewt_r2.16", n_train=n_sentences)
    _, X, y, _, _ = setup.load(args)
    structure = setup.structure_of(1, 23)
    return X, y, lambda order: EGCRF(C=0.1, structure=structure, start="truth", tol=1e-3,
                                     max_iter=300, order=order, random_state=0)


def worker(args):
    """Fit every problem in both orders with the imported version; print JSON
    ``{"problem, order": {passes, evaluations, eval_seconds, seconds, gap, primal}}``."""
    sys.path.insert(0, str(HERE))
    out = {}
    for name, problem in (("OCR letters", _ocr), ("CoNLL-2000", _conll),
                          ("EWT, first order", lambda: _ewt(args["ewt_sentences"]))):
        X, y, model = problem()
        with warnings.catch_warnings():  # numba's cache, for the fits' own dtypes and calls
            warnings.simplefilter("ignore")
            for order in ORDERS:
                model(order).set_params(max_iter=2).fit(X[:5], y[:5])
        for order in ORDERS:
            start = time.process_time()
            fitted = model(order).fit(X, y)
            seconds = time.process_time() - start
            history = fitted.history_
            out[f"{name}, {order}"] = {
                "passes": float(history["passes"][-1]), "evaluations": len(history["passes"]),
                "eval_seconds": float(history["eval_seconds"].sum()), "seconds": seconds,
                "gap": float(fitted.duality_gap_ / fitted.primal_objective_),
                "primal": float(fitted.primal_objective_)}
    print(json.dumps(out))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", default="HEAD")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--ewt-sentences", type=int, default=3000)
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    cli = parser.parse_args()
    if cli.worker is not None:
        return worker(json.loads(cli.worker))

    sys.path.insert(0, str(HERE))
    from _ab import alternate, least_and_median
    from _record import markdown_table, record

    args = dict(ewt_sentences=cli.ewt_sentences)
    load = os.getloadavg()[0]
    base_rev, results = alternate(__file__, cli.baseline, cli.rounds, args)
    rows = []
    for name in results["candidate"][0]:
        least, _ = least_and_median(results, lambda run: [run[name]["seconds"]])
        for side, label in (("baseline", base_rev), ("candidate", "working tree")):
            run = results[side][-1][name]
            rows.append([name, label, f"{run['passes']:.0f}",
                         f"{run['evaluations']} ({run['eval_seconds']:.1f} s)",
                         f"{least[side]:.1f}", f"{run['gap']:.2e}", f"{run['primal']:.6g}"])
    table = markdown_table(["problem, order", "version", "passes", "gap evaluations (s)",
                            "fit CPU s (least)", "certified relative gap", "primal"], rows)
    body = (f"{table}\n\nEach fit on one thread; passes, evaluations and the gap are those of "
            f"the last of {cli.rounds} alternating fresh processes per version (the fits are "
            "deterministic), the CPU seconds of the whole fit the least over them.  EWT: the "
            f"first {cli.ewt_sentences} training sentences, projective ones kept.  Load "
            f"average at the start: {load:.2f}, at the end: {os.getloadavg()[0]:.2f}.")
    print(body)
    record("Gap evaluations: the visits' lagged gaps against the geometric schedule", body,
           "cd benchmarks && python bench_eg_gap_schedule.py" + "".join(
               f" {a}" for a in sys.argv[1:]))


if __name__ == "__main__":
    main()
