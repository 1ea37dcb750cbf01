/* Would an f64 pow shortcut (x * x for pow(x, 2), sqrt for pow(x, 0.5)) be the C library's pow?
 * 2^64 inputs cannot be compared exhaustively, so this samples: N random finite doubles (random
 * bit patterns) and N constructed near rounding midpoints (x with 27-34 significant bits, whose
 * square is a midpoint or within 2^-7..2^-1 ULP... of one; and x = RN(m^2) for midpoints m of
 * the root). For every lane whose result is a normal double (above 2^-960, so that the fma residual
 * giving the exact value's distance is exact) it prints how many differ from
 * pow's bits, the largest distance (in ULPs of the result) from a midpoint at which one
 * differs, and how many of them the f32 shortcut's rule (a lane within 2^-8 ULP of a midpoint
 * calls pow) would have caught. The exact value's distance comes from fma residuals (exact).
 *   gcc -O2 -ffp-contract=off -fno-fast-math -mfma benchmarks/pow_f64_sample.c -lm && ./a.out
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 100000000ull
#define BAND 0x1p-8 /* the f32 rule: 2^21 of the 2^29 dropped-bit steps between floats */

static uint64_t state = 0x9E3779B97F4A7C15ull;
static uint64_t next(void) { /* splitmix64 */
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double value(uint64_t u) {
    double d;
    memcpy(&d, &u, 8);
    return d;
}

static uint64_t bits(double d) {
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

typedef struct {
    uint64_t lanes, differ, caught;
    double worst, nearest; /* largest midpoint distance of a mismatch; smallest of any lane */
} Tally;

/* Distance in ULPs of r from the exact value r + t (|t| <= ulp/2) to the nearest midpoint. */
static double midpoint_distance(double r, double t) {
    int e;
    frexp(r, &e);
    double ulp = ldexp(1.0, e - 53);
    double half = (t < 0 && bits(r) << 12 == 0) ? ulp / 4 : ulp / 2; /* a binade's bottom */
    return (half - fabs(t)) / ulp;
}

static void tally(Tally *t, double x, volatile const double *exponent) {
    double y = *exponent;
    double r, rest;
    if (y == 2.0) {
        r = x * x;
        rest = fma(x, x, -r);
    } else {
        r = sqrt(x);
        rest = fma(-r, r, x) / (2 * r);
    }
    /* normal results whose fma residual is exact (no underflow); the special values, zeros and
     * negative roots a shortcut would leave to pow, as the f32 one does */
    if (!(fabs(r) >= 0x1p-960 && fabs(r) <= DBL_MAX) || (y == 0.5 && !(x >= 0x1p-960))) return;
    double p = pow(x, *exponent); /* read again: the compiler must call pow, not fold it */
    double d = midpoint_distance(r, rest);
    t->lanes++;
    if (d < t->nearest) t->nearest = d;
    if (bits(p) == bits(r)) return;
    t->differ++;
    t->caught += d <= BAND;
    if (d > t->worst) t->worst = d;
}

static void show(const char *what, const Tally *t) {
    printf("%-34s %11llu lanes, %9llu differ from pow, worst midpoint distance %.3g ULP, "
           "%llu of them within 2^-8 ULP; nearest lane %.3g ULP\n",
           what, (unsigned long long)t->lanes, (unsigned long long)t->differ, t->worst,
           (unsigned long long)t->caught, t->nearest);
}

int main(void) {
    for (int k = 0; k < 2; k++) {
        volatile double exponent = k == 0 ? 2.0 : 0.5;
        double y = exponent;
        Tally random = {0, 0, 0, 0, 1}, near = {0, 0, 0, 0, 1};
        for (uint64_t i = 0; i < N; i++) {
            double x = value(next());
            if (isfinite(x)) tally(&random, x, &exponent);
        }
        for (uint64_t i = 0; i < N; i++) {
            uint64_t u = next();
            double x;
            if (y == 2.0) { /* 27 + (u % 8) significant bits: the square is at or near a midpoint */
                int extra = (int)(u % 8);
                uint64_t m = (1ull << (26 + extra)) | ((u >> 8) & ((1ull << (26 + extra)) - 1)) | 1;
                x = ldexp((double)m, -(26 + extra) + (int)((u >> 40) % 64) - 32);
            } else { /* x = RN(m^2), m = (2^53 + n) 2^-53 a midpoint of the root's doubles */
                uint64_t n = (next() >> 11) | 1;
                unsigned __int128 big = ((unsigned __int128)1 << 53) + n, sq = big * big;
                int shift = sq >> 107 ? 55 : 54; /* keep 53 bits, round to nearest */
                uint64_t top = (uint64_t)(sq >> shift), rem = (uint64_t)(sq & (((unsigned __int128)1 << shift) - 1));
                top += rem > (1ull << (shift - 1)) || (rem == (1ull << (shift - 1)) && (top & 1));
                x = ldexp((double)top, shift - 106 + (int)(u % 64) * 2 - 64);
            }
            tally(&near, x, &exponent);
        }
        printf("y = %g\n", y);
        show("  random finite bit patterns:", &random);
        show("  constructed near midpoints:", &near);
    }
    return 0;
}
