"""Record a benchmark's table in benchmarks/results/<topic>.md under its own section.

Every benchmark script calls :func:`record` with its section name, a markdown
body and the command that produced it; the topic is the script the command runs
(``bench_eg_conll.py`` writes ``results/eg_conll.md``).  The section (delimited
by HTML comments) is replaced in place, stamped with machine, library versions
and date, so that scripts can be re-run independently without touching each
other's results.  ``benchmarks/README.md`` is the one-page summary.
"""

import datetime
import fcntl
import os
import platform
import re
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


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


def topic_of(command):
    """The topic of a command: the name of the benchmark script it runs, without ``bench_``."""
    found = re.search(r"bench_(\w+)\.py", command)
    if found is None:
        raise ValueError(f"the command {command!r} names no benchmarks/bench_*.py script")
    return found.group(1)


def write_section(topic, section, block):
    """Replace (or append) ``section`` of ``results/<topic>.md`` with ``block``."""
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{topic}.md"
    start, end = f"<!-- begin {section} -->", f"<!-- end {section} -->"
    path.touch()
    with open(path, "r+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        text = fh.read() or (f"# bench_{topic}.py\n\nWritten by `benchmarks/bench_{topic}.py`; "
                             "each section names its command, the machine, the library "
                             "versions and the date.\n")
        pattern = re.compile(re.escape(start) + ".*?" + re.escape(end) + "\n?", re.S)
        text = pattern.sub(lambda _: block, text) if pattern.search(text) else text + "\n" + block
        fh.seek(0)
        fh.truncate()
        fh.write(text)


def archive_section(topic, section, reason):
    """Move ``section`` of ``results/<topic>.md`` to ``results/archive/<topic>.md``.

    For a section superseded by a later run: the archive keeps it (with
    ``reason`` above it) out of the summary and the documentation, which read
    only ``results/*.md``.

    Parameters
    ----------
    topic : str
        Record name, e.g. ``"dependency_ewt"``.
    section : str
        Title of the section, as recorded.
    reason : str
        One sentence: which section supersedes it, or why it no longer holds.
    """
    path = RESULTS / f"{topic}.md"
    text = path.read_text()
    start, end = f"<!-- begin {section} -->", f"<!-- end {section} -->"
    found = re.search(re.escape(start) + ".*?" + re.escape(end) + "\n?", text, re.S)
    if found is None:
        raise ValueError(f"results/{topic}.md has no section {section!r}")
    rest = text[:found.start()] + text[found.end():]
    path.write_text(re.sub(r"\n{3,}", "\n\n", rest).rstrip("\n") + "\n")
    archive = RESULTS / "archive" / f"{topic}.md"
    archive.parent.mkdir(exist_ok=True)
    head = archive.read_text() if archive.is_file() else (
        f"# bench_{topic}.py: superseded sections\n\nMoved here from `results/{topic}.md` "
        "when a later run superseded them; not shown in the documentation.\n")
    block = found.group(0).replace(f"## {section}\n", f"## {section}\n\n*Archived: {reason}*\n",
                                   1)
    archive.write_text(head.rstrip("\n") + "\n\n" + block.rstrip("\n") + "\n")
    write_summary()


def read_record(topic, directory=RESULTS):
    """The sections of ``results/<topic>.md``, parsed.

    Parameters
    ----------
    topic : str
        Record name, e.g. ``"eg_conll"``.
    directory : Path, default=RESULTS

    Returns
    -------
    sections : dict
        Title -> ``{"command", "date", "text", "tables"}``: the command line of
        the run, its date (ISO string), the section's markdown, and its tables
        in order, each a list of rows, each row a dict from column header to
        cell text (a header repeated in a table gets " (2)", " (3)", ...).
    """
    text = (directory / f"{topic}.md").read_text()
    sections = {}
    for title, body in re.findall(r"<!-- begin (.*?) -->\n(.*?)<!-- end \1 -->", text, re.S):
        stamp = re.search(r"^`(.*?)` — .*; (\d{4}-\d{2}-\d{2})$", body, re.M)
        sections[title] = {"command": stamp.group(1), "date": stamp.group(2), "text": body,
                           "tables": _markdown_tables(body)}
    return sections


def _markdown_tables(text):
    """Every markdown table of ``text`` as a list of row dicts keyed by the header.

    Parameters
    ----------
    text : str

    Returns
    -------
    tables : list of list of dict
    """
    tables, lines = [], text.splitlines()
    for k in range(len(lines) - 1):
        if lines[k].startswith("|") and re.fullmatch(r"\|(---\|)+", lines[k + 1]) and (
                k == 0 or not lines[k - 1].startswith("|")):
            header = _unique(_cells(lines[k]))
            rows = []
            for line in lines[k + 2:]:
                if not line.startswith("|"):
                    break
                rows.append(dict(zip(header, _cells(line))))
            tables.append(rows)
    return tables


def _cells(line):
    """The stripped cells of a markdown table row."""
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _unique(header):
    """Column names made unique: the second ``slowdown`` becomes ``slowdown (2)``.

    Parameters
    ----------
    header : list of str

    Returns
    -------
    names : list of str
    """
    seen = {}
    names = []
    for name in header:
        seen[name] = seen.get(name, 0) + 1
        names.append(name if seen[name] == 1 else f"{name} ({seen[name]})")
    return names


def record(section, body, command):
    """Replace (or append) ``section`` of the command's topic file with ``body``."""
    block = (
        f"<!-- begin {section} -->\n## {section}\n\n`{command}` — {environment()}\n\n"
        f"{body.strip()}\n<!-- end {section} -->\n"
    )
    write_section(topic_of(command), section, block)
    write_summary()


SUMMARY_HEAD = """# Benchmarks

Each script in this folder runs one comparison side by side and records its tables in
`results/<topic>.md` (the topic is the script's name without `bench_`), with the command,
the machine, the library versions and the date of each table. Run a script from this
folder, for example `python bench_eg_conll.py`; the ones that need the shared corpora read
them from `../../shared/data`. Timings are taken on a quiet machine unless the record says
otherwise; numba's first compilation is timed apart. Sections superseded by a later run
move to `results/archive/` (`_record.archive_section`), which is neither listed here nor
shown in the documentation.

| topic | script | what it measures | sections |
|---|---|---|---|
"""


def write_summary():
    """Rewrite ``benchmarks/README.md``: one row per record, from its script's docstring."""
    import ast

    rows = []
    for path in sorted(RESULTS.glob("*.md")):
        script = RESULTS.parent / f"bench_{path.stem}.py"
        doc = ast.get_docstring(ast.parse(script.read_text())) or ""
        what = " ".join(doc.split("\n\n")[0].split())
        sections = path.read_text().count("<!-- begin ")
        rows.append(f"| [{path.stem}](results/{path.name}) | `{script.name}` | {what} "
                    f"| {sections} |")
    (RESULTS.parent / "README.md").write_text(SUMMARY_HEAD + "\n".join(rows) + "\n")


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
