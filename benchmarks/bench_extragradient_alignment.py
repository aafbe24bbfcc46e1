"""Word alignment on the WPT-03 Hansards gold data (Taskar, Lacoste-Julien & Jordan 2006, 6.2).

Protocol: the 447 hand-aligned test sentences are split into the first 100 (training) and
the other 347 (test); the 37 trial sentences are the validation set that picks the stopping
pass of the unregularised paths (dual extragradient, averaged perceptron), as in the paper.
Targets are the sure links. Dice and IBM Model 1 statistics are counted, without labels,
over every available sentence pair: 447 test + 37 trial + the 2,383-pair Berkeley sample
(the paper used 1.1M pairs, which are not available here).

Compared, on the same edge features (AlignmentFeatureExtractor):
* Dice + matching: maximum-weight matching of the edges whose Dice exceeds a threshold,
  the threshold tuned for AER on the 100 training sentences (unsupervised scores);
* averaged structured perceptron (Collins 2002) with the matching argmax, examples
  shuffled at every pass, pass picked on the trial set;
* DualExtragradientMatcher with MatchingStructure(c+ = 1, c- = 3) (eq. 10), radius = inf,
  stopping pass picked on the trial set; plus the estimator's own early stopping
  (validation split of the training set) for reference.

Run from benchmarks/:  python bench_extragradient_alignment.py [--max-iter 200]
"""

import argparse
import os
import time
from pathlib import Path

import numpy as np
from _record import markdown_table, record

from sklearn_struct.datasets import (
    AlignmentFeatureExtractor,
    alignment_targets,
    edges_to_links,
    load_hansards_alignments,
    load_hansards_sentence_pairs,
)
from sklearn_struct.extragradient import DualExtragradientMatcher
from sklearn_struct.metrics import alignment_error_rate, alignment_precision_recall
from sklearn_struct.solvers.extragradient import dual_extragradient
from sklearn_struct.structures.matching.structure import MatchingStructure

SHARED_DATA = Path(os.environ.get(
    "SKLEARN_STRUCT_SHARED_DATA", Path(__file__).resolve().parents[1] / ".." / "shared" / "data"))
HANSARDS = SHARED_DATA / "wpt03_hansards_en_fr_alignment"


def load_problem():
    """Features and targets of the train (100) / validation (trial 37) / test (347) sets."""
    test = load_hansards_alignments(HANSARDS / "uva-slpl_embedalign" / "test.en-fr.naacl")
    trial = load_hansards_alignments(HANSARDS / "uva-slpl_embedalign" / "trial.en-fr.naacl")
    sample = load_hansards_sentence_pairs(HANSARDS / "berkeleyaligner" / "train_sample")

    def pairs(data):
        return list(zip(data.english, data.french))

    extractor = AlignmentFeatureExtractor().fit(pairs(test) + pairs(trial) + pairs(sample))
    X_gold = extractor.transform(pairs(test))
    X_trial = extractor.transform(pairs(trial))

    def split(X, data, indices):
        return ([X[i] for i in indices], [data.sure[i] for i in indices],
                [data.possible[i] for i in indices])

    sets = {
        "train": split(X_gold, test, range(100)),
        "validation": split(X_trial, trial, range(len(trial.sure))),
        "test": split(X_gold, test, range(100, len(test.sure))),
    }
    return extractor, sets


def evaluate(X, sure, possible, predictions):
    links = edges_to_links(X, predictions)
    precision, recall = alignment_precision_recall(sure, possible, links)
    return alignment_error_rate(sure, possible, links), precision, recall


def matching_predictions(structure, X, scores_flat):
    batch = structure.make_batch(X)
    predicted = structure.argmax(batch, scores_flat)
    return np.split(predicted, batch.unit_offsets[1:-1])


def dice_baseline(extractor, sets):
    """Matching over Dice - threshold, threshold tuned on the training sentences."""
    structure = MatchingStructure()
    dice_column = extractor.feature_names_.index("dice")

    def predict(X, threshold):
        scores = np.concatenate([x[0][:, dice_column] for x in X]) - threshold
        return matching_predictions(structure, X, scores)

    X, sure, possible = sets["train"]
    thresholds = np.round(np.arange(0.0, 0.61, 0.02), 2)
    aers = [evaluate(X, sure, possible, predict(X, t))[0] for t in thresholds]
    best = float(thresholds[int(np.argmin(aers))])
    return best, evaluate(*sets["test"], predict(sets["test"][0], best))


def averaged_perceptron(X, y, n_passes, random_state=0, callback=None):
    """Structured averaged perceptron (Collins 2002) with the matching argmax.

    ``w += f(x_i, y_i) - f(x_i, y_hat)`` on every example, examples shuffled at every pass
    (the paper's remedy for order dependence); returns the average of ``w`` over all
    example visits.  ``callback(pass, w_avg)`` is called after every pass.
    """
    structure = MatchingStructure()
    batches = [structure.make_batch([example]) for example in X]
    truth = [example[0].T @ labels for example, labels in zip(X, y)]
    rng = np.random.RandomState(random_state)
    w = np.zeros(X[0][0].shape[1])
    w_sum = np.zeros_like(w)
    visits = 0
    for t in range(1, n_passes + 1):
        for i in rng.permutation(len(X)):
            predicted = structure.argmax(batches[i], X[i][0] @ w)
            w += truth[i] - X[i][0].T @ predicted
            w_sum += w
            visits += 1
        if callback is not None:
            callback(t, w_sum / visits)
    return w_sum / visits


def path_selection(name, run, sets):
    """Run an unregularised path, score every pass on validation and test; best-on-validation."""
    structure = MatchingStructure()
    X_val, sure_val, possible_val = sets["validation"]
    X_test = sets["test"][0]
    history = []

    def callback(t, w):
        val = evaluate(X_val, sure_val, possible_val, matching_predictions(
            structure, X_val, np.concatenate([x[0] @ w for x in X_val])))
        test = evaluate(*sets["test"], matching_predictions(
            structure, X_test, np.concatenate([x[0] @ w for x in X_test])))
        history.append((t, val, test, np.linalg.norm(w)))
        return False

    start = time.perf_counter()
    run(callback)
    elapsed = time.perf_counter() - start
    best = min(history, key=lambda h: h[1][0])
    print(f"{name}: best validation AER {best[1][0]:.4f} at pass {best[0]}, "
          f"test AER there {best[2][0]:.4f} ({elapsed:.1f} s incl. evaluation)")
    return best, history, elapsed


def main(max_iter=200, perceptron_passes=30):
    start = time.perf_counter()
    extractor, sets = load_problem()
    X_train, sure_train, _ = sets["train"]
    y_train = alignment_targets(X_train, sure_train)
    n_edges = {k: sum(len(x[1]) for x in v[0]) for k, v in sets.items()}
    print(f"features: {len(extractor.feature_names_)}, edges {n_edges}, "
          f"built in {time.perf_counter() - start:.1f} s")
    rows = []

    threshold, (aer, p, r) = dice_baseline(extractor, sets)
    rows.append(["Dice + matching (threshold %.2f tuned on train)" % threshold, "-",
                 f"{aer:.4f}", f"{p:.4f}", f"{r:.4f}"])

    best, _, _ = path_selection(
        "averaged perceptron",
        lambda cb: averaged_perceptron(X_train, y_train, perceptron_passes, callback=cb), sets)
    rows.append(["averaged perceptron (best pass on trial)", best[0], *[
        f"{v:.4f}" for v in best[2]]])

    structure = MatchingStructure(false_positive_cost=1.0, false_negative_cost=3.0)
    batch = structure.make_batch(X_train)
    Y = np.concatenate(y_train)
    best, history, elapsed = path_selection(
        "dual extragradient",
        lambda cb: dual_extragradient(structure, batch, Y, radius=np.inf, max_iter=max_iter,
                                      callback=cb), sets)
    rows.append([f"dual extragradient, (c+,c-)=(1,3), radius=inf (best pass on trial of "
                 f"{max_iter})", best[0], *[f"{v:.4f}" for v in best[2]]])
    final = history[-1]
    rows.append(["dual extragradient, last pass", final[0], *[f"{v:.4f}" for v in final[2]]])

    t0 = time.perf_counter()
    model = DualExtragradientMatcher(structure=structure, max_iter=max_iter, early_stopping=True,
                                     validation_fraction=0.2, n_iter_no_change=30,
                                     random_state=0).fit(X_train, y_train)
    fit_time = time.perf_counter() - t0
    aer, p, r = evaluate(*sets["test"], model.predict(sets["test"][0]))
    rows.append([f"DualExtragradientMatcher(early_stopping, 20% of train; "
                 f"{model.n_iter_}/{max_iter} passes, fit {fit_time:.0f} s)",
                 model.best_iteration_, f"{aer:.4f}", f"{p:.4f}", f"{r:.4f}"])

    body = (
        "Train: first 100 of the 447 WPT-03 gold sentences; test: the other 347; validation "
        "(stopping pass): the 37 trial sentences. Targets = sure links; AER with sure/possible "
        f"gold. {len(extractor.feature_names_)} edge features (Dice and IBM Model 1 posteriors "
        "from 2,867 unlabelled pairs = all gold + trial + 2,383 Berkeley sample, not the "
        "paper's 1.1M pairs and Model 4). Candidate edges = all word pairs "
        f"({n_edges['train']} train, {n_edges['test']} test).\n\n"
        + markdown_table(["method", "pass", "test AER", "precision", "recall"], rows)
        + "\n\nPaper (section 6.2, Dice from 1.1M pairs and the richer features of Taskar et "
        "al. 2005): reg-path 5.6%, proj-grad 5.8%, averaged perceptron 6.1% AER, dual-ex "
        "slightly below (digits garbled in our text copy). Our features are much weaker "
        "(2,867 instead of 1.1M pairs, Model 1 instead of Model 4), so absolute AERs are "
        "higher; the comparison between methods on identical features is the point."
    )
    print(body)
    record("Dual extragradient: word alignment (Hansards)", body,
           f"python bench_extragradient_alignment.py --max-iter {max_iter}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-iter", type=int, default=200)
    parser.add_argument("--perceptron-passes", type=int, default=30)
    args = parser.parse_args()
    main(args.max_iter, args.perceptron_passes)
