"""The (averaged) structured perceptron of Collins (2002), for any structure.

One epoch visits the examples in turn, predicts with the structure's argmax
under the current weights and, on a wrong prediction, adds the feature
difference ``f(x_i, y_i) - f(x_i, y^)`` (times the example's weight) to the
weights.  The averaged perceptron returns the average of the weight vectors
after every visit, kept in O(n_weights) memory with Daume's trick (``w -
w_sum / n_steps``, ``w_sum`` accumulating the update of visit ``t`` times ``t - 1``).

On partial labels (the latent perceptron of Sun et al., 2009) what is known of
an example is a part-score vector ``constraint_scores``, 0 on the parts consistent
with it and ``-inf`` elsewhere: a prediction that uses no forbidden part is
right, and the update's target is the best consistent output under the current
weights, the structure's argmax on ``scores + constraint_scores``.  With every
label known the only consistent output is the truth, and this is Collins' update.

This module knows nothing of scikit-learn: it works on a structure and a batch.
"""

import time
from dataclasses import dataclass

import numpy as np

from .._memory import random_access_zeros
from ..structures._base import require_kernel
from ..structures._kernel import specialize
from . import _perceptron_kernels

__all__ = ["KERNEL_OPERATIONS", "PerceptronState", "perceptron_solve"]

#: Kernel operations of the perceptron epoch.
KERNEL_OPERATIONS = ("part_scores", "add_features", "argmax", "encode")


@dataclass
class PerceptronState:
    """Weights of a perceptron run, in the structure's kernel layout (what a warm start reuses).

    Attributes
    ----------
    w : ndarray of shape (n_weights,)
        Current (last) weights.
    w_sum : ndarray of shape (n_weights,)
        Sum of the updates, the one made at visit ``t`` times ``t - 1``.
    n_steps : int
        Examples visited so far.
    """

    w: np.ndarray
    w_sum: np.ndarray
    n_steps: int = 0

    def weights(self, average):
        """The averaged (``average=True``) or last weights, in kernel layout."""
        if not average or self.n_steps == 0:
            return self.w.copy()
        return self.w - self.w_sum / self.n_steps


def perceptron_solve(structure, batch, Y, *, max_iter=10, average=True, shuffle=True,
                     sample_weight=None, state=None, random_state=None, verbose=0,
                     callback=None, constraint_scores=None):
    """Run perceptron epochs until an epoch makes no mistake or ``max_iter`` epochs.

    Parameters
    ----------
    structure : BaseStructure
        Must provide the kernel operations ``KERNEL_OPERATIONS``.
    batch : batch of ``structure``
    Y : ndarray of int64
        Encoded outputs (flat over output units).
    max_iter : int
        Maximum number of epochs.
    average : bool
        Return the averaged weights (else the last ones).
    shuffle : bool
        Visit the examples in a new random order each epoch (else ``0..n-1``).
    sample_weight : ndarray of shape (n_samples,), optional
        Each update of example ``i`` is scaled by ``sample_weight[i]``.
    state : PerceptronState, optional
        Continue an earlier run on the same batch.
    random_state : numpy.random.RandomState, optional
    verbose : int
    callback : callable, optional
        Called as ``callback(epoch, state)`` after every epoch; a true return value
        stops the epochs (early stopping).
    constraint_scores : ndarray of shape (n_parts_total,), optional
        Partial labels: 0 on the parts consistent with them, ``-inf`` elsewhere
        (``Y`` is then ignored); every example must keep a consistent output.

    Returns
    -------
    w : ndarray of shape (n_weights,)
        Final (averaged) weights, in the structure's weight layout.
    state : PerceptronState
    history : dict of ndarray
        ``mistakes`` (examples predicted wrong, or inconsistent with their
        partial labels, during the epoch) and
        ``seconds`` per epoch.
    converged : bool
        Whether the last epoch made no mistake.
    """
    require_kernel(structure, KERNEL_OPERATIONS, "the structured perceptron")
    rng = random_state if random_state is not None else np.random.RandomState(0)
    n = batch.n_samples
    sample_weight = np.ones(n) if sample_weight is None else np.asarray(sample_weight, float)
    if state is None:
        w0 = structure.kernel_weights(batch, np.zeros(batch.n_weights))
        state = PerceptronState(w=w0, w_sum=random_access_zeros(w0.shape[0]))
    epoch_kernel = specialize(_perceptron_kernels.perceptron_epoch, structure.kernel_ops)
    if constraint_scores is None:
        true_parts, constraint_scores = structure.encode(batch, Y), np.empty(0)
    else:  # the targets follow from the constrained argmax
        true_parts = np.empty(0)
        constraint_scores = np.asarray(constraint_scores, dtype=float)
    data = structure.kernel_data(batch, training=True)
    history = {"mistakes": [], "seconds": []}
    converged = False
    for epoch in range(1, int(max_iter) + 1):
        order = (rng.permutation(n) if shuffle else np.arange(n)).astype(np.int64)
        start = time.perf_counter()
        state.n_steps, mistakes = epoch_kernel(order, data, batch.part_offsets,
                                               batch.unit_offsets, true_parts,
                                               constraint_scores, sample_weight, state.w,
                                               state.w_sum, state.n_steps)
        history["mistakes"].append(mistakes)
        history["seconds"].append(time.perf_counter() - start)
        if verbose:
            print(f"[perceptron] epoch {epoch}: {mistakes} of {n} examples predicted wrong "
                  f"({history['seconds'][-1]:.2f}s)")
        if callback is not None and callback(epoch, state):
            break
        if mistakes == 0:
            converged = True
            break
    w = structure.contract_weights(batch, state.weights(average))
    return w, state, {k: np.asarray(v) for k, v in history.items()}, converged
