"""EGStructuredSVM against pystruct's block-coordinate Frank-Wolfe (BCFW) on OCR letters.

Same data, same model, same objective, side by side in this process:

* OCR letters (Taskar), the words of one fold (fold 1: 704 words) for training, raw
  pixels (128 binary features per letter), 26 labels;
* a first-order chain without start/end parts, transitions indexed (previous, next):
  ``ChainStructure(start_end=False)`` here, ``ChainCRF(directed=True)`` in pystruct
  (its joint feature is ``concat(unary (26, 128), pairwise (26, 26))``, our layout);
* ``1/2 ||w||^2 + C sum_i hinge_i(w)`` with the (unnormalised) Hamming loss in both:
  pystruct's ``FrankWolfeSSVM(C=C)`` is our ``C`` (its duality gap code computes
  ``dual = -1/2 ||w||^2 + C n l`` and the hinge terms scaled by ``C``); the script
  checks that our primal of pystruct's final weights equals pystruct's own primal.

The optimum is bracketed first by an EG run to a relative gap of 1e-3 (its dual is a
lower bound); the optimum used is the best primal any run reaches.  Then, at ``--C``:

* EG (``EGStructuredSVM``, default annealing of the smoothed hinge) with ``tol`` equal
  to ``--within``: it stops once its own duality gap certifies the primal within
  that fraction of the optimum; its wall time includes every gap evaluation;
* BCFW with pystruct's defaults (line search, averaging, random permutations): a
  logger stores the (averaged) weights after every pass, excluded from the timing,
  and their primal is evaluated afterwards.

Time to ``--within`` of the optimum: the first evaluated EG primal (and the EG fit's
certified stop), the first BCFW pass; the two alternate ``--repeat`` times (seeds 0, 1,
...), with wall and CPU times, and the ratio of the medians.  numba compilation is timed separately
(warm-up fits on 20 words before any timing).  Then the C grid: EG (online, and
``solver="working_set"``) with ``tol=1e-2`` and at most 100 effective (oracle) passes, the
duality gap of BCFW after 100 passes, the working set's time counted in passes of BCFW and
in its own oracle passes, and BCFW's gap after as many passes as fit in that time.

Run from benchmarks/:  python bench_ssvm_bcfw.py [--C 0.1] [--fold 1] [--grid 0.01 0.1 1 10]
[--repeat 3]
"""

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _record import markdown_table, record  # noqa: E402

from sklearn_struct.datasets import load_ocr_letters  # noqa: E402
from sklearn_struct.eg import EGStructuredSVM  # noqa: E402
from sklearn_struct.solvers.loss import StructuredLoss  # noqa: E402
from sklearn_struct.structures import ChainStructure  # noqa: E402

N_STATES = 26


def load_fold(path, fold):
    data = load_ocr_letters(path)
    train = np.flatnonzero(data.folds == fold)
    return [data.X[i] for i in train], [data.y[i] for i in train]


def load():
    return os.getloadavg()[0]


def fit_eg(X, y, C, tol, max_iter, seed=0, solver="online"):
    """EGStructuredSVM; returns the model, its wall and its CPU seconds."""
    model = EGStructuredSVM(C=C, structure=ChainStructure(start_end=False), tol=tol,
                            max_iter=max_iter, random_state=seed, solver=solver)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        start, cpu = time.perf_counter(), time.process_time()
        model.fit(X, y)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    return model, seconds, cpu


def in_oracle_passes(history):
    """A working-set fit's time in oracle passes: its wall time over the mean oracle
    pass, so that the cached passes count at their cost."""
    return ((history["seconds"].sum() + history["eval_seconds"].sum())
            / history["eval_seconds"].mean())


def fit_bcfw(X, y, C, passes, seed=0):
    """pystruct's BCFW; returns it, the wall and CPU times at the end of every pass
    and the weights after every pass."""
    from pystruct.learners import FrankWolfeSSVM
    from pystruct.models import ChainCRF

    snapshots, overhead = [], [0.0, 0.0]

    def logger(ssvm, iteration):  # keep the weights, not the copying time
        now, cpu = time.perf_counter(), time.process_time()
        snapshots.append((now - overhead[0], cpu - overhead[1], ssvm.w.copy()))
        overhead[0] += time.perf_counter() - now
        overhead[1] += time.process_time() - cpu

    # check_dual_every > max_iter: pystruct computes its gap once (before pass 2), never
    # again; tol=-inf: it never stops on it
    ssvm = FrankWolfeSSVM(ChainCRF(n_states=N_STATES, n_features=X[0].shape[1]), C=C,
                          max_iter=passes, check_dual_every=passes + 1, tol=-np.inf,
                          logger=logger, random_state=seed)
    start, cpu = time.perf_counter(), time.process_time()
    ssvm.fit(X, y)
    times = np.array([t - start for t, _, _ in snapshots])
    cpu_times = np.array([c - cpu for _, c, _ in snapshots])
    return ssvm, times, cpu_times, [w for _, _, w in snapshots]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    default = (Path(__file__).resolve().parents[2] / "shared" / "data" / "ocr_letters_taskar"
               / "letters_flat.npz")
    parser.add_argument("--data", type=Path, default=default)
    parser.add_argument("--fold", type=int, default=1)
    parser.add_argument("--C", type=float, default=0.1)
    parser.add_argument("--within", type=float, default=5e-3)
    parser.add_argument("--bcfw-passes", type=int, default=150)
    parser.add_argument("--grid", type=float, nargs="*", default=[0.01, 0.1, 1.0, 10.0])
    parser.add_argument("--grid-passes", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    X, y = load_fold(args.data, args.fold)
    print(f"{len(X)} training words, {sum(map(len, y))} letters; load {load():.2f}", flush=True)
    structure = ChainStructure(start_end=False)
    batch = structure.make_batch(X, n_states=N_STATES)
    problem = StructuredLoss(structure, batch, np.concatenate(y).astype(np.int64), "hinge")

    start = time.perf_counter()
    fit_eg(X[:20], y[:20], args.C, 0.0, 2)
    fit_eg(X[:20], y[:20], args.C, 0.0, 2, solver="working_set")
    compile_seconds = time.perf_counter() - start
    print(f"numba warm-up (compilation, or loading the cache): {compile_seconds:.1f} s")

    reference, _, _ = fit_eg(X, y, args.C, 1e-3, 2000)
    lower = reference.dual_objective_

    # the two alternate, --repeat times (seeds 0, 1, ...), against the load's drift
    eg_runs, bcfw_runs = [], []
    for seed in range(args.repeat):
        load_eg = load()
        model, seconds, cpu = fit_eg(X, y, args.C, args.within, 1000, seed)
        eg_runs.append((model.history_, seconds, cpu, load_eg))
        load_bcfw = load()
        ssvm, times, cpu_times, weights = fit_bcfw(X, y, args.C, args.bcfw_passes, seed)
        primals = np.array([problem.primal(w, args.C) for w in weights])
        bcfw_runs.append((times, cpu_times, primals, load_bcfw))
        print(f"run {seed}: EG {seconds:.2f} s, BCFW {times[-1]:.2f} s for "
              f"{args.bcfw_passes} passes", flush=True)
    _, _, pystruct_primal = ssvm._calc_dual_gap(X, y)
    assert abs(primals[-1] - pystruct_primal) <= 1e-8 * pystruct_primal, "objectives differ"
    optimum = min([reference.primal_objective_] + [h["primal"].min() for h, *_ in eg_runs]
                  + [primals.min() for _, _, primals, _ in bcfw_runs])
    print(f"optimum in [{lower:.4f}, {optimum:.4f}]", flush=True)

    rows, eg_first, eg_wall, eg_cpu, bcfw_wall, bcfw_cpu = [], [], [], [], [], []
    for seed, ((h, seconds, cpu, load_eg), (times, cpu_times, primals, load_bcfw)) in enumerate(
            zip(eg_runs, bcfw_runs)):
        elapsed = np.cumsum(h["seconds"] + h["eval_seconds"])
        hit = np.flatnonzero(h["primal"] <= (1 + args.within) * optimum)
        first = (h["passes"][hit[0]], elapsed[hit[0]]) if len(hit) else (np.nan, np.nan)
        rows.append([seed, "EGStructuredSVM, first evaluated primal", f"{first[0]:.0f}",
                     f"{first[1]:.2f}", "", f"{load_eg:.2f}"])
        rows.append([seed, f"EGStructuredSVM, certified (relative gap <= {args.within:g})",
                     f"{h['passes'][-1]:.0f}", f"{seconds:.2f}", f"{cpu:.2f}",
                     f"{load_eg:.2f}"])
        hit = np.flatnonzero(primals <= (1 + args.within) * optimum)
        k = hit[0] if len(hit) else -1
        rows.append([seed, "pystruct FrankWolfeSSVM (BCFW)", f"{k + 1}" if len(hit) else "-",
                     f"{times[k]:.2f}", f"{cpu_times[k]:.2f}", f"{load_bcfw:.2f}"])
        eg_first.append(first[1])
        eg_wall.append(seconds)
        eg_cpu.append(cpu)
        bcfw_wall.append(times[k] if len(hit) else np.nan)
        bcfw_cpu.append(cpu_times[k] if len(hit) else np.nan)
        print(rows[-3:], f"{len(h['passes'])} gap evaluations, "
              f"{h['eval_seconds'].sum():.2f} s of them", flush=True)
    wall_ratio = np.median(bcfw_wall) / np.median(eg_wall)
    cpu_ratio = np.median(bcfw_cpu) / np.median(eg_cpu)
    first_ratio = np.median(bcfw_wall) / np.median(eg_first)

    grid = []
    for C in args.grid:
        load_c = load()
        model, seconds, _ = fit_eg(X, y, C, 1e-2, args.grid_passes)
        h = model.history_
        row = [f"{C:g}", f"{h['passes'][-1]:.0f}",
               f"{model.duality_gap_ / model.primal_objective_:.1e}", f"{seconds:.2f}"]
        model, ws_seconds, _ = fit_eg(X, y, C, 1e-2, args.grid_passes, solver="working_set")
        h = model.history_
        row += [f"{h['passes'][-1]:.0f} ({h['cached_passes'].sum():.0f})",
                f"{in_oracle_passes(h):.0f}",
                f"{model.duality_gap_ / model.primal_objective_:.1e}", f"{ws_seconds:.2f}"]
        ssvm, times, _, _ = fit_bcfw(X, y, C, args.grid_passes)
        dual, gap, primal = ssvm._calc_dual_gap(X, y)
        # the working set's time counted in BCFW passes, measured side by side
        in_bcfw_passes = ws_seconds / (times[-1] / args.grid_passes)
        row += [f"{gap / primal:.1e}", f"{times[-1]:.1f}", f"{in_bcfw_passes:.0f}"]
        # BCFW given the working sets' time, when that is more passes
        passes = int(in_bcfw_passes)
        if passes > args.grid_passes:
            ssvm, times, _, _ = fit_bcfw(X, y, C, passes)
            dual, gap, primal = ssvm._calc_dual_gap(X, y)
            row += [f"{gap / primal:.1e} ({passes} passes, {times[-1]:.1f} s)"]
        else:
            row += ["-"]
        row += [f"{load_c:.2f}"]
        grid.append(row)
        print(row, flush=True)

    body = (
        f"OCR letters, train fold {args.fold} ({len(X)} words, {sum(map(len, y))} letters), raw "
        f"pixels, chain without start/end parts, Hamming loss; C={args.C:g} (pystruct's C is "
        f"ours: our primal of its final weights equals its own, {pystruct_primal:.4f}). "
        f"Optimum in [{lower:.4f}, {optimum:.4f}] (EG's dual at relative gap 1e-3; the best "
        f"primal of all runs, used as the optimum). Both run in this process, alternating, "
        f"{args.repeat} times (run = random seed of both); numba warm-up before timing: "
        f"{compile_seconds:.1f} s. EG times include every duality-gap evaluation; BCFW times "
        f"exclude its evaluations (primal of its averaged weights computed afterwards; one gap "
        f"evaluation by pystruct before pass 2 included). Wall and CPU (process) seconds: "
        f"on 2 shared cores the load inflates wall times, CPU times much less. Load = 1-minute "
        f"load average when each started.\n\n"
        f"Time to a primal within {100 * args.within:g}% of the optimum, BCFW / certified EG, "
        f"medians over the runs: {wall_ratio:.1f}x in wall time, {cpu_ratio:.1f}x in CPU "
        f"time; BCFW / EG's first evaluated primal within it (not yet certified, as BCFW's): "
        f"{first_ratio:.1f}x in wall time.\n\n"
        + markdown_table(["run", "method", "passes", "wall s", "CPU s", "load"], rows)
        + f"\n\nPer C: EGStructuredSVM with tol=1e-2, at most {args.grid_passes} effective passes "
        f"(stops when certified), with the default online EG solver and with "
        f"`solver='working_set'` (its passes are oracle passes, each certifying the gap, "
        f"with the cached passes between them in brackets: no inference, one part-score "
        f"evaluation per example visited; its time in oracle passes is its wall time over "
        f"the mean time of its oracle passes, so that the cached passes count at their "
        f"cost); BCFW after {args.grid_passes} passes (pystruct's own "
        f"gap), the working-set fit's seconds counted in BCFW passes (at the mean time of "
        f"BCFW's {args.grid_passes}), and BCFW after as many passes as fit in them.\n\n"
        + markdown_table(["C", "EG passes", "EG relative gap", "EG seconds",
                          "working-set passes (cached)", "working-set time in oracle passes",
                          "working-set relative gap",
                          "working-set seconds",
                          f"BCFW relative gap ({args.grid_passes} passes)", "BCFW seconds",
                          "working-set time in BCFW passes",
                          "BCFW relative gap in the working set's time", "load"], grid)
    )
    print(body)
    record("EGStructuredSVM vs BCFW (pystruct) on OCR letters", body,
           "cd benchmarks && python bench_ssvm_bcfw.py " + " ".join(sys.argv[1:]))


if __name__ == "__main__":
    main()
