/* ---------------------------------------------------------------------------------------------
 * Casts between the six float formats (CAST_NAMES: the v2 codes F32 ... F8_E5M2; bodies of
 * abi.h's `CastBody`), one body per instruction set. The rule (tests/_casts.py is the reference
 * the tests hold it to): the source pattern's exact value, rounded ONCE to nearest, ties to even,
 * into the target, subnormals read and kept (nothing flushed, never through a third format).
 * Beyond the target's largest finite value, the infinity of its sign, or its NaN of that sign
 * where it has no infinity (float8_e4m3fn); with `saturate`, every magnitude beyond it,
 * infinities included, gives the largest finite of its sign. A NaN keeps its sign and its
 * payload's high bits (the fraction shifted to the target's width), quieted; float8_e4m3fn has
 * one NaN a sign. A cast to its own dtype copies the bits.
 *
 * Every pair runs one scalar routine on the formats' integer fields (`cast_one`), but for the
 * four pairs of float32 with bfloat16 and float16, which have vector paths of the same bits:
 * bf16 by integer rounding (GCC vectorizes it in every body), f16 by F16C on the AVX2 and AVX-512
 * bodies. Only F16C computes in floating point, with its rounding in the instruction (not
 * MXCSR's), ignoring flush-to-zero and denormals-are-zero on half operands (an f32 subnormal
 * goes to a half zero of its sign either way); the flags it raises are the caller's to restore.
 * Lanes are independent: a split across threads gives one thread's bits. */

/* A cast format: the bits of a pattern and of its fraction, and whether the all-ones exponent
 * holds the infinities and NaNs (IEEE 754's layout) or, float8_e4m3fn's, finite numbers but for
 * the one NaN S.1111.111. The exponent's bias is half its all-ones value for all six. */
typedef struct {
    int width, man, ieee;
} CastFormat;

static const CastFormat CAST_FORMATS[N_CAST_DTYPES] = {
    {32, 23, 1}, {64, 52, 1}, {16, 7, 1}, {16, 10, 1}, {8, 3, 0}, {8, 2, 1}};

/* What `cast_one` needs of a pair, worked out once a call: the source's fields, the target's,
 * and the magnitude patterns an overflow, a NaN and the largest finite value take. */
typedef struct {
    int s_width, s_man, s_ieee, s_bias, t_width, t_man, t_ieee, t_emax, qmin;
    uint64_t s_top, s_frac, t_max, t_over, t_nan;
} CastPair;

/* The pair `from` -> `to` (codes of CAST_NAMES), overflowing to the largest finite value when
 * `saturate`. t_emax is the unbiased exponent of the largest finite value; qmin the exponent of
 * the least subnormal's bit. */
static void cast_pair(CastPair *c, int from, int to, int saturate) {
    const CastFormat *s = &CAST_FORMATS[from], *t = &CAST_FORMATS[to];
    uint64_t s_top = (UINT64_C(1) << (s->width - 1 - s->man)) - 1;
    uint64_t t_top = (UINT64_C(1) << (t->width - 1 - t->man)) - 1;
    uint64_t t_exp = t_top << t->man, t_frac = (UINT64_C(1) << t->man) - 1;
    int t_bias = (int)(t_top >> 1);
    /* IEEE: the all-ones exponent is not finite; e4m3fn: its all-ones fraction is the NaN */
    uint64_t t_max = t->ieee ? t_exp - 1 : t_exp | (t_frac - 1);
    uint64_t t_nan = t->ieee ? t_exp | (UINT64_C(1) << (t->man - 1)) : t_exp | t_frac;
    *c = (CastPair){
        .s_width = s->width, .s_man = s->man, .s_ieee = s->ieee, .s_bias = (int)(s_top >> 1),
        .t_width = t->width, .t_man = t->man, .t_ieee = t->ieee,
        .t_emax = (int)t_top - t->ieee - t_bias, .qmin = 1 - t_bias - t->man,
        .s_top = s_top, .s_frac = (UINT64_C(1) << s->man) - 1, .t_max = t_max,
        .t_over = saturate ? t_max : t->ieee ? t_exp : t_nan, .t_nan = t_nan};
}

/* The target magnitude of a finite nonzero source value sig * 2^q (sig < 2^53): the value
 * rounded once to nearest even at the target's quantum for its exponent (gradual underflow),
 * or the overflow pattern beyond the largest finite value. */
INLINE uint64_t cast_finite(uint64_t sig, int q, const CastPair *c) {
    int e = 63 - __builtin_clzll(sig) + q; /* the exponent of the value's leading bit */
    if (e > c->t_emax) return c->t_over;    /* 2^e alone is beyond the largest finite value */
    int qt = e - c->t_man > c->qmin ? e - c->t_man : c->qmin, shift = qt - q;
    uint64_t r;
    if (shift <= 0) r = sig << -shift; /* exact: the target has the bits (r < 2^(t_man + 1)) */
    else if (shift > 60) r = 0;        /* below half the least subnormal: sig < 2^53 */
    else {
        uint64_t rest = sig & ((UINT64_C(1) << shift) - 1), half = UINT64_C(1) << (shift - 1);
        r = sig >> shift;
        r += (uint64_t)(rest > half) | ((uint64_t)(rest == half) & r & 1); /* no branch */
    }
    /* the biased exponent less one, above the fraction, plus r with its leading bit (none for
     * a subnormal): a carry out of the fraction steps the exponent, as it should */
    uint64_t out = ((uint64_t)(qt - c->qmin) << c->t_man) + r;
    return out > c->t_max ? c->t_over : out;
}

/* One source pattern `p` cast by the pair `c`: the target pattern. */
INLINE uint64_t cast_one(uint64_t p, const CastPair *c) {
    uint64_t sign = (p >> (c->s_width - 1)) << (c->t_width - 1);
    uint64_t mag = p & ((UINT64_C(1) << (c->s_width - 1)) - 1);
    uint64_t e = mag >> c->s_man, f = mag & c->s_frac;
    if (e == c->s_top && (c->s_ieee ? f != 0 : f == c->s_frac)) { /* a NaN */
        if (!c->t_ieee) return sign | c->t_nan;
        int shift = c->t_man - c->s_man;
        return sign | c->t_nan | (shift >= 0 ? f << shift : f >> -shift);
    }
    if (e == c->s_top && c->s_ieee) return sign | c->t_over; /* an infinity */
    if (mag == 0) return sign;
    uint64_t sig = e ? f | (UINT64_C(1) << c->s_man) : f;
    return sign | cast_finite(sig, (int)(e ? e : 1) - c->s_bias - c->s_man, c);
}

/* Elements per tile of the scalar path: its patterns widened to uint64 in L1. */
#define CAST_TILE 256

/* k patterns of `width` bits from x into `bits` (zero-extended), or back from `bits` into out. */
INLINE void cast_load(const void *x, int width, uint64_t *bits, Py_ssize_t k) {
    switch (width) {
    case 8:
        for (Py_ssize_t i = 0; i < k; i++) bits[i] = ((const uint8_t *)x)[i];
        break;
    case 16:
        for (Py_ssize_t i = 0; i < k; i++) bits[i] = ((const uint16_t *)x)[i];
        break;
    case 32:
        for (Py_ssize_t i = 0; i < k; i++) bits[i] = ((const uint32_t *)x)[i];
        break;
    default:
        memcpy(bits, x, (size_t)k * sizeof *bits);
    }
}

INLINE void cast_store(void *out, int width, const uint64_t *bits, Py_ssize_t k) {
    switch (width) {
    case 8:
        for (Py_ssize_t i = 0; i < k; i++) ((uint8_t *)out)[i] = (uint8_t)bits[i];
        break;
    case 16:
        for (Py_ssize_t i = 0; i < k; i++) ((uint16_t *)out)[i] = (uint16_t)bits[i];
        break;
    case 32:
        for (Py_ssize_t i = 0; i < k; i++) ((uint32_t *)out)[i] = (uint32_t)bits[i];
        break;
    default:
        memcpy(out, bits, (size_t)k * sizeof *bits);
    }
}

/* The scalar path of any pair: n patterns cast by `cast_one`, a tile at a time. */
static void cast_scalar(const CastPair *c, const void *x, void *out, Py_ssize_t n) {
    uint64_t bits[CAST_TILE];
    Py_ssize_t s_size = c->s_width / 8, t_size = c->t_width / 8;
    for (Py_ssize_t at = 0; at < n; at += CAST_TILE) {
        Py_ssize_t k = n - at < CAST_TILE ? n - at : CAST_TILE;
        cast_load((const char *)x + at * s_size, c->s_width, bits, k);
        for (Py_ssize_t i = 0; i < k; i++) bits[i] = cast_one(bits[i], c);
        cast_store((char *)out + at * t_size, c->t_width, bits, k);
    }
}

/* The scalar path of the pair `from` -> `to` over n elements. */
static void cast_pairwise(int from, int to, const void *x, void *out, Py_ssize_t n,
                          int saturate) {
    CastPair c;
    cast_pair(&c, from, to, saturate);
    cast_scalar(&c, x, out, n);
}

/* f32 -> bf16: the pattern rounded to nearest even by adding 0x7FFF and the kept bits' last (a
 * carry into the exponent is the next binade, or the infinity: an overflow; none reaches the
 * sign), saturating one step back from the infinity; a NaN's top fraction bits with the quiet
 * bit. Branch-free, with signed compares of the magnitude: GCC vectorizes it in every body. */
INLINE void f32_to_bf16(const uint32_t *x, uint16_t *out, Py_ssize_t n, int saturate) {
    uint32_t step = saturate ? 1u : 0u;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint32_t u = x[i];
        int32_t a = (int32_t)(u & 0x7FFFFFFFu);
        uint32_t r = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
        r -= (uint32_t)(a > 0x7F7F7FFF) & step; /* rounds to the infinity (a NaN: below) */
        out[i] = (uint16_t)(a > 0x7F800000 ? (u >> 16) | 0x40u : r);
    }
}

/* bf16 -> f32: exact, the fraction shifted up; a NaN quieted (its payload kept); saturating,
 * an infinity the largest finite value of its sign (its pattern less one). */
INLINE void bf16_to_f32(const uint16_t *x, uint32_t *out, Py_ssize_t n, int saturate) {
    uint32_t step = saturate ? 1u : 0u;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint32_t u = (uint32_t)x[i] << 16;
        int32_t a = (int32_t)(u & 0x7FFFFFFFu);
        u -= (uint32_t)(a == 0x7F800000) & step;
        out[i] = u | ((uint32_t)-(a > 0x7F800000) & 0x00400000u);
    }
}

/* An instruction set's f32 -> bf16, f32 -> f16 and f16 -> f32 paths (NULL: f32_to_bf16 as
 * the body compiles it; the scalar path for f16). */
typedef void (*CastPath)(const void *x, void *out, Py_ssize_t n, int saturate);

#ifdef HAVE_AVX2_F16C
/* f32_to_bf16's steps on eight patterns, each result in the low half of its 32-bit lane. */
TARGET_AVX2_F16C static inline __attribute__((always_inline)) __m256i bf16_round8(__m256i u,
                                                                                 __m256i step) {
    __m256i a = _mm256_and_si256(u, _mm256_set1_epi32(0x7FFFFFFF));
    __m256i top = _mm256_srli_epi32(u, 16);
    __m256i lsb = _mm256_and_si256(top, _mm256_set1_epi32(1));
    __m256i r = _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7FFF)), lsb);
    r = _mm256_srli_epi32(r, 16);
    __m256i over = _mm256_cmpgt_epi32(a, _mm256_set1_epi32(0x7F7F7FFF));
    r = _mm256_sub_epi32(r, _mm256_and_si256(over, step));
    __m256i nan = _mm256_cmpgt_epi32(a, _mm256_set1_epi32(0x7F800000));
    return _mm256_blendv_epi8(r, _mm256_or_si256(top, _mm256_set1_epi32(0x40)), nan);
}

/* f32 -> bf16 sixteen lanes a step, packed once (GCC's own vectorization of f32_to_bf16 packs
 * each intermediate: half the speed); the tail by f32_to_bf16. */
TARGET_AVX2_F16C static void f32_to_bf16_avx2(const void *x, void *out, Py_ssize_t n,
                                              int saturate) {
    const uint32_t *u = x;
    uint16_t *h = out;
    const __m256i step = _mm256_set1_epi32(saturate ? 1 : 0);
    Py_ssize_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i lo = bf16_round8(_mm256_loadu_si256((const __m256i *)(u + i)), step);
        __m256i hi = bf16_round8(_mm256_loadu_si256((const __m256i *)(u + i + 8)), step);
        __m256i both = _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xD8);
        _mm256_storeu_si256((__m256i *)(h + i), both);
    }
    f32_to_bf16(u + i, h + i, n - i, saturate);
}

/* f32 -> f16 by vcvtps2ph, rounding to nearest even by its immediate: it overflows to the
 * infinity and quiets a NaN keeping its top ten fraction bits, the rule's bits. Saturating,
 * each value is first clamped to ±65504 (min then max with the value second: a NaN operand
 * makes either return its second operand, so a NaN passes through). The tail: the scalar path. */
TARGET_AVX2_F16C static void f32_to_f16_avx2(const void *x, void *out, Py_ssize_t n,
                                             int saturate) {
    const float *a = x;
    uint16_t *h = out;
    const __m256 hi = _mm256_set1_ps(65504.0f), lo = _mm256_set1_ps(-65504.0f);
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(a + i);
        if (saturate) v = _mm256_max_ps(lo, _mm256_min_ps(hi, v));
        _mm_storeu_si128((__m128i *)(h + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    }
    cast_pairwise(F32, F16, a + i, h + i, n - i, saturate);
}

/* f16 -> f32 by vcvtph2ps: exact, a signalling NaN quieted with its payload (the rule);
 * saturating, an infinity is clamped to the largest finite f32 as f32_to_f16_avx2 clamps. */
TARGET_AVX2_F16C static void f16_to_f32_avx2(const void *x, void *out, Py_ssize_t n,
                                             int saturate) {
    const uint16_t *h = x;
    float *a = out;
    const __m256 hi = _mm256_set1_ps(FLT_MAX), lo = _mm256_set1_ps(-FLT_MAX);
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + i)));
        if (saturate) v = _mm256_max_ps(lo, _mm256_min_ps(hi, v));
        _mm256_storeu_ps(a + i, v);
    }
    cast_pairwise(F16, F32, h + i, a + i, n - i, saturate);
}
#endif

#ifdef HAVE_AVX512
/* The AVX2 body's F16C paths, sixteen lanes a step (the same clamp: vminps/vmaxps return the
 * second operand for a NaN in 512-bit vectors too). */
TARGET_AVX512 static void f32_to_f16_avx512(const void *x, void *out, Py_ssize_t n,
                                            int saturate) {
    const float *a = x;
    uint16_t *h = out;
    const __m512 hi = _mm512_set1_ps(65504.0f), lo = _mm512_set1_ps(-65504.0f);
    Py_ssize_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(a + i);
        if (saturate) v = _mm512_max_ps(lo, _mm512_min_ps(hi, v));
        _mm256_storeu_si256((__m256i *)(h + i), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    }
    f32_to_f16_avx2(a + i, h + i, n - i, saturate);
}

TARGET_AVX512 static void f16_to_f32_avx512(const void *x, void *out, Py_ssize_t n,
                                             int saturate) {
    const uint16_t *h = x;
    float *a = out;
    const __m512 hi = _mm512_set1_ps(FLT_MAX), lo = _mm512_set1_ps(-FLT_MAX);
    Py_ssize_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(h + i)));
        if (saturate) v = _mm512_max_ps(lo, _mm512_min_ps(hi, v));
        _mm512_storeu_ps(a + i, v);
    }
    f16_to_f32_avx2(h + i, a + i, n - i, saturate);
}
#endif

/* The value of the parameter `name` of type `type` in params (a call's "saturate", "rounding"),
 * or `fallback` where it is absent. */
static int64_t cast_param(const ParamArg *params, int n_params, const char *name, ParamType type,
                          int64_t fallback) {
    for (int k = 0; k < n_params; k++)
        if (params[k].type == type && strcmp(params[k].name, name) == 0) return params[k].value.i;
    return fallback;
}

/* A cast of n elements `from` -> `to` by one instruction set's paths; the caller has checked
 * that "rounding" (if given) is ROUND_NEAREST_EVEN, the only rounding for now. */
INLINE void cast_any(int from, int to, const void *x, void *out, Py_ssize_t n,
                     const ParamArg *params, int n_params, CastPath bf16, CastPath narrow,
                     CastPath widen) {
    int saturate = cast_param(params, n_params, "saturate", PARAM_I64, 0) != 0;
    if (from == to) memcpy(out, x, (size_t)(n * CAST_ITEMSIZE[from]));
    else if (from == F32 && to == BF16 && bf16 != NULL) bf16(x, out, n, saturate);
    else if (from == F32 && to == BF16) f32_to_bf16(x, out, n, saturate);
    else if (from == BF16 && to == F32) bf16_to_f32(x, out, n, saturate);
    else if (from == F32 && to == F16 && narrow != NULL) narrow(x, out, n, saturate);
    else if (from == F16 && to == F32 && widen != NULL) widen(x, out, n, saturate);
    else cast_pairwise(from, to, x, out, n, saturate);
}

/* The cast body of one instruction set (`target`, its paths or NULL). */
#define DEFINE_CAST(isa, target, bf16, narrow, widen)                                              \
    target static void cast_##isa(int from, int to, const void *x, void *out, Py_ssize_t n,        \
                                  const ParamArg *params, int n_params) {                          \
        cast_any(from, to, x, out, n, params, n_params, bf16, narrow, widen);                      \
    }

DEFINE_CAST(baseline, , NULL, NULL, NULL)
#ifdef HAVE_AVX2_F16C
DEFINE_CAST(avx2, TARGET_AVX2_F16C, f32_to_bf16_avx2, f32_to_f16_avx2, f16_to_f32_avx2)
#endif
#ifdef HAVE_AVX512 /* AVX-512's own narrowing (vpmovdw) makes GCC's f32_to_bf16 the faster */
DEFINE_CAST(avx512, TARGET_AVX512, NULL, f32_to_f16_avx512, f16_to_f32_avx512)
#endif

/* The cast body of the selected instruction set, on as many threads as `threads_for` gives
 * (pool op CAST_POOL_OP, by the source dtype): what `cast` runs, exported as the CAST capsule. */
static void cast_body(int from, int to, const void *x, void *out, Py_ssize_t n,
                      const ParamArg *params, int n_params) {
    CastBody fn = N.isa_cast[N.isa];
    int threads = threads_for(CAST_POOL_OP, from, n);
#if defined(HAVE_PTHREAD)
    if (threads > 1) {
        Job job = {.cast = fn, .params = params, .n_params = n_params, .to = to,
                   .op = CAST_POOL_OP, .dtype = from, .a = x, .c = out, .n = n};
        split_run(&job, threads);
        return;
    }
#endif
    (void)threads;
    fn(from, to, x, out, n, params, n_params);
}

/* The buffer-protocol format of each cast dtype's elements; NULL: NumPy states none (the
 * ml_dtypes formats), as `get_operand` takes them. */
static const char *const CAST_BUFFER_FORMATS[N_CAST_DTYPES] = {"f", "d", NULL, "e", NULL, NULL};

/* Acquire a cast operand: C-contiguous, elements of CAST_NAMES[dtype] by format and size
 * (TypeError otherwise: an integer or object array must never reach the loops). */
static int cast_operand(PyObject *obj, Py_buffer *view, int flags, long dtype, const char *what) {
    if (get_buffer(obj, view, flags, what) < 0) return -1;
    const char *want = CAST_BUFFER_FORMATS[dtype], *have = plain_format(view->format);
    int same = want == NULL ? have == NULL : have != NULL && strcmp(have, want) == 0;
    if (same && view->itemsize == CAST_ITEMSIZE[dtype]) return 0;
    PyErr_Format(PyExc_TypeError,
                 "convert: %s must hold %s elements (%zd bytes), got buffer format '%s' of %zd-byte "
                 "elements",
                 what, CAST_NAMES[dtype], CAST_ITEMSIZE[dtype],
                 view->format ? view->format : "unstated", view->itemsize);
    PyBuffer_Release(view);
    return -1;
}

/* Acquire `cast`'s x and out (`views`) for `src` -> `dst`: out writable, both C-contiguous,
 * with as many elements each (no byte count overflows). On failure neither is held. */
static int cast_operands(long src, long dst, PyObject *x, PyObject *out, Py_buffer *views) {
    if (cast_operand(x, &views[0], PyBUF_ND, src, "x") < 0) return -1;
    if (cast_operand(out, &views[1], PyBUF_ND | PyBUF_WRITABLE, dst, "out") < 0) {
        PyBuffer_Release(&views[0]);
        return -1;
    }
    Py_ssize_t n = views[0].len / CAST_ITEMSIZE[src], want;
    if (views[0].len % CAST_ITEMSIZE[src] == 0 &&
        !__builtin_mul_overflow(n, CAST_ITEMSIZE[dst], &want) && views[1].len == want)
        return 0;
    PyErr_Format(PyExc_ValueError,
                 "convert %s -> %s: x and out must hold as many elements: x has %zd bytes (%zd-byte "
                 "elements), out %zd bytes (%zd-byte elements)",
                 CAST_NAMES[src], CAST_NAMES[dst], views[0].len, CAST_ITEMSIZE[src], views[1].len,
                 CAST_ITEMSIZE[dst]);
    PyBuffer_Release(&views[0]);
    PyBuffer_Release(&views[1]);
    return -1;
}

/* An int argument of `cast` in [0, bound), or -1 with TypeError or ValueError naming it. */
static long cast_code(PyObject *obj, const char *what, long bound, const char *meaning) {
    long v = PyLong_AsLong(obj);
    if (v == -1 && PyErr_Occurred()) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "convert: %s must be an int (%s), got %R", what, meaning,
                         Py_TYPE(obj));
        }
        return -1;
    }
    if (v >= 0 && v < bound) return v;
    PyErr_Format(PyExc_ValueError, "convert: %s must be %s, in [0, %ld), got %ld", what, meaning,
                 bound, v);
    return -1;
}

/* `convert(src, dst, saturate, x, out)`: out[i] = x[i] cast from CAST_DTYPES[src] to
 * CAST_DTYPES[dst] over C-contiguous buffers of as many elements, rounded to nearest even,
 * saturating when `saturate` is 1. The caller's floating-point status flags are restored. */
static PyObject *convert(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 5) {
        PyErr_Format(PyExc_TypeError,
                     "convert(src, dst, saturate, x, out) takes 5 arguments, got %zd", nargs);
        return NULL;
    }
    long src = cast_code(args[0], "src", N_CAST_DTYPES, "a code of CAST_DTYPES");
    long dst = src < 0 ? -1 : cast_code(args[1], "dst", N_CAST_DTYPES, "a code of CAST_DTYPES");
    long saturate = dst < 0 ? -1 : cast_code(args[2], "saturate", 2, "0 or 1");
    Py_buffer views[2];
    if (saturate < 0 || cast_operands(src, dst, args[3], args[4], views) < 0) return NULL;
    Py_ssize_t n = views[0].len / CAST_ITEMSIZE[src];
    void *copy = NULL;
    const void *x = own_input(&views[0], &views[1], &copy);
    if (x == NULL && views[0].len) { /* a zero-length buffer may be NULL */
        PyBuffer_Release(&views[0]);
        PyBuffer_Release(&views[1]);
        return PyErr_NoMemory();
    }
    const ParamArg params[2] = {
        {"rounding", PARAM_CODE, {.i = ROUND_NEAREST_EVEN}},
        {"saturate", PARAM_I64, {.i = saturate}},
    };
    fexcept_t flags; /* F16C raises inexact, overflow, invalid: the caller's flags come back */
    fegetexceptflag(&flags, FE_ALL_EXCEPT);
    if (n >= GIL_FREE_FROM) {
        Py_BEGIN_ALLOW_THREADS cast_body((int)src, (int)dst, x, views[1].buf, n, params, 2);
        Py_END_ALLOW_THREADS
    } else if (n > 0) {
        cast_body((int)src, (int)dst, x, views[1].buf, n, params, 2);
    }
    fesetexceptflag(&flags, FE_ALL_EXCEPT);
    PyMem_RawFree(copy);
    PyBuffer_Release(&views[0]);
    PyBuffer_Release(&views[1]);
    Py_RETURN_NONE;
}
