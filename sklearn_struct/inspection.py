"""Reading a fitted model by name: the top state and transition features, as a table.

A chain estimator at the end of a :class:`~sklearn.pipeline.Pipeline` sees only
matrices, so it cannot know the names of its input features; the steps before
it can (``pipe[:-1].get_feature_names_out()``, scikit-learn's convention).
:func:`explain_weights` takes either the estimator or the whole pipeline and
reads the names where they are.
"""

import numpy as np
from sklearn.pipeline import Pipeline
from sklearn.utils import Bunch

__all__ = ["explain_weights", "feature_names_for"]


def feature_names_for(model):
    """The fitted estimator of ``model`` and the names of its input features.

    Parameters
    ----------
    model : estimator or Pipeline
        A fitted structured estimator, or a fitted pipeline ending in one.

    Returns
    -------
    estimator : StructuredEstimator
        ``model`` itself, or the last step of the pipeline.
    feature_names : ndarray of str or None
        ``pipe[:-1].get_feature_names_out()`` for a pipeline (``None`` when a
        step has no names, e.g. a hashing vectorizer); ``None`` for an
        estimator (which then names its features itself).
    """
    if not isinstance(model, Pipeline):
        return model, None
    try:
        names = model[:-1].get_feature_names_out()
    except AttributeError:  # a step without feature names (hashing)
        names = None
    return model[-1], names


def explain_weights(model, *, feature_names=None, top=10):
    """The strongest positive and negative features of each label, and the transitions.

    The text view of a fitted linear model, as ``eli5.show_weights`` gives
    for sklearn-crfsuite.

    Parameters
    ----------
    model : estimator or Pipeline
        A fitted structured estimator over a structure with named weights
        (chain, multiclass, tree), or a fitted pipeline ending in one (for
        instance ``SequenceDictVectorizer`` then ``EGCRF``).
    feature_names : array-like of str, default=None
        Names of the input features; by default those of the pipeline's
        earlier steps, or of the estimator (see
        :meth:`~sklearn_struct.base.StructuredEstimator.named_weights`).
    top : int, default=10
        How many positive and how many negative features to list per label,
        and how many transitions of each sign.

    Returns
    -------
    explanation : :class:`~sklearn.utils.Bunch`
        ``state``: rows ``(label, feature, weight)``, per label (in
        ``classes_`` order) its ``top`` largest positive weights then its
        ``top`` most negative ones; ``transition``: rows ``(label_from,
        label_to, weight)``, the ``top`` largest then the ``top`` most
        negative (empty without transitions); ``text``: both as a
        formatted table, to print.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct import EGCRF
    >>> from sklearn_struct.inspection import explain_weights
    >>> X = [np.eye(2), np.eye(2)[::-1]]
    >>> crf = EGCRF(C=10.0, random_state=0).fit(X, [["a", "b"], ["b", "a"]])
    >>> explanation = explain_weights(crf, feature_names=["is_a", "is_b"], top=1)
    >>> [(label, feature) for label, feature, _ in explanation.state]
    [('a', 'is_a'), ('a', 'is_b'), ('b', 'is_b'), ('b', 'is_a')]
    """
    estimator, names = feature_names_for(model)
    if feature_names is None:
        feature_names = names
    if not (isinstance(top, (int, np.integer)) and top >= 1):
        raise ValueError(f"explain_weights: top must be a positive int, got {top!r}.")
    named = estimator.named_weights(feature_names)
    if "state_features_" not in named:
        raise ValueError(f"explain_weights: {type(estimator).__name__} over "
                         f"{type(estimator.structure_).__name__} has no weights named by "
                         "feature and label.")
    per_label = {label: [] for label in estimator.classes_.tolist()}
    for (feature, label), weight in named["state_features_"].items():
        per_label[label].append((feature, weight))
    state = []
    for label, items in per_label.items():
        state += [(label, feature, weight) for feature, weight in strongest_weights(items, top)]
    pairs = [((a, b), weight) for (a, b), weight in named.get("transition_features_", {}).items()]
    transition = [(a, b, weight) for (a, b), weight in strongest_weights(pairs, top)]
    return Bunch(state=state, transition=transition, text=format_weights(state, transition, top))


def strongest_weights(items, top):
    """The ``top`` largest positive ``(key, weight)`` items, then the ``top`` most negative.

    Ties keep the order of ``items``.

    Parameters
    ----------
    items : list of (object, float)
        Keys with their weights.
    top : int
        How many of each sign to keep.

    Returns
    -------
    list of (object, float)
        The positive items by decreasing weight, then the negative ones by increasing weight.
    """
    positive = sorted((item for item in items if item[1] > 0), key=lambda item: -item[1])
    negative = sorted((item for item in items if item[1] < 0), key=lambda item: item[1])
    return positive[:top] + negative[:top]


def format_weights(state, transition, top):
    """The text of :func:`explain_weights`: transitions, then state features per label.

    Parameters
    ----------
    state : list of (label, feature, float)
        The state features kept, grouped by label.
    transition : list of (label, label, float)
        The transitions kept.
    top : int
        How many of each sign were kept (for the headings).

    Returns
    -------
    str
        One weight a line, ending with a newline.
    """
    lines = []
    if transition:
        lines.append(f"Transitions (top {top} positive and negative)")
        width = max(len(str(a)) for a, _, _ in transition)
        lines += [f"  {weight:+10.4f}  {str(a):<{width}} -> {b}" for a, b, weight in transition]
        lines.append("")
    lines.append(f"State features (top {top} positive and negative per label)")
    label = object()
    for row_label, feature, weight in state:
        if row_label != label:
            label = row_label
            lines.append(f"  {label}")
        lines.append(f"    {weight:+10.4f}  {feature}")
    return "\n".join(lines) + "\n"
