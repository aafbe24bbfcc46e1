import io
import tarfile

import numpy as np
import pytest
from PIL import Image

from sklearn_struct.datasets._horses import (
    EDGE_FEATURES,
    NODE_FEATURES,
    grid_edges,
    load_weizmann_horses,
    make_horse_segmentation,
)
from sklearn_struct.structures.mincut.structure import MinCutStructure


def _jpeg(array):
    buffer = io.BytesIO()
    Image.fromarray(array.astype(np.uint8), mode="L").save(buffer, format="JPEG", quality=100)
    return buffer.getvalue()


def _write_archive(path, files):
    with tarfile.open(path, "w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


@pytest.fixture
def tiny_archive(tmp_path):
    # 8x12 image: left half dark, right half bright; mask = right half
    image = np.zeros((8, 12))
    image[:, 6:] = 200
    mask = np.zeros((8, 12))
    mask[:, 6:] = 255
    other = np.full((6, 6), 100.0)
    files = {
        "db/gray/horse002.jpg": _jpeg(image),
        "db/figure_ground/horse002.jpg": _jpeg(mask),
        "db/gray/horse001.jpg": _jpeg(other),
        "db/figure_ground/horse001.jpg": _jpeg(np.zeros((6, 6))),
        "db/rgb/horse001.jpg": _jpeg(other),
    }
    return _write_archive(tmp_path / "horses.tar.gz", files)


def test_tiny_archive_original_size(tiny_archive):
    data = load_weizmann_horses(tiny_archive)
    assert data.names == ["horse001", "horse002"]
    assert data.images[0].shape == (6, 6) and data.images[1].shape == (8, 12)
    assert np.allclose(data.images[0], 100 / 255, atol=2 / 255)
    assert np.allclose(data.images[1][:, :6], 0, atol=3 / 255)
    assert np.allclose(data.images[1][:, 6:], 200 / 255, atol=3 / 255)
    assert data.masks[1].tolist() == [[0] * 6 + [1] * 6] * 8
    assert data.masks[0].sum() == 0


def test_tiny_archive_downsampled(tiny_archive):
    data = load_weizmann_horses(tiny_archive, size=(4, 6), n_images=2)
    assert data.images.shape == (2, 4, 6) and data.masks.shape == (2, 4, 6)
    # 2x2 area averages of the halves
    assert np.allclose(data.images[1][:, 3:], 200 / 255, atol=3 / 255)
    assert data.masks[1].tolist() == [[0, 0, 0, 1, 1, 1]] * 4
    assert load_weizmann_horses(tiny_archive, size=3, n_images=1).images.shape == (1, 3, 3)


def test_bad_archives(tmp_path, tiny_archive):
    with pytest.raises(FileNotFoundError):
        load_weizmann_horses(tmp_path / "missing.tar.gz")
    (tmp_path / "junk.tar.gz").write_bytes(b"not a tar")
    with pytest.raises(ValueError, match="not a readable tar"):
        load_weizmann_horses(tmp_path / "junk.tar.gz")
    unpaired = _write_archive(tmp_path / "unpaired.tar.gz",
                              {"gray/horse001.jpg": _jpeg(np.zeros((4, 4)))})
    with pytest.raises(ValueError, match="unpaired.*horse001"):
        load_weizmann_horses(unpaired)
    sizes = _write_archive(tmp_path / "sizes.tar.gz", {
        "gray/h.jpg": _jpeg(np.zeros((4, 4))), "figure_ground/h.jpg": _jpeg(np.zeros((4, 5)))})
    with pytest.raises(ValueError, match="h: image is"):
        load_weizmann_horses(sizes)
    broken = _write_archive(tmp_path / "broken.tar.gz", {
        "gray/h.jpg": b"garbage", "figure_ground/h.jpg": b"garbage"})
    with pytest.raises(ValueError, match="cannot decode"):
        load_weizmann_horses(broken)
    with pytest.raises(ValueError, match="size"):
        load_weizmann_horses(tiny_archive, size=(4,))
    with pytest.raises(ValueError, match="n_images"):
        load_weizmann_horses(tiny_archive, n_images=0)


def test_grid_edges():
    edges = grid_edges(2, 3)
    assert edges.tolist() == [[0, 1], [1, 2], [3, 4], [4, 5], [0, 3], [1, 4], [2, 5]]


def test_segmentation_inputs_by_hand():
    image = np.array([[0.0, 0.0, 1.0], [0.0, 0.5, 1.0]])
    mask = np.array([[0, 0, 1], [0, 1, 1]])
    X, y = make_horse_segmentation([image], [mask])
    node_features, edges, edge_features = X[0]
    assert node_features.shape == (6, len(NODE_FEATURES))
    assert edge_features.shape == (7, len(EDGE_FEATURES))
    names = list(NODE_FEATURES)
    assert np.allclose(node_features[:, names.index("intensity")], image.ravel())
    assert np.allclose(node_features[:, names.index("intensity_minus_image_mean")],
                       image.ravel() - 2.5 / 6)
    assert np.allclose(node_features[:, names.index("row")], [0, 0, 0, 1, 1, 1])
    assert np.allclose(node_features[:, names.index("column")], [0, 0.5, 1] * 2)
    bins = node_features[:, names.index("intensity_bin_0"):]
    assert bins.sum(axis=1).tolist() == [1] * 6 and bins[4, 4] == 1 and bins[2, 7] == 1
    # contrast = exp(-d^2 / (2 mean d^2)) over the 7 edges
    differences = np.array([0, 1, 0.5, 0.5, 0, 0.5, 0])
    scale = 2 * np.mean(differences**2)
    assert np.allclose(edge_features[:, 0], 1)
    assert np.allclose(edge_features[:, 1], np.exp(-differences**2 / scale))
    assert y[0].tolist() == [0, 0, 1, 0, 1, 1]
    batch = MinCutStructure().make_batch(X)
    assert batch.n_weights == len(NODE_FEATURES) + len(EDGE_FEATURES)


def test_segmentation_bad_inputs():
    with pytest.raises(ValueError, match="1 images but 2 masks"):
        make_horse_segmentation([np.zeros((3, 3))], [np.zeros((3, 3))] * 2)
    with pytest.raises(ValueError, match="image 0: mask shape"):
        make_horse_segmentation([np.zeros((3, 3))], [np.zeros((3, 4))])
    with pytest.raises(ValueError, match="image 0: mask values"):
        make_horse_segmentation([np.zeros((3, 3))], [np.full((3, 3), 2)])
    with pytest.raises(ValueError, match="image 0: expected a 2-D"):
        make_horse_segmentation([np.zeros(3)])


def test_shared_horses(shared_data):
    data = load_weizmann_horses(shared_data / "weizmann_horses" / "weizmann_horse_db.tar.gz",
                                size=(24, 32), n_images=12)
    assert data.names[0] == "horse001" and len(data.names) == 12
    assert data.images.shape == (12, 24, 32)
    assert 0 <= data.images.min() and data.images.max() <= 1
    # README: foreground fraction between 0.052 and 0.431 per image
    fractions = data.masks.reshape(12, -1).mean(axis=1)
    assert np.all((fractions > 0.03) & (fractions < 0.46))
