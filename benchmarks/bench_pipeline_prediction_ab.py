"""A pipeline's prediction from word forms, by a baseline commit and by this tree.

:class:`~sklearn_struct.parsing.DependencyPipeline` (UPOS and XPOS taggers, a parser of
first or second order, the relation labeller; averaged perceptrons, ``2 ** 23`` hashed
weights, 2 folds for the jackknifed tags) is fitted once on UD English-EWT train by this
tree and saved with :func:`sklearn_struct.persistence.dump`.  Fresh processes, alternating
between the baseline (checked out by ``git worktree``) and this tree, load each model and
predict EWT test from its word forms three times (after a prediction of five sentences
that compiles or loads the kernels); the least time counts.  The table gives the least and
the median sentences per second over the rounds, and whether both versions predicted the
same trees and tags.

Run from benchmarks/ (about 10 minutes)::

    python bench_pipeline_prediction_ab.py --baseline bf646ae [--rounds 3] [--n-train N]
"""

import hashlib
import json
import os
import sys
import tempfile
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _treebank(data, name):
    from sklearn_struct.datasets import load_conllu

    treebank = load_conllu(Path(data) / f"en_ewt-ud-{name}.conllu.gz")
    return [list(form) for form in treebank.form], treebank


def fit_models(data, folder, n_train):
    """Fit the pipeline of each order on EWT train (its first ``n_train`` sentences, or all)
    and save it into ``folder``."""
    from sklearn.exceptions import ConvergenceWarning

    from sklearn_struct.parsing import DependencyPipeline
    from sklearn_struct.persistence import dump

    forms, train = _treebank(data, "train")
    y = [{"upos": u, "xpos": x, "head": h, "deprel": d}
         for u, x, h, d in zip(train.upos, train.xpos, train.head, train.deprel)]
    forms, y = forms[:n_train], y[:n_train]
    paths = {}
    for order in (1, 2):
        pipeline = DependencyPipeline(tags=("upos", "xpos"), second_order=order == 2,
                                      hash_bits=23, n_folds=2, n_jobs=2, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            pipeline.fit(forms, y)
        paths[f"order {order}"] = str(Path(folder) / f"pipeline_{order}.skstruct")
        dump(pipeline, paths[f"order {order}"])
    return paths


def worker(args):
    """Predict EWT test with each saved model; print JSON ``{order: [s, digest]}``."""
    sys.path.insert(0, str(HERE))
    from _ab import fastest

    from sklearn_struct.persistence import load

    forms, _ = _treebank(args["data"], "test")
    out = {}
    for name, path in args["models"].items():
        pipeline = load(path)
        pipeline.predict(forms[:5])
        seconds, predicted = fastest(lambda: pipeline.predict(forms))
        digest = hashlib.sha256(json.dumps(
            [{key: [str(v) for v in value] for key, value in sorted(p.items())}
             for p in predicted]).encode()).hexdigest()[:16]
        out[name] = [seconds, digest, len(forms)]
    print(json.dumps(out))


def main():
    sys.path.insert(0, str(HERE))
    from _ab import agree, alternate, ewt_arguments, least_and_median
    from _record import markdown_table, record

    cli = ewt_arguments(__doc__, "fit on the first N training sentences (default: all)")
    if cli.worker is not None:
        return worker(json.loads(cli.worker))

    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as folder:
        models = fit_models(cli.data, folder, cli.n_train)
        args = dict(data=str(cli.data.resolve()), models=models)
        base_rev, results = alternate(__file__, cli.baseline, cli.rounds, args)
    rows = []
    for name in models:
        least, median = least_and_median(results, lambda run: [run[name][0]])
        n = results["candidate"][0][name][2]
        rows.append([name, f"{n / least['baseline']:.0f}", f"{n / least['candidate']:.0f}",
                     f"{least['baseline'] / least['candidate']:.3f}",
                     f"{median['baseline'] / median['candidate']:.3f}",
                     "yes" if agree(results, name) else "no"])
    table = markdown_table(["pipeline", f"sentences/s {base_rev}", "sentences/s working tree",
                            "speed-up (least)", "speed-up (median)", "same output"], rows)
    fitted = "" if cli.n_train is None else f" (fitted on the first {cli.n_train} sentences)"
    body = (f"{table}\n\nThe whole prediction{fitted} of EWT test from its word forms (taggers, "
            "parser, relation labeller), one process, in sentences per second: the fastest of "
            f"three predictions in each of {cli.rounds} alternating fresh processes per "
            "version (speed-ups: of the least times, and of the medians).  'same output': "
            "every process predicted the same tags, heads and relations.  Load average at the "
            f"start: {load:.2f}, at the end: {os.getloadavg()[0]:.2f}.")
    print(body)
    if cli.no_record:
        return
    record(f"A pipeline's prediction against {base_rev}", body,
           "cd benchmarks && python bench_pipeline_prediction_ab.py" + "".join(
               f" {a}" for a in sys.argv[1:]))


if __name__ == "__main__":
    main()
