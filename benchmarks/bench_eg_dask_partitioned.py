"""dask on worker processes: a second-order parser's batch EG with its data partitioned.

UD English-EWT, the projective training sentences, second order (``SiblingDependencyStructure``,
hashed features with ``2 ** --hash-bits`` weights, gold UPOS and XPOS, single-root projective
trees): batch ``EGCRF`` at ``C = --C`` with ``tol=0`` (the duality gap evaluated after every
pass), ``--passes`` passes, fitted two ways, each in a child process of its own:

* ``one process``: ``n_jobs=None``, under ``/usr/bin/time -v``; its peak resident set (data
  loading included) sets the workers' memory limit;
* ``dask``: a ``distributed.LocalCluster`` of ``--workers`` worker processes (2) with one
  thread each and a ``memory_limit`` of ``--memory-fraction`` times that peak (with
  ``--no-spill``, dask's spilling of stored values to disk and its pausing of a worker near
  the limit turned off; the nanny still restarts a worker at 95% of the limit),
  ``joblib.parallel_config(backend="dask")``, ``n_jobs`` one per worker.  The client (the
  child process) encodes the treebank; each worker gets its chunk of the sentences once (its
  share of the parts), and keeps that chunk's dual variables; a pass sends ``w`` out and
  brings back each chunk's dual terms and losses and one ``F mu`` summed on the workers.

With ``--ceiling``, the cluster's two halves of the sentences are also fitted the same way, each
in a process of its own, both at once, with nothing sent between them: about the fastest pass
that two workers could have on this machine.

Both fit a small model first (200 sentences; on the cluster, on its workers), so that numba's
compilation is apart (reported).
Reported: seconds per pass (EG steps and gap evaluations, ``history_``), the speed-up, the final
primals and their relative difference; the peak resident set of the one-process fit, of the
client and of each worker (the kernel's ``ru_maxrss`` of each process, read when the fit ends:
the workers are not children that ``/usr/bin/time`` could wait for); what each worker holds during
the fit (dask's ``sizeof`` of its stored values, polled every second) against the whole fit's data
(the encoded batch and one float of ``theta`` per part), and the bytes over the loopback
interface per pass, the start included (psutil's counters of the machine, which runs nothing
else).  A model of the pass time on k workers (:func:`pass_model`) is fitted to these parts.

Run from benchmarks/:
    python bench_eg_dask_partitioned.py --passes 5
"""

import argparse
import json
import os
import resource
import sys
import threading
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _child import finish_worker, run_worker, start_worker  # noqa: E402
from _record import markdown_table, record  # noqa: E402

DATA = HERE.parents[1] / "shared" / "data" / "ud_en_ewt_r2.16"


def load(n=None):
    """The encoded projective training sentences (the first ``n``) and their heads."""
    from sklearn_struct.datasets import filter_projective, load_conllu
    from sklearn_struct.preprocessing import DependencyTokenEncoder

    train = load_conllu(DATA / "en_ewt-ud-train.conllu.gz")
    sentences = [{"form": f, "upos": u, "xpos": x}
                 for f, u, x in zip(train.form, train.upos, train.xpos)]
    kept, heads, _ = filter_projective(sentences, train.head)
    kept, heads = kept[:n], heads[:n]
    return DependencyTokenEncoder(pos="both").fit(kept).transform(kept), heads


def fit(X, y, job, n_jobs):
    from sklearn.exceptions import ConvergenceWarning

    from sklearn_struct import EGCRF
    from sklearn_struct.structures import SiblingDependencyStructure

    model = EGCRF(C=job["C"], solver="batch", tol=0, max_iter=job["passes"], n_jobs=n_jobs,
                  structure=SiblingDependencyStructure(hash_bits=job["hash_bits"]))
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, y)
    h = model.history_
    return model, {"fit_seconds": time.perf_counter() - start,
                   "pass_seconds": float(sum(h["seconds"]) + sum(h["eval_seconds"]))
                   / job["passes"], "primal": float(h["primal"][-1])}


def fit_half(X, y, job):
    """The ceiling's fit: half ``job["half"]`` of the sentences, cut where the cluster cuts
    its two chunks (about equal numbers of parts), fitted in this process alone; its timed
    fit starts at ``job["go"]`` (epoch seconds), so that the two halves run at once."""
    from sklearn_struct.solvers._chunks import _balanced_bounds
    from sklearn_struct.structures import SiblingDependencyStructure

    structure = SiblingDependencyStructure(hash_bits=job["hash_bits"])
    bounds = _balanced_bounds(structure.make_batch(X).part_offsets, 2)
    half = slice(bounds[job["half"]], bounds[job["half"] + 1])
    X, y = X[half], y[half]
    fit(X[:200], y[:200], dict(job, passes=1), None)
    late = time.time() - job["go"]
    time.sleep(max(0.0, -late))
    return {"half_sentences": len(y), "late_seconds": max(0.0, late), **fit(X, y, job, None)[1]}


def halves_at_once(job, setup_seconds):
    """Both halves of :func:`fit_half`, each in a child process of its own, at once."""
    go = time.time() + setup_seconds
    children = [start_worker(__file__, dict(job, way="half", half=half, go=go), f"half {half}",
                             cwd=HERE) for half in (0, 1)]
    results = [finish_worker(child) for child in children]
    if max(r["late_seconds"] for r in results) > 1.0:
        raise RuntimeError("a half's fit started late, not beside the other's: raise "
                           "--setup-seconds")
    return results


def _worker_report(dask_worker):
    """In a worker: its peak RSS and the bytes of what it stores."""
    from dask.sizeof import sizeof

    stored = dask_worker.data
    import psutil

    return {"peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9,
            "rss_gb": psutil.Process().memory_info().rss / 1e9,
            "stored_bytes": int(sum(sizeof(stored[key]) for key in list(stored)))}


def _communication_costs(client, n_bytes, repeats=5):
    """Seconds to send a vector of ``n_bytes`` to a worker and back (one way), and seconds
    per small task (submitted and gathered in a batch of 500), on this cluster."""
    import numpy as np

    vector = np.ones(n_bytes // 8)
    worker = sorted(client.scheduler_info()["workers"])[0]
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        future = client.scatter(vector, workers=[worker], hash=False)
        client.gather(client.submit(np.negative, future, workers=[worker], pure=False))
        seconds.append((time.perf_counter() - start) / 2)
    start = time.perf_counter()
    client.gather([client.submit(abs, -k, pure=False) for k in range(500)])
    return {"transfer_seconds": float(np.median(seconds)),
            "task_seconds": (time.perf_counter() - start) / 500}


def worker(job):
    """One way's fits in this (child) process; prints its measurements as JSON."""
    import joblib
    import psutil

    from dask.sizeof import sizeof

    from sklearn_struct.solvers import _chunks

    X, y = load(job["n_train"])
    out = {"sentences": len(y)}
    if job["way"] == "half":
        out.update(fit_half(X, y, job))
        print(json.dumps(out), flush=True)
        return
    if job["way"] == "one process":
        start = time.perf_counter()
        fit(X[:200], y[:200], dict(job, passes=1), None)
        out["compile_seconds"] = time.perf_counter() - start
        out.update(fit(X, y, job, None)[1])
        print(json.dumps(out), flush=True)
        return
    from dask.distributed import Client, LocalCluster

    if job["no_spill"]:  # a fit's stored values are its live dual variables, read every pass:
        import dask  # neither spilling them nor pausing the worker that holds them helps

        dask.config.set({"distributed.worker.memory.target": False,
                         "distributed.worker.memory.spill": False,
                         "distributed.worker.memory.pause": False})
    start = time.perf_counter()
    n_workers = job["workers"]
    cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                           memory_limit=job["memory_limit"], dashboard_address=None)
    client = Client(cluster)
    out["cluster_seconds"] = time.perf_counter() - start
    with joblib.parallel_config(backend="dask"):
        # the small fit on the workers too (below this size jobs stay in the client): each
        # worker process compiles, or loads, the kernels before the fit that is timed
        threshold = _chunks.MIN_PARTS_PER_REMOTE_CHUNK
        _chunks.MIN_PARTS_PER_REMOTE_CHUNK = 0
        start = time.perf_counter()
        fit(X[:200], y[:200], dict(job, passes=1), n_workers)
        out["compile_seconds"] = time.perf_counter() - start
        _chunks.MIN_PARTS_PER_REMOTE_CHUNK = threshold
        idle = client.run(_worker_report)
        network = psutil.net_io_counters(pernic=True)["lo"]
        stored, stop = {}, threading.Event()

        def watch():  # what each worker stores, at its largest during the fit
            while not stop.wait(1.0):
                for name, report in client.run(_worker_report).items():
                    stored[name] = max(stored.get(name, 0), report["stored_bytes"])

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            model, measured = fit(X, y, job, n_workers)
        finally:
            stop.set()
            watcher.join()
        after_network = psutil.net_io_counters(pernic=True)["lo"]
        after = client.run(_worker_report)
    out.update(measured)
    out["loopback_bytes_per_pass"] = (after_network.bytes_recv - network.bytes_recv) / job["passes"]
    out["workers"] = [{"peak_rss_gb": after[w]["peak_rss_gb"], "stored_bytes": stored.get(w, 0),
                       "idle_rss_gb": idle[w]["rss_gb"]} for w in sorted(after)]
    batch = model.structure_.make_batch(X)
    out["batch_bytes"] = int(sum(sizeof(value) for value in vars(batch).values()))
    out["parts"] = int(batch.part_offsets[-1])
    out.update(_communication_costs(client, 8 * 2 ** job["hash_bits"]))
    out["n_workers"] = n_workers
    out["client_peak_rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9
    client.close()
    cluster.close()
    print(json.dumps(out), flush=True)


#: Scheduler tasks per chunk and pass: the step (its task and the two that split its result,
#: the two that split its summary), the gap evaluation (three), and the tree of additions of
#: the chunks' ``F mu`` (one per chunk, less one).
TASKS_PER_CHUNK = 9
NETWORK_BYTES_PER_SECOND = 10e9 / 8


def pass_model(one_process, cluster, n_bytes):
    """Seconds per pass on ``k`` workers, from the measured parts (see the record).

    ``T(k) = T1 / k + c + k * TASKS_PER_CHUNK * t_task + hops(k) * n_bytes / bandwidth``:
    the one-process pass ``T1`` split evenly; ``c``, this process's work on weight-sized
    vectors and the chunks' imbalance, what the 2-worker pass leaves unexplained; the
    scheduler's time per task; and the hops of a weight vector that a pass waits for in
    turn: the broadcast of ``w`` (to one worker, then doubling rounds among the workers, as
    dask's ``replicate`` copies) and the tree sum of ``F mu`` (rounds of pairs, then one hop to
    the client).  ``star`` instead brings every chunk's ``F mu`` to the client.
    """
    import math

    def hops(k, star=False):
        rounds = math.ceil(math.log2(k)) if k > 1 else 0
        return (1 + rounds) + (k if star else rounds + 1)

    t1, t_task = one_process["pass_seconds"], cluster["task_seconds"]
    local_hop, measured = cluster["transfer_seconds"], cluster["n_workers"]
    c = max(0.0, cluster["pass_seconds"] - t1 / measured - measured * TASKS_PER_CHUNK * t_task
            - hops(measured) * local_hop)

    def seconds(k, work=t1, hop=n_bytes / NETWORK_BYTES_PER_SECOND, star=False):
        return work / k + c + k * TASKS_PER_CHUNK * t_task + hops(k, star) * hop

    return c, seconds


def run(job):
    """One way in a child process under ``/usr/bin/time -v``; its JSON plus peak RSS (GB)."""
    result = run_worker(__file__, job, job["way"], cwd=HERE)
    result["time_peak_rss_gb"] = result.pop("peak_rss_gb")
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--C", type=float, default=0.1)
    parser.add_argument("--hash-bits", type=int, default=23)
    parser.add_argument("--memory-fraction", type=float, default=0.6)
    parser.add_argument("--workers", type=int, default=2,
                        help="worker processes of the cluster (one thread each)")
    parser.add_argument("--no-spill", action="store_true",
                        help="the workers neither spill stored values to disk nor pause "
                        "near their memory limit")
    parser.add_argument("--ceiling", action="store_true",
                        help="also fit the cluster's two halves of the sentences in two "
                        "processes at once, with nothing between them: about the most that 2 "
                        "workers can gain on this machine")
    parser.add_argument("--setup-seconds", type=float, default=150.0,
                        help="--ceiling: the time each half's process gets to load, encode "
                        "and compile before the timed fits start together")
    parser.add_argument("--n-train", type=int, default=None,
                        help="the first projective sentences only (a trial run)")
    args = parser.parse_args()
    if args.worker:
        return worker(json.loads(args.worker))
    job = {"passes": args.passes, "C": args.C, "hash_bits": args.hash_bits,
           "n_train": args.n_train, "no_spill": args.no_spill, "workers": args.workers}
    load_start = os.getloadavg()[0]
    single = run(dict(job, way="one process"))
    print(single, flush=True)
    limit = int(args.memory_fraction * single["time_peak_rss_gb"] * 1e9)
    cluster = run(dict(job, way="dask", memory_limit=limit))
    print(cluster, flush=True)
    halves = None
    if args.ceiling:
        halves = halves_at_once(job, args.setup_seconds)
        print(halves, flush=True)
    relative = abs(cluster["primal"] - single["primal"]) / abs(single["primal"])
    rows = [["one process", f"{single['pass_seconds']:.2f}", "1.00x", f"{single['primal']:.10g}",
             "", f"{single['compile_seconds']:.0f}", f"{single['time_peak_rss_gb']:.2f}", ""],
            [f"dask, {args.workers} worker processes", f"{cluster['pass_seconds']:.2f}",
             f"{single['pass_seconds'] / cluster['pass_seconds']:.2f}x",
             f"{cluster['primal']:.10g}", f"{relative:.1e}", f"{cluster['compile_seconds']:.0f}",
             f"{cluster['client_peak_rss_gb']:.2f} (client)",
             f"{cluster['loopback_bytes_per_pass'] / 1e6:.0f}"]]
    whole = cluster["batch_bytes"] + 8 * cluster["parts"]
    workers = [[f"worker {k}", f"{w['idle_rss_gb']:.2f}", f"{w['peak_rss_gb']:.2f}",
                f"{limit / 1e9:.2f}",
                f"{w['stored_bytes'] / 1e9:.2f}", f"{whole / 1e9:.2f}"]
               for k, w in enumerate(cluster["workers"])]
    body = (
        f"UD English-EWT, {single['sentences']} projective training sentences "
        f"({cluster['parts']} parts), second order, "
        f"2^{args.hash_bits} hashed weights: batch EGCRF, C={args.C:g}, {args.passes} passes, "
        f"the gap evaluated after each. Cluster start-up {cluster['cluster_seconds']:.1f} s. "
        f"Load average (1 minute) at the start: {load_start:.2f}, at the end: "
        f"{os.getloadavg()[0]:.2f}.\n\n"
        + markdown_table(["way", "s/pass (steps and gap evaluations)", "speed-up",
                          "final primal", "relative difference", "first fit s (compilation)",
                          "peak RSS GB", "loopback MB per pass"], rows)
        + "\n\n" + markdown_table(
            ["process", "RSS before the fit GB", "peak RSS GB", "memory_limit GB",
             "stores at most GB",
             "the whole: batch and theta GB"], workers)
    )
    if halves:
        slowest = max(h["pass_seconds"] for h in halves)
        body += (
            "\n\nThe ceiling: the two halves that the cluster's chunks hold "
            f"({' and '.join(str(h['half_sentences']) for h in halves)} sentences, about "
            "equal parts), each fitted the same way in a process of its own, both at once, "
            "nothing sent between them: "
            f"{' and '.join(format(h['pass_seconds'], '.2f') for h in halves)} s/pass "
            f"(half the one-process pass: {single['pass_seconds'] / 2:.2f} s). A 2-worker "
            f"pass over these halves takes at least the slower one's {slowest:.2f} s, "
            f"{single['pass_seconds'] / slowest:.2f}x against one process; the cluster "
            f"reaches {slowest / cluster['pass_seconds']:.0%} of that speed-up. Each half's "
            "fit takes its own steps (its own adaptive rate), so its work per pass is close "
            "to, not equal to, that of the cluster's chunk.")
    n_bytes = 8 * 2 ** args.hash_bits
    c, seconds = pass_model(single, cluster, n_bytes)
    model_rows = [[f"{args.workers} (this machine, loopback: check)",
                   f"{seconds(args.workers, hop=cluster['transfer_seconds']):.2f} "
                   f"(measured {cluster['pass_seconds']:.2f})", "", "", ""]]
    t1 = single["pass_seconds"]
    for k in (8, 32, 128):
        model_rows.append([str(k), f"{seconds(k):.2f} ({t1 / seconds(k):.1f}x)",
                           f"{seconds(k, star=True):.2f}",
                           f"{seconds(k, work=8 * t1):.2f} "
                           f"({8 * t1 / seconds(k, work=8 * t1):.1f}x)",
                           f"{seconds(k, work=8 * t1, star=True):.2f}"])
    body += (
        f"\n\nA model of the pass time on k workers, fitted to the parts measured here: the "
        f"one-process pass T1 = {t1:.2f} s split evenly, a constant c = {c:.2f} s (this "
        f"process's vector work and the chunks' imbalance, what the {args.workers}-worker pass "
        f"leaves unexplained), {TASKS_PER_CHUNK} scheduler tasks per chunk at "
        f"{1e3 * cluster['task_seconds']:.2f} ms each, and the weight vectors ({n_bytes / 1e6:.0f} "
        f"MB) that a pass waits for in turn: the broadcast of w (one hop, then doubling rounds) "
        f"and the tree sum of F mu (rounds of pairs, then one hop to the client), "
        f"{1e3 * cluster['transfer_seconds']:.0f} ms per hop here and {n_bytes / 1.25e6:.0f} "
        f"ms on a 10 Gbit/s network. The 8x treebank (98k sentences, every copy with its own "
        f"words) costs 8 T1 in one process (the time per sentence stays flat, "
        f"bench_parsing_memory.py --experiment growth). 'Gathered' is the same pass with every "
        f"chunk's F mu brought to the client (k hops), as before the tree sum.\n\n"
        + markdown_table(["workers", "EWT second order s/pass (speed-up)",
                          "gathered s/pass", "8x treebank s/pass (speed-up)",
                          "gathered s/pass"], model_rows))
    print(body)
    if args.n_train is not None:
        return
    workers = "" if args.workers == 2 else f", {args.workers} workers"
    record(f"dask on processes: EWT second order, memory_limit {args.memory_fraction:g} of one "
           f"process{', no spilling' if args.no_spill else ''}{workers}", body,
           " ".join(["cd benchmarks && python bench_eg_dask_partitioned.py"] + sys.argv[1:]))


if __name__ == "__main__":
    main()
