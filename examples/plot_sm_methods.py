"""
==========================================================
Surrogate minimisation methods for logistic regression
==========================================================

The training loss of binary logistic regression under the six algorithms of Zhang, Kwok
& Yeung, "Surrogate maximization/minimization algorithms and extensions" (Machine
Learning, 2007): SM-1 ... SM-5 and Newton's method, on the simulated data of their
section 4.6 (points in R^100 labelled by a random hyperplane, with and without noise),
as in their Figure 1.  Every SM iteration minimises a surrogate lying above the loss,
so the curves of SM-2 ... SM-5 can only go down; the closer the surrogate, the faster
(Newton >= SM-2 >= SM-3 >= SM-5, eq. 31).

The second part tunes ``C`` and ``method`` of
:class:`~sklearn_struct.sm.SMLogisticRegression` by cross-validation inside a text
pipeline (word counts -> term frequencies -> classifier) on WebKB faculty vs course
pages, when the shared corpora are available (they are not shipped with the
package; without them this part is skipped).
"""

import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import Normalizer

from sklearn_struct.datasets import load_cachopo_text
from sklearn_struct.sm import SMLogisticRegression

METHODS = ["sm1", "sm2", "sm3", "sm4", "sm5", "newton"]

# %%
# Simulated data of section 4.6: 1,000 training points x ~ N(0, I), labels sign(w.x);
# the noisy copy adds N(0, 0.2 I) after labelling.  Each point is scaled to unit L1 norm.
rng = np.random.RandomState(0)
X = rng.randn(1000, 100)
w = rng.randn(100)
y = np.where(X @ w > 0, 1, -1)
datasets = {"without noise": X, "with noise": X + rng.normal(scale=np.sqrt(0.2), size=X.shape)}

fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
for ax, (title, features) in zip(axes, datasets.items()):
    features = features / np.abs(features).sum(axis=1, keepdims=True)
    for method in METHODS:
        clf = SMLogisticRegression(method=method, penalty=None, fit_intercept=False, max_iter=5000)
        clf.fit(features, y)
        history = clf.loss_history_ / clf.loss_history_[0]  # normalised as in the paper
        ax.plot(np.arange(1, len(history) + 1), history, label=f"{method} ({clf.n_iter_[0]} it.)")
    ax.set_xscale("log")
    ax.set_title(f"simulated data {title}")
    ax.set_xlabel("iteration + 1")
    ax.legend(fontsize=8)
axes[0].set_ylabel("training loss / initial loss")
fig.tight_layout()
plt.show()

# %%
# Cross-validated ``C`` and ``method`` in a text pipeline.  The features are the
# paper's ``h_j = N_j / N`` (word counts divided by the page's total); sm2, sm3 and
# newton build d x d matrices, so the vocabulary is capped.
# (sphinx-gallery runs the examples from their folder, without __file__)
examples_dir = Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()
default_shared = examples_dir.parents[1] / "shared" / "data"
shared = Path(os.environ.get("SKLEARN_STRUCT_SHARED_DATA", default_shared))
train_file = shared / "webkb_4univ_cachopo" / "webkb-train-stemmed.txt.gz"
if train_file.is_file():
    docs = load_cachopo_text(train_file)
    keep = np.isin(docs.target, ["faculty", "course"])
    texts = [text for text, kept in zip(docs.data, keep) if kept]
    labels = docs.target[keep]
    pipeline = Pipeline([
        ("counts", CountVectorizer(max_features=1000)),
        ("frequencies", Normalizer(norm="l1")),
        ("clf", SMLogisticRegression()),
    ])
    grid = {"clf__C": [10.0, 100.0, 1000.0], "clf__method": ["sm3", "sm4", "sm5"]}
    search = GridSearchCV(pipeline, grid, cv=3).fit(texts, labels)
    for params, score in zip(search.cv_results_["params"], search.cv_results_["mean_test_score"]):
        print(f"C={params['clf__C']:>6g}  method={params['clf__method']}:  accuracy {score:.3f}")
    print(f"best: {search.best_params_} ({search.best_score_:.3f})")
else:
    print("The shared corpora are not here (set SKLEARN_STRUCT_SHARED_DATA to their "
          "folder):\nno WebKB grid search.")
