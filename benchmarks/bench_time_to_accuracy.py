"""Time to accuracy on UD English-EWT: EG against the averaged perceptron, side by side.

Dependency parsing with gold UPOS+XPOS, punctuation excluded (the protocol of
``bench_dependency_second_order.py``, whose loading and structures this script
uses): first order (``--order 1``, :class:`DependencyTreeStructure`) or second
order (``--order 2``, :class:`SiblingDependencyStructure`), ``2 ** 23`` hashed
weights.  Three learners, each in a fresh process of its own, one after the
other (a second-order EG fit holds about 13 GB):

* the averaged perceptron, ``--epochs`` epochs;
* ``EGStructuredSVM(C=0.01)`` (each order's best dev C in the records),
  ``--passes`` passes, its default smoothed-hinge start at the truth;
* ``EGCRF(C=0.1, start="truth")`` (the records' C), ``--passes`` passes:
  the dual point of ``w = 0`` at the target ``C``, no annealing;
* with ``--annealed``, also ``EGCRF(C=0.1)`` with its default uniform start and
  annealing, for comparison;
* with ``--shuffled``, also ``EGCRF(C=0.05, start="truth", order="shuffle")``: a new
  permutation every pass instead of gap sampling, whose checks of the gap cost one
  log partition per visit instead of an evaluation that scores every sentence again
  (see ``bench_eg_gap_schedule.py``), at a C below the records' best, where the
  optimum is reached in fewer passes.

Each fit runs with its default ``tol`` (the EG fits evaluate their duality gap
on their own schedule, and that time counts) and a callback that scores dev
after every pass with the fit's clock paused: the curves are dev UAS against
the fit's seconds, as a user who stops a fit at that point would have spent.
A warm-up fit on five sentences first loads numba's cache (or compiles), so no
curve includes compilation; the first pass includes building the training
features, alike for all.  The summary gives the perceptron's best dev UAS and
its time to it, and for each EG fit the first pass at or above that UAS, its
time, and the ratio of the times.

Run from benchmarks/ (about 15 minutes at first order, 25 at second)::

    python bench_time_to_accuracy.py --order 1
    python bench_time_to_accuracy.py --order 2
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _record import markdown_table, record  # noqa: E402

#: Hashed weights, 2 ** HASH_BITS (the records' setting).
HASH_BITS = 23
LEARNERS = {
    "perceptron": "averaged perceptron",
    "egssvm": "EGStructuredSVM C=0.01",
    "egcrf": "EGCRF C=0.1, start=\"truth\"",
    "egcrf_annealed": "EGCRF C=0.1, annealed uniform start",
    "egcrf_shuffled": "EGCRF C=0.05, start=\"truth\", order=\"shuffle\"",
}


def build(learner, structure, passes, epochs):
    from sklearn_struct import EGCRF, EGStructuredSVM, StructuredPerceptron
    if learner == "perceptron":
        return StructuredPerceptron(structure=structure, max_iter=epochs, random_state=0)
    if learner == "egssvm":
        return EGStructuredSVM(C=0.01, structure=structure, max_iter=passes, random_state=0)
    if learner == "egcrf_shuffled":
        return EGCRF(C=0.05, structure=structure, start="truth", order="shuffle",
                     max_iter=passes, random_state=0)
    start = "truth" if learner == "egcrf" else "uniform"
    return EGCRF(C=0.1, structure=structure, start=start, max_iter=passes, random_state=0)


def child(args):
    """One learner's curve: a JSON line per pass (fit seconds so far, dev and test UAS)."""
    import bench_dependency_second_order as setup
    from sklearn_struct.metrics import attachment_score
    split, X_train, y_train, dropped, X_eval = setup.load(args)
    structure = setup.structure_of(args.order, HASH_BITS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        build(args.child, structure, 1, 1).fit(X_train[:5], y_train[:5])  # numba's cache
    model = build(args.child, structure, args.passes, args.epochs)
    clock = {"fit": 0.0, "since": 0.0}

    def on_pass(_, fitted):
        clock["fit"] += time.perf_counter() - clock["since"]
        uas = {name: 100 * attachment_score(split[name].head, fitted.predict(X),
                                            forms=split[name].form)
               for name, X in X_eval.items()}
        print(json.dumps({"fit_seconds": clock["fit"], "dev": uas["dev"],
                          "test": uas["test"]}), flush=True)
        clock["since"] = time.perf_counter()

    clock["since"] = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (a fit stopped at its passes warns)
        model.fit(X_train, y_train, callback=on_pass)
    print(json.dumps({"sentences": len(X_train), "dropped": dropped,
                      "peak_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6}),
          flush=True)


def curve_of(args, learner):
    command = [sys.executable, __file__, "--child", learner, "--order", str(args.order),
               "--passes", str(args.passes), "--epochs", str(args.epochs),
               "--data", str(args.data)]
    if args.n_train is not None:
        command += ["--n-train", str(args.n_train)]
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    lines = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    for line in lines[:-1]:
        print(learner, f"{line['fit_seconds']:.1f} s", f"dev {line['dev']:.2f}", flush=True)
    return lines[:-1], lines[-1]


def first_reaching(curve, target):
    """``(pass, seconds)`` of the first pass whose dev UAS is at least ``target``, or None."""
    for number, point in enumerate(curve, 1):
        if point["dev"] >= target:
            return number, point["fit_seconds"]
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    default = Path(__file__).resolve().parents[2] / "shared" / "data" / "ud_en_ewt_r2.16"
    parser.add_argument("--data", type=Path,
                        default=Path(os.environ.get("SKLEARN_STRUCT_SHARED_DATA", default.parent))
                        / "ud_en_ewt_r2.16")
    parser.add_argument("--order", type=int, choices=(1, 2), default=1)
    parser.add_argument("--passes", type=int, default=12, help="passes of each EG fit")
    parser.add_argument("--epochs", type=int, default=10, help="epochs of the perceptron")
    parser.add_argument("--n-train", type=int, default=None)
    parser.add_argument("--annealed", action="store_true",
                        help="also EGCRF's default start (uniform, annealed)")
    parser.add_argument("--shuffled", action="store_true",
                        help="also EGCRF at C=0.05 from the truth in a new permutation every pass")
    parser.add_argument("--child", choices=sorted(LEARNERS), help=argparse.SUPPRESS)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    if args.child:
        return child(args)
    load = os.getloadavg()[0]
    learners = (["perceptron", "egssvm", "egcrf"] + (["egcrf_annealed"] if args.annealed else [])
                + (["egcrf_shuffled"] if args.shuffled else []))
    curves, facts = {}, None
    for learner in learners:
        curves[learner], facts = curve_of(args, learner)
    best = max(point["dev"] for point in curves["perceptron"])
    reference = first_reaching(curves["perceptron"], best)
    rows = []
    for learner in learners:
        reached = first_reaching(curves[learner], best)
        top = max(curves[learner], key=lambda point: point["dev"])
        rows.append([LEARNERS[learner], f"{top['dev']:.2f}", f"{top['test']:.2f}",
                     "not reached" if reached is None else f"{reached[0]} ({reached[1]:.1f} s)",
                     "" if reached is None else f"{reached[1] / reference[1]:.2f}"])
    summary = (f"Order {args.order}, {facts['sentences']} projective training sentences "
               f"({facts['dropped']} dropped), gold tags, punctuation excluded.  The perceptron's "
               f"best dev UAS is **{best:.2f}**, first reached at epoch {reference[0]} after "
               f"{reference[1]:.1f} s of fit; the table gives when each learner first reached "
               f"it, and the ratio of its time to the perceptron's.  1-minute load average "
               f"{load:.2f} at the start.")
    table = markdown_table(["learner", "best dev UAS", "test UAS at it",
                            "pass reaching the perceptron's best", "time ratio"], rows)
    longest = max(len(curve) for curve in curves.values())
    curve_rows = [[number + 1] + [
        f"{curves[learner][number]['fit_seconds']:.1f} / {curves[learner][number]['dev']:.2f}"
        if number < len(curves[learner]) else "" for learner in learners]
        for number in range(longest)]
    curve_table = markdown_table(["pass"] + [f"{LEARNERS[learner]}: fit s / dev UAS"
                                             for learner in learners], curve_rows)
    print(summary)
    print(table)
    print(curve_table)
    if args.no_record:
        return
    subset = "" if args.n_train is None else f", first {args.n_train} training sentences"
    record(f"Time to accuracy on EWT, order {args.order}{subset}",
           f"{summary}\n\n{table}\n\n{curve_table}",
           f"cd benchmarks && python bench_time_to_accuracy.py {' '.join(sys.argv[1:])}")


if __name__ == "__main__":
    main()
