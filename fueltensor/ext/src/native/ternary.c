/* ---------------------------------------------------------------------------------------------
 * where and clip (the selection and clamp families: ops.h's T_ enum, bodies of abi.h's
 * `TernaryBody`) on the four dtypes, one body per instruction set. Both move bit patterns, read
 * and written as unsigned integers of the dtype's width, so nothing can quiet a NaN or touch a
 * subnormal: where takes x1's or x2's by a bool condition (any nonzero byte is true); clip
 * takes x's, low's or high's by minimum(maximum(x, low), high) with the binary maximum and
 * minimum rules (a NaN operand returned as it is, x's first, then low's, then high's; the left
 * kept on a tie, so -0 stays -0 against +0), decided on the values as floats (a half widened
 * exactly, tile by tile) or doubles. One thread, as the comparisons. */

/* The float or double an F32 or F64 pattern holds (memcpy: no aliasing of the buffer). */
INLINE float f32_of(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
INLINE double f64_of(uint64_t u) {
    double f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* out[i] = c[i] ? a[i] : b[i] over n patterns of type U. */
#define SELECT_LOOP(U, c, a, b, out, n)                                                            \
    do {                                                                                           \
        const uint8_t *c_ = (const uint8_t *)(c);                                                 \
        const U *a_ = (const U *)(a), *b_ = (const U *)(b);                                        \
        U *o_ = (U *)(out);                                                                        \
        for (Py_ssize_t i = 0; i < (n); i++) o_[i] = c_[i] ? a_[i] : b_[i];                        \
    } while (0)

/* Which pattern clip returns for the values v, lo, hi (type T) and their patterns bv, bl, bh:
 * maximum(v, lo) is lo where lo > v or lo is a NaN and v is not; then minimum of that and hi
 * is hi where hi < it or hi is a NaN and it is not. */
#define CLAMP_PICK(T, v, lo, hi, bv, bl, bh)                                                       \
    __extension__({                                                                                \
        int raised_ = (lo) > (v) || ((lo) != (lo) && (v) == (v));                                  \
        T kept_ = raised_ ? (lo) : (v);                                                            \
        int lowered_ = (hi) < kept_ || ((hi) != (hi) && kept_ == kept_);                           \
        lowered_ ? (bh) : raised_ ? (bl) : (bv);                                                   \
    })

/* clip over n patterns of type U whose values `of(pattern)` are of type T (F32, F64). */
#define CLAMP_LOOP(T, U, of, x, l, h, out, n)                                                      \
    do {                                                                                           \
        const U *x_ = (const U *)(x), *l_ = (const U *)(l), *h_ = (const U *)(h);                 \
        U *o_ = (U *)(out);                                                                        \
        for (Py_ssize_t i = 0; i < (n); i++) {                                                     \
            T v_ = of(x_[i]), lo_ = of(l_[i]), hi_ = of(h_[i]);                                    \
            o_[i] = CLAMP_PICK(T, v_, lo_, hi_, x_[i], l_[i], h_[i]);                              \
        }                                                                                          \
    } while (0)

/* Lanes per tile of a half type's widened floats. */
#define TERNARY_TILE 512

/* clip of n half patterns: each tile widened exactly to float for the decisions. */
INLINE void clamp_halves(Widen widen, const uint16_t *x, const uint16_t *l, const uint16_t *h,
                         uint16_t *out, Py_ssize_t n) {
    _Alignas(64) float v[TERNARY_TILE], lo[TERNARY_TILE], hi[TERNARY_TILE];
    for (Py_ssize_t at = 0; at < n; at += TERNARY_TILE) {
        Py_ssize_t k = n - at < TERNARY_TILE ? n - at : TERNARY_TILE;
        widen(x + at, v, k);
        widen(l + at, lo, k);
        widen(h + at, hi, k);
        for (Py_ssize_t i = 0; i < k; i++)
            out[at + i] = CLAMP_PICK(float, v[i], lo[i], hi[i], x[at + i], l[at + i], h[at + i]);
    }
}

/* `op` (T_WHERE: a is the bool condition; T_CLAMP: a is x) over n elements of `dtype`, `h`
 * the instruction set's half conversions. */
INLINE void ternary_any(int op, int dtype, const void *a, const void *b, const void *c, void *out,
                        Py_ssize_t n, const Halves *h) {
    if (op == T_WHERE) {
        if (ITEMSIZE[dtype] == 8) SELECT_LOOP(uint64_t, a, b, c, out, n);
        else if (ITEMSIZE[dtype] == 4) SELECT_LOOP(uint32_t, a, b, c, out, n);
        else SELECT_LOOP(uint16_t, a, b, c, out, n);
        return;
    }
    if (dtype == F64) CLAMP_LOOP(double, uint64_t, f64_of, a, b, c, out, n);
    else if (dtype == F32) CLAMP_LOOP(float, uint32_t, f32_of, a, b, c, out, n);
    else clamp_halves(dtype == BF16 ? h->bf16_widen : h->f16_widen, a, b, c, out, n);
}

/* The ternary body of one instruction set (`target`, its `Halves`). */
#define DEFINE_TERNARY(isa, target)                                                                \
    target static void ternary_##isa(int op, int dtype, const void *a, const void *b,             \
                                     const void *c, void *out, Py_ssize_t n) {                     \
        ternary_any(op, dtype, a, b, c, out, n, &HALVES_##isa);                                    \
    }

DEFINE_TERNARY(baseline, )
#ifdef HAVE_AVX2_F16C
DEFINE_TERNARY(avx2, TARGET_AVX2_F16C)
#endif
#ifdef HAVE_AVX512
DEFINE_TERNARY(avx512, TARGET_AVX512)
#endif

/* The ternary body of the selected instruction set: what `ternary` runs. */
static void ternary_body(int op, int dtype, const void *a, const void *b, const void *c,
                         void *out, Py_ssize_t n) {
    N.isa_ternary[N.isa](op, dtype, a, b, c, out, n);
}

/* Acquire where's condition: a C-contiguous buffer of n bools (format '?', 1 byte each). */
static int get_condition(PyObject *obj, Py_buffer *view, Py_ssize_t n) {
    if (get_buffer(obj, view, PyBUF_ND, "condition") < 0) return -1;
    const char *have = plain_format(view->format);
    if (have != NULL && strcmp(have, "?") == 0 && view->itemsize == 1 && view->len == n) return 0;
    PyErr_Format(PyExc_TypeError,
                 "ternary: condition must hold %zd bools (format '?', 1 byte each), got buffer "
                 "format '%s' of %zd-byte elements, %zd bytes",
                 n, view->format ? view->format : "unstated", view->itemsize, view->len);
    PyBuffer_Release(view);
    return -1;
}

/* The operands' names of each op, for the messages. */
static const char *const WHERE_OPERANDS[3] = {"condition", "x1", "x2"};
static const char *const CLAMP_OPERANDS[3] = {"x", "low", "high"};

/* Acquire `ternary`'s four buffers into `views` (a, b, c, out): b, c and out of `dtype` and one
 * length, a too for T_CLAMP, a's bools for T_WHERE. On failure none is held. */
static int ternary_operands(long op, long dtype, PyObject *const *args, Py_buffer *views) {
    const char *const *name = op == T_WHERE ? WHERE_OPERANDS : CLAMP_OPERANDS;
    int got[4] = {0, 0, 0, 0};
    for (int k = 1; k < 3; k++) {
        if (get_operand(args[k + 2], &views[k], PyBUF_ND, dtype, "ternary", name[k]) < 0)
            goto fail;
        got[k] = 1;
    }
    Py_ssize_t size = ITEMSIZE[dtype], n = views[1].len / size;
    if (views[2].len != views[1].len || views[1].len % size) {
        PyErr_Format(PyExc_ValueError,
                     "%s on %s: byte lengths must be equal multiples of %zd: %s %zd, %s %zd",
                     TERNARY_NAMES[op], DTYPE_NAMES[dtype], size, name[1], views[1].len, name[2],
                     views[2].len);
        goto fail;
    }
    if (op == T_WHERE ? get_condition(args[2], &views[0], n) < 0
                      : get_operand(args[2], &views[0], PyBUF_ND, dtype, "ternary", name[0]) < 0)
        goto fail;
    got[0] = 1;
    if (op == T_CLAMP && views[0].len != views[1].len) {
        PyErr_Format(PyExc_ValueError, "%s on %s: x has %zd bytes, low and high %zd",
                     TERNARY_NAMES[op], DTYPE_NAMES[dtype], views[0].len, views[1].len);
        goto fail;
    }
    if (get_operand(args[5], &views[3], PyBUF_ND | PyBUF_WRITABLE, dtype, "ternary", "out") < 0)
        goto fail;
    got[3] = 1;
    if (views[3].len != views[1].len) {
        PyErr_Format(PyExc_ValueError, "%s on %s: out has %zd bytes, the operands %zd",
                     TERNARY_NAMES[op], DTYPE_NAMES[dtype], views[3].len, views[1].len);
        goto fail;
    }
    return 0;
fail:
    for (int k = 0; k < 4; k++)
        if (got[k]) PyBuffer_Release(&views[k]);
    return -1;
}

/* `ternary(op, dtype, a, b, c, out)`: where (T_WHERE: out[i] = a[i] ? b[i] : c[i], a bools) or
 * clip (T_CLAMP: out[i] = clip(a[i], b[i], c[i])) over C-contiguous buffers of `dtype` and one
 * length. A comparison of a NaN raises invalid: the caller's flags are restored. */
static PyObject *ternary(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 6) {
        PyErr_Format(PyExc_TypeError,
                     "ternary(op, dtype, a, b, c, out) takes 6 arguments, got %zd", nargs);
        return NULL;
    }
    long op = PyLong_AsLong(args[0]), dtype = PyLong_AsLong(args[1]);
    if (PyErr_Occurred()) return NULL;
    if (op < 0 || op >= N_TERNARY_OPS || dtype < 0 || dtype >= N_DTYPES) {
        PyErr_Format(PyExc_ValueError, "op must be in [0, %d) and dtype in [0, %d), got %ld, %ld",
                     N_TERNARY_OPS, N_DTYPES, op, dtype);
        return NULL;
    }
    Py_buffer views[4];
    if (ternary_operands(op, dtype, args, views) < 0) return NULL;
    Py_ssize_t n = views[3].len / ITEMSIZE[dtype];
    void *copies[3] = {NULL, NULL, NULL};
    const void *in[3];
    PyObject *result = NULL;
    for (int k = 0; k < 3; k++) {
        in[k] = own_input(&views[k], &views[3], &copies[k]);
        if (in[k] == NULL && views[k].len) { /* a zero-length buffer may be NULL */
            PyErr_NoMemory();
            goto done;
        }
    }
    fexcept_t flags;
    fegetexceptflag(&flags, FE_ALL_EXCEPT);
    if (n >= GIL_FREE_FROM) {
        Py_BEGIN_ALLOW_THREADS ternary_body((int)op, (int)dtype, in[0], in[1], in[2], views[3].buf,
                                            n);
        Py_END_ALLOW_THREADS
    } else if (n > 0) {
        ternary_body((int)op, (int)dtype, in[0], in[1], in[2], views[3].buf, n);
    }
    fesetexceptflag(&flags, FE_ALL_EXCEPT);
    result = Py_NewRef(Py_None);
done:
    for (int k = 0; k < 3; k++) PyMem_RawFree(copies[k]);
    for (int k = 0; k < 4; k++) PyBuffer_Release(&views[k]);
    return result;
}
