"""A fit's kernel data in shards: whole in memory, or streamed from disk within a budget.

What a training pass reads on every visit, ``structure.kernel_data(batch,
training=True)`` (a dependency parser's cached feature ids, the token structures'
Gram blocks), grows with the data: on UD English-EWT the first-order parser's ids
take 4.5 GB, and a treebank eight times as large would not fit in memory at all.

:class:`KernelShards` bounds it.  Without a budget, or when the data's kernel
data are estimated to fit in it (from a sample of examples), there is one shard,
the whole batch's kernel data in memory, as before.  Otherwise the examples are
cut into contiguous shards, ``SHARDS_PER_WINDOW`` to a *window* of about a third
of the budget; every shard's kernel data are built once (one shard alive at a
time) and written to a scratch folder, and a pass reads them back a window at a
time, the next window read by a background thread while the kernels work on the
current one (the kernels release the GIL): MSTParser kept its feature forest on
disk for the same reason.  Integer arrays are written in the byte code of
:mod:`._varint` where it makes them smaller (a parser's feature positions, by half),
so that more of the files stay in the operating system's page cache between passes.

A pass groups the shards into windows anew, in the order the shards first appear
in its visits, and visits each window's examples in the visits' own order, first
visits first (:meth:`KernelShards.windows`), so that every shard is read once per
pass.  The
windows hold many small shards because the examples that a pass visits together
must change from pass to pass: with one shard to a window, the same examples
were visited together in every pass, and online EG on EWT converged many times
more slowly than in memory (``benchmarks/results/parsing_memory.md``).

The solvers call their numba kernels on one shard at a time with the shard's
local offsets and their own flat vectors sliced to the shard (:attr:`Shard.parts`
and :meth:`Shard.examples`), once per run of consecutive visits in one shard
(:meth:`KernelShards.runs`): the kernels do not change.
"""

import os
import shutil
import tempfile
import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from ._chunks import ExampleChunks
from ._varint import decode, encode, encoded_size

__all__ = ["KernelShards", "check_cache_dir"]

MB = 2 ** 20
#: Examples whose kernel data estimate the bytes per part of the whole batch.
PROBE_EXAMPLES = 64
#: Windows of at most this share of ``cache_size``: the window in use, the next one
#: being read, and the slack of the buffers' allocation.
WINDOW_SHARE = 1 / 3
#: Shards to a window: how finely a pass regroups the examples it visits together.
SHARDS_PER_WINDOW = 16
#: Arrays read into a window's buffer start at multiples of this many bytes (numba's
#: kernels take aligned arrays).
ALIGNMENT = 64
#: An integer array goes to disk in the code of :mod:`._varint` when the code takes at
#: most this share of its bytes (decoding costs the reader thread a few ns a value).
CODED_SHARE = 0.75


def check_cache_dir(cache_dir):
    """Raise ValueError unless ``cache_dir`` (None: the system's temporary folder) is a
    folder where a fit can write its shards."""
    if cache_dir is None:
        return
    try:
        probe = tempfile.mkdtemp(prefix="sklearn_struct-check-", dir=cache_dir)
    except OSError as error:
        raise ValueError(f"cache_dir={str(cache_dir)!r} is not a writable folder "
                         f"({error.strerror or error}); give a folder where the fit may write "
                         "its feature cache, or cache_dir=None for the system's temporary "
                         "folder.") from None
    os.rmdir(probe)


def _nbytes(value):
    """Bytes of the arrays in kernel data (arrays, scalars and tuples of them)."""
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, tuple):
        return sum(_nbytes(item) for item in value)
    return 0


def _write(value, file):
    """Write the arrays of ``value`` to ``file``, an integer array in the code of
    :mod:`._varint` where that takes at most ``CODED_SHARE`` of its bytes; return the
    layout that :func:`_read` rebuilds ``value`` from (the scalars are kept in it)."""
    if isinstance(value, np.ndarray):
        flat = np.ascontiguousarray(value).reshape(-1)
        if value.dtype.kind == "i" and value.dtype.itemsize >= 4 and flat.size:
            size = encoded_size(flat)
            if size <= CODED_SHARE * value.nbytes:
                code = np.empty(size, dtype=np.uint8)
                encode(flat, code)
                code.tofile(file)
                return ("coded", value.dtype, value.shape, size)
        flat.tofile(file)
        return ("array", value.dtype, value.shape)
    if isinstance(value, tuple):
        fields = [_write(item, file) for item in value]
        return ("tuple", type(value), fields)
    return ("value", value)


def _leaves(layout):
    """The array entries of a layout of :func:`_write` (coded or not), in the order written."""
    if layout[0] == "tuple":
        for field in layout[2]:
            yield from _leaves(field)
    elif layout[0] in ("array", "coded"):
        yield layout


def _memory_bytes(leaf):
    """Bytes in memory of an array entry of a layout."""
    return int(np.prod(leaf[2], dtype=np.int64)) * leaf[1].itemsize


def _array_sizes(layout):
    """Bytes in memory of every array of a layout of :func:`_write`, in the order written."""
    return [_memory_bytes(leaf) for leaf in _leaves(layout)]


def _occurrences(values):
    """How many times each entry's value occurs before it in ``values``."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.r_[0, np.flatnonzero(np.diff(ordered)) + 1]
    lengths = np.diff(np.r_[starts, len(values)])
    occurrences = np.empty(len(values), dtype=np.int64)
    occurrences[order] = np.arange(len(values)) - np.repeat(starts, lengths)
    return occurrences


def _aligned(size):
    return -(-size // ALIGNMENT) * ALIGNMENT


def _pieces(buffer, sizes):
    """Consecutive aligned pieces of ``buffer``, of the byte ``sizes`` in turn."""
    start = 0
    for size in sizes:
        yield buffer[start:start + size]
        start += _aligned(size)


def _read_exactly(file, raw):
    if raw.shape[0] and file.readinto(memoryview(raw)) != raw.shape[0]:
        raise OSError(f"the feature cache file {file.name} is truncated")


def _read(layout, file, buffers, code_buffer):
    """The value that :func:`_write` wrote with ``layout``, read from ``file`` into
    ``buffers`` (an iterator of byte arrays, one per array, each large enough), coded
    arrays through ``code_buffer`` (a byte array as large as the largest code): reading
    into pages already faulted in, a pass costs no fresh memory."""
    kind = layout[0]
    if kind in ("array", "coded"):
        dtype, shape = layout[1], layout[2]
        raw = next(buffers)[:_memory_bytes(layout)]
        if kind == "array":
            _read_exactly(file, raw)
        else:
            code = code_buffer[:layout[3]]
            _read_exactly(file, code)
            decode(code, raw.view(dtype))
        return raw.view(dtype).reshape(shape)
    if kind == "tuple":
        items = [_read(field, file, buffers, code_buffer) for field in layout[2]]
        return layout[1]._make(items) if hasattr(layout[1], "_make") else layout[1](items)
    return layout[1]


@dataclass
class Shard:
    """Examples ``start:stop`` of a batch, with their kernel data and local offsets.

    ``part_offsets`` and ``unit_offsets`` start at 0; ``parts`` and ``units`` are the
    shard's slices of the batch's flat vectors.
    """

    start: int
    stop: int
    parts: slice
    units: slice
    part_offsets: np.ndarray
    unit_offsets: np.ndarray
    nbytes: int
    data: object = None  # None while the shard is on disk
    path: str = None
    layout: tuple = None

    def examples(self, array):
        """The shard's slice of a vector over examples."""
        return array[self.start:self.stop]


class KernelShards:
    """The training kernel data of ``batch``, in memory or in shards on disk.

    Parameters
    ----------
    structure : BaseStructure
    batch : batch of ``structure``
    cache_size : float or None, default=None
        Megabytes of kernel data held in memory at once; None: no bound.
    cache_dir : str or None, default=None
        Where the shards are written when they do not fit (None: the system's
        temporary folder); a scratch folder inside it is removed by :meth:`close`.

    Raises
    ------
    ValueError
        If one example's kernel data alone take more than a window may hold.
    """

    def __init__(self, structure, batch, cache_size=None, cache_dir=None):
        self.structure = structure
        self.folder = None
        self.window_bytes = np.inf
        self._buffers = [np.empty(0, dtype=np.uint8)] * 2  # the window in use, the next
        self._code_buffer = None  # the reader's, for the coded arrays of any shard
        self._last_walk = []
        n, part_offsets = batch.n_samples, batch.part_offsets
        budget = None if cache_size is None else cache_size * MB
        estimated = None if budget is None else self._estimated_bytes(structure, batch)
        if budget is None or estimated <= budget:
            data = structure.kernel_data(batch, training=True)
            self.shards = [Shard(0, n, slice(0, int(part_offsets[-1])),
                                 slice(0, int(batch.unit_offsets[-1])), part_offsets,
                                 batch.unit_offsets, _nbytes(data), data)]
            self._starts = np.zeros(1, dtype=np.int64)
            return
        check_cache_dir(cache_dir)
        self.folder = tempfile.mkdtemp(prefix="sklearn_struct-cache-", dir=cache_dir)
        self._cleanup = weakref.finalize(self, shutil.rmtree, self.folder, True)
        self.window_bytes = budget * WINDOW_SHARE
        try:
            self.shards = self._spilled(structure, batch,
                                        estimated / max(int(part_offsets[-1]), 1), cache_size)
        except BaseException:
            self.close()
            raise
        self._starts = np.array([shard.start for shard in self.shards], dtype=np.int64)

    @staticmethod
    def _estimated_bytes(structure, batch):
        """The batch's kernel data, in bytes, estimated from a sample of its examples."""
        n = batch.n_samples
        sample = np.sort(np.random.RandomState(0).choice(n, min(n, PROBE_EXAMPLES),
                                                         replace=False))
        sub = structure.take(batch, sample)
        per_part = _nbytes(structure.kernel_data(sub, training=True)) / max(
            int(sub.part_offsets[-1]), 1)
        return per_part * int(batch.part_offsets[-1])

    def _spilled(self, structure, batch, per_part, cache_size):
        """Build every shard's kernel data in turn and write it to the scratch folder; a
        range of examples whose data outgrow a shard's share of a window (estimated from
        ``per_part`` bytes per part) is halved."""
        shard_bytes = self.window_bytes / SHARDS_PER_WINDOW
        chunks = ExampleChunks(structure, batch, max_parts=max(int(shard_bytes / per_part), 1))
        pending, shards = list(reversed(chunks.bounds)), []
        po, uo = batch.part_offsets, batch.unit_offsets
        while pending:
            start, stop = pending.pop()
            sub = structure.take(batch, np.arange(start, stop))
            data = structure.kernel_data(sub, training=True)
            nbytes = _nbytes(data)
            if nbytes > shard_bytes and stop - start > 1:
                middle = (start + stop) // 2
                pending += [(middle, stop), (start, middle)]
                continue
            if nbytes > self.window_bytes:
                raise ValueError(
                    f"cache_size={cache_size:g} MB is too small for example {start}: its "
                    f"feature cache alone takes {nbytes / MB:.3g} MB, and a fit holds up to "
                    f"three times that at once; give cache_size >= {3 * nbytes / MB:.3g}, or "
                    "cache_size=None to keep the whole cache in memory.")
            path = os.path.join(self.folder, f"shard{len(shards)}.bin")
            with open(path, "wb") as file:
                layout = _write(data, file)
            del data
            shards.append(Shard(start, stop, slice(int(po[start]), int(po[stop])),
                                slice(int(uo[start]), int(uo[stop])), sub.part_offsets,
                                sub.unit_offsets, nbytes, None, path, layout))
        return shards

    def __len__(self):
        return len(self.shards)

    @property
    def nbytes(self):
        """Bytes of kernel data over all shards (in memory or on disk)."""
        return sum(shard.nbytes for shard in self.shards)

    @property
    def disk_bytes(self):
        """Bytes of the shards' files (0 when everything is in memory)."""
        return sum(leaf[3] if leaf[0] == "coded" else _memory_bytes(leaf)
                   for shard in self.shards if shard.layout is not None
                   for leaf in _leaves(shard.layout))

    @property
    def streamed(self):
        """Whether the shards live on disk."""
        return self.folder is not None

    def _shard_of(self, examples):
        return np.searchsorted(self._starts, examples, side="right") - 1

    def _grouped(self, indices):
        """The shards ``indices``, in turn, cut into windows of at most ``window_bytes``."""
        windows, size = [], 0
        for k in indices:
            nbytes = self.shards[k].nbytes
            if not windows or size + nbytes > self.window_bytes:
                windows.append([])
                size = 0
            windows[-1].append(k)
            size += nbytes
        return windows

    def windows(self, visits):
        """The ``visits`` (example indices) of a pass grouped by window, as ``[(shard
        indices, visits)]``: the shards in the order of their first visit, cut into windows,
        and each window's visits in their own order, every example's first visit before
        any second one (and so on): an example visited twice in a pass (``order="gap"``)
        is not visited twice in a row."""
        if len(self.shards) == 1:
            return [([0], visits)]
        shard_of = self._shard_of(visits)
        first = np.full(len(self.shards), len(visits))
        np.minimum.at(first, shard_of, np.arange(len(visits)))
        visited = [int(k) for k in np.argsort(first, kind="stable") if first[k] < len(visits)]
        windows = self._grouped(visited)
        window_of = np.empty(len(self.shards), dtype=np.int64)
        for position, window in enumerate(windows):
            window_of[window] = position
        visit_window = window_of[shard_of]
        order = np.lexsort((_occurrences(visits), visit_window))
        cuts = np.r_[0, np.cumsum(np.bincount(visit_window, minlength=len(windows)))]
        return [(window, visits[order[a:b]]) for window, a, b in zip(windows, cuts, cuts[1:])]

    def runs(self, visits):
        """The ``visits`` cut where they move to another shard, as ``[(shard index, local
        visits)]`` in their own order."""
        if len(self.shards) == 1 or len(visits) == 0:
            return [(0, visits)] if len(self.shards) == 1 else []
        shard_of = self._shard_of(visits)
        cuts = np.flatnonzero(np.diff(shard_of)) + 1
        return [(int(shard_of[a]), visits[a:b] - self.shards[shard_of[a]].start)
                for a, b in zip(np.r_[0, cuts], np.r_[cuts, len(visits)])]

    def walk(self, windows=None):
        """Yield the shards of each of ``windows`` (lists of shard indices) in turn, as a
        list with their kernel data loaded, reading the next window from disk while the
        caller works on the current one.

        ``windows`` None walks every shard, those read last first: the operating system
        keeps the files last read in memory, and a walk in the order of the one before
        would evict each shard just before reading it (a data set larger than the page
        cache would then come from disk twice per pass)."""
        if windows is None:
            last = self._last_walk
            unread = sorted(set(range(len(self.shards))) - set(last))
            windows = self._grouped(last[::-1] + unread)
        windows = [list(window) for window in windows]
        self._last_walk = [k for window in windows for k in window]
        if not self.streamed:
            for window in windows:
                yield [self.shards[k] for k in window]
            return
        with ThreadPoolExecutor(1) as reader:
            pending = reader.submit(self._load, windows[0], 0) if windows else None
            for position in range(len(windows)):
                loaded = pending.result()
                # the buffer of the window before this one is free: the caller is done with it
                pending = (reader.submit(self._load, windows[position + 1], (position + 1) % 2)
                           if position + 1 < len(windows) else None)
                yield loaded

    def _load(self, window, slot):
        """The shards ``window`` read into buffer ``slot``."""
        if self._buffers[slot].shape[0] == 0:
            # made once, for any window: a buffer grown later would live on beside the new
            # one for as long as the caller holds the window before
            padding = ALIGNMENT * sum(len(_array_sizes(shard.layout)) for shard in self.shards)
            self._buffers[slot] = np.empty(int(self.window_bytes) + padding, dtype=np.uint8)
        if self._code_buffer is None:
            self._code_buffer = np.empty(max(
                (leaf[3] for shard in self.shards for leaf in _leaves(shard.layout)
                 if leaf[0] == "coded"), default=0), dtype=np.uint8)
        loaded, start = [], 0
        for k in window:
            shard = self.shards[k]
            sizes = _array_sizes(shard.layout)
            pieces = _pieces(self._buffers[slot][start:], sizes)
            start += sum(_aligned(size) for size in sizes)
            with open(shard.path, "rb", buffering=0) as file:
                data = _read(shard.layout, file, pieces, self._code_buffer)
            loaded.append(Shard(shard.start, shard.stop, shard.parts, shard.units,
                                shard.part_offsets, shard.unit_offsets, shard.nbytes, data))
        return loaded

    def close(self):
        """Remove the shards' scratch folder (no-op when everything is in memory)."""
        if self.folder is not None:
            self._cleanup()
            self.folder = None
