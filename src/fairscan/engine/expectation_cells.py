"""Profile cells with per-row Bernoulli expectations (issue 12): fast searches and null replicates.

With continuous probabilities the (profile, expectation) cells of :mod:`fairscan.engine.cells`
are the rows themselves, so every score evaluation of the row-level search is a pass over the
rows. The Bernoulli score of a set S depends on the rows through two things only:

    F_S(u) = C_S u - G_S(u),   C_S = sum_{i in S} I_i,   G_S(u) = sum_{i in S} log(1 - p_i + p_i e^u),

and only C changes between null replicates. :func:`summarise` groups the rows by attribute
profile and keeps, per profile, C, the row count, E = sum p and a piecewise Chebyshev expansion
of g_c(u) (in u = log q) on the direction's half of the bracket: ``[0, log 1e6]`` for the
positive direction, ``[-log 1e6, 0]`` for the negative one (the row-level search clips every
q-interval to that half, so nothing outside it is ever used). The pieces shrink geometrically
towards u = 0 (where the score of a large set is a small difference of large terms) and their
degrees hold the interpolation error below ~1e-14 of the piece's largest |g| for any p in
[1e-6, 1 - 1e-6] (g is analytic in a strip of half-width pi around the real u axis).

A null replicate is then one Bernoulli draw per row (per source cell: Binomial(weight, p)),
counted per profile in one pass (``count_below``), and a search over profiles
(:mod:`fairscan.engine.expectation_kernels`, which mirrors the row-level kernel's restarts,
random stream and candidate sets).

What a search costs follows the data (issue 29): a step evaluates a set's expansion on the few
pieces its Newton solves visit, so each piece of a set is summed when first evaluated (in the
order of a whole-row sum: the same numbers); whether a value's q-interval reaches the far end of
the bracket is decided from one number per profile (``far_end``, the expansion at that end)
where it is clear by a wide margin; and the cells of a rectangular set are listed from a
profile-key index (engine/search_core.pxd) instead of a pass over every profile.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from fairscan.engine import expectation_kernels
from fairscan.engine.cells import Cells, compress
from fairscan.engine.mdss import SubgroupScore, penalty_units
from fairscan.engine.randomization import NullSettings
from fairscan.engine.seeds import replicate_rng, replicate_search_seed

U_HI = float(expectation_kernels.U_HI)
# Pieces of the positive half [0, log 1e6]; the negative half mirrors them. Degrees: the
# smallest with interpolation error < 1e-14 (relative to the piece's max |g|) over a grid of
# logit p in [-14, 14], plus 2.
BREAKS = (0.0, 1.0 / 64.0, 1.0 / 16.0, 0.25, 1.0, 3.0, 6.5, 10.0, U_HI)
DEGREES = (7, 8, 10, 13, 18, 24, 24, 25)

# What each representation of a calibration scan costs (issue 29), in seconds on one core of
# the development machine; only their ratios decide. Fitted by least squares to the times
# `benchmarks/bench_representation.py --fit` measures over tables from 1.4 to 3,000 rows per
# profile (benchmarks/RESULTS.md): the summary's build is a pass over the rows evaluating
# each at the expansion's nodes, then a transform per profile; a replicate draws one uniform
# per row, then searches: the rows' search grows with the rows times the restarts (its cost
# per row barely moves with the attributes), the summary's with the profiles times the
# attributes and the restarts.
BUILD_PER_ROW = 5.9e-7
BUILD_PER_PROFILE = 2.6e-6
DRAW_PER_ROW = 5.9e-9
ROW_SEARCH_PER_ROW = 7.9e-8  # per row and restart
SUMMARY_SEARCH_PER_PROFILE = 4.2e-9  # per profile, attribute and restart


def pieces(direction: int) -> tuple[np.ndarray, np.ndarray]:
    """(breaks, offsets) of the expansion on the direction's half of the bracket."""
    if direction > 0:
        breaks = np.array(BREAKS, np.float64)
        degrees = np.array(DEGREES, np.int64)
    else:
        breaks = -np.array(BREAKS[::-1], np.float64)
        breaks[-1] = 0.0  # not -0.0
        degrees = np.array(DEGREES[::-1], np.int64)
    offsets = np.concatenate([[0], np.cumsum(degrees + 1)]).astype(np.int64)
    return breaks, offsets


@dataclass(frozen=True)
class ExpectationCells:
    """Rows grouped by attribute profile, with each profile's g(u) summarised (see module doc).

    ``source_*`` describe the cells the summary was built from (rows, or (profile,
    expectation) cells): their profile, row count and probability, for null draws.
    """

    codes: np.ndarray  # (M, m) int32
    weight: np.ndarray  # (M,) float64: rows
    observed: np.ndarray  # (M,) float64: sum of the observed indicator
    expected: np.ndarray  # (M,) float64: sum of the expectations (not their mean)
    coefficients: np.ndarray  # (M, K) float64
    breaks: np.ndarray  # (P + 1,)
    offsets: np.ndarray  # (P + 1,) int64
    cardinality: np.ndarray  # (m,) int32
    direction: int
    source_profile: np.ndarray  # (N,) int64
    source_weight: np.ndarray  # (N,) int64
    source_p: np.ndarray  # (N,) float64
    # (M,) each profile's G at the far end of the half-bracket (derived from the coefficients)
    far_end: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.far_end is None:
            ends = far_end_values(self.coefficients, self.offsets, self.direction)
            object.__setattr__(self, "far_end", ends)

    @property
    def n_cells(self) -> int:
        return int(self.weight.shape[0])

    @property
    def ends(self) -> np.ndarray:
        assert self.far_end is not None  # set by __post_init__
        return self.far_end

    def with_observed(self, observed: np.ndarray) -> ExpectationCells:
        return replace(self, observed=np.asarray(observed, dtype=np.float64))

    @cached_property
    def single_rows(self) -> bool:
        """Whether every source cell is one row (continuous probabilities)."""
        return bool(self.source_weight.size and int(self.source_weight.max()) == 1)

    def draw(self, rng: np.random.Generator) -> np.ndarray:
        """One null replicate of the profiles' observed sums: Bernoulli(p) per row (one uniform
        per source row, in their order, counted per profile in one pass)."""
        if self.single_rows:
            uniform = np.asarray(rng.random(self.source_p.shape[0]))
            return expectation_kernels.count_below(
                uniform, self.source_p, self.source_profile, self.n_cells
            )
        drawn = rng.binomial(self.source_weight, self.source_p).astype(np.float64)
        return np.bincount(self.source_profile, weights=drawn, minlength=self.n_cells)


def far_end_values(coefficients: np.ndarray, offsets: np.ndarray, direction: int) -> np.ndarray:
    """Each row's expansion at the far end of the half-bracket (u = -log 1e6 for the negative
    direction, the start of the first piece; u = log 1e6 for the positive one, the end of the
    last): T_k(-1) = (-1)^k, T_k(1) = 1. The search decides with it, in one number per cell,
    whether a value's q-interval reaches that end without summing the far piece."""
    coefficients = np.asarray(coefficients, dtype=np.float64)
    if direction > 0:
        first, last = int(offsets[-2]), int(offsets[-1])
        signs: np.ndarray = np.ones(last - first)
    else:
        first, last = int(offsets[0]), int(offsets[1])
        signs = (-1.0) ** np.arange(last - first)
    return np.ascontiguousarray(coefficients[:, first:last] @ signs)


def nodes(direction: int) -> np.ndarray:
    """The expansion's nodes u (one per coefficient, in the order of ``pieces(direction)``):
    each piece's Chebyshev extrema from its upper end down, as the kernel's
    ``fit_coefficients`` places them. ``sum log(1 - p + p e^u)`` at these nodes, per profile,
    is all a profile summary needs from its rows (a database computes the sums:
    :mod:`fairscan.data.pushdown`)."""
    breaks, offsets = pieces(direction)
    out = np.empty(int(offsets[-1]))
    for piece in range(breaks.shape[0] - 1):
        lo, hi = float(breaks[piece]), float(breaks[piece + 1])
        n = int(offsets[piece + 1] - offsets[piece] - 1)
        k = np.arange(n + 1)
        u = 0.5 * (lo + hi) + 0.5 * (hi - lo) * np.cos(np.pi * k / n)
        u[0], u[-1] = hi, lo
        out[offsets[piece] : offsets[piece + 1]] = u
    return out


def coefficients_from_nodes(
    values: np.ndarray, k2: np.ndarray, k3: np.ndarray, direction: int
) -> np.ndarray:
    """(M, K) coefficient rows from per-profile sums at :func:`nodes` (``values``, (M, nodes))
    and the cumulants k2 = sum p (1 - p), k3 = sum p (1 - p) (1 - 2 p): the same discrete
    cosine transform the kernel's ``fit_coefficients`` applies to the sums it takes of rows."""
    breaks, offsets = pieces(direction)
    values = np.asarray(values, dtype=np.float64)
    out = np.zeros((values.shape[0], int(offsets[-1]) + 2))
    for piece in range(breaks.shape[0] - 1):
        base, n = int(offsets[piece]), int(offsets[piece + 1] - offsets[piece] - 1)
        j, k = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
        cosines = np.cos(np.pi * ((j * k) % (2 * n)) / n)
        cosines[:, 0] *= 0.5  # the ends count half (Clenshaw-Curtis)
        cosines[:, n] *= 0.5
        block = values[:, base : base + n + 1] @ cosines.T * (2.0 / n)
        block[:, 0] *= 0.5
        block[:, n] *= 0.5
        out[:, base : base + n + 1] = block
    out[:, -2] = k2
    out[:, -1] = k3
    return out


@dataclass(frozen=True)
class ProfileSums:
    """Per-profile sums of (clipped) probabilities taken where the rows are: row counts,
    sum p, the cumulants and, per scan direction, sum log(1 - p + p e^u) at :func:`nodes`."""

    weight: np.ndarray  # (P,) rows
    expected: np.ndarray  # (P,) sum p
    k2: np.ndarray  # (P,) sum p (1 - p)
    k3: np.ndarray  # (P,) sum p (1 - p) (1 - 2 p)
    values: dict[int, np.ndarray]  # direction (+1/-1) -> (P, nodes)
    clipped: int = 0  # probabilities the clip to [1e-6, 1 - 1e-6] changed


def profiles_of(cells: Cells) -> Cells:
    """``cells`` regrouped by profile; ``row_cell`` maps each of ``cells`` to its profile."""
    return compress(
        cells.codes, cells.observed, np.zeros(cells.n_cells), cells.cardinality, cells.weight
    )


@dataclass(frozen=True)
class RepresentationCosts:
    """Estimated seconds of the summary's build and of one search with its null draw in each
    representation (:func:`representation_costs`)."""

    build: float
    row_replicate: float
    summary_replicate: float

    def summary_pays(self, replicates: int) -> bool:
        """Whether building the summary is repaid over the observed search and ``replicates``."""
        searches = max(int(replicates), 0) + 1
        return self.build + searches * self.summary_replicate < searches * self.row_replicate


def representation_costs(
    rows: int, profiles: int, attributes: int, restarts: int
) -> RepresentationCosts:
    """The cost model's estimates for a table of ``rows`` single-row cells in ``profiles``
    attribute profiles (constants above). Deterministic in the table's shape, so that seeded
    runs take the same path on every machine; the two paths draw the same null replicates
    (:func:`fairscan.engine.cells.bernoulli_sums`) and find the same subgroups."""
    restarts = max(restarts, 1)
    draw = DRAW_PER_ROW * rows
    return RepresentationCosts(
        build=BUILD_PER_ROW * rows + BUILD_PER_PROFILE * profiles,
        row_replicate=draw + ROW_SEARCH_PER_ROW * rows * restarts,
        summary_replicate=draw
        + SUMMARY_SEARCH_PER_PROFILE * profiles * max(attributes, 1) * restarts,
    )


def worth_summarising(cells: Cells, profiles: Cells, *, restarts: int, replicates: int) -> bool:
    """Whether the profile summary beats the row-level search on these cells, over the
    observed search and ``replicates`` null replicates (:func:`representation_costs`)."""
    if cells.constant_expectation or cells.n_cells == 0:
        return False
    costs = representation_costs(
        cells.n_cells, profiles.n_cells, int(cells.codes.shape[1]), restarts
    )
    return costs.summary_pays(replicates)


def summarise(cells: Cells, direction: int, profiles: Cells | None = None) -> ExpectationCells:
    """The profile summary of Bernoulli ``cells`` (expectations already clipped) for a scan in
    ``direction`` (+1 positive, -1 negative)."""
    grouped = profiles_of(cells) if profiles is None else profiles
    breaks, offsets = pieces(direction)
    source_profile = np.ascontiguousarray(grouped.row_cell, dtype=np.int64)
    weight = np.ascontiguousarray(cells.weight, dtype=np.float64)
    p = np.ascontiguousarray(cells.expected, dtype=np.float64)
    coefficients = expectation_kernels.fit_coefficients(
        source_profile, weight, p, grouped.n_cells, breaks, offsets
    )
    expected = np.bincount(source_profile, weights=weight * p, minlength=grouped.n_cells)
    return ExpectationCells(
        codes=np.ascontiguousarray(grouped.codes, dtype=np.int32),
        weight=np.ascontiguousarray(grouped.weight, dtype=np.float64),
        observed=np.ascontiguousarray(grouped.observed, dtype=np.float64),
        expected=expected,
        coefficients=coefficients,
        breaks=breaks,
        offsets=offsets,
        cardinality=np.asarray(cells.cardinality, dtype=np.int32),
        direction=1 if direction > 0 else -1,
        source_profile=source_profile,
        source_weight=np.rint(weight).astype(np.int64),
        source_p=p,
    )


def from_profile_sums(
    cells: Cells,
    profiles: Cells,
    row_profile: np.ndarray,
    sums: ProfileSums,
    direction: int,
) -> ExpectationCells:
    """The profile summary of ``cells`` with each profile's g(u) from sums taken where the
    rows are (:class:`ProfileSums`, e.g. by a database), not from ``cells``' expectations.

    ``cells`` (and their regrouping ``profiles``) give the profiles, observed sums and the
    null draws (their expectations may stand for several rows' probabilities, e.g. a
    probability bin's mean); ``row_profile[c]``: the summed profile each of ``cells`` belongs
    to. Summed profiles may be finer than ``profiles`` (their sums add up). ValueError when a
    summed profile falls in two of ``profiles`` or the row counts disagree."""
    direction = 1 if direction > 0 else -1
    if direction not in sums.values:
        raise ValueError("the sums were taken for the other direction")
    into = np.full(sums.weight.shape[0], -1, np.int64)
    into[row_profile] = profiles.row_cell
    if (into[row_profile] != profiles.row_cell).any() or (into < 0).any():
        raise ValueError("a summed profile falls in two of the scan's profiles")
    counted = np.bincount(row_profile, weights=cells.weight, minlength=sums.weight.shape[0])
    if not np.allclose(counted, sums.weight, rtol=0, atol=0.5):
        raise ValueError("the summed profiles' row counts are not those of the cells")
    n = profiles.n_cells

    def add(values: np.ndarray) -> np.ndarray:
        if values.ndim == 1:
            return np.bincount(into, weights=values, minlength=n)
        out = np.zeros((n, values.shape[1]))
        np.add.at(out, into, values)
        return out

    coefficients = coefficients_from_nodes(
        add(sums.values[direction]), add(sums.k2), add(sums.k3), direction
    )
    breaks, offsets = pieces(direction)
    return ExpectationCells(
        codes=np.ascontiguousarray(profiles.codes, dtype=np.int32),
        weight=np.ascontiguousarray(profiles.weight, dtype=np.float64),
        observed=np.ascontiguousarray(profiles.observed, dtype=np.float64),
        expected=add(sums.expected),
        coefficients=np.ascontiguousarray(coefficients),
        breaks=breaks,
        offsets=offsets,
        cardinality=np.asarray(cells.cardinality, dtype=np.int32),
        direction=direction,
        source_profile=np.ascontiguousarray(profiles.row_cell, dtype=np.int64),
        source_weight=np.rint(cells.weight).astype(np.int64),
        source_p=np.ascontiguousarray(cells.expected, dtype=np.float64),
    )


def score_subgroup(cells: ExpectationCells, selection: np.ndarray, penalty: float) -> SubgroupScore:
    """Score a subgroup from the summary (the null statistic re-scores this way)."""
    f, u, size, obs, exp_ = expectation_kernels.score_selection(
        cells.codes,
        cells.observed,
        cells.weight,
        cells.expected,
        cells.coefficients,
        cells.ends,
        cells.breaks,
        cells.offsets,
        selection,
    )
    units = penalty_units(selection, cells.cardinality)
    return SubgroupScore(
        selection=selection,
        score=f - penalty * units,
        llr=f,
        penalty_units=units,
        log_q=u,
        size=size,
        observed=obs,
        expected=exp_,
    )


def search_selection(
    cells: ExpectationCells, *, penalty: float, restarts: int, seed: int
) -> np.ndarray:
    """The coordinate ascent's best subgroup (same restarts as the row-level search)."""
    selection, _best = expectation_kernels.coordinate_ascent(
        cells.codes,
        cells.observed,
        cells.weight,
        cells.expected,
        cells.coefficients,
        cells.ends,
        cells.breaks,
        cells.offsets,
        cells.cardinality,
        float(penalty),
        int(restarts),
        np.uint64(seed),
    )
    return selection


def search(cells: ExpectationCells, *, penalty: float, restarts: int, seed: int) -> SubgroupScore:
    """Coordinate ascent over the profiles; the best subgroup re-scored from the summary."""
    selection = search_selection(cells, penalty=penalty, restarts=restarts, seed=seed)
    return score_subgroup(cells, selection, penalty)


def max_score(cells: ExpectationCells, *, penalty: float, restarts: int, seed: int) -> float:
    return search(cells, penalty=penalty, restarts=restarts, seed=seed).score


@dataclass(frozen=True)
class ExpectationReplicate:
    """Parametric Bernoulli replicate of a scan with per-row expectations: one draw per row,
    summed per profile, then the search over profiles (a picklable replicate job)."""

    cells: ExpectationCells
    settings: NullSettings
    seed: np.random.SeedSequence

    def __call__(self, index: int) -> float:
        if self.settings.direction != self.cells.direction:
            raise ValueError("the summary was built for the other direction")
        rng = replicate_rng(self.seed, index)
        null_cells = self.cells.with_observed(self.cells.draw(rng))
        return max_score(
            null_cells,
            penalty=self.settings.penalty,
            restarts=self.settings.restarts,
            seed=replicate_search_seed(self.seed, index),
        )


__all__ = [
    "BREAKS",
    "DEGREES",
    "ExpectationCells",
    "ExpectationReplicate",
    "ProfileSums",
    "RepresentationCosts",
    "coefficients_from_nodes",
    "far_end_values",
    "from_profile_sums",
    "max_score",
    "nodes",
    "pieces",
    "profiles_of",
    "representation_costs",
    "score_subgroup",
    "search",
    "search_selection",
    "summarise",
    "worth_summarising",
]
