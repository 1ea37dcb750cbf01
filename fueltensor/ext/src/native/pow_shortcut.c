/* ---------------------------------------------------------------------------------------------
 * pow by 2 and by 0.5 without powf, lane by lane, where that is powf's own f32 result.
 *
 * The contract's pow is the platform powf, which is not correctly rounded (glibc: 0.82 ULP), so
 * neither x * x nor sqrtf(x) is it. But the exact value is at hand in double: x * x is exact, and
 * sqrt((double)x) is correctly rounded and never a float rounding midpoint. Where that value is
 * far from a midpoint between two floats, any approximation as close as powf's rounds to the
 * same float; so a lane whose y is exactly 2 (or 0.5) and whose value is a normal float farther
 * than POW_BAND double ULPs from a midpoint takes the double value rounded once, and every other
 * lane (zero, negative for 0.5, subnormal, huge, inf, NaN, near a midpoint, other y) calls powf,
 * as every lane does in another rounding mode. The AVX2 body applies the same rule in f32 with
 * FMA residuals instead of doubles (its own exact arithmetic; proven the same way).
 * The band is measured (glibc 2.36 disagrees with the rounded exact value at most 888,704 double
 * ULPs from a midpoint over all 2^32 f32 inputs) and the shortcut stays off until `verify_pow`
 * has compared this loop with powf over all 2^32 inputs on this machine
 * (fueltensor/kernels/pow_shortcut.py keeps the verdict). */




static PowShortcut pow_settings(void) {
    PowShortcut s = {__atomic_load_n(&N.pow_on_two, __ATOMIC_RELAXED),
                     __atomic_load_n(&N.pow_on_half, __ATOMIC_RELAXED), POW_BAND, NULL};
    return s;
}

/* Whether the floating-point mode is the one the shortcut was verified in: round to nearest
 * and, on x86, neither flush-to-zero nor denormals-are-zero (another mode changes powf's bits
 * and the shortcut's differently). */
INLINE int default_fp_mode(void) {
#if defined(__SSE2__)
    return (_mm_getcsr() & 0xE040u) == 0;
#else
    return fegetround() == FE_TONEAREST;
#endif
}

/* The bits of the normal floats as doubles, FLT_MIN to FLT_MAX: positive doubles order as
 * their bits do, and NaN, -0 and every negative value (sign bit set) fall outside. */
#define NORMAL_LO 0x3810000000000000ULL
#define NORMAL_HI 0x47EFFFFFE0000000ULL

/* The rule for one lane: *c = the double value rounded once; returns 1 where powf decides. The
 * low 29 bits of the value's significand are what rounding to float drops: 2^28 is a midpoint,
 * and the lane is near it when they are within `band` of it (wrapping arithmetic mod 2^29). */
INLINE int pow_lane(float a, float b, float want, int64_t band, float *c) {
    double x = a, e = want == 2.0f ? x * x : sqrt(x);
    uint64_t u; /* unsigned: the bits of -0.0 minus anything would overflow an int64_t */
    memcpy(&u, &e, sizeof u);
    int64_t near = (int64_t)((u - (uint64_t)(0x10000000 - band)) & 0x1FFFFFFF);
    *c = (float)e;
    return !((b == want) & (u >= NORMAL_LO) & (u <= NORMAL_HI) & (near > 2 * band));
}

static Py_ssize_t pow_pass_generic(const float *a, const float *b, float *c, uint8_t *slow,
                                   Py_ssize_t k, float want, int64_t band) {
    Py_ssize_t count = 0;
    for (Py_ssize_t g = 0; g < k; g += 8) {
        unsigned bits = 0;
        for (Py_ssize_t j = g; j < g + 8 && j < k; j++)
            bits |= (unsigned)pow_lane(a[j], b[j], want, band, c + j) << (j - g);
        slow[g / 8] = (uint8_t)bits;
        count += __builtin_popcount(bits);
    }
    return count;
}

#ifdef HAVE_AVX2_F16C
/* The same rule in f32, eight lanes a step (FMA): r = x * x or sqrtf(x) is the stored value, and
 * its residual d = x*x - r (exact for a product) or x - r*r (exact for a correctly rounded root)
 * places the exact value, r + d (for the root, r + d / 2r with 1/r from rcpps), against the
 * midpoint on its side: half an ULP of r away, a quarter below a power of two. A lane is near
 * when its distance to that midpoint is within 2^-7 of half an ULP of r, POW_BAND's width
 * (`band` in the same units, 2^28 to half an ULP). Results and residuals stay normal: r from
 * 2^-100 (x from 2^-100 for the root) below 2^127. */
TARGET_AVX2_F16C INLINE Py_ssize_t pow_groups_avx2(const float *a, const float *b, float *c,
                                                   uint8_t *slow, Py_ssize_t k, int two,
                                                   int64_t band, Py_ssize_t *count) {
    const __m256i exponent = _mm256_set1_epi32(0x7F800000), mantissa = _mm256_set1_epi32(0x7FFFFF);
    const __m256i lo = _mm256_set1_epi32(0x0D7FFFFF), hi = _mm256_set1_epi32(0x7F000000);
    const __m256 magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    /* band / 2^28 of half an ULP, as a factor: exact for the powers of two POW_BAND is */
    const __m256 width = _mm256_set1_ps((float)band * 0x1p-28f);
    const __m256 want = _mm256_set1_ps(two ? 2.0f : 0.5f), zero = _mm256_setzero_ps();
    Py_ssize_t g = 0;
    for (; g + 8 <= k; g += 8) {
        __m256 x = _mm256_loadu_ps(a + g), r, d, range;
        if (two) {
            r = _mm256_mul_ps(x, x);
            d = _mm256_fmsub_ps(x, x, r);
            range = r;
        } else {
            r = _mm256_sqrt_ps(x);
            __m256 rest = _mm256_fnmadd_ps(r, r, x); /* x - r*r, exact */
            d = _mm256_mul_ps(rest, _mm256_mul_ps(_mm256_rcp_ps(r), _mm256_set1_ps(0.5f)));
            range = x;
        }
        __m256i rb = _mm256_castps_si256(r), in = _mm256_castps_si256(range);
        /* lo < bits < hi as signed ints: positive, normal enough, finite (NaN, -0, negatives out) */
        __m256i ok = _mm256_and_si256(_mm256_cmpgt_epi32(in, lo), _mm256_cmpgt_epi32(hi, in));
        __m256 half = _mm256_castsi256_ps(
            _mm256_sub_epi32(_mm256_and_si256(rb, exponent), _mm256_set1_epi32(24 << 23)));
        __m256i bottom = _mm256_cmpeq_epi32(_mm256_and_si256(rb, mantissa), _mm256_setzero_si256());
        __m256 below = _mm256_cmp_ps(d, zero, _CMP_LT_OQ);
        __m256 quarter = _mm256_and_ps(_mm256_castsi256_ps(bottom), below);
        __m256 side = _mm256_blendv_ps(half, _mm256_mul_ps(half, _mm256_set1_ps(0.5f)), quarter);
        __m256 distance = _mm256_sub_ps(side, _mm256_and_ps(d, magnitude));
        __m256 far = _mm256_cmp_ps(distance, _mm256_mul_ps(half, width), _CMP_GT_OQ);
        __m256 take = _mm256_and_ps(_mm256_and_ps(far, _mm256_castsi256_ps(ok)),
                                    _mm256_cmp_ps(_mm256_loadu_ps(b + g), want, _CMP_EQ_OQ));
        _mm256_storeu_ps(c + g, r);
        int bits = ~_mm256_movemask_ps(take) & 0xFF;
        slow[g / 8] = (uint8_t)bits;
        *count += __builtin_popcount((unsigned)bits);
    }
    return g;
}

TARGET_AVX2_F16C static Py_ssize_t pow_pass_avx2(const float *a, const float *b, float *c,
                                                 uint8_t *slow, Py_ssize_t k, float want,
                                                 int64_t band) {
    Py_ssize_t count = 0, g = want == 2.0f ? pow_groups_avx2(a, b, c, slow, k, 1, band, &count)
                                           : pow_groups_avx2(a, b, c, slow, k, 0, band, &count);
    if (g < k) count += pow_pass_generic(a + g, b + g, c + g, slow + g / 8, k - g, want, band);
    return count;
}
#endif

/* Contract pow on f32: powf, with the verified shortcut for the lanes it holds for. A tile
 * takes the shortcut for its first lane's y (2 or 0.5); every other lane calls powf. */
INLINE void f32_pow(const float *restrict a, const float *restrict b, float *restrict c,
                    Py_ssize_t n, const PowShortcut *s) {
    int on = (s->two | s->half) && default_fp_mode();
    uint8_t slow[POW_TILE / 8];
    for (Py_ssize_t i = 0; i < n; i += POW_TILE) {
        Py_ssize_t k = n - i < POW_TILE ? n - i : POW_TILE;
        const float *ta = a + i, *tb = b + i;
        float *tc = c + i;
        int two = on & s->two & (tb[0] == 2.0f), half = on & s->half & (tb[0] == 0.5f);
        if (!(two | half)) {
            for (Py_ssize_t j = 0; j < k; j++) tc[j] = powf(ta[j], tb[j]);
            continue;
        }
        if (k < POW_TILE) memset(slow, 0, sizeof slow); /* whole words past a short tile's end */
        if (s->pass(ta, tb, tc, slow, k, two ? 2.0f : 0.5f, s->band) == 0) continue;
        for (Py_ssize_t w = 0; w < POW_TILE / 64; w++) {
            uint64_t word = 0; /* 64 lanes' flags: one test for the common all-fast word */
            for (int i = 0; i < 8; i++) word |= (uint64_t)slow[w * 8 + i] << (8 * i);
            for (; word != 0; word &= word - 1) {
                Py_ssize_t j = w * 64 + __builtin_ctzll(word);
                tc[j] = powf(ta[j], tb[j]);
            }
        }
    }
}

/* Contract pow on f64: the platform pow for every element (2^64 inputs cannot be verified). */
INLINE void f64_pow(const double *restrict a, const double *restrict b, double *restrict c,
                    Py_ssize_t n, const PowShortcut *s) {
    (void)s;
    for (Py_ssize_t i = 0; i < n; i++) c[i] = pow(a[i], b[i]);
}

