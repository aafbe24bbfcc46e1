"""Chain inference throughput: numba kernels vs a vectorised numpy reference.

Forward-backward (node marginals, summed transition marginals, log Z) and
Viterbi over whole batches of ChainStructure part scores, on

* OCR-like batches: 26 labels, 128 dense binary pixel features, lengths 4-12 (mean 8);
* CoNLL-like batches: 23 labels, 20000 sparse features with 15 active per token,
  lengths 10-38 (mean 24).

The numpy reference is the textbook log-space recursion, vectorised over labels
(and over positions for the edge marginals), looping over positions and
sequences in Python.  Both sides get the same part scores; their results are
checked to agree before timing.  numba compilation time is measured in a
subprocess with an empty cache directory and reported separately; steady-state
times are the best of several repeats.

Run from the benchmarks/ directory::

    python bench_chain_inference.py [--quick]
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import scipy.sparse as sp

from sklearn_struct.structures import ChainStructure

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _record import markdown_table, record  # noqa: E402


# ----------------------------------------------------------- numpy reference
def _logsumexp(a, axis):
    top = a.max(axis=axis, keepdims=True)
    return (top + np.log(np.exp(a - top).sum(axis=axis, keepdims=True))).squeeze(axis)


def numpy_forward_backward(node, transition, start, end):
    """Log-space forward-backward of one chain, vectorised over labels."""
    T, K = node.shape
    log_alpha = np.empty((T, K))
    log_beta = np.empty((T, K))
    log_alpha[0] = start + node[0]
    for t in range(1, T):
        log_alpha[t] = node[t] + _logsumexp(log_alpha[t - 1][:, None] + transition, axis=0)
    log_beta[T - 1] = end
    for t in range(T - 2, -1, -1):
        log_beta[t] = _logsumexp(transition + (node[t + 1] + log_beta[t + 1])[None, :], axis=1)
    log_z = _logsumexp(log_alpha[T - 1] + end, axis=0)
    node_marginals = np.exp(log_alpha + log_beta - log_z)
    edges = np.exp(
        log_alpha[:-1, :, None] + transition[None] + (node[1:] + log_beta[1:])[:, None, :] - log_z
    )
    return node_marginals, edges.sum(axis=0), log_z


def numpy_viterbi(node, transition, start, end):
    """Max-product Viterbi of one chain, vectorised over labels."""
    T, K = node.shape
    best = start + node[0]
    backpointers = np.empty((T, K), dtype=np.int64)
    for t in range(1, T):
        candidates = best[:, None] + transition
        backpointers[t] = candidates.argmax(axis=0)
        best = candidates.max(axis=0) + node[t]
    labels = np.empty(T, dtype=np.int64)
    labels[T - 1] = np.argmax(best + end)
    for t in range(T - 1, 0, -1):
        labels[t - 1] = backpointers[t, labels[t]]
    return labels


def numpy_batch(batch, scores, function):
    """Apply a single-chain numpy function to every sequence of a batch."""
    K = batch.n_states
    results = []
    for i in range(batch.n_samples):
        T = batch.lengths[i]
        p = batch.part_offsets[i]
        node = scores[p:p + T * K].reshape(T, K)
        transition = scores[p + T * K:p + T * K + K * K].reshape(K, K)
        start = scores[p + T * K + K * K:p + T * K + K * K + K]
        end = scores[p + T * K + K * K + K:p + T * K + K * K + 2 * K]
        results.append(function(node, transition, start, end))
    return results


# ------------------------------------------------------------------ data
def ocr_like(n_sequences, rng):
    lengths = rng.randint(4, 13, size=n_sequences)
    X = [(rng.rand(T, 128) < 0.3).astype(np.float64) for T in lengths]
    return X, 26


def conll_like(n_sequences, rng):
    n_features, active = 20000, 15
    lengths = rng.randint(10, 39, size=n_sequences)
    X = []
    for T in lengths:
        indices = np.concatenate([rng.choice(n_features, active, replace=False) for _ in range(T)])
        indptr = np.arange(T + 1) * active
        X.append(sp.csr_matrix((np.ones(T * active), indices, indptr), shape=(T, n_features)))
    return X, 23


def best_time(function, repeats):
    times = []
    for _ in range(repeats):
        tic = time.perf_counter()
        function()
        times.append(time.perf_counter() - tic)
    return min(times)


COMPILE_SNIPPET = """
import time, numpy as np, scipy.sparse as sp
tic = time.perf_counter()
from sklearn_struct.structures import ChainStructure
structure = ChainStructure()
for X in ([np.ones((3, 4)), np.ones((1, 4))], [sp.csr_matrix(np.ones((3, 4)))]):
    batch = structure.make_batch(X, 3)
    scores = structure.part_scores(batch, np.ones(batch.n_weights))
    structure.marginals(batch, scores)
    structure.argmax(batch, scores)
print(time.perf_counter() - tic)
"""


def first_call_seconds(cache_dir):
    """Import + first calls in a fresh process using ``cache_dir`` as numba cache."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    out = subprocess.run([sys.executable, "-c", COMPILE_SNIPPET], env=env, check=True,
                         capture_output=True, text=True)
    return float(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller batches, fewer repeats")
    args = parser.parse_args()
    rng = np.random.RandomState(0)
    repeats = 2 if args.quick else 7
    load = os.getloadavg()[0]
    scale = 4 if args.quick else 1

    with tempfile.TemporaryDirectory() as cache_dir:
        compile_seconds = first_call_seconds(cache_dir)
        cached_seconds = first_call_seconds(cache_dir)
    print(f"numba first call (import + compile, empty cache): {compile_seconds:.2f} s; "
          f"with a warm on-disk cache: {cached_seconds:.2f} s")

    structure = ChainStructure()
    rows = []
    for name, (X, K) in [
        ("OCR-like", ocr_like(2000 // scale, rng)),
        ("CoNLL-like", conll_like(600 // scale, rng)),
    ]:
        batch = structure.make_batch(X, K)
        w = 0.1 * rng.randn(batch.n_weights)
        scores = structure.part_scores(batch, w)
        n_tokens = int(batch.unit_offsets[-1])

        # agreement before timing
        mu, log_z = structure.marginals(batch, scores)
        labels = structure.argmax(batch, scores)
        reference = numpy_batch(batch, scores, numpy_forward_backward)
        node_index = batch.node_part_starts[:, None] + np.arange(K)
        transition_index = batch.transition_part_starts[:, None] + np.arange(K * K)
        max_diff = max(
            np.abs(mu[node_index] - np.concatenate([r[0] for r in reference])).max(),
            np.abs(mu[transition_index] - np.array([r[1].ravel() for r in reference])).max(),
            np.abs(log_z - np.array([r[2] for r in reference])).max(),
        )
        reference_labels = np.concatenate(numpy_batch(batch, scores, numpy_viterbi))
        assert max_diff < 1e-9, max_diff
        assert np.array_equal(labels, reference_labels)

        for op, numba_call, numpy_function in [
            ("forward-backward", lambda: structure.marginals(batch, scores),
             numpy_forward_backward),
            ("Viterbi", lambda: structure.argmax(batch, scores), numpy_viterbi),
        ]:
            numba_seconds = best_time(numba_call, repeats)
            numpy_seconds = best_time(lambda: numpy_batch(batch, scores, numpy_function),
                                      repeats)
            rows.append([
                name, f"{batch.n_samples} seq / {n_tokens} tok, K={K}", op,
                f"{n_tokens / numba_seconds:,.0f}", f"{n_tokens / numpy_seconds:,.0f}",
                f"{numpy_seconds / numba_seconds:.0f}x",
            ])
        print(f"{name}: numba vs numpy max |difference| of marginals / log Z = {max_diff:.1e}, "
              "Viterbi labels identical")

    header = ["batch", "size", "operation", "numba tokens/s", "numpy tokens/s", "speed-up"]
    table = markdown_table(header, rows)
    print(table)
    body = (
        f"{table}\n\nnumba steady state (best of {repeats}) through `ChainStructure.marginals` / "
        "`argmax` (one kernel call per batch, including input checks); numpy reference: "
        "log-space recursion vectorised over labels, Python loop over positions and sequences. "
        f"First call in a fresh process (import + numba compilation, empty cache): "
        f"{compile_seconds:.1f} s; with a warm on-disk cache: {cached_seconds:.1f} s. "
        f"Load average when the run started: {load:.1f} (shared machine; both sides are "
        "timed in the same process, interleaved per batch)."
    )
    command = "python bench_chain_inference.py" + (" --quick" if args.quick else "")
    record("Chain inference throughput", body, command)


if __name__ == "__main__":
    main()
