"""Contiguous chunks of the examples of a batch: for joblib workers, or bounded memory.

Every solver that splits its work over examples uses :class:`ExampleChunks`:
batch EG and the structured hinge evaluate chunks in parallel (one per worker;
online EG deals the examples to numba threads for its passes and its
evaluations alike, and uses chunks only where a structure lacks the kernel
operations of an evaluation), the
low-memory dual extragradient walks over chunks of at most ``max_parts``
parts, building each sub-batch only when it is needed.

Data stays where it is used.  On a dask cluster (joblib's ``"dask"`` backend)
the sub-batches are scattered to the workers once, and values a solver keeps
per chunk across passes (:meth:`ExampleChunks.resident`, e.g. batch EG's dual
variables) stay on the worker that computed them: a pass ships only the
``shared`` arguments (a weight vector, which :meth:`ExampleChunks.share` sends
once for several calls) and brings back small summaries.  Elsewhere the
same calls run in joblib's local workers on the objects themselves.
"""

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs
from joblib.parallel import get_active_backend

from .._memory import random_access_copy

__all__ = ["ExampleChunks", "WorkerLostError"]

#: Below this many parts per chunk a cluster costs more than it saves (a round
#: trip to the workers per call against tens of nanoseconds of inference per part;
#: ``benchmarks/results/eg_dask.md``); such jobs stay in this process.
MIN_PARTS_PER_REMOTE_CHUNK = 2_000_000
#: Arguments larger than this are scattered to the workers before the tasks
#: that use them (dask warns of, and slowly ships, large task graphs); smaller
#: ones travel inside the tasks, which saves a round trip.
LARGE_ARGUMENT_BYTES = 1_000_000


def _first(pair):
    return pair[0]


def _second(pair):
    return pair[1]


def _owned(value):
    """``value``, or a copy where it is a large array in a buffer that it does not own (an
    argument a dask worker deserialized): a copy in memory backed by huge pages, on which the
    kernels' random reads of a weight vector miss the TLB far less often
    (``benchmarks/results/eg_dask_partitioned.md``, :mod:`sklearn_struct._memory`)."""
    if isinstance(value, np.ndarray) and not value.flags.owndata and (
            value.nbytes > LARGE_ARGUMENT_BYTES):
        return random_access_copy(value)
    return value


def _unpacked(function, first, slices, *shared):
    return function(first, *slices, *(_owned(value) for value in shared))


def _tree_sum(items, add):
    """``items`` summed in pairs, round after round (the same order on a cluster, where
    each ``add`` is a task, and here)."""
    while len(items) > 1:
        items = [add(items[k], items[k + 1]) if k + 1 < len(items) else items[k]
                 for k in range(0, len(items), 2)]
    return items[0]


def _nbytes(value):
    """Bytes of the arrays in ``value`` (an array or a tuple of them), 0 for anything else."""
    if isinstance(value, tuple):
        return sum(_nbytes(item) for item in value)
    return getattr(value, "nbytes", 0)


def _balanced_bounds(part_offsets, n_chunks):
    """Example bounds of ``n_chunks`` consecutive chunks of about equal numbers of parts
    (the work of a chunk grows with its parts: a second-order parse of a long sentence
    costs hundreds of short ones), each of at least one example."""
    n = len(part_offsets) - 1
    targets = np.linspace(0, part_offsets[-1], n_chunks + 1)[1:-1]
    bounds = [0]
    for k, stop in enumerate(np.searchsorted(part_offsets, targets).tolist(), start=1):
        bounds.append(min(max(stop, bounds[-1] + 1), n - (n_chunks - k)))
    return bounds + [n]


class WorkerLostError(RuntimeError):
    """A dask worker died during a fit, and with it data that lived on it alone."""


def _gathered(client, futures):
    """``client.gather(futures)``; a worker lost with the chunks it held is a
    :class:`WorkerLostError`, not dask's cancelled futures."""
    from distributed.client import FutureCancelledError
    from distributed.scheduler import KilledWorker

    try:
        return client.gather(futures)
    except (FutureCancelledError, KilledWorker) as error:
        raise WorkerLostError(
            "a dask worker was lost during the fit, and with it the chunk of examples (and "
            "its dual variables) that lived on it alone; the fit stopped and the estimator "
            "is left as it was before fit. Fit again: the cluster replaces lost workers "
            f"and the examples are scattered anew. ({type(error).__name__}: {error})"
        ) from None


def _dask_client():
    """The dask client behind joblib's active backend, or None."""
    return getattr(get_active_backend()[0], "client", None)


class ExampleChunks:
    """Consecutive example ranges of a batch with their sub-batches.

    Parameters
    ----------
    structure : BaseStructure
        Builds the sub-batches (``take``).
    batch : batch object
    n_jobs : int or None, default=None
        Split into one chunk per joblib worker (``None`` or 1: one chunk, the
        batch itself).
    max_parts : int or None, default=None
        Instead, chunks of at most this many parts (at least one example
        each), built lazily when iterated.
    """

    def __init__(self, structure, batch, n_jobs=None, max_parts=None):
        self.structure, self.batch, self.n_jobs = structure, batch, n_jobs
        n = batch.n_samples
        part_offsets = batch.part_offsets
        if max_parts is not None and part_offsets[-1] > max_parts:
            bounds = [0]
            while bounds[-1] < n:
                start = bounds[-1]
                stop = np.searchsorted(part_offsets, part_offsets[start] + max_parts,
                                       side="right") - 1
                bounds.append(int(min(max(stop, start + 1), n)))
            self.lazy = True
        else:
            n_chunks = (1 if n_jobs in (None, 1) or max_parts is not None
                        else min(max(effective_n_jobs(n_jobs), 1), n))
            bounds = _balanced_bounds(part_offsets, n_chunks)
            self.lazy = False
        self.bounds = list(zip(bounds[:-1], bounds[1:]))
        self._batches = None if self.lazy else (
            [batch] if len(self.bounds) == 1
            else [structure.take(batch, np.arange(a, b)) for a, b in self.bounds])
        # (client, futures of the sub-batches, the worker of each) once scattered
        self._remote = None

    def __len__(self):
        return len(self.bounds)

    def __iter__(self):
        """Yield ``(sub_batch, parts, units)``: the slices of the chunk in flat vectors."""
        for k, ((a, b), parts, units) in enumerate(self._ranges()):
            sub = (self._batches[k] if self._batches is not None
                   else self.structure.take(self.batch, np.arange(a, b)))
            yield sub, parts, units

    def _ranges(self):
        """Per chunk, its examples ``(a, b)`` and its slices of the parts and of the units."""
        po, uo = self.batch.part_offsets, self.batch.unit_offsets
        for a, b in self.bounds:
            yield (a, b), slice(int(po[a]), int(po[b])), slice(int(uo[a]), int(uo[b]))

    def _slices(self, part_arrays, unit_arrays, example_arrays):
        """Per chunk, the chunk's slices of flat vectors over parts, units and examples."""
        for (a, b), parts, units in self._ranges():
            yield (*(v[parts] for v in part_arrays), *(v[units] for v in unit_arrays),
                   *(v[a:b] for v in example_arrays))

    def map(self, function, part_arrays=(), unit_arrays=(), shared=(), prefer="threads"):
        """``[function(sub_batch, *part_slices, *unit_slices, *shared) for each chunk]``.

        Parameters
        ----------
        function : callable
        part_arrays, unit_arrays : sequence of ndarray
            Flat vectors over parts / output units; each chunk gets its slice.
        shared : sequence
            Arguments every chunk gets whole (on a cluster, the large ones are
            scattered once per call instead of travelling inside every task).
        prefer : {"threads", "processes"}
            joblib's backend preference (the numba kernels release the GIL).

        Returns
        -------
        results : list
            One result per chunk, in order.
        """
        where = self._where()
        if where == "here":  # lazy chunks: one sub-batch alive at a time
            return [function(sub, *slices, *shared) for (sub, _, _), slices
                    in zip(self, self._slices(part_arrays, unit_arrays, ()))]
        if where == "cluster":
            client = _dask_client()
            return _gathered(client, self._submit(
                client, function, self._scattered(client),
                list(self._slices(part_arrays, unit_arrays, ())), shared))
        return Parallel(n_jobs=self.n_jobs, prefer=prefer)(
            delayed(function)(sub, *slices, *shared) for sub, slices
            in zip(self._batches, self._slices(part_arrays, unit_arrays, ())))

    def resident(self, function, part_arrays=(), unit_arrays=(), example_arrays=(), shared=(),
                 summed=False):
        """Per-chunk values that stay where they are computed; with small summaries.

        ``function(sub_batch, *part_slices, *unit_slices, *example_slices,
        *shared)`` returns ``(value, summary)``.  The values stay with the
        chunks (on a dask cluster, on the worker that holds the sub-batch),
        to be advanced by :meth:`advance` and fetched by :meth:`collect`; the
        summaries come back.

        With ``summed``, each summary is a pair ``(small, array)``, and the arrays
        (of one shape in every chunk, such as a weight vector) are summed where
        they are: on a cluster, in a tree of additions on the workers, so that one
        sum comes back, not one array per chunk.

        Returns
        -------
        values : list
            One handle per chunk (the value, or a dask future of it).
        summaries : list
            One summary per chunk, in order (with ``summed``: their ``small``).
        total : ndarray
            With ``summed`` only: the sum of the arrays.
        """
        slices = list(self._slices(part_arrays, unit_arrays, example_arrays))
        if self._where() == "cluster":
            client = _dask_client()
            return self._gather_summaries(client, self._submit(
                client, function, self._scattered(client), slices, shared), summed)
        return self._run_local(function, [sub for sub, _, _ in self], slices, shared, summed)

    def advance(self, function, values, shared=(), summed=False):
        """``function(value, *shared) -> (new value, summary)`` on every chunk's value.

        Returns
        -------
        values : list
            Handles of the new values (the old ones stay valid).
        summaries : list
        total : ndarray
            With ``summed`` only (see :meth:`resident`).
        """
        no_slices = [()] * len(values)
        if self._where() == "cluster":
            client = _dask_client()
            return self._gather_summaries(client, self._submit(
                client, function, values, no_slices, shared), summed)
        return self._run_local(function, values, no_slices, shared, summed)

    def share(self, value):
        """``value`` as it is now, for the ``shared`` arguments of later calls.

        On a dask cluster it is scattered to every worker once, for all the
        calls that get it; here, a copy (changes to ``value`` do not reach it).
        """
        if self._where() == "cluster":
            return _dask_client().scatter(value, broadcast=True, hash=False)
        return value.copy()

    def collect(self, values, function=None):
        """The values behind handles from :meth:`resident` or :meth:`advance`.

        With ``function``, ``function(value)`` for each, computed where the
        value lives (to bring back only a part of it).
        """
        if values and hasattr(values[0], "result"):
            client = values[0].client
            return _gathered(client, values if function is None else [
                client.submit(function, value, workers=[worker], allow_other_workers=False)
                for value, worker in zip(values, self._remote[2])])
        return list(values) if function is None else [function(value) for value in values]

    def _where(self):
        """Where the chunks run: ``"here"`` (in turn, in this process), ``"cluster"``
        (a dask cluster behind joblib) or ``"joblib"`` (its local workers)."""
        if len(self) == 1 or self.lazy:
            return "here"
        if _dask_client() is not None:
            parts_per_chunk = self.batch.part_offsets[-1] / len(self)
            return "cluster" if parts_per_chunk >= MIN_PARTS_PER_REMOTE_CHUNK else "here"
        return "joblib"

    def _run_local(self, function, firsts, slices, shared, summed=False):
        calls = [(first, *chunk_slices, *shared) for first, chunk_slices in zip(firsts, slices)]
        if self._where() == "here":
            pairs = [function(*call) for call in calls]
        else:
            pairs = Parallel(n_jobs=self.n_jobs, prefer="threads")(
                delayed(function)(*call) for call in calls)
        values, summaries = [value for value, _ in pairs], [summary for _, summary in pairs]
        if not summed:
            return values, summaries
        return (values, [small for small, _ in summaries],
                _tree_sum([array for _, array in summaries], np.add))

    def _submit(self, client, function, firsts, slices, shared):
        """One task per chunk, ``function(first, *slices, *shared)``, on the worker that
        holds the chunk (dask would otherwise move a task, and the chunk's data with it,
        to a worker that is idle: a worker then holds two chunks)."""
        shared = list(shared)
        large = [i for i, value in enumerate(shared) if _nbytes(value) > LARGE_ARGUMENT_BYTES]
        if large:
            futures = client.scatter([shared[i] for i in large], broadcast=True, hash=False)
            for i, future in zip(large, futures):
                shared[i] = future
        workers = self._remote[2]
        if sum(_nbytes(chunk_slices) for chunk_slices in slices) > LARGE_ARGUMENT_BYTES:
            slices = [client.scatter(chunk_slices, workers=[worker], hash=False)
                      for chunk_slices, worker in zip(slices, workers)]
        return [client.submit(_unpacked, function, first, chunk_slices, *shared, pure=False,
                              workers=[worker], allow_other_workers=False)
                for first, chunk_slices, worker in zip(firsts, slices, workers)]

    def _gather_summaries(self, client, pairs, summed=False):
        workers = self._remote[2]
        values = [client.submit(_first, pair, workers=[worker], allow_other_workers=False)
                  for pair, worker in zip(pairs, workers)]
        summaries = [client.submit(_second, pair, workers=[worker], allow_other_workers=False)
                     for pair, worker in zip(pairs, workers)]
        if not summed:
            return values, _gathered(client, summaries)
        # each addition runs where the larger of its two arrays is (dask places a task by
        # its data): the arrays meet in pairs on the workers, and one sum comes back
        total = _tree_sum([client.submit(_second, summary) for summary in summaries],
                          lambda a, b: client.submit(np.add, a, b))
        gathered = _gathered(client, [client.submit(_first, summary) for summary in summaries]
                             + [total])
        return values, gathered[:-1], gathered[-1]

    def _scattered(self, client):
        """Futures of the sub-batches on ``client``'s workers, scattered on first use, one
        chunk per worker in turn; every later task of a chunk runs on its worker.

        Shipping a sub-batch inside every task of every call is what made a
        process-based cluster slower than one core.
        """
        if self._remote is None or self._remote[0] is not client:
            futures = client.scatter(self._batches, hash=False)
            where = client.who_has(futures)
            self._remote = (client, futures, [where[future.key][0] for future in futures])
        return self._remote[1]
