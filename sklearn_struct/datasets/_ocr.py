"""Loader for the OCR handwritten letters of Taskar et al. (Max-Margin Markov Networks)."""

import string
from pathlib import Path

import numpy as np
from sklearn.utils import Bunch

from ._io import check_file, iter_lines, malformed

__all__ = ["load_ocr_letters", "load_ocr_default"]

N_PIXELS = 128  # 16 rows x 8 columns, row-major
IMAGE_SHAPE = (16, 8)
LETTERS = np.array(list(string.ascii_lowercase))

_DEFAULT_DIR = Path(__file__).resolve().parent / "data"
_DEFAULT_FILE = _DEFAULT_DIR / "ocr_letters_default.npz"
_ZIP_MAGIC = b"PK"
# letter.data columns: id, letter, next_id, word_id, position, fold, then 128 pixels.
_N_META = 6


def load_ocr_letters(path):
    """Load the OCR letters data set (words of 16x8 binary letter images, with folds).

    Two layouts are read, told apart by their content:

    * the ``.npz`` form (e.g. ``letters_flat.npz`` of ``../shared/data/ocr_letters_taskar``
      or the embedded subset of :func:`load_ocr_default`), read with
      ``np.load(..., allow_pickle=False)``: arrays ``y`` (letter codes per letter),
      ``word_offsets`` (letters of word ``i`` are rows ``word_offsets[i]:word_offsets[i+1]``),
      ``word_fold`` (fold per word) and either ``X`` ``(n_letters, 128)`` pixels or
      ``X_packed`` ``(n_letters, 16)`` (``np.packbits`` of the pixels along axis 1);
    * Taskar's original tab-separated ``letter.data`` (plain or gzip): one letter per line,
      columns ``id, letter (a-z), next_id (-1 for the last letter of a word), word_id,
      position, fold, p_0 .. p_127`` (pixel ``p_{8 r + c}`` is row ``r``, column ``c``).
      Letters of a word are consecutive lines chained by ``next_id``.

    Pickled files are never read (unpickling runs code from the file).

    Parameters
    ----------
    path : str or path-like
        The ``.npz`` file or the ``letter.data`` file.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        ``X`` : list of ``(T_i, 128)`` float64 arrays, one row of 0/1 pixels per letter
        (reshape a row to ``(16, 8)`` to see the image).
        ``y`` : list of ``(T_i,)`` int64 arrays of letter codes ``0..25`` (``'a'..'z'``;
        ``target_names[y]`` gives the letters).
        ``folds`` : ``(n_words,)`` int64 array, the cross-validation fold (0..9) of each
        word (in ``letter.data``, the fold of the word's first letter).
        ``words`` : list of str, the word spelled by each ``y``.
        ``target_names`` : array of the 26 letters.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If the file is malformed; the message names the file (and the line for
        ``letter.data``).

    Examples
    --------
    >>> from sklearn_struct.datasets import load_ocr_default
    >>> data = load_ocr_default()
    >>> data.X[0].shape[1], data.words[0] == "".join(data.target_names[data.y[0]])
    (128, True)
    """
    path = check_file(path)
    with open(path, "rb") as handle:
        is_npz = handle.read(2) == _ZIP_MAGIC
    if is_npz:
        pixels, codes, word_offsets, folds = _read_npz(path)
    else:
        pixels, codes, word_offsets, folds = _read_letter_data(path)
    X = np.split(pixels.astype(np.float64), word_offsets[1:-1])
    y = np.split(codes.astype(np.int64), word_offsets[1:-1])
    return Bunch(
        X=X,
        y=y,
        folds=folds.astype(np.int64),
        words=["".join(LETTERS[labels]) for labels in y],
        target_names=LETTERS.copy(),
    )


def load_ocr_default():
    """Load the small OCR letters subset shipped inside the package.

    Folds 0 and 1 of Taskar's OCR letters (1,330 words, 9,992 letters), derived from
    ``letters_flat.npz`` of ``../shared/data/ocr_letters_taskar`` by
    ``tools/make_ocr_default.py``; ``sklearn_struct/datasets/data/README.txt`` states the
    origin. A natural split is training on fold 0 and testing on fold 1.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        As :func:`load_ocr_letters`, plus ``DESCR`` (the README text).

    Examples
    --------
    >>> from sklearn_struct.datasets import load_ocr_default
    >>> data = load_ocr_default()
    >>> len(data.X), sorted(set(data.folds.tolist()))
    (1330, [0, 1])
    """
    data = load_ocr_letters(_DEFAULT_FILE)
    data.DESCR = (_DEFAULT_DIR / "README.txt").read_text(encoding="utf-8")
    return data


def _read_npz(path):
    try:
        archive = np.load(path, allow_pickle=False)
    except (ValueError, OSError) as exc:
        raise ValueError(f"{path}: not a readable .npz archive ({exc})") from exc
    with archive:
        keys = set(archive.files)
        missing = {"y", "word_offsets", "word_fold"} - keys
        if missing or not keys & {"X", "X_packed"}:
            raise ValueError(
                f"{path}: expected arrays 'y', 'word_offsets', 'word_fold' and 'X' or "
                f"'X_packed', found {sorted(keys)}"
            )
        try:
            if "X" in keys:
                pixels = archive["X"]
            else:
                pixels = np.unpackbits(archive["X_packed"], axis=1, count=N_PIXELS)
            codes = archive["y"]
            word_offsets = archive["word_offsets"].astype(np.int64)
            folds = archive["word_fold"]
        except ValueError as exc:  # object arrays would need pickle
            raise ValueError(f"{path}: {exc}") from exc
    n_letters = codes.shape[0]
    if pixels.shape != (n_letters, N_PIXELS):
        raise ValueError(
            f"{path}: expected pixels of shape ({n_letters}, {N_PIXELS}), got {pixels.shape}"
        )
    if codes.ndim != 1 or (n_letters and (codes.min() < 0 or codes.max() >= len(LETTERS))):
        raise ValueError(f"{path}: 'y' must be a 1-D array of letter codes 0..25")
    if (
        word_offsets.ndim != 1
        or word_offsets.shape[0] < 1
        or word_offsets[0] != 0
        or word_offsets[-1] != n_letters
        or np.any(np.diff(word_offsets) <= 0)
    ):
        raise ValueError(
            f"{path}: 'word_offsets' must increase strictly from 0 to the number of letters "
            f"({n_letters})"
        )
    if folds.shape != (word_offsets.shape[0] - 1,):
        raise ValueError(
            f"{path}: 'word_fold' must hold one fold per word ({word_offsets.shape[0] - 1}), "
            f"got shape {folds.shape}"
        )
    return pixels, codes, word_offsets, folds


def _read_letter_data(path):
    pixel_rows, codes, folds = [], [], []
    word_offsets = [0]
    expected_id = None  # id the next line must carry (the previous letter's next_id)
    line_number = 0
    for line_number, line in iter_lines(path, encoding="ascii"):
        fields = line.rstrip().split("\t")
        if fields == [""]:
            continue
        pixels = "".join(fields[_N_META:])
        if len(fields) != _N_META + N_PIXELS or len(pixels) != N_PIXELS or pixels.strip("01"):
            raise malformed(
                path,
                line_number,
                f"expected {_N_META} fields (id, letter, next_id, word_id, position, fold) "
                f"and {N_PIXELS} pixels 0/1 separated by tabs, got {len(fields)} fields",
            )
        try:
            letter_id, next_id, fold = int(fields[0]), int(fields[2]), int(fields[5])
        except ValueError:
            raise malformed(path, line_number, "id, next_id and fold must be integers") from None
        letter = fields[1]
        if len(letter) != 1 or letter not in string.ascii_lowercase:
            raise malformed(path, line_number, f"letter must be one of a-z, got {letter!r}")
        if expected_id is not None and letter_id != expected_id:
            raise malformed(
                path,
                line_number,
                f"the previous letter continues with id {expected_id}, but this line has id "
                f"{letter_id} (letters of a word must be consecutive lines)",
            )
        if expected_id is None:
            folds.append(fold)
        pixel_rows.append(pixels)
        codes.append(ord(letter) - ord("a"))
        if next_id == -1:
            word_offsets.append(len(codes))
            expected_id = None
        else:
            expected_id = next_id
    if expected_id is not None:
        raise malformed(
            path, line_number, f"file ends inside a word (next_id {expected_id} never appears)"
        )
    pixels = np.frombuffer("".join(pixel_rows).encode("ascii"), dtype=np.uint8) - ord("0")
    return (
        pixels.reshape(len(codes), N_PIXELS),
        np.asarray(codes, dtype=np.int64),
        np.asarray(word_offsets, dtype=np.int64),
        np.asarray(folds, dtype=np.int64),
    )
