"""
====================================================
Constituency parsing with a CRF over parse trees
====================================================

Example 2 of the EG framework (Bartlett et al., NIPS 2004): a weighted
context-free grammar whose parts are anchored rules.  The grammar is read off
binarised training trees of the Penn Treebank sample that NLTK distributes
(:class:`~sklearn_struct.structures.Grammar`, horizontal markovisation of
order 0, collapsed unary chains); :class:`~sklearn_struct.EGCRF` over
:class:`~sklearn_struct.structures.WeightedCFGStructure` learns hashed
rule-by-span features, with exact CKY and inside-outside.  It is compared with
the relative-frequency PCFG of the same grammar by labelled bracket F1
(:func:`~sklearn_struct.metrics.parseval`), and the figure draws a test
sentence's predicted tree over its gold tree.

The treebank sample is for non-commercial use: it is read from
``../shared/data``, never shipped.  Run ``python plot_constituency_parsing.py
[data_dir] [max_len]``.
"""

import os
import sys
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
from sklearn.exceptions import ConvergenceWarning

from sklearn_struct import EGCRF
from sklearn_struct.datasets import binarize, load_ptb, unbinarize
from sklearn_struct.metrics import parseval
from sklearn_struct.structures import Grammar, WeightedCFGStructure

default_dir = os.environ.get(
    "SKLEARN_STRUCT_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
data_dir = Path(sys.argv[1] if len(sys.argv) > 1 else default_dir) / "ptb_wsj_nltk_sample"
max_len = int(sys.argv[2]) if len(sys.argv) > 2 else 12

trees = load_ptb(data_dir / "wsj_sample.mrg.gz").trees
first_test = 3396  # wsj_0160 (see wsj_sample.files.tsv): train on wsj_0001-0159
train = [t for t in trees[:first_test] if len(t.leaves()) <= max_len]
test = [t for t in trees[first_test:] if len(t.leaves()) <= max_len]

# %%
# The grammar of every training rule (no pruning), with markovisation of order 0
# (intermediate symbols remember only their parent): on a treebank this small, wider
# rules leave more test sentences without any derivation.
binary_train = [binarize(tree, markov_order=0) for tree in train]
grammar = Grammar.from_trees(binary_train)
structure = WeightedCFGStructure(grammar, hash_bits=18)
known = set(grammar.terminals)
test = [t for t in test if all(tag in known for tag in t.tags())]
print(grammar, f"-- {len(train)} training and {len(test)} test sentences")

# %%
# The CRF, and the PCFG's Viterbi parses over the same anchored rules.
warnings.filterwarnings("ignore", category=ConvergenceWarning)  # 20 passes suffice here
crf = EGCRF(C=1.0, structure=structure, max_iter=20, random_state=0)
crf.fit([tree.pos() for tree in binary_train], binary_train)


def parse(scores_of):
    """Unbinarised best trees of the test sentences (a flat tree where none exists)."""
    out, parsed = [], []
    for tree in test:
        batch = structure.make_batch([tree.pos()])
        try:
            units = structure.argmax(batch, scores_of(batch))
            out.append(unbinarize(structure.output_space().codec(None).decode(batch, units)[0]))
            parsed.append(True)
        except ValueError:
            out.append(type(tree)("TOP", [type(tree)(tag, [w]) for w, tag in tree.pos()]))
            parsed.append(False)
    return out, parsed


log_probabilities = grammar.log_probabilities()
pcfg_trees, _ = parse(lambda batch: structure.rule_scores(batch, *log_probabilities))
crf_trees, parsed = parse(lambda batch: structure.part_scores(batch, crf.weights_))
print(f"{len(test) - sum(parsed)} test sentences have no derivation (scored as flat trees)")
for name, predicted in (("PCFG", pcfg_trees), ("EGCRF", crf_trees)):
    scores = parseval(test, predicted)
    print(f"{name:6s} labelled bracket P {100 * scores['precision']:.1f}  "
          f"R {100 * scores['recall']:.1f}  F1 {100 * scores['f1']:.1f}")

# %%
# A test sentence: the CRF's tree (above) and the gold tree (below).


def draw(ax, tree, upside_down):
    """Leaves on a line, each constituent above (or below) its words."""
    positions = {}

    def place(node, start, depth):
        if node.is_preterminal():
            x = start
            positions[id(node)] = (x, depth)
            return x, start + 1, depth
        xs, position, deepest = [], start, depth
        for child in node.children:
            x, position, child_depth = place(child, position, depth + 1)
            xs.append(x)
            deepest = max(deepest, child_depth)
        positions[id(node)] = (sum(xs) / len(xs), depth)
        return positions[id(node)][0], position, deepest

    _, _, height = place(tree, 0, 0)
    sign = -1 if upside_down else 1

    def y_of(depth):
        return sign * (1 + height - depth)

    def render(node):
        x, depth = positions[id(node)]
        if node.is_preterminal():
            ax.plot([x, x], [y_of(depth), sign * 0.3], color="0.7", lw=0.8)
        else:
            for child in node.children:
                cx, cdepth = positions[id(child)]
                ax.plot([x, cx], [y_of(depth), y_of(cdepth)], color="tab:blue", lw=1)
                render(child)
        ax.text(x, y_of(depth), node.label, ha="center", va="center", fontsize=8,
                bbox=dict(boxstyle="round", facecolor="white", edgecolor="0.7"))

    render(tree)
    return height


index = max((i for i in range(len(test)) if parsed[i]),
            key=lambda i: (crf_trees[i] != test[i], len(test[i].leaves())))
words = test[index].leaves()
fig, ax = plt.subplots(figsize=(11, 7))
top = draw(ax, crf_trees[index], upside_down=False)
bottom = draw(ax, test[index], upside_down=True)
for position, word in enumerate(words):
    ax.text(position, 0, word, ha="center", va="center", fontsize=9, rotation=30)
ax.set_ylim(-bottom - 2, top + 2)
ax.set_xlim(-1, len(words))
ax.axis("off")
ax.set_title("EGCRF parse (above) and gold tree (below) of a test sentence")
fig.tight_layout()
plt.show()
# sphinx_gallery_thumbnail_path = "prerendered/plot_constituency_parsing.png"

# %%
# Output of a recorded run
# ------------------------
# The documentation build does not run this example (it trains on the shared
# corpora, which are not shipped, for minutes): the output and the figure below
# are those of a run of this script, recorded by
# ``tools/render_gallery_figures.py`` on a busy shared machine (so any times
# printed are longer than on an idle one).
#
# .. literalinclude:: /prerendered/plot_constituency_parsing.txt
#    :language: none
#
# .. image:: /prerendered/plot_constituency_parsing.png
#    :alt: A test sentence: the tree predicted by EGCRF over its gold tree
