"""Finite group collections for the Cherian-Candès audit (methods.md §1.2, §5.1).

Each collection maps rows to *atoms* (distinct membership patterns) plus an ``atoms x groups``
sparse 0/1 matrix; ``M = onehot(atom) @ atom_groups`` is the ``n x |G|`` membership matrix,
never materialised densely.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp


@dataclass(frozen=True)
class GroupCollection:
    atom: np.ndarray  # (n,) atom index of each row
    atom_groups: sp.csr_matrix  # (atoms, groups) 0/1
    names: tuple[str, ...]
    subgroups: tuple[dict[str, list[str]] | None, ...]  # attribute -> [value] (None: not a product)
    filters: tuple[str | None, ...]  # SQL text for named-filter groups

    @property
    def n_groups(self) -> int:
        return int(self.atom_groups.shape[1])

    def membership(self) -> sp.csr_matrix:
        """The ``n x |G|`` 0/1 membership matrix (for tests and small problems)."""
        n = len(self.atom)
        onehot = sp.csr_matrix(
            (np.ones(n), (np.arange(n), self.atom)), shape=(n, self.atom_groups.shape[0])
        )
        return (onehot @ self.atom_groups).tocsr()


def intersections(
    codes: np.ndarray,
    labels: list[tuple[str, ...]],
    names: list[str],
    max_order: int | None = None,
    include_all: bool = False,
) -> GroupCollection:
    """Every intersection of the attributes where each one is fixed to a value or free, with at
    most ``max_order`` fixed attributes, restricted to value combinations present in ``codes``
    (as fairaudit's ``get_intersections``); ``include_all`` adds the everyone group."""
    _n, k = codes.shape
    max_order = k if max_order is None else min(max_order, k)
    atom_codes, atom = np.unique(codes, axis=0, return_inverse=True)
    atom = atom.ravel()
    n_atoms = atom_codes.shape[0]
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    group_names: list[str] = []
    subgroups: list[dict[str, list[str]] | None] = []
    offset = 0
    orders = range(0 if include_all else 1, max_order + 1)
    for order in orders:
        for combo in itertools.combinations(range(k), order):
            if order == 0:
                inv = np.zeros(n_atoms, dtype=np.int64)
                uniq = np.zeros((1, 0), dtype=codes.dtype)
            else:
                uniq, inv = np.unique(atom_codes[:, combo], axis=0, return_inverse=True)
                inv = inv.ravel()
            rows.append(np.arange(n_atoms))
            cols.append(offset + inv)
            for u in uniq:
                sub = {names[a]: [labels[a][int(v)]] for a, v in zip(combo, u, strict=True)}
                subgroups.append(sub)
                group_names.append(
                    " & ".join(f"{a} = {v[0]}" for a, v in sub.items()) if sub else "everyone"
                )
            offset += uniq.shape[0]
    r = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
    c = np.concatenate(cols) if cols else np.zeros(0, dtype=np.int64)
    matrix = sp.csr_matrix((np.ones(len(r)), (r, c)), shape=(n_atoms, offset))
    return GroupCollection(atom, matrix, tuple(group_names), tuple(subgroups), (None,) * offset)


def intervals(values: np.ndarray, grid: list[float], attribute: str) -> GroupCollection:
    """All sub-intervals with endpoints on ``grid`` (contiguous unions of the grid's bins).

    Bins are ``[g_k, g_{k+1})``, the last one closed; rows outside ``[g_0, g_K]`` are in no group.
    """
    g = np.asarray(grid, dtype=np.float64)
    K = len(g) - 1
    b = np.searchsorted(g, values, side="right") - 1
    b = np.where(values == g[-1], K - 1, b)
    outside = (values < g[0]) | (values > g[-1]) | ~np.isfinite(values)
    atom = np.where(outside, K, b).astype(np.int64)
    lo, hi = np.triu_indices(K + 1, k=1)  # group (i, j): bins i..j-1
    n_groups = len(lo)
    bins = np.arange(K)
    member = (bins[:, None] >= lo[None, :]) & (bins[:, None] < hi[None, :])
    member = np.vstack([member, np.zeros((1, n_groups), dtype=bool)])
    names = tuple(
        f"{attribute} in [{g[i]:g}, {g[j]:g}{']' if j == K else ')'}"
        for i, j in zip(lo, hi, strict=True)
    )
    return GroupCollection(
        atom,
        sp.csr_matrix(member.astype(np.float64)),
        names,
        (None,) * n_groups,
        (None,) * n_groups,
    )


def from_masks(masks: np.ndarray, names: list[str], filters: list[str]) -> GroupCollection:
    """Arbitrary groups given as an ``n x |G|`` boolean matrix (e.g. named SQL filters)."""
    masks = np.asarray(masks, dtype=bool)
    _n, g = masks.shape
    packed = np.packbits(masks, axis=1)
    uniq, atom = np.unique(packed, axis=0, return_inverse=True)
    member = np.unpackbits(uniq, axis=1, count=g).astype(np.float64)
    return GroupCollection(
        atom.ravel().astype(np.int64),
        sp.csr_matrix(member),
        tuple(names),
        (None,) * g,
        tuple(filters),
    )
