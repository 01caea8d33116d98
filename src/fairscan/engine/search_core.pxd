# cython: language_level=3
"""The MDSS search, written once: coordinate ascent with random restarts over the exact LTSS
attribute step (methods.md §1.4.3-1.4.4), for any score table.

Both likelihood paths cimport this file: ``kernels.pyx`` (cells of (c, w, p); Bernoulli, Gaussian
and Poisson scores) and ``expectation_kernels.pyx`` (attribute profiles with Chebyshev summaries
of per-row probabilities). What differs between them is only how a set of cells is scored; that
is a :c:type:`ScoreTable`: four functions behind pointers, over the caller's own data:

* ``group(table, cells, n, j, counts)``: aggregate the relaxed subgroup's cells (``cells[0:n]``,
  ascending; ``counts[v]`` of them have value ``v`` of attribute ``j``) per value of ``j``;
* ``score_chosen(table, chosen, k, f, u)``: the direction-constrained score of the union of the
  values flagged in ``chosen`` (of the last ``group``);
* ``value_interval(table, v, penalty, left, right)``: {u : F_v(u) > penalty} of value ``v``,
  clipped to the scan's direction; False when empty;
* ``score_set(table, sel)``: F of the subgroup ``sel`` (a restart's starting point).

Why function pointers (and not fused types or a cdef class): the search calls them O(k) times per
attribute step and once per restart, each call doing a Newton solve or a sum over value groups,
so an indirect call costs nothing measurable; every O(cells) loop (mismatch counts, the relaxed
subgroup, each table's aggregation) stays a plain loop inside one function. Fused types would
make this file name every table type (and so depend on both kernels), and a cdef class would add
reference counting and a vtable for nothing. The functions are ``cdef inline`` in this ``.pxd``,
so each kernel module compiles its own copy: no extra extension module and no import-time link
between the kernels, and the compiler sees the whole search in each.

The random stream (splitmix64), the candidate sets, the order of every floating-point operation
and the acceptance rule are those both kernels had before they shared this file, so seeded
searches return the same bits. The step memo (below) never changes a result, only how often a
step is computed. Ctrl-C: the search checks for pending signals once per restart.

Every ``sel`` is an (m, kmax) row-major byte array: ``sel[a * kmax + v]`` flags value ``v`` of
attribute ``a``; ``codes`` is (n_cells, m) row-major.
"""

from libc.math cimport fabs, INFINITY
from libc.stdlib cimport calloc, malloc, free, qsort
from libc.string cimport memcmp, memcpy, memset
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint64_t


cdef extern from "Python.h":
    int PyErr_CheckSignals() except -1


cdef extern from *:
    """
    /* coordinate ascent accepts J(S') > J(S) + 1e-9 * max(1, |J(S)|) */
    static const double fairscan_rel_improvement = 1e-9;
    """
    const double REL_IMPROVEMENT "fairscan_rel_improvement"


cdef enum:
    # memory of the step memo at most (it is an optimisation: smaller problems use less)
    MEMO_BYTES = 32 * 1024 * 1024
    MEMO_MAX_SLOTS = 1 << 18


# --------------------------------------------------------------------------------------------
# Random numbers: splitmix64, so a search is a pure function of its 64-bit seed.
# --------------------------------------------------------------------------------------------


cdef inline uint64_t next_u64(uint64_t* state) noexcept nogil:
    cdef uint64_t z = state[0] + <uint64_t>0x9E3779B97F4A7C15
    state[0] = z
    z = (z ^ (z >> 30)) * <uint64_t>0xBF58476D1CE4E5B9
    z = (z ^ (z >> 27)) * <uint64_t>0x94D049BB133111EB
    return z ^ (z >> 31)


cdef inline double uniform(uint64_t* state) noexcept nogil:
    return <double>(next_u64(state) >> 11) * (1.0 / 9007199254740992.0)


cdef inline int64_t randint(uint64_t* state, int64_t n) noexcept nogil:
    cdef int64_t k = <int64_t>(uniform(state) * n)
    return k if k < n else n - 1


# --------------------------------------------------------------------------------------------
# The search's view of a problem: the attribute grid and the score table
# --------------------------------------------------------------------------------------------


# Where the cells come sorted by profile and the attributes' value grid is not much larger than
# the cells, the cells of a rectangular set (a step's relaxed subgroup, a subgroup) are listed
# by walking the set's profile keys in ascending order, in time proportional to the set, instead
# of a pass over every cell. Both ways list the same cells in the same (ascending) order, so
# nothing computed from them changes; each list is taken the cheaper way.
# Where moreover a step needs only the per-value sums of the cells' whole-number counts (a
# constant expectation: FPR-/TPR-Scan), the index also keeps the data cube of those counts: the
# sums of (c, w), packed in one integer as ``(w << 32) + c``, over every combination of values
# where each attribute may also take "any value" (code card[a]). A step then adds one cube entry
# per value of j and per combination of the values the constrained attributes other than j take
# (the unconstrained ones take "any value"): a few entries where listing the relaxed subgroup
# would pass over most of about 10^6 cells (:func:`_cube_sums`). The cube is built per search in
# m passes over it. Integer sums are exact in any order, so every step sees the same numbers,
# bit for bit, as when it groups the listed cells.
ctypedef void (*LoadSumsFn)(void* table, int64_t j, const double* c_sums,
                            const double* w_sums, const int64_t* counts) noexcept nogil


cdef struct GridIndex:
    int64_t* key_start  # n_keys + 1: the cells of profile key k are key_start[k]:key_start[k+1]
    int64_t* cube  # prod(card + 1): packed (w << 32) + c sums (NULL: not kept)
    bint cube_borrowed  # the cube is the caller's buffer (not freed here)
    int64_t* cube_stride  # m: entry = sum code_a * cube_stride_a, code card[a] = any value
    LoadSumsFn load  # hand a step's per-value sums of attribute j to the score table
    int64_t* acc  # kmax: a step's packed sums per value
    double* c_sums  # kmax
    double* w_sums  # kmax
    int64_t n_keys
    int64_t* stride  # m: key = sum_a code_a * stride_a (the last attribute varies fastest)
    int64_t* idx  # m: the walk's position in each attribute's value list
    int64_t* vals  # m * kmax: each attribute's values in the set, ascending
    int64_t* nvals  # m


cdef struct Grid:
    const int32_t* codes  # (n_cells, m) row-major
    const int32_t* card  # (m,)
    int64_t n_cells
    int64_t m
    int64_t kmax
    GridIndex* index  # the cells by profile key (NULL: none; see grid_index_open)




ctypedef void (*GroupFn)(void* table, const int64_t* cells, int64_t n, int64_t j,
                         const int64_t* counts) noexcept nogil
ctypedef void (*ScoreChosenFn)(void* table, const uint8_t* chosen, int64_t k, double* f_out,
                               double* u_out) noexcept nogil
ctypedef bint (*ValueIntervalFn)(void* table, int64_t v, double penalty, double* left_out,
                                 double* right_out) noexcept nogil
ctypedef double (*ScoreSetFn)(void* table, const uint8_t* sel) noexcept nogil


cdef struct ScoreTable:
    void* table  # the kernel's own data and buffers
    GroupFn group
    ScoreChosenFn score_chosen
    ValueIntervalFn value_interval
    ScoreSetFn score_set


# The LTSS step for attribute j is a function of j and the selection of the other attributes
# only (the mismatch counts derive from it): within one search, the restarts keep reaching the
# same (j, other attributes) states, so each step is computed once and looked up afterwards.
# The ascent's random draws never depend on how a step's result was obtained, so every search
# visits the same states and returns the same bits as without the memo.
cdef struct StepMemo:
    int64_t capacity  # slots, a power of two (0: no memo)
    int64_t key_len  # m * kmax bytes: the selection with attribute j's row cleared
    int64_t kmax
    int64_t filled
    uint8_t* used  # capacity
    int64_t* attribute  # capacity: j
    uint8_t* keys  # capacity * key_len
    uint8_t* rows  # capacity * kmax: the step's chosen values of j
    double* parts  # capacity: the step's value
    uint8_t* key  # key_len: the key being looked up


cdef struct SearchWork:
    int64_t* cells  # n_cells: the relaxed subgroup's cells of a step
    int64_t* counts  # kmax: its cells per value
    double* umin  # kmax
    double* umax
    double* ends  # 2 kmax
    uint8_t* keep  # kmax
    uint8_t* chosen  # kmax
    StepMemo memo  # the coordinate ascent's LTSS steps already taken (empty: not used)


cdef inline int search_work_alloc(SearchWork* sw, int64_t n_cells, int64_t kmax) except -1:
    """Buffers of the attribute step (no memo: :func:`search` adds its own)."""
    sw.cells = <int64_t*>malloc((n_cells + 1) * sizeof(int64_t))
    sw.counts = <int64_t*>malloc((kmax + 1) * sizeof(int64_t))
    sw.umin = <double*>malloc((kmax + 1) * sizeof(double))
    sw.umax = <double*>malloc((kmax + 1) * sizeof(double))
    sw.ends = <double*>malloc((2 * kmax + 2) * sizeof(double))
    sw.keep = <uint8_t*>malloc((kmax + 1) * sizeof(uint8_t))
    sw.chosen = <uint8_t*>malloc((kmax + 1) * sizeof(uint8_t))
    memset(&sw.memo, 0, sizeof(StepMemo))
    if (sw.cells == NULL or sw.counts == NULL or sw.umin == NULL or sw.umax == NULL
            or sw.ends == NULL or sw.keep == NULL or sw.chosen == NULL):
        search_work_free(sw)
        raise MemoryError("not enough memory for the subset-scan workspace")
    return 0


cdef inline void search_work_free(SearchWork* sw) noexcept:
    _memo_free(&sw.memo)
    free(sw.cells)
    free(sw.counts)
    free(sw.umin)
    free(sw.umax)
    free(sw.ends)
    free(sw.keep)
    free(sw.chosen)
    sw.cells = NULL
    sw.counts = NULL
    sw.umin = NULL
    sw.umax = NULL
    sw.ends = NULL
    sw.keep = NULL
    sw.chosen = NULL


# --------------------------------------------------------------------------------------------
# The step memo: an open-addressing table of (j, selection without j) -> (row, value)
# --------------------------------------------------------------------------------------------


cdef inline void _memo_alloc(StepMemo* memo, int64_t m, int64_t kmax) noexcept:
    """An empty memo for the steps of one search (it grows as they come; none without memory)."""
    memset(memo, 0, sizeof(StepMemo))
    memo.key_len = m * kmax
    memo.kmax = kmax
    memo.key = <uint8_t*>malloc(memo.key_len + 1)
    if memo.key != NULL:
        _memo_resize(memo, 256)


cdef inline bint _memo_resize(StepMemo* memo, int64_t capacity) noexcept nogil:
    """Move the entries into ``capacity`` slots; False (the memo unchanged) when that is over
    the memory budget or cannot be allocated: the search then stops adding steps."""
    cdef int64_t n = memo.key_len
    cdef int64_t kmax = memo.kmax
    cdef int64_t entry = n + kmax + 2 * sizeof(int64_t) + 1
    cdef int64_t old, slot
    cdef bint found
    cdef StepMemo grown
    if capacity > MEMO_MAX_SLOTS or capacity * entry > MEMO_BYTES:
        return False
    grown = memo[0]
    grown.capacity = capacity
    grown.filled = 0
    grown.used = <uint8_t*>calloc(capacity, sizeof(uint8_t))
    grown.attribute = <int64_t*>malloc(capacity * sizeof(int64_t))
    grown.keys = <uint8_t*>malloc(capacity * n + 1)
    grown.rows = <uint8_t*>malloc(capacity * kmax + 1)
    grown.parts = <double*>malloc(capacity * sizeof(double))
    if (grown.used == NULL or grown.attribute == NULL or grown.keys == NULL
            or grown.rows == NULL or grown.parts == NULL):
        free(grown.used)
        free(grown.attribute)
        free(grown.keys)
        free(grown.rows)
        free(grown.parts)
        return False
    for old in range(memo.capacity):
        if memo.used[old]:
            slot = _memo_find(&grown, &memo.keys[old * n], memo.attribute[old], &found)
            _memo_put(&grown, slot, &memo.keys[old * n], memo.attribute[old],
                      &memo.rows[old * kmax], memo.parts[old])
    free(memo.used)
    free(memo.attribute)
    free(memo.keys)
    free(memo.rows)
    free(memo.parts)
    grown.key = memo.key
    memo[0] = grown
    return True


cdef inline void _memo_free(StepMemo* memo) noexcept:
    free(memo.used)
    free(memo.attribute)
    free(memo.keys)
    free(memo.rows)
    free(memo.parts)
    free(memo.key)
    memo.used = NULL
    memo.attribute = NULL
    memo.keys = NULL
    memo.rows = NULL
    memo.parts = NULL
    memo.key = NULL
    memo.capacity = 0


cdef inline int64_t _memo_find(const StepMemo* memo, const uint8_t* key, int64_t j,
                               bint* found) noexcept nogil:
    """The slot holding (j, key), or the free slot where it goes (the memo is never full:
    it grows, or stops adding, at half its slots)."""
    cdef int64_t n = memo.key_len
    cdef int64_t i, slot
    cdef uint64_t h = 1469598103934665603ULL ^ <uint64_t>j
    for i in range(n):
        h = (h ^ key[i]) * 1099511628211ULL
    slot = <int64_t>(h & <uint64_t>(memo.capacity - 1))
    while memo.used[slot]:
        if memo.attribute[slot] == j and memcmp(&memo.keys[slot * n], key, n) == 0:
            found[0] = True
            return slot
        slot = (slot + 1) & (memo.capacity - 1)
    found[0] = False
    return slot


cdef inline void _memo_put(StepMemo* memo, int64_t slot, const uint8_t* key, int64_t j,
                           const uint8_t* row, double part) noexcept nogil:
    memo.used[slot] = 1
    memo.attribute[slot] = j
    memcpy(&memo.keys[slot * memo.key_len], key, memo.key_len)
    memcpy(&memo.rows[slot * memo.kmax], row, memo.kmax)
    memo.parts[slot] = part
    memo.filled += 1


cdef inline void _memo_keep(StepMemo* memo, int64_t slot, int64_t j, const uint8_t* row,
                            double part) noexcept nogil:
    """Store the result for ``memo.key`` at ``slot`` (its free slot from :func:`_memo_find`),
    growing the memo first when it is half full; over budget, the result is not kept."""
    cdef bint found
    if 2 * (memo.filled + 1) > memo.capacity:
        if not _memo_resize(memo, 2 * memo.capacity):
            return
        slot = _memo_find(memo, memo.key, j, &found)
    _memo_put(memo, slot, memo.key, j, row, part)


# --------------------------------------------------------------------------------------------
# Subgroup bookkeeping
# --------------------------------------------------------------------------------------------


cdef inline int64_t compute_mismatch(const Grid* g, const uint8_t* sel,
                                     int32_t* mismatch) noexcept nogil:
    """Fill mismatch[i] = #attributes where cell i is outside S; return the number of cells in S."""
    cdef int64_t inside = 0
    cdef int64_t i, a, cnt
    cdef int64_t m = g.m
    for i in range(g.n_cells):
        cnt = 0
        for a in range(m):
            if not sel[a * g.kmax + g.codes[i * m + a]]:
                cnt += 1
        mismatch[i] = <int32_t>cnt
        if cnt == 0:
            inside += 1
    return inside


cdef inline bint in_subgroup(const Grid* g, const uint8_t* sel, int64_t i) noexcept nogil:
    """Whether cell ``i`` lies in the subgroup ``sel``."""
    cdef int64_t a
    cdef int64_t m = g.m
    for a in range(m):
        if not sel[a * g.kmax + g.codes[i * m + a]]:
            return False
    return True


cdef inline bint _any_inside(const Grid* g, const uint8_t* sel) noexcept nogil:
    cdef int64_t i
    if g.index != NULL and _walk_keys(g, sel, -1) <= g.n_cells:
        return _walk_cells(g, -1, NULL, NULL, True) > 0
    for i in range(g.n_cells):
        if in_subgroup(g, sel, i):
            return True
    return False


cdef inline void select_all(const Grid* g, uint8_t* sel) noexcept nogil:
    cdef int64_t a, v
    for a in range(g.m * g.kmax):
        sel[a] = 0
    for a in range(g.m):
        for v in range(g.card[a]):
            sel[a * g.kmax + v] = 1


cdef inline int64_t _penalty_units(const Grid* g, const uint8_t* sel, int64_t skip) noexcept nogil:
    """c(S) without attribute ``skip``: selected values summed over constrained attributes."""
    cdef int64_t total = 0
    cdef int64_t a, v, cnt
    for a in range(g.m):
        if a == skip:
            continue
        cnt = 0
        for v in range(g.card[a]):
            if sel[a * g.kmax + v]:
                cnt += 1
        if cnt < g.card[a]:
            total += cnt
    return total


cdef inline void _random_start(const Grid* g, uint8_t* sel, uint64_t* state) noexcept nogil:
    """A random non-empty initial subgroup (10 tries), else all values."""
    cdef int64_t m = g.m
    cdef int64_t kmax = g.kmax
    cdef int64_t a, v, attempt
    cdef double rho
    cdef bint any_v
    for attempt in range(10):
        for a in range(m * kmax):
            sel[a] = 0
        rho = uniform(state)
        for a in range(m):
            any_v = False
            for v in range(g.card[a]):
                if uniform(state) < rho:
                    sel[a * kmax + v] = 1
                    any_v = True
            if not any_v:
                sel[a * kmax + randint(state, g.card[a])] = 1
        if _any_inside(g, sel):
            return
    select_all(g, sel)


# --------------------------------------------------------------------------------------------
# The profile-key index of the cells (GridIndex)
# --------------------------------------------------------------------------------------------


cdef enum:
    # index the grid when it has at most this many keys per cell (and at least this many keys)
    INDEX_KEYS_PER_CELL = 4
    INDEX_MIN_KEYS = 1 << 16
    # keep the data cube when it has at most this many entries per key ((7/6)**8 = 3.4 for 8
    # attributes of 6 values; a cube over many two-valued attributes would not pay)
    CUBE_ENTRIES_PER_KEY = 8
    # and at most this many entries (256 MiB) in any case
    CUBE_MAX_ENTRIES = 1 << 25


cdef inline void _cube_free(GridIndex* ix) noexcept:
    if not ix.cube_borrowed:
        free(ix.cube)
    ix.cube_borrowed = False
    free(ix.cube_stride)
    free(ix.acc)
    free(ix.c_sums)
    free(ix.w_sums)
    ix.cube = NULL
    ix.cube_stride = NULL
    ix.acc = NULL
    ix.c_sums = NULL
    ix.w_sums = NULL


cdef inline void grid_index_close(GridIndex* ix) noexcept:
    free(ix.key_start)
    _cube_free(ix)
    free(ix.stride)
    free(ix.idx)
    free(ix.vals)
    free(ix.nvals)
    memset(ix, 0, sizeof(GridIndex))


cdef inline int grid_index_open(Grid* g, GridIndex* ix, bint wanted) except -1:
    """Index ``g``'s cells by profile key and point ``g.index`` at ``ix`` where ``wanted``, the
    cells are sorted by key and the grid is small enough; else ``g.index`` is NULL (cells are
    scanned). Free with :func:`grid_index_close` (also when none was built)."""
    cdef int64_t m = g.m
    cdef int64_t a, i, key, prev
    cdef double keys = 1.0
    memset(ix, 0, sizeof(GridIndex))
    g.index = NULL
    if not wanted or m == 0 or g.n_cells == 0 or g.card == NULL:
        return 0
    for a in range(m):
        keys *= g.card[a]
    if keys > max(<double>INDEX_KEYS_PER_CELL * g.n_cells, <double>INDEX_MIN_KEYS):
        return 0
    ix.n_keys = <int64_t>keys
    ix.key_start = <int64_t*>calloc(ix.n_keys + 2, sizeof(int64_t))
    ix.stride = <int64_t*>malloc(m * sizeof(int64_t))
    ix.idx = <int64_t*>malloc(m * sizeof(int64_t))
    ix.vals = <int64_t*>malloc(m * g.kmax * sizeof(int64_t))
    ix.nvals = <int64_t*>malloc(m * sizeof(int64_t))
    if (ix.key_start == NULL or ix.stride == NULL or ix.idx == NULL or ix.vals == NULL
            or ix.nvals == NULL):
        grid_index_close(ix)
        return 0  # an optimisation: without memory, cells are scanned
    ix.stride[m - 1] = 1
    for a in range(m - 2, -1, -1):
        ix.stride[a] = ix.stride[a + 1] * g.card[a + 1]
    prev = -1
    for i in range(g.n_cells):
        key = 0
        for a in range(m):
            key += g.codes[i * m + a] * ix.stride[a]
        if key < prev or key >= ix.n_keys or key < 0:
            grid_index_close(ix)  # not sorted by profile: scan
            return 0
        ix.key_start[key + 1] += 1
        prev = key
    for key in range(ix.n_keys):
        ix.key_start[key + 1] += ix.key_start[key]
    g.index = ix
    return 0


cdef enum:
    CUBE_TILE = 512  # entries summed at a time by a cube pass (in the first-level cache)


cdef inline void _cube_pass(const Grid* g, GridIndex* ix, int64_t a) noexcept nogil:
    """Fill the cube's "any value" entries of attribute ``a`` where the attributes before a
    take real values (the others are zero until their own pass): per such combination, the
    sum over a's values of the run of entries of the attributes after a, tile by tile."""
    cdef int64_t* cube = ix.cube
    cdef const int64_t* cs = ix.cube_stride
    cdef int64_t k = g.card[a]
    cdef int64_t block = cs[a]
    cdef int64_t base = 0
    cdef int64_t b, v, t, lo, hi, dst
    for b in range(a):
        ix.idx[b] = 0
    while True:
        dst = base + k * block
        lo = 0
        while lo < block:
            hi = min(lo + CUBE_TILE, block)
            for t in range(lo, hi):
                cube[dst + t] = cube[base + t]
            for v in range(1, k):
                for t in range(lo, hi):
                    cube[dst + t] += cube[base + v * block + t]
            lo = hi
        b = a - 1
        while b >= 0:
            ix.idx[b] += 1
            base += cs[b]
            if ix.idx[b] < g.card[b]:
                break
            base -= ix.idx[b] * cs[b]
            ix.idx[b] = 0
            b -= 1
        if b < 0:
            return


cdef inline bint grid_index_cube(Grid* g, const double* c, const double* w, LoadSumsFn load,
                                 int64_t* buffer, int64_t capacity) noexcept:
    """Build the data cube of the cells' counts in ``g.index`` (see :c:type:`GridIndex`) so
    that steps add cube entries; False (nothing kept) without an index, when the cube would be
    over ``CUBE_ENTRIES_PER_KEY`` times the keys or ``CUBE_MAX_ENTRIES``, or without memory.
    The caller checks that every ``c`` is a whole number >= 0 and every ``w`` one >= 1, totals
    below 2**31 (the packed sums then never carry). ``buffer`` (``capacity`` entries, or NULL):
    memory the caller keeps between searches, used for the cube where large enough (fresh
    memory costs more than the cube's passes: the system zeroes each page on first touch)."""
    cdef GridIndex* ix = g.index
    cdef int64_t m = g.m
    cdef int64_t a, i, o, entries
    cdef double size = 1.0
    cdef int64_t* cube
    if ix == NULL:
        return False
    for a in range(m):
        size *= g.card[a] + 1
    if size > <double>CUBE_ENTRIES_PER_KEY * ix.n_keys or size > <double>CUBE_MAX_ENTRIES:
        return False
    entries = <int64_t>size
    if buffer != NULL and capacity >= entries + 1:
        memset(buffer, 0, (entries + 1) * sizeof(int64_t))
        ix.cube = buffer
        ix.cube_borrowed = True
    else:
        ix.cube = <int64_t*>calloc(entries + 1, sizeof(int64_t))
    ix.cube_stride = <int64_t*>malloc(m * sizeof(int64_t))
    ix.acc = <int64_t*>malloc((g.kmax + 1) * sizeof(int64_t))
    ix.c_sums = <double*>malloc((g.kmax + 1) * sizeof(double))
    ix.w_sums = <double*>malloc((g.kmax + 1) * sizeof(double))
    if (ix.cube == NULL or ix.cube_stride == NULL or ix.acc == NULL or ix.c_sums == NULL
            or ix.w_sums == NULL):
        _cube_free(ix)
        return False
    cube = ix.cube
    with nogil:
        ix.cube_stride[m - 1] = 1
        for a in range(m - 2, -1, -1):
            ix.cube_stride[a] = ix.cube_stride[a + 1] * (g.card[a + 1] + 1)
        for i in range(g.n_cells):
            o = 0
            for a in range(m):
                o += g.codes[i * m + a] * ix.cube_stride[a]
            cube[o] += ((<int64_t>w[i]) << 32) + <int64_t>c[i]
        # "any value" of a = the sum over a's values, last attribute first: before a's pass
        # the entries with "any value" of an attribute before a are still zero (not visited)
        for a in range(m - 1, -1, -1):
            _cube_pass(g, ix, a)
    ix.load = load
    return True


cdef inline double _walk_keys(const Grid* g, const uint8_t* sel, int64_t j) noexcept nogil:
    """Set up the walk over the keys of ``sel`` (attribute ``j``, if >= 0, with all its
    values); returns the number of keys (0 when a set is empty)."""
    cdef GridIndex* ix = g.index
    cdef int64_t a, v, n
    cdef double keys = 1.0
    for a in range(g.m):
        n = 0
        for v in range(g.card[a]):
            if a == j or sel[a * g.kmax + v]:
                ix.vals[a * g.kmax + n] = v
                n += 1
        ix.nvals[a] = n
        ix.idx[a] = 0
        keys *= n
    return keys


cdef inline int64_t _walk_cells(const Grid* g, int64_t j, int64_t* cells, int64_t* counts,
                                bint first_only) noexcept nogil:
    """The cells of the keys set up by :func:`_walk_keys`, ascending, into ``cells`` (their
    number per value of ``j`` into ``counts`` when j >= 0); the count. ``first_only``: stop at
    the first cell (cells and counts untouched)."""
    cdef GridIndex* ix = g.index
    cdef int64_t m = g.m
    cdef int64_t kmax = g.kmax
    cdef int64_t a, key, s, start, end
    cdef int64_t n = 0
    key = 0
    for a in range(m):
        if ix.nvals[a] == 0:
            return 0
        key += ix.vals[a * kmax] * ix.stride[a]
    while True:
        start = ix.key_start[key]
        end = ix.key_start[key + 1]
        if end > start:
            if first_only:
                return 1
            if j >= 0:
                counts[ix.vals[j * kmax + ix.idx[j]]] += end - start
            for s in range(start, end):
                cells[n] = s
                n += 1
        a = m - 1
        while a >= 0:
            ix.idx[a] += 1
            if ix.idx[a] < ix.nvals[a]:
                key += (ix.vals[a * kmax + ix.idx[a]] - ix.vals[a * kmax + ix.idx[a] - 1]) * ix.stride[a]
                break
            key -= (ix.vals[a * kmax + ix.nvals[a] - 1] - ix.vals[a * kmax]) * ix.stride[a]
            ix.idx[a] = 0
            a -= 1
        if a < 0:
            return n


cdef inline void _cube_done(const Grid* g, GridIndex* ix, int64_t j,
                            int64_t* counts) noexcept nogil:
    """Unpack a step's sums (see :func:`_cube_sums`)."""
    cdef int64_t low = 0xFFFFFFFF
    cdef int64_t v
    for v in range(g.card[j]):
        counts[v] = ix.acc[v] >> 32
        ix.c_sums[v] = <double>(ix.acc[v] & low)
        ix.w_sums[v] = <double>(ix.acc[v] >> 32)


cdef inline void _cube_sums(const Grid* g, const uint8_t* sel, int64_t j,
                            int64_t* counts) noexcept nogil:
    """Per value of ``j``: the sums of c and w over the relaxed subgroup's cells (``sel`` with
    ``j`` free) into the index's ``c_sums`` and ``w_sums``, from the cube, and the rows (> 0
    exactly where there are cells: every cell has w >= 1) into ``counts``. The attributes other
    than j that take all their values take "any value"; the others are walked."""
    cdef GridIndex* ix = g.index
    cdef int64_t m = g.m
    cdef int64_t kmax = g.kmax
    cdef const int64_t* cube = ix.cube
    cdef const int64_t* cs = ix.cube_stride
    cdef int64_t a, v, n, off, step_j
    cdef int64_t top = -1  # the last walked attribute
    for v in range(g.card[j]):
        ix.acc[v] = 0
    off = 0
    for a in range(m):
        ix.idx[a] = 0
        ix.nvals[a] = 0
        if a == j:
            continue
        n = 0
        for v in range(g.card[a]):
            if sel[a * kmax + v]:
                ix.vals[a * kmax + n] = v
                n += 1
        if n == 0:
            _cube_done(g, ix, j, counts)
            return
        if n == g.card[a]:
            off += g.card[a] * cs[a]  # any value
        else:
            ix.nvals[a] = n
            off += ix.vals[a * kmax] * cs[a]
            top = a
    step_j = cs[j]
    while True:
        for v in range(g.card[j]):
            ix.acc[v] += cube[off + v * step_j]
        a = top
        while a >= 0:
            if ix.nvals[a] == 0:
                a -= 1
                continue
            ix.idx[a] += 1
            if ix.idx[a] < ix.nvals[a]:
                off += (ix.vals[a * kmax + ix.idx[a]] - ix.vals[a * kmax + ix.idx[a] - 1]) * cs[a]
                break
            off -= (ix.vals[a * kmax + ix.nvals[a] - 1] - ix.vals[a * kmax]) * cs[a]
            ix.idx[a] = 0
            a -= 1
        if a < 0:
            break
    _cube_done(g, ix, j, counts)


cdef inline int64_t subgroup_cells(const Grid* g, const uint8_t* sel, int64_t* cells) noexcept nogil:
    """The cells inside the subgroup ``sel``, ascending, into ``cells``; their number."""
    cdef int64_t i
    cdef int64_t n = 0
    if g.index != NULL and _walk_keys(g, sel, -1) <= g.n_cells:
        return _walk_cells(g, -1, cells, NULL, False)
    for i in range(g.n_cells):
        if in_subgroup(g, sel, i):
            cells[n] = i
            n += 1
    return n


# --------------------------------------------------------------------------------------------
# Exact attribute step (LTSS over q-intervals, methods.md §1.4.3)
# --------------------------------------------------------------------------------------------


cdef inline int _cmp_double(const void* a, const void* b) noexcept nogil:
    cdef double x = (<const double*>a)[0]
    cdef double y = (<const double*>b)[0]
    return (x > y) - (x < y)


cdef inline int64_t _relaxed_cells(const Grid* g, const uint8_t* sel, int32_t* mismatch,
                                   bint* mismatch_ok, int64_t j, int64_t* cells,
                                   int64_t* counts) noexcept nogil:
    """Cells of the relaxed subgroup R (matching S on every attribute but j), ascending, and
    their number per value of j; returns how many. Listed from the key index where that is
    cheaper, else by a pass over the cells' mismatch counts (brought up to date first)."""
    cdef int64_t m = g.m
    cdef int64_t kmax = g.kmax
    cdef int64_t i, v
    cdef int64_t n = 0
    for v in range(g.card[j]):
        counts[v] = 0
    if g.index != NULL and _walk_keys(g, sel, j) <= g.n_cells:
        return _walk_cells(g, j, cells, counts, False)
    if not mismatch_ok[0]:
        compute_mismatch(g, sel, mismatch)
        mismatch_ok[0] = True
    for i in range(g.n_cells):
        v = g.codes[i * m + j]
        if mismatch[i] - (0 if sel[j * kmax + v] else 1) == 0:
            cells[n] = i
            n += 1
            counts[v] += 1
    return n


cdef inline double ltss_step(const Grid* g, const ScoreTable* st, SearchWork* sw,
                             const uint8_t* sel, const int32_t* mismatch, int64_t j,
                             double penalty, uint8_t* out_row) noexcept nogil:
    """Best choice of S_j given the other attributes (exact, methods.md §1.4.3).

    Returns ``F(S') - penalty * |S'_j|`` (no penalty when S'_j is all values) and writes the
    chosen value set of attribute ``j`` into ``out_row``. The penalty of the other attributes
    is the caller's constant. ``mismatch``: the cells' counts for ``sel`` (compute_mismatch)."""
    cdef bint ok = True  # so never written
    return _ltss_step(g, st, sw, sel, <int32_t*>mismatch, &ok, j, penalty, out_row)


cdef inline double _ltss_step(const Grid* g, const ScoreTable* st, SearchWork* sw,
                              const uint8_t* sel, int32_t* mismatch, bint* mismatch_ok,
                              int64_t j, double penalty, uint8_t* out_row) noexcept nogil:
    """:func:`ltss_step` with ``mismatch`` recounted first if it is stale (``mismatch_ok``)
    and the relaxed subgroup is not listed from the key index."""
    cdef int64_t k = g.card[j]
    cdef int64_t* counts = sw.counts
    cdef uint8_t* chosen = sw.chosen
    cdef uint8_t* keep = sw.keep
    cdef int64_t v, e, t, size, n_keep, n
    cdef double best, unused, f_k, j_k, mid
    cdef bint best_is_all = True

    if g.index != NULL and g.index.cube != NULL:
        _cube_sums(g, sel, j, counts)
        g.index.load(st.table, j, g.index.c_sums, g.index.w_sums, counts)
    else:
        n = _relaxed_cells(g, sel, mismatch, mismatch_ok, j, sw.cells, counts)
        st.group(st.table, sw.cells, n, j, counts)

    # candidate 0: attribute unconstrained (no penalty for j)
    for v in range(k):
        chosen[v] = 1 if counts[v] > 0 else 0
    st.score_chosen(st.table, chosen, k, &best, &unused)
    for v in range(k):
        out_row[v] = 1

    # per-value intervals {u : F_v(u) > penalty}, clipped to the direction
    n_keep = 0
    for v in range(k):
        keep[v] = 0
        if counts[v] == 0:
            continue
        if st.value_interval(st.table, v, penalty, &sw.umin[v], &sw.umax[v]):
            keep[v] = 1
            n_keep += 1
    if n_keep == 0:
        return best

    e = 0
    for v in range(k):
        if keep[v]:
            sw.ends[e] = sw.umin[v]
            sw.ends[e + 1] = sw.umax[v]
            e += 2
    qsort(sw.ends, e, sizeof(double), _cmp_double)
    for t in range(e - 1):
        if not sw.ends[t] < sw.ends[t + 1]:
            continue
        mid = 0.5 * (sw.ends[t] + sw.ends[t + 1])
        size = 0
        for v in range(k):
            chosen[v] = 1 if (keep[v] and sw.umin[v] < mid and mid < sw.umax[v]) else 0
            if chosen[v]:
                size += 1
        if size == 0:
            continue
        st.score_chosen(st.table, chosen, k, &f_k, &unused)
        j_k = f_k - penalty * size
        if j_k > best:
            best = j_k
            best_is_all = False
            for v in range(k):
                out_row[v] = chosen[v]
    if best_is_all:
        for v in range(k):
            out_row[v] = 1
    return best


# --------------------------------------------------------------------------------------------
# Coordinate ascent with random restarts (methods.md §1.4.4)
# --------------------------------------------------------------------------------------------


cdef inline double _memo_step(const Grid* g, const ScoreTable* st, SearchWork* sw,
                              const uint8_t* sel, int32_t* mismatch, bint* mismatch_ok,
                              int64_t j, double penalty, uint8_t* out_row) noexcept nogil:
    """:func:`ltss_step`, computed once per (j, selection of the other attributes).

    ``mismatch`` is brought up to date (``mismatch_ok``) only when a step scans the cells: the
    ascent skips that O(cells) bookkeeping while its steps are looked up or listed by key."""
    cdef StepMemo* memo = &sw.memo
    cdef bint found = False
    cdef int64_t slot = 0
    cdef int64_t v
    cdef int64_t kmax = memo.kmax
    cdef double part
    if memo.capacity > 0:
        memcpy(memo.key, sel, memo.key_len)
        for v in range(kmax):
            memo.key[j * kmax + v] = 0
        slot = _memo_find(memo, memo.key, j, &found)
        if found:
            for v in range(g.card[j]):
                out_row[v] = memo.rows[slot * kmax + v]
            return memo.parts[slot]
    part = _ltss_step(g, st, sw, sel, mismatch, mismatch_ok, j, penalty, out_row)
    if memo.capacity > 0:
        _memo_keep(memo, slot, j, out_row, part)
    return part


cdef inline double _memo_start_score(const ScoreTable* st, SearchWork* sw,
                                     const uint8_t* sel) noexcept nogil:
    """F of a restart's random start, computed once per selection (attribute -1 in the memo:
    the random starts of one search repeat when the attributes have few values)."""
    cdef StepMemo* memo = &sw.memo
    cdef bint found = False
    cdef int64_t slot = 0
    cdef double f
    if memo.capacity > 0:
        memcpy(memo.key, sel, memo.key_len)
        slot = _memo_find(memo, memo.key, -1, &found)
        if found:
            return memo.parts[slot]
    f = st.score_set(st.table, sel)
    if memo.capacity > 0:
        _memo_keep(memo, slot, -1, sw.chosen, f)
    return f


cdef inline double _ascend(const Grid* g, const ScoreTable* st, SearchWork* sw, uint8_t* sel,
                           int32_t* mismatch, bint mismatch_ok, uint8_t* row, uint8_t* visited,
                           double penalty, uint64_t* state) noexcept nogil:
    """One coordinate-ascent run from ``sel`` to a local optimum; returns its objective."""
    cdef int64_t m = g.m
    cdef int64_t kmax = g.kmax
    cdef double cur, part, cand
    cdef int64_t n_unvisited, pick, j, a, v
    cur = _memo_start_score(st, sw, sel) - penalty * _penalty_units(g, sel, -1)
    for a in range(m):
        visited[a] = 0
    n_unvisited = m
    while n_unvisited > 0:
        pick = randint(state, n_unvisited)
        j = -1
        for a in range(m):
            if not visited[a]:
                if pick == 0:
                    j = a
                    break
                pick -= 1
        part = _memo_step(g, st, sw, sel, mismatch, &mismatch_ok, j, penalty, row)
        cand = part - penalty * _penalty_units(g, sel, j)
        if cand > cur + REL_IMPROVEMENT * max(1.0, fabs(cur)):
            mismatch_ok = False  # recounted when a step next needs it (most are looked up)
            for v in range(g.card[j]):
                sel[j * kmax + v] = row[v]
            cur = cand
            for a in range(m):
                visited[a] = 0
            n_unvisited = m
        visited[j] = 1
        n_unvisited -= 1
    return cur


cdef inline int search(const Grid* g, const ScoreTable* st, double penalty, int restarts,
                       uint64_t seed, uint8_t* best_sel, double* best_out) except -1:
    """Best penalised objective over ``restarts`` coordinate-ascent runs (the first from all
    values, the others from random starts) and its subgroup, written into ``best_sel``
    ((m, kmax) bytes; all values when no run beats -inf). The GIL is released during each run
    and Ctrl-C is checked between runs."""
    cdef int64_t m = g.m
    cdef int64_t kmax = g.kmax
    cdef int64_t r
    cdef uint64_t state = seed
    cdef double cur
    cdef SearchWork sw
    cdef uint8_t* sel = NULL
    cdef int32_t* mismatch = NULL
    cdef uint8_t* row = NULL
    cdef uint8_t* visited = NULL
    select_all(g, best_sel)
    best_out[0] = -INFINITY
    if m == 0:
        best_out[0] = 0.0
        return 0
    search_work_alloc(&sw, g.n_cells, kmax)
    try:
        sel = <uint8_t*>malloc(m * kmax + 1)
        mismatch = <int32_t*>malloc((g.n_cells + 1) * sizeof(int32_t))
        row = <uint8_t*>calloc(kmax + 1, 1)
        visited = <uint8_t*>malloc(m + 1)
        if sel == NULL or mismatch == NULL or row == NULL or visited == NULL:
            raise MemoryError("not enough memory for the subset-scan workspace")
        _memo_alloc(&sw.memo, m, kmax)
        for r in range(restarts):
            PyErr_CheckSignals()  # Ctrl-C between restarts raises here
            if r == 0:
                select_all(g, sel)
            else:
                _random_start(g, sel, &state)
            with nogil:
                cur = _ascend(g, st, &sw, sel, mismatch, False, row, visited, penalty, &state)
            if cur > best_out[0]:
                best_out[0] = cur
                memcpy(best_sel, sel, m * kmax)
    finally:
        free(sel)
        free(mismatch)
        free(row)
        free(visited)
        search_work_free(&sw)
    return 0
