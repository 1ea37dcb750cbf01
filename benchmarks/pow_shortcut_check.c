/* Is pow by 2 or by 0.5 a squaring or a square root on this machine? Compares the C library's
 * powf(x, 2.0f) with x * x, and powf(x, 0.5f) with sqrtf(x) (-0 -> +0, -inf -> +inf fixed up),
 * bit for bit over all 2^32 f32 inputs; prints the mismatch counts and the |x| range they span.
 * A pow shortcut is allowed only where both counts are 0 (issue 12); glibc 2.36 on x86-64 gives
 * 1,548,806 and 1,361,091 (benchmarks/RESULTS.md). About 4-8 minutes of one core:
 *   gcc -O2 -ffp-contract=off -fno-fast-math benchmarks/pow_shortcut_check.c -lm && ./a.out
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
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
    volatile float two = 2.0f, half = 0.5f; /* volatile: the compiler must call powf */
    uint32_t lo2 = UINT32_MAX, hi2 = 0, loh = UINT32_MAX, hih = 0;
    uint64_t n2 = 0, nh = 0;
    for (uint64_t i = 0; i < (1ull << 32); i++) {
        uint32_t u = (uint32_t)i, a = u & 0x7FFFFFFFu;
        float x = value(u);
        if (bits(powf(x, two)) != bits(x * x)) {
            n2++;
            lo2 = a < lo2 ? a : lo2;
            hi2 = a > hi2 ? a : hi2;
        }
        float root = x == -INFINITY ? INFINITY : (x == 0.0f ? 0.0f : sqrtf(x));
        if (bits(powf(x, half)) != bits(root)) {
            nh++;
            loh = a < loh ? a : loh;
            hih = a > hih ? a : hih;
        }
    }
    printf("y=2: %llu mismatches, |x| in [%g, %g]\n", (unsigned long long)n2, value(lo2),
           value(hi2));
    printf("y=0.5: %llu mismatches, |x| in [%g, %g]\n", (unsigned long long)nh, value(loh),
           value(hih));
    return 0;
}
