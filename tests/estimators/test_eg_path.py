"""eg_path draws from one random stream along the path."""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from sklearn_struct import EGCRF, eg_path


def test_path_continues_one_random_stream_and_returns_the_template_seed():
    rng = np.random.RandomState(3)
    X = rng.randn(40, 4)
    y = (X[:, 0] + 0.5 * rng.randn(40) > 0).astype(int)
    Cs = [0.5, 2.0, 8.0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        path = eg_path(EGCRF(random_state=0, tol=1e-6, max_iter=3), X, y, Cs)
        # the same path by hand, with one RandomState(0) for every C
        stream = np.random.RandomState(0)
        model = EGCRF(random_state=stream, tol=1e-6, max_iter=3, warm_start=True)
        passes = [model.set_params(C=C).fit(X, y).history_["passes"][-1] for C in Cs]
        # and re-seeded at every C, which is not what the path does
        reseeded = EGCRF(random_state=0, tol=1e-6, max_iter=3, warm_start=True)
        for C in Cs:
            reseeded.set_params(C=C).fit(X, y)
    np.testing.assert_array_equal(path["passes"], passes)
    np.testing.assert_allclose(path["estimator"].coef_, model.coef_)
    assert not np.allclose(path["estimator"].coef_, reseeded.coef_)
    assert path["estimator"].random_state == 0
