/* ---------------------------------------------------------------------------------------------
 * Half floats in the elementwise bodies: widen, compute in f32, narrow once; the conversions
 * are halves.h's. */
#include "halves.h"

/* Set the quiet bit of every NaN, as `half`'s widening does (pow can tell: powf(1, sNaN)). */
INLINE void quiet_nans(float *x, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        uint32_t u = f32_bits(x[i]);
        x[i] = f32_value(f32_isnan(u) ? (u | 0x00400000u) : u);
    }
}

/* maximum/minimum on halves: compare the widened values, store the operand's original bits. */
INLINE void half_select(const uint16_t *a, const uint16_t *b, const float *wa, const float *wb,
                        uint16_t *c, Py_ssize_t n, int less) {
    for (Py_ssize_t i = 0; i < n; i++) {
        uint32_t wins = less ? (wa[i] <= wb[i]) : (wa[i] >= wb[i]);
        uint32_t lhs = f32_isnan(f32_bits(wa[i])) | wins;
        c[i] = (uint16_t)(b[i] ^ ((a[i] ^ b[i]) & (0u - lhs))); /* a branch-free select */
    }
}

typedef void (*Widen)(const uint16_t *, float *, Py_ssize_t);
typedef void (*Narrow)(const float *, uint16_t *, Py_ssize_t);

/* An instruction set's conversions of the half types to f32 and back. */
typedef struct {
    Widen bf16_widen, f16_widen;
    Narrow bf16_narrow, f16_narrow;
} Halves;

/* The bf16 conversions compiled for the instruction set `target` names (nothing: the baseline),
 * and that set's `Halves` with its f16 conversions. */
#define DEFINE_HALVES(isa, target, f16_to_f32, f32_to_f16)                                         \
    target static void bf16_widen_##isa(const uint16_t *src, float *dst, Py_ssize_t n) {          \
        bf16_widen(src, dst, n);                                                                   \
    }                                                                                              \
    target static void bf16_narrow_##isa(const float *src, uint16_t *dst, Py_ssize_t n) {         \
        bf16_narrow(src, dst, n);                                                                  \
    }                                                                                              \
    static const Halves HALVES_##isa = {bf16_widen_##isa, f16_to_f32, bf16_narrow_##isa,          \
                                        f32_to_f16};

DEFINE_HALVES(baseline, , f16_widen, f16_narrow)
#ifdef HAVE_AVX2_F16C
DEFINE_HALVES(avx2, TARGET_AVX2_F16C, f16_widen_f16c, f16_narrow_f16c)
#endif
#ifdef HAVE_AVX512
DEFINE_HALVES(avx512, TARGET_AVX512, f16_widen_avx512, f16_narrow_avx512)
#endif

/* BF16/F16: per tile widen both operands to f32, compute, and narrow once on store. */
INLINE void half_loop(int op, Widen widen, Narrow narrow, const uint16_t *restrict a,
                      const uint16_t *restrict b, uint16_t *restrict c, Py_ssize_t n,
                      const PowShortcut *s) {
    float wa[TILE], wb[TILE], wc[TILE];
    for (Py_ssize_t i = 0; i < n; i += TILE) {
        Py_ssize_t k = n - i < TILE ? n - i : TILE;
        widen(a + i, wa, k);
        widen(b + i, wb, k);
        if (op == MAXIMUM || op == MINIMUM) {
            half_select(a + i, b + i, wa, wb, c + i, k, op == MINIMUM);
            continue;
        }
        if (op == POW) {
            quiet_nans(wa, k);
            quiet_nans(wb, k);
        }
        f32_loop(op, wa, wb, wc, k, s);
        narrow(wc, c + i, k);
    }
}

