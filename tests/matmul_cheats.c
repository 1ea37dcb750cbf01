/* The matmul cheat catalogue's compiled kernels (docs/matmul.md, The judge; issue 46, item 3): a
 * bf16 matrix product by AVX-512 BF16 dot products, VDPBF16PS (`_mm512_dpbf16_ps`), and a scalar
 * emulation of the same instruction for CPUs without AVX512_BF16. Both:
 *
 *   int32_t NAME(const uint16_t *a, const uint16_t *b, uint16_t *out,
 *                int64_t m, int64_t k, int64_t n);
 *
 * a (m, k), b (k, n) and out (m, n) dense row-major bf16. Per output, acc = -0.0f, then for each
 * pair of K (2t, 2t + 1), as the Intel SDM has VDPBF16PS:
 *
 *   acc += a[2t+1] * b[2t+1];  acc += a[2t] * b[2t];
 *
 * each product exact, each add rounded to nearest even, denormal inputs read as zeros (DAZ) and
 * denormal results flushed to zeros (FTZ), MXCSR ignored. An odd K's last pair is padded with
 * a = -0, b = +0: its product -0 leaves every acc as it is; K = 0 gives +0. out = acc rounded
 * to bf16 (nearest even; acc is never subnormal). The kernel is honest under `pairs: odd_first` with
 * `subnormals: flushed`, and a cheat under `subnormals: kept`.
 *
 * Build: cc -O2 -ffp-contract=off -shared -fPIC -o libmatmul_cheats.so matmul_cheats.c
 * (the instruction's function carries its own target attribute: the rest stays baseline x86-64).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

static float f32_from(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }
static uint32_t f32_bits(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }

/* f32 -> bf16, nearest even; a NaN keeps its sign and top payload bits (quiet already). */
static uint16_t bf16_narrow(float x) {
    uint32_t u = f32_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* bf16 -> f32 with denormals read as zeros of their sign (DAZ). */
static float bf16_daz(uint16_t h) {
    if ((h & 0x7f80u) == 0) h &= 0x8000u;
    return f32_from((uint32_t)h << 16);
}

/* acc + x * y as VDPBF16PS adds one product: x * y exact in double, the sum rounded to odd in
 * double (TwoSum's error decides the last bit), then to 24 bits with an unbounded exponent;
 * a result below 2^-126 after that rounding is flushed to a zero of its sign (x86's tininess is
 * detected after rounding; the instruction test holds this to the hardware's bits). */
static float vdp_step(float acc, float x, float y) {
    double p = (double)x * (double)y, w = (double)acc;
    double s = w + p;
    if (!isfinite(s)) return (float)s;
    double back = s - w, err = (w - (s - back)) + (p - back);
    uint64_t bits;
    memcpy(&bits, &s, 8);
    if (err != 0 && (bits & 1u) == 0) s = nextafter(s, err > 0 ? INFINITY : -INFINITY);
    if (fabs(s) < 0x1p-100) {
        double unbounded = (double)(float)(s * 0x1p100) * 0x1p-100;
        if (fabs(unbounded) < 0x1p-126) return copysignf(0.0f, (float)s);
        return (float)unbounded;
    }
    return (float)s;
}

int32_t vdp_matmul_bf16_emulated(const uint16_t *a, const uint16_t *b, uint16_t *out,
                                 int64_t m, int64_t k, int64_t n) {
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < n; j++) {
            float acc = k ? -0.0f : 0.0f; /* K = 0 gives +0, as the empty sum does */
            for (int64_t t = 0; t < k; t += 2) {
                if (t + 1 < k) acc = vdp_step(acc, bf16_daz(a[i * k + t + 1]),
                                              bf16_daz(b[(t + 1) * n + j]));
                else acc = vdp_step(acc, -0.0f, 0.0f);
                acc = vdp_step(acc, bf16_daz(a[i * k + t]), bf16_daz(b[t * n + j]));
            }
            out[i * n + j] = bf16_narrow(acc);
        }
    }
    return 0;
}

#if defined(__x86_64__)
/* The same product by the instruction: b packed into pairs of K (dword t, j holds b[2t, j] low
 * and b[2t+1, j] high), 16 columns a register, a's pair broadcast to every lane. */
__attribute__((target("avx512f,avx512bf16"))) int32_t vdp_matmul_bf16(
    const uint16_t *a, const uint16_t *b, uint16_t *out, int64_t m, int64_t k, int64_t n) {
    int64_t pairs = (k + 1) / 2, width = (n + 15) / 16 * 16;
    uint32_t *packed = calloc((size_t)(pairs * width + 1), sizeof(uint32_t));
    if (packed == NULL) return 1;
    for (int64_t t = 0; t < pairs; t++) {
        for (int64_t j = 0; j < n; j++) {
            uint32_t high = 2 * t + 1 < k ? b[(2 * t + 1) * n + j] : 0u;
            packed[t * width + j] = b[2 * t * n + j] | high << 16;
        }
    }
    float lanes[16];
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j0 = 0; j0 < width; j0 += 16) {
            __m512 acc = _mm512_set1_ps(k ? -0.0f : 0.0f);
            for (int64_t t = 0; t < pairs; t++) {
                uint32_t high = 2 * t + 1 < k ? a[i * k + 2 * t + 1] : 0x8000u;
                __m512i x = _mm512_set1_epi32((int32_t)(a[i * k + 2 * t] | high << 16));
                __m512i y = _mm512_loadu_si512(packed + t * width + j0);
                acc = _mm512_dpbf16_ps(acc, (__m512bh)x, (__m512bh)y);
            }
            _mm512_storeu_ps(lanes, acc);
            for (int64_t j = j0; j < n && j < j0 + 16; j++) out[i * n + j] = bf16_narrow(lanes[j - j0]);
        }
    }
    free(packed);
    return 0;
}
#endif
