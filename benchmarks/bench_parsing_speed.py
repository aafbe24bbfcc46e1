"""Parsing speed: one online EG pass against one averaged-perceptron epoch, on the same features.

Both learners train the same structure on the same sentences: first order,
``DependencyTreeStructure`` (projective, single root, hashed first-order
templates, ``2 ** 23`` weights), or second order, ``SiblingDependencyStructure``
(the same arcs and adjacent siblings; working tree only, the baseline has no
such structure):

* ``ancora``: UD Spanish-AnCora r2.8, the dev file as training data (its
  projective sentences, about 30 words each), gold UPOS;
* ``ewt``: UD English-EWT r2.16 train (projective sentences), gold UPOS+XPOS.

EGCRF runs ``--passes`` effective passes at C = 0.1 (the EWT record's C, with
the estimator's default annealing) and ``tol=1e-12``, so that the duality gap
is evaluated on its schedule (after every pass while ``C`` is annealed and after
each of the first eight, then every quarter of the passes done) and the fit
never stops early; its cost per pass is the online epoch plus the gap
evaluations (``history_["seconds"]`` and ``history_["eval_seconds"]``), divided
by the passes.  The perceptron runs ``--passes`` epochs; its cost per epoch is
``history_["seconds"]``.  ``--n-jobs`` runs EGCRF's passes and evaluations on
that many threads (its ``n_jobs``); the perceptron has one.  A warm-up
fit on five sentences compiles (or loads) the kernels first, so no column
includes compilation.

The script checks out a baseline commit (``--baseline``, before the training
feature cache) and runs the same fits with both versions, alternating between
them in fresh processes so that the machine's load falls on both alike; it
reports each version's seconds per pass and epoch (medians over the rounds),
the EG / perceptron ratio, each process's peak RSS and, for the working tree,
the size of the feature cache.

``--components`` instead times, with the working tree alone, each kernel
operation that a perceptron epoch, an EG pass and a gap evaluation are made
of, once over every training sentence (the fastest of three calls, compiled
first), at the weights of three EGCRF passes: where the time of a pass goes, and
the least an EG pass can cost against an epoch.

Run from benchmarks/:
    python bench_parsing_speed.py [--treebanks ancora ewt] [--orders 1 2] [--passes 10]
    python bench_parsing_speed.py --components [--treebanks ancora ewt] [--orders 1 2]
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DATA = REPO.parent / "shared" / "data"
TREEBANKS = {
    "ancora": ("ud_es_ancora_r2.8_devtest", "es_ancora-ud-dev.conllu.gz", "upos"),
    "ewt": ("ud_en_ewt_r2.16", "en_ewt-ud-train.conllu.gz", "both"),
}
C = 0.1


def load(treebank):
    """The projective training sentences of ``treebank`` as encoded inputs and heads."""
    from sklearn_struct.datasets import filter_projective, load_conllu
    from sklearn_struct.preprocessing import DependencyTokenEncoder

    folder, file, pos = TREEBANKS[treebank]
    data = load_conllu(DATA / folder / file)
    sentences = [{"form": f, "upos": u, "xpos": x}
                 for f, u, x in zip(data.form, data.upos, data.xpos)]
    sentences, heads, _ = filter_projective(sentences, data.head)
    return DependencyTokenEncoder(pos=pos).fit_transform(sentences), heads


def cache_bytes(structure, X):
    """Bytes of the feature ids a fit keeps (0 for a version without the cache)."""
    data = structure.kernel_data(structure.make_batch(X), training=True)
    fields = [name for name in getattr(data, "_fields", ())
              if name not in ("attrs", "unit_offsets", "hash_bits", "single_root")]
    return int(sum(getattr(data, name).nbytes for name in fields))


def worker(args):
    """Fit both learners with the imported version; print JSON timings."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    from sklearn_struct import EGCRF, StructuredPerceptron
    from sklearn_struct import structures

    warnings.simplefilter("ignore", ConvergenceWarning)
    X, y = load(args["treebank"])
    Structure = (structures.DependencyTreeStructure if args["order"] == 1
                 else structures.SiblingDependencyStructure)
    structure = Structure(hash_bits=23)
    passes = args["passes"]
    perceptron = StructuredPerceptron(structure=structure, max_iter=passes, random_state=0)
    eg = EGCRF(structure=structure, C=C, max_iter=passes, tol=1e-12, random_state=0,
               n_jobs=args.get("n_jobs"))
    for model in (perceptron, eg):  # compile, or load the compiled kernels
        model.fit(X[:5], y[:5])
    start = time.perf_counter()
    perceptron.fit(X, y)
    perceptron_fit = time.perf_counter() - start
    start = time.perf_counter()
    eg.fit(X, y)
    eg_fit = time.perf_counter() - start
    history = eg.history_
    n_passes = history["passes"][-1]
    print(json.dumps({
        "sentences": len(X), "words": int(sum(len(x) for x in X)),
        "epoch": float(np.mean(perceptron.history_["seconds"])),
        "perceptron_fit": perceptron_fit,
        "eg_epoch": float(np.sum(history["seconds"]) / n_passes),
        "eg_pass": float((np.sum(history["seconds"]) + np.sum(history["eval_seconds"]))
                         / n_passes),
        "eg_fit": eg_fit, "evaluations": int(len(history["eval_seconds"])),
        "passes": float(n_passes),
        "cache_gb": cache_bytes(structure, X) / 1e9,
        "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6,
    }))


# Templates for ``--components``: one kernel operation over every example, compiled for a
# structure by ``specialize`` (which binds the ``*_op`` names).
def _all_part_scores(data, part_offsets, w, scale, out):
    for i in range(part_offsets.shape[0] - 1):
        part_scores_op(data, i, w, scale, out[part_offsets[i]:part_offsets[i + 1]])  # noqa: F821


def _all_argmax(data, part_offsets, unit_offsets, scores, y_out):
    for i in range(part_offsets.shape[0] - 1):
        argmax_op(data, i, scores[part_offsets[i]:part_offsets[i + 1]],  # noqa: F821
                  y_out[unit_offsets[i]:unit_offsets[i + 1]])


def _all_marginals(data, part_offsets, theta, mu_out):
    for i in range(part_offsets.shape[0] - 1):
        p0, p1 = part_offsets[i], part_offsets[i + 1]
        marginals_op(data, i, theta[p0:p1], mu_out[p0:p1])  # noqa: F821


def _all_log_partitions(data, part_offsets, theta, scratch):
    for i in range(part_offsets.shape[0] - 1):
        p0, p1 = part_offsets[i], part_offsets[i + 1]
        log_partition_op(data, i, theta[p0:p1], scratch[p0:p1])  # noqa: F821


def _all_add_features(data, part_offsets, coef, scale, w):
    for i in range(part_offsets.shape[0] - 1):
        add_features_op(data, i, coef[part_offsets[i]:part_offsets[i + 1]], scale,  # noqa: F821
                        w)


def _all_add_features_norms(data, part_offsets, coef, scale, w, w_scratch, part_scratch):
    for i in range(part_offsets.shape[0] - 1):
        add_features_norm_op(data, i, coef[part_offsets[i]:part_offsets[i + 1]],  # noqa: F821
                             scale, w, w_scratch, part_scratch)


def components(treebank, order):
    """Seconds of each kernel operation over all training sentences, and the sums that an
    epoch, a pass and an evaluation are made of."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    from sklearn_struct import EGCRF, structures
    from sklearn_struct.structures._kernel import specialize

    warnings.simplefilter("ignore", ConvergenceWarning)
    X, y = load(treebank)
    structure = (structures.DependencyTreeStructure if order == 1
                 else structures.SiblingDependencyStructure)(hash_bits=23)
    model = EGCRF(structure=structure, C=C, max_iter=3, tol=1e-12, random_state=0).fit(X, y)
    structure = model.structure_
    batch = structure.make_batch(X)
    data = structure.kernel_data(batch, training=True)
    ops = structure.kernel_ops
    offsets, units = batch.part_offsets, batch.unit_offsets
    w = structure.kernel_weights(batch, model.weights_)
    scale, n_parts = np.empty(0), int(offsets[-1])
    scores = np.empty(n_parts)
    scratch = np.empty(2 * int(np.max(np.diff(offsets))))
    marginals = specialize(_all_marginals, ops)
    specialize(_all_part_scores, ops)(data, offsets, w, scale, scores)
    # a change of the marginals as a step makes it: those of the scores less those of a
    # step towards them from 0.9 times the scores
    mu, mu_before = np.empty(n_parts), np.empty(n_parts)
    marginals(data, offsets, scores, mu)
    marginals(data, offsets, 0.9 * scores, mu_before)
    change = C * (mu - mu_before)

    def best(template, *args):
        kernel = specialize(template, ops)
        kernel(*args)
        times = []
        for _ in range(3):
            start = time.perf_counter()
            kernel(*args)
            times.append(time.perf_counter() - start)
        return min(times)

    seconds = {
        "part_scores": best(_all_part_scores, data, offsets, w, scale, scores),
        "argmax": best(_all_argmax, data, offsets, units, scores,
                       np.empty(int(units[-1]), dtype=np.int64)),
        "marginals": best(_all_marginals, data, offsets, scores, np.empty(n_parts)),
        "log_partition": best(_all_log_partitions, data, offsets, scores, np.empty(n_parts)),
        "add_features": best(_all_add_features, data, offsets, change, scale, w.copy()),
        "add_features_norm": best(_all_add_features_norms, data, offsets, change, scale,
                                  w.copy(), np.zeros_like(w), scratch),
    }
    return len(X), n_parts, seconds


def record_components(cli):
    """``--components``: the table of :func:`components` for every treebank and order."""
    from _record import markdown_table, record

    load_start = os.getloadavg()[0]
    rows = []
    for treebank in cli.treebanks:
        for order in cli.orders:
            n_sentences, n_parts, s = components(treebank, order)
            epoch = s["part_scores"] + s["argmax"]
            visit = s["part_scores"] + s["marginals"] + s["add_features_norm"]
            evaluation = s["part_scores"] + s["log_partition"]
            rows.append([treebank, order, n_sentences, n_parts,
                         *(f"{s[name]:.3f}" for name in s),
                         f"{epoch:.2f}", f"{visit:.2f}", f"{evaluation:.2f}",
                         f"{visit / epoch:.2f}", f"{(visit + evaluation) / epoch:.2f}"])
            print(rows[-1], flush=True)
    header = ["treebank", "order", "sentences", "parts", *(f"{name} s" for name in s),
              "epoch: scores + argmax", "EG visits: scores + marginals + add with norm",
              "evaluation: scores + log Z", "visits / epoch", "(visits + evaluation) / epoch"]
    table = markdown_table(header, rows)
    print(table)
    body = (
        f"{table}\n\nSeconds of one call of each kernel operation on every training sentence "
        "(the fastest of three calls, after one that compiles), with the training feature "
        f"cache, at the weights of three EGCRF passes (C = {C}; marginals and log Z of the "
        "part scores there; the feature sums of the change from the marginals of 0.9 times "
        "the scores to theirs, times C). An epoch "
        "scores and decodes every sentence once (a perceptron adds the features of its "
        "mistakes); an EG visit scores it, computes the marginals of the stepped dual "
        "parameters and adds the weights' change, with its squared norm (the adaptive step's "
        "test; rejected steps, which compute the marginals again and take their change back, "
        "not counted); a gap evaluation scores every sentence "
        "and takes its log-partition. With the gap evaluated after a pass, as during the "
        "annealing, the pass costs visits plus evaluation. Each operation here runs over all "
        "sentences before the next one starts, so that each reads the sentences' feature ids "
        "from memory again, where a visit runs them one after the other on a sentence whose "
        "ids stay in the processor's cache: the sums are upper bounds of what the epoch and "
        "the visits cost inside a fit (on the second order's 1.35 GB of ids, by about a "
        "third). "
        f"Load average {load_start:.2f} at the start and {os.getloadavg()[0]:.2f} at the end.")
    command = "cd benchmarks && python bench_parsing_speed.py" + "".join(
        f" {a}" for a in sys.argv[1:])
    record(f"Where a pass goes: kernel operations ({', '.join(cli.treebanks)})", body, command)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--baseline", default="ff36a35",
                        help="commit before the feature cache (default: the last one)")
    parser.add_argument("--treebanks", nargs="+", choices=sorted(TREEBANKS),
                        default=["ancora", "ewt"])
    parser.add_argument("--orders", nargs="+", type=int, choices=(1, 2), default=[1, 2])
    parser.add_argument("--passes", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--n-jobs", type=int, default=None,
                        help="EGCRF's n_jobs: its passes and gap evaluations on that many "
                        "threads (the perceptron has one)")
    parser.add_argument("--components", action="store_true",
                        help="time the kernel operations of a pass (working tree only)")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    cli = parser.parse_args()
    if cli.worker is not None:
        return worker(json.loads(cli.worker))

    sys.path.insert(0, str(HERE))
    if cli.components:
        return record_components(cli)
    from _ab import checkout, remove, run_worker
    from _record import markdown_table, record

    load_start = os.getloadavg()[0]
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        base_dir = Path(tmp) / "baseline"
        try:
            base_rev = checkout(cli.baseline, base_dir)
            head = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"],
                                  capture_output=True, text=True).stdout.strip()
            sides = (("baseline", base_dir), (f"working tree ({head})", REPO))
            for round_ in range(cli.rounds):
                for treebank in cli.treebanks:
                    for order in cli.orders:
                        for side, source in sides[order - 1:]:
                            run = run_worker(__file__, source, {
                                "treebank": treebank, "order": order, "passes": cli.passes,
                                "n_jobs": cli.n_jobs})
                            results.setdefault((treebank, order, side), []).append(run)
                            print(f"round {round_ + 1} {treebank} order {order} {side}: {run}",
                                  flush=True)
        finally:
            remove(base_dir)
    load_end = os.getloadavg()[0]

    rows = []
    for (treebank, order, side), runs in results.items():
        def median(key):
            return float(np.median([run[key] for run in runs]))
        first = runs[0]
        rows.append([
            treebank, order, base_rev if side == "baseline" else side,
            f"{first['sentences']} ({first['words'] / first['sentences']:.1f} words)",
            f"{median('epoch'):.2f}", f"{median('eg_epoch'):.2f}", f"{median('eg_pass'):.2f}",
            f"{median('eg_pass') / median('epoch'):.2f}",
            f"{median('perceptron_fit'):.1f}", f"{median('eg_fit'):.1f}",
            f"{first['cache_gb']:.2f}", f"{max(run['peak_rss_gb'] for run in runs):.2f}"])
    header = ["treebank", "order", "version", "training sentences", "perceptron s/epoch",
              "EG s/pass (epoch alone)", "EG s/pass (with gap evaluations)",
              "EG pass / perceptron epoch", f"perceptron fit s ({cli.passes} epochs)",
              f"EGCRF fit s ({cli.passes} passes)", "feature cache GB", "peak RSS GB"]
    table = markdown_table(header, rows)
    print(table)
    body = (
        f"{table}\n\nMedians over {cli.rounds} rounds of fresh processes, alternating "
        f"between the versions. EGCRF at C = {C} (annealed), {cli.passes} passes with the "
        "gap evaluated on its schedule"
        + ("" if cli.n_jobs is None else
           f", its passes and evaluations on {cli.n_jobs} threads (n_jobs={cli.n_jobs}; the "
           "perceptron on one)")
        + "; averaged perceptron, the same number of epochs; "
        "hashed features, 2^23 weights, projective single-root trees; "
        "compilation excluded (a warm-up fit on five sentences first). "
        f"Load average {load_start:.2f} at the start and {load_end:.2f} at the end."
    )
    command = "cd benchmarks && python bench_parsing_speed.py" + "".join(
        f" {a}" for a in sys.argv[1:])
    threads = "" if cli.n_jobs is None else f", EGCRF on {cli.n_jobs} threads"
    record(f"Parsing speed: an EG pass against a perceptron epoch ({', '.join(cli.treebanks)}"
           f"{threads})",
           body, command)


if __name__ == "__main__":
    main()
