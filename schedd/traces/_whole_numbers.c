/* A chunk of SWF rows written as whole numbers, parsed in C: schedd.traces.swf's
 * `_whole_numbers` fast path, ahead of NumPy's loadtxt (which stays the fallback).
 *
 * whole_numbers(data) -> bytearray | None: every field of every non-blank line as float64,
 * row after row, where each field is [+-]digits within int64 and separated by blanks or
 * tabs, and every line has the same number of fields. Anything else (a decimal point, an
 * exponent, a carriage return, a ragged line, a value beyond int64) gives None, and the
 * caller hands the chunk to loadtxt as before: what is accepted here, loadtxt's int64
 * parse accepts with the same values, so where this parser says no costs time only.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

static PyObject *whole_numbers(PyObject *Py_UNUSED(self), PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *p = view.buf, *end = p + view.len;
    /* A field takes at least two bytes with its separator: a bound on the fields. */
    Py_ssize_t bound = view.len / 2 + 1;
    PyObject *out = PyByteArray_FromStringAndSize(NULL, bound * (Py_ssize_t)sizeof(double));
    if (!out) {
        PyBuffer_Release(&view);
        return NULL;
    }
    double *values = (double *)PyByteArray_AS_STRING(out);
    Py_ssize_t count = 0, in_line = 0, fields = -1;
    while (p < end) {
        unsigned char c = *p;
        if (c == ' ' || c == '\t') {
            p++;
            continue;
        }
        if (c == '\n') {
            if (in_line) {
                if (fields < 0) fields = in_line;
                if (in_line != fields) goto refuse;
                in_line = 0;
            }
            p++;
            continue;
        }
        int negative = c == '-';
        if (c == '-' || c == '+') p++;
        if (p >= end || *p < '0' || *p > '9') goto refuse;
        uint64_t v = 0;
        while (p < end && *p >= '0' && *p <= '9') {
            unsigned digit = (unsigned)(*p - '0');
            if (v > (UINT64_MAX - digit) / 10) goto refuse;
            v = v * 10 + digit;
            p++;
        }
        if (p < end && *p != ' ' && *p != '\t' && *p != '\n') goto refuse;
        if (v > (negative ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX)) goto refuse;
        int64_t whole = negative ? (int64_t)(0 - v) : (int64_t)v;
        values[count++] = (double)whole; /* as loadtxt's int64, then astype(float64) */
        in_line++;
    }
    if (in_line && fields >= 0 && in_line != fields) goto refuse;
    PyBuffer_Release(&view);
    if (PyByteArray_Resize(out, count * (Py_ssize_t)sizeof(double)) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
refuse:
    PyBuffer_Release(&view);
    Py_DECREF(out);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"whole_numbers", whole_numbers, METH_O,
     "whole_numbers(data) -> bytearray | None: the chunk's fields as float64, or None where "
     "a field is not a whole number within int64 or the lines are ragged."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "schedd.traces._whole_numbers",
    "SWF rows of whole numbers parsed in C (schedd.traces.swf's fast path).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__whole_numbers(void) { return PyModule_Create(&module); }
