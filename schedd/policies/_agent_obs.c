/* The agent's observation on a plain node pool in C: what
 * schedd.policies.agent_plain.PlainEpisode._observe computes in Python (which stays the
 * reference and the fallback; tests/test_gym_plain.py compares the two).
 *
 * fill(jobs, machine, static, rows, now, free, total, waiting, running, ends, end_rows,
 *      picked) writes into `jobs` (window x F float64, zeros) the rows of `static`
 * (n x F float64: each job's fixed columns) named by the list `rows`, with the wait
 * (now - submit) and fits-now (nodes <= free) columns filled, and into `machine`
 * (5 + 2 * limit float64, zeros) now, free, total, waiting and running, then
 * (seconds to predicted end, nodes) of the first `limit` running jobs: `ends` (floats,
 * ascending) and `end_rows` (their rows), merged with the jobs of `picked` (started by
 * the pass: seconds = walltime) and sorted as Python sorts the pairs. Every value is the
 * same IEEE operation Python and NumPy do, so the arrays are equal bit for bit.
 * Column numbers as schedd.policies.scoring numbers JOB_FEATURES.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>
#include <string.h>

enum { WAIT = 1, NODES = 2, WALLTIME = 3, SUBMIT = 5, FITS = 10, F = 11 };

typedef struct {
    double a, b;
} pair;

static int pair_less(const void *x, const void *y) {
    const pair *p = x, *q = y;
    if (p->a < q->a) return -1;
    if (p->a > q->a) return 1;
    return (p->b > q->b) - (p->b < q->b);
}

/* rows[i] as a row of static (0 <= row < n), or -1 with an exception set. Only an int
 * (or a subclass) is taken: converting anything else would run Python code (__index__),
 * which could shrink the list while its size is held here. */
static Py_ssize_t row_at(PyObject *list, Py_ssize_t i, Py_ssize_t n) {
    PyObject *item = PyList_GET_ITEM(list, i);
    if (!PyLong_Check(item)) {
        PyErr_SetString(PyExc_TypeError, "fill: rows must be ints");
        return -1;
    }
    Py_ssize_t row = PyLong_AsSsize_t(item);
    if (row == -1 && PyErr_Occurred()) return -1;
    if (row < 0 || row >= n) {
        PyErr_SetString(PyExc_IndexError, "row out of range");
        return -1;
    }
    return row;
}

static PyObject *fill(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *jobs_obj, *machine_obj, *static_obj, *rows, *ends, *end_rows, *picked;
    double now;
    long long free_nodes, total, waiting, running;
    if (!PyArg_ParseTuple(args, "OOOO!dLLLLO!O!O!", &jobs_obj, &machine_obj, &static_obj,
                          &PyList_Type, &rows, &now, &free_nodes, &total, &waiting,
                          &running, &PyList_Type, &ends, &PyList_Type, &end_rows,
                          &PyList_Type, &picked))
        return NULL;
    Py_buffer jb, mb, sb;
    if (PyObject_GetBuffer(jobs_obj, &jb, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
        return NULL;
    if (PyObject_GetBuffer(machine_obj, &mb, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&jb);
        return NULL;
    }
    if (PyObject_GetBuffer(static_obj, &sb, PyBUF_C_CONTIGUOUS) < 0) {
        PyBuffer_Release(&jb);
        PyBuffer_Release(&mb);
        return NULL;
    }
    PyObject *result = NULL;
    pair *pairs = NULL;
    double *out = jb.buf, *m = mb.buf;
    const double *st = sb.buf;
    Py_ssize_t window = jb.len / (8 * F), n_jobs = sb.len / (8 * F);
    Py_ssize_t limit = (mb.len / 8 - 5) / 2;
    Py_ssize_t n = PyList_GET_SIZE(rows), n_ends = PyList_GET_SIZE(ends);
    Py_ssize_t n_picked = PyList_GET_SIZE(picked);
    if (jb.len % (8 * F) || sb.len % (8 * F) || mb.len < 40 || (mb.len / 8 - 5) % 2 ||
        n > window || PyList_GET_SIZE(end_rows) != n_ends) {
        PyErr_SetString(PyExc_ValueError, "fill: arrays of the wrong sizes");
        goto done;
    }
    double fr = (double)free_nodes;
    for (Py_ssize_t j = 0; j < n; j++) {
        Py_ssize_t row = row_at(rows, j, n_jobs);
        if (row < 0) goto done;
        double *dst = out + j * F;
        memcpy(dst, st + row * F, F * sizeof(double));
        dst[WAIT] = now - dst[SUBMIT];
        dst[FITS] = dst[NODES] <= fr ? 1.0 : 0.0;
    }
    m[0] = now;
    m[1] = fr;
    m[2] = (double)total;
    m[3] = (double)waiting;
    m[4] = (double)running;
    if (limit > 0) {
        Py_ssize_t k = n_ends < limit ? n_ends : limit;
        pairs = malloc((size_t)(k + n_picked + 1) * sizeof(pair));
        if (!pairs) {
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t j = 0; j < k; j++) {
            PyObject *item = PyList_GET_ITEM(ends, j);
            if (!PyFloat_Check(item)) {  /* as rows: no __float__ while the size is held */
                PyErr_SetString(PyExc_TypeError, "fill: ends must be floats");
                goto done;
            }
            double end = PyFloat_AS_DOUBLE(item);
            Py_ssize_t row = row_at(end_rows, j, n_jobs);
            if (row < 0) goto done;
            pairs[j].a = end - now;
            pairs[j].b = st[row * F + NODES];
        }
        for (Py_ssize_t j = 0; j < n_picked; j++) {
            Py_ssize_t row = row_at(picked, j, n_jobs);
            if (row < 0) goto done;
            pairs[k + j].a = st[row * F + WALLTIME];
            pairs[k + j].b = st[row * F + NODES];
        }
        Py_ssize_t all = k + n_picked;
        if (n_picked) qsort(pairs, (size_t)all, sizeof(pair), pair_less);
        if (all > limit) all = limit;
        for (Py_ssize_t j = 0; j < all; j++) {
            m[5 + 2 * j] = pairs[j].a;
            m[6 + 2 * j] = pairs[j].b;
        }
    }
    result = Py_NewRef(Py_None);
done:
    free(pairs);
    PyBuffer_Release(&jb);
    PyBuffer_Release(&mb);
    PyBuffer_Release(&sb);
    return result;
}

static PyMethodDef methods[] = {
    {"fill", fill, METH_VARARGS,
     "fill(jobs, machine, static, rows, now, free, total, waiting, running, ends, "
     "end_rows, picked): agent_plain's observation in C (see schedd/policies/_agent_obs.c)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "schedd.policies._agent_obs",
    "The agent's observation on a plain node pool in C (agent_plain.py in Python).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__agent_obs(void) { return PyModule_Create(&module); }
