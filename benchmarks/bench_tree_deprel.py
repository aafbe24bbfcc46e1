"""Labelling dependency relations on UD English-EWT: a tree CRF, a chain CRF and LR.

Given the heads of a sentence, predict every word's relation (``deprel``, 51
labels with subtypes).  The label graph of the tree CRF is the dependency tree
itself (a word's parent is its head, the root word has none), so a word's
label interacts with its head's label; the transitions are typed by the arc's
direction (the word left or right of its head, ``--edge-types direction``).
It is compared, on the same features, with a chain CRF over the same words in
sentence order (``ChainStructure``, start and end parts) and with per-word
multinomial ``LogisticRegression``.

Features: one pipeline for the three models, token dicts vectorized by
``SequenceDictVectorizer`` fitted on train (see :func:`token_features`: the
word, lower-cased word, suffixes, UPOS/XPOS of the word, its head, its
neighbours, children, siblings and grandparent, arc direction and distance
bucket, and conjunctions of these).  Gold UPOS/XPOS throughout.
``--no-tree-context`` leaves out the children, siblings and grandparent
features: then the label interactions of the tree CRF carry that information.

Each model is trained on EWT train for every C of ``--C`` (increasing; the EG
models warm-started from the previous C's dual, solved to a relative duality
gap of ``--tol`` or ``--passes`` effective passes); the C with the best dev
label accuracy on gold trees is reported.

Two-stage labelled parser: the heads are predicted by the averaged perceptron
over ``DependencyTreeStructure`` (projective, ``DependencyTokenEncoder(pos=
"both")``, ``--parser-passes`` epochs, trained on the projective training
sentences), the features recomputed from the predicted trees, and each
labeller labels them.  Scores: label accuracy on gold trees over all words
(and without punctuation), and on predicted trees UAS, LAS and LA with
punctuation excluded (CoNLL-X rule: words made only of punctuation characters).

Run from benchmarks/:
    python bench_tree_deprel.py [--C 0.3 1 3] [--passes 25] [--max-sentences N]
        [--parser-passes 10] [--no-tree-context] [--edge-types none]
"""

import argparse
import os
import resource
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from joblib import Parallel, delayed
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _record import add_order_option, markdown_table, order_title, record  # noqa: E402

from sklearn_struct import EGCRF, StructuredPerceptron  # noqa: E402
from sklearn_struct.datasets import filter_projective, load_conllu  # noqa: E402
from sklearn_struct.metrics import attachment_score  # noqa: E402
from sklearn_struct.preprocessing import (  # noqa: E402
    DependencyTokenEncoder,
    SequenceDictVectorizer,
)
from sklearn_struct.structures import (  # noqa: E402
    ChainStructure,
    DependencyTreeStructure,
    TreeStructure,
)

SPLITS = ("train", "dev", "test")
FUNCTION_TAGS = {"ADP", "SCONJ", "AUX", "PART", "DET", "CCONJ", "PRON"}


def distance_bucket(distance):
    for bound in (1, 2, 3, 5, 10):
        if distance <= bound:
            return str(bound)
    return "far"


TREE_CONTEXT = ("hh.upos", "upos|h.upos|hh.upos", "n.children", "ch.upos", "ch.upos|arc", "ch.fw",
                "upos|ch.fw", "sib.upos", "upos|sib.upos")


def token_features(form, upos, xpos, heads, tree_context=True):
    """One feature dict per word of a sentence given its heads (``heads[m]`` 1-based, 0 root).

    ``tree_context=False`` leaves out the features of the word's children,
    siblings and grandparent (keeping the word, its neighbours, its head and
    the arc).
    """
    n = len(form)
    lower = [w.lower() for w in form]
    children = [[] for _ in range(n)]
    for m, h in enumerate(heads):
        if h > 0:
            children[h - 1].append(m)
    tokens = []
    for m in range(n):
        h = heads[m] - 1
        if h < 0:
            head_word = head_upos = head_xpos = grand_upos = arc = "<root>"
            siblings = []
        else:
            head_word, head_upos, head_xpos = lower[h], upos[h], xpos[h]
            grand = heads[h] - 1
            grand_upos = upos[grand] if grand >= 0 else "<root>"
            arc = ("L" if m < h else "R") + distance_bucket(abs(m - h))
            siblings = [s for s in children[h] if s != m]
        word, tag, fine = lower[m], upos[m], xpos[m]
        tokens.append({
            "bias": 1.0,
            "w": form[m],
            "lw": word,
            "suf2": word[-2:],
            "suf3": word[-3:],
            "title": form[m][:1].isupper(),
            "upos": tag,
            "xpos": fine,
            "prev.upos": upos[m - 1] if m > 0 else "<s>",
            "next.upos": upos[m + 1] if m + 1 < n else "</s>",
            "arc": arc,
            "h.lw": head_word,
            "h.upos": head_upos,
            "h.xpos": head_xpos,
            "hh.upos": grand_upos,
            "upos|h.upos": f"{tag}|{head_upos}",
            "xpos|h.xpos|arc": f"{fine}|{head_xpos}|{arc}",
            "upos|h.upos|arc": f"{tag}|{head_upos}|{arc}",
            "lw|h.upos": f"{word}|{head_upos}",
            "upos|h.lw": f"{tag}|{head_word}",
            "upos|h.upos|hh.upos": f"{tag}|{head_upos}|{grand_upos}",
            "n.children": distance_bucket(len(children[m])),
            "ch.upos": [upos[c] for c in children[m]],
            "ch.upos|arc": [upos[c] + ("L" if c < m else "R") for c in children[m]],
            "ch.fw": [lower[c] for c in children[m] if upos[c] in FUNCTION_TAGS],
            "upos|ch.fw": [f"{tag}|{lower[c]}" for c in children[m]
                           if upos[c] in FUNCTION_TAGS],
            "sib.upos": [upos[s] for s in siblings],
            "upos|sib.upos": [f"{tag}|{upos[s]}|{'L' if s < m else 'R'}" for s in siblings],
        })
        if not tree_context:
            for key in TREE_CONTEXT:
                del tokens[-1][key]
    return tokens


def sentence_inputs(data, heads, tree_context):
    return [token_features(f, u, x, h, tree_context)
            for f, u, x, h in zip(data.form, data.upos, data.xpos, heads)]


def as_trees(X, heads, edge_types):
    """``(features, parents[, edge types])`` per sentence: the tree CRF's input."""
    trees = []
    for x, h in zip(X, heads):
        parents = np.asarray(h, dtype=np.int64) - 1
        if edge_types == "direction":  # 0: the word is left of its head, 1: right
            trees.append((x, parents, (np.arange(len(h)) > parents).astype(np.int64)))
        else:
            trees.append((x, parents))
    return trees


class Labeller:
    """One model: how it sees the data, how it is fitted at each C, how it predicts."""

    NAMES = {"tree": "tree CRF", "chain": "chain CRF", "lr": "LogisticRegression"}

    def __init__(self, key, args):
        self.name, self.args = self.NAMES[key], args
        if key == "lr":
            self.model = LogisticRegression(max_iter=args.lr_max_iter, tol=1e-4)
        else:
            structure = (TreeStructure(n_edge_types=2 if args.edge_types == "direction" else 1)
                         if key == "tree" else ChainStructure())
            self.model = EGCRF(structure=structure, max_iter=args.passes, tol=args.tol,
                               warm_start=True, order=args.order, random_state=0)

    def inputs(self, X, heads):
        if self.name == "tree CRF":
            return as_trees(X, heads, self.args.edge_types)
        if self.name == "LogisticRegression":
            return sp.vstack(X, format="csr")
        return X

    def fit(self, X, y, C):
        self.model.set_params(C=C)
        start = time.perf_counter()
        if self.name == "LogisticRegression":
            self.model.fit(X, np.concatenate(y))
            passes = int(self.model.n_iter_.max())
        else:
            self.model.fit(X, y)
            passes = int(self.model.history_["passes"][-1])
        return time.perf_counter() - start, passes

    def predict(self, X, lengths):
        if self.name == "LogisticRegression":
            return np.split(self.model.predict(X), np.cumsum(lengths)[:-1])
        return self.model.predict(X)


def label_accuracy(true, pred, forms=None):
    """Fraction of words with the right label (all words, or punctuation excluded)."""
    # attachment_score counts equal entries per word, whatever they are
    return 100 * attachment_score(true, pred, forms=forms)


def parse(args, split):
    """Predicted heads of dev and test: averaged perceptron, projective, 2 tag sets."""
    def sentences(data):
        return [{"form": f, "upos": u, "xpos": x}
                for f, u, x in zip(data.form, data.upos, data.xpos)]

    train, heads, _ = filter_projective(sentences(split["train"]), split["train"].head)
    encoder = DependencyTokenEncoder(pos="both").fit(train)
    parser = StructuredPerceptron(structure=DependencyTreeStructure(projective=True),
                                  max_iter=args.parser_passes, random_state=0)
    start = time.perf_counter()
    parser.fit(encoder.transform(train), heads)
    seconds = time.perf_counter() - start
    predicted = {name: [np.asarray(h) for h in parser.predict(
        encoder.transform(sentences(split[name])))] for name in ("dev", "test")}
    return predicted, seconds, len(train)


def evaluate(key, args, X, heads, y, split, predicted):
    """Fit one labeller at every C; its scores on gold and predicted trees per C."""
    warnings.simplefilter("ignore", ConvergenceWarning)  # (a worker process's own filters)
    labeller = Labeller(key, args)
    data = {name: labeller.inputs(X[name], heads[name]) for name in X}
    lengths = {name: [len(t) for t in y[name]] for name in X}
    forms = {name: split[name].form for name in ("dev", "test")}
    results = []
    for C in sorted(args.C):
        seconds, passes = labeller.fit(data["train"], y["train"], C)
        labels = {name: labeller.predict(data[name], lengths[name]) for name in X
                  if name != "train"}
        scores = {
            "dev": label_accuracy(y["dev"], labels["dev"]),
            "test": label_accuracy(y["test"], labels["test"]),
            "test no punct.": label_accuracy(y["test"], labels["test"], forms["test"]),
        }
        for name in ("dev", "test"):
            gold = split[name]
            scores[f"{name} LAS"] = 100 * attachment_score(
                gold.head, predicted[name], forms=forms[name],
                labels_true=gold.deprel, labels_pred=labels[name + " predicted"])
            scores[f"{name} LA"] = label_accuracy(gold.deprel, labels[name + " predicted"],
                                                  forms[name])
        results.append((C, passes, seconds, scores))
        print(labeller.name, f"C={C:g}", passes, f"{seconds:.1f} s",
              " ".join(f"{k} {v:.2f}" for k, v in scores.items()), flush=True)
    return labeller.name, results, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    default = Path(__file__).resolve().parents[2] / "shared" / "data" / "ud_en_ewt_r2.16"
    parser.add_argument("--data", type=Path, default=default)
    parser.add_argument("--C", type=float, nargs="+", default=[0.3, 1.0, 3.0],
                        help="values of C tried by every model (the best on dev is reported)")
    parser.add_argument("--passes", type=int, default=25,
                        help="EG: at most this many effective passes per C")
    parser.add_argument("--tol", type=float, default=1e-2,
                        help="EG: relative duality gap at which a C is solved")
    parser.add_argument("--lr-max-iter", type=int, default=500)
    parser.add_argument("--parser-passes", type=int, default=10)
    parser.add_argument("--edge-types", choices=("direction", "none"), default="direction",
                        help="tree CRF: one transition matrix per arc direction, or one")
    parser.add_argument("--no-tree-context", action="store_true",
                        help="leave out the features of children, siblings and grandparent")
    parser.add_argument("--models", nargs="+", default=["tree", "chain", "lr"],
                        choices=("tree", "chain", "lr"))
    add_order_option(parser)
    parser.add_argument("--max-sentences", type=int, default=None,
                        help="train the labellers on the first N training sentences only "
                        "(the parser always trains on all of them)")
    parser.add_argument("--n-jobs", type=int, default=None,
                        help="labellers fitted side by side (default: one process each)")
    args = parser.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    load = os.getloadavg()[0]
    split = {name: load_conllu(args.data / f"en_ewt-ud-{name}.conllu.gz") for name in SPLITS}

    predicted, parser_seconds, n_parser_train = parse(args, split)
    forms = {name: split[name].form for name in ("dev", "test")}
    uas = {name: 100 * attachment_score(split[name].head, predicted[name], forms=forms[name])
           for name in predicted}
    print(f"parser: {parser_seconds:.1f} s, UAS dev {uas['dev']:.2f} test {uas['test']:.2f}",
          flush=True)

    if args.max_sentences is not None:
        split["train"] = type(split["train"])(**{
            key: value[:args.max_sentences] for key, value in split["train"].items()})
    vectorizer = SequenceDictVectorizer()
    context = not args.no_tree_context
    X = {"train": vectorizer.fit_transform(
        sentence_inputs(split["train"], split["train"].head, context))}
    for name in ("dev", "test"):
        X[name] = vectorizer.transform(sentence_inputs(split[name], split[name].head, context))
        X[name + " predicted"] = vectorizer.transform(
            sentence_inputs(split[name], predicted[name], context))
    heads = {name: split[name].head for name in SPLITS}
    heads.update({name + " predicted": predicted[name] for name in ("dev", "test")})
    y = {name: split[name.split()[0]].deprel for name in X}
    n_words = sum(len(t) for t in y["train"])
    n_features = len(vectorizer.vocabulary_)
    print(f"{len(y['train'])} training sentences, {n_words} words, {n_features} features",
          flush=True)

    runs = Parallel(n_jobs=args.n_jobs or len(args.models))(
        delayed(evaluate)(key, args, X, heads, y, split, predicted) for key in args.models)
    path_rows, best_rows = [], []
    for name, results, _ in runs:
        for C, passes, seconds, scores in results:
            path_rows.append([name, f"{C:g}", passes, f"{seconds:.1f}", f"{scores['dev']:.2f}",
                              f"{scores['test']:.2f}", f"{scores['dev LAS']:.2f}",
                              f"{scores['test LAS']:.2f}"])
        C, _, _, scores = max(results, key=lambda result: result[3]["dev"])
        total_seconds = sum(result[2] for result in results)
        best_rows.append([name, f"{C:g}", f"{total_seconds:.0f}"] + [
            f"{scores[k]:.2f}" for k in ("dev", "test", "test no punct.", "dev LAS",
                                         "test LAS", "test LA")])

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    workers = ", ".join(f"{name} {rss:.2f}" for name, _, rss in runs)
    table = markdown_table(
        ["labeller", "C (best dev)", "fit s (all C)", "dev label acc. (gold trees)",
         "test label acc. (gold trees)", "test label acc. (gold, no punct.)",
         "dev LAS (predicted)", "test LAS (predicted)", "test LA (predicted)"], best_rows)
    path = markdown_table(["labeller", "C", "passes / LR iterations", "fit s",
                           "dev label acc. (gold)", "test label acc. (gold)",
                           "dev LAS (predicted)", "test LAS (predicted)"], path_rows)
    edges = ("typed by arc direction (2 transition matrices)" if args.edge_types == "direction"
             else "one transition matrix")
    summary = (
        f"Labellers trained on {len(y['train'])} training sentences ({n_words} words), "
        f"{n_features} features{'' if context else ' (no tree context)'}, "
        f"{len(set(np.concatenate(y['train'])))} labels; C chosen by "
        f"dev label accuracy on gold trees. Tree CRF edges {edges}; EG at most {args.passes} "
        f"passes per C (relative gap {args.tol:g}), warm-started along C (the first C "
        f"annealed). Label accuracy on gold trees counts every word (and without punctuation "
        f"where said); UAS, LAS and LA (label accuracy) on predicted trees exclude "
        f"punctuation (CoNLL-X rule: words made of punctuation characters only). Heads: "
        f"averaged perceptron, projective, {args.parser_passes} passes on all "
        f"{n_parser_train} projective training sentences ({parser_seconds:.0f} s): UAS dev "
        f"{uas['dev']:.2f}, test {uas['test']:.2f}. The labellers ran side by side in "
        f"{args.n_jobs or len(args.models)} processes; peak RSS {peak:.2f} GB (main process), "
        f"{workers} GB (the labellers' processes); load average {load:.2f} at the start "
        f"(2 cores shared with other sessions: seconds are not comparable across runs)."
    )
    print(summary)
    print(table)
    print(path)
    argv = " ".join(sys.argv[1:])
    section = (f"Dependency relation labelling on EWT: tree CRF, chain CRF, LR "
               f"({len(y['train'])} training sentences){order_title(args)}")
    if (args.models != ["tree", "chain", "lr"] or args.edge_types != "direction"
            or args.no_tree_context):
        section += f" ({argv})"
    record(section, f"{summary}\n\n{table}\n\nEvery C:\n\n{path}",
           f"cd benchmarks && python bench_tree_deprel.py {argv}")


if __name__ == "__main__":
    main()
