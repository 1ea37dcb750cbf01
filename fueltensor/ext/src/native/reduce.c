/* ---------------------------------------------------------------------------------------------
 * Reductions (ops.py's REDUCTION_OPS: R_SUM, R_PROD, R_MAX, R_MIN over a sorted list of axes),
 * abi.h's `ShapedKernel` `reduce_kernel`, exported as the REDUCE capsule and, for tests and the
 * coming thunks, as `_native.reduce`. Inputs F32, F64, BF16, F16 of any strides (negative, zero,
 * offset views); the output has the input's dtype and is rounded ONCE, from the accumulator.
 *
 * The order of a sum or product is fixed by the parameters alone, never by the thread count or
 * the instruction set (the parts are one C source compiled per instruction set, `ReduceParts`:
 * every body runs the same operations, the wider ones on more lanes, blocks or outputs at once):
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
 * The eight lanes are one vector on every body (a GCC vector of eight; one fixed lane order,
 * not the vector width's), four whole blocks of a dense run are added side by side (four
 * independent chains), and the lanes bound a block's error by ceil(block / 8) + 2 steps rather
 * than block - 1. The accumulator is F32 (for F32, BF16, F16 inputs) or F64 (F64; optionally
 * F32). An empty sum is +0, an empty product 1.
 *
 * Max and min are exact, so no order is needed: the result is the left fold of the binary
 * maximum (minimum) contract (contracts/fuel-cpu-backend.md, maximum_f32) over the reduced
 * elements in row-major order: a NaN operand is returned as it is, lhs first, so the result is
 * the first NaN, bits unchanged; on a tie, +0 against -0 included, lhs wins, so the first of the
 * equal elements. The result is an input element's bits. The max or min of nothing is refused.
 * Dense F32 and F64 runs take a vector max (min) in any lane order, which is exact when no NaN
 * is met and the extreme is not zero (a non-zero value has one encoding); a NaN or a zero
 * extreme is left to the element-by-element fold. Outputs side by side (a max down the
 * columns) are folded together, each by the binary rule, across the outputs.
 *
 * Threads split units that are whole results: outputs (each computed start to end by one
 * thread), or, when a blocked reduction has fewer than REDUCE_FEW_OUTPUTS outputs, the blocks
 * of every output, written to a scratch array that the caller combines by the tree after; a
 * max or min of few long outputs, by chunks of EXTREME_CHUNK, the chunks' results folded in
 * order after (the fold is associative: the first NaN, else the first extreme). Which
 * path runs depends on the shape and parameters only, so the bits are one thread's. */

/* REDUCE_LANES and REDUCE_FEW_OUTPUTS are native.h's (module.c names them as constants). */
/* Outputs adjacent along the innermost kept axis computed in one walk (`S##_group`), at most:
 * a sum down the columns of a 4096-wide f32 matrix reads whole 16 KiB rows in turn, as a
 * stream, where 128 outputs read 512 bytes of each (the benchmark's axis-0 sum: 32 outputs ran
 * at 0.3x NumPy, 128 at 0.5x). Its lanes and tree stack are a heap workspace (`reduce_groups`):
 * 8 lanes, a row, a total, the result and a stack level per bit of the block count. */
#define REDUCE_GROUP 4096
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
INLINE void runs_start(const Reduce *r, RunAt *at, Py_ssize_t start) {
    at->offset = 0;
    for (int k = r->red - 1; k >= 0; k--) {
        at->idx[k] = start % r->rshape[k];
        start /= r->rshape[k];
        at->offset += at->idx[k] * r->rstride[k];
    }
}

/* The length (at most `most`) of the run of the innermost reduced axis the walk stands at, its
 * bytes in `*offset`; the walk moves past it. */
INLINE Py_ssize_t runs_next(const Reduce *r, RunAt *at, Py_ssize_t most, Py_ssize_t *offset) {
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

/* Eight lanes of an accumulator as one GCC vector (the vector extension: elementwise IEEE
 * operations, each lane's own; two SSE registers on the baseline body, one AVX one above). */
typedef float ReduceF8 __attribute__((vector_size(8 * sizeof(float))));
typedef double ReduceD8 __attribute__((vector_size(8 * sizeof(double))));

/* The sum and product loops for one accumulator type T (float, double): a macro rather than
 * one function per type written twice, so that both run the same steps. `mul` is a constant
 * at every call, so each loop is specialised to its one operation. */
#define REDUCE_ACC(T, S, LOAD, V)                                                                   \
    /* k elements of a run at p (byte stride s) as T into dst. */                               \
    INLINE void S##_gather(int dtype, const char *p, Py_ssize_t s, Py_ssize_t k, T *dst) {      \
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
        if (i + REDUCE_LANES <= k) { /* lane j: element i + j, the eight as one vector */        \
            V l, x;                                                                              \
            memcpy(&l, lane, sizeof l);                                                          \
            for (; i + REDUCE_LANES <= k; i += REDUCE_LANES) {                                   \
                memcpy(&x, v + i, sizeof x);                                                     \
                if (mul) l *= x;                                                                 \
                else l += x;                                                                     \
            }                                                                                    \
            memcpy(lane, &l, sizeof l);                                                          \
        }                                                                                        \
        for (int j = 0; i < k; i++, j++) lane[j] = mul ? lane[j] * v[i] : lane[j] + v[i];       \
    }                                                                                            \
                                                                                                 \
    INLINE T S##_join(T a, T b, int mul) { return mul ? a * b : a + b; }                         \
                                                                                                 \
    /* The result of reduced elements [start, start + len) of the output whose first element is \
     * at `base`: one block (ORDER_BLOCKED), or all of them (ORDER_SEQUENTIAL). */                \
    INLINE T S##_block(const Reduce *r, const char *base, Py_ssize_t start, Py_ssize_t len) {    \
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
    /* Four consecutive whole blocks from reduced element `start` of the output at `base`, into \
     * t[0..3], where they lie in one dense run of the accumulator's type (else 0): each block's \
     * lanes added exactly as `S##_block` adds them, the four blocks' lanes side by side, so   \
     * that the vector units run four independent chains rather than wait on one. */            \
    INLINE int S##_blocks4(const Reduce *r, const char *base, Py_ssize_t start, T *t) {          \
        int mul = r->op == R_PROD;                                                               \
        Py_ssize_t B = r->block, offset;                                                         \
        if (r->lanes != REDUCE_LANES || B % REDUCE_LANES != 0 || (r->m - start) / 4 < B ||       \
            r->itemsize != (Py_ssize_t)sizeof(T) || r->rstride[r->red - 1] != r->itemsize ||     \
            (r->dtype == F64) != (sizeof(T) == 8))                                               \
            return 0;                                                                            \
        RunAt at;                                                                                \
        runs_start(r, &at, start);                                                               \
        if (runs_next(r, &at, 4 * B, &offset) < 4 * B) return 0; /* 4 B <= m - start: no wrap */ \
        const char *p = base + offset;                                                           \
        if ((uintptr_t)p % sizeof(T) != 0) return 0;                                             \
        const T *v = (const T *)(const void *)p;                                                 \
        V l0, l1, l2, l3, x0, x1, x2, x3;                                                        \
        for (int j = 0; j < REDUCE_LANES; j++) l0[j] = mul ? (T)1 : (T)-0.0;                     \
        l1 = l2 = l3 = l0;                                                                       \
        for (Py_ssize_t i = 0; i < B; i += REDUCE_LANES) {                                       \
            memcpy(&x0, v + i, sizeof x0);                                                       \
            memcpy(&x1, v + B + i, sizeof x1);                                                   \
            memcpy(&x2, v + 2 * B + i, sizeof x2);                                               \
            memcpy(&x3, v + 3 * B + i, sizeof x3);                                               \
            if (mul) l0 *= x0, l1 *= x1, l2 *= x2, l3 *= x3;                                     \
            else l0 += x0, l1 += x1, l2 += x2, l3 += x3;                                         \
        }                                                                                        \
        V lanes[4] = {l0, l1, l2, l3};                                                           \
        for (int k = 0; k < 4; k++) {                                                            \
            V l = lanes[k];                                                                      \
            t[k] = S##_join(S##_join(S##_join(l[0], l[1], mul), S##_join(l[2], l[3], mul), mul), \
                            S##_join(S##_join(l[4], l[5], mul), S##_join(l[6], l[7], mul), mul), \
                            mul);                                                                \
        }                                                                                        \
        return 1;                                                                                \
    }                                                                                            \
                                                                                                 \
    /* Every block of one output, combined by the pairwise tree as they come: a stack of the    \
     * subtrees so far, two of one level joined at once, the rest joined right to left at the   \
     * end (which is the level-by-level tree with an odd last one carried up). */                \
    INLINE T S##_output(const Reduce *r, const char *base) {                                     \
        int mul = r->op == R_PROD, depth = 0;                                                    \
        T stack[64];                                                                             \
        int level[64];                                                                           \
        if (r->lanes == 1) return S##_block(r, base, 0, r->m);                                   \
        for (Py_ssize_t b = 0; b < r->nblocks;) {                                                \
            Py_ssize_t start = b * r->block, len = r->m - start;                                 \
            T four[4];                                                                           \
            int n = r->nblocks - b >= 4 && S##_blocks4(r, base, start, four) ? 4 : 1;            \
            if (n == 1) four[0] = S##_block(r, base, start, len < r->block ? len : r->block);    \
            for (int q = 0; q < n; q++) {                                                        \
                T t = four[q];                                                                   \
                int lv = 0;                                                                      \
                for (; depth > 0 && level[depth - 1] == lv; lv++)                                \
                    t = S##_join(stack[--depth], t, mul);                                        \
                stack[depth] = t;                                                                \
                level[depth++] = lv;                                                             \
            }                                                                                    \
            b += n;                                                                              \
        }                                                                                        \
        T t = stack[--depth];                                                                    \
        while (depth > 0) t = S##_join(stack[--depth], t, mul);                                  \
        return t;                                                                                \
    }                                                                                            \
                                                                                                 \
    /* Block total of each of the g outputs' lanes (lane[j * G + i]: lane j of output i) into t, \
     * the lanes reset. */                                                                      \
    INLINE void S##_totals(T *lane, Py_ssize_t G, int lanes, int g, int mul, T *t) {            \
        for (int i = 0; i < g; i++) {                                                            \
            if (lanes == 1) t[i] = lane[i];                                                      \
            else                                                                                 \
                t[i] = S##_join(                                                                 \
                    S##_join(S##_join(lane[i], lane[G + i], mul),                                \
                             S##_join(lane[2 * G + i], lane[3 * G + i], mul), mul),              \
                    S##_join(S##_join(lane[4 * G + i], lane[5 * G + i], mul),                    \
                             S##_join(lane[6 * G + i], lane[7 * G + i], mul), mul),              \
                    mul);                                                                        \
            for (int j = 0; j < REDUCE_LANES; j++) lane[j * G + i] = mul ? (T)1 : (T)-0.0;        \
        }                                                                                        \
    }                                                                                            \
                                                                                                 \
    /* `S##_output` for g <= G outputs `ks` bytes apart at once, into res: the same lanes,      \
     * blocks and tree for each, but one walk of the reduced elements for all, so that outputs  \
     * adjacent in memory are read together (a sum down the columns: a row's stretch at a time) \
     * rather than each down its own column. The blocks' tree levels are the same for every     \
     * output. `work` is the group's workspace (`group_work`): 8 lanes, a row, a block total    \
     * and the tree's stack of `levels` entries, G each. */                                      \
    INLINE void S##_group(const Reduce *r, const char *base, Py_ssize_t ks, int g, T *work,     \
                          Py_ssize_t G, int levels, T *res) {                                    \
        int mul = r->op == R_PROD, depth = 0, level[64];                                         \
        T *lane = work, *row = work + REDUCE_LANES * G, *t = row + G, *stack = t + G;            \
        for (Py_ssize_t i = 0; i < REDUCE_LANES * G; i++) lane[i] = mul ? (T)1 : (T)-0.0;        \
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
                T *l = lane + (r->lanes == 1 ? 0 : pos % REDUCE_LANES) * G;                      \
                if (mul) for (int i = 0; i < g; i++) l[i] = l[i] * v[i];                         \
                else for (int i = 0; i < g; i++) l[i] = l[i] + v[i];                             \
                if (++pos < block && done + e + 1 < r->m) continue;                              \
                S##_totals(lane, G, r->lanes, g, mul, t); /* a block ends: into the tree */      \
                pos = 0;                                                                         \
                int lv = 0;                                                                      \
                for (; depth > 0 && level[depth - 1] == lv; lv++, depth--)                       \
                    for (int i = 0; i < g; i++)                                                  \
                        t[i] = S##_join(stack[(depth - 1) * G + i], t[i], mul);                  \
                if (depth >= levels) return; /* never: levels bounds the tree's depth */         \
                memcpy(stack + depth * G, t, (size_t)g * sizeof(T));                             \
                level[depth++] = lv;                                                             \
            }                                                                                    \
            done += k;                                                                           \
        }                                                                                        \
        if (depth == 0) return; /* m == 0, never grouped: said for the compiler's bounds */     \
        memcpy(res, stack + --depth * G, (size_t)g * sizeof(T));                                 \
        while (depth-- > 0)                                                                      \
            for (int i = 0; i < g; i++) res[i] = S##_join(stack[depth * G + i], res[i], mul);    \
    }                                                                                            \
                                                                                                 \
    /* The tree over n block results in place (level by level, an odd last one carried up). */  \
    static T S##_tree(T *sums, Py_ssize_t n, int mul) {                                          \
        for (Py_ssize_t width = 1; width < n; width *= 2)                                        \
            for (Py_ssize_t i = 0; i + width < n; i += 2 * width)                                \
                sums[i] = S##_join(sums[i], sums[i + width], mul);                               \
        return sums[0];                                                                          \
    }

REDUCE_ACC(float, accf, load_float, ReduceF8)
REDUCE_ACC(double, accd, load_double, ReduceD8)

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
