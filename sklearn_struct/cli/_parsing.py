"""``learn --label head`` and ``tag`` for dependency parsing: heads, then their relations.

Two models, as in the user guide's dependency chapter: a first-order parser
(:class:`~sklearn_struct.structures.DependencyTreeStructure` over the
:class:`~sklearn_struct.preprocessing.DependencyTokenEncoder` ids) predicts
the heads; a relation labeller (the same estimator over
:class:`~sklearn_struct.structures.TreeStructure`, whose label graph is the
dependency tree itself, its edges typed by the arc's direction) labels the
predicted tree's arcs with DEPREL.  The labeller learns on the gold trees.
"""

import sys
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ..datasets import check_heads, filter_projective
from ..datasets._io import malformed
from ..persistence import save_model
from ..parsing import PARSER_TAGS, parser_sentences, relation_features, relation_inputs
from ..preprocessing import DependencyTokenEncoder, SequenceDictVectorizer
from ..structures import DependencyTreeStructure, SiblingDependencyStructure, TreeStructure
from ._common import (CONLLU_COLUMN_INDEX, check_output, gold_inputs_note, make_estimator,
                      output_file, parse_inputs, read_conllu, unannotated)
from ._evaluation import attachment_scores


def _parse_inputs(args):
    columns = parse_inputs(args.inputs or "form", "head")
    others = [name for name in columns if name not in ("form",) + PARSER_TAGS]
    if "form" not in columns or others:
        raise ValueError(f"--inputs {args.inputs}: the parser reads the form and the tags "
                         "(upos, xpos): give form and any of upos, xpos")
    return columns


def gold_trees(path, sentences, tags=()):
    """Heads and relations of every sentence with words, checked to be trees (and the
    columns of ``tags`` checked to be filled)."""
    heads, deprels = [], []
    for sentence in sentences:
        if not sentence.words:
            continue
        values = []
        for line_number, fields in sentence.words:
            head = fields[CONLLU_COLUMN_INDEX["head"]]
            if not head.isascii() or not head.isdigit():
                raise malformed(path, line_number, f"head {head!r} is not a word number: "
                                "learning a parser needs the trees")
            values.append(int(head))
        try:
            heads.append(check_heads(values, where="HEAD"))
        except ValueError as exc:
            raise malformed(path, sentence.words[0][0], str(exc)) from None
        roots = np.flatnonzero(heads[-1] == 0)
        if len(roots) > 1:  # CoNLL-U's trees have one root, as every parser's structure
            raise malformed(path, sentence.words[roots[1]][0],
                            f"words {roots[0] + 1} and {roots[1] + 1} both have head 0; a "
                            "dependency tree has one root (exactly one word of head 0)")
        for line_number, fields in sentence.words:
            if unannotated("deprel", fields[CONLLU_COLUMN_INDEX["deprel"]]):
                raise malformed(path, line_number, "no DEPREL ('_'): the relation labeller "
                                "learns from every word's relation")
            for tag in tags:
                if unannotated(tag, fields[CONLLU_COLUMN_INDEX[tag]]):
                    raise malformed(path, line_number, f"no {tag.upper()} ('_'): its tagger "
                                    "learns from every word's tag")
        deprels.append(sentence.column("deprel"))
    return heads, deprels


def learn(args):
    """``learn --label head``: fit the parser and the relation labeller, write both."""
    if args.format != "conllu":
        raise ValueError("--label head parses CoNLL-U files: add --format conllu")
    if args.template is not None or args.window is not None:
        raise ValueError("--template and --window choose the features of taggers; the "
                         "parser's are fixed (see 'Parsing' in the command-line guide)")
    columns = _parse_inputs(args)
    parser = make_estimator(args, structure=(
        SiblingDependencyStructure(hash_bits=args.hash_bits) if args.second_order
        else DependencyTreeStructure(projective=not args.non_projective,
                                     hash_bits=args.hash_bits)))
    labeller = make_estimator(args, structure=TreeStructure(n_edge_types=2))
    check_output(args.output)
    started = time.perf_counter()
    conllu, inputs = read_conllu(args.train, columns)
    heads, deprels = gold_trees(args.train, conllu)
    sentences, pos = parser_sentences(inputs, columns)
    encoder = DependencyTokenEncoder(pos=pos).fit(sentences)
    kept = list(range(len(heads)))
    if not args.non_projective:  # Eisner's trees are projective: so must the examples be
        kept, _, _ = filter_projective(kept, heads)
        if not kept:
            advice = ("drop --second-order and add --non-projective" if args.second_order
                      else "add --non-projective")
            raise ValueError(f"{args.train}: no projective sentence to learn from (none of "
                             f"its {len(heads)} sentences is projective, and the parser learns "
                             f"projective trees only); {advice} to learn from every tree")
    X_parser = encoder.transform([sentences[i] for i in kept])
    vectorizer = SequenceDictVectorizer().fit(
        [relation_features(columns_i, columns, heads_i)
         for columns_i, heads_i in zip(inputs, heads)])
    X_labeller = relation_inputs(inputs, columns, heads, vectorizer)
    n_words = sum(len(h) for h in heads)
    print(f"{len(heads)} sentences, {n_words} words; parser: "
          f"{'all' if args.non_projective else len(kept)} "
          f"{'' if args.non_projective else 'projective '}sentences, "
          f"{'second-order (arcs and siblings), ' if args.second_order else ''}"
          f"2^{args.hash_bits} hashed weights; relation labeller: "
          f"{len(vectorizer.vocabulary_)} features, "
          f"{len(set(np.concatenate(deprels)))} relations "
          f"(read in {time.perf_counter() - started:.1f}s)", flush=True)
    note = gold_inputs_note(columns, args.train)
    if note:
        print(note, flush=True)
    dev = None
    if args.dev is not None:
        dev_conllu, dev_inputs = read_conllu(args.dev, columns)
        dev_heads, dev_deprels = gold_trees(args.dev, dev_conllu)
        dev = (encoder.transform(parser_sentences(dev_inputs, columns)[0]), dev_inputs,
               dev_heads, dev_deprels)

    def score_dev(n_pass, fitted):
        if n_pass % args.dev_every == 0:
            uas = attachment_scores(dev[2], fitted.predict(dev[0]))["UAS"]
            print(f"parser pass {n_pass}: dev UAS {uas:.2f}", flush=True)

    started = time.perf_counter()
    notes = _fit(parser, "parser", X_parser, [heads[i] for i in kept],
                 callback=None if dev is None else score_dev)
    parser_seconds = time.perf_counter() - started
    print(f"trained the parser ({type(parser).__name__}) in {parser_seconds:.1f}s "
          f"({parser.n_iter_} passes)", flush=True)
    started = time.perf_counter()
    notes += _fit(labeller, "relation labeller", X_labeller,
                  [np.asarray(d, dtype=str) for d in deprels])
    labeller_seconds = time.perf_counter() - started
    if args.prune is not None:
        parser.prune_weights(args.prune)
        labeller.prune_weights(args.prune)
    settings = {"task": "parse", "estimator": args.estimator,
                "input": {"format": "conllu", "label": "head", "columns": columns}}
    save_model(args.output, settings, {"encoder": encoder, "parser": parser,
                                       "vectorizer": vectorizer, "labeller": labeller})
    line = (f"trained the relation labeller ({type(labeller).__name__}) in "
            f"{labeller_seconds:.1f}s ({labeller.n_iter_} passes)")
    if dev is not None:
        predicted, relations = _predict(settings, {"encoder": encoder, "parser": parser,
                                                   "vectorizer": vectorizer,
                                                   "labeller": labeller}, dev[1])
        scores = attachment_scores(dev[2], predicted, dev[3], relations)
        line += f"; dev UAS {scores['UAS']:.2f}, LAS {scores['LAS']:.2f}"
    print(f"{line}; model written to {args.output}", flush=True)
    for note in notes:
        print(note, file=sys.stderr)


def _fit(estimator, role, X, y, callback=None):
    """Fit ``estimator``; its convergence warnings as notes naming the model (its ``role``)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        estimator.fit(X, y, callback=callback)
    return [f"note ({role}): {warning.message}" for warning in caught]


def _predict(settings, objects, inputs):
    """Predicted heads and relations of sentences given by their input columns."""
    columns = settings["input"]["columns"]
    sentences, _ = parser_sentences(inputs, columns)
    heads = objects["parser"].predict(objects["encoder"].transform(sentences))
    trees = relation_inputs(inputs, columns, heads, objects["vectorizer"])
    return heads, objects["labeller"].predict(trees)


def check_model(settings, objects):
    """Parse one sentence of two one-letter words: what a model must do to be one."""
    _predict(settings, objects, [[["x", "y"] for _ in settings["input"]["columns"]]])


def tag(args, settings, objects):
    """``tag`` with a parser: the input file with HEAD and DEPREL predicted."""
    if args.marginals != "none" or args.nbest is not None or args.allowed_labels is not None:
        raise ValueError("--marginals, --nbest and --allowed-labels are for taggers; this "
                         "model parses")
    if args.n_jobs is not None:
        for key in ("parser", "labeller"):
            objects[key].set_params(n_jobs=args.n_jobs)
    conllu, inputs = read_conllu(args.input, settings["input"]["columns"], advice=(
        ", or learn a parser that tags the word forms itself (learn --label head --tags "
        "upos,xpos)"))
    heads, relations = _predict(settings, objects, inputs)
    predicted = iter(zip(heads, relations))
    with output_file(args.output) as out:
        for sentence in conllu:
            replace = None
            if sentence.words:
                sentence_heads, sentence_relations = next(predicted)
                replace = {"head": sentence_heads, "deprel": sentence_relations}
            out.write(sentence.text(replace))
