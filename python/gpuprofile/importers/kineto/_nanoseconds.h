/* Microseconds (a float64) to int64 nanoseconds, shared by the reader's compiled modules
 * (_gather.c's exact_ns, _scan.c's times), as gather.py's py_exact_ns computes them. */
#ifndef GPUPROFILE_NANOSECONDS_H
#define GPUPROFILE_NANOSECONDS_H

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

#endif
