"""Reader for IDX files (the MNIST distribution format)."""

import numpy as np
from sklearn.utils import Bunch

from ._io import read_bytes

__all__ = ["load_mnist_idx", "read_idx"]

# IDX type codes (third header byte) -> big-endian dtypes.
_IDX_DTYPES = {
    0x08: np.dtype(">u1"),
    0x09: np.dtype(">i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}


def read_idx(path):
    """Read an IDX file (plain or gzip) into a numpy array.

    The header is two zero bytes, a type code (``0x08`` unsigned byte, ``0x09`` signed
    byte, ``0x0B`` int16, ``0x0C`` int32, ``0x0D`` float32, ``0x0E`` float64), the number
    of dimensions, then each dimension as a big-endian uint32; the data follow, big-endian.

    Parameters
    ----------
    path : str or path-like
        The IDX file, e.g. ``t10k-images-idx3-ubyte.gz``.

    Returns
    -------
    array : ndarray
        In native byte order, of the shape given by the header.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If the header is invalid or the data size does not match it.

    Examples
    --------
    A one-dimensional file of three unsigned bytes (as MNIST label files are):

    >>> import tempfile
    >>> from pathlib import Path
    >>> from sklearn_struct.datasets import read_idx
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = Path(folder) / "labels-idx1-ubyte"
    ...     _ = path.write_bytes(bytes([0, 0, 0x08, 1, 0, 0, 0, 3, 7, 2, 1]))
    ...     labels = read_idx(path)
    >>> labels
    array([7, 2, 1], dtype=uint8)
    """
    content = read_bytes(path)
    if len(content) < 4 or content[:2] != b"\x00\x00" or content[2] not in _IDX_DTYPES:
        raise ValueError(
            f"{path}: not an IDX file (magic number {content[:4].hex() or 'missing'}; "
            "expected 0000 followed by a type code 08/09/0b/0c/0d/0e and the number of "
            "dimensions)"
        )
    dtype, ndim = _IDX_DTYPES[content[2]], content[3]
    header_size = 4 + 4 * ndim
    if len(content) < header_size:
        raise ValueError(f"{path}: IDX header announces {ndim} dimensions but the file ends")
    shape = tuple(int(n) for n in np.frombuffer(content, dtype=">u4", count=ndim, offset=4))
    expected = header_size + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(content) != expected:
        raise ValueError(
            f"{path}: IDX header announces shape {shape} of {dtype.itemsize}-byte items "
            f"({expected} bytes with the header) but the file has {len(content)} bytes"
        )
    data = np.frombuffer(content, dtype=dtype, offset=header_size).reshape(shape)
    return data.astype(dtype.newbyteorder("="))


def load_mnist_idx(images_path, labels_path):
    """Load MNIST-style images and labels from a pair of IDX files (plain or gzip).

    Parameters
    ----------
    images_path : str or path-like
        IDX file of unsigned bytes with 3 dimensions ``(n_images, rows, columns)``
        (magic ``0x00000803``), e.g. ``t10k-images-idx3-ubyte.gz``.
    labels_path : str or path-like
        IDX file of unsigned bytes with 1 dimension ``(n_images,)`` (magic
        ``0x00000801``), e.g. ``t10k-labels-idx1-ubyte.gz``.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        ``data`` : ``(n_images, rows * columns)`` uint8 pixels 0..255 (row-major; convert
        to float and scale as the learner needs).
        ``images`` : the same pixels as ``(n_images, rows, columns)``.
        ``target`` : ``(n_images,)`` int64 labels.

    Raises
    ------
    FileNotFoundError
        If a file does not exist.
    ValueError
        If a header is not the expected one or the two files disagree on the number of
        images.

    Examples
    --------
    Two 2x2 images and their labels (the real files hold 28x28 images, e.g.
    ``load_mnist_idx("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")``):

    >>> import tempfile
    >>> from pathlib import Path
    >>> from sklearn_struct.datasets import load_mnist_idx
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     images, labels = Path(folder) / "images", Path(folder) / "labels"
    ...     header = [0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 2]
    ...     _ = images.write_bytes(bytes(header + [0, 255, 255, 0, 9, 9, 9, 9]))
    ...     _ = labels.write_bytes(bytes([0, 0, 8, 1, 0, 0, 0, 2, 7, 2]))
    ...     mnist = load_mnist_idx(images, labels)
    >>> mnist.data
    array([[  0, 255, 255,   0],
           [  9,   9,   9,   9]], dtype=uint8)
    >>> mnist.images.shape, mnist.target
    ((2, 2, 2), array([7, 2]))
    """
    images = read_idx(images_path)
    labels = read_idx(labels_path)
    if images.dtype != np.uint8 or images.ndim != 3:
        raise ValueError(
            f"{images_path}: expected unsigned-byte images with 3 dimensions (magic "
            f"00000803), got {images.dtype} with shape {images.shape}"
        )
    if labels.dtype != np.uint8 or labels.ndim != 1:
        raise ValueError(
            f"{labels_path}: expected unsigned-byte labels with 1 dimension (magic "
            f"00000801), got {labels.dtype} with shape {labels.shape}"
        )
    if images.shape[0] != labels.shape[0]:
        raise ValueError(
            f"{images_path} holds {images.shape[0]} images but {labels_path} holds "
            f"{labels.shape[0]} labels"
        )
    return Bunch(
        data=images.reshape(images.shape[0], -1),
        images=images,
        target=labels.astype(np.int64),
    )
