"""First (cold numba cache) and warm runs of ``python -m sklearn_struct``, side by side.

Every run is a fresh process under ``/usr/bin/time -v`` (wall time, CPU time,
peak RSS).  A *cold* run gets an empty ``NUMBA_CACHE_DIR`` (what a fresh
``pip install -e .`` sees: numba caches nothing until the first call); the
*warm* run that follows reuses that directory.  Several source trees can be
compared in one invocation (e.g. this one and a ``git worktree`` of an older
commit): their runs alternate, so that the load of a shared machine falls on
both alike.  The load average is noted with every run; on a loaded machine the
CPU time (user + system) is the steadier measure, the wall time the one a user
waits.

Run from the repository root::

    git worktree add /tmp/base 05897de
    python benchmarks/bench_first_run.py --tree before=/tmp/base --tree after=. --repeats 3

Options: ``--python`` picks the interpreter (e.g. that of a fresh venv where
the tree is installed with ``pip install -e``), ``--no-record`` only prints.
With ``--default-cache``, numba keeps its cache where a user's would be (in
``__pycache__`` next to the sources), emptied of numba's files before every
cold run: with ``--python`` of a fresh venv where the tree is installed, that
is a genuinely fresh first run, recorded in a section of its own.
With ``--compile-profile``, one more cold process per tree lists the CPU time
of every numba function compiled at top level (numba's ``numba:compile``
events; callees are included in their caller's time).
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _record import markdown_table, record

#: What ``/usr/bin/time -v`` reports, and the fields kept.
TIME_FIELDS = {
    "wall": r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)",
    "user": r"User time \(seconds\): (\S+)",
    "sys": r"System time \(seconds\): (\S+)",
    "rss_mb": r"Maximum resident set size \(kbytes\): (\d+)",
}
COMPILE_NOTICE = "compiling numba kernels"
#: Runs the demo with a listener that times each top-level numba compilation (CPU s).
PROFILER = '''
import contextlib, io, json, sys, time
from numba.core import event

open_compiles, top_level = [], []


class Timer(event.Listener):
    def on_start(self, ev):
        open_compiles.append(time.process_time())

    def on_end(self, ev):
        start = open_compiles.pop()
        if not open_compiles:
            name = ev.data["dispatcher"].py_func.__name__.split("__")[0]  # no ops digest
            top_level.append((name, time.process_time() - start))


event.register("numba:compile", Timer())
from sklearn_struct.__main__ import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    main([])
print(json.dumps(top_level))
'''


def _seconds(clock):
    """``h:mm:ss`` or ``m:ss.ss`` as seconds."""
    total = 0.0
    for part in clock.split(":"):
        total = 60.0 * total + float(part)
    return total


def clear_source_cache(tree):
    """Delete numba's cache files from the ``__pycache__`` folders of ``tree``."""
    for path in Path(tree, "sklearn_struct").rglob("__pycache__/*.nb[ic]"):
        path.unlink()


def run_demo(python, tree, cache_dir):
    """One ``python -m sklearn_struct`` in ``tree`` with numba's cache in ``cache_dir``
    (``None``: numba's default, ``__pycache__`` next to the sources)."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    env.pop("NUMBA_CACHE_DIR", None)
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = str(cache_dir)
    load_before = os.getloadavg()[0]
    with tempfile.NamedTemporaryFile("r", suffix=".time") as timing:
        done = subprocess.run(
            ["/usr/bin/time", "-v", "-o", timing.name, python, "-m", "sklearn_struct"],
            cwd=tree, env=env, capture_output=True, text=True,
        )
        report = timing.read()
    if done.returncode != 0:
        raise RuntimeError(f"python -m sklearn_struct failed in {tree}:\n{done.stderr}")
    values = {key: re.search(pattern, report).group(1) for key, pattern in TIME_FIELDS.items()}
    fit = dict(re.findall(r"^(EGCRF|LogisticRegression).*?(\d+\.\d+)$", done.stdout, re.M))
    return {
        "wall": _seconds(values["wall"]),
        "cpu": float(values["user"]) + float(values["sys"]),
        "rss_mb": int(values["rss_mb"]) / 1024,
        "chain_fit": float(fit["EGCRF"]),
        "baseline_fit": float(fit["LogisticRegression"]),
        "notice": COMPILE_NOTICE in done.stderr,
        "load": (load_before + os.getloadavg()[0]) / 2,
        "summary": re.search(r"^EGCRF: .*$", done.stdout, re.M).group(0),
    }


def compile_profile(python, tree):
    """``[(function, CPU s)]`` of the top-level numba compilations of a cold demo run."""
    with tempfile.TemporaryDirectory(prefix="numba-cache-") as cache_dir:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, PYTHONPATH=str(tree))
        done = subprocess.run([python, "-c", PROFILER], cwd=tree, env=env,
                              capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def profile_table(python, trees):
    """Markdown table: CPU s of every top-level compilation, one column per tree."""
    profiles = {}
    for label, tree in trees.items():
        profiles[label] = {}
        for name, seconds in compile_profile(python, tree):
            profiles[label][name] = profiles[label].get(name, 0.0) + seconds
    names = list(dict.fromkeys(name for p in profiles.values() for name in p))
    rows = [[f"`{name}`"] + [f"{p[name]:.2f}" if name in p else "-"
                             for p in profiles.values()] for name in names]
    rows.append(["**total**"] + [f"**{sum(p.values()):.2f}**" for p in profiles.values()])
    header = ["numba function (top level)"] + [f"CPU s, {label}" for label in profiles]
    return markdown_table(header, rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", default=None, metavar="LABEL=PATH",
                        help="a source tree to run (repeatable; default: this repository)")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-record", action="store_true")
    parser.add_argument("--compile-profile", action="store_true")
    parser.add_argument("--default-cache", action="store_true")
    args = parser.parse_args(argv)
    trees = dict(item.split("=", 1) for item in args.tree or
                 [f"this tree={Path(__file__).resolve().parents[1]}"])
    trees = {label: Path(path).resolve() for label, path in trees.items()}

    runs = {(label, kind): [] for label in trees for kind in ("cold", "warm")}
    for repeat in range(args.repeats):
        for label, tree in trees.items():
            with tempfile.TemporaryDirectory(prefix="numba-cache-") as cache_dir:
                if args.default_cache:
                    clear_source_cache(tree)
                    cache_dir = None
                for kind in ("cold", "warm"):
                    result = run_demo(args.python, tree, cache_dir)
                    runs[label, kind].append(result)
                    print(f"[{repeat}] {label:<10} {kind}: wall {result['wall']:6.1f} s, "
                          f"cpu {result['cpu']:6.1f} s, chain fit {result['chain_fit']:5.1f} s, "
                          f"baseline fit {result['baseline_fit']:5.1f} s, "
                          f"RSS {result['rss_mb']:4.0f} MB, load {result['load']:.1f}, "
                          f"compile notice {result['notice']}", flush=True)

    rows = []
    for (label, kind), results in runs.items():
        median = {key: statistics.median(r[key] for r in results)
                  for key in ("wall", "cpu", "chain_fit", "baseline_fit", "rss_mb", "load")}
        rows.append([
            label, kind,
            " / ".join(f"{r['wall']:.1f}" for r in results), f"{median['wall']:.1f}",
            " / ".join(f"{r['cpu']:.1f}" for r in results), f"{median['cpu']:.1f}",
            f"{median['chain_fit']:.1f}", f"{median['baseline_fit']:.1f}",
            f"{median['rss_mb']:.0f}", f"{median['load']:.1f}",
            "yes" if all(r["notice"] for r in results) else
            ("no" if not any(r["notice"] for r in results) else "sometimes"),
        ])
    table = markdown_table(
        ["tree", "numba cache", "wall s (runs)", "wall s (median)", "CPU s (runs)",
         "CPU s (median)", "chain fit s", "baseline fit s", "peak RSS MB", "load avg",
         "compile notice"], rows)
    print(table)
    summaries = sorted({r["summary"] for results in runs.values() for r in results})
    body = (
        f"{table}\n\nEvery run is `/usr/bin/time -v {args.python} -m sklearn_struct` "
        "in a fresh process; *cold* has an empty numba cache "
        f"({'`__pycache__` emptied' if args.default_cache else 'new `NUMBA_CACHE_DIR`'}), "
        "*warm* reuses it. "
        f"Runs of the trees alternate ({args.repeats} each); load avg is the 1-minute load "
        f"average during the runs ({os.cpu_count()} cores). The chain model's result line:\n\n"
        + "\n".join(f"    {line}" for line in summaries) + "\n"
    )
    if args.compile_profile:
        profile = profile_table(args.python, trees)
        print(profile)
        body += ("\nCompilation of a cold run, CPU seconds per top-level numba function "
                 "(callees included; one more process per tree):\n\n" + profile + "\n")
    if not args.no_record:
        section = "First run of python -m sklearn_struct"
        record(section + (" (numba's default cache)" if args.default_cache else ""), body,
               "python benchmarks/bench_first_run.py " + " ".join(argv or sys.argv[1:]))


if __name__ == "__main__":
    main()
