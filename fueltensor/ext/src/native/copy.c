/* ---------------------------------------------------------------------------------------------
 * Walking N-D layouts: an odometer over byte steps, for the strided copy's two buffers (source,
 * destination). */


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

