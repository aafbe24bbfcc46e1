"""Projective inside-outside against Eisner's argmax on the same scores, first and second order.

The marginals of a projective parser (``projective_marginals``, ``second_order_marginals``)
run in real space on scaled weights and fall back to log space only where ``Z`` would be too
small there; this script times them per sentence next to the same recursion in log space and
next to Eisner's max-plus argmax, on the same random scores (one sentence per call, cycling
through ``N_SCORES`` standard normal score vectors per length, single root), and checks that
the real-space marginals and ``log Z`` equal the log-space ones.  Random scores of long
sentences can spread further than real space holds; a second table therefore times the
second order on the scores that a trained model gives: a second-order ``EGCRF`` fitted on
the first ``--n-train`` projective sentences of UD English-EWT train, scoring the EWT dev
sentences, grouped by length.  numba's first compilation is timed apart (a fresh process,
an empty cache).

Run from benchmarks/:  python bench_projective_marginals.py [--seconds 1.0] [--n-train 2000]
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
from bench_dependency_inference import cold_seconds, rate  # noqa: E402

from sklearn_struct import EGCRF  # noqa: E402
from sklearn_struct.datasets import filter_projective, load_conllu  # noqa: E402
from sklearn_struct.preprocessing import DependencyTokenEncoder  # noqa: E402
from sklearn_struct.structures import SiblingDependencyStructure  # noqa: E402
from sklearn_struct.structures.dependency import _inference as first  # noqa: E402
from sklearn_struct.structures.dependency import _second_order_inference as second  # noqa: E402
from sklearn_struct.structures.dependency._sibling_features import n_sibling_parts  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "ud_en_ewt_r2.16"
LENGTHS = (10, 20, 30, 40, 80)
#: Length groups of the EWT dev sentences: (shortest, longest) words.
GROUPS = ((1, 10), (11, 20), (21, 40), (41, 200))
#: Score vectors per length, visited in turn.
N_SCORES = 20


def sentence_data(n):
    """The kernel data of one sentence of ``n`` words, built by the structure: a type of
    the package (a type of this script in a kernel's signature would enter the package's
    numba cache index, which other processes then cannot read)."""
    sentence = {"form": ["w"] * n, "upos": ["X"] * n}
    structure = SiblingDependencyStructure()
    X = DependencyTokenEncoder().fit([sentence]).transform([sentence])
    return structure.kernel_data(structure.make_batch(X))


def first_order(n, rng):
    """Per-call argument sets of the three first-order kernels, and per score vector the
    differences between real and log space (marginals, log Z) and whether real space holds
    its ``Z``."""
    scores = [rng.randn(n + 1, n + 1) for _ in range(N_SCORES)]
    real, logs = np.empty((n + 1, n + 1)), np.empty((n + 1, n + 1))
    heads = np.zeros(n, dtype=np.int64)
    gaps = [(np.abs(real - logs).max(), abs(log_z - log_z_ref),
             first._is_safe(*first._real_projective_inside(S, True)[:2], n + 1))
            for S in scores
            for log_z, log_z_ref in [(first.projective_marginals(S, True, real),
                                      first._log_space_marginals(S, True, logs))]]
    return ((first.projective_marginals, [(S, True, real) for S in scores]),
            (first._log_space_marginals, [(S, True, logs) for S in scores]),
            (first.eisner, [(S, True, heads) for S in scores]), gaps)


def second_order(n, rng):
    """As :func:`first_order`, for arc and sibling scores."""
    data = sentence_data(n)
    scores = [rng.randn(n * n + n_sibling_parts(n)) for _ in range(N_SCORES)]
    real, logs = np.empty_like(scores[0]), np.empty_like(scores[0])
    heads = np.zeros(n, dtype=np.int64)
    gaps = [(np.abs(real - logs).max(), abs(log_z - log_z_ref),
             not np.isnan(second._real_marginals(theta, n, True, np.empty_like(theta))))
            for theta in scores
            for log_z, log_z_ref in [(second.second_order_marginals(data, 0, theta, real),
                                      second._log_space_marginals(theta, n, True, logs))]]
    return ((second.second_order_marginals, [(data, 0, theta, real) for theta in scores]),
            (second._log_space_marginals, [(theta, n, True, logs) for theta in scores]),
            (second.second_order_eisner, [(data, 0, theta, heads) for theta in scores]), gaps)


def warm_rates(kernels, seconds):
    """Calls per second of each ``(kernel, argument sets)``, each compiled or loaded from
    the cache before it is timed."""
    for kernel, arguments in kernels:
        kernel(*arguments[0])
    return [rate(kernel, arguments, seconds) for kernel, arguments in kernels]


def trained_scores(n_train, passes):
    """Part scores of the EWT dev sentences under a second-order EGCRF fitted on the first
    ``n_train`` projective training sentences, and the fit's seconds."""
    def sentences(name):
        tree = load_conllu(DATA / f"en_ewt-ud-{name}.conllu.gz")
        return [{"form": f, "upos": u, "xpos": x}
                for f, u, x in zip(tree.form, tree.upos, tree.xpos)], tree.head

    train, heads = sentences("train")
    train, heads, _ = filter_projective(train, heads)
    train, heads = train[:n_train], heads[:n_train]
    encoder = DependencyTokenEncoder(pos="both").fit(train)
    model = EGCRF(C=0.1, max_iter=passes, tol=0, random_state=0,
                  structure=SiblingDependencyStructure())
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(encoder.transform(train), heads)
    seconds = time.perf_counter() - start
    dev = sentences("dev")[0]
    batch = model.structure_.make_batch(encoder.transform(dev))
    scores = model.structure_.part_scores(batch, model.weights_)
    offsets = batch.part_offsets
    return ([scores[offsets[i]:offsets[i + 1]] for i in range(len(dev))],
            [len(x["form"]) for x in dev], seconds)


def trained_rows(scores, lengths, seconds):
    """One row per length group of :data:`GROUPS`: the three second-order kernels on the
    sentences' trained scores, and the share of sentences whose ``Z`` real space holds."""
    rows = []
    for shortest, longest in GROUPS:
        group = [(theta, n) for theta, n in zip(scores, lengths) if shortest <= n <= longest]
        real = [(sentence_data(n), 0, theta,
                 np.empty_like(theta)) for theta, n in group]
        logs = [(theta, n, True, np.empty_like(theta)) for theta, n in group]
        argmax = [(data, 0, theta, np.zeros(n, dtype=np.int64))
                  for (data, _, theta, _), (_, n) in zip(real, group)]
        held = np.mean([not np.isnan(second._real_marginals(theta, n, True, mu))
                        for (theta, n, _, mu) in logs])
        kernels = ((second.second_order_marginals, real), (second._log_space_marginals, logs),
                   (second.second_order_eisner, argmax))
        rates = warm_rates(kernels, seconds)
        rows.append([f"{shortest}-{longest}", len(group), f"{100 * held:.1f}"]
                    + [f"{r:,.0f}" for r in rates]
                    + [f"{rates[2] / rates[0]:.2f}x", f"{rates[2] / rates[1]:.2f}x"])
        print(rows[-1], flush=True)
    return rows


def first_call_seconds():
    """Import and compilation of the six kernels, in a fresh process with an empty cache."""
    return cold_seconds(
        "import time, sys\nstart = time.perf_counter()\n"
        f"sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})\n"
        "import numpy as np, bench_projective_marginals as b\n"
        "rng = np.random.RandomState(0)\n"
        "for make in (b.first_order, b.second_order):\n"
        "    for kernel, arguments in make(5, rng)[:3]:\n"
        "        kernel(*arguments[0])\n"
        "print(time.perf_counter() - start)\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--n-train", type=int, default=2000)
    parser.add_argument("--passes", type=int, default=10)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    compile_seconds = first_call_seconds()
    rng = np.random.RandomState(0)
    rows = []
    for order, make in (("first", first_order), ("second", second_order)):
        for n in LENGTHS:
            real, logs, argmax, gaps = make(n, rng)
            rates = warm_rates((real, logs, argmax), args.seconds)
            mu_gap, log_z_gap, _ = np.max(gaps, axis=0)
            held = np.mean([gap[2] for gap in gaps])
            rows.append([order, n, f"{100 * held:.0f}"] + [f"{r:,.0f}" for r in rates]
                        + [f"{rates[2] / rates[0]:.2f}x", f"{rates[2] / rates[1]:.2f}x",
                           f"{mu_gap:.1e}", f"{log_z_gap:.1e}"])
            print(rows[-1], flush=True)
    header = ["order", "n", "real space holds Z, %", "inside-outside, real space",
              "inside-outside, log space", "Eisner", "real-space time / Eisner's",
              "log-space time / Eisner's", "max marginal difference", "max log Z difference"]
    table = markdown_table(header, rows)
    print(table)
    scores, lengths, fit_seconds = trained_scores(args.n_train, args.passes)
    trained = markdown_table(
        ["words", "sentences", "real space holds Z, %", "inside-outside, real space",
         "inside-outside, log space", "Eisner", "real-space time / Eisner's",
         "log-space time / Eisner's"], trained_rows(scores, lengths, args.seconds))
    print(trained)
    body = (f"{table}\n\nSentences per second on one core, one sentence per call cycling "
            f"through {N_SCORES} standard normal score vectors per length (arc scores, and "
            "at second order sibling scores too), single root. The real-space kernels are the "
            "ones that training calls (`projective_marginals`, `second_order_marginals`: real "
            "space on scaled weights, log space only where Z would be too small); the "
            "log-space recursions are their fallbacks, timed alone (where real space does "
            "not hold Z, the real-space kernel runs the log-space one after it, and the two "
            "give the same numbers). The differences are the "
            "largest between the real- and log-space marginals and log Z over the score "
            "vectors. First call in a fresh process with an empty numba cache (import and "
            f"compilation of the six kernels): {compile_seconds:.1f} s. Load average at the "
            f"start: {load:.2f}, at the end: {os.getloadavg()[0]:.2f}."
            f"\n\nSecond order on trained scores: the {len(scores)} sentences of EWT dev, "
            f"scored by a second-order EGCRF (C = 0.1, {args.passes} passes, "
            f"{fit_seconds:.0f} s) fitted on the first {args.n_train} projective training "
            "sentences (forms, UPOS and XPOS), in groups by length; sentences per second "
            "within each group, and the share of its sentences whose Z the real-space pass "
            f"holds (the others run the log-space recursion after it).\n\n{trained}")
    record("Projective inside-outside against Eisner", body,
           "cd benchmarks && python bench_projective_marginals.py" + "".join(
               f" {a}" for a in sys.argv[1:]))


if __name__ == "__main__":
    main()
