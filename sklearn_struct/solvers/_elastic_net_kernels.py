"""The coordinate-wise loops of OWL-QN (:mod:`.elastic_net`), one pass over the weights each."""

from numba import njit


@njit(cache=True, nogil=True)
def pseudo_gradient(w, g, c1, out):
    """``out``: the pseudo-gradient of ``f + c1 ||.||_1`` at ``w`` (``g``: the gradient of
    the smooth ``f``), the one-sided derivative towards descent where a weight is 0, and
    0 where neither side descends."""
    for j in range(w.shape[0]):
        if w[j] > 0.0:
            out[j] = g[j] + c1
        elif w[j] < 0.0:
            out[j] = g[j] - c1
        elif g[j] + c1 < 0.0:
            out[j] = g[j] + c1
        elif g[j] - c1 > 0.0:
            out[j] = g[j] - c1
        else:
            out[j] = 0.0


@njit(cache=True, nogil=True)
def keep_descent(direction, pg):
    """Zero the coordinates of ``direction`` that do not descend along ``-pg``."""
    for j in range(direction.shape[0]):
        if direction[j] * pg[j] >= 0.0:
            direction[j] = 0.0


@njit(cache=True, nogil=True)
def orthant_step(w, direction, step, pg, out):
    """``out = w + step * direction``, with every coordinate that leaves the orthant of
    the step set to 0: the orthant of ``w``, or of ``-pg`` where ``w`` is 0.  Returns
    ``pg . (out - w)``, the Armijo test's first-order decrease."""
    decrease = 0.0
    for j in range(w.shape[0]):
        value = w[j] + step * direction[j]
        side = w[j] if w[j] != 0.0 else -pg[j]
        if value * side <= 0.0:
            value = 0.0
        out[j] = value
        decrease += pg[j] * (value - w[j])
    return decrease
