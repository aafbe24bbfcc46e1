"""
===========================================
Text chunking with a CRF (CoNLL-2000)
===========================================

Trains :class:`~sklearn_struct.EGCRF` on CoNLL-2000 chunking sentences with
the standard token features (word, lower case, suffixes, shape, part of speech,
neighbouring words), inside a :class:`~sklearn.pipeline.Pipeline` with
:class:`~sklearn_struct.preprocessing.SequenceDictVectorizer`, and compares its
chunk F1 (conlleval) with :class:`~sklearn.linear_model.LogisticRegression`
trained on the same features token by token, which cannot use the labels of
neighbouring tokens.

Run ``python plot_eg_chunking.py [data_dir] [n_train]``; ``data_dir`` defaults
to ``$SKLEARN_STRUCT_SHARED_DATA`` or ``../shared/data`` next to the
repository.
"""

import os
import sys
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

from sklearn_struct import EGCRF
from sklearn_struct.datasets import load_conll
from sklearn_struct.metrics import chunk_precision_recall_fscore_support
from sklearn_struct.preprocessing import SequenceDictVectorizer, conll_token_features

default_dir = os.environ.get(
    "SKLEARN_STRUCT_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
data_dir = Path(sys.argv[1] if len(sys.argv) > 1 else default_dir) / "conll2000_chunking"
n_train = int(sys.argv[2]) if len(sys.argv) > 2 else 2000

train = load_conll(data_dir / "train.txt.gz")
test = load_conll(data_dir / "test.txt.gz")
X_train = [conll_token_features(w, p) for w, p in zip(train.word[:n_train], train.pos[:n_train])]
y_train = train.tags[:n_train]
X_test = [conll_token_features(w, p) for w, p in zip(test.word, test.pos)]
y_test = test.tags

# %%
# The CRF, in a pipeline with the feature vectoriser.
crf = make_pipeline(SequenceDictVectorizer(), EGCRF(C=1.0, max_iter=40, random_state=0))
start = time.perf_counter()
crf.fit(X_train, y_train)
crf_seconds = time.perf_counter() - start
crf_pred = crf.predict(X_test)

# %%
# The per-token baseline on the same sparse features.
vectorizer = crf[0]
token_clf = LogisticRegression(C=1.0, max_iter=2000)
start = time.perf_counter()
token_clf.fit(sp.vstack(vectorizer.transform(X_train)), np.concatenate(y_train))
lr_seconds = time.perf_counter() - start
lengths = np.cumsum([len(tags) for tags in y_test])[:-1]
lr_pred = np.split(token_clf.predict(sp.vstack(vectorizer.transform(X_test))), lengths)

# %%
# Chunk F1 per chunk type, as conlleval computes it.
results = {}
for name, pred, seconds in (("EGCRF", crf_pred, crf_seconds),
                            ("LogisticRegression per token", lr_pred, lr_seconds)):
    precision, recall, f1, support, types = chunk_precision_recall_fscore_support(
        y_test, pred, average=None)
    overall = chunk_precision_recall_fscore_support(y_test, pred)[2]
    results[name] = dict(zip(types, f1))
    print(f"{name:<30} chunk F1 {overall:.4f}  fit {seconds:.1f} s")

types = [t for t, n in zip(types, support) if n >= 20]
fig, ax = plt.subplots(figsize=(8, 3.5))
width = 0.4
for k, (name, f1_by_type) in enumerate(results.items()):
    ax.bar(np.arange(len(types)) + k * width, [f1_by_type[t] for t in types], width, label=name)
ax.set_xticks(np.arange(len(types)) + width / 2, types)
ax.set(ylabel="chunk F1", ylim=(0, 1.2), yticks=np.linspace(0, 1, 6),
       title=f"CoNLL-2000 test, {n_train} training sentences")
ax.legend(loc="upper left", ncols=2)  # above the bars
fig.tight_layout()
plt.show()
# sphinx_gallery_thumbnail_path = "prerendered/plot_eg_chunking.png"

# %%
# Output of a recorded run
# ------------------------
# The documentation build does not run this example (it trains on the shared
# corpora, which are not shipped, for minutes): the output and the figure below
# are those of a run of this script, recorded by
# ``tools/render_gallery_figures.py`` on a busy shared machine (so any times
# printed are longer than on an idle one).
#
# .. literalinclude:: /prerendered/plot_eg_chunking.txt
#    :language: none
#
# .. image:: /prerendered/plot_eg_chunking.png
#    :alt: Chunk F1 per chunk type of EGCRF and of a per-token logistic regression
