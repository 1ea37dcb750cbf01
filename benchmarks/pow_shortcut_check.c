/* How far from a rounding midpoint does the C library's powf(x, 2) / powf(x, 0.5) disagree with
 * the correctly rounded x * x / sqrt(x)? Over all 2^32 f32 inputs it counts the mismatches and,
 * for those whose exact value e (x * x in double, exact; sqrt((double)x), correctly rounded) is
 * a normal float, the largest distance of e from a midpoint between two floats, in double ULPs
 * of e (the low 29 significand bits of e against 2^28). The vector powf's short way for y = 2
 * and y = 0.5 (fueltensor/ext/src/native/powf_vector.c) sends every lane within POWF_BAND (2^20)
 * of a midpoint to the full algorithm: this program is where that band comes from. glibc 2.36
 * on x86-64 (AVX2, FMA): y = 2 differs for 1,548,806 inputs (1,539,494 with a normal result),
 * the farthest 888,704 ULPs from a midpoint; y = 0.5 for 1,361,093 (1,361,091; the other two
 * are -0 and -inf, where powf gives +0 and +inf), the farthest 861,631 (benchmarks/RESULTS.md).
 * The short way itself is proven by benchmarks/pow_proof.py, not by this. About 45 s of one
 * core per y:
 *   gcc -O2 -ffp-contract=off -fno-fast-math benchmarks/pow_shortcut_check.c -lm && ./a.out
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float value(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

int main(void) {
    for (int k = 0; k < 2; k++) {
        volatile float exponent = k == 0 ? 2.0f : 0.5f; /* volatile: the compiler calls powf */
        float y = exponent;
        uint64_t mismatches = 0, normal = 0;
        int64_t farthest = -1;
        uint32_t at = 0;
        for (uint64_t i = 0; i < (1ull << 32); i++) {
            float x = value((uint32_t)i);
            double e = y == 2.0f ? (double)x * x : sqrt((double)x);
            if (bits(powf(x, exponent)) == bits((float)e)) continue;
            mismatches++;
            if (!(e >= FLT_MIN && e <= FLT_MAX)) continue; /* specials: powf decides anyway */
            normal++;
            uint64_t u;
            memcpy(&u, &e, 8);
            int64_t off = (int64_t)(u & 0x1FFFFFFFu) - 0x10000000;
            if (llabs(off) > farthest) {
                farthest = llabs(off);
                at = (uint32_t)i;
            }
        }
        printf("y=%g: %llu mismatches (%llu with a normal result), farthest %lld double ULPs "
               "from a midpoint (x bits 0x%08x)\n",
               y, (unsigned long long)mismatches, (unsigned long long)normal, (long long)farthest,
               at);
    }
    return 0;
}
