"""CRFsuite's elastic-net CRF: OWL-QN here against CRFsuite's L-BFGS, side by side.

Issue 48, item 1.  CoNLL-2000 chunking (8,936 training sentences), the token feature dicts
of ``conll_token_features``, the same dicts for both.  The model is CRFsuite's with every
(attribute, label) pair and every label pair a weight (``all_possible_states=True``,
``all_possible_transitions=True``) and no start or end weights:
``ChainStructure(start_end=False)`` over ``SequenceDictVectorizer(separator=":")``'s
columns, whose names are CRFsuite's attribute names.  The objective is CRFsuite's,
``NLL(w) + c1 ||w||_1 + c2 ||w||^2``.

Both objectives are evaluated by the same code at each trainer's final weights
(CRFsuite's weights read back from its model file through sklearn-crfsuite's
``state_features_`` and ``transition_features_``).  Reported per setting: the objective
of each, their relative difference, the non-zero weights of each, the training time of
each (CRFsuite with its default stopping rule: an improvement below 1e-5 over 10
iterations; here, a certified relative duality gap of ``--tol`` or the same rule with
``--delta``), and the time at which
the OWL-QN here first reached CRFsuite's objective (to 1e-4).  Both run in this process,
one after the other, on one core.

Run from benchmarks/:
    python bench_elastic_net_crfsuite.py
"""

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _record import markdown_table, record  # noqa: E402

DATA = HERE.parents[1] / "shared" / "data" / "conll2000_chunking"
SETTINGS = ((0.1, 0.1), (0.0, 1.0), (1.0, 1.0))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tol", type=float, default=1e-7)
    parser.add_argument("--delta", type=float, default=1e-6,
                        help="OWL-QN here also stops on CRFsuite's rule with this delta")
    parser.add_argument("--max-iter", type=int, default=2000)
    parser.add_argument("--n-train", type=int, default=None,
                        help="the first sentences only (a trial run)")
    parser.add_argument("--settings", nargs="+", metavar="C1,C2",
                        default=[f"{c1:g},{c2:g}" for c1, c2 in SETTINGS],
                        help="the (c1, c2) settings, each recorded in its own section")
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    from sklearn_crfsuite import CRF

    from sklearn_struct.datasets import load_conll
    from sklearn_struct.preprocessing import SequenceDictVectorizer, conll_token_features
    from sklearn_struct.solvers.elastic_net import _log_loss, elastic_net_solve
    from sklearn_struct.solvers.loss import StructuredLoss
    from sklearn_struct.structures import ChainStructure

    train = load_conll(DATA / "train.txt.gz")
    dicts = [conll_token_features(w, p) for w, p in zip(train.word, train.pos)]
    tags = [list(t) for t in train.tags]
    if args.n_train:
        dicts, tags = dicts[:args.n_train], tags[:args.n_train]
    vectorizer = SequenceDictVectorizer(separator=":")
    X = vectorizer.fit_transform(dicts)
    labels = sorted({tag for sequence in tags for tag in sequence})
    index = {label: k for k, label in enumerate(labels)}
    Y = np.array([index[tag] for sequence in tags for tag in sequence])
    structure = ChainStructure(start_end=False)
    batch = structure.make_batch(X, n_states=len(labels))
    loss = StructuredLoss(structure, batch, Y, kind="log")
    K, d = len(labels), len(vectorizer.feature_names_)

    def objective(w, c1, c2):
        return _log_loss(loss, w)[1] + c1 * np.abs(w).sum() + c2 * float(w @ w)

    for setting in args.settings:
        c1, c2 = (float(value) for value in setting.split(","))
        load = os.getloadavg()[0]
        crf = CRF(algorithm="lbfgs", c1=c1, c2=c2, max_iterations=args.max_iter,
                  all_possible_states=True, all_possible_transitions=True)
        start = time.perf_counter()
        crf.fit(dicts, tags)
        crfsuite_seconds = time.perf_counter() - start
        print(f"c1={c1:g} c2={c2:g}: CRFsuite took {crfsuite_seconds:.0f} s", flush=True)
        w_crfsuite = np.zeros(batch.n_weights)
        W = w_crfsuite[:K * d].reshape(K, d)
        for (attribute, label), weight in crf.state_features_.items():
            column = vectorizer.vocabulary_.get(attribute)
            if column is not None:  # (an attribute whose values were all 0 has no column)
                W[index[label], column] = weight
        transition = w_crfsuite[K * d:].reshape(K, K)
        for (a, b), weight in crf.transition_features_.items():
            transition[index[a], index[b]] = weight
        p_crfsuite = objective(w_crfsuite, c1, c2)
        result = elastic_net_solve(loss, c1, c2, tol=args.tol, delta=args.delta,
                                   max_iter=args.max_iter)
        p_ours = objective(result.w, c1, c2)
        reached = np.flatnonzero(np.array(result.history["primal"])
                                 <= p_crfsuite * (1 + 1e-4))
        at = result.history["seconds"][reached[0]] if len(reached) else float("nan")
        row = [f"{c1:g}", f"{c2:g}", f"{p_crfsuite:.6f}", f"{p_ours:.6f}",
               f"{(p_ours - p_crfsuite) / abs(p_crfsuite):+.2e}",
               f"{result.gap / abs(result.primal):.1e}",
               *non_zero(crf, w_crfsuite, result.w),
               f"{crfsuite_seconds:.1f}", f"{result.history['seconds'][-1]:.1f}",
               f"{at:.1f}", str(result.n_iter)]
        body = (f"CoNLL-2000 train, {len(dicts)} sentences, {K} labels, {d} attributes "
                f"({batch.n_weights} weights, every pair).  Load average {load:.2f} at the "
                "start (the times depend on it).  Objectives evaluated by the same code at "
                "each trainer's weights (CRFsuite's as its model dump gives them, to 6 decimals); "
                "'relative' is (ours - CRFsuite's) / CRFsuite's.\n\n"
                + markdown_table(["c1", "c2", "CRFsuite objective", "OWL-QN objective",
                                  "relative", "certified relative gap", "non-zero CRFsuite",
                                  "non-zero OWL-QN", "counted", "CRFsuite s", "OWL-QN s",
                                  "OWL-QN s to CRFsuite's objective", "OWL-QN iterations"],
                                 [row]))
        print(body, flush=True)
        if not args.no_record and not args.n_train:
            record(f"Elastic net on CoNLL-2000 at c1={c1:g}, c2={c2:g}: OWL-QN against "
                   "CRFsuite", body, "cd benchmarks && python "
                   + " ".join([Path(__file__).name] + sys.argv[1:]))


def non_zero(crf, w_crfsuite, w_ours):
    """The non-zero weights of each, counted alike: CRFsuite's own count of its active
    features (non-zero weights), which its log gives, against the exact zeros of OWL-QN
    here; without that line, both at the 6 decimals of CRFsuite's model dump (the dump
    writes a weight under 5e-7 as 0)."""
    active = crf.training_log_.last_iteration.get("active_features")
    if active is not None:
        return str(active), str(int(np.count_nonzero(w_ours))), "CRFsuite's active features"
    return (str(int(np.count_nonzero(w_crfsuite))), str(int(np.count_nonzero(np.round(w_ours, 6)))),
            "at 6 decimals")


if __name__ == "__main__":
    main()
