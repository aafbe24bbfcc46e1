"""The token kernels' weight layout: a blocked transpose, against numpy's."""

import numpy as np
import pytest

from sklearn_struct.structures._token_kernels import feature_major, label_major


@pytest.mark.parametrize("n_states, n_features, tail", [(1, 1, 0), (3, 200, 7), (51, 130, 0),
                                                        (7, 64, 3), (2, 65, 11)])
def test_feature_major_is_the_transposed_head_and_label_major_its_inverse(
        n_states, n_features, tail):
    rng = np.random.RandomState(n_states * n_features + tail)
    w = rng.randn(n_states * n_features + tail)
    kernel = feature_major(w, n_states, n_features)
    np.testing.assert_array_equal(
        kernel[:n_states * n_features], w[:n_states * n_features].reshape(n_states, -1).T.ravel())
    np.testing.assert_array_equal(kernel[n_states * n_features:], w[n_states * n_features:])
    np.testing.assert_array_equal(label_major(kernel, n_states, n_features), w)
    strided = np.repeat(w, 2)[::2]  # a view that is not contiguous: copied, not misread
    np.testing.assert_array_equal(feature_major(strided, n_states, n_features), kernel)
