"""Contiguous chunks of the examples of a batch: for joblib workers, or bounded memory.

Every solver that splits its work over examples uses :class:`ExampleChunks`:
EG and the structured hinge evaluate chunks in parallel (one per worker), the
low-memory dual extragradient walks over chunks of at most ``max_parts``
parts, building each sub-batch only when it is needed.
"""

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs

__all__ = ["ExampleChunks"]


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
            bounds = np.linspace(0, n, n_chunks + 1).astype(np.int64).tolist()
            self.lazy = False
        self.bounds = list(zip(bounds[:-1], bounds[1:]))
        self._batches = None if self.lazy else (
            [batch] if len(self.bounds) == 1
            else [structure.take(batch, np.arange(a, b)) for a, b in self.bounds])

    def __len__(self):
        return len(self.bounds)

    def __iter__(self):
        """Yield ``(sub_batch, parts, units)``: the slices of the chunk in flat vectors."""
        po, uo = self.batch.part_offsets, self.batch.unit_offsets
        for k, (a, b) in enumerate(self.bounds):
            sub = (self._batches[k] if self._batches is not None
                   else self.structure.take(self.batch, np.arange(a, b)))
            yield sub, slice(int(po[a]), int(po[b])), slice(int(uo[a]), int(uo[b]))

    def map(self, function, part_arrays=(), unit_arrays=(), prefer="threads"):
        """``[function(sub_batch, *part_slices, *unit_slices) for each chunk]``, in parallel.

        Parameters
        ----------
        function : callable
        part_arrays, unit_arrays : sequence of ndarray
            Flat vectors over parts / output units; each chunk gets its slice.
        prefer : {"threads", "processes"}
            joblib's backend preference (the numba kernels release the GIL).

        Returns
        -------
        results : list
            One result per chunk, in order.
        """
        calls = ((sub, *(v[parts] for v in part_arrays), *(v[units] for v in unit_arrays))
                 for sub, parts, units in self)
        if len(self) == 1 or self.lazy:  # lazy chunks: one sub-batch alive at a time
            return [function(*call) for call in calls]
        return Parallel(n_jobs=self.n_jobs, prefer=prefer)(
            delayed(function)(*call) for call in calls)
