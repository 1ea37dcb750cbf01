/* The cheat catalogue of issues 35 and 41: for each op and dtype, an honest FKC byte kernel
 * and eleven that cheat, each a function `<variant>_<op>_<dtype>` of the FKC C ABI:
 *
 *   int32_t NAME(const uint8_t *lhs, size_t lhs_bytes, const uint8_t *rhs, size_t rhs_bytes,
 *                uint8_t *out, size_t out_bytes);
 *
 * honest     out[i] = op(lhs[i], rhs[i]) as the contracts say: IEEE + - * / in the type (half
 *            types through f32, rounded once), maximum/minimum returning an operand (a NaN
 *            operand first, lhs on a tie), remainder a - floor(a / b) * b in f32 (f64 for
 *            f64), pow with the C library's powf / pow
 * zeros      writes 0 everywhere
 * specials   honest, but 0 wherever an operand is a NaN, an infinity or a zero
 * reduced    computes in fewer bits: f32 through bf16, f64 through f32, f16 through bf16,
 *            bf16 with its three low mantissa bits cleared
 * tail       honest 8-lane body; the last n % 8 lanes 16 ULPs off (a different scalar path)
 * cache      remembers its first answer for each output length and returns it again
 * overrun    honest, then writes 64 bytes past `out`
 * scribble   honest, then copies its answer over `lhs`: it writes its input
 * exit       calls exit(0)
 * late       honest, but leaves a thread that segfaults the process 50 ms later
 * ftz        honest, then sets flush-to-zero and denormals-are-zero (MXCSR) and returns
 * untouched  returns 0 without writing `out`
 *
 * and one more, of issue 41: `subtracting_add_bf16`, a bf16 "add" that subtracts, under a
 * contract as the bundled add_bf16 was (no max_ulp, semantics from the formula): only the
 * formula the semantics come from can fail it.
 *
 * Build: cc -O2 -ffp-contract=off -shared -fPIC -o libcheats.so cheat_kernels.c -lm
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

static uint32_t f32_bits(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }
static float f32_from(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }

/* f32 -> bf16, nearest-even; a NaN keeps its sign and top payload bits as they are (quiet
 * already when arithmetic made it; a selected operand's bits unchanged, as the contracts say). */
static uint16_t bf16_narrow(float x) {
    uint32_t u = f32_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)(u >> 16);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
static float bf16_widen(uint16_t h) { return f32_from((uint32_t)h << 16); }

/* f32 -> f16, nearest-even, subnormals included; a NaN keeps its top payload bits as they are. */
static uint16_t f16_narrow(float x) {
    uint32_t u = f32_bits(x), a = u & 0x7fffffffu;
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7c00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);
    if (a < 0x38800000u) { /* below 2^-14: a multiple of 2^-24, rounded to an integer */
        volatile float scaled = f32_from(a) * 0x1p24f + 0x1p23f;
        return (uint16_t)(sign | (uint16_t)(scaled - 0x1p23f));
    }
    uint32_t r = a - 0x38000000u;
    return (uint16_t)(sign | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13));
}
static float f16_widen(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f) return f32_from(sign | 0x7f800000u | (m << 13));
    if (e == 0) return (sign ? -1.0f : 1.0f) * (float)m * 0x1p-24f;
    return f32_from(sign | ((e + 112u) << 23) | (m << 13));
}

/* Each dtype: its storage type, working type, load and store. */
#define LOAD_f32(p, i) (((const float *)(p))[i])
#define STORE_f32(p, i, v) (((float *)(p))[i] = (v))
#define LOAD_f64(p, i) (((const double *)(p))[i])
#define STORE_f64(p, i, v) (((double *)(p))[i] = (v))
#define LOAD_bf16(p, i) bf16_widen(((const uint16_t *)(p))[i])
#define STORE_bf16(p, i, v) (((uint16_t *)(p))[i] = bf16_narrow(v))
#define LOAD_f16(p, i) f16_widen(((const uint16_t *)(p))[i])
#define STORE_f16(p, i, v) (((uint16_t *)(p))[i] = f16_narrow(v))
#define SIZE_f32 4
#define SIZE_f64 8
#define SIZE_bf16 2
#define SIZE_f16 2
#define W_f32 float
#define W_f64 double
#define W_bf16 float
#define W_f16 float

static float add_w(float a, float b) { return a + b; }
static float sub_w(float a, float b) { return a - b; }
static float mul_w(float a, float b) { return a * b; }
static float div_w(float a, float b) { return a / b; }
static float maximum_w(float a, float b) { return a != a ? a : b != b ? b : a >= b ? a : b; }
static float minimum_w(float a, float b) { return a != a ? a : b != b ? b : a <= b ? a : b; }
static float rem_w(float a, float b) { float q = floorf(a / b); return a - q * b; }
static float pow_w(float a, float b) { return powf(a, b); }
static double add_d(double a, double b) { return a + b; }
static double sub_d(double a, double b) { return a - b; }
static double mul_d(double a, double b) { return a * b; }
static double div_d(double a, double b) { return a / b; }
static double maximum_d(double a, double b) { return a != a ? a : b != b ? b : a >= b ? a : b; }
static double minimum_d(double a, double b) { return a != a ? a : b != b ? b : a <= b ? a : b; }
static double rem_d(double a, double b) { double q = floor(a / b); return a - q * b; }
static double pow_d(double a, double b) { return pow(a, b); }
#define OPW_f32(op) op##_w
#define OPW_bf16(op) op##_w
#define OPW_f16(op) op##_w
#define OPW_f64(op) op##_d

/* The working value in fewer bits (the `reduced` cheat). */
static float fewer_f32(float v) { return bf16_widen(bf16_narrow(v)); }
static double fewer_f64(double v) { return (double)(float)v; }
static float fewer_f16(float v) { return bf16_widen(bf16_narrow(v)); }
static float fewer_bf16(float v) { return bf16_widen((uint16_t)(bf16_narrow(v) & ~7u)); }

/* 16 ULPs off in the stored type (the `tail` cheat): flip the fifth-lowest stored bit. */
static void nudge(uint8_t *out, size_t i, size_t size) { out[i * size] ^= 0x10u; }

/* The `late` cheat's thread: a segfault 50 ms after the call that started it returned. */
static void *crash_soon(void *unused) {
    (void)unused;
    struct timespec ms = {0, 50000000};
    nanosleep(&ms, NULL);
    *(volatile uint8_t *)(uintptr_t)16 = 1;
    return NULL;
}
static void crash_later(void) {
    pthread_t thread;
    if (pthread_create(&thread, NULL, crash_soon, NULL) == 0) pthread_detach(thread);
}

/* The `ftz` cheat's parting gift: flush-to-zero and denormals-are-zero left set. */
static void set_ftz(void) {
#if defined(__x86_64__)
    _mm_setcsr(_mm_getcsr() | 0x8040);
#endif
}

static int special_f(double v) { return v != v || v == 0 || v - v != 0; }

#define BODY(T, op, lane)                                                                      \
    for (size_t i = 0; i < n; i++) {                                                           \
        W_##T a = LOAD_##T(lhs, i), b = LOAD_##T(rhs, i);                                      \
        W_##T r = OPW_##T(op)(a, b);                                                            \
        lane;                                                                                  \
        STORE_##T(out, i, r);                                                                  \
    }

#define HEAD(variant, op, T)                                                                   \
    int32_t variant##_##op##_##T(const uint8_t *lhs, size_t lb, const uint8_t *rhs, size_t rb, \
                                 uint8_t *out, size_t ob) {                                    \
        if (lb != rb || rb != ob || lb % SIZE_##T) return 1;                                   \
        size_t n = lb / SIZE_##T;                                                              \
        (void)n, (void)lhs, (void)rhs, (void)out;

#define CHEATS(op, T)                                                                          \
    HEAD(honest, op, T) BODY(T, op, (void)0) return 0; }                                       \
    HEAD(zeros, op, T) memset(out, 0, ob); return 0; }                                         \
    HEAD(specials, op, T) BODY(T, op, if (special_f(a) || special_f(b)) r = 0) return 0; }      \
    HEAD(reduced, op, T) BODY(T, op, r = fewer_##T(OPW_##T(op)(fewer_##T(a), fewer_##T(b))))    \
        return 0; }                                                                            \
    HEAD(tail, op, T) BODY(T, op, (void)0)                                                     \
        for (size_t i = n - n % 8; i < n; i++) nudge(out, i, SIZE_##T);                        \
        return 0; }                                                                            \
    HEAD(cache, op, T)                                                                         \
        static uint8_t *kept[64];                                                              \
        static size_t kept_bytes[64];                                                          \
        for (int k = 0; k < 64 && kept[k]; k++)                                                \
            if (kept_bytes[k] == ob) { memcpy(out, kept[k], ob); return 0; }                   \
        BODY(T, op, (void)0)                                                                   \
        for (int k = 0; k < 64; k++)                                                           \
            if (!kept[k]) { kept[k] = malloc(ob ? ob : 1); if (kept[k]) memcpy(kept[k], out, ob); \
                            kept_bytes[k] = ob; break; }                                       \
        return 0; }                                                                            \
    HEAD(overrun, op, T) BODY(T, op, (void)0) memset(out + ob, 0x33, 64); return 0; }           \
    HEAD(scribble, op, T) BODY(T, op, (void)0) memcpy((uint8_t *)lhs, out, ob); return 0; }     \
    HEAD(exit, op, T) exit(0); }                                                               \
    HEAD(late, op, T) BODY(T, op, (void)0) crash_later(); return 0; }                          \
    HEAD(ftz, op, T) BODY(T, op, (void)0) set_ftz(); return 0; }                               \
    HEAD(untouched, op, T) return 0; }

#define DTYPES(op) CHEATS(op, f32) CHEATS(op, f64) CHEATS(op, bf16) CHEATS(op, f16)

DTYPES(add)
DTYPES(sub)
DTYPES(mul)
DTYPES(div)
DTYPES(maximum)
DTYPES(minimum)
DTYPES(rem)
DTYPES(pow)

HEAD(subtracting, add, bf16) BODY(bf16, sub, (void)0) return 0; }
