"""Second-order (sibling) against first-order projective parsing on UD English-EWT.

The setup of ``bench_dependency_ewt.py``: gold UPOS+XPOS
(``DependencyTokenEncoder(pos="both")`` fitted on train), ``2 ** hash_bits``
hashed weights, single-root projective trees, the non-projective training
sentences dropped, UAS with punctuation excluded (CoNLL-X rule) on dev and
test after every pass, C chosen on dev (the pass and C with the best dev UAS
are reported).  ``--order 2`` is :class:`SiblingDependencyStructure` (arcs and
adjacent siblings, McDonald & Pereira 2006, second-order Eisner), ``--order
1`` :class:`DependencyTreeStructure` with the same arc features.

Three modes:

* training (default): one model (``--model``) of one order, dev and test UAS
  after every pass (a ``fit`` callback; EG: several C are solved in turn, one
  ``fit`` each, warm-started from the previous one's dual); a table of dev/test UAS
  and seconds per pass, the number of parts (the EG dual keeps a few numbers
  per part of every training sentence) and the peak RSS;
* ``--timing``: for each model of ``--models``, ``--passes`` passes of the
  first-order and of the second-order structure on the same sentences, after
  a warm-up fit (numba's cache loaded), and the ratio of seconds per pass;
* ``--inference``: seconds of the batch operations of both orders, and of the
  second order's generic dynamic program in place of its hand-written
  second-order Eisner and inside-outside.

Run from benchmarks/ (full experiment; each run is one process, and each with
``--order 1`` too for the first-order baseline; the C values are the best ones
of the first order and, for the SVM, its neighbours 0.0075 and 0.015, each in a run
of its own, ``results/dependency_second_order.md``):
    python bench_dependency_second_order.py --model egcrf --order 2 --C 0.1 --passes 20
    python bench_dependency_second_order.py --model egssvm --order 2 --C 0.01 --passes 16
    python bench_dependency_second_order.py --model perceptron --order 2 --passes 10
    python bench_dependency_second_order.py --timing --passes 2
    python bench_dependency_second_order.py --inference --n-train 1000
``--n-train 500`` runs any of them on the first 500 training sentences.
"""

import argparse
import copy
import os
import resource
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _record import markdown_table, record  # noqa: E402

from sklearn_struct import EGCRF, EGStructuredSVM, StructuredPerceptron  # noqa: E402
from sklearn_struct.datasets import filter_projective, load_conllu  # noqa: E402
from sklearn_struct.metrics import attachment_score  # noqa: E402
from sklearn_struct.preprocessing import DependencyTokenEncoder  # noqa: E402
from sklearn_struct.structures import (DependencyTreeStructure,  # noqa: E402
                                       SiblingDependencyStructure)

MODELS = {"egcrf": EGCRF, "egssvm": EGStructuredSVM, "perceptron": StructuredPerceptron}
NAMES = {"egcrf": "EGCRF", "egssvm": "EGStructuredSVM", "perceptron": "averaged perceptron"}


def sentences(data, n=None):
    return [{"form": f, "upos": u, "xpos": x}
            for f, u, x in zip(data.form[:n], data.upos[:n], data.xpos[:n])]


def structure_of(order, hash_bits):
    if order == 1:
        return DependencyTreeStructure(hash_bits=hash_bits)
    return SiblingDependencyStructure(hash_bits=hash_bits)


def build(model, structure, C, smoothing=True):
    if model == "perceptron":
        return StructuredPerceptron(structure=structure, warm_start=True)
    options = {} if smoothing else {"smoothing": False}  # (EGStructuredSVM only)
    return MODELS[model](C=C, structure=structure, warm_start=True, **options)


def load(args):
    split = {name: load_conllu(args.data / f"en_ewt-ud-{name}.conllu.gz")
             for name in ("train", "dev", "test")}
    train, y_train, dropped = filter_projective(sentences(split["train"], args.n_train),
                                                split["train"].head[:args.n_train])
    encoder = DependencyTokenEncoder(pos="both").fit(train)
    X_eval = {name: encoder.transform(sentences(split[name])) for name in ("dev", "test")}
    return split, encoder.transform(train), y_train, dropped, X_eval


def parts(structure, X):
    """Parts of the training sentences (the EG dual holds theta and mu for each)."""
    return int(structure.make_batch(X).part_offsets[-1])


def train(args):
    split, X_train, y_train, dropped, X_eval = load(args)
    structure = structure_of(args.order, args.hash_bits)
    model = build(args.model, structure, args.C[0], smoothing=not args.no_smoothing)
    rows, best, C_of_pass = [], None, {}
    clock = {"last": 0.0}

    def on_pass(_, fitted):
        """Dev and test UAS of the model after each pass (the fit's clock paused)."""
        nonlocal best
        fit_seconds = time.perf_counter() - clock["last"]
        start = time.perf_counter()
        heads = {name: fitted.predict(X) for name, X in X_eval.items()}
        uas = {name: 100 * attachment_score(split[name].head, heads[name],
                                            forms=split[name].form) for name in heads}
        predict_seconds = time.perf_counter() - start
        rows.append([len(rows) + 1, "", "", "", f"{fit_seconds:.1f}", f"{predict_seconds:.1f}",
                     f"{uas['dev']:.2f}", f"{uas['test']:.2f}"])
        print(" | ".join(map(str, rows[-1])), flush=True)
        if best is None or uas["dev"] > best[0]:
            best = (uas["dev"], uas["test"], len(rows))
        clock["last"] = time.perf_counter()

    # One fit per C (warm-started from the last C's dual): the training feature cache is
    # built once per fit, not once per pass.  A fit whose annealing had not reached C yet
    # is continued until ``--passes`` passes ran at C.
    for C in (args.C if args.model != "perceptron" else [None]):
        at_target = 0
        while at_target < args.passes:
            first_row = len(rows)
            model.set_params(max_iter=args.passes - at_target, random_state=len(rows) + 1,
                             **({} if C is None else {"C": C}))
            clock["last"] = time.perf_counter()
            model.fit(X_train, y_train, callback=on_pass)
            history = model.history_
            if "mistakes" in history:
                for row, mistakes in zip(rows[first_row:], history["mistakes"]):
                    row[1] = f"{int(mistakes)} sentences wrong"
                at_target += len(rows) - first_row
                continue
            annealing = 0
            for done, primal, gap, C_then in zip(history["passes"], history["primal"],
                                                 history["gap"], history["C"]):
                row = rows[first_row + int(round(done)) - 1]
                row[1:4] = f"{primal:.6g}", f"{gap / primal:.2e}", f"{C_then:.3g}"
                annealing += C_then != C
                C_of_pass[row[0]] = C_then
            for row in rows[first_row:]:  # passes after the annealing are not all evaluated
                C_of_pass.setdefault(row[0], C)
            at_target += len(rows) - first_row - annealing
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    n_parts = parts(structure, X_train)
    Cs = ", ".join(f"{C:g}" for C in args.C)
    name = (NAMES[args.model] + (" (smoothing=False)" if args.no_smoothing else "")
            + ("" if args.model == "perceptron" else f" C={Cs}"))
    chosen = "" if best[2] not in C_of_pass else f" (at C={C_of_pass[best[2]]:.3g})"
    summary = (f"**{name}, order {args.order}**: best dev UAS {best[0]:.2f} at pass "
               f"{best[2]}{chosen}, where test UAS is **{best[1]:.2f}** (punctuation "
               f"excluded). {len(X_train)} training sentences ({dropped} non-projective "
               f"dropped), {n_parts} parts ({n_parts * 16 / 1e9:.2f} GB for one theta and "
               f"one mu per part), 2^{args.hash_bits} hashed weights, peak RSS {peak:.2f} GB, "
               f"load average {args.load:.2f} at the start.")
    print(summary)
    if args.no_record:
        return
    table = markdown_table(["pass", "primal / mistakes", "relative gap", "C (annealed)",
                            "fit s", "predict dev+test s", "dev UAS", "test UAS"], rows)
    subset = "" if args.n_train is None else f", first {args.n_train} training sentences"
    weights = "" if args.hash_bits == 23 else f", 2^{args.hash_bits} weights"
    record(f"Second-order parsing on EWT: {name}, order {args.order}{subset}{weights}",
           f"{summary}\n\n{table}",
           f"cd benchmarks && python bench_dependency_second_order.py {' '.join(sys.argv[1:])}")


def timing(args):
    """Seconds per pass of each model, first against second order, on the same sentences."""
    _, X_train, y_train, dropped, _ = load(args)
    rows = []
    for model_name in args.models:
        seconds = {}
        for order in (1, 2):
            structure = structure_of(order, args.hash_bits)
            build(model_name, structure, args.C[0]).fit(X_train[:5], y_train[:5])  # warm-up
            model = build(model_name, structure, args.C[0]).set_params(max_iter=1)
            times = []
            for epoch in range(args.passes):
                model.set_params(random_state=epoch + 1)
                start = time.perf_counter()
                model.fit(X_train, y_train)
                times.append(time.perf_counter() - start)
            seconds[order] = float(np.mean(times))
            print(model_name, order, " ".join(f"{t:.2f}" for t in times), flush=True)
        rows.append([NAMES[model_name], f"{seconds[1]:.2f}", f"{seconds[2]:.2f}",
                     f"{seconds[2] / seconds[1]:.2f}"])
    n_parts = {order: parts(structure_of(order, args.hash_bits), X_train) for order in (1, 2)}
    summary = (f"Mean seconds per pass over {args.passes} passes (warm-started fits of one pass "
               f"each, numba's cache loaded) on {len(X_train)} projective training sentences "
               f"({dropped} dropped), 2^{args.hash_bits} hashed weights: {n_parts[1]} parts in "
               f"the first order, {n_parts[2]} in the second; load average {args.load:.2f} at "
               "the start.")
    print(summary)
    table = markdown_table(["model", "first order s/pass", "second order s/pass",
                            "ratio second / first"], rows)
    print(table)
    if args.no_record:
        return
    subset = "all" if args.n_train is None else f"first {args.n_train}"
    record(f"Seconds per pass, second against first order ({subset} training sentences)",
           f"{summary}\n\n{table}",
           f"cd benchmarks && python bench_dependency_second_order.py {' '.join(sys.argv[1:])}")


def _seconds(function, repeats=5):
    """The fastest of ``repeats`` calls, after one call that loads numba's cache."""
    function()
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def inference(args):
    """Seconds of each batch operation over the training sentences, first and second order,
    and the second order's generic dynamic program in place of its hand-written overrides."""
    _, X_train, _, dropped, _ = load(args)
    first, second = structure_of(1, args.hash_bits), structure_of(2, args.hash_bits)
    generic = copy.copy(second)
    generic.kernel_ops = second.kernel_ops.generic()  # the hypergraph's marginals and argmax
    rows = []
    for name, structure in (("first order", first), ("second order", second),
                            ("second order, generic program", generic)):
        batch = structure.make_batch(X_train)
        w = np.random.RandomState(0).randn(batch.n_weights) * 0.01
        scores = structure.part_scores(batch, w)
        mu = structure.marginals(batch, scores)[0]
        rows.append([name, batch.part_offsets[-1]] + [f"{_seconds(call):.3f}" for call in (
            lambda: structure.part_scores(batch, w),
            lambda: structure.marginals(batch, scores),
            lambda: structure.argmax(batch, scores),
            lambda: structure.expected_features(batch, mu))])
        print(" | ".join(map(str, rows[-1])), flush=True)
    summary = (f"Seconds of one call over {len(X_train)} projective training sentences "
               f"({dropped} dropped), 2^{args.hash_bits} hashed weights, random weights; the "
               f"fastest of 5 calls; load average {args.load:.2f} at the start.")
    table = markdown_table(["structure", "parts", "part_scores", "marginals", "argmax",
                            "expected_features"], rows)
    print(summary)
    print(table)
    if args.no_record:
        return
    subset = "all" if args.n_train is None else f"first {args.n_train}"
    record(f"Inference and features, second against first order ({subset} training sentences)",
           f"{summary}\n\n{table}",
           f"cd benchmarks && python bench_dependency_second_order.py {' '.join(sys.argv[1:])}")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    default = Path(__file__).resolve().parents[2] / "shared" / "data" / "ud_en_ewt_r2.16"
    parser.add_argument("--data", type=Path, default=default)
    parser.add_argument("--model", choices=sorted(MODELS), default="egcrf")
    parser.add_argument("--order", type=int, choices=[1, 2], default=2)
    parser.add_argument("--C", type=float, nargs="+", default=[0.1],
                        help="EG models: one value, or an increasing path of values, each "
                        "warm-started from the previous one's dual")
    parser.add_argument("--passes", type=int, default=8,
                        help="per value of C, not counting the first one's annealing passes")
    parser.add_argument("--hash-bits", type=int, default=23)
    parser.add_argument("--no-smoothing", action="store_true",
                        help="EGStructuredSVM on the hinge dual itself (smoothing=False)")
    parser.add_argument("--n-train", type=int, default=None,
                        help="only the first N training sentences (before dropping the "
                        "non-projective ones)")
    parser.add_argument("--timing", action="store_true",
                        help="time passes of the first and second order instead of training")
    parser.add_argument("--inference", action="store_true",
                        help="time the batch operations (scores, marginals, argmax, features) "
                        "of both orders, and the second order's generic dynamic program")
    parser.add_argument("--models", nargs="+", choices=sorted(MODELS),
                        default=["egcrf", "egssvm", "perceptron"], help="--timing: the models")
    parser.add_argument("--no-record", action="store_true",
                        help="print the tables without recording them in results/")
    args = parser.parse_args()
    if args.no_smoothing and (args.model != "egssvm" or args.timing or args.inference):
        parser.error("--no-smoothing applies to training --model egssvm only")
    args.load = os.getloadavg()[0]
    warnings.simplefilter("ignore", ConvergenceWarning)
    (timing if args.timing else inference if args.inference else train)(args)


if __name__ == "__main__":
    main()
