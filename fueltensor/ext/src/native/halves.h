/* The half-float conversions both translation units inline (`_native.c`'s elementwise bodies,
 * `_shaped.c`'s reductions and matmul), each instruction set's part its own copy. */
#ifndef FUELTENSOR_HALVES_H
#define FUELTENSOR_HALVES_H

/* Half floats. Widening is exact. Narrowing rounds to nearest-even; a NaN keeps its sign and top
 * payload bits with the quiet bit set, as the Rust `half` crate does (`_chassis._nan_bits_*`). */

INLINE void bf16_widen(const uint16_t *src, float *dst, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) dst[i] = f32_value((uint32_t)src[i] << 16);
}

INLINE void bf16_narrow(const float *src, uint16_t *dst, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        uint32_t x = f32_bits(src[i]);
        uint32_t nan = (x >> 16) | 0x0040u;
        uint32_t rne = (x + 0x7FFFu + ((x >> 16) & 1u)) >> 16;
        dst[i] = (uint16_t)(f32_isnan(x) ? nan : rne);
    }
}

/* The one-element conversions are INLINE: each instruction set's part compiles its own copy. A
 * baseline copy called from an AVX-512 part returns its float through an SSE register with the
 * upper state dirty, and on Sapphire Rapids that cost about 600 cycles a call (an F16 sum of
 * 2^16 elements took 200 ns an element on the AVX-512 body against 1.8 on AVX2). */
INLINE float f16_widen_one(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
    if (e == 0x1F) return f32_value(sign | 0x7F800000u | (m << 13));
    if (e != 0) return f32_value(sign | ((e + 112u) << 23) | (m << 13));
    return f32_value(sign | f32_bits((float)m * 0x1p-24f)); /* ±0 and subnormals, exact */
}

INLINE uint16_t f16_narrow_one(float f) {
    uint32_t x = f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7FFFFFFFu;
    if (ax > 0x7F800000u) return (uint16_t)(sign | 0x7E00u | ((x & 0x007FFFFFu) >> 13));
    if (ax >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u); /* |f| >= 65520 rounds to inf */
    if (ax >= 0x38800000u) {                                  /* a normal half: rebias, RNE */
        uint32_t r = ax - (112u << 23);
        return (uint16_t)(sign | ((r + 0x0FFFu + ((r >> 13) & 1u)) >> 13));
    }
    if (ax <= 0x33000000u) return (uint16_t)sign; /* |f| <= 2^-25 rounds to zero */
    uint32_t shift = 126u - (ax >> 23), m = (ax & 0x007FFFFFu) | 0x00800000u;
    uint32_t k = m >> shift, rest = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    k += (rest > half) | ((rest == half) & k);
    return (uint16_t)(sign | k); /* a subnormal, or the smallest normal after a carry */
}

static void f16_widen(const uint16_t *src, float *dst, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) dst[i] = f16_widen_one(src[i]);
}

static void f16_narrow(const float *src, uint16_t *dst, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) dst[i] = f16_narrow_one(src[i]);
}

#ifdef HAVE_AVX2_F16C
/* F16C quiets a signalling NaN on widening; only pow could tell, and its inputs are quieted. */
TARGET_AVX2_F16C static void f16_widen_f16c(const uint16_t *src, float *dst, Py_ssize_t n) {
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + i))));
    f16_widen(src + i, dst + i, n - i);
}

/* vcvtps2ph narrows a NaN exactly as `half` does: sign, 0x7E00, the top ten payload bits. */
TARGET_AVX2_F16C static void f16_narrow_f16c(const float *src, uint16_t *dst, Py_ssize_t n) {
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128((__m128i *)(dst + i), h);
    }
    f16_narrow(src + i, dst + i, n - i);
}
#endif

#ifdef HAVE_AVX512
/* The F16C conversions of the AVX2 body, sixteen lanes a step. */
TARGET_AVX512 static void f16_widen_avx512(const uint16_t *src, float *dst, Py_ssize_t n) {
    Py_ssize_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(src + i))));
    f16_widen_f16c(src + i, dst + i, n - i);
}

TARGET_AVX512 static void f16_narrow_avx512(const float *src, uint16_t *dst, Py_ssize_t n) {
    Py_ssize_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i h = _mm512_cvtps_ph(_mm512_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
        _mm256_storeu_si256((__m256i *)(dst + i), h);
    }
    f16_narrow_f16c(src + i, dst + i, n - i);
}
#endif

#endif
