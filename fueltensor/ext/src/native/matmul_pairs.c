/* ---------------------------------------------------------------------------------------------
 * The matmul kernel's BF16 pairs order (abi.h's ORDER_PAIRS_ODD_FIRST; docs/matmul.md,
 * `pairs: odd_first`, `subnormals: flushed`): what AVX-512 BF16's VDPBF16PS computes, per
 * output, acc = -0, then for each pair of K (2t, 2t + 1):
 *
 *     acc = ftz(rn(acc + daz(a[2t+1]) * daz(b[2t+1])));  acc = ftz(rn(acc + daz(a[2t]) * daz(b[2t])))
 *
 * each product exact, each add rounded to nearest even with an unbounded exponent, a sum below
 * 2^-126 after that rounding flushed to a zero of its sign (x86 detects tininess after
 * rounding), a subnormal operand read as a zero of its sign, MXCSR ignored; an odd K's last
 * pair padded with a = -0, b = +0, whose product -0 leaves every acc as it is (+0 + -0 = +0,
 * -0 + -0 = -0, a NaN or an infinity stays, acc is never subnormal), so the emulation skips it.
 *
 * Three bodies, one set of bits: on AVX-512, FMAs with MXCSR set to FTZ and DAZ for the call
 * (`mm_kernel_pairs_avx512`, the default), or the instruction (`mm_kernel_dpbf16`, where the
 * CPU reports AVX512_BF16 and `_native.pairs_instruction(True)` asked for it), its panels the
 * float32 panels of matmul.c paired in place (`mm_pair_panel`: each 32-bit lane holds the bf16
 * of steps 2t (low) and 2t + 1 (high)); elsewhere a scalar emulation over the float32 panels
 * (`mm_kernel_pairs`: fmaf, whose result is the rounded sum save where it lands at or below
 * 2^-126, and there the step is redone exactly as tests/matmul_cheats.c's `vdp_step` does).
 * Which of the AVX-512 bodies runs is a question of speed alone, and its answer depends on the
 * CPU: on a Sapphire Rapids class VM VDPBF16PS did half the FMA body's multiply-adds a second
 * (one instruction per 0.72 ns against 0.18 ns per FMA), on an AMD Zen 4 VM twice as many (the
 * 512^3 product at 1.9x the FMA body's speed). So the first call that could take either times
 * both on one tile (`mm_dpbf16_faster`) and keeps the faster for the process;
 * `_native.pairs_instruction` forces one for tests and benchmarks. MM_KT is even, so a K panel
 * never splits a pair; threads split outputs, never K. */

/* Whether this CPU runs VDPBF16PS (set at init), and whether the kernel uses it: MM_CHOOSE
 * until the first call that could measures (`mm_dpbf16_faster`), or as forced. */
enum { MM_CHOOSE = -1 };
static int mm_dpbf16_cpu = 0, mm_dpbf16_on = MM_CHOOSE;

SHARED void mm_pairs_init(void) {
#if defined(HAVE_AVX512_BF16)
    __builtin_cpu_init();
    mm_dpbf16_cpu = __builtin_cpu_supports("avx512bf16");
#endif
}

/* A float as a zero of its sign where it is subnormal (DAZ). */
static inline float mm_daz(float x) {
    return fabsf(x) < 0x1p-126f ? copysignf(0.0f, x) : x;
}

/* acc + x * y rounded to 24 bits with an unbounded exponent, flushed below 2^-126: the product
 * exact in double, the sum rounded to odd in double (its TwoSum error decides the last bit),
 * then to float32 scaled away from the subnormals. */
static float mm_pair_step_exact(float acc, float x, float y) {
    double p = (double)x * (double)y, w = (double)acc, s = w + p;
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

/* One step of the order: fmaf is the correctly rounded sum wherever it lands above 2^-126 (a
 * sum at or below it may differ from the unbounded rounding, or need flushing: redone). */
static inline float mm_pair_step(float acc, float x, float y) {
    x = mm_daz(x);
    y = mm_daz(y);
    float r = fmaf(x, y, acc);
    return fabsf(r) <= 0x1p-126f ? mm_pair_step_exact(acc, x, y) : r;
}

/* The emulation's micro-kernel (`MmKernel`, the baseline's tile): each sum takes steps l + 1
 * then l for l = 0, 2, ... of its kc, the odd step absent past an odd kc (the padding). */
static void mm_kernel_pairs(Py_ssize_t kc, const float *A, const float *B, float *C,
                            Py_ssize_t ldc, int first) {
    float acc[MM_MR_BASE][MM_NR_BASE];
    for (int r = 0; r < MM_MR_BASE; r++)
        for (int c = 0; c < MM_NR_BASE; c++) acc[r][c] = first ? -0.0f : C[r * ldc + c];
    for (Py_ssize_t l = 0; l < kc; l += 2) {
        const float *a0 = A + l * MM_MR_BASE, *b0 = B + l * MM_NR_BASE;
        for (int r = 0; r < MM_MR_BASE; r++)
            for (int c = 0; c < MM_NR_BASE; c++) {
                float s = acc[r][c];
                if (l + 1 < kc) s = mm_pair_step(s, a0[MM_MR_BASE + r], b0[MM_NR_BASE + c]);
                acc[r][c] = mm_pair_step(s, a0[r], b0[c]);
            }
    }
    for (int r = 0; r < MM_MR_BASE; r++)
        for (int c = 0; c < MM_NR_BASE; c++) C[r * ldc + c] = acc[r][c];
}

/* Pair a packed float32 panel of k steps by w lanes in place (its first (k + 1) / 2 rows):
 * lane j of row t takes the bf16 bits of step 2t, lane j (low half) and of step 2t + 1 (high
 * half; `pad` past an odd k). Every float here is a widened bf16 (its low 16 bits zero), and
 * row t is written after rows t, 2t and 2t + 1 are read. */
static void mm_pair_panel(float *panel, Py_ssize_t k, int w, uint32_t pad) {
    for (Py_ssize_t t = 0; 2 * t < k; t++)
        for (int j = 0; j < w; j++) {
            uint32_t lo, hi = pad << 16;
            memcpy(&lo, panel + 2 * t * w + j, 4);
            if (2 * t + 1 < k) memcpy(&hi, panel + (2 * t + 1) * w + j, 4);
            uint32_t pair = (lo >> 16) | (hi & 0xFFFF0000u);
            memcpy(panel + t * w + j, &pair, 4);
        }
}

#if defined(HAVE_AVX512_BF16)
/* VDPBF16PS: 14 x 32 sums in 28 registers, a B pair row in 2, one broadcast A pair; A and B
 * paired panels (`mm_pair_panel`) from the pair of step 0 of this call; kc steps. */
TARGET_AVX512_BF16 static void mm_kernel_dpbf16(Py_ssize_t kc, const float *A, const float *B,
                                                float *C, Py_ssize_t ldc, int first) {
    __m512 acc[MM_MR_AVX512][2];
#pragma GCC unroll 14
    for (int r = 0; r < MM_MR_AVX512; r++) {
        acc[r][0] = first ? _mm512_set1_ps(-0.0f) : _mm512_loadu_ps(C + r * ldc);
        acc[r][1] = first ? _mm512_set1_ps(-0.0f) : _mm512_loadu_ps(C + r * ldc + 16);
    }
    for (Py_ssize_t t = 0; 2 * t < kc; t++, A += MM_MR_AVX512, B += 32) {
        __m512bh b0 = (__m512bh)_mm512_loadu_ps(B), b1 = (__m512bh)_mm512_loadu_ps(B + 16);
#pragma GCC unroll 14
        for (int r = 0; r < MM_MR_AVX512; r++) {
            __m512bh x = (__m512bh)_mm512_set1_ps(A[r]); /* a broadcast keeps the bits */
            acc[r][0] = _mm512_dpbf16_ps(acc[r][0], x, b0);
            acc[r][1] = _mm512_dpbf16_ps(acc[r][1], x, b1);
        }
    }
#pragma GCC unroll 14
    for (int r = 0; r < MM_MR_AVX512; r++) {
        _mm512_storeu_ps(C + r * ldc, acc[r][0]);
        _mm512_storeu_ps(C + r * ldc + 16, acc[r][1]);
    }
}
#endif

#if defined(HAVE_AVX512)
/* The emulation in AVX-512 FMAs (the AVX-512 kernel's 14 x 32 tile, steps l + 1 then l), MXCSR
 * set for the call to round to nearest even, flush results to zero (FTZ: x86 detects tininess
 * after rounding, as VDPBF16PS does) and read subnormal operands as zeros (DAZ), then restored:
 * each FMA is then the instruction's step, bit for bit (the tests hold it to `sdm`). */
TARGET_AVX512 static void mm_kernel_pairs_avx512(Py_ssize_t kc, const float *A, const float *B,
                                                 float *C, Py_ssize_t ldc, int first) {
    unsigned int csr = _mm_getcsr();
    _mm_setcsr((csr & ~0x6000u) | 0x8040u); /* RC nearest, FTZ, DAZ */
    mm_tile_avx512(kc, A, B, C, ldc, first, 1);
    _mm_setcsr(csr);
}
#endif

#if defined(HAVE_AVX512_BF16) && defined(HAVE_PTHREAD)
/* The measured tile: 14 x 32 outputs over K = MM_PROBE_K, its A and B panels' floats. */
enum { MM_PROBE_K = 256, MM_PROBE_PANELS = (MM_MR_AVX512 + 32) * MM_PROBE_K };

/* Nanoseconds of a burst of 8 calls of `kernel` on the measured tile. */
static uint64_t mm_burst_ns(MmKernel kernel, const float *A, const float *B, float *C) {
    uint64_t start = now_ns();
    for (int call = 0; call < 8; call++) kernel(MM_PROBE_K, A, B, C, 32, call == 0);
    return now_ns() - start;
}

/* Whether VDPBF16PS ran the pairs order's tile faster than the FMA body here (7 rounds of
 * both, the best burst of each: about 0.2 ms once a process). Panels of ones: no subnormal
 * anywhere, and either body reads them (as float32 or as pairs of bf16) at its usual speed. */
static int mm_dpbf16_faster(void) {
    enum { ROUNDS = 7 };
    float *block = PyMem_RawMalloc(sizeof(float) * (MM_PROBE_PANELS + MM_MR_AVX512 * 32));
    if (block == NULL) return 0;
    float *A = block, *B = A + MM_MR_AVX512 * MM_PROBE_K, *C = block + MM_PROBE_PANELS;
    for (Py_ssize_t i = 0; i < MM_PROBE_PANELS; i++) block[i] = 1.0f;
    uint64_t fma = UINT64_MAX, dp = UINT64_MAX;
    for (int round = 0; round < ROUNDS; round++) {
        uint64_t t = mm_burst_ns(mm_kernel_pairs_avx512, A, B, C);
        fma = t < fma ? t : fma;
        t = mm_burst_ns(mm_kernel_dpbf16, A, B, C);
        dp = t < dp ? t : dp;
    }
    PyMem_RawFree(block);
    return dp < fma;
}
#endif

/* Whether the pairs order's AVX-512 body is the instruction (measured at the first asking,
 * see the header): 0 where the CPU lacks it. Calls racing to the first measurement each store
 * an answer; either is a body of the same bits. */
static int mm_dpbf16_chosen(void) {
#if defined(HAVE_AVX512_BF16) && defined(HAVE_PTHREAD)
    if (!mm_dpbf16_cpu) return 0;
    int on = __atomic_load_n(&mm_dpbf16_on, __ATOMIC_RELAXED);
    if (on == MM_CHOOSE) {
        on = mm_dpbf16_faster();
        __atomic_store_n(&mm_dpbf16_on, on, __ATOMIC_RELAXED);
    }
    return on;
#else
    return mm_dpbf16_cpu && mm_dpbf16_on == 1;
#endif
}

/* The pairs order's body for instruction set `isa`: the instruction, or the emulation. */
static MmBody mm_pairs_body(int isa) {
#if defined(HAVE_AVX512_BF16)
    if (isa == 2 && mm_dpbf16_chosen())
        return (MmBody){mm_kernel_dpbf16, MM_MR_AVX512, 32, MM_MR_AVX512, 64};
#endif
#if defined(HAVE_AVX512)
    if (isa == 2) return (MmBody){mm_kernel_pairs_avx512, MM_MR_AVX512, 32, MM_MR_AVX512, 64};
#endif
    (void)isa;
    return (MmBody){mm_kernel_pairs, MM_MR_BASE, MM_NR_BASE, 32 * MM_MR_BASE, 128};
}

/* Whether `kernel` reads paired panels (`mm_pair_panel`): the instruction's alone. */
static int mm_paired(MmKernel kernel) {
#if defined(HAVE_AVX512_BF16)
    return kernel == mm_kernel_dpbf16;
#else
    (void)kernel;
    return 0;
#endif
}

/* `pairs_instruction(on) -> previous`: run the pairs order's AVX-512 body on VDPBF16PS (True),
 * on FMAs under FTZ and DAZ (False), or on the faster as measured (None, the default); previous
 * is the body the setting before chose (True: the instruction), None where the CPU has no
 * AVX512_BF16 (the emulation always runs). */
SHARED PyObject *pairs_instruction(PyObject *module, PyObject *on) {
    (void)module;
    int want = on == Py_None ? MM_CHOOSE : PyObject_IsTrue(on);
    if (want == -1 && on != Py_None) return NULL;
    if (!mm_dpbf16_cpu) Py_RETURN_NONE;
    PyObject *previous = PyBool_FromLong(mm_dpbf16_chosen());
    __atomic_store_n(&mm_dpbf16_on, want, __ATOMIC_RELAXED); /* as mm_dpbf16_chosen reads it */
    return previous;
}
