"""Loaders for the English-French Hansards word-alignment data (WPT-03 gold and raw pairs)."""

import re
from pathlib import Path

import numpy as np
from sklearn.utils import Bunch

from ._io import check_file, iter_lines, malformed

__all__ = ["load_hansards_alignments", "load_hansards_sentence_pairs"]

_SNUM = re.compile(r"^<s snum=(\d+)>(.*)</s>\s*$")
_ENGLISH_SUFFIXES = (".en", ".e")
_FRENCH_SUFFIXES = {".en": ".fr", ".e": ".f"}
_BERKELEY_LINK = re.compile(r"^(\d+)-(\d+)(?:-([SP]))?$")


def load_hansards_alignments(path, english_path=None, french_path=None, encoding="utf-8"):
    """Load hand-aligned sentence pairs with sure and possible word links (WPT-03 format).

    Two link-file layouts are read, chosen by the file suffix:

    * ``.naacl`` / ``.wa`` (the WPT-03 shared-task format): one link per line,
      ``sentence english_position french_position [S|P] [confidence]`` with **1-based**
      positions; a missing label means ``S``; links to position 0 (NULL) are dropped.
      ``sentence`` is the ``<s snum=...>`` number of the text files when they carry that
      markup, otherwise the (1-based) line number in them.
    * ``.align`` (Berkeley Aligner): one line per sentence pair, links ``f-e`` with
      **0-based** positions, *French first*, suffixed ``-P`` for possible links.

    Positions are returned **0-based** in both cases. The English and French sentences are
    read from the files next to ``path`` with the suffix replaced by ``.en``/``.fr``
    (embedalign copy) or ``.e``/``.f`` (original WPT and Berkeley naming); ``<s snum=N>``
    markup is removed and tokens are split on whitespace.

    Parameters
    ----------
    path : str or path-like
        The link file (``.naacl``, ``.wa`` or ``.align``).
    english_path, french_path : str or path-like, default=None
        The sentence files, when they are not next to ``path`` under the names above.
    encoding : str, default="utf-8"
        Encoding of the sentence files.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        ``english``, ``french`` : lists (one per sentence pair) of lists of tokens.
        ``sure`` : list of ``(n_sure, 2)`` int64 arrays of ``(english, french)`` positions.
        ``possible`` : list of ``(n_possible, 2)`` int64 arrays; *includes* the sure links
        (``S`` is a subset of ``P``, as the alignment error rate assumes).
        ``sentence_ids`` : int64 array, the ``snum`` (or line number) of each pair.
        Link arrays are sorted and free of duplicates.

    Raises
    ------
    FileNotFoundError
        If the link file or a sentence file does not exist.
    ValueError
        If a file is malformed or a link points outside its sentence; the message names
        the file and the line.

    Examples
    --------
    One sentence pair with a sure link, a possible link and a NULL link (the
    WPT-03 test set is read the same way, from ``test.en-fr.naacl`` next to
    ``test.en-fr.en`` and ``test.en-fr.fr``):

    >>> import tempfile
    >>> from pathlib import Path
    >>> from sklearn_struct.datasets import load_hansards_alignments
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     base = Path(folder) / "test"
    ...     _ = base.with_suffix(".en").write_text("<s snum=7> the house </s>\\n")
    ...     _ = base.with_suffix(".fr").write_text("<s snum=7> la maison </s>\\n")
    ...     _ = base.with_suffix(".naacl").write_text("7 2 2 S\\n7 1 1 P\\n7 1 0")
    ...     data = load_hansards_alignments(base.with_suffix(".naacl"))
    >>> data.english, data.french, data.sentence_ids
    ([['the', 'house']], [['la', 'maison']], array([7]))
    >>> data.sure[0], data.possible[0]
    (array([[1, 1]]), array([[0, 0],
           [1, 1]]))
    """
    path = check_file(path)
    suffix = path.suffix.lower()
    if suffix not in (".naacl", ".wa", ".align"):
        raise ValueError(
            f"{path}: unknown alignment format '{suffix}'; expected a .naacl/.wa (WPT-03) "
            "or .align (Berkeley Aligner) file"
        )
    if english_path is None or french_path is None:
        found_english, found_french = _sibling_texts(path.with_suffix(""))
        english_path = found_english if english_path is None else english_path
        french_path = found_french if french_path is None else french_path
    english, english_ids, english_path = _read_sentences(english_path, encoding)
    french, french_ids, french_path = _read_sentences(french_path, encoding)
    if english_ids != french_ids:
        raise ValueError(
            f"{english_path} and {french_path} do not hold the same sentences "
            f"({len(english_ids)} and {len(french_ids)} lines or differing snum numbers)"
        )
    if suffix == ".align":
        sure, possible = _read_berkeley_links(path, english, french)
    else:
        sure, possible = _read_naacl_links(path, english, french, english_ids)
    return Bunch(
        english=english,
        french=french,
        sure=[_as_link_array(links) for links in sure],
        possible=[_as_link_array(s | p) for s, p in zip(sure, possible)],
        sentence_ids=np.asarray(english_ids, dtype=np.int64),
    )


def load_hansards_sentence_pairs(path, french_path=None, encoding="utf-8"):
    """Load unlabelled, sentence-aligned English-French text (e.g. the Hansards sample).

    Parameters
    ----------
    path : str or path-like
        A directory, whose files ``<name>.e`` (or ``<name>.en``) are paired with
        ``<name>.f`` (``<name>.fr``) and read in sorted name order; or one English file.
    french_path : str or path-like, default=None
        The French file when ``path`` is an English file whose French counterpart is not
        next to it under the name above.
    encoding : str, default="utf-8"
        Encoding of the files.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        ``english``, ``french`` : lists (one per sentence pair) of lists of tokens
        (whitespace-split, ``<s snum=N>`` markup removed).
        ``files`` : list of ``(english_file, french_file)`` paths read.

    Raises
    ------
    FileNotFoundError
        If ``path`` or a French counterpart does not exist.
    ValueError
        If paired files have different numbers of lines, or a line cannot be decoded.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from sklearn_struct.datasets import load_hansards_sentence_pairs
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     _ = (Path(folder) / "part1.e").write_text("yes .\\nthank you .\\n")
    ...     _ = (Path(folder) / "part1.f").write_text("oui .\\nmerci .\\n")
    ...     pairs = load_hansards_sentence_pairs(folder)
    >>> pairs.english, pairs.french
    ([['yes', '.'], ['thank', 'you', '.']], [['oui', '.'], ['merci', '.']])
    """
    path = Path(path)
    if path.is_dir():
        english_files = sorted(p for p in path.iterdir() if p.suffix in _ENGLISH_SUFFIXES)
        if not english_files:
            raise FileNotFoundError(f"no English '.e' or '.en' file in directory '{path}'")
        files = [(p, p.with_suffix(_FRENCH_SUFFIXES[p.suffix])) for p in english_files]
    else:
        check_file(path)
        if french_path is None:
            if path.suffix not in _FRENCH_SUFFIXES:
                raise ValueError(
                    f"{path}: cannot guess the French file of an English file not ending "
                    "in .e or .en; pass french_path"
                )
            french_path = path.with_suffix(_FRENCH_SUFFIXES[path.suffix])
        files = [(path, Path(french_path))]
    data = Bunch(english=[], french=[], files=[])
    for english_file, french_file in files:
        english, _, english_file = _read_sentences(english_file, encoding)
        french, _, french_file = _read_sentences(french_file, encoding)
        if len(english) != len(french):
            raise ValueError(
                f"{english_file} has {len(english)} lines but {french_file} has {len(french)}"
            )
        data.english.extend(english)
        data.french.extend(french)
        data.files.append((english_file, french_file))
    return data


def _sibling_texts(base):
    for english_suffix in _ENGLISH_SUFFIXES:
        english = base.with_name(base.name + english_suffix)
        french = base.with_name(base.name + _FRENCH_SUFFIXES[english_suffix])
        if english.is_file() and french.is_file():
            return english, french
    tried = ", ".join(
        f"'{base.name}{e}'/'{base.name}{f}'" for e, f in _FRENCH_SUFFIXES.items()
    )
    raise FileNotFoundError(
        f"no sentence files next to '{base}' (tried {tried}); pass english_path and french_path"
    )


def _read_sentences(path, encoding):
    """Token lists and ids (snum, or 1-based line number) of a one-sentence-per-line file."""
    path = check_file(path)
    sentences, ids = [], []
    for line_number, line in iter_lines(path, encoding=encoding):
        match = _SNUM.match(line)
        if match:
            ids.append(int(match.group(1)))
            line = match.group(2)
        else:
            ids.append(line_number)
        sentences.append(line.split())
    return sentences, ids, path


def _read_naacl_links(path, english, french, sentence_ids):
    index_of = {sentence_id: index for index, sentence_id in enumerate(sentence_ids)}
    sure = [set() for _ in english]
    possible = [set() for _ in english]
    for line_number, line in iter_lines(path, encoding="ascii"):
        fields = line.split()
        if not fields:
            continue
        if not 3 <= len(fields) <= 5 or (len(fields) >= 4 and fields[3] not in ("S", "P")):
            raise malformed(
                path,
                line_number,
                f"expected 'sentence english_position french_position [S|P] [confidence]', "
                f"got {line!r}",
            )
        try:
            sentence_id, e, f = (int(field) for field in fields[:3])
        except ValueError:
            raise malformed(path, line_number, f"positions must be integers: {line!r}") from None
        if sentence_id not in index_of:
            raise malformed(path, line_number, f"sentence {sentence_id} is not in the texts")
        if e == 0 or f == 0:  # NULL links
            continue
        index = index_of[sentence_id]
        _check_link(path, line_number, index, e - 1, f - 1, english, french)
        kind = possible if len(fields) >= 4 and fields[3] == "P" else sure
        kind[index].add((e - 1, f - 1))
    return sure, possible


def _read_berkeley_links(path, english, french):
    sure, possible = [], []
    line_number = 0
    for line_number, line in iter_lines(path, encoding="ascii"):
        index = line_number - 1
        if index >= len(english):
            raise malformed(path, line_number, f"more lines than the {len(english)} sentences")
        sure.append(set())
        possible.append(set())
        for link in line.split():
            match = _BERKELEY_LINK.match(link)
            if not match:
                raise malformed(
                    path, line_number, f"expected links 'f-e' or 'f-e-P', got {link!r}"
                )
            f, e = int(match.group(1)), int(match.group(2))
            _check_link(path, line_number, index, e, f, english, french)
            (possible if match.group(3) == "P" else sure)[index].add((e, f))
    if line_number != len(english):
        raise malformed(
            path, line_number, f"{line_number} lines but {len(english)} sentence pairs"
        )
    return sure, possible


def _check_link(path, line_number, index, e, f, english, french):
    if not (0 <= e < len(english[index]) and 0 <= f < len(french[index])):
        raise malformed(
            path,
            line_number,
            f"link (english {e}, french {f}) (0-based) is outside sentence pair {index} "
            f"of {len(english[index])} English and {len(french[index])} French tokens",
        )


def _as_link_array(links):
    return np.array(sorted(links), dtype=np.int64).reshape(-1, 2)
