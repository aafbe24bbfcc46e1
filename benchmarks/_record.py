"""Record a benchmark's table in benchmarks/RESULTS.md under its own section.

Every benchmark script calls :func:`record` with its section name and a
markdown body; the section (delimited by HTML comments) is replaced in place,
stamped with machine, library versions and date, so that scripts can be
re-run independently without touching each other's results.
"""

import datetime
import fcntl
import os
import platform
import re
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
HEADER = (
    "# Benchmark results\n\n"
    "Written by the scripts in `benchmarks/`; each section says which script and command.\n"
)


def environment():
    """One line naming machine, Python and library versions, and the date."""
    import numba
    import numpy
    import scipy
    import sklearn

    return (
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, numpy {numpy.__version__}, "
        f"scipy {scipy.__version__}, scikit-learn {sklearn.__version__}, "
        f"numba {numba.__version__}; {datetime.date.today().isoformat()}"
    )


def record(section, body, command):
    """Replace (or append) ``section`` of RESULTS.md with ``body``."""
    start, end = f"<!-- begin {section} -->", f"<!-- end {section} -->"
    block = (
        f"{start}\n## {section}\n\n`{command}` — {environment()}\n\n"
        f"{body.strip()}\n{end}\n"
    )
    RESULTS.touch()
    with open(RESULTS, "r+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        text = fh.read() or HEADER
        pattern = re.compile(re.escape(start) + ".*?" + re.escape(end) + "\n?", re.S)
        text = pattern.sub(lambda _: block, text) if pattern.search(text) else text + "\n" + block
        fh.seek(0)
        fh.truncate()
        fh.write(text)


def add_order_option(parser, default="gap"):
    """``--order``: EG's visiting order, for the benchmarks whose records predate gap sampling.

    ``shuffle`` reproduces those records (uniform permutations); ``None`` as the
    default leaves each estimator its own.  See :func:`order_title`.
    """
    parser.add_argument("--order", choices=("gap", "shuffle"), default=default,
                        help="EG's visiting order (shuffle: the uniform permutations of the "
                             "runs recorded before gap sampling became EGCRF's default)")


def order_title(args):
    """The suffix of a section recorded with ``--order shuffle`` (kept beside the default's)."""
    return ", uniform order" if args.order == "shuffle" else ""


def markdown_table(header, rows):
    """Render rows (lists of cells) as a markdown table."""
    lines = ["| " + " | ".join(map(str, header)) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in rows]
    return "\n".join(lines)
