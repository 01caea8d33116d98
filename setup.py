"""Build the compiled engine kernels (Cython) ahead of time; all metadata is in pyproject.toml.

``pip install .``, ``pip install -e .`` and ``python -m build`` compile
``src/fairscan/engine/*.pyx`` with the system's C compiler, so fairscan never compiles anything
when it runs. The SubROC kernels use OpenMP threads where the compiler has it (gcc, clang with
libomp, MSVC); ``FAIRSCAN_NO_OPENMP=1`` builds them single-threaded.
"""

from __future__ import annotations

import os
import sys

from Cython.Build import cythonize
from setuptools import Extension, setup


def _openmp_flags() -> tuple[list[str], list[str]]:
    """(compile, link) flags for OpenMP; none where the default compiler lacks it (macOS)."""
    if os.environ.get("FAIRSCAN_NO_OPENMP") or sys.platform == "darwin":
        return [], []
    if sys.platform == "win32":
        return ["/openmp"], []
    return ["-fopenmp"], ["-fopenmp"]


# No -ffast-math or -march: the arithmetic must stay IEEE-exact and identical on every machine
# (seeded runs are bit-identical whatever builds them).
_optimise = [] if sys.platform == "win32" else ["-O3"]
_omp_compile, _omp_link = _openmp_flags()

extensions = [
    Extension(
        "fairscan.engine.kernels", ["src/fairscan/engine/kernels.pyx"], extra_compile_args=_optimise
    ),
    Extension(
        "fairscan.engine.expectation_kernels",
        ["src/fairscan/engine/expectation_kernels.pyx"],
        extra_compile_args=_optimise,
    ),
    Extension(
        "fairscan.engine.subroc_kernels",
        ["src/fairscan/engine/subroc_kernels.pyx"],
        extra_compile_args=_optimise + _omp_compile,
        extra_link_args=_omp_link,
    ),
]

# kernels.pyx and expectation_kernels.pyx cimport the shared search (engine/search_core.pxd, inline
# functions compiled into each): "src" lets Cython find it as fairscan.engine.search_core.
setup(
    ext_modules=cythonize(
        extensions, include_path=["src"], compiler_directives={"language_level": "3"}
    )
)
