"""CoNLL-U treebanks (Universal Dependencies) and dependency-tree helpers."""

import re

import numpy as np
from sklearn.utils import Bunch

from ._io import check_file, iter_lines, malformed

__all__ = ["ConlluSentence", "check_heads", "filter_projective", "is_projective", "load_conllu",
           "projectivize", "read_conllu_sentences"]

COLUMNS = ("id", "form", "lemma", "upos", "xpos", "feats", "head", "deprel", "deps", "misc")
#: Columns whose ``_`` is a value, the empty list (a word without features), by the
#: CoNLL-U format; in the others ``_`` says the annotation is not available.
EMPTY_LIST_COLUMNS = ("feats", "misc")


def load_conllu(path, *, encoding="utf-8"):
    """Load a CoNLL-U file (Universal Dependencies): words and their basic dependency trees.

    Multiword-token lines (ids such as ``3-4``) and empty nodes (``5.1``) are
    skipped, which leaves the basic tree over the syntactic words.  Gzip files
    are decompressed transparently.

    Parameters
    ----------
    path : str or path-like
        The ``.conllu`` file (plain text or gzip).
    encoding : str, default="utf-8"
        Text encoding of the file (a UTF-8 byte-order mark at its start is dropped).

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        ``form``, ``lemma``, ``upos``, ``xpos``, ``feats`` and ``deprel``: one list of str
        per sentence; ``head``: one int64 array per sentence (``head[m - 1]`` is
        the head of word ``m``, 0 the root); ``sent_id`` and ``text``: the
        sentence comments, ``None`` where absent.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If a line has other than 10 tab-separated columns, word ids do not run
        ``1..n``, a head is not an integer in ``0..n``, or a sentence is not a
        tree (a cycle); the message names the file and the line.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from sklearn_struct.datasets import load_conllu
    >>> lines = ["# sent_id = s1", "1-2\\tdon't\\t_\\t_\\t_\\t_\\t_\\t_\\t_\\t_",
    ...          "1\\tdo\\tdo\\tAUX\\tVBP\\t_\\t3\\taux\\t_\\t_",
    ...          "2\\tn't\\tnot\\tPART\\tRB\\t_\\t3\\tadvmod\\t_\\t_",
    ...          "3\\tgo\\tgo\\tVERB\\tVB\\t_\\t0\\troot\\t_\\t_", ""]
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = Path(folder) / "tiny.conllu"
    ...     _ = path.write_text("\\n".join(lines) + "\\n")
    ...     data = load_conllu(path)
    >>> data.form, data.head[0].tolist(), data.sent_id
    ([['do', "n't", 'go']], [3, 3, 0], ['s1'])
    """
    path = check_file(path)
    keys = ("form", "lemma", "upos", "xpos", "feats", "deprel")
    data = Bunch(**{key: [] for key in keys}, head=[], sent_id=[], text=[])
    for sentence in read_conllu_sentences(path, encoding=encoding):
        if not sentence.words:
            continue
        heads = []
        for line_number, fields in sentence.words:
            if not _HEAD.fullmatch(fields[6]):
                raise malformed(path, line_number, f"head {fields[6]!r} is not an integer "
                                "(this file has no trees?)")
            heads.append(int(fields[6]))
        heads = np.array(heads, dtype=np.int64)
        n = len(heads)
        bad = np.flatnonzero((heads < 0) | (heads > n))
        if bad.size:
            raise malformed(path, sentence.words[bad[0]][0],
                            f"head {heads[bad[0]]} is outside 0..{n} (the sentence's words)")
        cycle = _cycle_member(heads)
        if cycle:
            raise malformed(path, sentence.words[0][0],
                            f"the heads form a cycle through word {cycle}")
        for key in keys:
            data[key].append(sentence.column(key))
        data.head.append(heads)
        data.sent_id.append(sentence.comments.get("sent_id"))
        data.text.append(sentence.comments.get("text"))
    return data


class ConlluSentence:
    """One sentence of a CoNLL-U file as read, every line kept, to be written back.

    Attributes
    ----------
    lines : list of str
        The sentence's lines as in the file (comments, multiword-token lines,
        empty nodes and word lines), without their newline.
    words : list of (int, list of str)
        The line number and the 10 fields of each syntactic word, in order.
    comments : dict of str to str
        The ``# key = value`` comments.
    """

    def __init__(self):
        self.lines, self.words, self.comments = [], [], {}
        self._word_lines = []  # index in ``lines`` of each word

    def column(self, name):
        """The values of one column (``"form"``, ``"upos"``, ...) over the words."""
        index = COLUMNS.index(name)
        return [fields[index] for _, fields in self.words]

    def text(self, replace=None):
        """The sentence's lines and its blank line, ``replace``'s columns rewritten.

        Parameters
        ----------
        replace : dict of str to list of str, default=None
            New values of whole columns of the words (e.g. ``{"upos": [...]}``);
            every other field of every line is written as it was read.

        Returns
        -------
        text : str
            The sentence as CoNLL-U, ending with its blank line (lines end with
            ``\n`` whatever the file's line ends were).
        """
        lines = list(self.lines)
        for name, values in (replace or {}).items():
            index = COLUMNS.index(name)
            if len(values) != len(self.words):
                raise ValueError(f"{len(values)} values of {name} for a sentence of "
                                 f"{len(self.words)} words")
            for (_, fields), position, value in zip(self.words, self._word_lines, values):
                fields = lines[position].split("\t")
                fields[index] = str(value)
                lines[position] = "\t".join(fields)
        return "\n".join(lines) + "\n\n"


def read_conllu_sentences(path, *, encoding="utf-8"):
    """The sentences of a CoNLL-U file with all their lines, for a reader that writes them back.

    Unlike :func:`load_conllu`, the columns are not interpreted: a file whose
    heads are ``_`` (not parsed yet) is read.  A block of comments without
    words is a sentence without words (``load_conllu`` skips it).

    Parameters
    ----------
    path : str or path-like
        The ``.conllu`` file (plain text or gzip).
    encoding : str, default="utf-8"
        Text encoding of the file.

    Returns
    -------
    sentences : list of ConlluSentence
        In file order.

    Raises
    ------
    ValueError
        If a line has other than 10 tab-separated columns or word ids do not
        run ``1..n``, naming the file and the line.
    """
    path = check_file(path)
    sentences, current = [], ConlluSentence()
    for line_number, line in iter_lines(path, encoding=encoding):
        if not line.strip():
            if current.lines:
                sentences.append(current)
                current = ConlluSentence()
            continue
        current.lines.append(line)
        if line.startswith("#"):
            key, _, value = line[1:].partition("=")
            if value:
                current.comments[key.strip()] = value.strip()
            continue
        fields = line.split("\t")
        if len(fields) != len(COLUMNS):
            raise malformed(path, line_number,
                            f"expected 10 tab-separated columns, got {len(fields)}")
        word_id = fields[0]
        if _SKIPPED_ID.fullmatch(word_id):  # multiword token or empty node: kept as read
            continue
        if not _WORD_ID.fullmatch(word_id) or int(word_id) != len(current.words) + 1:
            raise malformed(path, line_number,
                            f"word id {word_id!r} where {len(current.words) + 1} was expected "
                            "(or a range like 1-2 or an empty node like 1.1)")
        current.words.append((line_number, fields))
        current._word_lines.append(len(current.lines) - 1)
    if current.lines:
        sentences.append(current)
    return sentences


# ASCII digits only: str.isdigit also accepts superscripts such as '\u00b2', which int() refuses
_WORD_ID = re.compile(r"[0-9]+")
_SKIPPED_ID = re.compile(r"[0-9]+(-[0-9]+|\.[0-9]+)")
_HEAD = re.compile(r"-?[0-9]+")


def _cycle_member(heads):
    """A word on a cycle of the head pointers (1-based), or 0 when every word reaches the root."""
    n = len(heads)
    state = np.zeros(n + 1, dtype=np.int8)  # 0 unseen, 1 on the current walk, 2 reaches the root
    state[0] = 2
    for start in range(1, n + 1):
        path = []
        node = start
        while state[node] == 0:
            state[node] = 1
            path.append(node)
            node = heads[node - 1]
        if state[node] == 1:
            return int(node)
        for member in path:
            state[member] = 2
    return 0


def check_heads(heads, where="heads"):
    """Validate a head array: integers in ``0..n``, no self-loop, no cycle.

    Parameters
    ----------
    heads : array-like of int of shape (n,)
        ``heads[m - 1]`` is the head of word ``m`` (0 the root).
    where : str, default="heads"
        How to name the array in error messages (e.g. ``"y[3]"``).

    Returns
    -------
    heads : ndarray of int64 of shape (n,)
        The validated heads.

    Raises
    ------
    ValueError
        Naming the first offending word.

    Examples
    --------
    >>> from sklearn_struct.datasets import check_heads
    >>> check_heads([2, 0, 2]).tolist()
    [2, 0, 2]
    """
    array = np.asarray(heads)
    if array.ndim != 1 or not (np.issubdtype(array.dtype, np.integer) or array.size == 0):
        raise ValueError(f"{where}: expected a 1-D array of integer heads, got {array!r}.")
    array = array.astype(np.int64)
    n = array.shape[0]
    bad = np.flatnonzero((array < 0) | (array > n) | (array == np.arange(1, n + 1)))
    if bad.size:
        raise ValueError(f"{where}: word {bad[0] + 1} has head {array[bad[0]]}; expected an "
                         f"integer in 0..{n} other than itself.")
    cycle = _cycle_member(array)
    if cycle:
        raise ValueError(f"{where}: the heads form a cycle through word {cycle}.")
    return array


def is_projective(heads):
    """Whether a dependency tree is projective (no two arcs cross, the root arc included).

    Parameters
    ----------
    heads : array-like of int of shape (n,)
        ``heads[m - 1]`` is the head of word ``m`` (0 the root, at position 0).

    Returns
    -------
    projective : bool
        True when no two arcs cross.

    Examples
    --------
    >>> from sklearn_struct.datasets import is_projective
    >>> is_projective([2, 0, 2]), is_projective([3, 4, 0, 3])
    (True, False)
    """
    heads = check_heads(heads)
    left = np.minimum(heads, np.arange(1, len(heads) + 1))
    right = np.maximum(heads, np.arange(1, len(heads) + 1))
    # arcs (a, b) and (c, d) cross iff a < c < b < d
    crossing = ((left[:, None] < left[None, :]) & (left[None, :] < right[:, None])
                & (right[:, None] < right[None, :]))
    return not crossing.any()


def projectivize(heads):
    """A projective tree from a tree by lifting arcs.

    An arc ``(h, m)`` is non-projective when a word between ``h`` and ``m`` is
    not a descendant of ``h``.  While there is one, the shortest such arc is
    lifted: ``m`` is reattached to the head of ``h`` (the lifting of
    pseudo-projective parsing, Nivre & Nilsson 2005, without its label
    encoding).  Projective trees come back unchanged.

    Parameters
    ----------
    heads : array-like of int of shape (n,)
        A dependency tree (``heads[m - 1]`` the head of word ``m``).

    Returns
    -------
    heads : ndarray of int64 of shape (n,)
        A projective tree (a new array).

    Examples
    --------
    >>> from sklearn_struct.datasets import projectivize
    >>> projectivize([3, 4, 0, 3]).tolist()
    [3, 3, 0, 3]
    """
    heads = check_heads(heads).copy()
    n = len(heads)
    while True:
        worst, worst_length = 0, n + 1
        for m in range(1, n + 1):
            h = heads[m - 1]
            low, high = min(h, m), max(h, m)
            if high - low < worst_length and not all(
                    _dominates(heads, h, k) for k in range(low + 1, high)):
                worst, worst_length = m, high - low
        if worst == 0:
            return heads
        heads[worst - 1] = heads[heads[worst - 1] - 1]


def _dominates(heads, h, k):
    """Whether word ``k`` is ``h`` or a descendant of ``h`` (0 dominates every word)."""
    while k != 0 and k != h:
        k = heads[k - 1]
    return k == h


def filter_projective(X, y):
    """Keep the examples whose tree is projective (for training a projective parser).

    Parameters
    ----------
    X : list
        Inputs, one per sentence.
    y : list of array-like of int
        Head arrays, one per sentence.

    Returns
    -------
    X_kept : list
        The inputs of the projective sentences, in order.
    y_kept : list
        Their head arrays.
    n_dropped : int
        Number of non-projective sentences left out.

    Examples
    --------
    >>> from sklearn_struct.datasets import filter_projective
    >>> filter_projective(["a", "b"], [[2, 0, 2], [3, 4, 0, 3]])
    (['a'], [[2, 0, 2]], 1)
    """
    if len(X) != len(y):
        raise ValueError(f"X has {len(X)} sentences but y has {len(y)} head arrays.")
    keep = [i for i, heads in enumerate(y) if is_projective(heads)]
    return [X[i] for i in keep], [y[i] for i in keep], len(y) - len(keep)
