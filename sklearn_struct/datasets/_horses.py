"""Weizmann horses (Borenstein & Ullman 2002): gray images, figure-ground masks, min-cut inputs."""

import io
import re
import tarfile

import numpy as np
from scipy import ndimage
from sklearn.utils import Bunch

from ._io import check_file

__all__ = ["load_weizmann_horses", "make_horse_segmentation"]

_MEMBER = re.compile(r"(?:^|/)(gray|figure_ground)/([^/]+)\.jpe?g$", re.IGNORECASE)
#: Masks are JPEG-compressed (values 0..255 with ringing): foreground = bright.
_MASK_THRESHOLD = 128
_N_INTENSITY_BINS = 8

#: Node features of :func:`make_horse_segmentation`, in column order.
NODE_FEATURES = (
    ("bias", "intensity", "intensity_squared", "intensity_minus_image_mean",
     "mean_3x3", "std_3x3", "mean_7x7", "std_7x7", "gradient_magnitude",
     "row", "column", "row_centred_squared", "column_centred_squared")
    + tuple(f"intensity_bin_{b}" for b in range(_N_INTENSITY_BINS))
)
#: Edge features: a constant (plain Potts smoothing) and the contrast-sensitive term.
EDGE_FEATURES = ("constant", "contrast")


def _check_size(size):
    if size is None:
        return None
    if isinstance(size, (int, np.integer)):
        size = (size, size)
    if (not isinstance(size, (tuple, list)) or len(size) != 2
            or not all(isinstance(s, (int, np.integer)) and s >= 2 for s in size)):
        raise ValueError(f"size must be None, an int >= 2 or a (height, width) pair, got {size!r}.")
    return int(size[0]), int(size[1])


def load_weizmann_horses(path, size=None, n_images=None):
    """Load the gray images and figure-ground masks of the Weizmann horse database.

    Reads the ``gray/`` and ``figure_ground/`` JPEGs of the tar archive (optionally
    gzip-compressed) without extracting it; images and masks are paired by file name
    and returned in name order.  Masks are binarised at 128 (horse = bright = 1).

    Parameters
    ----------
    path : str or path-like
        The archive, e.g. ``weizmann_horse_db.tar.gz``.
    size : int or (int, int), default=None
        Downsample every image and mask to ``(height, width)`` (an int means a square):
        images by area averaging, masks by area averaging of the binary mask then
        majority (>= 1/2).  ``None`` keeps the original sizes.
    n_images : int, default=None
        Read only the first ``n_images`` images (in name order).

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        ``images`` : float64 intensities in ``[0, 1]``, an ``(n, height, width)`` array when
        ``size`` is given, else a list of 2-D arrays.
        ``masks`` : int64 0/1 arrays of the same shapes.
        ``names`` : list of str, file names without extension (``"horse001"``, ...).

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If the archive is not a readable tar, holds no gray image, an image has no mask
        (or a mask no image), their sizes differ, or a JPEG cannot be decoded.

    Examples
    --------
    >>> from sklearn_struct.datasets import load_weizmann_horses  # doctest: +SKIP
    >>> horses = load_weizmann_horses("weizmann_horse_db.tar.gz", size=32)  # doctest: +SKIP
    >>> horses.images.shape, horses.masks.mean()  # doctest: +SKIP
    ((328, 32, 32), 0.25...)
    """
    from PIL import Image

    path = check_file(path)
    size = _check_size(size)
    if n_images is not None and (not isinstance(n_images, (int, np.integer)) or n_images < 1):
        raise ValueError(f"n_images must be None or a positive int, got {n_images!r}.")
    try:
        archive = tarfile.open(path, "r:*")
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise ValueError(f"{path}: not a readable tar archive ({exc})") from exc
    with archive:
        members = {"gray": {}, "figure_ground": {}}
        for member in archive.getmembers():
            match = _MEMBER.search(member.name)
            if member.isfile() and match:
                members[match.group(1).lower()][match.group(2)] = member
        names = sorted(members["gray"])
        if not names:
            raise ValueError(f"{path}: no gray/*.jpg image in the archive.")
        unpaired = set(names) ^ set(members["figure_ground"])
        if unpaired:
            raise ValueError(
                f"{path}: gray images and figure_ground masks do not pair up; unpaired: "
                f"{sorted(unpaired)[:5]}"
            )
        names = names[:n_images] if n_images is not None else names
        images, masks = [], []
        for name in names:
            image = _read_gray(archive, members["gray"][name], path, Image)
            mask = _read_gray(archive, members["figure_ground"][name], path, Image)
            if image.size != mask.size:
                raise ValueError(
                    f"{path}: {name}: image is {image.size[::-1]} but mask is {mask.size[::-1]} "
                    "(height, width)."
                )
            mask = (np.asarray(mask) >= _MASK_THRESHOLD).astype(np.float64)
            if size is not None:
                image = image.resize(size[::-1], Image.Resampling.BOX)
                mask = np.asarray(Image.fromarray(mask).resize(size[::-1], Image.Resampling.BOX))
                mask = mask >= 0.5
            images.append(np.asarray(image, dtype=np.float64) / 255.0)
            masks.append(np.asarray(mask, dtype=np.int64))
    if size is not None:
        images, masks = np.stack(images), np.stack(masks)
    return Bunch(images=images, masks=masks, names=names)


def _read_gray(archive, member, path, Image):
    try:
        image = Image.open(io.BytesIO(archive.extractfile(member).read()))
        return image.convert("L") if image.mode != "L" else image
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: {member.name}: cannot decode the image ({exc})") from exc


def grid_edges(height, width):
    """4-neighbour edges of a ``height x width`` pixel grid (row-major node indices).

    Parameters
    ----------
    height, width : int
        Grid size.

    Returns
    -------
    edges : int64 ndarray of shape (height (width - 1) + (height - 1) width, 2)
        Horizontal edges first, then vertical ones.
    """
    index = np.arange(height * width).reshape(height, width)
    horizontal = np.column_stack([index[:, :-1].ravel(), index[:, 1:].ravel()])
    vertical = np.column_stack([index[:-1, :].ravel(), index[1:, :].ravel()])
    return np.concatenate([horizontal, vertical]).astype(np.int64)


def make_horse_segmentation(images, masks=None):
    """Min-cut inputs (pixels as nodes, 4-neighbour edges) of gray images.

    Node features (:data:`NODE_FEATURES`): a bias, the intensity, its square and its
    difference to the image mean, mean and standard deviation over 3x3 and 7x7 windows,
    the gradient magnitude (Sobel), the position (row, column in ``[0, 1]`` and squared
    distances to the centre) and a one-hot intensity histogram bin (8 bins) so that a linear
    score can be non-monotone in the intensity.  Edge features (:data:`EDGE_FEATURES`),
    both non-negative: ``1`` and ``exp(-(I_j - I_k)^2 / (2 sigma^2))`` with ``sigma^2``
    the image's mean squared neighbour difference (cuts along strong edges are cheap).

    Parameters
    ----------
    images : sequence of 2-D float arrays
        Gray images (e.g. ``load_weizmann_horses(...).images``).
    masks : sequence of 2-D 0/1 arrays, default=None
        Figure-ground masks of the same shapes.

    Returns
    -------
    X : list of ``(node_features, edges, edge_features)`` tuples
        The input of ``MinCutStructure`` / ``DualExtragradientMatcher(structure="mincut")``;
        node ``r * width + c`` is pixel ``(r, c)``.
    y : list of int64 arrays of shape (height * width,), or None without masks
        The figure (1) / ground (0) label of every pixel node.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.datasets import make_horse_segmentation
    >>> image = np.arange(9.0).reshape(3, 3) / 8
    >>> X, y = make_horse_segmentation([image], [image > 0.5])
    >>> node_features, edges, edge_features = X[0]
    >>> node_features.shape[0], edges.shape, y[0]
    (9, (12, 2), array([0, 0, 0, 0, 0, 1, 1, 1, 1]))
    """
    if masks is not None and len(masks) != len(images):
        raise ValueError(f"{len(images)} images but {len(masks)} masks.")
    X = []
    y = [] if masks is not None else None
    for i, image in enumerate(images):
        image = np.asarray(image, dtype=np.float64)
        if image.ndim != 2 or min(image.shape) < 2:
            raise ValueError(f"image {i}: expected a 2-D gray image of at least 2x2 pixels, "
                             f"got shape {image.shape}.")
        if masks is not None:
            mask = np.asarray(masks[i])
            if mask.shape != image.shape:
                raise ValueError(f"image {i}: mask shape {mask.shape} differs from image "
                                 f"shape {image.shape}.")
            if not np.isin(mask, (0, 1)).all():
                raise ValueError(f"image {i}: mask values must be 0 or 1.")
            y.append(mask.astype(np.int64).ravel())
        X.append((_node_features(image), grid_edges(*image.shape), _edge_features(image)))
    return X, y


def _node_features(image):
    height, width = image.shape
    columns = [np.ones_like(image), image, image**2, image - image.mean()]
    for window in (3, 7):
        mean = ndimage.uniform_filter(image, window, mode="reflect")
        square = ndimage.uniform_filter(image**2, window, mode="reflect")
        columns += [mean, np.sqrt(np.maximum(square - mean**2, 0.0))]
    columns.append(np.hypot(ndimage.sobel(image, 0), ndimage.sobel(image, 1)))
    rows, cols = np.meshgrid(np.linspace(0, 1, height), np.linspace(0, 1, width), indexing="ij")
    columns += [rows, cols, (rows - 0.5) ** 2, (cols - 0.5) ** 2]
    bins = np.minimum((image * _N_INTENSITY_BINS).astype(int), _N_INTENSITY_BINS - 1)
    columns += [(bins == b).astype(np.float64) for b in range(_N_INTENSITY_BINS)]
    return np.column_stack([c.ravel() for c in columns])


def _edge_features(image):
    flat = image.ravel()
    edges = grid_edges(*image.shape)
    squared = (flat[edges[:, 0]] - flat[edges[:, 1]]) ** 2
    scale = 2.0 * squared.mean() if squared.mean() > 0 else 1.0
    return np.column_stack([np.ones(len(edges)), np.exp(-squared / scale)])
