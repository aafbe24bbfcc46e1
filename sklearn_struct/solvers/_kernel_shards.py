"""A fit's kernel data in shards: whole in memory, or streamed from disk within a budget.

What a training pass reads on every visit, ``structure.kernel_data(batch,
training=True)`` (a dependency parser's cached feature ids, the token structures'
Gram blocks), grows with the data: on UD English-EWT the first-order parser's ids
take 4.5 GB, and a treebank eight times as large would not fit in memory at all.

:class:`KernelShards` bounds it.  Without a budget, or when the data's kernel
data are estimated to fit in it (from a sample of examples), there is one shard,
the whole batch's kernel data in memory, as before.  Otherwise the examples are
cut into contiguous shards of about a third of the budget each; every shard's
kernel data are built once (one shard alive at a time), written to a scratch
folder, and a pass reads them back in turn, the next shard read by a background
thread while the kernels work on the current one (the kernels release the GIL):
MSTParser kept its feature forest on disk for the same reason.  A pass then
visits the examples shard by shard (:meth:`KernelShards.blocked`), in the order
the shards first appear in the pass's visits, and within a shard in the visits'
own order, so that every shard is read once per pass.

The solvers call their numba kernels on one shard at a time with the shard's
local offsets and their own flat vectors sliced to the shard (:meth:`Shard.parts`
and :meth:`Shard.examples`): the kernels do not change.
"""

import os
import shutil
import tempfile
import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from ._chunks import ExampleChunks

__all__ = ["KernelShards", "check_cache_dir"]

MB = 2 ** 20
#: Examples whose kernel data estimate the bytes per part of the whole batch.
PROBE_EXAMPLES = 64
#: Shards of at most this share of ``cache_size``: the shard in use, the next one being
#: read, and the slack of the buffers' allocation.
SHARD_SHARE = 1 / 3


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
    """Write the arrays of ``value`` to ``file``; return the layout that :func:`_read`
    rebuilds ``value`` from (the scalars are kept in it)."""
    if isinstance(value, np.ndarray):
        np.ascontiguousarray(value).tofile(file)
        return ("array", value.dtype, value.shape)
    if isinstance(value, tuple):
        fields = [_write(item, file) for item in value]
        return ("tuple", type(value), fields)
    return ("value", value)


def _array_sizes(layout):
    """Bytes of every array of a layout of :func:`_write`, in the order written."""
    if layout[0] == "array":
        return [int(np.prod(layout[2], dtype=np.int64)) * layout[1].itemsize]
    if layout[0] == "tuple":
        return [size for field in layout[2] for size in _array_sizes(field)]
    return []


def _read(layout, file, buffers):
    """The value that :func:`_write` wrote with ``layout``, read from ``file`` into
    ``buffers`` (an iterator of byte arrays, one per array, each large enough): reading
    into pages already faulted in, a pass costs no fresh memory."""
    kind = layout[0]
    if kind == "array":
        dtype, shape = layout[1], layout[2]
        size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        raw = next(buffers)[:size]
        if size and file.readinto(memoryview(raw)) != size:
            raise OSError(f"the feature cache file {file.name} is truncated")
        return raw.view(dtype).reshape(shape)
    if kind == "tuple":
        items = [_read(field, file, buffers) for field in layout[2]]
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
        If one example's kernel data alone take more than a shard may hold.
    """

    def __init__(self, structure, batch, cache_size=None, cache_dir=None):
        self.structure = structure
        self.folder = None
        self._buffers = None
        self._last_walk = []
        n, part_offsets = batch.n_samples, batch.part_offsets
        budget = None if cache_size is None else cache_size * MB
        estimated = None if budget is None else self._estimated_bytes(structure, batch)
        if budget is None or estimated <= budget:
            data = structure.kernel_data(batch, training=True)
            self.shards = [Shard(0, n, slice(0, int(part_offsets[-1])),
                                 slice(0, int(batch.unit_offsets[-1])), part_offsets,
                                 batch.unit_offsets, _nbytes(data), data)]
            return
        check_cache_dir(cache_dir)
        self.folder = tempfile.mkdtemp(prefix="sklearn_struct-cache-", dir=cache_dir)
        self._cleanup = weakref.finalize(self, shutil.rmtree, self.folder, True)
        try:
            self.shards = self._spilled(structure, batch, budget * SHARD_SHARE,
                                        estimated / max(int(part_offsets[-1]), 1), cache_size)
        except BaseException:
            self.close()
            raise

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

    def _spilled(self, structure, batch, shard_bytes, per_part, cache_size):
        """Build every shard's kernel data in turn and write it to the scratch folder; a
        range of examples whose data outgrow ``shard_bytes`` (estimated from ``per_part``
        bytes per part) is halved."""
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
            if nbytes > shard_bytes:
                raise ValueError(
                    f"cache_size={cache_size:g} MB is too small for example {start}: its "
                    f"feature cache alone takes {nbytes / MB:.3g} MB, and a fit holds up to "
                    f"three shards at once; give cache_size >= {3 * nbytes / MB:.3g}, or "
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
    def streamed(self):
        """Whether the shards live on disk."""
        return self.folder is not None

    def blocked(self, visits):
        """The ``visits`` (example indices) grouped by shard, as ``[(shard index, local
        visits)]``: shards in the order of their first visit, each shard's visits in their
        own order."""
        if len(self.shards) == 1:
            return [(0, visits)]
        starts = np.array([shard.start for shard in self.shards])
        shard_of = np.searchsorted(starts, visits, side="right") - 1
        first = np.full(len(self.shards), len(visits))
        np.minimum.at(first, shard_of, np.arange(len(visits)))
        return [(int(k), visits[shard_of == k] - self.shards[k].start)
                for k in np.argsort(first, kind="stable") if first[k] < len(visits)]

    def walk(self, indices=None):
        """Yield the shards ``indices`` in turn with their kernel data loaded, reading the
        next one from disk while the caller works on the current one.

        ``indices`` None walks every shard, those read last first: the operating system
        keeps the files last read in memory, and a walk in the order of the one before
        would evict each shard just before reading it (a data set larger than the page
        cache would then come from disk twice per pass)."""
        if indices is None:
            last = self._last_walk
            unread = sorted(set(range(len(self.shards))) - set(last))
            indices = last[::-1] + unread
        indices = list(indices)
        self._last_walk = indices
        if not self.streamed:
            for k in indices:
                yield self.shards[k]
            return
        if self._buffers is None:  # two sets: the shard in use, and the next one read
            sizes = np.max([_array_sizes(shard.layout) for shard in self.shards], axis=0)
            self._buffers = [[np.empty(size, dtype=np.uint8) for size in sizes]
                             for _ in range(2)]
        with ThreadPoolExecutor(1) as reader:
            pending = reader.submit(self._load, indices[0], 0) if indices else None
            for position in range(len(indices)):
                shard = pending.result()
                # the set of the shard before this one is free: the caller is done with it
                pending = (reader.submit(self._load, indices[position + 1], (position + 1) % 2)
                           if position + 1 < len(indices) else None)
                yield shard

    def _load(self, k, buffer_set):
        shard = self.shards[k]
        with open(shard.path, "rb", buffering=0) as file:
            data = _read(shard.layout, file, iter(self._buffers[buffer_set]))
        return Shard(shard.start, shard.stop, shard.parts, shard.units, shard.part_offsets,
                     shard.unit_offsets, shard.nbytes, data)

    def close(self):
        """Remove the shards' scratch folder (no-op when everything is in memory)."""
        if self.folder is not None:
            self._cleanup()
            self.folder = None
