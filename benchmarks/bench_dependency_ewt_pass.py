"""One EGCRF pass over UD English-EWT train: time, peak memory and test UAS.

Model: DependencyTreeStructure (projective, single root, hashed first-order
McDonald et al. 2005 templates, 2**23 weights) over gold UPOS+XPOS tags,
trained on the projective training sentences (non-projective ones dropped and
counted), C = 1, no annealing, one effective pass of online EG.  Reports the
epoch time (``history_["seconds"]``), the objective evaluation time, the whole
fit (including numba compilation in this process), the process's peak RSS and
the test UAS with punctuation excluded (CoNLL-X rule).  A first measurement,
not the issue's experiment (which trains to convergence and compares with a
perceptron).

Run from benchmarks/:  python bench_dependency_ewt_pass.py [--data DIR] [--hash-bits 23]
"""

import argparse
import os
import resource
import sys
import time
import warnings
from pathlib import Path

from sklearn.exceptions import ConvergenceWarning

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _record import markdown_table, record  # noqa: E402

from sklearn_struct import EGCRF  # noqa: E402
from sklearn_struct.datasets import filter_projective, load_conllu  # noqa: E402
from sklearn_struct.metrics import attachment_score  # noqa: E402
from sklearn_struct.preprocessing import DependencyTokenEncoder  # noqa: E402
from sklearn_struct.structures import DependencyTreeStructure  # noqa: E402


def sentences(data):
    return [{"form": f, "upos": u, "xpos": x} for f, u, x in zip(data.form, data.upos, data.xpos)]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    default = Path(__file__).resolve().parents[2] / "shared" / "data" / "ud_en_ewt_r2.16"
    parser.add_argument("--data", type=Path, default=default)
    parser.add_argument("--hash-bits", type=int, default=23)
    args = parser.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    load = os.getloadavg()[0]
    train = load_conllu(args.data / "en_ewt-ud-train.conllu.gz")
    test = load_conllu(args.data / "en_ewt-ud-test.conllu.gz")
    train_sentences, y_train, dropped = filter_projective(sentences(train), train.head)
    encoder = DependencyTokenEncoder(pos="both").fit(train_sentences)
    X_train, X_test = encoder.transform(train_sentences), encoder.transform(sentences(test))
    start = time.perf_counter()
    model = EGCRF(C=1.0, structure=DependencyTreeStructure(hash_bits=args.hash_bits),
                  max_iter=1, annealing=False, random_state=0).fit(X_train, y_train)
    fit_seconds = time.perf_counter() - start
    uas = attachment_score(test.head, model.predict(X_test), forms=test.form)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    row = [len(X_train), dropped, f"{model.history_['seconds'][0]:.1f}",
           f"{model.history_['eval_seconds'][0]:.1f}", f"{fit_seconds:.1f}", f"{peak:.2f}",
           f"{100 * uas:.2f}"]
    table = markdown_table(["train sentences", "dropped (non-projective)", "EG pass s",
                            "objective evaluation s", "fit s (with compilation)",
                            "peak RSS GB", "test UAS after 1 pass (punct. excluded)"], [row])
    print(table)
    record("Dependency parsing: one EG pass over EWT", f"{table}\n\n{__doc__.split('Run')[0]}"
           f"Load average at the start: {load:.2f}.",
           "cd benchmarks && python bench_dependency_ewt_pass.py")


if __name__ == "__main__":
    main()
