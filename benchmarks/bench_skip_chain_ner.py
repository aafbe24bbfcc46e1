"""A skip-chain CRF (Sutton and McCallum 2004) against the chain, on CoNLL-2003 English NER.

Issue 50, item 3.  Each document of ``eng.train`` / ``eng.testa`` / ``eng.testb`` (the
``document`` of ``load_conll``) is one graph of ``GraphStructure``: its tokens are the
nodes, with the seven dict features per token of ``bench_eg_ner.py`` (word, lower case,
3-letter prefix and suffix, title case, upper case, POS) and the IOB2 tags as labels.
The chain model joins each token to the next one in its sentence.  The skip-chain model
adds a skip edge from each capitalised word to the next occurrence of the same word in
the document (the next one only, not every pair: a word seen 20 times gives 19 edges,
not 190).  Both models have the same weights: edge features ``[1, 0]`` on chain edges
and ``[0, 1]`` on skip edges, so the transition and the skip potentials are two
label-by-label matrices; the chain model's skip matrix stays zero.

Both learn with the averaged ``StructuredPerceptron`` (the same epochs and seed), whose
argmax is ``GraphStructure``'s: exact on the chain (a forest), the LP relaxation over
the local polytope with MPLP and decoding on the skip-chain graphs.  The table gives
the entity F1 (conlleval) on dev and test, the fit's seconds per epoch (numba's
compilation apart: a warm-up fit first) and the share of test documents whose
labelling is certified optimal.  Then the test entities that the skip edges fix (found
by the skip-chain model, missed by the chain) and break (the reverse), by surface form.

Run from benchmarks/:  python bench_skip_chain_ner.py [--epochs 10] [--no-record]
"""

import argparse
import os
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _record import markdown_table, record  # noqa: E402
from bench_eg_ner import token_features  # noqa: E402

from sklearn_struct.datasets import chunk_spans, load_conll  # noqa: E402
from sklearn_struct.metrics import chunk_f1_score  # noqa: E402
from sklearn_struct.perceptron import StructuredPerceptron  # noqa: E402
from sklearn_struct.preprocessing import SequenceDictVectorizer  # noqa: E402
from sklearn_struct.structures import GraphStructure  # noqa: E402

DATA = Path(os.environ.get("SKLEARN_STRUCT_SHARED_DATA",
                           Path(__file__).resolve().parents[2] / "shared" / "data"))


def skip_pairs(words):
    """Each capitalised word (of two letters or more) to its next occurrence."""
    last, pairs = {}, []
    for position, word in enumerate(words):
        if len(word) > 1 and word[0].isupper():
            if word in last:
                pairs.append((last[word], position))
            last[word] = position
    return pairs


def document_graphs(corpus, rows, skip):
    """One ``(node_features, edges, edge_features)`` per document, its tags, its sentences'
    lengths, and the numbers of chain and skip edges."""
    graphs, tags, lengths, counts = [], [], [], Counter()
    # a document's sentences are consecutive in the file
    starts_of_documents = np.flatnonzero(np.diff(corpus.document)) + 1
    for sentences in np.split(np.arange(len(corpus.word)), starts_of_documents):
        sizes = [len(corpus.word[s]) for s in sentences]
        starts = np.cumsum([0] + sizes)
        chain = [(t, t + 1) for a, b in zip(starts[:-1], starts[1:]) for t in range(a, b - 1)]
        words = [word for s in sentences for word in corpus.word[s]]
        # no skip edge doubles a chain edge (the same word twice in a row)
        chained = set(chain)
        skips = [pair for pair in skip_pairs(words) if pair not in chained] if skip else []
        edges = np.array(chain + skips, dtype=np.int64).reshape(-1, 2)
        kinds = np.r_[np.zeros(len(chain), dtype=np.int64), np.ones(len(skips), dtype=np.int64)]
        graphs.append((sp.vstack([rows[s] for s in sentences]).tocsr(), edges,
                       np.eye(2)[kinds]))
        tags.append(np.concatenate([corpus.tags[s] for s in sentences]))
        lengths.append(sizes)
        counts.update(chain=len(chain), skip=len(skips))
    return graphs, tags, lengths, counts


def as_sentences(per_document, lengths):
    return [list(part) for labels, sizes in zip(per_document, lengths)
            for part in np.split(np.asarray(labels), np.cumsum(sizes)[:-1])]


def entities(sentences_tags, words):
    """The set of ``(sentence, start, end, type)`` and each one's surface form."""
    found = {}
    for s, tags in enumerate(sentences_tags):
        for kind, start, end in chunk_spans(tags):
            found[(s, start, end, kind)] = " ".join(words[s][start:end])
    return found


def run(skip, corpora, rows, epochs):
    train, dev, test = (document_graphs(corpus, r, skip) for corpus, r in zip(corpora, rows))
    make = lambda: StructuredPerceptron(structure=GraphStructure(), max_iter=epochs,  # noqa
                                        random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the perceptron's non-separable warning)
        make().set_params(max_iter=1).fit(train[0][:5], train[1][:5])  # (compiles)
        start = time.perf_counter()
        model = make().fit(train[0], train[1])
        seconds = time.perf_counter() - start
    scores, predictions = [], {}
    for name, (graphs, tags, lengths, _) in (("dev", dev), ("test", test)):
        predicted = as_sentences(model.predict(graphs), lengths)
        scores.append(chunk_f1_score(as_sentences(tags, lengths), predicted))
        predictions[name] = predicted
    structure = model.structure_
    batch = structure.make_batch(test[0], n_states=len(model.classes_))
    certified = structure.relaxed_argmax(batch, structure.part_scores(batch, model.weights_))[2]
    return dict(f1=scores, seconds=seconds / epochs, certified=certified.mean(),
                edges=train[3], test_predictions=predictions["test"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    folder = DATA / "conll2003_ner_en"
    corpora = [load_conll(folder / f"eng.{part}.gz", tag_scheme="iob2")
               for part in ("train", "testa", "testb")]
    vectorizer = SequenceDictVectorizer().fit(
        [token_features(w, p) for w, p in zip(corpora[0].word, corpora[0].pos)])
    rows = [vectorizer.transform([token_features(w, p) for w, p in zip(c.word, c.pos)])
            for c in corpora]
    results = {}
    for skip in (False, True):
        results[skip] = run(skip, corpora, rows, args.epochs)
        print("skip-chain" if skip else "chain", results[skip]["f1"],
              f"{results[skip]['seconds']:.2f} s per epoch", flush=True)
    table = [["skip-chain" if skip else "chain", f"{r['edges']['chain']:,}",
              f"{r['edges']['skip']:,}", f"{100 * r['f1'][0]:.2f}", f"{100 * r['f1'][1]:.2f}",
              f"{r['seconds']:.2f}", f"{100 * r['certified']:.1f}"]
             for skip, r in results.items()]
    body = markdown_table(["model", "chain edges (train)", "skip edges (train)", "dev F1",
                           "test F1", "s per epoch", "test documents certified %"], table)
    body += "\n\n" + fixed_and_broken(corpora[2], results)
    body += (f"\n\n{args.epochs} epochs of the averaged perceptron (seed 0) on the 946 "
             "training documents; F1 of conlleval over entities. Load average when the run "
             f"started: {load:.2f} (2 cores).")
    print(body)
    if not args.no_record:
        record("Skip-chain against chain, CoNLL-2003 English", body,
               f"python bench_skip_chain_ner.py --epochs {args.epochs}")


def fixed_and_broken(test, results):
    """Markdown: the test entities the skip edges fix and break, by surface form."""
    truth = entities(test.tags, test.word)
    chain = entities(results[False]["test_predictions"], test.word)
    skip = entities(results[True]["test_predictions"], test.word)
    fixed = Counter(f"{truth[e]} ({e[3]})" for e in truth if e in skip and e not in chain)
    broken = Counter(f"{truth[e]} ({e[3]})" for e in truth if e in chain and e not in skip)
    lines = [f"Test entities ({len(truth):,}) found by the skip-chain model and missed by the "
             f"chain: {sum(fixed.values())}; found by the chain and missed by the skip-chain "
             f"model: {sum(broken.values())}.", ""]
    for name, counts in (("Fixed", fixed), ("Broken", broken)):
        common = ", ".join(f"{form} x{n}" for form, n in counts.most_common(15))
        lines.append(f"- {name}, the most frequent: {common}.")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
