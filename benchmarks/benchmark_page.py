"""The benchmarks page: five questions, each answered by a figure and one sentence.

Every number comes from the current records in ``results/`` (parsed by
``_record.read_record``), never from this file: the answers are formatted from
the records' tables, the figures are drawn from them, and each figure names
the command and date of the sections it shows.  Running the script writes

- the figures, ``doc/_static/benchmarks/<question>.png`` (each PNG carries a
  digest of its source sections, so a test can tell when a record changed
  after the figure was drawn);
- the documentation page ``doc/benchmarks.rst``;
- the headline table of ``README.md`` (between its ``headlines`` markers).

``tests/meta/test_benchmark_page.py`` fails when any of the three disagrees with
the records.  Only the figures need matplotlib (the ``benchmarks`` extra).

Run from benchmarks/ after re-recording a benchmark:  python benchmark_page.py
"""

import hashlib
import re
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _record import read_record  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "doc" / "_static" / "benchmarks"
PAGE = ROOT / "doc" / "benchmarks.rst"
README = ROOT / "README.md"
README_START = "<!-- headlines: written by benchmarks/benchmark_page.py from the records -->"
README_END = "<!-- end of headlines -->"
#: PNG text key of the digest of the sections a figure was drawn from.
DIGEST_KEY = "Source digest"


@dataclass
class Headline:
    """One question of the page, its answer and where both come from.

    ``sources`` are ``(topic, section title)`` pairs: the records the figure and
    the answer are drawn from, read once when the headline is made.
    """

    name: str
    question: str
    answer: str
    sources: list
    data: dict = field(default_factory=dict)  # what the figure plots, from the records
    sections: list = field(init=False)  # the sources' parsed sections (read_record)

    def __post_init__(self):
        self.sections = [read_record(topic)[title] for topic, title in self.sources]

    def digest(self):
        """Digest of the source sections' text: changes when any of them is re-recorded.

        Returns
        -------
        digest : str
            16 hexadecimal digits.
        """
        sha = hashlib.sha1()
        for section in self.sections:
            sha.update(section["text"].encode())
        return sha.hexdigest()[:16]

    def stamps(self):
        """One line per source command: record, command and date.

        Returns
        -------
        lines : list of str
        """
        lines = [f"results/{topic}.md: {section['command']} ({section['date']})"
                 for (topic, _), section in zip(self.sources, self.sections)]
        return list(dict.fromkeys(lines))  # the dask jobs share a record, not a command


def _table_with(section, column):
    """The first table of ``section`` that has ``column``.

    Parameters
    ----------
    section : dict
        A section as :func:`_record.read_record` returns it.
    column : str
        A column header.

    Returns
    -------
    rows : list of dict
    """
    return next(table for table in section["tables"] if table and column in table[0])


def speed_against_crfsuite():
    """EGCRF against python-crfsuite's L-BFGS on CoNLL-2000 (``bench_eg_conll.py``)."""
    title = "EGCRF vs CRFsuite on CoNLL-2000"
    rows = {row["method"]: row for row in
            _table_with(read_record("eg_conll")[title], "seconds to 0.1% (EG: certified)")}
    seconds = {method: float(row["seconds to 0.1% (EG: certified)"])
               for method, row in rows.items()}
    one, two, crfsuite = (rows["EGCRF (1 core)"], rows["EGCRF (n_jobs=2)"],
                          rows["python-crfsuite L-BFGS"])
    answer = (f"On CoNLL-2000 chunking, with the same model, ``EGCRF`` certifies 0.1% of the "
              f"optimum in {one['seconds to 0.1% (EG: certified)']} s on one core "
              f"({two['seconds to 0.1% (EG: certified)']} s on two) against "
              f"{crfsuite['seconds to 0.1% (EG: certified)']} s for CRFsuite's L-BFGS "
              f"({one['ratio to CRFsuite']}x its time), at the same test F1 "
              f"({one['test chunk F1']} against {crfsuite['test chunk F1']}).")
    return Headline("speed_crfsuite", "How fast is EGCRF against CRFsuite?", answer,
                    [("eg_conll", title)], {"seconds": seconds})


def speed_against_bcfw():
    """EGStructuredSVM against pystruct's BCFW on the OCR letters (``bench_ssvm_bcfw.py``)."""
    title = "EGStructuredSVM vs BCFW (pystruct) on OCR letters"
    section = read_record("ssvm_bcfw")[title]
    runs = _table_with(section, "run")
    medians = {}
    for method in dict.fromkeys(row["method"] for row in runs):
        medians[method] = statistics.median(float(row["wall s"]) for row in runs
                                            if row["method"] == method)
    first, certified, bcfw = (medians[m] for m in medians)
    per_C = _table_with(section, "BCFW relative gap (100 passes)")
    gaps = {"C": [float(row["C"]) for row in per_C],
            "online EG (at most 100 passes)": [float(row["EG relative gap"]) for row in per_C],
            "working set (to 1e-2)": [float(row["working-set relative gap"]) for row in per_C],
            "BCFW (100 passes)": [float(row["BCFW relative gap (100 passes)"])
                                  for row in per_C]}
    # where BCFW is still far from the optimum after its 100 passes
    weak = [row for row in per_C if float(row["BCFW relative gap (100 passes)"]) > 0.1]
    answer = (f"On the OCR letters at C = 0.1, ``EGStructuredSVM`` has a primal within 0.5% of "
              f"the optimum after {first:.2f} s against {bcfw:.2f} s for pystruct's BCFW "
              f"({bcfw / first:.1f}x sooner; medians of {len(runs) // len(medians)} runs) and "
              f"certifies it after {certified:.2f} s ({bcfw / certified:.1f}x); at C = "
              f"{' and '.join(row['C'] for row in weak)} its working-set solver certifies "
              f"relative gaps of {' and '.join(row['working-set relative gap'] for row in weak)}"
              f" in {' and '.join(row['working-set seconds'] for row in weak)} s, where BCFW "
              f"ends its 100 passes at "
              f"{' and '.join(row['BCFW relative gap (100 passes)'] for row in weak)}.")
    return Headline("speed_bcfw", "How fast is EGStructuredSVM against pystruct's BCFW?",
                    answer, [("ssvm_bcfw", title)],
                    {"medians": dict(zip(("EG: first primal within 0.5%", "EG: certified",
                                          "BCFW"), (first, certified, bcfw))),
                     "gaps": gaps})


def accuracy_against_papers():
    """Table 2 of Collins et al. (2008) on MNIST and Table 5 of Zhang et al. (2007)."""
    mnist_title = "Collins et al. 2008 section 7.1: EG on full MNIST (Figures 4-11, Table 2)"
    table2 = _table_with(read_record("eg_mnist_paper")[mnist_title], "paper error %")
    C = [float(row["C (paper)"]) for row in table2]
    paper_error = [float(row["paper error %"]) for row in table2]
    path_error = [float(row["eg_path error %"].split()[0]) for row in table2]
    sm_title = "SM logistic regression (Tables 5 and 6)"
    sm_rows = [row for row in _table_with(read_record("sm")[sm_title], "paper acc. %")
               if row["paper acc. %"]]
    simulated = [row for row in sm_rows if row["data set"].startswith("simulated")]
    worst_mnist = max(abs(a - b) for a, b in zip(paper_error, path_error))
    worst_sm = max(abs(float(r["test acc. %"]) - float(r["paper acc. %"])) for r in simulated)
    answer = (f"Along the warm-started C path on MNIST, EG's validation error is within "
              f"{worst_mnist:.2f} points of Table 2 of Collins et al. (2008) at every one of its "
              f"{len(C)} values of C; SM-1 to SM-5 and Newton reach test accuracies within "
              f"{worst_sm:.2f} points of Table 5 of Zhang et al. (2007) on its simulated data.")
    return Headline(
        "accuracy_papers", "Do the papers' numbers come out?", answer,
        [("eg_mnist_paper", mnist_title), ("sm", sm_title)],
        {"C": C, "paper_error": paper_error, "path_error": path_error,
         "sm": [(row["data set"], row["method"], float(row["paper acc. %"]),
                 float(row["test acc. %"]), float(row["paper iterations"]),
                 float(row["iterations"])) for row in sm_rows]})


#: The learners of ``bench_time_to_accuracy.py``, by their name in its records.
TIME_TO_ACCURACY = {"averaged perceptron": "averaged perceptron",
                    "EGStructuredSVM C=0.01": "EGStructuredSVM (C=0.01)",
                    'EGCRF C=0.1, start="truth"': 'EGCRF (C=0.1, start="truth")',
                    # (recorded with --shuffled; drawn where a record has it)
                    'EGCRF C=0.05, start="truth", order="shuffle"':
                        'EGCRF (C=0.05, start="truth", order="shuffle")'}


def parsing_time_to_accuracy():
    """Dev UAS on EWT against fit seconds, both orders (``bench_time_to_accuracy.py``)."""
    record = read_record("time_to_accuracy")
    titles = {order: f"Time to accuracy on EWT, order {order}" for order in (1, 2)}
    curves, ratios, test = {}, {}, {}
    for order, title in titles.items():
        summary = {row["learner"]: row for row in _table_with(record[title], "time ratio")}
        points = _table_with(record[title], "pass")
        for name, label in TIME_TO_ACCURACY.items():
            if name not in summary:
                continue
            cells = [row[f"{name}: fit s / dev UAS"] for row in points]
            seconds, dev = zip(*(map(float, cell.split(" / ")) for cell in cells if cell))
            curves[order, label] = {"seconds": seconds, "dev_uas": dev}
            row = summary[name]
            ratios[order, name] = (f"{row['time ratio']}x" if row["time ratio"] else
                                   f"not within {len(seconds)} passes (best dev UAS "
                                   f"{row['best dev UAS']})")
            test[order, name] = row["test UAS at it"]
    svm, crf, shuffled = list(TIME_TO_ACCURACY)[1:]
    uniform = " and ".join(ratios[order, shuffled] for order in (1, 2)
                           if (order, shuffled) in ratios)
    answer = (f"On UD English-EWT (gold tags, identical hashed features), ``EGStructuredSVM`` "
              f"reaches the averaged perceptron's best dev UAS in {ratios[1, svm]} and "
              f"{ratios[2, svm]} its time (first and second order); "
              f"``EGCRF(start=\"truth\")`` in {ratios[1, crf]} and {ratios[2, crf]}"
              + (f", and at C=0.05 in a new permutation every pass in {uniform}"
                 if uniform else "")
              + f". At its best dev UAS the SVM's test UAS at second order is {test[2, svm]}, "
              f"against {test[2, 'averaged perceptron']} for the perceptron.")
    return Headline("parsing_time_to_accuracy",
                    "How soon does EG parse as well as the perceptron?", answer,
                    [("time_to_accuracy", title) for title in titles.values()],
                    {"curves": curves})


def scaling():
    """Time per pass against data size; speed-up of two cores (dask, threads, contention)."""
    sizes_title = "Dual extragradient: scaling on synthetic alignments"
    sizes = _table_with(read_record("extragradient_scaling")[sizes_title], "edges")
    by_memory = {}
    for row in sizes:
        by_memory.setdefault(row["memory"], []).append((int(row["edges"]),
                                                        float(row["s / pass"])))
    dask = read_record("eg_dask")
    jobs = {"OCR letters": "Batch EG on a dask cluster: ocr",
            "CoNLL-2000": "Batch EG on a dask cluster: conll",
            "EWT parsing": "Batch EG on a dask cluster: ewt"}
    speedups = {}
    for job, title in jobs.items():
        rows = {row["way"]: row for row in _table_with(dask[title], "fit speed-up")}
        speedups[job] = {way: float(rows[way]["fit speed-up"].rstrip("x"))
                         for way in ("two joblib threads", "dask, two worker processes")}
    growth_title = "Growth from 1x to 8x EWT (first order, streamed)"
    growth = _table_with(read_record("parsing_memory")[growth_title], "peak RSS GB")
    contention_title = "Two processes at once on this machine"
    contention = _table_with(read_record("core_contention")[contention_title], "slowdown")
    slowdown = statistics.mean(float(row["slowdown"].rstrip("x")) for row in contention)
    per_edge = [float(row["us / pass / edge"]) for row in sizes if row["memory"] == "full"]
    answer = (f"Time per pass grows linearly with the data ({min(per_edge):.2f}-"
              f"{max(per_edge):.2f} µs per edge, dual extragradient); a parser streaming its "
              f"feature cache peaks at {growth[0]['peak RSS GB']} GB on EWT and "
              f"{growth[-1]['peak RSS GB']} GB on 8 copies ({growth[-1]['against 1x']}x the "
              f"time per sentence); two worker processes make batch EG "
              f"{speedups['EWT parsing']['dask, two worker processes']:.2f}x faster on "
              f"EWT parsing, not on CoNLL-2000 "
              f"({speedups['CoNLL-2000']['dask, two worker processes']:.2f}x), where memory "
              f"bandwidth limits: two processes slow each other {slowdown:.2f}x.")
    return Headline("scaling", "How does training scale with data size and cores?", answer,
                    [("extragradient_scaling", sizes_title),
                     *[("eg_dask", title) for title in jobs.values()],
                     ("core_contention", contention_title), ("parsing_memory", growth_title)],
                    {"sizes": by_memory, "speedups": speedups, "slowdown": slowdown,
                     "growth": [(int(row["training sentences"]),
                                 float(row["µs/sentence per pass"]), float(row["peak RSS GB"]))
                                for row in growth]})


def headlines():
    """Every question of the page, in order, from the current records.

    Returns
    -------
    items : list of Headline
    """
    return [speed_against_crfsuite(), speed_against_bcfw(), accuracy_against_papers(),
            parsing_time_to_accuracy(), scaling()]


def readme_table(items):
    """The README's headline table (markdown), between its markers.

    Parameters
    ----------
    items : list of Headline

    Returns
    -------
    text : str
    """
    lines = [README_START, "", "| question | answer | plot | record |", "|---|---|---|---|"]
    for item in items:
        topics = dict.fromkeys(topic for topic, _ in item.sources)
        links = ", ".join(f"[{topic}](benchmarks/results/{topic}.md)" for topic in topics)
        answer = item.answer.replace("``", "`")
        lines.append(f"| {item.question} | {answer} | [{item.name}.png]"
                     f"(doc/_static/benchmarks/{item.name}.png) | {links} |")
    return "\n".join(lines + ["", README_END])


def page_text(items):
    """``doc/benchmarks.rst``: per question, a figure, the answer and links to the records.

    Parameters
    ----------
    items : list of Headline

    Returns
    -------
    text : str
        The page's reStructuredText.
    """
    head = ("Benchmarks\n==========\n\n"
            "Five questions about speed and accuracy, each answered by one figure and one "
            "sentence.  Both come from the current records of the benchmark scripts "
            "(``benchmarks/results/``; ``cd benchmarks && python benchmark_page.py`` redraws "
            "the figures and rewrites this page); every figure names the commands and dates "
            "of the runs it shows, and :doc:`benchmark_records` has every table in full.\n\n"
            ".. toctree::\n   :hidden:\n\n   benchmark_records\n")
    parts = [head]
    for item in items:
        dates = {}
        for (topic, _), section in zip(item.sources, item.sections):
            dates.setdefault(topic, set()).add(section["date"])
        links = ", ".join(f"`{topic} <benchmark_records.html#bench-{topic.replace('_', '-')}"
                          f"-py>`__ ({', '.join(sorted(days))})" for topic, days in dates.items())
        parts.append(f"{item.question}\n{'-' * len(item.question)}\n\n"
                     f".. image:: _static/benchmarks/{item.name}.png\n"
                     f"   :alt: {item.question}\n\n{item.answer}\n\nFull record: {links}.\n")
    return "\n".join(parts)


def write_readme(items):
    """Replace the headline table of README.md (between its markers).

    Parameters
    ----------
    items : list of Headline
    """
    text = README.read_text()
    pattern = re.compile(re.escape(README_START) + ".*?" + re.escape(README_END), re.S)
    if not pattern.search(text):
        raise ValueError(f"README.md has no {README_START!r} ... {README_END!r} markers")
    README.write_text(pattern.sub(lambda _: readme_table(items), text))


def png_digest(path):
    """The ``DIGEST_KEY`` text of a PNG written by this script.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    digest : str or None
        None when the PNG has no such text chunk.
    """
    data = Path(path).read_bytes()
    position = 8  # after the signature: chunks of length, type, data, CRC
    while position < len(data):
        length = int.from_bytes(data[position:position + 4], "big")
        kind = data[position + 4:position + 8]
        if kind == b"tEXt":
            key, _, value = data[position + 8:position + 8 + length].partition(b"\0")
            if key.decode("latin-1") == DIGEST_KEY:
                return value.decode("latin-1")
        position += 12 + length
    return None


def draw(item):
    """Draw ``item``'s figure into ``FIGURES`` (stamped with its sources and their digest).

    Parameters
    ----------
    item : Headline
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = DRAWINGS[item.name](plt, item.data)
    stamps = item.stamps()
    fig.text(0.01, 0.01, "\n".join(stamps), fontsize=7.5, color="0.3", va="bottom")
    fig.tight_layout(rect=(0, 0.035 * len(stamps) + 0.02, 1, 1))
    FIGURES.mkdir(parents=True, exist_ok=True)
    fig.savefig(FIGURES / f"{item.name}.png", dpi=90, metadata={DIGEST_KEY: item.digest()})
    plt.close(fig)


def _draw_speed_crfsuite(plt, data):
    """Figure: seconds to 0.1% of the optimum, per method.

    Parameters
    ----------
    plt : module
        ``matplotlib.pyplot``.
    data : dict
        The headline's ``data``.

    Returns
    -------
    fig : matplotlib.figure.Figure
    """
    fig, ax = plt.subplots(figsize=(7, 2.8))
    names = list(data["seconds"])
    ax.barh(names, [data["seconds"][n] for n in names], color=["C0", "C0", "C7"])
    for k, name in enumerate(names):
        ax.text(data["seconds"][name], k, f" {data['seconds'][name]:.1f} s", va="center")
    ax.invert_yaxis()
    ax.set_xlabel("seconds to 0.1% of the optimum (EG: certified by the duality gap)")
    ax.set_title("CoNLL-2000 chunking, identical CRF")
    ax.set_xlim(0, 1.2 * max(data["seconds"].values()))
    return fig


def _draw_speed_bcfw(plt, data):
    """Figure: time to 0.5% (medians) and the final gap per C.

    Parameters
    ----------
    plt : module
        ``matplotlib.pyplot``.
    data : dict
        The headline's ``data``.

    Returns
    -------
    fig : matplotlib.figure.Figure
    """
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.2))
    names = list(data["medians"])
    left.barh(names, [data["medians"][n] for n in names], color=["C0", "C0", "C7"])
    for k, name in enumerate(names):
        left.text(data["medians"][name], k, f" {data['medians'][name]:.2f} s", va="center")
    left.invert_yaxis()
    left.set_xlim(0, 1.3 * max(data["medians"].values()))
    left.set_xlabel("seconds to a primal within 0.5% (median)")
    left.set_title("OCR letters, C = 0.1")
    gaps = data["gaps"]
    for name, style in zip([n for n in gaps if n != "C"], ("o-", "s-", "^--")):
        right.loglog(gaps["C"], gaps[name], style, label=name)
    right.set_xlabel("C")
    right.set_ylabel("final relative duality gap")
    right.set_title("per C")
    right.legend(fontsize=7)
    return fig


def _draw_accuracy_papers(plt, data):
    """Figure: Table 2's errors and Table 5's accuracies, ours against the papers'.

    Parameters
    ----------
    plt : module
        ``matplotlib.pyplot``.
    data : dict
        The headline's ``data``.

    Returns
    -------
    fig : matplotlib.figure.Figure
    """
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    left.semilogx(data["C"], data["paper_error"], "o-", color="C7", label="paper (Table 2)")
    left.semilogx(data["C"], data["path_error"], "s-", color="C0", label="sklearn_struct")
    left.invert_xaxis()
    left.set_xlabel("C (the paper's convention)")
    left.set_ylabel("validation error (%)")
    left.set_title("Collins et al. 2008, MNIST path")
    left.legend(fontsize=7)
    by_data_set = {}
    for data_set, _method, paper, ours, *_ in data["sm"]:
        by_data_set.setdefault(data_set, []).append((paper, ours))
    for (data_set, points), marker in zip(by_data_set.items(), "os^"):
        right.plot(*zip(*points), marker, ls="none", label=data_set)
    low = min(min(p, o) for _, _, p, o, *_ in data["sm"]) - 1
    high = max(max(p, o) for _, _, p, o, *_ in data["sm"]) + 1
    right.plot([low, high], [low, high], color="0.6", lw=0.8)
    right.set_xlabel("paper's test accuracy (%)")
    right.set_ylabel("sklearn_struct's (%)")
    right.set_title("Zhang et al. 2007, Table 5 (SM-1..5, Newton)")
    right.legend(fontsize=7)
    return fig


def _draw_parsing_time_to_accuracy(plt, data):
    """Figure: dev UAS against fit seconds, one panel per order.

    Parameters
    ----------
    plt : module
        ``matplotlib.pyplot``.
    data : dict
        The headline's ``data``.

    Returns
    -------
    fig : matplotlib.figure.Figure
    """
    fig, panels = plt.subplots(1, 2, figsize=(9, 3.2), sharey=True)
    for order, panel in zip((1, 2), panels):
        for label, colour in zip(TIME_TO_ACCURACY.values(), ("C7", "C1", "C0", "C2")):
            if (order, label) not in data["curves"]:
                continue
            curve = data["curves"][order, label]
            panel.plot(curve["seconds"], curve["dev_uas"], ".-", color=colour, label=label)
        best = max(data["curves"][order, "averaged perceptron"]["dev_uas"])
        panel.axhline(best, color="C7", lw=0.8, ls=":")
        panel.set_title(f"{'first' if order == 1 else 'second'} order", fontsize=9)
        panel.set_xlabel("fit seconds (one core; dev scored with the clock paused)")
    panels[0].set_ylabel("dev UAS, punctuation excluded")
    panels[0].set_ylim(84, 90)
    panels[0].legend(fontsize=7, loc="lower right")
    fig.suptitle("UD English-EWT, projective, gold tags, identical hashed features",
                 fontsize=10)
    return fig


def _draw_scaling(plt, data):
    """Figure: time per pass against edges; a streamed parser's growth; speed-up on two cores.

    Parameters
    ----------
    plt : module
        ``matplotlib.pyplot``.
    data : dict
        The headline's ``data``.

    Returns
    -------
    fig : matplotlib.figure.Figure
    """
    fig, (left, middle, right) = plt.subplots(1, 3, figsize=(13, 3.6))
    for memory, points in data["sizes"].items():
        edges, seconds = zip(*points)
        left.plot([e / 1000 for e in edges], seconds, "o-", label=f'memory="{memory}"')
    left.set_xlim(0)
    left.set_ylim(0)
    left.set_xlabel("thousands of edges in the training set")
    left.set_ylabel("seconds per pass")
    left.set_title("Dual extragradient, synthetic alignments")
    left.legend(fontsize=7)
    sentences, per_sentence, peak = zip(*data["growth"])
    thousands = [n / 1000 for n in sentences]
    middle.plot(thousands, per_sentence, "o-", color="C0")
    middle.set_ylim(0, 1.3 * max(per_sentence))
    middle.set_xlabel("training sentences (thousands)")
    middle.set_ylabel("µs per sentence per pass", color="C0")
    middle.set_title("EWT first-order EGCRF, cache streamed")
    memory = middle.twinx()
    memory.plot(thousands, peak, "s--", color="C1")
    memory.set_ylim(0, 1.3 * max(peak))
    memory.set_ylabel("peak resident memory (GB)", color="C1")
    jobs = list(data["speedups"])
    ways = list(data["speedups"][jobs[0]])
    for k, way in enumerate(ways):
        right.bar([j + 0.38 * (k - 0.5) for j in range(len(jobs))],
                  [data["speedups"][job][way] for job in jobs], 0.38, label=way)
    right.axhline(1.0, color="0.3", lw=0.8)
    # measured on CoNLL-2000 only: drawn over its bars
    conll = jobs.index("CoNLL-2000")
    right.hlines(2.0 / data["slowdown"], conll - 0.45, conll + 0.45, color="C3", ls="--",
                 label="CoNLL-2000's ceiling (two processes slow each other)")
    right.set_xticks(range(len(jobs)), jobs)
    right.set_ylabel("speed-up of a fit on 2 cores")
    right.set_title("Batch EG: threads and dask workers")
    right.set_ylim(0, 2.6)
    right.legend(fontsize=7, loc="upper left")
    return fig


DRAWINGS = {"speed_crfsuite": _draw_speed_crfsuite, "speed_bcfw": _draw_speed_bcfw,
            "accuracy_papers": _draw_accuracy_papers,
            "parsing_time_to_accuracy": _draw_parsing_time_to_accuracy, "scaling": _draw_scaling}


def main():
    items = headlines()
    for item in items:
        draw(item)
    PAGE.write_text(page_text(items))
    write_readme(items)
    for item in items:
        print(f"{item.question}\n  {item.answer}")


if __name__ == "__main__":
    main()
