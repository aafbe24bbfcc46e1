"""Training from partially labelled sentences: CoNLL-2000 chunking and CoNLL-2003 NER.

``--task chunking`` (CoNLL-2000): the labels of a fraction ``p`` of the training
tokens (``--fractions``, default 30%, 50% and 70%) are removed at random (each
token independently, seed 0) and replaced by ``None``.  For each ``p`` three fits
are compared on the test set's chunk F1:

* *partial*: every sentence with its known labels; EGCRF marginalises the unknown
  ones (latent-variable CRF by EM, Tsuboi et al. 2008), EGStructuredSVM imputes
  them (latent SVM by CCCP, Yu and Joachims 2009), StructuredPerceptron updates
  towards the best consistent output (latent perceptron, Sun et al. 2009);
* *fully labelled subset*: whole sentences only, drawn at random until they hold
  as many labelled tokens as the partial data (the same annotation budget);
* *full data* (one row): every label known.

``--task ner`` (CoNLL-2003 English, tags converted to IOB2): a gazetteer of the
training set's frequent names (every entity string seen at least ``--min-count``
times, with its most frequent type) is matched in the training sentences
(longest match first); the matched tokens get their B-/I- tags, every other
token is unknown (``None``).  Compared with full supervision on the same
sentences, on ``eng.testb``.

The token features are those of ``bench_eg_conll.py`` (``conll_token_features``,
chain without start/end parts; ``--structure semimarkov``: a semi-Markov chain whose
longest segment is the longest chunk of the training sentences' true tags, its tables
in sections of their own); ``C = 5`` for the CRF (crfsuite's c2 = 0.1) and
``C = 0.1`` for the SVM; EG to a relative gap ``--tol`` within ``--max-passes``
passes per convex step, at most ``--max-latent-iter`` outer steps; the averaged
perceptron runs ``--perceptron-epochs`` epochs.  Every row
uses the first ``--n-train`` training sentences (all of them by default), the
same for every row.

Run from benchmarks/:  python bench_partial_labels_conll.py [--task chunking|ner]
[--n-train N] [--fractions 0.3 0.5 0.7] [--estimators crf svm perceptron]
"""

import argparse
import os
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _record import markdown_table, record  # noqa: E402

from sklearn_struct.datasets import load_conll  # noqa: E402
from sklearn_struct.eg import EGCRF, EGStructuredSVM  # noqa: E402
from sklearn_struct.metrics import chunk_f1_score  # noqa: E402
from sklearn_struct.perceptron import StructuredPerceptron  # noqa: E402
from sklearn_struct.preprocessing import SequenceDictVectorizer, conll_token_features  # noqa: E402
from sklearn_struct.structures.chain.structure import ChainStructure  # noqa: E402
from sklearn_struct.structures.semimarkov import SemiMarkovStructure  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
SETTINGS = {"crf": (EGCRF, 5.0), "svm": (EGStructuredSVM, 0.1),
            "perceptron": (StructuredPerceptron, None)}


def removed_labels(tags, fraction, rng):
    """The tags with each token's label replaced by None with probability ``fraction``."""
    return [[None if u < fraction else t
             for t, u in zip(sentence, rng.random_sample(len(sentence)))] for sentence in tags]


def labelled_subset(tags, budget, rng):
    """Indices of whole sentences, in random order, until they hold ``budget`` tokens."""
    order = rng.permutation(len(tags))
    lengths = np.cumsum([len(tags[i]) for i in order])
    return np.sort(order[:int(np.searchsorted(lengths, budget)) + 1])


def fitted(name, X, y, args):
    """A fitted estimator, its wall seconds and the 1-minute load when it started."""
    estimator, C = SETTINGS[name]
    structure = (ChainStructure(start_end=False) if args.structure == "chain"
                 else SemiMarkovStructure(max_length=args.max_length))
    if C is None:
        model = estimator(structure=structure, max_iter=args.perceptron_epochs, random_state=0)
    else:
        model = estimator(C=C, structure=structure, tol=args.tol, max_iter=args.max_passes,
                          max_latent_iter=args.max_latent_iter, random_state=0)
    load = os.getloadavg()[0]
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, y)
    return model, time.perf_counter() - start, load


def row(setting, name, p, n_sentences, n_labelled, model, seconds, load, X_test, y_test):
    f1 = chunk_f1_score(y_test, model.predict(X_test))
    latent = "objective" in model.history_
    steps = f"{len(model.history_['objective']) - 1}" if latent else "-"
    passes = model.history_["passes"][-1] if "passes" in model.history_ else model.n_iter_
    print(f"  {setting} {name} p={p}: F1 {f1:.4f}  {seconds:.1f} s  outer steps {steps}",
          flush=True)
    if latent:
        print("    objective per outer step: "
              + " ".join(f"{v:.1f}" for v in model.history_["objective"]), flush=True)
    return [setting, name, p, n_sentences, n_labelled, f"{f1:.4f}", steps, f"{passes:.0f}",
            f"{seconds:.1f}", f"{load:.2f}"]


def vectorized(train_words, train_pos, test_words, test_pos):
    features = [conll_token_features(w, p) for w, p in zip(train_words, train_pos)]
    vectorizer = SequenceDictVectorizer().fit(features)
    return vectorizer.transform(features), vectorizer.transform(
        [conll_token_features(w, p) for w, p in zip(test_words, test_pos)])


def chunking(args):
    train = load_conll(args.data / "conll2000_chunking" / "train.txt.gz")
    test = load_conll(args.data / "conll2000_chunking" / "test.txt.gz")
    n = len(train.word) if args.n_train is None else args.n_train
    tags = [list(t) for t in train.tags[:n]]
    args.max_length = max(longest_chunk(t) for t in tags)
    X, X_test = vectorized(train.word[:n], train.pos[:n], test.word, test.pos)
    n_tokens = sum(len(t) for t in tags)
    print(f"{len(X)} train sentences ({n_tokens} tokens), {len(X_test)} test, "
          f"{X[0].shape[1]} features", flush=True)
    rows = []
    for name in args.estimators:
        model, seconds, load = fitted(name, X, tags, args)
        rows.append(row("full data", name, "0%", len(X), n_tokens, model, seconds, load,
                        X_test, test.tags))
        for p in args.fractions:
            rng = np.random.RandomState(0)
            partial = removed_labels(tags, p, rng)
            known = sum(t is not None for sentence in partial for t in sentence)
            model, seconds, load = fitted(name, X, partial, args)
            rows.append(row("partial labels", name, f"{p:.0%}", len(X), known, model, seconds,
                            load, X_test, test.tags))
            subset = labelled_subset(tags, known, rng)
            model, seconds, load = fitted(name, [X[i] for i in subset],
                                          [tags[i] for i in subset], args)
            rows.append(row("fully labelled subset", name, f"{p:.0%}", len(subset),
                            sum(len(tags[i]) for i in subset), model, seconds, load, X_test,
                            test.tags))
    body = (
        f"CoNLL-2000 chunking, the first {len(X)} training sentences ({n_tokens} tokens; "
        + ("all of them" if args.n_train is None else "a subset, the same for every row")
        + f"), {len(X_test)} test sentences, {X[0].shape[1]} input features x 22 labels + "
        f"transitions, no start/end parts.  Labels removed: each token's with probability p "
        f"(seed 0).  EGCRF C={SETTINGS['crf'][1]:g}, EGStructuredSVM C={SETTINGS['svm'][1]:g}; "
        f"tol={args.tol:g}, max_iter={args.max_passes:g} passes per convex step, "
        f"max_latent_iter={args.max_latent_iter}; the averaged perceptron "
        f"{args.perceptron_epochs} epochs.  Outer steps: EM (CRF) or CCCP (SVM) steps; "
        "passes: EG passes in all (the perceptron's: epochs).  Load: 1-minute load average "
        "when the fit started (2 cores, shared)." + _structure_note(args) + "\n\n"
        + markdown_table(["setting", "estimator", "labels removed", "sentences",
                          "labelled tokens", "test chunk F1", "outer steps", "passes",
                          "seconds", "load"], rows))
    print(body, flush=True)
    record("Partial labels on CoNLL-2000 chunking" + _suffix(args), body, _command())


def gazetteer_labels(words, tags, min_count):
    """The training tags as a gazetteer of frequent names finds them; None elsewhere."""
    mentions = Counter()
    for sentence, labels in zip(words, tags):
        start = None
        for t, label in enumerate(list(labels) + ["O"]):
            if start is not None and not label.startswith("I-"):
                mentions[(tuple(sentence[start:t]), labels[start][2:])] += 1
                start = None
            if label.startswith("B-"):
                start = t
    by_name = Counter()
    for (name, kind), count in mentions.items():
        by_name[name] += count
    types = {}
    for (name, kind), count in sorted(mentions.items(), key=lambda item: -item[1]):
        types.setdefault(name, kind)
    gazetteer = {name: types[name] for name, count in by_name.items() if count >= min_count}
    longest = max(len(name) for name in gazetteer)
    partial, matched = [], 0
    for sentence in words:
        labels = [None] * len(sentence)
        t = 0
        while t < len(sentence):
            for size in range(min(longest, len(sentence) - t), 0, -1):
                kind = gazetteer.get(tuple(sentence[t:t + size]))
                if kind is not None:
                    labels[t:t + size] = [f"B-{kind}"] + [f"I-{kind}"] * (size - 1)
                    matched += size
                    t += size
                    break
            else:
                t += 1
        partial.append(labels)
    return partial, gazetteer, matched


def with_lower_case_o(words, partial, gazetteer):
    """The gazetteer's labels, and O on every unmatched word that starts lower case and is
    in no name of the gazetteer (a cheap negative dictionary)."""
    in_names = {word for name in gazetteer for word in name}
    return [[label if label is not None or not word[:1].islower() or word in in_names
             else "O" for word, label in zip(sentence, labels)]
            for sentence, labels in zip(words, partial)]


def ner(args):
    folder = args.data / "conll2003_ner_en"
    train = load_conll(folder / "eng.train.gz", tag_scheme="iob2")
    test = load_conll(folder / "eng.testb.gz", tag_scheme="iob2")
    n = len(train.word) if args.n_train is None else args.n_train
    words, tags = [list(w) for w in train.word[:n]], [list(t) for t in train.tags[:n]]
    args.max_length = max(longest_chunk(t) for t in tags)
    X, X_test = vectorized(words, train.pos[:n], test.word, test.pos)
    n_tokens = sum(len(t) for t in tags)
    # the gazetteer comes from the whole training set's names, matched in the sentences used
    full_partial, gazetteer, _ = gazetteer_labels([list(w) for w in train.word], train.tags,
                                                  args.min_count)
    size = len(gazetteer)
    partial = full_partial[:n]
    known = sum(t is not None for sentence in partial for t in sentence)
    correct = sum(k == t for p, s in zip(partial, tags) for k, t in zip(p, s) if k is not None)
    kept = [i for i, p in enumerate(partial) if any(t is not None for t in p)]
    negative = with_lower_case_o(words, partial, gazetteer)
    known_o = sum(t is not None for sentence in negative for t in sentence)
    correct_o = sum(k == t for p, s in zip(negative, tags) for k, t in zip(p, s)
                    if k is not None)
    print(f"{len(X)} train sentences ({n_tokens} tokens), gazetteer of {size} names labels "
          f"{known} tokens ({correct} as the truth) in {len(kept)} sentences; with lower-case "
          f"O {known_o} ({correct_o})", flush=True)
    rows = []
    for name in args.estimators:
        model, seconds, load = fitted(name, X, tags, args)
        rows.append(row("full supervision", name, "-", len(X), n_tokens, model, seconds, load,
                        X_test, test.tags))
        model, seconds, load = fitted(name, [X[i] for i in kept], [partial[i] for i in kept],
                                      args)
        rows.append(row("gazetteer labels only", name, "-", len(kept), known, model, seconds,
                        load, X_test, test.tags))
        model, seconds, load = fitted(name, [X[i] for i in kept], [negative[i] for i in kept],
                                      args)
        rows.append(row("gazetteer labels + lower-case O", name, "-", len(kept),
                        sum(t is not None for i in kept for t in negative[i]), model, seconds,
                        load, X_test, test.tags))
    rows = [r[:2] + r[3:] for r in rows]
    body = (
        f"CoNLL-2003 English NER (IOB2), the first {len(X)} training sentences ({n_tokens} "
        f"tokens), eng.testb ({len(X_test)} sentences), {X[0].shape[1]} input features.  "
        f"Gazetteer: the {size} entity strings seen at least {args.min_count} times in the "
        f"whole training set, with their most frequent type, matched longest first; they "
        f"label {known} tokens ({correct} of them as the truth does), every other token "
        f"unknown, and the {len(kept)} sentences with a match are trained on.  Second "
        f"variant: also O on every unmatched word that starts lower case and is in no "
        f"gazetteer name ({known_o} labelled tokens, {correct_o} as the truth).  Settings as "
        "in the chunking table." + _structure_note(args) + "\n\n"
        + markdown_table(["setting", "estimator", "sentences", "labelled tokens",
                          "test entity F1", "outer steps", "passes", "seconds", "load"], rows))
    print(body, flush=True)
    record("Gazetteer labels on CoNLL-2003 NER" + _suffix(args), body, _command())


def longest_chunk(tags):
    """The longest chunk (B- or I- run of one type) of IOB tags."""
    longest = run = 0
    for previous, tag in zip(["O"] + list(tags), tags):
        run = 0 if tag == "O" else run + 1 if tag[0] == "I" and previous[2:] == tag[2:] else 1
        longest = max(longest, run)
    return longest


def _suffix(args):
    if args.structure == "chain":
        return ""
    return f", semi-Markov (max_length={args.max_length})"


def _structure_note(args):
    if args.structure == "chain":
        return ""
    return (f"  Structure: SemiMarkovStructure(max_length={args.max_length}), the longest true "
            "chunk of the training sentences; the chain's rows are in the section without "
            "'semi-Markov'.")


def _command():
    return " ".join(["cd benchmarks && python bench_partial_labels_conll.py"] + sys.argv[1:])


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--task", choices=("chunking", "ner"), default="chunking")
    parser.add_argument("--n-train", type=int, default=None, help="first sentences only")
    parser.add_argument("--fractions", type=float, nargs="+", default=[0.3, 0.5, 0.7])
    parser.add_argument("--estimators", nargs="+", choices=tuple(SETTINGS),
                        default=list(SETTINGS))
    parser.add_argument("--tol", type=float, default=1e-3)
    parser.add_argument("--max-passes", type=float, default=50)
    parser.add_argument("--max-latent-iter", type=int, default=20)
    parser.add_argument("--perceptron-epochs", type=int, default=10)
    parser.add_argument("--structure", choices=("chain", "semimarkov"), default="chain")
    parser.add_argument("--min-count", type=int, default=3)
    args = parser.parse_args()
    chunking(args) if args.task == "chunking" else ner(args)


if __name__ == "__main__":
    main()
