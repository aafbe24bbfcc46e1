"""How EG's passes run: online epochs in numba on one or more threads, batch passes on
chunks of examples that stay where they live (joblib workers, a dask cluster)."""

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import numpy as np
from joblib import effective_n_jobs

from ..structures._kernel import empty_scale, kernel_provides, specialize
from . import _eg_kernels
from ._eg_dual import LOSSES, MAX_HALVINGS, dual_terms, dual_weights, l2_dual, scaled
from ._kernel_shards import KernelShards
from ._objective import DOT_BLOCK_PARTS, score_losses


#: Kernel operations the online epoch needs.
ONLINE_KERNEL_OPERATIONS = ("part_scores", "add_features", "marginals")
#: ... and those that let it evaluate the hinge primal inside numba too.
HINGE_KERNEL_OPERATIONS = ("argmax", "encode")
#: The epoch kernel's ``gaps`` when its visits do not report their gaps.
NO_GAPS = np.zeros(0)


def online_threads(n_jobs, n_samples):
    """Threads of the online epoch: one per joblib worker, at most one per core."""
    if n_jobs in (None, 1):
        return 1
    return int(max(1, min(effective_n_jobs(n_jobs), os.cpu_count() or 1, n_samples)))


class OnlineEpoch:
    """Online epochs inside numba, through the structure's kernel operations.

    With ``n_threads > 1`` the examples are dealt to threads (example ``i`` to
    thread ``i % n_threads``, so that no two threads touch one example's dual
    variables) that run the epoch at once on one shared ``w`` without locks
    (asynchronous updates, as in Hogwild!): a step reads ``w`` with the other
    threads' latest steps in it.  Two threads adding to one weight at the same
    instant can lose an addition (weights every example touches, such as a
    chain's transitions, drift), so after each pass
    ``w`` is rebuilt exactly as ``w(alpha)`` from the marginals (one product
    with the feature map, each thread summing its examples' share): every pass
    starts from the exact ``w``, and every dual, primal and gap the solver
    reports is exact, and a fit needs about as many passes as on one thread
    (rebuilding only before gap evaluations needs more).  Threaded passes are
    not reproducible bit
    for bit (the threads' interleaving varies).  The gap evaluations run on the
    same threads (each example's loss is its own: no race), through the
    structure's numba loss kernels when it has their operations.

    The kernel data that the passes read live in :class:`KernelShards`: whole in memory,
    or, past ``cache_size`` megabytes, in shards on disk that a pass reads a window of
    shards at a time (it then visits the examples window by window,
    :meth:`KernelShards.windows`).
    """

    def __init__(self, datafit, n_threads=1, cache_size=None, cache_dir=None):
        structure, batch = datafit.structure, datafit.batch
        self.datafit = datafit
        self.n_threads = n_threads
        self.kernel = specialize(_eg_kernels.online_epoch, structure.kernel_ops)
        self.shards = KernelShards(structure, batch, cache_size, cache_dir)
        self.scale = (empty_scale() if datafit.feature_scale is None
                      else structure.kernel_weights(batch, datafit.feature_scale))
        self.features_kernel = None  # compiled for the first threaded pass
        # each thread's scratch weights for the epoch kernel (zero between its visits), made
        # once with numpy: numba's zeros in every epoch faulted in a whole weight vector;
        # and made here with np.zeros, whose pages take memory only where a kernel writes
        # (np.zeros_like writes them all; the token structures never touch theirs)
        layout = structure.kernel_weights(batch, np.zeros(batch.n_weights))
        self.w_scratch = [np.zeros(layout.shape, layout.dtype) for _ in range(n_threads)]
        del layout
        # whether the visits can give their examples' gaps (log loss), for the price of the
        # structure's own log-partition (not a whole marginals computation)
        self.visit_gaps = datafit.kind == "log" and kernel_provides(structure, "log_partition")
        # the gap evaluations' per-example losses in numba as well, on the epoch's
        # threads: called on a shard as (examples, data, offsets, vectors, w, scale, out, mu,
        # margins), the vectors those of ``_loss_vectors``
        self.loss_kernel = None
        if datafit.kind == "log":  # (online EG has marginals, hence log_partition)
            self.loss_kernel = specialize(_eg_kernels.log_losses, structure.kernel_ops)
            # the targets encoded example by example, where the structure can
            self.encoded_truth = not datafit.soft_truth and kernel_provides(structure, "encode")
        elif kernel_provides(structure, *HINGE_KERNEL_OPERATIONS):
            self.loss_kernel = specialize(_eg_kernels.hinge_losses, structure.kernel_ops)

    def _loss_vectors(self, shard):
        """The shard's slices of what the loss kernel reads of the targets: for the log loss
        their part vector (empty: encoded in the kernel) and outputs, for the hinge their
        part vector, part losses and loss offsets."""
        p = self.datafit
        if p.kind == "log":
            return (np.empty(0) if self.encoded_truth else p.truth[shard.parts], p.Y[shard.units])
        return p.truth[shard.parts], p.part_losses[shard.parts], shard.examples(p.loss_offsets)

    def primal(self, w, C, margins_of=None):
        """The primal objective at ``w``, as :meth:`StructuredLoss.primal` computes it.

        With ``margins_of`` (part marginals), return ``(primal, losses,
        margins)``: also the per-example losses and expected margins of
        :func:`example_losses`.
        """
        p = self.datafit
        if self.loss_kernel is None and margins_of is None:
            return p.primal(w, C)
        if self.loss_kernel is None:
            losses, margins = p.example_losses(w, margins_of=margins_of)
        else:
            losses, margins = np.empty(p.n_samples), np.empty(p.n_samples)
            w_kernel = p.structure.kernel_weights(p.batch, w)
            mu = np.empty(0) if margins_of is None else margins_of
            for shard in (shard for window in self.shards.walk() for shard in window):
                def share(examples, shard=shard):
                    self.loss_kernel(examples, shard.data, shard.part_offsets,
                                     shard.unit_offsets, *self._loss_vectors(shard), w_kernel,
                                     self.scale, shard.examples(losses),
                                     mu[shard.parts] if mu.shape[0] else mu,
                                     shard.examples(margins))
                    return 0

                self._on_threads(share, np.arange(shard.stop - shard.start, dtype=np.int64))
        primal = p.primal(w, C, losses=losses)
        return primal if margins_of is None else (primal, losses, margins)

    def run(self, state, order, budget, loss, adaptive, eta, C, gaps=None):
        """Visit the examples of ``order`` (at most ``budget`` steps tried) at ``C``; returns
        the steps tried.  With ``gaps`` (log loss), each visit to an example whose entry is
        negative writes there the example's share of the duality gap at the weights it finds."""
        p = self.datafit
        w_kernel = p.structure.kernel_weights(p.batch, state.w)
        smoothed = loss == "hinge" and state.beta is not None
        # (the log loss's step reads no part losses: they are not even computed for it)
        part_losses = np.empty(0) if loss == "log" else p.part_losses
        plan = self.shards.windows(order)
        tries = 0
        for (window, visits), loaded in zip(plan, self.shards.walk([k for k, _ in plan])):
            if tries >= budget:
                break
            shards = dict(zip(window, loaded))

            def epoch(share, left=budget - tries, n_visits=len(visits), shards=shards):
                # a thread's share of the window's visits and of the budget left, visited a
                # run of one shard's examples at a time
                thread = int(share[0] % self.n_threads) if len(share) else 0
                allowed = int(np.ceil(left * len(share) / max(n_visits, 1)))
                done = 0
                for k, local in self.shards.runs(share):
                    if done >= allowed:
                        break
                    shard = shards[k]
                    parts = shard.parts
                    done += self.kernel(
                        local, allowed - done,
                        _eg_kernels.SMOOTHED_HINGE if smoothed else LOSSES[loss],
                        adaptive, eta, MAX_HALVINGS, shard.data, shard.part_offsets,
                        part_losses[parts], shard.examples(p.sample_weight), C, w_kernel,
                        self.w_scratch[thread], self.scale, state.theta[parts],
                        state.mu[parts], shard.examples(state.terms),
                        shard.examples(state.etas), state.beta if smoothed else 0.0,
                        shard.examples(gaps) if gaps is not None else NO_GAPS,
                    )
                return done

            tries += self._on_threads(epoch, visits)
        if self.n_threads == 1:
            state.w = p.structure.contract_weights(p.batch, w_kernel)
        else:
            state.w = self.rebuilt_weights(state.mu, C)
        return tries

    def _on_threads(self, work, examples):
        """The sum of ``work(share)`` over the epoch's threads, example ``i`` in the share
        of thread ``i % n_threads``."""
        if self.n_threads == 1:
            return work(examples)
        with ThreadPoolExecutor(self.n_threads) as pool:
            return sum(pool.map(work, [examples[examples % self.n_threads == k]
                                       for k in range(self.n_threads)]))

    def rebuilt_weights(self, mu, C):
        """``w(alpha)`` from the marginals (:meth:`expected_features`)."""
        return dual_weights(self.datafit, None, C, self.expected_features(mu))

    def expected_features(self, mu):
        """``scale * sum_i s_i F_i mu_i`` in the structure's layout, summed on the epoch's
        threads from the passes' own kernel data (a structure may cache features for
        training there: a dependency parser's sibling templates are not hashed again)."""
        p = self.datafit
        if self.features_kernel is None:
            self.features_kernel = specialize(_eg_kernels.add_expected_features,
                                              p.structure.kernel_ops)
        expected = np.zeros(self.w_scratch[0].shape[0])
        for shard in (shard for window in self.shards.walk() for shard in window):
            def share(examples, shard=shard):
                # one thread adds to the sum itself, example after example: a fit streamed
                # from shards then starts from the weights of the fit in memory, bit for bit
                w = expected if self.n_threads == 1 else np.zeros_like(expected)
                self.features_kernel(examples, shard.data, shard.part_offsets,
                                     shard.unit_offsets, mu[shard.parts],
                                     shard.examples(p.sample_weight), self.scale, w)
                return w

            added = self._on_threads(share, np.arange(shard.stop - shard.start, dtype=np.int64))
            if added is not expected:
                expected += added
        return p.structure.contract_weights(p.batch, expected)

    def close(self):
        """Remove the shards written to disk, if any."""
        self.shards.close()


@dataclass
class _ChunkDual:
    """Batch EG's dual variables of one chunk of examples, kept where the chunk lives.

    A chunk keeps ``theta`` alone of the part vectors it can: the marginals are
    recomputed from it when the state is brought back (:func:`_chunk_parts`), and the
    part losses are kept for the hinge only.  ``scores`` are the part scores of the
    shared ``w`` (see :meth:`BatchPasses.share`) once the duality gap has been evaluated
    there, kept for the step that follows; None once the chunk has stepped.
    """

    structure: object
    batch: object
    y: np.ndarray
    part_losses: np.ndarray
    sample_weight: np.ndarray
    theta: np.ndarray
    scores: np.ndarray = None


def _chunk_dual(batch, theta, Y, sample_weight, structure, loss):
    part_losses = structure.part_losses(batch, Y) if loss == "hinge" else None
    return _ChunkDual(structure, batch, Y, part_losses, sample_weight, theta), None


def _chunk_uniform_dual(batch, Y, sample_weight, structure, loss):
    """The uniform start (``theta = 0``) of a chunk; its dual terms and ``F mu``."""
    theta = np.zeros(int(batch.part_offsets[-1]))
    mu, log_partition = structure.marginals(batch, theta)
    dual = _chunk_dual(batch, theta, Y, sample_weight, structure, loss)[0]
    terms = dual_terms(loss, mu, log_partition, theta, dual.part_losses, batch.part_offsets)
    return dual, (terms, structure.expected_features(batch, mu, sample_weight))


def _chunk_scores(dual, w_shared):
    """The chunk's part scores of the shared ``w``: the kept ones, if any."""
    if dual.scores is not None:
        return dual.scores
    return dual.structure.part_scores(dual.batch, w_shared)


def _chunk_evaluate(dual, w_shared, factor, loss):
    """The primal's losses of the chunk's examples at ``factor * w_shared``.

    The chunk keeps the part scores for the step (``w`` is linear in ``C``:
    ``factor`` carries a change of ``C`` since ``w`` was shared).
    """
    scores = _chunk_scores(dual, w_shared)
    losses, _ = score_losses(dual.structure, dual.batch,
                             scores if factor == 1.0 else factor * scores, dual.y, loss)
    return replace(dual, scores=scores), losses


def _add_scaled(y, a, x):
    """``y += a * x`` a block at a time (no temporary vector over all the parts)."""
    for start in range(0, len(y), DOT_BLOCK_PARTS):
        block = slice(start, start + DOT_BLOCK_PARTS)
        y[block] += a * x[block]


def _chunk_step(dual, w_shared, factor, step, loss):
    """Figure 1's step on one chunk from ``w = factor * w_shared``: new dual variables;
    their terms and ``F mu``.

    The new ``theta`` is made without temporaries over the parts: the step's peak holds the
    old and new ``theta``, the part scores (kept for a step tried again at a smaller rate)
    and the marginals.
    """
    structure, batch = dual.structure, dual.batch
    theta = np.multiply(_chunk_scores(dual, w_shared), step * factor)
    if loss == "log":  # (1 - step) theta + step scores
        _add_scaled(theta, 1.0 - step, dual.theta)
    else:  # theta + step (part losses + scores)
        _add_scaled(theta, step, dual.part_losses)
        _add_scaled(theta, 1.0, dual.theta)
    mu, log_partition = structure.marginals(batch, theta)
    terms = dual_terms(loss, mu, log_partition, theta, dual.part_losses, batch.part_offsets)
    new = replace(dual, theta=theta, scores=None)
    return new, (terms, structure.expected_features(batch, mu, dual.sample_weight))


def _chunk_parts(dual):
    return dual.theta, dual.structure.marginals(dual.batch, dual.theta)[0]


class BatchPasses:
    """Batch EG (Figure 1): every example steps at once; adaptive global rate.

    The dual variables live in chunks (:meth:`ExampleChunks.resident`): on a
    cluster each worker keeps its chunk's ``theta`` across passes, and this
    process holds no vector over the parts.  Each new ``w`` is shared with the
    chunks once (:meth:`share`); a step brings back every chunk's dual terms
    and one ``F mu``, summed on the workers; the primal is
    evaluated on the chunks too (:meth:`primal`), whose part scores the next
    step reuses: a pass ships ``w`` and scores the parts once, duality gap or
    not.  The dual variables come back into the state in :meth:`store` (the
    marginals recomputed from ``theta`` where they live).
    """

    def __init__(self, datafit, duals):
        self.datafit, self.duals = datafit, duals
        self.shared_C = None  # C of the w shared with the chunks; None: not shared yet

    @classmethod
    def from_state(cls, datafit, state):
        """The chunks take the dual variables of ``state`` (a warm start)."""
        duals, _ = datafit.chunks.resident(
            _chunk_dual, part_arrays=(state.theta,), **cls._per_chunk(datafit))
        return cls(datafit, duals)

    @classmethod
    def uniform(cls, datafit):
        """The chunks create the uniform start (a cold start): nothing of the size of
        the parts goes out to them or comes back.  Returns the runner, the start's dual
        terms and its ``F mu`` (see :func:`dual_weights`)."""
        duals, terms, expected = datafit.chunks.resident(
            _chunk_uniform_dual, **cls._per_chunk(datafit), summed=True)
        return cls(datafit, duals), np.concatenate(terms), scaled(datafit, expected)

    @staticmethod
    def _per_chunk(datafit):
        return dict(unit_arrays=(datafit.Y,), example_arrays=(datafit.sample_weight,),
                    shared=(datafit.structure, datafit.kind))

    def share(self, w, C):
        """Send ``w`` (of ``C``) to the chunks, for the evaluations and steps from it."""
        scale = self.datafit.feature_scale
        self.w_shared = self.datafit.chunks.share(w if scale is None else scale * w)
        self.shared_C = C

    def primal(self, w, C):
        """``P(w)`` at the current ``w = w(alpha)`` (of ``C``), from the chunks' part scores."""
        p = self.datafit
        if self.shared_C is None:
            self.share(w, C)
        self.duals, losses = p.chunks.advance(
            _chunk_evaluate, self.duals, shared=(self.w_shared, C / self.shared_C, p.kind))
        return p.primal(w, C, losses=np.concatenate(losses))

    def run(self, state, budget, loss, adaptive, eta, C):
        p = self.datafit
        if self.shared_C is None:
            self.share(state.w, state.C)
        step = state.eta if adaptive else eta
        old_dual = l2_dual(p, state.terms, state.w, C)
        tries = 0
        while tries < min(max(budget, 1), MAX_HALVINGS + 1):
            tries += 1
            duals, terms, expected = p.chunks.advance(
                _chunk_step, self.duals, shared=(self.w_shared, C / self.shared_C, step, loss),
                summed=True)
            terms = np.concatenate(terms)
            w = dual_weights(p, None, C, scaled(p, expected))
            if not adaptive or l2_dual(p, terms, w, C) >= old_dual:
                self.duals, state.terms, state.w = duals, terms, w
                self.share(w, C)
                step *= 1.05
                break
            # the refused step's dual variables are freed before the next try: on a worker
            # it would otherwise hold them beside the kept ones and the try's new ones
            del duals
            step *= 0.5
        if adaptive:
            state.eta = step
        return tries * p.n_samples

    def store(self, state):
        """Bring the chunks' dual variables back into ``state``."""
        parts = self.datafit.chunks.collect(self.duals, _chunk_parts)
        state.theta = np.concatenate([theta for theta, _ in parts])
        state.mu = np.concatenate([mu for _, mu in parts])
