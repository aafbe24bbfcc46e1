"""Keep numba's on-disk cache of the package consistent with its sources.

numba keys a cached function on the time stamp of its own file only, but the compiled
code includes the functions it calls from other files: after an edit or a ``git pull``
that changes only a callee's file, the caller's cache still serves the old callee (an
operation's inference, or a specialized template's operations).  The package stamps its
caches with a digest of all its sources and drops them when the sources change; the
next calls compile again.
"""

import hashlib
from pathlib import Path

__all__ = ["drop_stale_caches", "source_digest"]

PACKAGE = Path(__file__).resolve().parent
#: The digest of the sources the caches under a package were compiled from.
STAMP = "numba_sources.sha1"


def source_digest(root):
    """SHA-1 of the names and contents of every ``.py`` file under ``root``."""
    digest = hashlib.sha1()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def drop_stale_caches(root=PACKAGE):
    """Delete numba's cache files under ``root`` unless its stamp matches the sources.

    Returns the number of files deleted.  A read-only installation is left as it
    is: numba then keeps its caches elsewhere, and reinstalling rewrites every source
    file, which invalidates them all.
    """
    stamp = Path(root) / "__pycache__" / STAMP
    digest = source_digest(Path(root))
    try:
        if stamp.read_text() == digest:
            return 0
    except OSError:
        pass  # no stamp yet: caches of unknown sources
    removed = 0
    try:
        for path in Path(root).rglob("__pycache__/*.nb[ic]"):
            path.unlink(missing_ok=True)  # (another process may drop it too)
            removed += 1
        stamp.parent.mkdir(exist_ok=True)
        stamp.write_text(digest)
    except OSError:
        pass
    return removed
