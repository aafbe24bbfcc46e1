"""Chunk tags (IOB1 / IOB2 / BIOES): where chunks start and end, which sequences are valid.

Chunk spans follow conlleval exactly (see below); :func:`chunk_constraints` gives the
label transitions, first and last labels that a scheme allows, for constrained decoding.

A tag such as ``"B-NP"`` splits at its first hyphen into a prefix (``"B"``) and a type
(``"NP"``); a tag without hyphen (``"O"``) has an empty type. The start/end rules are those
of the CoNLL-2000 evaluation script ``conlleval`` (version 2004-01-26), which also give
meaning to ill-formed sequences (an ``I-X`` after ``O`` or after another type starts a
chunk), so the same rules read IOB1 and IOB2 alike.
"""

import numpy as np

__all__ = ["chunk_constraints", "chunk_spans", "iob1_to_iob2", "iob2_to_iob1"]


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


#: Strict chunk reading (seqeval's ``mode="strict"``): per scheme, the prefixes that
#: begin a chunk, the prefixes that continue one (after a beginning or a continuing token of
#: the same type) and the prefixes a chunk may end on.  A chunk is a maximal run of a
#: beginning and continuing tokens; it counts only if it ends on an allowed last prefix.
#: In IOE2 a chunk begins with ``I-`` or ``E-`` and only ``I-`` continues into more.
STRICT_SCHEMES = {
    "IOB2": {"begin": "B", "continue": "I", "open": "BI", "last": "BI"},
    "IOE2": {"begin": "IE", "continue": "IE", "open": "I", "last": "E"},
    "BIOES": {"begin": "BS", "continue": "IE", "open": "BI", "last": "ES"},
    "BILOU": {"begin": "BU", "continue": "IL", "open": "BI", "last": "LU"},
}
#: Other names of the strict schemes.
STRICT_ALIASES = {"BIO": "IOB2", "IOBES": "BIOES"}


def strict_scheme(scheme):
    """The rules of a strict scheme by name (or alias); a clear error for another name."""
    name = STRICT_ALIASES.get(scheme, scheme)
    if name not in STRICT_SCHEMES:
        raise ValueError(f"scheme must be one of {sorted([*STRICT_SCHEMES, *STRICT_ALIASES])} "
                         f"for strict chunk reading, got {scheme!r}.")
    return name, STRICT_SCHEMES[name]


def strict_chunk_spans(tags, scheme):
    """Chunks of one tag sequence read strictly by a scheme, as ``(type, start, end)``.

    Unlike :func:`chunk_spans` (conlleval's reading, which gives every tag sequence a
    meaning), a chunk must be written as the scheme writes it: in BIOES a ``B-X I-X``
    that no ``E-X`` closes is no chunk, and in IOB2 an ``I-X`` after ``O`` starts none.
    A tag is ``"O"`` or ``"<prefix>-<type>"`` with a prefix of the scheme.

    Parameters
    ----------
    tags : sequence of str
        Chunk tags of one sentence.
    scheme : {"IOB2", "IOE2", "BIOES", "BILOU"} or an alias ("BIO", "IOBES")
        The tagging scheme.

    Returns
    -------
    spans : list of tuple
        ``(chunk_type, start, end)`` in order of ``start`` (``end`` exclusive).

    Raises
    ------
    ValueError
        At the first tag whose prefix the scheme does not have (its position named).

    Examples
    --------
    >>> from sklearn_struct._chunk_tags import strict_chunk_spans
    >>> strict_chunk_spans(["B-PER", "E-PER", "B-LOC", "I-LOC", "O", "S-ORG"], "BIOES")
    [('PER', 0, 2), ('ORG', 5, 6)]
    """
    name, rules = strict_scheme(scheme)
    allowed = "O" + rules["begin"] + rules["continue"]
    parsed = []
    for position, tag in enumerate(tags):
        prefix, chunk_type = split_tag(tag) if isinstance(tag, str) else (None, None)
        if prefix not in allowed or (prefix == "O") != (tag == "O"):
            prefixes = ", ".join(f"'{p}-<type>'" for p in sorted(set(allowed) - {"O"}))
            raise ValueError(f"tag {position} is {tag!r}; {name} tags are 'O', {prefixes}.")
        parsed.append((prefix, chunk_type))
    spans, start, n = [], 0, len(parsed)
    while start < n:
        prefix, chunk_type = parsed[start]
        if prefix not in rules["begin"]:
            start += 1
            continue
        end = start + 1
        while (end < n and parsed[end - 1][0] in rules["open"] and parsed[end][0] in
               rules["continue"] and parsed[end][1] == chunk_type):
            end += 1
        if parsed[end - 1][0] in rules["last"]:
            spans.append((chunk_type, start, end))
        start = end
    return spans


#: A strict scheme's prefixes of a chunk's tags: alone, first, inside, last; and the
#: neighbour (after the chunk in IOB2, before it in IOE2) that may not carry the type's
#: ``I-`` tag, which would continue the chunk.
_CHUNK_WRITING = {"IOB2": ("B", "B", "I", "I", 1), "IOE2": ("E", "I", "I", "E", -1),
                  "BIOES": ("S", "B", "I", "E", 0), "BILOU": ("U", "B", "I", "L", 0)}


def chunk_event(chunk_type, start, end, n, scheme):
    """The tags that make tokens ``start..end-1`` of a sentence of ``n`` one chunk.

    A strict scheme reads the chunk exactly from the outputs whose every listed
    position obeys its rule, whatever the other tokens are: the event is a product of
    per-token sets, so its probability is a ratio of two partition functions.

    Returns
    -------
    rules : list of (int, str, bool)
        ``(position, tag, required)``: the token must carry ``tag`` (``required``), or
        must not carry it.
    """
    alone, first, inside, last, neighbour = _CHUNK_WRITING[strict_scheme(scheme)[0]]
    if end - start == 1:
        rules = [(start, f"{alone}-{chunk_type}", True)]
    else:
        rules = ([(start, f"{first}-{chunk_type}", True)]
                 + [(t, f"{inside}-{chunk_type}", True) for t in range(start + 1, end - 1)]
                 + [(end - 1, f"{last}-{chunk_type}", True)])
    outside = end if neighbour == 1 else start - 1
    if neighbour and 0 <= outside < n:
        rules.append((outside, f"I-{chunk_type}", False))
    return rules


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
        The IOB2 tags of one sentence.

    Returns
    -------
    tags : list of str
        IOB1 tags of the same chunks.

    Examples
    --------
    The second PER chunk follows one of its type, so it keeps its ``B-``:

    >>> from sklearn_struct.datasets import iob2_to_iob1
    >>> iob2_to_iob1(["B-PER", "B-PER", "O", "B-LOC"])
    ['I-PER', 'B-PER', 'O', 'I-LOC']
    """
    return _render(tags, begin_marks_every_chunk=False)


# Chunk tagging schemes known to chunk_constraints ("BIO" is IOB2) and the prefixes of
# their tags besides "O".
_SCHEMES = {"IOB1": "BI", "IOB2": "BI", "BIO": "BI", "BIOES": "BIES"}


def scheme_tags(labels, scheme):
    """``(prefix, type)`` of every label, checked against the scheme.

    Parameters
    ----------
    labels : list of str
        Chunk labels such as ``"B-NP"`` and ``"O"``.
    scheme : {"IOB1", "IOB2", "BIO", "BIOES"}
        The tagging scheme the labels must follow.

    Returns
    -------
    list of (str, str)
        Per label its prefix and chunk type (``("O", "")`` for ``"O"``).

    Raises
    ------
    TypeError
        If a label is not a ``str``.
    ValueError
        If the scheme is unknown or a label does not follow it.
    """
    if scheme not in _SCHEMES:
        raise ValueError(f"scheme must be one of {sorted(_SCHEMES)}, got {scheme!r}.")
    prefixes = _SCHEMES[scheme]
    tags = []
    for position, label in enumerate(labels):
        if not isinstance(label, str):
            raise TypeError(f"label {position} ({label!r}) must be a str for the {scheme} "
                            "scheme.")
        prefix, chunk_type = split_tag(label)
        if label != "O" and not (prefix in prefixes and chunk_type):
            allowed = ", ".join(f"'{p}-<type>'" for p in prefixes)
            raise ValueError(f"label {position} is {label!r}; {scheme} labels are 'O', "
                             f"{allowed}.")
        tags.append((prefix, chunk_type))
    return tags


def _allowed(previous, following, scheme):
    """Whether tag ``following`` may directly follow tag ``previous`` (``(prefix, type)``)."""
    (p, p_type), (f, f_type) = previous, following
    continues = p in "BI" and p_type == f_type  # the previous tag is inside a chunk of f's type
    if scheme == "BIOES":
        if p in "BI":  # an open chunk must go on or end with the same type
            return f in "IE" and p_type == f_type
        return f not in "IE"  # after O, E or S: no open chunk to continue
    if scheme == "IOB1":  # B- only separates two adjacent chunks of one type
        return f != "B" or continues
    return f != "I" or continues  # IOB2: I- only inside a chunk


def chunk_constraints(labels, scheme="IOB2"):
    """Label transitions, first and last labels that a chunk tagging scheme allows.

    For constrained decoding with :class:`~sklearn_struct.structures.ChainStructure`,
    whose parameters have the names of the returned keys.  The rules:

    * ``"IOB2"`` (alias ``"BIO"``): every chunk starts with ``B-X``; ``I-X`` only follows
      ``B-X`` or ``I-X``, and cannot start a sentence.
    * ``"IOB1"`` (CoNLL-2003): chunks start with ``I-X``; ``B-X`` only starts a chunk that
      directly follows one of the same type, so it only follows ``B-X`` or ``I-X`` and
      cannot start a sentence.
    * ``"BIOES"``: ``B-X`` opens a chunk of several tokens, continued by ``I-X`` and closed
      by ``E-X``; ``S-X`` is a chunk of one token.  Inside a chunk (after ``B-X`` or
      ``I-X``) only ``I-X`` or ``E-X`` may follow; elsewhere (at the start, after ``O``,
      ``E-`` or ``S-``) only ``O``, ``B-`` or ``S-``; a sentence ends outside a chunk.

    Parameters
    ----------
    labels : sequence of str
        The label names, in the order of the label indices (an estimator's ``classes_``).
    scheme : {"IOB2", "BIO", "IOB1", "BIOES"}, default="IOB2"
        The tagging scheme.

    Returns
    -------
    constraints : dict
        ``"allowed_transitions"``: boolean array of shape (n_labels, n_labels), entry
        ``[a, b]`` true when ``labels[b]`` may follow ``labels[a]``;
        ``"allowed_start"`` and ``"allowed_end"``: boolean arrays of shape (n_labels,),
        the labels allowed first and last in a sentence.

    Raises
    ------
    ValueError
        For an unknown scheme, or a label that is not ``"O"`` or a prefix of the scheme
        followed by a hyphen and a type (naming the label).
    TypeError
        For a label that is not a string.

    See Also
    --------
    sklearn_struct.structures.ChainStructure : Takes these constraints, or the scheme's name.

    Examples
    --------
    >>> from sklearn_struct.datasets import chunk_constraints
    >>> constraints = chunk_constraints(["B-PER", "I-PER", "O"], "IOB2")
    >>> constraints["allowed_transitions"].astype(int)  # rows: previous, columns: next
    array([[1, 1, 1],
           [1, 1, 1],
           [1, 0, 1]])
    >>> constraints["allowed_start"], constraints["allowed_end"]
    (array([ True, False,  True]), array([ True,  True,  True]))
    """
    tags = scheme_tags(list(labels), scheme)
    scheme = "IOB2" if scheme == "BIO" else scheme
    outside = ("O", "")  # the sentence boundaries behave like an O tag
    transitions = np.array([[_allowed(a, b, scheme) for b in tags] for a in tags],
                           dtype=bool).reshape(len(tags), len(tags))
    start = np.array([_allowed(outside, b, scheme) for b in tags], dtype=bool)
    # the end of a sentence can follow a tag when an O could
    end = np.array([_allowed(a, outside, scheme) for a in tags], dtype=bool)
    return {"allowed_transitions": transitions, "allowed_start": start, "allowed_end": end}
