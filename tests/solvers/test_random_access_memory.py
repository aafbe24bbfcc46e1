"""Weight vectors in memory advised to use huge pages (``sklearn_struct/_memory.py``)."""

import io
import mmap
import pickle
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from sklearn_struct._memory import HUGE_PAGE_MIN_BYTES, random_access_zeros
from sklearn_struct.solvers import _chunks
from sklearn_struct.structures import ChainStructure, DependencyTreeStructure

THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")
huge_pages = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not hasattr(mmap, "MADV_HUGEPAGE")
    or not THP.exists() or "[never]" in THP.read_text(),
    reason="transparent huge pages are Linux's, and enabled here")
LARGE = HUGE_PAGE_MIN_BYTES // 8


def _advised_huge(array):
    """Whether ``array`` lies in fresh anonymous memory (its own mapping, not memory that
    the process freed before, mapped already) advised to use huge pages (``hg`` among the
    flags of its mapping in ``/proc/self/smaps``)."""
    base = array
    while isinstance(base, np.ndarray):
        base = base.base
    if not (isinstance(base, memoryview) and isinstance(base.obj, mmap.mmap)):
        return False
    address, inside = array.ctypes.data, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        bounds = re.match(r"^([0-9a-f]+)-([0-9a-f]+) ", line)
        if bounds:
            inside = int(bounds.group(1), 16) <= address < int(bounds.group(2), 16)
        elif inside and line.startswith("VmFlags:"):
            return "hg" in line.split()[1:]
    raise AssertionError(f"no mapping holds the address {address:#x}")


@pytest.mark.parametrize("shape, dtype", [(5, np.float64), ((3, 4), np.int32),
                                          (LARGE, np.float64), ((2, LARGE), np.float32)])
def test_random_access_zeros_are_writable_zeros_that_pickle_and_save(shape, dtype):
    array = random_access_zeros(shape, dtype)
    assert array.shape == np.zeros(shape).shape and array.dtype == dtype
    assert array.flags.writeable and array.flags.c_contiguous and not array.any()
    array.flat[::7] = 3
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(array)), array)
    saved = io.BytesIO()
    np.save(saved, array)
    np.testing.assert_array_equal(np.load(io.BytesIO(saved.getvalue())), array)
    assert not random_access_zeros(shape, dtype).any()  # fresh memory each time


@huge_pages
def test_large_random_access_arrays_are_advised_to_use_huge_pages():
    assert _advised_huge(random_access_zeros(LARGE))


@huge_pages
def test_kernel_weights_of_a_hashed_model_are_advised_to_use_huge_pages():
    structure = DependencyTreeStructure(hash_bits=20)
    X = [np.array([[1, 2, 3], [4, 5, 6]])]
    batch = structure.make_batch(X)
    w = np.arange(batch.n_weights, dtype=np.float64)
    w_kernel = structure.kernel_weights(batch, w)
    assert _advised_huge(w_kernel) and w_kernel is not w
    np.testing.assert_array_equal(w_kernel, w)
    np.testing.assert_array_equal(structure.contract_weights(batch, w_kernel), w)
    # the token structures' feature-major layout, a transposed copy
    chain = ChainStructure()
    X = [np.ones((2, LARGE // 4))]
    batch = chain.make_batch(X, n_states=4)
    w = np.random.RandomState(0).normal(size=batch.n_weights)
    w_kernel = chain.kernel_weights(batch, w)
    assert _advised_huge(w_kernel)
    np.testing.assert_array_equal(chain.contract_weights(batch, w_kernel), w)


def test_owned_copies_only_large_arrays_that_do_not_own_their_memory():
    buffer = bytearray(8 * (_chunks.LARGE_ARGUMENT_BYTES // 8 + 1))
    borrowed = np.frombuffer(buffer, dtype=np.float64)
    borrowed_large = np.frombuffer(bytearray(8 * LARGE), dtype=np.float64)
    for array in (borrowed, borrowed_large):
        copied = _chunks._owned(array)
        assert copied is not array and copied.flags.writeable
        np.testing.assert_array_equal(copied, array)
    owned = borrowed.copy()
    small = np.frombuffer(bytearray(64), dtype=np.float64)
    assert _chunks._owned(owned) is owned and _chunks._owned(small) is small
    assert _chunks._owned(3.0) == 3.0


@huge_pages
def test_owned_copies_of_large_arrays_are_advised_to_use_huge_pages():
    assert _advised_huge(_chunks._owned(np.frombuffer(bytearray(8 * LARGE), dtype=np.float64)))
