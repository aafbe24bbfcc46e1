"""Passes of the working-set solver (:mod:`.working_set`), for any structure with kernels.

Example ``i``'s dual distribution is a mixture ``sum_k a_k`` of the outputs in its
working set (slot ``TRUTH`` holds the truth): each output ``k`` is kept as its part
vector ``z_k`` (sparse, in one pool of indices and values), its loss ``e_k``, and the
Gram matrix ``G_kl = g_k . g_l`` of the feature differences ``g_k = scale F_i (z_t -
z_k)``.  With the part scores ``s`` of the current ``w``, output ``k`` violates the
margin by ``m_k = e_k + s . (z_k - z_t)``; the dual's gradient in ``a_k`` is ``C s_i
m_k``.  A pairwise (SMO) step moves weight ``t`` from the least violated output ``l``
held with weight to the most violated ``b``, with the exact optimum ``t = (m_b - m_l)
/ (C s_i (G_bb + G_ll - 2 G_bl))`` clipped to ``a_l``; ``m`` follows from ``G``
without new scores, and ``w``, the marginals ``mu_i = sum_k a_k z_k`` and the
expected loss move once per visit.  :func:`working_set_pass` is a template like
:func:`._eg_kernels.online_epoch` (compiled per structure by ``specialize``).
"""

import numpy as np
from numba import njit

# flake8: noqa: F821

TRUTH = 0  # slot of the truth in every example's working set


@njit(cache=True, nogil=True, inline="always")
def _sparse_dot(dense, idx, val, start, length):
    """``dense . z`` for the pooled part vector ``z`` at ``start``."""
    total = 0.0
    for q in range(start, start + length):
        total += val[q] * dense[idx[q]]
    return total


@njit(cache=True, nogil=True, inline="always")
def _held_parts(i, count, atom_start, atom_len, pool_idx, seen, parts):
    """The parts (each once) of example ``i``'s outputs held into ``parts``; their number.
    ``seen`` (one flag per part) is False on entry and on exit."""
    n_held = 0
    for k in range(count):
        for q in range(atom_start[i, k], atom_start[i, k] + atom_len[i, k]):
            r = pool_idx[q]
            if not seen[r]:
                seen[r] = True
                parts[n_held] = r
                n_held += 1
    for j in range(n_held):
        seen[parts[j]] = False
    return n_held


@njit(cache=True, nogil=True, inline="always")
def _scatter(dense, idx, val, start, length, factor):
    """``dense += factor * z`` for the pooled part vector ``z`` at ``start``."""
    for q in range(start, start + length):
        dense[idx[q]] += factor * val[q]


@njit(cache=True, nogil=True, inline="always")
def _merge_lightest(i, count, room, atom_weight, atom_loss, atom_start, atom_len, pool_idx,
                    pool_val, pool_top, gram, m, coef):
    """Merge example ``i``'s two lightest outputs (the truth aside) into their weighted
    mean: a point of the marginal polytope that keeps the marginals (all the dual needs),
    its loss, violation and Gram row the same mean of theirs.  Returns the slot freed,
    or -1 when the pool cannot hold the mean and ``room`` more numbers.  ``coef`` (the
    example's parts) is zero on entry and on exit."""
    keep = -1
    freed = -1
    for k in range(1, count):
        if keep < 0 or atom_weight[i, k] < atom_weight[i, keep]:
            freed = keep
            keep = k
        elif freed < 0 or atom_weight[i, k] < atom_weight[i, freed]:
            freed = k
    total = atom_weight[i, keep] + atom_weight[i, freed]
    a1 = atom_weight[i, keep] / total
    a2 = atom_weight[i, freed] / total
    _scatter(coef, pool_idx, pool_val, atom_start[i, keep], atom_len[i, keep], a1)
    _scatter(coef, pool_idx, pool_val, atom_start[i, freed], atom_len[i, freed], a2)
    merged_nnz = 0
    for r in range(coef.shape[0]):
        if coef[r] != 0.0:
            merged_nnz += 1
    if pool_top[0] + merged_nnz + room > pool_idx.shape[0]:
        for r in range(coef.shape[0]):
            coef[r] = 0.0
        return -1
    q = pool_top[0]
    atom_start[i, keep] = q
    atom_len[i, keep] = merged_nnz
    pool_top[0] += merged_nnz
    for r in range(coef.shape[0]):
        if coef[r] != 0.0:
            pool_idx[q] = r
            pool_val[q] = coef[r]
            coef[r] = 0.0
            q += 1
    atom_loss[i, keep] = a1 * atom_loss[i, keep] + a2 * atom_loss[i, freed]
    m[keep] = a1 * m[keep] + a2 * m[freed]
    self_gram = (a1 * a1 * gram[i, keep, keep] + a2 * a2 * gram[i, freed, freed]
                 + 2.0 * a1 * a2 * gram[i, keep, freed])
    for k in range(count):
        value = a1 * gram[i, k, keep] + a2 * gram[i, k, freed]
        gram[i, k, keep] = value
        gram[i, keep, k] = value
    gram[i, keep, keep] = self_gram
    atom_weight[i, keep] = total
    atom_weight[i, freed] = 0.0
    atom_len[i, freed] = 0  # its old space is not reused
    return freed


@njit(cache=True, nogil=True, inline="always")
def _lightest_free_slot(i, count, atom_weight, m):
    """The slot for a new output of example ``i``: the next free one, else that of the
    least violated output of weight 0, else -1."""
    if count < atom_weight.shape[1]:
        return count
    slot = -1
    lowest = np.inf
    for k in range(1, count):
        if atom_weight[i, k] == 0.0 and m[k] < lowest:
            lowest = m[k]
            slot = k
    return slot


@njit(cache=True, nogil=True, inline="always")
def _store_output(i, slot, fresh, z, nnz, loss, atom_loss, atom_weight, atom_start, atom_len,
                  pool_idx, pool_val, pool_top):
    """Put the output of part vector ``z`` (``nnz`` non-zeros) and loss ``loss`` in example
    ``i``'s ``slot`` (``fresh``: one not used yet) with weight 0; False when the pool has
    no room for it."""
    if fresh or atom_len[i, slot] < nnz:
        if pool_top[0] + nnz > pool_idx.shape[0]:
            return False
        atom_start[i, slot] = pool_top[0]
        pool_top[0] += nnz
    q = atom_start[i, slot]
    for r in range(z.shape[0]):
        if z[r] != 0.0:
            pool_idx[q] = r
            pool_val[q] = z[r]
            q += 1
    atom_len[i, slot] = nnz
    atom_loss[i, slot] = loss
    atom_weight[i, slot] = 0.0
    return True


@njit(cache=True, nogil=True, inline="always")
def _set_gram_row(i, slot, count, change, atom_start, atom_len, pool_idx, pool_val, gram):
    """Row and column ``slot`` of example ``i``'s Gram matrix, from ``change``, the
    example's part scores of ``scale^2 F_i (z_t - z_slot)``."""
    t_dot = _sparse_dot(change, pool_idx, pool_val, atom_start[i, TRUTH], atom_len[i, TRUTH])
    for k in range(count):
        value = 0.0
        if k != TRUTH:
            value = t_dot - _sparse_dot(change, pool_idx, pool_val, atom_start[i, k],
                                        atom_len[i, k])
        gram[i, k, slot] = value
        gram[i, slot, k] = value


@njit(cache=True, nogil=True, inline="always")
def _pairwise_steps(i, count, c, max_steps, m, gram, atom_weight, delta):
    """Up to ``max_steps`` pairwise steps on example ``i``'s working set: ``atom_weight``
    and the violations ``m`` move, and ``delta`` (zero on entry) sums each output's
    change of weight."""
    for step in range(max_steps):
        b = 0
        low = -1
        for k in range(count):
            if m[k] > m[b]:
                b = k
            if atom_weight[i, k] > 0.0 and (low < 0 or m[k] < m[low]):
                low = k
        if b == low or m[b] - m[low] <= 1e-12 * (abs(m[b]) + abs(m[low]) + 1.0):
            return
        # the best step moving weight from the least to the most violated output
        curvature = c * (gram[i, b, b] + gram[i, low, low] - 2.0 * gram[i, b, low])
        t = atom_weight[i, low]
        if curvature > 0.0:
            t = min(t, (m[b] - m[low]) / curvature)
        atom_weight[i, b] += t
        atom_weight[i, low] -= t
        delta[b] += t
        delta[low] -= t
        for k in range(count):  # (rows of the symmetric Gram matrix: contiguous)
            m[k] -= c * t * (gram[i, b, k] - gram[i, low, k])


@njit(cache=True, nogil=True, inline="always")
def _marginal_change(i, count, p0, c, delta, atom_loss, atom_start, atom_len, pool_idx,
                     pool_val, mu, coef, held, held_values, n_held):
    """Apply the steps' changes of weight ``delta`` to example ``i``'s marginals ``mu``.

    Returns ``(n_changed, change of the expected loss)``; the parts whose marginal
    changed are compacted into the first ``n_changed`` of ``held`` (the parts of the
    outputs held), with ``-c`` times their change in ``held_values``: the outputs'
    shared parts cancel.  ``coef`` (the example's parts) is zero on entry and on exit.
    """
    change = 0.0
    for k in range(count):
        if delta[k] != 0.0:
            _scatter(coef, pool_idx, pool_val, atom_start[i, k], atom_len[i, k], delta[k])
            change += delta[k] * atom_loss[i, k]
    n_changed = 0
    for j in range(n_held):
        r = held[j]
        if coef[r] != 0.0:
            mu[p0 + r] += coef[r]
            held[n_changed] = r  # (n_changed <= j: compacted in place)
            held_values[n_changed] = -c * coef[r]
            n_changed += 1
            coef[r] = 0.0
    return n_changed, change


@njit(cache=True, nogil=True, inline="always")
def _violations(i, count, scores, atom_loss, atom_start, atom_len, pool_idx, pool_val, m):
    """Example ``i``'s violations ``m_k = e_k + s . (z_k - z_t)`` at the part scores
    ``scores``, into ``m``; returns ``(s . z_t, max_k m_k)``."""
    true_score = _sparse_dot(scores, pool_idx, pool_val, atom_start[i, TRUTH],
                             atom_len[i, TRUTH])
    best = -np.inf
    for k in range(count):
        m[k] = atom_loss[i, k] + _sparse_dot(scores, pool_idx, pool_val, atom_start[i, k],
                                             atom_len[i, k]) - true_score
        best = max(best, m[k])
    return true_score, best


@njit(cache=True, nogil=True, inline="always")
def _oracle_violation(z, scores, part_losses, p0, loss_offset, true_score):
    """The output of part vector ``z`` (the loss-augmented argmax) at the part scores
    ``scores``: ``(its non-zeros, its loss, its violation)``."""
    nnz = 0
    loss = loss_offset
    violation = loss_offset - true_score
    for r in range(z.shape[0]):
        if z[r] != 0.0:
            violation += z[r] * (scores[r] + part_losses[p0 + r])
            loss += z[r] * part_losses[p0 + r]
            nnz += 1
    return nnz, loss, violation


@njit(cache=True, nogil=True, inline="always")
def _slot_for_output(i, count, nnz, max_atoms, atom_weight, atom_loss, atom_start, atom_len,
                     pool_idx, pool_val, pool_top, gram, m, coef, out):
    """The slot of example ``i``'s working set for a new output of ``nnz`` non-zeros: a
    free one, that of the least violated output of weight 0, or the one freed by merging
    the two lightest once the sets hold ``max_atoms``.  -1 when the working sets
    (``out[0] = 1``) or the pool (``out[0] = 0``) must grow first."""
    slot = _lightest_free_slot(i, count, atom_weight, m)
    if slot < 0 and atom_weight.shape[1] < max_atoms:
        out[0] = 1.0
        return -1
    if slot < 0:
        slot = _merge_lightest(i, count, nnz, atom_weight, atom_loss, atom_start, atom_len,
                               pool_idx, pool_val, pool_top, gram, m, coef)
        if slot < 0:
            out[0] = 0.0
    return slot


@njit(cache=True, nogil=True, inline="always")
def _working_set_gap(i, count, c, m, atom_weight):
    """Example ``i``'s working-set gap ``c (max_k m_k - sum_k a_k m_k)``."""
    best = m[0]
    mean = 0.0
    for k in range(count):
        best = max(best, m[k])
        mean += atom_weight[i, k] * m[k]
    return c * max(best - mean, 0.0)


@njit(cache=True, nogil=True, inline="always")
def _largest_example(part_offsets, unit_offsets):
    """``(most parts, most units)`` of an example."""
    max_parts = 0
    max_units = 0
    for i in range(part_offsets.shape[0] - 1):
        max_parts = max(max_parts, part_offsets[i + 1] - part_offsets[i])
        max_units = max(max_units, unit_offsets[i + 1] - unit_offsets[i])
    return max_parts, max_units


def working_set_pass(examples, oracle, update, max_steps, max_atoms, data, part_offsets, unit_offsets,
                     part_losses, loss_offsets, sample_weight, C, w, scale, mu, terms, losses,
                     block_gaps, atom_count, atom_weight, atom_loss, atom_start, atom_len, pool_idx,
                     pool_val, pool_top, gram, w_scratch, out):
    """Visit ``examples`` in turn.

    With ``oracle``, one loss-augmented argmax per visit: its hinge loss into
    ``losses``, and the output joins the working set when it is more violated than
    every output held (into a free slot, the slot of the least violated output of
    weight 0, or, once the sets hold ``max_atoms``, the slot freed by merging the two
    lightest).  Every visit writes
    the example's working-set gap ``C s_i (max_k m_k - sum_k a_k m_k)`` into
    ``block_gaps``.  With ``update``, up to ``max_steps`` pairwise steps on the
    working set, applied to ``w`` (kernel layout), ``mu`` and ``terms`` (expected
    losses without offsets).  ``w_scratch`` (kernel weights' length) may hold
    anything: a step's curvature is the change of the scores of ``w_scratch`` when an
    atom's features are added to it, and the addition is taken back.

    Returns -1, or the position in ``examples`` where the pool of part vectors
    (``out[0] == 0``) or the working sets (``out[0] == 1``, fewer than ``max_atoms``
    slots) ran out: grow them and call again from there.
    """
    max_parts, max_units = _largest_example(part_offsets, unit_offsets)
    scores_buf = np.empty(max_parts)
    z_buf = np.empty(max_parts)
    before_buf = np.empty(max_parts)
    after_buf = np.empty(max_parts)
    coef_buf = np.zeros(max_parts)
    y_buf = np.empty(max_units, dtype=np.int64)
    seen = np.zeros(max_parts, dtype=np.bool_)
    held_buf = np.empty(max_parts, dtype=np.int64)
    held_values = np.empty(max_parts)
    score_scratch = np.empty(max_parts)
    feature_scratch = np.zeros(max_parts)
    K = atom_weight.shape[1]
    m = np.empty(K)
    delta = np.empty(K)
    for position in range(examples.shape[0]):
        i = examples[position]
        p0 = part_offsets[i]
        n_parts = part_offsets[i + 1] - p0
        c = C * sample_weight[i]
        scores = scores_buf[:n_parts]
        count = atom_count[i]
        n_held = -1  # not collected yet
        if oracle:
            part_scores_op(data, i, w, scale, scores)
        else:  # the scores of the parts of the outputs held, alone
            n_held = _held_parts(i, count, atom_start, atom_len, pool_idx, seen, held_buf)
            held = held_buf[:n_held]
            part_scores_at_op(data, i, w, scale, held, held_values[:n_held],
                              score_scratch[:n_parts])
            for j in range(n_held):
                scores[held[j]] = held_values[j]
        true_score, best = _violations(i, count, scores, atom_loss, atom_start, atom_len,
                                       pool_idx, pool_val, m)
        if oracle:
            z = z_buf[:n_parts]
            for r in range(n_parts):
                z[r] = scores[r] + part_losses[p0 + r]
            y_hat = y_buf[:unit_offsets[i + 1] - unit_offsets[i]]
            argmax_op(data, i, z, y_hat)
            encode_op(data, i, y_hat, z)
            nnz, loss, violation = _oracle_violation(z, scores, part_losses, p0,
                                                     loss_offsets[i], true_score)
            losses[i] = max(violation, 0.0)
            # a new output joins only if more violated than every output held (else it is
            # one of them)
            if violation > best + 1e-12 * (abs(violation) + abs(true_score) + 1.0):
                slot = _slot_for_output(i, count, nnz, max_atoms, atom_weight, atom_loss,
                                        atom_start, atom_len, pool_idx, pool_val, pool_top,
                                        gram, m, coef_buf[:n_parts], out)
                if slot < 0:
                    return position
                if not _store_output(i, slot, slot == count, z, nnz, loss, atom_loss,
                                     atom_weight, atom_start, atom_len, pool_idx, pool_val,
                                     pool_top):
                    out[0] = 0.0
                    return position
                m[slot] = violation
                if slot == count:
                    count += 1
                    atom_count[i] = count
                # Gram row: g_k . g_slot, g_k = scale F_i (z_t - z_k), from
                # F_i^T scale^2 F_i (z_t - z_slot): two score evaluations around an
                # addition to w_scratch, restored after
                coef = coef_buf[:n_parts]
                before = before_buf[:n_parts]
                after = after_buf[:n_parts]
                _scatter(coef, pool_idx, pool_val, atom_start[i, TRUTH], atom_len[i, TRUTH], 1.0)
                _scatter(coef, pool_idx, pool_val, atom_start[i, slot], atom_len[i, slot], -1.0)
                part_scores_op(data, i, w_scratch, scale, before)
                add_features_op(data, i, coef, scale, w_scratch)
                part_scores_op(data, i, w_scratch, scale, after)
                for r in range(n_parts):
                    after[r] -= before[r]
                    coef[r] = -coef[r]
                add_features_op(data, i, coef, scale, w_scratch)
                for r in range(n_parts):
                    coef[r] = 0.0
                _set_gram_row(i, slot, count, after, atom_start, atom_len, pool_idx, pool_val,
                              gram)
        block_gaps[i] = _working_set_gap(i, count, c, m, atom_weight)
        if not update or count < 2 or c == 0.0:
            continue
        for k in range(count):
            delta[k] = 0.0
        _pairwise_steps(i, count, c, max_steps, m, gram, atom_weight, delta)
        # w, the marginals and the expected loss move on the parts of the outputs held
        if n_held < 0:  # (an oracle visit may have added an output)
            n_held = _held_parts(i, count, atom_start, atom_len, pool_idx, seen, held_buf)
        n_changed, change = _marginal_change(i, count, p0, c, delta, atom_loss, atom_start,
                                             atom_len, pool_idx, pool_val, mu,
                                             coef_buf[:n_parts], held_buf, held_values, n_held)
        terms[i] += change
        add_features_at_op(data, i, held_buf[:n_changed], held_values[:n_changed], scale, w,
                           feature_scratch[:n_parts])
    return -1

