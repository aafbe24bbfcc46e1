"""L1-M3N on the OCR letters, protocol of Zhu, Xing & Zhang (KDD 2009), section 5.2.

OCR-N (N = 100, 150, 200, 250): N words drawn at random from each of the 10
folds of Taskar's OCR data, then 10-fold CV over those folds.  The paper does
not say which side of each split is the training set; this script follows the
M3N papers' OCR convention and trains on ONE fold (N words) and tests on the
other nine (``--train-on-nine`` swaps it).  Letter error rate and training time
per solver and regularisation value (as Figures 4 and 6).

Run from benchmarks/:
    python bench_l1m3n_ocr.py [--data ../../shared/data/ocr_letters_taskar/letters_flat.npz]
        [--sizes 100 150 200 250] [--cv-folds 10] [--solvers subgradient em cutting_plane]
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
from sklearn_struct.l1m3n import L1M3N  # noqa: E402

DEFAULT_DATA = (Path(__file__).resolve().parents[2] / "shared" / "data" / "ocr_letters_taskar"
                / "letters_flat.npz")
GRIDS = {
    "subgradient": ("lam", [50.0, 100.0, 200.0], dict(solver="subgradient", max_iter=300)),
    "em": ("lam", [10.0, 100.0], dict(solver="em", C=1.0, max_iter=10)),
    "cutting_plane": ("C", [0.1], dict(solver="cutting_plane", max_iter=30)),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 150, 200, 250])
    parser.add_argument("--cv-folds", type=int, default=10, help="CV folds actually run")
    parser.add_argument("--solvers", nargs="+", default=list(GRIDS))
    parser.add_argument("--train-on-nine", action="store_true")
    args = parser.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    data = load_ocr_letters(args.data)
    rng = np.random.RandomState(0)
    rows = []
    for size in args.sizes:
        chosen = np.concatenate([
            rng.choice(np.flatnonzero(data.folds == f), size, replace=False) for f in range(10)
        ])
        folds = data.folds[chosen]
        for solver in args.solvers:
            param, values, fixed = GRIDS[solver]
            for value in values:
                errors, seconds, nonzero = [], [], []
                for f in range(args.cv_folds):
                    train = chosen[(folds != f) if args.train_on_nine else (folds == f)]
                    test = chosen[(folds == f) if args.train_on_nine else (folds != f)]
                    model = L1M3N(**fixed, **{param: value})
                    start = time.perf_counter()
                    model.fit([data.X[i] for i in train], [data.y[i] for i in train])
                    seconds.append(time.perf_counter() - start)
                    errors.append(1 - model.score([data.X[i] for i in test],
                                                  [data.y[i] for i in test]))
                    nonzero.append(np.count_nonzero(model.weights_))
                rows.append([f"OCR{size}", solver, f"{param}={value}",
                             f"{np.mean(errors):.3f} ± {np.std(errors):.3f}",
                             f"{np.mean(seconds):.1f}", int(np.mean(nonzero))])
                print(rows[-1], flush=True)
    command = (f"python bench_l1m3n_ocr.py --sizes {' '.join(map(str, args.sizes))} "
               f"--cv-folds {args.cv_folds} --solvers {' '.join(args.solvers)}"
               + (" --train-on-nine" if args.train_on_nine else ""))
    body = (
        "Letter error rate (mean ± std over the CV folds run), training time per fit and "
        "non-zero weights (of 26*128 + 26*26 + 2*26), training on "
        + ("nine folds" if args.train_on_nine else "one fold") + ".\n\n"
        + markdown_table(["data", "solver", "regularisation", "error", "fit s", "non-zero"],
                         rows)
    )
    record("L1M3N OCR letters (KDD 2009 Figures 4 and 6)", body, command)


if __name__ == "__main__":
    main()
