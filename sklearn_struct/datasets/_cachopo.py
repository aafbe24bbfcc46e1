"""Loader for Ana Cardoso-Cachopo's preprocessed text-categorisation files.

WebKB 4-universities, Reuters-21578 R8/R52, 20 Newsgroups, Cade: one document per
line, ``LABEL<TAB>space-separated tokens``.
"""

import numpy as np
from sklearn.utils import Bunch

from ._io import check_file, iter_lines, malformed

__all__ = ["load_cachopo_text"]


def load_cachopo_text(path, encoding="utf-8"):
    """Load a Cardoso-Cachopo text file: one ``LABEL<TAB>text`` document per line.

    The text after the tab is kept as one string (tokens separated by single spaces in
    the published files), ready for a scikit-learn text vectoriser. A document may be
    empty (``LABEL<TAB>`` followed by nothing): a few WebKB pages have no word left after
    stop-word removal. Gzip-compressed files are decompressed transparently.

    Parameters
    ----------
    path : str or path-like
        The file (plain text or gzip), e.g. ``webkb-train-stemmed.txt.gz``.
    encoding : str, default="utf-8"
        Text encoding of the file (the published files are ASCII; a UTF-8 byte-order
        mark at its start is dropped).

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        ``data`` (list of str, one per document), ``target`` (ndarray of str labels, one
        per document) and ``target_names`` (sorted distinct labels).

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist (the message names it).
    ValueError
        If a line has no tab, an empty label or more than one tab, or cannot be decoded;
        the message names the file and the line.

    Examples
    --------
    >>> import os, tempfile
    >>> from sklearn_struct.datasets import load_cachopo_text
    >>> path = os.path.join(tempfile.mkdtemp(), "tiny.txt")
    >>> with open(path, "w") as f:
    ...     _ = f.write("course\\tlectur homework\\nfaculty\\tprofessor research\\n")
    >>> docs = load_cachopo_text(path)
    >>> docs.data, list(docs.target)
    (['lectur homework', 'professor research'], ['course', 'faculty'])
    """
    path = check_file(path)
    texts, labels = [], []
    for line_number, line in iter_lines(path, encoding=encoding):
        if not line.strip():
            continue  # a blank line (e.g. a trailing one) holds no document
        fields = line.split("\t")
        if len(fields) != 2:
            raise malformed(
                path,
                line_number,
                f"expected 'LABEL<TAB>text' (exactly one tab), found {len(fields) - 1} tabs",
            )
        label, text = fields
        if not label.strip():
            raise malformed(path, line_number, "empty label before the tab")
        labels.append(label.strip())
        texts.append(text.strip())
    target = np.asarray(labels, dtype=object)
    return Bunch(data=texts, target=target, target_names=sorted(set(labels)))
