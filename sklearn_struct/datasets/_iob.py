"""Chunk tags (IOB1 / IOB2): where chunks start and end, exactly as conlleval decides.

A tag such as ``"B-NP"`` splits at its first hyphen into a prefix (``"B"``) and a type
(``"NP"``); a tag without hyphen (``"O"``) has an empty type. The start/end rules are those
of the CoNLL-2000 evaluation script ``conlleval`` (version 2004-01-26), which also give
meaning to ill-formed sequences (an ``I-X`` after ``O`` or after another type starts a
chunk), so the same rules read IOB1 and IOB2 alike.
"""

__all__ = ["chunk_spans", "iob1_to_iob2", "iob2_to_iob1"]


def split_tag(tag):
    """``(prefix, type)`` of a chunk tag, split at the first hyphen as conlleval does."""
    prefix, hyphen, chunk_type = tag.partition("-")
    if not hyphen:
        return tag, ""
    # conlleval (Perl) treats a false-looking type such as "0" as no type at all.
    return prefix, chunk_type if chunk_type != "0" else ""


def chunk_ends(prev_prefix, prefix, prev_type, chunk_type):
    """Whether a chunk ended between the previous token and this one (conlleval's endOfChunk)."""
    if prev_prefix in ("[", "]"):  # bracket chunks have length 1
        return True
    if prev_prefix != "O" and prev_prefix != "." and prev_type != chunk_type:
        return True
    return (prev_prefix, prefix) in _END_PAIRS


def chunk_starts(prev_prefix, prefix, prev_type, chunk_type):
    """Whether a chunk starts at this token (conlleval's startOfChunk)."""
    if prefix in ("[", "]"):
        return True
    if prefix != "O" and prefix != "." and prev_type != chunk_type:
        return True
    return (prev_prefix, prefix) in _START_PAIRS


_END_PAIRS = frozenset(
    [("B", "B"), ("B", "O"), ("I", "B"), ("I", "O"), ("E", "E"), ("E", "I"), ("E", "O")]
)
_START_PAIRS = frozenset(
    [("B", "B"), ("I", "B"), ("O", "B"), ("O", "I"), ("E", "E"), ("E", "I"), ("O", "E")]
)


def chunk_spans(tags):
    """Chunks of one tag sequence as ``(type, start, end)`` triples (``end`` exclusive).

    The sequence is read as if preceded and followed by ``"O"`` (a sentence boundary).

    Parameters
    ----------
    tags : sequence of str
        Chunk tags of one sentence, e.g. ``["B-NP", "I-NP", "O"]``.

    Returns
    -------
    spans : list of tuple
        ``(chunk_type, start, end)`` in order of ``start``.

    Examples
    --------
    >>> from sklearn_struct.datasets import chunk_spans
    >>> chunk_spans(["I-PER", "I-PER", "B-PER", "O", "I-LOC"])
    [('PER', 0, 2), ('PER', 2, 3), ('LOC', 4, 5)]
    """
    spans = []
    prev_prefix, prev_type, start, start_type = "O", "", None, ""
    for position, tag in enumerate(tags):
        prefix, chunk_type = split_tag(tag)
        starts = chunk_starts(prev_prefix, prefix, prev_type, chunk_type)
        # With ill-formed tags a chunk can start without the previous one having ended;
        # it is closed there, so that there is one span per chunk start (as conlleval counts).
        if start is not None and (starts or chunk_ends(prev_prefix, prefix, prev_type, chunk_type)):
            spans.append((start_type, start, position))
            start = None
        if starts:
            start, start_type = position, chunk_type
        prev_prefix, prev_type = prefix, chunk_type
    if start is not None:
        spans.append((start_type, start, len(tags)))
    return spans


def is_iob_tag(tag):
    """Whether ``tag`` is ``'O'``, ``'B-<type>'`` or ``'I-<type>'``."""
    if tag == "O":
        return True
    prefix, chunk_type = split_tag(tag)
    return prefix in ("B", "I") and bool(chunk_type)


def _check_iob(tags):
    tags = list(tags)
    for position, tag in enumerate(tags):
        if not isinstance(tag, str):
            raise TypeError(f"tag {position} must be a str, got {type(tag).__name__}")
        if not is_iob_tag(tag):
            raise ValueError(
                f"tag {position} is {tag!r}; IOB tags are 'O', 'B-<type>' or 'I-<type>'"
            )
    return tags


def _render(tags, begin_marks_every_chunk):
    tags = _check_iob(tags)
    out = ["O"] * len(tags)
    previous_end, previous_type = None, None
    for chunk_type, start, end in chunk_spans(tags):
        touches_same_type = previous_end == start and previous_type == chunk_type
        first = "B" if begin_marks_every_chunk or touches_same_type else "I"
        out[start] = f"{first}-{chunk_type}"
        out[start + 1:end] = [f"I-{chunk_type}"] * (end - start - 1)
        previous_end, previous_type = end, chunk_type
    return out


def iob1_to_iob2(tags):
    """Convert one sentence's tags from IOB1 to IOB2 (every chunk starts with ``B-``).

    Chunks are read with conlleval's rules, so IOB2 input comes back unchanged.

    Parameters
    ----------
    tags : sequence of str
        ``'O'``, ``'B-<type>'`` or ``'I-<type>'`` tags of one sentence.

    Returns
    -------
    tags : list of str
        The same chunks in IOB2, one tag per input tag.

    Examples
    --------
    >>> from sklearn_struct.datasets import iob1_to_iob2
    >>> iob1_to_iob2(["I-PER", "I-PER", "B-PER", "O", "I-LOC"])
    ['B-PER', 'I-PER', 'B-PER', 'O', 'B-LOC']
    """
    return _render(tags, begin_marks_every_chunk=True)


def iob2_to_iob1(tags):
    """Convert one sentence's tags from IOB2 to IOB1.

    In IOB1 a chunk starts with ``I-`` unless it directly follows a chunk of the same
    type, where it starts with ``B-`` (the CoNLL-2003 convention).

    Parameters
    ----------
    tags : sequence of str
        ``'O'``, ``'B-<type>'`` or ``'I-<type>'`` tags of one sentence.

    Returns
    -------
    tags : list of str
        The same chunks in IOB1, one tag per input tag.

    Examples
    --------
    >>> from sklearn_struct.datasets import iob2_to_iob1
    >>> iob2_to_iob1(["B-PER", "I-PER", "B-PER", "O", "B-LOC"])
    ['I-PER', 'I-PER', 'B-PER', 'O', 'I-LOC']
    """
    return _render(tags, begin_marks_every_chunk=False)
