"""Semi-Markov chain against chains on CoNLL-2003 NER: F1, time per pass, peak memory.

Every model sees the same token features (``conll_token_features``, +-1 window,
vectorised on the training sentences) and the IOB1 tags of the files as given:

* ``chain``: ``ChainStructure()``, a first-order chain over the 8 IOB1 tags;
* ``chain IOB1``: ``ChainStructure(allowed_transitions="IOB1", constrain_training=True)``,
  trained and decoded over the valid IOB1 sequences only (as the semi-Markov chain is);
* ``semi-Markov``: ``SemiMarkovStructure(scheme="IOB1")``, segments of the 4 entity types
  and ``O`` (one token), ``max_length`` fitted from the training chunks, features of the
  segment's sum, first and last token and its length, token (Hamming) loss.

Each is trained by ``EGCRF`` (and, with ``--svm``, ``EGStructuredSVM``) on the first
``--n-train`` sentences of eng.train (0: all) for every ``--C``, at most ``--max-iter``
passes to a relative duality gap ``--tol``; C is chosen by entity F1 on eng.testa
(conlleval's, ``chunk_f1_score``) and reported on eng.testb, with the recall of the test
entities by length (1, 2, 3 or more tokens) and the precision of the predicted ones by
length.

Each model runs in a fresh child process (one at a time, one thread) with an empty numba
cache: 'compile s' is its first fit and predict on 3 sentences (numba compiling),
's / pass' the online epoch's seconds per effective pass (``history_["seconds"]`` over
``history_["passes"]``, the per-pass objective evaluation excluded), 'peak GB' the
largest resident set during a fit (the peak is reset before each fit through
``/proc/self/clear_refs``, so that loading and featurising the data do not count),
'before GB' the resident set when the fit starts.

With ``--kernels`` it instead times the per-example kernel operations that a pass calls
(part scores, marginals, the adjoint map, argmax) over the training sentences, in
microseconds per token, for the chain's own forward-backward and Viterbi, for the chain
through the generic dynamic program (``kernel_ops.generic()``) and for the semi-Markov
chain (which has only the generic one), with the hyperedges per token: what separates the
cost of more edges from the cost of the generic program.  Random weights, the fastest
of 3 runs.

Run from benchmarks/:  python bench_semimarkov_ner.py [--n-train 0] [--C 1 3 10]
    [--max-iter 30] [--tol 1e-3] [--svm] [--kernels]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _record import markdown_table, record  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "conll2003_ner_en"
MODELS = ("chain", "chain IOB1", "semi-Markov")
LENGTHS = ("1", "2", "3+")


def make_structure(model):
    from sklearn_struct.structures import ChainStructure, SemiMarkovStructure

    if model == "chain":
        return ChainStructure()
    if model == "chain IOB1":
        return ChainStructure(allowed_transitions="IOB1", constrain_training=True)
    return SemiMarkovStructure(scheme="IOB1")


def length_bin(start, end):
    return LENGTHS[min(end - start, 3) - 1]


def by_length(y_true, y_pred):
    """Recall of the true entities and precision of the predicted ones, per entity length."""
    from sklearn_struct.datasets import chunk_spans

    # per length: true entities found, true entities, predicted entities right, predicted
    counts = {b: np.zeros(4, dtype=np.int64) for b in LENGTHS}
    for true_tags, pred_tags in zip(y_true, y_pred):
        true = set(chunk_spans(list(true_tags)))
        pred = set(chunk_spans(list(pred_tags)))
        for span in true:
            counts[length_bin(*span[1:])][:2] += np.array([span in pred, 1])
        for span in pred:
            counts[length_bin(*span[1:])][2:] += np.array([span in true, 1])
    return {b: {"recall": c[0] / max(c[1], 1), "n_true": int(c[1]),
                "precision": c[2] / max(c[3], 1), "n_pred": int(c[3])}
            for b, c in counts.items()}


def resident_gb(field):
    """``VmRSS`` (now) or ``VmHWM`` (peak since the last reset) of this process, in GB."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 2**20


@njit
def _each_marginals(op, data, offsets, theta, mu):
    for i in range(offsets.shape[0] - 1):
        op(data, i, theta[offsets[i]:offsets[i + 1]], mu[offsets[i]:offsets[i + 1]])


@njit
def _each_part_scores(op, data, offsets, w, out):
    for i in range(offsets.shape[0] - 1):
        op(data, i, w, np.empty(0), out[offsets[i]:offsets[i + 1]])


@njit
def _each_add_features(op, data, offsets, coef, w):
    for i in range(offsets.shape[0] - 1):
        op(data, i, coef[offsets[i]:offsets[i + 1]], np.empty(0), w)


@njit
def _each_argmax(op, data, offsets, unit_offsets, scores, Y):
    for i in range(offsets.shape[0] - 1):
        op(data, i, scores[offsets[i]:offsets[i + 1]], Y[unit_offsets[i]:unit_offsets[i + 1]])


@njit
def _count_edges(size, hypergraph, data, n_samples):
    total = 0
    for i in range(n_samples):
        total += hypergraph(data, i, np.empty((size(data, i)[1], 5), dtype=np.int64))
    return total


def kernels(args):
    """Microseconds per token of each kernel operation; record them."""
    from sklearn_struct.datasets import load_conll
    from sklearn_struct.preprocessing import SequenceDictVectorizer, conll_token_features

    train = load_conll(args.data / "eng.train.gz")
    n_train = args.n_train or len(train.tags)
    X = SequenceDictVectorizer().fit_transform(
        [conll_token_features(w, p) for w, p in zip(train.word[:n_train], train.pos[:n_train])])
    y = train.tags[:n_train]
    classes = sorted({tag for tags in y for tag in tags})
    n_tokens = sum(map(len, y))
    load = os.getloadavg()[0]
    rows = []
    for name, model, generic in (("chain, its own forward-backward", "chain", False),
                                 ("chain, generic dynamic program", "chain", True),
                                 ("semi-Markov (generic dynamic program)", "semi-Markov", False)):
        structure = make_structure(model).output_space().for_classes(classes, y)
        batch = structure.make_batch(X, n_states=len(classes))
        data, offsets = structure.kernel_data(batch), batch.part_offsets
        ops = (structure.kernel_ops.generic() if generic else structure.kernel_ops).functions
        w = np.random.default_rng(0).normal(scale=0.1, size=batch.n_weights)
        theta, mu = np.empty(offsets[-1]), np.empty(offsets[-1])
        Y = np.empty(n_tokens, dtype=np.int64)
        calls = {
            "part_scores": lambda: _each_part_scores(ops["part_scores"], data, offsets, w, theta),
            "marginals": lambda: _each_marginals(ops["marginals"], data, offsets, theta, mu),
            "add_features": lambda: _each_add_features(ops["add_features"], data, offsets, mu,
                                                       np.zeros_like(w)),
            "argmax": lambda: _each_argmax(ops["argmax"], data, offsets, batch.unit_offsets,
                                           theta, Y)}
        row = [name, f"{offsets[-1] / n_tokens:.1f}"]
        edges = "-"
        if generic or model == "semi-Markov":
            size, hypergraph = ops["hypergraph_size"], ops["hypergraph"]
            edges = f"{_count_edges(size, hypergraph, data, batch.n_samples) / n_tokens:.1f}"
        row.append(edges)
        for call in calls.values():
            call()  # compiles
            seconds = []
            for _ in range(3):
                start = time.perf_counter()
                call()
                seconds.append(time.perf_counter() - start)
            row.append(f"{min(seconds) / n_tokens * 1e6:.2f}")
        rows.append(row)
        print(" | ".join(row), flush=True)
    body = (
        f"The kernel operations of one pass, over the first {n_train} sentences of eng.train "
        f"({n_tokens} tokens), random weights, microseconds per token (the fastest of 3 "
        f"runs after a compiling one; load average {load:.1f} at the start"
        + (", so the figures are noisy" if load > 1.5 else "") + "). The semi-Markov chain "
        "has only the generic dynamic program: its marginals and argmax are to be read against "
        "the chain's through the same program.\n\n"
        + markdown_table(["model", "parts / token", "hyperedges / token", "part_scores",
                          "marginals", "add_features", "argmax"], rows))
    print(body)
    command = "cd benchmarks && python bench_semimarkov_ner.py " + " ".join(sys.argv[1:])
    record("Semi-Markov chain vs chain: kernel cost per token", body, command.strip())


def child(model, estimator, args):
    """Fit one model for every C; print a JSON line of its figures."""
    from sklearn.exceptions import ConvergenceWarning

    from sklearn_struct import EGCRF, EGStructuredSVM
    from sklearn_struct.datasets import load_conll
    from sklearn_struct.metrics import chunk_f1_score
    from sklearn_struct.preprocessing import SequenceDictVectorizer, conll_token_features

    warnings.simplefilter("ignore", ConvergenceWarning)  # the gap is reported
    Estimator = {"EGCRF": EGCRF, "EGStructuredSVM": EGStructuredSVM}[estimator]
    sets = {name: load_conll(args.data / f"eng.{name}.gz") for name in ("train", "testa", "testb")}
    n_train = args.n_train or len(sets["train"].tags)
    train = sets["train"]
    vectorizer = SequenceDictVectorizer()
    X_train = vectorizer.fit_transform([conll_token_features(w, p) for w, p in
                                        zip(train.word[:n_train], train.pos[:n_train])])
    y_train = train.tags[:n_train]
    tests = {name: (vectorizer.transform([conll_token_features(w, p) for w, p in
                                          zip(sets[name].word, sets[name].pos)]),
                    sets[name].tags) for name in ("testa", "testb")}
    del sets

    start = time.perf_counter()
    small = Estimator(max_iter=1, tol=0, structure=make_structure(model))
    small.fit(X_train[:3], y_train[:3]).predict(X_train[:3])
    compile_seconds = time.perf_counter() - start

    fits = []
    for C in args.C:
        params = dict(C=C, structure=make_structure(model), max_iter=args.max_iter,
                      tol=args.tol, random_state=0)
        before = resident_gb("VmRSS")
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")  # resets VmHWM, the peak resident set
        start = time.perf_counter()
        fitted = Estimator(**params).fit(X_train, y_train)
        fit_seconds = time.perf_counter() - start
        peak = resident_gb("VmHWM")
        passes = float(fitted.history_["passes"][-1])
        predicted = {name: fitted.predict(X) for name, (X, _) in tests.items()}
        fits.append({
            "C": C, "passes": passes, "fit_s": fit_seconds,
            "per_pass_s": float(np.sum(fitted.history_["seconds"])) / passes,
            "gap": float(fitted.duality_gap_ / abs(fitted.primal_objective_)),
            "before_gb": before, "peak_gb": peak,
            "f1": {name: chunk_f1_score(y, predicted[name]) for name, (_, y) in tests.items()},
            "lengths": by_length(tests["testb"][1], predicted["testb"]),
            "structure": repr(fitted.structure_), "n_weights": int(fitted.weights_.size)})
        print(json.dumps(fits[-1]), file=sys.stderr, flush=True)
    print(json.dumps({"compile_s": compile_seconds, "fits": fits, "n_train": n_train,
                      "tokens": int(sum(map(len, y_train))),
                      "features": len(vectorizer.get_feature_names_out())}))


def run_child(model, estimator, args):
    with tempfile.TemporaryDirectory() as cache:
        # an empty numba cache, so that 'compile s' is compilation and not a cache load
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, NUMBA_NUM_THREADS="1")
        command = [sys.executable, __file__, "--child", model, "--estimator", estimator,
                   "--data", str(args.data), "--n-train", str(args.n_train),
                   "--max-iter", str(args.max_iter), "--tol", str(args.tol),
                   "--C", *map(str, args.C)]
        run = subprocess.run(command, env=env, capture_output=True, text=True, check=True,
                             cwd=Path(__file__).resolve().parent)
    return json.loads(run.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--n-train", type=int, default=0, help="first training sentences (0: all)")
    parser.add_argument("--C", type=float, nargs="+", default=[1.0, 3.0, 10.0])
    parser.add_argument("--max-iter", type=int, default=30)
    parser.add_argument("--tol", type=float, default=1e-3)
    parser.add_argument("--svm", action="store_true", help="also EGStructuredSVM")
    parser.add_argument("--kernels", action="store_true",
                        help="time the kernel operations per token instead")
    parser.add_argument("--child", choices=MODELS, help=argparse.SUPPRESS)
    parser.add_argument("--estimator", default="EGCRF", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.estimator, args)
        return
    if args.kernels:
        kernels(args)
        return

    loads = [os.getloadavg()[0]]
    results = {}
    for estimator in ("EGCRF", "EGStructuredSVM") if args.svm else ("EGCRF",):
        for model in MODELS:
            results[estimator, model] = run_child(model, estimator, args)
            loads.append(os.getloadavg()[0])
            print(estimator, model, json.dumps(results[estimator, model]), flush=True)
    report(results, args, loads)


def best_fit(result):
    return max(result["fits"], key=lambda fit: fit["f1"]["testa"])


def segments_pay(results):
    """Sentences comparing each estimator's semi-Markov chain with its better chain (by dev F1)."""
    sentences = []
    for estimator in dict.fromkeys(estimator for estimator, _ in results):
        chain = max(("chain", "chain IOB1"),
                    key=lambda model: best_fit(results[estimator, model])["f1"]["testa"])
        fits = {model: best_fit(results[estimator, model]) for model in (chain, "semi-Markov")}
        semi, base = fits["semi-Markov"], fits[chain]

        def points(field, b):
            return f"{100 * (semi['lengths'][b][field] - base['lengths'][b][field]):+.1f}"

        per_pass = [np.median([fit["per_pass_s"] for fit in results[estimator, model]["fits"]])
                    for model in ("semi-Markov", chain)]
        peak = [max(fit["peak_gb"] for fit in results[estimator, model]["fits"])
                for model in ("semi-Markov", chain)]
        sentences.append(
            f"{estimator}: the semi-Markov chain scores "
            f"{100 * (semi['f1']['testb'] - base['f1']['testb']):+.1f} F1 points on eng.testb "
            f"against the better chain by testa F1 ({chain}); recall "
            f"{' / '.join(points('recall', b) for b in LENGTHS)} and precision "
            f"{' / '.join(points('precision', b) for b in LENGTHS)} points on entities of "
            f"{' / '.join(LENGTHS)} tokens; at {per_pass[0] / per_pass[1]:.1f}x its seconds "
            f"per pass and {peak[0] - peak[1]:+.2f} GB of peak resident set.")
    return " ".join(sentences)


def report(results, args, loads):
    """Render the tables of ``results`` (per estimator and model, the children's figures)."""
    rows, every_c, length_rows = [], [], []
    for (estimator, model), result in results.items():
        fits = result["fits"]
        best = best_fit(result)
        rows.append([estimator, model, f"{best['C']:g}", f"{best['f1']['testa']:.4f}",
                     f"{best['f1']['testb']:.4f}",
                     f"{np.median([fit['per_pass_s'] for fit in fits]):.2f}",
                     f"{result['compile_s']:.1f}",
                     f"{max(fit['before_gb'] for fit in fits):.2f}",
                     f"{max(fit['peak_gb'] for fit in fits):.2f}", f"{best['n_weights']}"])
        every_c += [[estimator, model, f"{fit['C']:g}", f"{fit['passes']:.3g} ({fit['gap']:.0e})",
                     f"{fit['fit_s']:.0f}", f"{fit['per_pass_s']:.2f}",
                     f"{fit['f1']['testa']:.4f}", f"{fit['f1']['testb']:.4f}"] for fit in fits]
        lengths = best["lengths"]
        length_rows.append([estimator, model, f"{best['C']:g}"] + [
            f"{lengths[b]['recall']:.4f}" for b in LENGTHS] + [
            f"{lengths[b]['precision']:.4f}" for b in LENGTHS])
    first = next(iter(results.values()))
    test_lengths = first["fits"][0]["lengths"]
    semimarkov = results["EGCRF", "semi-Markov"]["fits"][0]["structure"]
    load_note = (f"Load average (1 minute) {min(loads):.1f} to {max(loads):.1f} over the run "
                 "(2 cores shared with other jobs)"
                 + (": seconds are noisy, F1 is not." if max(loads) > 1.5 else "."))
    body = (
        f"CoNLL-2003 English NER, IOB1 tags as given; trained on "
        f"{first['n_train']} sentences of eng.train ({first['tokens']} tokens, "
        f"{first['features']} input features of `conll_token_features`), C in "
        f"{{{', '.join(f'{C:g}' for C in args.C)}}} chosen by entity F1 on eng.testa, "
        f"reported on eng.testb; at most {args.max_iter} passes to a relative duality gap "
        f"of {args.tol:g}. The semi-Markov chain as fitted: `{semimarkov}`. "
        f"{load_note}\n\n"
        + markdown_table(["estimator", "model", "C (best dev)", "testa F1", "testb F1",
                          "s / pass (median over C)", "compile s", "before GB", "peak GB",
                          "weights"], rows)
        + "\n\nWhen the segments pay: " + segments_pay(results)
        + "\n\nRecall of the eng.testb entities and precision of the predicted entities, by "
        f"length in tokens (test entities: {test_lengths['1']['n_true']} of 1 token, "
        f"{test_lengths['2']['n_true']} of 2, {test_lengths['3+']['n_true']} of 3 or more; "
        "the binomial standard error of a recall near 0.8 is then "
        + " / ".join(f"{100 * np.sqrt(0.16 / test_lengths[b]['n_true']):.1f}" for b in LENGTHS)
        + " points), at the best C:\n\n"
        + markdown_table(["estimator", "model", "C", "recall 1", "recall 2", "recall 3+",
                          "precision 1", "precision 2", "precision 3+"], length_rows)
        + "\n\nEvery C:\n\n"
        + markdown_table(["estimator", "model", "C", "passes (rel. gap)", "fit s", "s / pass",
                          "testa F1", "testb F1"], every_c))
    print(body)
    command = "cd benchmarks && python bench_semimarkov_ner.py " + " ".join(sys.argv[1:])
    record("Semi-Markov chain vs chains on CoNLL-2003 NER", body, command.strip())


if __name__ == "__main__":
    main()
