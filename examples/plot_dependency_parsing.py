"""
=================================================
Dependency parsing with a CRF over trees (UD EWT)
=================================================

Trains a first-order projective dependency parser -- the structured experiment
of Collins et al. (JMLR 2008, section 7.2) -- on English sentences of
Universal Dependencies EWT: :class:`~sklearn_struct.EGCRF` over
:class:`~sklearn_struct.structures.DependencyTreeStructure` (arcs scored by the
hashed templates of McDonald et al. 2005, inside-outside marginals, Eisner's
argmax), in a :class:`~sklearn.pipeline.Pipeline` with
:class:`~sklearn_struct.preprocessing.DependencyTokenEncoder`.  The averaged
:class:`~sklearn_struct.StructuredPerceptron` on the same features is the
baseline.  The figure draws a test sentence's predicted tree over its gold
tree, and the CRF's arc marginals.

Run ``python plot_dependency_parsing.py [data_dir] [n_train]``; ``data_dir``
defaults to ``$SKLEARN_STRUCT_SHARED_DATA`` or ``../shared/data`` next to the
repository.
"""

import os
import sys
import time
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Arc
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.pipeline import make_pipeline

from sklearn_struct import EGCRF, StructuredPerceptron
from sklearn_struct.datasets import filter_projective, load_conllu
from sklearn_struct.metrics import attachment_score
from sklearn_struct.preprocessing import DependencyTokenEncoder
from sklearn_struct.structures import DependencyTreeStructure

default_dir = os.environ.get(
    "SKLEARN_STRUCT_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
data_dir = Path(sys.argv[1] if len(sys.argv) > 1 else default_dir) / "ud_en_ewt_r2.16"
n_train = int(sys.argv[2]) if len(sys.argv) > 2 else 2000


def sentences(data):
    return [{"form": f, "upos": u, "xpos": x} for f, u, x in zip(data.form, data.upos, data.xpos)]


train = load_conllu(data_dir / "en_ewt-ud-train.conllu.gz")
test = load_conllu(data_dir / "en_ewt-ud-test.conllu.gz")
X_train, y_train, dropped = filter_projective(sentences(train)[:n_train], train.head[:n_train])
X_test, y_test = sentences(test), test.head
print(f"{len(X_train)} projective training sentences ({dropped} non-projective left out)")

# %%
# The CRF and the perceptron share the encoder and the structure: identical features.
# Fifteen EG passes reach a relative duality gap of about 0.1, enough for accuracy
# (the benchmarks train to convergence), so the convergence warning is silenced.
warnings.filterwarnings("ignore", category=ConvergenceWarning)
structure = DependencyTreeStructure(hash_bits=20)
encoder = DependencyTokenEncoder(pos="both")
models = {
    "EGCRF": make_pipeline(clone(encoder), EGCRF(C=0.1, structure=structure, max_iter=15,
                                                 tol=1e-3, random_state=0)),
    "averaged perceptron": make_pipeline(clone(encoder), StructuredPerceptron(
        structure=structure, max_iter=10, random_state=0)),
}
predictions = {}
for name, model in models.items():
    start = time.perf_counter()
    model.fit(X_train, y_train)
    predictions[name] = model.predict(X_test)
    uas = attachment_score(y_test, predictions[name], forms=test.form)
    print(f"{name:20s} test UAS {100 * uas:.2f}% (punctuation excluded), "
          f"{time.perf_counter() - start:.1f} s")

# %%
# A test sentence: the predicted tree above the words (wrong arcs in red), the
# gold tree below, and the CRF's marginal probability of every arc.
index = next(i for i, forms in enumerate(test.form) if 10 <= len(forms) <= 15
             and 1 <= (predictions["EGCRF"][i] != y_test[i]).sum() <= 3)
words = test.form[index]
predicted = predictions["EGCRF"][index]
gold = np.asarray(y_test[index])
encoded = models["EGCRF"][0].transform([X_test[index]])  # (the pipeline has no predict_marginals)
marginals = models["EGCRF"][-1].predict_marginals(encoded)[0]


def draw_arcs(ax, heads, above, colours):
    for modifier, head in enumerate(heads, start=1):
        if head == 0:
            ax.annotate("", xy=(modifier, 0.15 if above else -0.15),
                        xytext=(modifier, 2.8 if above else -2.8),
                        arrowprops=dict(arrowstyle="->", color=colours[modifier - 1]))
            continue
        centre, width = (head + modifier) / 2, abs(head - modifier)
        height = min(0.5 + 0.45 * width, 2.6)
        ax.add_patch(Arc((centre, 0.15 if above else -0.15), width, 2 * height,
                         theta1=0 if above else 180, theta2=180 if above else 360,
                         color=colours[modifier - 1]))
        ax.plot(modifier, (0.15 if above else -0.15), marker="v" if above else "^",
                color=colours[modifier - 1], markersize=5)


fig, (tree_ax, marginal_ax) = plt.subplots(2, 1, figsize=(10, 9),
                                           gridspec_kw={"height_ratios": [1.1, 1]})
colours = ["tab:blue" if p == g else "tab:red" for p, g in zip(predicted, gold)]
draw_arcs(tree_ax, predicted, True, colours)
draw_arcs(tree_ax, gold, False, ["0.4"] * len(gold))
for position, word in enumerate(words, start=1):
    tree_ax.text(position, 0, word, ha="center", va="center", fontsize=9,
                 bbox=dict(boxstyle="round", facecolor="white", edgecolor="0.8"))
tree_ax.text(0.2, 2.3, "EGCRF", fontsize=10)
tree_ax.text(0.2, -2.5, "gold", fontsize=10, color="0.4")
tree_ax.set_xlim(0, len(words) + 1)
tree_ax.set_ylim(-3, 3)
tree_ax.axis("off")
n_wrong = int((predicted != gold).sum())
tree_ax.set_title(f"Predicted tree (above; {n_wrong} wrong head{'s' * (n_wrong > 1)} in red) "
                  "and gold tree (below)")

image = marginal_ax.imshow(marginals, cmap="Blues", vmin=0, vmax=1, aspect="auto")
marginal_ax.set_xticks(range(len(words)), words, rotation=60, ha="right", fontsize=8)
marginal_ax.set_yticks(range(len(words) + 1), ["ROOT"] + list(words), fontsize=8)
marginal_ax.plot(np.arange(len(words)), gold, "o", mfc="none", mec="tab:orange",
                 label="gold head")
marginal_ax.set_xlabel("modifier")
marginal_ax.set_ylabel("head")
marginal_ax.legend(loc="upper right", fontsize=8)
marginal_ax.set_title("CRF arc marginals p(head -> modifier) by inside-outside")
fig.colorbar(image, ax=marginal_ax)
fig.tight_layout()
plt.show()
# sphinx_gallery_thumbnail_path = "prerendered/plot_dependency_parsing.png"

# %%
# Output of a recorded run
# ------------------------
# The documentation build does not run this example (it trains on the shared
# corpora, which are not shipped, for minutes): the output and the figure below
# are those of a run of this script, recorded by
# ``tools/render_gallery_figures.py`` on a busy shared machine (so any times
# printed are longer than on an idle one).
#
# .. literalinclude:: /prerendered/plot_dependency_parsing.txt
#    :language: none
#
# .. image:: /prerendered/plot_dependency_parsing.png
#    :alt: A test sentence: the tree predicted by EGCRF over its gold tree, and the arc marginals
