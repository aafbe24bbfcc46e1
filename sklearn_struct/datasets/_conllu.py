"""CoNLL-U treebanks (Universal Dependencies) and dependency-tree helpers."""

import re

import numpy as np
from sklearn.utils import Bunch

from ._io import check_file, iter_lines, malformed

__all__ = ["check_heads", "filter_projective", "is_projective", "load_conllu", "projectivize"]

_COLUMNS = ("id", "form", "lemma", "upos", "xpos", "feats", "head", "deprel", "deps", "misc")


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
        ``form``, ``lemma``, ``upos``, ``xpos`` and ``deprel``: one list of str
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
    keys = ("form", "lemma", "upos", "xpos", "deprel")
    data = Bunch(**{key: [] for key in keys}, head=[], sent_id=[], text=[])
    words, comments, first_line = [], {}, None

    def finish():
        heads = np.array([head for head, _ in words], dtype=np.int64)
        n = len(heads)
        bad = np.flatnonzero((heads < 0) | (heads > n))
        if bad.size:
            raise malformed(path, words[bad[0]][1],
                            f"head {heads[bad[0]]} is outside 0..{n} (the sentence's words)")
        cycle = _cycle_member(heads)
        if cycle:
            raise malformed(path, first_line, f"the heads form a cycle through word {cycle}")
        for index, key in enumerate(keys):
            data[key].append([fields[index] for fields in fields_of])
        data.head.append(heads)
        data.sent_id.append(comments.get("sent_id"))
        data.text.append(comments.get("text"))

    fields_of = []
    for line_number, line in iter_lines(path, encoding=encoding):
        if not line.strip():
            if words:
                finish()
            words, fields_of, comments, first_line = [], [], {}, None
            continue
        if line.startswith("#"):
            key, _, value = line[1:].partition("=")
            if value:
                comments[key.strip()] = value.strip()
            continue
        columns = line.split("\t")
        if len(columns) != len(_COLUMNS):
            raise malformed(path, line_number,
                            f"expected 10 tab-separated columns, got {len(columns)}")
        word_id = columns[0]
        if _SKIPPED_ID.fullmatch(word_id):  # multiword token or empty node
            continue
        if not _WORD_ID.fullmatch(word_id) or int(word_id) != len(words) + 1:
            raise malformed(path, line_number,
                            f"word id {word_id!r} where {len(words) + 1} was expected (or a "
                            "range like 1-2 or an empty node like 1.1)")
        head = columns[6]
        if not _HEAD.fullmatch(head):
            raise malformed(path, line_number,
                            f"head {head!r} is not an integer (this file has no trees?)")
        if first_line is None:
            first_line = line_number
        words.append((int(head), line_number))
        fields_of.append([columns[1], columns[2], columns[3], columns[4], columns[7]])
    if words:
        finish()
    return data


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
