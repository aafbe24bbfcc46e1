"""File helpers shared by the loaders: path checks, transparent gzip, line numbers in errors."""

import codecs
import gzip
from pathlib import Path

_GZIP_MAGIC = b"\x1f\x8b"


def check_file(path):
    """Return ``path`` as a :class:`~pathlib.Path`, or raise ``FileNotFoundError`` naming it."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: '{path}'")
    return path


def open_binary(path):
    """Open a file for reading bytes, decompressing it when it starts with the gzip magic."""
    path = check_file(path)
    with open(path, "rb") as handle:
        magic = handle.read(2)
    if magic == _GZIP_MAGIC:
        return gzip.open(path, "rb")
    return open(path, "rb")


def read_bytes(path):
    """Whole (decompressed) content of ``path``; a corrupt gzip stream is a ``ValueError``."""
    with open_binary(path) as handle:
        try:
            return handle.read()
        except (OSError, EOFError) as exc:
            raise ValueError(f"{path}: cannot decompress ({exc})") from exc


def read_text(path, encoding="utf-8"):
    """Whole (decompressed) text of ``path``, without a byte-order mark at its start.

    A UTF-8 byte-order mark (which some editors write first) is not text: it is
    dropped at the start of the file, for UTF-8 and ASCII files alike, and
    nowhere else (inside a file it is a character of the data).  A byte that
    cannot be decoded is reported with its line.
    """
    content = read_bytes(path)
    utf8_compatible = codecs.lookup(encoding).name in ("utf-8", "ascii")
    if utf8_compatible and content.startswith(codecs.BOM_UTF8):
        content = content[len(codecs.BOM_UTF8):]
    try:
        return content.decode(encoding)
    except UnicodeDecodeError as exc:
        line_number = content.count(b"\n", 0, exc.start) + 1
        raise ValueError(
            f"{path}, line {line_number}: not valid {encoding} text ({exc.reason})"
        ) from exc


def iter_lines(path, encoding="utf-8"):
    """Yield ``(line_number, text)`` for each line of ``path`` (1-based, newline stripped).

    The text is that of :func:`read_text` (no byte-order mark at the start).
    """
    lines = read_text(path, encoding).split("\n")
    if lines[-1] == "":
        lines.pop()
    for line_number, line in enumerate(lines, start=1):
        yield line_number, line.rstrip("\r")


def malformed(path, line_number, message):
    """The ``ValueError`` raised for a malformed line: names the file and the line."""
    return ValueError(f"{path}, line {line_number}: {message}")
