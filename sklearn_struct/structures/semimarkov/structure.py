"""Semi-Markov chains (Sarawagi and Cohen, 2004): segmentation and labelling at once.

An output of a sequence of ``T`` tokens is a segmentation into labelled
segments of at most ``max_length`` tokens, read from and written back to chunk
tags (``"B-PER"``, ``"I-PER"``, ``"O"``; a chunk is a segment, and every ``O``
token a segment of its own).  The segment labels are the chunk types and ``O``.

Parts of a sequence, for ``L`` segment labels and ``M = max_length``:

* segment ``(s, length, l)`` at ``(s * M + length - 1) * L + l``, its
  features those of label ``l`` on the sum of the segment's token features,
  on its first token's and on its last token's features, and an indicator of
  its length (parts that would run past the sequence exist, score 0, and
  belong to no output);
* transitions ``(a, b)`` between consecutive segments' labels, tied over
  positions, then the first and the last segment's label (``L`` each).

Weight layout: the token weights ``(n_features, 3, L)`` (sum, first, last;
feature-major as the kernels read them), the length weights ``(L, M)``, the
transitions ``(L, L)``, then the first and last labels.
"""

from dataclasses import dataclass

import numpy as np

from ..._chunk_tags import scheme_tags
from .._sequences import SequenceInputs
from .._output_space import OutputSpace
from .._targets import _is_partial
from .._batch import Batch, check_encoded_states, offsets_from_lengths
from .._kernel import KernelOps
from .._token_kernels import token_features
from . import _kernels as kernels

__all__ = ["SemiMarkovBatch", "SemiMarkovStructure"]

_KERNEL_OPS = KernelOps(
    part_scores=kernels.semimarkov_part_scores, add_features=kernels.semimarkov_add_features,
    encode=kernels.semimarkov_encode, decode=kernels.semimarkov_decode,
    hypergraph_size=kernels.semimarkov_hypergraph_size, hypergraph=kernels.semimarkov_hypergraph)


@dataclass(frozen=True)
class SemiMarkovBatch(Batch):
    """Sequences as :class:`SemiMarkovStructure`'s operations read them.

    Parameters
    ----------
    X : ndarray of shape (n_tokens, n_features) or scipy.sparse.csr_matrix
        Token features of all sequences, stacked.
    n_samples, n_features : int
        Number of sequences and of features per token.
    unit_offsets : ndarray of int64 of shape (n_samples + 1,)
        Sequence ``i`` owns tokens ``unit_offsets[i]:unit_offsets[i + 1]``.
    part_offsets : ndarray of int64 of shape (n_samples + 1,)
        Sequence ``i`` of ``T`` tokens owns ``T * max_length * L + L * L + 2 * L``
        parts (see the module docstring).
    n_weights : int
        ``3 * L * n_features + L * max_length + L * L + 2 * L``.
    n_states : int
        Number of tags (the structure's ``labels``).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.structures import SemiMarkovStructure
    >>> space = SemiMarkovStructure(max_length=2).output_space()
    >>> structure = space.for_classes(["B-X", "I-X", "O"])
    >>> batch = structure.make_batch([np.ones((3, 4))], n_states=3)
    >>> batch.part_offsets  # 3 tokens * 2 lengths * 2 labels + 2 * 2 + 2 * 2
    array([ 0, 20])
    """

    X: object
    n_states: int

    ragged = {"X": "unit_offsets"}
    shared = ("n_states",)


class SemiMarkovStructure(SequenceInputs):
    """Semi-Markov chain over chunk-tagged sequences: labelled segments and their transitions.

    Takes the same inputs and targets as :class:`~sklearn_struct.structures.ChainStructure`
    with a chunk tagging scheme (one feature row and one tag per token), and
    predicts tags that always form whole chunks.  Its outputs are the
    segmentations that the training tags can write (a label seen only as
    ``S-X`` has segments of one token).  Inference is the generic
    dynamic program over segments, ``O(T * max_length * L^2)``: argmax, marginals,
    k-best segmentations and exact samples.

    Parameters
    ----------
    max_length : int or None, default=None
        Longest segment.  None: the longest chunk of the training targets
        (estimators resolve it when fitting; of partial targets, the longest
        chunk within the runs of known tags: set it when unknown tokens may
        hold longer chunks).
    scheme : {"IOB2", "BIO", "IOB1", "BIOES"}, default="IOB2"
        How the tags mark chunks (see :func:`~sklearn_struct.datasets.chunk_constraints`).
    loss : {"token", "segment"}, default="token"
        ``"token"``: the number of tokens whose segment label or segment start
        (and, under BIOES, end) differs from the truth, the Hamming loss on
        IOB2 and BIOES tags; ``"segment"``: the number of predicted segments
        that are not true segments.
    labels : sequence of str or None, default=None
        The tags in the order of the estimator's ``classes_``; estimators set it
        (and ``max_length`` when None) through :meth:`for_classes`.

    Notes
    -----
    The fitted weights (``weight_attributes``) are ``coef_`` of shape
    ``(3, L, n_features)`` (on the segment's sum, first and last token),
    ``length_`` ``(L, max_length)``, ``transition_`` ``(L, L)``,
    ``start_transition_`` and ``end_transition_``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.structures import SemiMarkovStructure
    >>> y = [["B-PER", "I-PER", "O"], ["O", "B-LOC"]]
    >>> space = SemiMarkovStructure().output_space()
    >>> structure = space.for_classes(["B-LOC", "B-PER", "I-PER", "O"], y)
    >>> structure.max_length
    2
    >>> batch = structure.make_batch([np.ones((3, 2)), np.ones((2, 2))], n_states=4)
    >>> Y, scores = structure.k_best(batch, np.zeros(batch.part_offsets[-1]), 2)
    >>> Y.shape, scores.shape
    ((2, 5), (2, 2))
    """

    kernel_ops = _KERNEL_OPS
    accepts_forbidden_parts = True  # a segment that partial labels forbid

    def __init__(self, max_length=None, scheme="IOB2", loss="token", labels=None):
        self.max_length = max_length
        self.scheme = scheme
        self.loss = loss
        self.labels = labels

    def output_space(self):
        return SegmentOutputs(self, unit="token")

    def _tables(self, labels):
        """Segment labels and the tag tables of the kernel data."""
        name = type(self).__name__
        try:
            tags = scheme_tags(labels, self.scheme)
        except (TypeError, ValueError) as error:
            raise type(error)(f"{name}(scheme={self.scheme!r}): {error}") from None
        types = sorted({chunk_type for _, chunk_type in tags if chunk_type})
        segment_labels = types + (["O"] if "O" in labels else [])
        tag_label = np.array([segment_labels.index(t or "O") for _, t in tags], dtype=np.int64)
        prefixes = np.array([prefix for prefix, _ in tags])
        index = {label: k for k, label in enumerate(labels)}
        segment_tags = np.array([[index.get(_render(chunk_type, position, self.scheme), -1)
                                  for position in range(6)] for chunk_type in segment_labels],
                                dtype=np.int64).reshape(len(segment_labels), 6)
        return (len(segment_labels), segment_labels.index("O") if "O" in labels else -1,
                tag_label, np.isin(prefixes, ["B", "S"]), np.isin(prefixes, ["E", "S"]),
                segment_tags)

    # ----------------------------------------------------------------- data
    def _settings(self):
        name = type(self).__name__
        if self.labels is None or self.max_length is None:
            raise ValueError(f"{name}: labels and max_length are unset; estimators set them "
                             "when fitting; called directly, use for_classes(classes, y) first.")
        if isinstance(self.max_length, bool) or not isinstance(self.max_length, (int, np.integer)) \
                or self.max_length < 1:
            raise ValueError(f"{name}: max_length must be a positive integer or None, got "
                             f"{self.max_length!r}.")
        if self.loss not in ("token", "segment"):
            raise ValueError(f"{name}: loss must be 'token' or 'segment', got {self.loss!r}.")
        return self._tables(list(self.labels))

    def _batch(self, X, unit_offsets, n_states):
        settings = self._settings()
        if n_states != len(settings[2]):
            raise ValueError(f"{type(self).__name__}: n_states={n_states} but there are "
                             f"{len(self.labels)} labels.")
        L, M = settings[0], int(self.max_length)
        d = X.shape[1]
        return SemiMarkovBatch(X=X, n_states=n_states, n_samples=len(unit_offsets) - 1,
                               n_features=d,
                               unit_offsets=unit_offsets,
                               part_offsets=offsets_from_lengths(
                                   np.diff(unit_offsets) * M * L + L * L + 2 * L),
                               n_weights=3 * L * d + L * M + L * L + 2 * L)

    def kernel_data(self, batch, training=False):
        L, outside, tag_label, opens, closes, segment_tags = self._settings()
        return kernels.SemiMarkovData(*token_features(batch.X), batch.n_features,
                                      batch.unit_offsets, L, int(self.max_length), outside,
                                      tag_label, opens, closes, segment_tags)

    def check_outputs(self, batch, Y):
        """Check encoded tags: a segmentation's, written as the scheme writes it.

        Refused, naming the sequence and the token: a segment longer than
        ``max_length``, and tags that the scheme does not write for their
        segments (the structure's decoder, run on their encoding, gives other
        tags), such as ``I-X`` with no ``B-X`` under IOB2.

        Parameters
        ----------
        batch : SemiMarkovBatch
            The sequences.
        Y : array-like of int of shape (n_units_total,)
            Tag indices of every token, flat.

        Returns
        -------
        Y : ndarray of int64 of shape (n_units_total,)
            The checked tags.
        """
        name = type(self).__name__
        Y = check_encoded_states(Y, batch.unit_offsets, len(self.labels), name)
        tables = self._settings()
        for i in range(batch.n_samples):
            tags = Y[batch.unit_offsets[i]:batch.unit_offsets[i + 1]].tolist()
            for label, start, end in _segments(tags, tables):
                if end - start > self.max_length:
                    raise ValueError(
                        f"{name}: sequence {i}, tokens {start} to {end - 1}: a segment of "
                        f"{end - start} tokens ({self.labels[tags[start]]}...), longer than "
                        f"max_length={self.max_length}.")
        data = self.kernel_data(batch)
        for i in range(batch.n_samples):
            u0, u1 = int(batch.unit_offsets[i]), int(batch.unit_offsets[i + 1])
            z = np.zeros(int(batch.part_offsets[i + 1] - batch.part_offsets[i]))
            kernels.semimarkov_encode(data, i, Y[u0:u1], z)
            written = np.empty(u1 - u0, dtype=np.int64)
            kernels.semimarkov_decode(data, i, z, written)
            wrong = np.flatnonzero(written != Y[u0:u1])
            if wrong.size:
                t = int(wrong[0])
                expected = (repr(self.labels[written[t]]) if written[t] >= 0
                            else "a tag that is not among the labels")
                raise ValueError(
                    f"{name}: sequence {i}, token {t}: the {self.scheme} scheme cannot write the "
                    f"tag {self.labels[Y[u0 + t]]!r} there (it writes {expected} for the "
                    f"segment that tag is in): no segmentation has these tags; are they of "
                    f"another scheme (scheme=...)?")
        return Y

    # ---------------------------------------------------------------- parts
    def part_losses(self, batch, Y):
        Y = self.check_outputs(batch, Y)
        losses = np.zeros(int(batch.part_offsets[-1]))
        kernels.segment_losses(self.kernel_data(batch), Y, batch.part_offsets,
                               self.loss == "token", self.scheme == "BIOES", losses)
        return losses


def _segments(tags, tables):
    """``(label, start, end)`` of the segments of tag indices ``tags`` (``end`` exclusive),
    read as ``_kernels.opens_segment`` reads them."""
    _, outside, tag_label, opens, closes, _ = tables
    labels = [tag_label[tag] for tag in tags]
    starts = [t for t in range(len(tags)) if t == 0 or outside in (labels[t], labels[t - 1])
              or labels[t] != labels[t - 1] or opens[tags[t]] or closes[tags[t - 1]]]
    return [(tag_label[tags[s]], s, e) for s, e in zip(starts, starts[1:] + [len(tags)])]


def _render(chunk_type, position, scheme):
    """The tag of a segment's token by position (``_kernels.FIRST`` ... ``SINGLE_AFTER_SAME``)."""
    if not chunk_type or chunk_type == "O":
        return "O"
    if scheme == "BIOES":
        prefix = "BIESBS"[position]
    elif scheme == "IOB1":
        prefix = "IIIIBB"[position]
    else:
        prefix = "BIIBBB"[position]
    return f"{prefix}-{chunk_type}"


def _known_stretches(sequence):
    """The runs of ``sequence`` between its partial entries (None or sets of tags)."""
    runs, run = [], []
    for tag in list(sequence) + [None]:
        if _is_partial(tag):
            runs, run = runs + [run] * bool(run), []
        else:
            run.append(tag)
    return runs


class SegmentOutputs(OutputSpace):
    """Output space of a semi-Markov chain: token labels, a longest segment fitted from ``y``.

    Training targets may be partial (``None`` or a set of tags at a token):
    a segment is allowed iff the scheme writes every one of its tokens with an
    allowed tag (IOB2 and BIOES, where a segment's tags do not depend on its
    neighbours; IOB1 is refused).
    """

    partial_labels = True

    def n_features_in(self, batch):
        return int(batch.n_features)

    def _positions(self):
        """Segment labels, longest segment and the tag of each label by position (-1: none)."""
        L, _, _, _, _, segment_tags = self.structure._settings()
        positions = (kernels.FIRST, kernels.INSIDE, kernels.LAST, kernels.SINGLE)
        return L, int(self.structure.max_length), segment_tags[:, positions]

    def _segment_sums(self, batch, values, missing):
        """Per segment part, the sum over its tokens of ``values[token, tag]``, the tag the
        scheme writes there, ``missing`` where it writes none (0 past a sequence's end)."""
        L, M, tags = self._positions()
        values = np.asarray(values, dtype=float)
        first, inside, last, single = np.moveaxis(
            np.where(tags >= 0, values[:, tags], missing), 2, 0)  # each (units, L)
        cumulative = np.vstack([np.zeros((1, L)), np.cumsum(inside, axis=0)])
        out = np.zeros(int(batch.part_offsets[-1]))
        for i in range(batch.n_samples):
            u0, p0 = int(batch.unit_offsets[i]), int(batch.part_offsets[i])
            T = int(batch.unit_offsets[i + 1]) - u0
            segments = out[p0:p0 + T * M * L].reshape(T, M, L)
            segments[:, 0] = single[u0:u0 + T]
            for length in range(2, min(M, T) + 1):
                s = u0 + np.arange(T - length + 1)
                segments[s - u0, length - 1] = (first[s] + last[s + length - 1]
                                                + cumulative[s + length - 1] - cumulative[s + 1])
        return out

    def _token_tag_sums(self, batch, v):
        """The adjoint of :meth:`_segment_sums`: per token and tag, the sum of ``v`` over the
        segment parts that write that tag there."""
        L, M, tags = self._positions()
        n_units = int(batch.unit_offsets[-1])
        by_position = np.zeros((4, n_units + 1, L))  # first, inside (differences), last, single
        for i in range(batch.n_samples):
            u0, p0 = int(batch.unit_offsets[i]), int(batch.part_offsets[i])
            T = int(batch.unit_offsets[i + 1]) - u0
            segments = np.asarray(v)[p0:p0 + T * M * L].reshape(T, M, L)
            by_position[3, u0:u0 + T] += segments[:, 0]
            for length in range(2, min(M, T) + 1):
                s = u0 + np.arange(T - length + 1)
                value = segments[s - u0, length - 1]
                by_position[0, s] += value
                by_position[2, s + length - 1] += value
                by_position[1, s + 1] += value
                by_position[1, s + length - 1] -= value
        by_position[1] = np.cumsum(by_position[1], axis=0)
        out = np.zeros((n_units, len(self.structure.labels)))
        for label in range(L):
            for position in range(4):
                if tags[label, position] >= 0:
                    out[:, tags[label, position]] += by_position[position, :n_units, label]
        return out

    def _allowed_scores(self, batch, allowed):
        """0 on the segments whose every token may take its tag, ``-inf`` elsewhere."""
        forbidden = self._segment_sums(batch, (~np.asarray(allowed, bool)).astype(float), 1.0)
        return np.where(forbidden > 0, -np.inf, 0.0)

    # -inf on the segments with a token outside its allowed tags (see the class
    # docstring); one log-partition of the scores checks that every example keeps a
    # segmentation.
    def partial_label_scores(self, batch, allowed, structure=None):
        semi = self.structure
        if semi.scheme == "IOB1":
            raise ValueError(
                f"{type(semi).__name__}(scheme='IOB1'): partial labels (None or sets of tags "
                "in y) are not learnt under IOB1, where a segment's first tag depends on the "
                "previous segment's label; convert the tags to IOB2.")
        structure = semi if structure is None else structure
        scores = self._allowed_scores(batch, allowed)
        feasible = np.isfinite(structure.log_partition(batch, scores))
        if not feasible.all():
            i = int(np.flatnonzero(~feasible)[0])
            raise ValueError(self._contradiction(structure, batch, allowed, i))
        return scores

    def _contradiction(self, structure, batch, allowed, i):
        """The message for example ``i``, whose tags leave no consistent segmentation."""
        one = structure.take(batch, np.array([i]))
        start, stop = int(batch.unit_offsets[i]), int(batch.unit_offsets[i + 1])
        token = stop - start - 1
        for t in range(stop - start):  # the first token whose tags so far admit no output
            prefix = np.ones((stop - start, allowed.shape[1]), dtype=bool)
            prefix[:t + 1] = allowed[start:start + t + 1]
            if not np.isfinite(structure.log_partition(one, self._allowed_scores(one,
                                                                                 prefix))[0]):
                token = t
                break
        tags = [self.structure.labels[k] for k in np.flatnonzero(allowed[start + token])]
        return (f"y[{i}]: no output of example {i} is consistent with its labels: those known "
                f"up to {self.unit} {token} (there: {tags}) cannot be written as segments of "
                f"at most max_length={self.structure.max_length} tokens under the "
                f"{self.structure.scheme} scheme.")

    def partial_label_start(self, batch, constraint_scores):
        """Each segment: the sum over its tokens of the log-frequency of the tag written there.

        The frequencies are those of the tags of the tokens whose tag is known
        (add-one smoothed), so that the start scores a segmentation by the
        product of its tags' frequencies.  See
        :meth:`~sklearn_struct.structures.OutputSpace.partial_label_start`.

        Parameters
        ----------
        batch : batch object
            The batch of the examples.
        constraint_scores : ndarray of shape (n_parts_total,)
            0 on allowed parts, ``-inf`` on forbidden ones; a token's tag is
            known when every consistent segmentation writes the same tag there.

        Returns
        -------
        scores : ndarray of shape (n_parts_total,)
            The summed log-frequencies on the segments, 0 elsewhere.
        """
        # a token's tag is known when every consistent segmentation writes it there
        mu, _ = self.structure.marginals(batch, constraint_scores)
        tag_marginals = self._token_tag_sums(batch, mu)
        known = tag_marginals[tag_marginals.max(axis=1) > 1.0 - 1e-9].argmax(axis=1)
        counts = np.bincount(known, minlength=tag_marginals.shape[1]) + 1.0
        log_frequency = np.log(counts / counts.sum())
        return self._segment_sums(batch, np.broadcast_to(log_frequency, tag_marginals.shape),
                                  0.0)

    def for_classes(self, classes, y=None):
        semi = self.structure
        labels = [str(label) for label in np.asarray(classes).tolist()]
        semi._tables(labels)  # checks the tags against the scheme
        max_length = semi.max_length
        if max_length is None and y is not None:
            index = {label: k for k, label in enumerate(labels)}
            tables = semi._tables(labels)
            # partial targets: the longest chunk of the runs of known tags
            max_length = max((end - start for sequence in y
                              for run in _known_stretches(sequence)
                              for _, start, end in _segments([index[str(tag)] for tag in run],
                                                             tables)), default=1)
        return type(semi)(max_length=max_length, scheme=semi.scheme, loss=semi.loss,
                          labels=labels)

    def weight_attributes(self, batch, w):
        L, M, d = self.structure._settings()[0], int(self.structure.max_length), batch.n_features
        w = np.asarray(w, dtype=float)
        lengths, transitions = 3 * L * d, 3 * L * d + L * M
        return {"coef_": w[:lengths].reshape(d, 3, L).transpose(1, 2, 0),
                "length_": w[lengths:transitions].reshape(L, M),
                "transition_": w[transitions:transitions + L * L].reshape(L, L),
                "start_transition_": w[transitions + L * L:transitions + L * L + L],
                "end_transition_": w[transitions + L * L + L:]}
