"""The working-set solver with and without its acceleration, on three kinds of data.

``EGStructuredSVM(solver="working_set")`` runs Catalyst's proximal-point extrapolation
when ``C`` is far above the data's scale (see ``sklearn_struct.solvers.working_set``).
Here each fit runs twice, side by side in this process: as shipped, and with the
settings before the acceleration (``accelerate=False``, cached passes until the working
sets' gap is 0.05 of the certified gap).  Every fit stops at a relative duality gap of 1e-2 or
after ``--max-oracle`` oracle passes.

* OCR letters (Taskar), train fold 1 (704 words), raw pixels, chain without start/end
  parts (the task of ``bench_ssvm_bcfw.py``);
* the first 1,500 CoNLL-2003 NER sentences, 7 dict features per token (the task of
  ``bench_eg_ner.py``), chain without start/end parts;
* the first 2,000 MNIST training images (pixels / 255), multiclass: nearly separable,
  so that the optimum hardly moves above C = 10 while the dual gets harder.

Per fit: oracle passes (cached passes), the wall time, its time in oracle passes (wall
time over the mean oracle pass, so that cached passes count at their cost) and the
final relative gap.  numba compiles in warm-up fits before any timing.

Run from benchmarks/:  python bench_working_set_acceleration.py
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
from bench_eg_ner import token_features  # noqa: E402
from bench_ssvm_bcfw import in_oracle_passes  # noqa: E402

from sklearn_struct.datasets import load_conll, load_mnist_idx, load_ocr_letters  # noqa: E402
from sklearn_struct.eg import EGStructuredSVM  # noqa: E402
from sklearn_struct.preprocessing import SequenceDictVectorizer  # noqa: E402
from sklearn_struct.solvers import working_set  # noqa: E402
from sklearn_struct.structures import ChainStructure, MulticlassStructure  # noqa: E402


def ocr(data):
    letters = load_ocr_letters(data / "ocr_letters_taskar" / "letters_flat.npz")
    train = np.flatnonzero(letters.folds == 1)
    return ([letters.X[i] for i in train], [letters.y[i] for i in train],
            lambda: ChainStructure(start_end=False))


def ner(data, n=1500):
    conll = load_conll(data / "conll2003_ner_en" / "eng.train.gz")
    features = [token_features(w, p) for w, p in zip(conll.word[:n], conll.pos[:n])]
    return (SequenceDictVectorizer().fit_transform(features), list(conll.tags[:n]),
            lambda: ChainStructure(start_end=False))


def mnist(data, n=2000):
    digits = load_mnist_idx(data / "mnist_partial" / "train-images-idx3-ubyte.gz",
                            data / "mnist_partial" / "train-labels-idx1-ubyte.gz")
    return digits.data[:n] / 255.0, digits.target[:n], MulticlassStructure


def fit(X, y, make_structure, C, max_oracle, accelerated):
    """One working-set fit; returns its model and wall seconds.  The settings before the
    acceleration: ``accelerate=False`` and cached passes to 0.05 of the certified gap."""
    saved = working_set.INNER_GAP_FRACTION
    if not accelerated:
        working_set.INNER_GAP_FRACTION = 0.05
    try:
        model = EGStructuredSVM(C=C, structure=make_structure(), solver="working_set",
                                tol=1e-2, max_iter=max_oracle, accelerate=accelerated,
                                random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            start = time.perf_counter()
            model.fit(X, y)
            return model, time.perf_counter() - start
    finally:
        working_set.INNER_GAP_FRACTION = saved


def describe(model, seconds):
    h = model.history_
    return [f"{model.n_iter_} ({h['cached_passes'].sum()})", f"{seconds:.2f}",
            f"{in_oracle_passes(h):.0f}", f"{model.duality_gap_ / model.primal_objective_:.1e}"]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    default = Path(__file__).resolve().parents[2] / "shared" / "data"
    parser.add_argument("--data", type=Path, default=default)
    parser.add_argument("--max-oracle", type=int, default=100)
    args = parser.parse_args()
    tasks = [("OCR letters, fold 1", ocr, (0.1, 1.0, 10.0)),
             ("CoNLL-2003 NER, 1,500 sentences", ner, (0.1, 1.0, 10.0)),
             ("MNIST, 2,000 digits", mnist, (1.0, 10.0, 100.0))]
    rows, start_load = [], os.getloadavg()[0]
    for name, load, Cs in tasks:
        X, y, make_structure = load(args.data)
        start = time.perf_counter()
        for accelerated in (True, False):
            fit(X[:20], y[:20], make_structure, 1.0, 2, accelerated)
        print(f"{name}: warm-up {time.perf_counter() - start:.1f} s", flush=True)
        for C in Cs:
            model, seconds = fit(X, y, make_structure, C, args.max_oracle, True)
            row = [name, f"{C:g}"] + describe(model, seconds)
            row += describe(*fit(X, y, make_structure, C, args.max_oracle, False))
            rows.append(row)
            print(rows[-1], flush=True)
    body = (
        f"`EGStructuredSVM(solver='working_set')`, tol=1e-2, at most {args.max_oracle} oracle "
        f"passes, as shipped (Catalyst's extrapolation above the data's scale of C, cached "
        f"passes to 0.3 of the proximal gap) and with the settings before it (accelerate=False, "
        f"cached passes to 0.05 of the certified gap), side by side in one process. "
        f"Passes: oracle passes (cached passes); time in oracle passes: wall time over the "
        f"mean oracle pass. Load average {start_load:.2f} at the start.\n\n"
        + markdown_table(["data", "C", "accelerated: passes", "s", "in oracle passes",
                          "relative gap", "before: passes", "s", "in oracle passes",
                          "relative gap"], rows))
    print(body)
    record("Working-set solver: with and without its acceleration", body,
           "cd benchmarks && python bench_working_set_acceleration.py "
           + " ".join(sys.argv[1:]))


if __name__ == "__main__":
    main()
