"""ARCHITECTURE.md's statements about the code hold: every count of lines it gives is
recounted, and every file and folder it names exists."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEXT = (ROOT / "ARCHITECTURE.md").read_text()
PACKAGE = ROOT / "sklearn_struct"


def _lines(path):
    """Lines of a file, or of every ``.py`` file of a folder."""
    files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return sum(len(file.read_text().splitlines()) for file in files)


def test_every_line_count_is_the_code_s():
    claims = re.findall(r"`([\w/.]+)` is (\d+) lines", TEXT)
    claims += re.findall(r"`([\w/.]+)` (\d+)\s+lines", TEXT)
    claims += [("structures/semimarkov", count) for count
               in re.findall(r"semi-Markov subpackage is (\d+) lines", TEXT)]
    assert len(claims) >= 3
    for name, count in claims:
        assert _lines(PACKAGE / name) == int(count), (
            f"ARCHITECTURE.md says {name} is {count} lines; it is {_lines(PACKAGE / name)}")


def test_every_module_named_exists():
    named = set(re.findall(r"`((?:structures|solvers|utils|datasets|cli)/[\w/]+\.py)`", TEXT))
    assert named
    missing = [name for name in named if not (PACKAGE / name).is_file()]
    assert not missing, f"ARCHITECTURE.md names modules that do not exist: {missing}"
