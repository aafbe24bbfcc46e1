"""
=====================================================
Sparse structured feature selection with the L1-M3N
=====================================================

Chains of 8 binary labels whose tokens have 100 input features, of which only
the first 30 (in 10 groups of 3 correlated features) drive the labels -- the
synthetic protocol of Zhu, Xing & Zhang, "Primal sparse max-margin Markov
networks" (KDD 2009), section 5.1.

The L1-regularised max-margin Markov network (:class:`~sklearn_struct.l1m3n.L1M3N`)
sets the weights of most irrelevant features to exact zeros, while the L2
max-margin Markov network (:class:`~sklearn_struct.eg.EGStructuredSVM`) keeps
every feature (as in the paper's Figure 3).  ``support_`` / ``get_support()``
lists the input features the L1 model uses.

If ``benchmarks/bench_l1m3n_synthetic.py`` has been run, the second figure
shows its error-vs-training-size curves (the paper's Figure 2).
"""

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from sklearn_struct.datasets import make_correlated_chains
from sklearn_struct.eg import EGStructuredSVM
from sklearn_struct.l1m3n import L1M3N

X, y = make_correlated_chains(n_samples=300, random_state=0)
X_train, y_train, X_test, y_test = X[:100], y[:100], X[100:], y[100:]

l1 = L1M3N(solver="cutting_plane", C=0.02).fit(X_train, y_train)
l2 = EGStructuredSVM(C=0.1).fit(X_train, y_train)

print(f"L1M3N: {l1.support_.sum()} of 100 input features used "
      f"({l1.support_[30:].sum()} irrelevant), token error {1 - l1.score(X_test, y_test):.3f}")
print(f"L2 M3N: {np.count_nonzero(np.any(l2.coef_ != 0, axis=0))} of 100 input features used, "
      f"token error {1 - l2.score(X_test, y_test):.3f}")

fig, axes = plt.subplots(2, 1, figsize=(8, 5), sharex=True)
for ax, model, title in zip(axes, [l2, l1], ["L2 M3N (EGStructuredSVM)", "L1M3N"]):
    state_weights = model.coef_.ravel()  # 2 labels x 100 features = 200 state weights
    ax.bar(np.arange(state_weights.size), state_weights, width=1.0)
    ax.axvspan(-0.5, 29.5, color="tab:green", alpha=0.1)
    ax.axvspan(99.5, 129.5, color="tab:green", alpha=0.1)
    ax.set_title(f"{title}: {np.count_nonzero(state_weights)} non-zero state weights")
axes[1].set_xlabel("state feature function (label x input feature); shaded: relevant")
fig.tight_layout()

results = Path(__file__).resolve().parents[1] / "benchmarks" / "l1m3n_synthetic.npz"
if results.exists():
    curves = np.load(results)
    fig, ax = plt.subplots(figsize=(6, 4))
    for name in curves.files:
        if name == "sizes":
            continue
        errors = curves[name]
        ax.errorbar(curves["sizes"], np.nanmean(errors, axis=1), yerr=np.nanstd(errors, axis=1),
                    marker="o", capsize=3, label=name)
    ax.set_xlabel("training sequences")
    ax.set_ylabel("token error rate")
    ax.set_title("Synthetic chains (KDD 2009, Figure 2)")
    ax.legend()
    fig.tight_layout()

plt.show()
