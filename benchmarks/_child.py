"""A benchmark's worker in a child process, measured from outside by ``/usr/bin/time -v``:
the peak resident set of the whole process, with the data loading included."""

import json
import re
import subprocess
import sys


def peak_rss_gb(stderr):
    """The peak resident set (GB) that ``/usr/bin/time -v`` printed in ``stderr`` (NaN when
    it printed none: the child was killed)."""
    kib = re.search(r"Maximum resident set size \(kbytes\): (\d+)", stderr)
    return int(kib.group(1)) * 1024 / 1e9 if kib else float("nan")


def worker_result(what, returncode, stdout, stderr):
    """The last JSON line of a worker's output, with its ``peak_rss_gb``; a RuntimeError
    naming ``what`` and ending with the worker's errors when it failed."""
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    if returncode != 0 or not lines:
        raise RuntimeError(f"{what} failed (exit {returncode}):\n" + stderr[-3000:])
    result = json.loads(lines[-1])
    result["peak_rss_gb"] = peak_rss_gb(stderr)
    return result


def start_worker(script, job, what, cwd=None, env=None):
    """Start ``script --worker <job as JSON>`` under ``/usr/bin/time -v``, without waiting
    (workers started together run at once); :func:`finish_worker` collects it."""
    command = ["/usr/bin/time", "-v", sys.executable, str(script), "--worker", json.dumps(job)]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, cwd=cwd, env=env)
    child.what = what
    return child


def finish_worker(child):
    """Wait for a child of :func:`start_worker`; its :func:`worker_result`."""
    out, err = child.communicate()
    return worker_result(child.what, child.returncode, out, err)


def run_worker(script, job, what, cwd=None, env=None):
    """Run ``script --worker <job as JSON>`` under ``/usr/bin/time -v`` and return
    :func:`worker_result`."""
    return finish_worker(start_worker(script, job, what, cwd, env))
