/* ---------------------------------------------------------------------------------------------
 * The reduction kernel's parts and entry (reduce.c's header says what they compute): the parts
 * the pool runs, compiled per instruction set; the parameters and shapes read and checked; and
 * `reduce_kernel`, the REDUCE capsule. Apart from reduce.c so that each file stays short. */

/* Whether outputs are better computed REDUCE_GROUP at a time (`S##_group`, `S##_extreme_group`):
 * a reduction whose neighbouring outputs lie closer in memory than its consecutive reduced
 * elements; for a max or min, a dense row of F32 or F64 outputs (the group reads them as T). */
static int grouped(const Reduce *r) {
    if (r->kept == 0 || r->m == 0) return 0;
    Py_ssize_t ks = r->kstride[r->kept - 1], rs = r->rstride[r->red - 1];
    if ((r->op == R_MAX || r->op == R_MIN) &&
        !((r->dtype == F32 || r->dtype == F64) && ks == r->itemsize))
        return 0;
    return (ks < 0 ? -ks : ks) < (rs < 0 ? -rs : rs);
}

/* Entries of a group's tree stack (`S##_group`): the bit length of the block count bounds the
 * subtrees a binary counter of the blocks holds at once. */
static int group_levels(const Reduce *r) {
    int levels = 1;
    for (Py_ssize_t n = r->nblocks; n > 1; n >>= 1) levels++;
    return levels;
}

/* Output o computed alone: its sum, product, max or min stored. */
INLINE void reduce_one(const Reduce *r, Py_ssize_t o) {
    const char *in;
    char *out;
    output_at(r, o, &in, &out);
    if (r->m == 0) store_result(r->dtype, out, r->op == R_PROD ? 1.0 : 0.0);
    else if (r->op == R_MAX || r->op == R_MIN) extreme(r, in, 0, r->m, out);
    else if (r->acc == F64) store_result(r->dtype, out, accd_output(r, in));
    else store_result(r->dtype, out, accf_output(r, in));
}

/* Outputs o .. o + g of a group (g <= G), from `in`, stored os bytes apart from `out`, with
 * the workspace `work` that `reduce_groups` sized for G. */
INLINE void reduce_group(const Reduce *r, const char *in, char *out, Py_ssize_t os, int g,
                         void *work, Py_ssize_t G, int levels) {
    Py_ssize_t ks = r->kstride[r->kept - 1];
    if (r->op == R_MAX || r->op == R_MIN) {
        char *best = (char *)work + G * r->itemsize;
        if (r->dtype == F64) accd_extreme_group(r, in, g, work, (double *)(void *)best);
        else accf_extreme_group(r, in, g, work, (float *)(void *)best);
        for (int i = 0; i < g; i++) /* the chosen elements' bits */
            memcpy(out + i * os, best + (size_t)i * (size_t)r->itemsize, (size_t)r->itemsize);
        return;
    }
    Py_ssize_t at_res = (REDUCE_LANES + 2 + levels) * G;
    if (r->acc == F64) {
        double *res = (double *)work + at_res;
        accd_group(r, in, ks, g, work, G, levels, res);
        for (int i = 0; i < g; i++) store_result(r->dtype, out + i * os, res[i]);
    } else {
        float *res = (float *)work + at_res;
        accf_group(r, in, ks, g, work, G, levels, res);
        for (int i = 0; i < g; i++) store_result(r->dtype, out + i * os, res[i]);
    }
}

/* Outputs [at, at + len) by groups (`reduce_group`) that stay on one row of the innermost kept
 * axis (so each group's outputs are evenly spaced), of up to REDUCE_GROUP outputs; one at a time
 * where the workspace cannot be allocated (the same bits). */
INLINE void reduce_groups(const Reduce *r, Py_ssize_t at, Py_ssize_t len) {
    Py_ssize_t row = r->kshape[r->kept - 1], os = r->ostride[r->kept - 1];
    Py_ssize_t G = row < len ? row : len;
    G = G < REDUCE_GROUP ? G : REDUCE_GROUP;
    int levels = group_levels(r), extremes = r->op == R_MAX || r->op == R_MIN;
    size_t item = extremes ? (size_t)r->itemsize : r->acc == F64 ? 8 : 4, bytes;
    size_t items = (size_t)(REDUCE_LANES + 3 + levels) * (size_t)G; /* G <= REDUCE_GROUP */
    void *work = __builtin_mul_overflow(items, item, &bytes) ? NULL : PyMem_RawMalloc(bytes);
    for (Py_ssize_t o = at; o < at + len;) {
        Py_ssize_t g = row - o % row, rest = at + len - o;
        g = g < rest ? g : rest;
        g = g < G ? g : G;
        const char *in;
        char *out;
        output_at(r, o, &in, &out);
        if (work != NULL) reduce_group(r, in, out, os, (int)g, work, G, levels);
        else
            for (Py_ssize_t i = 0; i < g; i++) reduce_one(r, o + i);
        o += g;
    }
    PyMem_RawFree(work);
}

/* A part of a call split by outputs: outputs [at, at + len), each computed here whole. */
INLINE void reduce_outputs(const void *ctx, Py_ssize_t at, Py_ssize_t len) {
    const Reduce *r = ctx;
    if (grouped(r)) {
        reduce_groups(r, at, len);
        return;
    }
    for (Py_ssize_t o = at; o < at + len; o++) reduce_one(r, o);
}

/* A part of a call split by blocks: units [at, at + len), unit u block u % nblocks of output
 * u / nblocks, its result written to the scratch array (four at once where `S##_blocks4` can). */
INLINE void reduce_blocks(const void *ctx, Py_ssize_t at, Py_ssize_t len) {
    const Reduce *r = ctx;
    for (Py_ssize_t u = at; u < at + len;) {
        const char *in;
        char *out;
        output_at(r, u / r->nblocks, &in, &out);
        Py_ssize_t b = u % r->nblocks, start = b * r->block, rest = r->m - start;
        Py_ssize_t n = rest < r->block ? rest : r->block;
        int four = at + len - u >= 4 && r->nblocks - b >= 4;
        if (r->acc == F64) {
            double *t = (double *)r->scratch + u;
            if (four && accd_blocks4(r, in, start, t)) u += 4;
            else *t = accd_block(r, in, start, n), u++;
        } else {
            float *t = (float *)r->scratch + u;
            if (four && accf_blocks4(r, in, start, t)) u += 4;
            else *t = accf_block(r, in, start, n), u++;
        }
    }
}

/* A part of a max or min split by chunks: units [at, at + len), unit u chunk u % nblocks (of
 * r->block = EXTREME_CHUNK elements) of output u / nblocks, its result's bytes to the scratch. */
INLINE void reduce_extreme_blocks(const void *ctx, Py_ssize_t at, Py_ssize_t len) {
    const Reduce *r = ctx;
    for (Py_ssize_t u = at; u < at + len; u++) {
        const char *in;
        char *out;
        output_at(r, u / r->nblocks, &in, &out);
        Py_ssize_t start = (u % r->nblocks) * r->block, rest = r->m - start;
        extreme(r, in, start, rest < r->block ? rest : r->block,
                (char *)r->scratch + u * r->itemsize);
    }
}

/* The parts of a call (`TaskPart`s) compiled for each instruction set, everything they call
 * inlined into them: the same C, so the same operations in the same order on every body (no
 * contraction, no reassociation: the vector bodies only hold more lanes or outputs at once). */
typedef struct {
    TaskPart outputs, blocks, extreme_blocks;
} ReduceParts;

#define DEFINE_REDUCE_PARTS(isa, target)                                                        \
    target static void reduce_outputs_##isa(const void *ctx, Py_ssize_t at, Py_ssize_t len) {   \
        reduce_outputs(ctx, at, len);                                                           \
    }                                                                                           \
    target static void reduce_blocks_##isa(const void *ctx, Py_ssize_t at, Py_ssize_t len) {    \
        reduce_blocks(ctx, at, len);                                                            \
    }                                                                                           \
    target static void reduce_extreme_blocks_##isa(const void *ctx, Py_ssize_t at,              \
                                                   Py_ssize_t len) {                            \
        reduce_extreme_blocks(ctx, at, len);                                                    \
    }

DEFINE_REDUCE_PARTS(baseline, )
#define REDUCE_PARTS_OF(isa) {reduce_outputs_##isa, reduce_blocks_##isa, reduce_extreme_blocks_##isa}
#ifdef HAVE_AVX2_F16C
DEFINE_REDUCE_PARTS(avx2, TARGET_AVX2_F16C)
#endif
#ifdef HAVE_AVX512
DEFINE_REDUCE_PARTS(avx512, TARGET_AVX512)
#endif

/* The parts of the selected instruction set (`N.isa`, one this CPU runs: module.c). */
static const ReduceParts *reduce_parts(void) {
    static const ReduceParts table[MAX_ISAS] = {
        REDUCE_PARTS_OF(baseline),
#ifdef HAVE_AVX2_F16C
        REDUCE_PARTS_OF(avx2),
#endif
#ifdef HAVE_AVX512
        REDUCE_PARTS_OF(avx512),
#endif
    };
    return &table[N.isa];
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

/* A max or min of few outputs, each of more than EXTREME_CHUNK elements: every output's chunks
 * on the threads (`reduce_extreme_blocks`), then each output's chunk results folded in order by
 * the binary contract's rule, which gives the fold of the whole (the first NaN, else the first
 * extreme: the first chunk holding it holds it first). 0, or -1 with the refusal. */
static int reduce_extremes(Reduce *r, char *error, size_t error_len) {
    size_t size;
    int max = r->op == R_MAX;
    r->block = EXTREME_CHUNK;
    r->nblocks = r->m / r->block + (r->m % r->block != 0);
    Py_ssize_t units = r->n_out * r->nblocks; /* at most m * n_out, which is checked */
    if (__builtin_mul_overflow((size_t)units, (size_t)r->itemsize, &size))
        return reduce_refuse(error, error_len, "reduce: x's shape overflows");
    r->scratch = PyMem_RawMalloc(size);
    if (r->scratch == NULL) return reduce_refuse(error, error_len, "reduce: out of memory");
    reduce_run(r, reduce_parts()->extreme_blocks, units, r->m * r->n_out);
    for (Py_ssize_t o = 0; o < r->n_out; o++) {
        const char *unused, *parts = (const char *)r->scratch + o * r->nblocks * r->itemsize;
        const char *chosen = parts;
        char *dst;
        double best = load_double(r->dtype, chosen);
        for (Py_ssize_t b = 1; b < r->nblocks && !isnan(best); b++) {
            const char *p = parts + b * r->itemsize;
            double v = load_double(r->dtype, p);
            if (isnan(v) || (max ? v > best : v < best)) {
                chosen = p;
                best = v;
            }
        }
        output_at(r, o, &unused, &dst);
        memcpy(dst, chosen, (size_t)r->itemsize);
    }
    PyMem_RawFree(r->scratch);
    return 0;
}

/* argmax and argmin (argreduce.c, included after this file). */
static int argreduce_kernel(int op, const TensorArg *in, int n_in, const TensorArg *out,
                            const ParamArg *params, int n_params, char *error, size_t error_len);

/* The REDUCE capsule (abi.h's `ShapedKernel`): out = op over params' axes of in[0], by the
 * accumulator and order the params give (see the header); argmax and argmin by argreduce.c.
 * Never touches the GIL. */
SHARED int reduce_kernel(int op, const TensorArg *in, int n_in, const TensorArg *out,
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
    if ((op == R_MAX || op == R_MIN) && r.m > EXTREME_CHUNK && r.n_out > 0 &&
        r.n_out < REDUCE_FEW_OUTPUTS)
        return reduce_extremes(&r, error, error_len);
    int by_blocks = r.lanes > 1 && r.nblocks > 1 && r.n_out < REDUCE_FEW_OUTPUTS &&
                    (op == R_SUM || op == R_PROD);
    if (!by_blocks) {
        reduce_run(&r, reduce_parts()->outputs, r.n_out, r.m * r.n_out);
        return 0;
    }
    Py_ssize_t units = r.n_out * r.nblocks; /* at most m * n_out, which is checked */
    size_t size = (size_t)units * (r.acc == F64 ? sizeof(double) : sizeof(float));
    r.scratch = PyMem_RawMalloc(size);
    if (r.scratch == NULL) return reduce_refuse(error, error_len, "reduce: out of memory");
    reduce_run(&r, reduce_parts()->blocks, units, r.m * r.n_out);
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
