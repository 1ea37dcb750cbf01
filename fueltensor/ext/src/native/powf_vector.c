/* ---------------------------------------------------------------------------------------------
 * glibc's powf, vectorized: the contract's pow is the platform powf, and glibc's (2.28 and later,
 * sysdeps/ieee754/flt-32/e_powf.c, from ARM's optimized-routines) is double-precision arithmetic
 * over two small tables. These passes run its operations in its order, 4 or 8 doubles a step,
 * so each lane is the scalar function's IEEE operations on the same values: the same bits.
 *
 *   log2(x) = k + log2(c_i) + p(z/c_i - 1)   x = 2^k z, z in [0x3f330000, 2*...), i = z's top bits
 *   x^y     = 2^(y log2 x) = 2^(j/32) * q(r), j = round(32 y log2 x), r the rest
 *
 * On x86-64 glibc's ifunc runs `__powf_fma` where the CPU has FMA and AVX2, which is where these
 * passes run: its compiler contracted every `a * b + c` of the C into one FMA (objdump -d of
 * libm.so.6 2.36 shows nine: r = z*invc - 1, the five of the log polynomial, the three of the
 * exp polynomial), and nothing else. This file is built with -ffp-contract=off, so the FMAs are
 * written out exactly there, and every other step is one rounded operation as in the libm.
 * Only the intrinsics that honour MXCSR are used (no embedded rounding), and the passes run only
 * in the default floating-point mode (`default_fp_mode`); pow_shortcut.c decides where they run.
 *
 * A lane leaves the main path as glibc's does: y = 0, inf or NaN is left to powf itself (`slow`:
 * its NaN operand order is the libm's own); x = 0, inf or NaN gives x*x, negated for an odd
 * integer y, inverted for a negative y; a finite x < 0 gives (x - x) / (x - x) (the default NaN)
 * for a non-integer y, and for an odd integer y the sign bias (1 << 16 in the exponent's
 * integer) that makes the result negative; a subnormal x is scaled by 2^23 first; and |y log2 x|
 * past the float range gives the libm's own overflow and underflow products (`powf_xflow`). */

#if defined(__GLIBC__) && defined(HAVE_AVX2_F16C)
#include <link.h>
#define HAVE_POWF_RECOGNITION 1 /* glibc on x86-64: where a pass can follow the platform powf */
#endif

#define PF_OFF 0x3f330000 /* the first subinterval's start: z in [OFF, 2*OFF) */
#define PF_SIGN_BIAS (1 << 16)
#define PF_OVER 0x1.fffffffd1d571p+6 /* y log2 x past it: |x^y| > 0x1.ffffffp127 */

/* y = 2 and y = 0.5 take a short way where it is the algorithm's own result: x*x in double is
 * exact and sqrt in double correctly rounded, and an exact value farther than POWF_BAND double
 * ulps (2^-52 of its binade; half a float ulp is 2^28 of them) from a float rounding midpoint
 * rounds to the float any approximation as close as powf's does (where glibc 2.36's powf is
 * not the exact value rounded, that value lies at most 888,704 (y = 2) and 861,631 (y = 0.5)
 * of them from a midpoint over all 2^32 x: benchmarks/pow_shortcut_check.c). A group whose every
 * y is 2 (or 0.5) takes that value, rounded once, for its lanes with a normal float result
 * outside the band, and the full algorithm for the others (1/256 of them). benchmarks/
 * pow_proof.py proves the passes, this way included, on all 2^32 x for both exponents. */
#define POWF_BAND (1 << 20)
#define POWF_NORMAL_LO 0x3810000000000000LL /* FLT_MIN, as a double's bits */
#define POWF_NORMAL_HI 0x47EFFFFFE0000000LL /* FLT_MAX */

/* The algorithm's chosen constants, which have no closed form (glibc's e_powf_log2_data.c and
 * e_exp2f_data.c): 1/c_i, each near 1/centre of subinterval i, picked by the authors' search;
 * the minimax polynomials for log2(1 + r) and 2^r. `powf_tables` derives the rest from them,
 * and powf_recognise.c finds all of it, byte for byte, in the running libm's data. */
static const double POWF_INVC[16] = {
    0x1.661ec79f8f3bep+0, 0x1.571ed4aaf883dp+0, 0x1.49539f0f010bp+0,  0x1.3c995b0b80385p+0,
    0x1.30d190c8864a5p+0, 0x1.25e227b0b8eap+0,  0x1.1bb4a4a1a343fp+0, 0x1.12358f08ae5bap+0,
    0x1.0953f419900a7p+0, 0x1p+0,               0x1.e608cfd9a47acp-1, 0x1.ca4b31f026aap-1,
    0x1.b2036576afce6p-1, 0x1.9c2d163a1aa2dp-1, 0x1.886e6037841edp-1, 0x1.767dcf5534862p-1};
static const double POWF_LOG_POLY[5] = {0x1.27616c9496e0bp-2, -0x1.71969a075c67ap-2,
                                        0x1.ec70a6ca7baddp-2, -0x1.7154748bef6c8p-1,
                                        0x1.71547652ab82bp0};
static const double POWF_EXP_POLY[3] = {0x1.c6af84b912394p-5, 0x1.ebfce50fac4f3p-3,
                                        0x1.62e42ff0c52d6p-1};

/* The tables the passes read (filled once by `powf_tables`): invc and logc = log2(1/invc) by
 * subinterval; exp2[j] = the bits of 2^(j/32) less j << 47 (so adding the scaled exponent's
 * k << 47 gives 2^(k/32)); shift = 1.5 * 2^52 / 32 rounds y log2 x to a multiple of 1/32. */
static struct {
    _Alignas(64) double invc[16];
    _Alignas(64) double logc[16];
    _Alignas(64) uint64_t exp2[32];
    double poly[5], c[3], shift;
} PF;

#ifdef HAVE_POWF_RECOGNITION
/* Whether long double `v` rounds to the double `d` whatever its last few bits: true values
 * within 2^-60 of v (the x87 log2l / exp2l error is a few units of 2^-64) all round to d. */
static int rounds_surely(long double v, double d) {
    if (v == 0.0L) return d == 0.0;
    int e;
    frexpl(v, &e);
    long double half_ulp = ldexpl(1.0L, e - 54), slack = ldexpl(fabsl(v), -60);
    return fabsl(v - (long double)d) < half_ulp - slack;
}

/* Fill PF from the constants above and the tables' definitions (glibc's comments): logc is
 * log2(1/invc) rounded to double, exp2[j] is 2^(j/32) rounded to double less j << 47. Returns
 * NULL, or why a value cannot be derived here for certain (no extended long double). */
static const char *powf_tables(void) {
    if (LDBL_MANT_DIG < 64) return "long double is too short to derive the tables";
    for (int i = 0; i < 16; i++) {
        long double v = 0.0L - log2l((long double)POWF_INVC[i]);
        PF.invc[i] = POWF_INVC[i];
        PF.logc[i] = (double)v;
        if (!rounds_surely(v, PF.logc[i])) return "log2(1/invc) too near a rounding midpoint";
    }
    for (int j = 0; j < 32; j++) {
        long double v = exp2l((long double)j / 32);
        double d = (double)v;
        if (!rounds_surely(v, d)) return "2^(j/32) too near a rounding midpoint";
        uint64_t u;
        memcpy(&u, &d, sizeof u);
        PF.exp2[j] = u - ((uint64_t)j << 47);
    }
    memcpy(PF.poly, POWF_LOG_POLY, sizeof PF.poly);
    memcpy(PF.c, POWF_EXP_POLY, sizeof PF.c);
    PF.shift = 0x1.8p52 / 32;
    return NULL;
}
#endif

#ifdef HAVE_AVX2_F16C
/* The special branch for |y log2 x| >= 126 that does not reach exp2: __math_oflowf,
 * __math_uflowf and __math_may_uflowf, each (sign ? -v : v) * v in float. */
static float powf_xflow(double ylogx, int negative) {
    float v = ylogx > PF_OVER ? 0x1p97f : ylogx <= -150.0 ? 0x1p-95f : 0x1.4p-75f;
    return (negative ? -v : v) * v;
}

/* Lanes of a group whose y log2 x takes `powf_xflow`, from a bit mask: c[j] for each. */
static void powf_xflow_lanes(const double *ylogx, unsigned lanes, unsigned negative, float *c) {
    for (; lanes != 0; lanes &= lanes - 1) {
        int j = __builtin_ctz(lanes);
        c[j] = powf_xflow(ylogx[j], (int)(negative >> j) & 1);
    }
}

/* One step of a pass: c for its 8 or 16 lanes of a, b; returns the mask of lanes powf decides. */
typedef unsigned (*PowfGroup)(const float *a, const float *b, float *c);

/* Run `group` over a tile of k lanes, `width` at a time (the last few through a padded copy,
 * 1 ** 1 in the padding), one bit per lane in `slow` (the lanes powf must decide); returns
 * how many there are. */
INLINE Py_ssize_t powf_tile(PowfGroup group, int width, const float *a, const float *b,
                            float *c, uint8_t *slow, Py_ssize_t k) {
    Py_ssize_t count = 0;
    for (Py_ssize_t g = 0; g < k; g += width) {
        const float *ga = a + g, *gb = b + g;
        float *gc = c + g, pa[16], pb[16], pc[16];
        Py_ssize_t rest = k - g < width ? k - g : width;
        if (rest < width) {
            for (int j = 0; j < 16; j++) pa[j] = pb[j] = 1.0f;
            memcpy(pa, ga, (size_t)rest * sizeof(float));
            memcpy(pb, gb, (size_t)rest * sizeof(float));
            ga = pa;
            gb = pb;
            gc = pc;
        }
        unsigned bits = group(ga, gb, gc) & ((1u << rest) - 1);
        if (gc == pc) memcpy(c + g, pc, (size_t)rest * sizeof(float));
        for (Py_ssize_t w = 0; w * 8 < rest; w++) slow[g / 8 + w] = (uint8_t)(bits >> (8 * w));
        count += __builtin_popcount(bits);
    }
    return count;
}

/* glibc's log2_inline for 4 lanes of its argument's bits `ix` (sign cleared, subnormals
 * normalized): the subinterval i and exponent k from the bits, then the polynomial. */
TARGET_AVX2_F16C INLINE __m256d powf_log2_avx2(__m128i ix) {
    __m128i tmp = _mm_sub_epi32(ix, _mm_set1_epi32(PF_OFF));
    __m128i i = _mm_and_si128(_mm_srli_epi32(tmp, 19), _mm_set1_epi32(15));
    __m128i top = _mm_and_si128(tmp, _mm_set1_epi32((int)0xff800000u));
    __m128i k = _mm_srai_epi32(top, 23);
    __m256d z = _mm256_cvtps_pd(_mm_castsi128_ps(_mm_sub_epi32(ix, top)));
    __m256d invc = _mm256_i32gather_pd(PF.invc, i, 8), logc = _mm256_i32gather_pd(PF.logc, i, 8);
    __m256d r = _mm256_fmadd_pd(z, invc, _mm256_set1_pd(-1.0));
    __m256d y0 = _mm256_add_pd(logc, _mm256_cvtepi32_pd(k));
    __m256d r2 = _mm256_mul_pd(r, r);
    __m256d y = _mm256_fmadd_pd(_mm256_set1_pd(PF.poly[0]), r, _mm256_set1_pd(PF.poly[1]));
    __m256d p = _mm256_fmadd_pd(_mm256_set1_pd(PF.poly[2]), r, _mm256_set1_pd(PF.poly[3]));
    __m256d r4 = _mm256_mul_pd(r2, r2);
    __m256d q = _mm256_fmadd_pd(_mm256_set1_pd(PF.poly[4]), r, y0);
    q = _mm256_fmadd_pd(p, r2, q);
    return _mm256_fmadd_pd(y, r4, q);
}

/* glibc's exp2_inline for 4 lanes, rounded to float: 2^xd, negative where `bias` (64-bit
 * lanes of 0 or PF_SIGN_BIAS) says so. */
TARGET_AVX2_F16C INLINE __m128 powf_exp2_avx2(__m256d xd, __m256i bias) {
    __m256d shift = _mm256_set1_pd(PF.shift), kd = _mm256_add_pd(xd, shift);
    __m256i ki = _mm256_castpd_si256(kd);
    kd = _mm256_sub_pd(kd, shift);
    __m256d r = _mm256_sub_pd(xd, kd);
    __m256i t = _mm256_i64gather_epi64((const long long *)PF.exp2,
                                       _mm256_and_si256(ki, _mm256_set1_epi64x(31)), 8);
    t = _mm256_add_epi64(t, _mm256_slli_epi64(_mm256_add_epi64(ki, bias), 47));
    __m256d z = _mm256_fmadd_pd(_mm256_set1_pd(PF.c[0]), r, _mm256_set1_pd(PF.c[1]));
    __m256d r2 = _mm256_mul_pd(r, r);
    __m256d y = _mm256_fmadd_pd(_mm256_set1_pd(PF.c[2]), r, _mm256_set1_pd(1.0));
    y = _mm256_fmadd_pd(z, r2, y);
    return _mm256_cvtpd_ps(_mm256_mul_pd(y, _mm256_castsi256_pd(t)));
}

/* Lanes (all ones) where unsigned a >= b. */
TARGET_AVX2_F16C INLINE __m256i powf_geu_avx2(__m256i a, __m256i b) {
    return _mm256_cmpeq_epi32(_mm256_max_epu32(a, b), a);
}

/* The integer side of glibc's powf for 8 lanes of bits ix, iy. */
typedef struct {
    __m256i arg;                      /* log2_inline's argument */
    __m256i negodd;                   /* a negative result: x < 0 and y an odd integer */
    __m256i odd_y, special_x, invalid, special_y;
} PowfLanes8;

TARGET_AVX2_F16C INLINE PowfLanes8 powf_lanes_avx2(__m256i ix, __m256i iy) {
    PowfLanes8 l;
    const __m256i zero = _mm256_setzero_si256(), one = _mm256_set1_epi32(1);
    const __m256i inf2 = _mm256_set1_epi32((int)0xFF000000u), ones = _mm256_set1_epi32(-1);
    __m256i x2 = _mm256_add_epi32(ix, ix), y2 = _mm256_add_epi32(iy, iy); /* zeroinfnan */
    l.special_y = _mm256_or_si256(_mm256_cmpeq_epi32(y2, zero), powf_geu_avx2(y2, inf2));
    l.special_x = _mm256_or_si256(_mm256_cmpeq_epi32(x2, zero), powf_geu_avx2(x2, inf2));
    /* checkint(iy): e < 0x7f not an integer; e > 0x96 even; else by the bits below the point */
    __m256i e = _mm256_and_si256(_mm256_srli_epi32(iy, 23), _mm256_set1_epi32(0xff));
    __m256i m = _mm256_sllv_epi32(one, _mm256_sub_epi32(_mm256_set1_epi32(0x96), e));
    __m256i small = _mm256_cmpgt_epi32(_mm256_set1_epi32(0x7f), e);
    __m256i big = _mm256_cmpgt_epi32(e, _mm256_set1_epi32(0x96));
    __m256i whole = _mm256_cmpeq_epi32(_mm256_and_si256(iy, _mm256_sub_epi32(m, one)), zero);
    __m256i fraction =
        _mm256_or_si256(small, _mm256_andnot_si256(_mm256_or_si256(big, whole), ones));
    __m256i units_even = _mm256_cmpeq_epi32(_mm256_and_si256(iy, m), zero);
    l.odd_y = _mm256_andnot_si256(_mm256_or_si256(fraction, units_even), ones);
    __m256i negative = _mm256_cmpgt_epi32(zero, ix);
    l.negodd = _mm256_and_si256(negative, l.odd_y);
    l.invalid = _mm256_andnot_si256(l.special_x, _mm256_and_si256(negative, fraction));
    /* |x|, a subnormal scaled by 2^23 and its exponent lowered by 23 */
    __m256i xa = _mm256_and_si256(ix, _mm256_set1_epi32(0x7fffffff));
    __m256i sub = _mm256_cmpgt_epi32(_mm256_set1_epi32(0x00800000), xa);
    __m256i scaled = _mm256_castps_si256(
        _mm256_mul_ps(_mm256_castsi256_ps(ix), _mm256_set1_ps(0x1p23f)));
    scaled = _mm256_sub_epi32(_mm256_and_si256(scaled, _mm256_set1_epi32(0x7fffffff)),
                              _mm256_set1_epi32(23 << 23));
    l.arg = _mm256_blendv_epi8(xa, scaled, sub);
    return l;
}

/* The lanes of x = 0, inf or NaN (x*x, negated for an odd y, inverted for y < 0) and of a
 * finite x < 0 with a non-integer y ((x - x) / (x - x)) over `res`. */
TARGET_AVX2_F16C INLINE __m256 powf_rare_avx2(__m256i ix, __m256i iy, PowfLanes8 l, __m256 res) {
    __m256 x = _mm256_castsi256_ps(ix);
    __m256 sign = _mm256_castsi256_ps(_mm256_and_si256(l.negodd, _mm256_set1_epi32(INT32_MIN)));
    __m256 x2 = _mm256_xor_ps(_mm256_mul_ps(x, x), sign);
    x2 = _mm256_blendv_ps(x2, _mm256_div_ps(_mm256_set1_ps(1.0f), x2), _mm256_castsi256_ps(iy));
    __m256 d = _mm256_sub_ps(x, x);
    res = _mm256_blendv_ps(res, x2, _mm256_castsi256_ps(l.special_x));
    return _mm256_blendv_ps(res, _mm256_div_ps(d, d), _mm256_castsi256_ps(l.invalid));
}

/* Lanes (one bit each) whose y log2 x leaves the float range (`powf_xflow`). */
TARGET_AVX2_F16C INLINE unsigned powf_range_avx2(__m256d ylogx) {
    __m256d over = _mm256_cmp_pd(ylogx, _mm256_set1_pd(PF_OVER), _CMP_GT_OQ);
    __m256d under = _mm256_cmp_pd(ylogx, _mm256_set1_pd(-149.0), _CMP_LT_OQ);
    return (unsigned)_mm256_movemask_pd(_mm256_or_pd(over, under));
}

/* powf over 8 lanes, two halves of 4 doubles; returns the lanes powf itself must decide. */
TARGET_AVX2_F16C INLINE unsigned powf_full_avx2(const float *a, const float *b, float *c) {
    __m256i ix = _mm256_loadu_si256((const __m256i *)a);
    __m256i iy = _mm256_loadu_si256((const __m256i *)b);
    PowfLanes8 l = powf_lanes_avx2(ix, iy);
    __m256 yf = _mm256_castsi256_ps(iy);
    __m256d lo = _mm256_mul_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(yf)),
                               powf_log2_avx2(_mm256_castsi256_si128(l.arg)));
    __m256d hi = _mm256_mul_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(yf, 1)),
                               powf_log2_avx2(_mm256_extracti128_si256(l.arg, 1)));
    __m256i bias = _mm256_and_si256(l.negodd, _mm256_set1_epi32(PF_SIGN_BIAS));
    __m256 res = _mm256_set_m128(
        powf_exp2_avx2(hi, _mm256_cvtepu32_epi64(_mm256_extracti128_si256(bias, 1))),
        powf_exp2_avx2(lo, _mm256_cvtepu32_epi64(_mm256_castsi256_si128(bias))));
    unsigned slow = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(l.special_y));
    unsigned rare = (unsigned)_mm256_movemask_ps(
        _mm256_castsi256_ps(_mm256_or_si256(l.special_x, l.invalid)));
    if (rare) res = powf_rare_avx2(ix, iy, l, res);
    _mm256_storeu_ps(c, res);
    unsigned range = (powf_range_avx2(lo) | powf_range_avx2(hi) << 4) & ~(slow | rare);
    if (range) {
        double ylogx[8];
        _mm256_storeu_pd(ylogx, lo);
        _mm256_storeu_pd(ylogx + 4, hi);
        unsigned negodd = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(l.negodd));
        powf_xflow_lanes(ylogx, range, negodd, c);
    }
    return slow;
}

/* For 4 lanes of x, the exact square (`two`) or root in double, rounded to float into *out;
 * returns the lanes (bits) that must take the full algorithm (`POWF_BAND`). */
TARGET_AVX2_F16C INLINE unsigned powf_exact_avx2(__m128 x, int two, __m128 *out) {
    __m256d d = _mm256_cvtps_pd(x), e = two ? _mm256_mul_pd(d, d) : _mm256_sqrt_pd(d);
    __m256i u = _mm256_castpd_si256(e);
    __m256i off = _mm256_and_si256(_mm256_sub_epi64(u, _mm256_set1_epi64x(0x10000000 - POWF_BAND)),
                                   _mm256_set1_epi64x(0x1FFFFFFF));
    __m256i far = _mm256_cmpgt_epi64(off, _mm256_set1_epi64x(2 * POWF_BAND));
    __m256i low = _mm256_cmpgt_epi64(_mm256_set1_epi64x(POWF_NORMAL_LO), u);
    __m256i high = _mm256_cmpgt_epi64(u, _mm256_set1_epi64x(POWF_NORMAL_HI));
    __m256i take = _mm256_andnot_si256(_mm256_or_si256(low, high), far);
    *out = _mm256_cvtpd_ps(e);
    return (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(take)) ^ 0xFu;
}

/* powf over 8 lanes: the exact value where every y is 2 (or 0.5) and it decides, else (and for
 * the lanes it does not decide) the full algorithm. */
TARGET_AVX2_F16C INLINE unsigned powf_group_avx2(const float *a, const float *b, float *c) {
    __m256 y = _mm256_loadu_ps(b), x = _mm256_loadu_ps(a);
    int two = _mm256_movemask_ps(_mm256_cmp_ps(y, _mm256_set1_ps(2.0f), _CMP_EQ_OQ)) == 0xFF;
    int half = _mm256_movemask_ps(_mm256_cmp_ps(y, _mm256_set1_ps(0.5f), _CMP_EQ_OQ)) == 0xFF;
    if (!(two | half)) return powf_full_avx2(a, b, c);
    __m128 lo, hi;
    unsigned rest = powf_exact_avx2(_mm256_castps256_ps128(x), two, &lo) |
                    powf_exact_avx2(_mm256_extractf128_ps(x, 1), two, &hi) << 4;
    _mm256_storeu_ps(c, _mm256_set_m128(hi, lo));
    if (rest == 0) return 0;
    float full[8];
    powf_full_avx2(a, b, full); /* y = 2 or 0.5: no lane is powf's to decide */
    for (; rest != 0; rest &= rest - 1) c[__builtin_ctz(rest)] = full[__builtin_ctz(rest)];
    return 0;
}

/* The AVX2 body's f32 pow pass over a tile (PowPass). */
TARGET_AVX2_F16C static Py_ssize_t pow_pass_avx2(const float *a, const float *b, float *c,
                                                 uint8_t *slow, Py_ssize_t k) {
    return powf_tile(powf_group_avx2, 8, a, b, c, slow, k);
}
#endif

#ifdef HAVE_AVX2_F16C
#define HAVE_POWF_AVX512 1
#define TARGET_POWF_AVX512 __attribute__((target("avx512f,avx2,fma")))

/* glibc's log2_inline for 8 lanes (as powf_log2_avx2); the 16-entry tables are two registers
 * each, indexed by one permute. */
TARGET_POWF_AVX512 INLINE __m512d powf_log2_avx512(__m256i ix) {
    __m256i tmp = _mm256_sub_epi32(ix, _mm256_set1_epi32(PF_OFF));
    __m256i i = _mm256_and_si256(_mm256_srli_epi32(tmp, 19), _mm256_set1_epi32(15));
    __m256i top = _mm256_and_si256(tmp, _mm256_set1_epi32((int)0xff800000u));
    __m256i k = _mm256_srai_epi32(top, 23);
    __m512d z = _mm512_cvtps_pd(_mm256_castsi256_ps(_mm256_sub_epi32(ix, top)));
    __m512i at = _mm512_cvtepu32_epi64(i);
    __m512d invc = _mm512_permutex2var_pd(_mm512_load_pd(PF.invc), at, _mm512_load_pd(PF.invc + 8));
    __m512d logc = _mm512_permutex2var_pd(_mm512_load_pd(PF.logc), at, _mm512_load_pd(PF.logc + 8));
    __m512d r = _mm512_fmadd_pd(z, invc, _mm512_set1_pd(-1.0));
    __m512d y0 = _mm512_add_pd(logc, _mm512_cvtepi32_pd(k));
    __m512d r2 = _mm512_mul_pd(r, r);
    __m512d y = _mm512_fmadd_pd(_mm512_set1_pd(PF.poly[0]), r, _mm512_set1_pd(PF.poly[1]));
    __m512d p = _mm512_fmadd_pd(_mm512_set1_pd(PF.poly[2]), r, _mm512_set1_pd(PF.poly[3]));
    __m512d r4 = _mm512_mul_pd(r2, r2);
    __m512d q = _mm512_fmadd_pd(_mm512_set1_pd(PF.poly[4]), r, y0);
    q = _mm512_fmadd_pd(p, r2, q);
    return _mm512_fmadd_pd(y, r4, q);
}

/* glibc's exp2_inline for 8 lanes (as powf_exp2_avx2): the 32-entry table is four registers,
 * two permutes and a blend on the index's fifth bit; `negative` lanes get the sign bias. */
TARGET_POWF_AVX512 INLINE __m256 powf_exp2_avx512(__m512d xd, __mmask8 negative) {
    __m512d shift = _mm512_set1_pd(PF.shift), kd = _mm512_add_pd(xd, shift);
    __m512i ki = _mm512_castpd_si512(kd);
    kd = _mm512_sub_pd(kd, shift);
    __m512d r = _mm512_sub_pd(xd, kd);
    const uint64_t *tab = PF.exp2;
    __m512i low = _mm512_permutex2var_epi64(_mm512_load_si512(tab), ki, _mm512_load_si512(tab + 8));
    __m512i high = _mm512_permutex2var_epi64(_mm512_load_si512(tab + 16), ki,
                                             _mm512_load_si512(tab + 24));
    __mmask8 upper = _mm512_test_epi64_mask(ki, _mm512_set1_epi64(16));
    __m512i t = _mm512_mask_blend_epi64(upper, low, high);
    __m512i bias = _mm512_maskz_mov_epi64(negative, _mm512_set1_epi64(PF_SIGN_BIAS));
    t = _mm512_add_epi64(t, _mm512_slli_epi64(_mm512_add_epi64(ki, bias), 47));
    __m512d z = _mm512_fmadd_pd(_mm512_set1_pd(PF.c[0]), r, _mm512_set1_pd(PF.c[1]));
    __m512d r2 = _mm512_mul_pd(r, r);
    __m512d y = _mm512_fmadd_pd(_mm512_set1_pd(PF.c[2]), r, _mm512_set1_pd(1.0));
    y = _mm512_fmadd_pd(z, r2, y);
    return _mm512_cvtpd_ps(_mm512_mul_pd(y, _mm512_castsi512_pd(t)));
}

/* The integer side of glibc's powf for 16 lanes (as powf_lanes_avx2), as lane masks. */
typedef struct {
    __m512i arg;
    __mmask16 negodd, special_x, invalid, special_y;
} PowfLanes16;

TARGET_POWF_AVX512 INLINE PowfLanes16 powf_lanes_avx512(__m512i ix, __m512i iy) {
    PowfLanes16 l;
    const __m512i zero = _mm512_setzero_si512(), one = _mm512_set1_epi32(1);
    const __m512i inf2 = _mm512_set1_epi32((int)0xFF000000u);
    __m512i x2 = _mm512_add_epi32(ix, ix), y2 = _mm512_add_epi32(iy, iy);
    l.special_y = _mm512_cmpeq_epi32_mask(y2, zero) | _mm512_cmpge_epu32_mask(y2, inf2);
    l.special_x = _mm512_cmpeq_epi32_mask(x2, zero) | _mm512_cmpge_epu32_mask(x2, inf2);
    __m512i e = _mm512_and_si512(_mm512_srli_epi32(iy, 23), _mm512_set1_epi32(0xff));
    __m512i m = _mm512_sllv_epi32(one, _mm512_sub_epi32(_mm512_set1_epi32(0x96), e));
    __mmask16 small = _mm512_cmplt_epi32_mask(e, _mm512_set1_epi32(0x7f));
    __mmask16 big = _mm512_cmpgt_epi32_mask(e, _mm512_set1_epi32(0x96));
    __mmask16 below = _mm512_test_epi32_mask(iy, _mm512_sub_epi32(m, one));
    __mmask16 fraction = small | (below & (__mmask16)~big);
    __mmask16 odd = _mm512_test_epi32_mask(iy, m) & (__mmask16)~fraction;
    __mmask16 negative = _mm512_cmplt_epi32_mask(ix, zero);
    l.negodd = negative & odd;
    l.invalid = negative & fraction & (__mmask16)~l.special_x;
    __m512i xa = _mm512_and_si512(ix, _mm512_set1_epi32(0x7fffffff));
    __mmask16 sub = _mm512_cmplt_epi32_mask(xa, _mm512_set1_epi32(0x00800000));
    __m512i scaled = _mm512_castps_si512(
        _mm512_mul_ps(_mm512_castsi512_ps(ix), _mm512_set1_ps(0x1p23f)));
    scaled = _mm512_sub_epi32(_mm512_and_si512(scaled, _mm512_set1_epi32(0x7fffffff)),
                              _mm512_set1_epi32(23 << 23));
    l.arg = _mm512_mask_blend_epi32(sub, xa, scaled);
    return l;
}

/* powf_rare_avx2 for 16 lanes. */
TARGET_POWF_AVX512 INLINE __m512 powf_rare_avx512(__m512i ix, __m512i iy, PowfLanes16 l,
                                                  __m512 res) {
    __m512 x = _mm512_castsi512_ps(ix);
    __m512i x2 = _mm512_castps_si512(_mm512_mul_ps(x, x));
    x2 = _mm512_mask_xor_epi32(x2, l.negodd, x2, _mm512_set1_epi32(INT32_MIN));
    __m512 sq = _mm512_castsi512_ps(x2);
    __mmask16 inverse = _mm512_cmplt_epi32_mask(iy, _mm512_setzero_si512());
    sq = _mm512_mask_blend_ps(inverse, sq, _mm512_div_ps(_mm512_set1_ps(1.0f), sq));
    __m512 d = _mm512_sub_ps(x, x);
    res = _mm512_mask_blend_ps(l.special_x, res, sq);
    return _mm512_mask_blend_ps(l.invalid, res, _mm512_div_ps(d, d));
}

/* Lanes (one bit each) whose y log2 x leaves the float range (`powf_xflow`). */
TARGET_POWF_AVX512 INLINE unsigned powf_range_avx512(__m512d ylogx) {
    return (unsigned)(_mm512_cmp_pd_mask(ylogx, _mm512_set1_pd(PF_OVER), _CMP_GT_OQ) |
                      _mm512_cmp_pd_mask(ylogx, _mm512_set1_pd(-149.0), _CMP_LT_OQ));
}

/* powf over 16 lanes, two halves of 8 doubles; returns the lanes powf itself must decide. */
TARGET_POWF_AVX512 INLINE unsigned powf_full_avx512(const float *a, const float *b, float *c) {
    __m512i ix = _mm512_loadu_si512(a), iy = _mm512_loadu_si512(b);
    PowfLanes16 l = powf_lanes_avx512(ix, iy);
    __m512d yd = _mm512_castps_pd(_mm512_castsi512_ps(iy));
    __m512d lo = _mm512_mul_pd(_mm512_cvtps_pd(_mm256_castpd_ps(_mm512_castpd512_pd256(yd))),
                               powf_log2_avx512(_mm512_castsi512_si256(l.arg)));
    __m512d hi = _mm512_mul_pd(_mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(yd, 1))),
                               powf_log2_avx512(_mm512_extracti64x4_epi64(l.arg, 1)));
    __m256 rlo = powf_exp2_avx512(lo, (__mmask8)l.negodd);
    __m256 rhi = powf_exp2_avx512(hi, (__mmask8)(l.negodd >> 8));
    __m512 res = _mm512_castpd_ps(_mm512_insertf64x4(
        _mm512_castpd256_pd512(_mm256_castps_pd(rlo)), _mm256_castps_pd(rhi), 1));
    unsigned slow = l.special_y, rare = (unsigned)(l.special_x | l.invalid);
    if (rare) res = powf_rare_avx512(ix, iy, l, res);
    _mm512_storeu_ps(c, res);
    unsigned range = (powf_range_avx512(lo) | powf_range_avx512(hi) << 8) & ~(slow | rare);
    if (range) {
        double ylogx[16];
        _mm512_storeu_pd(ylogx, lo);
        _mm512_storeu_pd(ylogx + 8, hi);
        powf_xflow_lanes(ylogx, range, l.negodd, c);
    }
    return slow;
}

/* powf_exact_avx2 for 8 lanes. */
TARGET_POWF_AVX512 INLINE unsigned powf_exact_avx512(__m256 x, int two, __m256 *out) {
    __m512d d = _mm512_cvtps_pd(x), e = two ? _mm512_mul_pd(d, d) : _mm512_sqrt_pd(d);
    __m512i u = _mm512_castpd_si512(e);
    __m512i off = _mm512_and_si512(_mm512_sub_epi64(u, _mm512_set1_epi64(0x10000000 - POWF_BAND)),
                                   _mm512_set1_epi64(0x1FFFFFFF));
    __mmask8 take = _mm512_cmpgt_epi64_mask(off, _mm512_set1_epi64(2 * POWF_BAND)) &
                    _mm512_cmpge_epi64_mask(u, _mm512_set1_epi64(POWF_NORMAL_LO)) &
                    _mm512_cmple_epi64_mask(u, _mm512_set1_epi64(POWF_NORMAL_HI));
    *out = _mm512_cvtpd_ps(e);
    return (unsigned)(__mmask8)~take;
}

/* powf_group_avx2 for 16 lanes. */
TARGET_POWF_AVX512 INLINE unsigned powf_group_avx512(const float *a, const float *b, float *c) {
    __m512 y = _mm512_loadu_ps(b), x = _mm512_loadu_ps(a);
    int two = _mm512_cmp_ps_mask(y, _mm512_set1_ps(2.0f), _CMP_EQ_OQ) == 0xFFFF;
    int half = _mm512_cmp_ps_mask(y, _mm512_set1_ps(0.5f), _CMP_EQ_OQ) == 0xFFFF;
    if (!(two | half)) return powf_full_avx512(a, b, c);
    __m512d xd = _mm512_castps_pd(x);
    __m256 lo, hi;
    unsigned rest = powf_exact_avx512(_mm256_castpd_ps(_mm512_castpd512_pd256(xd)), two, &lo) |
                    powf_exact_avx512(_mm256_castpd_ps(_mm512_extractf64x4_pd(xd, 1)), two, &hi)
                        << 8;
    __m512d both = _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(lo)),
                                      _mm256_castps_pd(hi), 1);
    _mm512_storeu_ps(c, _mm512_castpd_ps(both));
    if (rest == 0) return 0;
    float full[16];
    powf_full_avx512(a, b, full); /* y = 2 or 0.5: no lane is powf's to decide */
    _mm512_mask_storeu_ps(c, (__mmask16)rest, _mm512_loadu_ps(full));
    return 0;
}

/* The AVX-512 f32 pow pass over a tile (PowPass), for a body on a CPU with AVX-512F. */
TARGET_POWF_AVX512 static Py_ssize_t pow_pass_avx512(const float *a, const float *b, float *c,
                                                     uint8_t *slow, Py_ssize_t k) {
    return powf_tile(powf_group_avx512, 16, a, b, c, slow, k);
}
#endif
