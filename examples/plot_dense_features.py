"""
=======================================================
Dict features and a dense vector per token (CoNLL-2003)
=======================================================

Named entities with :class:`~sklearn_struct.EGCRF` on CoNLL-2003 English, with
the standard dict features alone and with a dense vector per token beside
them.  :class:`~sklearn_struct.preprocessing.SequenceDictVectorizer` turns a
token value that is a list of numbers (here ``"vec"``) into a dense block of
columns (``vec[0]``, ``vec[1]``, ...) next to the one-hot indicators.

Nothing can be downloaded here, so the vectors are built from the training
sentences: the truncated SVD of the matrix of word co-occurrences within two
tokens (lower-cased words; positive pointwise mutual information), in the
manner of count-based word vectors.  A word never seen in training gets the
zero vector.  Whether the vectors help is measured, not assumed: the figure
shows the entity F1 of both models as the training set grows.

Run ``python plot_dense_features.py [data_dir]``; ``data_dir`` defaults to
``$SKLEARN_STRUCT_SHARED_DATA`` or ``../shared/data`` next to the repository.
"""

import os
import sys
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import scipy.sparse as sp
from sklearn.decomposition import TruncatedSVD
from sklearn.pipeline import make_pipeline

from sklearn_struct import EGCRF
from sklearn_struct.datasets import load_conll
from sklearn_struct.metrics import chunk_f1_score
from sklearn_struct.preprocessing import SequenceDictVectorizer, conll_token_features

default_dir = os.environ.get(
    "SKLEARN_STRUCT_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
data_dir = Path(sys.argv[1] if len(sys.argv) > 1 else default_dir) / "conll2003_ner_en"
train = load_conll(data_dir / "eng.train.gz", tag_scheme="iob2")
test = load_conll(data_dir / "eng.testb.gz", tag_scheme="iob2")

# %%
# Count-based word vectors from the whole training text (its words, not its tags).
words = sorted({w.lower() for sentence in train.word for w in sentence})
index = {w: k for k, w in enumerate(words)}
rows, cols = [], []
for sentence in train.word:
    ids = [index[w.lower()] for w in sentence]
    for t, a in enumerate(ids):
        for b in ids[max(0, t - 2):t] + ids[t + 1:t + 3]:
            rows.append(a)
            cols.append(b)
counts = sp.coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(words),) * 2).tocsr()
total = counts.sum()
row_sums = np.asarray(counts.sum(axis=1)).ravel()
col_sums = np.asarray(counts.sum(axis=0)).ravel()
pmi = counts.tocoo()
pmi.data = np.maximum(np.log(pmi.data * total / (row_sums[pmi.row] * col_sums[pmi.col])), 0.0)
vectors = TruncatedSVD(n_components=50, random_state=0).fit_transform(pmi.tocsr())
vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
print(f"{len(words)} words, {len(rows)} co-occurrences: vectors of 50 values")


def with_vectors(sentences, pos):
    """The standard features of every token, plus its word vector (a dense block)."""
    zero = [0.0] * vectors.shape[1]
    out = []
    for w, p in zip(sentences, pos):
        tokens = conll_token_features(w, p)
        for token, word in zip(tokens, w):
            k = index.get(word.lower())
            token["vec"] = zero if k is None else vectors[k].tolist()
        out.append(tokens)
    return out


# %%
# Both models on growing training sets, the same EGCRF settings.
sizes = [500, 2000, 6000]
scores = {"dict features": [], "dict features + vectors": []}


def dict_only(sentences, pos):
    return [conll_token_features(w, p) for w, p in zip(sentences, pos)]


for n in sizes:
    for name, features in (("dict features", dict_only),
                           ("dict features + vectors", with_vectors)):
        crf = make_pipeline(SequenceDictVectorizer(),
                            EGCRF(C=1.0, max_iter=30, random_state=0))
        start = time.perf_counter()
        crf.fit(features(train.word[:n], train.pos[:n]), train.tags[:n])
        seconds = time.perf_counter() - start
        predicted = crf.predict(features(test.word, test.pos))
        f1 = chunk_f1_score(test.tags, predicted, mode="strict", scheme="IOB2")
        scores[name].append(f1)
        print(f"{n:5d} sentences  {name:<25} entity F1 {f1:.4f}  fit {seconds:.0f} s")

fig, ax = plt.subplots(figsize=(6, 3.6))
for name, values in scores.items():
    ax.plot(sizes, values, marker="o", label=name)
ax.set(xscale="log", xlabel="training sentences", ylabel="entity F1 (strict IOB2)",
       title="CoNLL-2003 test")
ax.set_xticks(sizes, [str(n) for n in sizes])
ax.minorticks_off()
ax.legend(loc="lower right")
fig.tight_layout()
plt.show()
# sphinx_gallery_thumbnail_path = "prerendered/plot_dense_features.png"

# %%
# Output of a recorded run
# ------------------------
# The documentation build does not run this example (it trains on the shared
# corpora, which are not shipped, for minutes): the output and the figure below
# are those of a run of this script, recorded by
# ``tools/render_gallery_figures.py`` on a busy shared machine (so any times
# printed are longer than on an idle one).
#
# .. literalinclude:: /prerendered/plot_dense_features.txt
#    :language: none
#
# .. image:: /prerendered/plot_dense_features.png
#    :alt: Entity F1 of EGCRF with dict features alone and with word vectors
