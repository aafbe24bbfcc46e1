"""
=====================================================================
Multiclass EGCRF and LogisticRegression reach the same model (MNIST)
=====================================================================

With a flat ``X`` and ``y``, :class:`~sklearn_struct.EGCRF` is a multinomial
logistic regression: it minimises ``1/2 ||W||^2 + C * sum_i -log p(y_i | x_i)``,
the objective of :class:`~sklearn.linear_model.LogisticRegression` without an
intercept.  It solves the dual by exponentiated gradient (section 7.1 of
Collins et al., 2008) and certifies its solution by the duality gap.  Here both
are trained on 8,000 MNIST digits and tested on 2,000: the plot shows EG's
primal and dual objectives per pass closing on the optimum found by lbfgs, and
the two models' weights for one digit side by side.

Run ``python plot_eg_multiclass_mnist.py [data_dir]``; ``data_dir`` defaults
to ``$SKLEARN_STRUCT_SHARED_DATA`` or ``../shared/data`` next to the
repository.
"""

import os
import sys
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LogisticRegression

from sklearn_struct import EGCRF
from sklearn_struct.datasets import load_mnist_idx

default_dir = os.environ.get(
    "SKLEARN_STRUCT_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
data_dir = Path(sys.argv[1] if len(sys.argv) > 1 else default_dir) / "mnist_partial"
digits = load_mnist_idx(data_dir / "t10k-images-idx3-ubyte.gz",
                        data_dir / "t10k-labels-idx1-ubyte.gz")
X = digits.data.astype(np.float64) / 255.0
y = digits.target
X_train, y_train, X_test, y_test = X[:8000], y[:8000], X[8000:], y[8000:]
C = 0.1

# %%
# Fit both models
# ---------------
start = time.perf_counter()
eg = EGCRF(C=C, tol=1e-6, max_iter=200, random_state=0).fit(X_train, y_train)
eg_seconds = time.perf_counter() - start
start = time.perf_counter()
lr = LogisticRegression(C=C, fit_intercept=False, tol=1e-8, max_iter=5000).fit(X_train, y_train)
lr_seconds = time.perf_counter() - start


def primal(coef):
    """The common objective, 1/2 ||W||^2 + C * sum_i -log p(y_i | x_i)."""
    scores = X_train @ coef.T
    top = scores.max(axis=1, keepdims=True)
    log_z = top.ravel() + np.log(np.exp(scores - top).sum(axis=1))
    return 0.5 * np.sum(coef ** 2) + C * np.sum(log_z - scores[np.arange(len(y_train)), y_train])


history_passes = eg.history_["passes"][-1]
optimum = primal(lr.coef_)
agreement = np.mean(eg.predict(X_test) == lr.predict(X_test))
print(f"EGCRF:              objective {primal(eg.coef_):.6f}, test accuracy "
      f"{eg.score(X_test, y_test):.4f}, {history_passes:.0f} passes, {eg_seconds:.1f} s")
print(f"LogisticRegression: objective {optimum:.6f}, test accuracy "
      f"{lr.score(X_test, y_test):.4f}, {lr_seconds:.1f} s")
print(f"largest coefficient difference / largest coefficient: "
      f"{np.abs(eg.coef_ - lr.coef_).max() / np.abs(lr.coef_).max():.1e}; "
      f"test predictions agree on {agreement:.2%}")

# %%
# EG's objectives per pass, and the learned weights of one digit
# --------------------------------------------------------------
history = eg.history_
fig, (ax_gap, ax_eg, ax_lr) = plt.subplots(
    1, 3, figsize=(11, 3.5), gridspec_kw={"width_ratios": [2, 1, 1]})
ax_gap.semilogy(history["passes"], history["primal"] - optimum, "o-", ms=3,
                label="EG primal - lbfgs optimum")
ax_gap.semilogy(history["passes"], optimum - history["dual"], "s-", ms=3,
                label="lbfgs optimum - EG dual")
ax_gap.set_xlabel("effective passes over the data")
ax_gap.set_ylabel("distance to the optimum")
ax_gap.legend()
digit = 3
limit = np.abs(lr.coef_[digit]).max()
for ax, model, name in ((ax_eg, eg, "EGCRF"), (ax_lr, lr, "LogisticRegression")):
    ax.imshow(model.coef_[digit].reshape(28, 28), cmap="RdBu", vmin=-limit, vmax=limit)
    ax.set_title(f"{name}: weights of '{digit}'", fontsize=9)
    ax.axis("off")
fig.tight_layout()
plt.show()
# sphinx_gallery_thumbnail_path = "prerendered/plot_eg_multiclass_mnist.png"

# %%
# Output of a recorded run
# ------------------------
# The documentation build does not run this example (it trains on the shared
# corpora, which are not shipped, for minutes): the output and the figure below
# are those of a run of this script, recorded by
# ``tools/render_gallery_figures.py`` on a busy shared machine (so any times
# printed are longer than on an idle one).
#
# .. literalinclude:: /prerendered/plot_eg_multiclass_mnist.txt
#    :language: none
#
# .. image:: /prerendered/plot_eg_multiclass_mnist.png
#    :alt: Distance of the EG objectives to the optimum per pass, and the weights of one digit
