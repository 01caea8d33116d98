"""Design matrices for the models some scans fit (IJDI base rate, CBS propensity/outcome)."""

from __future__ import annotations

import numpy as np

from fairscan.errors import ScanError
from fairscan.scans.base import ScanContext

# the extra that brings scikit-learn: the base install leaves it out (33 MB of a 400 MB budget,
# issue 38), since only the scans that fit models use it
MODELS_EXTRA = "models"


def require_scikit_learn(what: str) -> None:
    """A clear error, naming the extra to install, when ``what`` needs scikit-learn and this
    install lacks it (instead of an ImportError deep inside a fit)."""
    try:
        import sklearn  # noqa: F401
    except ImportError:
        raise ScanError(
            f"{what} fits its models with scikit-learn, which is not installed",
            hint=f"pip install 'fairscan[{MODELS_EXTRA}]' (or pip install scikit-learn)",
        ) from None


def design_matrix(ctx: ScanContext, names: list[str]) -> np.ndarray:
    """Standardised numeric columns and one-hot categories (one level dropped: the model's
    intercept covers it). A name is read from the raw extra columns when the scan asked for it
    (numbers stay numeric), else from the encoded scan attribute of that name."""
    data = ctx.data
    attribute_index = {a.name: j for j, a in enumerate(data.attributes)}
    blocks: list[np.ndarray] = []
    for name in names:
        raw = data.extra.get(name)
        if raw is not None and raw.dtype != object:
            # with sample weights the weighted rows' mean and SD (those of the rows repeated);
            # without (weights None) np.average is the plain mean, and this the SD, to the bit
            mean = np.average(raw, weights=data.row_weight)
            sd = np.sqrt(np.average((raw - mean) ** 2, weights=data.row_weight))
            blocks.append(((raw - mean) / (sd if sd > 0 else 1.0))[:, None])
            continue
        if raw is not None:
            _, codes = np.unique(raw.astype(str), return_inverse=True)
        else:
            codes = data.codes[:, attribute_index[name]]
        k = int(codes.max()) + 1 if codes.size else 0
        if k > 1:
            blocks.append(np.eye(k)[codes][:, 1:])
    if not blocks:
        return np.zeros((data.n_rows, 0))
    return np.hstack(blocks)
