"""EGCRF (multiclass) against LogisticRegression on MNIST: same objective, side by side.

Data: the 10k MNIST test images of ../shared/data/mnist_partial (the training images
are not in the shared data), split 8k train / 2k test; pixels scaled to [0, 1].
Both models minimise 1/2||W||^2 + C sum_i -log p(y_i | x_i) without intercept, so
they must agree: the script reports objective, coefficient difference, test
accuracy, prediction agreement and wall time (EGCRF's first-call numba compilation
is timed separately by a warm-up fit on a tiny problem).

Run from benchmarks/:  python bench_eg_mnist.py [--data PATH]
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _record import markdown_table, record  # noqa: E402

from sklearn_struct.datasets import load_mnist_idx  # noqa: E402
from sklearn_struct.eg import EGCRF  # noqa: E402


def primal(coef, X, y, C):
    scores = X @ coef.T
    top = scores.max(axis=1, keepdims=True)
    log_z = (top + np.log(np.exp(scores - top).sum(axis=1, keepdims=True))).ravel()
    return 0.5 * np.sum(coef ** 2) + C * np.sum(log_z - scores[np.arange(len(y)), y])


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    default = Path(__file__).resolve().parents[2] / "shared" / "data" / "mnist_partial"
    parser.add_argument("--data", type=Path, default=default)
    parser.add_argument("--Cs", type=float, nargs="+", default=[0.01, 0.1, 1.0])
    args = parser.parse_args()
    data = load_mnist_idx(args.data / "t10k-images-idx3-ubyte.gz",
                          args.data / "t10k-labels-idx1-ubyte.gz")
    X = data.data.astype(np.float64) / 255.0
    y = data.target.astype(np.int64)
    X_train, y_train, X_test, y_test = X[:8000], y[:8000], X[8000:], y[8000:]

    start = time.perf_counter()
    EGCRF(max_iter=1, tol=0).fit(X_train[:50], y_train[:50])  # numba compilation / cache load
    compile_seconds = time.perf_counter() - start

    rows = []
    for C in args.Cs:
        start = time.perf_counter()
        eg = EGCRF(C=C, tol=1e-6, max_iter=300, random_state=0).fit(X_train, y_train)
        eg_seconds = time.perf_counter() - start
        start = time.perf_counter()
        lr = LogisticRegression(C=C, fit_intercept=False, tol=1e-8, max_iter=5000)
        lr.fit(X_train, y_train)
        lr_seconds = time.perf_counter() - start
        p_eg, p_lr = primal(eg.coef_, X_train, y_train, C), primal(lr.coef_, X_train, y_train, C)
        rel_coef = np.abs(eg.coef_ - lr.coef_).max() / np.abs(lr.coef_).max()
        agree = np.mean(eg.predict(X_test) == lr.predict(X_test))
        rows.append([
            C, f"{p_eg:.6f}", f"{p_lr:.6f}", f"{(p_eg - p_lr) / p_lr:.1e}", f"{rel_coef:.1e}",
            f"{eg.score(X_test, y_test):.4f}", f"{lr.score(X_test, y_test):.4f}", f"{agree:.4f}",
            f"{eg.history_['passes'][-1]:.1f}", f"{eg_seconds:.2f}",
            f"{eg.history_['seconds'].sum():.2f}", f"{lr_seconds:.2f}",
        ])
        print(rows[-1], flush=True)
    header = ["C", "EG primal", "LR primal", "rel. diff", "max coef diff / max coef",
              "EG test acc", "LR test acc", "prediction agreement", "EG passes",
              "EG fit s", "EG epoch s (no gap eval)", "LR (lbfgs) fit s"]
    body = (
        f"MNIST test images (8000 train / 2000 test, pixels/255), multinomial, no intercept. "
        f"EGCRF(tol=1e-6 relative duality gap, random_state=0) vs "
        f"LogisticRegression(lbfgs, tol=1e-8). EG numba compile/cache load: "
        f"{compile_seconds:.1f} s (not included).\n\n" + markdown_table(header, rows)
    )
    print(body)
    record("EGCRF vs LogisticRegression on MNIST", body,
           "cd benchmarks && python bench_eg_mnist.py")


if __name__ == "__main__":
    main()
