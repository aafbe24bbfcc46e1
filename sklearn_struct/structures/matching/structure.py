"""Bipartite matchings (word alignment): one part per candidate edge."""

from dataclasses import dataclass
from functools import partial

import numpy as np
from scipy.optimize import linear_sum_assignment

from ._projection import matching_project_batch
from .._base import BaseStructure
from .._batch import (
    Batch, check_binary_outputs, check_example_tuples, check_feature_rows, check_part_vector,
    check_same_width, check_sample_weight, example_column_norms, ragged_positions, stack_rows)
from .._graph import (
    MAX_NEWTON_ITER, PROJECTION_TOL, check_edge_list, check_geometry, newton_projection)
from ._kernels import MATCHING_KERNEL_OPS, matching_kernel_data
from .._output_space import OutputSpace
from .._targets import BinaryUnitCodec

__all__ = ["MatchingBatch", "MatchingStructure"]


@dataclass(frozen=True)
class MatchingBatch(Batch):
    """A set of bipartite graphs in the form :class:`MatchingStructure`'s operations use.

    Parameters
    ----------
    X : ndarray of shape (n_edges_total, n_features) or scipy.sparse.csr_matrix
        Edge features of all graphs stacked (float64; CSR as soon as one
        input graph was sparse).
    edges : ndarray of int64 of shape (n_edges_total, 2)
        Local (source, target) node indices of every edge, numbered within
        its own graph.
    node_counts : ndarray of int64 of shape (n_samples, 2)
        Number of source and target nodes of every graph.
    n_samples : int
        Number of graphs.
    n_features : int
        Number of features per edge.
    unit_offsets : ndarray of int64 of shape (n_samples + 1,)
        Edge offsets: graph ``i`` owns edges ``unit_offsets[i]:unit_offsets[i + 1]``
        (an edge is an output unit).
    part_offsets : ndarray of int64 of shape (n_samples + 1,)
        Equal to ``unit_offsets``: an edge is also a part.
    n_weights : int
        Equal to ``n_features``: one weight per edge feature.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.structures import MatchingStructure
    >>> edges = np.array([[0, 0], [0, 1], [1, 1]])
    >>> X = [(np.ones((3, 2)), edges), (np.ones((1, 2)), [[0, 0]], (2, 3))]
    >>> batch = MatchingStructure().make_batch(X)
    >>> batch.unit_offsets, batch.n_weights
    (array([0, 3, 4]), 2)
    >>> batch.node_counts  # (n_sources, n_targets) of every graph
    array([[2, 2],
           [2, 3]])
    """

    X: object
    edges: np.ndarray
    node_counts: np.ndarray

    ragged = {"X": "unit_offsets", "edges": "unit_offsets"}
    per_example = ("node_counts",)


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

    See Also
    --------
    MatchingBatch : The batch of a set of bipartite graphs.
    MinCutStructure : Binary node labels of a graph, inferred by min-cut.

    Notes
    -----
    How the parts operations of :class:`BaseStructure` specialise to matchings
    (every part is an edge):

    * ``part_scores`` is ``X @ w``, one score per edge, and
      ``expected_features`` its adjoint ``sum_i s_i sum_e z_e phi(e)``.
    * ``encode`` gives the 0/1 edge indicators; ``decode`` keeps the edges
      whose value exceeds 1/2.
    * The loss is weighted Hamming (eq. 10), linear in the predicted edges:
      ``loss(y, y') = sum_e c- y_e + sum_e (c+ - (c+ + c-) y_e) y'_e``, so
      ``part_losses`` returns ``c+ - (c+ + c-) y_e`` and :meth:`loss_offsets`
      the constants ``sum_e c- y_e``.
    * ``argmax`` finds a maximum-weight matching of every graph (an
      assignment problem over the positive-score edges, solved by
      :func:`scipy.optimize.linear_sum_assignment`); ``loss_augmented_argmax``
      runs it on ``scores + part_losses``.
    * :meth:`project` is the exact Euclidean projection onto the matching
      polytope (Figure 3), warm-started from the caller's ``warm_start``
      dict.
    * Marginals of matchings are #P-hard: ``marginals`` is unsupported, and
      so is the entropic geometry of :meth:`feature_bounds`.
    * :meth:`score_outputs` is the F1 of the predicted edges.
    * ``kernel_ops`` gives the same operations one graph at a time in numba
      (the argmax by a shortest-augmenting-path assignment solver, the
      projection cold-started), for the online solvers and the generic
      batch loops.

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

    # marginals of matchings are #P-hard and there is no dynamic program: no k-best, no samples
    kernel_ops = MATCHING_KERNEL_OPS

    def __init__(self, false_positive_cost=1.0, false_negative_cost=1.0):
        self.false_positive_cost = false_positive_cost
        self.false_negative_cost = false_negative_cost

    # ------------------------------------------------------------------ data
    def make_batch(self, X, n_states=None):
        """Validate a list of bipartite graphs and stack their edges into a batch.

        Dense edge features are stacked into one C-contiguous float64 array;
        as soon as one graph's features are sparse, all are stacked as one CSR
        matrix.  The inputs are never modified.

        Parameters
        ----------
        X : list of tuple
            One tuple ``(edge_features, edges)`` or ``(edge_features, edges,
            (n_sources, n_targets))`` per graph: ``edge_features`` an array or
            sparse matrix of shape ``(E_i, n_features)`` (``E_i`` may be 0),
            ``edges`` an ``(E_i, 2)`` integer array of distinct ``(source,
            target)`` node indices; the node counts default to the largest
            index plus one.  Every graph has the same ``n_features``.
        n_states : int, default=None
            Ignored (the outputs are binary).

        Returns
        -------
        batch : MatchingBatch
            The stacked edges with their features, node counts and offsets.

        Raises
        ------
        ValueError
            If ``X`` is empty, or if a graph (named in the message) has an
            edge array of the wrong shape or length, negative, out-of-range or
            duplicate edges, non-finite features or a different number of
            features from the first graph.
        TypeError
            If ``X`` is a single tuple instead of a list of them, or a graph is
            not a tuple of two or three items or has non-numeric features or
            non-integer endpoints.
        """
        check_example_tuples(X, "MatchingStructure", {
            2: "(edge_features, edges)", 3: "(edge_features, edges, (n_sources, n_targets))",
        })
        features, edge_lists, counts = [], [], []
        for i, example in enumerate(X):
            where = f"MatchingStructure: example {i}"
            rows = check_feature_rows(example[0], where=f"{where} edge_features",
                                      allow_empty=True)
            edges = check_edge_list(example[1], rows.shape[0], where)
            if len(example) == 3:
                n_src, n_tgt = _check_node_counts(example[2], where)
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
            if features:
                check_same_width(rows, features[0], where, "edge features")
            features.append(rows)
            edge_lists.append(edges)
            counts.append((n_src, n_tgt))
        stacked, offsets = stack_rows(features)
        return self._batch(stacked, np.concatenate(edge_lists).reshape(-1, 2),
                           np.asarray(counts, dtype=np.int64).reshape(-1, 2), offsets)

    @staticmethod
    def _batch(X, edges, node_counts, unit_offsets):
        return MatchingBatch(
            X=X, edges=np.ascontiguousarray(edges, dtype=np.int64),
            node_counts=np.ascontiguousarray(node_counts), n_samples=len(unit_offsets) - 1,
            n_features=X.shape[1], unit_offsets=unit_offsets, part_offsets=unit_offsets,
            n_weights=X.shape[1],
        )

    def check_outputs(self, batch, Y):
        Y = check_binary_outputs(super().check_outputs(batch, Y), batch.unit_offsets,
                                 "MatchingStructure", "outputs must be 0/1 per edge.")
        chosen = np.flatnonzero(Y)
        example = np.searchsorted(batch.unit_offsets, chosen, side="right") - 1
        for side, name in enumerate(("source", "target")):
            # one node id over the whole batch: (example, node) -> offset of the example + node
            first_node = np.concatenate([[0], np.cumsum(batch.node_counts[:, side])])
            nodes = first_node[example] + batch.edges[chosen, side]
            degree = np.bincount(nodes, minlength=int(first_node[-1]))
            if (degree > 1).any():
                bad = int(np.flatnonzero(degree > 1)[0])
                i = int(np.searchsorted(first_node, bad, side="right") - 1)
                raise ValueError(
                    f"MatchingStructure: example {i}: {name} node {bad - first_node[i]} is "
                    f"matched by {degree[bad]} edges; a matching gives every node one edge at "
                    "most.")
        return Y

    # ------------------------------------------------------- parts operations
    def part_scores(self, batch, w):
        w = check_part_vector(w, batch.n_weights, "MatchingStructure", "weights w")
        return np.asarray(batch.X @ w, dtype=np.float64).ravel()

    def expected_features(self, batch, z, sample_weight=None):
        z = check_part_vector(z, batch.part_offsets[-1], "MatchingStructure", "z")
        sample_weight = check_sample_weight(sample_weight, batch.n_samples, "MatchingStructure")
        if sample_weight is not None:
            z = z * np.repeat(sample_weight, np.diff(batch.part_offsets))
        return np.asarray(batch.X.T @ z, dtype=np.float64).ravel()

    def encode(self, batch, Y):
        return self.check_outputs(batch, Y).astype(np.float64)

    def decode(self, batch, z):
        z = check_part_vector(z, batch.part_offsets[-1], "MatchingStructure", "z")
        return (z > 0.5).astype(np.int64)

    def part_losses(self, batch, Y):
        Y = self.check_outputs(batch, Y)
        c_fp, c_fn = self._costs()
        return c_fp - (c_fp + c_fn) * Y

    def loss_offsets(self, batch, Y):
        """Per-example constants ``sum_e c- y_e`` completing :meth:`part_losses`.

        The loss of eq. (10) of an output ``y`` of example ``i`` is
        ``loss_offsets(batch, Y)[i]`` plus the part losses of ``i`` dotted with
        ``encode(batch, y)``.

        Parameters
        ----------
        batch : MatchingBatch
            A batch returned by :meth:`make_batch`.
        Y : array-like of int of shape (n_edges_total,)
            True 0/1 edge outputs of all graphs, flat.

        Returns
        -------
        offsets : ndarray of shape (n_samples,)
            ``false_negative_cost`` times the number of true edges of every graph.
        """
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

    def project(self, batch, v, warm_start=None):
        # warm_start keeps the node prices ("duals") and the KKT residual reached
        v = check_part_vector(v, batch.part_offsets[-1], "MatchingStructure", "v")
        return newton_projection(
            "MatchingStructure", matching_project_batch, v,
            (batch.edges, batch.unit_offsets, batch.node_counts),
            int(batch.node_counts.sum()), warm_start, MAX_NEWTON_ITER,
        )

    # Euclidean steps only (projections): a matching's marginals are #P-hard. B_i is the
    # largest 2-norm of a feature column over the edges of graph i.
    def feature_bounds(self, batch, geometry):
        check_geometry(self, geometry)
        return example_column_norms(batch.X, batch.unit_offsets, 2)

    # ---------------------------------------------------------------- outputs
    def output_space(self):
        return MatchingOutputs(self, codec=partial(BinaryUnitCodec, unit="edge"))

    # --------------------------------------------------------------- kernels
    # The edge features (dense or CSR), edge offsets, endpoints, node counts, and the
    # projection's tolerance and Newton cap (layout in structures/_graph_kernels.py).
    def kernel_data(self, batch, training=False):
        return matching_kernel_data(batch.X, batch.edges, batch.unit_offsets, batch.node_counts,
                                    PROJECTION_TOL, MAX_NEWTON_ITER)


def _check_node_counts(counts, where):
    """The ``(n_sources, n_targets)`` item of a graph tuple as two non-negative ints."""
    values = np.asarray(None if isinstance(counts, (str, bytes)) else counts)
    whole = np.issubdtype(values.dtype, np.integer) or (
        np.issubdtype(values.dtype, np.floating) and np.all(values == np.round(values)))
    if values.shape != (2,) or not whole or (values < 0).any():
        raise ValueError(
            f"{where}: the node counts must be a pair (n_sources, n_targets) of non-negative "
            f"integers, got {counts!r:.60}.")
    return int(values[0]), int(values[1])


class MatchingOutputs(OutputSpace):
    """Output space of matchings: 0/1 edge vectors, scored by the F1 of the predicted edges."""

    def score(self, batch, Y_pred, Y_true, sample_weight=None):
        """F1 of the predicted edges, pooled over all graphs (the estimators' ``score``).

        Parameters
        ----------
        batch : MatchingBatch
            A batch returned by :meth:`make_batch`.
        Y_pred, Y_true : ndarray of int of shape (n_edges_total,)
            Predicted and true 0/1 edge outputs, flat.
        sample_weight : ndarray of shape (n_samples,), default=None
            Per-graph weights, counted for each of the graph's edges.

        Returns
        -------
        score : float
            ``2 TP / (n_predicted + n_true)`` with weighted counts of edges
            over all graphs; 1.0 when neither has an edge.
        """
        Y_pred = np.asarray(Y_pred, dtype=np.int64)
        Y_true = np.asarray(Y_true, dtype=np.int64)
        weights = (np.ones(Y_pred.shape[0]) if sample_weight is None
                   else np.repeat(sample_weight, np.diff(batch.unit_offsets)))
        true_positives = float(weights @ (Y_pred & Y_true))
        denominator = float(weights @ (Y_pred + Y_true))
        return 2.0 * true_positives / denominator if denominator else 1.0
