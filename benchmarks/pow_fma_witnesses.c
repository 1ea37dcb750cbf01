/* Which (x, y) tell glibc's FMA powf from the same arithmetic without one of its FMAs? glibc's
 * __powf_fma (2.28+, x86-64) rounds nine `a * b + c` of its C once each (read from objdump -d of
 * libm.so.6): a transcription that drops one rounds twice there and, rarely, lands on the other
 * side of a float rounding midpoint. Random inputs almost never show it (10^9 random pairs tell
 * __powf_fma from __powf_sse2 nowhere we looked), so the recognition sample of the vector powf
 * (fueltensor/ext/src/native/powf_recognise.c, POWF_WITNESS) carries inputs found here, where
 * dropping the FMA of r = z * invc - 1 or of q = A4 * r + (logc + k) changes powf's result: a
 * pass or a libm without those FMAs is told apart on them. This program replays glibc's scalar
 * algorithm (tables as in powf_vector.c) with a chosen FMA dropped, over random x in [0.5, 2)
 * and y taking y * log2(x) anywhere up to +-126 (where the log's error is multiplied most),
 * checks the full replay against the C library's powf and prints the first witnesses:
 *   gcc -O2 -mfma -ffp-contract=off -fno-fast-math benchmarks/pow_fma_witnesses.c -lm && ./a.out
 * Seconds on one core (glibc 2.36: see benchmarks/RESULTS.md).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double INVC[16] = {
    0x1.661ec79f8f3bep+0, 0x1.571ed4aaf883dp+0, 0x1.49539f0f010bp+0,  0x1.3c995b0b80385p+0,
    0x1.30d190c8864a5p+0, 0x1.25e227b0b8eap+0,  0x1.1bb4a4a1a343fp+0, 0x1.12358f08ae5bap+0,
    0x1.0953f419900a7p+0, 0x1p+0,               0x1.e608cfd9a47acp-1, 0x1.ca4b31f026aap-1,
    0x1.b2036576afce6p-1, 0x1.9c2d163a1aa2dp-1, 0x1.886e6037841edp-1, 0x1.767dcf5534862p-1};
static const double A[5] = {0x1.27616c9496e0bp-2, -0x1.71969a075c67ap-2, 0x1.ec70a6ca7baddp-2,
                            -0x1.7154748bef6c8p-1, 0x1.71547652ab82bp0};
static const double C[3] = {0x1.c6af84b912394p-5, 0x1.ebfce50fac4f3p-3, 0x1.62e42ff0c52d6p-1};
static double logc[16];
static uint64_t tab[32];

/* a * b + c rounded once (FMA k kept) or twice (dropped: bit k of `drop`). */
static double madd(double a, double b, double c, unsigned drop, int k) {
    return (drop >> k) & 1 ? a * b + c : __builtin_fma(a, b, c);
}

/* glibc's powf on its main path (positive normal x, |y log2 x| < 126), FMAs per `drop`. */
static float replay(float x, float y, unsigned drop) {
    uint32_t ix, iz;
    memcpy(&ix, &x, 4);
    uint32_t tmp = ix - 0x3f330000, top = tmp & 0xff800000;
    int i = (tmp >> 19) % 16, k = (int32_t)top >> 23;
    iz = ix - top;
    float fz;
    memcpy(&fz, &iz, 4);
    double z = fz, r = madd(z, INVC[i], -1.0, drop, 0), y0 = logc[i] + (double)k, r2 = r * r;
    double p1 = madd(A[0], r, A[1], drop, 1), p = madd(A[2], r, A[3], drop, 2), r4 = r2 * r2;
    double q = madd(A[4], r, y0, drop, 3);
    q = madd(p, r2, q, drop, 4);
    double xd = (double)y * madd(p1, r4, q, drop, 5), shift = 0x1.8p52 / 32, kd = xd + shift;
    uint64_t ki, t;
    memcpy(&ki, &kd, 8);
    kd -= shift;
    double rr = xd - kd, s;
    t = tab[ki % 32] + (ki << 47);
    memcpy(&s, &t, 8);
    double w = madd(C[0], rr, C[1], drop, 6), v = madd(C[2], rr, 1.0, drop, 7);
    return (float)(madd(w, rr * rr, v, drop, 8) * s);
}

int main(void) {
    for (int i = 0; i < 16; i++) logc[i] = (double)(0.0L - log2l((long double)INVC[i]));
    for (int j = 0; j < 32; j++) {
        double d = (double)exp2l((long double)j / 32);
        memcpy(&tab[j], &d, 8);
        tab[j] -= (uint64_t)j << 47;
    }
    srand48(34);
    long tried = 0, off = 0;
    int found[9] = {0};
    for (; tried < 400000000L && (found[0] < 6 || found[3] < 6); tried++) {
        float x = (float)(0.5 + 1.5 * drand48()), l = log2f(x);
        float y = (float)((drand48() * 2 - 1) * 125.0 / (fabsf(l) > 1e-3f ? fabsf(l) : 1e-3f));
        if (fabsf(y) < 1.0f || fabs((double)y * log2((double)x)) >= 125.0) continue;
        float want = replay(x, y, 0);
        off += want != powf(x, y);
        for (int f = 0; f < 9; f++) {
            if (found[f] >= 6 || replay(x, y, 1u << f) == want) continue;
            uint32_t bx, by;
            memcpy(&bx, &x, 4);
            memcpy(&by, &y, 4);
            printf("FMA %d dropped: x=0x%08x y=0x%08x (powf %a)\n", f, bx, by, want);
            found[f]++;
        }
    }
    printf("%ld tried; the replay with every FMA differs from powf on %ld\n", tried, off);
    return off != 0;
}
