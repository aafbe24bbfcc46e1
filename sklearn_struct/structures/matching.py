"""Bipartite matchings (word alignment): one part per candidate edge."""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment

from . import _flow_kernels as kernels
from ._base import BaseStructure
from ._batch import (
    check_feature_rows,
    check_part_vector,
    check_sample_weight,
    check_take_indices,
    offsets_from_lengths,
    ragged_positions,
    take_ragged_rows,
)

__all__ = ["MatchingBatch", "MatchingStructure", "check_edge_list"]

#: KKT residual the projections reach (checked, see ``projection_residual_``).
PROJECTION_TOL = 1e-10
MAX_SWEEPS = 100_000


def check_edge_list(edges, n_edges, where):
    """Validate an ``(n_edges, 2)`` array of non-negative integer node indices."""
    edges = np.asarray(edges)
    if edges.ndim != 2 or edges.shape[1] != 2:
        raise ValueError(
            f"{where}: edges must be an (n_edges, 2) integer array of (source, target) "
            f"node indices, got shape {edges.shape}."
        )
    if edges.shape[0] != n_edges:
        raise ValueError(
            f"{where}: {edges.shape[0]} edges but {n_edges} rows of edge features."
        )
    if edges.size and not np.issubdtype(edges.dtype, np.integer):
        if not (np.issubdtype(edges.dtype, np.floating) and np.all(edges == np.round(edges))):
            raise TypeError(f"{where}: edge endpoints must be integers, got dtype {edges.dtype}.")
    edges = edges.astype(np.int64)
    if edges.size and edges.min() < 0:
        raise ValueError(f"{where}: edge endpoints must be non-negative node indices.")
    return edges


@dataclass(frozen=True)
class MatchingBatch:
    """A set of bipartite graphs in the form the parts operations use.

    Attributes
    ----------
    X : ndarray of shape (n_edges_total, n_features) or scipy.sparse.csr_matrix
        Edge features of all graphs stacked.
    edges : ndarray of shape (n_edges_total, 2), int64
        Local (source, target) node indices of every edge.
    node_counts : ndarray of shape (n_samples, 2), int64
        Number of source and target nodes of every graph.
    n_samples, n_features, n_weights : int
    unit_offsets, part_offsets : ndarray of shape (n_samples + 1,)
        Edge offsets (an edge is both the output unit and the part).
    """

    X: object
    edges: np.ndarray
    node_counts: np.ndarray
    n_samples: int
    n_features: int
    unit_offsets: np.ndarray
    part_offsets: np.ndarray
    n_weights: int


class MatchingStructure(BaseStructure):
    """Bipartite matching over candidate edges (Taskar et al. 2006, section 2.3).

    Example ``i`` is a tuple ``(edge_features, edges)`` -- edge features of
    shape ``(E_i, d)`` (dense or sparse) and an ``(E_i, 2)`` integer array of
    ``(source, target)`` node indices -- or ``(edge_features, edges,
    (n_sources, n_targets))`` to fix the node counts (default: largest index
    plus one).  Its output is a 0/1 vector over the edges in which every node
    is used at most once (unmatched nodes are allowed).  The score of an edge
    is ``w . phi(edge)``; ``w`` has one weight per edge feature.

    Parameters
    ----------
    false_positive_cost : float, default=1.0
        ``c+`` of eq. (10): loss of predicting an edge that is not in the truth.
    false_negative_cost : float, default=1.0
        ``c-`` of eq. (10): loss of missing a true edge.

    Notes
    -----
    The loss is weighted Hamming (eq. 10), linear in the predicted edges:
    ``loss(y, y') = sum_e c- y_e + sum_e (c+ - (c+ + c-) y_e) y'_e``, so
    :meth:`part_losses` returns ``c+ - (c+ + c-) y_e`` and
    :meth:`loss_offsets` the constants ``sum_e c- y_e``.

    Marginals of matchings are #P-hard: :meth:`marginals` is unsupported.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.structures.matching import MatchingStructure
    >>> edges = np.array([[0, 0], [0, 1], [1, 1]])
    >>> features = np.eye(3)
    >>> structure = MatchingStructure()
    >>> batch = structure.make_batch([(features, edges)])
    >>> structure.argmax(batch, np.array([2.0, 1.0, 2.0]))
    array([1, 0, 1])
    """

    supported_operations = (
        "part_scores",
        "expected_features",
        "encode",
        "decode",
        "part_losses",
        "argmax",
        "loss_augmented_argmax",
        "project",
    )

    def __init__(self, false_positive_cost=1.0, false_negative_cost=1.0):
        self.false_positive_cost = false_positive_cost
        self.false_negative_cost = false_negative_cost

    def __repr__(self):
        return (
            f"MatchingStructure(false_positive_cost={self.false_positive_cost!r}, "
            f"false_negative_cost={self.false_negative_cost!r})"
        )

    # ------------------------------------------------------------------ data
    def make_batch(self, X, n_states=None):
        """Validate a list of ``(edge_features, edges[, (n_sources, n_targets)])``."""
        if isinstance(X, tuple) and len(X) in (2, 3) and hasattr(X[1], "shape"):
            raise TypeError(
                "MatchingStructure: X must be a list of (edge_features, edges) tuples, one per "
                "graph; got a single tuple (wrap it in a list)."
            )
        if isinstance(X, (str, bytes)) or not hasattr(X, "__len__") or len(X) == 0:
            raise ValueError(
                "MatchingStructure: X must be a non-empty list of (edge_features, edges) tuples."
            )
        features, edge_lists, counts = [], [], []
        for i, example in enumerate(X):
            where = f"MatchingStructure: example {i}"
            if not isinstance(example, (tuple, list)) or len(example) not in (2, 3):
                raise TypeError(
                    f"{where}: expected a tuple (edge_features, edges) or (edge_features, "
                    f"edges, (n_sources, n_targets)), got {type(example).__name__}."
                )
            rows = check_feature_rows(example[0], where=f"{where} edge_features",
                                      allow_empty=True)
            edges = check_edge_list(example[1], rows.shape[0], where)
            if len(example) == 3:
                n_src, n_tgt = (int(n) for n in example[2])
                if edges.size and (edges[:, 0].max() >= n_src or edges[:, 1].max() >= n_tgt):
                    raise ValueError(
                        f"{where}: an edge endpoint is out of range for {n_src} source and "
                        f"{n_tgt} target nodes."
                    )
            else:
                n_src, n_tgt = (edges.max(axis=0) + 1) if edges.size else (0, 0)
            if edges.size:
                keys = edges[:, 0] * max(n_tgt, 1) + edges[:, 1]
                if np.unique(keys).size != keys.size:
                    raise ValueError(f"{where}: duplicate (source, target) edges.")
            if features and rows.shape[1] != features[0].shape[1]:
                raise ValueError(
                    f"{where}: {rows.shape[1]} edge features but example 0 has "
                    f"{features[0].shape[1]}; every example needs the same feature width."
                )
            features.append(rows)
            edge_lists.append(edges)
            counts.append((n_src, n_tgt))
        offsets = offsets_from_lengths([len(e) for e in edge_lists])
        if any(sp.issparse(f) for f in features):
            stacked = sp.vstack([sp.csr_matrix(f) for f in features], format="csr")
        else:
            stacked = np.concatenate(features, axis=0)
        return self._batch(stacked, np.concatenate(edge_lists).reshape(-1, 2),
                           np.asarray(counts, dtype=np.int64).reshape(-1, 2), offsets)

    @staticmethod
    def _batch(X, edges, node_counts, offsets):
        return MatchingBatch(
            X=X, edges=np.ascontiguousarray(edges, dtype=np.int64),
            node_counts=np.ascontiguousarray(node_counts), n_samples=len(offsets) - 1,
            n_features=X.shape[1], unit_offsets=offsets, part_offsets=offsets,
            n_weights=X.shape[1],
        )

    def take(self, batch, indices):
        """Sub-batch of the graphs ``indices``."""
        indices = check_take_indices(indices, batch.n_samples)
        X, offsets = take_ragged_rows(batch.X, batch.unit_offsets, indices)
        edges, _ = take_ragged_rows(batch.edges, batch.unit_offsets, indices)
        return self._batch(X, edges, batch.node_counts[indices], offsets)

    def check_outputs(self, batch, Y):
        """Validate flat 0/1 edge outputs; return int64."""
        Y = super().check_outputs(batch, Y)
        bad = (Y != 0) & (Y != 1)
        if bad.any():
            i = np.searchsorted(batch.unit_offsets, np.flatnonzero(bad)[0], side="right") - 1
            raise ValueError(f"MatchingStructure: example {i}: outputs must be 0/1 per edge.")
        return Y

    # ------------------------------------------------------- parts operations
    def part_scores(self, batch, w):
        """Edge scores ``X @ w`` (the map ``F^T``)."""
        w = check_part_vector(w, batch.n_weights, "MatchingStructure", "weights w")
        return np.asarray(batch.X @ w, dtype=np.float64).ravel()

    def expected_features(self, batch, z, sample_weight=None):
        """``sum_i s_i sum_e z_e phi(e)`` (the map ``F``)."""
        z = check_part_vector(z, batch.part_offsets[-1], "MatchingStructure", "z")
        sample_weight = check_sample_weight(sample_weight, batch.n_samples, "MatchingStructure")
        if sample_weight is not None:
            z = z * np.repeat(sample_weight, np.diff(batch.part_offsets))
        return np.asarray(batch.X.T @ z, dtype=np.float64).ravel()

    def encode(self, batch, Y):
        """Edge indicator vector (float)."""
        return self.check_outputs(batch, Y).astype(np.float64)

    def decode(self, batch, z):
        """0/1 edges from an integral part vector (threshold 1/2)."""
        z = check_part_vector(z, batch.part_offsets[-1], "MatchingStructure", "z")
        return (z > 0.5).astype(np.int64)

    def part_losses(self, batch, Y):
        """``c+ - (c+ + c-) y_e``: the loss of eq. (10) up to :meth:`loss_offsets`."""
        Y = self.check_outputs(batch, Y)
        c_fp, c_fn = self._costs()
        return c_fp - (c_fp + c_fn) * Y

    def loss_offsets(self, batch, Y):
        """Per-example constants ``sum_e c- y_e`` completing :meth:`part_losses`."""
        Y = self.check_outputs(batch, Y)
        _, c_fn = self._costs()
        owner, _ = ragged_positions(batch.unit_offsets)
        return c_fn * np.bincount(owner, weights=Y, minlength=batch.n_samples)

    def _costs(self):
        c_fp, c_fn = float(self.false_positive_cost), float(self.false_negative_cost)
        if not (c_fp >= 0 and c_fn >= 0 and np.isfinite(c_fp + c_fn)):
            raise ValueError(
                "MatchingStructure: false_positive_cost and false_negative_cost must be finite "
                f"and non-negative, got {c_fp!r} and {c_fn!r}."
            )
        return c_fp, c_fn

    def argmax(self, batch, scores):
        """Maximum-weight matching of every graph (only positive-score edges are used)."""
        scores = check_part_vector(scores, batch.part_offsets[-1], "MatchingStructure")
        Y = np.zeros(batch.part_offsets[-1], dtype=np.int64)
        for i in range(batch.n_samples):
            lo, hi = batch.unit_offsets[i], batch.unit_offsets[i + 1]
            s = scores[lo:hi]
            positive = np.flatnonzero(s > 0)
            if positive.size == 0:
                continue
            edges = batch.edges[lo:hi][positive]
            # compress to the nodes touched by positive edges; absent pairs weigh 0
            rows, row_index = np.unique(edges[:, 0], return_inverse=True)
            cols, col_index = np.unique(edges[:, 1], return_inverse=True)
            weight = np.zeros((rows.size, cols.size))
            weight[row_index, col_index] = s[positive]
            edge_of = -np.ones((rows.size, cols.size), dtype=np.int64)
            edge_of[row_index, col_index] = positive
            r, c = linear_sum_assignment(weight, maximize=True)
            chosen = edge_of[r, c]
            chosen = chosen[chosen >= 0]
            Y[lo + chosen] = 1
        return Y

    def loss_augmented_argmax(self, batch, scores, Y):
        """Matching maximising ``scores + part_losses(Y)``."""
        return self.argmax(batch, np.asarray(scores, dtype=np.float64)
                           + self.part_losses(batch, Y))

    def project(self, batch, v, warm_start=None):
        """Euclidean projection onto the matching polytope of every graph (Figure 3).

        Exact: the returned point satisfies the KKT conditions to 1e-10 (the
        residual reached is stored in ``self.projection_residual_``).

        ``warm_start``: optional dict carried between calls on the same batch;
        the dual variables of the last projection are kept in it
        (``warm_start["duals"]``) and start the next one -- iterative
        solvers project nearby points again and again.
        """
        v = check_part_vector(v, batch.part_offsets[-1], "MatchingStructure", "v")
        z = np.empty_like(v)
        duals = None if warm_start is None else warm_start.get("duals")
        if duals is None or duals.shape[0] != int(batch.node_counts.sum()):
            duals = np.zeros(int(batch.node_counts.sum()))
        self.projection_residual_ = kernels.matching_project_batch(
            v, batch.edges, batch.unit_offsets, batch.node_counts, z, duals, PROJECTION_TOL,
            MAX_SWEEPS,
        )
        if warm_start is not None:
            warm_start["duals"] = duals
        return z
