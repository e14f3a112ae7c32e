/* gpuprofile's compiled reader core: one field of each decoded Kineto event (msgspec structs)
 * gathered into a numpy column, a C loop where Python would run a generator per value.
 *
 * gather.py holds the pure-Python twins of these functions, which are the reference: the
 * values this file decides itself (None, ints, ASCII ids) it decides as they do, and every
 * other value it hands to the mode's Python rule (the ``rule`` argument), so rare inputs
 * (Unicode digits, text where a number was expected) cannot differ; a float column takes
 * float() of what is no int or float, as float_column's loop does. Only the public C API
 * is used; the columns are numpy arrays the caller allocates and passes as writable buffers,
 * so no numpy header is needed to build this.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>   /* NAN */
#include <string.h> /* memcmp, strcmp */

#include "_values.h"

/* The modes of gather_ints; gather.py's PLAIN, ID, INT_OR_NONE, ADDRESS. */
enum { MODE_PLAIN, MODE_ID, MODE_INT_OR_NONE, MODE_ADDRESS, MODE_COUNT };

#define NO_ID (-1LL)
/* int_or_none keeps 0 <= n < 2**62 */
#define INT_OR_NONE_LIMIT (1LL << 62)

/* getattr along ``path`` (a tuple of str): the item's first attribute, then the next ones of
 * that unless it is None (a missing ``args`` reads as args whose every field is None). A new
 * reference, or NULL with an exception set. */
static PyObject *
get_path(PyObject *item, PyObject *path)
{
    PyObject *value = item;
    Py_INCREF(value);
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(path) && (k == 0 || value != Py_None); k++) {
        PyObject *next = PyObject_GetAttr(value, PyTuple_GET_ITEM(path, k));
        Py_DECREF(value);
        if (next == NULL)
            return NULL;
        value = next;
    }
    return value;
}

/* as_id of a str, decided here where the last space-separated token is ASCII (ascii_id);
 * 0 where the Python rule must decide: a token that is not ASCII (str.isdigit and int()
 * accept other scripts' digits), or digits after several '-' (where int() raises, as it
 * does in the reference). */
static int
text_id(PyObject *text, long long *out)
{
    Py_ssize_t size;
    const char *start = PyUnicode_AsUTF8AndSize(text, &size);
    if (start == NULL) { /* lone surrogates: not UTF-8; the rule decides */
        PyErr_Clear();
        return 0;
    }
    const char *end = start + size, *token = end;
    while (token > start && token[-1] != ' ')
        token--;
    for (const char *p = token; p < end; p++)
        if ((unsigned char)*p >= 0x80)
            return 0;
    return ascii_id(start, end, out);
}

/* An int as int64: 1 with *out set, 0 where it lies beyond int64. */
static int
as_int64(PyObject *value, long long *out)
{
    int overflow;
    *out = PyLong_AsLongLongAndOverflow(value, &overflow);
    return !overflow;
}

/* A writable, C-contiguous buffer of n items of itemsize bytes. 0, or -1 with an exception. */
static int
get_column(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, Py_ssize_t n)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (view->itemsize != itemsize || view->len != n * itemsize) {
        PyErr_Format(PyExc_ValueError, "a column of %zd items of %zd bytes was expected", n,
                     itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* items[i] as a new reference; NULL, with a RuntimeError, where the list is no longer that
 * long (Python code that a value runs, a rule or an __eq__, could shrink it mid-loop). */
static PyObject *
item_at(PyObject *items, Py_ssize_t i)
{
    if (i >= PyList_GET_SIZE(items)) {
        PyErr_SetString(PyExc_RuntimeError, "the list changed while it was read");
        return NULL;
    }
    return Py_NewRef(PyList_GET_ITEM(items, i));
}

PyDoc_STRVAR(gather_ints_doc,
"gather_ints(items, path, alt, mode, absent, rule, out) -> int\n\n"
"out[i] = the integer of each item's value at path (at alt where that is None) by mode;\n"
"None is absent, and so is a value beyond int64; returns how many were beyond int64.");

static PyObject *
gather_ints(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *items, *path, *alt, *rule, *out_obj;
    int mode;
    long long absent;
    if (!PyArg_ParseTuple(args, "O!O!O!iLOO:gather_ints", &PyList_Type, &items, &PyTuple_Type,
                          &path, &PyTuple_Type, &alt, &mode, &absent, &rule, &out_obj))
        return NULL;
    if (mode < 0 || mode >= MODE_COUNT)
        return PyErr_Format(PyExc_ValueError, "unknown mode %d", mode);
    Py_ssize_t n = PyList_GET_SIZE(items);
    Py_buffer view;
    if (get_column(out_obj, &view, sizeof(long long), n) < 0)
        return NULL;
    long long *out = view.buf;
    Py_ssize_t beyond = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = item_at(items, i); /* held while both paths are read */
        if (item == NULL)
            goto error;
        PyObject *value = get_path(item, path);
        if (value == Py_None && PyTuple_GET_SIZE(alt)) {
            Py_DECREF(value);
            value = get_path(item, alt);
        }
        Py_DECREF(item);
        if (value == NULL)
            goto error;
        long long number = absent;
        int decided = 1; /* else the rule decides */
        if (value == Py_None)
            number = absent;
        else if (PyBool_Check(value) && (mode == MODE_INT_OR_NONE || mode == MODE_ADDRESS))
            number = absent; /* a bool is no count or address; as_id and plain take it as 0/1 */
        else if (PyLong_Check(value)) {
            if (!as_int64(value, &number)) {
                number = absent;
                /* int_or_none drops out-of-range values; the other rules keep and count them */
                beyond += mode != MODE_INT_OR_NONE;
            }
            else if (mode == MODE_INT_OR_NONE && (number < 0 || number >= INT_OR_NONE_LIMIT))
                number = absent;
        }
        else if (mode == MODE_ID && PyUnicode_Check(value))
            decided = text_id(value, &number);
        else
            decided = 0;
        if (!decided) {
            PyObject *result = PyObject_CallOneArg(rule, value);
            if (result == NULL) {
                Py_DECREF(value);
                goto error;
            }
            if (result == Py_None)
                number = absent;
            else if (PyLong_Check(result)) {
                if (!as_int64(result, &number)) {
                    number = absent;
                    beyond++;
                }
            }
            else {
                PyErr_Format(PyExc_TypeError, "the rule gave %.100s, not an int or None",
                             Py_TYPE(result)->tp_name);
                Py_DECREF(result);
                Py_DECREF(value);
                goto error;
            }
            Py_DECREF(result);
        }
        Py_DECREF(value);
        out[i] = number;
    }
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(beyond);
error:
    PyBuffer_Release(&view);
    return NULL;
}

PyDoc_STRVAR(gather_floats_doc,
"gather_floats(items, path, out, bad) -> int\n\n"
"out[i] = each item's value at path as a float64 (None: NaN); where it is none (an int\n"
"beyond float64, a value float() refuses) NaN and bad[i] = True. Returns how many are bad.");

static PyObject *
gather_floats(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *items, *path, *out_obj, *bad_obj;
    if (!PyArg_ParseTuple(args, "O!O!OO:gather_floats", &PyList_Type, &items, &PyTuple_Type,
                          &path, &out_obj, &bad_obj))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(items);
    Py_buffer out_view, bad_view;
    if (get_column(out_obj, &out_view, sizeof(double), n) < 0)
        return NULL;
    if (get_column(bad_obj, &bad_view, 1, n) < 0) {
        PyBuffer_Release(&out_view);
        return NULL;
    }
    double *out = out_view.buf;
    unsigned char *bad = bad_view.buf;
    Py_ssize_t bad_count = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = item_at(items, i);
        if (item == NULL)
            goto error;
        PyObject *value = get_path(item, path);
        Py_DECREF(item);
        if (value == NULL)
            goto error;
        double number;
        if (value == Py_None)
            number = NAN;
        else if (PyFloat_Check(value))
            number = PyFloat_AS_DOUBLE(value);
        else if (PyLong_Check(value))
            number = PyLong_AsDouble(value); /* correctly rounded, as float() is; bool: 0/1 */
        else {
            /* float(value), as float_column's loop does: text is parsed, anything else fails */
            PyObject *f = PyNumber_Float(value);
            number = f != NULL ? PyFloat_AS_DOUBLE(f) : -1.0;
            Py_XDECREF(f);
        }
        Py_DECREF(value);
        bad[i] = 0;
        if (number == -1.0 && PyErr_Occurred()) {
            if (!PyErr_ExceptionMatches(PyExc_OverflowError) &&
                !PyErr_ExceptionMatches(PyExc_TypeError) &&
                !PyErr_ExceptionMatches(PyExc_ValueError))
                goto error;
            PyErr_Clear();
            number = NAN;
            bad[i] = 1;
            bad_count++;
        }
        out[i] = number;
    }
    PyBuffer_Release(&out_view);
    PyBuffer_Release(&bad_view);
    return PyLong_FromSsize_t(bad_count);
error:
    PyBuffer_Release(&out_view);
    PyBuffer_Release(&bad_view);
    return NULL;
}

PyDoc_STRVAR(text_codes_doc,
"text_codes(values, texts, out) -> None\n\n"
"out[i] = texts.setdefault(values[i], len(texts)): each value's code among the texts (a\n"
"dict shared by the parts of a column), a value not among them taking the next code.");

static PyObject *
text_codes(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *values, *texts, *out_obj;
    if (!PyArg_ParseTuple(args, "O!O!O:text_codes", &PyList_Type, &values, &PyDict_Type, &texts,
                          &out_obj))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(values);
    Py_buffer view;
    if (get_column(out_obj, &view, sizeof(long long), n) < 0)
        return NULL;
    long long *out = view.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *value = item_at(values, i);
        if (value == NULL)
            goto error;
        PyObject *code = PyDict_GetItemWithError(texts, value); /* borrowed */
        long long number;
        if (code != NULL) {
            Py_INCREF(code);
            number = PyLong_AsLongLong(code);
            Py_DECREF(code);
        }
        else if (PyErr_Occurred())
            number = -1;
        else {
            number = PyDict_GET_SIZE(texts);
            PyObject *next = PyLong_FromLongLong(number);
            if (next == NULL || PyDict_SetItem(texts, value, next) < 0)
                number = -1;
            Py_XDECREF(next);
        }
        Py_DECREF(value);
        if (number == -1 && PyErr_Occurred())
            goto error;
        out[i] = number;
    }
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
error:
    PyBuffer_Release(&view);
    return NULL;
}

/* FNV-1a over a text's bytes: the texts are short (an op's input shapes or types) */
static unsigned long long
text_hash(const unsigned char *p, Py_ssize_t size)
{
    unsigned long long h = 14695981039346656037ULL;
    for (Py_ssize_t k = 0; k < size; k++)
        h = (h ^ p[k]) * 1099511628211ULL;
    return h;
}

PyDoc_STRVAR(raw_codes_doc,
"raw_codes(raws, out) -> list[bytes]\n\n"
"The distinct texts of raws (each a bytes-like object: a msgspec.Raw), in the order first\n"
"met, as bytes; out[i] = the position of raws[i]'s text among them.");

static PyObject *
raw_codes(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *raws, *out_obj;
    if (!PyArg_ParseTuple(args, "O!O:raw_codes", &PyList_Type, &raws, &out_obj))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(raws);
    Py_buffer view;
    if (get_column(out_obj, &view, sizeof(long long), n) < 0)
        return NULL;
    long long *out = view.buf;
    /* open addressing, at most half full: a slot holds a distinct text's position + 1 */
    Py_ssize_t slots = 16;
    while (slots < 2 * n)
        slots *= 2;
    Py_ssize_t *table = PyMem_Calloc(slots, sizeof(Py_ssize_t));
    unsigned long long *hashes = PyMem_Malloc((n ? n : 1) * sizeof(unsigned long long));
    PyObject *distinct = PyList_New(0);
    if (table == NULL || hashes == NULL || distinct == NULL) {
        if (distinct != NULL || !PyErr_Occurred())
            PyErr_NoMemory();
        goto error;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *raw = item_at(raws, i);
        if (raw == NULL)
            goto error;
        Py_buffer text;
        if (PyObject_GetBuffer(raw, &text, PyBUF_SIMPLE) < 0) {
            Py_DECREF(raw);
            goto error;
        }
        unsigned long long h = text_hash(text.buf, text.len);
        Py_ssize_t at = (Py_ssize_t)(h & (unsigned long long)(slots - 1));
        Py_ssize_t found = -1;
        while (table[at]) {
            Py_ssize_t d = table[at] - 1;
            PyObject *known = PyList_GET_ITEM(distinct, d);
            if (hashes[d] == h && PyBytes_GET_SIZE(known) == text.len &&
                memcmp(PyBytes_AS_STRING(known), text.buf, text.len) == 0) {
                found = d;
                break;
            }
            at = (at + 1) & (slots - 1);
        }
        if (found < 0) {
            found = PyList_GET_SIZE(distinct);
            PyObject *copy = PyBytes_FromStringAndSize(text.buf, text.len);
            int failed = copy == NULL || PyList_Append(distinct, copy) < 0;
            Py_XDECREF(copy);
            if (failed) {
                PyBuffer_Release(&text);
                Py_DECREF(raw);
                goto error;
            }
            hashes[found] = h;
            table[at] = found + 1;
        }
        PyBuffer_Release(&text);
        Py_DECREF(raw);
        out[i] = found;
    }
    PyMem_Free(table);
    PyMem_Free(hashes);
    PyBuffer_Release(&view);
    return distinct;
error:
    PyMem_Free(table);
    PyMem_Free(hashes);
    Py_XDECREF(distinct);
    PyBuffer_Release(&view);
    return NULL;
}

PyDoc_STRVAR(pair_codes_doc,
"pair_codes(items, first, second, codes, out) -> None\n\n"
"out[i] = codes[(getattr(items[i], first), getattr(items[i], second))], an int8 (codes may\n"
"be a dict subclass whose __missing__ works a new pair out). Looked up once per run of items\n"
"whose two values are equal text: events come in runs of one phase and category.");

/* Whether a and b are both str and hold the same text (no Python code runs). */
static int
same_text(PyObject *a, PyObject *b)
{
    return a != NULL && b != NULL && PyUnicode_CheckExact(a) && PyUnicode_CheckExact(b) &&
           PyUnicode_Compare(a, b) == 0;
}

static PyObject *
pair_codes(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *items, *first, *second, *codes, *out_obj;
    if (!PyArg_ParseTuple(args, "O!UUOO:pair_codes", &PyList_Type, &items, &first, &second,
                          &codes, &out_obj))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(items);
    Py_buffer view;
    if (get_column(out_obj, &view, 1, n) < 0)
        return NULL;
    signed char *out = view.buf;
    PyObject *last_a = NULL, *last_b = NULL; /* the last pair looked up, and its code */
    signed char last_code = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = item_at(items, i);
        if (item == NULL)
            goto error;
        PyObject *a = PyObject_GetAttr(item, first);
        PyObject *b = a != NULL ? PyObject_GetAttr(item, second) : NULL;
        Py_DECREF(item);
        if (b == NULL) {
            Py_XDECREF(a);
            goto error;
        }
        if (!(same_text(a, last_a) && same_text(b, last_b))) {
            PyObject *key = PyTuple_Pack(2, a, b);
            PyObject *code = key != NULL ? PyObject_GetItem(codes, key) : NULL;
            Py_XDECREF(key);
            long number = code != NULL ? PyLong_AsLong(code) : -1;
            Py_XDECREF(code);
            if (number == -1 && PyErr_Occurred()) {
                Py_DECREF(a);
                Py_DECREF(b);
                goto error;
            }
            if (number < -128 || number > 127) {
                PyErr_Format(PyExc_ValueError, "code %ld does not fit an int8", number);
                Py_DECREF(a);
                Py_DECREF(b);
                goto error;
            }
            Py_XSETREF(last_a, Py_NewRef(a));
            Py_XSETREF(last_b, Py_NewRef(b));
            last_code = (signed char)number;
        }
        Py_DECREF(a);
        Py_DECREF(b);
        out[i] = last_code;
    }
    Py_XDECREF(last_a);
    Py_XDECREF(last_b);
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
error:
    Py_XDECREF(last_a);
    Py_XDECREF(last_b);
    PyBuffer_Release(&view);
    return NULL;
}

PyDoc_STRVAR(exact_ns_doc,
"exact_ns(us, out) -> None\n\n"
"out[i] = the int64 nanoseconds nearest to the exact binary value of the float64 us[i]\n"
"(microseconds), as gather.py's py_exact_ns computes them: in integers where |us| is in\n"
"[1, 2**52), else the rounded float product; no number (NaN, infinite, beyond int64) is the\n"
"smallest int64.");

static PyObject *
exact_ns(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *us_obj, *out_obj;
    if (!PyArg_ParseTuple(args, "OO:exact_ns", &us_obj, &out_obj))
        return NULL;
    Py_buffer us_view, out_view;
    if (PyObject_GetBuffer(us_obj, &us_view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return NULL;
    if (us_view.itemsize != sizeof(double) || us_view.format == NULL ||
        strcmp(us_view.format, "d") != 0) {
        PyErr_SetString(PyExc_ValueError, "a column of float64 was expected");
        PyBuffer_Release(&us_view);
        return NULL;
    }
    Py_ssize_t n = us_view.len / (Py_ssize_t)sizeof(double);
    if (get_column(out_obj, &out_view, sizeof(long long), n) < 0) {
        PyBuffer_Release(&us_view);
        return NULL;
    }
    const double *us = us_view.buf;
    long long *out = out_view.buf;
    for (Py_ssize_t i = 0; i < n; i++)
        out[i] = nanoseconds(us[i]);
    PyBuffer_Release(&out_view);
    PyBuffer_Release(&us_view);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"gather_ints", gather_ints, METH_VARARGS, gather_ints_doc},
    {"gather_floats", gather_floats, METH_VARARGS, gather_floats_doc},
    {"text_codes", text_codes, METH_VARARGS, text_codes_doc},
    {"raw_codes", raw_codes, METH_VARARGS, raw_codes_doc},
    {"pair_codes", pair_codes, METH_VARARGS, pair_codes_doc},
    {"exact_ns", exact_ns, METH_VARARGS, exact_ns_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "gpuprofile.importers.kineto._gather",
    .m_doc = "The Kineto reader's compiled gathers (gather.py chooses them, or their twins).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC
PyInit__gather(void)
{
    return PyModule_Create(&module);
}
