"""Type stubs of the compiled SubROC kernels (subroc_kernels.pyx)."""

import numpy as np

MEASURE_ROC: int
MEASURE_PR: int
MEASURE_ARL: int

def evaluate_children(
    parents: np.ndarray,
    bits: np.ndarray,
    task_ptr: np.ndarray,
    task_attr: np.ndarray,
    task_out: np.ndarray,
    n_out: int,
    codes_t: np.ndarray,
    card: np.ndarray,
    y: np.ndarray,
    grp: np.ndarray,
    do_pr: bool,
    n_chunks: int,
    threads: int = 1,
    wt: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]: ...
def measure_sorted(
    rows: np.ndarray, y: np.ndarray, grp: np.ndarray, measure: int, wt: np.ndarray | None = None
) -> float: ...
def null_measures(
    uniforms_pos: np.ndarray,
    uniforms_neg: np.ndarray,
    pos_rows: np.ndarray,
    neg_rows: np.ndarray,
    y: np.ndarray,
    grp: np.ndarray,
    measure: int,
    threads: int = 1,
    wt: np.ndarray | None = None,
) -> np.ndarray: ...
