"""Loader for CoNLL column files (CoNLL-2000 chunking, CoNLL-2003 named entities)."""

import numpy as np
from sklearn.utils import Bunch

from ._io import check_file, iter_lines, malformed
from .._chunk_tags import iob1_to_iob2, iob2_to_iob1, is_iob_tag

__all__ = ["load_conll"]

_DEFAULT_COLUMNS = {
    3: ("word", "pos", "chunk"),  # CoNLL-2000
    4: ("word", "pos", "chunk", "ne"),  # CoNLL-2003
}
_CONVERTERS = {"iob1": iob2_to_iob1, "iob2": iob1_to_iob2}


def load_conll(path, columns=None, target=None, tag_scheme=None, encoding="utf-8"):
    """Load a CoNLL column file: one token per line, a blank line between sentences.

    Columns are separated by whitespace. ``-DOCSTART-`` lines (document separators of
    CoNLL-2003) are skipped and end the current sentence. Gzip-compressed files are
    decompressed transparently.

    Parameters
    ----------
    path : str or path-like
        The file (plain text or gzip).
    columns : sequence of str, default=None
        Names of the columns, in order. By default ``("word", "pos", "chunk")`` for a
        3-column file (CoNLL-2000) and ``("word", "pos", "chunk", "ne")`` for a 4-column
        file (CoNLL-2003); other widths need explicit names.
    target : str, default=None
        The column returned as ``tags`` (the labels to predict); default the last column.
    tag_scheme : {None, "iob1", "iob2"}, default=None
        Convert the ``target`` column to this chunk-tag scheme (``None`` keeps the file's
        tags). Chunks are read with conlleval's rules, so either scheme is accepted as
        input. CoNLL-2000 files are IOB2, CoNLL-2003 files are IOB1.
    encoding : str, default="utf-8"
        Text encoding of the file (a UTF-8 byte-order mark at its start is dropped).

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        One key per column name holding a list (one per sentence) of lists of str, plus
        ``tags`` (the ``target`` column, converted to ``tag_scheme``), ``column_names``,
        ``target_name`` and ``document``: an int array giving each sentence's document,
        numbered from 0 in file order (a ``-DOCSTART-`` line after a sentence starts the
        next one).  The target column (and ``tags``, the same list) holds one
        1-D array of str per sentence: the label form that scikit-learn's
        cross-validation accepts for a classifier (it refuses ragged lists of lists).

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If a token line has a different number of columns from the first one, if a
        target tag is not an IOB tag when converting, or if a line cannot be decoded;
        the message names the file and the line.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from sklearn_struct.datasets import load_conll
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = Path(folder) / "tiny.txt"
    ...     _ = path.write_text("He PRP B-NP\\nran VBD B-VP\\n\\nOK UH B-INTJ\\n")
    ...     data = load_conll(path)
    >>> data.word
    [['He', 'ran'], ['OK']]
    >>> [tags.tolist() for tags in data.tags]
    [['B-NP', 'B-VP'], ['B-INTJ']]
    >>> data.pos
    [['PRP', 'VBD'], ['UH']]
    """
    if tag_scheme is not None and tag_scheme not in _CONVERTERS:
        raise ValueError(f"tag_scheme must be None, 'iob1' or 'iob2', got {tag_scheme!r}")
    path = check_file(path)
    sentences, lines = [], []  # lines: first line number of each sentence
    documents, document = [], 0  # each sentence's document
    current, n_columns = [], None
    for line_number, line in iter_lines(path, encoding=encoding):
        fields = line.split()
        if not fields or fields[0] == "-DOCSTART-":
            if current:
                sentences.append(current)
                documents.append(document)
                current = []
            if fields and documents and documents[-1] == document:
                document += 1  # a -DOCSTART- line after sentences of the current document
            continue
        if n_columns is None:
            n_columns = len(fields)
            column_names = _column_names(path, line_number, n_columns, columns)
        elif len(fields) != n_columns:
            raise malformed(
                path, line_number, f"expected {n_columns} columns, got {len(fields)}: {line!r}"
            )
        if not current:
            lines.append(line_number)
        current.append(fields)
    if current:
        sentences.append(current)
        documents.append(document)
    if n_columns is None:  # no token at all
        column_names = tuple(columns) if columns is not None else _DEFAULT_COLUMNS[3]
    target_name = column_names[-1] if target is None else target
    if target_name not in column_names:
        raise ValueError(f"target {target_name!r} is not one of the columns {column_names}")

    data = Bunch(column_names=tuple(column_names), target_name=target_name,
                 document=np.asarray(documents, dtype=np.int64))
    for index, name in enumerate(column_names):
        data[name] = [[fields[index] for fields in sentence] for sentence in sentences]
    tags = data[target_name]
    if tag_scheme is not None:
        for sentence_tags, first_line in zip(tags, lines):
            for position, tag in enumerate(sentence_tags):
                if not is_iob_tag(tag):
                    raise malformed(
                        path,
                        first_line + position,
                        f"column {target_name!r} holds {tag!r}, not an IOB tag "
                        "('O', 'B-<type>' or 'I-<type>')",
                    )
        tags = [_CONVERTERS[tag_scheme](sentence_tags) for sentence_tags in tags]
    # arrays, not lists: scikit-learn's type_of_target refuses ragged lists of lists,
    # so cross_val_score(cv=k) of a (classifier-tagged) sequence model needs arrays
    data.tags = data[target_name] = [np.asarray(sentence_tags, dtype=str)
                                     for sentence_tags in tags]
    return data


def _column_names(path, line_number, n_columns, columns):
    if columns is None:
        if n_columns not in _DEFAULT_COLUMNS:
            raise malformed(
                path,
                line_number,
                f"{n_columns} columns; pass `columns` to name them (defaults exist for 3 "
                "and 4 columns)",
            )
        return _DEFAULT_COLUMNS[n_columns]
    columns = tuple(columns)
    if len(columns) != n_columns:
        raise malformed(
            path, line_number, f"{n_columns} columns but `columns` names {len(columns)}"
        )
    if len(set(columns)) != len(columns) or {"tags", "column_names", "target_name"} & set(
        columns
    ):
        raise ValueError(
            f"column names must be distinct and not 'tags', 'column_names' or 'target_name', "
            f"got {columns}"
        )
    return columns
