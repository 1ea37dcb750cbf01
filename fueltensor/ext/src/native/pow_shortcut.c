/* ---------------------------------------------------------------------------------------------
 * Contract pow on f32 is the platform powf. Where that powf is recognised as glibc's algorithm
 * (its version, the variant its ifunc picked, its tables in the running libm, and a sample of
 * special and random inputs equal bit for bit), the kernel bodies run the vector powf of
 * powf_vector.c, which performs the same operations in the same order; everywhere else, and in
 * any floating-point mode but the default one, powf runs for every lane. The recognition runs
 * once, at the first f32 pow that could use a vector pass; until its verdict is in, powf runs
 * (the same bits either way). benchmarks/pow_proof.py holds the passes to powf on all 2^32 x for
 * y = 2 and y = 0.5 and on 10^9 random pairs (benchmarks/RESULTS.md). */

enum { PV_UNKNOWN, PV_CHECKING, PV_RECOGNISED, PV_REFUSED };
#define PV_REASON 400

/* The vector powf's state: `on` is pow_vector's switch (FUELTENSOR_POW_SHORTCUT=0 turns it
 * off); `verdict` the recognition's (PV_*), published after `reason`, what it rests on. */
static struct {
    int on, verdict;
    char reason[PV_REASON];
} PV = {1, PV_UNKNOWN, ""};

/* The pow settings a body runs with: the switch, read once per call (the body sets the pass). */
static PowShortcut pow_settings(void) {
    PowShortcut s = {__atomic_load_n(&PV.on, __ATOMIC_RELAXED), NULL};
    return s;
}

/* Whether the floating-point environment is the default one the passes follow powf in: round
 * to nearest, neither flush-to-zero nor denormals-are-zero, every exception masked (another
 * rounding mode changes powf's bits and the passes' differently; an unmasked exception would
 * trap on the lanes a pass computes and then discards). */
INLINE int default_fp_mode(void) {
#if defined(__SSE2__)
    return (_mm_getcsr() & 0xFFC0u) == 0x1F80u;
#else
    return fegetround() == FE_TONEAREST;
#endif
}

/* f32 pow through a vector pass: a tile at a time, then powf for the lanes it left. */
INLINE void f32_pow_vector(PowPass pass, const float *restrict a, const float *restrict b,
                           float *restrict c, Py_ssize_t n) {
    uint8_t slow[POW_TILE / 8];
    for (Py_ssize_t i = 0; i < n; i += POW_TILE) {
        Py_ssize_t k = n - i < POW_TILE ? n - i : POW_TILE;
        const float *ta = a + i, *tb = b + i;
        float *tc = c + i;
        if (k < POW_TILE) memset(slow, 0, sizeof slow); /* whole words past a short tile's end */
        if (pass(ta, tb, tc, slow, k) == 0) continue;
        for (Py_ssize_t w = 0; w < POW_TILE / 64; w++) {
            uint64_t word = 0; /* 64 lanes' flags: one test for the common all-vector word */
            for (int j = 0; j < 8; j++) word |= (uint64_t)slow[w * 8 + j] << (8 * j);
            for (; word != 0; word &= word - 1) {
                Py_ssize_t j = w * 64 + __builtin_ctzll(word);
                tc[j] = powf(ta[j], tb[j]);
            }
        }
    }
}

static int pow_recognise_now(void);

/* Whether the vector powf is recognised here, recognising it first if nobody has yet. */
INLINE int pow_vector_ready(void) {
    int verdict = __atomic_load_n(&PV.verdict, __ATOMIC_ACQUIRE);
    return verdict == PV_RECOGNISED || (verdict == PV_UNKNOWN && pow_recognise_now());
}

/* Contract pow on f32: powf, through the body's vector pass where it is recognised. */
INLINE void f32_pow(const float *restrict a, const float *restrict b, float *restrict c,
                    Py_ssize_t n, const PowShortcut *s) {
    if (s->pass != NULL && s->on && default_fp_mode() && pow_vector_ready()) {
        f32_pow_vector(s->pass, a, b, c, n);
        return;
    }
    for (Py_ssize_t i = 0; i < n; i++) c[i] = powf(a[i], b[i]);
}

/* Contract pow on f64: the platform pow for every element (2^64 inputs cannot be verified). */
INLINE void f64_pow(const double *restrict a, const double *restrict b, double *restrict c,
                    Py_ssize_t n, const PowShortcut *s) {
    (void)s;
    for (Py_ssize_t i = 0; i < n; i++) c[i] = pow(a[i], b[i]);
}
