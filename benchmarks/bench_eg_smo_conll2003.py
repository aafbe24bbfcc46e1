"""Bartlett et al. (NIPS 2004) section 5: online EG against factored SMO on CoNLL-2003 NER.

Data: the first 1,000 sentences of CoNLL-2003 English ``eng.train`` (the file has no
``-DOCSTART-`` lines), tags converted to IOB2: B- and I- of PER, ORG, LOC, MISC and O,
the paper's 9 tags.  Model: a first-order chain over the tags, the max-margin
objective ``1/2 ||w||^2 + C sum_i max_y [Hamming(y_i, y) - w . (phi(x_i, y_i) -
phi(x_i, y))]`` of ``EGStructuredSVM`` with ``ChainStructure(start_end=False)``.

Features (the paper: "the word itself, its capitalization and morphological
features, etc., as well as the previous and consecutive words and their
features"): for the token and each of its two neighbours (offsets -1, 0, +1; a
boundary marker past the sentence's ends), the word, its lower case, its shape
class (capitalised, all capitals, lower case, mixed, digits, other), whether it
has a digit or a hyphen, and its prefixes and suffixes of 1 to 3 characters;
plus a bias; each conjoined with the token's tag.  The paper's edge parts also
conjoin the pair of tags with the two words and their features; here an edge
part has only its pair of tags (the package's chains tie transitions over
positions and do not condition them on the input).  The paper gives no C; the
curves are at ``--C`` (default 1).

Solvers (``_factored_smo.py``; every pass visits the sentences in a new random
order):

- SMO: the factored SMO of Taskar et al. (2003) over the part marginals, one
  pairwise step per sentence visit, from the truth (``w = 0``).
- EG: the paper's online EG (Figure 2 one sentence at a time) over untied node
  and edge parameters, fixed rate ``eta`` (0.5 or 1), from ``theta = theta0 *
  loss`` (theta0 = 0: uniform; -2.7, -3, -4.5: the paper's Figure 4(b); a
  wrong tag starts ``theta0`` below the right one).
- hybrid: SMO for ``k`` passes, then ``mu`` converted to ``theta`` through
  conditional probabilities (section 5; 1e-4 of the uniform marginals mixed in
  first, so that no part is at probability 0), then online EG with adaptive
  per-sentence rates from eta = 1 / C (the step ``eta C (l + w . phi)`` of unit
  scale; from eta = 1 at C = 0.01 the rates took dozens of passes to grow).
- ``EGStructuredSVM()`` as shipped (online EG, tied transition parameters,
  annealed smoothing of the hinge) and ``EGStructuredSVM(solver="working_set")``
  (row generation with SMO over whole outputs), one pass per history point.

Every point is a pass (sentence visits / n; EG's halvings count as visits, SMO
needs two Viterbi runs per visit, EG one forward-backward per tried rate); the
seconds are training seconds without the objective evaluations (the working
set's oracle passes, which also evaluate its objectives, included).  Runtime:
about 3 minutes per C (one core).

Run from benchmarks/:  python bench_eg_smo_conll2003.py [--C 1] [--passes 100]
"""

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _factored_smo import ChainDual  # noqa: E402
from _record import markdown_table, record  # noqa: E402

from sklearn_struct.datasets import load_conll  # noqa: E402
from sklearn_struct.eg import EGStructuredSVM  # noqa: E402
from sklearn_struct.preprocessing import SequenceDictVectorizer  # noqa: E402
from sklearn_struct.structures import ChainStructure  # noqa: E402

FIGURES = Path(__file__).resolve().parents[1] / "doc" / "_static" / "paper_nips2004"


def shape(word):
    if any(c.isdigit() for c in word) and not any(c.isalpha() for c in word):
        return "digits"
    if word.isupper():
        return "upper"
    if word.istitle():
        return "title"
    if word.islower():
        return "lower"
    return "mixed" if any(c.isalpha() for c in word) else "other"


def word_features(word, prefix):
    features = {f"{prefix}word={word}": 1.0, f"{prefix}lower={word.lower()}": 1.0,
                f"{prefix}shape={shape(word)}": 1.0}
    if any(c.isdigit() for c in word):
        features[f"{prefix}digit"] = 1.0
    if "-" in word:
        features[f"{prefix}hyphen"] = 1.0
    for k in (1, 2, 3):
        features[f"{prefix}prefix{k}={word[:k]}"] = 1.0
        features[f"{prefix}suffix{k}={word[-k:]}"] = 1.0
    return features


def sentence_features(words):
    padded = ["<s>"] + list(words) + ["</s>"]
    rows = []
    for t in range(1, len(padded) - 1):
        row = {"bias": 1.0}
        for offset in (-1, 0, 1):
            row.update(word_features(padded[t + offset], f"{offset}:"))
        rows.append(row)
    return rows


def own_run(problem, kind, passes, seed=0, eta=1.0, theta0=0.0, switch=None):
    """Per-pass dual, primal and seconds of SMO, EG or the hybrid on a fresh ``ChainDual``."""
    X, Y, K, C = problem
    dual = ChainDual(X, Y, K, C)
    if kind == "eg":
        loss = 1.0 - dual.truth_node
        dual.start_eg(theta0 * loss, np.zeros_like(dual.mu_edge), eta)
    rng = np.random.RandomState(seed)
    curve = {"passes": [], "dual": [], "primal": [], "seconds": []}
    done, seconds = 0.0, 0.0
    while done < passes - 1e-9:
        order = rng.permutation(dual.n_samples)
        start = time.perf_counter()
        if kind == "smo" or (kind == "hybrid" and done < switch):
            dual.smo_pass(order)
            visits = dual.n_samples
            if kind == "hybrid" and done + 1 >= switch:
                # rates of 1 / C: steps theta += C eta (l + w . phi) of unit scale
                dual.start_eg(*dual.theta_from_marginals(), 1.0 / C)
        else:
            visits = dual.eg_pass(order, adaptive=kind == "hybrid")
        seconds += time.perf_counter() - start
        done += visits / dual.n_samples
        curve["passes"].append(done)
        curve["dual"].append(dual.dual())
        curve["primal"].append(dual.primal())
        curve["seconds"].append(seconds)
    return {k: np.asarray(v) for k, v in curve.items()}


def package_run(problem_sk, solver, passes, C):
    X, tags = problem_sk
    model = EGStructuredSVM(C=C, structure=ChainStructure(start_end=False), solver=solver,
                            tol=0, max_iter=passes, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, tags)
    h = model.history_
    if solver == "working_set":  # its oracle pass (timed with the evaluation) is training too
        return {"passes": np.arange(1.0, len(h["dual"]) + 1), "dual": h["dual"],
                "primal": h["primal"], "seconds": np.cumsum(h["seconds"] + h["eval_seconds"])}
    return {"passes": h["passes"], "dual": h["dual"], "primal": h["primal"],
            "seconds": np.cumsum(h["seconds"])}


def at(curve, key, passes):
    """``curve[key]`` at the first point with at least ``passes`` passes (else the last)."""
    index = np.searchsorted(curve["passes"], passes - 1e-9)
    return curve[key][min(index, len(curve[key]) - 1)]


def first_certified(curve, rel):
    """(passes, seconds) of the first point whose relative duality gap is at most ``rel``."""
    ok = np.nonzero(curve["primal"] - curve["dual"] <= rel * curve["primal"])[0]
    if not len(ok):
        return "-"
    return f"{curve['passes'][ok[0]]:.0f} / {curve['seconds'][ok[0]]:.2f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    default = Path(__file__).resolve().parents[2] / "shared" / "data" / "conll2003_ner_en"
    parser.add_argument("--data", type=Path, default=default)
    parser.add_argument("--C", type=float, default=1.0)
    parser.add_argument("--passes", type=int, default=100)
    parser.add_argument("--switch", type=int, nargs="+", default=[2, 5, 10])
    args = parser.parse_args()
    load = os.getloadavg()[0]
    data = load_conll(args.data / "eng.train.gz", tag_scheme="iob2")
    words, tags = data.word[:1000], [list(t) for t in data.tags[:1000]]
    X = SequenceDictVectorizer().fit_transform([sentence_features(w) for w in words])
    labels = sorted({t for sentence in tags for t in sentence})
    Y = [np.array([labels.index(t) for t in sentence]) for sentence in tags]
    n_tokens = sum(len(t) for t in tags)
    summary = (f"{len(X)} sentences, {n_tokens} tokens, {X[0].shape[1]} features, "
               f"{len(labels)} tags ({', '.join(labels)})")
    print(summary, flush=True)
    problem = (X, Y, len(labels), args.C)
    tiny = (X[:3], Y[:3], len(labels), args.C)  # numba compilation
    own_run(tiny, "hybrid", 3, switch=1)
    own_run(tiny, "eg", 1)

    runs = {"SMO": own_run(problem, "smo", args.passes)}
    for eta in (0.5, 1.0):
        runs[f"EG eta={eta:g}"] = own_run(problem, "eg", args.passes, eta=eta)
    for theta0 in (-2.7, -3.0, -4.5):
        runs[f"EG eta=1 theta0={theta0:g}"] = own_run(problem, "eg", args.passes, theta0=theta0)
    for k in args.switch:
        runs[f"hybrid SMO x{k} -> EG"] = own_run(problem, "hybrid", args.passes, switch=k)
    for name, curve in runs.items():
        print(f"{name}: dual {curve['dual'][-1]:.6g} primal {curve['primal'][-1]:.6g} "
              f"({curve['seconds'][-1]:.2f} s)", flush=True)
    runs["EGStructuredSVM (default)"] = package_run((X, tags), "online", args.passes, args.C)
    runs["EGStructuredSVM working set"] = package_run((X, tags), "working_set", args.passes,
                                                      args.C)
    optimum = min(curve["primal"].min() for curve in runs.values())
    plot(runs, optimum, args)

    marks = [1, 2, 5, 10, 20, 50, args.passes]
    rows = []
    for name, curve in runs.items():
        rows.append([name] + [f"{at(curve, 'dual', m):.5g}" for m in marks]
                    + [f"{curve['passes'][-1]:.0f}", f"{curve['seconds'][-1]:.2f}",
                       first_certified(curve, 1e-2), first_certified(curve, 1e-3)])
    table = markdown_table(["solver"] + [f"dual @{m}" for m in marks]
                           + ["passes", "seconds", "gap 1e-2: passes / s",
                              "gap 1e-3: passes / s"], rows)
    noisy = (f" Load average {load:.2f} at the start (above 1.5: the seconds are noisy)."
             if load > 1.5 else "")
    body = (f"First 1,000 sentences of eng.train: {summary}. C = {args.C:g} (package "
            f"convention; the paper gives none). Best primal of any run: {optimum:.6g}. "
            f"Seconds: training only, one core.{noisy}\n\n{table}")
    print(body)
    record(f"Bartlett et al. 2004 section 5: EG against factored SMO on CoNLL-2003 (C={args.C:g})",
           body, f"cd benchmarks && python bench_eg_smo_conll2003.py --C {args.C:g}")


def plot(runs, optimum, args):
    fig, axes = plt.subplots(2, 2, figsize=(10, 7))
    axes = axes.ravel()
    panels = (("SMO", "EG eta=0.5", "EG eta=1"),
              ("SMO", "EG eta=1 theta0=-2.7", "EG eta=1 theta0=-3", "EG eta=1 theta0=-4.5"))
    for ax, names, title in zip(axes[:2], panels, ("(a) eta", "(b) initial theta, eta = 1")):
        for name in names:
            ax.plot(runs[name]["passes"], runs[name]["dual"], label=name)
        # symmetric log: EG's duals start far below 0 (the paper's axis shows 0 and above)
        ax.set_yscale("symlog", linthresh=10.0)
        ax.axhline(optimum, color="grey", lw=0.5)
        ax.set_ylim(top=2 * optimum)
        ax.set_title(f"Figure 4{title}")
        ax.set_xlabel("passes")
        ax.set_ylabel("dual objective")
        ax.legend(fontsize=7)
    for ax, x in zip(axes[2:], ("passes", "seconds")):
        for name, curve in runs.items():
            if name.startswith(("hybrid", "EGStructuredSVM", "SMO")):
                # (the accelerated working set's dual, at its proximal problem's alpha,
                # is negative at first)
                ax.semilogy(curve[x], np.maximum(optimum - curve["dual"], 1e-9) / optimum,
                            label=name)
        ax.set_xlabel(x)
        ax.set_ylabel("(best primal - dual) / best primal")
        ax.set_title(f"hybrid against EG and the working set, per {x.rstrip('s')}")
        ax.legend(fontsize=7)
    fig.suptitle(f"CoNLL-2003, first 1,000 sentences, C = {args.C:g}")
    fig.tight_layout()
    FIGURES.mkdir(parents=True, exist_ok=True)
    fig.savefig(FIGURES / f"fig4_smo_eg_C{args.C:g}.png", dpi=72)
    plt.close(fig)


if __name__ == "__main__":
    main()
