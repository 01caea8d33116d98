"""The Bias Scan's monitor evidence from cached profile log-likelihoods equals the rows' sum."""

from __future__ import annotations

import numpy as np
import pytest

from fairscan.engine.evidence import Profiles, bernoulli_loglik
from fairscan.scans.bias.monitor import _by_profiles


# (values per attribute): few combinations (numbered directly) and many (the present ones)
@pytest.mark.parametrize("values", [(4, 3, 5), (90, 80, 70)])
@pytest.mark.parametrize("streamed", [False, True])
def test_profiles_filled_as_asked_give_each_subgroups_row_sum(
    values: tuple[int, int, int], streamed: bool
) -> None:
    rng = np.random.default_rng(11)
    n = 20_000
    codes = np.column_stack([rng.integers(0, k, n) for k in values])
    p = rng.uniform(0.01, 0.99, n)
    y = (rng.random(n) < p).astype(np.float64)
    counts = rng.integers(1, 4, n).astype(np.float64) if streamed else None
    profiles = Profiles.of(codes)
    assert np.array_equal(profiles.codes[profiles.of_row], codes)  # each row's own profile
    evidence = _by_profiles(profiles, y, p, counts)
    # overlapping subgroups, asked one after another (later ones reuse computed profiles)
    subgroups = [
        profiles.codes[:, 0] == 1,
        (profiles.codes[:, 0] == 1) & (profiles.codes[:, 1] == 2),
        np.isin(profiles.codes[:, 2], [0, 4]),
        profiles.codes[:, 1] != 0,
        np.zeros(profiles.count, dtype=bool),
        np.ones(profiles.count, dtype=bool),
    ]
    for inside in subgroups:
        rows = inside[profiles.of_row]
        if counts is None:
            expected = bernoulli_loglik(y[rows], p[rows])
        else:
            expected = bernoulli_loglik(y[rows] * counts[rows], p[rows], counts[rows])
        np.testing.assert_allclose(evidence(inside), expected, rtol=1e-10, atol=1e-7)


def test_profiles_of_no_attribute_or_no_row() -> None:
    assert Profiles.of(np.zeros((5, 0), dtype=np.int32)).count == 1
    assert Profiles.of(np.zeros((0, 2), dtype=np.int32)).of_row.size == 0
