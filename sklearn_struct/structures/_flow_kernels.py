"""What the matching and min-cut projections share: the method, and numba helpers.

The projections live with their structures (``matching/_projection.py``,
``mincut/_projection.py``), and so does the min-cut argmax
(``mincut/_maxflow.py``).

Euclidean projections onto the bipartite matching polytope (Figure 3 of
Taskar, Lacoste-Julien & Jordan, JMLR 2006) and onto the relaxed min-cut
polytope (their Appendix A) are min-cost *quadratic* flow problems.  Both are
solved exactly by a globalised semismooth Newton method on their small dual
(node prices for matchings, edge flows for min-cuts):

- the dual is a convex piecewise-quadratic function; at the current dual
  point its active pieces define a quadratic model whose minimiser solves a
  small linear system (the *Newton point*);
- the step towards it is an exact search, computed piece by piece: the
  minimum of the true dual on the segment (matchings: up to the first
  price reaching zero), or its first local minimum along the path bent by
  holding edge flows that reach their kink at zero (min-cuts); every step
  decreases the dual, and many pieces change at once;
- where the dual is flat or linear (a matching component with more
  sources than targets, a min-cut group of tied nodes clamped at both 0
  and 1) the step is the steepest descent there instead;
- once the pieces are right the Newton point *is* the solution, up to
  rounding (finite termination);
- the natural KKT residual of the returned primal-dual pair is returned, so
  callers can check the <= 1e-9 guarantee.

Cold-started min-cut projections begin with accelerated proximal-gradient
(FISTA) iterations on the same dual: cheap passes over the arrays that bring the
flows close to the Newton model of the solution, so that a few Newton
iterations finish the job (from zero flows it would take a dozen, with
steepest-descent steps while whole groups of nodes are clamped).

All functions are free ``@njit(cache=True)`` functions on flat arrays; the
``*_batch`` wrappers loop over examples given offsets.
"""

import numpy as np
from numba import njit

# --------------------------------------------------------------------------
# Shared helpers
# --------------------------------------------------------------------------


@njit(cache=True)
def _find(parent, j):
    """Union-find root with path halving."""
    while parent[j] != j:
        parent[j] = parent[parent[j]]
        j = parent[j]
    return j


@njit(cache=True)
def _cholesky_solve(A, b, m):
    """Solve ``A[:m, :m] x = b[:m]`` (symmetric positive definite) in place; x in b."""
    for k in range(m):
        pivot = A[k, k]
        for i in range(k):
            pivot -= A[k, i] * A[k, i]
        pivot = np.sqrt(pivot)
        A[k, k] = pivot
        for j in range(k + 1, m):
            s = A[j, k]
            for i in range(k):
                s -= A[j, i] * A[k, i]
            A[j, k] = s / pivot
    for k in range(m):
        s = b[k]
        for i in range(k):
            s -= A[k, i] * b[i]
        b[k] = s / A[k, k]
    for k in range(m - 1, -1, -1):
        s = b[k]
        for i in range(k + 1, m):
            s -= A[i, k] * b[i]
        b[k] = s / A[k, k]


@njit(cache=True)
def _heap_swap(keys, items, stamps, i, j):
    """Exchange heap entries ``i`` and ``j`` (key, item and stamp together)."""
    keys[i], keys[j] = keys[j], keys[i]
    items[i], items[j] = items[j], items[i]
    stamps[i], stamps[j] = stamps[j], stamps[i]


@njit(cache=True)
def _heap_sift_down(keys, items, stamps, size, i):
    """Restore the min-heap order below position ``i``."""
    while True:
        left = 2 * i + 1
        if left >= size:
            return
        child = left
        if left + 1 < size and keys[left + 1] < keys[left]:
            child = left + 1
        if keys[i] <= keys[child]:
            return
        _heap_swap(keys, items, stamps, i, child)
        i = child


@njit(cache=True)
def _heap_push(keys, items, stamps, size, key, item, stamp):
    """Insert ``(key, item, stamp)`` into a min-heap of ``size`` entries; returns the new size."""
    i = size
    keys[i], items[i], stamps[i] = key, item, stamp
    while i > 0:
        parent = (i - 1) // 2
        if keys[parent] <= keys[i]:
            break
        _heap_swap(keys, items, stamps, i, parent)
        i = parent
    return size + 1
