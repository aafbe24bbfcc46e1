"""From word forms to labelled dependency trees: taggers, then a parser reading their tags.

:class:`DependencyPipeline` is what a user with tokenized text needs: one tagger per
tag column (UPOS, XPOS, FEATS), a dependency parser that reads the word forms and the
*predicted* UPOS and XPOS, and a relation labeller for DEPREL.  The parser is trained on
tags predicted the way they will be at test time: each training sentence's tags come
from a tagger that did not see it (k-fold jackknifing, as the parsers of the CoNLL shared
tasks were trained), so that it learns how far to trust them.

The parser's and the labeller's inputs are the command line's (``sklearn-struct learn
--label head``): :class:`~sklearn_struct.preprocessing.DependencyTokenEncoder` ids for
the parser, :func:`relation_features` for the labeller, which labels the predicted
tree's arcs over :class:`~sklearn_struct.structures.TreeStructure` (the tree itself as
its label graph, its edges typed by the arc's direction).
"""

import contextlib
import gc
import warnings
from numbers import Integral

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, _fit_context, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import KFold
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .datasets import check_heads, filter_projective
from .metrics import attachment_score
from .perceptron import StructuredPerceptron
from .preprocessing import DependencyTokenEncoder, SequenceDictVectorizer, conll_token_features
from .structures import DependencyTreeStructure, SiblingDependencyStructure, TreeStructure

__all__ = ["DependencyPipeline", "PARSER_TAGS", "PREDICTED_TAGS", "TAG_FEATURES",
           "parser_sentences", "pos_token_features", "relation_features", "relation_inputs"]

#: The tag columns the parser's templates read (as ``DependencyTokenEncoder(pos=...)``).
PARSER_TAGS = ("upos", "xpos")
#: The columns a :class:`DependencyPipeline` can tag.
PREDICTED_TAGS = ("upos", "xpos", "feats")
#: Neighbours on each side in the taggers' features.
TAGGER_WINDOW = 2


def _distance_bucket(distance):
    for bound in (1, 2, 3, 5, 10):
        if distance <= bound:
            return str(bound)
    return "far"


def relation_features(columns, names, heads):
    """Feature dicts of the arcs of one sentence's tree, for the relation labeller.

    For the word ``m`` and its head ``h`` (the root for ``h = 0``): a bias, the
    arc's direction and length (bucketed: 1, 2, 3, 5, 10, far), and for each
    input column ``a`` (the form lower-cased): ``a``, ``h.a``, ``a|h.a``,
    ``a|h.a|arc``, the values of the previous and next word (``-1.a``,
    ``+1.a``), and of the word's children with their side (``ch.a=L:value``).

    Parameters
    ----------
    columns : list of list of str
        The input columns of the sentence (``form`` first).
    names : list of str
        Their CoNLL-U names (``form``, ``upos``, ``xpos``).
    heads : array-like of int of shape (n_words,)
        ``heads[m - 1]`` is the head of word ``m`` (0 the root).

    Returns
    -------
    features : list of dict
        One dict per word, for :class:`~sklearn_struct.preprocessing.SequenceDictVectorizer`.
    """
    n = len(heads)
    values = {name: [w.lower() for w in column] if name == "form" else list(column)
              for name, column in zip(names, columns)}
    children = [[] for _ in range(n)]
    for m, h in enumerate(heads):
        if h > 0:
            children[h - 1].append(m)
    keys = [(name, value, f"h.{name}", f"{name}|h.{name}", f"{name}|h.{name}|arc",
             f"-1.{name}", f"+1.{name}", f"ch.{name}") for name, value in values.items()]
    tokens = []
    for m in range(n):
        h = int(heads[m]) - 1
        arc = "root" if h < 0 else ("L" if m < h else "R") + _distance_bucket(abs(m - h))
        token = {"bias": 1.0, "arc": arc}
        for name, value, head_key, pair_key, arc_key, before_key, after_key, child_key in keys:
            word = value[m]
            head = "<root>" if h < 0 else value[h]
            token[name] = word
            token[head_key] = head
            token[pair_key] = f"{word}|{head}"
            token[arc_key] = f"{word}|{head}|{arc}"
            token[before_key] = value[m - 1] if m > 0 else "<s>"
            token[after_key] = value[m + 1] if m + 1 < n else "</s>"
            token[child_key] = [("L:" if c < m else "R:") + value[c] for c in children[m]]
        tokens.append(token)
    return tokens


def relation_inputs(columns_list, names, heads_list, vectorizer):
    """The labeller's input: per sentence ``(features, parents, arc directions)``."""
    X = vectorizer.transform([relation_features(columns, names, heads)
                              for columns, heads in zip(columns_list, heads_list)])
    trees = []
    for x, heads in zip(X, heads_list):
        parents = np.asarray(heads, dtype=np.int64) - 1  # the root word has none (-1)
        trees.append((x, parents, (np.arange(len(parents)) > parents).astype(np.int64)))
    return trees


def parser_sentences(columns_list, names):
    """Sentence dicts for :class:`DependencyTokenEncoder` and its ``pos`` setting.

    Without a tag column, every word gets one constant tag: the parser's
    templates then see the words, their prefixes and the distances only.
    """
    tags = [name for name in names if name in PARSER_TAGS]
    pos = "both" if len(tags) == 2 else (tags[0] if tags else "upos")
    sentences = []
    for columns in columns_list:
        sentence = dict(zip(names, columns))
        if not tags:
            sentence["upos"] = ["_"] * len(sentence["form"])
        sentences.append(sentence)
    return sentences, pos


@contextlib.contextmanager
def _feature_dicts():
    """Build many feature dicts without the cyclic garbage collector: they hold no
    reference cycles, and its ever more frequent passes over them took a fifth of
    ``predict`` on EWT test (collection resumes after)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def pos_token_features(words):
    """The "pos" token features of the taggers: :func:`conll_token_features` (two
    neighbours on each side) with the cues of part-of-speech taggers (Ratnaparkhi 1996;
    Toutanova et al. 2003).

    Added for each word, lower-cased: its prefixes of 1 to 3 letters and its suffixes
    of 1 and 4 (those of 2 and 3 are there), whether it holds a hyphen or a digit, and
    the word paired with the previous and the next one.  (The neighbours' 3-letter
    suffixes, tried too, did not tag EWT dev better.)

    Parameters
    ----------
    words : sequence of str
        The word forms of one sentence.

    Returns
    -------
    features : list of dict
        One dict per word, for :class:`~sklearn_struct.preprocessing.SequenceDictVectorizer`.

    Examples
    --------
    >>> from sklearn_struct.parsing import pos_token_features
    >>> features = pos_token_features(["Well-known", "dogs", "bark"])
    >>> features[1]["prefix3"], features[1]["-1:word|word"], features[1]["word|+1:word"]
    ('dog', 'well-known|dogs', 'dogs|bark')
    >>> features[0]["hyphen"], features[0]["suffix4"]
    (True, 'nown')
    """
    sentence = conll_token_features(words, window=TAGGER_WINDOW)
    lower = [features["word.lower"] for features in sentence]
    n_words = len(lower)
    for t, (word, features) in enumerate(zip(lower, sentence)):
        features.update(prefix1=word[:1], prefix2=word[:2], prefix3=word[:3],
                        suffix1=word[-1:], suffix4=word[-4:], hyphen="-" in word,
                        digit=any(character.isdigit() for character in word))
        if t > 0:
            features["-1:word|word"] = f"{lower[t - 1]}|{word}"
        if t + 1 < n_words:
            features["word|+1:word"] = f"{word}|{lower[t + 1]}"
    return sentence


def _conll_tagger_features(words):
    return conll_token_features(words, window=TAGGER_WINDOW)


#: The taggers' token features by :class:`DependencyPipeline`'s ``tag_features``.
_TOKEN_FEATURES = {"pos": pos_token_features, "conll": _conll_tagger_features}
TAG_FEATURES = tuple(_TOKEN_FEATURES)


def _tagger_features(forms, kind):
    return [_TOKEN_FEATURES[kind](words) for words in forms]


def _fit_taggers(tagger, kind, forms, targets, held_out):
    """One vectorizer of ``forms``' features of ``kind`` and a tagger per column of
    ``targets`` (per-sentence labels) on it: ``(vectorizer, {column: tagger}, None,
    {column: convergence warnings})``; or, given ``held_out`` sentences, ``(None, None,
    {column: their predicted tags}, {})``."""
    vectorizer = SequenceDictVectorizer()
    with _feature_dicts():
        X = vectorizer.fit_transform(_tagger_features(forms, kind))
    taggers, messages = {}, {}
    for column, labels in targets.items():  # (a worker's warnings are lost: returned)
        taggers[column] = clone(tagger)
        messages[column] = _fit_recording(taggers[column], X,
                                          [np.asarray(y, dtype=str) for y in labels])
    if held_out is None:
        return vectorizer, taggers, None, messages
    with _feature_dicts():  # a fold's taggers are thrown away
        X_held_out = vectorizer.transform(_tagger_features(held_out, kind))
    return None, None, {column: model.predict(X_held_out) for column, model in taggers.items()}, {}


def _warn_for(role, messages):
    """Warn ``messages`` (convergence warnings of one model) naming the model's role."""
    for message in messages:
        warnings.warn(f"DependencyPipeline, {role}: {message}", ConvergenceWarning,
                      stacklevel=3)


def _fit_recording(estimator, X, y):
    """``estimator.fit(X, y)``; the messages of its convergence warnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        estimator.fit(X, y)
    return [str(warning.message) for warning in caught
            if issubclass(warning.category, ConvergenceWarning)]


def _fit_model(role, estimator, X, y):
    """``estimator.fit(X, y)``, its convergence warnings naming its role."""
    _warn_for(role, _fit_recording(estimator, X, y))
    return estimator


class DependencyPipeline(BaseEstimator):
    """Taggers, then a dependency parser that reads their predicted tags: words to trees.

    ``fit`` trains one tagger per column of ``tags``, a dependency parser
    whose inputs are the word forms and the predicted UPOS and XPOS (those of
    ``tags``), and a relation labeller for DEPREL.  The parser and the labeller
    learn from *jackknifed* tags: the training set is cut into ``n_folds``
    folds, and each fold is tagged by taggers trained on the others, so that
    their training tags are as good as the tags they will read at prediction.
    The taggers kept are then trained on the whole set.

    Parameters
    ----------
    tags : tuple of {"upos", "xpos", "feats"}, default=("upos", "xpos")
        The CoNLL-U columns to tag, each by a tagger of its own reading the
        word forms' features (``tag_features``).  The parser reads the predicted
        UPOS and XPOS; FEATS is predicted for the output only.
    tag_features : {"pos", "conll"}, default="pos"
        The taggers' token features: ``"conll"``,
        :func:`~sklearn_struct.preprocessing.conll_token_features` with two
        neighbours on each side (the CoNLL chunking and NER set, which pipelines
        of model files before layout 7 read); ``"pos"``, those with the affixes
        and word pairs of part-of-speech taggers (:func:`pos_token_features`).
    tagger : estimator, default=None
        The taggers' estimator (cloned for each column and fold); None is an
        averaged :class:`~sklearn_struct.StructuredPerceptron` of 10 epochs
        over a chain.
    parser : estimator, default=None
        The parser's estimator; its structure is set from ``second_order``,
        ``non_projective`` and ``hash_bits`` unless it has one.  None is an
        averaged perceptron of 10 epochs.
    labeller : estimator, default=None
        The relation labeller's estimator; its structure is set to
        ``TreeStructure(n_edge_types=2)`` unless it has one.  None is an
        averaged perceptron of 10 epochs.
    second_order : bool, default=False
        Score adjacent siblings as well as arcs (McDonald & Pereira 2006, over
        :class:`~sklearn_struct.structures.SiblingDependencyStructure`).
    non_projective : bool, default=False
        Parse with Chu-Liu-Edmonds and train on every tree; otherwise Eisner's
        algorithm trains on the projective trees only.
    hash_bits : int, default=20
        The parser's ``2 ** hash_bits`` hashed arc-feature weights.
    n_folds : int, default=5
        Folds of the jackknifing; at least 2, and at most the number of
        training sentences.
    n_jobs : int, default=None
        Processes for the taggers' fits (folds and columns run side by side).
    random_state : int, RandomState instance or None, default=None
        Seeds the folds, and the tagger, the parser and the labeller whose own
        ``random_state`` is None (each gets a seed drawn from it), so that a fit
        repeats exactly.

    Attributes
    ----------
    taggers_ : dict of str to estimator
        The fitted tagger of each column of ``tags``.
    tag_vectorizer_ : SequenceDictVectorizer
        The taggers' vectorizer of the word forms' features.
    encoder_ : DependencyTokenEncoder
        The parser's token encoder.
    parser_ : estimator
        The fitted parser.
    relation_vectorizer_ : SequenceDictVectorizer
        The labeller's vectorizer of :func:`relation_features`.
    labeller_ : estimator
        The fitted relation labeller.

    See Also
    --------
    sklearn_struct.preprocessing.DependencyTokenEncoder : The parser's features.
    sklearn_struct.metrics.attachment_score : UAS and LAS.

    Examples
    --------
    >>> from sklearn_struct.parsing import DependencyPipeline
    >>> X = [["Dogs", "bark", "."], ["Cats", "sleep", "."]] * 3
    >>> y = [{"upos": ["NOUN", "VERB", "PUNCT"], "head": [2, 0, 2],
    ...       "deprel": ["nsubj", "root", "punct"]}] * 6
    >>> pipeline = DependencyPipeline(tags=("upos",), n_folds=2, random_state=0).fit(X, y)
    >>> prediction = pipeline.predict([["Birds", "sing", "."]])[0]
    >>> prediction["head"].tolist(), prediction["deprel"].tolist()
    ([2, 0, 2], ['nsubj', 'root', 'punct'])
    """

    _parameter_constraints = {
        "tags": [tuple, list],
        "tag_features": [StrOptions(set(TAG_FEATURES))],
        "tagger": [None, HasMethods(["fit", "predict"])],
        "parser": [None, HasMethods(["fit", "predict"])],
        "labeller": [None, HasMethods(["fit", "predict"])],
        "second_order": ["boolean"],
        "non_projective": ["boolean"],
        "hash_bits": [Interval(Integral, 1, 30, closed="both")],
        "n_folds": [Interval(Integral, 2, None, closed="left")],
        "n_jobs": [None, Integral],
        "random_state": ["random_state"],
    }

    def __init__(self, tags=("upos", "xpos"), *, tag_features="pos", tagger=None, parser=None,
                 labeller=None, second_order=False, non_projective=False, hash_bits=20,
                 n_folds=5, n_jobs=None, random_state=None):
        self.tags = tags
        self.tag_features = tag_features
        self.tagger = tagger
        self.parser = parser
        self.labeller = labeller
        self.second_order = second_order
        self.non_projective = non_projective
        self.hash_bits = hash_bits
        self.n_folds = n_folds
        self.n_jobs = n_jobs
        self.random_state = random_state

    # ------------------------------------------------------------------ checks
    def _check_tags(self):
        tags = list(self.tags)
        unknown = [tag for tag in tags if tag not in PREDICTED_TAGS]
        if unknown or len(set(tags)) != len(tags):
            raise ValueError(f"tags={self.tags!r}: expected distinct columns among "
                             f"{', '.join(PREDICTED_TAGS)}"
                             + (f"; {unknown[0]!r} is not one" if unknown else ""))
        if self.second_order and self.non_projective:
            raise ValueError("second_order=True parses with the second-order Eisner algorithm, "
                             "whose trees are projective: set non_projective=False")
        return tags

    @staticmethod
    def _check_forms(X, what="X"):
        """The sentences of ``X`` as lists of str, refused naming the first bad one."""
        if isinstance(X, (str, bytes)) or not hasattr(X, "__len__"):
            raise TypeError(f"{what}: expected a list of sentences, each a list of word "
                            f"forms (str); got {type(X).__name__}")
        forms = []
        for i, sentence in enumerate(X):
            if isinstance(sentence, (str, bytes)) or not hasattr(sentence, "__len__"):
                raise TypeError(f"{what}[{i}]: expected a list of word forms (str); got "
                                f"{type(sentence).__name__}")
            words = list(sentence)
            if not words:
                raise ValueError(f"{what}[{i}]: an empty sentence; expected at least one word")
            for t, word in enumerate(words):
                if not isinstance(word, str) or not word:
                    raise TypeError(f"{what}[{i}][{t}]: expected a word form (a non-empty "
                                    f"str); got {word!r}")
            forms.append(words)
        if not forms:
            raise ValueError(f"{what}: no sentence")
        return forms

    @staticmethod
    def _check_targets(y, forms, columns, what="y"):
        """Per column, the per-sentence arrays of ``y`` (heads checked to be trees)."""
        if len(y) != len(forms):
            raise ValueError(f"{what}: {len(y)} annotations for {len(forms)} sentences")
        targets = {column: [] for column in columns}
        for i, (annotation, words) in enumerate(zip(y, forms)):
            if not isinstance(annotation, dict):
                raise TypeError(f"{what}[{i}]: expected a dict of columns "
                                f"({', '.join(columns)}); got {type(annotation).__name__}")
            for column in columns:
                if column not in annotation:
                    raise ValueError(f"{what}[{i}]: no {column!r}; expected the columns "
                                     f"{', '.join(columns)}")
                values = annotation[column]
                if len(values) != len(words):
                    raise ValueError(f"{what}[{i}][{column!r}]: {len(values)} values for "
                                     f"{len(words)} words")
                if column == "head":
                    heads = check_heads(values, where=f"{what}[{i}]['head']")
                    if np.count_nonzero(heads == 0) > 1:
                        raise ValueError(f"{what}[{i}]['head']: more than one word of head 0; "
                                         "a dependency tree has one root")
                    targets[column].append(heads)
                else:
                    targets[column].append(np.asarray(values, dtype=str))
        return targets

    # ------------------------------------------------------------------ fitting
    def _estimators(self):
        """Unfitted clones of the tagger, parser and labeller, with their structures, and
        seeded from ``random_state`` where they have no seed of their own."""
        default = StructuredPerceptron(max_iter=10)
        tagger, parser, labeller = models = [
            clone(default if model is None else model)
            for model in (self.tagger, self.parser, self.labeller)]
        if self.random_state is not None:
            rng = check_random_state(self.random_state)
            for model in models:
                # drawn for every role, so that a role's seed does not depend on the others'
                seed = rng.randint(np.iinfo(np.int32).max)
                if model.get_params().get("random_state", 0) is None:
                    model.set_params(random_state=seed)
        if parser.get_params().get("structure") is None:
            parser.set_params(structure=(
                SiblingDependencyStructure(hash_bits=self.hash_bits) if self.second_order
                else DependencyTreeStructure(projective=not self.non_projective,
                                             hash_bits=self.hash_bits)))
        if labeller.get_params().get("structure") is None:
            labeller.set_params(structure=TreeStructure(n_edge_types=2))
        return tagger, parser, labeller

    def _jackknifed_tags(self, tagger, tags, forms, targets):
        """The fitted vectorizer and taggers, and every training sentence's tags as
        predicted by taggers that did not see it."""
        folds = KFold(self.n_folds, shuffle=True,
                      random_state=self.random_state).split(np.arange(len(forms)))
        jobs = [(None, None)] + list(folds)
        results = Parallel(n_jobs=self.n_jobs)(
            delayed(_fit_taggers)(
                tagger, self.tag_features, forms if train is None else [forms[i] for i in train],
                {tag: targets[tag] if train is None else [targets[tag][i] for i in train]
                 for tag in tags},
                None if test is None else [forms[i] for i in test])
            for train, test in jobs)
        jackknifed = {tag: [None] * len(forms) for tag in tags}
        for (_, test), (_, _, predicted, _) in zip(jobs[1:], results[1:]):
            for tag in tags:
                for i, labels in zip(test, predicted[tag]):
                    jackknifed[tag][i] = np.asarray(labels, dtype=str)
        vectorizer, taggers, _, messages = results[0]
        for tag in tags:
            _warn_for(f"the {tag.upper()} tagger", messages[tag])
        return vectorizer, taggers, jackknifed

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y):
        """Fit the taggers, then the parser and the labeller on jackknifed tags.

        Parameters
        ----------
        X : list of list of str
            The training sentences, each the list of its word forms.
        y : list of dict
            One annotation per sentence: a dict holding, for every column of
            ``tags``, ``"head"`` (``heads[m - 1]`` the head of word ``m``, 0 the
            root; one root per tree) and ``"deprel"``, each with one value per
            word.  Other keys are ignored.

        Returns
        -------
        self : DependencyPipeline
            The fitted pipeline.
        """
        tags = self._check_tags()
        forms = self._check_forms(X)
        targets = self._check_targets(y, forms, tags + ["head", "deprel"])
        if self.n_folds > len(forms):
            raise ValueError(f"n_folds={self.n_folds}: jackknifing cuts the training set into "
                             f"{self.n_folds} folds, but it has {len(forms)} sentences; lower "
                             "n_folds or give more sentences")
        tagger, parser, labeller = self._estimators()
        if not self.non_projective:  # Eisner's trees are projective: so must the examples be
            kept = filter_projective(list(range(len(forms))), targets["head"])[0]
            if not kept:
                raise ValueError("y: no projective tree to learn from, and the parser learns "
                                 "projective trees only; set non_projective=True to learn "
                                 "from every tree")
        else:
            kept = list(range(len(forms)))
        self.tag_vectorizer_, self.taggers_, jackknifed = self._jackknifed_tags(
            tagger, tags, forms, targets)
        names, inputs = self._parser_inputs(forms, jackknifed)
        sentences, pos = parser_sentences(inputs, names)
        self.encoder_ = DependencyTokenEncoder(pos=pos).fit(sentences)
        self.parser_ = _fit_model("the parser", parser,
                                  self.encoder_.transform([sentences[i] for i in kept]),
                                  [targets["head"][i] for i in kept])
        with _feature_dicts():
            self.relation_vectorizer_ = SequenceDictVectorizer().fit(
                [relation_features(columns, names, heads)
                 for columns, heads in zip(inputs, targets["head"])])
            X_labeller = relation_inputs(inputs, names, targets["head"],
                                         self.relation_vectorizer_)
        self.labeller_ = _fit_model("the relation labeller", labeller, X_labeller,
                                    targets["deprel"])
        return self

    def _parser_inputs(self, forms, tagged):
        """The parser's column names and, per sentence, its columns: forms and tags."""
        names = ["form"] + [tag for tag in PARSER_TAGS if tag in tagged]
        inputs = [[words] + [tagged[tag][i] for tag in names[1:]]
                  for i, words in enumerate(forms)]
        return names, inputs

    # ------------------------------------------------------------------ prediction
    def predict(self, X):
        """Tag and parse sentences of word forms.

        Parameters
        ----------
        X : list of list of str
            The sentences, each the list of its word forms.

        Returns
        -------
        y : list of dict
            Per sentence, an array per column of ``tags``, ``"head"`` (int,
            0 the root) and ``"deprel"``, one value per word.
        """
        check_is_fitted(self, "labeller_")
        forms = self._check_forms(X)
        with _feature_dicts():
            X_tagger = self.tag_vectorizer_.transform(_tagger_features(forms,
                                                                       self.tag_features))
        tagged = {tag: model.predict(X_tagger) for tag, model in self.taggers_.items()}
        names, inputs = self._parser_inputs(forms, tagged)
        sentences, _ = parser_sentences(inputs, names)
        heads = self.parser_.predict(self.encoder_.transform(sentences))
        with _feature_dicts():
            X_labeller = relation_inputs(inputs, names, heads, self.relation_vectorizer_)
        relations = self.labeller_.predict(X_labeller)
        return [{**{tag: np.asarray(tagged[tag][i], dtype=str) for tag in tagged},
                 "head": np.asarray(heads[i], dtype=np.int64),
                 "deprel": np.asarray(relations[i], dtype=str)}
                for i in range(len(forms))]

    def score(self, X, y):
        """The labelled attachment score (LAS) of the prediction, as CoNLL 2018 counts it.

        Every word counts, punctuation included; a relation is compared by its
        universal part, before any colon (``nmod:poss`` is ``nmod``).

        Parameters
        ----------
        X : list of list of str
            The sentences, each the list of its word forms.
        y : list of dict
            Their annotations, with ``"head"`` and ``"deprel"`` (as in ``fit``).

        Returns
        -------
        score : float
            Words with the right head and relation over all words, in ``[0, 1]``.
        """
        true = self._check_targets(y, self._check_forms(X), ["head", "deprel"])
        predicted = self.predict(X)

        def universal(relations):
            return [[label.split(":")[0] for label in sentence] for sentence in relations]

        return attachment_score(true["head"], [p["head"] for p in predicted],
                                labels_true=universal(true["deprel"]),
                                labels_pred=universal([p["deprel"] for p in predicted]))
