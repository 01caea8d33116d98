"""Type stubs of the compiled profile-summary MDSS kernels (expectation_kernels.pyx)."""

import numpy as np

U_HI: float

def fit_coefficients(
    cell: np.ndarray,
    w: np.ndarray,
    p: np.ndarray,
    n_cells: int,
    breaks: np.ndarray,
    offs: np.ndarray,
) -> np.ndarray: ...
def count_below(u: np.ndarray, p: np.ndarray, cell: np.ndarray, n_cells: int) -> np.ndarray: ...
def evaluate(
    a: np.ndarray, breaks: np.ndarray, offs: np.ndarray, u: float
) -> tuple[float, float, float]: ...
def score_selection(
    codes: np.ndarray,
    c: np.ndarray,
    w: np.ndarray,
    e: np.ndarray,
    coef: np.ndarray,
    g_end: np.ndarray,
    breaks: np.ndarray,
    offs: np.ndarray,
    sel: np.ndarray,
) -> tuple[float, float, float, float, float]: ...
def coordinate_ascent(
    codes: np.ndarray,
    c: np.ndarray,
    w: np.ndarray,
    e: np.ndarray,
    coef: np.ndarray,
    g_end: np.ndarray,
    breaks: np.ndarray,
    offs: np.ndarray,
    card: np.ndarray,
    penalty: float,
    restarts: int,
    seed: int | np.uint64,
    index: bool = True,
) -> tuple[np.ndarray, float]: ...
