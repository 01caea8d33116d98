"""Type stubs of the compiled MDSS kernels (kernels.pyx)."""

import numpy as np

U_LO: float
U_HI: float
TOL_U: float
MAX_ITER: int
REL_IMPROVEMENT: float
BERNOULLI: int
GAUSSIAN: int
POISSON: int

def ltss_step(
    codes: np.ndarray,
    c: np.ndarray,
    w: np.ndarray,
    p: np.ndarray,
    const_p: bool,
    sel: np.ndarray,
    card: np.ndarray,
    mismatch: np.ndarray,
    j: int,
    penalty: float,
    direction: int,
    out_row: np.ndarray,
) -> float: ...
def ltss_step_lik(
    codes: np.ndarray,
    c: np.ndarray,
    w: np.ndarray,
    p: np.ndarray,
    const_p: bool,
    sel: np.ndarray,
    card: np.ndarray,
    mismatch: np.ndarray,
    j: int,
    penalty: float,
    direction: int,
    out_row: np.ndarray,
    likelihood: int,
    sigma: float,
) -> float: ...
def score_selection(
    codes: np.ndarray,
    c: np.ndarray,
    w: np.ndarray,
    p: np.ndarray,
    sel: np.ndarray,
    direction: int,
) -> tuple[float, float, float, float, float]: ...
def score_selection_lik(
    codes: np.ndarray,
    c: np.ndarray,
    w: np.ndarray,
    p: np.ndarray,
    sel: np.ndarray,
    direction: int,
    likelihood: int,
    sigma: float,
) -> tuple[float, float, float, float, float]: ...
def _cube_exact(
    c: np.ndarray, w: np.ndarray, p: np.ndarray, const_p: bool, likelihood: int
) -> bool: ...
def _compute_mismatch(codes: np.ndarray, sel: np.ndarray, mismatch: np.ndarray) -> int: ...
def coordinate_ascent(
    codes: np.ndarray,
    c: np.ndarray,
    w: np.ndarray,
    p: np.ndarray,
    const_p: bool,
    card: np.ndarray,
    direction: int,
    penalty: float,
    restarts: int,
    seed: int | np.uint64,
    index: bool = True,
    cube: bool = True,
) -> tuple[np.ndarray, float]: ...
def coordinate_ascent_lik(
    codes: np.ndarray,
    c: np.ndarray,
    w: np.ndarray,
    p: np.ndarray,
    const_p: bool,
    card: np.ndarray,
    direction: int,
    penalty: float,
    restarts: int,
    seed: int | np.uint64,
    likelihood: int,
    sigma: float,
    index: bool = True,
    cube: bool = True,
) -> tuple[np.ndarray, float]: ...
