"""
===========================================================
The k best labellings of a sentence, with their probability
===========================================================

A CRF (:class:`~sklearn_struct.EGCRF`) trained on CoNLL-2000 chunking gives
more than its best labelling: ``predict_k_best`` returns the ``k``
highest-scoring labellings of each sentence, best first, exactly (the k-best
max-plus semiring on the chain's dynamic program), and with
``return_proba=True`` their probabilities :math:`p(y \\mid x)`.  The figure
shows the five best labellings of a test sentence on which the model hesitates:
each row is one labelling, the tags that differ from the best one are framed,
and the probability is on the right.  ``sample_y`` draws exact samples of the
same distribution: the frequencies of the five labellings among 2,000 draws
are printed beside their probabilities.

Run ``python plot_eg_k_best.py [data_dir] [n_train]``; ``data_dir`` defaults
to ``$SKLEARN_STRUCT_SHARED_DATA`` or ``../shared/data`` next to the
repository.
"""

import os
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Rectangle

from sklearn_struct import EGCRF
from sklearn_struct.datasets import load_conll
from sklearn_struct.preprocessing import SequenceDictVectorizer, conll_token_features
from sklearn_struct.structures import ChainStructure

default_dir = os.environ.get(
    "SKLEARN_STRUCT_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
data_dir = Path(sys.argv[1] if len(sys.argv) > 1 else default_dir) / "conll2000_chunking"
n_train = int(sys.argv[2]) if len(sys.argv) > 2 else 1000

train = load_conll(data_dir / "train.txt.gz")
test = load_conll(data_dir / "test.txt.gz")
vectorizer = SequenceDictVectorizer()
X_train = vectorizer.fit_transform(
    [conll_token_features(w, p) for w, p in zip(train.word[:n_train], train.pos[:n_train])])

# %%
# A CRF whose decoding obeys the IOB2 scheme: every one of the k best does too.
crf = EGCRF(C=1.0, max_iter=60, structure=ChainStructure(allowed_transitions="IOB2"),
            random_state=0).fit(X_train, train.tags[:n_train])

# %%
# The first short test sentence whose best labelling has a probability below 0.6.
k = 5
candidates = [i for i, words in enumerate(test.word) if 7 <= len(words) <= 11][:300]
X_candidates = vectorizer.transform(
    [conll_token_features(test.word[i], test.pos[i]) for i in candidates])
labellings, scores, proba = crf.predict_k_best(X_candidates, k, return_proba=True)
chosen = next(j for j in range(len(candidates)) if proba[j][0] < 0.6)
words, gold = test.word[candidates[chosen]], test.tags[candidates[chosen]]
best, p_best = labellings[chosen], proba[chosen]
print(" ".join(words))
print(f"{'gold':>6}  " + " ".join(gold))
for rank, (labels, p) in enumerate(zip(best, p_best)):
    print(f"{p:6.3f}  " + " ".join(labels))
print(f"the {k} best hold {p_best.sum():.3f} of the probability")

# %%
# Exact samples: the frequencies of the k best among the draws.
n_draws = 2000
(draws,) = crf.sample_y(X_candidates[chosen:chosen + 1], n_samples=n_draws, random_state=0)
drawn = [tuple(d) for d in draws]
for rank, labels in enumerate(best):
    frequency = drawn.count(tuple(labels)) / n_draws
    print(f"labelling {rank}: p = {p_best[rank]:.3f}, drawn {frequency:.3f} of {n_draws}")

# %%
# The figure: one row per labelling, chunk types in colours, changes framed.
types = sorted({tag[2:] for labels in best for tag in labels if tag != "O"} |
               {tag[2:] for tag in gold if tag != "O"})
palette = dict(zip(types, plt.cm.Pastel1(np.linspace(0, 1, max(len(types), 2)))))
rows = [("gold", gold)] + [(f"{p:.3f}", labels) for p, labels in zip(p_best, best)]
fig, ax = plt.subplots(figsize=(1.05 * len(words) + 1.6, 0.55 * len(rows) + 1.2))
for r, (_, labels) in enumerate(rows):
    for t, tag in enumerate(labels):
        colour = "white" if tag == "O" else palette[tag[2:]]
        ax.add_patch(Rectangle((t, -r - 1), 1, 1, facecolor=colour, edgecolor="0.85"))
        changed = r > 0 and tag != best[0][t]
        if changed:
            ax.add_patch(Rectangle((t + 0.04, -r - 0.96), 0.92, 0.92, fill=False,
                                   edgecolor="crimson", linewidth=2))
        ax.text(t + 0.5, -r - 0.5, tag, ha="center", va="center", fontsize=8,
                fontweight="bold" if changed else "normal")
for t, word in enumerate(words):
    ax.text(t + 0.5, 0.15, word, ha="center", va="bottom", fontsize=9, rotation=20)
for r, (name, _) in enumerate(rows):
    ax.text(len(words) + 0.15, -r - 0.5, name if r == 0 else f"p = {name}", va="center",
            fontsize=9)
ax.set_xlim(0, len(words) + 1.6)
ax.set_ylim(-len(rows), 1.2)
ax.axis("off")
ax.set_title(f"The {k} best labellings of a test sentence (EGCRF, IOB2; "
             f"together p = {p_best.sum():.2f})", fontsize=10)
fig.tight_layout()
plt.show()
# sphinx_gallery_thumbnail_path = "prerendered/plot_eg_k_best.png"

# %%
# Output of a recorded run
# ------------------------
# The documentation build does not run this example (it trains on the shared
# corpora, which are not shipped): the output and the figure below are those of
# a run of this script, recorded by ``tools/render_gallery_figures.py``.
#
# .. literalinclude:: /prerendered/plot_eg_k_best.txt
#    :language: none
#
# .. image:: /prerendered/plot_eg_k_best.png
#    :alt: The five best IOB2 labellings of a test sentence, one per row, with their
#          probabilities; the tags that differ from the best labelling are framed
