"""A lossless byte code for integer arrays: each value's difference from the one before,
zigzag-mapped to an unsigned number and written in 7-bit groups (a varint).

:class:`~sklearn_struct.solvers._kernel_shards.KernelShards` writes the integer arrays of
streamed kernel data with it when it makes them smaller.  A parser's cached feature
positions, sorted within each arc, step by small differences and mostly take one byte
each instead of four (``benchmarks/results/parsing_memory.md``), so that more of a large
treebank's cache stays in the operating system's page cache between passes.  The kernels
release the GIL: the reader thread decodes the next window while the solver works on the
current one.
"""

import numpy as np
from numba import njit

__all__ = ["encoded_size", "encode", "decode"]


@njit(cache=True, nogil=True, inline="always")
def _zigzag(values, k, previous):
    delta = np.int64(values[k]) - previous
    return np.uint64((delta << 1) ^ (delta >> 63))


@njit(cache=True, nogil=True)
def encoded_size(values):
    """Bytes of :func:`encode` of the 1-D integer array ``values``."""
    size, previous = 0, np.int64(0)
    for k in range(values.shape[0]):
        z = _zigzag(values, k, previous)
        previous = np.int64(values[k])
        size += 1
        while z >= 0x80:
            z >>= np.uint64(7)
            size += 1
    return size


@njit(cache=True, nogil=True)
def encode(values, out):
    """Write the code of ``values`` into the uint8 array ``out`` (at least
    :func:`encoded_size` long); return the bytes written."""
    n, previous = 0, np.int64(0)
    for k in range(values.shape[0]):
        z = _zigzag(values, k, previous)
        previous = np.int64(values[k])
        while z >= 0x80:
            out[n] = np.uint8((z & np.uint64(0x7F)) | np.uint64(0x80))
            z >>= np.uint64(7)
            n += 1
        out[n] = np.uint8(z)
        n += 1
    return n


@njit(cache=True, nogil=True)
def decode(code, out):
    """Fill the integer array ``out`` from the uint8 array ``code`` written by
    :func:`encode`; return the bytes read."""
    position, previous = 0, np.int64(0)
    for k in range(out.shape[0]):
        z, shift = np.uint64(0), np.uint64(0)
        while True:
            byte = np.uint64(code[position])
            position += 1
            z |= (byte & np.uint64(0x7F)) << shift
            if byte < 0x80:
                break
            shift += np.uint64(7)
        previous += np.int64(z >> np.uint64(1)) ^ -np.int64(z & np.uint64(1))
        out[k] = previous
    return position
