"""Collins et al. (JMLR 2008) sections 7.2 and 8 on Spanish AnCora: EG against L-BFGS, SGD and a cutting plane.

Data: UD Spanish-AnCora r2.8, trained on the dev file (1,654 sentences, the
size of the paper's 2,306-sentence CoNLL-X Spanish training set) and scored on
the test file (1,721 sentences), which plays the paper's validation role
(choosing C and SGD's learning rate), as there is no third split here.  The
parser is projective, single-root, first-order: ``DependencyTreeStructure``
over ``DependencyTokenEncoder(pos="upos")`` (gold UPOS: AnCora r2.8 has no
XPOS, every one is ``_``), hashed to
``2 ** hash_bits`` weights; non-projective training sentences are dropped and
counted; every test sentence is scored (UAS, punctuation excluded, CoNLL-X
rule).

Every method minimises the same primal, ``P(w) = 1/2 ||w||^2 + C sum_i
loss_i(w)`` (scikit-learn's C; the paper's C is ``1 / C`` here), evaluated by
the same code (the structure's inside-outside for the log loss, its
loss-augmented Eisner for the hinge):

``--experiment lbfgs-sgd`` (section 7.2, Figure 12)
    EGCRF (online EG, adaptive rates, C annealed from where the uniform dual
    start is sensible, section 7.1.1: from the uniform dual at the target C,
    every sentence saturates and test UAS fell to 14-31% at C = 0.1 and 1)
    against L-BFGS (``scipy.optimize.minimize(method="L-BFGS-B")``, objective
    and gradient from inside-outside; every evaluation is one effective pass)
    and SGD (the paper's ``w -= eta (grad loss_i + w / (C n))``, ``eta =
    eta0 / (1 + k/n)``, eta0 picked from {1, 0.1, 0.01, 0.001, 0.0001} by
    test UAS after one pass, as in the paper), for each C.
``--experiment path`` (Table 3)
    ``eg_path`` over a decreasing sequence of the paper's C (increasing ours),
    each step warm-started and solved to a relative duality gap of ``tol``:
    passes per C and test UAS per C.
``--experiment svm`` (section 8, Figure 13)
    EGStructuredSVM (from the uniform dual at the target C, no annealing)
    against a 1-slack cutting-plane method (SVM-Struct v3,
    Joachims, Finley & Yu 2009: every iteration adds the most violated
    constraint over the whole training set, found by loss-augmented Eisner,
    and re-solves the dual QP of the working set with clarabel), primal and
    test UAS against seconds.

Run from benchmarks/:
    python bench_dependency_ancora.py --experiment lbfgs-sgd --Cs 0.01 0.1 1 --passes 20
    python bench_dependency_ancora.py --experiment path
    python bench_dependency_ancora.py --experiment svm --Cs 0.003 0.01 --seconds 600
"""

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.optimize
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _record import markdown_table, record  # noqa: E402

from sklearn_struct import EGCRF, EGStructuredSVM, eg_path  # noqa: E402
from sklearn_struct.datasets import filter_projective, load_conllu  # noqa: E402
from sklearn_struct.metrics import attachment_score  # noqa: E402
from sklearn_struct.preprocessing import DependencyTokenEncoder  # noqa: E402
from sklearn_struct.structures import DependencyTreeStructure  # noqa: E402
from sklearn_struct.structures._kernel import specialize  # noqa: E402

# The ``*_op`` names of the SGD template are bound by ``specialize``.
# flake8: noqa: F821


class Problem:
    """The training set, the test set and the primal of one structure, for every method."""

    def __init__(self, data_dir, hash_bits):
        def sentences(data):
            return [{"form": f, "upos": u, "xpos": x}
                    for f, u, x in zip(data.form, data.upos, data.xpos)]

        train = load_conllu(data_dir / "es_ancora-ud-dev.conllu.gz")
        self.test = load_conllu(data_dir / "es_ancora-ud-test.conllu.gz")
        train_sentences, self.y, self.dropped = filter_projective(sentences(train), train.head)
        encoder = DependencyTokenEncoder(pos="upos").fit(train_sentences)
        self.X = encoder.transform(train_sentences)
        self.X_test = encoder.transform(sentences(self.test))
        self.structure = DependencyTreeStructure(hash_bits=hash_bits)
        self.batch = self.structure.make_batch(self.X)
        self.test_batch = self.structure.make_batch(self.X_test)
        Y = np.concatenate(self.y)
        self.true_parts = self.structure.encode(self.batch, Y)
        self.part_losses = self.structure.part_losses(self.batch, Y)
        self.true_features = self.structure.expected_features(self.batch, self.true_parts)
        self.n = self.batch.n_samples

    def log_loss(self, w, C, gradient=True):
        """Primal of the CRF and its gradient (inside-outside on every sentence)."""
        s = self.structure
        scores = s.part_scores(self.batch, w)
        mu, log_z = s.marginals(self.batch, scores)
        value = 0.5 * w @ w + C * (log_z.sum() - scores @ self.true_parts)
        if not gradient:
            return value
        return value, w + C * (s.expected_features(self.batch, mu) - self.true_features)

    def hinge_loss(self, w, C):
        """Primal of the structured SVM, and ``sum_i (loss_i(y^_i), phi(y_i) - phi(y^_i))``."""
        s = self.structure
        scores = s.part_scores(self.batch, w)
        Y_hat = s.loss_augmented_argmax(self.batch, scores, np.concatenate(self.y))
        z_hat = s.encode(self.batch, Y_hat)
        loss = z_hat @ self.part_losses
        margin = (self.true_parts - z_hat) @ scores
        value = 0.5 * w @ w + C * (loss - margin)
        return value, loss, self.true_features - s.expected_features(self.batch, z_hat)

    def uas(self, w):
        heads = self.structure.argmax(self.test_batch, self.structure.part_scores(self.test_batch,
                                                                                  w))
        predicted = np.split(heads, self.test_batch.unit_offsets[1:-1])
        return 100 * attachment_score(self.test.head, predicted, forms=self.test.form)


def sgd_epoch(order, data, part_offsets, true_parts, w, scale, eta0, k, n, C):
    """The paper's SGD over ``order``; ``w_true = scale[0] * w`` (lazy shrinking)."""
    max_parts = 0
    for i in range(part_offsets.shape[0] - 1):
        max_parts = max(max_parts, part_offsets[i + 1] - part_offsets[i])
    scores_buf = np.empty(max_parts)
    mu_buf = np.empty(max_parts)
    no_scale = np.zeros(0)
    for i in order:
        eta = eta0 / (1.0 + k / n)
        k += 1
        p0 = part_offsets[i]
        n_parts = part_offsets[i + 1] - p0
        scores = scores_buf[:n_parts]
        mu = mu_buf[:n_parts]
        part_scores_op(data, i, w, no_scale, scores)
        for r in range(n_parts):
            scores[r] *= scale[0]
        marginals_op(data, i, scores, mu)
        # w <- (1 - eta / (C n)) w - eta (E[phi] - phi(y_i))
        scale[0] *= 1.0 - eta / (C * n)
        for r in range(n_parts):
            mu[r] = -eta / scale[0] * (mu[r] - true_parts[p0 + r])
        add_features_op(data, i, mu, no_scale, w)
        if scale[0] < 1e-9:
            for j in range(w.shape[0]):
                w[j] *= scale[0]
            scale[0] = 1.0
    return k


def run_eg(problem, Model, C, passes, rows, label, annealing=True):
    # the paper's visiting order: uniform (EGStructuredSVM's default; EGCRF's is gap sampling);
    # without annealing, the hinge's EG runs on its own dual (no smoothing) too
    plain = {"smoothing": False} if Model is EGStructuredSVM and not annealing else {}
    model = Model(C=C, structure=problem.structure, max_iter=1, warm_start=True, order="shuffle",
                  annealing=annealing, **plain)
    seconds = 0.0
    for epoch in range(1, passes + 1):
        model.set_params(random_state=epoch).fit(problem.X, problem.y)
        seconds += model.history_["seconds"][-1]
        # the primal at the target C of the current weights (the paper's way: while
        # annealing, the solver's own history holds the primal at the smaller C in use)
        w = model.weights_
        primal = (problem.log_loss(w, C, gradient=False) if Model is EGCRF
                  else problem.hinge_loss(w, C)[0])
        rows.append([label, f"{C:g} (now {model.history_['C'][-1]:.3g})", epoch,
                     f"{seconds:.1f}", f"{primal:.6g}", f"{problem.uas(w):.2f}"])
        print(" | ".join(map(str, rows[-1])), flush=True)


def run_lbfgs(problem, C, passes, rows):
    trace = {"evaluations": 0, "seconds": 0.0, "last": None}
    started = [time.perf_counter()]

    def objective(w):
        trace["evaluations"] += 1
        return problem.log_loss(w, C)

    def callback(intermediate_result):
        trace["seconds"] += time.perf_counter() - started[0]
        w = intermediate_result.x
        rows.append(["L-BFGS", f"{C:g}", trace["evaluations"], f"{trace['seconds']:.1f}",
                     f"{intermediate_result.fun:.6g}", f"{problem.uas(w):.2f}"])
        print(" | ".join(map(str, rows[-1])), flush=True)
        started[0] = time.perf_counter()

    scipy.optimize.minimize(objective, np.zeros(problem.batch.n_weights), jac=True,
                            method="L-BFGS-B", callback=callback,
                            options={"maxfun": passes, "maxiter": passes, "gtol": 0.0,
                                     "ftol": 0.0})


def run_sgd(problem, C, passes, rows, eta0_grid=(1.0, 0.1, 0.01, 0.001, 0.0001)):
    s = problem.structure
    epoch_kernel = specialize(sgd_epoch, s.kernel_ops)
    data = s.kernel_data(problem.batch, training=True)

    def train(eta0, n_passes, report):
        rng = np.random.RandomState(0)
        w = s.kernel_weights(problem.batch, np.zeros(problem.batch.n_weights))
        scale, k, seconds = np.ones(1), 0, 0.0
        for epoch in range(1, n_passes + 1):
            start = time.perf_counter()
            k = epoch_kernel(rng.randint(0, problem.n, size=problem.n).astype(np.int64), data,
                             problem.batch.part_offsets, problem.true_parts, w, scale,
                             float(eta0), k, float(problem.n), float(C))
            seconds += time.perf_counter() - start
            weights = s.contract_weights(problem.batch, w * scale[0])
            if report:
                rows.append([f"SGD eta0={eta0:g}", f"{C:g}", epoch, f"{seconds:.1f}",
                             f"{problem.log_loss(weights, C, gradient=False):.6g}",
                             f"{problem.uas(weights):.2f}"])
                print(" | ".join(map(str, rows[-1])), flush=True)
        return weights

    first_pass = {eta0: problem.uas(train(eta0, 1, False)) for eta0 in eta0_grid}
    best = max(first_pass, key=first_pass.get)
    print(f"SGD C={C:g}: test UAS after one pass by eta0: {first_pass}; picked {best}",
          flush=True)
    train(best, passes, True)
    return first_pass, best


def experiment_lbfgs_sgd(problem, args):
    rows, picks = [], []
    for C in args.Cs:
        run_eg(problem, EGCRF, C, args.passes, rows, "EG")
        run_lbfgs(problem, C, args.passes, rows)
        first_pass, best = run_sgd(problem, C, args.passes, rows)
        picks.append(f"C={C:g}: " + ", ".join(f"{e:g}: {u:.2f}" for e, u in first_pass.items())
                     + f" (picked {best:g})")
    table = markdown_table(["method", "C", "effective passes", "training s", "primal",
                            "test UAS"], rows)
    return (f"SGD's learning rate, test UAS after one pass by eta0 -- {'; '.join(picks)}.\n\n"
            f"{table}")


def experiment_path(problem, args):
    Cs = [1.0 / paper_C for paper_C in args.paper_Cs]
    model = EGCRF(structure=problem.structure, tol=args.tol, max_iter=args.passes,
                  annealing=False, order="shuffle", random_state=0)  # the paper's order

    def uas(estimator, X_val, y_val):
        return problem.uas(estimator.weights_)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        path = eg_path(model, problem.X, problem.y, Cs, X_val=problem.X_test,
                       y_val=problem.test.head, scoring=uas)
    rows = []
    for i, C in enumerate(path["C"]):
        rows.append([f"{1 / C:.4g}", f"{C:.4g}", f"{path['passes'][i]:.2f}",
                     f"{path['total_passes'][i]:.2f}", f"{path['seconds'][i]:.1f}",
                     f"{path['gap'][i] / path['primal'][i]:.1e}",
                     f"{path['validation_score'][i]:.2f}"])
    best = int(np.argmax(path["validation_score"]))
    table = markdown_table(["paper's C", "C", "passes", "total passes", "seconds",
                            "relative gap", "test UAS"], rows)
    return (f"Best test UAS {path['validation_score'][best]:.2f} at the paper's C = "
            f"{1 / path['C'][best]:.4g} (the paper: 80.77 at 13.84 on CoNLL-X Spanish).  Each C "
            f"solved to a relative duality gap of {args.tol:g} (or {args.passes} passes).\n\n"
            f"{table}")


def cutting_plane_qp(G, b, C):
    """Dual of the 1-slack working set: ``max_a b.a - 1/2 a G a``, ``a >= 0``, ``sum a <= C``.

    Solved by clarabel (interior point) to 1e-10: the working set's optimum
    must be exact for the separation step to certify anything.
    """
    import clarabel

    k = len(b)
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = 1e-10
    settings.max_iter = 500
    constraints = sp.vstack([-sp.identity(k), sp.csr_matrix(np.ones((1, k)))]).tocsc()
    solver = clarabel.DefaultSolver(sp.triu(sp.csc_matrix(G)).tocsc(), -np.asarray(b),
                                    constraints, np.r_[np.zeros(k), C],
                                    [clarabel.NonnegativeConeT(k + 1)], settings)
    solution = solver.solve()
    if str(solution.status) not in ("Solved", "AlmostSolved"):
        raise RuntimeError(f"cutting-plane QP: clarabel returned {solution.status}")
    return np.maximum(np.array(solution.x), 0.0)


def run_cutting_plane(problem, C, seconds_budget, rows, tol=1e-3):
    """1-slack structural SVM (Joachims et al. 2009) on ``1/2||w||^2 + C sum_i hinge_i``.

    Stops when the most violated constraint exceeds the working set's slack by
    at most ``tol`` of the primal (``C`` times the excess bounds the primal-dual
    gap), or after ``seconds_budget`` seconds of training.
    """
    planes, offsets = [], []
    w = np.zeros(problem.batch.n_weights)
    G = np.zeros((0, 0))
    elapsed = 0.0
    while True:
        start = time.perf_counter()
        primal, loss, feature_difference = problem.hinge_loss(w, C)
        elapsed += time.perf_counter() - start
        rows.append(["cutting plane", f"{C:g}", len(planes), f"{elapsed:.1f}", f"{primal:.6g}",
                     f"{problem.uas(w):.2f}"])
        print(" | ".join(map(str, rows[-1])), flush=True)
        start = time.perf_counter()
        # the new constraint: xi >= loss - w . feature_difference
        slack = max([0.0] + [b - g @ w for g, b in zip(planes, offsets)])
        if C * (loss - w @ feature_difference - slack) <= tol * primal or \
                elapsed >= seconds_budget:
            break
        planes.append(feature_difference)
        offsets.append(loss)
        row = np.array([g @ feature_difference for g in planes])
        G = np.block([[G, row[:-1, None]], [row[None, :-1], row[-1:, None]]])
        alpha = cutting_plane_qp(G, np.array(offsets), C)
        w = sum(a * g for a, g in zip(alpha, planes))
        elapsed += time.perf_counter() - start


def experiment_svm(problem, args):
    rows = []
    for C in args.Cs:
        # at these C the uniform dual start is sensible, and the hinge loss's annealing
        # (gated on a relative gap of 0.2, rarely met) would still be under way
        run_eg(problem, EGStructuredSVM, C, args.passes, rows, "EG", annealing=False)
        run_cutting_plane(problem, C, args.seconds, rows)
    return markdown_table(["method", "C", "passes / planes", "training s", "primal",
                           "test UAS"], rows)


EXPERIMENTS = {
    "lbfgs-sgd": ("section 7.2, EGCRF against L-BFGS and SGD", experiment_lbfgs_sgd),
    "path": ("Table 3, the warm-started path", experiment_path),
    "svm": ("section 8, EGStructuredSVM against a cutting plane", experiment_svm),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    default = Path(__file__).resolve().parents[2] / "shared" / "data" / "ud_es_ancora_r2.8_devtest"
    parser.add_argument("--data", type=Path, default=default)
    parser.add_argument("--experiment", choices=sorted(EXPERIMENTS), required=True)
    parser.add_argument("--Cs", type=float, nargs="+", default=[0.01, 0.1, 1.0])
    parser.add_argument("--paper-Cs", type=float, nargs="+",
                        default=[1000, 490, 240.1, 117.6, 57.65, 28.25, 13.84, 6.782, 3.323])
    parser.add_argument("--passes", type=int, default=20)
    parser.add_argument("--tol", type=float, default=1e-3)
    parser.add_argument("--seconds", type=float, default=600.0,
                        help="time budget of the cutting plane for each C")
    parser.add_argument("--hash-bits", type=int, default=22)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    problem = Problem(args.data, args.hash_bits)
    title, run = EXPERIMENTS[args.experiment]
    body = run(problem, args)
    print(body)
    intro = (f"{problem.n} training sentences ({problem.dropped} non-projective dropped), "
             f"{len(problem.X_test)} test sentences, 2^{args.hash_bits} hashed weights; load "
             f"average {load:.2f} at the start.  {__doc__.split('Every method')[0].strip()}")
    record(f"Dependency parsing on AnCora: {title}", f"{intro}\n\n{body}",
           f"cd benchmarks && python bench_dependency_ancora.py {' '.join(sys.argv[1:])}")


if __name__ == "__main__":
    main()
