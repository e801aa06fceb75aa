/* The loader's batch kernel (loaders/collate.py collate_runs), in C: a CPython extension imports in a
 * millisecond, where numba's first load of a cached kernel takes ~0.3 s of Python holding the GIL
 * (its typing registries, scipy's BLAS check) on the way to a fresh process's second batch.
 *
 * collate_runs(arena, runs, rows, seq_len, pad_id, input_ids, labels, position_ids, cu_seqlens,
 *              first_row, count) -> int
 *   arena         the L2 file (any contiguous buffer); a run at byte `base` holds token_offsets
 *                 int64[nrows + 1], cu_offsets int64[nrows + 1], tokens uint32[ntokens],
 *                 cu_seqlens int32[ncu] (loaders/shm_arena.py run_views)
 *   runs, rows    int64 [n, 4] (base, nrows, ntokens, ncu) and int64 [n]: the row of each batch row
 *   input_ids, labels, position_ids   int64 [>= first_row + n, seq_len], written from row first_row
 *   cu_seqlens    int32, boundaries written after its first `count`
 * Returns the boundaries written so far, or -1 when anything read points outside its run (a run
 * rewritten under the reader: the caller checks the generation and reads again). Runs the loop
 * without the GIL. Nothing is read outside `arena` and nothing written outside the outputs,
 * whatever the runs say.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define IGNORE (-100)

static int check(Py_buffer *view, Py_ssize_t bytes, const char *name) {
    if (view->len < bytes) {
        PyErr_Format(PyExc_ValueError, "collate_runs: %s holds %zd bytes, %zd needed", name, view->len, bytes);
        return -1;
    }
    return 0;
}

/* One row; 0, or -1 when the run does not hold what its offsets say. */
static int collate_row(const char *arena, int64_t arena_bytes, const int64_t *run, int64_t r, int64_t seq_len,
                       int64_t pad_id, int64_t *ids, int64_t *lab, int64_t *pos, int32_t *cu_out, int64_t b,
                       int64_t *count, int64_t cu_room) {
    int64_t base = run[0], nrows = run[1], ntokens = run[2], ncu = run[3];
    /* the run inside the arena (each term bounded before the sum, so nothing overflows) */
    if (base < 0 || base % 8 || nrows < 0 || ntokens < 0 || ncu < 0 || base > arena_bytes ||
        nrows >= arena_bytes / 16 || ntokens > arena_bytes / 4 || ncu > arena_bytes / 4 ||
        16 * (nrows + 1) + 4 * (ntokens + ncu) > arena_bytes - base)
        return -1;
    if (r < 0 || r >= nrows)
        return -1;
    const int64_t *token_offsets = (const int64_t *)(arena + base);
    const int64_t *cu_offsets = token_offsets + nrows + 1;
    const uint32_t *tokens = (const uint32_t *)(cu_offsets + nrows + 1);
    const int32_t *cu = (const int32_t *)(tokens + ntokens);
    int64_t t0 = token_offsets[r], t1 = token_offsets[r + 1], c0 = cu_offsets[r], c1 = cu_offsets[r + 1];
    if (!(0 <= t0 && t0 <= t1 && t1 <= ntokens && t1 - t0 <= seq_len && 0 <= c0 && c0 + 2 <= c1 && c1 <= ncu))
        return -1;
    if (cu[c0] != 0 || *count + (c1 - c0) > cu_room)
        return -1;
    int64_t length = t1 - t0;
    const uint32_t *src = tokens + t0;
    /* whole-row loops, simple enough for the compiler to vectorize; then the few boundary fixes */
    for (int64_t i = 0; i < length; i++)
        ids[i] = src[i];
    for (int64_t i = length; i < seq_len; i++)
        ids[i] = pad_id;
    for (int64_t i = 0; i + 1 < length; i++)
        lab[i] = src[i + 1];
    int64_t start = 0;
    for (int64_t k = c0 + 1; k < c1; k++) { /* the row's document pieces */
        int64_t end = cu[k];
        if (end <= start || end > length)
            return -1;
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

static PyObject *collate_runs(PyObject *Py_UNUSED(module), PyObject *args) {
    Py_buffer arena, runs, rows, ids, lab, pos, cu;
    Py_ssize_t seq_len, first_row, count;
    long long pad_id;
    if (!PyArg_ParseTuple(args, "y*y*y*nLw*w*w*w*nn", &arena, &runs, &rows, &seq_len, &pad_id, &ids, &lab, &pos, &cu,
                          &first_row, &count))
        return NULL;
    Py_buffer *views[] = {&arena, &runs, &rows, &ids, &lab, &pos, &cu};
    Py_ssize_t n = rows.len / 8, result = -2;
    Py_ssize_t out_bytes = (first_row + n) * seq_len * 8;
    if (seq_len < 1 || first_row < 0 || count < 1) {
        PyErr_SetString(PyExc_ValueError, "collate_runs: seq_len and count must be positive, first_row >= 0");
    } else if (!(check(&runs, 32 * n, "runs") || check(&ids, out_bytes, "input_ids") ||
                 check(&lab, out_bytes, "labels") || check(&pos, out_bytes, "position_ids") ||
                 check(&cu, 4 * count, "cu_seqlens"))) {
        const char *base = arena.buf;
        const int64_t *run_table = runs.buf, *row_of = rows.buf;
        int64_t cu_room = cu.len / 4, written = count;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) {
            int64_t b = first_row + i, at = b * seq_len;
            if (collate_row(base, arena.len, run_table + 4 * i, row_of[i], seq_len, pad_id, (int64_t *)ids.buf + at,
                            (int64_t *)lab.buf + at, (int64_t *)pos.buf + at, cu.buf, b, &written, cu_room)) {
                written = -1;
                break;
            }
        }
        Py_END_ALLOW_THREADS
        result = written;
    }
    for (size_t v = 0; v < sizeof views / sizeof *views; v++)
        PyBuffer_Release(views[v]);
    return result == -2 ? NULL : PyLong_FromSsize_t(result);
}

static PyMethodDef methods[] = {
    {"collate_runs", collate_runs, METH_VARARGS, "Rows of a batch out of L2 (see loaders/collate.py)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "_collate", .m_size = -1, .m_methods = methods,
};

PyMODINIT_FUNC PyInit__collate(void) { return PyModule_Create(&module); }
