/* ---------------------------------------------------------------------------------------------
 * The comparisons (the comparison family: ops.h's C_ enum, bodies of abi.h's `Body` type) on the
 * four dtypes, one body per instruction set: c[i] = 1 where a[i] op b[i] holds, else 0, one byte
 * an element (NumPy's bool). IEEE 754's comparisons of the operands' exact values, as C's
 * relational operators make them: a NaN is unordered (only != holds), -0 == +0, a subnormal is a
 * number. BF16 and F16 widen exactly to float, tile by tile. Exact: no rounding anywhere, so
 * every instruction set gives the same bytes. One thread: a comparison moves little per byte
 * of output, and a call rarely reaches the split sizes of the arithmetic. */

/* c[i] = a[i] OP b[i] over n elements of type T, one loop per operator (each vectorizes). */
#define COMPARE_LOOP(T, op, a, b, c, n)                                                            \
    do {                                                                                           \
        const T *x_ = (const T *)(a), *y_ = (const T *)(b);                                        \
        uint8_t *z_ = (uint8_t *)(c);                                                              \
        switch (op) {                                                                              \
        case C_LT: for (Py_ssize_t i = 0; i < (n); i++) z_[i] = x_[i] < y_[i]; break;              \
        case C_LE: for (Py_ssize_t i = 0; i < (n); i++) z_[i] = x_[i] <= y_[i]; break;             \
        case C_EQ: for (Py_ssize_t i = 0; i < (n); i++) z_[i] = x_[i] == y_[i]; break;             \
        case C_NE: for (Py_ssize_t i = 0; i < (n); i++) z_[i] = x_[i] != y_[i]; break;             \
        case C_GT: for (Py_ssize_t i = 0; i < (n); i++) z_[i] = x_[i] > y_[i]; break;              \
        default: for (Py_ssize_t i = 0; i < (n); i++) z_[i] = x_[i] >= y_[i]; break;               \
        }                                                                                          \
    } while (0)

/* Lanes per tile of the half types' widened floats. */
#define COMPARE_TILE 512

/* The comparison `op` of n elements of `dtype`, `h` the instruction set's half conversions. */
INLINE void compare_any(int op, int dtype, const void *a, const void *b, void *c, Py_ssize_t n,
                        const Halves *h) {
    if (dtype == F64) {
        COMPARE_LOOP(double, op, a, b, c, n);
        return;
    }
    if (dtype == F32) {
        COMPARE_LOOP(float, op, a, b, c, n);
        return;
    }
    Widen widen = dtype == BF16 ? h->bf16_widen : h->f16_widen;
    _Alignas(64) float x[COMPARE_TILE], y[COMPARE_TILE];
    for (Py_ssize_t at = 0; at < n; at += COMPARE_TILE) {
        Py_ssize_t k = n - at < COMPARE_TILE ? n - at : COMPARE_TILE;
        widen((const uint16_t *)a + at, x, k);
        widen((const uint16_t *)b + at, y, k);
        COMPARE_LOOP(float, op, x, y, (uint8_t *)c + at, k);
    }
}

/* The comparison body of one instruction set (`target`, its `Halves`). */
#define DEFINE_COMPARE(isa, target)                                                                \
    target static void compare_##isa(int op, int dtype, const void *a, const void *b, void *c,     \
                                     Py_ssize_t n) {                                               \
        compare_any(op, dtype, a, b, c, n, &HALVES_##isa);                                         \
    }

DEFINE_COMPARE(baseline, )
#ifdef HAVE_AVX2_F16C
DEFINE_COMPARE(avx2, TARGET_AVX2_F16C)
#endif
#ifdef HAVE_AVX512
DEFINE_COMPARE(avx512, TARGET_AVX512)
#endif

/* The comparison body of the selected instruction set: what `compare` runs. */
static void compare_body(int op, int dtype, const void *a, const void *b, void *c, Py_ssize_t n) {
    N.isa_compare[N.isa](op, dtype, a, b, c, n);
}

/* An output buffer of n bools: writable, C-contiguous, one byte an element (format '?'). */
static int get_bools(PyObject *obj, Py_buffer *view, Py_ssize_t n) {
    if (get_buffer(obj, view, PyBUF_ND | PyBUF_WRITABLE, "out") < 0) return -1;
    const char *have = plain_format(view->format);
    if (have != NULL && strcmp(have, "?") == 0 && view->itemsize == 1 && view->len == n) return 0;
    PyErr_Format(PyExc_TypeError,
                 "compare: out must hold %zd bools (format '?', 1 byte each), got buffer format "
                 "'%s' of %zd-byte elements, %zd bytes",
                 n, view->format ? view->format : "unstated", view->itemsize, view->len);
    PyBuffer_Release(view);
    return -1;
}

/* `compare(op, dtype, lhs, rhs, out)`: out[i] = COMPARISON_OPS[op](lhs[i], rhs[i]) over
 * C-contiguous buffers, lhs and rhs of `dtype` and one length, out of as many bools. A
 * comparison raises no floating-point flag that the caller keeps: its flags are restored. */
static PyObject *compare(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 5) {
        PyErr_Format(PyExc_TypeError, "compare(op, dtype, lhs, rhs, out) takes 5 arguments, got %zd",
                     nargs);
        return NULL;
    }
    long op = PyLong_AsLong(args[0]), dtype = PyLong_AsLong(args[1]);
    if (PyErr_Occurred()) return NULL;
    if (op < 0 || op >= N_COMPARISON_OPS || dtype < 0 || dtype >= N_DTYPES) {
        PyErr_Format(PyExc_ValueError, "op must be in [0, %d) and dtype in [0, %d), got %ld, %ld",
                     N_COMPARISON_OPS, N_DTYPES, op, dtype);
        return NULL;
    }
    Py_buffer lhs, rhs, out;
    if (get_operand(args[2], &lhs, PyBUF_ND, dtype, "compare", "lhs") < 0) return NULL;
    if (get_operand(args[3], &rhs, PyBUF_ND, dtype, "compare", "rhs") < 0) {
        PyBuffer_Release(&lhs);
        return NULL;
    }
    Py_ssize_t size = ITEMSIZE[dtype], n = lhs.len / size;
    if (rhs.len != lhs.len || lhs.len % size) {
        PyErr_Format(PyExc_ValueError,
                     "%s on %s: byte lengths must be equal multiples of %zd: lhs %zd, rhs %zd",
                     COMPARISON_NAMES[op], DTYPE_NAMES[dtype], size, lhs.len, rhs.len);
        PyBuffer_Release(&lhs);
        PyBuffer_Release(&rhs);
        return NULL;
    }
    if (get_bools(args[4], &out, n) < 0) {
        PyBuffer_Release(&lhs);
        PyBuffer_Release(&rhs);
        return NULL;
    }
    PyObject *result = NULL;
    void *lcopy = NULL, *rcopy = NULL;
    const void *a = own_input(&lhs, &out, &lcopy), *b = own_input(&rhs, &out, &rcopy);
    if ((a == NULL && lhs.len) || (b == NULL && rhs.len)) { /* a zero-length buffer may be NULL */
        PyErr_NoMemory();
        goto done;
    }
    fexcept_t flags; /* an ordered comparison of a NaN raises invalid: not the caller's */
    fegetexceptflag(&flags, FE_ALL_EXCEPT);
    if (n >= GIL_FREE_FROM) {
        Py_BEGIN_ALLOW_THREADS compare_body((int)op, (int)dtype, a, b, out.buf, n);
        Py_END_ALLOW_THREADS
    } else if (n > 0) {
        compare_body((int)op, (int)dtype, a, b, out.buf, n);
    }
    fesetexceptflag(&flags, FE_ALL_EXCEPT);
    result = Py_NewRef(Py_None);
done:
    release_operands(lcopy, rcopy, &lhs, &rhs, &out);
    return result;
}
