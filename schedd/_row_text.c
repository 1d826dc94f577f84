/* The text of a block of table rows, formatted in C: schedd.row_text's fast path.
 *
 * rows(columns, n, sep) -> bytes gives the same bytes as schedd.text_columns.join_rows
 * over the same columns (the NumPy path, which stays the reference and the fallback):
 * cells separated by one byte, each row ended by a newline. A column is a tuple:
 *
 *   (0, int64 buffer)                       integers, as str(int)
 *   (1, float64 buffer)                     numbers: whole values as integers, others as
 *                                           f"{v:.3f}" (text_columns.fmt_number)
 *   (2, bytes)                              the same text in every row
 *   (3, int64 buffer, tuple of bytes)       words by code
 *   (4, uint8 buffer, int64 buffer)         text of any length: bytes end to end, lengths
 *   (5, int64 buffer, int64 buffer)         node ranges as interval sets ("0-3 8"): every
 *                                           row's [lo, hi) pairs end to end, and how many
 *                                           pairs each row has (run_files.interval_set)
 *
 * Formatting runs without the GIL, so two writer threads format side by side. A value it
 * cannot format exactly as Python does (nan, inf, a magnitude of 2**63 or more) raises
 * OverflowError before any text is made; the caller then takes the NumPy path. A
 * thousandth within a rounding error of a tie is formatted by Python's own
 * PyOS_double_to_string, with the GIL taken back for it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

enum kind { INTEGERS = 0, NUMBERS = 1, CONSTANT = 2, WORDS = 3, TEXT = 4, RANGES = 5 };

typedef struct {
    int kind;
    Py_buffer values;  /* INTEGERS, NUMBERS, WORDS (codes), TEXT (data), RANGES (pairs) */
    Py_buffer lengths; /* TEXT (bytes a row), RANGES (pairs a row) */
    const char **words;
    Py_ssize_t *word_lengths;
    Py_ssize_t n_words;
    const char *constant;
    Py_ssize_t constant_length;
    Py_ssize_t *text_starts; /* TEXT: where each row's text begins (RANGES: its pairs) */
    int has_values, has_lengths;
} column;

/* Two digits at a time: "00" "01" ... "99". */
static const char digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* How many decimal digits v has. */
static int digit_count(uint64_t v) {
    int n = 1;
    while (v >= 10000) {
        v /= 10000;
        n += 4;
    }
    return n + (v >= 10) + (v >= 100) + (v >= 1000);
}

/* v's digits written in place, from the last: no copy through a buffer (a call to
 * memcpy of a variable length per cell was a tenth of the formatting). */
static char *put_unsigned(char *out, uint64_t v) {
    if (v < 10) {
        *out = (char)('0' + v);
        return out + 1;
    }
    char *end = out + digit_count(v), *p = end;
    while (v >= 100) {
        unsigned r = (unsigned)(v % 100);
        v /= 100;
        p -= 2;
        p[0] = digit_pairs[2 * r];
        p[1] = digit_pairs[2 * r + 1];
    }
    if (v >= 10) {
        p[-2] = digit_pairs[2 * v];
        p[-1] = digit_pairs[2 * v + 1];
    } else {
        p[-1] = (char)('0' + v);
    }
    return end;
}

static char *put_signed(char *out, int64_t v) {
    if (v < 0) {
        *out++ = '-';
        return put_unsigned(out, (uint64_t)0 - (uint64_t)v); /* right for INT64_MIN too */
    }
    return put_unsigned(out, (uint64_t)v);
}

#define TWO_TO_63 9223372036854775808.0

/* A whole float below 2**63 in magnitude: as an integer. Otherwise thousandths rounded
 * from the exact fraction, as text_columns._fractional_cells does; *tie is set (and
 * nothing written) where Python's correctly rounded text is needed. */
static char *put_number(char *out, double v, int *tie) {
    double magnitude = fabs(v);
    double whole = floor(magnitude);
    if (whole == magnitude) {
        return put_signed(out, (int64_t)v);
    }
    double thousandths = (magnitude - whole) * 1000.0;
    double below = floor(thousandths);
    if (fabs(thousandths - below - 0.5) <= nextafter(thousandths, INFINITY) - thousandths) {
        *tie = 1;
        return out;
    }
    double rounded = nearbyint(thousandths);
    uint64_t integral = (uint64_t)whole;
    unsigned milli;
    if (rounded == 1000.0) { /* 2.9996 -> 3.000 */
        integral += 1;
        milli = 0;
    } else {
        milli = (unsigned)rounded;
    }
    if (v < 0) {
        *out++ = '-';
    }
    out = put_unsigned(out, integral);
    *out++ = '.';
    *out++ = (char)('0' + milli / 100);
    *out++ = (char)('0' + milli / 10 % 10);
    *out++ = (char)('0' + milli % 10);
    return out;
}

static void release(column *cols, Py_ssize_t n_cols) {
    for (Py_ssize_t c = 0; c < n_cols; c++) {
        if (cols[c].has_values) PyBuffer_Release(&cols[c].values);
        if (cols[c].has_lengths) PyBuffer_Release(&cols[c].lengths);
        PyMem_Free(cols[c].words);
        PyMem_Free(cols[c].word_lengths);
        PyMem_Free(cols[c].text_starts);
    }
    PyMem_Free(cols);
}

static int get_buffer(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, Py_ssize_t n,
                      const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS) < 0) return -1;
    if (view->len != itemsize * n) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes for %zd rows of %zd bytes", what,
                     view->len, n, itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* Where each row's part of a column's data begins (col->text_starts, n + 1 of them), from
 * the per-row sizes in col->lengths, none past `available`; -1 with an error set. */
static int row_starts(column *col, Py_ssize_t n, Py_ssize_t available, const char *too_many) {
    col->text_starts = PyMem_Malloc(((size_t)n + 1) * sizeof(Py_ssize_t));
    if (!col->text_starts) {
        PyErr_NoMemory();
        return -1;
    }
    const int64_t *sizes = col->lengths.buf;
    Py_ssize_t at = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (sizes[i] < 0 || sizes[i] > available - at) {
            PyErr_SetString(PyExc_ValueError, too_many);
            return -1;
        }
        col->text_starts[i] = at;
        at += (Py_ssize_t)sizes[i];
    }
    col->text_starts[n] = at;
    return 0;
}

/* A column of (kind, data, sizes): its data in units of `unit` bytes (1 for text, 16 for a
 * node range's pair), and each row's size in units, none past the data's end
 * (row_starts); -1 with an error set. */
static int data_and_sizes(column *col, PyObject *spec, Py_ssize_t n, Py_ssize_t unit,
                          const char *shape, const char *sizes_name, const char *too_many) {
    if (PyTuple_GET_SIZE(spec) != 3) {
        PyErr_SetString(PyExc_TypeError, shape);
        return -1;
    }
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(spec, 1), &col->values, PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    col->has_values = 1;
    if (col->values.len % unit != 0) { /* only pairs can be cut short */
        PyErr_SetString(PyExc_ValueError, "ranges: pairs of int64 expected");
        return -1;
    }
    if (get_buffer(PyTuple_GET_ITEM(spec, 2), &col->lengths, 8, n, sizes_name) < 0) return -1;
    col->has_lengths = 1;
    return row_starts(col, n, col->values.len / unit, too_many);
}

/* Reads one column's tuple; returns the most bytes one row of it can take (-1: error). */
static Py_ssize_t parse_column(PyObject *spec, Py_ssize_t n, column *col) {
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) < 2) {
        PyErr_SetString(PyExc_TypeError, "a column is a tuple (kind, ...)");
        return -1;
    }
    col->kind = (int)PyLong_AsLong(PyTuple_GET_ITEM(spec, 0));
    PyObject *first = PyTuple_GET_ITEM(spec, 1);
    switch (col->kind) {
    case INTEGERS:
    case NUMBERS:
        if (get_buffer(first, &col->values, 8, n, "values") < 0) return -1;
        col->has_values = 1;
        return 26; /* "-" and 19 digits, or "-" 16 digits ".ddd" */
    case CONSTANT:
        if (PyBytes_AsStringAndSize(first, (char **)&col->constant, &col->constant_length) < 0)
            return -1;
        if (memchr(col->constant, 0, (size_t)col->constant_length) != NULL) {
            PyErr_SetString(PyExc_ValueError, "a cell of text holds a NUL byte");
            return -1;
        }
        return col->constant_length;
    case WORDS: {
        if (PyTuple_GET_SIZE(spec) != 3 || !PyTuple_Check(PyTuple_GET_ITEM(spec, 2))) {
            PyErr_SetString(PyExc_TypeError, "words: (3, codes, tuple of bytes)");
            return -1;
        }
        if (get_buffer(first, &col->values, 8, n, "codes") < 0) return -1;
        col->has_values = 1;
        PyObject *words = PyTuple_GET_ITEM(spec, 2);
        col->n_words = PyTuple_GET_SIZE(words);
        col->words = PyMem_Calloc((size_t)col->n_words + 1, sizeof(char *));
        col->word_lengths = PyMem_Calloc((size_t)col->n_words + 1, sizeof(Py_ssize_t));
        if (!col->words || !col->word_lengths) {
            PyErr_NoMemory();
            return -1;
        }
        Py_ssize_t widest = 0;
        for (Py_ssize_t w = 0; w < col->n_words; w++) {
            char *text;
            if (PyBytes_AsStringAndSize(PyTuple_GET_ITEM(words, w), &text,
                                        &col->word_lengths[w]) < 0)
                return -1;
            if (memchr(text, 0, (size_t)col->word_lengths[w]) != NULL) {
                PyErr_SetString(PyExc_ValueError, "a cell of text holds a NUL byte");
                return -1;
            }
            col->words[w] = text;
            if (col->word_lengths[w] > widest) widest = col->word_lengths[w];
        }
        const int64_t *codes = col->values.buf;
        for (Py_ssize_t i = 0; i < n; i++) { /* words[code], as Python indexes */
            int64_t code = codes[i];
            if (code < -col->n_words || code >= col->n_words) {
                PyErr_Format(PyExc_IndexError, "word code %lld of %zd words",
                             (long long)code, col->n_words);
                return -1;
            }
        }
        return widest;
    }
    case TEXT: {
        if (data_and_sizes(col, spec, n, 1, "text: (4, data, lengths)", "lengths",
                           "text lengths exceed its data") < 0)
            return -1;
        Py_ssize_t at = col->text_starts[n];
        if (memchr(col->values.buf, 0, (size_t)at) != NULL) {
            PyErr_SetString(PyExc_ValueError, "a cell of text holds a NUL byte");
            return -1;
        }
        return -2; /* counted by the caller from its total */
    }
    case RANGES: {
        if (data_and_sizes(col, spec, n, 16, "ranges: (5, pairs, counts)", "counts",
                           "range counts exceed the pairs given") < 0)
            return -1;
        const int64_t *pairs = col->values.buf;
        Py_ssize_t at = col->text_starts[n];
        for (Py_ssize_t k = 0; k < at; k++) {
            if (pairs[2 * k] < 0 || pairs[2 * k + 1] <= pairs[2 * k]) {
                PyErr_SetString(PyExc_ValueError, "a node range is empty or negative");
                return -1;
            }
        }
        return -3; /* up to 42 bytes a pair: counted by the caller */
    }
    default:
        PyErr_Format(PyExc_ValueError, "unknown column kind %d", col->kind);
        return -1;
    }
}

/* Every number formattable here exactly? (checked before any text is made) */
static int numbers_exact(const double *values, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!(fabs(values[i]) < TWO_TO_63)) return 0; /* nan, inf, huge */
    }
    return 1;
}

static PyObject *rows(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *specs;
    Py_ssize_t n;
    int sep;
    if (!PyArg_ParseTuple(args, "O!nC", &PyList_Type, &specs, &n, &sep)) return NULL;
    if (sep == 0 || sep == '\n' || sep > 127) {
        PyErr_SetString(PyExc_ValueError, "separator must be one ASCII byte other than NUL "
                                          "and newline");
        return NULL;
    }
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "negative row count");
        return NULL;
    }
    Py_ssize_t n_cols = PyList_GET_SIZE(specs);
    if (n_cols == 0 || n == 0) return PyBytes_FromStringAndSize(NULL, 0);
    column *cols = PyMem_Calloc((size_t)n_cols, sizeof(column));
    if (!cols) return PyErr_NoMemory();
    Py_ssize_t per_row = n_cols; /* separators and the newline */
    Py_ssize_t text_total = 0;
    for (Py_ssize_t c = 0; c < n_cols; c++) {
        Py_ssize_t widest = parse_column(PyList_GET_ITEM(specs, c), n, &cols[c]);
        if (widest == -1) {
            release(cols, n_cols);
            return NULL;
        }
        if (widest == -2) {
            text_total += cols[c].text_starts[n];
        } else if (widest == -3) {
            text_total += 42 * cols[c].text_starts[n]; /* "lo-hi " of two 20-digit numbers */
        } else {
            per_row += widest;
        }
        if (cols[c].kind == NUMBERS && !numbers_exact(cols[c].values.buf, n)) {
            release(cols, n_cols);
            PyErr_SetString(PyExc_OverflowError, "a number not formatted here (nan, inf or "
                                                 "a magnitude of 2**63 or more)");
            return NULL;
        }
    }
    /* n is checked against a buffer only by columns that have one: a block of constant
     * columns can ask for any n, and the size must not wrap around to a small buffer. */
    size_t bound;
    if (__builtin_mul_overflow((size_t)per_row, (size_t)n, &bound) ||
        __builtin_add_overflow(bound, (size_t)text_total, &bound) ||
        bound > (size_t)PY_SSIZE_T_MAX) {
        release(cols, n_cols);
        return PyErr_NoMemory();
    }
    char *buf = PyMem_RawMalloc(bound ? bound : 1);
    if (!buf) {
        release(cols, n_cols);
        return PyErr_NoMemory();
    }
    char *out = buf;
    PyThreadState *released = PyEval_SaveThread();
    for (Py_ssize_t i = 0; i < n; i++) {
        for (Py_ssize_t c = 0; c < n_cols; c++) {
            column *col = &cols[c];
            switch (col->kind) {
            case INTEGERS:
                out = put_signed(out, ((const int64_t *)col->values.buf)[i]);
                break;
            case NUMBERS: {
                double v = ((const double *)col->values.buf)[i];
                int tie = 0;
                out = put_number(out, v, &tie);
                if (tie) { /* Python's own correctly rounded text */
                    PyEval_RestoreThread(released);
                    char *text = PyOS_double_to_string(v, 'f', 3, 0, NULL);
                    if (!text) {
                        PyMem_RawFree(buf);
                        release(cols, n_cols);
                        return NULL;
                    }
                    size_t len = strlen(text);
                    memcpy(out, text, len); /* within the 26 bytes: |v| < 2**63 */
                    out += len;
                    PyMem_Free(text);
                    released = PyEval_SaveThread();
                }
                break;
            }
            case CONSTANT:
                memcpy(out, col->constant, (size_t)col->constant_length);
                out += col->constant_length;
                break;
            case WORDS: {
                int64_t code = ((const int64_t *)col->values.buf)[i];
                if (code < 0) code += col->n_words;
                memcpy(out, col->words[code], (size_t)col->word_lengths[code]);
                out += col->word_lengths[code];
                break;
            }
            case TEXT: {
                Py_ssize_t a = col->text_starts[i], b = col->text_starts[i + 1];
                memcpy(out, (const char *)col->values.buf + a, (size_t)(b - a));
                out += b - a;
                break;
            }
            case RANGES: {
                const int64_t *pairs = col->values.buf;
                for (Py_ssize_t k = col->text_starts[i]; k < col->text_starts[i + 1]; k++) {
                    if (k > col->text_starts[i]) *out++ = ' ';
                    out = put_unsigned(out, (uint64_t)pairs[2 * k]);
                    if (pairs[2 * k + 1] - 1 > pairs[2 * k]) {
                        *out++ = '-';
                        out = put_unsigned(out, (uint64_t)(pairs[2 * k + 1] - 1));
                    }
                }
                break;
            }
            }
            *out++ = (char)(c + 1 < n_cols ? sep : '\n');
        }
    }
    PyEval_RestoreThread(released);
    PyObject *text = PyBytes_FromStringAndSize(buf, out - buf);
    PyMem_RawFree(buf);
    release(cols, n_cols);
    return text;
}

static PyMethodDef methods[] = {
    {"rows", rows, METH_VARARGS,
     "rows(columns, n, sep) -> bytes: n rows of the columns' cells, sep between, a newline "
     "ending each (see schedd/row_text.py)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "schedd._row_text",
    "Table rows formatted in C (schedd.row_text's fast path).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__row_text(void) { return PyModule_Create(&module); }
