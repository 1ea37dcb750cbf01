/* ---------------------------------------------------------------------------------------------
 * The unary functions (`UnaryBody`, the ops of ops.h's unary enum) on the four dtypes, one body
 * per instruction set. Every function but abs and negative is computed in double and rounded
 * ONCE to the dtype: F64 is the C library's double function; F32 rounds the double result to
 * float; BF16 and F16 round it to float *to odd* (truncated, the last bit set when inexact),
 * which the one rounding to the half type then makes a correct single rounding (a float carries
 * more than a half's bits plus two). exp and sigmoid evaluate exp in double vectors (below);
 * the others call the C library's double function per lane. abs and negative change the sign bit
 * alone, so a NaN keeps its payload and its signalling bit (IEEE 754's sign-bit operations).
 * Every other function returns a NaN operand quieted, its payload kept, and an invalid
 * operation's default NaN (log(-1), sqrt(-1), sin(inf)), as the C library does. */

#pragma GCC diagnostic ignored "-Wpsabi" /* the vectors never cross a call: INLINE everywhere */

/* Four doubles, and their bits: GCC's vector extensions, compiled to each instruction set's
 * vectors by the body that inlines them (two SSE2 halves on the baseline). */
typedef double VD __attribute__((vector_size(32)));
typedef int64_t VI __attribute__((vector_size(32)));
typedef float VF __attribute__((vector_size(16)));
#define UNARY_LANES 4

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
    VD lo = {-200.0, -200.0, -200.0, -200.0}, hi = {200.0, 200.0, 200.0, 200.0};
    d = vd_select(d < lo, lo, d);
    d = vd_select(d > hi, hi, d);
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

/* The double result of unary op `op` on the lanes of d (its NaN lanes replaced by the caller):
 * exp and sigmoid in vectors, the others lane by lane from the C library. */
INLINE VD unary_vd(int op, VD d) {
    switch (op) {
    case U_EXP:
        return exp_vd(d);
    case U_SIGMOID:
        return 1.0 / (1.0 + exp_vd(-d));
    default: {
        VD out;
        for (int i = 0; i < UNARY_LANES; i++) {
            double x = d[i];
            switch (op) {
            case U_LOG: out[i] = log(x); break;
            case U_TANH: out[i] = tanh(x); break;
            case U_ERF: out[i] = erf(x); break;
            case U_SQRT: out[i] = sqrt(x); break;
            case U_RSQRT: out[i] = 1.0 / sqrt(x); break;
            case U_SIN: out[i] = sin(x); break;
            default: out[i] = cos(x); break;
            }
        }
        return out;
    }
    }
}

/* Op `op` on four lanes: NaN lanes give their operand (quieted by the widening that made d). */
INLINE VD unary_lanes(int op, VD d) { return vd_select(d != d, d, unary_vd(op, d)); }

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

/* Lanes per tile of the half types' widened floats. */
#define UNARY_TILE 256

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
    int half = dtype != F32;
    Widen widen = dtype == BF16 ? h->bf16_widen : h->f16_widen;
    Narrow narrow = dtype == BF16 ? h->bf16_narrow : h->f16_narrow;
    _Alignas(64) float in[UNARY_TILE], res[UNARY_TILE];
    for (Py_ssize_t at = 0; at < n; at += UNARY_TILE) {
        Py_ssize_t k = n - at < UNARY_TILE ? n - at : UNARY_TILE;
        const float *src = (const float *)x + at;
        if (half) {
            widen((const uint16_t *)x + at, in, k);
            src = in;
        }
        float *dst = half ? res : (float *)out + at;
        for (Py_ssize_t i = 0; i < k; i += UNARY_LANES) {
            Py_ssize_t m = k - i < UNARY_LANES ? k - i : UNARY_LANES;
            VF f = {0.0f, 0.0f, 0.0f, 0.0f}, g;
            memcpy(&f, src + i, (size_t)m * sizeof(float));
            VD y = unary_lanes(op, __builtin_convertvector(f, VD));
            if (half) {
                for (int j = 0; j < UNARY_LANES; j++) g[j] = to_odd_float(y[j]);
            } else {
                g = __builtin_convertvector(y, VF);
            }
            memcpy(dst + i, &g, (size_t)m * sizeof(float));
        }
        if (half) narrow(res, (uint16_t *)out + at, k);
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
