/* Values as the Kineto reader reads them, shared by its compiled modules (_gather.c, _scan.c):
 * times in nanoseconds (gather.py's py_exact_ns) and ids written as text (gather.as_id). */
#ifndef GPUPROFILE_VALUES_H
#define GPUPROFILE_VALUES_H

#include <limits.h> /* LLONG_MIN */
#include <math.h>   /* frexp, isfinite, rint */

/* 2**53: a frexp mantissa (in [0.5, 1)) times this is the 53-bit integer it holds. */
#define MANTISSA_SCALE 9007199254740992.0

/* The nanoseconds nearest the exact binary value of us: in integers where |us| is in
 * [1, 2**52), else the rounded float product; no number (NaN, infinite, beyond int64) is the
 * smallest int64. */
static inline long long
nanoseconds(double us)
{
    int exponent;
    double mantissa = frexp(us, &exponent);
    int shift = 53 - exponent; /* us == m * 2**-shift, m a 53-bit integer */
    if (isfinite(us) && shift >= 1 && shift <= 52) {
        long long m = (long long)(mantissa * MANTISSA_SCALE);
        /* |m| * 1000 + 2**51 < 2**63; then a floor shift, rounding half up, as numpy's >> */
        long long v = m * 1000 + (1LL << (shift - 1));
        return v >= 0 ? v >> shift : ~((~v) >> shift);
    }
    double product = rint(us * 1000.0);
    /* numpy's cast gives the smallest int64 where C's would be undefined */
    if (!(product >= -9223372036854775808.0 && product < 9223372036854775808.0))
        return LLONG_MIN;
    return (long long)product;
}

/* gather.as_id of an ASCII text [start, end): its last space-separated token's integer where
 * it is digits after one optional '-' and shorter than 19 characters, else -1 (NO_ID).
 * Returns 1 with *out set, or 0 where the token is digits after several '-' (as_id's int()
 * raises there: the caller leaves it to the Python rule). */
static inline int
ascii_id(const char *start, const char *end, long long *out)
{
    /* rsplit(" ", 1)[-1]: U+0020 is one byte in UTF-8 and never inside another character */
    const char *token = end;
    while (token > start && token[-1] != ' ')
        token--;
    const char *digits = token;
    while (digits < end && *digits == '-')
        digits++;
    int all_digits = digits < end;
    for (const char *p = digits; p < end; p++)
        all_digits = all_digits && *p >= '0' && *p <= '9';
    if (!all_digits || end - token >= 19) {
        *out = -1;
        return 1;
    }
    if (digits - token > 1)
        return 0;
    long long number = 0; /* at most 18 digits: no overflow */
    for (const char *p = digits; p < end; p++)
        number = number * 10 + (*p - '0');
    *out = digits > token ? -number : number;
    return 1;
}

#endif
