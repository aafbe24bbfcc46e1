"""WeightedCFGStructure: anchored rules, CKY and inside-outside against enumerating derivations."""

import itertools
import warnings

import numpy as np
import pytest

from sklearn_struct.datasets import Tree
from sklearn_struct.structures import Grammar, WeightedCFGStructure
from sklearn_struct.utils import check_structure

# an ambiguous toy grammar: symbols A, B, S; tags a, b
GRAMMAR = Grammar(["A", "B", "S"], ["a", "b"],
                  binary_rules=[[2, 0, 1], [2, 1, 0], [0, 0, 1], [1, 0, 0], [2, 2, 0], [0, 2, 1]],
                  lexical_rules=[[0, 0], [1, 1], [2, 0], [1, 0]], roots=[2, 0])
NAMES = GRAMMAR.nonterminals


def derivations(words, tags, symbol=None):
    """Every binary tree of the grammar over the words (rooted at ``symbol`` or a root)."""
    n = len(words)
    symbols = [symbol] if symbol is not None else [NAMES[r] for r in GRAMMAR.roots]
    for label in symbols:
        if n == 1:
            for a, t in GRAMMAR.lexical_rules:
                if NAMES[a] == label and GRAMMAR.terminals[t] == tags[0]:
                    yield Tree(label, [words[0]])
            continue
        for a, b, c in GRAMMAR.binary_rules:
            if NAMES[a] != label:
                continue
            for m in range(1, n):
                for left in derivations(words[:m], tags[:m], NAMES[b]):
                    for right in derivations(words[m:], tags[m:], NAMES[c]):
                        yield Tree(label, [left, right])


def labelled_spans(tree):
    spans, stack = [], [(tree, 0)]
    while stack:
        node, start = stack.pop()
        spans.append((node.label, start, start + len(node.leaves())))
        if not node.is_preterminal():
            position = start
            for child in node.children:
                stack.append((child, position))
                position += len(child.leaves())
    return spans


STRUCTURE = WeightedCFGStructure(GRAMMAR, hash_bits=9)
SENTENCES = {}  # by length: the sentences drawn last, to decode units in the loss


def make_instances(rng):
    X, y = [], []
    for n in (1, 2, 3, 4):
        while True:
            tags = list(rng.choice(["a", "b"], size=n))
            words = [f"w{rng.randint(5)}" for _ in range(n)]
            trees = list(derivations(words, tags))
            if trees:
                break
        X.append(list(zip(words, tags)))
        y.append(trees[rng.randint(len(trees))])
        SENTENCES[2 * n - 1] = X[-1]
    return X, y


def enumerate_outputs(batch, i):
    words = batch.words[i]
    tags = [GRAMMAR.terminals[t] for t in batch.tokens[batch.token_offsets[i]:
                                                       batch.token_offsets[i + 1], 1]]
    one = STRUCTURE.make_batch([list(zip(words, tags))])
    codec = STRUCTURE.output_space().codec(None)
    return np.array([codec.encode(one, [tree]) for tree in derivations(words, tags)])


def span_loss(Y_true, Y):
    """The paper's loss: constituents of the prediction missing from the gold tree."""
    sentence = SENTENCES[len(Y_true)]
    batch = STRUCTURE.make_batch([sentence])
    codec = STRUCTURE.output_space().codec(None)
    gold = set(labelled_spans(codec.decode(batch, Y_true)[0]))
    return sum(span not in gold for span in labelled_spans(codec.decode(batch, Y)[0]))


def test_conforms():
    report = check_structure(STRUCTURE, make_instances, enumerate_outputs=enumerate_outputs,
                             loss=span_loss)
    for check in ("check_enumeration", "check_part_losses", "check_argmax", "check_marginals",
                  "check_dynamic_program", "check_kernel_ops", "check_take"):
        assert report[check] == "passed", (check, report[check])


def test_counts_of_derivations_and_parts():
    # with every rule over every span, a CNF grammar with one symbol has Catalan(n - 1) trees
    one = Grammar(["X"], ["t"], [[0, 0, 0]], [[0, 0]], [0])
    structure = WeightedCFGStructure(one, hash_bits=8)
    batch = structure.make_batch([[("w", "t")] * n for n in range(1, 7)])
    scores = np.zeros(batch.part_offsets[-1])
    _, log_z = structure.marginals(batch, scores)
    np.testing.assert_allclose(np.exp(log_z), [1, 1, 2, 5, 14, 42])
    # binary parts R (n^3 - n) / 6, plus one lexical part per word here
    assert np.diff(batch.part_offsets).tolist() == [(n ** 3 - n) // 6 + n for n in range(1, 7)]


def test_round_trip_of_trees():
    words, tags = ["x", "y", "z", "u"], ["a", "b", "a", "a"]
    trees = list(derivations(words, tags))
    batch = STRUCTURE.make_batch([list(zip(words, tags))] * len(trees))
    codec = STRUCTURE.output_space().codec(trees)
    assert codec.decode(batch, codec.encode(batch, trees)) == trees
    z = STRUCTURE.encode(batch, codec.encode(batch, trees))
    np.testing.assert_array_equal(STRUCTURE.decode(batch, z), codec.encode(batch, trees))


def test_bad_input():
    with pytest.raises(ValueError, match=r"sentence 0, word 1 \('y'\): the tag 'c' is not a "
                                         "terminal"):
        STRUCTURE.make_batch([[("x", "a"), ("y", "c")]])
    with pytest.raises(ValueError, match="sentence 1, word 0: expected a \\(word, tag\\) pair"):
        STRUCTURE.make_batch([[("x", "a")], ["xa"]])
    with pytest.raises(TypeError, match="non-empty list of sentences"):
        STRUCTURE.make_batch([])
    batch = STRUCTURE.make_batch([[("x", "a"), ("y", "a"), ("z", "b")]])
    codec = STRUCTURE.output_space().codec(None)
    bad_rule = Tree("S", [Tree("A", ["x"]), Tree("B", [Tree("A", ["y"]), Tree("B", ["z"])])])
    with pytest.raises(ValueError, match=r"y\[0\]: the rule B -> A B is not in the grammar"):
        codec.encode(batch, [bad_rule])
    with pytest.raises(ValueError, match=r"y\[0\]: 'B' is not a root symbol"):
        inner = Tree("A", [Tree("A", ["y"]), Tree("B", ["z"])])
        codec.encode(batch, [Tree("B", [Tree("A", ["x"]), inner])])
    with pytest.raises(ValueError, match=r"y\[0\]: the tree's words"):
        codec.encode(batch, [Tree("S", [Tree("A", ["x"]), Tree("B", ["q"])])])
    with pytest.raises(ValueError, match="X has 1 sentences but y has 2 trees"):
        codec.encode(batch, [bad_rule, bad_rule])
    # no derivation: b alone has no root symbol
    lone = STRUCTURE.make_batch([[("x", "b")]])
    with pytest.raises(ValueError, match="example 0 has no output of finite score"):
        STRUCTURE.argmax(lone, np.zeros(lone.part_offsets[-1]))


def test_every_tree_is_reachable_by_argmax():
    # a score vector favouring one tree's parts makes CKY return exactly it
    words, tags = ["x", "y", "z", "u"], ["a", "a", "b", "a"]
    batch = STRUCTURE.make_batch([list(zip(words, tags))])
    codec = STRUCTURE.output_space().codec(None)
    for tree in itertools.islice(derivations(words, tags), 20):
        units = codec.encode(batch, [tree])
        scores = STRUCTURE.encode(batch, units) - 0.5
        assert codec.decode(batch, STRUCTURE.argmax(batch, scores)) == [tree]


def test_viterbi_parse_of_a_pcfg_matches_nltk():
    nltk = pytest.importorskip("nltk")
    rng = np.random.RandomState(0)
    totals = np.zeros(3)
    binary_w = rng.uniform(0.2, 1.0, len(GRAMMAR.binary_rules))
    lexical_w = rng.uniform(0.2, 1.0, len(GRAMMAR.lexical_rules))
    np.add.at(totals, GRAMMAR.binary_rules[:, 0], binary_w)
    np.add.at(totals, GRAMMAR.lexical_rules[:, 0], lexical_w)
    binary_p = binary_w / totals[GRAMMAR.binary_rules[:, 0]]
    lexical_p = lexical_w / totals[GRAMMAR.lexical_rules[:, 0]]
    root_p = np.array([0.3, 0.0, 0.7])  # A or S over the sentence
    lines = [f"ROOT -> {NAMES[r]} [{float(root_p[r])!r}]" for r in GRAMMAR.roots]
    lines += [f"{NAMES[a]} -> {NAMES[b]} {NAMES[c]} [{float(p)!r}]"
              for (a, b, c), p in zip(GRAMMAR.binary_rules, binary_p)]
    lines += [f"{NAMES[a]} -> '{GRAMMAR.terminals[t]}' [{float(p)!r}]"
              for (a, t), p in zip(GRAMMAR.lexical_rules, lexical_p)]
    pcfg = nltk.PCFG.fromstring("\n".join(lines))
    parser = nltk.ViterbiParser(pcfg)
    with np.errstate(divide="ignore"):
        root_scores = np.log(root_p)
    codec = STRUCTURE.output_space().codec(None)
    compared = 0
    for trial in range(30):
        tags = list(rng.choice(["a", "b"], size=rng.randint(1, 8)))
        words = [f"w{k}" for k in range(len(tags))]
        batch = STRUCTURE.make_batch([list(zip(words, tags))])
        scores = STRUCTURE.rule_scores(batch, np.log(binary_p), np.log(lexical_p), root_scores)
        nltk_trees = list(parser.parse(tags))
        if not nltk_trees:
            with pytest.raises(ValueError, match="has no output of finite score"):
                STRUCTURE.argmax(batch, scores)
            continue
        units = STRUCTURE.argmax(batch, scores)
        ours = codec.decode(batch, units)[0]
        # the same best log-probability; the trees agree unless several trees reach it
        # (this grammar makes such ties: the same rules in another arrangement)
        best = np.log(nltk_trees[0].prob())
        assert STRUCTURE.encode(batch, units) @ scores == pytest.approx(best, rel=1e-10)
        theirs = _from_nltk(nltk_trees[0][0], iter(words))
        assert codec.encode(batch, [ours]).tolist() == units.tolist()
        theirs_score = STRUCTURE.encode(batch, codec.encode(batch, [theirs])) @ scores
        assert theirs_score == pytest.approx(best, rel=1e-10)
        compared += 1
    assert compared >= 20


def _from_nltk(node, words):
    """NLTK's tree over the tags as a Tree over our words."""
    if isinstance(node[0], str):
        return Tree(node.label(), [next(words)])
    return Tree(node.label(), [_from_nltk(child, words) for child in node])


@pytest.mark.parametrize("Model", ["EGCRF", "EGStructuredSVM", "StructuredPerceptron"])
def test_estimators_learn_to_parse(Model):
    import sklearn_struct

    # the word decides the bracketing: "l" words attach left, "r" words right
    rng = np.random.RandomState(1)
    X, y = [], []
    for _ in range(40):
        tags = list(rng.choice(["a", "b"], size=rng.randint(2, 5)))
        trees = list(derivations([f"x{k}" for k in range(len(tags))], tags))
        if not trees:
            continue
        tree = trees[0]
        words = [("l" if k % 2 else "r") + str(len(tags)) for k in range(len(tags))]
        X.append(list(zip(words, tags)))
        y.append(_relabel(tree, iter(words)))
    params = {} if Model == "StructuredPerceptron" else {"C": 10.0}
    model = getattr(sklearn_struct, Model)(structure=STRUCTURE, max_iter=30, random_state=0,
                                           **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y)
    predicted = model.predict(X)
    assert all(isinstance(tree, Tree) for tree in predicted)
    assert np.mean([p == t for p, t in zip(predicted, y)]) >= 0.9


def _relabel(tree, words):
    if tree.is_preterminal():
        return Tree(tree.label, [next(words)])
    return Tree(tree.label, [_relabel(child, words) for child in tree.children])
