/* A compiled fueltensor provider in C: four byte kernels behind the FKC byte-kernel C ABI
 * (docs/interfaces.md), described by the FKC document beside this file (c-kernels.md).
 *
 *   int32_t NAME(const uint8_t *lhs, size_t lhs_bytes, const uint8_t *rhs, size_t rhs_bytes,
 *                uint8_t *out, size_t out_bytes);
 *
 * Each kernel is one of the seeds' thunks: it checks the three byte lengths (equal, a whole
 * number of elements) and returns a nonzero status when they are not, else writes
 * out[i] = op(lhs[i], rhs[i]) and returns 0. BF16 widens to f32, computes, and rounds to
 * nearest-even once on store, as the Rust `half` crate does. A NaN result is the lhs NaN if
 * lhs is one, else the rhs NaN, quieted (written out, not left to the operand order a compiler
 * picks); a NaN made from two numbers (inf - inf, 0 / 0) is the hardware's.
 *
 * Build:  cc -O2 -shared -fPIC -o libc_kernels.so kernels.c
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum { FKC_OK = 0, FKC_BAD_LENGTHS = 1 };

/* The seeds' byte-length check: lhs, rhs and out hold the same whole number of elements. */
static int lengths_ok(size_t lhs, size_t rhs, size_t out, size_t size) {
    return lhs == rhs && rhs == out && lhs % size == 0;
}

static uint32_t f32_bits(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }
static float f32_from(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }
static uint64_t f64_bits(double x) { uint64_t u; memcpy(&u, &x, 8); return u; }
static double f64_from(uint64_t u) { double x; memcpy(&x, &u, 8); return x; }

/* r, unless an operand is a NaN: then the lhs NaN first, else the rhs NaN, quieted. */
static float f32_nan_first(float r, float a, float b) {
    if (a != a) return f32_from(f32_bits(a) | 0x00400000u);
    if (b != b) return f32_from(f32_bits(b) | 0x00400000u);
    return r;
}

static double f64_nan_first(double r, double a, double b) {
    if (a != a) return f64_from(f64_bits(a) | 0x0008000000000000u);
    if (b != b) return f64_from(f64_bits(b) | 0x0008000000000000u);
    return r;
}

/* bf16 -> f32 is exact: the bf16 bits are the top half of the f32's. */
static float bf16_widen(uint16_t h) { return f32_from((uint32_t)h << 16); }

/* f32 -> bf16, rounding to nearest-even; a NaN keeps its sign and top payload bits, quieted. */
static uint16_t bf16_narrow(float x) {
    uint32_t u = f32_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u);
    uint32_t round = 0x8000u; /* the highest bit dropped */
    uint32_t up = (u & round) && (u & (3 * round - 1)); /* above the half, or a tie to odd */
    return (uint16_t)((u >> 16) + up);
}

#define F32_KERNEL(NAME, EXPR)                                                                 \
    int32_t NAME(const uint8_t *lhs, size_t lhs_bytes, const uint8_t *rhs, size_t rhs_bytes,  \
                 uint8_t *out, size_t out_bytes) {                                             \
        if (!lengths_ok(lhs_bytes, rhs_bytes, out_bytes, 4)) return FKC_BAD_LENGTHS;          \
        for (size_t i = 0; i < out_bytes; i += 4) {                                           \
            float a, b, r;                                                                     \
            memcpy(&a, lhs + i, 4);                                                            \
            memcpy(&b, rhs + i, 4);                                                            \
            r = f32_nan_first(EXPR, a, b);                                                     \
            memcpy(out + i, &r, 4);                                                            \
        }                                                                                      \
        return FKC_OK;                                                                         \
    }

#define F64_KERNEL(NAME, EXPR)                                                                 \
    int32_t NAME(const uint8_t *lhs, size_t lhs_bytes, const uint8_t *rhs, size_t rhs_bytes,  \
                 uint8_t *out, size_t out_bytes) {                                             \
        if (!lengths_ok(lhs_bytes, rhs_bytes, out_bytes, 8)) return FKC_BAD_LENGTHS;          \
        for (size_t i = 0; i < out_bytes; i += 8) {                                           \
            double a, b, r;                                                                    \
            memcpy(&a, lhs + i, 8);                                                            \
            memcpy(&b, rhs + i, 8);                                                            \
            r = f64_nan_first(EXPR, a, b);                                                     \
            memcpy(out + i, &r, 8);                                                            \
        }                                                                                      \
        return FKC_OK;                                                                         \
    }

#define BF16_KERNEL(NAME, EXPR)                                                                \
    int32_t NAME(const uint8_t *lhs, size_t lhs_bytes, const uint8_t *rhs, size_t rhs_bytes,  \
                 uint8_t *out, size_t out_bytes) {                                             \
        if (!lengths_ok(lhs_bytes, rhs_bytes, out_bytes, 2)) return FKC_BAD_LENGTHS;          \
        for (size_t i = 0; i < out_bytes; i += 2) {                                           \
            uint16_t x, y, r;                                                                  \
            memcpy(&x, lhs + i, 2);                                                            \
            memcpy(&y, rhs + i, 2);                                                            \
            float a = bf16_widen(x), b = bf16_widen(y);                                        \
            r = bf16_narrow(f32_nan_first(EXPR, a, b));                                        \
            memcpy(out + i, &r, 2);                                                            \
        }                                                                                      \
        return FKC_OK;                                                                         \
    }

F32_KERNEL(c_add_f32, a + b)
F64_KERNEL(c_mul_f64, a * b)
BF16_KERNEL(c_sub_bf16, a - b)
BF16_KERNEL(c_div_bf16, a / b)
