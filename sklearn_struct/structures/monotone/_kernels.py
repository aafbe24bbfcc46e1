"""Per-example numba operations of the monotone alignment (see ``structure.py``).

Part ``t * L + l`` is frame ``t`` at state ``l``, scored ``w[l] . x_t``.
"""

from collections import namedtuple

from numba import njit

#: Kernel data: the frames' features stacked, the sequences' offsets, the number of states.
MonotoneData = namedtuple("MonotoneData", ("X", "unit_offsets", "n_states"))


@njit(cache=True, nogil=True, inline="always")
def _weight(w, scale, k):
    return w[k] * scale[k] if scale.shape[0] > 0 else w[k]


@njit(cache=True, nogil=True)
def monotone_part_scores(data, i, w, scale, out):
    t0, L, d = data.unit_offsets[i], data.n_states, data.X.shape[1]
    for r in range(out.shape[0]):
        total = 0.0
        for k in range(d):
            total += data.X[t0 + r // L, k] * _weight(w, scale, (r % L) * d + k)
        out[r] = total


@njit(cache=True, nogil=True)
def monotone_add_features(data, i, coef, scale, w):
    t0, L, d = data.unit_offsets[i], data.n_states, data.X.shape[1]
    for r in range(coef.shape[0]):
        if coef[r] != 0.0:
            for k in range(d):
                w[(r % L) * d + k] += coef[r] * data.X[t0 + r // L, k] * (
                    scale[(r % L) * d + k] if scale.shape[0] > 0 else 1.0)


@njit(cache=True, nogil=True)
def monotone_encode(data, i, y, z):
    z[:] = 0.0
    for t in range(y.shape[0]):
        z[t * data.n_states + y[t]] = 1.0


@njit(cache=True, nogil=True)
def monotone_decode(data, i, z, y_out):
    L = data.n_states
    for t in range(y_out.shape[0]):
        y_out[t] = z[t * L:(t + 1) * L].argmax()


@njit(cache=True, nogil=True)
def monotone_hypergraph_size(data, i):
    T = data.unit_offsets[i + 1] - data.unit_offsets[i]
    return 2 * T * data.n_states + 1, 3 * T * data.n_states + 1


@njit(cache=True, nogil=True)
def monotone_hypergraph(data, i, edges):
    """Node ``2 L t + l``: frames ``0..t``, frame ``t`` at state ``l`` (its edge scores part
    ``(t, l)``); node ``2 L t + L + l``: frames ``0..t``, frame ``t`` at a state ``<= l``
    (the states up to ``l`` summed one at a time, so ``O(T L)`` edges, not ``O(T L^2)``).
    The goal sums the last frame's states."""
    T, L = data.unit_offsets[i + 1] - data.unit_offsets[i], data.n_states
    n = 0
    for t in range(T):
        for state in range(L):  # (head, tail0, tail1, part0, part1), -1 for none
            tail = 2 * L * (t - 1) + L + state if t > 0 else -1
            edges[n] = (2 * L * t + state, tail, -1, t * L + state, -1)
            n += 1
        for state in range(L):
            edges[n] = (2 * L * t + L + state, 2 * L * t + state, -1, -1, -1)
            n += 1
            if state > 0:
                edges[n] = (2 * L * t + L + state, 2 * L * t + L + state - 1, -1, -1, -1)
                n += 1
    edges[n] = (2 * L * T, 2 * L * T - 1, -1, -1, -1)
    return n + 1
