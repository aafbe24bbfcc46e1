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


def pytest_sessionstart(session):
    """In the controller of a whole-suite run on several xdist workers, compile the shared
    kernels once, one share per worker process, before the workers start (see
    ``_compile_once.py``)."""
    config = session.config
    workers = getattr(config.option, "numprocesses", None)
    if (hasattr(config, "workerinput") or not isinstance(workers, int) or workers < 2
            or config.args_source is not pytest.Config.ArgsSource.TESTPATHS):
        return
    import subprocess
    import time

    from _compile_once import SHARES

    start = time.perf_counter()
    processes = [subprocess.Popen([sys.executable, str(TESTS / "_compile_once.py"), *share],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                 for share in SHARES]
    errors = [process.communicate()[1] for process in processes]
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    for process, share, error in zip(processes, SHARES, errors):
        if process.returncode:
            reporter.write_line(f"compiling the kernels of {', '.join(share)} failed "
                                f"(the tests that use them will say why):\n{error[-2000:]}",
                                red=True)
    reporter.write_line(f"compiled the shared kernels in {len(SHARES)} processes in "
                        f"{time.perf_counter() - start:.0f} s")
