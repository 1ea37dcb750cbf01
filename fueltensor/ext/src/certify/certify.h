/* What every part of `_certify` shares: the headers, the 16-bit format being certified, the
 * operations, and the layout of the tally (the int64 array Python reads by the names in
 * `_certify.STATS`). `_certify.c` includes the parts after this header, in one translation unit.
 *
 * `_certify` is the certifier's reference, kept apart from the kernels it certifies: it shares
 * no code with `_native` (fuel-cpu-backend's bodies), only abi.h's op numbering. */
#ifndef FUELTENSOR_CERTIFY_H
#define FUELTENSOR_CERTIFY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <fenv.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../abi.h"

/* A 16-bit IEEE-style binary format: exponent and stored fraction bits (Python passes them from
 * `fueltensor.testing.float_format`, so no format is restated here), and what follows from them. */
typedef struct {
    int exponent, mantissa;
    int bias;              /* the biased exponent of 1.0 */
    uint32_t emax;         /* the all-ones biased exponent */
    uint32_t sign, quiet;  /* the sign bit and the quiet bit (top fraction bit), as masks */
    uint32_t frac;         /* the fraction bits, as a mask */
    uint32_t inf;          /* +infinity's pattern */
    uint32_t rounding_ulp; /* `testing.rounding_ulp`: 2 ** (mantissa // 2) */
    const double *values;  /* every pattern's value (`values_for`) */
} Format;

/* pow's error bound, in ULPs of double, inside which its rounding is decided exactly. */
#define POW_BOUND_ULPS 1024.0
/* The unary functions' error bound in ULPs of double, inside which a rounding is left to MPFR:
 * glibc documents its double exp, log, sin, cos and erf within 1 ULP and tanh within 2 on
 * x86_64 (the manual's "Known Maximum Errors in Math Functions"); sigmoid's and rsqrt's double
 * steps add at most 2.5. Sixteen leaves a C library eight times worse still proven. */
#define UNARY_BOUND_ULPS 16.0
/* A unary tally's distance for a NaN against a number: above every finite 32-bit distance. */
#define UNARY_NAN_DISTANCE ((int64_t)1 << 40)

/* The most value classes the class table may number (`testing.VALUE_CLASSES` has 11). */
#define MAX_CLASSES 16
/* Finite ULP distances of their own in the histogram; further ones are "beyond". */
#define HIST_ULPS 8
/* The distance a NaN-against-number lane counts as: above every finite 16-bit distance. */
#define NAN_DISTANCE 65536

/* The tally: counters summed over every pair seen, and the first pair reaching some mark (-1:
 * none yet). Names in this order are `_certify.STATS`; the operand-class table follows them. */
enum {
    H_EXACT,       /* the reference's bits */
    H_ULP0,        /* 0 ULP, other bits: another NaN, or a zero of the other sign */
    H_BEYOND = H_ULP0 + HIST_ULPS + 1,
    MAX_ULP,       /* the largest distance (NAN_DISTANCE: a NaN against a number) */
    MAX_LHS,       /* the first pair reaching it */
    MAX_RHS,
    FORMULA_EQUAL, /* pairs whose bits are the contract formula's */
    FORMULA_LHS,   /* the first pair that is not */
    FORMULA_RHS,
    D_EQUAL,       /* testing.DIFFERENCE_CLASSES against the reference, in its order */
    D_NAN_SIGN,
    D_NAN_PAYLOAD,
    D_NAN_VS_NUMBER,
    D_SIGNED_ZERO,
    D_INFINITY,
    D_SUBNORMAL,
    D_SIGN,
    D_ROUNDING,
    D_VALUE,
    OPEN,                  /* pairs the semantics leave open (pow with a signaling NaN) */
    NAN_LOST,              /* a NaN reference from a NaN operand, and no NaN */
    INVALID_LOST,          /* a NaN reference from an invalid operation on numbers, and no NaN */
    ZERO_KEPT,             /* a zero reference: the zero of its sign */
    ZERO_SIGN,             /* the zero of the other sign */
    ZERO_LOST,             /* not a zero */
    INF_KEPT,              /* an infinite reference: that infinity */
    INF_LOST,              /* anything else */
    SUB_OUT_KEPT,          /* a subnormal reference: its bits */
    SUB_OUT_FLUSHED,       /* a zero of its sign */
    SUB_OUT_OTHER,
    SUB_IN_EXACT,          /* a subnormal operand (reference a number): the reference's bits */
    SUB_IN_FLUSHED,        /* not, but the reference with subnormal operands read as zeros */
    SUB_IN_OTHER,
    N_SCALARS,
    /* Then per (lhs class, rhs class): pairs, reference bits, formula bits. */
    CLASS_TABLE = N_SCALARS,
    /* Then, per form mask (below), the NaN results of NaN references. */
    NAN_FORMS = CLASS_TABLE + MAX_CLASSES * MAX_CLASSES * 3,
    N_STATS = NAN_FORMS + (1 << 15)
};

/* A NaN result's form mask: which forms its bits match, so the judge can tell whether any
 * declared form allows it. Five bits per NaN operand (lhs at 0, rhs at 5): its NaN unchanged,
 * quieted, the quiet NaN without payload of its sign, and the first two with the sign flipped;
 * then the fixed patterns (+qNaN, -qNaN without payload, all ones); then which operands were
 * NaN (neither: an invalid operation on numbers). */
enum {
    FORM_KEPT,
    FORM_QUIETED,
    FORM_CANONICAL,
    FORM_KEPT_FLIPPED,
    FORM_QUIETED_FLIPPED,
    FORMS_PER_OPERAND,
    FORM_POSITIVE_CANONICAL = 2 * FORMS_PER_OPERAND,
    FORM_NEGATIVE_CANONICAL,
    FORM_ALL_ONES,
    FORM_LHS_NAN,
    FORM_RHS_NAN,
    N_FORM_BITS
};

/* Indices of pairs left out of a tally (pow near a rounding boundary), in a growing array. */
typedef struct {
    Py_ssize_t *at;
    Py_ssize_t count, capacity;
} Skipped;

/* One pair's two references: the correctly rounded value and the contract formula's bits. */
typedef struct {
    uint32_t exact, formula;
} Want;

#endif
