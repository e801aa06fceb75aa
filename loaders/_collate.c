/* The loader's batch kernel (loaders/collate.py collate_runs), in C: a CPython extension imports in a
 * millisecond, where numba's first load of a cached kernel takes ~0.3 s of Python holding the GIL
 * (its typing registries, scipy's BLAS check) on the way to a fresh process's second batch. It also
 * checks the shards' generations itself, so a batch costs one call from Python.
 *
 * collate_runs(arena, table, runs, generations, shards, rows, seq_len, pad_id, vocab_size, input_ids, labels,
 *              position_ids, cu_seqlens, first_row, count, state_field, generation_field, ready) -> int
 *   arena         the L2 file (any contiguous buffer); a run at byte `base` holds token_offsets
 *                 int64[nrows + 1], cu_offsets int64[nrows + 1], tokens uint32[ntokens],
 *                 cu_seqlens int32[ncu] (loaders/shm_arena.py run_views)
 *   table         int64 [n_shards, fields]: the arena's shard table (shared, written by other processes)
 *   runs          int64 [n_shards, 4]: (base, nrows, ntokens, ncu) of each shard's run as the caller last
 *                 looked it up, at `generations` int64 [n_shards]
 *   shards, rows  int64 [n]: the shard and the row of each batch row
 *   vocab_size    every token id must be below it (an id past the embedding table reaches the model otherwise)
 *   input_ids, labels, position_ids   int64 [>= first_row + n, seq_len], written from row first_row
 *   cu_seqlens    int32, boundaries written after its first `count`
 * Returns the boundaries written so far; STALE (-2) before reading when a shard's entry is not
 * `ready` at the generation looked up (look it up again); CHANGED (-3) when one changed while its rows
 * were copied (a seqlock: read again); BAD_ROW (-1) when an offset points outside its run, boundaries do not
 * rise from 0 inside the row, or a token id is not below vocab_size. Runs
 * without the GIL. Nothing is read outside `arena` nor written outside the outputs, whatever the
 * table and the runs say.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#define IGNORE (-100)
#define BAD_ROW (-1)
#define STALE (-2)
#define CHANGED (-3)

static int check(Py_buffer *view, Py_ssize_t bytes, const char *name) {
    if (view->len < bytes) {
        PyErr_Format(PyExc_ValueError, "collate_runs: %s holds %zd bytes, %zd needed", name, view->len, bytes);
        return -1;
    }
    return 0;
}

/* Where a row is in the arena: its tokens and its boundaries cu[c0:c1]. */
typedef struct {
    const uint32_t *tokens;
    const int32_t *cu;
    int64_t length, c0, c1;
} row_view;

/* Row r of the run; 0, or BAD_ROW when the run does not hold what its offsets say. */
static int find_row(const char *arena, int64_t arena_bytes, const int64_t *run, int64_t r, int64_t seq_len,
                    row_view *row) {
    int64_t base = run[0], nrows = run[1], ntokens = run[2], ncu = run[3];
    /* the run inside the arena (each term bounded before the sum, so nothing overflows) */
    if (base < 0 || base % 8 || nrows < 0 || ntokens < 0 || ncu < 0 || base > arena_bytes ||
        nrows >= arena_bytes / 16 || ntokens > arena_bytes / 4 || ncu > arena_bytes / 4 ||
        16 * (nrows + 1) + 4 * (ntokens + ncu) > arena_bytes - base)
        return BAD_ROW;
    if (r < 0 || r >= nrows)
        return BAD_ROW;
    const int64_t *token_offsets = (const int64_t *)(arena + base);
    const int64_t *cu_offsets = token_offsets + nrows + 1;
    const uint32_t *tokens = (const uint32_t *)(cu_offsets + nrows + 1);
    const int32_t *cu = (const int32_t *)(tokens + ntokens);
    int64_t t0 = token_offsets[r], t1 = token_offsets[r + 1], c0 = cu_offsets[r], c1 = cu_offsets[r + 1];
    if (!(0 <= t0 && t0 <= t1 && t1 <= ntokens && t1 - t0 <= seq_len && 0 <= c0 && c0 + 2 <= c1 && c1 <= ncu))
        return BAD_ROW;
    if (cu[c0] != 0)
        return BAD_ROW;
    *row = (row_view){tokens + t0, cu, t1 - t0, c0, c1};
    return 0;
}

#define PREFETCH_ROWS 2 /* rows whose tokens are asked for ahead of the one being written */

/* Rows lie anywhere in L2: their tokens are asked for (a cache line holds 16) a few rows before they
 * are written. A row that is not where its run says is skipped here and refused when written. */
static void prefetch_row(const char *arena, int64_t arena_bytes, const int64_t *run, int64_t r, int64_t seq_len) {
    row_view row;
    if (!find_row(arena, arena_bytes, run, r, seq_len, &row))
        for (int64_t k = 0; k < row.length; k += 16)
            __builtin_prefetch(row.tokens + k);
}

/* Writes batch row b; 0, or BAD_ROW when its boundaries do not rise inside it or do not fit cu_out, or an id is
 * not below vocab_size. */
static int write_row(const row_view *row, int64_t seq_len, int64_t pad_id, uint32_t vocab_size, int64_t *ids,
                     int64_t *lab, int64_t *pos, int32_t *cu_out, int64_t b, int64_t *count, int64_t cu_room) {
    const uint32_t *src = row->tokens;
    int64_t length = row->length;
    if (*count + (row->c1 - row->c0) > cu_room)
        return BAD_ROW;
    /* whole-row loops, simple enough for the compiler to vectorize; then the few boundary fixes */
    uint32_t top = 0;
    for (int64_t i = 0; i < length; i++) {
        uint32_t id = src[i];
        ids[i] = id;
        top = id > top ? id : top;
    }
    if (length && top >= vocab_size)
        return BAD_ROW;
    for (int64_t i = length; i < seq_len; i++)
        ids[i] = pad_id;
    for (int64_t i = 0; i + 1 < length; i++)
        lab[i] = src[i + 1];
    int64_t start = 0;
    for (int64_t k = row->c0 + 1; k < row->c1; k++) { /* the row's document pieces */
        int64_t end = row->cu[k];
        if (end <= start || end > length)
            return BAD_ROW;
        for (int64_t i = start; i < end; i++)
            pos[i] = i - start;
        lab[end - 1] = IGNORE; /* no label across a document boundary */
        cu_out[(*count)++] = (int32_t)(b * seq_len + end);
        start = end;
    }
    if (start < seq_len) { /* the padding, a piece of its own */
        for (int64_t i = start; i < seq_len; i++) {
            lab[i] = IGNORE;
            pos[i] = i - start;
        }
        cu_out[(*count)++] = (int32_t)(b * seq_len + seq_len);
    }
    return 0;
}

/* Whether every row's shard is `ready` at the generation its run was looked up at. */
static int current(const int64_t *table, Py_ssize_t fields, const int64_t *generations, const int64_t *shards,
                   Py_ssize_t n, Py_ssize_t state_field, Py_ssize_t generation_field, int64_t ready) {
    for (Py_ssize_t i = 0; i < n; i++) {
        const int64_t *entry = table + shards[i] * fields;
        if (__atomic_load_n(entry + generation_field, __ATOMIC_ACQUIRE) != generations[shards[i]] ||
            __atomic_load_n(entry + state_field, __ATOMIC_ACQUIRE) != ready)
            return 0;
    }
    return 1;
}

static PyObject *collate_runs(PyObject *Py_UNUSED(module), PyObject *args) {
    Py_buffer arena, table, runs, gens, shards, rows, ids, lab, pos, cu;
    Py_ssize_t seq_len, first_row, count, state_field, generation_field;
    long long pad_id, ready, vocab_size;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*nLLw*w*w*w*nnnnL", &arena, &table, &runs, &gens, &shards, &rows, &seq_len,
                          &pad_id, &vocab_size, &ids, &lab, &pos, &cu, &first_row, &count, &state_field,
                          &generation_field, &ready))
        return NULL;
    Py_buffer *views[] = {&arena, &table, &runs, &gens, &shards, &rows, &ids, &lab, &pos, &cu};
    Py_ssize_t n = rows.len / 8, n_shards = gens.len / 8, result = INT64_MIN;
    Py_ssize_t fields = n_shards ? table.len / 8 / n_shards : 0, out_bytes = (first_row + n) * seq_len * 8;
    if (seq_len < 1 || first_row < 0 || count < 1 || n_shards < 1 || table.len != 8 * fields * n_shards ||
        state_field < 0 || state_field >= fields || generation_field < 0 || generation_field >= fields ||
        vocab_size < 1 || vocab_size > UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "collate_runs: seq_len, count and vocab_size must be positive, first_row >= 0, "
                                          "the table one row per shard of generations, the fields inside its rows");
    } else if (!(check(&runs, 32 * n_shards, "runs") ||
                 check(&shards, 8 * n, "shards") || check(&ids, out_bytes, "input_ids") ||
                 check(&lab, out_bytes, "labels") || check(&pos, out_bytes, "position_ids") ||
                 check(&cu, 4 * count, "cu_seqlens"))) {
        const int64_t *shard_of = shards.buf, *row_of = rows.buf, *gen = gens.buf, *entries = table.buf;
        int64_t cu_room = cu.len / 4, written = count;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++)
            if (shard_of[i] < 0 || shard_of[i] >= n_shards)
                written = BAD_ROW;
        if (written >= 0 && !current(entries, fields, gen, shard_of, n, state_field, generation_field, ready))
            written = STALE;
        if (written >= 0) {
            const int64_t *run_of = runs.buf;
            for (Py_ssize_t i = 0; i < PREFETCH_ROWS && i < n; i++)
                prefetch_row(arena.buf, arena.len, run_of + 4 * shard_of[i], row_of[i], seq_len);
            for (Py_ssize_t i = 0; i < n && written >= 0; i++) {
                Py_ssize_t ahead = i + PREFETCH_ROWS;
                if (ahead < n)
                    prefetch_row(arena.buf, arena.len, run_of + 4 * shard_of[ahead], row_of[ahead], seq_len);
                int64_t b = first_row + i, at = b * seq_len;
                row_view row;
                if (find_row(arena.buf, arena.len, run_of + 4 * shard_of[i], row_of[i], seq_len, &row) ||
                    write_row(&row, seq_len, pad_id, (uint32_t)vocab_size, (int64_t *)ids.buf + at,
                              (int64_t *)lab.buf + at, (int64_t *)pos.buf + at, cu.buf, b, &written, cu_room))
                    written = BAD_ROW;
            }
            /* the seqlock's second look: what was copied is what the entries held only if they are unchanged
             * (a row that looked bad may have been read while its shard was rewritten: CHANGED too) */
            __atomic_thread_fence(__ATOMIC_ACQUIRE);
            if (!current(entries, fields, gen, shard_of, n, state_field, generation_field, ready))
                written = CHANGED;
        }
        Py_END_ALLOW_THREADS
        result = written;
    }
    for (size_t v = 0; v < sizeof views / sizeof *views; v++)
        PyBuffer_Release(views[v]);
    return result == INT64_MIN ? NULL : PyLong_FromSsize_t(result);
}

static PyMethodDef methods[] = {
    {"collate_runs", collate_runs, METH_VARARGS, "Rows of a batch out of L2 (see loaders/collate.py)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "_collate", .m_size = -1, .m_methods = methods,
};

PyMODINIT_FUNC PyInit__collate(void) { return PyModule_Create(&module); }
