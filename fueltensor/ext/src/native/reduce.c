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

#define REDUCE_LANES 8
/* Below this many outputs a blocked sum or product splits by blocks, so that a full reduction
 * uses every thread; from here the outputs alone are enough parts. */
#define REDUCE_FEW_OUTPUTS 64
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

/* Max or min of reduced elements [start, start + len) of one output, the left fold of the binary
 * contract (see the header), element by element: its bytes into dst. */
INLINE void extreme_fold(const Reduce *r, const char *base, Py_ssize_t start, Py_ssize_t len,
                         char *dst) {
    int max = r->op == R_MAX;
    double tile[REDUCE_TILE], best = 0;
    const char *chosen = NULL;
    RunAt at;
    runs_start(r, &at, start);
    Py_ssize_t s = r->rstride[r->red - 1], offset;
    for (Py_ssize_t done = 0; done < len;) {
        Py_ssize_t k = runs_next(r, &at, len - done, &offset);
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
    memcpy(dst, chosen, (size_t)r->itemsize);
}

/* Lanes of the vector max (min) of a dense run (`S##_extreme_fast`): two AVX-512 vectors of f32. */
#define EXTREME_LANES 32
/* Reduced elements a part of a max or min of few outputs takes (`reduce_extreme_blocks`): the
 * fold is exact and associative (the first NaN, else the first extreme), so any cut gives the
 * same bits; this one only sizes the parts. */
#define EXTREME_CHUNK 65536

/* The max and min over one floating type T (F32: float, F64: double; I the integer of T's width
 * for the NaN flags). `S##_extreme_fast` is the fold's value where the order cannot matter: with
 * no NaN, the extreme's value is the same in any order, and a non-zero value has one encoding,
 * the first extreme element's; a NaN (whose payload is the first NaN's) and a zero extreme (+0
 * or -0, the first zero's) are left to `extreme_fold`. `S##_extreme_group` folds g outputs
 * sizeof(T) apart at once, each by the binary contract's rule, vectorised across the outputs. */
#define EXTREME_ACC(T, I, S)                                                                     \
    INLINE int S##_extreme_fast(const Reduce *r, const char *base, Py_ssize_t start,             \
                                Py_ssize_t len, T *result) {                                     \
        int max = r->op == R_MAX;                                                                \
        T m[EXTREME_LANES];                                                                      \
        I bad[EXTREME_LANES] = {0};                                                              \
        RunAt at;                                                                                \
        Py_ssize_t s = r->rstride[r->red - 1], offset;                                           \
        if (s != (Py_ssize_t)sizeof(T) || len == 0) return 0;                                    \
        runs_start(r, &at, start);                                                               \
        for (Py_ssize_t done = 0; done < len;) {                                                 \
            Py_ssize_t k = runs_next(r, &at, len - done, &offset), i = 0;                        \
            const char *p = base + offset;                                                       \
            if ((uintptr_t)p % sizeof(T) != 0) return 0;                                         \
            const T *v = (const T *)(const void *)p;                                             \
            if (done == 0)                                                                       \
                for (int j = 0; j < EXTREME_LANES; j++) m[j] = v[0];                             \
            if (max)                                                                             \
                for (; i + EXTREME_LANES <= k; i += EXTREME_LANES)                               \
                    for (int j = 0; j < EXTREME_LANES; j++) {                                    \
                        T x = v[i + j];                                                          \
                        m[j] = x > m[j] ? x : m[j];                                              \
                        bad[j] |= (I)(x != x);                                                   \
                    }                                                                            \
            else                                                                                 \
                for (; i + EXTREME_LANES <= k; i += EXTREME_LANES)                               \
                    for (int j = 0; j < EXTREME_LANES; j++) {                                    \
                        T x = v[i + j];                                                          \
                        m[j] = x < m[j] ? x : m[j];                                              \
                        bad[j] |= (I)(x != x);                                                   \
                    }                                                                            \
            for (; i < k; i++) {                                                                 \
                T x = v[i];                                                                      \
                m[0] = (max ? x > m[0] : x < m[0]) ? x : m[0];                                   \
                bad[0] |= (I)(x != x);                                                           \
            }                                                                                    \
            done += k;                                                                           \
        }                                                                                        \
        T best = m[0];                                                                           \
        for (int j = 0; j < EXTREME_LANES; j++) {                                                \
            if (bad[j]) return 0;                                                                \
            best = (max ? m[j] > best : m[j] < best) ? m[j] : best;                              \
        }                                                                                        \
        if (best == 0) return 0;                                                                 \
        *result = best;                                                                          \
        return 1;                                                                                \
    }                                                                                            \
                                                                                                 \
    INLINE void S##_extreme_group(const Reduce *r, const char *base, int g, T *row, T *best) {   \
        int max = r->op == R_MAX;                                                                \
        RunAt at;                                                                                \
        runs_start(r, &at, 0);                                                                   \
        Py_ssize_t s = r->rstride[r->red - 1], offset;                                           \
        for (Py_ssize_t done = 0; done < r->m;) {                                                \
            Py_ssize_t k = runs_next(r, &at, r->m - done, &offset);                              \
            for (Py_ssize_t e = 0; e < k; e++) {                                                 \
                const char *p = base + offset + e * s;                                           \
                const T *v = (const T *)(const void *)p;                                         \
                if ((uintptr_t)p % sizeof(T) != 0) {                                             \
                    memcpy(row, p, (size_t)g * sizeof(T));                                       \
                    v = row;                                                                     \
                }                                                                                \
                if (done + e == 0) memcpy(best, v, (size_t)g * sizeof(T));                       \
                else if (max)                                                                    \
                    for (int i = 0; i < g; i++) {                                                \
                        T x = v[i], b = best[i];                                                 \
                        best[i] = (x > b) | ((x != x) & (b == b)) ? x : b;                       \
                    }                                                                            \
                else                                                                             \
                    for (int i = 0; i < g; i++) {                                                \
                        T x = v[i], b = best[i];                                                 \
                        best[i] = (x < b) | ((x != x) & (b == b)) ? x : b;                       \
                    }                                                                            \
            }                                                                                    \
            done += k;                                                                           \
        }                                                                                        \
    }

EXTREME_ACC(float, int32_t, accf)
EXTREME_ACC(double, int64_t, accd)

/* Max or min of reduced elements [start, start + len) of one output (len >= 1), its bytes into
 * dst: the vector path where it decides, else the fold. */
INLINE void extreme(const Reduce *r, const char *base, Py_ssize_t start, Py_ssize_t len,
                    char *dst) {
    float f;
    double d;
    if (r->dtype == F32 && accf_extreme_fast(r, base, start, len, &f)) memcpy(dst, &f, 4);
    else if (r->dtype == F64 && accd_extreme_fast(r, base, start, len, &d)) memcpy(dst, &d, 8);
    else extreme_fold(r, base, start, len, dst);
}

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

/* Read the parameters into r (accumulator, order, block) and `reduced` (which input axes);
 * 0, or -1 with the refusal. */
static int reduce_params(Reduce *r, const TensorArg *x, const ParamArg *params, int n_params,
                         int *reduced, char *error, size_t error_len) {
    const ParamArg *axes = param(params, n_params, "axes", PARAM_AXES);
    const ParamArg *acc = param(params, n_params, "accumulator", PARAM_CODE);
    const ParamArg *order = param(params, n_params, "order", PARAM_CODE);
    const ParamArg *block = param(params, n_params, "block", PARAM_I64);
    if (axes == NULL || acc == NULL || order == NULL)
        return reduce_refuse(error, error_len, "reduce: the axes, accumulator and order are required");
    for (int i = 0; i < axes->value.axes.count; i++) {
        int a = axes->value.axes.axes[i];
        if (a < 0 || a >= x->ndim || (i > 0 && a <= axes->value.axes.axes[i - 1]))
            return reduce_refuse(error, error_len,
                          "reduce: axes must be sorted, distinct axes of the %d-d input", x->ndim);
        reduced[a] = 1;
    }
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

/* The REDUCE capsule (abi.h's `ShapedKernel`): out = op over params' axes of in[0], by the
 * accumulator and order the params give (see the header). Never touches the GIL. */
static int reduce_kernel(int op, const TensorArg *in, int n_in, const TensorArg *out,
                         const ParamArg *params, int n_params, char *error, size_t error_len) {
    Reduce r = {.op = op};
    int reduced[MAX_DIMS] = {0};
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
