/* ---------------------------------------------------------------------------------------------
 * The max and min of the reduction kernel (reduce.c's header says what they compute): the
 * element-by-element fold, the vector path over dense F32 and F64 runs, and the column walk that
 * folds outputs side by side. Apart from reduce.c so that each file stays short. */

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
