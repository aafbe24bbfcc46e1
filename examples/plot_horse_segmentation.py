"""
=====================================================
Figure-ground segmentation with min-cut max-margin
=====================================================

Horse / background segmentation of the Weizmann horse images, with pixels as
the nodes of a 4-neighbour grid and attractive (submodular) edge potentials,
learned by :class:`~sklearn_struct.DualExtragradientMatcher`
with ``structure="mincut"`` -- the model of section 2.2 of Taskar,
Lacoste-Julien & Jordan (JMLR 2006), whose argmax is a minimum cut and whose
projections are quadratic flow problems (Appendix A).

Node features (intensity, local statistics, position, intensity bins) are the
same for the per-pixel :class:`~sklearn.linear_model.LogisticRegression`
shown next to it; the min-cut model adds two non-negative edge features, a
constant and a contrast term, whose learned weights smooth the labelling
except across strong intensity edges.  Images are downsampled to 16x16 to keep
this example within a few minutes; see
``benchmarks/bench_extragradient_segmentation.py`` for the full comparison.

The data directory is read from ``SKLEARN_STRUCT_SHARED_DATA`` (default:
``../shared/data`` next to the repository).
"""

import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from sklearn_struct.datasets import (
    load_weizmann_horses,
    make_horse_segmentation,
)
from sklearn_struct.extragradient import DualExtragradientMatcher

REPO = Path(__file__).resolve().parents[1] if "__file__" in globals() else Path.cwd().parent
DATA = Path(os.environ.get("SKLEARN_STRUCT_SHARED_DATA", REPO / ".." / "shared" / "data"))
SIZE = 16

horses = load_weizmann_horses(DATA / "weizmann_horses" / "weizmann_horse_db.tar.gz",
                              size=SIZE, n_images=60)
X, y = make_horse_segmentation(horses.images, horses.masks)
# horse001-030 for training, horse031-060 for testing
X_train, y_train, X_test, y_test = X[:30], y[:30], X[30:], y[30:]

# %%
# Standardised node features
# --------------------------
# The step size of the dual extragradient is ``1 / ||F||``: centring and scaling
# the node features (not the bias, not the non-negative edge features) keeps
# ``F`` well conditioned, so that few passes suffice.
scaler = StandardScaler().fit(np.vstack([x[0] for x in X_train]))
varying = scaler.var_ > 0  # every column but the bias


def standardise(example):
    nodes = example[0].copy()
    nodes[:, varying] = (nodes[:, varying] - scaler.mean_[varying]) / scaler.scale_[varying]
    return nodes, example[1], example[2]


X_train, X_test = [standardise(x) for x in X_train], [standardise(x) for x in X_test]

# %%
# Per-pixel logistic regression vs the min-cut model
# --------------------------------------------------
pixels = LogisticRegression(C=1.0, max_iter=2000)
pixels.fit(np.vstack([x[0] for x in X_train]), np.concatenate(y_train))
pixel_predictions = [pixels.predict(x[0]) for x in X_test]

model = DualExtragradientMatcher(structure="mincut", max_iter=30).fit(X_train, y_train)
mincut_predictions = model.predict(X_test)

truth = np.concatenate(y_test)
pixel_error = np.mean(np.concatenate(pixel_predictions) != truth)
mincut_error = np.mean(np.concatenate(mincut_predictions) != truth)
print(f"pixel error: logistic regression {pixel_error:.3f}, min-cut dual extragradient "
      f"{mincut_error:.3f} (all background {truth.mean():.3f})")
print(f"edge weights (constant, contrast): {np.round(model.coef_[-2:], 3)}")

# %%
# A few test images
# -----------------
fig, axes = plt.subplots(4, 4, figsize=(8, 8.5))
titles = ("image", "truth", "logistic", "min-cut")
for column, i in enumerate((0, 5, 10, 15)):
    panels = (horses.images[30 + i], y_test[i], pixel_predictions[i], mincut_predictions[i])
    for row, (panel, title) in enumerate(zip(panels, titles)):
        axes[row, column].imshow(np.reshape(panel, (SIZE, SIZE)), cmap="gray")
        axes[row, column].set_xticks([])
        axes[row, column].set_yticks([])
        if column == 0:
            axes[row, column].set_ylabel(title)
fig.suptitle(f"test pixel error: logistic {pixel_error:.3f}, min-cut {mincut_error:.3f}")
fig.tight_layout()
plt.show()
# sphinx_gallery_thumbnail_path = "prerendered/plot_horse_segmentation.png"

# %%
# Output of a recorded run
# ------------------------
# The documentation build does not run this example (it trains on the shared
# corpora, which are not shipped, for minutes): the output and the figure below
# are those of a run of this script, recorded by
# ``tools/render_gallery_figures.py`` on a busy shared machine (so any times
# printed are longer than on an idle one).
#
# .. literalinclude:: /prerendered/plot_horse_segmentation.txt
#    :language: none
#
# .. image:: /prerendered/plot_horse_segmentation.png
#    :alt: Test images, true masks and the masks of the logistic regression and of the min-cut model
