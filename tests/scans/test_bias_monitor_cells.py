"""The Bias Scan's monitor evidence from cached cell log-likelihoods equals the rows' own sum."""

from __future__ import annotations

import numpy as np
import pytest

from fairscan.engine.evidence import bernoulli_loglik
from fairscan.scans.bias.monitor import _by_cells


# (values per attribute): few combinations (numbered directly) and many (the present ones)
@pytest.mark.parametrize("values", [(4, 3, 5), (90, 80, 70)])
def test_cells_filled_as_asked_give_each_subgroups_row_sum(values: tuple[int, int, int]) -> None:
    rng = np.random.default_rng(11)
    n = 20_000
    codes = np.column_stack([rng.integers(0, k, n) for k in values])
    p = rng.uniform(0.01, 0.99, n)
    y = (rng.random(n) < p).astype(np.float64)
    evidence = _by_cells(codes, y, p)
    # overlapping subgroups, asked one after another (later ones reuse cached cells)
    masks = [
        codes[:, 0] == 1,
        (codes[:, 0] == 1) & (codes[:, 1] == 2),
        np.isin(codes[:, 2], [0, 4]),
        codes[:, 1] != 0,
        np.zeros(n, dtype=bool),
        np.ones(n, dtype=bool),
    ]
    for inside in masks:
        expected = bernoulli_loglik(y[inside], p[inside])
        np.testing.assert_allclose(evidence(inside), expected, rtol=1e-10, atol=1e-7)
