"""Training curves of EGCRF and EGStructuredSVM on the OCR letters (fold protocol).

Taskar et al.'s OCR words (16x8 binary pixels per letter, 26 labels): train on the
words of one fold, test on the words of the other nine.  Chain model with start/end
parts on raw pixels.  Every pass records primal, dual, relative duality gap and
test letter error: the model is trained one effective pass at a time with
``warm_start=True`` (the dual variables carry over, as in one long run).

Run from benchmarks/:  python bench_eg_ocr.py [--data PATH] [--fold 0] [--passes 40]
                       python bench_eg_ocr.py --passes 40 --c-grid 0.01 0.1 1 10
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _record import markdown_table, record  # noqa: E402

from sklearn_struct.datasets import load_ocr_letters  # noqa: E402
from sklearn_struct.eg import EGCRF, EGStructuredSVM  # noqa: E402


def load_fold(path, fold):
    data = load_ocr_letters(path)
    train = np.flatnonzero(data.folds == fold)
    test = np.flatnonzero(data.folds != fold)
    pick = lambda seq, idx: [seq[i] for i in idx]  # noqa: E731
    return pick(data.X, train), pick(data.y, train), pick(data.X, test), pick(data.y, test)


def training_curve(model, X, y, X_test, y_test, n_passes):
    """Per pass: primal, dual, relative gap, test letter error, seconds, C of the pass
    (the default annealing starts at a small C and reaches the target after a few passes)."""
    model.set_params(warm_start=True, max_iter=1, tol=0.0)
    rows, elapsed = [], 0.0
    for _ in range(n_passes):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            start = time.perf_counter()
            model.fit(X, y)
            elapsed += time.perf_counter() - start
        error = 1.0 - model.score(X_test, y_test)
        rows.append((model.primal_objective_, model.dual_objective_,
                     model.duality_gap_ / model.primal_objective_, error, elapsed,
                     model.history_["C"][-1]))
    return np.array(rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    default = (Path(__file__).resolve().parents[2] / "shared" / "data" / "ocr_letters_taskar"
               / "letters_flat.npz")
    parser.add_argument("--data", type=Path, default=default)
    parser.add_argument("--fold", type=int, default=0)
    parser.add_argument("--passes", type=int, default=40)
    parser.add_argument("--C", type=float, default=1.0)
    parser.add_argument("--c-grid", type=float, nargs="+", default=None,
                        help="instead of the curves: relative gap after --passes per C")
    args = parser.parse_args()
    X, y, X_test, y_test = load_fold(args.data, args.fold)
    print(f"{len(X)} training words, {len(X_test)} test words", flush=True)
    if args.c_grid:
        gap_per_C(args, X, y, X_test, y_test)
        return
    # a RandomState instance (not an int) so that every one-pass fit draws new examples
    curves = {
        name: training_curve(cls(C=args.C, random_state=np.random.RandomState(0)), X, y,
                             X_test, y_test, args.passes)
        for name, cls in (("EGCRF", EGCRF), ("EGStructuredSVM", EGStructuredSVM))
    }
    shown = sorted({0, 1, 4, 9, 19, args.passes - 1} & set(range(args.passes)))
    rows = [[name, k + 1, f"{c[k, 5]:.3g}", f"{c[k, 0]:.3f}", f"{c[k, 1]:.3f}", f"{c[k, 2]:.1e}",
             f"{c[k, 3]:.4f}", f"{c[k, 4]:.1f}"]
            for name, c in curves.items() for k in shown]
    body = (f"OCR letters, train fold {args.fold} ({len(X)} words), test on the other folds "
            f"({len(X_test)} words); C={args.C}, chain with start/end parts, raw pixels.\n\n"
            + markdown_table(["estimator", "pass", "C of the pass", "primal", "dual",
                              "relative gap",
                              "test letter error", "seconds"], rows))
    print(body)
    record("EG training curves on OCR letters", body,
           "cd benchmarks && python bench_eg_ocr.py " + " ".join(sys.argv[1:]))


def gap_per_C(args, X, y, X_test, y_test):
    """Relative duality gap and test error after ``args.passes`` passes, per C."""
    rows = []
    for C in args.c_grid:
        for cls in (EGCRF, EGStructuredSVM):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                start = time.perf_counter()
                model = cls(C=C, max_iter=args.passes, tol=1e-4, random_state=0).fit(X, y)
                seconds = time.perf_counter() - start
            h = model.history_
            rows.append([cls.__name__, f"{C:g}", f"{h['passes'][-1]:.0f}",
                         f"{model.duality_gap_ / model.primal_objective_:.1e}",
                         f"{1.0 - model.score(X_test, y_test):.4f}", f"{seconds:.1f}"])
            print(rows[-1], flush=True)
    body = (f"OCR letters, train fold {args.fold} ({len(X)} words), test on the other folds; "
            "default estimators (annealing on) with tol=1e-4 and "
            f"max_iter={args.passes} passes.\n\n"
            + markdown_table(["estimator", "C", "passes", "relative gap", "test letter error",
                              "seconds"], rows))
    print(body)
    record("EG convergence per C on OCR letters", body,
           "cd benchmarks && python bench_eg_ocr.py " + " ".join(sys.argv[1:]))


if __name__ == "__main__":
    main()
