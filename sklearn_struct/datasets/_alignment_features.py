"""Edge features for discriminative word alignment (Taskar, Lacoste-Julien & Klein 2005).

Every (English word ``j``, French word ``k``) pair of a sentence pair is a candidate edge of
a bipartite matching; its features follow section 6.2 of Taskar, Lacoste-Julien & Jordan
(2006): the Dice coefficient of the two words from their co-occurrence counts in a corpus of
sentence pairs, its rank among the competitors of each word, position differences,
orthographic similarity (exact match, common prefix, edit distance), punctuation and number
indicators, and the identity of the most frequent words.
"""

import math
import string
from collections import Counter

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

__all__ = ["AlignmentFeatureExtractor", "alignment_targets", "edges_to_links"]

#: Features of every edge, besides the frequent-word indicators appended after them.
BASE_FEATURES = (
    "bias",
    "dice",
    "dice_inverse_rank_english",  # 1 / rank of f_k among the French words, for e_j
    "dice_inverse_rank_french",  # 1 / rank of e_j among the English words, for f_k
    "dice_mutual_best",
    "dice_diagonal_neighbours",  # mean Dice of (e_{j-1}, f_{k-1}) and (e_{j+1}, f_{k+1})
    "relative_position_difference",
    "relative_position_difference_squared",
    "absolute_position_difference",  # min(|j - k|, 10) / 10
    "exact_match",
    "common_prefix_4",
    "common_prefix_ratio",
    "edit_similarity",  # 1 - Levenshtein distance / longer length
    "both_punctuation",
    "one_punctuation",
    "both_numbers",
    "log_count_english",  # log(1 + count) / log(1 + n_pairs): rare words have unreliable Dice
    "log_count_french",
    "ibm1_english_to_french",  # Model 1 posterior that e_j generated f_k
    "ibm1_french_to_english",  # Model 1 posterior that f_k generated e_j
)
_MAX_POSITION_DIFFERENCE = 10


def _check_pairs(pairs, where):
    if isinstance(pairs, (str, bytes)) or not hasattr(pairs, "__len__") or len(pairs) == 0:
        raise ValueError(f"{where}: expected a non-empty list of (english, french) token lists.")
    for i, pair in enumerate(pairs):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError(
                f"{where}: pair {i} must be an (english_tokens, french_tokens) tuple, "
                f"got {type(pair).__name__}."
            )
        for side, tokens in zip(("english", "french"), pair):
            if isinstance(tokens, (str, bytes)) or not all(isinstance(t, str) for t in tokens):
                raise TypeError(f"{where}: pair {i}: the {side} side must be a list of str tokens.")


def dice_coefficient(pair_count, english_count, french_count):
    """Dice coefficient ``2 C(e, f) / (C(e) + C(f))`` of two words from their counts.

    Parameters
    ----------
    pair_count : int
        ``C(e, f)``: sentence pairs containing both words.
    english_count, french_count : int
        ``C(e)``, ``C(f)``: sentence pairs containing each word.

    Returns
    -------
    dice : float
        In ``[0, 1]``; 0 when neither word was seen.
    """
    total = english_count + french_count
    return 2.0 * pair_count / total if total else 0.0


class AlignmentFeatureExtractor(BaseEstimator):
    """Edge features of all (English, French) word pairs of sentence pairs.

    ``fit`` counts, over a corpus of sentence pairs, in how many pairs every word and every
    (English word, French word) combination occurs; ``transform`` turns each sentence pair
    into the matching input ``(edge_features, edges, (n_english, n_french))`` with one edge
    per word pair (source = English position, target = French position).

    Parameters
    ----------
    lowercase : bool, default=True
        Lower-case the tokens before counting and comparing them.
    n_frequent_words : int, default=5
        Add one indicator per English and per French word among the ``n_frequent_words``
        most frequent of the corpus ("identity of the top five most frequently occurring
        words", section 6.2).
    n_ibm1_iterations : int, default=5
        EM iterations of IBM Model 1 (with a NULL word) trained on the corpus in both
        directions; its link posteriors are two features (the unsupervised-model features
        of Taskar et al. 2005, who used IBM Model 4).  0 leaves them at 0.

    Attributes
    ----------
    n_pairs_ : int
        Sentence pairs counted.
    english_counts_, french_counts_ : collections.Counter
        Number of sentence pairs containing each word.
    pair_counts_ : collections.Counter
        Number of sentence pairs containing each (English word, French word).
    frequent_english_, frequent_french_ : list of str
    translation_english_to_french_, translation_french_to_english_ : dict
        Model 1 probabilities ``t(target | source)`` keyed by ``(source, target)`` word
        pairs; the NULL source is ``None``.
    feature_names_ : list of str

    Examples
    --------
    >>> from sklearn_struct.datasets import AlignmentFeatureExtractor
    >>> corpus = [(["the", "house"], ["la", "maison"]), (["the", "cat"], ["le", "chat"])]
    >>> extractor = AlignmentFeatureExtractor(n_frequent_words=0).fit(corpus)
    >>> features, edges, shape = extractor.transform([(["the", "house"], ["la", "maison"])])[0]
    >>> edges.tolist()
    [[0, 0], [0, 1], [1, 0], [1, 1]]
    >>> float(features[3, 1])  # edge (house, maison), column "dice": 2 * 1 / (1 + 1)
    1.0
    """

    def __init__(self, lowercase=True, n_frequent_words=5, n_ibm1_iterations=5):
        self.lowercase = lowercase
        self.n_frequent_words = n_frequent_words
        self.n_ibm1_iterations = n_ibm1_iterations

    def _normalise(self, tokens):
        return [t.lower() for t in tokens] if self.lowercase else list(tokens)

    def fit(self, pairs, y=None):
        """Count word and word-pair occurrences over ``pairs``.

        Parameters
        ----------
        pairs : list of (list of str, list of str)
            Sentence pairs (English tokens, French tokens).
        y : None
            Ignored.

        Returns
        -------
        self : AlignmentFeatureExtractor
            The fitted extractor.
        """
        _check_pairs(pairs, "AlignmentFeatureExtractor.fit")
        if not isinstance(self.n_frequent_words, int) or self.n_frequent_words < 0:
            raise ValueError(
                f"n_frequent_words must be a non-negative int, got {self.n_frequent_words!r}."
            )
        if not isinstance(self.n_ibm1_iterations, int) or self.n_ibm1_iterations < 0:
            raise ValueError(
                f"n_ibm1_iterations must be a non-negative int, got {self.n_ibm1_iterations!r}."
            )
        normalised = [(self._normalise(e), self._normalise(f)) for e, f in pairs]
        self.english_counts_, self.french_counts_ = Counter(), Counter()
        self.pair_counts_ = Counter()
        for english, french in normalised:
            english_words, french_words = set(english), set(french)
            self.english_counts_.update(english_words)
            self.french_counts_.update(french_words)
            self.pair_counts_.update((e, f) for e in english_words for f in french_words)
        self.n_pairs_ = len(pairs)
        self.translation_english_to_french_ = _ibm1(normalised, self.n_ibm1_iterations)
        self.translation_french_to_english_ = _ibm1([(f, e) for e, f in normalised],
                                                    self.n_ibm1_iterations)
        self.frequent_english_ = [w for w, _ in self.english_counts_.most_common(
            self.n_frequent_words)]
        self.frequent_french_ = [w for w, _ in self.french_counts_.most_common(
            self.n_frequent_words)]
        self.feature_names_ = list(BASE_FEATURES) + [
            f"english_is_{w}" for w in self.frequent_english_
        ] + [f"french_is_{w}" for w in self.frequent_french_]
        return self

    def dice(self, english_word, french_word):
        """Dice coefficient of two words counted by :meth:`fit`.

        Parameters
        ----------
        english_word, french_word : str
            Words as counted (lower-cased when ``lowercase=True``).

        Returns
        -------
        dice : float
            0 for unseen words.
        """
        check_is_fitted(self, "pair_counts_")
        return dice_coefficient(
            self.pair_counts_.get((english_word, french_word), 0),
            self.english_counts_.get(english_word, 0),
            self.french_counts_.get(french_word, 0),
        )

    def transform(self, pairs):
        """Matching inputs of the sentence pairs.

        Parameters
        ----------
        pairs : list of (list of str, list of str)
            Sentence pairs (English tokens, French tokens).

        Returns
        -------
        X : list of tuples ``(edge_features, edges, (n_english, n_french))``
            ``edge_features`` of shape ``(m n, n_features)``, ``edges`` the ``(m n, 2)``
            int64 array of ``(english, french)`` positions in row-major order.
        """
        check_is_fitted(self, "pair_counts_")
        _check_pairs(pairs, "AlignmentFeatureExtractor.transform")
        return [self._sentence_features(*pair) for pair in pairs]

    def _sentence_features(self, english, french):
        english, french = self._normalise(english), self._normalise(french)
        m, n = len(english), len(french)
        if m * n == 0:
            return np.zeros((0, len(self.feature_names_))), np.zeros((0, 2), np.int64), (m, n)
        j, k = np.divmod(np.arange(m * n), n)
        edges = np.column_stack([j, k]).astype(np.int64)
        dice = np.array([[self.dice(e, f) for f in french] for e in english]).reshape(m, n)
        rank_english = _ranks(dice, axis=1)  # rank of f_k among the French words for e_j
        rank_french = _ranks(dice, axis=0)
        padded = np.pad(dice, 1)
        diagonal = 0.5 * (padded[:-2, :-2] + padded[2:, 2:])
        relative = np.abs((j + 0.5) / m - (k + 0.5) / n)
        english_punct = np.array([_is_punctuation(e) for e in english])[j]
        french_punct = np.array([_is_punctuation(f) for f in french])[k]
        english_number = np.array([_is_number(e) for e in english])[j]
        french_number = np.array([_is_number(f) for f in french])[k]
        orthographic = np.array([_orthographic(e, f) for e in english for f in french],
                                dtype=np.float64).reshape(m * n, 4)
        log_n = math.log1p(self.n_pairs_)
        log_english = np.array([math.log1p(self.english_counts_.get(e, 0)) for e in english])
        log_french = np.array([math.log1p(self.french_counts_.get(f, 0)) for f in french])
        columns = [
            np.ones(m * n),
            dice.ravel(),
            1.0 / rank_english.ravel(),
            1.0 / rank_french.ravel(),
            ((rank_english == 1) & (rank_french == 1) & (dice > 0)).ravel(),
            diagonal.ravel(),
            relative,
            relative**2,
            np.minimum(np.abs(j - k), _MAX_POSITION_DIFFERENCE) / _MAX_POSITION_DIFFERENCE,
            *orthographic.T,
            english_punct & french_punct,
            english_punct ^ french_punct,
            english_number & french_number,
            log_english[j] / log_n,
            log_french[k] / log_n,
            _ibm1_posteriors(self.translation_english_to_french_, english, french).ravel(),
            _ibm1_posteriors(self.translation_french_to_english_, french, english).T.ravel(),
        ]
        columns += [np.array([e == w for e in english])[j] for w in self.frequent_english_]
        columns += [np.array([f == w for f in french])[k] for w in self.frequent_french_]
        return np.column_stack(columns).astype(np.float64), edges, (m, n)


def _ibm1(pairs, n_iterations):
    """IBM Model 1 ``t(target | source)`` by EM, with a NULL source word (``None``).

    Uniform start over co-occurring words; every iteration spreads each target word over
    the sources of its sentence (plus NULL) in proportion to ``t`` and renormalises the
    expected counts per source word.
    """
    if n_iterations == 0:
        return {}
    keys, index = [], {}
    flat, column = [], []  # per (sentence, source incl. NULL, target) cell: key index, column id
    n_columns = 0
    for source, target in pairs:
        sources = [None] + source
        for t in target:
            for s in sources:
                key = (s, t)
                if key not in index:
                    index[key] = len(keys)
                    keys.append(key)
                flat.append(index[key])
                column.append(n_columns)
            n_columns += 1
    if not keys:
        return {}
    flat, column = np.array(flat), np.array(column)
    source_of = {s for s, _ in keys}
    source_id = {s: i for i, s in enumerate(source_of)}
    key_source = np.array([source_id[s] for s, _ in keys])
    table = np.ones(len(keys))
    for _ in range(n_iterations):
        cell = table[flat]
        posterior = cell / np.bincount(column, weights=cell, minlength=n_columns)[column]
        counts = np.bincount(flat, weights=posterior, minlength=len(keys))
        table = counts / np.bincount(key_source, weights=counts)[key_source]
    return dict(zip(keys, table.tolist()))


def _ibm1_posteriors(table, source, target):
    """``P(target k aligned to source j)`` under Model 1, shape ``(len(source), len(target))``."""
    if not table:
        return np.zeros((len(source), len(target)))
    t = np.array([[table.get((s, w), 0.0) for w in target] for s in source]).reshape(
        len(source), len(target))
    null = np.array([table.get((None, w), 0.0) for w in target])
    total = t.sum(axis=0) + null
    return np.divide(t, total, out=np.zeros_like(t), where=total > 0)


def _ranks(values, axis):
    """1-based rank of every entry along ``axis`` (1 = largest; ties share the best rank)."""
    if values.size == 0:
        return values.copy()
    moved = np.moveaxis(values, axis, -1)
    ranks = 1 + (moved[..., None, :] > moved[..., :, None]).sum(axis=-1)
    return np.moveaxis(ranks, -1, axis).astype(np.float64)


def _is_punctuation(token):
    return len(token) > 0 and all(c in string.punctuation or c in "«»" for c in token)


def _is_number(token):
    digits = token.replace(",", "").replace(".", "")
    return digits.isdigit()


def _orthographic(english, french):
    """exact match, shared 4-prefix, common prefix / longer length, 1 - edit distance ratio."""
    longer = max(len(english), len(french), 1)
    prefix = 0
    for a, b in zip(english, french):
        if a != b:
            break
        prefix += 1
    prefix_4 = len(english) >= 4 and len(french) >= 4 and prefix >= 4
    return (english == french, prefix_4, prefix / longer,
            1.0 - _levenshtein(english, french) / longer)


def _levenshtein(a, b):
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for jb, cb in enumerate(b, 1):
            current.append(min(previous[jb] + 1, current[jb - 1] + 1,
                               previous[jb - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def alignment_targets(X, links):
    """0/1 edge labels marking the given links, in the order of ``X``'s edges.

    Parameters
    ----------
    X : list of ``(edge_features, edges[, shape])``
        Matching inputs, e.g. from :meth:`AlignmentFeatureExtractor.transform`.
    links : list of (n_links, 2) int arrays
        ``(english, french)`` positions per sentence pair (e.g. the ``sure`` links of
        :func:`~sklearn_struct.datasets.load_hansards_alignments`).

    Returns
    -------
    y : list of int64 ndarray of shape (E_i,)
        1 for the edges that are links, 0 for the others.

    Raises
    ------
    ValueError
        If the lengths differ or a link is not a candidate edge of its example.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.datasets import alignment_targets
    >>> edges = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
    >>> X = [(np.ones((4, 1)), edges)]
    >>> alignment_targets(X, [np.array([[0, 0], [1, 1]])])
    [array([1, 0, 0, 1])]
    """
    if len(X) != len(links):
        raise ValueError(f"X has {len(X)} examples but links has {len(links)}.")
    y = []
    for i, (example, gold) in enumerate(zip(X, links)):
        edges = np.asarray(example[1], dtype=np.int64).reshape(-1, 2)
        gold = np.asarray(gold, dtype=np.int64).reshape(-1, 2)
        index = {(a, b): e for e, (a, b) in enumerate(edges.tolist())}
        labels = np.zeros(len(edges), dtype=np.int64)
        for a, b in gold.tolist():
            if (a, b) not in index:
                raise ValueError(f"example {i}: link ({a}, {b}) is not a candidate edge.")
            labels[index[(a, b)]] = 1
        y.append(labels)
    return y


def edges_to_links(X, y):
    """The ``(english, french)`` positions of the edges labelled 1, per example.

    Parameters
    ----------
    X : list of ``(edge_features, edges[, shape])``
        Matching inputs.
    y : list of 0/1 arrays of shape (E_i,)
        Edge labels, e.g. predictions of a matching model.

    Returns
    -------
    links : list of (n_links, 2) int64 ndarrays
        The linked ``(english, french)`` positions, as
        :func:`~sklearn_struct.metrics.alignment_error_rate` takes them.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.datasets import edges_to_links
    >>> edges = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
    >>> edges_to_links([(np.ones((4, 1)), edges)], [np.array([0, 1, 1, 0])])
    [array([[0, 1],
           [1, 0]])]
    """
    if len(X) != len(y):
        raise ValueError(f"X has {len(X)} examples but y has {len(y)}.")
    return [np.asarray(example[1], dtype=np.int64).reshape(-1, 2)[np.asarray(labels) == 1]
            for example, labels in zip(X, y)]
