"""Predictions of a fitted linear model over any structure, in parallel chunks of examples."""

import numpy as np

from .solvers._chunks import ExampleChunks

__all__ = ["predict_marginals", "predict_outputs"]


def predict_outputs(structure, batch, w, n_jobs=None):
    """MAP outputs of every example under weights ``w`` (flat over output units)."""
    out = ExampleChunks(structure, batch, n_jobs).map(_chunk_argmax, shared=(structure, w))
    return np.concatenate(out)


def predict_marginals(structure, batch, w, n_jobs=None):
    """Part marginals of every example under the Gibbs distribution of ``w``."""
    out = ExampleChunks(structure, batch, n_jobs).map(_chunk_marginals, shared=(structure, w))
    return np.concatenate(out)


def _chunk_argmax(sub, structure, w):
    return structure.argmax(sub, structure.part_scores(sub, w))


def _chunk_marginals(sub, structure, w):
    return structure.marginals(sub, structure.part_scores(sub, w))[0]
