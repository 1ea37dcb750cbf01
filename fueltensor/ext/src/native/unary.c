/* ---------------------------------------------------------------------------------------------
 * The unary functions (`UnaryBody`, the ops of ops.h's unary enum) on the four dtypes, one body
 * per instruction set. Every function but abs and negative is computed in double and rounded
 * ONCE to the dtype: F64 is the C library's double function; F32 rounds the double result to
 * float; BF16 and F16 round it to float *to odd* (truncated, the last bit set when inexact),
 * which the one rounding to the half type then makes a correct single rounding (a float carries
 * more than a half's bits plus two). exp, sigmoid, log, tanh, sin, cos and rsqrt are evaluated
 * in double vectors (below, each within 2^-40 relative of the exact value, so the one rounding to
 * a float or half is correct but where the exact value lies within 2^-40 of a rounding
 * boundary), four vectors a block so that their chains interleave; erf calls the C library's
 * double function per lane. abs and negative change the sign bit alone, so a NaN keeps its
 * payload and its signalling bit (IEEE 754's sign-bit operations). Every other function returns
 * a NaN operand quieted, its payload kept, and an invalid operation's default NaN (log(-1),
 * sqrt(-1), sin(inf)), as the C library does.
 *
 * Unlike the binary kernels' formulas, whose every step is one rounded operation (the build's
 * -ffp-contract=off), this file lets the compiler fuse a multiply and an add (FMA where the
 * instruction set has one: the avx2 and avx512 bodies; the baseline has none): its polynomials
 * are bounds, not formulas, and a fused step is the more accurate. The certificates prove each
 * build's F32 and half results (benchmarks/certificates/cpu). errno is never read: no-math-errno
 * makes a square root one instruction. */

#pragma GCC diagnostic ignored "-Wpsabi" /* the vectors never cross a call: INLINE everywhere */
#pragma GCC push_options
#pragma GCC optimize("fp-contract=fast", "no-math-errno")

/* Four doubles, and their bits: GCC's vector extensions, compiled to each instruction set's
 * vectors by the body that inlines them (two SSE2 halves on the baseline). */
typedef double VD __attribute__((vector_size(32)));
typedef int64_t VI __attribute__((vector_size(32)));
typedef float VF __attribute__((vector_size(16)));
#define UNARY_LANES 4
#define UNARY_UNROLL 4

/* A vector of doubles, or of their bits, each lane `c` (GCC widens a scalar operand). */
#define VD_ALL(c) ((VD){0} + (c))
#define VI_ALL(c) ((VI){0} + (c))

/* Lanes where `mask` is set take `yes`, the others `no`. */
INLINE VD vd_select(VI mask, VD yes, VD no) { return (VD)((mask & (VI)yes) | (~mask & (VI)no)); }

/* e^d for every lane, within 2^-45 relative, for any d: d is clamped to [-200, 200] (beyond, a
 * float or half result is 0 or inf either way: e^-200 < 2^-288, e^200 > 2^288); a NaN lane is
 * the caller's to replace. n = rint(d / ln 2) by the 1.5 * 2^52 shift, r = d - n ln 2 in two
 * parts (n * LN2_HI exact: its low 20 bits are zero), |r| <= 0.347, e^r by its Taylor series
 * to r^11 (the remainder below 0.347^12 / 12! < 2^-47), then 2^n built in the exponent field. */
INLINE VD exp_vd(VD d) {
    const double shift = 0x1.8p52, inv_ln2 = 0x1.71547652b82fep0;
    const double ln2_hi = 0x1.62e42fee00000p-1, ln2_lo = 0x1.a39ef35793c76p-33;
    d = vd_select(d < -200.0, VD_ALL(-200.0), d);
    d = vd_select(d > 200.0, VD_ALL(200.0), d);
    VD t = d * inv_ln2 + shift;
    VD n = t - shift;
    VD r = (d - n * ln2_hi) - n * ln2_lo;
    const double c11 = 1.0 / 39916800;
    VD p = {c11, c11, c11, c11};
    p = 1.0 / 3628800 + r * p;
    p = 1.0 / 362880 + r * p;
    p = 1.0 / 40320 + r * p;
    p = 1.0 / 5040 + r * p;
    p = 1.0 / 720 + r * p;
    p = 1.0 / 120 + r * p;
    p = 1.0 / 24 + r * p;
    p = 1.0 / 6 + r * p;
    p = 0.5 + r * p;
    p = 1.0 + r * p;
    p = 1.0 + r * p;
    VD scale = (VD)(((VI)t + 1023) << 52);
    return p * scale;
}

/* log(d) for lanes of positive finite d (widened floats: every one a normal double), within
 * 2^-44 relative: d = 2^e m with m in [sqrt(2)/2, sqrt(2)), log m = 2 atanh(s) for
 * s = (m - 1) / (m + 1) (|s| <= 0.1716: m - 1 exact, s within 2 ulps), its odd series to s^15
 * (the rest below s^16 / 17 < 2^-44 of the sum), plus e ln 2 in two parts (e ln2_hi exact). */
INLINE VD log_vd(VD d) {
    const VI mantissa = VI_ALL(0xfffffffffffffLL), one = VI_ALL(0x3ff0000000000000LL);
    const VI two52 = VI_ALL(0x4330000000000000LL); /* 2^52: its low bits an integer's */
    const double ln2_hi = 0x1.62e42fee00000p-1, ln2_lo = 0x1.a39ef35793c76p-33;
    VI bits = (VI)d;
    VD m = (VD)((bits & mantissa) | one);
    VI big = m > VD_ALL(0x1.6a09e667f3bcdp0); /* sqrt(2): -1 where m is above it */
    m = vd_select(big, m * 0.5, m);
    /* e as a double without an int64 conversion (AVX2 has none): the biased exponent in the
     * mantissa of 2^52, less 2^52 and the bias; +1 where m was halved */
    VD k = ((VD)((bits >> 52) | two52) - 0x1p52) - 1023.0 + (VD)((VI)VD_ALL(1.0) & big);
    VD f = m - 1.0;
    VD s = f / (f + 2.0);
    VD z = s * s;
    VD p = VD_ALL(2.0 / 15);
    p = 2.0 / 13 + z * p;
    p = 2.0 / 11 + z * p;
    p = 2.0 / 9 + z * p;
    p = 2.0 / 7 + z * p;
    p = 2.0 / 5 + z * p;
    p = 2.0 / 3 + z * p;
    return k * ln2_hi + ((2.0 * s + s * (z * p)) + k * ln2_lo);
}

/* e^y - 1 for lanes of y in [0, 36], within 2^-50 relative: n = rint(y / ln 2) (0 for y below
 * 0.34: then r = y, no cancellation near 0), r = y - n ln 2 in two parts as exp_vd, |r| <= 0.347,
 * e^r - 1 by its Taylor series to r^13 (the rest below 0.347^13 / 14! < 2^-52 of it), then
 * 2^n (e^r - 1) + (2^n - 1): 2^n - 1 exact (n <= 52), and the sum cancels at most a factor 1.5
 * (n >= 1 only where e^y - 1 > 0.4). */
INLINE VD expm1_vd(VD y) {
    const double shift = 0x1.8p52, inv_ln2 = 0x1.71547652b82fep0;
    const double ln2_hi = 0x1.62e42fee00000p-1, ln2_lo = 0x1.a39ef35793c76p-33;
    static const double inverse_factorials[] = {
        1.0 / 6227020800.0, 1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0,
        1.0 / 362880.0,     1.0 / 40320.0,     1.0 / 5040.0,     1.0 / 720.0,
        1.0 / 120.0,        1.0 / 24.0,        1.0 / 6.0,        0.5,
        1.0};
    VD t = y * inv_ln2 + shift;
    VD n = t - shift;
    VD r = (y - n * ln2_hi) - n * ln2_lo;
    VD p = VD_ALL(0.0);
    for (int i = 0; i < 13; i++) p = inverse_factorials[i] + r * p;
    VD scale = (VD)(((VI)t + 1023) << 52);
    return scale * (r * p) + (scale - 1.0);
}

/* tanh(d) within 2^-48 relative: em1 / (em1 + 2) for em1 = e^(2|d|) - 1, |d| clamped to 18
 * (from there on 1 - tanh < 2^-50, which every float and half type rounds to 1, to nearest or
 * to odd then nearest), the sign d's: tanh(-0) = -0. */
INLINE VD tanh_vd(VD d) {
    const VI sign = VI_ALL(INT64_MIN);
    VD a = (VD)((VI)d & ~sign);
    a = vd_select(a > 18.0, VD_ALL(18.0), a);
    VD em1 = expm1_vd(a + a);
    VD r = em1 / (em1 + 2.0);
    return (VD)((VI)r | ((VI)d & sign));
}

/* The lanes' |d| below which sin_cos_vd reduces in three parts of pi/2 (k < 2^17). */
#define TRIG_REDUCED 1e5

/* sin(d) (`cosine` 0) or cos(d) (1) for |d| < TRIG_REDUCED, within 2^-44 relative: k =
 * rint(d 2/pi), r = d - k pi/2 in fdlibm's three parts (k pio2_1 and k pio2_2 exact: 33-bit
 * parts, k < 2^17; the rest below 2^-80), then the quadrant's sin or cos of r, |r| <= pi/4,
 * by their Taylor series (to r^13 and r^14: the rest below 2^-45 of the result). */
INLINE VD sin_cos_vd(VD d, int cosine) {
    const double shift = 0x1.8p52, two_over_pi = 0x1.45f306dc9c883p-1;
    const double pio2_1 = 0x1.921fb544p0, pio2_2 = 0x1.0b4611a6p-34, pio2_3 = 0x1.3198a2e037073p-69;
    VD t = d * two_over_pi + shift;
    VD k = t - shift;
    VD r = ((d - k * pio2_1) - k * pio2_2) - k * pio2_3;
    VI q = ((VI)t + cosine) & 3;
    VD z = r * r;
    VD sp = VD_ALL(1.0 / 6227020800.0);
    sp = -1.0 / 39916800.0 + z * sp;
    sp = 1.0 / 362880.0 + z * sp;
    sp = -1.0 / 5040.0 + z * sp;
    sp = 1.0 / 120.0 + z * sp;
    sp = -1.0 / 6.0 + z * sp;
    VD sine = r * (1.0 + z * sp); /* r times, not r plus: sin(-0) keeps its sign */
    VD cp = VD_ALL(1.0 / 87178291200.0);
    cp = -1.0 / 479001600.0 + z * cp;
    cp = 1.0 / 3628800.0 + z * cp;
    cp = -1.0 / 40320.0 + z * cp;
    cp = 1.0 / 720.0 + z * cp;
    cp = -1.0 / 24.0 + z * cp;
    cp = 0.5 + z * cp; /* (1 - cos r) / r^2 */
    VD cosr = 1.0 - z * cp;
    VI odd = -(q & 1), negative = -((q >> 1) & 1);
    VD v = vd_select(odd, cosr, sine);
    return vd_select(negative, -v, v);
}

/* Whether every lane of `mask` is set. */
INLINE int vi_all(VI mask) {
    int64_t all = -1;
    for (int i = 0; i < UNARY_LANES; i++) all &= mask[i];
    return all != 0;
}

/* The C library's double function `op` on each lane of d (__builtin_sqrt: a vector square root,
 * errno unset in this file). */
INLINE VD unary_libm(int op, VD d) {
    VD out = d; /* every lane is set below: this only quiets GCC 12 */
    for (int i = 0; i < UNARY_LANES; i++) {
        double x = d[i];
        switch (op) {
        case U_LOG: out[i] = log(x); break;
        case U_TANH: out[i] = tanh(x); break;
        case U_ERF: out[i] = erf(x); break;
        case U_SQRT: out[i] = __builtin_sqrt(x); break;
        case U_RSQRT: out[i] = 1.0 / __builtin_sqrt(x); break;
        case U_SIN: out[i] = sin(x); break;
        default: out[i] = cos(x); break;
        }
    }
    return out;
}

/* d[u] = `vector` for every vector of the block where `in_domain` holds on all its lanes, the C
 * library's lane by lane for the others: straight-line code over the block when all do. */
#define UNARY_EACH(in_domain, vector)                                                              \
    do {                                                                                           \
        int ok[UNARY_UNROLL], all = 1;                                                             \
        for (int u = 0; u < UNARY_UNROLL; u++) all &= ok[u] = vi_all(in_domain);                    \
        for (int u = 0; u < UNARY_UNROLL; u++)                                                     \
            d[u] = all || ok[u] ? (vector) : unary_libm(op, d[u]);                                 \
    } while (0)

/* The double results of `op` on a block of UNARY_UNROLL vectors, in place (NaN lanes the
 * caller's to replace): one switch for the block, so that its vectors' independent chains
 * interleave. exp, sigmoid, log, tanh, sin, cos and rsqrt in vectors; erf from the C library. */
INLINE void unary_block(int op, VD *d) {
    const VD inf = VD_ALL(HUGE_VAL), reduced = VD_ALL(TRIG_REDUCED);
    const VI any = VI_ALL(-1);
    switch (op) {
    case U_EXP: UNARY_EACH(any, exp_vd(d[u])); break;
    case U_SIGMOID: UNARY_EACH(any, 1.0 / (1.0 + exp_vd(-d[u]))); break;
    case U_LOG: UNARY_EACH((d[u] > 0.0) & (d[u] < inf), log_vd(d[u])); break;
    case U_TANH: UNARY_EACH(d[u] == d[u], tanh_vd(d[u])); break;
    case U_SIN:
    case U_COS: /* |d| at TRIG_REDUCED or beyond (or NaN): the C library's reduction */
        UNARY_EACH((d[u] > -reduced) & (d[u] < reduced), sin_cos_vd(d[u], op == U_COS));
        break;
    default: UNARY_EACH(any, unary_libm(op, d[u])); break;
    }
}
#undef UNARY_EACH

/* The double op on one F64 lane (the C library's, as every F64 lane): a NaN quieted by x + x. */
INLINE double unary_f64_lane(int op, double x) {
    if (x != x) return x + x;
    switch (op) {
    case U_EXP: return exp(x);
    case U_SIGMOID: /* e^x / (1 + e^x) below 0: e^-x would overflow where the result is subnormal */
        return x < 0 ? exp(x) / (1.0 + exp(x)) : 1.0 / (1.0 + exp(-x));
    case U_LOG: return log(x);
    case U_TANH: return tanh(x);
    case U_ERF: return erf(x);
    case U_SQRT: return sqrt(x);
    case U_RSQRT: return 1.0 / sqrt(x);
    case U_SIN: return sin(x);
    default: return cos(x);
    }
}

/* A double rounded to float toward zero with the last bit set when inexact (round to odd): a
 * later rounding to a narrower format is then the correct single rounding of the double. */
INLINE float to_odd_float(double y) {
    float r = (float)y;
    double back = (double)r;
    if (back == y || y != y) return r;
    uint32_t bits;
    memcpy(&bits, &r, sizeof bits);
    if (fabs(back) > fabs(y)) bits -= 1; /* rounded away from zero (inf included): step back */
    bits |= 1;
    memcpy(&r, &bits, sizeof r);
    return r;
}

/* Four double results rounded once to floats: to nearest for F32, to odd for a half type
 * (whose narrowing then rounds once more, correctly). */
INLINE VF unary_round(VD y, int half) {
    VF g;
    if (!half) return __builtin_convertvector(y, VF);
    for (int j = 0; j < UNARY_LANES; j++) g[j] = to_odd_float(y[j]);
    return g;
}

/* Lanes per tile of the half types' widened floats. */
#define UNARY_TILE 256

/* Lanes per block: UNARY_UNROLL vectors. */
#define UNARY_BLOCK (UNARY_UNROLL * UNARY_LANES)

/* dst[i] = op(src[i]) over k floats, rounded once (`half`: to odd, for a half type's narrowing
 * after), a block at a time, the tail padded to one with 1s: every lane runs the same steps
 * wherever it lies (a vector takes the C library's lanes only for a lane of its own). NaN lanes give their operand (quieted by the widening). */
INLINE void unary_floats(int op, const float *src, float *dst, Py_ssize_t k, int half) {
    for (Py_ssize_t i = 0; i < k; i += UNARY_BLOCK) {
        Py_ssize_t m = k - i < UNARY_BLOCK ? k - i : UNARY_BLOCK;
        VF f[UNARY_UNROLL], g[UNARY_UNROLL];
        VD d[UNARY_UNROLL], x[UNARY_UNROLL];
        for (int u = 0; u < UNARY_UNROLL; u++) /* a tail's padding: in every function's domain */
            f[u] = (VF){1.0f, 1.0f, 1.0f, 1.0f};
        memcpy(f, src + i, m == UNARY_BLOCK ? sizeof f : (size_t)m * sizeof(float));
        for (int u = 0; u < UNARY_UNROLL; u++) x[u] = d[u] = __builtin_convertvector(f[u], VD);
        unary_block(op, d);
        for (int u = 0; u < UNARY_UNROLL; u++)
            g[u] = unary_round(vd_select(x[u] != x[u], x[u], d[u]), half);
        memcpy(dst + i, g, m == UNARY_BLOCK ? sizeof g : (size_t)m * sizeof(float));
    }
}

/* out[i] = op(x[i]) over n elements of `dtype` (not abs or negative), `h` the instruction set's
 * half conversions. Every lane runs the same steps wherever it lies (a short tail is padded). */
INLINE void unary_math(int op, int dtype, const void *x, void *out, Py_ssize_t n,
                       const Halves *h) {
    if (dtype == F64) {
        const double *a = x;
        double *c = out;
        if (op == U_SQRT) /* the hardware's correctly rounded square root, in vectors */
            for (Py_ssize_t i = 0; i < n; i++) c[i] = sqrt(a[i]);
        else
            for (Py_ssize_t i = 0; i < n; i++) c[i] = unary_f64_lane(op, a[i]);
        return;
    }
    if (dtype == F32 && op == U_SQRT) { /* the double path's bits: 53 >= 2 * 24 + 2 bits */
        const float *a = x;
        float *c = out;
        for (Py_ssize_t i = 0; i < n; i++) c[i] = sqrtf(a[i]);
        return;
    }
    if (dtype == F32) {
        unary_floats(op, x, out, n, 0);
        return;
    }
    Widen widen = dtype == BF16 ? h->bf16_widen : h->f16_widen;
    Narrow narrow = dtype == BF16 ? h->bf16_narrow : h->f16_narrow;
    _Alignas(64) float in[UNARY_TILE], res[UNARY_TILE];
    for (Py_ssize_t at = 0; at < n; at += UNARY_TILE) {
        Py_ssize_t k = n - at < UNARY_TILE ? n - at : UNARY_TILE;
        widen((const uint16_t *)x + at, in, k);
        unary_floats(op, in, res, k, 1);
        narrow(res, (uint16_t *)out + at, k);
    }
}

/* abs (clear) or negative (flip) of the sign bit of n elements of `size` bytes. */
INLINE void sign_bit(int op, const void *x, void *out, Py_ssize_t n, Py_ssize_t size) {
    switch (size) {
    case 8: {
        const uint64_t *a = x, s = UINT64_C(1) << 63;
        uint64_t *c = out;
        for (Py_ssize_t i = 0; i < n; i++) c[i] = op == U_ABS ? a[i] & ~s : a[i] ^ s;
        break;
    }
    case 4: {
        const uint32_t *a = x, s = UINT32_C(1) << 31;
        uint32_t *c = out;
        for (Py_ssize_t i = 0; i < n; i++) c[i] = op == U_ABS ? a[i] & ~s : a[i] ^ s;
        break;
    }
    default: {
        const uint16_t *a = x, s = (uint16_t)0x8000u;
        uint16_t *c = out;
        for (Py_ssize_t i = 0; i < n; i++) c[i] = (uint16_t)(op == U_ABS ? a[i] & ~s : a[i] ^ s);
    }
    }
}

/* The unary body of one instruction set (`target`, its `Halves`). */
#define DEFINE_UNARY(isa, target)                                                                  \
    target static void unary_##isa(int op, int dtype, const void *x, void *out, Py_ssize_t n) {    \
        if (op == U_ABS || op == U_NEG) sign_bit(op, x, out, n, ITEMSIZE[dtype]);                  \
        else unary_math(op, dtype, x, out, n, &HALVES_##isa);                                      \
    }

DEFINE_UNARY(baseline, )
#ifdef HAVE_AVX2_F16C
DEFINE_UNARY(avx2, TARGET_AVX2_F16C)
#endif
#ifdef HAVE_AVX512
DEFINE_UNARY(avx512, TARGET_AVX512)
#endif

#pragma GCC pop_options

/* The unary body of the selected instruction set, on as many threads as `threads_for` gives for
 * its op (pool op number UNARY_POOL_OP + op): what `unary` runs, exported as the UNARY capsule. */
static void unary_body(int op, int dtype, const void *x, void *out, Py_ssize_t n) {
    UnaryBody fn = N.isa_unary[N.isa];
    int threads = threads_for(UNARY_POOL_OP + op, dtype, n);
#if defined(HAVE_PTHREAD)
    if (threads > 1) {
        Job job = {.unary = fn, .op = UNARY_POOL_OP + op, .dtype = dtype, .a = x, .c = out, .n = n};
        split_run(&job, threads);
        return;
    }
#endif
    (void)threads;
    fn(op, dtype, x, out, n);
}
