"""Main job: train a chain model on the embedded OCR letters and compare it with a baseline.

Run ``python -m sklearn_struct`` (or the ``sklearn-struct-demo`` console script).
The data are the subset of the Taskar/Kassel OCR letters shipped inside the
package (see ``sklearn_struct/datasets/data/README.txt``): handwritten words,
one 16x8 binary image per letter.  The chain model is trained on fold 0 and
tested on fold 1; the baseline is scikit-learn's ``LogisticRegression`` on the
individual letter images, which cannot use the neighbouring letters.  Both use
the same ``C`` (default 0.3; the chain model converges to a relative duality gap
of 1e-4 in about 35 passes, annealing ``C`` from a small value as in section
7.1.1 of Collins et al. 2008).  The baseline is L-BFGS with its default tolerance,
which converges in about 120 iterations.  Both models run on one core.

The numba kernels compile on the first run (a note on stderr says so) and are
loaded from numba's on-disk cache afterwards.
"""

import argparse
import sys
import time

import numpy as np
from numba.core import event
from sklearn.linear_model import LogisticRegression
from threadpoolctl import threadpool_limits  # a dependency of scikit-learn

from .datasets import load_ocr_default
from .eg import EGCRF, EGStructuredSVM
from .metrics import sequence_accuracy_score, token_accuracy_score

ESTIMATORS = {"crf": EGCRF, "svm": EGStructuredSVM}
#: Iterations allowed to the baseline's L-BFGS (it converges in about 120 at the default C).
BASELINE_MAX_ITER = 300


def _parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m sklearn_struct",
        description="Train a chain model on the embedded OCR letters and compare it with "
        "per-letter logistic regression.",
    )
    parser.add_argument("--model", choices=sorted(ESTIMATORS), default="crf",
                        help="EGCRF (crf, default) or EGStructuredSVM (svm)")
    parser.add_argument("--C", type=float, default=0.3,
                        help="inverse regularisation strength (scikit-learn convention), "
                        "for both models")
    parser.add_argument("--max-iter", type=int, default=100,
                        help="maximum effective passes of the chain model (it stops at a "
                        "relative duality gap of 1e-4)")
    parser.add_argument("--random-state", type=int, default=0)
    parser.add_argument("--verbose", "-v", action="count", default=0,
                        help="print the chain model's progress after every pass (C, while it "
                        "is annealed towards its target, primal and dual objectives)")
    return parser.parse_args(argv)


def _top_transitions(transition, names, n=8):
    """The ``n`` label pairs the model rewards most when adjacent."""
    order = np.argsort(transition, axis=None)[::-1][:n]
    rows, cols = np.unravel_index(order, transition.shape)
    return [f"{names[a]}{names[b]} ({transition[a, b]:+.2f})" for a, b in zip(rows, cols)]


class _CompileNotice(event.Listener):
    """Say once on stderr that numba compiles: only a run with a cold cache does."""

    def __init__(self):
        self.said = False

    def on_start(self, event):
        if not self.said:
            self.said = True
            print("compiling numba kernels (first run only, about 15 s)...", file=sys.stderr,
                  flush=True)

    def on_end(self, event):
        pass


def main(argv=None):
    """Run the demo and print its report.

    Parameters
    ----------
    argv : list of str, optional
        The demo's options; None reads ``sys.argv[1:]``.

    Returns
    -------
    report : dict
        Letter and word accuracies of the chain model and the baseline.
    """
    args = _parse_args(argv)
    # The problem is small: a multi-threaded BLAS only loses time on synchronisation
    # (the baseline took 10 to 50 s instead of 1 s on a loaded two-core machine).
    with threadpool_limits(limits=1, user_api="blas"), \
            event.install_listener("numba:compile", _CompileNotice()):
        return _run(args)


def _run(args):
    data = load_ocr_default()
    train = np.flatnonzero(data.folds == 0)
    test = np.flatnonzero(data.folds == 1)
    X_train = [data.X[i] for i in train]
    y_train = [data.target_names[data.y[i]] for i in train]
    X_test = [data.X[i] for i in test]
    y_test = [data.target_names[data.y[i]] for i in test]
    print(f"OCR letters (embedded subset): {len(train)} training words "
          f"({sum(map(len, y_train))} letters), {len(test)} test words "
          f"({sum(map(len, y_test))} letters), {len(data.target_names)} classes")

    model = ESTIMATORS[args.model](C=args.C, max_iter=args.max_iter,
                                   random_state=args.random_state, verbose=args.verbose)
    start = time.perf_counter()
    model.fit(X_train, y_train)
    chain_seconds = time.perf_counter() - start
    chain_pred = model.predict(X_test)

    baseline = LogisticRegression(C=args.C, max_iter=BASELINE_MAX_ITER)
    start = time.perf_counter()
    baseline.fit(np.vstack(X_train), np.concatenate(y_train))
    baseline_seconds = time.perf_counter() - start
    lengths = np.cumsum([len(y) for y in y_test])[:-1]
    baseline_pred = np.split(baseline.predict(np.vstack(X_test)), lengths)

    report = {
        name: {"letter_accuracy": token_accuracy_score(y_test, pred),
               "word_accuracy": sequence_accuracy_score(y_test, pred),
               "seconds": seconds}
        for name, pred, seconds in [
            (type(model).__name__, chain_pred, chain_seconds),
            ("LogisticRegression (per letter)", baseline_pred, baseline_seconds),
        ]
    }
    print(f"\n{'model':<34}{'letter acc':>11}{'word acc':>10}{'fit s':>8}")
    for name, row in report.items():
        print(f"{name:<34}{row['letter_accuracy']:>11.3f}{row['word_accuracy']:>10.3f}"
              f"{row['seconds']:>8.1f}")
    print(f"\n{type(model).__name__}: {model.n_iter_} passes, "
          f"primal {model.primal_objective_:.4f}, "
          f"dual {model.dual_objective_:.4f}, "
          f"relative gap {model.duality_gap_ / abs(model.primal_objective_):.2e}")
    print(f"LogisticRegression: L-BFGS, tol {baseline.tol:g}, {baseline.n_iter_[0]} "
          f"iterations (max_iter {BASELINE_MAX_ITER}); both models on one core")
    print("Most rewarded letter transitions:",
          ", ".join(_top_transitions(model.transition_, model.classes_)))
    return report


if __name__ == "__main__":
    main()
