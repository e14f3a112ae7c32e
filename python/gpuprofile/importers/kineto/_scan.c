/* gpuprofile's compiled reader path for a part of a large Kineto file: each event's JSON text
 * (a msgspec.Raw of the outline) read straight into the columns of its table, where the
 * msgspec path decodes every event into structs, sorts them into tables and gathers each
 * field from them (decode.py, columns.py, check.py: the reference).
 *
 * It reads only what it can read exactly as that path does: host ops, kernels, memcpy,
 * memset, runtime calls, GPU annotations and allocator instants into their tables; flows
 * (skipped there too); metadata (the threads' names), the profiler's own spans and instants,
 * and events of other categories or phases (counted as skipped, by kind); every field of the
 * type msgspec's structs expect (format.py) and every value the columns keep without a
 * finding (in range, times usable). Anything else anywhere in the part (counter samples, an
 * out-of-memory instant, collectives, a string with an escape where it decodes one, a number
 * it cannot parse exactly, a repeated key) declines the whole part: part_columns returns
 * None and the part is decoded by msgspec. So a part read here records no finding, and its
 * columns equal the msgspec path's (direct.py adds what Python computes from them;
 * test_direct_core.py compares the two on crafted parts and every shared trace).
 *
 * Numbers: an integer of at most 18 digits (int64 without overflow); a fraction by the exact
 * fast path (a significand below 2**53 and a power of ten up to 22: one correctly rounded
 * operation, as strtod and msgspec give). Other numbers decline.
 *
 * Exact times (decode._keep_nanoseconds): where a file's ts carry nanoseconds beyond float64
 * (absolute Unix time in us with three decimals), each ts is read as a decimal and rebased on
 * the earliest whole microsecond of the file (anchor), as the msgspec path does with Decimal:
 * the rebased value, an integer over a power of ten, is rounded once, as float(Decimal) is.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#include "_values.h"

#define NO_ID (-1LL)
#define MAX_DEPTH 256
/* check.MAX_NS / 1000: the times and durations of usable events are below this, in us */
#define TIME_LIMIT_US ((double)(1LL << 62) / 1000.0)
/* decode._FLOAT_EXACT_LIMIT_US: a fractional ts from here needs the exact decode */
#define EXACT_LIMIT_US 8796093022208.0 /* 2**43 */
#define MAX_WHOLE 1000000000000000000LL /* 10**18: past the whole part of a number read */
#define I32 (1LL << 31)
#define I62 (1LL << 62)

/* --- the JSON text ------------------------------------------------------------------------ */

typedef struct {
    const char *p, *end;
} Text;

typedef struct {
    const char *start;
    Py_ssize_t size;
} Slice;

enum { V_NONE, V_NULL, V_INT, V_FLOAT, V_STR, V_LIST, V_OBJECT, V_BOOL };

/* A scalar as read: its kind, and its value where it is a number or text. */
typedef struct {
    int kind;
    long long i;
    double f;
    Slice s;     /* V_STR: the text without its quotes (kept where text_id made it an int) */
    Slice whole; /* the value's text as written (a msgspec.Raw's) */
    int text;    /* an id read from text (text_id) */
} Value;

static void
space(Text *t)
{
    while (t->p < t->end && (*t->p == ' ' || *t->p == '\n' || *t->p == '\r' || *t->p == '\t'))
        t->p++;
}

/* How strictly a value is read. A value msgspec decodes (every field of format.py's
 * structs but a Raw) is read under both: its texts plain ASCII (this path decodes no escape,
 * and msgspec checks the UTF-8 of what it decodes), its numbers exact. A value msgspec skips
 * (an unknown key's) or keeps as text (a Raw) is only walked past: the outline decode has
 * checked its syntax. */
enum { M_SKIP = 0, M_PLAIN = 1, M_ASCII = 2, M_EXACT = 4, M_DECODED = M_PLAIN | M_ASCII | M_EXACT };

/* A string at t->p (its opening quote): its text without quotes; 0 (the part declines) where,
 * under M_PLAIN, it has an escape, under M_ASCII a byte beyond ASCII, or where the text ends
 * first. */
static int
string(Text *t, Slice *out, int mode)
{
    const char *p = t->p + 1;
    const char *start = p;
    if (mode == M_SKIP) { /* to the first quote no backslash escapes (the outline checked the rest) */
        for (;;) {
            const char *quote = memchr(p, '"', (size_t)(t->end - p));
            if (quote == NULL)
                return 0;
            const char *b = quote;
            while (b > start && b[-1] == '\\')
                b--;
            if ((quote - b) % 2 == 0) {
                out->start = start;
                out->size = quote - start;
                t->p = quote + 1;
                return 1;
            }
            p = quote + 1;
        }
    }
    while (p < t->end) {
        unsigned char c = (unsigned char)*p;
        if (c == '"') {
            out->start = start;
            out->size = p - start;
            t->p = p + 1;
            return 1;
        }
        if (((mode & M_PLAIN) && c == '\\') || ((mode & M_ASCII) && c >= 0x80))
            return 0;
        if (c < 0x20)
            return 0;
        p += c == '\\' ? 2 : 1;
    }
    return 0;
}

static const double POWERS_OF_TEN[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                       1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                       1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* The digits from p onto *digits (at most 18 in all, counted in *count): past them, or NULL
 * past 18. */
static inline const char *
more_digits(const char *p, const char *end, uint64_t *digits, int *count)
{
    uint64_t value = *digits;
    int n = *count;
    for (; p < end && *p >= '0' && *p <= '9'; p++) {
        value = value * 10 + (uint64_t)(*p - '0');
        if (++n > 18)
            return NULL;
    }
    *digits = value;
    *count = n;
    return p;
}

/* A number at t->p: V_INT (at most 18 digits) or V_FLOAT (exactly rounded); 0 otherwise,
 * but where it is only skipped (not M_EXACT), any number. */
static int
number(Text *t, Value *v, int mode)
{
    if (!(mode & M_EXACT)) {
        const char *p = t->p;
        while (p < t->end && ((*p >= '0' && *p <= '9') || *p == '-' || *p == '+' || *p == '.' ||
                              *p == 'e' || *p == 'E'))
            p++;
        const char *start = t->p;
        v->kind = V_FLOAT;
        v->f = 0;
        t->p = p;
        return p > start;
    }
    const char *p = t->p;
    int negative = 0;
    if (p < t->end && *p == '-') {
        negative = 1;
        p++;
    }
    uint64_t digits = 0;
    int count = 0, fraction = 0;
    const char *first = p;
    if ((p = more_digits(p, t->end, &digits, &count)) == NULL || p == first ||
        (*first == '0' && p - first > 1))
        return 0;
    int is_float = 0;
    if (p < t->end && *p == '.') {
        is_float = 1;
        const char *frac = ++p;
        if ((p = more_digits(p, t->end, &digits, &count)) == NULL || p == frac)
            return 0;
        fraction = (int)(p - frac);
    }
    int exponent = 0;
    if (p < t->end && (*p == 'e' || *p == 'E')) {
        is_float = 1;
        p++;
        int sign = 1;
        if (p < t->end && (*p == '+' || *p == '-')) {
            sign = *p == '-' ? -1 : 1;
            p++;
        }
        const char *exp = p;
        while (p < t->end && *p >= '0' && *p <= '9') {
            if (exponent > 1000)
                return 0;
            exponent = exponent * 10 + (*p - '0');
            p++;
        }
        if (p == exp)
            return 0;
        exponent *= sign;
    }
    t->p = p;
    if (!is_float) {
        v->kind = V_INT;
        v->i = negative ? -(long long)digits : (long long)digits;
        return 1;
    }
    int power = exponent - fraction;
    if (digits > (1ULL << 53) || power < -22 || power > 22)
        return 0;
    double f = (double)digits;
    f = power < 0 ? f / POWERS_OF_TEN[-power] : f * POWERS_OF_TEN[power];
    v->kind = V_FLOAT;
    v->f = negative ? -f : f;
    return 1;
}

/* A number's text as a decimal: sign, whole part and fraction digits (at most 18 each). */
typedef struct {
    int negative;
    uint64_t whole, fraction;
    int digits; /* of the fraction */
} Decimal;

/* A number at t->p without an exponent, as a Decimal; 0 for any other (declines). */
static int
decimal_at(Text *t, Decimal *d)
{
    const char *p = t->p;
    d->negative = p < t->end && *p == '-';
    p += d->negative;
    int count = 0;
    const char *first = p;
    d->whole = 0;
    if ((p = more_digits(p, t->end, &d->whole, &count)) == NULL || p == first ||
        (*first == '0' && p - first > 1))
        return 0;
    d->fraction = 0;
    d->digits = 0;
    if (p < t->end && *p == '.') {
        const char *frac = ++p;
        if ((p = more_digits(p, t->end, &d->fraction, &d->digits)) == NULL || p == frac)
            return 0;
    }
    if (p < t->end && (*p == 'e' || *p == 'E'))
        return 0;
    t->p = p;
    return 1;
}

/* The decimal less anchor whole us, rounded once to the nearest double (float(Decimal(text) -
 * anchor)); 0 where that is not exact in int64 arithmetic (declines). */
static int
rebased(const Decimal *d, long long anchor, double *out)
{
    long long whole = d->negative ? -(long long)d->whole : (long long)d->whole;
    long long rest = whole - anchor; /* both below MAX_WHOLE: no overflow */
    long long scale = 1;
    for (int k = 0; k < d->digits; k++)
        scale *= 10; /* at most 10**18 */
    long long limit = (1LL << 53) / scale;
    if (rest > limit || rest < -limit)
        return 0;
    long long fraction = d->negative ? -(long long)d->fraction : (long long)d->fraction;
    long long significand = rest * scale + fraction; /* |.| < 2**53 + 10**18 < 2**63 */
    if (significand > (1LL << 53) || significand < -(1LL << 53))
        return 0;
    *out = (double)significand / POWERS_OF_TEN[d->digits];
    return 1;
}

/* After an item of an array or object: 1 where a comma leads to the next, 2 where ``close``
 * ends it, 0 where neither does (the part declines). */
static inline int
after_item(Text *t, char close)
{
    space(t);
    if (t->p < t->end && *t->p == ',') {
        t->p++;
        space(t);
        return 1;
    }
    if (t->p < t->end && *t->p == close) {
        t->p++;
        return 2;
    }
    return 0;
}

/* An object's key at t->p and the colon after it; 0 where there is none (the part declines). */
static inline int
key_at(Text *t, Slice *key, int mode)
{
    if (t->p >= t->end || *t->p != '"' || string(t, key, mode) <= 0)
        return 0;
    space(t);
    if (t->p >= t->end || *t->p != ':')
        return 0;
    t->p++;
    space(t);
    return 1;
}

static int skip_value(Text *t, int depth, int mode);

/* Past an array or object at t->p, every value in it checked as skip_value checks. */
static int
skip_container(Text *t, int depth, int mode)
{
    if (depth > MAX_DEPTH)
        return 0;
    char close = *t->p == '{' ? '}' : ']';
    int object = close == '}';
    t->p++;
    space(t);
    if (t->p < t->end && *t->p == close) {
        t->p++;
        return 1;
    }
    for (;;) {
        Slice key;
        if (object && !key_at(t, &key, mode))
            return 0;
        if (!skip_value(t, depth + 1, mode))
            return 0;
        int next = after_item(t, close);
        if (next != 1)
            return next == 2;
    }
}

static int
literal(Text *t, const char *word, Py_ssize_t size)
{
    if (t->end - t->p < size || memcmp(t->p, word, (size_t)size) != 0)
        return 0;
    t->p += size;
    return 1;
}

/* Any value at t->p, read as a scalar or skipped as a container: its kind and, for a number
 * or text, its value; v->s spans the value's whole text. 0 where the part declines. */
static int
read_value(Text *t, Value *v, int depth, int mode)
{
    const char *start = t->p;
    if (t->p >= t->end)
        return 0;
    int ok;
    switch (*t->p) {
    case '"':
        ok = string(t, &v->s, mode) > 0;
        v->kind = V_STR;
        break;
    case '{':
    case '[':
        v->kind = *t->p == '{' ? V_OBJECT : V_LIST;
        ok = skip_container(t, depth, mode);
        break;
    case 'n':
        v->kind = V_NULL;
        ok = literal(t, "null", 4);
        break;
    case 't':
        v->kind = V_BOOL;
        ok = literal(t, "true", 4);
        break;
    case 'f':
        v->kind = V_BOOL;
        ok = literal(t, "false", 5);
        break;
    default:
        ok = number(t, v, mode);
    }
    v->whole.start = start;
    v->whole.size = t->p - start;
    return ok;
}

static int
skip_value(Text *t, int depth, int mode)
{
    Value v;
    return read_value(t, &v, depth, mode);
}

/* --- the fields read ---------------------------------------------------------------------- */

/* How a field's value must look (its type in format.py's structs), and what is kept. */
enum {
    T_INT,       /* int | None: an int or null */
    T_EVENT_ID,  /* int | str: an id, as gather.as_id reads text */
    T_ID,        /* int | str | None: an id, as gather.as_id reads text */
    T_RAW,       /* msgspec.Raw: the value's text */
    T_DIMS,      /* list[int] | str | None: the first three ints of a list */
    T_FLOAT,     /* float | None: a number or null */
    T_ANY,       /* Any: not read */
    T_COUNT,     /* Any, read as int_or_none: text declines */
    T_ADDRESS,   /* Any, read as gather.address */
    T_TEXT,      /* str | None */
    T_EVENT_TEXT /* str */
};

enum {
    /* the event's own */
    F_PH,
    F_CAT,
    F_NAME,
    F_PID,
    F_TID,
    F_TS,
    F_DUR,
    F_ID,
    F_ARGS,
    /* its args */
    A_EXTERNAL,
    A_LEGACY_EXTERNAL,
    A_CORRELATION,
    A_DEVICE,
    A_STREAM,
    A_BYTES,
    A_DIMS,
    A_LEGACY_DIMS,
    A_TYPES,
    A_CONCRETE,
    A_GRID,
    A_BLOCK,
    A_REGISTERS,
    A_SHARED,
    A_PER_SM,
    A_OCCUPANCY,
    A_ALLOC_BYTES,
    A_TOTAL_ALLOCATED,
    A_TOTAL_RESERVED,
    A_DEVICE_TYPE,
    A_ADDR,
    A_DEVICE_ID,
    A_NAME,
    A_COLLECTIVE,
    A_GROUP,
    A_GROUP_RANKS,
    A_SEQ,
    A_IN_ELEMS,
    A_OUT_ELEMS,
    A_DTYPE,
    A_SEQUENCE,
    A_FWD_TID,
    A_CALLER_LINE,
    A_VALUE,
    FIELDS
};

typedef struct {
    const char *key;
    Py_ssize_t size;
    int field, type;
} Key;

#define KEY(text, field, type) {text, sizeof(text) - 1, field, type}

/* Each struct's keys as format.py names them in JSON (msgspec.field's name=). */
static const Key EVENT_KEYS[] = {
    KEY("ph", F_PH, T_EVENT_TEXT),  KEY("cat", F_CAT, T_EVENT_TEXT), KEY("name", F_NAME, T_EVENT_TEXT),
    KEY("pid", F_PID, T_EVENT_ID),        KEY("tid", F_TID, T_EVENT_ID),         KEY("ts", F_TS, T_FLOAT),
    KEY("dur", F_DUR, T_FLOAT),     KEY("id", F_ID, T_ANY),          KEY("args", F_ARGS, T_ANY),
    {NULL, 0, 0, 0}};

static const Key ARG_KEYS[] = {KEY("External id", A_EXTERNAL, T_INT),
                               KEY("external id", A_LEGACY_EXTERNAL, T_INT),
                               KEY("correlation", A_CORRELATION, T_INT),
                               KEY("device", A_DEVICE, T_INT),
                               KEY("stream", A_STREAM, T_ID),
                               KEY("bytes", A_BYTES, T_ID),
                               KEY("Input Dims", A_DIMS, T_RAW),
                               KEY("Input dims", A_LEGACY_DIMS, T_RAW),
                               KEY("Input type", A_TYPES, T_RAW),
                               KEY("Concrete Inputs", A_CONCRETE, T_RAW),
                               KEY("grid", A_GRID, T_DIMS),
                               KEY("block", A_BLOCK, T_DIMS),
                               KEY("registers per thread", A_REGISTERS, T_INT),
                               KEY("shared memory", A_SHARED, T_INT),
                               KEY("blocks per SM", A_PER_SM, T_FLOAT),
                               KEY("est. achieved occupancy %", A_OCCUPANCY, T_FLOAT),
                               KEY("Bytes", A_ALLOC_BYTES, T_INT),
                               KEY("Total Allocated", A_TOTAL_ALLOCATED, T_INT),
                               KEY("Total Reserved", A_TOTAL_RESERVED, T_INT),
                               KEY("Device Type", A_DEVICE_TYPE, T_INT),
                               KEY("Addr", A_ADDR, T_ADDRESS),
                               KEY("Device Id", A_DEVICE_ID, T_INT),
                               KEY("name", A_NAME, T_TEXT),
                               KEY("Collective name", A_COLLECTIVE, T_ANY),
                               KEY("Process Group Name", A_GROUP, T_ANY),
                               KEY("Process Group Ranks", A_GROUP_RANKS, T_ANY),
                               KEY("Seq", A_SEQ, T_ANY),
                               KEY("In msg nelems", A_IN_ELEMS, T_ANY),
                               KEY("Out msg nelems", A_OUT_ELEMS, T_ANY),
                               KEY("dtype", A_DTYPE, T_ANY),
                               KEY("Sequence number", A_SEQUENCE, T_COUNT),
                               KEY("Fwd thread id", A_FWD_TID, T_COUNT),
                               KEY("Caller line", A_CALLER_LINE, T_COUNT),
                               KEY("value", A_VALUE, T_ANY),
                               {NULL, 0, 0, 0}};

/* One event's fields as read; seen[f]: the key was met (a second time declines). */
typedef struct {
    char seen[FIELDS];
    Value v[FIELDS];
    long long dims[2][3]; /* grid, block: the first three sizes */
    int dims_count[2];    /* how many of them the list has */
    const long long *anchor; /* exact times: the whole us every ts is rebased on; else NULL */
} Event;

/* Each key table's keys by a hash of their length and ends (open addressing), made at import:
 * an event has a dozen keys to look up among forty. */
#define KEY_SLOTS 128
static const Key *EVENT_SLOTS[KEY_SLOTS], *ARG_SLOTS[KEY_SLOTS];

static unsigned
key_slot(const char *key, Py_ssize_t size)
{
    unsigned char first = size ? (unsigned char)key[0] : 0;
    unsigned char last = size ? (unsigned char)key[size - 1] : 0;
    return ((unsigned)size * 31u + first * 7u + last) & (KEY_SLOTS - 1);
}

static void
index_keys(const Key *keys, const Key **slots)
{
    for (const Key *k = keys; k->key != NULL; k++) {
        unsigned at = key_slot(k->key, k->size);
        while (slots[at] != NULL)
            at = (at + 1) & (KEY_SLOTS - 1);
        slots[at] = k;
    }
}

static const Key *
key_of(const Key **slots, Slice key)
{
    for (unsigned at = key_slot(key.start, key.size); slots[at] != NULL;
         at = (at + 1) & (KEY_SLOTS - 1)) {
        const Key *k = slots[at];
        if (k->size != key.size)
            continue;
        Py_ssize_t i = 0; /* keys are short: a loop, not a call */
        while (i < key.size && k->key[i] == key.start[i])
            i++;
        if (i == key.size)
            return k;
    }
    return NULL;
}

/* The ints of a list[int] (its first three kept); 0 where an item is no int. */
static int
read_dims(Text *t, long long *dims, int *count, int depth)
{
    *count = 0;
    t->p++; /* [ */
    space(t);
    if (t->p < t->end && *t->p == ']') {
        t->p++;
        return 1;
    }
    for (int k = 0;; k++) {
        Value item;
        if (!read_value(t, &item, depth + 1, M_DECODED) || item.kind != V_INT)
            return 0;
        if (k < 3) {
            dims[k] = item.i;
            *count = k + 1;
        }
        int next = after_item(t, ']');
        if (next != 1)
            return next == 2;
    }
}

/* gather.as_id of a text (ASCII here: ascii_id), as an int value; 0 (the part declines)
 * where as_id's int() would refuse it. */
static int
text_id(Value *v)
{
    if (!ascii_id(v->s.start, v->s.start + v->s.size, &v->i))
        return 0;
    v->kind = V_INT;
    v->text = 1;
    return 1;
}

/* A value of the field's type, into ev; 0 where the part declines. */
static int
read_field(Text *t, const Key *key, Event *ev, int depth)
{
    Value *v = &ev->v[key->field];
    if (ev->seen[key->field])
        return 0; /* msgspec keeps the last of a repeated key: not read here */
    ev->seen[key->field] = 1;
    if (key->field == F_TS && ev->anchor != NULL && t->p < t->end && *t->p != 'n') {
        Decimal d;
        v->kind = V_FLOAT;
        return decimal_at(t, &d) && rebased(&d, *ev->anchor, &v->f);
    }
    if (key->type == T_DIMS && t->p < t->end && *t->p == '[') {
        int k = key->field == A_GRID ? 0 : 1;
        v->kind = V_LIST;
        return read_dims(t, ev->dims[k], &ev->dims_count[k], depth);
    }
    /* Names are decoded here (strictly: one that is not UTF-8 declines), so they may be any
     * text without an escape. */
    int mode = key->type == T_RAW ? M_SKIP : key->field == F_NAME ? M_PLAIN : M_DECODED;
    if (!read_value(t, v, depth, mode))
        return 0;
    v->text = 0;
    switch (key->type) {
    case T_INT:
        return v->kind == V_INT || v->kind == V_NULL;
    case T_ID:
        return v->kind == V_INT || v->kind == V_NULL || (v->kind == V_STR && text_id(v));
    case T_EVENT_ID:
        return v->kind == V_INT || (v->kind == V_STR && text_id(v));
    case T_DIMS:
        return v->kind == V_STR || v->kind == V_NULL;
    case T_FLOAT:
        if (v->kind == V_INT) {
            v->kind = V_FLOAT;
            v->f = (double)v->i;
        }
        return v->kind == V_FLOAT || v->kind == V_NULL;
    case T_COUNT:
        return v->kind != V_STR;
    case T_TEXT:
        return v->kind == V_STR || v->kind == V_NULL;
    case T_EVENT_TEXT:
        return v->kind == V_STR;
    default: /* T_RAW, T_ANY, T_ADDRESS: any value */
        return 1;
    }
}

/* The fields of an object at t->p (keys of ``keys``; others skipped); 0 to decline. */
static int
read_object(Text *t, const Key **keys, Event *ev, int depth)
{
    if (t->p >= t->end || *t->p != '{' || depth > MAX_DEPTH)
        return 0;
    t->p++;
    space(t);
    if (t->p < t->end && *t->p == '}') {
        t->p++;
        return 1;
    }
    for (;;) {
        Slice name;
        if (!key_at(t, &name, M_PLAIN | M_ASCII))
            return 0;
        const Key *key = key_of(keys, name);
        if (key != NULL && key->field == F_ARGS) {
            if (ev->seen[F_ARGS])
                return 0;
            ev->seen[F_ARGS] = 1;
            if (t->p < t->end && *t->p == '{') {
                ev->v[F_ARGS].kind = V_OBJECT;
                if (!read_object(t, ARG_SLOTS, ev, depth + 1))
                    return 0;
            }
            else if (!read_value(t, &ev->v[F_ARGS], depth + 1, M_DECODED) ||
                     ev->v[F_ARGS].kind != V_NULL)
                return 0;
        }
        else if (key != NULL) {
            if (!read_field(t, key, ev, depth + 1))
                return 0;
        }
        else if (!skip_value(t, depth + 1, M_SKIP))
            return 0;
        int next = after_item(t, '}');
        if (next != 1)
            return next == 2;
    }
}

/* --- the columns -------------------------------------------------------------------------- */

typedef struct {
    char *data;
    Py_ssize_t size, capacity; /* in bytes */
} Column;

static int
push(Column *c, const void *value, Py_ssize_t size)
{
    if (c->size + size > c->capacity) {
        Py_ssize_t capacity = c->capacity ? c->capacity * 2 : 4096;
        char *data = PyMem_Realloc(c->data, (size_t)capacity);
        if (data == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        c->data = data;
        c->capacity = capacity;
    }
    memcpy(c->data + c->size, value, (size_t)size);
    c->size += size;
    return 0;
}

static int
push_int(Column *c, long long value)
{
    return push(c, &value, sizeof value);
}

static int
push_float(Column *c, double value)
{
    return push(c, &value, sizeof value);
}

/* Texts as Python objects, one object per distinct text of the part (names repeat), each
 * numbered in the order first met (``order`` lists them so). */
typedef struct {
    PyObject **objects; /* owned; NULL in an empty slot */
    uint64_t *hashes;
    Py_ssize_t *codes;
    Py_ssize_t capacity, used;
    int bytes;       /* make bytes objects, not str */
    PyObject *order; /* a list, or NULL where not kept */
} Texts;

/* A hash of a text's length and its first and last 32 bytes, a word at a time: kernel names
 * run to kilobytes, and texts of equal hashes are compared whole. */
static uint64_t
words_hash(uint64_t h, const char *p, Py_ssize_t n)
{
    for (Py_ssize_t k = 0; k < n; k += 8) {
        uint64_t word = 0;
        memcpy(&word, p + k, (size_t)(n - k < 8 ? n - k : 8));
        h = (h ^ word) * 0xBF58476D1CE4E5B9ULL;
        h ^= h >> 31;
    }
    return h;
}

static uint64_t
hash_of(Slice s)
{
    uint64_t h = ((uint64_t)s.size + 1) * 0x9E3779B97F4A7C15ULL;
    Py_ssize_t head = s.size < 32 ? s.size : 32;
    h = words_hash(h, s.start, head);
    if (s.size > 32)
        h = words_hash(h, s.start + s.size - 32, 32);
    return h;
}

static int
grow(Texts *texts)
{
    Py_ssize_t capacity = texts->capacity ? texts->capacity * 2 : 256;
    PyObject **objects = PyMem_Calloc((size_t)capacity, sizeof(PyObject *));
    uint64_t *hashes = PyMem_Calloc((size_t)capacity, sizeof(uint64_t));
    Py_ssize_t *codes = PyMem_Calloc((size_t)capacity, sizeof(Py_ssize_t));
    if (objects == NULL || hashes == NULL || codes == NULL) {
        PyMem_Free(objects);
        PyMem_Free(hashes);
        PyMem_Free(codes);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t k = 0; k < texts->capacity; k++) {
        if (texts->objects[k] == NULL)
            continue;
        Py_ssize_t at = (Py_ssize_t)(texts->hashes[k] & (uint64_t)(capacity - 1));
        while (objects[at] != NULL)
            at = (at + 1) & (capacity - 1);
        objects[at] = texts->objects[k];
        hashes[at] = texts->hashes[k];
        codes[at] = texts->codes[k];
    }
    PyMem_Free(texts->objects);
    PyMem_Free(texts->hashes);
    PyMem_Free(texts->codes);
    texts->objects = objects;
    texts->hashes = hashes;
    texts->codes = codes;
    texts->capacity = capacity;
    return 0;
}

/* The object of text s (a borrowed reference) and its code; NULL with an exception set where
 * it cannot be made (a name that is not UTF-8: UnicodeDecodeError). */
static PyObject *
text_object(Texts *texts, Slice s, Py_ssize_t *code)
{
    if (texts->used * 2 >= texts->capacity && grow(texts) < 0)
        return NULL;
    uint64_t hash = hash_of(s);
    Py_ssize_t at = (Py_ssize_t)(hash & (uint64_t)(texts->capacity - 1));
    for (; texts->objects[at] != NULL; at = (at + 1) & (texts->capacity - 1)) {
        if (texts->hashes[at] != hash)
            continue;
        PyObject *o = texts->objects[at];
        const char *data;
        Py_ssize_t size;
        if (texts->bytes) {
            data = PyBytes_AS_STRING(o);
            size = PyBytes_GET_SIZE(o);
        }
        else if ((data = PyUnicode_AsUTF8AndSize(o, &size)) == NULL)
            return NULL;
        if (size == s.size && memcmp(data, s.start, (size_t)size) == 0) {
            *code = texts->codes[at];
            return o;
        }
    }
    PyObject *o = texts->bytes ? PyBytes_FromStringAndSize(s.start, s.size)
                               : PyUnicode_DecodeUTF8(s.start, s.size, NULL);
    if (o == NULL)
        return NULL;
    if (texts->order != NULL && PyList_Append(texts->order, o) < 0) {
        Py_DECREF(o);
        return NULL;
    }
    texts->objects[at] = o;
    texts->hashes[at] = hash;
    texts->codes[at] = texts->used++;
    *code = texts->codes[at];
    return o;
}

static void
free_texts(Texts *texts)
{
    for (Py_ssize_t k = 0; k < texts->capacity; k++)
        Py_XDECREF(texts->objects[k]);
    PyMem_Free(texts->objects);
    PyMem_Free(texts->hashes);
    PyMem_Free(texts->codes);
    Py_XDECREF(texts->order);
}

/* A column of texts as codes into its distinct texts (bytes), in the order first met: what
 * raw_codes gives for msgspec.Raw values. */
typedef struct {
    Texts texts;
    Column codes; /* int64 */
} Coded;

static int
push_coded(Coded *c, Slice s)
{
    Py_ssize_t code;
    if (text_object(&c->texts, s, &code) == NULL)
        return -1;
    return push_int(&c->codes, code);
}

/* --- the tables --------------------------------------------------------------------------- */

enum { OPS, KERNELS, MEMCPY, MEMSET, RUNTIME, MEMORY, ANNOTATIONS, TABLES };
static const char *TABLE_NAMES[TABLES] = {"ops",     "kernels", "memcpy",          "memset",
                                          "runtime", "memory",  "gpu_annotations"};

/* The texts of a collective's args (columns.comm_columns), as codes. */
enum { COMM_COLLECTIVE, COMM_GROUP, COMM_GROUP_RANKS, COMM_DTYPE, COMM };
static const int COMM_FIELDS[COMM] = {A_COLLECTIVE, A_GROUP, A_GROUP_RANKS, A_DTYPE};

/* Each table's int64 / float64 columns, by name, in the order its builder makes them. */
enum {
    C_PID,
    C_TID,
    C_START,
    C_DUR,
    C_EXTERNAL,
    C_SEQUENCE,
    C_FWD_TID,
    C_CALLER_LINE,
    C_DEVICE,
    C_STREAM,
    C_CORRELATION,
    C_GRID_X,
    C_GRID_Y,
    C_GRID_Z,
    C_BLOCK_X,
    C_BLOCK_Y,
    C_BLOCK_Z,
    C_REGISTERS,
    C_SHARED,
    C_OCCUPANCY, /* float64 */
    C_PER_SM,    /* float64 */
    C_BYTES,
    C_TOTAL_ALLOCATED,
    C_TOTAL_RESERVED,
    C_ADDR,
    C_LANE_PID,
    C_LANE_TID,
    C_TIME, /* an instant's (the allocator table's) */
    C_SEQ,
    C_IN_ELEMS,
    C_OUT_ELEMS,
    COLUMNS
};
static const char *COLUMN_NAMES[COLUMNS] = {
    "pid",     "tid",          "start_ns",        "dur_ns",         "external_id",
    "sequence", "fwd_tid",     "caller_line",     "device",         "stream",
    "correlation", "grid_x",   "grid_y",          "grid_z",         "block_x",
    "block_y", "block_z",      "registers_per_thread", "shared_memory", "occupancy",
    "blocks_per_sm", "bytes",  "total_allocated", "total_reserved", "addr",
    "_pid",    "_tid",         "time_ns",         "seq",            "_in_elems",
    "_out_elems"};

typedef struct {
    Py_ssize_t rows;
    Column columns[COLUMNS];
    char used[COLUMNS];
    PyObject *names;      /* list of str */
    PyObject *categories; /* list of str (ops, runtime) */
    int any_autograd, any_caller_line, any_collective;
    /* some collective's arg this path does not read (a bool or a float for a text, a count in
     * text): the part is read only where no row names a collective (the args go unread) */
    int comm_unread;
    Coded raws[3];        /* ops: Input Dims, Input type, Concrete Inputs */
    Coded comm[COMM];     /* ops, kernels: the collectives' texts (codes -1: none, "") */
} Table;

/* Every category a table takes, as the text the column keeps (OP_CATEGORY's renaming). */
typedef struct {
    const char *cat;
    int table;
    const char *kept;
} Route;

static const Route ROUTES[] = {
    {"cpu_op", OPS, "cpu_op"},
    {"Operator", OPS, "cpu_op"},
    {"user_annotation", OPS, "user_annotation"},
    {"python_function", OPS, "python_function"},
    {"kernel", KERNELS, NULL},
    {"Kernel", KERNELS, NULL},
    {"gpu_memcpy", MEMCPY, NULL},
    {"Memcpy", MEMCPY, NULL},
    {"gpu_memset", MEMSET, NULL},
    {"Memset", MEMSET, NULL},
    {"cuda_runtime", RUNTIME, "cuda_runtime"},
    {"Runtime", RUNTIME, "Runtime"},
    {"cuda_driver", RUNTIME, "cuda_driver"},
    {"gpu_user_annotation", ANNOTATIONS, NULL},
    {NULL, 0, NULL}};
#define ROUTE_COUNT 14
_Static_assert(sizeof ROUTES / sizeof ROUTES[0] == ROUTE_COUNT + 1, "a kept text per route");
static PyObject *KEPT[ROUTE_COUNT]; /* the kept categories as str, made once */

static int
same(Slice s, const char *text)
{
    return (Py_ssize_t)strlen(text) == s.size && memcmp(s.start, text, (size_t)s.size) == 0;
}

static int
put(Table *table, int column, long long value)
{
    table->used[column] = 1;
    return push_int(&table->columns[column], value);
}

static int
put_float(Table *table, int column, double value)
{
    table->used[column] = 1;
    return push_float(&table->columns[column], value);
}

/* The int of an int | None field; ``absent`` where it is null or missing. */
static long long
int_or(const Event *ev, int field, long long absent)
{
    return ev->seen[field] && ev->v[field].kind == V_INT ? ev->v[field].i : absent;
}

/* In [low, high) where present (else the part declines: the column would record a finding). */
static int
in_range(const Event *ev, int field, long long low, long long high)
{
    return !(ev->seen[field] && ev->v[field].kind == V_INT) ||
           (ev->v[field].i >= low && ev->v[field].i < high);
}

/* gather.int_or_none of an Any field: NO_ID for null, a bool, no int or one out of range. */
static long long
count_of(const Event *ev, int field)
{
    const Value *v = &ev->v[field];
    if (!ev->seen[field] || v->kind != V_INT || v->i < 0 || v->i >= I62)
        return NO_ID;
    return v->i;
}

static int
set_any(const Event *ev, int field)
{
    return ev->seen[field] && ev->v[field].kind != V_NULL;
}

/* columns._text of an Any field, as a code into c's texts (-1 for ""): a text as it is, an
 * int in decimal, "" for null, a list, an object or no value; 0 where it is not read here (a
 * bool, a float: Python's spelling of them is not made here), 1, or -1 on an error. */
static int
push_text(Coded *c, const Event *ev, int field)
{
    const Value *v = &ev->v[field];
    if (!ev->seen[field] || v->kind == V_NULL || v->kind == V_LIST || v->kind == V_OBJECT)
        return push_int(&c->codes, -1) < 0 ? -1 : 1;
    if (v->kind != V_STR && v->kind != V_INT)
        return push_int(&c->codes, -1) < 0 ? -1 : 0;
    char digits[24];
    Slice text = v->s;
    if (v->kind == V_INT) {
        text.start = digits;
        text.size = snprintf(digits, sizeof digits, "%lld", v->i);
    }
    return push_coded(c, text) < 0 ? -1 : 1;
}

/* The communication facts of an op or kernel (columns.comm_columns: the message bytes are
 * direct.py's, from the dtype's text and the counts); -1 on an error. */
static int
add_comm(Table *table, const Event *ev)
{
    table->any_collective |= set_any(ev, A_COLLECTIVE);
    for (int field = A_SEQ; field <= A_OUT_ELEMS; field++)
        table->comm_unread |= ev->seen[field] && ev->v[field].kind == V_STR;
    for (int k = 0; k < COMM; k++) {
        int status = push_text(&table->comm[k], ev, COMM_FIELDS[k]);
        if (status < 0)
            return status;
        table->comm_unread |= status == 0;
    }
    int failed = put(table, C_SEQ, count_of(ev, A_SEQ));
    failed |= put(table, C_IN_ELEMS, count_of(ev, A_IN_ELEMS));
    failed |= put(table, C_OUT_ELEMS, count_of(ev, A_OUT_ELEMS));
    return failed ? -1 : 1;
}

/* An event's table row; 0 where it declines, -1 on an error. */
static int
add_row(Table *tables, int which, const Route *route, const Event *ev, Texts *names,
        double ts, double dur)
{
    Table *table = &tables[which];
    long long pid = int_or(ev, F_PID, 0), tid = int_or(ev, F_TID, 0);
    long long external =
        int_or(ev, A_EXTERNAL, int_or(ev, A_LEGACY_EXTERNAL, NO_ID));
    long long start = nanoseconds(ts), length = nanoseconds(dur);
    Py_ssize_t slot;
    Slice name = ev->seen[F_NAME] ? ev->v[F_NAME].s : (Slice){"", 0};
    int failed = 0;
    if (which != MEMORY) {
        PyObject *text = text_object(names, name, &slot);
        if (text == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
            PyErr_Clear(); /* msgspec refuses it: the part is read there, and fails there */
            return 0;
        }
        if (text == NULL || PyList_Append(table->names, text) < 0)
            return -1;
    }
    switch (which) {
    case OPS:
    case RUNTIME:
        failed |= put(table, C_PID, pid) | put(table, C_TID, tid);
        failed |= PyList_Append(table->categories, KEPT[route - ROUTES]);
        failed |= put(table, C_START, start) | put(table, C_DUR, length);
        if (which == RUNTIME) {
            failed |= put(table, C_CORRELATION, int_or(ev, A_CORRELATION, NO_ID));
            failed |= put(table, C_EXTERNAL, external);
            break;
        }
        failed |= put(table, C_EXTERNAL, external);
        {
            /* "Input Dims", else the legacy "Input dims"; an empty text where neither */
            int dims = ev->seen[A_DIMS] ? A_DIMS : A_LEGACY_DIMS;
            Slice none = {"", 0};
            Slice raws[3] = {ev->seen[dims] ? ev->v[dims].whole : none,
                             ev->seen[A_TYPES] ? ev->v[A_TYPES].whole : none,
                             ev->seen[A_CONCRETE] ? ev->v[A_CONCRETE].whole : none};
            for (int k = 0; k < 3; k++)
                if (push_coded(&table->raws[k], raws[k]) < 0)
                    return -1;
        }
        table->any_autograd |= set_any(ev, A_SEQUENCE) || set_any(ev, A_FWD_TID);
        table->any_caller_line |= set_any(ev, A_CALLER_LINE);
        failed |= put(table, C_SEQUENCE, count_of(ev, A_SEQUENCE));
        failed |= put(table, C_FWD_TID, count_of(ev, A_FWD_TID));
        failed |= put(table, C_CALLER_LINE, count_of(ev, A_CALLER_LINE));
        {
            int status = add_comm(table, ev);
            if (status != 1)
                return status;
        }
        break;
    case KERNELS:
    case MEMCPY:
    case MEMSET:
    case ANNOTATIONS: {
        if (!in_range(ev, A_DEVICE, 0, I32))
            return 0;
        long long lane = pid >= 0 && pid < I32 ? pid : NO_ID;
        long long device = int_or(ev, A_DEVICE, NO_ID);
        failed |= put(table, C_DEVICE, device == NO_ID ? lane : device);
        failed |= put(table, C_STREAM, int_or(ev, A_STREAM, tid));
        failed |= put(table, C_START, start) | put(table, C_DUR, length);
        if (which != ANNOTATIONS) /* columns.gpu_annotation_columns: no correlation */
            failed |= put(table, C_CORRELATION, int_or(ev, A_CORRELATION, NO_ID));
        failed |= put(table, C_EXTERNAL, external);
        if (which == KERNELS) {
            for (int k = 0; k < 2; k++) {
                int field = k == 0 ? A_GRID : A_BLOCK;
                int given = ev->seen[field] && ev->v[field].kind == V_LIST ? ev->dims_count[k] : 0;
                for (int axis = 0; axis < 3; axis++) {
                    long long size = axis < given ? ev->dims[k][axis] : NO_ID;
                    if (axis < given && (size < 0 || size >= I32))
                        return 0;
                    failed |= put(table, (k == 0 ? C_GRID_X : C_BLOCK_X) + axis, size);
                }
            }
            if (!in_range(ev, A_REGISTERS, 0, I32) || !in_range(ev, A_SHARED, 0, I62))
                return 0;
            failed |= put(table, C_REGISTERS, int_or(ev, A_REGISTERS, NO_ID));
            failed |= put(table, C_SHARED, int_or(ev, A_SHARED, NO_ID));
            const Value *occupancy = &ev->v[A_OCCUPANCY], *per_sm = &ev->v[A_PER_SM];
            int has_occupancy = ev->seen[A_OCCUPANCY] && occupancy->kind == V_FLOAT;
            int has_per_sm = ev->seen[A_PER_SM] && per_sm->kind == V_FLOAT;
            if ((has_occupancy && !(occupancy->f >= 0 && occupancy->f < 101)) ||
                (has_per_sm && !(per_sm->f >= 0 && per_sm->f < (double)I32)))
                return 0;
            failed |= put_float(table, C_OCCUPANCY, has_occupancy ? occupancy->f : Py_NAN);
            failed |= put_float(table, C_PER_SM, has_per_sm ? per_sm->f : Py_NAN);
            int status = add_comm(table, ev);
            if (status != 1)
                return status;
        }
        else if (which != ANNOTATIONS) {
            if (!in_range(ev, A_BYTES, -1, I62))
                return 0;
            failed |= put(table, C_BYTES, int_or(ev, A_BYTES, NO_ID));
        }
        failed |= put(table, C_LANE_PID, pid) | put(table, C_LANE_TID, tid);
        break;
    }
    case MEMORY: {
        failed |= put(table, C_TIME, start);
        failed |= put(table, C_PID, pid) | put(table, C_TID, tid);
        long long type = int_or(ev, A_DEVICE_TYPE, 0);
        int on_device = ev->seen[A_DEVICE_TYPE] && ev->v[A_DEVICE_TYPE].kind == V_INT && type != 0;
        if (on_device && !in_range(ev, A_DEVICE_ID, -1, I32))
            return 0;
        failed |= put(table, C_DEVICE, on_device ? int_or(ev, A_DEVICE_ID, NO_ID) : -1);
        failed |= put(table, C_BYTES, int_or(ev, A_ALLOC_BYTES, NO_ID));
        failed |= put(table, C_TOTAL_ALLOCATED, int_or(ev, A_TOTAL_ALLOCATED, NO_ID));
        failed |= put(table, C_TOTAL_RESERVED, int_or(ev, A_TOTAL_RESERVED, NO_ID));
        const Value *addr = &ev->v[A_ADDR];
        failed |= put(table, C_ADDR, ev->seen[A_ADDR] && addr->kind == V_INT ? addr->i : NO_ID);
        break;
    }
    }
    table->rows++;
    return failed ? -1 : 1;
}

/* What a part records beside its tables, as columns.sort_events does: what was skipped, by
 * kind, in the order first met; the threads' names; the profiler's own spans' ends. */
typedef struct {
    PyObject *skipped;      /* dict: kind -> count */
    PyObject *thread_names; /* dict: "pid/tid" -> name */
    Column span_ends;       /* int64 ns */
} Extras;

/* One more skipped event of the kind ``prefix`` + text; 0 declines (text not UTF-8). */
static int
skip(Extras *extras, const char *prefix, Slice text)
{
    PyObject *rest = PyUnicode_DecodeUTF8(text.start, text.size, NULL);
    PyObject *kind = rest != NULL ? PyUnicode_FromFormat("%s%U", prefix, rest) : NULL;
    Py_XDECREF(rest);
    if (kind == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
            return -1;
        PyErr_Clear(); /* msgspec refuses it: the part is read there, and fails there */
        return 0;
    }
    PyObject *count = PyDict_GetItemWithError(extras->skipped, kind); /* borrowed */
    long before = count != NULL ? PyLong_AsLong(count) : 0;
    PyObject *more = PyErr_Occurred() ? NULL : PyLong_FromLong(before + 1);
    int failed = more == NULL || PyDict_SetItem(extras->skipped, kind, more) < 0;
    Py_XDECREF(more);
    Py_DECREF(kind);
    return failed ? -1 : 1;
}

/* An id as msgspec decoded it, as text: the text written, or the int's digits. */
static PyObject *
id_text(const Event *ev, int field)
{
    const Value *v = &ev->v[field];
    if (!ev->seen[field])
        return PyUnicode_FromString("0");
    if (v->text)
        return PyUnicode_FromStringAndSize(v->s.start, v->s.size);
    return PyUnicode_FromFormat("%lld", v->i);
}

static int
thread_name(Extras *extras, const Event *ev)
{
    const Value *name = &ev->v[A_NAME];
    if (!(ev->seen[A_NAME] && name->kind == V_STR && name->s.size > 0))
        return 1;
    PyObject *pid = id_text(ev, F_PID), *tid = id_text(ev, F_TID);
    PyObject *key = pid && tid ? PyUnicode_FromFormat("%U/%U", pid, tid) : NULL;
    PyObject *text = key ? PyUnicode_FromStringAndSize(name->s.start, name->s.size) : NULL;
    int failed = text == NULL || PyDict_SetItem(extras->thread_names, key, text) < 0;
    Py_XDECREF(pid);
    Py_XDECREF(tid);
    Py_XDECREF(key);
    Py_XDECREF(text);
    return failed ? -1 : 1;
}

/* An event's text into its table or the part's extras: 1 read, 0 declines, -1 an error. */
static int
read_event(Table *tables, Extras *extras, Texts *names, const char *data, Py_ssize_t size,
           const long long *anchor)
{
    Event ev;
    memset(ev.seen, 0, sizeof ev.seen);
    ev.anchor = anchor;
    Text t = {data, data + size};
    space(&t);
    if (!read_object(&t, EVENT_SLOTS, &ev, 1))
        return 0;
    space(&t);
    if (t.p != t.end)
        return 0;
    /* ts and dur as numbers: int | float | None */
    int has_ts = ev.seen[F_TS] && ev.v[F_TS].kind == V_FLOAT;
    int has_dur = ev.seen[F_DUR] && ev.v[F_DUR].kind == V_FLOAT;
    double ts = has_ts ? ev.v[F_TS].f : 0, dur = has_dur ? ev.v[F_DUR].f : 0;
    /* a fraction beyond float64's nanoseconds: decode.needs_exact_times, for any event */
    if (has_ts && fabs(ts) >= EXACT_LIMIT_US && ts != floor(ts))
        return 0;
    /* checked_times: a ts, and where a duration is needed one, usable */
    int usable = has_ts && fabs(ts) < TIME_LIMIT_US;
    int lasting = usable && has_dur && dur >= 0 && dur < TIME_LIMIT_US;
    Slice none = {"", 0};
    Slice ph = ev.seen[F_PH] ? ev.v[F_PH].s : none;
    Slice cat = ev.seen[F_CAT] ? ev.v[F_CAT].s : none;
    Slice name = ev.seen[F_NAME] ? ev.v[F_NAME].s : none;
    /* msgspec decodes every name as UTF-8; where this path does not decode it (a table row's
     * or a skipped instant's it does, strictly), only an ASCII one is read */
    int ascii_name = 1;
    for (Py_ssize_t k = 0; k < name.size; k++)
        ascii_name &= (unsigned char)name.start[k] < 0x80;
    if (ph.size == 1 && strchr("sftbe", ph.start[0]) != NULL)
        return ascii_name; /* a flow: the msgspec path skips it too */
    if (same(ph, "X")) {
        for (const Route *route = ROUTES; route->cat != NULL; route++)
            if (same(cat, route->cat))
                return lasting ? add_row(tables, route->table, route, &ev, names, ts, dur) : 0;
        /* another category: skipped, by it; the profiler's own span's end kept */
        if (!ascii_name)
            return 0;
        if (same(cat, "Trace") && lasting &&
            push_int(&extras->span_ends, nanoseconds(ts) + nanoseconds(dur)) < 0)
            return -1;
        return skip(extras, "", cat.size ? cat : (Slice){"(no category)", 13});
    }
    if (same(ph, "i") || same(ph, "I")) {
        if (same(name, "[memory]"))
            return usable ? add_row(tables, MEMORY, NULL, &ev, names, ts, 0.0) : 0;
        if (same(name, "[OutOfMemory]"))
            return 0; /* the failure the report explains: the msgspec path reads it */
        return skip(extras, "instant ", name);
    }
    if (!ascii_name || same(ph, "C"))
        return 0; /* counter samples: the msgspec path reads them */
    if (same(ph, "M"))
        return same(name, "thread_name") ? thread_name(extras, &ev) : 1;
    return skip(extras, "phase ", ph.size ? ph : (Slice){"(none)", 6});
}

/* --- to Python ---------------------------------------------------------------------------- */

static PyObject *
column_bytes(const Column *c)
{
    return PyByteArray_FromStringAndSize(c->data != NULL ? c->data : "", c->size);
}

/* {column: bytearray of int64 / float64, or list}: a table's columns as read. */
static PyObject *
table_dict(Table *table)
{
    PyObject *out = PyDict_New();
    if (out == NULL)
        return NULL;
    for (int c = 0; c < COLUMNS; c++) {
        if (!table->used[c])
            continue;
        PyObject *values = column_bytes(&table->columns[c]);
        if (values == NULL || PyDict_SetItemString(out, COLUMN_NAMES[c], values) < 0) {
            Py_XDECREF(values);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(values);
    }
    if (PyDict_SetItemString(out, "name", table->names) < 0 ||
        PyDict_SetItemString(out, "category", table->categories) < 0)
        goto error;
    static const char *RAW_NAMES[3] = {"input_dims", "input_types", "concrete_inputs"};
    for (int k = 0; k < 3 && table->raws[0].codes.size; k++) {
        Coded *coded = &table->raws[k];
        PyObject *codes = column_bytes(&coded->codes);
        PyObject *pair = codes != NULL ? PyTuple_Pack(2, codes, coded->texts.order) : NULL;
        Py_XDECREF(codes);
        if (pair == NULL || PyDict_SetItemString(out, RAW_NAMES[k], pair) < 0) {
            Py_XDECREF(pair);
            goto error;
        }
        Py_DECREF(pair);
    }
    if (table->any_collective) {
        PyObject *comm = PyTuple_New(COMM);
        for (int k = 0; comm != NULL && k < COMM; k++) {
            PyObject *codes = column_bytes(&table->comm[k].codes);
            PyObject *pair = codes != NULL ? PyTuple_Pack(2, codes, table->comm[k].texts.order)
                                           : NULL;
            Py_XDECREF(codes);
            if (pair == NULL)
                Py_CLEAR(comm);
            else
                PyTuple_SET_ITEM(comm, k, pair);
        }
        if (comm == NULL || PyDict_SetItemString(out, "comm", comm) < 0) {
            Py_XDECREF(comm);
            goto error;
        }
        Py_DECREF(comm);
    }
    PyObject *flags = Py_BuildValue("(ii)", table->any_autograd, table->any_caller_line);
    if (flags == NULL || PyDict_SetItemString(out, "any_set", flags) < 0) {
        Py_XDECREF(flags);
        goto error;
    }
    Py_DECREF(flags);
    return out;
error:
    Py_DECREF(out);
    return NULL;
}

static void
free_tables(Table *tables)
{
    for (int k = 0; k < TABLES; k++) {
        for (int c = 0; c < COLUMNS; c++)
            PyMem_Free(tables[k].columns[c].data);
        Py_XDECREF(tables[k].names);
        Py_XDECREF(tables[k].categories);
        for (int r = 0; r < 3; r++) {
            free_texts(&tables[k].raws[r].texts);
            PyMem_Free(tables[k].raws[r].codes.data);
        }
        for (int r = 0; r < COMM; r++) {
            free_texts(&tables[k].comm[r].texts);
            PyMem_Free(tables[k].comm[r].codes.data);
        }
    }
}

/* The whole us of an event's ts (int(Decimal(text)), as decode._earliest_microsecond takes
 * it) into *earliest where it is the least yet: 1, or 0 where this path cannot read the event
 * as decode.exact_times does (an exponent, a repeated or escaped key...). */
static int
earliest_of(const char *data, Py_ssize_t size, int *found, long long *earliest)
{
    Text t = {data, data + size};
    space(&t);
    if (t.p >= t.end || *t.p != '{')
        return 1; /* not an object (the texts are valid JSON, the outline's): no ts */
    t.p++;
    space(&t);
    if (t.p < t.end && *t.p == '}')
        return 1;
    int seen = 0;
    for (;;) {
        Slice name;
        if (!key_at(&t, &name, M_PLAIN | M_ASCII))
            return 0;
        if (name.size == 2 && memcmp(name.start, "ts", 2) == 0) {
            if (seen++)
                return 0;
            if (t.p < t.end && (*t.p == '-' || (*t.p >= '0' && *t.p <= '9'))) {
                Decimal d;
                if (!decimal_at(&t, &d))
                    return 0;
                long long whole = d.negative ? -(long long)d.whole : (long long)d.whole;
                if (!*found || whole < *earliest)
                    *earliest = whole;
                *found = 1;
            }
            else if (!skip_value(&t, 1, M_SKIP))
                return 0; /* a text, null, a container: no number, no ts */
        }
        else if (!skip_value(&t, 1, M_SKIP))
            return 0;
        int next = after_item(&t, '}');
        if (next != 1)
            return next == 2;
    }
}

PyDoc_STRVAR(earliest_us_doc,
"earliest_us(raws) -> tuple[bool, int | None]\n\n"
"Whether this path read every event whose JSON text raws holds, and then the least whole\n"
"microseconds of their ts (None where none has a number for one), as\n"
"decode._earliest_microsecond takes them; (False, None) where it did not.");

static PyObject *
earliest_us(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *raws;
    if (!PyArg_ParseTuple(args, "O!:earliest_us", &PyList_Type, &raws))
        return NULL;
    int found = 0, read = 1;
    long long earliest = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(raws) && read; i++) {
        Py_buffer view;
        if (PyObject_GetBuffer(PyList_GET_ITEM(raws, i), &view, PyBUF_SIMPLE) < 0)
            return NULL;
        read = earliest_of(view.buf, view.len, &found, &earliest);
        PyBuffer_Release(&view);
    }
    if (!read || !found)
        return Py_BuildValue("(OO)", read ? Py_True : Py_False, Py_None);
    return Py_BuildValue("(OL)", Py_True, earliest);
}

PyDoc_STRVAR(part_columns_doc,
"part_columns(raws, anchor=None) -> dict | None\n\n"
"The columns of each table ({table: {column: values}}) of the events whose JSON texts raws\n"
"holds (bytes-like: msgspec.Raw), in file order, and under \"part\" what sort_events records\n"
"beside them (skipped: kind -> count, thread_names, span_ends); None where some event is not\n"
"one this path reads exactly as the msgspec path does (the part is decoded by msgspec then).\n"
"anchor: the whole us every ts is rebased on, read exactly (decode._keep_nanoseconds).\n"
"Numbers come as bytearrays of int64 (float64: occupancy, blocks_per_sm); names and\n"
"categories as lists of str; the ops' recorded inputs as (codes, distinct texts as bytes) as\n"
"raw_codes gives them; any_set: whether some op has autograd args, a caller line; comm\n"
"(ops, kernels, where some row names a collective): the collective, process group, group\n"
"ranks and dtype texts as (codes, distinct str), code -1 for \"\", beside the columns seq,\n"
"_in_elems and _out_elems.");

static PyObject *
part_columns(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *raws, *anchor = Py_None;
    if (!PyArg_ParseTuple(args, "O!|O:part_columns", &PyList_Type, &raws, &anchor))
        return NULL;
    long long anchor_us = 0;
    if (anchor != Py_None) {
        int overflow = 0;
        anchor_us = PyLong_AsLongLongAndOverflow(anchor, &overflow);
        if (anchor_us == -1 && PyErr_Occurred())
            return NULL;
        /* as far as an 18-digit whole part: so the rebased one fits int64 (else declines) */
        if (overflow || anchor_us >= MAX_WHOLE || anchor_us <= -MAX_WHOLE)
            return Py_NewRef(Py_None);
    }
    Table tables[TABLES];
    memset(tables, 0, sizeof tables);
    Texts names = {NULL, NULL, NULL, 0, 0, 0, NULL};
    Extras extras = {PyDict_New(), PyDict_New(), {NULL, 0, 0}};
    PyObject *out = NULL;
    int status = 1;
    if (extras.skipped == NULL || extras.thread_names == NULL)
        goto done;
    for (int k = 0; k < TABLES; k++) {
        tables[k].names = PyList_New(0);
        tables[k].categories = PyList_New(0);
        for (int r = 0; r < 3; r++) {
            tables[k].raws[r].texts.bytes = 1;
            if ((tables[k].raws[r].texts.order = PyList_New(0)) == NULL)
                goto done;
        }
        for (int r = 0; r < COMM; r++)
            if ((tables[k].comm[r].texts.order = PyList_New(0)) == NULL)
                goto done;
        if (tables[k].names == NULL || tables[k].categories == NULL)
            goto done;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(raws) && status == 1; i++) {
        PyObject *raw = PyList_GET_ITEM(raws, i);
        Py_buffer view;
        if (PyObject_GetBuffer(raw, &view, PyBUF_SIMPLE) < 0)
            goto done;
        status = read_event(tables, &extras, &names, view.buf, view.len,
                            anchor != Py_None ? &anchor_us : NULL);
        PyBuffer_Release(&view);
    }
    for (int k = 0; k < TABLES && status == 1; k++)
        if (tables[k].any_collective && tables[k].comm_unread)
            status = 0; /* the msgspec path reads them (gather.int_or_none reads text) */
    if (status < 0)
        goto done;
    if (status == 0) {
        PyErr_Clear(); /* a name that is not UTF-8 declines too */
        out = Py_NewRef(Py_None);
        goto done;
    }
    out = PyDict_New();
    for (int k = 0; out != NULL && k < TABLES; k++) {
        if (!tables[k].rows)
            continue;
        PyObject *table = table_dict(&tables[k]);
        if (table == NULL || PyDict_SetItemString(out, TABLE_NAMES[k], table) < 0)
            Py_CLEAR(out);
        Py_XDECREF(table);
    }
    PyObject *ends = out != NULL ? column_bytes(&extras.span_ends) : NULL;
    PyObject *part = ends != NULL ? Py_BuildValue("{sOsOsO}", "skipped", extras.skipped,
                                                  "thread_names", extras.thread_names,
                                                  "span_ends", ends)
                                  : NULL;
    if (part == NULL || PyDict_SetItemString(out, "part", part) < 0)
        Py_CLEAR(out);
    Py_XDECREF(part);
    Py_XDECREF(ends);
done:
    free_tables(tables);
    free_texts(&names);
    Py_XDECREF(extras.skipped);
    Py_XDECREF(extras.thread_names);
    PyMem_Free(extras.span_ends.data);
    return out;
}

static PyMethodDef methods[] = {
    {"part_columns", part_columns, METH_VARARGS, part_columns_doc},
    {"earliest_us", earliest_us, METH_VARARGS, earliest_us_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "gpuprofile.importers.kineto._scan",
    .m_doc = "The Kineto reader's compiled path from a part's JSON texts to its columns "
             "(direct.py uses it where built).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC
PyInit__scan(void)
{
    static int ready = 0; /* once: a module of m_size -1 may be initialised again */
    for (int k = 0; !ready && k < ROUTE_COUNT; k++) {
        const char *kept = ROUTES[k].kept != NULL ? ROUTES[k].kept : "";
        if ((KEPT[k] = PyUnicode_InternFromString(kept)) == NULL)
            return NULL;
    }
    if (!ready) {
        index_keys(EVENT_KEYS, EVENT_SLOTS);
        index_keys(ARG_KEYS, ARG_SLOTS);
        ready = 1;
    }
    return PyModule_Create(&module);
}
