/* ---------------------------------------------------------------------------------------------
 * One kernel body per instruction set: the same C, compiled for the baseline, for AVX2 (with
 * F16C and FMA, which the vector powf uses) and for AVX-512 (in 512-bit vectors). */


INLINE void loops(int op, int dtype, const void *a, const void *b, void *c, Py_ssize_t n,
                  const Halves *h, const PowShortcut *s) {
    switch (dtype) {
    case F32:
        f32_loop(op, a, b, c, n, s);
        break;
    case F64:
        f64_loop(op, a, b, c, n, s);
        break;
    case BF16:
        half_loop(op, h->bf16_widen, h->bf16_narrow, a, b, c, n, s);
        break;
    default:
        half_loop(op, h->f16_widen, h->f16_narrow, a, b, c, n, s);
    }
}

/* Bytes of the tile a tiled body computes into (L1-resident, on the stack). */
#define ALIAS_TILE 4096


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
                  const Halves *h, const PowShortcut *s, int stream) {
    _Alignas(64) char tile[ALIAS_TILE];
    Py_ssize_t size = ITEMSIZE[dtype], per = ALIAS_TILE / size;
    for (Py_ssize_t i = 0; i < n; i += per) {
        Py_ssize_t k = n - i < per ? n - i : per, at = i * size;
        loops(op, dtype, (const char *)a + at, (const char *)b + at, tile, k, h, s);
        if (stream) stream_out((char *)c + at, tile, (size_t)(k * size));
        else memcpy((char *)c + at, tile, (size_t)(k * size));
    }
#if defined(__SSE2__)
    if (stream) _mm_sfence(); /* the streamed lines are visible before the caller reads them */
#endif
}

/* c is a, b, or apart from both. Apart, a body told to `stream` (its call writes STREAM_FROM
 * output bytes or more: `streams`) streams its tiles out (`tiled`). Where c is an operand
 * (`x op= y` written into x), f32 and f64 run their in-place loops; pow (whose slow lanes read
 * an operand again after the fast pass wrote c) and the halves (whose loops do not alias,
 * `restrict`) run into a tile copied over c's elements. */
INLINE void body(int op, int dtype, const void *a, const void *b, void *c, Py_ssize_t n,
                 const Halves *h, const PowShortcut *s, int stream) {
    if (c != a && c != b) {
        if (stream)
            tiled(op, dtype, a, b, c, n, h, s, 1);
        else loops(op, dtype, a, b, c, n, h, s);
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
    tiled(op, dtype, a, b, c, n, h, s, 0);
}

/* Whether a call writing n elements of `dtype` streams its output: its bytes reach STREAM_FROM
 * (decided for the whole call, of which a body may run one part on a thread). */
INLINE int streams(int dtype, Py_ssize_t n) { return n >= STREAM_FROM / ITEMSIZE[dtype]; }

/* The bodies of one instruction set (`target`, its `Halves` and vector powf pass, NULL for
 * powf per lane): `body_<isa>_part` told whether to stream (what the pool runs, part by part),
 * and `body_<isa>`, a whole call (the BodyWith of `N.isa_bodies`). */
#define DEFINE_BODY(isa, target, tile_pass)                                              \
    target static void body_##isa##_part(int op, int dtype, const void *a, const void *b,         \
                                         void *c, Py_ssize_t n, const PowShortcut *s,             \
                                         int stream) {                                             \
        PowShortcut t = *s;                                                                        \
        t.pass = tile_pass;                                                                        \
        body(op, dtype, a, b, c, n, &HALVES_##isa, &t, stream);                                    \
    }                                                                                              \
    target static void body_##isa(int op, int dtype, const void *a, const void *b, void *c,       \
                                  Py_ssize_t n, const PowShortcut *s) {                            \
        body_##isa##_part(op, dtype, a, b, c, n, s, streams(dtype, n));                            \
    }

DEFINE_BODY(baseline, , NULL)
#ifdef HAVE_AVX2_F16C
DEFINE_BODY(avx2, TARGET_AVX2_F16C, pow_pass_avx2)
#endif
#ifdef HAVE_AVX512
DEFINE_BODY(avx512, TARGET_AVX512, pow_pass_avx512)
#endif
