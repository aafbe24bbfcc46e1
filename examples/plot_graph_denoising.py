"""
====================================================
Denoising a multi-class grid: a loopy Markov network
====================================================

Each image is a 20x20 grid of pixels, each with one of four labels: a background
and three overlapping rectangles.  A pixel's features are its one-hot label plus
strong Gaussian noise, so a pixel on its own is often misread.
:class:`~sklearn_struct.structures.GraphStructure` joins every pixel to its four
neighbours, a graph full of cycles, and scores each pair of neighbouring labels
with a learned weight.  Its MAP inference is the linear-programming relaxation
over the local polytope, solved through its dual (MPLP) and decoded.  When the
decoded labelling reaches the dual bound, it is certified optimal.

:class:`~sklearn_struct.EGStructuredSVM` (``solver="working_set"``) learns the
node and pairwise weights from 20 images.  The per-pixel
:class:`~sklearn.linear_model.LogisticRegression` beside it sees the same
features.  The model is scored on 20 other images.
"""

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import ListedColormap
from sklearn.linear_model import LogisticRegression

from sklearn_struct import EGStructuredSVM
from sklearn_struct.structures import GraphStructure

SIDE, K = 20, 4
rng = np.random.RandomState(0)


def make_image():
    """Labels: a background and three random rectangles; features: noisy one-hot."""
    labels = np.zeros((SIDE, SIDE), dtype=np.int64)
    for label in range(1, K):
        top, left = rng.randint(0, SIDE - 6, size=2)
        height, width = rng.randint(5, 12, size=2)
        labels[top:top + height, left:left + width] = label
    features = np.eye(K)[labels.ravel()] + 1.2 * rng.randn(SIDE * SIDE, K)
    return features, labels


index = np.arange(SIDE * SIDE).reshape(SIDE, SIDE)
edges = np.r_[np.c_[index[:, :-1].ravel(), index[:, 1:].ravel()],  # right
              np.c_[index[:-1].ravel(), index[1:].ravel()]]  # down
images = [make_image() for _ in range(40)]
X = [(features, edges) for features, _ in images]
y = [labels.ravel() for _, labels in images]
X_train, y_train, X_test, y_test = X[:20], y[:20], X[20:], y[20:]

# %%
# Per-pixel logistic regression against the grid model
# ----------------------------------------------------
pixels = LogisticRegression(max_iter=1000).fit(np.vstack([x[0] for x in X_train]),
                                               np.concatenate(y_train))
pixel_predictions = [pixels.predict(x[0]) for x in X_test]

model = EGStructuredSVM(structure=GraphStructure(), solver="working_set", C=0.1,
                        random_state=0).fit(X_train, y_train)
grid_predictions = model.predict(X_test)

truth = np.concatenate(y_test)
print(f"test pixel accuracy: logistic regression "
      f"{np.mean(np.concatenate(pixel_predictions) == truth):.3f}, "
      f"grid model {np.mean(np.concatenate(grid_predictions) == truth):.3f}")

# %%
# Certificates
# ------------
# ``relaxed_argmax`` returns the LP bound of each test image and whether the
# decoded labelling reaches it: then it is the exact MAP labelling.
structure = model.structure_
batch = structure.make_batch(X_test, n_states=K)
scores = structure.part_scores(batch, model.weights_)
_, bound, certified = structure.relaxed_argmax(batch, scores)
print(f"certified optimal: {certified.sum()} of {len(X_test)} test images")
print("learned pairwise weights (rows: a pixel's label, columns: its right or lower "
      "neighbour's):")
print(np.round(model.pairwise_[..., 0], 2))

# %%
# Three test images: the truth, each pixel's strongest feature, and the two models.
cmap = ListedColormap(["#f0f0f0", "#1f77b4", "#ff7f0e", "#2ca02c"])
columns = [("true labels", y_test), ("strongest feature", [x[0].argmax(1) for x in X_test]),
           ("logistic regression", pixel_predictions), ("grid model", grid_predictions)]
fig, axes = plt.subplots(3, 4, figsize=(9, 7))
for row in range(3):
    for column, (title, images) in enumerate(columns):
        ax = axes[row, column]
        ax.imshow(np.reshape(images[row], (SIDE, SIDE)), cmap=cmap, vmin=0, vmax=K - 1)
        ax.set_xticks([])
        ax.set_yticks([])
        if row == 0:
            ax.set_title(title)
fig.tight_layout()
plt.show()
