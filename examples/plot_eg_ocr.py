"""
======================================================
EG training curves of a CRF and a structured SVM (OCR)
======================================================

Trains :class:`~sklearn_struct.eg.EGCRF` and
:class:`~sklearn_struct.eg.EGStructuredSVM` on the words of one fold of the OCR
letters data (16x8 binary pixels per letter) one effective pass at a time
(``warm_start=True``) and plots primal, dual and relative duality gap, and the
test letter error on another fold, against the number of passes.  The two folds
are shipped with the package (:func:`~sklearn_struct.datasets.load_ocr_default`).
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.exceptions import ConvergenceWarning

from sklearn_struct.datasets import load_ocr_default
from sklearn_struct.eg import EGCRF, EGStructuredSVM

data = load_ocr_default()
train, test = np.flatnonzero(data.folds == 0), np.flatnonzero(data.folds == 1)
X, y = [data.X[i] for i in train], [data.y[i] for i in train]
X_test, y_test = [data.X[i] for i in test], [data.y[i] for i in test]

n_passes = 20
fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
for name, model in (("EGCRF", EGCRF(C=0.1)), ("EGStructuredSVM", EGStructuredSVM(C=0.1))):
    # a RandomState instance: each one-pass fit continues the random visiting order
    model.set_params(warm_start=True, max_iter=1, tol=0.0, random_state=np.random.RandomState(0))
    curve = []
    for _ in range(n_passes):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(X, y)
        curve.append((model.primal_objective_, model.dual_objective_,
                      model.duality_gap_ / model.primal_objective_,
                      1 - model.score(X_test, y_test)))
    curve = np.array(curve)
    print(f"{name}: after {n_passes} passes, relative duality gap {curve[-1, 2]:.1e}, "
          f"test letter error {curve[-1, 3]:.3f}")
    passes = np.arange(1, n_passes + 1)
    axes[0].plot(passes, curve[:, 0], label=f"{name} primal")
    axes[0].plot(passes, curve[:, 1], "--", label=f"{name} dual")
    axes[1].semilogy(passes, curve[:, 2], label=name)
    axes[2].plot(passes, curve[:, 3], label=name)
axes[0].set(xlabel="effective passes", ylabel="objective", ylim=(0, None))
axes[1].set(xlabel="effective passes", ylabel="relative duality gap")
axes[2].set(xlabel="effective passes", ylabel="test letter error")
for ax in axes:
    ax.legend(fontsize=8)
fig.tight_layout()
plt.show()
