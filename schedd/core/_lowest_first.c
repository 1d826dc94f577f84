/* The lowest-first fit of schedd.core.node_numbers in C, without the GIL: node numbers for
 * a node pool's execution segments (segments.csv), a block of segments at a time.
 *
 * LowestFirst(total, ends, by_end) and .place(starts, sizes) -> (flat, counts) do what
 * node_numbers.LowestFirst does, value for value (tests/test_node_numbers_c.py holds the
 * two together): ends (float64) is every segment's end, by_end (int64) their numbers
 * sorted by end (a stable sort); place numbers the next segments in start order and gives
 * their ranges [lo, hi) end to end (int64 pairs, a bytearray) and how many each segment
 * has (int64, a bytearray). The Python module stays the reference and the fallback where
 * this is not built.
 *
 * Free ranges are kept as there: disjoint, never adjacent, in descending order, so that
 * the lowest is last. A placed segment's ranges are held (malloc) until its end gives
 * them back: memory for the segments still running, not for every segment placed.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int64_t *data;
    Py_ssize_t len, cap;
} vec;

static int vec_reserve(vec *v, Py_ssize_t need) {
    if (need <= v->cap) return 0;
    Py_ssize_t cap = v->cap ? v->cap : 16;
    while (cap < need) cap *= 2;
    int64_t *data = realloc(v->data, (size_t)cap * sizeof(int64_t));
    if (!data) return -1;
    v->data = data;
    v->cap = cap;
    return 0;
}

typedef struct {
    PyObject_HEAD
    vec los, his;         /* free ranges [los[i], his[i]), descending */
    double *ends;         /* every segment's end */
    int64_t *by_end;      /* segment numbers sorted by end */
    int64_t **held;       /* each placed segment's ranges (flat pairs) until it ends */
    int64_t *held_count;  /* how many ranges each holds */
    Py_ssize_t n, next_end, placed;
    int busy;             /* a place() is running without the GIL */
} Fit;

/* The n lowest free nodes, appended to out as flat pairs; -1 if the pool has too few
 * (the caller raises), -2 if memory ran out. */
static int take(Fit *f, int64_t n, vec *out) {
    while (n > 0) {
        if (f->los.len == 0) return -1;
        int64_t lo = f->los.data[f->los.len - 1], hi = f->his.data[f->his.len - 1];
        int64_t k = n < hi - lo ? n : hi - lo;
        if (vec_reserve(out, out->len + 2) < 0) return -2;
        out->data[out->len++] = lo;
        out->data[out->len++] = lo + k;
        n -= k;
        if (lo + k == hi) {
            f->los.len--;
            f->his.len--;
        } else {
            f->los.data[f->los.len - 1] = lo + k;
        }
    }
    return 0;
}

/* Free flat ranges (none of their nodes free now); -2 if memory ran out. */
static int give(Fit *f, const int64_t *ranges, int64_t count) {
    for (int64_t j = 0; j < count; j++) {
        int64_t lo = ranges[2 * j], hi = ranges[2 * j + 1];
        int64_t *los = f->los.data, *his = f->his.data;
        Py_ssize_t m = f->los.len, i = 0, top = m;
        while (i < top) { /* how many free ranges lie above this one */
            Py_ssize_t mid = (i + top) >> 1;
            if (los[mid] > lo) {
                i = mid + 1;
            } else {
                top = mid;
            }
        }
        int below = i < m && his[i] == lo;
        int above = i > 0 && los[i - 1] == hi;
        if (below && above) {
            his[i] = his[i - 1];
            memmove(los + i - 1, los + i, (size_t)(m - i) * sizeof(int64_t));
            memmove(his + i - 1, his + i, (size_t)(m - i) * sizeof(int64_t));
            f->los.len--;
            f->his.len--;
        } else if (below) {
            his[i] = hi;
        } else if (above) {
            los[i - 1] = lo;
        } else {
            if (vec_reserve(&f->los, m + 1) < 0 || vec_reserve(&f->his, m + 1) < 0) return -2;
            los = f->los.data;
            his = f->his.data;
            memmove(los + i + 1, los + i, (size_t)(m - i) * sizeof(int64_t));
            memmove(his + i + 1, his + i, (size_t)(m - i) * sizeof(int64_t));
            los[i] = lo;
            his[i] = hi;
            f->los.len++;
            f->his.len++;
        }
    }
    return 0;
}

static void fit_clear(Fit *f) {
    if (f->held) {
        for (Py_ssize_t k = 0; k < f->placed; k++) free(f->held[k]);
    }
    free(f->held);
    free(f->held_count);
    free(f->ends);
    free(f->by_end);
    free(f->los.data);
    free(f->his.data);
    memset(&f->los, 0, sizeof(vec));
    memset(&f->his, 0, sizeof(vec));
    f->held = NULL;
    f->held_count = NULL;
    f->ends = NULL;
    f->by_end = NULL;
    f->n = f->next_end = f->placed = 0;
}

static void fit_dealloc(Fit *f) {
    fit_clear(f);
    Py_TYPE(f)->tp_free((PyObject *)f);
}

static int read_buffer(PyObject *obj, Py_buffer *view, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS) < 0) return -1;
    if (view->len % 8 != 0) {
        PyErr_Format(PyExc_ValueError, "%s: 8-byte values expected", what);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static int fit_init(Fit *f, PyObject *args, PyObject *kwds) {
    static char *names[] = {"total", "ends", "by_end", NULL};
    long long total;
    PyObject *ends_obj, *by_end_obj;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "LOO", names, &total, &ends_obj, &by_end_obj))
        return -1;
    if (f->busy) {
        PyErr_SetString(PyExc_RuntimeError, "place() is running on this fit");
        return -1;
    }
    fit_clear(f);
    Py_buffer ends, by_end;
    if (read_buffer(ends_obj, &ends, "ends") < 0) return -1;
    if (read_buffer(by_end_obj, &by_end, "by_end") < 0) {
        PyBuffer_Release(&ends);
        return -1;
    }
    Py_ssize_t n = ends.len / 8;
    int ok = by_end.len / 8 == n;
    if (!ok) PyErr_SetString(PyExc_ValueError, "by_end must number every segment of ends once");
    if (ok) {
        f->ends = malloc((size_t)(n ? n : 1) * sizeof(double));
        f->by_end = malloc((size_t)(n ? n : 1) * sizeof(int64_t));
        f->held = calloc((size_t)(n ? n : 1), sizeof(int64_t *));
        f->held_count = calloc((size_t)(n ? n : 1), sizeof(int64_t));
        ok = f->ends && f->by_end && f->held && f->held_count;
        if (!ok) PyErr_NoMemory();
    }
    if (ok) {
        memcpy(f->ends, ends.buf, (size_t)n * sizeof(double));
        memcpy(f->by_end, by_end.buf, (size_t)n * sizeof(int64_t));
        for (Py_ssize_t p = 0; p < n && ok; p++) {
            if (f->by_end[p] < 0 || f->by_end[p] >= n) {
                PyErr_SetString(PyExc_ValueError, "by_end must number every segment of ends once");
                ok = 0;
            }
        }
    }
    PyBuffer_Release(&ends);
    PyBuffer_Release(&by_end);
    if (!ok) {
        fit_clear(f);
        return -1;
    }
    f->n = n;
    if (total > 0) {
        if (vec_reserve(&f->los, 1) < 0 || vec_reserve(&f->his, 1) < 0) {
            PyErr_NoMemory();
            return -1;
        }
        f->los.data[f->los.len++] = 0;
        f->his.data[f->his.len++] = total;
    }
    return 0;
}

static PyObject *fit_place(Fit *f, PyObject *args) {
    PyObject *starts_obj, *sizes_obj;
    if (!PyArg_ParseTuple(args, "OO", &starts_obj, &sizes_obj)) return NULL;
    if (f->busy) {
        PyErr_SetString(PyExc_RuntimeError, "place() is already running on this fit");
        return NULL;
    }
    Py_buffer starts, sizes;
    if (read_buffer(starts_obj, &starts, "starts") < 0) return NULL;
    if (read_buffer(sizes_obj, &sizes, "sizes") < 0) {
        PyBuffer_Release(&starts);
        return NULL;
    }
    Py_ssize_t count = starts.len / 8;
    if (sizes.len / 8 != count) {
        PyBuffer_Release(&starts);
        PyBuffer_Release(&sizes);
        PyErr_SetString(PyExc_ValueError, "one size per start");
        return NULL;
    }
    if (f->placed + count > f->n) {
        PyBuffer_Release(&starts);
        PyBuffer_Release(&sizes);
        PyErr_SetString(PyExc_ValueError, "more segments placed than ends were given");
        return NULL;
    }
    vec flat = {NULL, 0, 0};
    int64_t *counts = malloc((size_t)(count ? count : 1) * sizeof(int64_t));
    int status = counts ? 0 : -2;
    const double *t_start = starts.buf;
    const int64_t *size = sizes.buf;
    f->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t p = f->next_end;
    for (Py_ssize_t i = 0; i < count && status == 0; i++) {
        double t = t_start[i];
        /* Segments ending by t give their nodes back first (node_numbers.py says why
         * the walk may stop at one not placed yet). */
        while (p < f->n) {
            int64_t k = f->by_end[p];
            if (k >= f->placed || f->ends[k] > t) break;
            status = give(f, f->held[k], f->held_count[k]);
            if (status) break;
            free(f->held[k]);
            f->held[k] = NULL;
            f->held_count[k] = 0;
            p++;
        }
        if (status) break;
        Py_ssize_t first = flat.len;
        status = take(f, size[i], &flat);
        if (status) break;
        int64_t pairs = (flat.len - first) / 2;
        counts[i] = pairs;
        int64_t *mine = malloc((size_t)(pairs ? pairs : 1) * 2 * sizeof(int64_t));
        if (!mine) {
            status = -2;
            break;
        }
        if (pairs) /* none: flat may have no memory yet, and memcpy takes no NULL */
            memcpy(mine, flat.data + first, (size_t)pairs * 2 * sizeof(int64_t));
        f->held[f->placed] = mine;
        f->held_count[f->placed] = pairs;
        f->placed++;
    }
    f->next_end = p;
    Py_END_ALLOW_THREADS
    f->busy = 0;
    PyBuffer_Release(&starts);
    PyBuffer_Release(&sizes);
    PyObject *result = NULL;
    if (status == -1) {
        PyErr_SetString(PyExc_ValueError, "more nodes held than the machine has");
    } else if (status == -2) {
        PyErr_NoMemory();
    } else {
        PyObject *flat_out = PyByteArray_FromStringAndSize((const char *)flat.data,
                                                           flat.len * 8);
        PyObject *counts_out = PyByteArray_FromStringAndSize((const char *)counts, count * 8);
        if (flat_out && counts_out) result = PyTuple_Pack(2, flat_out, counts_out);
        Py_XDECREF(flat_out);
        Py_XDECREF(counts_out);
    }
    free(flat.data);
    free(counts);
    return result;
}

static PyMethodDef fit_methods[] = {
    {"place", (PyCFunction)fit_place, METH_VARARGS,
     "place(starts, sizes) -> (flat, counts): node ranges of the next segments (float64 "
     "starts, int64 sizes) as int64 bytearrays (see node_numbers.LowestFirst.place)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject FitType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "schedd.core._lowest_first.LowestFirst",
    .tp_basicsize = sizeof(Fit),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "LowestFirst(total, ends, by_end): node_numbers.LowestFirst in C.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)fit_init,
    .tp_dealloc = (destructor)fit_dealloc,
    .tp_methods = fit_methods,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "schedd.core._lowest_first",
    "The lowest-first fit of node numbers in C (schedd.core.node_numbers in Python).", -1,
    NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__lowest_first(void) {
    if (PyType_Ready(&FitType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&FitType);
    if (PyModule_AddObject(m, "LowestFirst", (PyObject *)&FitType) < 0) {
        Py_DECREF(&FitType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
