/* gpuprofile's compiled lane core: the call-stack walks over intervals that nesting.py and the
 * timeline's rows and order otherwise run as Python loops (or as several sorts of a million
 * events).
 *
 * walk.py holds the pure-Python twins of these functions, which are the reference; the tests
 * hold the two equal. Only the public C API is used: the columns are numpy arrays the caller
 * allocates and passes as buffers, so no numpy header is needed to build this.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NO_ID (-1LL)

/* A buffer of n items of one width, read-only or writable; released by release(). */
typedef struct {
    Py_buffer view;
    int held;
} Column;

/* One argument as a column, writable where asked; -1, with the exception set, where it is no
 * buffer (the column is then not held). Its callers check its items' width and number. */
static int
take_column(PyObject *arg, Column *column, int writable)
{
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(arg, &column->view, flags) < 0)
        return -1;
    column->held = 1;
    return 0;
}

/* The call's arguments as columns: the first ``inputs`` read-only, every one of ``widths[k]``
 * bytes an item and of the first's length (in *n). -1, with the exception set, where one is
 * no such buffer; the columns taken so far are released by release_all in either case. */
static int
take_columns(PyObject *args, const char *name, Column *columns, int count, int inputs,
             const Py_ssize_t *widths, Py_ssize_t *n)
{
    if (PyTuple_GET_SIZE(args) != count) {
        PyErr_Format(PyExc_TypeError, "%s() takes %d arrays", name, count);
        return -1;
    }
    for (int k = 0; k < count; k++) {
        Column *column = &columns[k];
        if (take_column(PyTuple_GET_ITEM(args, k), column, k >= inputs) < 0)
            return -1;
        if (k == 0)
            *n = column->view.len / widths[0];
        if (column->view.itemsize != widths[k] || column->view.len != *n * widths[k]) {
            PyErr_Format(PyExc_ValueError, "%s(): array %d: expected %zd items of %zd bytes",
                         name, k, *n, widths[k]);
            return -1;
        }
    }
    return 0;
}

static void
release_all(Column *columns, int count)
{
    for (int k = 0; k < count; k++) {
        if (columns[k].held)
            PyBuffer_Release(&columns[k].view);
        columns[k].held = 0;
    }
}

/* walk(thread, start, end, parent, depth): the call-stack walk over intervals sorted by
 * (thread, start, longest first): each one's parent is the innermost interval still open at
 * its start (its end after that start), NO_ID at none, and its depth how many the stack then
 * holds; the stack empties where the thread changes. int64 inputs; parent int64, depth int32
 * out. nesting._nest_walk's loop. */
static PyObject *
walk(PyObject *self, PyObject *args)
{
    (void)self;
    static const Py_ssize_t widths[] = {8, 8, 8, 8, 4}; /* thread, start, end; parent, depth */
    Column c[5];
    memset(c, 0, sizeof c);
    PyObject *result = NULL;
    int64_t *stack = NULL;
    Py_ssize_t n = 0;
    if (take_columns(args, "walk", c, 5, 3, widths, &n) < 0)
        goto done;
    const int64_t *t = c[0].view.buf, *s = c[1].view.buf, *e = c[2].view.buf;
    int64_t *p = c[3].view.buf;
    int32_t *d = c[4].view.buf;
    stack = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
    if (stack == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t top = 0; /* the stack's size */
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i == 0 || t[i] != t[i - 1])
            top = 0;
        while (top > 0 && e[stack[top - 1]] <= s[i])
            top--;
        p[i] = top > 0 ? stack[top - 1] : NO_ID;
        d[i] = (int32_t)top;
        stack[top++] = i;
    }
    result = Py_NewRef(Py_None);
done:
    PyMem_Free(stack);
    release_all(c, 5);
    return result;
}

/* A binary min-heap of ends. */
static void
heap_push(int64_t *heap, Py_ssize_t *size, int64_t value)
{
    Py_ssize_t i = (*size)++;
    while (i > 0) {
        Py_ssize_t up = (i - 1) / 2;
        if (heap[up] <= value)
            break;
        heap[i] = heap[up];
        i = up;
    }
    heap[i] = value;
}

static void
heap_pop(int64_t *heap, Py_ssize_t *size)
{
    int64_t last = heap[--(*size)];
    Py_ssize_t i = 0, n = *size;
    for (;;) {
        Py_ssize_t child = 2 * i + 1;
        if (child >= n)
            break;
        if (child + 1 < n && heap[child + 1] < heap[child])
            child++;
        if (heap[child] >= last)
            break;
        heap[i] = heap[child];
        i = child;
    }
    if (n > 0)
        heap[i] = last;
}

/* cpu_rows(start, end, row) -> bool: the row of each event of one CPU lane, sorted by start
 * and longest first at equal starts, as timeline._cpu_rows decides it: the events still open
 * at its start (started before it, ending after that start); where two events of one row
 * overlap in a cluster of chained overlaps, that cluster's rows as nesting.nest gives them
 * (the same count, but the call-stack walk over each stretch from one row-0 event to the
 * next that holds an event outliving its parent). int64 inputs; int32 out. False, with
 * nothing written, where the events are not sorted so (the caller then runs the reference). */
static PyObject *
cpu_rows(PyObject *self, PyObject *args)
{
    (void)self;
    static const Py_ssize_t widths[] = {8, 8, 4}; /* start, end; row */
    Column c[3];
    memset(c, 0, sizeof c);
    PyObject *result = NULL;
    int64_t *heap = NULL, *row_end = NULL, *last_at = NULL, *stack = NULL;
    char *bad = NULL;
    Py_ssize_t n = 0;
    if (take_columns(args, "cpu_rows", c, 3, 2, widths, &n) < 0)
        goto done;
    const int64_t *s = c[0].view.buf, *e = c[1].view.buf;
    int32_t *r = c[2].view.buf;
    for (Py_ssize_t i = 1; i < n; i++) {
        if (s[i] < s[i - 1] || (s[i] == s[i - 1] && e[i] - s[i] > e[i - 1] - s[i - 1])) {
            result = Py_NewRef(Py_False);
            goto done;
        }
    }
    size_t cells = (size_t)(n > 0 ? n : 1) + 1;
    heap = PyMem_Malloc(cells * sizeof(int64_t));
    row_end = PyMem_Malloc(cells * sizeof(int64_t));
    last_at = PyMem_Malloc(cells * sizeof(int64_t));
    stack = PyMem_Malloc(cells * sizeof(int64_t));
    bad = PyMem_Calloc(cells, 1);
    if (!heap || !row_end || !last_at || !stack || !bad) {
        PyErr_NoMemory();
        goto done;
    }
    /* The count: starts never decrease, so an end at or before one start is before every
     * later start too, and leaves the heap for good. */
    Py_ssize_t size = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        while (size > 0 && heap[0] <= s[i])
            heap_pop(heap, &size);
        r[i] = (int32_t)size;
        heap_push(heap, &size, e[i]);
    }
    /* Conflicts: an event starting before the previous event of its row ended. A cluster
     * begins where an event starts at or after every earlier end. */
    int32_t rows = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        rows = r[i] + 1 > rows ? r[i] + 1 : rows;
    for (int32_t k = 0; k < rows; k++)
        row_end[k] = INT64_MIN;
    int64_t running = INT64_MIN;
    Py_ssize_t first = 0; /* the current cluster's first event */
    int conflict = 0;
    for (Py_ssize_t i = 0; i <= n; i++) {
        if (i == n || (i > 0 && s[i] >= running)) {
            bad[first] = (char)conflict; /* the cluster [first, i) is redone */
            first = i;
            conflict = 0;
        }
        if (i == n)
            break;
        /* row_end holds INT64_MIN where the row has had no event (no conflict then) */
        if (row_end[r[i]] != INT64_MIN && s[i] < row_end[r[i]])
            conflict = 1;
        row_end[r[i]] = e[i];
        running = i == 0 || e[i] > running ? e[i] : running;
    }
    /* Each conflicted cluster, as nest() reads it: its stretches (from one row-0 event to the
     * next), each one's parents the last earlier event one row up; a stretch where an event
     * outlives its parent gets the call-stack walk. */
    running = INT64_MIN;
    Py_ssize_t i = 0;
    while (i < n) {
        Py_ssize_t stop = i + 1; /* the cluster is [i, stop) */
        running = e[i];
        while (stop < n && s[stop] < running) {
            running = e[stop] > running ? e[stop] : running;
            stop++;
        }
        if (bad[i]) {
            Py_ssize_t lo = i;
            while (lo < stop) {
                Py_ssize_t hi = lo + 1; /* the stretch is [lo, hi) */
                while (hi < stop && r[hi] != 0)
                    hi++;
                int crossing = 0;
                for (Py_ssize_t j = lo; j < hi; j++) {
                    if (r[j] > 0 && e[j] > e[last_at[r[j] - 1]])
                        crossing = 1;
                    last_at[r[j]] = j;
                }
                if (crossing) {
                    Py_ssize_t top = 0;
                    for (Py_ssize_t j = lo; j < hi; j++) {
                        while (top > 0 && e[stack[top - 1]] <= s[j])
                            top--;
                        r[j] = (int32_t)top;
                        stack[top++] = j;
                    }
                }
                lo = hi;
            }
        }
        i = stop;
    }
    result = Py_NewRef(Py_True);
done:
    PyMem_Free(heap);
    PyMem_Free(row_end);
    PyMem_Free(last_at);
    PyMem_Free(stack);
    PyMem_Free(bad);
    release_all(c, 3);
    return result;
}

/* first_fit(lane, start, end, row): events sorted by (lane, start): each takes the lowest row
 * of its lane whose last event ended by its start, else a new row. int64 inputs; int32 out.
 * nesting.overlap_rows's loop. */
static PyObject *
first_fit(PyObject *self, PyObject *args)
{
    (void)self;
    static const Py_ssize_t widths[] = {8, 8, 8, 4}; /* lane, start, end; row */
    Column c[4];
    memset(c, 0, sizeof c);
    PyObject *result = NULL;
    int64_t *row_end = NULL;
    Py_ssize_t n = 0;
    if (take_columns(args, "first_fit", c, 4, 3, widths, &n) < 0)
        goto done;
    const int64_t *l = c[0].view.buf, *s = c[1].view.buf, *e = c[2].view.buf;
    int32_t *r = c[3].view.buf;
    row_end = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
    if (row_end == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t rows = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i == 0 || l[i] != l[i - 1])
            rows = 0;
        Py_ssize_t k = 0;
        while (k < rows && row_end[k] > s[i])
            k++;
        if (k == rows)
            rows++;
        row_end[k] = e[i];
        r[i] = (int32_t)k;
    }
    result = Py_NewRef(Py_None);
done:
    PyMem_Free(row_end);
    release_all(c, 4);
    return result;
}

/* Whether interval i comes before j in a lane: by start, then longest first, then position. */
static inline int
before(const int64_t *s, const int64_t *e, int64_t i, int64_t j)
{
    if (s[i] != s[j])
        return s[i] < s[j];
    int64_t di = e[i] - s[i], dj = e[j] - s[j];
    if (di != dj)
        return di > dj;
    return i < j;
}

/* Sorts a[0..m) by before(), using tmp[0..m) and runs[0..m]: a natural merge sort, so a lane
 * made of a few already sorted tables costs a pass per doubling of their count. */
static void
sort_lane(int64_t *a, int64_t *tmp, Py_ssize_t *runs, Py_ssize_t m, const int64_t *s,
          const int64_t *e)
{
    Py_ssize_t k = 0;
    runs[k++] = 0;
    for (Py_ssize_t i = 1; i < m; i++)
        if (!before(s, e, a[i - 1], a[i]))
            runs[k++] = i;
    runs[k] = m;
    Py_ssize_t count = k; /* runs[0..count] bound count runs */
    int64_t *from = a, *to = tmp;
    while (count > 1) {
        Py_ssize_t merged = 0;
        for (Py_ssize_t r = 0; r < count; r += 2) {
            Py_ssize_t lo = runs[r], mid = runs[r + 1], hi = r + 2 <= count ? runs[r + 2] : mid;
            Py_ssize_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi)
                to[o++] = before(s, e, from[j], from[i]) ? from[j++] : from[i++];
            while (i < mid)
                to[o++] = from[i++];
            while (j < hi)
                to[o++] = from[j++];
            runs[merged++] = lo;
        }
        runs[merged] = m;
        count = merged;
        int64_t *swap = from;
        from = to;
        to = swap;
    }
    if (from != a)
        memcpy(a, from, (size_t)m * sizeof(int64_t));
}

/* event_order(lane, start, end, order): the positions of the events in the order of the
 * timeline's ids: by lane, then start, then longest first (a parent before its child), then
 * position. lane int32 (ids from 0), start and end int64; order int64 out. False, writing
 * nothing useful, where a lane id is negative or far above the events' count (the caller's
 * reference then runs). walk.py_event_order. */
static PyObject *
event_order(PyObject *self, PyObject *args)
{
    (void)self;
    static const Py_ssize_t widths[] = {4, 8, 8, 8}; /* lane, start, end; order */
    Column c[4];
    memset(c, 0, sizeof c);
    PyObject *result = NULL;
    Py_ssize_t *first = NULL, *runs = NULL;
    int64_t *tmp = NULL;
    Py_ssize_t n = 0;
    if (take_columns(args, "event_order", c, 4, 3, widths, &n) < 0)
        goto done;
    const int32_t *l = c[0].view.buf;
    const int64_t *s = c[1].view.buf, *e = c[2].view.buf;
    int64_t *order = c[3].view.buf;
    int32_t lanes = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (l[i] < 0 || l[i] > n + 65536) {
            result = Py_NewRef(Py_False);
            goto done;
        }
        if (l[i] >= lanes)
            lanes = l[i] + 1;
    }
    first = PyMem_Calloc((size_t)lanes + 1, sizeof(Py_ssize_t));
    runs = PyMem_Malloc((size_t)(n + 1) * sizeof(Py_ssize_t));
    tmp = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
    if (first == NULL || runs == NULL || tmp == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    /* A counting sort by lane keeps positions ascending within each lane. */
    for (Py_ssize_t i = 0; i < n; i++)
        first[l[i] + 1]++;
    for (int32_t k = 0; k < lanes; k++)
        first[k + 1] += first[k];
    for (Py_ssize_t i = 0; i < n; i++)
        order[first[l[i]]++] = i;
    Py_ssize_t lo = 0;
    for (int32_t k = 0; k < lanes; k++) { /* first[k] is now lane k's end */
        Py_ssize_t hi = first[k];
        if (hi - lo > 1)
            sort_lane(order + lo, tmp, runs, hi - lo, s, e);
        lo = hi;
    }
    result = Py_NewRef(Py_True);
done:
    PyMem_Free(first);
    PyMem_Free(runs);
    PyMem_Free(tmp);
    release_all(c, 4);
    return result;
}

/* overview_boxes(lane, row, start, end, ids, first_row, count, first, last_end, longest,
 * first_longest, long_ids, t0, width, bins): the overview's boxes in one pass over the events
 * ids (ascending; none: every event, so the caller never passes an empty window), where numpy
 * would make a dozen columns of them. An event at least ``width`` long is listed in long_ids;
 * a shorter one joins the box of its lane row and bin, numbered (first_row[lane] + row) *
 * bins + bin, bin being (start - t0) / width clipped to [0, bins - 1] and truncated. Per box:
 * its members' count, first member, last end, longest duration and first longest member
 * (boxes of no member keep count 0). lane, row int32; start, end float64; ids, first_row int64
 * in; count, first, first_longest int64, last_end, longest float64 (of the boxes' number) and
 * long_ids int64 (of the events' number) out. Returns how many long ids it wrote.
 * tables.py_boxes. */
static PyObject *
overview_boxes(PyObject *self, PyObject *args)
{
    (void)self;
    static const Py_ssize_t widths[] = {4, 4, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8};
    Column c[12];
    memset(c, 0, sizeof c);
    PyObject *result = NULL;
    double t0, width;
    Py_ssize_t bins;
    if (PyTuple_GET_SIZE(args) != 15) {
        PyErr_SetString(PyExc_TypeError, "overview_boxes() takes 12 arrays and 3 numbers");
        return NULL;
    }
    t0 = PyFloat_AsDouble(PyTuple_GET_ITEM(args, 12));
    width = PyFloat_AsDouble(PyTuple_GET_ITEM(args, 13));
    bins = PyLong_AsSsize_t(PyTuple_GET_ITEM(args, 14));
    if (PyErr_Occurred())
        return NULL;
    if (bins < 1) {
        PyErr_Format(PyExc_ValueError, "overview_boxes(): %zd bins", bins);
        return NULL;
    }
    for (int k = 0; k < 12; k++)
        if (take_column(PyTuple_GET_ITEM(args, k), &c[k], k >= 6) < 0)
            goto done;
    Py_ssize_t n = c[0].view.len / 4, m = c[4].view.len / 8, lanes = c[5].view.len / 8;
    Py_ssize_t boxes = c[6].view.len / 8;
    for (int k = 0; k < 12; k++) {
        Py_ssize_t want = k < 4 || k == 11 ? n : k == 4 ? m : k == 5 ? lanes : boxes;
        if (c[k].view.itemsize != widths[k] || c[k].view.len != want * widths[k]) {
            PyErr_Format(PyExc_ValueError,
                         "overview_boxes(): array %d: expected %zd items of %zd bytes", k, want,
                         widths[k]);
            goto done;
        }
    }
    const int32_t *lane = c[0].view.buf, *row = c[1].view.buf;
    const double *start = c[2].view.buf, *end = c[3].view.buf;
    const int64_t *ids = c[4].view.buf, *first_row = c[5].view.buf;
    int64_t *count = c[6].view.buf, *first = c[7].view.buf, *first_longest = c[10].view.buf;
    double *last_end = c[8].view.buf, *longest = c[9].view.buf;
    int64_t *long_ids = c[11].view.buf;
    Py_ssize_t listed = 0, total = m > 0 ? m : n;
    for (Py_ssize_t b = 0; b < boxes; b++)
        count[b] = 0;
    for (Py_ssize_t k = 0; k < total; k++) {
        int64_t i = m > 0 ? ids[k] : k;
        if (i < 0 || i >= n || lane[i] < 0 || lane[i] >= lanes) {
            PyErr_Format(PyExc_ValueError, "overview_boxes(): event %zd out of range", k);
            goto done;
        }
        double dur = end[i] - start[i];
        if (dur >= width) {
            long_ids[listed++] = i;
            continue;
        }
        double at = (start[i] - t0) / width;
        at = at < 0 ? 0 : at;
        at = at > (double)(bins - 1) ? (double)(bins - 1) : at;
        int64_t box = (first_row[lane[i]] + row[i]) * (int64_t)bins + (int64_t)at;
        if (box < 0 || box >= boxes) {
            PyErr_Format(PyExc_ValueError, "overview_boxes(): box %lld of %zd", (long long)box,
                         boxes);
            goto done;
        }
        if (count[box]++ == 0) {
            first[box] = i;
            last_end[box] = end[i];
            longest[box] = dur;
            first_longest[box] = i;
            continue;
        }
        if (end[i] > last_end[box])
            last_end[box] = end[i];
        if (dur > longest[box]) {
            longest[box] = dur;
            first_longest[box] = i;
        }
    }
    result = PyLong_FromSsize_t(listed);
done:
    release_all(c, 12);
    return result;
}

/* flagged_ancestors(flag, parent, found, outermost) -> bool: per row, the innermost (else the
 * outermost) of it and its ancestors with flag set, -1 where none is. parent: each row's
 * parent's position, -1 at a root. Each row is looked at once: a climb stops at the first row
 * already answered, and the rows climbed take their answers on the way back down. bool and
 * int64 inputs; int64 out. False, with found half written, where parent is no tree (a position
 * out of range, or a cycle): the caller then runs the reference (analyses/lookups.py). */
static PyObject *
flagged_ancestors(PyObject *self, PyObject *args)
{
    (void)self;
    static const Py_ssize_t widths[] = {1, 8, 8}; /* flag, parent; found */
    PyObject *columns, *result = NULL;
    int outermost;
    Column c[3];
    memset(c, 0, sizeof c);
    int64_t *stack = NULL;
    Py_ssize_t n = 0;
    if (!PyArg_ParseTuple(args, "O!p:flagged_ancestors", &PyTuple_Type, &columns, &outermost))
        return NULL;
    if (take_columns(columns, "flagged_ancestors", c, 3, 2, widths, &n) < 0)
        goto done;
    const unsigned char *flag = c[0].view.buf;
    const int64_t *parent = c[1].view.buf;
    int64_t *found = c[2].view.buf;
    stack = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
    if (stack == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    enum { OPEN = -2, CLIMBING = -3 };
    for (Py_ssize_t i = 0; i < n; i++)
        found[i] = OPEN;
    int tree = 1;
    for (Py_ssize_t i = 0; i < n && tree; i++) {
        if (found[i] != OPEN)
            continue;
        Py_ssize_t top = 0;
        int64_t j = i;
        while (j >= 0 && found[j] == OPEN) {
            found[j] = CLIMBING;
            stack[top++] = j;
            j = parent[j];
            if (j < -1 || j >= n || (j >= 0 && found[j] == CLIMBING)) {
                tree = 0;
                break;
            }
        }
        if (!tree)
            break;
        int64_t above = j < 0 ? -1 : found[j]; /* the answer of the climb's last row's parent */
        while (top > 0) {
            int64_t k = stack[--top];
            if (outermost)
                found[k] = above >= 0 ? above : (flag[k] ? k : -1);
            else
                found[k] = flag[k] ? k : above;
            above = found[k];
        }
    }
    result = Py_NewRef(tree ? Py_True : Py_False);
done:
    PyMem_Free(stack);
    release_all(c, 3);
    return result;
}

static PyMethodDef methods[] = {
    {"walk", walk, METH_VARARGS, "The call-stack walk (nesting._nest_walk)."},
    {"cpu_rows", cpu_rows, METH_VARARGS, "A CPU lane's rows (timeline._cpu_rows)."},
    {"first_fit", first_fit, METH_VARARGS, "First-fit rows (nesting.overlap_rows)."},
    {"overview_boxes", overview_boxes, METH_VARARGS, "The overview's boxes (tables.py_boxes)."},
    {"event_order", event_order, METH_VARARGS, "The timeline's event order (walk.py_event_order)."},
    {"flagged_ancestors", flagged_ancestors, METH_VARARGS,
     "The innermost or outermost flagged ancestor-or-self (analyses/lookups.py)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_walk", "gpuprofile's compiled lane core (trace/walk.py).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__walk(void)
{
    return PyModule_Create(&module);
}
