"""How a structure's outputs and weights look to the user.

The structure protocol (:mod:`._base`) is what learners need: batches, parts,
losses and inference.  What only the estimators need to talk to their user
lives beside it, in the structure's *output space*
(:meth:`~sklearn_struct.structures.BaseStructure.output_space`):

* the target codec (validate the user's ``y``, encode it, decode predictions);
* settings given by label names, resolved once the classes are known;
* the estimators' ``score``, ``n_features_in_`` and input layout;
* per-unit views of part vectors (``decision_function``, ``predict_marginals``);
* fitted weight attributes (``coef_``, ``transition_``), their names and their
  feature support;
* partial labels: the part scores (0 or ``-inf``) that keep the outputs
  consistent with what is known of a target (:meth:`OutputSpace.partial_label_scores`).

:class:`OutputSpace` holds the defaults; :class:`LabelledUnits` serves the
structures whose output units carry labels (chains, multiclass, label trees).
A structure that needs more subclasses one of them.
"""

import numpy as np

from ._targets import FlatLabelCodec, UnitLabelCodec

__all__ = ["LabelledUnits", "OutputSpace"]


class OutputSpace:
    """The presentation side of a structure: targets, scores, views and names of weights.

    Parameters
    ----------
    structure : BaseStructure
        The structure whose outputs these are.
    codec : callable, default=None
        ``codec(y)`` validates training targets and returns the target codec
        (see :mod:`._targets`); by default a :class:`UnitLabelCodec` of
        ``unit`` labels.
    unit : str, default="unit"
        What one output unit is called in messages ("token", "edge", ...).

    Attributes
    ----------
    flat : bool
        Whether an example has exactly one output unit whose label is the
        target, so that ``y`` is one label per sample and an estimator over
        the structure is a scikit-learn classifier.
    partial_labels : bool
        Whether the targets may be partial labels (``None`` or sets of labels,
        see :meth:`partial_label_scores`): chains and semi-Markov chains.

    See Also
    --------
    LabelledUnits : The output space of structures whose units carry labels.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.structures import MinCutStructure
    >>> space = MinCutStructure().output_space()
    >>> codec = space.codec([np.array([0, 1, 1])])
    >>> codec.classes_
    array([0, 1])
    """

    flat = False
    #: Whether partial labels are supported (the structure's inference takes parts scored
    #: ``-inf``): chains and semi-Markov chains.
    partial_labels = False

    def __init__(self, structure, codec=None, unit="unit"):
        self.structure = structure
        self.unit = unit
        self._codec = codec

    def codec(self, y):
        """Validate training targets and return their codec.

        The codec fixes the classes (and so the number of output states, which
        ``make_batch`` needs), encodes targets of a batch into flat output
        units (``codec.encode(batch, y)``) and decodes predicted outputs back
        into the user's form (``codec.decode(batch, Y)``).

        Parameters
        ----------
        y : object
            Training targets in the structure's form.

        Returns
        -------
        codec : codec object
            Has ``classes_``, ``n_states``, ``encode`` and ``decode``.

        Raises
        ------
        ValueError or TypeError
            For malformed targets, naming the offending example.
        """
        if self._codec is not None:
            return self._codec(y)
        return UnitLabelCodec(y, unit=self.unit)

    def for_classes(self, classes, y=None):
        """The structure for outputs whose state ``k`` has the label ``classes[k]``.

        Estimators call it once the codec has fixed the classes and keep the
        result as ``structure_``.  Structures with settings given by label
        names (a chain's tagging scheme) or fitted from the training targets
        (a semi-Markov chain's longest segment) return a new structure with
        them resolved; the structure itself is never modified.

        Parameters
        ----------
        classes : array-like of shape (n_states,)
            The label of every output state.
        y : object, default=None
            The training targets.

        Returns
        -------
        structure : BaseStructure
            By default the structure itself.
        """
        return self.structure

    def for_training_data(self, X, y, codec):
        """The structure with the settings it fits on the training data resolved.

        Estimators call it after :meth:`for_classes`, before building the training
        batch; a pruned chain fits its tag dictionary here.

        Parameters
        ----------
        X : object
            The training inputs, as given to ``fit``.
        y : object
            The training targets.
        codec : codec object
            The fitted target codec (:meth:`codec`).

        Returns
        -------
        structure : BaseStructure
            By default the structure itself.
        """
        return self.structure

    def training_structure(self):
        """The structure whose inference a learner runs while fitting.

        A structure with constraints that only apply to decoding (a chain's
        allowed transitions without ``constrain_training``) gives a new one
        without them; predictions use the structure itself.

        Returns
        -------
        structure : BaseStructure
            By default the structure itself.  It builds the same batches and weight
            layout.
        """
        return self.structure

    def score(self, batch, Y_pred, Y_true, sample_weight=None):
        """Score of predicted outputs against the truth (the estimators' ``score``).

        Parameters
        ----------
        batch : batch object
            The batch of the examples.
        Y_pred, Y_true : ndarray of int of shape (n_units_total,)
            Predicted and true encoded outputs, flat.
        sample_weight : ndarray of shape (n_samples,), default=None
            Per-example weights, counted for each of the example's units.

        Returns
        -------
        score : float
            By default the weighted fraction of correct output units.
        """
        weights = (None if sample_weight is None
                   else np.repeat(sample_weight, np.diff(batch.unit_offsets)))
        return float(np.average(np.asarray(Y_pred) == np.asarray(Y_true), weights=weights))

    def n_features_in(self, batch):
        """Number of input features, the estimators' ``n_features_in_``.

        Parameters
        ----------
        batch : batch object
            The batch of the examples (it fixes the layout).

        Returns
        -------
        n_features : int
            By default ``batch.n_weights``: inputs that have no single width
            (graphs, sentences) are counted by the weights they fill.
        """
        return int(batch.n_weights)

    def input_layout(self, batch):
        """What else a model fitted on ``batch`` requires of the inputs it predicts on.

        The estimators compare it between ``fit`` and ``predict`` and refuse
        inputs laid out otherwise.

        Parameters
        ----------
        batch : batch object
            The training batch, or a batch to predict on.

        Returns
        -------
        layout : str or None
            A short description, e.g. ``"5 attribute columns per word"``; None
            (the default) when the number of input features says it all.
        """
        return None

    def unit_values(self, batch, v):
        """Per-unit view of a part vector (``decision_function``, ``predict_marginals``).

        Parameters
        ----------
        batch : batch object
            The batch of the examples.
        v : ndarray of shape (n_parts_total,)
            A value for every part of every example, flat.

        Returns
        -------
        values : list of ndarray, or ndarray
            By default one array per example holding its parts.
        """
        return np.split(np.asarray(v), batch.part_offsets[1:-1])

    def weight_attributes(self, batch, w):
        """Fitted attributes of a weight vector: names ending in ``_``, views of ``w``.

        Parameters
        ----------
        batch : batch object
            The batch of the examples (it fixes the layout).
        w : ndarray of shape (batch.n_weights,)
            Weights in the structure's layout.

        Returns
        -------
        attributes : dict of str to ndarray
            By default ``{"coef_": w}``; ``coef_`` comes first, its last axis
            over input features when the structure has them.
        """
        return {"coef_": w}

    def feature_support(self, batch, w):
        """Input features used by a weight vector (the L1 models' ``support_``).

        Parameters
        ----------
        batch, w
            As for :meth:`weight_attributes`.

        Returns
        -------
        support : ndarray of bool
            Whether any weight of ``coef_`` on each input feature (its last
            axis) is non-zero.
        """
        coef = np.asarray(self.weight_attributes(batch, w)["coef_"])
        return np.any(coef != 0.0, axis=tuple(range(coef.ndim - 1)))

    def partial_label_scores(self, batch, allowed, structure=None):
        """Part scores that forbid the outputs inconsistent with partial labels.

        Adding them to any part scores restricts the distribution (marginals,
        log-partition, argmax) to the outputs whose every unit takes an
        allowed label: a forbidden part scores ``-inf``.

        Parameters
        ----------
        batch : batch object
            The batch of the examples.
        allowed : ndarray of bool of shape (n_units_total, n_states)
            The labels each unit may take (from the codec's ``encode_partial``).
        structure : BaseStructure, default=None
            The structure whose constraints the labels must also obey (the
            training structure); by default this output space's.

        Returns
        -------
        scores : ndarray of shape (n_parts_total,)
            0 on allowed parts, ``-inf`` on forbidden ones.

        Raises
        ------
        ValueError
            If an example has no output left that its labels and the structure's
            constraints allow: the message names the example and the first unit at
            which the labels known so far leave none.  By default (outputs that are
            not labelled units), the first example and unit without a single label.
        """
        allowed = np.asarray(allowed)
        unit = int(np.flatnonzero(allowed.sum(axis=1) != 1)[0])
        i = int(np.searchsorted(batch.unit_offsets, unit, side="right")) - 1
        raise ValueError(f"y[{i}]: {self.unit} {unit - int(batch.unit_offsets[i])} has no "
                         f"single label ({int(allowed[unit].sum())} of the {allowed.shape[1]} "
                         f"labels allowed); {type(self.structure).__name__}: partial labels "
                         "(None or sets of labels in the targets) are learnt on chains "
                         "(ChainStructure) and semi-Markov chains (SemiMarkovStructure) only.")

    def partial_label_start(self, batch, constraint_scores):
        """Part scores that start learning from partial labels (the first E-step or imputation).

        At ``w = 0`` every output consistent with the partial labels is as
        good as any other; these scores say which are likelier before any
        weight is learnt (see :mod:`sklearn_struct.solvers.latent`).

        Parameters
        ----------
        batch : batch object
            The batch of the examples.
        constraint_scores : ndarray of shape (n_parts_total,)
            0 on the parts consistent with the partial labels, ``-inf``
            elsewhere (:meth:`partial_label_scores`).

        Returns
        -------
        scores : ndarray of shape (n_parts_total,) or None
            By default None: no preference (a uniform start).
        """
        return None

    def named_weights(self, attributes, feature_names, classes):
        """Weights keyed by feature and label names (``state_features_``, ...).

        The estimators' ``named_weights`` method and their ``state_features_``
        and ``transition_features_`` attributes come from here.

        Parameters
        ----------
        attributes : dict of str to ndarray
            The fitted weight attributes, as :meth:`weight_attributes` gives them.
        feature_names : ndarray of str of shape (n_features_in,)
            Names of the input features.
        classes : ndarray of shape (n_states,) or None
            The labels of the output states.

        Returns
        -------
        named : dict of str to dict
            By default empty: no named view.
        """
        return {}


class LabelledUnits(OutputSpace):
    """The output space of structures whose output units carry labels.

    ``n_features_in`` is the width of the input rows.  Per-unit values are
    every unit's parts, a value per label: an ``(n_samples, n_states)`` array
    when flat, else a list of ``(n_units_i, n_states)`` arrays.  The weights
    start with an input-weight matrix ``coef_`` of shape ``(n_states,
    n_features)``; where labels follow one another a subclass adds
    ``transition_``.  Named weights are ``state_features_``, ``{(feature_name,
    label): weight}`` for every non-zero input weight, and
    ``transition_features_``, ``{(label_from, label_to): weight}``, in the keys
    of sklearn-crfsuite (``{(edge_type, label_from, label_to): weight}`` for a
    label tree with typed edges).

    Parameters
    ----------
    structure : BaseStructure
        The structure whose outputs these are.
    unit_parts : callable
        ``unit_parts(batch)``: an ``(n_units_total, n_states)`` index of the
        part of each unit and label.
    unit : str
        What one output unit is called ("token", "node", "sample").
    flat : bool, default=False
        One unit per example, its label the target (multiclass).

    See Also
    --------
    OutputSpace : The defaults.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.structures import ChainStructure
    >>> chain = ChainStructure()
    >>> batch = chain.make_batch([np.ones((2, 3))], n_states=2)
    >>> space = chain.output_space()
    >>> coef = space.weight_attributes(batch, np.zeros(batch.n_weights))["coef_"]
    >>> space.n_features_in(batch), coef.shape
    (3, (2, 3))
    """

    def __init__(self, structure, unit_parts, unit, flat=False):
        super().__init__(structure, codec=FlatLabelCodec if flat else None, unit=unit)
        self.flat = flat
        self._unit_parts = unit_parts

    def n_features_in(self, batch):
        return int(batch.n_features)

    def weight_attributes(self, batch, w):
        K, d = batch.n_states, batch.n_features
        return {"coef_": np.asarray(w)[:K * d].reshape(K, d)}

    def unit_values(self, batch, v):
        values = np.asarray(v)[self._unit_parts(batch)]
        return values if self.flat else np.split(values, batch.unit_offsets[1:-1])

    # -inf on the parts of a unit's forbidden labels; one log-partition of the scores
    # checks that every example keeps an output that the structure's constraints allow.
    def partial_label_scores(self, batch, allowed, structure=None):
        if not self.partial_labels:
            return super().partial_label_scores(batch, allowed, structure)
        structure = self.structure if structure is None else structure
        index = self._unit_parts(batch)
        scores = np.zeros(int(batch.part_offsets[-1]))
        scores[index[~allowed]] = -np.inf
        feasible = np.isfinite(structure.log_partition(batch, scores))
        if not feasible.all():
            i = int(np.flatnonzero(~feasible)[0])
            raise ValueError(self._contradiction(structure, batch, allowed, i))
        return scores

    def partial_label_start(self, batch, constraint_scores):
        """The log-frequency of each label among the units whose label is known.

        On every unit's part of label ``k``: ``log((n_k + 1) / sum_j (n_j + 1))``,
        ``n_k`` the units whose only allowed label is ``k`` (add-one smoothed);
        every other part 0.  Started from these, EM's first E-step on an
        unconstrained chain gives an unknown unit the labels' known frequencies.
        See :meth:`OutputSpace.partial_label_start` for the parameters.

        Parameters
        ----------
        batch : batch object
            The batch of the examples.
        constraint_scores : ndarray of shape (n_parts_total,)
            0 on allowed parts, ``-inf`` on forbidden ones.

        Returns
        -------
        scores : ndarray of shape (n_parts_total,)
            The log-frequencies on the units' parts, 0 elsewhere.
        """
        allowed = np.isfinite(np.asarray(constraint_scores)[self._unit_parts(batch)])
        counts = allowed[allowed.sum(axis=1) == 1].sum(axis=0) + 1.0
        return self.unit_part_vector(
            batch, np.broadcast_to(np.log(counts / counts.sum()), allowed.shape))

    def unit_part_vector(self, batch, values):
        """A part vector holding ``values[u, k]`` on the part of unit ``u`` and label ``k``.

        The inverse of :meth:`unit_values` on those parts; every other part gets 0.

        Parameters
        ----------
        batch : batch object
            The batch of the examples.
        values : ndarray of shape (n_units_total, n_states)
            A value per unit and label.

        Returns
        -------
        v : ndarray of shape (n_parts_total,)
            The values on the units' parts, 0 on every other part.
        """
        v = np.zeros(int(batch.part_offsets[-1]))
        v[self._unit_parts(batch)] = values
        return v

    def _contradiction(self, structure, batch, allowed, i):
        """The message for example ``i``, whose labels leave no consistent output."""
        one = structure.take(batch, np.array([i]))
        start, stop = int(batch.unit_offsets[i]), int(batch.unit_offsets[i + 1])
        index = self._unit_parts(one)
        token = stop - start - 1
        for t in range(stop - start):  # the first unit whose labels so far admit no output
            prefix = np.ones((stop - start, allowed.shape[1]), dtype=bool)
            prefix[:t + 1] = allowed[start:start + t + 1]
            scores = np.zeros(int(one.part_offsets[-1]))
            scores[index[~prefix]] = -np.inf
            if not np.isfinite(structure.log_partition(one, scores)[0]):
                token = t
                break
        labels = np.flatnonzero(allowed[start + token]).tolist()
        return (f"y[{i}]: no output of example {i} is consistent with its labels: those known "
                f"up to {self.unit} {token} (there: label indices {labels}) contradict the "
                f"constraints of {type(structure).__name__} (allowed transitions, first or "
                "last labels).")

    def named_weights(self, attributes, feature_names, classes):
        labels = np.asarray(classes).tolist()
        names = np.asarray(feature_names).tolist()
        W = np.asarray(attributes["coef_"])
        features, states = np.nonzero(W.T)
        named = {"state_features_": {(names[j], labels[k]): float(W[k, j])
                                     for j, k in zip(features.tolist(), states.tolist())}}
        transition = attributes.get("transition_")
        if transition is not None and np.ndim(transition) == 2:
            named["transition_features_"] = {
                (labels[a], labels[b]): float(transition[a, b])
                for a in range(len(labels)) for b in range(len(labels))}
        elif transition is not None:  # typed edges: one matrix per edge type
            named["transition_features_"] = {
                (edge_type, labels[a], labels[b]): float(transition[edge_type, a, b])
                for edge_type in range(transition.shape[0])
                for a in range(len(labels)) for b in range(len(labels))}
        return named
