"""Incremental fits (partial_fit) against one fit on CoNLL-2000 chunking.

The training sentences, in the corpus order, are cut into ``--chunks`` consecutive
chunks that ``partial_fit`` learns one call at a time; after every call the test
chunk F1 (``sklearn_struct.metrics.chunk_f1_score``), the seconds of the call and the
peak of the memory it allocated (``tracemalloc``: numpy arrays, Python objects) are
recorded, with the memory ``partial_fit`` keeps between calls (the inputs and dual
variables of the examples it revisits).  The model is the chain CRF of
``bench_eg_conll.py`` (its token features, no start/end parts, C = 5, i.e. crfsuite's
c2 = 0.1), the feature space fitted beforehand on every training sentence
(``partial_fit`` needs a fixed number of features).

EGCRF: each call solves its proximal problem to a relative duality gap ``--tol``
within ``--max-passes`` passes over the new and the kept sentences, for each
``partial_fit_memory`` of ``--memories`` (``none``: every sentence kept, so that the
last call solves the full problem); the reference is one ``fit`` on all sentences at
``tol=1e-3`` (the setting of ``bench_eg_conll.py``).  StructuredPerceptron: one epoch
per call (scikit-learn's contract), against ``fit`` with ``max_iter=1`` and 10.

Run from benchmarks/:  python bench_partial_fit_conll.py [--data DIR] [--chunks 10]
[--memories 0 1000 none] [--n-train N]
"""

import argparse
import os
import sys
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _record import markdown_table, record  # noqa: E402

from sklearn_struct import StructuredPerceptron  # noqa: E402
from sklearn_struct.datasets import load_conll  # noqa: E402
from sklearn_struct.eg import EGCRF  # noqa: E402
from sklearn_struct.metrics import chunk_f1_score  # noqa: E402
from sklearn_struct.preprocessing import SequenceDictVectorizer, conll_token_features  # noqa: E402
from sklearn_struct.structures.chain.structure import ChainStructure  # noqa: E402

C = 5.0


def measured(call):
    """``call()``'s result, its wall seconds and the peak of what it allocated (MB)."""
    tracemalloc.start()
    start = time.perf_counter()
    result = call()
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return result, seconds, peak


def kept_megabytes(model):
    """The memory ``EGCRF.partial_fit`` keeps between calls: inputs and dual variables."""
    memory = model.__dict__.get("_partial_fit_kept")
    if memory is None:
        return 0.0
    size = memory.center.nbytes
    if memory.X is not None:
        size += sum(x.data.nbytes + x.indices.nbytes + x.indptr.nbytes for x in memory.X)
        size += memory.state.theta.nbytes + memory.state.mu.nbytes + memory.Y.nbytes
    return size / 2**20


def incremental(model, chunks, classes, X_test, y_test, kept):
    """One row per ``partial_fit`` call: F1, seconds, peak MB, kept MB, passes, gap."""
    rows = []
    for k, (X_chunk, y_chunk) in enumerate(chunks, 1):
        _, seconds, peak = measured(lambda: model.partial_fit(X_chunk, y_chunk,
                                                              classes=classes))
        f1 = chunk_f1_score(y_test, model.predict(X_test))
        gap = getattr(model, "duality_gap_", np.nan) / abs(getattr(model, "primal_objective_", 1))
        passes = model.history_["passes"][-1] if "passes" in model.history_ else 1
        rows.append((k, f1, seconds, peak, kept(model), passes, gap))
        print(f"  call {k}: F1 {f1:.4f}  {seconds:.1f} s  peak {peak:.0f} MB  "
              f"passes {passes:.0f}  rel. gap {gap:.1e}", flush=True)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    default = Path(__file__).resolve().parents[2] / "shared" / "data" / "conll2000_chunking"
    parser.add_argument("--data", type=Path, default=default)
    parser.add_argument("--chunks", type=int, default=10)
    parser.add_argument("--memories", nargs="+", default=["0", "1000", "none"])
    parser.add_argument("--tol", type=float, default=1e-3)
    parser.add_argument("--max-passes", type=float, default=30)
    parser.add_argument("--n-train", type=int, default=None, help="first sentences only")
    args = parser.parse_args()

    train, test = load_conll(args.data / "train.txt.gz"), load_conll(args.data / "test.txt.gz")
    words, pos, tags = train.word, train.pos, train.tags
    if args.n_train is not None:
        words, pos, tags = words[:args.n_train], pos[:args.n_train], tags[:args.n_train]
    features = [conll_token_features(w, p) for w, p in zip(words, pos)]
    vectorizer = SequenceDictVectorizer().fit(features)
    X = vectorizer.transform(features)
    X_test = vectorizer.transform([conll_token_features(w, p) for w, p in zip(test.word, test.pos)])
    classes = np.unique(np.concatenate(list(tags)))
    bounds = np.linspace(0, len(X), args.chunks + 1).astype(int)
    chunks = [(X[a:b], tags[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
    print(f"{len(X)} train sentences in {args.chunks} chunks, {len(X_test)} test, "
          f"{X[0].shape[1]} features", flush=True)
    structure = ChainStructure(start_end=False)
    with warnings.catch_warnings():  # numba compiles (and these short fits warn)
        warnings.simplefilter("ignore", ConvergenceWarning)
        EGCRF(max_iter=1, tol=0, structure=structure).fit(X[:5], tags[:5])
        StructuredPerceptron(max_iter=1, structure=structure).fit(X[:5], tags[:5])

    load = os.getloadavg()[0]
    full, seconds, peak = measured(lambda: EGCRF(
        C=C, structure=structure, tol=1e-3, max_iter=200, random_state=0).fit(X, tags))
    full_f1 = chunk_f1_score(test.tags, full.predict(X_test))
    print(f"EGCRF fit: F1 {full_f1:.4f}  {seconds:.1f} s  peak {peak:.0f} MB", flush=True)
    rows = [["fit (all sentences)", "-", f"{full_f1:.4f}", "-", f"{seconds:.1f}", f"{peak:.0f}",
             "-", f"{full.history_['passes'][-1]:.0f}", f"{load:.2f}"]]
    for memory in args.memories:
        load = os.getloadavg()[0]
        print(f"EGCRF partial_fit, partial_fit_memory={memory}", flush=True)
        model = EGCRF(C=C, structure=structure, tol=args.tol, max_iter=args.max_passes,
                      partial_fit_memory=None if memory == "none" else int(memory),
                      random_state=0)
        calls = incremental(model, chunks, classes, X_test, test.tags, kept_megabytes)
        rows.append(_summary(f"partial_fit, memory {memory}", calls, full_f1, load))
    header = ["EGCRF", "F1 after each call", "final F1", "final / fit", "seconds per call "
              "(total)", "peak MB per call (max)", "kept MB (max)", "passes per call",
              "load"]
    body = (
        f"CoNLL-2000: {len(X)} training sentences cut in order into {args.chunks} chunks, "
        f"{len(X_test)} test sentences, {X[0].shape[1]} input features x 22 labels + "
        f"transitions, C={C:g}; each partial_fit call to a relative gap of {args.tol:g} within "
        f"{args.max_passes:g} passes over its new and kept sentences (memory: "
        "partial_fit_memory, in sentences).  Peak MB: the largest allocation peak of a call "
        "(tracemalloc); kept MB: inputs, dual variables and center kept between calls; "
        "load: 1-minute load average at the start of each row (2 cores).\n\n"
        + markdown_table(header, rows))
    print(body, flush=True)
    record("EGCRF partial_fit over CoNLL-2000 chunks", body, _command())
    perceptron_table(chunks, classes, X, tags, X_test, test.tags, structure)


def _summary(name, calls, reference_f1, load):
    f1s = [row[1] for row in calls]
    seconds = [row[2] for row in calls]
    return [name, " ".join(f"{f:.3f}" for f in f1s), f"{f1s[-1]:.4f}",
            f"{f1s[-1] / reference_f1:.4f}",
            f"{np.mean(seconds):.1f} ({np.sum(seconds):.1f})",
            f"{np.mean([row[3] for row in calls]):.0f} ({max(row[3] for row in calls):.0f})",
            f"{max(row[4] for row in calls):.1f}",
            " ".join(f"{row[5]:.0f}" for row in calls), f"{load:.2f}"]


def perceptron_table(chunks, classes, X, tags, X_test, y_test, structure):
    rows = []
    for max_iter in (1, 10):
        load = os.getloadavg()[0]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model, seconds, peak = measured(lambda: StructuredPerceptron(
                structure=structure, max_iter=max_iter, random_state=0).fit(X, tags))
        f1 = chunk_f1_score(y_test, model.predict(X_test))
        rows.append([f"fit, max_iter={max_iter}", "-", f"{f1:.4f}", "-", f"{seconds:.1f}",
                     f"{peak:.0f}", "-", "-", f"{load:.2f}"])
        if max_iter == 10:
            reference_f1 = f1
    load = os.getloadavg()[0]
    print("StructuredPerceptron partial_fit", flush=True)
    calls = incremental(StructuredPerceptron(structure=structure, random_state=0), chunks,
                        classes, X_test, y_test, lambda model: 0.0)
    rows.append(_summary("partial_fit (one epoch per call)", calls, reference_f1, load))
    rows = [row[:6] + [row[8]] for row in rows]  # no kept memory, one pass per call
    header = ["StructuredPerceptron", "F1 after each call", "final F1",
              "final / fit max_iter=10", "seconds per call (total)", "peak MB per call (max)",
              "load"]
    body = ("The same chunks; averaged perceptron, one epoch per partial_fit call (each "
            "chunk seen once), against fit on every sentence.\n\n"
            + markdown_table(header, rows))
    print(body, flush=True)
    record("StructuredPerceptron partial_fit over CoNLL-2000 chunks", body, _command())


def _command():
    return " ".join(["cd benchmarks && python bench_partial_fit_conll.py"] + sys.argv[1:])


if __name__ == "__main__":
    main()
