"""
=====================================================
Word alignment as max-margin bipartite matching
=====================================================

English-French word alignment on the hand-aligned Hansards sentences of the
WPT-03 shared task, following section 6.2 of Taskar, Lacoste-Julien & Jordan,
"Structured prediction, dual extragradient and Bregman projections" (JMLR 2006).

Every (English word, French word) pair of a sentence pair is a candidate edge;
an alignment is a matching (each word linked at most once).  Edge features
(:class:`~sklearn_struct.datasets.AlignmentFeatureExtractor`) are the Dice
coefficient of the two words counted over all available sentence pairs, its
rank, IBM Model 1 link posteriors, position differences and orthographic
similarity.
:class:`~sklearn_struct.DualExtragradientMatcher` learns edge
weights from the first 100 gold sentences with the weighted Hamming loss of
eq. (10), ``(c+, c-) = (1, 3)`` -- missing a sure link costs three times a
spurious one -- and is tested on the other 347 by alignment error rate (AER),
next to the unsupervised Dice + matching baseline.

The data directory is read from ``SKLEARN_STRUCT_SHARED_DATA`` (default:
``../shared/data`` next to the repository).
"""

import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from sklearn_struct.datasets import (
    AlignmentFeatureExtractor,
    alignment_targets,
    edges_to_links,
    load_hansards_alignments,
    load_hansards_sentence_pairs,
)
from sklearn_struct.extragradient import DualExtragradientMatcher
from sklearn_struct.metrics import (
    alignment_error_rate,
    alignment_precision_recall,
)
from sklearn_struct.structures.matching.structure import MatchingStructure

REPO = Path(__file__).resolve().parents[1] if "__file__" in globals() else Path.cwd().parent
DATA = Path(os.environ.get("SKLEARN_STRUCT_SHARED_DATA", REPO / ".." / "shared" / "data"))
HANSARDS = DATA / "wpt03_hansards_en_fr_alignment"

# %%
# Data and features
# -----------------
# Dice and Model 1 statistics need no labels: they are counted over the gold sentences, the
# trial sentences and the 2,383-pair unlabelled sample.
gold = load_hansards_alignments(HANSARDS / "uva-slpl_embedalign" / "test.en-fr.naacl")
trial = load_hansards_alignments(HANSARDS / "uva-slpl_embedalign" / "trial.en-fr.naacl")
sample = load_hansards_sentence_pairs(HANSARDS / "berkeleyaligner" / "train_sample")
pairs = list(zip(gold.english, gold.french))
extractor = AlignmentFeatureExtractor().fit(
    pairs + list(zip(trial.english, trial.french)) + list(zip(sample.english, sample.french)))
X = extractor.transform(pairs)
y = alignment_targets(X, gold.sure)
X_train, y_train, X_test = X[:100], y[:100], X[100:]
sure_test, possible_test = gold.sure[100:], gold.possible[100:]

# %%
# Learning the matching model
# ---------------------------
# Unregularised path (``radius=inf``) with early stopping on a fifth of the
# training sentences, as in the paper's model selection.
model = DualExtragradientMatcher(
    structure=MatchingStructure(false_positive_cost=1.0, false_negative_cost=3.0),
    max_iter=200, early_stopping=True, validation_fraction=0.2, n_iter_no_change=30,
    random_state=0,
).fit(X_train, y_train)
predicted = edges_to_links(X_test, model.predict(X_test))
aer = alignment_error_rate(sure_test, possible_test, predicted)
precision, recall = alignment_precision_recall(sure_test, possible_test, predicted)
print(f"dual extragradient: AER {aer:.3f} (precision {precision:.3f}, recall {recall:.3f}), "
      f"best pass {model.best_iteration_} of {model.n_iter_}")

# Unsupervised baseline: matching over Dice - threshold, threshold tuned on training.
dice = extractor.feature_names_.index("dice")
structure = MatchingStructure()


def dice_alignment(X_part, threshold):
    batch = structure.make_batch(X_part)
    scores = np.concatenate([x[0][:, dice] for x in X_part]) - threshold
    return edges_to_links(X_part, np.split(structure.argmax(batch, scores),
                                           batch.unit_offsets[1:-1]))


thresholds = np.arange(0.0, 0.6, 0.02)
best = thresholds[np.argmin([alignment_error_rate(gold.sure[:100], gold.possible[:100],
                                                  dice_alignment(X_train, t))
                             for t in thresholds])]
dice_aer = alignment_error_rate(sure_test, possible_test, dice_alignment(X_test, best))
print(f"Dice + matching (threshold {best:.2f}): AER {dice_aer:.3f}")

# %%
# One test sentence and the learned weights
# -----------------------------------------
index = int(np.argmin([abs(len(e) - 14) + abs(len(f) - 14) for e, f in pairs[100:]]))
english, french = pairs[100 + index]
fig, (ax, ax_weights) = plt.subplots(1, 2, figsize=(13, 6),
                                     gridspec_kw={"width_ratios": [1.1, 1]})
grid = np.zeros((len(english), len(french)))
for value, links in ((1, possible_test[index]), (2, sure_test[index])):
    for a, b in links:
        grid[a, b] = value
ax.imshow(grid, cmap="Greys", vmin=0, vmax=3)
for a, b in predicted[index]:
    ax.plot(b, a, "o", color="tab:red", markersize=7, fillstyle="none")
ax.set_xticks(range(len(french)), french, rotation=90)
ax.set_yticks(range(len(english)), english)
ax.set_title("gold (dark: sure, light: possible), predicted (circles)")
order = np.argsort(model.coef_)
ax_weights.barh(np.arange(len(order)), model.coef_[order])
ax_weights.set_yticks(np.arange(len(order)), np.array(extractor.feature_names_)[order])
ax_weights.set_title(f"edge weights -- test AER {aer:.3f} (Dice baseline {dice_aer:.3f})")
fig.tight_layout()
plt.show()
# sphinx_gallery_thumbnail_path = "prerendered/plot_word_alignment.png"

# %%
# Output of a recorded run
# ------------------------
# The documentation build does not run this example (it trains on the shared
# corpora, which are not shipped, for minutes): the output and the figure below
# are those of a run of this script, recorded by
# ``tools/render_gallery_figures.py`` on a busy shared machine (so any times
# printed are longer than on an idle one).
#
# .. literalinclude:: /prerendered/plot_word_alignment.txt
#    :language: none
#
# .. image:: /prerendered/plot_word_alignment.png
#    :alt: Gold and predicted alignment of a test sentence pair, and the learned edge weights
