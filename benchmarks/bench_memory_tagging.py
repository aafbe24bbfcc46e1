"""Tagging memory: EGCRF against sklearn-crfsuite on UD English-EWT XPOS, same dict features.

Issue 45, item 4.  Every trainer runs in a child process under ``/usr/bin/time -v``, and
the peak resident set of that whole process is reported: reading the treebank, making
the token feature dicts, vectorising them (EGCRF: ``SequenceDictVectorizer``; CRFsuite
reads the dicts itself), training and tagging the test set are all inside it.  Two
feature sets, the same dicts for both trainers:

* ``window``: words in a window, ``column_window_features([forms], ["w"], window=2)``
  (the unigrams ``w[-2]`` .. ``w[2]`` and the bigrams of neighbouring words);
* ``rich``: ``conll_token_features(forms, window=1)`` (the word, its lower case,
  suffixes of 2 and 3 letters, shape, case and digit flags, and its neighbours'
  lower case and case flags), without POS tags (they are the target).

EGCRF runs online EG with the package's defaults (``C=1``, annealing, gap-sampled
visits, the chain with start and end parts) for ``--passes`` passes
(``max_iter``); sklearn-crfsuite runs L-BFGS with the same objective (``c1=0``,
``c2 = 1 / (2 C)``, all possible transitions) for ``--iterations`` iterations.
Seconds per pass are EGCRF's epochs (``history_["seconds"]``) and, apart, its gap
evaluations, divided by the passes; numba's compilation (or the loading of its cache) is
a fit on 5 sentences before the measured one, timed apart.  CRFsuite's seconds per
iteration are its training time divided by its iterations (L-BFGS evaluates the
objective and gradient about once per iteration).

``--stages`` runs EGCRF alone and prints the resident set's peak after each stage of its
process (load, dicts, vectorise, fit, predict): where the memory goes.

``--before PATH`` adds EGCRF as the package at ``PATH`` (another checkout, e.g. the main
branch before a change) runs it, in a child process of its own with ``PYTHONPATH=PATH``,
beside the same fit of this tree: memory, seconds per pass and accuracy side by side.  The
two EGCRF children run at the same time, so that both see the same load (on a shared
machine the load varies from minute to minute); each takes one core.

``--pruned`` adds, the same way, EGCRF on a ``PrunedChainStructure``: a tag dictionary
fitted on the training tokens (a word seen at least 5 times takes the tags it was seen
with, a rarer one the fallback of the rare words' most frequent tags), whose weights are
the (feature, candidate tag) pairs of the training tokens, as CRFsuite's model without
``all_possible_states`` has them, and whose transition parts are those between
neighbouring tokens' candidates.

Run from benchmarks/:
    python bench_memory_tagging.py --passes 10 --iterations 100
"""

import argparse
import json
import os
import re
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _child import finish_worker, start_worker  # noqa: E402
from _record import markdown_table, record  # noqa: E402

DATA = HERE.parents[1] / "shared" / "data" / "ud_en_ewt_r2.16"
C = 1.0
FEATURES = ("window", "rich")
#: The feature that names a token's word, for the tag dictionary of ``--pruned``.
WORD_COLUMN = {"window": "w[0]", "rich": "word"}


def rss_gb():
    """(current, peak) resident set of this process, in GB (10^9 bytes)."""
    status = Path("/proc/self/status").read_text()
    now = int(re.search(r"VmRSS:\s+(\d+)", status).group(1))
    peak = int(re.search(r"VmHWM:\s+(\d+)", status).group(1))
    return now * 1024 / 1e9, peak * 1024 / 1e9


def token_dicts(forms, features):
    from sklearn_struct.preprocessing import column_window_features, conll_token_features

    if features == "window":
        return [column_window_features([f], ["w"], window=2) for f in forms]
    return [conll_token_features(f, window=1) for f in forms]


def worker(job):
    """One trainer; prints a JSON line (the parent adds the peak RSS from ``time -v``)."""
    from sklearn.exceptions import ConvergenceWarning

    from sklearn_struct.datasets import load_conllu
    from sklearn_struct.metrics import token_accuracy_score

    warnings.simplefilter("ignore", ConvergenceWarning)
    stages = {}
    start = time.perf_counter()
    train = load_conllu(DATA / "en_ewt-ud-train.conllu.gz")
    test = load_conllu(DATA / "en_ewt-ud-test.conllu.gz")
    y_train, y_test = train.xpos, test.xpos
    stages["load"] = rss_gb()
    X_train = token_dicts(train.form, job["features"])
    X_test = token_dicts(test.form, job["features"])
    del train, test
    stages["dicts"] = rss_gb()
    result = {"sentences": len(X_train), "tokens": sum(map(len, X_train))}
    if job["trainer"] in ("egcrf", "pruned"):
        from sklearn_struct import EGCRF
        from sklearn_struct.preprocessing import SequenceDictVectorizer
        from sklearn_struct.structures import ChainStructure, PrunedChainStructure

        vectorizer = SequenceDictVectorizer().fit(X_train)
        X_train = vectorizer.transform(X_train)
        X_test = vectorizer.transform(X_test)
        stages["vectorise"] = rss_gb()
        result["features"] = len(vectorizer.feature_names_)
        structure = ChainStructure()
        if job["trainer"] == "pruned":
            prefix = WORD_COLUMN[job["features"]] + "="
            structure = PrunedChainStructure(word_features=sorted(
                j for name, j in vectorizer.vocabulary_.items() if name.startswith(prefix)))
        del vectorizer
        clock = time.perf_counter()
        # compile, or load the kernels
        EGCRF(structure=structure, max_iter=1).fit(X_train[:5], y_train[:5])
        result["compile_seconds"] = time.perf_counter() - clock
        clock = time.perf_counter()
        model = EGCRF(structure=structure, max_iter=job["passes"],
                      random_state=0).fit(X_train, y_train)
        result["fit_seconds"] = time.perf_counter() - clock
        stages["fit"] = rss_gb()
        history = model.history_
        passes = float(history["passes"][-1])
        result["passes"] = passes
        result["pass_seconds"] = float(history["seconds"].sum()) / passes
        result["eval_seconds"] = float(history["eval_seconds"].sum()) / passes
        result["relative_gap"] = float(history["gap"][-1] / abs(history["primal"][-1]))
        result["final_C"] = float(history["C"][-1])
    else:
        from sklearn_crfsuite import CRF

        model = CRF(algorithm="lbfgs", c1=0.0, c2=1.0 / (2.0 * C),
                    max_iterations=job["iterations"], all_possible_transitions=True)
        clock = time.perf_counter()
        model.fit(X_train, y_train)
        result["fit_seconds"] = time.perf_counter() - clock
        result["pass_seconds"] = result["fit_seconds"] / job["iterations"]
        stages["fit"] = rss_gb()
        result["features"] = len(model.attributes_)
    predicted = model.predict(X_test)
    stages["predict"] = rss_gb()
    result["test_accuracy"] = 100 * token_accuracy_score(y_test, predicted)
    result["seconds"] = time.perf_counter() - start
    result["stages"] = stages
    print(json.dumps(result))


def start(trainer, features, args, package=None):
    """A trainer started in a child process under ``/usr/bin/time -v`` (:func:`run` waits for it).

    ``package``: the folder the child imports ``sklearn_struct`` from (None: this tree)."""
    job = {"trainer": trainer, "features": features, "passes": args.passes,
           "iterations": args.iterations}
    root = str(HERE.parent if package is None else Path(package).resolve())
    return start_worker(__file__, job, f"{trainer} {features} ({root})", cwd=HERE,
                        env={**os.environ, "PYTHONPATH": root})


def run(trainer, features, args, package=None):
    """A trainer in a child process under ``/usr/bin/time -v``; its JSON plus peak RSS."""
    return finish_worker(start(trainer, features, args, package))


def compare(args):
    rows = []
    for features in args.features:
        # the EGCRF fits at the same time, one core each: the same load
        children = {"egcrf": start("egcrf", features, args)}
        if args.before:
            children["before"] = start("egcrf", features, args, package=args.before)
        if args.pruned:
            children["pruned"] = start("pruned", features, args)
        found = {name: finish_worker(child) for name, child in children.items()}
        found["crfsuite"] = run("crfsuite", features, args)
        for trainer, r in found.items():
            print(features, trainer, json.dumps(r), flush=True)
        labels = {"before": f"EGCRF at {args.before}, {args.passes} passes",
                  "egcrf": f"EGCRF, online EG, {args.passes} passes",
                  "pruned": f"EGCRF, pruned chain (tag dictionary), {args.passes} passes",
                  "crfsuite": f"sklearn-crfsuite L-BFGS, {args.iterations} iterations"}
        for trainer, r in found.items():
            is_eg = trainer != "crfsuite"
            ratio = r["peak_rss_gb"] / found["crfsuite"]["peak_rss_gb"]
            rows.append([
                features, labels[trainer], r["features"], f"{r['peak_rss_gb']:.2f}",
                f"{ratio:.2f}", f"{r['pass_seconds']:.2f}",
                f"{r['eval_seconds']:.2f}" if is_eg else "",
                f"{r['compile_seconds']:.1f}" if is_eg else "",
                f"{r['test_accuracy']:.2f}"])
    r = found["egcrf"]
    return (
        f"UD English-EWT r2.16 XPOS: {r['sentences']} training sentences, {r['tokens']} "
        f"tokens, 49 tags; test accuracy on the test set.  Load average {args.load:.2f} at "
        "the start (the timings, not the memory, depend on it).  Peak RSS: the whole child "
        "process (reading, feature dicts, vectorising, training, tagging), from "
        "`/usr/bin/time -v`.  EGCRF's s/pass are its epochs; the gap evaluations' share "
        "per pass apart; compile: numba's compilation or cache load (5 sentences).  "
        "CRFsuite's s/pass: training seconds per L-BFGS iteration.\n\n"
        + markdown_table(["features", "trainer", "input features", "peak RSS GB",
                          "against CRFsuite", "s/pass", "gap evaluation s/pass", "compile s",
                          "test accuracy %"], rows))


def stages(args):
    rows = []
    trees = [("this tree", None)] + ([(args.before, args.before)] if args.before else [])
    for features in args.features:
        for name, package in trees:
            r = run("egcrf", features, args, package=package)
            print(features, name, json.dumps(r), flush=True)
            for stage, (now, peak) in r["stages"].items():
                rows.append([features, name, stage, f"{now:.2f}", f"{peak:.2f}"])
            rows.append([features, name, "whole process (time -v)", "",
                         f"{r['peak_rss_gb']:.2f}"])
    return markdown_table(["features", "EGCRF of", "after stage", "RSS GB",
                           "peak RSS so far GB"], rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--passes", type=int, default=10)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--features", nargs="+", choices=FEATURES, default=list(FEATURES))
    parser.add_argument("--stages", action="store_true",
                        help="EGCRF alone: the peak resident set after each stage")
    parser.add_argument("--before", help="also run EGCRF from the package at this folder")
    parser.add_argument("--pruned", action="store_true",
                        help="also run EGCRF on a PrunedChainStructure (a tag dictionary of "
                        "the words' training tags)")
    parser.add_argument("--no-record", action="store_true", help="print, do not record")
    args = parser.parse_args()
    if args.before and args.pruned:
        parser.error("--before and --pruned each add an EGCRF fit beside this tree's: "
                     "give one (the fits run at the same time, one core each)")
    if args.worker:
        worker(json.loads(args.worker))
        return
    args.load = os.getloadavg()[0]
    section = "EGCRF's memory by stage" if args.stages else "Peak memory of tagging EWT XPOS"
    body = stages(args) if args.stages else compare(args)
    print(body)
    if not args.no_record:
        record(section, body, " ".join(["cd benchmarks && python bench_memory_tagging.py"]
                                       + sys.argv[1:]))


if __name__ == "__main__":
    main()
