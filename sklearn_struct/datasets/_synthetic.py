"""Generators for the synthetic protocols of the papers."""

from numbers import Integral, Real

import numpy as np
from sklearn.utils import Bunch, check_random_state
from sklearn.utils._param_validation import Interval, validate_params

__all__ = ["make_correlated_chains"]


@validate_params(
    {
        "n_samples": [Interval(Integral, 1, None, closed="left")],
        "n_features": [Interval(Integral, 1, None, closed="left")],
        "n_relevant": [Interval(Integral, 0, None, closed="left")],
        "n_groups": [Interval(Integral, 1, None, closed="left")],
        "length": [Interval(Integral, 1, None, closed="left")],
        "n_states": [Interval(Integral, 2, None, closed="left")],
        "noise_std": [Interval(Real, 0, None, closed="left")],
        "n_sweeps": [Interval(Integral, 0, None, closed="left")],
        "random_state": ["random_state"],
        "return_model": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def make_correlated_chains(
    n_samples=1000,
    n_features=100,
    n_relevant=30,
    n_groups=10,
    length=8,
    n_states=2,
    noise_std=0.05,
    n_sweeps=100,
    random_state=None,
    return_model=False,
):
    """Sequences sampled from a sparse chain CRF with correlated relevant features.

    The synthetic protocol of Zhu, Xing & Zhang, *Primal Sparse Max-Margin Markov
    Networks* (KDD 2009), section 5.1 (after their LapM3N paper, ICML 2008). The defaults
    are the paper's: ``d = 100`` input features per token, of which 30 are relevant,
    partitioned into 10 groups of 3 correlated features; chains of ``L = 8`` binary labels;
    1,000 sequences per data set (the paper averages over 10 data sets, i.e. 10 seeds).

    Generation, with ``rng = check_random_state(random_state)`` and draws in this order:

    1. the generating CRF: a state weight ``W[k, j]`` for every label ``k`` and input
       feature ``j`` (``n_states * n_features`` real-valued state feature functions, 200 in
       the paper) -- drawn from ``U(0, 1)`` for the relevant features and 0 for the others --
       and a transition weight ``T[a, b] ~ U(0, 1)`` for every label pair (the paper's
       4 = 2 x 2 transition feature functions);
    2. the inputs: for every token, each group draws ``z ~ N(0, 1)`` and its features are
       ``z + N(0, noise_std^2)`` noise; irrelevant features are ``N(0, 1)``;
    3. the labels: ``y`` is drawn from ``p(y | x) \\propto exp(sum_t W[y_t] . x_t +
       sum_t T[y_{t-1}, y_t])`` by Gibbs sampling -- each sequence starts from uniformly
       random labels and runs ``n_sweeps`` systematic sweeps (positions 0..L-1, each label
       redrawn from its conditional given its neighbours); the last state is returned.

    Details the paper leaves open, and the choices made here: the distribution of the
    generating weights (the paper's Figure 3 shows them within [0, 1]: uniform ``U(0, 1)``
    is used, for transitions too); "standard variance 0.05" of the noise is read as a
    standard deviation; irrelevant features are standard normal; features are independent
    across tokens and sequences; the relevant features are the first ``n_relevant``
    columns, grouped consecutively; the number of Gibbs sweeps (100 by default; exact
    sampling needs none, but the paper uses a Gibbs sampler). Setting
    ``n_groups = n_relevant`` gives the paper's i.i.d. variant (uncorrelated features).

    Parameters
    ----------
    n_samples : int, default=1000
        Number of sequences.
    n_features : int, default=100
        Number of input features per token (``d``).
    n_relevant : int, default=30
        Number of features with non-zero weights; at most ``n_features``.
    n_groups : int, default=10
        Number of groups of correlated relevant features (near-equal consecutive
        blocks); at most ``n_relevant`` when ``n_relevant > 0``.
    length : int, default=8
        Length of every sequence (``L``).
    n_states : int, default=2
        Number of labels.
    noise_std : float, default=0.05
        Standard deviation of the noise that makes the features of a group differ.
    n_sweeps : int, default=100
        Number of Gibbs sweeps per sequence.
    random_state : int, RandomState instance or None, default=None
        Controls the model, the inputs and the sampler.
    return_model : bool, default=False
        Whether to return the generating CRF too.

    Returns
    -------
    X : list of ndarray of shape (length, n_features)
        Token features of each sequence (float64).
    y : list of ndarray of shape (length,)
        Labels ``0..n_states-1`` of each sequence (int64).
    model : :class:`~sklearn.utils.Bunch`
        Only if ``return_model``: ``coef`` ``(n_states, n_features)`` state weights,
        ``transition`` ``(n_states, n_states)`` (row = previous label), ``relevant``
        ``(n_features,)`` bool mask and ``groups`` ``(n_features,)`` group index of each
        feature (-1 for irrelevant ones). ``coef`` and ``transition`` use the layout of
        ``ChainStructure`` without start/end parts.

    Examples
    --------
    >>> from sklearn_struct.datasets import make_correlated_chains
    >>> X, y, model = make_correlated_chains(n_samples=5, random_state=0,
    ...                                      return_model=True)
    >>> len(X), X[0].shape, y[0].shape, int(model.relevant.sum())
    (5, (8, 100), (8,), 30)
    """
    if n_relevant > n_features:
        raise ValueError(f"n_relevant={n_relevant} exceeds n_features={n_features}")
    if n_relevant and n_groups > n_relevant:
        raise ValueError(f"n_groups={n_groups} exceeds n_relevant={n_relevant}")
    rng = check_random_state(random_state)

    groups = np.full(n_features, -1, dtype=np.int64)
    groups[:n_relevant] = np.arange(n_relevant) * n_groups // max(n_relevant, 1)
    coef = np.zeros((n_states, n_features))
    coef[:, :n_relevant] = rng.uniform(0.0, 1.0, size=(n_states, n_relevant))
    transition = rng.uniform(0.0, 1.0, size=(n_states, n_states))

    X = rng.standard_normal((n_samples, length, n_features))
    if n_relevant:
        shared = rng.standard_normal((n_samples, length, n_groups))
        noise = rng.standard_normal((n_samples, length, n_relevant))
        X[:, :, :n_relevant] = shared[:, :, groups[:n_relevant]] + noise_std * noise

    Y = gibbs_sample_chains(X @ coef.T, transition, n_sweeps, rng)
    X_list = list(X)
    y_list = list(Y)
    if not return_model:
        return X_list, y_list
    model = Bunch(coef=coef, transition=transition, relevant=groups >= 0, groups=groups)
    return X_list, y_list, model


def gibbs_sample_chains(node_scores, transition, n_sweeps, rng):
    """Gibbs-sample one label sequence per row from linear-chain CRF scores.

    Vectorised over sequences: ``node_scores`` has shape ``(n, L, K)`` and the sequences
    share the transition scores ``(K, K)`` (row = previous label). Each sequence starts
    from uniformly random labels and runs ``n_sweeps`` systematic sweeps.

    Returns
    -------
    Y : ndarray of shape (n, L), int64
    """
    n_sequences, length, n_states = node_scores.shape
    Y = rng.randint(n_states, size=(n_sequences, length)).astype(np.int64)
    for _ in range(n_sweeps):
        for t in range(length):
            logits = node_scores[:, t, :].copy()
            if t > 0:
                logits += transition[Y[:, t - 1], :]
            if t + 1 < length:
                logits += transition[:, Y[:, t + 1]].T
            logits -= logits.max(axis=1, keepdims=True)
            cumulative = np.cumsum(np.exp(logits), axis=1)
            u = rng.random_sample(n_sequences) * cumulative[:, -1]
            Y[:, t] = np.minimum((cumulative <= u[:, None]).sum(axis=1), n_states - 1)
    return Y
