/* ---------------------------------------------------------------------------------------------
 * Reductions (ops.py's REDUCTION_OPS: R_SUM, R_PROD, R_MAX, R_MIN over a sorted list of axes),
 * abi.h's `ShapedKernel` `reduce_kernel`, exported as the REDUCE capsule and, for tests and the
 * coming thunks, as `_native.reduce`. Inputs F32, F64, BF16, F16 of any strides (negative, zero,
 * offset views); the output has the input's dtype and is rounded ONCE, from the accumulator.
 *
 * The order of a sum or product is fixed by the parameters alone, never by the thread count or
 * the instruction set (this file is portable C: every body runs the same operations):
 *   - the reduced elements of one output are taken in row-major order of the reduced axes;
 *   - ORDER_SEQUENTIAL: one accumulator, element after element (acc = acc + x[i]);
 *   - ORDER_BLOCKED: they are cut into blocks of `block` consecutive elements (the last may be
 *     shorter). In a block, REDUCE_LANES = 8 partial accumulators: element p of the block
 *     (p = 0, 1, ...) goes to lane p % 8, each lane in order of p; the lanes are then combined
 *     as ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)). Every lane starts at the identity
 *     (-0 for a sum, whose addition to any x gives x's bits, NaNs apart; 1 for a product), so
 *     an empty lane changes nothing. The block results are combined by a pairwise tree over the
 *     block indices: at each level adjacent pairs (0, 1), (2, 3), ... are combined, left + right,
 *     and an odd last one is carried up unchanged, until one is left.
 * The eight lanes let the compiler keep them in vector registers on every body (one fixed lane
 * order, not the vector width's), and bound a block's error by ceil(block / 8) + 2 steps rather
 * than block - 1. The accumulator is F32 (for F32, BF16, F16 inputs) or F64 (F64; optionally
 * F32). An empty sum is +0, an empty product 1.
 *
 * Max and min are exact, so no order is needed: the result is the left fold of the binary
 * maximum (minimum) contract (contracts/fuel-cpu-backend.md, maximum_f32) over the reduced
 * elements in row-major order: a NaN operand is returned as it is, lhs first, so the result is
 * the first NaN, bits unchanged; on a tie, +0 against -0 included, lhs wins, so the first of the
 * equal elements. The result is an input element's bits. The max or min of nothing is refused.
 *
 * Threads split units that are whole results: outputs (each computed start to end by one
 * thread), or, when a blocked reduction has fewer than REDUCE_FEW_OUTPUTS outputs, the blocks
 * of every output, written to a scratch array that the caller combines by the tree after. Which
 * path runs depends on the shape and parameters only, so the bits are one thread's. */

#define REDUCE_LANES 8
/* Below this many outputs a blocked sum or product splits by blocks, so that a full reduction
 * uses every thread; from here the outputs alone are enough parts. */
#define REDUCE_FEW_OUTPUTS 64
/* Outputs adjacent along the innermost kept axis computed in one walk (`S##_group`): 128 f32
 * outputs read 512 bytes a row, so a sum down 16 KiB-strided columns touches each page once per
 * 128 outputs rather than once per output (the benchmark's axis-0 sum: 32 outputs ran at 0.3x
 * NumPy, 128 at 0.5x). Its tree stack is then 64 KiB of doubles on the thread's stack. */
#define REDUCE_GROUP 128
/* Elements gathered (converted to the accumulator's type) at a time from a strided or
 * narrower-typed run: a 4 KiB tile of doubles stays in L1. */
#define REDUCE_TILE 512

/* One call, its axes collapsed (`reduce_shape`): what every part reads. */
typedef struct {
    int op, dtype, acc, lanes; /* lanes: REDUCE_LANES, or 1 for ORDER_SEQUENTIAL */
    Py_ssize_t block, m, n_out, nblocks, itemsize;
    int kept, red; /* dims of the kept and the reduced axes after collapsing */
    Py_ssize_t kshape[MAX_DIMS], kstride[MAX_DIMS], ostride[MAX_DIMS];
    Py_ssize_t rshape[MAX_DIMS], rstride[MAX_DIMS];
    const char *x;
    char *out;
    void *scratch; /* the block results when split by blocks (n_out * nblocks), else NULL */
} Reduce;

/* Where a walk over the reduced elements of one output stands: the multi-index and its bytes. */
typedef struct {
    Py_ssize_t idx[MAX_DIMS], offset;
} RunAt;

/* Start a walk at reduced element `start` (row-major) of an output. */
static void runs_start(const Reduce *r, RunAt *at, Py_ssize_t start) {
    at->offset = 0;
    for (int k = r->red - 1; k >= 0; k--) {
        at->idx[k] = start % r->rshape[k];
        start /= r->rshape[k];
        at->offset += at->idx[k] * r->rstride[k];
    }
}

/* The length (at most `most`) of the run of the innermost reduced axis the walk stands at, its
 * bytes in `*offset`; the walk moves past it. */
static Py_ssize_t runs_next(const Reduce *r, RunAt *at, Py_ssize_t most, Py_ssize_t *offset) {
    int d = r->red - 1;
    Py_ssize_t k = r->rshape[d] - at->idx[d];
    k = k < most ? k : most;
    *offset = at->offset;
    at->idx[d] += k;
    at->offset += k * r->rstride[d];
    for (; d > 0 && at->idx[d] == r->rshape[d]; d--) { /* carry into the outer reduced axes */
        at->offset += r->rstride[d - 1] - at->idx[d] * r->rstride[d];
        at->idx[d] = 0;
        at->idx[d - 1]++;
    }
    return k;
}

/* One element of `dtype` at p, exactly, as a float (F32, BF16, F16) or a double (any). */
INLINE float load_float(int dtype, const char *p) {
    uint16_t h;
    float f;
    if (dtype == F32) {
        memcpy(&f, p, 4);
        return f;
    }
    memcpy(&h, p, 2);
    return dtype == BF16 ? f32_value((uint32_t)h << 16) : f16_widen_one(h);
}

INLINE double load_double(int dtype, const char *p) {
    double d;
    if (dtype != F64) return load_float(dtype, p);
    memcpy(&d, p, 8);
    return d;
}

/* The sum and product loops for one accumulator type T (float, double): a macro rather than
 * one function per type written twice, so that both run the same steps. `mul` is a constant
 * at every call, so each loop is specialised to its one operation. */
#define REDUCE_ACC(T, S, LOAD)                                                                   \
    /* k elements of a run at p (byte stride s) as T into dst. */                               \
    static void S##_gather(int dtype, const char *p, Py_ssize_t s, Py_ssize_t k, T *dst) {      \
        for (Py_ssize_t i = 0; i < k; i++) dst[i] = (T)LOAD(dtype, p + i * s);                   \
    }                                                                                            \
                                                                                                 \
    /* Add (multiply) v[0..k) into the lanes, v[0] being element `pos` of its block. */          \
    INLINE void S##_fold(T *lane, int lanes, Py_ssize_t pos, const T *v, Py_ssize_t k,          \
                         int mul) {                                                              \
        Py_ssize_t i = 0;                                                                        \
        if (lanes == 1) {                                                                        \
            for (; i < k; i++) lane[0] = mul ? lane[0] * v[i] : lane[0] + v[i];                  \
            return;                                                                              \
        }                                                                                        \
        for (; i < k && (pos + i) % REDUCE_LANES != 0; i++) {                                    \
            T *l = &lane[(pos + i) % REDUCE_LANES];                                              \
            *l = mul ? *l * v[i] : *l + v[i];                                                    \
        }                                                                                        \
        for (; i + REDUCE_LANES <= k; i += REDUCE_LANES) /* lane j: element i + j */             \
            for (int j = 0; j < REDUCE_LANES; j++)                                               \
                lane[j] = mul ? lane[j] * v[i + j] : lane[j] + v[i + j];                         \
        for (int j = 0; i < k; i++, j++) lane[j] = mul ? lane[j] * v[i] : lane[j] + v[i];       \
    }                                                                                            \
                                                                                                 \
    INLINE T S##_join(T a, T b, int mul) { return mul ? a * b : a + b; }                         \
                                                                                                 \
    /* The result of reduced elements [start, start + len) of the output whose first element is \
     * at `base`: one block (ORDER_BLOCKED), or all of them (ORDER_SEQUENTIAL). */                \
    static T S##_block(const Reduce *r, const char *base, Py_ssize_t start, Py_ssize_t len) {    \
        int mul = r->op == R_PROD;                                                               \
        T lane[REDUCE_LANES], tile[REDUCE_TILE];                                                 \
        for (int j = 0; j < REDUCE_LANES; j++) lane[j] = mul ? (T)1 : (T)-0.0;                   \
        RunAt at;                                                                                \
        runs_start(r, &at, start);                                                               \
        Py_ssize_t s = r->rstride[r->red - 1], offset;                                           \
        int direct = r->itemsize == (Py_ssize_t)sizeof(T) && s == r->itemsize &&                 \
                     (r->dtype == F64) == (sizeof(T) == 8);                                      \
        for (Py_ssize_t done = 0; done < len;) {                                                 \
            Py_ssize_t k = runs_next(r, &at, len - done, &offset);                               \
            const char *p = base + offset;                                                       \
            int aligned = direct && (uintptr_t)p % sizeof(T) == 0;                               \
            for (Py_ssize_t i = 0; i < k; i += REDUCE_TILE) {                                    \
                Py_ssize_t kk = k - i < REDUCE_TILE ? k - i : REDUCE_TILE;                       \
                const T *v = aligned ? (const T *)(const void *)(p + i * s) : tile;              \
                if (!aligned) S##_gather(r->dtype, p + i * s, s, kk, tile);                     \
                if (mul) S##_fold(lane, r->lanes, done + i, v, kk, 1);                           \
                else S##_fold(lane, r->lanes, done + i, v, kk, 0);                               \
            }                                                                                    \
            done += k;                                                                           \
        }                                                                                        \
        if (r->lanes == 1) return lane[0];                                                       \
        return S##_join(S##_join(S##_join(lane[0], lane[1], mul), S##_join(lane[2], lane[3], mul), \
                                 mul),                                                           \
                        S##_join(S##_join(lane[4], lane[5], mul), S##_join(lane[6], lane[7], mul), \
                                 mul),                                                           \
                        mul);                                                                    \
    }                                                                                            \
                                                                                                 \
    /* Every block of one output, combined by the pairwise tree as they come: a stack of the    \
     * subtrees so far, two of one level joined at once, the rest joined right to left at the   \
     * end (which is the level-by-level tree with an odd last one carried up). */                \
    static T S##_output(const Reduce *r, const char *base) {                                     \
        int mul = r->op == R_PROD, depth = 0;                                                    \
        T stack[64];                                                                             \
        int level[64];                                                                           \
        if (r->lanes == 1) return S##_block(r, base, 0, r->m);                                   \
        for (Py_ssize_t b = 0; b < r->nblocks; b++) {                                            \
            Py_ssize_t start = b * r->block, len = r->m - start;                                 \
            T t = S##_block(r, base, start, len < r->block ? len : r->block);                    \
            int lv = 0;                                                                          \
            for (; depth > 0 && level[depth - 1] == lv; lv++) t = S##_join(stack[--depth], t, mul); \
            stack[depth] = t;                                                                    \
            level[depth++] = lv;                                                                 \
        }                                                                                        \
        T t = stack[--depth];                                                                    \
        while (depth > 0) t = S##_join(stack[--depth], t, mul);                                  \
        return t;                                                                                \
    }                                                                                            \
                                                                                                 \
    /* Block total of each of the g outputs' lanes (lane[j][i]: lane j of output i) into t. */  \
    INLINE void S##_totals(T lane[][REDUCE_GROUP], int lanes, int g, int mul, T *t) {           \
        for (int i = 0; i < g; i++) {                                                            \
            if (lanes == 1) t[i] = lane[0][i];                                                   \
            else                                                                                 \
                t[i] = S##_join(                                                                 \
                    S##_join(S##_join(lane[0][i], lane[1][i], mul),                              \
                             S##_join(lane[2][i], lane[3][i], mul), mul),                        \
                    S##_join(S##_join(lane[4][i], lane[5][i], mul),                              \
                             S##_join(lane[6][i], lane[7][i], mul), mul),                        \
                    mul);                                                                        \
            for (int j = 0; j < REDUCE_LANES; j++) lane[j][i] = mul ? (T)1 : (T)-0.0;             \
        }                                                                                        \
    }                                                                                            \
                                                                                                 \
    /* `S##_output` for g <= REDUCE_GROUP outputs `ks` bytes apart at once, into res: the same  \
     * lanes, blocks and tree for each, but one walk of the reduced elements for all, so that   \
     * outputs adjacent in memory are read together (a sum down the columns) rather than each    \
     * down its own column. The blocks' tree levels are the same for every output. */          \
    static void S##_group(const Reduce *r, const char *base, Py_ssize_t ks, int g, T *res) {     \
        int mul = r->op == R_PROD, depth = 0, level[64];                                         \
        T lane[REDUCE_LANES][REDUCE_GROUP], row[REDUCE_GROUP], t[REDUCE_GROUP];                  \
        T stack[64][REDUCE_GROUP];                                                               \
        for (int j = 0; j < REDUCE_LANES; j++)                                                   \
            for (int i = 0; i < REDUCE_GROUP; i++) lane[j][i] = mul ? (T)1 : (T)-0.0;            \
        Py_ssize_t block = r->lanes == 1 ? r->m : r->block, pos = 0, offset;                     \
        int direct = ks == (Py_ssize_t)sizeof(T) && r->dtype == (sizeof(T) == 8 ? F64 : F32);   \
        RunAt at;                                                                                \
        runs_start(r, &at, 0);                                                                   \
        for (Py_ssize_t done = 0; done < r->m;) {                                                \
            Py_ssize_t k = runs_next(r, &at, r->m - done, &offset);                              \
            for (Py_ssize_t e = 0; e < k; e++) {                                                 \
                const char *p = base + offset + e * r->rstride[r->red - 1];                      \
                const T *v = direct && (uintptr_t)p % sizeof(T) == 0 ? (const T *)(const void *)p \
                                                                     : row;                      \
                if (v == row) S##_gather(r->dtype, p, ks, g, row);                               \
                T *l = lane[r->lanes == 1 ? 0 : pos % REDUCE_LANES];                             \
                if (mul) for (int i = 0; i < g; i++) l[i] = l[i] * v[i];                         \
                else for (int i = 0; i < g; i++) l[i] = l[i] + v[i];                             \
                if (++pos < block && done + e + 1 < r->m) continue;                              \
                S##_totals(lane, r->lanes, g, mul, t); /* a block ends: into the tree */         \
                pos = 0;                                                                         \
                int lv = 0;                                                                      \
                for (; depth > 0 && level[depth - 1] == lv; lv++, depth--)                       \
                    for (int i = 0; i < g; i++) t[i] = S##_join(stack[depth - 1][i], t[i], mul); \
                memcpy(stack[depth], t, (size_t)g * sizeof(T));                                  \
                level[depth++] = lv;                                                             \
            }                                                                                    \
            done += k;                                                                           \
        }                                                                                        \
        if (depth == 0) return; /* m == 0, never grouped: said for the compiler's bounds */     \
        memcpy(res, stack[--depth], (size_t)g * sizeof(T));                                      \
        while (depth-- > 0)                                                                      \
            for (int i = 0; i < g; i++) res[i] = S##_join(stack[depth][i], res[i], mul);         \
    }                                                                                            \
                                                                                                 \
    /* The tree over n block results in place (level by level, an odd last one carried up). */  \
    static T S##_tree(T *sums, Py_ssize_t n, int mul) {                                          \
        for (Py_ssize_t width = 1; width < n; width *= 2)                                        \
            for (Py_ssize_t i = 0; i + width < n; i += 2 * width)                                \
                sums[i] = S##_join(sums[i], sums[i + width], mul);                               \
        return sums[0];                                                                          \
    }

REDUCE_ACC(float, accf, load_float)
REDUCE_ACC(double, accd, load_double)

/* Store an accumulator's value at p as `dtype`: its one rounding. A half's accumulator is F32. */
static void store_result(int dtype, char *p, double value) {
    float f = (float)value; /* exact for an F32 accumulator, the one rounding for F64 */
    uint16_t h;
    if (dtype == F64) {
        memcpy(p, &value, 8);
        return;
    }
    if (dtype == F32) {
        memcpy(p, &f, 4);
        return;
    }
    if (dtype == BF16) bf16_narrow(&f, &h, 1);
    else h = f16_narrow_one(f);
    memcpy(p, &h, 2);
}

/* The bytes of output `o`'s first input element and of its output element. */
static void output_at(const Reduce *r, Py_ssize_t o, const char **in, char **out) {
    Py_ssize_t i = 0, j = 0;
    for (int k = r->kept - 1; k >= 0; k--) {
        Py_ssize_t idx = o % r->kshape[k];
        o /= r->kshape[k];
        i += idx * r->kstride[k];
        j += idx * r->ostride[k];
    }
    *in = r->x + i;
    *out = r->out + j;
}

/* Max or min of one output: the left fold of the binary contract (see the header). */
static void extreme(const Reduce *r, const char *base, char *outp) {
    int max = r->op == R_MAX;
    double tile[REDUCE_TILE], best = 0;
    const char *chosen = NULL;
    RunAt at;
    runs_start(r, &at, 0);
    Py_ssize_t s = r->rstride[r->red - 1], offset;
    for (Py_ssize_t done = 0; done < r->m;) {
        Py_ssize_t k = runs_next(r, &at, r->m - done, &offset);
        for (Py_ssize_t i = 0; i < k; i += REDUCE_TILE) {
            Py_ssize_t kk = k - i < REDUCE_TILE ? k - i : REDUCE_TILE;
            const char *p = base + offset + i * s;
            accd_gather(r->dtype, p, s, kk, tile);
            for (Py_ssize_t j = 0; j < kk; j++) {
                double v = tile[j];
                if (chosen == NULL || isnan(v) || (max ? v > best : v < best)) {
                    chosen = p + j * s;
                    best = v;
                    if (isnan(v)) goto done; /* the first NaN wins whatever follows */
                }
            }
        }
        done += k;
    }
done:
    memcpy(outp, chosen, (size_t)r->itemsize);
}

/* Whether outputs are better computed REDUCE_GROUP at a time (`S##_group`): a sum or product
 * whose neighbouring outputs lie closer in memory than its consecutive reduced elements. */
static int grouped(const Reduce *r) {
    if (r->kept == 0 || r->m == 0 || (r->op != R_SUM && r->op != R_PROD)) return 0;
    Py_ssize_t ks = r->kstride[r->kept - 1], rs = r->rstride[r->red - 1];
    return (ks < 0 ? -ks : ks) < (rs < 0 ? -rs : rs);
}

/* Outputs [at, at + len) by `S##_group`, in groups that stay on one row of the innermost kept
 * axis (so each group's outputs are evenly spaced). */
static void reduce_groups(const Reduce *r, Py_ssize_t at, Py_ssize_t len) {
    Py_ssize_t row = r->kshape[r->kept - 1], ks = r->kstride[r->kept - 1];
    Py_ssize_t os = r->ostride[r->kept - 1];
    union {
        float f[REDUCE_GROUP];
        double d[REDUCE_GROUP];
    } res;
    for (Py_ssize_t o = at; o < at + len;) {
        Py_ssize_t g = row - o % row, rest = at + len - o;
        g = g < rest ? g : rest;
        g = g < REDUCE_GROUP ? g : REDUCE_GROUP;
        const char *in;
        char *out;
        output_at(r, o, &in, &out);
        if (r->acc == F64) accd_group(r, in, ks, (int)g, res.d);
        else accf_group(r, in, ks, (int)g, res.f);
        for (Py_ssize_t i = 0; i < g; i++)
            store_result(r->dtype, out + i * os, r->acc == F64 ? res.d[i] : res.f[i]);
        o += g;
    }
}

/* A part of a call split by outputs: outputs [at, at + len), each computed here whole. */
static void reduce_outputs(const void *ctx, Py_ssize_t at, Py_ssize_t len) {
    const Reduce *r = ctx;
    if (grouped(r)) {
        reduce_groups(r, at, len);
        return;
    }
    for (Py_ssize_t o = at; o < at + len; o++) {
        const char *in;
        char *out;
        output_at(r, o, &in, &out);
        if (r->m == 0) store_result(r->dtype, out, r->op == R_PROD ? 1.0 : 0.0);
        else if (r->op == R_MAX || r->op == R_MIN) extreme(r, in, out);
        else if (r->acc == F64) store_result(r->dtype, out, accd_output(r, in));
        else store_result(r->dtype, out, accf_output(r, in));
    }
}

/* A part of a call split by blocks: units [at, at + len), unit u block u % nblocks of output
 * u / nblocks, its result written to the scratch array. */
static void reduce_blocks(const void *ctx, Py_ssize_t at, Py_ssize_t len) {
    const Reduce *r = ctx;
    for (Py_ssize_t u = at; u < at + len; u++) {
        const char *in;
        char *out;
        output_at(r, u / r->nblocks, &in, &out);
        Py_ssize_t start = (u % r->nblocks) * r->block, rest = r->m - start;
        Py_ssize_t n = rest < r->block ? rest : r->block;
        if (r->acc == F64) ((double *)r->scratch)[u] = accd_block(r, in, start, n);
        else ((float *)r->scratch)[u] = accf_block(r, in, start, n);
    }
}

/* Run `part` over `units` on the threads a reduction of `work` input elements gets. */
static void reduce_run(const Reduce *r, TaskPart part, Py_ssize_t units, Py_ssize_t work) {
    int threads = threads_for(REDUCE_POOL_OP, r->dtype, work);
    if (threads > units) threads = (int)units;
#if defined(HAVE_PTHREAD)
    if (threads > 1) {
        Job job = {.task = part, .ctx = r, .work = work, .op = REDUCE_POOL_OP, .dtype = r->dtype,
                   .n = units};
        split_run(&job, threads);
        return;
    }
#endif
    part(r, 0, units);
}

/* Write a refusal into `error` (abi.h: at most error_len bytes); -1. */
__attribute__((format(printf, 3, 4))) static int reduce_refuse(char *error, size_t error_len, const char *format, ...) {
    va_list args;
    va_start(args, format);
    if (error_len > 0) vsnprintf(error, error_len, format, args);
    va_end(args);
    return -1;
}

/* The parameter called `name` of type `type`, or NULL. */
static const ParamArg *param(const ParamArg *params, int n_params, const char *name,
                             ParamType type) {
    for (int i = 0; i < n_params; i++)
        if (params[i].type == type && strcmp(params[i].name, name) == 0) return &params[i];
    return NULL;
}

/* Mark the params' `axes` in `reduced` (which input axes); 0, or -1 with the refusal (missing,
 * unsorted, repeated or out of x's range). Shared with argreduce.c. */
static int reduce_axes_param(const TensorArg *x, const ParamArg *params, int n_params,
                             int *reduced, char *error, size_t error_len) {
    const ParamArg *axes = param(params, n_params, "axes", PARAM_AXES);
    if (axes == NULL) return reduce_refuse(error, error_len, "reduce: the axes are required");
    for (int i = 0; i < axes->value.axes.count; i++) {
        int a = axes->value.axes.axes[i];
        if (a < 0 || a >= x->ndim || (i > 0 && a <= axes->value.axes.axes[i - 1]))
            return reduce_refuse(error, error_len,
                          "reduce: axes must be sorted, distinct axes of the %d-d input", x->ndim);
        reduced[a] = 1;
    }
    return 0;
}

/* Read the parameters into r (accumulator, order, block) and `reduced` (which input axes);
 * 0, or -1 with the refusal. */
static int reduce_params(Reduce *r, const TensorArg *x, const ParamArg *params, int n_params,
                         int *reduced, char *error, size_t error_len) {
    const ParamArg *acc = param(params, n_params, "accumulator", PARAM_CODE);
    const ParamArg *order = param(params, n_params, "order", PARAM_CODE);
    const ParamArg *block = param(params, n_params, "block", PARAM_I64);
    if (reduce_axes_param(x, params, n_params, reduced, error, error_len) < 0) return -1;
    if (acc == NULL || order == NULL)
        return reduce_refuse(error, error_len, "reduce: the axes, accumulator and order are required");
    r->acc = (int)acc->value.i;
    int half_or_f32 = x->dtype == F32 || x->dtype == BF16 || x->dtype == F16;
    if (!(r->acc == F64 && (x->dtype == F64 || x->dtype == F32)) &&
        !(r->acc == F32 && half_or_f32))
        return reduce_refuse(error, error_len,
                      "reduce: the accumulator must be float32 for a float32, bfloat16 or float16 "
                      "input, float64 for a float64 one (or float64 for float32), got code %lld",
                      (long long)acc->value.i);
    if (order->value.i == ORDER_SEQUENTIAL) r->lanes = 1;
    else if (order->value.i == ORDER_BLOCKED && block != NULL && block->value.i >= 1)
        r->lanes = REDUCE_LANES;
    else
        return reduce_refuse(error, error_len,
                      "reduce: the order must be ORDER_SEQUENTIAL or ORDER_BLOCKED with a block "
                      "size of 1 or more, got order %lld",
                      (long long)order->value.i);
    if (r->lanes > 1 && (uint64_t)block->value.i > (uint64_t)PY_SSIZE_T_MAX)
        return reduce_refuse(error, error_len, "reduce: the block size overflows");
    r->block = r->lanes == 1 ? 1 : (Py_ssize_t)block->value.i;
    return 0;
}

/* Append axis (shape n, input stride s, output stride o) to a collapsed list of `*dims`: merged
 * into the last one when it continues it in row-major order (extent-1 axes dropped), so a walk
 * takes the longest runs. Sizes are the caller's checked products. */
static void collapse(Py_ssize_t *shape, Py_ssize_t *in, Py_ssize_t *out, int *dims, Py_ssize_t n,
                     Py_ssize_t s, Py_ssize_t o) {
    Py_ssize_t si, so;
    if (n == 1) return;
    int d = *dims - 1;
    if (d >= 0 && !__builtin_mul_overflow(s, n, &si) && si == in[d] &&
        (out == NULL || (!__builtin_mul_overflow(o, n, &so) && so == out[d]))) {
        shape[d] *= n;
        in[d] = s;
        if (out != NULL) out[d] = o;
        return;
    }
    shape[++d] = n;
    in[d] = s;
    if (out != NULL) out[d] = o;
    *dims = d + 1;
}

/* Split x's axes into the kept (with out's strides) and the reduced ones, collapsed, and count
 * the outputs, reduced elements and blocks; 0, or -1 with the refusal (shapes, overflow). */
static int reduce_shape(Reduce *r, const TensorArg *x, const TensorArg *out, const int *reduced,
                        int keepdims, char *error, size_t error_len) {
    int count = 0, j = 0;
    for (int k = 0; k < x->ndim; k++) count += reduced[k];
    if (out->dtype != x->dtype || out->ndim != (keepdims ? x->ndim : x->ndim - count))
        return reduce_refuse(error, error_len, "reduce: out must be of x's dtype and the reduced rank");
    r->m = r->n_out = 1;
    r->kept = r->red = 0;
    for (int k = 0; k < x->ndim; k++) {
        Py_ssize_t n = x->shape[k], *total = reduced[k] ? &r->m : &r->n_out;
        if (reduced[k] ? keepdims && out->shape[k] != 1 : out->shape[j] != n)
            return reduce_refuse(error, error_len, "reduce: out's shape is not x's reduced shape");
        if (__builtin_mul_overflow(*total, n, total))
            return reduce_refuse(error, error_len, "reduce: x's shape overflows");
        if (reduced[k]) collapse(r->rshape, r->rstride, NULL, &r->red, n, x->strides[k], 0);
        else collapse(r->kshape, r->kstride, r->ostride, &r->kept, n, x->strides[k],
                      out->strides[j]);
        j += keepdims || !reduced[k];
    }
    Py_ssize_t all;
    if (__builtin_mul_overflow(r->m, r->n_out, &all))
        return reduce_refuse(error, error_len, "reduce: x's shape overflows");
    if (r->red == 0) { /* nothing to walk but the one element: a run of one */
        r->rshape[0] = 1;
        r->rstride[0] = 0;
        r->red = 1;
    }
    r->nblocks = r->m / r->block + (r->m % r->block != 0);
    return 0;
}

/* argmax and argmin (argreduce.c, included after this file). */
static int argreduce_kernel(int op, const TensorArg *in, int n_in, const TensorArg *out,
                            const ParamArg *params, int n_params, char *error, size_t error_len);

/* The REDUCE capsule (abi.h's `ShapedKernel`): out = op over params' axes of in[0], by the
 * accumulator and order the params give (see the header); argmax and argmin by argreduce.c.
 * Never touches the GIL. */
static int reduce_kernel(int op, const TensorArg *in, int n_in, const TensorArg *out,
                         const ParamArg *params, int n_params, char *error, size_t error_len) {
    Reduce r = {.op = op};
    int reduced[MAX_DIMS] = {0};
    if (op == R_ARGMAX || op == R_ARGMIN)
        return argreduce_kernel(op, in, n_in, out, params, n_params, error, error_len);
    if (op < 0 || op >= N_REDUCTION_OPS || n_in != 1)
        return reduce_refuse(error, error_len, "reduce: op must be in [0, %d) with one input, got %d",
                      N_REDUCTION_OPS, op);
    const TensorArg *x = in;
    if (x->dtype < 0 || x->dtype >= N_DTYPES || x->ndim < 0 || x->ndim > MAX_DIMS)
        return reduce_refuse(error, error_len,
                      "reduce: x must be float32, float64, bfloat16 or float16, of %d dims at most",
                      MAX_DIMS);
    const ParamArg *keep = param(params, n_params, "keepdims", PARAM_I64);
    if (reduce_params(&r, x, params, n_params, reduced, error, error_len) < 0 ||
        reduce_shape(&r, x, out, reduced, keep != NULL && keep->value.i, error, error_len) < 0)
        return -1;
    if (r.m == 0 && r.n_out > 0 && (op == R_MAX || op == R_MIN))
        return reduce_refuse(error, error_len, "reduce: the %s of an empty set is undefined",
                      REDUCTION_NAMES[op]);
    r.dtype = x->dtype;
    r.itemsize = ITEMSIZE[x->dtype];
    r.x = x->data;
    r.out = out->data;
    int by_blocks = r.lanes > 1 && r.nblocks > 1 && r.n_out < REDUCE_FEW_OUTPUTS &&
                    (op == R_SUM || op == R_PROD);
    if (!by_blocks) {
        reduce_run(&r, reduce_outputs, r.n_out, r.m * r.n_out);
        return 0;
    }
    Py_ssize_t units = r.n_out * r.nblocks; /* at most m * n_out, which is checked */
    size_t size = (size_t)units * (r.acc == F64 ? sizeof(double) : sizeof(float));
    r.scratch = PyMem_RawMalloc(size);
    if (r.scratch == NULL) return reduce_refuse(error, error_len, "reduce: out of memory");
    reduce_run(&r, reduce_blocks, units, r.m * r.n_out);
    for (Py_ssize_t o = 0; o < r.n_out; o++) { /* the tree over each output's blocks */
        const char *unused;
        char *dst;
        output_at(&r, o, &unused, &dst);
        double v = r.acc == F64 ? accd_tree((double *)r.scratch + o * r.nblocks, r.nblocks,
                                            op == R_PROD)
                                : accf_tree((float *)r.scratch + o * r.nblocks, r.nblocks,
                                            op == R_PROD);
        store_result(r.dtype, dst, v);
    }
    PyMem_RawFree(r.scratch);
    return 0;
}
