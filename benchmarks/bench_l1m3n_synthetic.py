"""L1-M3N on the synthetic protocol of Zhu, Xing & Zhang (KDD 2009), section 5.1.

Data: ``make_correlated_chains`` (d = 100 features per token, 30 relevant in 10
correlated groups, chains of 8 binary labels, 1,000 sequences per data set,
one data set per seed).

* Table 1: non-zero *average* weights (over the folds of a 10-fold CV on the
  first data set: train on one fold, 100 sequences) of the 200 state weights
  (Total) and of the 140 weights of the 70 irrelevant features (Irrelevant),
  per solver and regularisation value.
* Figure 2: test error (per token) against the training size, L1M3N (EM and
  proximal subgradient) vs EGStructuredSVM (L2 M3N) vs EGCRF (L2 CRF): K-fold
  splits with K = 20, 10, 7, 5, 4 (train on one fold of 50..250 sequences, test
  on the rest), best value of each model's small regularisation grid (the paper
  also reports each model at its best constant).

Run from benchmarks/:
    python bench_l1m3n_synthetic.py [--datasets 10] [--folds 0] [--table-folds 10]
        [--part both|table1|figure2]
(``--folds F`` caps the folds used per training size in Figure 2, 0 = all, the
paper's protocol; ``--table-folds`` the folds of the Table 1 CV, 10 = the paper's).
Writes the tables to results/l1m3n_synthetic.md (examples/plot_l1m3n_feature_selection.py draws
a one-data-set version of Figure 2 by itself).
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import KFold

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _record import markdown_table, record  # noqa: E402

from sklearn_struct.datasets import make_correlated_chains  # noqa: E402
from sklearn_struct.eg import EGCRF, EGStructuredSVM  # noqa: E402
from sklearn_struct.l1m3n import L1M3N  # noqa: E402

N_RELEVANT = 30
EM = dict(solver="em", max_em_iter=15)  # the paper's 15 EM iterations
SUBGRADIENT = dict(solver="subgradient", max_iter=500)
# one parameter, C, for every solver: the same grid is the same set of problems
C_GRID = [0.01, 0.02, 0.05, 0.1]
TABLE1_GRIDS = {
    "cutting_plane": ("C", C_GRID, dict(solver="cutting_plane")),
    "subgradient": ("C", C_GRID, SUBGRADIENT),
    "em": ("C", C_GRID, EM),
}
FIGURE2_MODELS = {
    "L1M3N (EM)": (L1M3N, "C", [0.02, 0.05], EM),
    "L1M3N (subgradient)": (L1M3N, "C", [0.02, 0.05], SUBGRADIENT),
    "EGStructuredSVM (L2 M3N)": (EGStructuredSVM, "C", [0.01, 0.1, 1.0], {}),
    "EGCRF (L2 CRF)": (EGCRF, "C", [0.01, 0.1, 1.0], {}),
}
SIZES_K = [20, 10, 7, 5, 4]


def token_error(model, X, y):
    return 1.0 - model.score(X, y)


def subset(items, indices):
    return [items[i] for i in indices]


def table1(X, y, n_folds):
    rows = []
    folds = list(KFold(10, shuffle=True, random_state=0).split(X))[:n_folds]
    for name, (param, values, fixed) in TABLE1_GRIDS.items():
        for value in values:
            coefs, errors, seconds = [], [], []
            for test, train in folds:  # train on ONE fold (100 sequences)
                model = L1M3N(**fixed, **{param: value})
                start = time.perf_counter()
                model.fit(subset(X, train), subset(y, train))
                seconds.append(time.perf_counter() - start)
                coefs.append(model.coef_)
                errors.append(token_error(model, subset(X, test), subset(y, test)))
            average = np.mean(coefs, axis=0)  # (2, 100): 200 state weights
            rows.append([
                name, value, int(np.count_nonzero(average)),
                int(np.count_nonzero(average[:, N_RELEVANT:])),
                f"{np.mean(errors):.3f}", f"{np.mean(seconds):.1f}",
            ])
            print(rows[-1], flush=True)
    return rows


def figure2(datasets, n_folds):
    """Errors and irrelevant input features used, per model, of shape (sizes, data sets)."""
    errors = {name: np.full((len(SIZES_K), len(datasets)), np.nan) for name in FIGURE2_MODELS}
    irrelevant = {name: np.full((len(SIZES_K), len(datasets)), np.nan) for name in FIGURE2_MODELS}
    sizes = []
    for s, K in enumerate(SIZES_K):
        sizes.append(1000 // K)
        for d, (X, y) in enumerate(datasets):
            folds = list(KFold(K, shuffle=True, random_state=d).split(X))[:n_folds or None]
            for name, (cls, param, values, fixed) in FIGURE2_MODELS.items():
                per_value = []
                for value in values:
                    fold_errors, fold_irrelevant = [], []
                    for test, train in folds:
                        model = cls(**fixed, **{param: value})
                        model.fit(subset(X, train), subset(y, train))
                        fold_errors.append(token_error(model, subset(X, test), subset(y, test)))
                        used = np.any(model.coef_ != 0.0, axis=0)
                        fold_irrelevant.append(used[N_RELEVANT:].sum())
                    per_value.append((np.mean(fold_errors), np.mean(fold_irrelevant)))
                errors[name][s, d], irrelevant[name][s, d] = min(per_value)
            print(K, d, {n: round(e[s, d], 3) for n, e in errors.items()}, flush=True)
    return np.array(sizes), errors, irrelevant


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=10)
    parser.add_argument("--folds", type=int, default=0, help="Figure 2 folds per size (0: all)")
    parser.add_argument("--table-folds", type=int, default=10, help="Table 1 CV folds run")
    parser.add_argument("--part", choices=["both", "table1", "figure2"], default="both")
    args = parser.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    command = (f"python bench_l1m3n_synthetic.py --datasets {args.datasets} --folds {args.folds} "
               f"--table-folds {args.table_folds} --part {args.part}")
    datasets = [make_correlated_chains(n_samples=1000, random_state=seed)
                for seed in range(args.datasets)]

    if args.part in ("both", "table1"):
        rows = table1(*datasets[0], args.table_folds)
        body = (
            f"Non-zero average weights over {args.table_folds} folds of a 10-fold CV (first data "
            "set, train on one fold of 100 sequences, test on the other 900): Total of the 200 "
            "state weights, Irrelevant of the 140 on the 70 irrelevant features; mean token "
            "error on the test folds; mean fit time (shared 2-core machine). EM: 15 "
            "iterations, weights with tau_k < 1e-3 sum(tau) discarded.\n\n"
            + markdown_table(["solver", "C", "Total", "Irrelevant", "test error",
                              "fit s"], rows)
            + "\n\nPaper (Table 1, its own constants): the subgradient method keeps 136-140 of "
            "the 140 irrelevant weights at every radius; cutting plane and EM range from no "
            "irrelevant weight (13-34 non-zero in total) at strong regularisation to all 200 at "
            "weak regularisation. The subgradient solver here takes proximal steps (soft "
            "thresholding) on the same objective and returns its best iterate, so its zeros are "
            "exact."
        )
        record("L1M3N synthetic: sparsity per solver (KDD 2009 Table 1)", body, command)

    if args.part in ("both", "figure2"):
        sizes, errors, irrelevant = figure2(datasets, args.folds)
        header = ["training size"] + list(FIGURE2_MODELS)
        table = [
            [int(size)] + [f"{np.mean(errors[name][s]):.3f} ± {np.std(errors[name][s]):.3f} "
                           f"({np.mean(irrelevant[name][s]):.0f})" for name in FIGURE2_MODELS]
            for s, size in enumerate(sizes)
        ]
        grids = "; ".join(f"{name}: {param} in {values}"
                          for name, (_, param, values, _) in FIGURE2_MODELS.items())
        folds = "every one" if not args.folds else f"each of the first {args.folds}"
        body = (
            f"Token error (mean ± std over {args.datasets} data sets; per data set and size, "
            f"train on {folds} of the K folds and test on the rest; each model at "
            f"the best value of its grid -- {grids}). In parentheses: irrelevant input features "
            "(of 70) used by the selected model, mean over data sets.\n\n"
            + markdown_table(header, table)
            + "\n\nPaper (Figure 2, 10 data sets, all folds): L1-M3N below M3N and L2-CRF at "
            "every size, errors within about 0.18-0.3 falling with the training size."
        )
        record("L1M3N synthetic: error vs training size (KDD 2009 Figure 2)", body, command)


if __name__ == "__main__":
    main()
