"""Keep numba's on-disk cache of the package consistent with its sources.

numba keys a cached function on the time stamp of its own file only, but the compiled
code includes the functions it calls from other files: after an edit or a ``git pull``
that changes only a callee's file, the caller's cache still serves the old callee (an
operation's inference, or a specialized template's operations).  The package stamps its
caches with a digest of the sources that compiled code reads, :func:`kernel_sources`
(the modules with compiled code and the package modules they import from, whose
constants a kernel may freeze), and drops them when those change; the next
calls compile again.  An edit anywhere else (an estimator, the command line, a
docstring outside the kernels) keeps every compiled kernel.
"""

import hashlib
import re
from pathlib import Path

__all__ = ["drop_stale_caches", "kernel_sources", "source_digest"]

PACKAGE = Path(__file__).resolve().parent
#: The digest of the sources the caches under a package were compiled from.
STAMP = "numba_sources.sha1"


#: Code that numba compiles: a decorated function, or a template for ``specialize``
#: (its kernel operations called by their ``*_op`` names).
COMPILED = re.compile(rb"\bnjit\b|@numba\.|\b\w+_op\(")
#: ``from .module import names`` / ``from package.module import (names)``.
IMPORT = re.compile(rb"^from\s+(\.*)([\w.]*)\s+import\s+(\([^)]*\)|[^\n]*)", re.M)


def _imported_files(path, root, text):
    """The files under ``root`` that the module at ``path`` (its source ``text``) imports
    names from."""
    package = list(path.relative_to(root).parent.parts)
    found = []
    for dots, module, names in IMPORT.findall(text):
        module = module.decode().split(".") if module else []
        if dots:
            base = package[:len(package) - len(dots) + 1]
        elif module[:1] == [root.name]:
            base, module = [], module[1:]
        else:
            continue
        names = re.findall(r"\w+", names.decode().split("#")[0].replace(" as ", " "))
        for parts in [base + module] + [base + module + [name] for name in names]:
            for file in (root.joinpath(*parts).with_suffix(".py") if parts else None,
                         root.joinpath(*parts, "__init__.py")):
                if file is not None and file.is_file():
                    found.append(file)
                    break
    return found


def kernel_sources(root):
    """The ``.py`` files under ``root`` whose code numba compiles or freezes: every module
    with compiled code (:data:`COMPILED`), and the package modules it imports from, whose
    constants its kernels may read (the functions a kernel calls are compiled code in
    modules of their own)."""
    root = Path(root)
    sources = set()
    for path in root.rglob("*.py"):
        text = path.read_bytes()
        if COMPILED.search(text):
            sources.add(path)
            sources.update(_imported_files(path, root, text))
    return sorted(sources)


def source_digest(root):
    """SHA-1 of the names and contents of the files of :func:`kernel_sources`."""
    digest = hashlib.sha1()
    for path in kernel_sources(Path(root)):
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
