/* ---------------------------------------------------------------------------------------------
 * The matmul kernel's run (matmul.c holds its order, micro-kernels and packing panels): the
 * body and conversions of the instruction set, the packing and tile parts the pool runs, the
 * shapes and parameters checked, and the MATMUL capsule `matmul_kernel`. */

/* The body of instruction set `isa` (an index of ISA_NAMES this CPU runs). */
static MmBody mm_body(int isa) {
#if defined(HAVE_AVX512)
    /* A tile is one A panel by 64 columns: with K up to MM_KT in one call, B's micro-panels come
     * from L2 whatever the tile, and the small tiles share out evenly (512 x 512 on two threads:
     * 37 x 8 tiles, 37 to each of the 8 parts); 8 panels by 128 measured 3.5% slower. */
    if (isa == 2) return (MmBody){mm_kernel_avx512, MM_MR_AVX512, 32, MM_MR_AVX512, 64};
#endif
#if defined(HAVE_AVX2_F16C)
    if (isa == 1) return (MmBody){mm_kernel_avx2, MM_MR_AVX2, 16, 20 * MM_MR_AVX2, 128};
#endif
    (void)isa;
    return (MmBody){mm_kernel_baseline, MM_MR_BASE, MM_NR_BASE, 32 * MM_MR_BASE, 128};
}

/* The conversions and the spread of instruction set `isa` for m's dtype into m. */
static void mm_converts(Mm *m, int isa) {
    int bf = m->dtype == BF16;
    m->spread = NULL;
    m->panel_lanes = m->panel_steps = NULL;
    m->widen = bf ? mm_bf16_widen : f16_widen;
    m->narrow = bf ? mm_bf16_narrow : f16_narrow;
#if defined(HAVE_AVX2_F16C)
    if (isa >= 1 && !bf) {
        m->widen = f16_widen_f16c;
        m->narrow = f16_narrow_f16c;
    }
#endif
#if defined(HAVE_AVX512)
    if (isa == 2) {
        m->spread = mm_spread_avx512;
        m->panel_lanes = mm_panel_lanes_avx512;
        m->panel_steps = mm_panel_steps_avx512;
        m->widen = bf ? mm_bf16_widen_avx512 : f16_widen_avx512;
        m->narrow = bf ? mm_bf16_narrow_avx512 : f16_narrow_avx512;
    }
#endif
    (void)isa;
}

/* `count` elements of `dtype` from p (byte stride s) as floats into dst (dst stride ds). */
static void mm_gather(const Mm *m, const char *p, Py_ssize_t s, Py_ssize_t count, float *dst,
                      Py_ssize_t ds) {
    uint16_t h, line[MM_KC];
    if (m->dtype == F32) {
        if (s == 4 && ds == 1) memcpy(dst, p, (size_t)count * 4);
        else
            for (Py_ssize_t i = 0; i < count; i++) memcpy(dst + i * ds, p + i * s, 4);
        return;
    }
    if (s == 2 && ds == 1 && (uintptr_t)p % 2 == 0) { /* dense: the body's vector conversion */
        m->widen((const uint16_t *)(const void *)p, dst, count);
        return;
    }
    if (s == 2 && ds == 1) { /* dense but odd-addressed: through an aligned copy */
        for (Py_ssize_t i = 0; i < count; i += MM_KC) {
            Py_ssize_t n = count - i < MM_KC ? count - i : MM_KC;
            memcpy(line, p + i * 2, (size_t)n * 2);
            m->widen(line, dst + i, n);
        }
        return;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        memcpy(&h, p + i * s, 2);
        dst[i * ds] = m->dtype == BF16 ? f32_value((uint32_t)h << 16) : f16_widen_one(h);
    }
}

/* Pack `width` (< w) lines of a matrix into a K-major panel of w lanes, zero-padded: lane r of
 * step l is line r's element l. Lines start `line` bytes apart, steps `step` bytes apart. When
 * the steps are the closer ones (a row-major A), MM_KC steps of each line are widened into a
 * dense row first, then spread across the lanes. */
static void mm_pack(const Mm *m, const char *p, Py_ssize_t line, Py_ssize_t step,
                    Py_ssize_t width, int w, float *dst) {
    Py_ssize_t al = line < 0 ? -line : line, as = step < 0 ? -step : step;
    float rows[32][MM_KC]; /* w <= 32 */
    if (as > al && line == m->itemsize && m->panel_lanes != NULL) {
        m->panel_lanes(m->dtype, p, step, m->k, width, w, dst);
        return;
    }
    if (as <= al && step == m->itemsize && w <= 16 && m->panel_steps != NULL) {
        m->panel_steps(m->dtype, p, line, m->k, width, w, dst);
        return;
    }
    if (width < w)
        for (Py_ssize_t l = 0; l < m->k; l++)
            for (int r = (int)width; r < w; r++) dst[l * w + r] = 0.0f;
    if (as > al) {
        for (Py_ssize_t l = 0; l < m->k; l++) mm_gather(m, p + l * step, line, width, dst + l * w, 1);
        return;
    }
    for (Py_ssize_t l0 = 0; l0 < m->k; l0 += MM_KC) {
        Py_ssize_t kc = m->k - l0 < MM_KC ? m->k - l0 : MM_KC;
        for (Py_ssize_t r = 0; r < width; r++) mm_gather(m, p + r * line + l0 * step, step, kc,
                                                         rows[r], 1);
        if (m->spread != NULL) m->spread(rows, width, kc, w, dst + l0 * w);
        else
            for (Py_ssize_t l = 0; l < kc; l++)
                for (Py_ssize_t r = 0; r < width; r++) dst[(l0 + l) * w + r] = rows[r][l];
    }
}

/* A part of the packing: units [at, at + len) of A's row panels and B's column panels. When
 * `mixed`, they interleave evenly (unit u is A's panel u * apanels / units when that count
 * steps at u, else B's): each thread's range then packs its share of both, the A rows its own
 * tiles read first (the tiles are row-major and a thread's range of parts runs in order) and
 * the same share of the work, where A's panels first gave one thread A alone; otherwise A's
 * panels come first, then B's. Which thread packs a panel never changes its floats. */
static void mm_pack_part(const void *ctx, Py_ssize_t at, Py_ssize_t len) {
    const Mm *m = ctx;
    Py_ssize_t mr = m->body.mr, nr = m->body.nr, units = m->apanels + m->bpanels;
    for (Py_ssize_t u = at; u < at + len; u++) {
        Py_ssize_t ua = u < m->apanels ? u : -1, p = u - m->apanels;
        if (m->mixed) { /* no overflow: mm_panels checked units * apanels */
            Py_ssize_t before = u * m->apanels / units;
            ua = (u + 1) * m->apanels / units > before ? before : -1;
            p = u - before;
        }
        if (ua >= 0) {
            Py_ssize_t i = ua * mr, rows = m->m - i < mr ? m->m - i : mr;
            float *dst = m->pa + ua * m->k * mr;
            mm_pack(m, m->a + i * m->sam, m->sam, m->sak, rows, (int)mr, dst);
            if (m->paired) mm_pair_panel(dst, m->k, (int)mr, 0x8000u); /* a's pad: -0 */
        } else {
            Py_ssize_t j = p * nr, cols = m->n - j < nr ? m->n - j : nr;
            float *dst = m->pb + p * m->k * nr;
            mm_pack(m, m->b + j * m->sbn, m->sbn, m->sbk, cols, (int)nr, dst);
            if (m->paired) mm_pair_panel(dst, m->k, (int)nr, 0x0000u); /* b's pad: +0 */
        }
    }
}

/* Round `count` (<= 128) float32 sums to the output dtype at p (byte stride s): the one
 * rounding. */
static void mm_store(const Mm *m, const float *src, char *p, Py_ssize_t s, Py_ssize_t count) {
    uint16_t line[128];
    if (m->dtype == F32) {
        for (Py_ssize_t i = 0; i < count; i++) memcpy(p + i * s, src + i, 4);
        return;
    }
    if (s == 2 && (uintptr_t)p % 2 == 0) {
        m->narrow(src, (uint16_t *)(void *)p, count);
        return;
    }
    m->narrow(src, line, count);
    if (s == 2) memcpy(p, line, (size_t)count * 2);
    else
        for (Py_ssize_t i = 0; i < count; i++) memcpy(p + i * s, line + i, 2);
}

/* A part of the products: tiles [at, at + len) of MB x NB outputs, row-major over the tiles;
 * each one's sums run over every K panel in order, then are rounded into out. */
static void mm_tile_part(const void *ctx, Py_ssize_t at, Py_ssize_t len) {
    const Mm *m = ctx;
    const MmBody *b = &m->body;
    _Alignas(64) float sums[MM_TILE_FLOATS];
    for (Py_ssize_t u = at; u < at + len; u++) {
        /* The rows of tile row t: A's panels shared out as evenly as whole panels allow, so
         * that no tile row is much shorter than the others (the threads' shares even out). */
        Py_ssize_t t = u / m->tiles_n, base = m->apanels / m->tiles_m;
        Py_ssize_t extra = m->apanels % m->tiles_m, first = t * base + (t < extra ? t : extra);
        Py_ssize_t i0 = first * b->mr, j0 = (u % m->tiles_n) * b->nb;
        Py_ssize_t span = (base + (t < extra)) * b->mr;
        Py_ssize_t rows = m->m - i0 < span ? m->m - i0 : span;
        Py_ssize_t cols = m->n - j0 < b->nb ? m->n - j0 : b->nb;
        for (Py_ssize_t pc = 0; pc < m->k; pc += MM_KT) {
            Py_ssize_t kc = m->k - pc < MM_KT ? m->k - pc : MM_KT;
            Py_ssize_t row = m->paired ? pc / 2 : pc; /* a paired panel's rows are K's pairs */
            for (Py_ssize_t jr = 0; jr < cols; jr += b->nr) {
                const float *pb = m->pb + ((j0 + jr) / b->nr) * m->k * b->nr + row * b->nr;
                for (Py_ssize_t ir = 0; ir < rows; ir += b->mr) {
                    const float *pa = m->pa + ((i0 + ir) / b->mr) * m->k * b->mr + row * b->mr;
                    b->kernel(kc, pa, pb, sums + ir * b->nb + jr, b->nb, pc == 0);
                }
            }
        }
        for (Py_ssize_t r = 0; r < rows; r++)
            mm_store(m, sums + r * b->nb, m->out + (i0 + r) * m->som + j0 * m->son, m->son,
                     cols);
    }
}

/* Run `part` over `units` on the threads a matmul of `work` products gets. */
static void mm_run(const Mm *m, TaskPart part, Py_ssize_t units, Py_ssize_t work) {
    int threads = threads_for(MATMUL_POOL_OP, m->dtype, work);
    if (threads > units) threads = (int)units;
#if defined(HAVE_PTHREAD)
    if (threads > 1) {
        Job job = {.task = part, .ctx = m, .work = work, .op = MATMUL_POOL_OP,
                   .dtype = m->dtype, .n = units};
        split_run(&job, threads);
        return;
    }
#endif
    part(m, 0, units);
}

/* The stack entry `e` (row-major over the stack dims) of a TensorArg: its first element. */
static char *mm_entry(const TensorArg *t, Py_ssize_t e) {
    Py_ssize_t offset = 0;
    for (int d = t->ndim - 3; d >= 0; d--) {
        offset += (e % t->shape[d]) * t->strides[d];
        e /= t->shape[d];
    }
    return t->data + offset;
}

/* Read the parameters into m (`pairs`): 0, or -1 with the refusal (reduce.c's `param` and
 * `reduce_refuse`). */
static int mm_params(Mm *m, const ParamArg *params, int n_params, char *error,
                     size_t error_len) {
    int dtype = m->dtype;
    const ParamArg *acc = param(params, n_params, "accumulator", PARAM_CODE);
    const ParamArg *order = param(params, n_params, "order", PARAM_CODE);
    const ParamArg *products = param(params, n_params, "products", PARAM_CODE);
    if (acc == NULL || order == NULL || products == NULL)
        return reduce_refuse(error, error_len,
                             "matmul: the accumulator, order and products are required");
    if (acc->value.i != F32)
        return reduce_refuse(error, error_len, "matmul: the accumulator must be float32, got %lld",
                             (long long)acc->value.i);
    int64_t p = products->value.i;
    m->pairs = order->value.i == ORDER_PAIRS_ODD_FIRST;
    if (m->pairs && !(dtype == BF16 && p == PRODUCTS_EXACT))
        return reduce_refuse(error, error_len,
                             "matmul: ORDER_PAIRS_ODD_FIRST takes bfloat16 with PRODUCTS_EXACT");
    if (m->pairs) return 0;
    if (order->value.i != ORDER_SEQUENTIAL)
        return reduce_refuse(error, error_len,
                             "matmul: the order must be ORDER_SEQUENTIAL or "
                             "ORDER_PAIRS_ODD_FIRST, got %lld", (long long)order->value.i);
    if (!(p == PRODUCTS_FUSED || (p == PRODUCTS_EXACT && dtype != F32)))
        return reduce_refuse(error, error_len,
                             "matmul: the products must be PRODUCTS_FUSED, or PRODUCTS_EXACT for "
                             "bfloat16 and float16 (a float32 product is not exact in float32), "
                             "got %lld", (long long)p);
    return 0;
}

/* Check the operands' dtypes and shapes and read them into m: 0, or -1 with the refusal. */
static int mm_shape(Mm *m, const TensorArg *a, const TensorArg *b, const TensorArg *out,
                    char *error, size_t error_len) {
    int d = a->ndim;
    if (a->dtype != b->dtype || out->dtype != a->dtype ||
        !(a->dtype == F32 || a->dtype == BF16 || a->dtype == F16))
        return reduce_refuse(error, error_len,
                             "matmul: a, b and out must be of one dtype, float32, bfloat16 or "
                             "float16");
    if (d < 2 || d > MAX_DIMS || b->ndim != d || out->ndim != d)
        return reduce_refuse(error, error_len,
                             "matmul: a, b and out must be of one rank, 2 to %d (the stacks "
                             "broadcast by the caller)", MAX_DIMS);
    m->batch = 1;
    for (int k = 0; k < d - 2; k++) {
        if (a->shape[k] != b->shape[k] || a->shape[k] != out->shape[k] || a->shape[k] < 0)
            return reduce_refuse(error, error_len,
                                 "matmul: the stack dims of a, b and out must be equal (the "
                                 "caller broadcasts them)");
        if (__builtin_mul_overflow(m->batch, a->shape[k], &m->batch))
            return reduce_refuse(error, error_len, "matmul: the stack's size overflows");
    }
    m->m = a->shape[d - 2];
    m->k = a->shape[d - 1];
    m->n = b->shape[d - 1];
    if (m->m < 0 || m->k < 0 || m->n < 0 || b->shape[d - 2] != m->k ||
        out->shape[d - 2] != m->m || out->shape[d - 1] != m->n)
        return reduce_refuse(error, error_len,
                             "matmul: a must be (..., M, K), b (..., K, N) and out (..., M, N)");
    m->sam = a->strides[d - 2];
    m->sak = a->strides[d - 1];
    m->sbk = b->strides[d - 2];
    m->sbn = b->strides[d - 1];
    m->som = out->strides[d - 2];
    m->son = out->strides[d - 1];
    m->dtype = a->dtype;
    m->itemsize = ITEMSIZE[a->dtype];
    return 0;
}

/* Count the body's panels and its tiles for `threads`; the packed floats of A (floats[0]) and
 * of A and B (floats[1]); -1 when they overflow. */
static int mm_panels(Mm *m, int threads, size_t floats[2]) {
    Py_ssize_t mr = m->body.mr, nr = m->body.nr, ra, rb, fa, fb, all;
    m->apanels = m->m / mr + (m->m % mr != 0);
    m->bpanels = m->n / nr + (m->n % nr != 0);
    m->tiles_n = m->n / m->body.nb + (m->n % m->body.nb != 0);
    Py_ssize_t per_tile = m->body.mb / mr; /* A's panels a tile row holds at most */
    m->tiles_m = m->apanels / per_tile + (m->apanels % per_tile != 0);
    /* The pool cuts the tiles into threads * PARTS_PER_THREAD parts of whole tiles: shorter
     * tile rows, up to twice as many, until the tiles fill the parts evenly (512 x 512 on two
     * threads on AVX2, 20 panels by 128 a tile: 6 x 4 tiles in 8 parts rather than 5 x 4 in 7,
     * one of them a thread's last quarter of its work). Which tiles a thread runs never
     * changes an output's bits. */
    Py_ssize_t parts = (Py_ssize_t)threads * PARTS_PER_THREAD, most = 2 * m->tiles_m;
    while (threads > 1 && (m->tiles_m * m->tiles_n) % parts != 0 && m->tiles_m < m->apanels &&
           m->tiles_m < most)
        m->tiles_m++;
    Py_ssize_t units, mixed;
    m->mixed = !__builtin_add_overflow(m->apanels, m->bpanels, &units) &&
               !__builtin_mul_overflow(units, m->apanels, &mixed);
    if (__builtin_mul_overflow(m->apanels, mr, &ra) || __builtin_mul_overflow(m->bpanels, nr, &rb) ||
        __builtin_mul_overflow(ra, m->k, &fa) || __builtin_mul_overflow(rb, m->k, &fb) ||
        __builtin_add_overflow(fa, fb, &all) || (size_t)all > SIZE_MAX / sizeof(float))
        return -1;
    floats[0] = (size_t)fa;
    floats[1] = (size_t)all;
    return 0;
}

/* The MATMUL capsule (abi.h's `ShapedKernel`): out = a @ b over the stacks, by the parameters
 * (see the header). Never touches the GIL. */
SHARED int matmul_kernel(int op, const TensorArg *in, int n_in, const TensorArg *out,
                         const ParamArg *params, int n_params, char *error, size_t error_len) {
    Mm m = {0};
    if (op != M_MATMUL || n_in != 2)
        return reduce_refuse(error, error_len, "matmul: op must be %d with two inputs, got %d",
                             M_MATMUL, op);
    if (mm_shape(&m, &in[0], &in[1], out, error, error_len) < 0 ||
        mm_params(&m, params, n_params, error, error_len) < 0)
        return -1;
    m.body = m.pairs ? mm_pairs_body(N.isa) : mm_body(N.isa);
    m.paired = m.pairs && mm_paired(m.body.kernel);
    mm_converts(&m, N.isa);
    size_t floats[2];
    Py_ssize_t work, products;
    if (__builtin_mul_overflow(m.m, m.n, &work) || __builtin_mul_overflow(work, m.k, &products) ||
        mm_panels(&m, threads_for(MATMUL_POOL_OP, m.dtype, products), floats) < 0)
        return reduce_refuse(error, error_len, "matmul: the operands' sizes overflow");
    if (m.batch == 0 || work == 0) return 0;
    if (m.k == 0) { /* the empty sums: +0 */
        float zeros[128] = {0};
        for (Py_ssize_t e = 0; e < m.batch; e++)
            for (Py_ssize_t i = 0; i < m.m; i++)
                for (Py_ssize_t j = 0; j < m.n; j += 128)
                    mm_store(&m, zeros, mm_entry(out, e) + i * m.som + j * m.son, m.son,
                             m.n - j < 128 ? m.n - j : 128);
        return 0;
    }
    /* B's panels first, on a 64-byte boundary: a B row of the micro-kernel is whole lines
     * (NR floats, 32 or 64 bytes and every K step), A's after them (broadcast, any alignment). */
    if (floats[1] > SIZE_MAX / sizeof(float) - 64)
        return reduce_refuse(error, error_len, "matmul: the operands' sizes overflow");
    void *block = PyMem_RawMalloc(floats[1] * sizeof(float) + 64);
    if (block == NULL) return reduce_refuse(error, error_len, "matmul: out of memory");
    m.pb = (float *)((char *)block + (64 - (uintptr_t)block % 64) % 64);
    m.pa = m.pb + (floats[1] - floats[0]);
    for (Py_ssize_t e = 0; e < m.batch; e++) {
        m.a = mm_entry(&in[0], e);
        m.b = mm_entry(&in[1], e);
        m.out = mm_entry(out, e);
        mm_run(&m, mm_pack_part, m.apanels + m.bpanels, products); /* threads as the products' */
        Py_ssize_t tiles = m.tiles_m * m.tiles_n;
        mm_run(&m, mm_tile_part, tiles, products);
    }
    PyMem_RawFree(block);
    return 0;
}
