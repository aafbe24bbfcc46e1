"""Turning token feature dicts into per-sequence sparse matrices for chain estimators."""

import math
from numbers import Integral, Number

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.feature_extraction import FeatureHasher
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ._tag_dictionary import TagDictionary

__all__ = ["DependencyTokenEncoder", "SequenceDictVectorizer", "TagDictionary",
           "column_window_features", "conll_token_features"]


class SequenceDictVectorizer(TransformerMixin, BaseEstimator):
    """Turn sequences of token feature dicts into one sparse matrix per sequence.

    The input is the format of sklearn-crfsuite: a list of sequences, each a list of
    dicts mapping feature names to values, one dict per token, e.g.
    ``{"bias": 1.0, "word.lower()": "the", "postag": "DT", "word.istitle()": False}``.
    A string (or UTF-8 ``bytes``) value ``v`` of feature ``f`` becomes the indicator
    feature ``"f=v"`` with value 1; a number (``bool``, ``int``, ``float``) is the value of
    feature ``f`` (``True``/``False`` are 1/0); a list, tuple or set of strings gives one
    indicator per string; a nested dict ``{"g": value}`` gives the features of its values
    under the names ``"f:g"``, as CRFsuite names them.  A list, tuple or 1-D array of numbers
    is a *dense block*, such as a word embedding: its ``d`` values are the features
    ``"f[0]"`` ... ``"f[d-1]"``, and every token that has ``f`` must give ``d`` values.
    The output is a list of CSR matrices (float64), one per sequence with one row
    per token -- the input of a chain estimator, so the vectorizer can stand first in a
    :class:`~sklearn.pipeline.Pipeline` (``transform`` only needs ``X``; labels pass by).

    Parameters
    ----------
    n_features : int, default=None
        ``None``: learn a vocabulary of every feature seen by ``fit``, sorted by name, so
        that column indices do not depend on the order of the data; features unseen at
        ``fit`` are ignored by ``transform``. An int: hash feature names into
        ``n_features`` columns with :class:`~sklearn.feature_extraction.FeatureHasher`
        (no vocabulary, nothing learned, colliding features add up).
    alternate_sign : bool, default=True
        With hashing only: give each feature the sign of a second hash (as
        ``FeatureHasher``), so that collisions cancel in expectation; ``False`` keeps all
        values as given (indicators stay non-negative).
    separator : str, default="="
        Separator between a feature name and a string value.
    min_freq : int, default=1
        Vocabulary mode only: keep the features that ``fit`` sees on at least this many
        tokens (CRFsuite's ``feature.minfreq``, counted per input feature).

    Attributes
    ----------
    vocabulary_ : dict
        Feature name -> column index (vocabulary mode only).
    feature_names_ : list of str
        Column names in column order (vocabulary mode only).
    dense_widths_ : dict
        Dense block name -> its number of values, as ``fit`` saw them.

    See Also
    --------
    conll_token_features : The standard token feature dicts of CoNLL tasks.
    sklearn.feature_extraction.DictVectorizer : The same for flat (non-sequence) samples.

    Examples
    --------
    >>> from sklearn_struct.preprocessing import SequenceDictVectorizer
    >>> X = [[{"w": "the", "len": 3}, {"w": "cat", "len": 3}], [{"w": "sat"}]]
    >>> vec = SequenceDictVectorizer().fit(X)
    >>> vec.get_feature_names_out().tolist()
    ['len', 'w=cat', 'w=sat', 'w=the']
    >>> [m.shape for m in vec.transform(X)]
    [(2, 4), (1, 4)]
    >>> vec.transform([[{"w": "dog", "len": 3}]])[0].toarray()
    array([[3., 0., 0., 0.]])

    A dense block (an embedding of two values) beside the indicators:

    >>> X = [[{"w": "the", "emb": [0.5, -1.0]}, {"w": "cat", "emb": [0.25, 2.0]}]]
    >>> vec = SequenceDictVectorizer().fit(X)
    >>> vec.get_feature_names_out().tolist()
    ['emb[0]', 'emb[1]', 'w=cat', 'w=the']
    >>> vec.transform(X)[0].toarray()
    array([[ 0.5 , -1.  ,  0.  ,  1.  ],
           [ 0.25,  2.  ,  1.  ,  0.  ]])
    """

    _parameter_constraints = {
        "n_features": [None, Interval(Integral, 1, np.iinfo(np.int32).max, closed="both")],
        "alternate_sign": ["boolean"],
        "separator": [str],
        "min_freq": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, n_features=None, alternate_sign=True, separator="=", min_freq=1):
        self.n_features = n_features
        self.alternate_sign = alternate_sign
        self.separator = separator
        self.min_freq = min_freq

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Learn the vocabulary (nothing to learn when hashing).

        Parameters
        ----------
        X : list of list of dict
            Sequences of token feature dicts.
        y : ignored
            Present for the :class:`~sklearn.pipeline.Pipeline` API.

        Returns
        -------
        self : SequenceDictVectorizer
            The fitted vectorizer.
        """
        self._fit_transform(X)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def fit_transform(self, X, y=None):
        """Learn the vocabulary and vectorize each sequence, in one pass over ``X``.

        Parameters
        ----------
        X : list of list of dict
            Sequences of token feature dicts (a dict per token).
        y : ignored
            As in :meth:`fit`.

        Returns
        -------
        Xt : list of scipy.sparse.csr_matrix of shape (T_i, n_features_out)
            Float64 matrices, one per sequence, one row per token.
        """
        return self._fit_transform(X)

    def transform(self, X):
        """Vectorize each sequence.

        Parameters
        ----------
        X : list of list of dict
            Sequences of token feature dicts.

        Returns
        -------
        Xt : list of scipy.sparse.csr_matrix of shape (T_i, n_features_out)
            Float64 matrices, one per sequence, one row per token.
        """
        check_is_fitted(self)
        lengths = _sequence_lengths(X)
        widths = dict(getattr(self, "dense_widths_", {}))  # (hashing works unfitted)
        if self.n_features is None:
            stacked = self._vectorize(X, self.vocabulary_, widths, grow=False)
        else:
            stacked = self._hash(X, int(lengths.sum()), widths)
        return _split_rows(stacked, lengths)

    def _fit_transform(self, X):
        lengths = _sequence_lengths(X)
        widths = {}
        if self.n_features is not None:
            if self.min_freq > 1:
                raise ValueError("min_freq needs the vocabulary (n_features=None): hashed "
                                 "columns keep no counts of the features in them.")
            stacked = self._hash(X, int(lengths.sum()), widths)
            self.dense_widths_ = widths
            return _split_rows(stacked, lengths)
        vocabulary = {}
        stacked = self._vectorize(X, vocabulary, widths, grow=True)
        names = np.array(list(vocabulary), dtype=object)
        # the columns of the features seen on at least min_freq tokens ...
        kept = np.flatnonzero(np.bincount(stacked.indices, minlength=len(names))
                              >= self.min_freq)
        # ... renumbered by sorted name, so that the vocabulary does not depend on the
        # order of the data
        kept = kept[np.argsort(names[kept].astype(str), kind="stable")]
        rank = np.full(len(names), -1, dtype=stacked.indices.dtype)
        rank[kept] = np.arange(len(kept))
        stacked = _renumbered_columns(stacked, rank, len(kept))
        self.feature_names_ = names[kept].tolist()
        self.vocabulary_ = {name: index for index, name in enumerate(self.feature_names_)}
        self.dense_widths_ = {name: width for name, width in widths.items()
                              if f"{name}[0]" in self.vocabulary_}
        return _split_rows(stacked, lengths)

    def _vectorize(self, X, vocabulary, widths, grow):
        """One CSR matrix of all tokens; ``grow`` adds unseen names to ``vocabulary``."""
        keys, values, indptr = [], [], [0]
        dense = DenseBlocks(widths, grow)
        for sequence_index, sequence in enumerate(X):
            for token_index, token in enumerate(sequence):
                _token_items(token, sequence_index, token_index, self.separator, dense,
                             keys, values)
                indptr.append(len(keys))
                dense.next_token()
        n_tokens = len(indptr) - 1
        # the names looked up in one sweep, in reading order (a new name's column is the
        # next one): faster than a lookup and two appends as each is read
        if grow:
            columns = [vocabulary.setdefault(key, len(vocabulary)) for key in keys]
        else:
            column_of = vocabulary.get
            columns = [column_of(key, -1) for key in keys]
        indices = np.asarray(columns, dtype=np.int64)
        data = np.asarray(values, dtype=np.float64)
        indptr = np.asarray(indptr, dtype=np.int64)
        known = indices >= 0  # (all of them when growing)
        if not known.all():
            indptr = np.concatenate([[0], np.cumsum(known)])[indptr]
            indices, data = indices[known], data[known]
        blocks = dense.matrix(n_tokens, vocabulary, grow)  # (names its columns first)
        stacked = sp.csr_matrix((data, indices.astype(np.int32), indptr),
                                shape=(n_tokens, len(vocabulary)))
        if blocks is not None:
            stacked = (stacked + blocks).tocsr()
        stacked.sum_duplicates()
        stacked.eliminate_zeros()
        return stacked

    def _hash(self, X, n_tokens, widths):
        if n_tokens == 0:
            return sp.csr_matrix((0, self.n_features), dtype=np.float64)
        hasher = FeatureHasher(
            n_features=self.n_features,
            input_type="pair",
            alternate_sign=self.alternate_sign,
            dtype=np.float64,
        )
        dense = DenseBlocks(widths, grow=True)

        def pairs(token, sequence_index, token_index):
            keys, values = [], []
            _token_items(token, sequence_index, token_index, self.separator, dense, keys,
                         values)
            items = list(zip(keys, values))
            items.extend(dense.token_pairs())
            dense.next_token()
            return items

        stacked = hasher.transform(
            pairs(token, sequence_index, token_index)
            for sequence_index, sequence in enumerate(X)
            for token_index, token in enumerate(sequence)
        ).tocsr()
        stacked.sum_duplicates()
        stacked.eliminate_zeros()
        return stacked

    def get_feature_names_out(self, input_features=None):
        """Names of the output columns (vocabulary mode).

        Parameters
        ----------
        input_features : None
            Unused; present for API consistency.

        Returns
        -------
        feature_names_out : ndarray of str objects
            The column names, in column order (``"f=v"`` for string values).

        Raises
        ------
        AttributeError
            With hashing (``n_features`` set): hashed columns have no names.
        """
        check_is_fitted(self)
        if self.n_features is not None:
            raise AttributeError(
                "SequenceDictVectorizer with hashing (n_features set) has no feature names"
            )
        return np.asarray(self.feature_names_, dtype=object)

    def __sklearn_is_fitted__(self):
        # Hashing learns nothing: it is ready as soon as it is built.
        return self.n_features is not None or hasattr(self, "vocabulary_")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.dict = True
        tags.requires_fit = self.n_features is None
        return tags


def _sequence_lengths(X):
    """Number of tokens of each sequence, after checking that ``X`` is a list of lists."""
    if isinstance(X, (str, bytes, dict)) or not hasattr(X, "__len__"):
        raise TypeError(
            "X must be a list of sequences, each a list of token feature dicts; got "
            f"{type(X).__name__}"
        )
    lengths = np.empty(len(X), dtype=np.int64)
    for index, sequence in enumerate(X):
        if isinstance(sequence, (str, bytes, dict)) or not hasattr(sequence, "__len__"):
            raise TypeError(
                f"X[{index}] must be a list of token feature dicts, got {type(sequence).__name__}"
            )
        lengths[index] = len(sequence)
    return lengths


def _split_rows(stacked, lengths):
    """``stacked`` (CSR) cut into consecutive blocks of ``lengths`` rows, each a CSR matrix on
    views of its arrays (scipy's row slicing copies them, at several times the cost)."""
    offsets = np.concatenate([[0], np.cumsum(lengths)]).tolist()
    indptr, indices, data = stacked.indptr, stacked.indices, stacked.data
    blocks = []
    for start, stop in zip(offsets[:-1], offsets[1:]):
        first, last = indptr[start], indptr[stop]
        blocks.append(sp.csr_matrix((data[first:last], indices[first:last],
                                     indptr[start:stop + 1] - first),
                                    shape=(stop - start, stacked.shape[1])))
    return blocks


def _renumbered_columns(stacked, rank, n_columns):
    """``stacked`` with column ``j`` moved to ``rank[j]``, and dropped where it is -1."""
    if (rank >= 0).all():  # (in place: no copy of the entries)
        stacked.indices = rank[stacked.indices]
        stacked.has_sorted_indices = False
        stacked.sort_indices()
        stacked.resize(stacked.shape[0], n_columns)
        return stacked
    coo = stacked.tocoo()
    new = rank[coo.col]
    keep = new >= 0
    out = sp.csr_matrix((coo.data[keep], (coo.row[keep], new[keep])),
                        shape=(stacked.shape[0], n_columns))
    out.sort_indices()
    return out


class DenseBlocks:
    """The dense blocks (lists of numbers) of the tokens read in turn, and their widths.

    ``widths`` (name -> number of values) is shared with the caller: ``fit`` fills it
    (``grow``), and ``transform`` holds every token to it and ignores blocks it lacks.
    """

    def __init__(self, widths, grow):
        self.widths, self.grow = widths, grow
        self.row = 0
        self.rows, self.names, self.values = [], [], []

    def add(self, name, value, where):
        values = np.asarray(value, dtype=np.float64)
        if values.ndim != 1:
            raise ValueError(f"{where} is a dense block of shape {values.shape}; a dense "
                             "block is a flat list of numbers")
        if not np.isfinite(values).all():
            raise ValueError(f"{where} has non-finite values")
        width = self.widths.get(name)
        if width is None:
            if not self.grow:
                return  # a block that fit never saw: ignored, as an unseen feature is
            width = self.widths[name] = len(values)
        if len(values) != width:
            seen = "earlier tokens gave" if self.grow else "the vectorizer was fitted with"
            raise ValueError(f"{where} is a dense block of {len(values)} values; {seen} "
                             f"{width}")
        self.rows.append(self.row)
        self.names.append(name)
        self.values.append(values)

    def next_token(self):
        self.row += 1

    def token_pairs(self):
        """The blocks added since the last call as ``(name[k], value)`` pairs (hashing)."""
        pairs = [(f"{name}[{k}]", float(v)) for name, values in zip(self.names, self.values)
                 for k, v in enumerate(values)]
        self.rows, self.names, self.values = [], [], []
        return pairs

    def matrix(self, n_tokens, vocabulary, grow):
        """The blocks as a CSR matrix over ``vocabulary``'s columns (``grow``: adding the
        blocks' columns to it), or None without blocks."""
        if not self.names:
            return None
        columns = {}
        for name in sorted(set(self.names)):
            keys = [f"{name}[{k}]" for k in range(self.widths[name])]
            columns[name] = np.array([vocabulary.setdefault(key, len(vocabulary)) if grow
                                      else vocabulary.get(key, -1) for key in keys])
        rows = np.repeat(self.rows, [len(values) for values in self.values])
        cols = np.concatenate([columns[name] for name in self.names])
        data = np.concatenate(self.values)
        keep = cols >= 0  # (columns that min_freq dropped)
        return sp.csr_matrix((data[keep], (rows[keep], cols[keep])),
                             shape=(n_tokens, len(vocabulary)))


def _token_items(token, sequence_index, token_index, separator, dense, keys, values):
    """Append the feature names of one token dict to ``keys`` and their values to
    ``values``, validated (the common types first, fast); its dense blocks go to ``dense``."""
    if type(token) is not dict and not isinstance(token, dict):
        raise TypeError(
            f"X[{sequence_index}][{token_index}] must be a dict of token features, got "
            f"{type(token).__name__}"
        )
    for name, value in token.items():
        kind = type(value)
        if type(name) is not str and not isinstance(name, str):
            raise TypeError(
                f"X[{sequence_index}][{token_index}]: feature names must be str, got {name!r}"
            )
        if kind is str:
            keys.append(name + separator + value)
            values.append(1.0)
        elif kind is bool:
            if value:  # (False is a zero, which the matrix would drop)
                keys.append(name)
                values.append(1.0)
        elif kind is int:
            keys.append(name)
            values.append(float(value))
        elif kind is float and value - value == 0.0:  # finite
            keys.append(name)
            values.append(value)
        elif kind is list and all(type(v) is str for v in value):  # (empty: no feature)
            for v in value:
                keys.append(name + separator + v)
                values.append(1.0)
        elif isinstance(value, str):  # a subclass: numpy.str_, a label from an array
            keys.append(name + separator + value)
            values.append(1.0)
        else:
            _other_items(keys, values, name, value, f"X[{sequence_index}][{token_index}]",
                         separator, dense)


def _other_items(keys, values, name, value, token, separator, dense):
    """Append the features of a value of a type other than str, bool, int or finite float
    to ``keys`` and ``values`` (its dense blocks to ``dense``)."""
    where = f"{token}: feature {name!r}"
    if isinstance(value, bytes):
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"{where} holds bytes that are not UTF-8") from None
    if isinstance(value, str):
        keys.append(name + separator + value)
        values.append(1.0)
    elif isinstance(value, Number) and not isinstance(value, complex):
        value = float(value)
        if not math.isfinite(value):
            raise ValueError(f"{where} has the non-finite value {value}")
        keys.append(name)
        values.append(value)
    elif isinstance(value, dict):  # nested: CRFsuite's "name:key" features
        for key, inner in value.items():
            if not isinstance(key, str):
                raise TypeError(f"{where}: nested feature names must be str, got {key!r}")
            _other_items(keys, values, f"{name}:{key}", inner, token, separator, dense)
    elif isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        if value.size:
            dense.add(name, value, where)
    elif isinstance(value, (set, frozenset)) and all(isinstance(v, str) for v in value):
        keys.extend(name + separator + v for v in value)
        values.extend([1.0] * len(value))
    elif isinstance(value, (list, tuple, np.ndarray)) and len(value) and all(
            isinstance(v, str) for v in value):
        keys.extend(name + separator + v for v in value)
        values.extend([1.0] * len(value))
    elif isinstance(value, (list, tuple, np.ndarray)) and all(
            isinstance(v, Number) and not isinstance(v, complex) for v in value):
        if len(value):
            dense.add(name, value, where)
    else:
        raise TypeError(
            f"{where} has a value of type {type(value).__name__}; expected str, bytes, a "
            "number, a bool, a list of str, a list of numbers (a dense block) or a dict"
        )


def _word_shape(word):
    """Letters to ``X``/``x``, digits to ``d``, runs of the same class collapsed."""
    shape = []
    for char in word:
        if char.isupper():
            code = "X"
        elif char.islower():
            code = "x"
        elif char.isdigit():
            code = "d"
        else:
            code = char
        if not shape or shape[-1] != code:
            shape.append(code)
    return "".join(shape)


def _mark_boundaries(features, t, n_tokens, first, last):
    """Flag the first and the last token of a sentence (the features ``first`` and ``last``)."""
    if t == 0:
        features[first] = True
    if t == n_tokens - 1:
        features[last] = True


def _word_features(word, pos, prefix):
    keys = _WORD_KEYS.get(prefix)
    if keys is None:  # (named once per prefix, not once per word)
        keys = _WORD_KEYS[prefix] = tuple(f"{prefix}{name}" for name in (
            "word.lower", "word.istitle", "word.isupper", "pos", "pos[:2]"))
    features = {keys[0]: word.lower(), keys[1]: word.istitle(), keys[2]: word.isupper()}
    if pos is not None:
        features[keys[3]] = pos
        features[keys[4]] = pos[:2]
    return features


_WORD_KEYS = {}


def conll_token_features(words, pos_tags=None, window=1):
    """The standard token feature dicts for CoNLL chunking and named-entity tagging.

    For each token: a bias, the word, its lower case, its 2- and 3-letter suffixes, its
    shape (``"Xx"``, ``"d.d"``, ...), whether it is upper case, title case or digits, its
    POS tag and the tag's first two letters; and for each neighbour within ``window``
    tokens (prefix ``"-1:"``, ``"+1:"``, ...): its lower case, title/upper case and POS
    tags. ``BOS`` / ``EOS`` mark the first and last token. Feed the result to
    :class:`SequenceDictVectorizer`.

    Parameters
    ----------
    words : sequence of str
        The tokens of one sentence.
    pos_tags : sequence of str, default=None
        Their part-of-speech tags (same length), or None to leave POS features out.
    window : int, default=1
        How many neighbours on each side contribute features.

    Returns
    -------
    features : list of dict
        One dict per token.

    Examples
    --------
    >>> from sklearn_struct.preprocessing import conll_token_features
    >>> features = conll_token_features(["He", "ran"], ["PRP", "VBD"])
    >>> features[0]["word.lower"], features[0]["+1:pos"], features[0]["BOS"]
    ('he', 'VBD', True)
    """
    words = list(words)
    if pos_tags is not None:
        pos_tags = list(pos_tags)
        if len(pos_tags) != len(words):
            raise ValueError(f"{len(words)} words but {len(pos_tags)} POS tags")
    if not isinstance(window, Integral) or window < 0:
        raise ValueError(f"window must be a non-negative int, got {window!r}")
    n_words = len(words)
    sentence = []
    for t, word in enumerate(words):
        pos = None if pos_tags is None else pos_tags[t]
        features = {
            "bias": 1.0,
            "word": word,
            "suffix3": word[-3:],
            "suffix2": word[-2:],
            "shape": _word_shape(word),
            "word.isdigit": word.isdigit(),
        }
        features.update(_word_features(word, pos, ""))
        for offset in range(1, window + 1):
            if t - offset >= 0:
                neighbour_pos = None if pos_tags is None else pos_tags[t - offset]
                features.update(_word_features(words[t - offset], neighbour_pos, f"-{offset}:"))
            if t + offset < n_words:
                neighbour_pos = None if pos_tags is None else pos_tags[t + offset]
                features.update(_word_features(words[t + offset], neighbour_pos, f"+{offset}:"))
        _mark_boundaries(features, t, n_words, "BOS", "EOS")
        sentence.append(features)
    return sentence


def column_window_features(columns, names=None, window=2):
    """Token feature dicts from the columns of a sentence, by CRFsuite's window templates.

    The templates of CRFsuite's chunking example, for any number of columns
    and any window: for every token, a bias; for every column ``a`` and
    offset ``i`` in ``-window..window``, the unigram ``a[i]`` (the value of
    column ``a`` at token ``t + i``) and the bigram ``a[i]|a[i+1]``; for
    every column but the first (tags, with few values) also the trigram
    ``a[i]|a[i+1]|a[i+2]``.  A template reaching outside the sentence is
    left out; ``__BOS__`` and ``__EOS__`` mark the first and last token.
    Feed the result to :class:`SequenceDictVectorizer`.

    Parameters
    ----------
    columns : sequence of sequence of str
        The attribute columns of one sentence, each with one value per token
        (for CoNLL-2000: the words, then the POS tags).
    names : sequence of str, default=None
        Names of the columns in the feature names; default ``c0``, ``c1``, ...
    window : int, default=2
        Offsets ``-window..window`` around each token.

    Returns
    -------
    features : list of dict
        One dict per token, e.g. ``{"w[0]": "He", "w[0]|w[1]": "He|ran", ...}``.

    See Also
    --------
    conll_token_features : Word-shape features (suffixes, case) in a window.

    Examples
    --------
    >>> from sklearn_struct.preprocessing import column_window_features
    >>> features = column_window_features([["He", "ran"], ["PRP", "VBD"]], ["w", "pos"],
    ...                                   window=1)
    >>> sorted(features[0].items())  # doctest: +NORMALIZE_WHITESPACE
    [('__BOS__', True), ('bias', 1.0), ('pos[0]', 'PRP'), ('pos[0]|pos[1]', 'PRP|VBD'),
     ('pos[1]', 'VBD'), ('w[0]', 'He'), ('w[0]|w[1]', 'He|ran'), ('w[1]', 'ran')]
    """
    columns = [list(column) for column in columns]
    names = [f"c{index}" for index in range(len(columns))] if names is None else list(names)
    if len(names) != len(columns):
        raise ValueError(f"{len(columns)} columns but {len(names)} names")
    if not isinstance(window, Integral) or window < 0:
        raise ValueError(f"window must be a non-negative int, got {window!r}")
    n_tokens = len(columns[0]) if columns else 0
    for name, column in zip(names, columns):
        if len(column) != n_tokens:
            raise ValueError(f"column {name!r} has {len(column)} values, the first column "
                             f"{n_tokens}")
    sentence = []
    for t in range(n_tokens):
        features = {"bias": 1.0}
        for index, (name, column) in enumerate(zip(names, columns)):
            for width in (1, 2) if index == 0 else (1, 2, 3):
                for offset in range(-window, window - width + 2):
                    if 0 <= t + offset and t + offset + width <= n_tokens:
                        key = "|".join(f"{name}[{offset + k}]" for k in range(width))
                        features[key] = "|".join(column[t + offset:t + offset + width])
        _mark_boundaries(features, t, n_tokens, "__BOS__", "__EOS__")
        sentence.append(features)
    return sentence


class DependencyTokenEncoder(TransformerMixin, BaseEstimator):
    """Words and tags of sentences to the token attribute ids of a dependency parser.

    Turns sentences into the input of
    :class:`~sklearn_struct.structures.DependencyTreeStructure`: one ``(n_words, 4)``
    int64 array per sentence with the ids of each word's form, POS tag and
    5-character prefix (words longer than 5 characters; shorter words get the
    reserved "no prefix" id), from vocabularies fitted on the training
    sentences, and a punctuation flag.  Values unseen in training map to id 0.

    Parameters
    ----------
    pos : {"upos", "xpos", "both"}, default="upos"
        The tag column(s) of the POS attribute.  "both": UPOS as the POS and
        XPOS as a second tag set, so that every POS template of the parser is
        instantiated with each (gold UPOS+XPOS).
    lowercase : bool, default=True
        Lower-case words (and prefixes) before looking them up.
    min_count : int, default=1
        Words seen fewer times in training are unknown (id 0).

    Attributes
    ----------
    vocabulary_ : dict of str to int
        Ids of the words, tags (prefixed ``"p:"``) and prefixes (``"x:"``).

    Examples
    --------
    >>> from sklearn_struct.preprocessing import DependencyTokenEncoder
    >>> sentences = [{"form": ["Dogs", "bark"], "upos": ["NOUN", "VERB"]}]
    >>> encoder = DependencyTokenEncoder().fit(sentences)
    >>> encoder.transform([{"form": ["dogs", "meow"], "upos": ["NOUN", "VERB"]}])[0].shape
    (2, 4)
    """

    _parameter_constraints = {
        "pos": [StrOptions({"upos", "xpos", "both"})],
        "lowercase": ["boolean"],
        "min_count": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, pos="upos", lowercase=True, min_count=1):
        self.pos = pos
        self.lowercase = lowercase
        self.min_count = min_count

    def _sentences(self, X):
        """A list of (forms, tags) pairs from sentence dicts or a ``load_conllu`` Bunch."""
        if isinstance(X, dict) and "form" in X and isinstance(X["form"], list) and X["form"] \
                and isinstance(X["form"][0], list):
            X = [{key: X[key][i] for key in ("form", "upos", "xpos") if key in X}
                 for i in range(len(X["form"]))]
        if isinstance(X, (str, bytes, dict)) or not hasattr(X, "__len__"):
            raise TypeError("X must be a list of sentences, each a dict with 'form' and tag "
                            "lists (or the Bunch returned by load_conllu).")
        columns = ("upos", "xpos") if self.pos == "both" else (self.pos,)
        pairs = []
        for i, sentence in enumerate(X):
            if not isinstance(sentence, dict) or "form" not in sentence:
                raise TypeError(f"sentence {i}: expected a dict with a 'form' list, got "
                                f"{type(sentence).__name__}.")
            forms = list(sentence["form"])
            missing = [c for c in columns if c not in sentence]
            if missing:
                raise ValueError(f"sentence {i}: no {missing[0]!r} list (pos={self.pos!r}).")
            tags = [list(sentence[c]) for c in columns]
            if any(len(t) != len(forms) for t in tags) or not forms:
                raise ValueError(f"sentence {i}: {len(forms)} forms but tag lists of lengths "
                                 f"{[len(t) for t in tags]}; expected equal, non-zero lengths.")
            words = [w.lower() if self.lowercase else w for w in forms]
            pairs.append((words, list(zip(*tags))))
        return pairs

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit the vocabularies of words, tags and prefixes.

        Parameters
        ----------
        X : list of dict, or Bunch
            Training sentences: dicts with ``"form"`` and ``"upos"`` and/or
            ``"xpos"`` lists, or the Bunch returned by
            :func:`~sklearn_struct.datasets.load_conllu`.
        y : None
            Ignored.

        Returns
        -------
        self : DependencyTokenEncoder
            The fitted encoder.
        """
        from .structures.dependency import FIRST_ID

        counts = {}
        vocabulary = {}
        for words, tags in self._sentences(X):
            for word, word_tags in zip(words, tags):
                counts[word] = counts.get(word, 0) + 1
                for tag in word_tags:
                    vocabulary.setdefault("p:" + tag, len(vocabulary) + FIRST_ID)
                if len(word) > 5:
                    vocabulary.setdefault("x:" + word[:5], len(vocabulary) + FIRST_ID)
        for word, count in counts.items():
            if count >= self.min_count:
                vocabulary["w:" + word] = len(vocabulary) + FIRST_ID
        self.vocabulary_ = vocabulary
        return self

    def transform(self, X):
        """Token attribute ids of sentences.

        Parameters
        ----------
        X : list of dict, or Bunch
            Sentences in the form given to :meth:`fit`.

        Returns
        -------
        attributes : list of ndarray of int64 of shape (n_words_i, 4) or (n_words_i, 5)
            ``(word, POS, prefix)`` ids per word, a 1 for words made of
            punctuation characters only (the CoNLL-X rule), else 0, and with
            ``pos="both"`` the XPOS id.
        """
        from .metrics import is_punctuation
        from .structures.dependency import NO_PREFIX, POS, PREFIX, PUNCTUATION, SECOND_POS, WORD

        check_is_fitted(self)
        vocabulary = self.vocabulary_
        out = []
        for words, tags in self._sentences(X):
            rows = np.empty((len(words), 3 + len(tags[0])), dtype=np.int64)
            for k, (word, word_tags) in enumerate(zip(words, tags)):
                rows[k, WORD] = vocabulary.get("w:" + word, 0)
                rows[k, POS] = vocabulary.get("p:" + word_tags[0], 0)
                rows[k, PREFIX] = (vocabulary.get("x:" + word[:5], 0) if len(word) > 5
                                   else NO_PREFIX)
                rows[k, PUNCTUATION] = is_punctuation(word)
                if len(word_tags) == 2:
                    rows[k, SECOND_POS] = vocabulary.get("p:" + word_tags[1], 0)
            out.append(rows)
        return out
