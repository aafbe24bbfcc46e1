"""
=====================================================
How far to trust a predicted entity (CoNLL-2003 NER)
=====================================================

Trains :class:`~sklearn_struct.EGCRF` on CoNLL-2003 English named entities and
asks :meth:`~sklearn_struct.EGCRF.predict_chunks` for every predicted entity's
probability: that of the labellings in which the same tokens form the same
entity, exact, from the chain's partition functions.  The calibration plot
bins the test entities by that probability and shows how many of each bin are
right (the same tokens and type in the gold tags).  A well calibrated model
lies on the diagonal.

The same constraints restrict prediction (``allowed_labels``): the last cell
shows the entities of a sentence whose second token is forced to be outside
every entity.

Run ``python plot_chunk_confidence.py [data_dir] [n_train]``; ``data_dir``
defaults to ``$SKLEARN_STRUCT_SHARED_DATA`` or ``../shared/data`` next to the
repository.
"""

import os
import sys
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from sklearn.pipeline import make_pipeline

from sklearn_struct import EGCRF
from sklearn_struct.datasets import chunk_spans, load_conll
from sklearn_struct.metrics import chunk_precision_recall_fscore_support
from sklearn_struct.preprocessing import SequenceDictVectorizer, conll_token_features

default_dir = os.environ.get(
    "SKLEARN_STRUCT_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
data_dir = Path(sys.argv[1] if len(sys.argv) > 1 else default_dir) / "conll2003_ner_en"
n_train = int(sys.argv[2]) if len(sys.argv) > 2 else 4000

# %%
# CoNLL-2003's tags are IOB1; the strict chunk reading wants IOB2.
train = load_conll(data_dir / "eng.train.gz", tag_scheme="iob2")
test = load_conll(data_dir / "eng.testb.gz", tag_scheme="iob2")
X_train = [conll_token_features(w, p) for w, p in zip(train.word[:n_train], train.pos[:n_train])]
X_test = [conll_token_features(w, p) for w, p in zip(test.word, test.pos)]
crf = make_pipeline(SequenceDictVectorizer(), EGCRF(C=1.0, max_iter=30, random_state=0))
start = time.perf_counter()
crf.fit(X_train, train.tags[:n_train])
print(f"fitted on {n_train} sentences in {time.perf_counter() - start:.0f} s")
F1 = chunk_precision_recall_fscore_support(test.tags, crf.predict(X_test), mode="strict",
                                           scheme="IOB2")[2]
print(f"test entity F1 (strict IOB2): {F1:.4f}")

# %%
# Every predicted entity with its probability, and whether it is right.
vectorizer, model = crf
Z_test = vectorizer.transform(X_test)
start = time.perf_counter()
chunks = model.predict_chunks(Z_test, scheme="IOB2")
print(f"predict_chunks on {len(Z_test)} sentences in {time.perf_counter() - start:.1f} s")
# (the gold tags are well-formed IOB2, which conlleval's reading, ``chunk_spans``,
# reads as the strict one does)
probability, right = [], []
for found, gold in zip(chunks, test.tags):
    truth = set(chunk_spans(list(gold)))
    for kind, start, end, p in found:
        probability.append(p)
        right.append((kind, start, end) in truth)
probability, right = np.array(probability), np.array(right, dtype=float)

edges = np.array([0.0, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0])
which = np.clip(np.digitize(probability, edges[1:-1]), 0, len(edges) - 2)
rows = [(probability[which == b].mean(), right[which == b].mean(), int((which == b).sum()))
        for b in range(len(edges) - 1) if np.any(which == b)]
calibration_error = sum(n * abs(p - r) for p, r, n in rows) / len(probability)
print(f"{len(probability)} predicted entities; expected calibration error {calibration_error:.3f}")
print("bin of probability  mean probability  fraction right  entities")
for (p, r, n), low, high in zip(rows, edges[:-1], edges[1:]):
    print(f"  [{low:.2f}, {high:.2f})      {p:8.3f}          {r:8.3f}      {n:6d}")

fig, (ax, hist) = plt.subplots(1, 2, figsize=(9, 3.8))
ax.plot([0, 1], [0, 1], color="grey", linestyle=":", label="calibrated")
ax.plot([p for p, _, _ in rows], [r for _, r, _ in rows], marker="o", label="EGCRF")
ax.set(xlabel="predicted entity probability (bin mean)", ylabel="fraction right",
       title="Calibration on CoNLL-2003 test", xlim=(0, 1.02), ylim=(0, 1.02))
ax.legend(loc="upper left")
hist.hist(probability, bins=20, range=(0, 1))
hist.set(xlabel="predicted entity probability", ylabel="entities", yscale="log",
         title=f"{len(probability)} predicted entities")
fig.tight_layout()
plt.show()

# %%
# Constraints at prediction: the entities of one sentence, free and with its
# second token forced outside every entity.
sentence = next(i for i, found in enumerate(chunks) if any(s <= 1 < e for _, s, e, _ in found))
print(" ".join(test.word[sentence]))
print("free:       ", chunks[sentence])
allowed = [[None] * len(test.word[sentence])]
allowed[0][1] = "O"
print("token 1 = O:", model.predict_chunks(Z_test[sentence:sentence + 1], scheme="IOB2",
                                           allowed_labels=allowed)[0])
# sphinx_gallery_thumbnail_path = "prerendered/plot_chunk_confidence.png"

# %%
# Output of a recorded run
# ------------------------
# The documentation build does not run this example (it trains on the shared
# corpora, which are not shipped, for minutes): the output and the figure below
# are those of a run of this script, recorded by
# ``tools/render_gallery_figures.py`` on a busy shared machine (so any times
# printed are longer than on an idle one).
#
# .. literalinclude:: /prerendered/plot_chunk_confidence.txt
#    :language: none
#
# .. image:: /prerendered/plot_chunk_confidence.png
#    :alt: Calibration of EGCRF's entity probabilities on CoNLL-2003 test
