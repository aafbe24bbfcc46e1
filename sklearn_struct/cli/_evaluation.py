"""``eval``: conlleval's report or token accuracy on column files; UAS and LAS on CoNLL-U."""

import numpy as np

from ..datasets._conllu import read_conllu_sentences
from ..datasets._io import malformed
from ..metrics import attachment_score, conlleval_counts, precision_recall_f1
from ._common import CONLLU_COLUMN_INDEX
from ._tagging import label_kind, read_column_file

#: CoNLL-U columns ``eval`` scores by accuracy, with their report names.
_TAG_COLUMNS = {"upos": "UPOS", "xpos": "XPOS", "feats": "UFeats", "deprel": "DEPREL"}
#: The relations of content words, whose attachments CLAS scores (CoNLL 2018's evaluation
#: script, ``CONTENT_DEPRELS``): not aux, case, cc, clf, cop, det, mark or punct.
CONTENT_RELATIONS = frozenset((
    "nsubj", "obj", "iobj", "csubj", "ccomp", "xcomp", "obl", "vocative", "expl",
    "dislocated", "advcl", "advmod", "discourse", "nmod", "appos", "nummod", "acl", "amod",
    "conj", "fixed", "flat", "compound", "list", "parataxis", "orphan", "goeswith",
    "reparandum", "root", "dep"))


def attachment_scores(heads_true, heads_pred, deprels_true=None, deprels_pred=None,
                      forms=None):
    """UAS and (given the relations) LAS in percent, as the CoNLL 2018 shared task counts.

    Every syntactic word counts (multiword tokens and empty nodes are not
    words); LAS compares the universal part of the relations, before any
    colon (``nmod:poss`` is ``nmod``).  Given ``forms``, the words made of
    punctuation characters only are left out (the CoNLL-X rule).
    """
    scores = {"UAS": 100 * attachment_score(heads_true, heads_pred, forms=forms)}
    if deprels_true is not None:
        universal = [[[label.split(":")[0] for label in sentence] for sentence in deprels]
                     for deprels in (deprels_true, deprels_pred)]
        scores["LAS"] = 100 * attachment_score(heads_true, heads_pred, forms=forms,
                                               labels_true=universal[0],
                                               labels_pred=universal[1])
    return scores


def content_attachment_score(heads_true, heads_pred, deprels_true, deprels_pred):
    """CLAS in percent, as CoNLL 2018 counts it: the F1 of the content words' labelled
    attachments (a word is a content word by its universal relation, in each file)."""
    n_correct = n_true = n_pred = 0
    for heads, predicted, relations, predicted_relations in zip(
            heads_true, heads_pred, deprels_true, deprels_pred):
        for head, system_head, relation, system_relation in zip(
                heads, predicted, relations, predicted_relations):
            relation, system_relation = relation.split(":")[0], system_relation.split(":")[0]
            content = relation in CONTENT_RELATIONS
            n_true += content
            n_pred += system_relation in CONTENT_RELATIONS
            n_correct += content and head == system_head and relation == system_relation
    return 100 * precision_recall_f1(n_correct, n_true, n_pred)[2]


def evaluate(args):
    """``eval``: one column file (gold and predicted last), or a gold and a system CoNLL-U."""
    named_conllu = args.input.removesuffix(".gz").endswith(".conllu")
    conllu = args.format == "conllu" or (args.format is None and (
        args.system is not None or named_conllu))
    if conllu:
        if args.system is None:
            raise ValueError("CoNLL-U is scored against its gold file: give the gold file "
                             "and the system's (the output of 'tag')")
        if args.labels != "auto":
            raise ValueError("--labels is for column files; for CoNLL-U, --label chooses "
                             "the columns")
        return _evaluate_conllu(args)
    if args.system is not None:
        raise ValueError("a column file holds the gold and the predicted labels (its last "
                         "two columns): give one file, or --format conllu for two")
    if args.label is not None:
        raise ValueError("--label picks a CoNLL-U column; a column file's labels are its "
                         "last two columns")
    return _evaluate_columns(args)


def _evaluate_columns(args):
    blocks, n_columns = read_column_file(args.input)
    if n_columns < 2:
        raise ValueError(f"{args.input}: one column only; eval reads the gold and the "
                         "predicted labels from the last two columns")
    y_true, y_pred = [], []
    for block in blocks:
        if not isinstance(block, str):
            y_true.append([fields[-2] for _, _, fields in block])
            y_pred.append([fields[-1] for _, _, fields in block])
    kind = args.labels
    if kind == "auto":
        kind = label_kind(label for labels in y_true + y_pred for label in labels)
    n_tokens = sum(len(labels) for labels in y_true)
    right = sum(t == p for gold, pred in zip(y_true, y_pred) for t, p in zip(gold, pred))
    if kind == "tokens":
        print(f"processed {n_tokens} tokens in {len(y_true)} sentences; "
              f"accuracy: {100 * right / n_tokens:6.2f}%")
        return
    correct, n_true, n_pred = conlleval_counts(y_true, y_pred)
    totals = sum(correct.values()), sum(n_true.values()), sum(n_pred.values())
    print(f"processed {n_tokens} tokens with {totals[1]} phrases; found: {totals[2]} "
          f"phrases; correct: {totals[0]}.")
    print(f"accuracy: {100 * right / n_tokens:6.2f}%; " + _prf_text(*totals))
    for chunk_type in sorted(set(n_true) | set(n_pred)):
        counts = correct[chunk_type], n_true[chunk_type], n_pred[chunk_type]
        print(f"{chunk_type:>17}: " + _prf_text(*counts) + f"  {counts[2]}")


def _prf_text(n_correct, n_true, n_pred):
    """conlleval's ``precision: ..%; recall: ..%; FB1: ..`` from chunk counts."""
    precision, recall, f1 = precision_recall_f1(n_correct, n_true, n_pred)
    return (f"precision: {100 * precision:6.2f}%; recall: {100 * recall:6.2f}%; "
            f"FB1: {100 * f1:6.2f}")


def _aligned_words(gold_path, system_path):
    """The words of both files, sentence by sentence, checked to be the same tokenisation."""
    gold = [s for s in read_conllu_sentences(gold_path) if s.words]
    system = [s for s in read_conllu_sentences(system_path) if s.words]
    if len(gold) != len(system):
        raise ValueError(f"{system_path}: {len(system)} sentences, but {gold_path} has "
                         f"{len(gold)}; eval scores the gold tokenisation only")
    for index, (g, s) in enumerate(zip(gold, system)):
        for (g_line, g_fields), (s_line, s_fields) in zip(g.words, s.words):
            if g_fields[1] != s_fields[1]:
                raise malformed(system_path, s_line, f"word {s_fields[1]!r} where {gold_path}, "
                                f"line {g_line} has {g_fields[1]!r}; eval scores the gold "
                                "tokenisation only")
        if len(g.words) != len(s.words):
            raise malformed(system_path, s.words[0][0], f"sentence {index + 1} has "
                            f"{len(s.words)} words, but {len(g.words)} in {gold_path}; eval "
                            "scores the gold tokenisation only")
    return gold, system


def _heads(path, sentences):
    """The heads of every sentence, or None when the file has a word without one."""
    heads = []
    for sentence in sentences:
        values = sentence.column("head")
        if not all(value.isascii() and value.isdigit() for value in values):
            return None
        heads.append(np.array(values, dtype=np.int64))
    return heads


def _evaluate_conllu(args):
    gold, system = _aligned_words(args.input, args.system)
    labels = (list(_TAG_COLUMNS) + ["head"]) if args.label is None else [args.label]
    n_words = sum(len(s.words) for s in gold)
    print(f"{n_words} words in {len(gold)} sentences (syntactic words: multiword tokens and "
          "empty nodes are not scored)")
    for name in labels:
        if name == "head":
            continue
        right = sum(g == s for gs, ss in zip(gold, system)
                    for g, s in zip(gs.column(name), ss.column(name)))
        print(f"{_TAG_COLUMNS[name] + ':':<8}{100 * right / n_words:6.2f}%")
    if args.label is None:  # UPOS, XPOS and FEATS all right
        tags = ("upos", "xpos", "feats")
        right = sum(all(g[CONLLU_COLUMN_INDEX[t]] == s[CONLLU_COLUMN_INDEX[t]] for t in tags)
                    for gs, ss in zip(gold, system)
                    for (_, g), (_, s) in zip(gs.words, ss.words))
        print(f"AllTags:{100 * right / n_words:6.2f}%")
    if "head" not in labels:
        return
    heads = {path: _heads(path, sentences)
             for path, sentences in ((args.input, gold), (args.system, system))}
    unparsed = [path for path, value in heads.items() if value is None]
    if unparsed:
        if args.label == "head":
            raise ValueError(f"{unparsed[0]}: a word without a head ('_' or not a number): "
                             "no UAS or LAS")
        print(f"UAS, LAS: not scored ({unparsed[0]} has words without heads)")
        return
    deprels = [[s.column("deprel") for s in sentences] for sentences in (gold, system)]
    forms = [s.column("form") for s in gold]
    every = attachment_scores(heads[args.input], heads[args.system], *deprels)
    print(f"UAS:    {every['UAS']:6.2f}%  LAS: {every['LAS']:6.2f}%  (every word, as "
          "CoNLL 2018)")
    clas = content_attachment_score(heads[args.input], heads[args.system], *deprels)
    print(f"CLAS:   {clas:6.2f}%  (F1 of the content words' labelled attachments, as CoNLL "
          "2018)")
    try:
        no_punct = attachment_scores(heads[args.input], heads[args.system], *deprels,
                                     forms=forms)
    except ValueError:  # only punctuation: nothing left to score
        return
    print(f"UAS:    {no_punct['UAS']:6.2f}%  LAS: {no_punct['LAS']:6.2f}%  (punctuation "
          "excluded: words of punctuation characters only, CoNLL-X)")
