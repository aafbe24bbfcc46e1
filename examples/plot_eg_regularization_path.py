"""
==================================================
A warm-started regularisation path with EG (OCR)
==================================================

:func:`~sklearn_struct.eg_path` fits :class:`~sklearn_struct.EGCRF` for a
sequence of ``C`` values, each started from the dual variables of the previous
one (section 7.1.2 of Collins et al., 2008).  Moving from strong to weak
regularisation, each new ``C`` costs only a few passes over the data.  The
path is trained on the words of one fold of the OCR letters and scored on
another fold (both shipped with the package:
:func:`~sklearn_struct.datasets.load_ocr_default`); the plot shows the passes
spent per ``C`` and the validation letter error, from which ``C`` is chosen.
"""

import matplotlib.pyplot as plt
import numpy as np

from sklearn_struct import EGCRF, eg_path
from sklearn_struct.datasets import load_ocr_default

data = load_ocr_default()
train, val = np.flatnonzero(data.folds == 0), np.flatnonzero(data.folds == 1)
X, y = [data.X[i] for i in train], [data.y[i] for i in train]
X_val, y_val = [data.X[i] for i in val], [data.y[i] for i in val]

# %%
# Sixteen values of C, a factor 1/0.7 apart, fitted to a relative duality gap of 1e-3.
Cs = 0.005 / 0.7 ** np.arange(16)
path = eg_path(EGCRF(tol=1e-3, max_iter=200, random_state=0), X, y, Cs, X_val=X_val, y_val=y_val)
for C, passes, score in zip(path["C"], path["passes"], path["validation_score"]):
    print(f"C={C:8.4f}  passes {passes:6.1f}  validation letter error {1 - score:.4f}")
print(f"total passes for {len(Cs)} values of C: {path['total_passes'][-1]:.1f}")

fig, (ax_passes, ax_error) = plt.subplots(1, 2, figsize=(10, 3.5))
ax_passes.semilogx(path["C"], path["passes"], "o-")
ax_passes.set(xlabel="C", ylabel="effective passes", title="passes per C (warm-started)")
ax_error.semilogx(path["C"], 1 - path["validation_score"], "o-")
ax_error.set(xlabel="C", ylabel="validation letter error", title="choosing C")
fig.tight_layout()
plt.show()
