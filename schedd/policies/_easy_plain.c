/* The loop of schedd.policies.easy_plain.run_plain_easy in C: EASY on a node pool with no
 * mechanism in use, on row numbers and times only.
 *
 * run(submit, nodes, walltime, setup, target, total, free, order, incremental, now,
 *     progress) -> (start, end, backfilled, started, ended, now, busy, passes, steps)
 * takes the job columns of easy_plain._job_columns (float64, and int64 nodes), in queue
 * order, and gives what the Python loop gives: each row's start and end (float64, -1 for
 * none), whether it was backfilled (uint8), the rows in the order they started and ended
 * (int64), the last instant, the busy node-seconds, the passes and the steps. Every float
 * is computed by the same IEEE operations in the same order as the Python loop (built
 * with -ffp-contract=off, so that no multiply and add are fused), and ties are broken as
 * there: the heap of ends by (end, start order), equal predicted ends by insertion, the
 * best and sjf orders by a stable sort. easy_plain.py is the reference (its loop stays the
 * fallback); tests/test_easy_plain_c.py compares the two, and tests/test_easy_plain.py
 * whichever runs with the general engine. Every 2,048 instants, as the Python loop does,
 * it takes the GIL back to call `progress` (unless None) with the jobs ended so far, and
 * to let a signal (Ctrl-C) stop the run.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { FIRST = 0, BEST = 1, SJF = 2 };
enum { NOT_NOW = 0, BY_SHADOW = 1, IN_EXTRA = 2 }; /* backfill.backfill_way */

typedef struct {
    double end;
    int64_t seq, row;
} pending_end;

typedef struct {
    double value;
    int64_t row;
} keyed_row;

typedef struct {
    Py_ssize_t n;
    const double *submit, *walltime, *setup, *target;
    const int64_t *nodes;
    int64_t total, free;
    int order, incremental;
    /* state */
    int64_t *queue;
    Py_ssize_t queue_len;
    double *by_end;
    int64_t *by_end_row;
    Py_ssize_t by_end_len;
    pending_end *heap;
    Py_ssize_t heap_len;
    double *predicted;
    /* results */
    double *start, *end;
    uint8_t *backfilled;
    int64_t *started, *ended;
    Py_ssize_t started_len, ended_len;
    /* scratch */
    int64_t *later;
    keyed_row *more;
    keyed_row *candidates;
} loop;

static int heap_less(const pending_end *a, const pending_end *b) {
    return a->end < b->end || (a->end == b->end && a->seq < b->seq);
}

static void heap_push(loop *s, pending_end item) {
    Py_ssize_t i = s->heap_len++;
    while (i > 0) {
        Py_ssize_t parent = (i - 1) / 2;
        if (!heap_less(&item, &s->heap[parent])) break;
        s->heap[i] = s->heap[parent];
        i = parent;
    }
    s->heap[i] = item;
}

static pending_end heap_pop(loop *s) {
    pending_end top = s->heap[0], last = s->heap[--s->heap_len];
    Py_ssize_t i = 0, len = s->heap_len;
    for (;;) {
        Py_ssize_t child = 2 * i + 1;
        if (child >= len) break;
        if (child + 1 < len && heap_less(&s->heap[child + 1], &s->heap[child])) child++;
        if (!heap_less(&s->heap[child], &last)) break;
        s->heap[i] = s->heap[child];
        i = child;
    }
    if (len) s->heap[i] = last;
    return top;
}

/* bisect.bisect_left / bisect_right on ascending doubles and ints */
static Py_ssize_t left_of(const double *a, Py_ssize_t len, double x) {
    Py_ssize_t lo = 0, hi = len;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (a[mid] < x) lo = mid + 1; else hi = mid;
    }
    return lo;
}

static Py_ssize_t right_of(const double *a, Py_ssize_t len, double x) {
    Py_ssize_t lo = 0, hi = len;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (x < a[mid]) hi = mid; else lo = mid + 1;
    }
    return lo;
}

static Py_ssize_t row_left_of(const int64_t *a, Py_ssize_t len, int64_t x) {
    Py_ssize_t lo = 0, hi = len;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (a[mid] < x) lo = mid + 1; else hi = mid;
    }
    return lo;
}

static int by_value_then_row(const void *a, const void *b) {
    const keyed_row *x = a, *y = b;
    if (x->value < y->value) return -1;
    if (x->value > y->value) return 1;
    return (x->row > y->row) - (x->row < y->row);
}

/* easy_plain._backfill: the rows of queue[first:] started, in the order tried, into
 * s->later (count returned); *extra updated. */
static Py_ssize_t backfill(loop *s, Py_ssize_t first, int64_t free, double now, double shadow,
                           int64_t *extra) {
    const int64_t *rows = s->queue + first;
    Py_ssize_t count = s->queue_len - first, later = 0;
    if (count <= 0) return 0;
    if (s->order != FIRST) {
        /* sorted(key=...) is stable, and the queue ascends: ties go by row */
        for (Py_ssize_t c = 0; c < count; c++) {
            int64_t row = rows[c];
            s->candidates[c].row = row;
            s->candidates[c].value = s->order == BEST ? -(double)s->nodes[row]
                                                      : s->walltime[row];
        }
        qsort(s->candidates, (size_t)count, sizeof(keyed_row), by_value_then_row);
    }
    for (Py_ssize_t c = 0; c < count; c++) {
        if (free == 0) break;
        int64_t row = s->order == FIRST ? rows[c] : s->candidates[c].row;
        int64_t n = s->nodes[row];
        int way;
        if (n > free) {
            way = NOT_NOW;
        } else if (now + s->walltime[row] <= shadow) {
            way = BY_SHADOW;
        } else {
            way = n <= *extra ? IN_EXTRA : NOT_NOW;
        }
        if (way == NOT_NOW) continue;
        free -= n;
        if (way == IN_EXTRA) *extra -= n;
        s->later[later++] = row;
    }
    return later;
}

/* easy_plain._easy_starts: heads started from the front; the backfilled rows into
 * s->later (*n_later); the blocked head's shadow time and extra nodes. */
static Py_ssize_t easy_starts(loop *s, int64_t free, double now, Py_ssize_t *n_later,
                              double *shadow_out, int64_t *extra_out) {
    Py_ssize_t k = 0;
    for (; k < s->queue_len; k++) {
        int64_t row = s->queue[k];
        if (s->nodes[row] > free) break;
        free -= s->nodes[row];
    }
    if (k == s->queue_len) {
        *n_later = 0;
        *shadow_out = INFINITY;
        *extra_out = 0;
        return k;
    }
    for (Py_ssize_t j = 0; j < k; j++) {
        int64_t row = s->queue[j];
        s->more[j].value = now + s->walltime[row];
        s->more[j].row = row;
    }
    if (k > 1) qsort(s->more, (size_t)k, sizeof(keyed_row), by_value_then_row);
    int64_t need = s->nodes[s->queue[k]];
    int64_t spare = free;
    double shadow = INFINITY;
    Py_ssize_t m = k, i = 0, j;
    int broke = 0;
    for (j = 0; j < s->by_end_len; j++) {
        double end = s->by_end[j];
        while (i < m && s->more[i].value <= end) {
            if (s->more[i].value > shadow) break;
            spare += s->nodes[s->more[i].row];
            if (shadow == INFINITY && spare >= need) shadow = s->more[i].value;
            i++;
        }
        if (end > shadow) {
            broke = 1;
            break;
        }
        spare += s->nodes[s->by_end_row[j]];
        if (shadow == INFINITY && spare >= need) shadow = end;
    }
    if (!broke) {
        while (i < m && s->more[i].value <= shadow) {
            spare += s->nodes[s->more[i].row];
            if (shadow == INFINITY && spare >= need) shadow = s->more[i].value;
            i++;
        }
    }
    int64_t extra = shadow < INFINITY ? spare - need : 0;
    *n_later = backfill(s, k + 1, free, now, shadow, &extra);
    *shadow_out = shadow;
    *extra_out = extra;
    return k;
}

static void release_loop(loop *s) {
    free(s->queue);
    free(s->by_end);
    free(s->by_end_row);
    free(s->heap);
    free(s->predicted);
    free(s->start);
    free(s->end);
    free(s->backfilled);
    free(s->started);
    free(s->ended);
    free(s->later);
    free(s->more);
    free(s->candidates);
}

#define NODE_LIMIT ((uint64_t)1 << 62)

static uint64_t magnitude(int64_t v) { return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v; }

static int get_column(PyObject *obj, Py_buffer *view, Py_ssize_t n, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS) < 0) return -1;
    if (view->len != 8 * n) {
        PyErr_Format(PyExc_ValueError, "%s: %zd values expected", what, n);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static PyObject *as_bytes(const void *data, Py_ssize_t size) {
    return PyByteArray_FromStringAndSize((const char *)data, size);
}

static PyObject *run(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *objs[5], *progress;
    long long total, free_nodes;
    int order, incremental;
    double now;
    if (!PyArg_ParseTuple(args, "OOOOOLLipdO", &objs[0], &objs[1], &objs[2], &objs[3],
                          &objs[4], &total, &free_nodes, &order, &incremental, &now,
                          &progress))
        return NULL;
    if (order < FIRST || order > SJF) {
        PyErr_SetString(PyExc_ValueError, "order: 0 (first), 1 (best) or 2 (sjf)");
        return NULL;
    }
    Py_buffer views[5];
    Py_ssize_t n = -1;
    static const char *names[5] = {"submit", "nodes", "walltime", "setup", "target"};
    for (int c = 0; c < 5; c++) {
        if (n < 0) {
            if (PyObject_GetBuffer(objs[c], &views[c], PyBUF_C_CONTIGUOUS) < 0) return NULL;
            if (views[c].len % 8 != 0) {
                PyErr_SetString(PyExc_ValueError, "submit: 8-byte values expected");
                PyBuffer_Release(&views[c]);
                return NULL;
            }
            n = views[c].len / 8;
            continue;
        }
        if (get_column(objs[c], &views[c], n, names[c]) < 0) {
            for (int d = 0; d < c; d++) PyBuffer_Release(&views[d]);
            return NULL;
        }
    }
    /* Every count of nodes the loop keeps (idle, spare, free, extra) is a sum of these:
     * bounded so, no sum can overflow int64 (as Python's integers never do). */
    {
        const int64_t *nodes = views[1].buf;
        uint64_t sum = magnitude(total);
        sum = sum > NODE_LIMIT ? sum : sum + magnitude(free_nodes); /* each < 2**63 */
        for (Py_ssize_t r = 0; r < n && sum <= NODE_LIMIT; r++) sum += magnitude(nodes[r]);
        if (sum > NODE_LIMIT) {
            for (int c = 0; c < 5; c++) PyBuffer_Release(&views[c]);
            PyErr_SetString(PyExc_OverflowError, "node counts beyond what int64 sums hold");
            return NULL;
        }
    }
    loop s;
    memset(&s, 0, sizeof s);
    s.n = n;
    s.submit = views[0].buf;
    s.nodes = views[1].buf;
    s.walltime = views[2].buf;
    s.setup = views[3].buf;
    s.target = views[4].buf;
    s.total = total;
    s.free = free_nodes;
    s.order = order;
    s.incremental = incremental;
    size_t cells = (size_t)(n ? n : 1);
    s.queue = malloc(cells * sizeof(int64_t));
    s.by_end = malloc(cells * sizeof(double));
    s.by_end_row = malloc(cells * sizeof(int64_t));
    s.heap = malloc(cells * sizeof(pending_end));
    s.predicted = calloc(cells, sizeof(double));
    s.start = malloc(cells * sizeof(double));
    s.end = malloc(cells * sizeof(double));
    s.backfilled = calloc(cells, 1);
    s.started = malloc(cells * sizeof(int64_t));
    s.ended = malloc(cells * sizeof(int64_t));
    s.later = malloc(cells * sizeof(int64_t));
    s.more = malloc(cells * sizeof(keyed_row));
    s.candidates = malloc(cells * sizeof(keyed_row));
    if (!s.queue || !s.by_end || !s.by_end_row || !s.heap || !s.predicted || !s.start ||
        !s.end || !s.backfilled || !s.started || !s.ended || !s.later || !s.more ||
        !s.candidates) {
        release_loop(&s);
        for (int c = 0; c < 5; c++) PyBuffer_Release(&views[c]);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t r = 0; r < n; r++) s.start[r] = s.end[r] = -1.0;

    long long passes = 0, steps = 0;
    double busy = 0.0, last_t = now, shadow = INFINITY, stuck_at = 0.0;
    int64_t extra = 0, idle = s.free;
    int waiting = 0, stuck = 0, failed = 0, lost = 0;
    Py_ssize_t nxt = 0, tried = 0;
    PyThreadState *released = PyEval_SaveThread();
    while (s.heap_len || nxt < n) {
        double t = s.heap_len ? s.heap[0].end : INFINITY;
        if (nxt < n && s.submit[nxt] < t) t = s.submit[nxt];
        busy += (double)(s.total - idle) * (t - last_t);
        now = last_t = t;
        int round;
        for (round = 0; round < 10000; round++) {
            while (s.heap_len && s.heap[0].end == t) {
                int64_t row = heap_pop(&s).row;
                idle += s.nodes[row];
                Py_ssize_t i = left_of(s.by_end, s.by_end_len, s.predicted[row]);
                while (i < s.by_end_len && s.by_end_row[i] != row) i++;
                if (i == s.by_end_len) { /* a NaN end: Python's list raises IndexError */
                    lost = 1;
                    break;
                }
                memmove(s.by_end + i, s.by_end + i + 1,
                        (size_t)(s.by_end_len - i - 1) * sizeof(double));
                memmove(s.by_end_row + i, s.by_end_row + i + 1,
                        (size_t)(s.by_end_len - i - 1) * sizeof(int64_t));
                s.by_end_len--;
                s.end[row] = t;
                s.ended[s.ended_len++] = row;
                waiting = 0;
            }
            if (lost) break;
            while (nxt < n && s.submit[nxt] == t) s.queue[s.queue_len++] = nxt++;
            passes++;
            if (idle > 0 && s.queue_len) {
                Py_ssize_t heads, n_later;
                if (waiting) {
                    heads = 0;
                    n_later = backfill(&s, row_left_of(s.queue, s.queue_len, tried), idle, t,
                                       shadow, &extra);
                } else {
                    heads = easy_starts(&s, idle, t, &n_later, &shadow, &extra);
                    waiting = s.incremental && heads < s.queue_len;
                }
                tried = nxt;
                for (Py_ssize_t j = 0; j < heads + n_later; j++) {
                    int64_t row = j < heads ? s.queue[j] : s.later[j - heads];
                    idle -= s.nodes[row];
                    s.start[row] = t;
                    double c0 = t + s.setup[row] + 0.0;
                    double finish = c0 + s.target[row];
                    pending_end item = {t > finish ? t : finish, (int64_t)s.started_len, row};
                    heap_push(&s, item);
                    double predicted = c0 + s.walltime[row];
                    s.predicted[row] = t > predicted ? t : predicted;
                    Py_ssize_t i = right_of(s.by_end, s.by_end_len, s.predicted[row]);
                    memmove(s.by_end + i + 1, s.by_end + i,
                            (size_t)(s.by_end_len - i) * sizeof(double));
                    memmove(s.by_end_row + i + 1, s.by_end_row + i,
                            (size_t)(s.by_end_len - i) * sizeof(int64_t));
                    s.by_end[i] = s.predicted[row];
                    s.by_end_row[i] = row;
                    s.by_end_len++;
                    s.started[s.started_len++] = row;
                }
                memmove(s.queue, s.queue + heads, (size_t)(s.queue_len - heads) * sizeof(int64_t));
                s.queue_len -= heads;
                for (Py_ssize_t j = 0; j < n_later; j++) {
                    int64_t row = s.later[j];
                    s.backfilled[row] = 1;
                    Py_ssize_t at = row_left_of(s.queue, s.queue_len, row);
                    memmove(s.queue + at, s.queue + at + 1,
                            (size_t)(s.queue_len - at - 1) * sizeof(int64_t));
                    s.queue_len--;
                }
            }
            if (!s.heap_len || s.heap[0].end != t) break;
        }
        if (lost) break;
        if (round == 10000) {
            stuck = 1;
            stuck_at = t;
            break;
        }
        steps++;
        if (steps % 2048 == 0) { /* as the Python loop reports: with the GIL */
            PyEval_RestoreThread(released);
            failed = PyErr_CheckSignals() < 0;
            if (!failed && progress != Py_None) {
                PyObject *called = PyObject_CallFunction(progress, "n", s.ended_len);
                failed = called == NULL;
                Py_XDECREF(called);
            }
            released = PyEval_SaveThread();
            if (failed) break;
        }
    }
    PyEval_RestoreThread(released);
    for (int c = 0; c < 5; c++) PyBuffer_Release(&views[c]);
    PyObject *result = NULL;
    if (failed) {
        /* the callback's exception, or the signal's, is set */
    } else if (lost) {
        PyErr_SetString(PyExc_IndexError, "a running job's predicted end is not in order "
                                          "(NaN): list index out of range");
    } else if (stuck) {
        char *text = PyOS_double_to_string(stuck_at, 'g', 6, 0, NULL);
        if (text) {
            PyErr_Format(PyExc_RuntimeError,
                         "more than 10,000 scheduling rounds at t=%s: a policy loops", text);
            PyMem_Free(text);
        }
    } else {
        PyObject *parts[5] = {
            as_bytes(s.start, n * 8), as_bytes(s.end, n * 8), as_bytes(s.backfilled, n),
            as_bytes(s.started, s.started_len * 8), as_bytes(s.ended, s.ended_len * 8)};
        if (parts[0] && parts[1] && parts[2] && parts[3] && parts[4])
            result = Py_BuildValue("OOOOOddLL", parts[0], parts[1], parts[2], parts[3],
                                   parts[4], now, busy, passes, steps);
        for (int c = 0; c < 5; c++) Py_XDECREF(parts[c]);
    }
    release_loop(&s);
    return result;
}

static PyMethodDef methods[] = {
    {"run", run, METH_VARARGS,
     "run(submit, nodes, walltime, setup, target, total, free, order, incremental, now, "
     "progress): easy_plain's loop in C (see schedd/policies/_easy_plain.c)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "schedd.policies._easy_plain",
    "The plain-EASY fast path's loop in C (schedd.policies.easy_plain in Python).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__easy_plain(void) { return PyModule_Create(&module); }
