import os
import sys
from pathlib import Path

import pytest

# the shared references (_qp_reference.py) sit beside this file, and a few tests reuse the
# data generators of a test module in another folder
TESTS = Path(__file__).resolve().parent
sys.path[:0] = [str(TESTS)] + sorted(str(folder) for folder in TESTS.iterdir()
                                     if folder.is_dir() and folder.name.isidentifier())

#: Where the shared corpora live; override with SKLEARN_STRUCT_SHARED_DATA.
SHARED_DATA = Path(
    os.environ.get(
        "SKLEARN_STRUCT_SHARED_DATA",
        Path(__file__).resolve().parents[1] / ".." / "shared" / "data",
    )
).resolve()


@pytest.fixture(scope="session")
def shared_data():
    """Path to ``../shared/data``; skips the test when the corpora are absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(
            f"shared corpora not found at {SHARED_DATA} "
            "(set SKLEARN_STRUCT_SHARED_DATA to their location)"
        )
    return SHARED_DATA
