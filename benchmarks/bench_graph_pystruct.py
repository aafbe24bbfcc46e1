"""GraphStructure against pystruct's grid CRFs, on pystruct's own synthetic grids.

Issue 50, item 2, a first record.  Data: ``pystruct.datasets`` generators (blocks,
checker and crosses, multinomial and explicit), each image a grid of nodes whose features
are the noisy per-label evidence and whose edges join 4-neighbours.  pystruct (the wheel of
``../../shared/wheels``) learns ``GridCRF`` with ``OneSlackSSVM`` (cutting planes, cvxopt)
and ``FrankWolfeSSVM`` (BCFW), with each inference method that installs here
(``max-product``: loopy max-product on grids; ``lp``: the LP relaxation by cvxopt, on the
small grids only, where it finishes); ad3 and qpbo do not build on Python 3.11 (see the
wheel's README).  This package learns ``GraphStructure(symmetric=True)`` on the same grids
(the same node features; edges right and down, with pairwise weights tied over the two
directions of an edge, as ``GridCRF``'s) with ``EGStructuredSVM(solver="working_set")``, whose
argmax is the LP relaxation's dual by MPLP with a decoding step.  Our C is chosen by
cross-validation on the training images; pystruct's learners run at C = 1 and at that C.
The table gives the test accuracy over nodes and the fit's wall seconds, numba's
compilation timed apart (a warm-up fit on two images).  Then the inference time of one
grid, against its side, on random scores (unaries N(0, 1), Potts edges of weight 0.5):
pystruct's ``GridCRF.inference`` with max-product, and ``GraphStructure.argmax``.  Then
issue 50's item 4: MPLP's time per sweep on grids from 10x10 to 300x300, against edges.
With ``--experiment objective``: the learners' weights at one C, each scored by the SSVM
objective that they all minimise (pystruct's ``GridCRF`` with the LP inference, exact on
these grids), with ``FrankWolfeSSVM`` run from several seeds: how close each comes to the
optimum, and how its test accuracy varies from run to run.

Run from benchmarks/:
    python bench_graph_pystruct.py [--experiment learning|inference|scale|all]
    [--C 0.1 1 10 100] [--n-test 20] [--datasets NAME ...] [--sides ...] [--sweeps 50]
    [--seeds 5] [--no-record]
    python bench_graph_pystruct.py --experiment objective --C 1 --n-test 200 \
        --datasets 'blocks multinomial'
"""

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _record import markdown_table, record  # noqa: E402

from sklearn_struct.eg import EGStructuredSVM  # noqa: E402
from sklearn_struct.structures import GraphStructure  # noqa: E402


#: Training images of each generator, and the default number of test images.
N_TRAIN = N_TEST = 20
DATASETS = ("blocks multinomial", "checker multinomial", "crosses explicit", "blocks (binary)")


def grid_edges(height, width):
    index = np.arange(height * width).reshape(height, width)
    return np.r_[np.c_[index[:, :-1].ravel(), index[:, 1:].ravel()],
                 np.c_[index[:-1].ravel(), index[1:].ravel()]]


def datasets(n_samples):
    """``{name: (X, Y)}`` of pystruct's generators: images (h, w, n_states), labels (h, w)."""
    from pystruct import datasets as ps

    np.random.seed(0)  # (the generators without a seed draw from numpy's global one)
    return {
        "blocks multinomial": ps.generate_blocks_multinomial(n_samples=n_samples, noise=0.5,
                                                             seed=0),
        "checker multinomial": ps.generate_checker_multinomial(n_samples=n_samples, noise=1.5),
        "crosses explicit": ps.generate_crosses_explicit(n_samples=n_samples, noise=10),
        "blocks (binary)": ps.generate_blocks(n_samples=n_samples, seed=0),
    }


def as_graphs(images):
    edges = grid_edges(*images.shape[1:3])
    return [(image.reshape(-1, image.shape[-1]).astype(np.float64), edges) for image in images]


def timed(fit):
    start = time.perf_counter()
    model = fit()
    return model, time.perf_counter() - start


def our_model():
    return EGStructuredSVM(structure=GraphStructure(symmetric=True), solver="working_set",
                           max_iter=100, random_state=0)


def ours(X_train, Y_train, Cs):
    """C chosen by 4-fold cross-validation over the training images: the C and the
    seconds of the search."""
    from sklearn.model_selection import GridSearchCV, KFold

    graphs, labels = as_graphs(X_train), [y.ravel() for y in Y_train]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        our_model().fit(graphs[:2], labels[:2])  # (compiles)
        search, search_seconds = timed(lambda: GridSearchCV(
            our_model(), {"C": list(Cs)}, cv=KFold(4), refit=False).fit(graphs, labels))
    return search.best_params_["C"], search_seconds


def ours_at(X_train, Y_train, X_test, Y_test, C):
    """The fit on all the training images at ``C``: its test accuracy and seconds."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, seconds = timed(lambda: our_model().set_params(C=C).fit(
            as_graphs(X_train), [y.ravel() for y in Y_train]))
    predicted = np.concatenate(model.predict(as_graphs(X_test)))
    return np.mean(predicted == np.concatenate([y.ravel() for y in Y_test])), seconds


def theirs(X_train, Y_train, X_test, Y_test, C, learner, inference, seed=None,
           weights=False):
    """pystruct's fit at ``C``: its test accuracy and seconds (and, with ``weights``, its
    weights).  ``FrankWolfeSSVM`` visits the images in a random order (``seed``)."""
    from pystruct.learners import FrankWolfeSSVM, OneSlackSSVM
    from pystruct.models import GridCRF

    n_states = X_train.shape[-1]
    model = GridCRF(n_states=n_states, inference_method=inference, neighborhood=4)
    if learner == "OneSlackSSVM":
        svm = OneSlackSSVM(model, C=C, inference_cache=50, tol=0.1, max_iter=200)
    else:
        svm = FrankWolfeSSVM(model, C=C, max_iter=50, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, seconds = timed(lambda: svm.fit(list(X_train), list(Y_train)))
    predicted = np.concatenate([np.ravel(y) for y in svm.predict(list(X_test))])
    accuracy = np.mean(predicted == np.concatenate([y.ravel() for y in Y_test]))
    return (accuracy, seconds, svm.w) if weights else (accuracy, seconds)


def ssvm_objective(X_train, Y_train, C, w):
    """``||w||^2 / 2 + C sum_i max_y (loss(y_i, y) + w . (psi(x_i, y) - psi(x_i, y_i)))``
    of pystruct's ``GridCRF`` (its weight layout): pystruct's ``objective_primal``, the
    maxima by its LP relaxation (an upper bound on each, exact where the LP is tight)."""
    from pystruct.models import GridCRF
    from pystruct.utils import objective_primal

    model = GridCRF(n_states=X_train.shape[-1], inference_method="lp", neighborhood=4)
    model.initialize(list(X_train), list(Y_train))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return objective_primal(model, w, list(X_train), list(Y_train), C)


def pystruct_layout(w, n_states):
    """Our ``GraphStructure(symmetric=True)`` weights in ``GridCRF``'s layout: the same
    unary block, the tied pairwise weights from our upper triangle to its lower one."""
    upper = np.zeros((n_states, n_states))
    upper[np.triu_indices(n_states)] = w[n_states * n_states:]
    return np.r_[w[:n_states * n_states], upper.T[np.tril_indices(n_states)]]


def local_polytope(n, K, edges):
    """The equality constraints ``(A, b)`` of one graph's local polytope, over its node
    then edge indicator variables in the part layout of :class:`GraphStructure` (each
    node's labels sum to 1; each edge's table sums, over either end's label, to that
    end's indicator)."""
    m, KK = len(edges), K * K
    labels = np.arange(K)
    node_rows = np.repeat(np.arange(n), K)
    base = n * K + KK * np.arange(m)[:, None, None]  # (edge, label, other label)
    tail = base + K * labels[None, :, None] + labels[None, None, :]  # row: tail's label
    head = base + labels[None, :, None] + K * labels[None, None, :]  # row: head's label
    rows, columns, values = [node_rows], [np.arange(n * K)], [np.ones(n * K)]
    for side, table in ((0, tail), (1, head)):
        row = n + 2 * K * np.arange(m)[:, None] + side * K + labels[None, :]  # (edge, label)
        rows += [np.repeat(row.ravel(), K), row.ravel()]
        columns += [table.ravel(), (K * edges[:, side][:, None] + labels[None, :]).ravel()]
        values += [np.ones(m * KK), -np.ones(m * K)]
    A = sp.csr_matrix((np.concatenate(values), (np.concatenate(rows), np.concatenate(columns))),
                      shape=(n + 2 * K * m, n * K + m * KK))
    return A, np.r_[np.ones(n), np.zeros(2 * K * m)]


def exact_references(scores, n, K, edges):
    """HiGHS on one graph: the local-polytope LP's optimum, the nodes where its solution
    is fractional, and the MAP score (the integer program)."""
    from scipy.optimize import Bounds, LinearConstraint, linprog, milp

    A, b = local_polytope(n, K, edges)
    lp = linprog(-scores, A_eq=A, b_eq=b, bounds=(0, None), method="highs")
    nodes = lp.x[:n * K].reshape(n, K)
    fractional = int(np.sum(np.any((nodes > 1e-6) & (nodes < 1 - 1e-6), axis=1)))
    integer = milp(-scores, constraints=LinearConstraint(A, b, b), bounds=Bounds(0, 1),
                   integrality=np.r_[np.ones(n * K), np.zeros(len(scores) - n * K)])
    assert lp.status == 0 and integer.status == 0
    return -lp.fun, fractional, -integer.fun


def inference_times(sides, repeat):
    from pystruct.models import GridCRF

    rows = []
    rng = np.random.RandomState(0)
    K = 3
    for side in sides:
        unaries = rng.randn(side, side, K)
        structure = GraphStructure()
        batch = structure.make_batch([(unaries.reshape(-1, K), grid_edges(side, side))], K)
        w = np.r_[np.eye(K).ravel(), 0.5 * np.eye(K).ravel()]  # unaries as features, Potts
        scores = structure.part_scores(batch, w)
        structure.argmax(batch, scores)  # (compiles)
        ours_seconds = min(timed(lambda: structure.argmax(batch, scores))[1]
                           for _ in range(repeat))
        Y, bound, certified = structure.relaxed_argmax(batch, scores)
        crf = GridCRF(n_states=K, inference_method="max-product", neighborhood=4)
        crf.initialize([unaries], [np.arange(side * side).reshape(side, side) % K])
        pairwise = 0.5 * np.eye(K)
        w_theirs = np.r_[np.eye(K).ravel(), pairwise[np.tril_indices(K)]]
        theirs_seconds = min(timed(lambda: crf.inference(unaries, w_theirs))[1]
                             for _ in range(repeat))
        theirs_labels = np.ravel(crf.inference(unaries, w_theirs))
        theirs_score = scores @ structure.encode(batch, theirs_labels)
        lp, fractional, best = exact_references(scores, side * side, K, grid_edges(side, side))
        rows.append([f"{side}x{side}", f"{1e3 * theirs_seconds:.1f}", f"{1e3 * ours_seconds:.1f}",
                     f"{theirs_seconds / ours_seconds:.1f}", "yes" if certified[0] else "no",
                     f"{theirs_score:.2f}", f"{scores @ structure.encode(batch, Y):.2f}",
                     f"{bound[0]:.2f}", f"{lp:.2f}", str(fractional), f"{best:.2f}"])
        print(*rows[-1], sep="  ")
    return rows


def scale_times(sides, sweeps, repeat):
    """MPLP's sweeps on grids of growing side: seconds per sweep against the edges."""
    from sklearn_struct.structures.graph._kernels import mplp

    rows = []
    rng = np.random.RandomState(0)
    K = 3
    for side in sides:
        edges = grid_edges(side, side)
        n, m = side * side, edges.shape[0]
        potts = np.tile(0.5 * np.eye(K).ravel(), m)
        scores = np.r_[rng.randn(n * K), potts]
        tails, heads = edges[:, 0].copy(), edges[:, 1].copy()
        labels = np.empty(n, dtype=np.int64)

        def run():
            # tol < 0: no certificate stops it; only the sweep cap (or a stalled bound)
            return mplp(scores, n, K, tails, heads, np.zeros((m, 2, K)), sweeps, -1.0, labels)

        run()  # (compiles)
        best, done = np.inf, 0
        for _ in range(repeat):
            start = time.perf_counter()
            done = run()[2]
            best = min(best, time.perf_counter() - start)
        rows.append([f"{side}x{side}", str(m), str(done), f"{1e3 * best:.1f}",
                     f"{1e3 * best / done:.3f}", f"{1e9 * best / done / m:.0f}"])
        print(*rows[-1], sep="  ")
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--C", type=float, nargs="+", default=[0.1, 1.0, 10.0, 100.0])
    parser.add_argument("--sides", type=int, nargs="+",
                        help="grid sides (default: 10 30 100 for inference, to 300 for scale)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--n-test", type=int, default=N_TEST,
                        help=f"test images of each generator (default {N_TEST})")
    parser.add_argument("--datasets", nargs="+", choices=DATASETS, metavar="NAME",
                        help="learn on these generators' images only (default: all): "
                        + ", ".join(repr(name) for name in DATASETS))
    parser.add_argument("--sweeps", type=int, default=50)
    parser.add_argument("--seeds", type=int, default=5,
                        help="FrankWolfeSSVM's seeds in the objective experiment")
    parser.add_argument("--experiment",
                        choices=("learning", "inference", "scale", "objective", "all"),
                        default="all")
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    if args.n_test < 1:
        parser.error(f"--n-test must be at least 1, got {args.n_test}")
    if args.experiment in ("learning", "all"):
        learning(args)
    if args.experiment in ("inference", "all"):
        inference(args)
    if args.experiment in ("scale", "all"):
        scale(args)
    if args.experiment == "objective":
        objective(args)


def learning(args):
    load = os.getloadavg()[0]
    rows, summary = [], []
    for name, (X, Y) in datasets(N_TRAIN + args.n_test).items():
        if args.datasets and name not in args.datasets:
            continue
        X_train, Y_train, X_test, Y_test = X[:N_TRAIN], Y[:N_TRAIN], X[N_TRAIN:], Y[N_TRAIN:]
        C, search_seconds = ours(X_train, Y_train, args.C)
        # ours at the C values pystruct runs, the chosen one first (pystruct's best is the
        # best of its runs on the test images; ours at the same C values are its match)
        runs = {}  # C: (test accuracy, fit seconds)
        for C_ours in [C] + sorted({1.0} - {C}):
            runs[C_ours] = ours_at(X_train, Y_train, X_test, Y_test, C_ours)
            rows.append([name, "this package", "EGStructuredSVM(working_set)",
                         "LP dual (MPLP)", f"{C_ours:g}", f"{100 * runs[C_ours][0]:.2f}",
                         f"{runs[C_ours][1]:.1f}"])
            print(*rows[-1], sep="  ")
        accuracy, seconds = runs[C]
        methods = ["max-product"] + (["lp"] if X.shape[1] * X.shape[2] <= 100 else [])
        fits = []
        for learner in ("OneSlackSSVM", "FrankWolfeSSVM"):
            for inference in methods:
                for C_theirs in sorted({1.0, C}):
                    fits.append(theirs(X_train, Y_train, X_test, Y_test, C_theirs, learner,
                                       inference))
                    rows.append([name, "pystruct", learner, inference, f"{C_theirs:g}",
                                 f"{100 * fits[-1][0]:.2f}", f"{fits[-1][1]:.1f}"])
                    print(*rows[-1], sep="  ")
        best, fastest = max(f[0] for f in fits), min(f[1] for f in fits)
        our_best = max(a for a, _ in runs.values())
        summary.append([name, f"{100 * accuracy:.2f}", f"{100 * our_best:.2f}",
                        f"{100 * best:.2f}", f"{seconds:.1f}", f"{search_seconds:.1f}",
                        f"{fastest:.1f}",
                        f"{seconds / fastest:.3f}", f"{(seconds + search_seconds) / fastest:.3f}"])
    body = markdown_table(["data", "package", "learner", "inference", "C", "test accuracy %",
                           "fit s"], rows)
    body += "\n\n" + markdown_table(
        ["data", "our accuracy % (C by CV)", "our best % (pystruct's C values)",
         "pystruct's best %", "our fit s", "our C search s",
         "pystruct's fastest fit s", "fit ratio", "ratio with the search"], summary)
    Cs = " ".join(f"{C:g}" for C in args.C)
    body += (f"\n\n{N_TRAIN} training and {args.n_test} test images of each generator "
             "(numpy seed 0; the generators draw the training images first, so those of the "
             "blocks are the same at any number of test images). Our C "
             f"is chosen among {Cs} by 4-fold cross-validation on the training images "
             "(GridSearchCV, node accuracy); pystruct's learners, and ours too, run at C = 1 "
             "and at the C chosen for ours. 'Our best' and 'pystruct's best' are the best "
             "test accuracies over those runs (a choice made on the test images, alike for "
             "both). 'fit s' is one fit on the 20 training images (ours at the chosen C); our "
             "compilation is excluded (a warm-up fit first). Load average when the run "
             f"started: {load:.2f} (2 cores).")
    if not args.no_record:
        options = "" if args.n_test == N_TEST else f" --n-test {args.n_test}"
        options += "".join(f" --datasets {name!r}" for name in args.datasets or ())
        title = "" if args.n_test == N_TEST else f", {args.n_test} test images"
        title += f" ({', '.join(args.datasets)})" if args.datasets else ""
        record(f"Grid CRFs against pystruct: learning{title}", body,
               f"python bench_graph_pystruct.py --experiment learning --C {Cs}{options}")


def objective(args):
    load = os.getloadavg()[0]
    rows = []
    for name, (X, Y) in datasets(N_TRAIN + args.n_test).items():
        if args.datasets and name not in args.datasets:
            continue
        X_train, Y_train, X_test, Y_test = X[:N_TRAIN], Y[:N_TRAIN], X[N_TRAIN:], Y[N_TRAIN:]
        n_nodes, n_states = Y_test.size, X.shape[-1]
        for C in args.C:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = our_model().set_params(C=C).fit(as_graphs(X_train),
                                                        [y.ravel() for y in Y_train])
            predicted = np.concatenate(model.predict(as_graphs(X_test)))
            runs = [("this package", "EGStructuredSVM(working_set)", "",
                     np.mean(predicted == Y_test.ravel()),
                     pystruct_layout(model.weights_, n_states), model.primal_objective_)]
            for learner, seeds in (("OneSlackSSVM", [None]),
                                   ("FrankWolfeSSVM", range(args.seeds))):
                for seed in seeds:
                    accuracy, _, w = theirs(X_train, Y_train, X_test, Y_test, C, learner,
                                            "max-product", seed, weights=True)
                    runs.append(("pystruct", learner, "" if seed is None else str(seed),
                                 accuracy, w, None))
            for package, learner, seed, accuracy, w, reported in runs:
                rows.append([name, f"{C:g}", package, learner, seed,
                             f"{ssvm_objective(X_train, Y_train, C, w):.4f}",
                             "" if reported is None else f"{reported:.4f}",
                             f"{100 * accuracy:.2f}",
                             str(round(n_nodes * (1 - accuracy)))])
                print(*rows[-1], sep="  ")
    body = markdown_table(["data", "C", "package", "learner", "seed",
                           "SSVM objective (pystruct's LP inference)",
                           "our reported primal", "test accuracy %", "test errors"], rows)
    body += (f"\n\n{N_TRAIN} training and {args.n_test} test images (numpy seed 0), as in "
             "the learning sections. Every learner's weights are scored by the one objective "
             "that all of them minimise, computed by pystruct's `objective_primal` for "
             "`GridCRF` with its LP inference (ours mapped to its layout); the lower, the "
             "nearer the optimum, which is unique (the objective is strictly convex in w). "
             "pystruct's learners run as "
             "in the learning sections (max-product inference; `FrankWolfeSSVM` 50 passes, "
             "in the random order of each seed; `OneSlackSSVM` tol 0.1). Load average when "
             f"the run started: {load:.2f} (2 cores).")
    if not args.no_record:
        Cs = " ".join(f"{C:g}" for C in args.C)
        options = f" --n-test {args.n_test} --seeds {args.seeds}"
        options += "".join(f" --datasets {name!r}" for name in args.datasets or ())
        record("Grid CRFs against pystruct: distance to the SSVM optimum", body,
               f"python bench_graph_pystruct.py --experiment objective --C {Cs}{options}")


def inference(args):
    load = os.getloadavg()[0]
    body = markdown_table(
        ["grid", "pystruct max-product ms", "GraphStructure ms", "ratio", "certified",
         "max-product score", "our score", "LP bound", "LP optimum (HiGHS)",
         "fractional nodes", "MAP score (HiGHS MIP)"],
        inference_times(args.sides or [10, 30, 100], args.repeat))
    body += (f"\n\nOne grid per side, 3 labels, unaries N(0, 1) and Potts edges of weight 0.5; "
             f"the best of {args.repeat} calls each, after one that compiles. 'certified': "
             "our labelling's score reached the LP bound (MPLP's dual value). The last three "
             "columns are exact references from HiGHS (scipy): the local-polytope LP's "
             "optimum, the nodes where its solution is fractional, and the MAP score by "
             "the integer program. Where the LP is fractional, its optimum lies above every "
             "labelling's score, and no bound of that LP (MPLP's, TRW-S's or AD3's) can "
             "certify one. Load average when the run started: "
             f"{load:.2f} (2 cores).")
    if not args.no_record:
        sides = " ".join(map(str, args.sides or [10, 30, 100]))
        record("Grid CRFs against pystruct: inference", body,
               f"python bench_graph_pystruct.py --experiment inference --sides {sides}")


def scale(args):
    load = os.getloadavg()[0]
    sides = args.sides or [10, 30, 100, 300]
    body = markdown_table(
        ["grid", "edges", "sweeps", "ms", "ms per sweep", "ns per sweep and edge"],
        scale_times(sides, args.sweeps, args.repeat))
    body += (f"\n\nMPLP alone (the argmax's dual sweeps, without its final node-wise "
             f"improvement), at most {args.sweeps} sweeps with no certificate to stop it (it "
             "also stops when a sweep no longer lowers the bound, so 'sweeps' gives the "
             "number run); 3 labels, unaries N(0, 1), Potts edges of weight 0.5; the best of "
             f"{args.repeat} runs after one that compiles. Linear growth: a constant last "
             f"column. Load average when the run started: {load:.2f} (2 cores).")
    if not args.no_record:
        record("Grid CRFs: MPLP's time against the number of edges", body,
               f"python bench_graph_pystruct.py --experiment scale --sides "
               f"{' '.join(map(str, sides))} --sweeps {args.sweeps}")


if __name__ == "__main__":
    main()
