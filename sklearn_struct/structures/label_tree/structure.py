"""Markov random fields whose label graph is a tree (or a forest): exact inference.

Example 1 of Bartlett et al. (2004) with a tree-shaped graph.  An example is a
forest of ``N`` nodes, given by a parent array, with a feature row per node;
its output is a label in ``{0, ..., K-1}`` per node.  Its parts are

* node parts ``(n, k)``: feature vector ``e_k (x) x_n`` (node features times
  label), as for the tokens of a chain;
* transition parts ``(e, a, b)``: an edge of type ``e`` whose parent node is
  labelled ``a`` and child node ``b``.  Like the chain's, they are *tied over
  the edges* of a type: one score per triple, and the encoding / marginal of
  ``(e, a, b)`` is the number / expected number of such edges.

On a chain (``parent[t] = t - 1``, one edge type) the parts, their layout and
the weights are exactly those of ``ChainStructure(start_end=False)``.
Sum-product and max-product run in numba (:mod:`._kernels`).
"""

import numbers
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from . import _kernels as kernels
from .._batch import (
    Batch,
    check_encoded_states,
    check_example_tuples,
    check_feature_rows,
    check_n_states,
    check_part_vector,
    check_same_width,
    example_column_norms,
    offsets_from_lengths,
    ragged_positions,
    stack_rows,
)
from .._output_space import LabelledUnits
from .._node_labels import NodeLabels, NodeWeights

__all__ = ["TreeBatch", "TreeStructure"]

_FORMS = {2: "(node_features, parents)", 3: "(node_features, parents, edge_types)"}


@dataclass(frozen=True)
class TreeBatch(Batch):
    """A set of forests in the form :class:`TreeStructure`'s operations use.

    Parameters
    ----------
    X : ndarray of shape (n_nodes_total, n_features) or scipy.sparse.csr_matrix
        Node features of all examples stacked (float64; C-contiguous when
        dense; CSR as soon as one example's node features were sparse).
    n_states : int
        Number of labels ``K``.
    n_edge_types : int
        Number of edge types (of transition matrices).
    n_samples : int
        Number of examples.
    n_features : int
        Number of features per node.
    unit_offsets : ndarray of int64 of shape (n_samples + 1,)
        Node offsets: example ``i`` owns nodes ``unit_offsets[i]:unit_offsets[i + 1]``.
    part_offsets : ndarray of int64 of shape (n_samples + 1,)
        Example ``i`` of ``N_i`` nodes owns ``N_i * K`` node parts (``(n, k)``
        at ``n * K + k``) then ``n_edge_types * K * K`` transition parts
        (``(e, a, b)`` at ``N_i * K + (e * K + a) * K + b``).
    n_weights : int
        ``K * n_features + n_edge_types * K * K``; see
        :meth:`TreeStructure.split_weights`.
    parents : ndarray of int64 of shape (n_nodes_total,)
        Parent of every node as a node index local to its example, -1 for a root.
    order : ndarray of int64 of shape (n_nodes_total,)
        The nodes of every example (local indices) in breadth-first order from
        the roots: every parent comes before its children.
    edge_types : ndarray of int64 of shape (n_nodes_total,)
        Type of the edge from every node to its parent, -1 for a root.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.structures import TreeStructure
    >>> X = [(np.ones((3, 4)), [-1, 0, 0]), (np.ones((2, 4)), [1, -1])]
    >>> batch = TreeStructure().make_batch(X, n_states=2)
    >>> batch.unit_offsets, batch.order
    (array([0, 3, 5]), array([0, 1, 2, 1, 0]))
    >>> batch.part_offsets  # N * K node parts + K * K transitions per tree
    array([ 0, 10, 18])
    >>> batch.n_weights  # W (2, 4), transition (1, 2, 2)
    12
    """

    X: object
    n_states: int
    n_edge_types: int
    parents: np.ndarray
    order: np.ndarray
    edge_types: np.ndarray

    ragged = {"X": "unit_offsets", "parents": "unit_offsets", "order": "unit_offsets",
              "edge_types": "unit_offsets"}
    shared = ("n_states", "n_edge_types")


class TreeStructure(NodeLabels, NodeWeights):
    """Labels on the nodes of a tree (or forest) with typed parent-child transitions.

    Example ``i`` is a tuple ``(node_features, parents)`` or
    ``(node_features, parents, edge_types)``: ``N_i`` feature rows, the parent
    of every node (-1 for a root; any order of the nodes, several roots make a
    forest) and the type of every node's edge to its parent (all 0 when
    omitted).  Its output is one label per node.  The score of a labelling
    ``y`` is::

        sum_n W[y_n] . x_n + sum_{n not a root} transition[type_n, y_parent(n), y_n]

    with the weight vector laid out as ``w = concat(W.ravel(),
    transition.ravel())`` (``W`` of shape ``(K, n_features)``, ``transition``
    ``(n_edge_types, K, K)`` indexed (edge type, parent label, child label)).
    Transition parts are tied over the edges of each type (see the module
    docstring and :class:`TreeBatch` for the part layout).  The loss is the
    Hamming loss over nodes, optionally weighted by the true label of each
    node.  Inference is exact: sum-product and max-product from the leaves up
    then from the roots down, in numba, in log space.  Read more in the
    :ref:`User Guide <structures>`.

    Parameters
    ----------
    n_edge_types : int, default=1
        Number of edge types, each with its own transition matrix.
    loss_weights : array-like of shape (n_states,), default=None
        Cost of mislabelling a node whose *true* label is ``k``; ``None`` is
        the plain Hamming loss (number of wrong nodes).

    See Also
    --------
    TreeBatch : The batch of a set of forests (part layout).
    ChainStructure : Linear chains, the special case ``parent[t] = t - 1``.

    Notes
    -----
    How the parts operations of :class:`BaseStructure` specialise to trees:

    * ``encode`` gives node indicators and, per edge type, the *number* of
      edges whose (parent, child) labels are ``(a, b)``; ``marginals``
      returns the expected values of the same entries.  Per-edge marginals
      are available from :meth:`edge_marginals`.
    * ``decode`` reads the labels from the node parts only (largest node part
      of every node).
    * ``part_losses`` is ``loss_weights[y_n] * [k != y_n]`` on node part
      ``(n, k)`` and 0 on transition parts, so ``loss_augmented_argmax`` is
      max-product on ``scores + part_losses``.
    * ``part_scores``, ``expected_features``, ``encode``, ``argmax`` and
      ``marginals`` come from the per-example kernel operations
      (:attr:`kernel_ops`), which every learner also runs inside numba.
      ``project`` is not supported.

    Examples
    --------
    A root with two children, and a lone root (a forest of two trees):

    >>> import numpy as np
    >>> from sklearn_struct.structures import TreeStructure
    >>> structure = TreeStructure()
    >>> X = [(np.array([[1.0], [0.0], [0.0], [-1.0]]), [-1, 0, 0, -1])]
    >>> batch = structure.make_batch(X, n_states=2)
    >>> w = np.array([1.0, -1.0, 0, 0, 0, 0])  # W (2, 1), transition (1, 2, 2)
    >>> structure.argmax(batch, structure.part_scores(batch, w))
    array([0, 0, 0, 1])

    A bonus for a parent labelled 0 with a child labelled 1 relabels the
    children:

    >>> w[2:] = [0.0, 3.0, 0.0, 0.0]
    >>> scores = structure.part_scores(batch, w)
    >>> structure.argmax(batch, scores)
    array([0, 1, 1, 1])
    >>> mu, log_z = structure.marginals(batch, scores)
    >>> np.round(mu[:8].reshape(4, 2), 3)  # p(y_n = k)
    array([[0.999, 0.001],
           [0.048, 0.952],
           [0.048, 0.952],
           [0.119, 0.881]])
    """

    kernel_ops = kernels.TREE_KERNEL_OPS

    def __init__(self, n_edge_types=1, loss_weights=None):
        self.n_edge_types = n_edge_types
        self.loss_weights = loss_weights

    # ------------------------------------------------------------------ data
    def make_batch(self, X, n_states=None):
        """Validate a list of forests and stack their nodes into a batch.

        Dense node features are stacked into one C-contiguous float64 array;
        as soon as one example's node features are sparse, all are stacked as
        one CSR matrix.  The inputs are never modified.

        Parameters
        ----------
        X : list of tuple
            One tuple ``(node_features, parents)`` or ``(node_features,
            parents, edge_types)`` per example: ``node_features`` an array or
            sparse matrix of shape ``(N_i, n_features)`` with ``N_i >= 1`` (the
            same ``n_features`` for every example, finite values);
            ``parents`` ``N_i`` integers, the index of every node's parent or
            -1 for a root, without cycles; ``edge_types`` ``N_i`` integers in
            ``[0, n_edge_types)``, the type of every node's edge to its
            parent (ignored for roots; all 0 when omitted).
        n_states : int
            Number of labels ``K`` (required despite the default).

        Returns
        -------
        batch : TreeBatch
            The stacked nodes with their parents, order, edge types and offsets.

        Raises
        ------
        ValueError
            If ``X`` is empty, or an example (named in the message, with the
            node) has no node, a parent array or edge types of the wrong
            length, a parent out of range, a cycle in its parent array, an
            edge type out of range, non-finite features or a feature width
            different from the first example's; if ``n_states`` is missing or
            below 1 or ``n_edge_types`` below 1.
        TypeError
            If ``X`` is not a list of such tuples, parents or edge types are
            not integers, or ``n_states`` or ``n_edge_types`` is not an integer.
        """
        name = type(self).__name__
        n_states = check_n_states(n_states, name)
        n_edge_types = self._check_n_edge_types()
        check_example_tuples(X, name, _FORMS)
        rows, parents, edge_types = [], [], []
        for i, example in enumerate(X):
            where = f"{name}: example {i}"
            node_rows = check_feature_rows(example[0], where=f"{where} node_features")
            if rows:
                check_same_width(node_rows, rows[0], where, "node features")
            n_nodes = node_rows.shape[0]
            parent = _check_node_integers(example[1], n_nodes, where, "parents")
            bad = np.flatnonzero((parent < -1) | (parent >= n_nodes))
            if bad.size:
                raise ValueError(
                    f"{where}: node {bad[0]} has parent {parent[bad[0]]}, out of range: a "
                    f"parent is a node index in [0, {n_nodes}) or -1 for a root."
                )
            if len(example) == 3:
                types = _check_node_integers(example[2], n_nodes, where, "edge_types")
                bad = np.flatnonzero((parent >= 0) & ((types < 0) | (types >= n_edge_types)))
                if bad.size:
                    raise ValueError(
                        f"{where}: node {bad[0]} has edge type {types[bad[0]]}, expected an "
                        f"integer in [0, {n_edge_types}) (n_edge_types={n_edge_types})."
                    )
            else:
                types = np.zeros(n_nodes, dtype=np.int64)
            rows.append(node_rows)
            parents.append(parent)
            edge_types.append(np.where(parent >= 0, types, -1))
        X_rows, unit_offsets = stack_rows(rows)
        parents = np.concatenate(parents)
        order = np.empty_like(parents)
        example, node = kernels.tree_orders(parents, unit_offsets, order)
        if example >= 0:
            local = parents[unit_offsets[example]:unit_offsets[example + 1]]
            cycle = [node]
            while local[cycle[-1]] != node:
                cycle.append(int(local[cycle[-1]]))
            path = " -> ".join(str(n) for n in cycle + [node])
            raise ValueError(
                f"{name}: example {example}: node {node} lies on a cycle of the parent array "
                f"({path}, each node followed by its parent); every node must lead up to a "
                "root (parent -1)."
            )
        return self._batch(X_rows, unit_offsets, n_states, n_edge_types, parents, order,
                           np.concatenate(edge_types))

    @staticmethod
    def _batch(X, unit_offsets, n_states, n_edge_types, parents, order, edge_types):
        K = n_states
        transitions = n_edge_types * K * K
        return TreeBatch(
            X=X, n_states=K, n_edge_types=n_edge_types, n_samples=len(unit_offsets) - 1,
            n_features=X.shape[1], unit_offsets=unit_offsets,
            part_offsets=offsets_from_lengths(np.diff(unit_offsets) * K + transitions),
            n_weights=K * X.shape[1] + transitions, parents=parents, order=order,
            edge_types=edge_types,
        )

    def check_outputs(self, batch, Y):
        self._check_batch(batch)
        return check_encoded_states(Y, batch.unit_offsets, batch.n_states, type(self).__name__)

    # ------------------------------------------------------- weight layout
    def split_weights(self, batch, w):
        """Split a weight vector into its node and transition blocks.

        Parameters
        ----------
        batch : TreeBatch
            A batch returned by :meth:`make_batch` (it fixes ``K``,
            ``n_features`` and ``n_edge_types``).
        w : array-like of shape (batch.n_weights,)
            Weight vector ``concat(W.ravel(), transition.ravel())``.

        Returns
        -------
        W : ndarray of shape (K, n_features)
            Node weights; row ``k`` scores nodes labelled ``k``.
        transition : ndarray of shape (n_edge_types, K, K)
            ``transition[e, a, b]`` scores an edge of type ``e`` from a parent
            labelled ``a`` to a child labelled ``b``.  Both are views of ``w``
            when ``w`` is a float64 array.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_struct.structures import TreeStructure
        >>> structure = TreeStructure(n_edge_types=2)
        >>> batch = structure.make_batch([(np.zeros((2, 3)), [-1, 0])], n_states=2)
        >>> W, transition = structure.split_weights(
        ...     batch, np.arange(batch.n_weights, dtype=float))
        >>> W.shape, transition.shape
        ((2, 3), (2, 2, 2))
        """
        self._check_batch(batch)
        w = check_part_vector(w, batch.n_weights, type(self).__name__, "weights w")
        K, d = batch.n_states, batch.n_features
        return w[:K * d].reshape(K, d), w[K * d:].reshape(batch.n_edge_types, K, K)

    # ------------------------------------------------------- parts operations
    def edge_marginals(self, batch, scores):
        """Per-edge marginals ``p(y_parent(n) = a, y_n = b)`` of every example.

        Their sum over the edges of type ``e`` is the transition part
        ``(e, a, b)`` of :meth:`marginals`.

        Parameters
        ----------
        batch : TreeBatch
            A batch returned by :meth:`make_batch`.
        scores : array-like of shape (n_parts_total,)
            Part scores, flat, e.g. from :meth:`part_scores`.

        Returns
        -------
        edges : list of ndarray of shape (N_i, K, K)
            One array per example; ``edges[i][n, a, b]`` is the probability
            that node ``n`` is labelled ``b`` and its parent ``a`` (all zeros
            for a root).

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_struct.structures import TreeStructure
        >>> structure = TreeStructure()
        >>> batch = structure.make_batch([(np.zeros((3, 1)), [-1, 0, 0])], n_states=2)
        >>> edges = structure.edge_marginals(batch, np.zeros(batch.part_offsets[-1]))
        >>> edges[0].shape
        (3, 2, 2)
        >>> edges[0][2].round(6)  # uniform: every label pair has probability 1/4
        array([[0.25, 0.25],
               [0.25, 0.25]])
        """
        scores = self._check_scores(batch, scores)
        K = batch.n_states
        flat = np.empty((batch.unit_offsets[-1], K, K))
        log_z = np.empty(batch.n_samples)
        kernels.tree_edge_marginals_batch(scores, batch.unit_offsets, batch.part_offsets, K,
                                          batch.n_edge_types, batch.parents, batch.order,
                                          batch.edge_types, flat, log_z)
        return np.split(flat, batch.unit_offsets[1:-1])

    def feature_bounds(self, batch, geometry):
        self._check_batch(batch)
        if geometry != "entropic":
            self._unsupported("feature_bounds")
        # a transition weight's feature is a count of edges of its type
        owner, _ = ragged_positions(batch.unit_offsets)
        edges = batch.edge_types >= 0
        counts = np.bincount(owner[edges] * batch.n_edge_types + batch.edge_types[edges],
                             minlength=batch.n_samples * batch.n_edge_types)
        return np.maximum(example_column_norms(batch.X, batch.unit_offsets, 1),
                          counts.reshape(batch.n_samples, batch.n_edge_types).max(axis=1))

    # ---------------------------------------------------------------- outputs
    def output_space(self):
        return LabelTreeOutputs(self, self._node_index, unit="node")

    # --------------------------------------------------------------- kernels
    def kernel_data(self, batch, training=False):
        self._check_batch(batch)
        return kernels.tree_kernel_data(batch.X, batch.unit_offsets, batch.n_states,
                                        batch.parents, batch.order, batch.edge_types,
                                        batch.n_edge_types, training)

    # --------------------------------------------------------------- helpers
    def _check_n_edge_types(self):
        n = self.n_edge_types
        name = type(self).__name__
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, numbers.Integral):
            raise TypeError(f"{name}: n_edge_types must be an integer, got {n!r}.")
        if n < 1:
            raise ValueError(f"{name}: n_edge_types must be >= 1, got {n}.")
        return int(n)

    def _check_batch(self, batch):
        name = type(self).__name__
        if not isinstance(batch, TreeBatch):
            raise TypeError(f"{name}: expected a TreeBatch from make_batch, got "
                            f"{type(batch).__name__}.")
        if batch.n_edge_types != self.n_edge_types:
            raise ValueError(
                f"{name}(n_edge_types={self.n_edge_types}) got a batch built with "
                f"n_edge_types={batch.n_edge_types}; rebuild it with make_batch."
            )

    @staticmethod
    def _node_index(batch):
        owner, position = ragged_positions(batch.unit_offsets)
        starts = batch.part_offsets[owner] + position * batch.n_states
        return starts[:, None] + np.arange(batch.n_states)


def _check_node_integers(values, n_nodes, where, name):
    """One integer per node, as int64 (integral floats are accepted)."""
    if sp.issparse(values):
        raise TypeError(f"{where}: {name} must be a 1-D integer array, got a sparse matrix.")
    values = np.asarray(values)
    if values.ndim != 1 or values.shape[0] != n_nodes:
        raise ValueError(f"{where}: {name} must hold one integer per node ({n_nodes} nodes), "
                         f"got shape {values.shape}.")
    if not np.issubdtype(values.dtype, np.integer):
        if not (np.issubdtype(values.dtype, np.floating) and np.all(values == np.round(values))
                and np.isfinite(values).all()):
            raise TypeError(f"{where}: {name} must be integers, got dtype {values.dtype}.")
    return values.astype(np.int64)


class LabelTreeOutputs(LabelledUnits):
    """Output space of a label tree: node labels, input weights and edge-type transitions."""

    def weight_attributes(self, batch, w):
        W, transition = self.structure.split_weights(batch, w)
        return {"coef_": W, "transition_": transition}
