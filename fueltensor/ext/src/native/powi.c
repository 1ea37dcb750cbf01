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
#ifdef HAVE_AVX512
DEFINE_POWI(float, powi_f32x16, 64, TARGET_AVX512)
DEFINE_POWI(double, powi_f64x8, 64, TARGET_AVX512)
#endif

/* A PowI loop over n elements of one working type (a V##_powi). */
typedef void (*PowILoop)(const void *x, void *out, Py_ssize_t n, int32_t k);

#define POWI_TILE 256

/* out[i] = x[i] ** k for n elements of `dtype` (F32, F64, BF16, F16) with the instruction set's
 * loops, the halves widened to f32 a tile at a time and narrowed once. */
INLINE void powi_run(int dtype, const void *x, int32_t k, void *out, Py_ssize_t n,
                     PowILoop f32_loop, PowILoop f64_loop, const Halves *h) {
    static const size_t SIZES[N_DTYPES] = {4, 8, 2, 2};
    if (k == 1) {
        memcpy(out, x, (size_t)n * SIZES[dtype]); /* x itself: signalling NaNs included */
        return;
    }
    if (dtype == F32 || dtype == F64) {
        (dtype == F32 ? f32_loop : f64_loop)(x, out, n, k);
        return;
    }
    Widen widen = dtype == BF16 ? h->bf16_widen : h->f16_widen;
    Narrow narrow = dtype == BF16 ? h->bf16_narrow : h->f16_narrow;
    float w[POWI_TILE];
    for (Py_ssize_t i = 0; i < n; i += POWI_TILE) {
        Py_ssize_t t = n - i < POWI_TILE ? n - i : POWI_TILE;
        widen((const uint16_t *)x + i, w, t);
        f32_loop(w, w, t, k);
        narrow(w, (uint16_t *)out + i, t);
    }
}

/* The PowI body of one instruction set (`target`), its vectors of f32 and f64 `lanes` wide. */
#define DEFINE_POWI_BODY(isa, target, f32_lanes, f64_lanes)                                        \
    target static void powi_##isa(int dtype, const void *x, int32_t k, void *out, Py_ssize_t n) {  \
        powi_run(dtype, x, k, out, n, powi_f32x##f32_lanes##_powi, powi_f64x##f64_lanes##_powi,    \
                 &HALVES_##isa);                                                                   \
    }

DEFINE_POWI_BODY(baseline, , 4, 2)
#ifdef HAVE_AVX2_F16C
DEFINE_POWI_BODY(avx2, TARGET_AVX2_F16C, 8, 4)
#endif
#ifdef HAVE_AVX512
DEFINE_POWI_BODY(avx512, TARGET_AVX512, 16, 8)
#endif

/* The PowI body of the selected instruction set (ISA_NAMES[isa]), on as many threads as
 * `threads_for` gives: what `_fast` runs, exported as the POWI capsule. */
static void powi_body(int dtype, const void *x, int32_t k, void *out, Py_ssize_t n) {
    PowIBody fn = N.isa_powi[N.isa];
    int threads = threads_for(POWI_OP, dtype, n);
#if defined(HAVE_PTHREAD)
    if (threads > 1) {
        Job job = {.powi = fn, .op = POWI_OP, .dtype = dtype, .k = k, .a = x, .c = out, .n = n};
        split_run(&job, threads);
        return;
    }
#endif
    (void)threads;
    fn(dtype, x, k, out, n);
}
