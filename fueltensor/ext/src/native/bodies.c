/* ---------------------------------------------------------------------------------------------
 * One kernel body per instruction set: the same C, compiled for the baseline and for AVX2 (with
 * F16C and FMA, which the vector powf uses). */


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
    t.pass = NULL; /* no vector powf: powf per lane */
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


