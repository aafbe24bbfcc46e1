"""Factored SMO and online EG on the max-margin chain dual over part marginals.

The problem is that of ``EGStructuredSVM`` on a first-order chain without start/end
parts (``ChainStructure(start_end=False)``, Hamming loss):

    min_w 1/2 ||w||^2 + C sum_i max_y [L(y_i, y) + w . phi(x_i, y) - w . phi(x_i, y_i)]

with ``phi(x, y) = sum_t e_{y_t} (x) x_t + sum_t e_{y_t y_{t+1}}`` (node weights ``W``
of shape ``(K, n_features)``, transition weights of shape ``(K, K)``).  Its dual
(Taskar, Guestrin and Koller, NIPS 2003) is a QP over the part marginals ``mu`` of
every sentence: node marginals ``mu_t(a)`` and *per-position* edge marginals
``mu_t(a, b)`` of the pair ``(t, t + 1)``, which for a chain range exactly over the
locally consistent, non-negative vectors (the marginal polytope):

    F(mu) = C sum_i sum_t sum_a mu_t(a) l_t(a) - 1/2 ||w(mu)||^2,
    w(mu) = C sum_i (phi(x_i, y_i) - sum_r mu_r phi_r),   l_t(a) = [a != y_it].

Both solvers move one sentence at a time and keep ``w = w(mu)`` exact.

**Factored SMO** (:func:`smo_pass`; Taskar et al. 2003, section 5): a step moves dual
mass ``delta`` from an output ``y'`` to an output ``y`` of one sentence, i.e. adds
``delta (z(y) - z(y'))`` to its marginals (``z`` the 0/1 part vector), which keeps
them consistent; they stay non-negative, hence in the polytope, as long as
``delta <= min {mu_r : r in y', r not in y}``.  ``y`` is the output of largest dual
gradient ``C (L(y) + w . phi(y) - w . phi(y_i))`` (loss-augmented Viterbi), ``y'``
the one of smallest gradient among the outputs whose parts all have positive
marginals (Viterbi restricted to them: the vertices of the smallest face holding
``mu``), and ``delta`` the exact maximiser of the concave quadratic along
``z(y) - z(y')``, clipped to the bound: SMO's two-variable step written on the
marginals, i.e. a pairwise Frank-Wolfe step.  It starts from the truth
(``mu = z(y_i)``, ``w = 0``).

**Online EG** (:func:`eg_pass`; Bartlett et al., NIPS 2004, Figure 2, one sentence
at a time) over the Gibbs parameters ``theta`` of the same parts, node and
per-position edge (untied, as in the paper; ``EGStructuredSVM`` ties the edge
parameters over positions): ``theta_r += eta C (l_r + w . phi_r)``, marginals
by forward-backward.  ``eta`` is fixed, or per sentence and adaptive (halved until
the sentence's step improves the dual, then grown by 1.05: Collins et al. 2008,
section 7).  :func:`theta_from_marginals` gives the hybrid's switch from SMO to EG:
``theta`` of the first node ``log mu_0(a)``, of every edge the log conditional
probability ``log mu_t(a, b) / mu_t(a)`` (NIPS 2004, section 5), after mixing a
fraction ``floor`` of the uniform distribution's marginals into ``mu`` so that no
part has probability 0 (EG's multiplicative steps could never revive it).
"""

import numpy as np
import scipy.sparse as sp
from numba import njit

#: Marginals at or below this count as 0 (outside the face SMO's ``y'`` comes from).
SUPPORT = 1e-13
#: Halvings of an adaptive EG step before the visit gives up.
MAX_HALVINGS = 30


@njit(cache=True)
def _node_scores(data, indices, indptr, lo, hi, Wf, out):
    """``out[t, a] = W[a] . x_t`` for the tokens ``lo:hi``; ``Wf`` is ``W.T``."""
    K = Wf.shape[1]
    for t in range(hi - lo):
        for a in range(K):
            out[t, a] = 0.0
        for p in range(indptr[lo + t], indptr[lo + t + 1]):
            v = data[p]
            j = indices[p]
            for a in range(K):
                out[t, a] += v * Wf[j, a]


@njit(cache=True)
def _add_node_features(data, indices, indptr, lo, hi, coef, Wf):
    """``W[a] += sum_t coef[t, a] x_t`` for the tokens ``lo:hi``."""
    K = Wf.shape[1]
    for t in range(hi - lo):
        for p in range(indptr[lo + t], indptr[lo + t + 1]):
            v = data[p]
            j = indices[p]
            for a in range(K):
                Wf[j, a] += v * coef[t, a]


@njit(cache=True)
def _viterbi(node, edge, out):
    """Best labels under node scores ``(T, K)`` and edge scores ``(T, K, K)`` (row ``t``:
    the pair ``(t, t + 1)``); ``-inf`` scores are forbidden.  Returns the best score."""
    T, K = node.shape
    delta = np.empty((T, K))
    back = np.zeros((T, K), dtype=np.int64)
    delta[0] = node[0]
    for t in range(1, T):
        for b in range(K):
            best, arg = -np.inf, 0
            for a in range(K):
                v = delta[t - 1, a] + edge[t - 1, a, b]
                if v > best:
                    best, arg = v, a
            delta[t, b] = best + node[t, b]
            back[t, b] = arg
    best, arg = -np.inf, 0
    for b in range(K):
        if delta[T - 1, b] > best:
            best, arg = delta[T - 1, b], b
    out[T - 1] = arg
    for t in range(T - 1, 0, -1):
        out[t - 1] = back[t, out[t]]
    return best


@njit(cache=True)
def _logsumexp(v):
    top = v.max()
    if top == -np.inf:
        return top
    return top + np.log(np.exp(v - top).sum())


@njit(cache=True)
def _forward_backward(node, edge, mu_node, mu_edge):
    """Node and per-position edge marginals of ``p(y) ~ exp(sum node + sum edge)``."""
    T, K = node.shape
    fwd = np.empty((T, K))
    bwd = np.zeros((T, K))
    buf = np.empty(K)
    fwd[0] = node[0]
    for t in range(1, T):
        for b in range(K):
            for a in range(K):
                buf[a] = fwd[t - 1, a] + edge[t - 1, a, b]
            fwd[t, b] = _logsumexp(buf) + node[t, b]
    for t in range(T - 2, -1, -1):
        for a in range(K):
            for b in range(K):
                buf[b] = edge[t, a, b] + node[t + 1, b] + bwd[t + 1, b]
            bwd[t, a] = _logsumexp(buf)
    log_z = _logsumexp(fwd[T - 1])
    for t in range(T):
        for a in range(K):
            mu_node[t, a] = np.exp(fwd[t, a] + bwd[t, a] - log_z)
    for t in range(T - 1):
        for a in range(K):
            for b in range(K):
                mu_edge[t, a, b] = np.exp(fwd[t, a] + edge[t, a, b] + node[t + 1, b]
                                          + bwd[t + 1, b] - log_z)


@njit(cache=True)
def _change_sq_norm(d_node, d_edge, gram, g0, T):
    """``||sum_r d_r phi_r||^2`` for a change ``d`` of one sentence's part vector."""
    K = d_node.shape[1]
    total = 0.0
    for a in range(K):
        for s in range(T):
            if d_node[s, a] != 0.0:
                for t in range(T):
                    total += d_node[s, a] * d_node[t, a] * gram[g0 + s * T + t]
    for a in range(K):
        for b in range(K):
            acc = 0.0
            for t in range(T - 1):
                acc += d_edge[t, a, b]
            total += acc * acc
    return total


@njit(cache=True)
def smo_pass(order, data, indices, indptr, offsets, Y, gram, gram_offsets, Wf, trans,
             mu_node, mu_edge, C):
    """One factored SMO step per sentence of ``order``; returns the number of steps taken."""
    K = trans.shape[0]
    taken = 0
    for i in order:
        lo, hi = offsets[i], offsets[i + 1]
        T = hi - lo
        grad = np.empty((T, K))
        _node_scores(data, indices, indptr, lo, hi, Wf, grad)
        for t in range(T):
            for a in range(K):
                if a != Y[lo + t]:
                    grad[t, a] += 1.0
        edge = np.empty((max(T - 1, 1), K, K))
        for t in range(T - 1):
            edge[t] = trans
        y_up = np.empty(T, dtype=np.int64)
        _viterbi(grad, edge, y_up)
        # y': smallest gradient over the outputs whose parts all have positive marginals
        neg_node = np.empty((T, K))
        neg_edge = np.empty((max(T - 1, 1), K, K))
        for t in range(T):
            for a in range(K):
                neg_node[t, a] = -grad[t, a] if mu_node[lo + t, a] > SUPPORT else -np.inf
        for t in range(T - 1):
            for a in range(K):
                for b in range(K):
                    neg_edge[t, a, b] = (-trans[a, b] if mu_edge[lo + t, a, b] > SUPPORT
                                         else -np.inf)
        y_down = np.empty(T, dtype=np.int64)
        if _viterbi(neg_node, neg_edge, y_down) == -np.inf:
            continue
        gain = 0.0
        bound = np.inf
        d_node = np.zeros((T, K))
        d_edge = np.zeros((max(T - 1, 1), K, K))
        for t in range(T):
            a, b = y_up[t], y_down[t]
            if a != b:
                gain += grad[t, a] - grad[t, b]
                d_node[t, a] += 1.0
                d_node[t, b] -= 1.0
                bound = min(bound, mu_node[lo + t, b])
        for t in range(T - 1):
            a, a2, b, b2 = y_up[t], y_up[t + 1], y_down[t], y_down[t + 1]
            if a != b or a2 != b2:
                gain += trans[a, a2] - trans[b, b2]
                d_edge[t, a, a2] += 1.0
                d_edge[t, b, b2] -= 1.0
                bound = min(bound, mu_edge[lo + t, b, b2])
        if gain <= 0.0:
            continue  # this sentence's marginals are optimal given the others
        curvature = C * _change_sq_norm(d_node, d_edge, gram, gram_offsets[i], T)
        step = bound if curvature <= 0.0 else min(gain / curvature, bound)
        if step <= 0.0:
            continue
        taken += 1
        for t in range(T):
            for a in range(K):
                if d_node[t, a] != 0.0:
                    # the part that bounds the step lands on 0 exactly
                    mu_node[lo + t, a] = (0.0 if d_node[t, a] < 0 and step == bound
                                          and mu_node[lo + t, a] == bound
                                          else mu_node[lo + t, a] + step * d_node[t, a])
        for t in range(T - 1):
            for a in range(K):
                for b in range(K):
                    if d_edge[t, a, b] != 0.0:
                        mu_edge[lo + t, a, b] = (
                            0.0 if d_edge[t, a, b] < 0 and step == bound
                            and mu_edge[lo + t, a, b] == bound
                            else mu_edge[lo + t, a, b] + step * d_edge[t, a, b])
        # w(mu) = C (phi(y_i) - sum mu phi): moving mu by step * d moves w by -C step phi(d)
        d_node *= -C * step
        _add_node_features(data, indices, indptr, lo, hi, d_node, Wf)
        for t in range(T - 1):
            for a in range(K):
                for b in range(K):
                    trans[a, b] -= C * step * d_edge[t, a, b]
    return taken


@njit(cache=True)
def eg_pass(order, data, indices, indptr, offsets, Y, gram, gram_offsets, Wf, trans,
            theta_node, theta_edge, mu_node, mu_edge, etas, adaptive, C):
    """One online EG visit per sentence of ``order``; returns the step sizes tried."""
    K = trans.shape[0]
    tries = 0
    for i in order:
        lo, hi = offsets[i], offsets[i + 1]
        T = hi - lo
        E = max(T - 1, 1)
        grad = np.empty((T, K))
        _node_scores(data, indices, indptr, lo, hi, Wf, grad)
        for t in range(T):
            for a in range(K):
                if a != Y[lo + t]:
                    grad[t, a] += 1.0
        new_node = np.empty((T, K))
        new_edge = np.zeros((E, K, K))
        node_mu = np.empty((T, K))
        edge_mu = np.zeros((E, K, K))
        d_node = np.empty((T, K))
        d_edge = np.zeros((E, K, K))
        eta = etas[i]
        for _ in range(MAX_HALVINGS + 1):
            tries += 1
            for t in range(T):
                for a in range(K):
                    new_node[t, a] = theta_node[lo + t, a] + eta * C * grad[t, a]
            for t in range(T - 1):
                for a in range(K):
                    for b in range(K):
                        new_edge[t, a, b] = theta_edge[lo + t, a, b] + eta * C * trans[a, b]
            _forward_backward(new_node, new_edge, node_mu, edge_mu)
            first = 0.0
            for t in range(T):
                for a in range(K):
                    d_node[t, a] = node_mu[t, a] - mu_node[lo + t, a]
                    first += d_node[t, a] * grad[t, a]
            for t in range(T - 1):
                for a in range(K):
                    for b in range(K):
                        d_edge[t, a, b] = edge_mu[t, a, b] - mu_edge[lo + t, a, b]
                        first += d_edge[t, a, b] * trans[a, b]
            curvature = _change_sq_norm(d_node, d_edge, gram, gram_offsets[i], T)
            change = C * first - 0.5 * C * C * curvature
            if not adaptive or change >= 0.0:
                break
            eta *= 0.5
        if adaptive:
            if change < 0.0:
                continue  # no improving step: keep this sentence as it was
            etas[i] = eta * 1.05
        for t in range(T):
            for a in range(K):
                theta_node[lo + t, a] = new_node[t, a]
                mu_node[lo + t, a] = node_mu[t, a]
        for t in range(T - 1):
            for a in range(K):
                for b in range(K):
                    theta_edge[lo + t, a, b] = new_edge[t, a, b]
                    mu_edge[lo + t, a, b] = edge_mu[t, a, b]
        d_node *= -C
        _add_node_features(data, indices, indptr, lo, hi, d_node, Wf)
        for t in range(T - 1):
            for a in range(K):
                for b in range(K):
                    trans[a, b] -= C * d_edge[t, a, b]
    return tries


@njit(cache=True)
def _all_marginals(offsets, theta_node, theta_edge, mu_node, mu_edge):
    K = theta_node.shape[1]
    for i in range(offsets.shape[0] - 1):
        lo, hi = offsets[i], offsets[i + 1]
        T = hi - lo
        node = np.empty((T, K))
        edge = np.zeros((max(T - 1, 1), K, K))
        _forward_backward(theta_node[lo:hi], theta_edge[lo:hi], node, edge)
        mu_node[lo:hi] = node
        mu_edge[lo:hi - 1] = edge[:T - 1]


@njit(cache=True)
def _hinge_total(data, indices, indptr, offsets, Y, Wf, trans):
    """``sum_i max_y [L(y_i, y) + w . phi(y)] - w . phi(y_i)`` by loss-augmented Viterbi."""
    K = trans.shape[0]
    total = 0.0
    for i in range(offsets.shape[0] - 1):
        lo, hi = offsets[i], offsets[i + 1]
        T = hi - lo
        node = np.empty((T, K))
        _node_scores(data, indices, indptr, lo, hi, Wf, node)
        truth = 0.0
        for t in range(T):
            truth += node[t, Y[lo + t]]
            if t > 0:
                truth += trans[Y[lo + t - 1], Y[lo + t]]
            for a in range(K):
                if a != Y[lo + t]:
                    node[t, a] += 1.0
        edge = np.empty((max(T - 1, 1), K, K))
        for t in range(T - 1):
            edge[t] = trans
        labels = np.empty(T, dtype=np.int64)
        total += _viterbi(node, edge, labels) - truth
    return total


class ChainDual:
    """The dual variables of one chain problem, and its objectives.

    Parameters
    ----------
    X : list of scipy.sparse matrices of shape (T_i, n_features)
        Token features of every sentence.
    Y : list of ndarray of int
        Labels ``0..n_states-1`` of every sentence's tokens.
    n_states : int
        Number of labels ``K``.
    C : float
        Inverse regularisation strength (scikit-learn convention).

    Attributes
    ----------
    mu_node : ndarray of shape (n_tokens, K)
    mu_edge : ndarray of shape (n_tokens, K, K)
        Row ``t`` holds the pair ``(t, t + 1)`` of its sentence (zero on the last token).
    theta_node, theta_edge : ndarray
        EG's Gibbs parameters (same layout), once :meth:`start_eg` has run.
    Wf : ndarray of shape (n_features, K)
        ``W.T`` of ``w(mu)``.
    transition : ndarray of shape (K, K)
        Transition weights of ``w(mu)``.
    """

    def __init__(self, X, Y, n_states, C):
        stacked = sp.vstack(X, format="csr").astype(np.float64)
        stacked.sort_indices()
        self.data, self.indices, self.indptr = stacked.data, stacked.indices, stacked.indptr
        lengths = np.array([x.shape[0] for x in X])
        self.offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        self.Y = np.concatenate(Y).astype(np.int64)
        self.n_samples, self.K, self.C = len(X), int(n_states), float(C)
        self.gram_offsets = np.concatenate([[0], np.cumsum(lengths ** 2)]).astype(np.int64)
        self.gram = np.concatenate([(x @ x.T).toarray().ravel() for x in X]).astype(np.float64)
        self.last = self.offsets[1:] - 1  # rows of mu_edge without a pair
        n, K = len(self.Y), self.K
        self.mu_node, self.mu_edge = np.zeros((n, K)), np.zeros((n, K, K))
        self.mu_node[np.arange(n), self.Y] = 1.0
        inner = np.setdiff1d(np.arange(n), self.last)
        self.mu_edge[inner, self.Y[inner], self.Y[inner + 1]] = 1.0
        self.truth_node, self.truth_edge = self.mu_node.copy(), self.mu_edge.copy()
        self.theta_node = self.theta_edge = self.etas = None
        self.Wf, self.transition = np.zeros((stacked.shape[1], K)), np.zeros((K, K))

    def rebuild_weights(self):
        """``w(mu)`` from scratch (after the marginals were set as a whole)."""
        coef = self.C * (self.truth_node - self.mu_node)
        self.Wf = np.asarray(sp.csr_matrix((self.data, self.indices, self.indptr)).T @ coef)
        self.transition = self.C * (self.truth_edge - self.mu_edge).sum(axis=0)

    def start_eg(self, theta_node, theta_edge, eta0):
        """Set EG's parameters, their marginals and ``w(mu)``; rates start at ``eta0``."""
        self.theta_node = np.ascontiguousarray(theta_node, dtype=np.float64)
        self.theta_edge = np.ascontiguousarray(theta_edge, dtype=np.float64)
        self.theta_edge[self.last] = 0.0
        _all_marginals(self.offsets, self.theta_node, self.theta_edge, self.mu_node,
                       self.mu_edge)
        self.mu_edge[self.last] = 0.0
        self.etas = np.full(self.n_samples, float(eta0))
        self.rebuild_weights()

    def smo_pass(self, order):
        """One factored SMO step per sentence of ``order``; the steps taken."""
        return smo_pass(order, self.data, self.indices, self.indptr, self.offsets, self.Y,
                        self.gram, self.gram_offsets, self.Wf, self.transition,
                        self.mu_node, self.mu_edge, self.C)

    def eg_pass(self, order, adaptive=False):
        """One online EG visit per sentence of ``order`` (``etas``: each one's rate)."""
        return eg_pass(order, self.data, self.indices, self.indptr, self.offsets, self.Y,
                       self.gram, self.gram_offsets, self.Wf, self.transition,
                       self.theta_node, self.theta_edge, self.mu_node, self.mu_edge, self.etas,
                       adaptive, self.C)

    def weights(self):
        """``w(mu)`` in ``ChainStructure(start_end=False)``'s layout (``W`` then transitions)."""
        return np.concatenate([self.Wf.T.ravel(), self.transition.ravel()])

    def sq_norm(self):
        return float(np.sum(self.Wf ** 2) + np.sum(self.transition ** 2))

    def dual(self):
        """``C sum_i E_mu L - 1/2 ||w(mu)||^2``."""
        expected_loss = len(self.Y) - self.mu_node[np.arange(len(self.Y)), self.Y].sum()
        return self.C * expected_loss - 0.5 * self.sq_norm()

    def primal(self):
        """The primal objective at ``w(mu)``."""
        return 0.5 * self.sq_norm() + self.C * _hinge_total(
            self.data, self.indices, self.indptr, self.offsets, self.Y, self.Wf,
            self.transition)

    def theta_from_marginals(self, floor=1e-4):
        """Gibbs parameters whose marginals are ``mu`` mixed with ``floor`` of uniform.

        The first node of a sentence gets ``log mu_0(a)``, every other node 0, every
        edge ``log mu_t(a, b) / mu_t(a)``: the chain's distribution factored into
        conditional probabilities, whose marginals are ``mu`` (a chain's consistent
        marginals are those of exactly this Markov distribution).
        """
        K = self.K
        node = (1.0 - floor) * self.mu_node + floor / K
        edge = (1.0 - floor) * self.mu_edge + floor / (K * K)
        theta_node = np.zeros_like(node)
        theta_node[self.offsets[:-1]] = np.log(node[self.offsets[:-1]])
        theta_edge = np.log(edge) - np.log(node)[:, :, None]
        theta_edge[self.last] = 0.0
        return theta_node, theta_edge
