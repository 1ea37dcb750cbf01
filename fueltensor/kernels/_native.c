/* Compiled fast path for fuel-cpu-backend's 32 kernels (the pure-NumPy chassis is the fallback;
 * both are tested against one scalar reference, and pow calls the C library's powf/pow in both),
 * and `copy_strided`, the planner's Contiguize (a cache-blocked copy of any strided layout into
 * a dense buffer). fuel-reference-backend shares none of this: it is the independent oracle.
 *
 * One pass per element instead of NumPy's several: maximum/minimum pick lhs on a ±0 tie in the
 * same compare, and the half types widen, compute and narrow tile by tile in L1 (F16C on x86).
 * Build with -ffp-contract=off and without -ffast-math: every step is one rounded IEEE operation.
 * The NaN rules are explicit, never left to the operand order the compiler picks: arithmetic
 * returns the first NaN operand (lhs first) quieted, maximum/minimum a NaN operand unchanged.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <fenv.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__GLIBC__)
#include <gnu/libc-version.h>
#endif
#if defined(__unix__) || defined(__APPLE__)
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>
#define HAVE_DLADDR 1
#define HAVE_PTHREAD 1
#endif
#if defined(__linux__)
#include <sched.h>
#endif
#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define HAVE_AVX2_F16C 1
#define TARGET_AVX2_F16C __attribute__((target("avx2,f16c,fma")))
#endif

#if defined(__GNUC__)
#define INLINE static inline __attribute__((always_inline))
#else
#define INLINE static inline
#endif

enum { ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM, POW, REM, N_OPS };
enum { F32, F64, BF16, F16, N_DTYPES };

static const char *const OP_NAMES[N_OPS] = {"add",     "sub",     "mul", "div",
                                            "maximum", "minimum", "pow", "rem"};
static const char *const DTYPE_NAMES[N_DTYPES] = {"float32", "float64", "bfloat16", "float16"};
static const Py_ssize_t ITEMSIZE[N_DTYPES] = {4, 8, 2, 2};

/* Half-float elements per tile: three f32 tiles (6 KiB) stay in L1 between the passes. */
#define TILE 512
/* Below this many elements the loop is shorter than releasing and retaking the GIL. */
#define GIL_FREE_FROM 16384

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

/* Double ULPs of the exact value (2^-52 of its binade; half a float ULP is 2^28 of them) inside
 * which powf decides: 2^21 is 2.4x the largest distance measured (benchmarks/
 * pow_shortcut_check.c) and sends 1/128 of the lanes to powf. */
#define POW_BAND (1 << 21)
/* Lanes per tile: one pass fills them and flags the slow ones, then powf fills those. */
#define POW_TILE 512

/* Fill a tile's c with the shortcut's values for y == `want` (2 or 0.5) and `slow` (one bit per
 * lane) with the lanes powf must decide; returns how many. */
typedef Py_ssize_t (*PowPass)(const float *a, const float *b, float *c, uint8_t *slow,
                              Py_ssize_t k, float want, int64_t band);

typedef struct {
    int two, half; /* take the shortcut for lanes with y == 2 / y == 0.5 */
    int64_t band;  /* POW_BAND; another value only in `verify_pow`, to show it catches errors */
    PowPass pass;  /* the instruction set's tile pass (set by the kernel body) */
} PowShortcut;

/* The settings the kernels use: off until `pow_shortcut` turns them on (after a verdict). */
static int pow_on_two = 0, pow_on_half = 0;

static PowShortcut pow_settings(void) {
    PowShortcut s = {__atomic_load_n(&pow_on_two, __ATOMIC_RELAXED),
                     __atomic_load_n(&pow_on_half, __ATOMIC_RELAXED), POW_BAND, NULL};
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

/* ---------------------------------------------------------------------------------------------
 * The working-precision loops, stamped out for f32 and f64 from one definition. */

/* The lane-wise ops but pow over a, b into c: each lane one rounded operation, its NaN rule. */
#define LANE_LOOPS(T, FLOOR_FN, IVDEP)                                                             \
    Py_ssize_t i;                                                                                  \
    switch (op) {                                                                                  \
    case ADD:                                                                                      \
        IVDEP for (i = 0; i < n; i++) c[i] = T##_nan_first(a[i] + b[i], a[i]);                     \
        break;                                                                                     \
    case SUB:                                                                                      \
        IVDEP for (i = 0; i < n; i++) c[i] = T##_nan_first(a[i] - b[i], a[i]);                     \
        break;                                                                                     \
    case MUL:                                                                                      \
        IVDEP for (i = 0; i < n; i++) c[i] = T##_nan_first(a[i] * b[i], a[i]);                     \
        break;                                                                                     \
    case DIV:                                                                                      \
        IVDEP for (i = 0; i < n; i++) c[i] = T##_nan_first(a[i] / b[i], a[i]);                     \
        break;                                                                                     \
    case MAXIMUM:                                                                                  \
        IVDEP for (i = 0; i < n; i++) c[i] = T##_select(a[i], b[i], 0);                            \
        break;                                                                                     \
    case MINIMUM:                                                                                  \
        IVDEP for (i = 0; i < n; i++) c[i] = T##_select(a[i], b[i], 1);                            \
        break;                                                                                     \
    default:                                                                                       \
        IVDEP for (i = 0; i < n; i++)                                                              \
            c[i] = T##_nan_first(a[i] - FLOOR_FN(a[i] / b[i]) * b[i], a[i]);                       \
    }

#define DEFINE_LOOPS(T, F, U, ABS, INF, QUIET, FLOOR_FN, POW_LOOP)                                 \
    INLINE U T##_bits(F x) {                                                                       \
        U u;                                                                                       \
        memcpy(&u, &x, sizeof u);                                                                  \
        return u;                                                                                  \
    }                                                                                              \
    INLINE F T##_value(U u) {                                                                      \
        F x;                                                                                       \
        memcpy(&x, &u, sizeof x);                                                                  \
        return x;                                                                                  \
    }                                                                                              \
    INLINE int T##_isnan(U u) { return (u & ABS) > INF; }                                          \
    /* r, or a NaN lhs quieted: with one NaN operand the hardware already returns it quieted,      \
     * so only a NaN pair depends on the operand order the compiler chose; lhs is the rule. */     \
    INLINE F T##_nan_first(F r, F a) {                                                             \
        U ua = T##_bits(a);                                                                        \
        return T##_value(T##_isnan(ua) ? (ua | QUIET) : T##_bits(r));                              \
    }                                                                                              \
    /* lhs where maximum (or minimum, when `less`) returns it: lhs NaN, or lhs wins or ties. */    \
    INLINE F T##_select(F a, F b, int less) {                                                      \
        U ua = T##_bits(a), ub = T##_bits(b);                                                      \
        int lhs = T##_isnan(ua) | (less ? (a <= b) : (a >= b));                                    \
        return T##_value(lhs ? ua : ub);                                                           \
    }                                                                                              \
    INLINE void T##_loop(int op, const F *restrict a, const F *restrict b, F *restrict c,          \
                         Py_ssize_t n, const PowShortcut *s) {                                     \
        if (op == POW) {                                                                           \
            POW_LOOP(a, b, c, n, s);                                                               \
            return;                                                                                \
        }                                                                                          \
        LANE_LOOPS(T, FLOOR_FN, )                                                                  \
    }                                                                                              \
    /* T##_loop for c == a or c == b (`x op= y`), every op but pow: no `restrict`, and `ivdep`     \
     * (true here: lane i reads a[i] and b[i] before it writes c[i], and no other lane) lets it    \
     * vectorize as T##_loop does, with no tile to copy back. */                                   \
    INLINE void T##_loop_in_place(int op, const F *a, const F *b, F *c, Py_ssize_t n) {            \
        LANE_LOOPS(T, FLOOR_FN, _Pragma("GCC ivdep"))                                             \
    }

DEFINE_LOOPS(f32, float, uint32_t, 0x7FFFFFFFu, 0x7F800000u, 0x00400000u, floorf, f32_pow)
DEFINE_LOOPS(f64, double, uint64_t, 0x7FFFFFFFFFFFFFFFull, 0x7FF0000000000000ull,
             0x0008000000000000ull, floor, f64_pow)

/* ---------------------------------------------------------------------------------------------
 * Half floats. Widening is exact. Narrowing rounds to nearest-even; a NaN keeps its sign and top
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

static float f16_widen_one(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
    if (e == 0x1F) return f32_value(sign | 0x7F800000u | (m << 13));
    if (e != 0) return f32_value(sign | ((e + 112u) << 23) | (m << 13));
    return f32_value(sign | f32_bits((float)m * 0x1p-24f)); /* ±0 and subnormals, exact */
}

static uint16_t f16_narrow_one(float f) {
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

static void bf16_widen_fn(const uint16_t *src, float *dst, Py_ssize_t n) {
    bf16_widen(src, dst, n);
}

static void bf16_narrow_fn(const float *src, uint16_t *dst, Py_ssize_t n) {
    bf16_narrow(src, dst, n);
}

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

/* ---------------------------------------------------------------------------------------------
 * One kernel body per instruction set: the same C, compiled for the baseline and for AVX2 (with
 * F16C and FMA, which the pow shortcut uses). */

typedef void (*Body)(int op, int dtype, const void *a, const void *b, void *c, Py_ssize_t n);
/* A body with its pow shortcut settings spelled out (the kernels pass `pow_settings()`). */
typedef void (*BodyWith)(int op, int dtype, const void *a, const void *b, void *c, Py_ssize_t n,
                         const PowShortcut *s);

INLINE void loops(int op, int dtype, const void *a, const void *b, void *c, Py_ssize_t n,
                  Widen f16_to_f32, Narrow f32_to_f16, const PowShortcut *s) {
    switch (dtype) {
    case F32:
        f32_loop(op, a, b, c, n, s);
        break;
    case F64:
        f64_loop(op, a, b, c, n, s);
        break;
    case BF16:
        half_loop(op, bf16_widen_fn, bf16_narrow_fn, a, b, c, n, s);
        break;
    default:
        half_loop(op, f16_to_f32, f32_to_f16, a, b, c, n, s);
    }
}

/* Bytes of the tile a tiled body computes into (L1-resident, on the stack). */
#define ALIAS_TILE 4096

/* Output bytes from which a body apart from its operands writes through streaming stores: a
 * result this large leaves the caches anyway, and a plain store first reads each line it writes
 * (benchmarks/RESULTS.md: mul f32 at 10^7 on two threads 3.3 -> 2.2 ms in a C test). Below it,
 * the result stays cached for the next op. */
#define STREAM_FROM (8 << 20)

/* Copy `bytes` from the tile to c, bypassing the caches where c is 16-byte aligned. */
INLINE void stream_out(char *c, const char *tile, size_t bytes) {
#if defined(__SSE2__)
    size_t whole = ((uintptr_t)c % 16 == 0) ? bytes / 16 * 16 : 0;
    for (size_t at = 0; at < whole; at += 16)
        _mm_stream_si128((__m128i *)(c + at), _mm_load_si128((const __m128i *)(tile + at)));
    memcpy(c + whole, tile + whole, bytes - whole);
#else
    memcpy(c, tile, bytes);
#endif
}

/* Run `loops` a tile at a time into an L1 tile, each tile copied over c's elements (by
 * streaming stores when `stream`): every lane is the same lane-wise computation. */
INLINE void tiled(int op, int dtype, const void *a, const void *b, void *c, Py_ssize_t n,
                  Widen f16_to_f32, Narrow f32_to_f16, const PowShortcut *s, int stream) {
    _Alignas(64) char tile[ALIAS_TILE];
    Py_ssize_t size = ITEMSIZE[dtype], per = ALIAS_TILE / size;
    for (Py_ssize_t i = 0; i < n; i += per) {
        Py_ssize_t k = n - i < per ? n - i : per, at = i * size;
        loops(op, dtype, (const char *)a + at, (const char *)b + at, tile, k, f16_to_f32,
              f32_to_f16, s);
        if (stream) stream_out((char *)c + at, tile, (size_t)(k * size));
        else memcpy((char *)c + at, tile, (size_t)(k * size));
    }
#if defined(__SSE2__)
    if (stream) _mm_sfence(); /* the streamed lines are visible before the caller reads them */
#endif
}

/* c is a, b, or apart from both. Apart, a body of STREAM_FROM output bytes or more streams its
 * tiles out (`tiled`). Where c is an operand (`x op= y` written into x), f32 and f64 run their
 * in-place loops; pow (whose slow lanes read an operand again after the fast pass wrote c) and
 * the halves (whose loops do not alias, `restrict`) run into a tile copied over c's elements. */
INLINE void body(int op, int dtype, const void *a, const void *b, void *c, Py_ssize_t n,
                 Widen f16_to_f32, Narrow f32_to_f16, const PowShortcut *s) {
    if (c != a && c != b) {
        if (n >= STREAM_FROM / ITEMSIZE[dtype])
            tiled(op, dtype, a, b, c, n, f16_to_f32, f32_to_f16, s, 1);
        else loops(op, dtype, a, b, c, n, f16_to_f32, f32_to_f16, s);
        return;
    }
    if (op != POW && dtype == F32) {
        f32_loop_in_place(op, a, b, c, n);
        return;
    }
    if (op != POW && dtype == F64) {
        f64_loop_in_place(op, a, b, c, n);
        return;
    }
    tiled(op, dtype, a, b, c, n, f16_to_f32, f32_to_f16, s, 0);
}

static void body_baseline(int op, int dtype, const void *a, const void *b, void *c,
                          Py_ssize_t n, const PowShortcut *s) {
    PowShortcut t = *s;
    t.pass = pow_pass_generic;
    body(op, dtype, a, b, c, n, f16_widen, f16_narrow, &t);
}

#ifdef HAVE_AVX2_F16C
TARGET_AVX2_F16C static void body_avx2(int op, int dtype, const void *a, const void *b, void *c,
                                       Py_ssize_t n, const PowShortcut *s) {
    PowShortcut t = *s;
    t.pass = pow_pass_avx2;
    body(op, dtype, a, b, c, n, f16_widen_f16c, f16_narrow_f16c, &t);
}
#endif

static const char *const ISA_NAMES[] = {"baseline", "avx2"};
static BodyWith ISA_BODIES[2] = {body_baseline, NULL};
static int isa_count = 1;
static int isa = 0;

/* ---------------------------------------------------------------------------------------------
 * All cores at large sizes: a body over `parallel_from` elements or more runs in contiguous
 * chunks, one per thread (the caller's included), each a whole number of CHUNK_ALIGN elements,
 * so every thread runs the tiles one thread would (every op is lane by lane: the bits are the
 * same). The other chunks run on a persistent pool of workers, started by the first call that
 * splits (a process that never splits has no worker) and parked on a condition variable between
 * calls after a short bounded spin. A worker runs its chunk under the caller's floating-point
 * environment (`fegetenv` passed along: rounding mode, FTZ/DAZ, masks), with the status flags
 * cleared, and hands back the flags its chunk raised; the caller merges them into its own, so it
 * sees the flags one thread would have raised. One caller owns the pool at a time: another that
 * finds it busy runs its whole body on its own thread (the same bits). A forked child forgets
 * the parent's workers (`pthread_atfork`) and starts its own when it first splits. Workers are
 * detached and never joined: process exit ends them wherever they are parked. */

/* Elements from which a body splits (benchmarks/run.py's "threads" rows measured it on the 2-core
 * box: back to back, splitting pays from 2^16; a call that must wake an idle core pays 0.1-0.25 ms
 * there at any size, repaid only from about 2^20; 2^19 is the power of two below 10^6, where the
 * issue's target asks for both cores). */
#define PARALLEL_FROM (1 << 19)
/* Chunk boundaries: whole half-float and pow tiles, 64-byte aligned for every element size. */
#define CHUNK_ALIGN 512
#define MAX_THREADS 64
/* How long a worker polls for its next chunk after one, and the caller for the workers'
 * chunks, before sleeping: back-to-back large calls skip the wake-up (benchmarks/RESULTS.md). */
#ifndef POOL_SPIN_NS
#define POOL_SPIN_NS 50000
#endif

/* The threads a large body may use (`set_threads`); capped by the cores it may run on. */
static int thread_setting = 1;
/* Elements from which a body splits: PARALLEL_FROM, another value only while benchmarks/run.py
 * measures where splitting starts to pay (`set_parallel_from`). */
static Py_ssize_t parallel_from = PARALLEL_FROM;

/* The cores this process may run on now (its affinity mask where the platform has one). */
static int usable_cores(void) {
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
#endif
#if defined(_SC_NPROCESSORS_ONLN)
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (online > 0) return online < MAX_THREADS ? (int)online : MAX_THREADS;
#endif
    return 1;
}

/* Elements per chunk when n elements are split `threads` (two or more) ways: whole CHUNK_ALIGN
 * blocks. No sum here overflows for any n (`threads` takes any Py_ssize_t). */
static Py_ssize_t chunk_length(Py_ssize_t n, int threads) {
    Py_ssize_t per = n / threads + (n % threads != 0), part = per % CHUNK_ALIGN;
    return part ? per + (CHUNK_ALIGN - part) : per;
}

/* How many threads a body over `n` elements runs on now: the setting, capped by the cores,
 * and by the chunks n makes (one where threads cannot be made). */
static int threads_for(Py_ssize_t n) {
#if defined(HAVE_PTHREAD)
    if (n < __atomic_load_n(&parallel_from, __ATOMIC_RELAXED)) return 1;
    int want = __atomic_load_n(&thread_setting, __ATOMIC_RELAXED), cores = usable_cores();
    int threads = want < cores ? want : cores > 1 ? cores : 1;
    if (threads == 1) return 1;
    Py_ssize_t per = chunk_length(n, threads);
    return (int)(n / per + (n % per != 0));
#else
    (void)n;
    return 1;
#endif
}

/* The thread setting under a name of fueltensor's own, exported: threadpoolctl's controller for
 * fueltensor (fueltensor/engine/threadpool.py) reads it, and tells this library from other
 * `_native` modules by it. */
__attribute__((visibility("default"))) int fueltensor_thread_setting(void) {
    return __atomic_load_n(&thread_setting, __ATOMIC_RELAXED);
}

#if defined(HAVE_PTHREAD)
typedef struct {
    BodyWith fn;
    int op, dtype;
    const char *a, *b;
    char *c;
    Py_ssize_t n;
    const PowShortcut *s;
    const fenv_t *env; /* the caller's floating-point environment, which the chunk runs under */
    fexcept_t flags;   /* the status flags the chunk raised, and which (`raised`) */
    int raised;
} Chunk;

/* A worker runs `job` each time `posted` (written by the pool's owner) passes the count it ran. */
typedef struct {
    Chunk *job;
    unsigned posted;
} Worker;

/* The pool. `owner` is held by the one caller using it; `lock` guards the sleeps on `wake`
 * (workers waiting for a chunk) and `done` (the owner waiting for `pending` to reach 0). */
typedef struct {
    pthread_mutex_t owner, lock;
    pthread_cond_t wake, done;
    int workers; /* started so far; read and written by the owner only */
    unsigned pending; /* chunks posted and not finished yet (atomic) */
    Worker slot[MAX_THREADS - 1];
} Pool;

#define POOL_INIT                                                                               \
    {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,            \
     PTHREAD_COND_INITIALIZER, 0, 0, {{NULL, 0}}}
static Pool pool = POOL_INIT;

INLINE void cpu_relax(void) {
#if defined(__SSE2__)
    _mm_pause();
#endif
}

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Poll `*word` for about POOL_SPIN_NS until it equals `value` (`equal`) or differs from it
 * (`!equal`); 1 once it does, 0 when the time is up. */
static int spin(const unsigned *word, unsigned value, int equal) {
    uint64_t until = 0;
    for (unsigned i = 0;; i++) {
        if ((__atomic_load_n(word, __ATOMIC_ACQUIRE) == value) == equal) return 1;
        if (i % 64 == 0) { /* the clock every 64 polls: a pause is 10-150 cycles by CPU */
            uint64_t now = now_ns();
            if (until == 0) until = now + POOL_SPIN_NS;
            else if (now >= until) return 0;
            else sched_yield(); /* the thread it waits for may be queued on this core */
        }
        cpu_relax();
    }
}

static void run_chunk(Chunk *k) {
    fesetenv(k->env);
    feclearexcept(FE_ALL_EXCEPT);
    k->fn(k->op, k->dtype, k->a, k->b, k->c, k->n, k->s);
    k->raised = fetestexcept(FE_ALL_EXCEPT);
    fegetexceptflag(&k->flags, FE_ALL_EXCEPT);
}

/* A worker's life: wait for a chunk (spin, then sleep), run it, count it done; never returns.
 * Signals are blocked here: they go to the interpreter's threads. */
static void *pool_worker(void *arg) {
    Worker *w = arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    for (unsigned seen = 0;; seen++) { /* the owner posts a worker's next chunk after its last */
        if (!spin(&w->posted, seen, 0)) {
            pthread_mutex_lock(&pool.lock);
            while (__atomic_load_n(&w->posted, __ATOMIC_ACQUIRE) == seen)
                pthread_cond_wait(&pool.wake, &pool.lock);
            pthread_mutex_unlock(&pool.lock);
        }
        run_chunk(w->job);
        if (__atomic_sub_fetch(&pool.pending, 1, __ATOMIC_ACQ_REL) == 0) {
            pthread_mutex_lock(&pool.lock);
            pthread_cond_signal(&pool.done);
            pthread_mutex_unlock(&pool.lock);
        }
    }
    return NULL;
}

/* In a forked child the parent's workers do not exist (and a lock may be held by a thread that
 * is gone): start over with no pool. */
static void pool_forget(void) {
    Pool fresh = POOL_INIT;
    memcpy(&pool, &fresh, sizeof pool);
}

/* Start workers (the owner calls this) until `want` run; how many run (fewer where the system
 * refuses a thread). The first start registers `pool_forget` for forked children. */
static int pool_grow(int want) {
    static int registered = 0;
    if (!registered && pool.workers < want)
        registered = pthread_atfork(NULL, NULL, pool_forget) == 0;
    if (!registered) return 0; /* a child could not forget workers it never had: none */
    pthread_attr_t attr;
    if (pool.workers < want && pthread_attr_init(&attr) == 0) {
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        while (pool.workers < want) {
            pthread_t id;
            if (pthread_create(&id, &attr, pool_worker, &pool.slot[pool.workers]) != 0) break;
            pool.workers++;
        }
        pthread_attr_destroy(&attr);
    }
    return pool.workers < want ? pool.workers : want;
}

/* Wait until every posted chunk is done (spin, then sleep on `done`). */
static void pool_wait(void) {
    if (spin(&pool.pending, 0, 1)) return;
    pthread_mutex_lock(&pool.lock);
    while (__atomic_load_n(&pool.pending, __ATOMIC_ACQUIRE) != 0)
        pthread_cond_wait(&pool.done, &pool.lock);
    pthread_mutex_unlock(&pool.lock);
}

/* Run `fn` over n elements on `threads` threads: chunk 0 here, chunks 1.. on the pool's
 * workers (here, those it has no worker for), then merge the workers' flags into this thread's.
 * When another caller owns the pool, all of it here. */
static void split_body(BodyWith fn, int op, int dtype, const char *a, const char *b, char *c,
                       Py_ssize_t n, const PowShortcut *s, int threads) {
    if (pthread_mutex_trylock(&pool.owner) != 0) {
        fn(op, dtype, a, b, c, n, s);
        return;
    }
    Chunk parts[MAX_THREADS];
    fenv_t env;
    fegetenv(&env);
    Py_ssize_t size = ITEMSIZE[dtype], per = chunk_length(n, threads);
    int count = 0;
    for (Py_ssize_t at = 0; at < n && count < threads; at += per, count++) {
        Py_ssize_t len = n - at < per ? n - at : per, skip = at * size;
        Chunk part = {.fn = fn, .op = op, .dtype = dtype, .a = a + skip, .b = b + skip,
                      .c = c + skip, .n = len, .s = s, .env = &env};
        parts[count] = part;
    }
    int helpers = pool_grow(count - 1);
    __atomic_store_n(&pool.pending, (unsigned)helpers, __ATOMIC_RELAXED);
    for (int t = 0; t < helpers; t++) {
        pool.slot[t].job = &parts[t + 1];
        __atomic_store_n(&pool.slot[t].posted, pool.slot[t].posted + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_lock(&pool.lock); /* a worker sleeping past its check wakes here */
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.lock);
    for (int t = helpers + 1; t < count; t++) /* no worker for these: here, in this thread */
        fn(op, dtype, parts[t].a, parts[t].b, parts[t].c, parts[t].n, s);
    fn(op, dtype, parts[0].a, parts[0].b, parts[0].c, parts[0].n, s);
    pool_wait();
    for (int t = 1; t <= helpers; t++)
        if (parts[t].raised) fesetexceptflag(&parts[t].flags, parts[t].raised);
    pthread_mutex_unlock(&pool.owner);
}
#endif

/* The body of the selected instruction set, on as many threads as `threads_for` gives: what
 * `_fast` runs, exported as the BODY capsule. */
static void selected_body(int op, int dtype, const void *a, const void *b, void *c,
                          Py_ssize_t n) {
    PowShortcut s = pow_settings();
    int threads = threads_for(n);
#if defined(HAVE_PTHREAD)
    if (threads > 1) {
        split_body(ISA_BODIES[isa], op, dtype, a, b, c, n, &s, threads);
        return;
    }
#endif
    (void)threads;
    ISA_BODIES[isa](op, dtype, a, b, c, n, &s);
}

/* ---------------------------------------------------------------------------------------------
 * Integer powers (PowIElementwise, contracts/fuel-cpu-backend-powi.md): LLVM's powi loop in the
 * working precision (`r = 1`; per bit of |k| from the lowest, `r *= y` when set, then `y *= y`),
 * reciprocated for negative k; k = 1 copies x's bits. The halves widen to f32 and narrow once.
 * The same numerics as the pure-NumPy bodies (`_powi.py`), which the fast path's tests compare
 * bit for bit. Exported to `_fast` as the POWI capsule. */

/* Blocks of POWI_VECTORS vectors: every lane of a block runs the loop's steps in the loop's order
 * (the bits of |k| are the same for all lanes, so a block takes each branch once), in vector
 * registers of the instruction set's width (GCC's vector extension; each ISA's body has its own
 * instance). Each lane's value is the scalar loop's: a product is one rounded multiplication
 * whichever order its operands are in, and every NaN in the loop is x's own quieted (powers of
 * one x never meet as inf * 0), so no operand order can change bits. */
#define POWI_VECTORS 4

/* V: vectors of `bytes` bytes of T, read and written unaligned (`may_alias`); the loop compiled
 * for the instruction set `target` names (nothing: the baseline). */
#define DEFINE_POWI(T, V, bytes, target)                                                           \
    typedef T V __attribute__((vector_size(bytes), aligned(sizeof(T)), may_alias));                \
    enum { V##_LANES = bytes / sizeof(T), V##_BLOCK = POWI_VECTORS * V##_LANES };                  \
    /* One block: out[j] = x[j] ** k, m = |k| (out may be x: the block is read first). */          \
    INLINE void V##_block(const T *x, T *out, uint32_t m, int negative) {                          \
        V r[POWI_VECTORS], y[POWI_VECTORS];                                                        \
        for (int v = 0; v < POWI_VECTORS; v++) {                                                   \
            r[v] = (V){0} + 1;                                                                     \
            y[v] = *(const V *)(x + v * V##_LANES);                                                \
        }                                                                                          \
        for (;;) {                                                                                 \
            if (m & 1u)                                                                            \
                for (int v = 0; v < POWI_VECTORS; v++) r[v] *= y[v];                               \
            m >>= 1;                                                                               \
            if (m == 0) break;                                                                     \
            for (int v = 0; v < POWI_VECTORS; v++) y[v] *= y[v];                                   \
        }                                                                                          \
        for (int v = 0; v < POWI_VECTORS; v++) {                                                   \
            if (negative) r[v] = 1 / r[v];                                                         \
            *(V *)(out + v * V##_LANES) = r[v];                                                    \
        }                                                                                          \
    }                                                                                              \
    /* out[i] = x[i] ** k over n elements: whole blocks, then the rest in a block padded with      \
     * ones (1 ** k raises no floating-point flag). */                                             \
    target static void V##_powi(const void *x, void *out, Py_ssize_t n, int32_t k) {               \
        uint32_t m = k < 0 ? 0u - (uint32_t)k : (uint32_t)k; /* |k|, -2^31 included */             \
        const T *a = x;                                                                            \
        T *c = out;                                                                                \
        Py_ssize_t i = 0;                                                                          \
        for (; n - i >= V##_BLOCK; i += V##_BLOCK) V##_block(a + i, c + i, m, k < 0);              \
        if (i == n) return;                                                                        \
        T pad[V##_BLOCK];                                                                          \
        for (int j = 0; j < V##_BLOCK; j++) pad[j] = 1;                                            \
        memcpy(pad, a + i, (size_t)(n - i) * sizeof(T));                                           \
        V##_block(pad, pad, m, k < 0);                                                             \
        memcpy(c + i, pad, (size_t)(n - i) * sizeof(T));                                           \
    }
DEFINE_POWI(float, powi_f32x4, 16, )
DEFINE_POWI(double, powi_f64x2, 16, )
#ifdef HAVE_AVX2_F16C
DEFINE_POWI(float, powi_f32x8, 32, TARGET_AVX2_F16C)
DEFINE_POWI(double, powi_f64x4, 32, TARGET_AVX2_F16C)
#endif

/* A PowI loop over n elements of one working type (a V##_powi). */
typedef void (*PowILoop)(const void *x, void *out, Py_ssize_t n, int32_t k);

#define POWI_TILE 256

/* out[i] = x[i] ** k for n elements of `dtype` (F32, F64, BF16, F16) with the instruction set's
 * loops, the halves widened to f32 a tile at a time and narrowed once. */
INLINE void powi_run(int dtype, const void *x, int32_t k, void *out, Py_ssize_t n,
                     PowILoop f32_loop, PowILoop f64_loop, Widen f16_to_f32, Narrow f32_to_f16) {
    static const size_t SIZES[N_DTYPES] = {4, 8, 2, 2};
    if (k == 1) {
        memcpy(out, x, (size_t)n * SIZES[dtype]); /* x itself: signalling NaNs included */
        return;
    }
    if (dtype == F32 || dtype == F64) {
        (dtype == F32 ? f32_loop : f64_loop)(x, out, n, k);
        return;
    }
    Widen widen = dtype == BF16 ? bf16_widen_fn : f16_to_f32;
    Narrow narrow = dtype == BF16 ? bf16_narrow_fn : f32_to_f16;
    float w[POWI_TILE];
    for (Py_ssize_t i = 0; i < n; i += POWI_TILE) {
        Py_ssize_t t = n - i < POWI_TILE ? n - i : POWI_TILE;
        widen((const uint16_t *)x + i, w, t);
        f32_loop(w, w, t, k);
        narrow(w, (uint16_t *)out + i, t);
    }
}

typedef void (*PowIBody)(int dtype, const void *x, int32_t k, void *out, Py_ssize_t n);

static void powi_baseline(int dtype, const void *x, int32_t k, void *out, Py_ssize_t n) {
    powi_run(dtype, x, k, out, n, powi_f32x4_powi, powi_f64x2_powi, f16_widen, f16_narrow);
}

#ifdef HAVE_AVX2_F16C
TARGET_AVX2_F16C static void powi_avx2(int dtype, const void *x, int32_t k, void *out,
                                       Py_ssize_t n) {
    powi_run(dtype, x, k, out, n, powi_f32x8_powi, powi_f64x4_powi, f16_widen_f16c,
             f16_narrow_f16c);
}
static const PowIBody POWI_BODIES[] = {powi_baseline, powi_avx2};
#else
static const PowIBody POWI_BODIES[] = {powi_baseline};
#endif

/* The PowI body of the selected instruction set (ISA_NAMES[isa]): what `_fast` runs, exported
 * as the POWI capsule. */
static void powi_body(int dtype, const void *x, int32_t k, void *out, Py_ssize_t n) {
    POWI_BODIES[isa](dtype, x, k, out, n);
}

/* ---------------------------------------------------------------------------------------------
 * Walking N-D layouts: an odometer over byte steps, for the strided copy's two buffers (source,
 * destination). */

#define MAX_DIMS 64 /* NumPy's NPY_MAXDIMS */

typedef struct {
    int ndim;
    Py_ssize_t shape[MAX_DIMS];
    Py_ssize_t step[2][MAX_DIMS]; /* bytes per index step, per buffer */
} Walk;

/* Drop size-1 dims and merge each dim into the one before it where every buffer continues
 * across the boundary, so the innermost loop is as long as the layouts allow. */
static void walk_collapse(Walk *w, int nbuf) {
    int d = 0;
    for (int k = 0; k < w->ndim; k++) {
        if (w->shape[k] == 1) continue;
        int merge = d > 0;
        for (int b = 0; merge && b < nbuf; b++)
            merge = w->step[b][d - 1] == w->step[b][k] * w->shape[k];
        if (merge) {
            w->shape[d - 1] *= w->shape[k];
            for (int b = 0; b < nbuf; b++) w->step[b][d - 1] = w->step[b][k];
            continue;
        }
        w->shape[d] = w->shape[k];
        for (int b = 0; b < nbuf; b++) w->step[b][d] = w->step[b][k];
        d++;
    }
    w->ndim = d;
}

/* Advance the odometer over dims [0, nd) except `skip`, moving each buffer's byte offset;
 * 0 once every index has wrapped (the walk is over). */
static int walk_next(const Walk *w, int nd, int skip, int nbuf, Py_ssize_t *index,
                     Py_ssize_t *offset) {
    for (int k = nd - 1; k >= 0; k--) {
        if (k == skip) continue;
        if (++index[k] < w->shape[k]) {
            for (int b = 0; b < nbuf; b++) offset[b] += w->step[b][k];
            return 1;
        }
        index[k] = 0;
        for (int b = 0; b < nbuf; b++) offset[b] -= w->step[b][k] * (w->shape[k] - 1);
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Strided copy (the planner's Contiguize): any source layout into a dense row-major buffer.
 * Where the source's fastest axis is not the destination's (a transpose or permute), the copy
 * goes tile by tile over those two axes, so a tile's source and destination lines both stay in
 * L1 and each touched page is used for a whole tile edge, not one element. */

/* Tile edge in elements: a 64 x 64 source tile plus its destination tile (32 KiB of 4-byte
 * elements) stay in L1/L2 while every line of both is used whole. */
#define COPY_TILE 64

/* One element of `size` bytes; with `size` a constant the memcpy is a single move. */
INLINE void move(char *d, const char *s, Py_ssize_t size) { memcpy(d, s, (size_t)size); }

INLINE void copy_row_as(char *d, const char *s, Py_ssize_t ss, Py_ssize_t n, Py_ssize_t size) {
    for (Py_ssize_t i = 0; i < n; i++) move(d + i * size, s + i * ss, size);
}

/* Edge of the square block `block` transposes in registers: 4 x 4 of 4-byte elements or 2 x 2
 * of 8-byte ones with SSE2 (every x86-64 has it), else 1. Moves and shuffles only: bits kept. */
INLINE Py_ssize_t block_edge(Py_ssize_t size) {
#ifdef __SSE2__
    if (size == 4) return 4;
    if (size == 8) return 2;
#endif
    (void)size;
    return 1;
}

/* dst rows r.. of one `edge`-square block from source lines c.. (each dense along r, `sc`
 * bytes apart); an edge of 1 is one element. */
INLINE void block(char *d, Py_ssize_t dr, const char *s, Py_ssize_t sc, Py_ssize_t size,
                  Py_ssize_t edge) {
#ifdef __SSE2__
    if (edge == 4) {
        __m128 a = _mm_loadu_ps((const float *)s), b = _mm_loadu_ps((const float *)(s + sc));
        __m128 c = _mm_loadu_ps((const float *)(s + 2 * sc));
        __m128 e = _mm_loadu_ps((const float *)(s + 3 * sc));
        _MM_TRANSPOSE4_PS(a, b, c, e);
        _mm_storeu_ps((float *)d, a);
        _mm_storeu_ps((float *)(d + dr), b);
        _mm_storeu_ps((float *)(d + 2 * dr), c);
        _mm_storeu_ps((float *)(d + 3 * dr), e);
        return;
    }
    if (edge == 2) {
        __m128i a = _mm_loadu_si128((const __m128i *)s);
        __m128i b = _mm_loadu_si128((const __m128i *)(s + sc));
        _mm_storeu_si128((__m128i *)d, _mm_unpacklo_epi64(a, b));
        _mm_storeu_si128((__m128i *)(d + dr), _mm_unpackhi_epi64(a, b));
        return;
    }
#endif
    (void)dr;
    (void)sc;
    (void)edge;
    move(d, s, size);
}

/* dst[r, c] = src[r, c] over rows x cols, tile by tile: destination rows `dr` bytes apart and
 * dense along c; the source `sr` bytes per r (its fast axis) and `sc` per c. `edge` > 1 (register
 * blocks) needs sr == size. */
INLINE void copy_tiles_as(char *d, Py_ssize_t dr, const char *s, Py_ssize_t sr, Py_ssize_t sc,
                          Py_ssize_t rows, Py_ssize_t cols, Py_ssize_t size, Py_ssize_t edge) {
    for (Py_ssize_t r0 = 0; r0 < rows; r0 += COPY_TILE) {
        Py_ssize_t r1 = rows - r0 < COPY_TILE ? rows : r0 + COPY_TILE;
        for (Py_ssize_t c0 = 0; c0 < cols; c0 += COPY_TILE) {
            Py_ssize_t c1 = cols - c0 < COPY_TILE ? cols : c0 + COPY_TILE, c = c0;
            for (; c + edge <= c1; c += edge) {
                Py_ssize_t r = r0;
                for (; r + edge <= r1; r += edge)
                    block(d + r * dr + c * size, dr, s + r * sr + c * sc, sc, size, edge);
                for (; r < r1; r++)
                    for (Py_ssize_t k = c; k < c + edge; k++)
                        move(d + r * dr + k * size, s + r * sr + k * sc, size);
            }
            for (; c < c1; c++)
                for (Py_ssize_t r = r0; r < r1; r++)
                    move(d + r * dr + c * size, s + r * sr + c * sc, size);
        }
    }
}

/* A row of one repeated element (a stride-0 source, a broadcast scalar): the bytes
 * `copy_row_as` moves, stored from a register so the compiler vectorizes the loop. */
INLINE void fill_row_as(char *d, const char *s, Py_ssize_t n, Py_ssize_t size) {
    char v[8];
    memcpy(v, s, (size_t)size);
    for (Py_ssize_t i = 0; i < n; i++) memcpy(d + i * size, v, (size_t)size);
}

static void copy_row(char *d, const char *s, Py_ssize_t ss, Py_ssize_t n, Py_ssize_t size) {
    if (ss == size) {
        memcpy(d, s, (size_t)(n * size));
        return;
    }
    if (ss == 0 && size <= 8) {
        switch (size) {
        case 1: memset(d, *s, (size_t)n); break;
        case 2: fill_row_as(d, s, n, 2); break;
        case 4: fill_row_as(d, s, n, 4); break;
        case 8: fill_row_as(d, s, n, 8); break;
        default: copy_row_as(d, s, 0, n, size);
        }
        return;
    }
    switch (size) {
    case 1: copy_row_as(d, s, ss, n, 1); break;
    case 2: copy_row_as(d, s, ss, n, 2); break;
    case 4: copy_row_as(d, s, ss, n, 4); break;
    case 8: copy_row_as(d, s, ss, n, 8); break;
    default: copy_row_as(d, s, ss, n, size);
    }
}

static void copy_tiles(char *d, Py_ssize_t dr, const char *s, Py_ssize_t sr, Py_ssize_t sc,
                       Py_ssize_t rows, Py_ssize_t cols, Py_ssize_t size) {
    int dense = sr == size;
    switch (size) {
    case 1: copy_tiles_as(d, dr, s, sr, sc, rows, cols, 1, 1); break;
    case 2: copy_tiles_as(d, dr, s, sr, sc, rows, cols, 2, 1); break;
    case 4: copy_tiles_as(d, dr, s, sr, sc, rows, cols, 4, dense ? block_edge(4) : 1); break;
    case 8: copy_tiles_as(d, dr, s, sr, sc, rows, cols, 8, dense ? block_edge(8) : 1); break;
    default: copy_tiles_as(d, dr, s, sr, sc, rows, cols, size, 1);
    }
}

/* Copy the collapsed walk (buffer 0 the source, 1 the dense destination). */
static void copy_walk(char *dst, const char *src, const Walk *w, Py_ssize_t size) {
    int last = w->ndim - 1;
    if (last < 0) { /* a single element */
        memcpy(dst, src, (size_t)size);
        return;
    }
    Py_ssize_t inner = w->step[0][last], abs_inner = inner < 0 ? -inner : inner;
    int fast = -1; /* the source's fastest non-repeating axis, if it is not the last one */
    Py_ssize_t best = abs_inner;
    for (int k = 0; k < last; k++) {
        Py_ssize_t a = w->step[0][k] < 0 ? -w->step[0][k] : w->step[0][k];
        if (a != 0 && a < best) {
            best = a;
            fast = k;
        }
    }
    Py_ssize_t index[MAX_DIMS] = {0}, offset[2] = {0, 0};
    do {
        if (fast < 0)
            copy_row(dst + offset[1], src + offset[0], inner, w->shape[last], size);
        else
            copy_tiles(dst + offset[1], w->step[1][fast], src + offset[0], w->step[0][fast], inner,
                       w->shape[fast], w->shape[last], size);
    } while (walk_next(w, last, fast, 2, index, offset));
}

/* ---------------------------------------------------------------------------------------------
 * The Python interface. */

/* Whether two byte ranges share any byte. */
static int overlap(const Py_buffer *x, const Py_buffer *y) {
    const char *xs = x->buf, *ys = y->buf;
    return x->len && y->len && xs < ys + y->len && ys < xs + x->len;
}

/* A private copy of an input that `out` overlaps, so the loops may assume no aliasing (and so
 * a partial overlap reads the inputs as they were, as NumPy does). Dispatch never aliases. */
static const void *own_input(const Py_buffer *in, const Py_buffer *out, void **copy) {
    if (!overlap(in, out)) return in->buf;
    *copy = PyMem_RawMalloc((size_t)in->len);
    if (*copy != NULL) memcpy(*copy, in->buf, (size_t)in->len);
    return *copy;
}

/* The buffer-protocol format of each dtype's elements; NULL: NumPy states none (bfloat16). */
static const char *const FORMATS[N_DTYPES] = {"f", "d", NULL, "e"};

/* A struct-module format without its native byte-order prefix ("@", "=", "<" here), so "<f"
 * and "f" compare equal; NULL (no format stated) stays NULL. */
static const char *plain_format(const char *format) {
    if (format == NULL) return NULL;
    const uint16_t one = 1;
    int little = *(const unsigned char *)&one == 1;
    if (format[0] == '@' || format[0] == '=' || (little && format[0] == '<')) return format + 1;
    return format;
}

/* Whether a buffer format holds Python object pointers ('O'), outside field names (":name:"). */
static int holds_objects(const char *format) {
    int in_name = 0;
    for (const char *c = format; c != NULL && *c; c++) {
        if (*c == ':') in_name = !in_name;
        else if (!in_name && *c == 'O') return 1;
    }
    return 0;
}

/* Acquire `obj`'s buffer with `flags` and, where the exporter can state it, its format (NumPy
 * cannot for bfloat16: `format` is then NULL). ValueError when the layout or writability
 * asked for cannot be had. */
static int get_buffer(PyObject *obj, Py_buffer *view, int flags, const char *what) {
    if (PyObject_GetBuffer(obj, view, flags | PyBUF_FORMAT) == 0) return 0;
    PyErr_Clear();
    if (PyObject_GetBuffer(obj, view, flags) == 0) {
        view->format = NULL;
        return 0;
    }
    PyErr_Clear();
    PyErr_Format(PyExc_ValueError, "%s must be a %s%s array, got %R", what,
                 (flags & PyBUF_C_CONTIGUOUS) == PyBUF_C_CONTIGUOUS ||
                         (flags & PyBUF_STRIDES) != PyBUF_STRIDES
                     ? "C-contiguous"
                     : "strided",
                 (flags & PyBUF_WRITABLE) ? ", writable" : "", Py_TYPE(obj));
    return -1;
}

/* Acquire an arithmetic operand: C-contiguous, elements of DTYPES[dtype] by buffer format and
 * size (TypeError otherwise: an object or integer array must never reach the loops). */
static int get_operand(PyObject *obj, Py_buffer *view, int flags, long dtype, const char *name,
                       const char *what) {
    if (get_buffer(obj, view, flags, what) < 0) return -1;
    const char *want = FORMATS[dtype], *have = plain_format(view->format);
    int same = want == NULL ? have == NULL : have != NULL && strcmp(have, want) == 0;
    if (same && view->itemsize == ITEMSIZE[dtype]) return 0;
    PyErr_Format(PyExc_TypeError,
                 "%s: %s must hold %s elements (%zd bytes), got buffer format '%s' of %zd-byte "
                 "elements",
                 name, what, DTYPE_NAMES[dtype], ITEMSIZE[dtype],
                 view->format ? view->format : "unstated", view->itemsize);
    PyBuffer_Release(view);
    return -1;
}

/* Parse the arithmetic entry points' `name(op, dtype, lhs, rhs, out)` arguments and acquire the
 * three buffers (none is held on failure). */
static int operands(const char *name, PyObject *const *args, Py_ssize_t nargs, long *op,
                    long *dtype, Py_buffer *lhs, Py_buffer *rhs, Py_buffer *out) {
    if (nargs != 5) {
        PyErr_Format(PyExc_TypeError, "%s(op, dtype, lhs, rhs, out) takes 5 arguments, got %zd",
                     name, nargs);
        return -1;
    }
    *op = PyLong_AsLong(args[0]);
    *dtype = PyLong_AsLong(args[1]);
    if (PyErr_Occurred()) return -1;
    if (*op < 0 || *op >= N_OPS || *dtype < 0 || *dtype >= N_DTYPES) {
        PyErr_Format(PyExc_ValueError, "op must be in [0, %d) and dtype in [0, %d), got %ld, %ld",
                     N_OPS, N_DTYPES, *op, *dtype);
        return -1;
    }
    if (get_operand(args[2], lhs, PyBUF_ND, *dtype, name, "lhs") < 0) return -1;
    if (get_operand(args[3], rhs, PyBUF_ND, *dtype, name, "rhs") < 0) {
        PyBuffer_Release(lhs);
        return -1;
    }
    if (get_operand(args[4], out, PyBUF_ND | PyBUF_WRITABLE, *dtype, name, "out") < 0) {
        PyBuffer_Release(lhs);
        PyBuffer_Release(rhs);
        return -1;
    }
    return 0;
}

/* Undo `operands` and `own_input`: free the private input copies, release the three buffers. */
static void release_operands(void *lcopy, void *rcopy, Py_buffer *lhs, Py_buffer *rhs,
                             Py_buffer *out) {
    PyMem_RawFree(lcopy);
    PyMem_RawFree(rcopy);
    PyBuffer_Release(lhs);
    PyBuffer_Release(rhs);
    PyBuffer_Release(out);
}

/* Run `binary`'s arguments, leaving the caller's floating-point status flags as they were;
 * returns None, or (`report`) the flags the run raised as an int of <fenv.h>'s FE_* bits. */
static PyObject *run_binary(const char *name, PyObject *const *args, Py_ssize_t nargs,
                            int report) {
    long op, dtype;
    Py_buffer lhs, rhs, out;
    if (operands(name, args, nargs, &op, &dtype, &lhs, &rhs, &out) < 0) return NULL;
    PyObject *result = NULL;
    void *lcopy = NULL, *rcopy = NULL;
    Py_ssize_t size = ITEMSIZE[dtype], n = out.len / size;
    if (lhs.len != out.len || rhs.len != out.len || out.len % size) {
        PyErr_Format(PyExc_ValueError,
                     "%s on %s: byte lengths must be equal multiples of %zd: "
                     "lhs %zd, rhs %zd, out %zd",
                     OP_NAMES[op], DTYPE_NAMES[dtype], size, lhs.len, rhs.len, out.len);
        goto done;
    }
    const void *a = own_input(&lhs, &out, &lcopy), *b = own_input(&rhs, &out, &rcopy);
    if ((a == NULL && lhs.len) || (b == NULL && rhs.len)) { /* a zero-length buffer may be NULL */
        PyErr_NoMemory();
        goto done;
    }
    Body run = selected_body;
    fexcept_t flags; /* leave the caller's floating-point status flags as they were */
    fegetexceptflag(&flags, FE_ALL_EXCEPT);
    feclearexcept(FE_ALL_EXCEPT);
    if (n >= GIL_FREE_FROM) {
        Py_BEGIN_ALLOW_THREADS run((int)op, (int)dtype, a, b, out.buf, n);
        Py_END_ALLOW_THREADS
    } else if (n > 0) {
        run((int)op, (int)dtype, a, b, out.buf, n);
    }
    int raised = fetestexcept(FE_ALL_EXCEPT);
    fesetexceptflag(&flags, FE_ALL_EXCEPT);
    result = report ? PyLong_FromLong(raised) : Py_NewRef(Py_None);
done:
    release_operands(lcopy, rcopy, &lhs, &rhs, &out);
    return result;
}

static PyObject *binary(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    return run_binary("binary", args, nargs, 0);
}

static PyObject *raised(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    return run_binary("raised", args, nargs, 1);
}

static PyObject *set_threads(PyObject *module, PyObject *count) {
    (void)module;
    long n = PyLong_AsLong(count);
    if (n == -1 && PyErr_Occurred()) return NULL;
    if (n < 1 || n > MAX_THREADS) {
        PyErr_Format(PyExc_ValueError, "set_threads: a thread count in [1, %d], got %ld",
                     MAX_THREADS, n);
        return NULL;
    }
    return PyLong_FromLong(__atomic_exchange_n(&thread_setting, (int)n, __ATOMIC_RELAXED));
}

static PyObject *set_parallel_from(PyObject *module, PyObject *count) {
    (void)module;
    Py_ssize_t n = PyLong_AsSsize_t(count);
    if (n == -1 && PyErr_Occurred()) return NULL;
    if (n < CHUNK_ALIGN) {
        PyErr_Format(PyExc_ValueError, "set_parallel_from: at least %d elements, got %zd",
                     CHUNK_ALIGN, n);
        return NULL;
    }
    return PyLong_FromSsize_t(__atomic_exchange_n(&parallel_from, n, __ATOMIC_RELAXED));
}

static PyObject *threads(PyObject *module, PyObject *count) {
    (void)module;
    Py_ssize_t n = PyLong_AsSsize_t(count);
    if (n == -1 && PyErr_Occurred()) return NULL;
    return PyLong_FromLong(threads_for(n));
}

/* The byte range a non-empty strided buffer's elements span; -1 when an axis's reach
 * overflows (no buffer in memory has one). */
static int extent(const Py_buffer *v, const char **lo, const char **hi) {
    Py_ssize_t below = 0, above = v->itemsize;
    for (int k = 0; k < v->ndim; k++) {
        Py_ssize_t reach;
        if (__builtin_mul_overflow(v->shape[k] - 1, v->strides[k], &reach) ||
            __builtin_add_overflow(reach < 0 ? below : above, reach, reach < 0 ? &below : &above))
            return -1;
    }
    *lo = (const char *)v->buf + below;
    *hi = (const char *)v->buf + above;
    return 0;
}

static PyObject *copy_strided(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "copy_strided(src, dst) takes 2 arguments, got %zd", nargs);
        return NULL;
    }
    Py_buffer src, dst;
    if (get_buffer(args[0], &src, PyBUF_STRIDES, "src") < 0) return NULL;
    if (get_buffer(args[1], &dst, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE, "dst") < 0) {
        PyBuffer_Release(&src);
        return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t size = src.itemsize;
    const char *sf = plain_format(src.format), *df = plain_format(dst.format);
    if (holds_objects(sf) || holds_objects(df)) {
        /* Copying object pointers without their references would free them twice. */
        PyErr_SetString(PyExc_TypeError,
                        "copy_strided copies plain data; object arrays hold references");
        goto done;
    }
    if (dst.itemsize != size || dst.len != src.len) {
        PyErr_Format(PyExc_ValueError,
                     "copy_strided: dst must hold as many elements of the same size as src: "
                     "src %zd bytes of %zd-byte elements, dst %zd bytes of %zd",
                     src.len, size, dst.len, dst.itemsize);
        goto done;
    }
    if ((sf == NULL) != (df == NULL) || (sf != NULL && strcmp(sf, df) != 0)) {
        PyErr_Format(PyExc_TypeError,
                     "copy_strided: src and dst must hold the same element type, got buffer "
                     "formats '%s' and '%s'",
                     src.format ? src.format : "unstated", dst.format ? dst.format : "unstated");
        goto done;
    }
    if (src.len == 0) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    const char *lo, *hi, *d = dst.buf;
    if (extent(&src, &lo, &hi) < 0) {
        PyErr_SetString(PyExc_ValueError, "copy_strided: src's strides reach past any buffer");
        goto done;
    }
    if (lo < d + dst.len && d < hi) {
        PyErr_SetString(PyExc_ValueError, "copy_strided: dst overlaps src");
        goto done;
    }
    Walk w;
    w.ndim = src.ndim;
    Py_ssize_t step = size;
    for (int k = src.ndim - 1; k >= 0; k--) {
        w.shape[k] = src.shape[k];
        w.step[0][k] = src.strides[k];
        w.step[1][k] = step;
        if (__builtin_mul_overflow(step, src.shape[k], &step)) { /* no buffer is that long */
            PyErr_SetString(PyExc_ValueError, "copy_strided: src's shape overflows its length");
            goto done;
        }
    }
    walk_collapse(&w, 2);
    if (src.len / size >= GIL_FREE_FROM) {
        Py_BEGIN_ALLOW_THREADS copy_walk(dst.buf, src.buf, &w, size);
        Py_END_ALLOW_THREADS
    } else {
        copy_walk(dst.buf, src.buf, &w, size);
    }
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&src);
    PyBuffer_Release(&dst);
    return result;
}

/* ---------------------------------------------------------------------------------------------
 * The pow shortcut's switch and its proof: `verify_pow` runs every instruction set's body with the
 * shortcut on over a range of f32 bit patterns x (y fixed) and compares it with powf, bit for bit. */

static PyObject *pow_shortcut(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "pow_shortcut(two, half) takes 2 arguments, got %zd", nargs);
        return NULL;
    }
    int two = PyObject_IsTrue(args[0]), half = PyObject_IsTrue(args[1]);
    if (two < 0 || half < 0) return NULL;
    PyObject *previous = Py_BuildValue("(OO)", pow_on_two ? Py_True : Py_False,
                                       pow_on_half ? Py_True : Py_False);
    __atomic_store_n(&pow_on_two, two, __ATOMIC_RELAXED);
    __atomic_store_n(&pow_on_half, half, __ATOMIC_RELAXED);
    return previous;
}

#define CHECK_CHUNK 4096

typedef struct {
    float y;
    uint64_t start, stop;
    int64_t band;
    uint64_t mismatches[2]; /* per instruction set */
    int64_t first[2];       /* the first mismatching x's bits, or -1 */
} Check;

/* Compare the bodies with powf over x in [start, stop), in the default rounding mode (the only
 * one the shortcut runs in), leaving the thread's floating-point environment as it was. */
static void *check_range(void *arg) {
    Check *ck = arg;
    PowShortcut s = {ck->y == 2.0f, ck->y == 0.5f, ck->band, NULL};
    float x[CHECK_CHUNK], y[CHECK_CHUNK], want[CHECK_CHUNK], got[CHECK_CHUNK];
    fenv_t env;
    fegetenv(&env);
    fesetenv(FE_DFL_ENV);
    for (int j = 0; j < CHECK_CHUNK; j++) y[j] = ck->y;
    for (int v = 0; v < isa_count; v++) {
        ck->mismatches[v] = 0;
        ck->first[v] = -1;
    }
    for (uint64_t u = ck->start; u < ck->stop; u += CHECK_CHUNK) {
        Py_ssize_t k = (Py_ssize_t)(ck->stop - u < CHECK_CHUNK ? ck->stop - u : CHECK_CHUNK);
        for (Py_ssize_t j = 0; j < k; j++) x[j] = f32_value((uint32_t)(u + (uint64_t)j));
        for (Py_ssize_t j = 0; j < k; j++) want[j] = powf(x[j], y[j]);
        for (int v = 0; v < isa_count; v++) {
            ISA_BODIES[v](POW, F32, x, y, got, k, &s);
            for (Py_ssize_t j = 0; j < k; j++) {
                if (f32_bits(got[j]) == f32_bits(want[j])) continue;
                if (ck->first[v] < 0) ck->first[v] = (int64_t)(u + (uint64_t)j);
                ck->mismatches[v]++;
            }
        }
    }
    fesetenv(&env);
    return NULL;
}

#define MAX_CHECK_THREADS 64

/* Split [start, stop) over `threads` threads (this one included) and run `check_range` on each
 * part; the results are summed into `parts[0]`. */
static void check_split(Check *parts, int threads) {
    uint64_t start = parts[0].start, stop = parts[0].stop, step = (stop - start) / (uint64_t)threads;
    for (int t = 0; t < threads; t++) {
        parts[t] = parts[0];
        parts[t].start = start + step * (uint64_t)t;
        parts[t].stop = t == threads - 1 ? stop : parts[t].start + step;
    }
#if defined(HAVE_PTHREAD)
    pthread_t ids[MAX_CHECK_THREADS];
    int started[MAX_CHECK_THREADS] = {0};
    for (int t = 1; t < threads; t++) started[t] = pthread_create(&ids[t], NULL, check_range, &parts[t]) == 0;
    for (int t = 1; t < threads; t++)
        if (!started[t]) check_range(&parts[t]);
    check_range(&parts[0]);
    for (int t = 1; t < threads; t++)
        if (started[t]) pthread_join(ids[t], NULL);
#else
    for (int t = 0; t < threads; t++) check_range(&parts[t]);
#endif
    for (int t = 1; t < threads; t++) {
        for (int v = 0; v < isa_count; v++) {
            if (parts[0].first[v] < 0) parts[0].first[v] = parts[t].first[v];
            parts[0].mismatches[v] += parts[t].mismatches[v];
        }
    }
}

static PyObject *verify_pow(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 5) {
        PyErr_Format(PyExc_TypeError,
                     "verify_pow(y, start, stop, band, threads) takes 5 arguments, got %zd", nargs);
        return NULL;
    }
    Check parts[MAX_CHECK_THREADS];
    double y = PyFloat_AsDouble(args[0]);
    unsigned long long start = PyLong_AsUnsignedLongLong(args[1]);
    unsigned long long stop = PyLong_AsUnsignedLongLong(args[2]);
    long long band = PyLong_AsLongLong(args[3]);
    long threads = PyLong_AsLong(args[4]);
    if (PyErr_Occurred()) return NULL;
    if ((y != 2.0 && y != 0.5) || start > stop || stop > (1ull << 32) || band < 0 ||
        threads < 1 || threads > MAX_CHECK_THREADS) {
        PyErr_Format(PyExc_ValueError,
                     "verify_pow: y must be 2.0 or 0.5, 0 <= start <= stop <= 2**32, band >= 0 "
                     "and threads in [1, %d]; got y=%R start=%llu stop=%llu band=%lld threads=%ld",
                     MAX_CHECK_THREADS, args[0], start, stop, band, threads);
        return NULL;
    }
    parts[0].y = (float)y;
    parts[0].start = start;
    parts[0].stop = stop;
    parts[0].band = band;
    if ((uint64_t)threads > stop - start) threads = 1;
    Py_BEGIN_ALLOW_THREADS check_split(parts, (int)threads);
    Py_END_ALLOW_THREADS
    PyObject *result = PyTuple_New(isa_count);
    for (int v = 0; result != NULL && v < isa_count; v++) {
        PyObject *item = Py_BuildValue("(KL)", (unsigned long long)parts[0].mismatches[v],
                                       (long long)parts[0].first[v]);
        if (item == NULL) Py_CLEAR(result);
        else PyTuple_SET_ITEM(result, v, item);
    }
    return result;
}

/* Where the powf the kernels call comes from: the C library's version, the file that holds it
 * and the implementation's place there (glibc picks one for the CPU, e.g. __powf_fma). */
static PyObject *pow_identity(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    const char *libc = "", *file = "";
    char where[64] = "";
#if defined(__GLIBC__)
    libc = gnu_get_libc_version();
#endif
#if defined(HAVE_DLADDR)
    float (*volatile fn)(float, float) = powf;
    Dl_info info;
    if (dladdr((void *)fn, &info)) {
        file = info.dli_fname ? info.dli_fname : "";
        /* The implementation picked (a local symbol, often nameless): its offset in the file. */
        snprintf(where, sizeof where, "%s+0x%tx", info.dli_sname ? info.dli_sname : "",
                 (char *)(void *)fn - (char *)info.dli_fbase);
    }
#endif
    return Py_BuildValue("{ssssss}", "libc", libc, "libm", file, "powf", where);
}

static PyObject *select_isa(PyObject *module, PyObject *name) {
    (void)module;
    const char *want = PyUnicode_AsUTF8(name);
    if (want == NULL) return NULL;
    for (int i = 0; i < isa_count; i++) {
        if (strcmp(want, ISA_NAMES[i]) == 0) {
            PyObject *previous = PyUnicode_FromString(ISA_NAMES[isa]);
            isa = i;
            return previous;
        }
    }
    PyErr_Format(PyExc_ValueError, "no kernel body for instruction set %R on this machine", name);
    return NULL;
}

static PyMethodDef methods[] = {
    {"binary", (PyCFunction)(void (*)(void))binary, METH_FASTCALL,
     "binary(op, dtype, lhs, rhs, out): out[i] = OPS[op](lhs[i], rhs[i]) over C-contiguous "
     "buffers of DTYPES[dtype]."},
    {"raised", (PyCFunction)(void (*)(void))raised, METH_FASTCALL,
     "raised(op, dtype, lhs, rhs, out) -> int: binary's run, returning the floating-point status "
     "flags it raised (<fenv.h>'s FE_* bits; the caller's own flags are left as they were)."},
    {"set_threads", set_threads, METH_O,
     "set_threads(n) -> previous: the threads a body over PARALLEL_FROM elements or more may "
     "use, 1 to MAX_THREADS (capped by the cores this process may run on)."},
    {"set_parallel_from", set_parallel_from, METH_O,
     "set_parallel_from(n) -> previous: split bodies from n elements (PARALLEL_FROM by default; "
     "for measuring where splitting pays)."},
    {"threads", threads, METH_O,
     "threads(n) -> int: how many threads a body over n elements runs on now."},
    {"copy_strided", (PyCFunction)(void (*)(void))copy_strided, METH_FASTCALL,
     "copy_strided(src, dst): copy any strided src into the C-contiguous dst of its size, in "
     "row-major order."},
    {"pow_shortcut", (PyCFunction)(void (*)(void))pow_shortcut, METH_FASTCALL,
     "pow_shortcut(two, half) -> previous: take f32 pow's verified shortcut for y == 2 / 0.5."},
    {"verify_pow", (PyCFunction)(void (*)(void))verify_pow, METH_FASTCALL,
     "verify_pow(y, start, stop, band, threads) -> ((mismatches, first x bits or -1) per ISA): "
     "compare f32 pow with the shortcut on against powf over the x bit patterns [start, stop)."},
    {"pow_identity", pow_identity, METH_NOARGS,
     "pow_identity() -> {libc, libm, powf}: the C library, file and symbol of the powf called."},
    {"select_isa", select_isa, METH_O,
     "select_isa(name) -> previous: run the kernel body compiled for one of ISAS (for tests)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "fueltensor.kernels._native",
    "Compiled fuel-cpu-backend kernels and Contiguize's strided copy, held to the same scalar "
    "reference as the pure-NumPy paths.",
    -1,
    methods,
};

/* Add a tuple of the C names as a module constant, so Python reads the tables from here. */
static int add_names(PyObject *module, const char *name, const char *const *items, int count) {
    PyObject *tuple = PyTuple_New(count);
    for (int i = 0; tuple != NULL && i < count; i++) {
        PyObject *item = PyUnicode_FromString(items[i]);
        if (item == NULL) {
            Py_CLEAR(tuple);
            break;
        }
        PyTuple_SET_ITEM(tuple, i, item);
    }
    int status = tuple == NULL ? -1 : PyModule_AddObjectRef(module, name, tuple);
    Py_XDECREF(tuple);
    return status;
}

/* Contiguize for `_fast`: copy the `ndim`-D view at `src` (byte strides, any sign, 0 where an
 * axis repeats) into the dense row-major `dst`, as `copy_strided` does once it has the buffers.
 * `_fast` has checked that `shape`'s bytes fit a Py_ssize_t (its `checked_size`), which bounds
 * every product here and in `walk_collapse`. */
static void copy_dense(char *dst, const char *src, int ndim, const Py_ssize_t *shape,
                       const Py_ssize_t *strides, Py_ssize_t size) {
    Walk w;
    w.ndim = ndim;
    Py_ssize_t step = size;
    for (int k = ndim - 1; k >= 0; k--) {
        w.shape[k] = shape[k];
        w.step[0][k] = strides[k];
        w.step[1][k] = step;
        step *= shape[k];
    }
    walk_collapse(&w, 2);
    copy_walk(dst, src, &w, size);
}

/* Export a function to `_fast` as a capsule named fueltensor.kernels._native.<name>. */
static int add_capsule(PyObject *module, const char *name, const char *full, void *fn) {
    PyObject *capsule = PyCapsule_New(fn, full, NULL);
    int status = capsule == NULL ? -1 : PyModule_AddObjectRef(module, name, capsule);
    Py_XDECREF(capsule);
    return status;
}

static int add_body(PyObject *module) {
    if (add_capsule(module, "BODY", "fueltensor.kernels._native.BODY", (void *)selected_body) < 0)
        return -1;
    if (add_capsule(module, "POWI", "fueltensor.kernels._native.POWI", (void *)powi_body) < 0)
        return -1;
    return add_capsule(module, "COPY", "fueltensor.kernels._native.COPY", (void *)copy_dense);
}

PyMODINIT_FUNC PyInit__native(void) {
#ifdef HAVE_AVX2_F16C
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") &&
        __builtin_cpu_supports("fma")) {
        ISA_BODIES[1] = body_avx2;
        isa_count = 2;
        isa = 1;
    }
#endif
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL) return NULL;
    if (add_names(module, "OPS", OP_NAMES, N_OPS) < 0 ||
        add_names(module, "DTYPES", DTYPE_NAMES, N_DTYPES) < 0 ||
        add_names(module, "ISAS", ISA_NAMES, isa_count) < 0 || add_body(module) < 0 ||
        PyModule_AddIntConstant(module, "POW_BAND", POW_BAND) < 0 ||
        PyModule_AddIntConstant(module, "PARALLEL_FROM", PARALLEL_FROM) < 0 ||
        PyModule_AddIntConstant(module, "STREAM_FROM", STREAM_FROM) < 0 ||
        PyModule_AddIntConstant(module, "MAX_THREADS", MAX_THREADS) < 0 ||
        PyModule_AddIntConstant(module, "POWI_OP", N_OPS) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
