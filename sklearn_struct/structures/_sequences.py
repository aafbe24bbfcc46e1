"""What the structures over sequences of feature rows share: their ``make_batch``."""

from ._base import BaseStructure
from ._batch import check_n_states, stack_ragged_rows

__all__ = ["SequenceInputs"]


class SequenceInputs(BaseStructure):
    """Base of structures whose inputs are sequences of feature rows, one state per row.

    A subclass gives ``_batch(X, unit_offsets, n_states)``, which builds its batch from
    the stacked rows and checks its settings against ``n_states``: ``make_batch`` and
    ``take`` both build through it.
    """

    def make_batch(self, X, n_states=None):
        """Validate the sequences of a data set and build their batch.

        Parameters
        ----------
        X : list of array-like or sparse matrix of shape (n_rows_i, n_features)
            One 2-D matrix per sequence, a row per token (frame), every one with the
            same number of columns and at least one row.
        n_states : int
            Number of output states, fixed by the estimator from the training labels.

        Returns
        -------
        batch : batch object
            The stacked rows (``X``) with their ``unit_offsets`` and what the structure
            derives from them.

        Raises
        ------
        ValueError or TypeError
            For malformed input, naming the offending sequence, or a missing or
            invalid ``n_states``.
        """
        n_states = check_n_states(n_states, type(self).__name__)
        rows, unit_offsets = stack_ragged_rows(X, what="sequence")
        return self._batch(rows, unit_offsets, n_states)
