"""Dependency parsing on UD English-EWT: EGCRF, EGStructuredSVM and an averaged perceptron.

All models share the input (gold UPOS+XPOS, ``DependencyTokenEncoder(pos="both")``
fitted on train) and the features (the hashed first-order templates of
McDonald et al. 2005, ``2 ** hash_bits`` weights) and decode with single-root
Eisner (``projective``) or single-root Chu-Liu-Edmonds (``--non-projective``).
The projective models train on the projective training sentences (the others
are dropped and counted); the non-projective ones on all of them.  After every
pass the script scores dev and test (UAS, punctuation excluded by the CoNLL-X
rule, and included); the pass reported is the one with the best dev UAS.
EG anneals C (section 7.1.1, the estimators' default): from the uniform dual at
the target C = 0.1 the weights start huge (every sentence saturates) and test
UAS fell from 74% to 63% in four passes while the primal shrank.

Each model is one run (they can go in separate processes side by side):
EG runs continue one effective pass per ``fit`` with ``warm_start=True``
(dual variables and the annealing schedule carry over; each pass gets its own
visiting-order seed); the perceptron runs one epoch per ``fit`` likewise.
Given several C, EG solves each to a relative duality gap of ``--tol`` (or
``--passes`` passes) and moves on to the next, warm-started (section 7.1.2).
EGCRF is also scored with minimum-Bayes-risk decoding: the tree with the most
expected correct heads under the model (Eisner over the arc marginals, the
structure's argmax on the marginals as scores), the decoding that maximises
expected UAS.

Run from benchmarks/:
    python bench_dependency_ewt.py --model egcrf --C 0.1 0.2 0.4 0.8 --passes 8
    python bench_dependency_ewt.py --model perceptron --passes 10 [--non-projective]
    python bench_dependency_ewt.py --model egssvm --C 0.03 --solver working_set --passes 30
"""

import argparse
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
from sklearn_struct._prediction import predict_marginals  # noqa: E402
from sklearn_struct.preprocessing import DependencyTokenEncoder  # noqa: E402
from sklearn_struct.structures import DependencyTreeStructure  # noqa: E402

MODELS = {"egcrf": EGCRF, "egssvm": EGStructuredSVM, "perceptron": StructuredPerceptron}


def sentences(data):
    return [{"form": f, "upos": u, "xpos": x} for f, u, x in zip(data.form, data.upos, data.xpos)]


def mbr_heads(model, X):
    """Heads of the trees with the most expected correct heads under a CRF."""
    structure = model.structure_
    batch = structure.make_batch(X)
    mu = predict_marginals(structure, batch, model.weights_)
    return np.split(structure.argmax(batch, mu), batch.unit_offsets[1:-1])


def build(args, structure):
    if args.model == "perceptron":
        return StructuredPerceptron(structure=structure, max_iter=1, warm_start=True)
    solver = {} if args.solver is None else {"solver": args.solver}
    if args.no_annealing and args.model == "egssvm":
        solver["smoothing"] = False
    return MODELS[args.model](C=args.C[0], structure=structure, max_iter=1, warm_start=True,
                              annealing=not args.no_annealing, **solver)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    default = Path(__file__).resolve().parents[2] / "shared" / "data" / "ud_en_ewt_r2.16"
    parser.add_argument("--data", type=Path, default=default)
    parser.add_argument("--model", choices=sorted(MODELS), required=True)
    parser.add_argument("--C", type=float, nargs="+", default=[0.1],
                        help="EG models only: one value, or an increasing path of values, "
                        "each warm-started from the previous one's dual (section 7.1.2)")
    parser.add_argument("--passes", type=int, default=10,
                        help="per value of C, not counting the first one's annealing passes")
    parser.add_argument("--tol", type=float, default=0.01,
                        help="EG: move to the next C (or stop) at this relative duality gap")
    parser.add_argument("--non-projective", action="store_true")
    parser.add_argument("--no-annealing", action="store_true",
                        help="EG: start from the uniform dual at the first C, annealing neither C "
                        "nor the hinge's temperature (sensible at small C)")
    parser.add_argument("--hash-bits", type=int, default=23)
    parser.add_argument("--solver", choices=["working_set"], default=None,
                        help="EGStructuredSVM's solver (default: online EG); a pass is then "
                             "an oracle pass, with the cached passes before it")
    args = parser.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    load = os.getloadavg()[0]
    split = {name: load_conllu(args.data / f"en_ewt-ud-{name}.conllu.gz")
             for name in ("train", "dev", "test")}
    train_sentences, y_train = sentences(split["train"]), split["train"].head
    dropped = 0
    if not args.non_projective:
        train_sentences, y_train, dropped = filter_projective(train_sentences, y_train)
    encoder = DependencyTokenEncoder(pos="both").fit(train_sentences)
    X_train = encoder.transform(train_sentences)
    X_eval = {name: encoder.transform(sentences(split[name])) for name in ("dev", "test")}
    structure = DependencyTreeStructure(projective=not args.non_projective,
                                        hash_bits=args.hash_bits)
    model = build(args, structure)
    rows, best, best_mbr, epoch = [], None, None, 0
    for C in (args.C if args.model != "perceptron" else [None]):
        if C is not None:
            model.set_params(C=C)
        at_target = 0
        while at_target < args.passes:
            epoch += 1
            model.set_params(random_state=epoch)
            start = time.perf_counter()
            model.fit(X_train, y_train)
            fit_seconds = time.perf_counter() - start
            start = time.perf_counter()
            heads = {name: model.predict(X) for name, X in X_eval.items()}
            predict_seconds = time.perf_counter() - start
            uas = {name: 100 * attachment_score(split[name].head, heads[name],
                                                forms=split[name].form) for name in heads}
            uas_all = 100 * attachment_score(split["test"].head, heads["test"])
            mbr = ({name: 100 * attachment_score(split[name].head, mbr_heads(model, X),
                                                 forms=split[name].form)
                    for name, X in X_eval.items()} if args.model == "egcrf" else None)
            history = model.history_
            if "mistakes" in history:
                objective = (f"{int(history['mistakes'][-1])} sentences wrong", "", "")
                at_target += 1
                converged = False
            else:
                gap = history["gap"][-1] / history["primal"][-1]
                objective = (f"{history['primal'][-1]:.6g}", f"{gap:.2e}",
                             f"{history['C'][-1]:.3g}")
                at_target += history["C"][-1] == C  # annealing passes do not count
                converged = history["C"][-1] == C and gap <= args.tol
            row = [epoch, *objective, f"{fit_seconds:.1f}", f"{predict_seconds:.1f}",
                   f"{uas['dev']:.2f}", f"{uas['test']:.2f}", f"{uas_all:.2f}"]
            if mbr is not None:
                row += [f"{mbr['dev']:.2f}", f"{mbr['test']:.2f}"]
                if best_mbr is None or mbr["dev"] > best_mbr[0]:
                    best_mbr = (mbr["dev"], mbr["test"], epoch)
            rows.append(row)
            print(" | ".join(map(str, row)), flush=True)
            if best is None or uas["dev"] > best[0]:
                best = (uas["dev"], uas["test"], uas_all, epoch)
            if converged:
                break
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    kind = "non-projective" if args.non_projective else "projective"
    Cs = ", ".join(f"{C:g}" for C in args.C)
    name = {"egcrf": f"EGCRF C={Cs}", "egssvm": f"EGStructuredSVM C={Cs}",
            "perceptron": "averaged perceptron"}[args.model]
    if args.solver is not None:
        name += f", {args.solver.replace('_', ' ')}"
    table = markdown_table(
        ["pass", "primal / mistakes", "relative gap", "C (annealed)", "fit s", "predict dev+test s",
         "dev UAS", "test UAS (punct. excluded)", "test UAS (all)"]
        + (["dev UAS, MBR", "test UAS, MBR (punct. excluded)"] if best_mbr else []), rows)
    summary = (f"**{name}, {kind}**: best dev UAS {best[0]:.3f} at pass {best[3]}, where test "
               f"UAS is **{best[1]:.2f}** (punctuation excluded) and {best[2]:.2f} (all words). "
               f"{len(X_train)} training sentences ({dropped} non-projective dropped), "
               f"2^{args.hash_bits} hashed weights, peak RSS {peak:.2f} GB, load average "
               f"{load:.2f} at the start.")
    if best_mbr is not None:
        summary += (f" Minimum-Bayes-risk decoding: best dev UAS {best_mbr[0]:.3f} at pass "
                    f"{best_mbr[2]}, where test UAS is **{best_mbr[1]:.2f}** (punctuation "
                    "excluded).")
    print(summary)
    argv = " ".join(sys.argv[1:])
    weights = "" if args.hash_bits == 23 else f", 2^{args.hash_bits} weights"
    record(f"Dependency parsing on EWT: {name}, {kind}{weights}", f"{summary}\n\n{table}",
           f"cd benchmarks && python bench_dependency_ewt.py {argv}")


if __name__ == "__main__":
    main()
