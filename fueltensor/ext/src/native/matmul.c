/* ---------------------------------------------------------------------------------------------
 * Matmul (issue 46; docs/matmul.md, "Kernels"): abi.h's `ShapedKernel` `matmul_kernel`,
 * exported as the MATMUL capsule and, for tests and benchmarks, as `_native.contract`
 * (matmul_call.c); its run is matmul_run.c. out (..., M, N) = a (..., M, K) @ b (..., K, N)
 * for a, b and out of one dtype, BF16 or F16 (products exact in float32) or F32 (products fused), any strides (the stacks
 * already broadcast by the caller, stride 0 where one repeats), accumulated in float32:
 *
 *     acc = -0; for l = 0 .. K-1 in order: acc = fl32(acc + a[i,l] * b[l,j]); out = fl_out(acc)
 *
 * each product entering its sum unrounded (one fused multiply-add: for BF16 and F16 the product
 * is exact in float32 anyway, save where a BF16 product over- or underflows float32's range, and
 * there it is still added unrounded); -0 is the identity of the sum, so the first step gives the
 * first product's bits. K = 0 gives +0 (the empty sum). The output is rounded once.
 *
 * How: per stack entry, the operands are packed into float32 panels (exact: every BF16 and F16
 * is a float32): A in panels of MR rows, B in panels of NR columns, each K-major, padded with
 * zeros to whole panels (the padded lanes are computed and never stored). A register-blocked
 * micro-kernel of MR x NR outputs keeps each output's running sum in one lane of one register
 * and runs over a panel of MM_KT values of K in order; the sums are kept in a float32 tile between
 * K panels and loaded, not restarted, by the next one. So each output is one lane taking its K
 * products in order: the bits do not depend on MR, NR, KC, the instruction set (every body uses
 * one fused multiply-add per product: FMA instructions, the C library's fmaf on the baseline),
 * or the thread count: threads split the packing by panels and the outputs by MB x NB tiles,
 * never K. The floating-point environment is the caller's (the pool passes it to workers).
 *
 * The op code: the contraction family's one op, M_MATMUL (ops.h, generated from
 * fueltensor/ops.py's CONTRACTION_OPS). Parameters: accumulator (PARAM_CODE, F32), order
 * (PARAM_CODE, ORDER_SEQUENTIAL) and products (PARAM_CODE, PRODUCTS_EXACT or PRODUCTS_FUSED for
 * BF16 and F16, PRODUCTS_FUSED for F32), or ORDER_PAIRS_ODD_FIRST with PRODUCTS_EXACT for BF16
 * (VDPBF16PS's order: matmul_pairs.c): anything else is refused. */

/* K values the packing widens a row of at a time (its line buffers). */
#define MM_KC 192
/* K values a micro-kernel call runs over before its sums go back to the tile: all of a K up to
 * 512 in one call (no sums reloaded), its B micro-panel (512 x 32 floats, 64 KiB) streamed from
 * L2 with the A micro-panel rather than kept in L1 (48 KiB on Sapphire Rapids) over panels of
 * 192: the tiles of a 512^3 product measured 1.5% faster (median of 300 interleaved runs). */
#define MM_KT 512
/* Most floats of a thread's tile of running sums (MB x NB), on its stack. */
#define MM_TILE_FLOATS (128 * 128)

/* A micro-kernel: the MR x NR sums at C (rows ldc floats apart) over kc steps of the packed
 * A (kc x MR, K-major) and B (kc x NR), each sum starting at -0 (`first`) or at C's value. */
typedef void (*MmKernel)(Py_ssize_t kc, const float *A, const float *B, float *C,
                         Py_ssize_t ldc, int first);

/* An instruction set's micro-kernel and its tile: MR x NR a call, MB x NB a thread's unit. */
typedef struct {
    MmKernel kernel;
    int mr, nr, mb, nb;
} MmBody;

typedef void (*MmConvert)(const uint16_t *src, float *dst, Py_ssize_t n);
typedef void (*MmNarrow)(const float *src, uint16_t *dst, Py_ssize_t n);
/* Spread `width` dense rows of kc floats across the lanes of a K-major panel of w lanes:
 * dst[l * w + r] = rows[r][l] (a transpose; NULL: the scalar loop of `mm_pack`). */
typedef void (*MmSpread)(float (*rows)[MM_KC], Py_ssize_t width, Py_ssize_t kc, int w,
                         float *dst);

/* Pack k steps of `width` lines into a K-major panel of w lanes, lanes past `width` zero: lane
 * r of step l is the element at p + r * (the dense stride: the itemsize) + l * `stride` (lanes
 * dense, `mm_panel_lanes_*`) or at p + r * `stride` + l * itemsize (steps dense,
 * `mm_panel_steps_*`, w <= 16). */
typedef void (*MmPanel)(int dtype, const char *p, Py_ssize_t stride, Py_ssize_t k,
                        Py_ssize_t width, int w, float *dst);

/* One call: shapes, strides (bytes) and the packed panels of the current stack entry. */
typedef struct {
    int dtype;
    MmBody body;
    MmConvert widen; /* the body's conversions of dense halves (`mm_converts`) */
    MmNarrow narrow;
    MmSpread spread;
    MmPanel panel_lanes, panel_steps; /* NULL: `mm_pack`'s general loops */
    Py_ssize_t m, n, k, batch, itemsize;
    Py_ssize_t sam, sak, sbk, sbn, som, son; /* a's, b's and out's row and column strides */
    const char *a, *b;                       /* the current stack entry's first elements */
    char *out;
    Py_ssize_t apanels, bpanels, tiles_m, tiles_n;
    int mixed; /* the packing's units interleave A's panels and B's (`mm_pack_part`) */
    float *pa, *pb; /* apanels x K x MR, bpanels x K x NR */
    int pairs;      /* ORDER_PAIRS_ODD_FIRST (matmul_pairs.c) */
    int paired;     /* its panels paired for VDPBF16PS after packing (`mm_pair_panel`) */
} Mm;

/* The scalar body: fmaf, the C library's correctly rounded fused multiply-add. */
#define MM_MR_BASE 4
#define MM_NR_BASE 8
static void mm_kernel_baseline(Py_ssize_t kc, const float *A, const float *B, float *C,
                               Py_ssize_t ldc, int first) {
    float acc[MM_MR_BASE][MM_NR_BASE];
    for (int r = 0; r < MM_MR_BASE; r++)
        for (int c = 0; c < MM_NR_BASE; c++) acc[r][c] = first ? -0.0f : C[r * ldc + c];
    for (Py_ssize_t l = 0; l < kc; l++, A += MM_MR_BASE, B += MM_NR_BASE)
        for (int r = 0; r < MM_MR_BASE; r++)
            for (int c = 0; c < MM_NR_BASE; c++) acc[r][c] = fmaf(A[r], B[c], acc[r][c]);
    for (int r = 0; r < MM_MR_BASE; r++)
        for (int c = 0; c < MM_NR_BASE; c++) C[r * ldc + c] = acc[r][c];
}

#if defined(HAVE_AVX2_F16C)
/* AVX2: 6 x 16 sums in 12 registers, a B row in 2, one broadcast of A. */
#define MM_MR_AVX2 6
TARGET_AVX2_F16C static void mm_kernel_avx2(Py_ssize_t kc, const float *A, const float *B,
                                            float *C, Py_ssize_t ldc, int first) {
    __m256 acc[MM_MR_AVX2][2];
#pragma GCC unroll 6
    for (int r = 0; r < MM_MR_AVX2; r++) {
        acc[r][0] = first ? _mm256_set1_ps(-0.0f) : _mm256_loadu_ps(C + r * ldc);
        acc[r][1] = first ? _mm256_set1_ps(-0.0f) : _mm256_loadu_ps(C + r * ldc + 8);
    }
    for (Py_ssize_t l = 0; l < kc; l++, A += MM_MR_AVX2, B += 16) {
        __m256 b0 = _mm256_loadu_ps(B), b1 = _mm256_loadu_ps(B + 8);
#pragma GCC unroll 6
        for (int r = 0; r < MM_MR_AVX2; r++) {
            __m256 x = _mm256_broadcast_ss(A + r);
            acc[r][0] = _mm256_fmadd_ps(x, b0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(x, b1, acc[r][1]);
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < MM_MR_AVX2; r++) {
        _mm256_storeu_ps(C + r * ldc, acc[r][0]);
        _mm256_storeu_ps(C + r * ldc + 8, acc[r][1]);
    }
}
#endif

#if defined(HAVE_AVX512)
/* AVX-512: 14 x 32 sums in 28 registers, a B row in 2, one broadcast of A. */
#define MM_MR_AVX512 14

/* acc += A's 14 values (broadcast) times B's row of 32: one step l of every sum. */
TARGET_AVX512 INLINE void mm_step_avx512(__m512 acc[MM_MR_AVX512][2], const float *A,
                                         const float *B) {
    __m512 b0 = _mm512_loadu_ps(B), b1 = _mm512_loadu_ps(B + 16);
#pragma GCC unroll 14
    for (int r = 0; r < MM_MR_AVX512; r++) {
        __m512 x = _mm512_set1_ps(A[r]);
        acc[r][0] = _mm512_fmadd_ps(x, b0, acc[r][0]);
        acc[r][1] = _mm512_fmadd_ps(x, b1, acc[r][1]);
    }
}

/* The AVX-512 tile in K order, or (`pairs`, matmul_pairs.c's order) steps l + 1 then l of each
 * pair, an odd K's last step alone; `pairs` is a constant at both callers, so each is its own
 * loop. */
TARGET_AVX512 INLINE void mm_tile_avx512(Py_ssize_t kc, const float *A, const float *B, float *C,
                                         Py_ssize_t ldc, int first, int pairs) {
    __m512 acc[MM_MR_AVX512][2];
#pragma GCC unroll 14
    for (int r = 0; r < MM_MR_AVX512; r++) {
        acc[r][0] = first ? _mm512_set1_ps(-0.0f) : _mm512_loadu_ps(C + r * ldc);
        acc[r][1] = first ? _mm512_set1_ps(-0.0f) : _mm512_loadu_ps(C + r * ldc + 16);
    }
    if (pairs) {
        for (Py_ssize_t l = 0; l < kc; l += 2, A += 2 * MM_MR_AVX512, B += 64) {
            if (l + 1 < kc) mm_step_avx512(acc, A + MM_MR_AVX512, B + 32);
            mm_step_avx512(acc, A, B);
        }
    } else {
        for (Py_ssize_t l = 0; l < kc; l++, A += MM_MR_AVX512, B += 32)
            mm_step_avx512(acc, A, B);
    }
#pragma GCC unroll 14
    for (int r = 0; r < MM_MR_AVX512; r++) {
        _mm512_storeu_ps(C + r * ldc, acc[r][0]);
        _mm512_storeu_ps(C + r * ldc + 16, acc[r][1]);
    }
}

TARGET_AVX512 static void mm_kernel_avx512(Py_ssize_t kc, const float *A, const float *B,
                                           float *C, Py_ssize_t ldc, int first) {
    mm_tile_avx512(kc, A, B, C, ldc, first, 0);
}
#endif

/* n dense halves widened (exactly; F16C quiets a signalling NaN, which the first fused
 * multiply-add would quiet anyway, payload kept) or narrowed (the output's one rounding) by an
 * instruction set: each body's conversions give the bits of the portable ones in halves.c. */

static void mm_bf16_widen(const uint16_t *src, float *dst, Py_ssize_t n) {
    bf16_widen(src, dst, n);
}

static void mm_bf16_narrow(const float *src, uint16_t *dst, Py_ssize_t n) {
    bf16_narrow(src, dst, n);
}

#if defined(HAVE_AVX512)
TARGET_AVX512 static void mm_bf16_widen_avx512(const uint16_t *src, float *dst, Py_ssize_t n) {
    Py_ssize_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512i h = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(src + i)));
        _mm512_storeu_si512((void *)(dst + i), _mm512_slli_epi32(h, 16));
    }
    bf16_widen(src + i, dst + i, n - i);
}

/* bf16_narrow sixteen lanes a step: a NaN keeps its sign and top payload, quieted. */
TARGET_AVX512 static void mm_bf16_narrow_avx512(const float *src, uint16_t *dst, Py_ssize_t n) {
    Py_ssize_t i = 0;
    const __m512i one = _mm512_set1_epi32(1), round = _mm512_set1_epi32(0x7FFF);
    const __m512i abs = _mm512_set1_epi32(0x7FFFFFFF), inf = _mm512_set1_epi32(0x7F800000);
    for (; i + 16 <= n; i += 16) {
        __m512i x = _mm512_loadu_si512((const void *)(src + i));
        __m512i odd = _mm512_and_si512(_mm512_srli_epi32(x, 16), one);
        __m512i rne = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(x, round), odd), 16);
        __m512i nan = _mm512_or_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(0x0040));
        __mmask16 isnan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(x, abs), inf);
        __m512i h = _mm512_mask_blend_epi32(isnan, rne, nan);
        _mm256_storeu_si256((__m256i *)(dst + i), _mm512_cvtepi32_epi16(h));
    }
    bf16_narrow(src + i, dst + i, n - i);
}

/* Transpose 16 rows of 16 floats in registers: r[j] becomes column j. */
TARGET_AVX512 INLINE void mm_transpose16(__m512 r[16]) {
    __m512 t[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) {
        __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 2]);
        __m512d c = _mm512_castps_pd(t[4 * i + 1]), d = _mm512_castps_pd(t[4 * i + 3]);
        r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
        r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
        r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(c, d));
        r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(c, d));
    }
    for (int j = 0; j < 4; j++) {
        t[j] = _mm512_shuffle_f32x4(r[j], r[4 + j], 0x88);
        t[4 + j] = _mm512_shuffle_f32x4(r[j], r[4 + j], 0xdd);
        t[8 + j] = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0x88);
        t[12 + j] = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0xdd);
    }
    for (int j = 0; j < 4; j++) {
        r[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
        r[8 + j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0xdd);
        r[4 + j] = _mm512_shuffle_f32x4(t[4 + j], t[12 + j], 0x88);
        r[12 + j] = _mm512_shuffle_f32x4(t[4 + j], t[12 + j], 0xdd);
    }
}

/* `MmSpread` in 16 x 16 blocks through registers (rows past `width` and steps past kc are
 * neither read nor written: masked). */
TARGET_AVX512 static void mm_spread_avx512(float (*rows)[MM_KC], Py_ssize_t width,
                                           Py_ssize_t kc, int w, float *dst) {
    for (Py_ssize_t r0 = 0; r0 < width; r0 += 16) {
        int nr = width - r0 < 16 ? (int)(width - r0) : 16;
        __mmask16 lanes = (__mmask16)((1u << nr) - 1u);
        for (Py_ssize_t l0 = 0; l0 < kc; l0 += 16) {
            int nl = kc - l0 < 16 ? (int)(kc - l0) : 16;
            __mmask16 steps = (__mmask16)((1u << nl) - 1u);
            __m512 v[16];
            for (int r = 0; r < 16; r++)
                v[r] = r < nr ? _mm512_maskz_loadu_ps(steps, rows[r0 + r] + l0)
                              : _mm512_setzero_ps();
            mm_transpose16(v);
            for (int l = 0; l < nl; l++) _mm512_mask_storeu_ps(dst + (l0 + l) * w + r0, lanes, v[l]);
        }
    }
}
#endif

/* Sixteen elements of `dtype` at p (dense) as floats, those of lanes outside `lanes` zero and
 * never read: the exact widening of the conversions above (vcvtph2ps, the shift of BF16). */
TARGET_AVX512 INLINE __m512 mm_load16(int dtype, const char *p, __mmask16 lanes) {
    if (dtype == F32) return _mm512_maskz_loadu_ps(lanes, p);
    __m256i h = _mm256_maskz_loadu_epi16(lanes, p);
    if (dtype == F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* `MmPanel` whose lanes are dense (B row-major): each step's `width` elements widened in
 * vectors of 16, lanes past `width` stored as zeros (the panel's padding). */
TARGET_AVX512 static void mm_panel_lanes_avx512(int dtype, const char *p, Py_ssize_t step,
                                                Py_ssize_t k, Py_ssize_t width, int w,
                                                float *dst) {
    Py_ssize_t size = ITEMSIZE[dtype];
    for (Py_ssize_t l = 0; l < k; l++) {
        const char *row = p + l * step; /* formed for steps in the operand only */
        for (int j = 0; j < w; j += 16) {
            Py_ssize_t left = width - j;
            __mmask16 lanes = left >= 16 ? (__mmask16)0xFFFF
                              : left > 0 ? (__mmask16)((1u << left) - 1u) : (__mmask16)0;
            int store = w - j < 16 ? w - j : 16;
            /* lanes past `width` only: no pointer formed past the line */
            __m512 v = left > 0 ? mm_load16(dtype, row + j * size, lanes) : _mm512_setzero_ps();
            _mm512_mask_storeu_ps(dst + l * w + j, (__mmask16)((1u << store) - 1u), v);
        }
    }
}

/* `MmPanel` whose steps are dense (A row-major): 16 x 16 blocks of `width` (<= 16) lines
 * widened straight into registers, transposed and stored across the panel's w (<= 16) lanes,
 * lines past `width` as zeros (the padding). */
TARGET_AVX512 static void mm_panel_steps_avx512(int dtype, const char *p, Py_ssize_t line,
                                                Py_ssize_t k, Py_ssize_t width, int w,
                                                float *dst) {
    Py_ssize_t size = ITEMSIZE[dtype];
    __mmask16 lanes = (__mmask16)((1u << w) - 1u);
    for (Py_ssize_t l0 = 0; l0 < k; l0 += 16) {
        int nl = k - l0 < 16 ? (int)(k - l0) : 16;
        __mmask16 steps = (__mmask16)((1u << nl) - 1u);
        __m512 v[16];
        for (int r = 0; r < 16; r++)
            v[r] = r < width ? mm_load16(dtype, p + r * line + l0 * size, steps)
                             : _mm512_setzero_ps();
        mm_transpose16(v);
        for (int l = 0; l < nl; l++) _mm512_mask_storeu_ps(dst + (l0 + l) * w, lanes, v[l]);
    }
}
