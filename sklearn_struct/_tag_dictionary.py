"""A tag dictionary: the labels seen with each word, as constraints for prediction."""

from collections import Counter, defaultdict
from numbers import Integral

from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from .datasets._io import check_file, iter_lines, malformed

__all__ = ["TagDictionary"]


class TagDictionary(BaseEstimator):
    """The labels seen with each frequent word in training, for ``allowed_labels``.

    A word seen at least ``min_count`` times in the training sequences may take only
    the labels it was seen with; every other token may take any label.  Its
    :meth:`allowed_labels` are the ``allowed_labels`` of a sequence model's
    ``predict``, ``predict_marginals``, ``predict_k_best`` and ``sample_y``.  A
    dictionary also reads and writes a lexicon file, the form that the command
    line's ``tag --allowed-labels`` takes.  Read more in :ref:`constraints_at_prediction`.

    Parameters
    ----------
    min_count : int, default=5
        A word seen fewer times is left free: a dictionary of rare words would forbid
        their unseen labels on too little evidence.
    lowercase : bool, default=False
        Whether words are looked up in lower case.

    Attributes
    ----------
    labels_ : dict of str to list
        The sorted labels of every frequent word.

    Examples
    --------
    >>> from sklearn_struct.preprocessing import TagDictionary
    >>> words = [["the", "dog", "runs"], ["the", "runs"]]
    >>> tags = [["DT", "NN", "VBZ"], ["DT", "NNS"]]
    >>> dictionary = TagDictionary(min_count=2).fit(words, tags)
    >>> dictionary.labels_
    {'the': ['DT'], 'runs': ['NNS', 'VBZ']}
    >>> dictionary.allowed_labels([["the", "cat"]])
    [[{'DT'}, None]]
    """

    _parameter_constraints = {"min_count": [Interval(Integral, 1, None, closed="left")],
                              "lowercase": ["boolean"]}

    def __init__(self, min_count=5, lowercase=False):
        self.min_count = min_count
        self.lowercase = lowercase

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Learn the labels of the frequent words.

        Parameters
        ----------
        X : list of list of str
            The words of every training sequence.
        y : list of list
            Their labels, one per word.

        Returns
        -------
        self : TagDictionary
            The fitted dictionary.
        """
        words = self._check_words(X, "X")
        if not isinstance(y, (list, tuple)) or len(y) != len(words):
            raise ValueError(f"TagDictionary.fit: y must be a list of {len(words)} label "
                             f"sequences, one per sequence of X.")
        counts, seen = Counter(), defaultdict(set)
        for i, (sequence, labels) in enumerate(zip(words, y)):
            if isinstance(labels, str):
                raise TypeError(f"TagDictionary.fit: the labels of sequence {i} must be a "
                                f"list, one per word; got the string {labels!r}.")
            if len(labels) != len(sequence):
                raise ValueError(f"TagDictionary.fit: sequence {i} has {len(sequence)} words "
                                 f"but {len(labels)} labels.")
            counts.update(sequence)
            for word, label in zip(sequence, labels):
                seen[word].add(label)
        self.labels_ = {word: sorted(seen[word]) for word, n in counts.items()
                        if n >= self.min_count}
        return self

    def allowed_labels(self, X):
        """Per sequence and word, the set of its labels, or ``None`` (any label).

        Parameters
        ----------
        X : list of list of str
            The words of every sequence.

        Returns
        -------
        allowed_labels : list of list
            In the form that ``predict(X, allowed_labels=...)`` takes.
        """
        check_is_fitted(self, "labels_")
        labels = self.labels_
        return [[set(labels[word]) if word in labels else None for word in sequence]
                for sequence in self._check_words(X, "X")]

    def _check_words(self, X, name):
        if not isinstance(X, (list, tuple)):
            raise TypeError(f"TagDictionary: {name} must be a list of word sequences, got "
                            f"{type(X).__name__}.")
        words = []
        for i, sequence in enumerate(X):
            if isinstance(sequence, str) or not all(isinstance(w, str) for w in sequence):
                raise TypeError(f"TagDictionary: sequence {i} of {name} must be a list of "
                                "str words.")
            words.append([w.lower() for w in sequence] if self.lowercase else list(sequence))
        return words

    @classmethod
    def read(cls, path, lowercase=False, classes=None):
        """Read a dictionary from a lexicon file.

        Parameters
        ----------
        path : str or path-like
            A file of lines ``word label [label ...]``, whitespace-separated; ``#``
            starts a comment line.
        lowercase : bool, default=False
            Whether words are looked up in lower case.
        classes : list, default=None
            The labels a model knows: a label outside them is refused, naming the line.

        Returns
        -------
        dictionary : TagDictionary
            The fitted dictionary of the lexicon.
        """
        path = check_file(path)
        labels = {}
        for line_number, line in iter_lines(path):
            fields = line.split()
            if not fields or fields[0].startswith("#"):
                continue
            if len(fields) < 2:
                raise malformed(path, line_number, f"word {fields[0]!r} has no label; "
                                "expected 'word label [label ...]'")
            word = fields[0].lower() if lowercase else fields[0]
            if word in labels:
                raise malformed(path, line_number, f"word {word!r} is listed twice")
            unknown = [label for label in fields[1:] if classes is not None
                       and label not in set(classes)]
            if unknown:
                raise malformed(path, line_number, f"label {unknown[0]!r} of word {word!r} is "
                                f"not one of the model's labels {list(classes)}")
            labels[word] = sorted(set(fields[1:]))
        dictionary = cls(lowercase=lowercase)
        dictionary.labels_ = labels
        return dictionary

    def write(self, path):
        """Write the lexicon file that :meth:`read` reads.

        Parameters
        ----------
        path : str or path-like
            The file to write.
        """
        check_is_fitted(self, "labels_")
        for word, labels in self.labels_.items():
            if any(len(str(item).split()) != 1 for item in (word, *labels)):
                raise ValueError(f"TagDictionary.write: word {word!r} or one of its labels "
                                 f"{labels} is empty or holds whitespace, which a lexicon "
                                 "line cannot.")
        with open(path, "w", encoding="utf-8") as out:
            for word, labels in self.labels_.items():
                out.write(" ".join([word, *map(str, labels)]) + "\n")
