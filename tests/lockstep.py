"""Comparing what two Gymnasium envs return, shared by the lockstep tests."""

import numpy as np


def assert_same(ours, reference, path="", tol=1e-5):
    """Equal structure, masks and flags; numbers to ``tol``; RecordEpisodeStatistics' clock apart."""
    if isinstance(reference, dict):
        assert ours.keys() == reference.keys(), path
        for key in reference:
            if key == "t" and path.endswith("episode"):
                continue
            assert_same(ours[key], reference[key], f"{path}.{key}", tol)
    elif isinstance(reference, (list, tuple)):
        assert len(ours) == len(reference), path
        for i, (a, b) in enumerate(zip(ours, reference)):
            assert_same(a, b, f"{path}[{i}]", tol)
    elif isinstance(reference, np.ndarray) and reference.dtype == object:
        for a, b in zip(ours, reference):
            assert (a is None) == (b is None), path
            if b is not None:
                np.testing.assert_allclose(a, b, rtol=tol, atol=tol, err_msg=path)
    elif np.asarray(reference).dtype == bool:
        np.testing.assert_array_equal(ours, reference, err_msg=path)
    else:
        np.testing.assert_allclose(ours, reference, rtol=tol, atol=tol, err_msg=path)
