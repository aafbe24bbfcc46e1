"""The taggers of a pipeline from word forms: their two token feature sets, side by side.

:class:`~sklearn_struct.parsing.DependencyPipeline` tags UPOS and XPOS before it parses,
each column by an averaged :class:`~sklearn_struct.StructuredPerceptron` of 10 epochs over
a chain (the pipeline's default tagger), reading the word forms through its
``tag_features``: ``"conll"``, :func:`~sklearn_struct.preprocessing.conll_token_features`
with two neighbours on each side, or ``"pos"``,
:func:`~sklearn_struct.parsing.pos_token_features`.  Each tagger is trained on UD
English-EWT train and scored on dev and test (accuracy over words); the time to predict
test counts the features, their vectorisation and the tagging, the least of five runs,
with the cyclic garbage collector paused as the pipeline pauses it.

Run from benchmarks/ (about 5 minutes)::

    python bench_pipeline_taggers.py
"""

import argparse
import gc
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _ab import fastest  # noqa: E402
from _record import markdown_table, record  # noqa: E402

from sklearn_struct import StructuredPerceptron  # noqa: E402
from sklearn_struct.datasets import load_conllu  # noqa: E402
from sklearn_struct.parsing import TAGGER_WINDOW, pos_token_features  # noqa: E402
from sklearn_struct.preprocessing import (SequenceDictVectorizer,  # noqa: E402
                                          conll_token_features)

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "ud_en_ewt_r2.16"
FEATURES = {"conll": lambda words: conll_token_features(words, window=TAGGER_WINDOW),
            "pos": pos_token_features}


def tagger_run(kind, column, split):
    """Fit one tagger on train; its dev and test accuracy, fit seconds and test speed."""
    features = FEATURES[kind]
    vectorizer = SequenceDictVectorizer()
    X_train = vectorizer.fit_transform([features(list(words)) for words in split["train"].form])
    labels = [np.asarray(y, dtype=str) for y in getattr(split["train"], column)]
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tagger = StructuredPerceptron(max_iter=10, random_state=0).fit(X_train, labels)
    fit_seconds = time.perf_counter() - started
    row = {"fit s": fit_seconds, "features": len(vectorizer.feature_names_)}
    for name in ("dev", "test"):
        forms = [list(words) for words in split[name].form]
        gc.disable()  # (as DependencyPipeline does while it builds feature dicts)
        seconds, predicted = fastest(
            lambda: tagger.predict(vectorizer.transform([features(w) for w in forms])),
            repeat=5 if name == "test" else 1)
        gc.enable()
        gold = np.concatenate([np.asarray(y, dtype=str) for y in getattr(split[name], column)])
        row[name] = 100 * np.mean(np.concatenate(predicted) == gold)
    row["sentences/s"] = len(forms) / seconds  # (test's)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    split = {name: load_conllu(DATA / f"en_ewt-ud-{name}.conllu.gz")
             for name in ("train", "dev", "test")}
    with warnings.catch_warnings():  # (a warm-up that compiles or loads the kernels)
        warnings.simplefilter("ignore")
        StructuredPerceptron(max_iter=1).fit(
            SequenceDictVectorizer().fit_transform([pos_token_features(["a", "b"])]),
            [np.array(["X", "Y"])])
    rows = []
    for column in ("upos", "xpos"):
        for kind in FEATURES:
            run = tagger_run(kind, column, split)
            rows.append([column.upper(), kind, f"{run['dev']:.2f}", f"{run['test']:.2f}",
                         str(run["features"]), f"{run['fit s']:.1f}",
                         f"{run['sentences/s']:.0f}"])
            print(*rows[-1], sep="  ", flush=True)
    body = markdown_table(["column", "tag_features", "dev accuracy %", "test accuracy %",
                           "features", "fit s", "test sentences/s"], rows)
    body += ("\n\nUD English-EWT, one averaged perceptron of 10 epochs per column and feature "
             "set, trained on train (12,544 sentences), scored over every word of dev and "
             "test. 'test sentences/s': features, vectorisation and tagging of test (2,077 "
             "sentences), the least time of five, the garbage collector paused. Load average "
             f"when the run started: {load:.2f} (2 cores).")
    if not args.no_record:
        record("Taggers of the pipeline from word forms, by token features", body,
               "python bench_pipeline_taggers.py")


if __name__ == "__main__":
    main()
