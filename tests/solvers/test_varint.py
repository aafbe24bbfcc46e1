"""The byte code of streamed integer arrays (``solvers/_varint.py``)."""

import numpy as np
import pytest

from sklearn_struct.solvers._kernel_shards import CODED_SHARE, KernelShards
from sklearn_struct.solvers._varint import decode, encode, encoded_size
from sklearn_struct.structures import DependencyTreeStructure


def _round_trip(values):
    code = np.empty(encoded_size(values), dtype=np.uint8)
    assert encode(values, code) == code.shape[0]
    back = np.full_like(values, 7)
    assert decode(code, back) == code.shape[0]
    return code, back


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_the_code_gives_back_every_value_to_the_extremes(dtype):
    rng = np.random.RandomState(0)
    info = np.iinfo(dtype)
    values = np.concatenate([
        np.array([info.min, info.max, info.min, 0, -1, 1, info.max, info.max], dtype=dtype),
        rng.randint(info.min, info.max, size=500, dtype=dtype),
        np.cumsum(rng.randint(0, 3, size=500)).astype(dtype)])
    _, back = _round_trip(values)
    np.testing.assert_array_equal(back, values)
    assert _round_trip(values[:0])[0].shape[0] == 0


def test_small_steps_take_one_byte_each():
    """Differences within -64..63 take one byte: values in order cost a byte apiece."""
    values = np.cumsum(np.r_[5, np.tile([0, 3, 63, 1], 100)]).astype(np.int32)
    code, back = _round_trip(values)
    np.testing.assert_array_equal(back, values)
    assert code.shape[0] == values.shape[0]
    code, _ = _round_trip(np.array([0, 64, 0, -65], dtype=np.int64))  # steps 0, 64, -64, -65
    assert code.shape[0] == 1 + 2 + 1 + 2


def test_streamed_parser_shards_are_coded_on_disk_and_read_back_unchanged(tmp_path):
    """A parser's cached feature positions go to disk coded, in fewer bytes than in
    memory, and every shard reads back equal to the kernel data built for its examples."""
    rng = np.random.RandomState(0)
    X = [rng.randint(4, 60, size=(n, 3)) for n in rng.randint(5, 25, size=30)]
    structure = DependencyTreeStructure(hash_bits=14)
    batch = structure.make_batch(X)
    budget = KernelShards._estimated_bytes(structure, batch) / 2 ** 20 / 3
    shards = KernelShards(structure, batch, cache_size=budget, cache_dir=tmp_path)
    try:
        assert shards.streamed and len(shards) > 1
        assert shards.disk_bytes <= CODED_SHARE * shards.nbytes
        coded = {field[0] for shard in shards.shards for field in shard.layout[2]}
        assert coded >= {"coded", "value"}
        for window in shards.walk():
            for shard in window:
                sub = structure.take(batch, np.arange(shard.start, shard.stop))
                expected = structure.kernel_data(sub, training=True)
                for got, want in zip(shard.data, expected):
                    if isinstance(want, np.ndarray):
                        assert got.dtype == want.dtype
                        np.testing.assert_array_equal(got, want)
                    else:
                        assert got == want
    finally:
        shards.close()
