"""Weight vectors that kernels read and write at random, on huge pages where the system has them.

A visit of a hashed-feature model touches tens of thousands of scattered weights of a
vector of 2**20 to 2**23 (8 to 64 MB): with 4 KB pages nearly every touch also misses the
address translation cache, and with 2 MB pages nearly none does.  numpy advises the kernel
to use huge pages for large arrays, but a new array often reuses memory that the process
freed, already mapped in 4 KB pages, and then the advice changes nothing (in an EG fit,
on some passes and not on others; what it costs a pass: ``benchmarks/results/weight_pages.md``).
Fresh anonymous memory, advised before it is touched, gets huge pages wherever Linux's
transparent huge pages are enabled (``always`` or ``madvise``); elsewhere this is numpy's.
"""

import math
import mmap

import numpy as np

__all__ = ["random_access_copy", "random_access_zeros"]

#: Below this size a vector is reached through few ordinary pages: numpy's own memory.
HUGE_PAGE_MIN_BYTES = 1 << 22


def random_access_zeros(shape, dtype=np.float64):
    """An array of zeros, in fresh memory advised to use huge pages.

    Its memory is released with the array, like numpy's own; it pickles and saves as any
    array does.
    """
    advice = getattr(mmap, "MADV_HUGEPAGE", None)
    shape, dtype = tuple(np.atleast_1d(shape)), np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    if advice is None or nbytes < HUGE_PAGE_MIN_BYTES:
        return np.zeros(shape, dtype)
    memory = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    try:
        memory.madvise(advice)
    except OSError:  # (a kernel without transparent huge pages: ordinary pages)
        pass
    return np.frombuffer(memory, dtype=dtype).reshape(shape)


def random_access_copy(array):
    """A copy of ``array`` (same shape and dtype) in memory of :func:`random_access_zeros`."""
    copy = random_access_zeros(array.shape, array.dtype)
    copy[...] = array
    return copy
