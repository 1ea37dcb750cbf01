/* Compiled fast path for fuel-cpu-backend's 32 kernels, bit for bit the pure-NumPy chassis.
 *
 * One pass per element instead of NumPy's several: maximum/minimum pick lhs on a ±0 tie in the
 * same compare, and the half types widen, compute and narrow tile by tile in L1 (F16C on x86).
 * Build with -ffp-contract=off and without -ffast-math: every step is one rounded IEEE operation.
 * The NaN rules are explicit, never left to the operand order the compiler picks: arithmetic
 * returns the first NaN operand (lhs first) quieted, maximum/minimum a NaN operand unchanged.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <fenv.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define HAVE_AVX2_F16C 1
#define TARGET_AVX2_F16C __attribute__((target("avx2,f16c")))
#endif

#if defined(__GNUC__)
#define INLINE static inline __attribute__((always_inline))
#else
#define INLINE static inline
#endif

enum { ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM, POW, REM, N_OPS };
enum { F32, F64, BF16, F16, N_DTYPES };

static const char *const OP_NAMES[N_OPS] = {"add",     "sub",     "mul", "div",
                                            "maximum", "minimum", "pow", "rem"};
static const char *const DTYPE_NAMES[N_DTYPES] = {"float32", "float64", "bfloat16", "float16"};
static const Py_ssize_t ITEMSIZE[N_DTYPES] = {4, 8, 2, 2};

/* Half-float elements per tile: three f32 tiles (6 KiB) stay in L1 between the passes. */
#define TILE 512
/* Below this many elements the loop is shorter than releasing and retaking the GIL. */
#define GIL_FREE_FROM 16384

/* ---------------------------------------------------------------------------------------------
 * The working-precision loops, stamped out for f32 and f64 from one definition. */

#define DEFINE_LOOPS(T, F, U, ABS, INF, QUIET, FLOOR_FN, POW_FN)                                   \
    INLINE U T##_bits(F x) {                                                                       \
        U u;                                                                                       \
        memcpy(&u, &x, sizeof u);                                                                  \
        return u;                                                                                  \
    }                                                                                              \
    INLINE F T##_value(U u) {                                                                      \
        F x;                                                                                       \
        memcpy(&x, &u, sizeof x);                                                                  \
        return x;                                                                                  \
    }                                                                                              \
    INLINE int T##_isnan(U u) { return (u & ABS) > INF; }                                          \
    /* r, or a NaN lhs quieted: with one NaN operand the hardware already returns it quieted,      \
     * so only a NaN pair depends on the operand order the compiler chose; lhs is the rule. */     \
    INLINE F T##_nan_first(F r, F a) {                                                             \
        U ua = T##_bits(a);                                                                        \
        return T##_value(T##_isnan(ua) ? (ua | QUIET) : T##_bits(r));                              \
    }                                                                                              \
    /* lhs where maximum (or minimum, when `less`) returns it: lhs NaN, or lhs wins or ties. */    \
    INLINE F T##_select(F a, F b, int less) {                                                      \
        U ua = T##_bits(a), ub = T##_bits(b);                                                      \
        int lhs = T##_isnan(ua) | (less ? (a <= b) : (a >= b));                                    \
        return T##_value(lhs ? ua : ub);                                                           \
    }                                                                                              \
    INLINE void T##_loop(int op, const F *restrict a, const F *restrict b, F *restrict c,          \
                         Py_ssize_t n) {                                                           \
        Py_ssize_t i;                                                                              \
        switch (op) {                                                                              \
        case ADD:                                                                                  \
            for (i = 0; i < n; i++) c[i] = T##_nan_first(a[i] + b[i], a[i]);                       \
            break;                                                                                 \
        case SUB:                                                                                  \
            for (i = 0; i < n; i++) c[i] = T##_nan_first(a[i] - b[i], a[i]);                       \
            break;                                                                                 \
        case MUL:                                                                                  \
            for (i = 0; i < n; i++) c[i] = T##_nan_first(a[i] * b[i], a[i]);                       \
            break;                                                                                 \
        case DIV:                                                                                  \
            for (i = 0; i < n; i++) c[i] = T##_nan_first(a[i] / b[i], a[i]);                       \
            break;                                                                                 \
        case MAXIMUM:                                                                              \
            for (i = 0; i < n; i++) c[i] = T##_select(a[i], b[i], 0);                              \
            break;                                                                                 \
        case MINIMUM:                                                                              \
            for (i = 0; i < n; i++) c[i] = T##_select(a[i], b[i], 1);                              \
            break;                                                                                 \
        case POW:                                                                                  \
            for (i = 0; i < n; i++) c[i] = POW_FN(a[i], b[i]);                                     \
            break;                                                                                 \
        default:                                                                                   \
            for (i = 0; i < n; i++)                                                                \
                c[i] = T##_nan_first(a[i] - FLOOR_FN(a[i] / b[i]) * b[i], a[i]);                   \
        }                                                                                          \
    }

DEFINE_LOOPS(f32, float, uint32_t, 0x7FFFFFFFu, 0x7F800000u, 0x00400000u, floorf, powf)
DEFINE_LOOPS(f64, double, uint64_t, 0x7FFFFFFFFFFFFFFFull, 0x7FF0000000000000ull,
             0x0008000000000000ull, floor, pow)

/* ---------------------------------------------------------------------------------------------
 * Half floats. Widening is exact. Narrowing rounds to nearest-even; a NaN keeps its sign and top
 * payload bits with the quiet bit set, as the Rust `half` crate does (`_chassis._nan_bits_*`). */

INLINE void bf16_widen(const uint16_t *src, float *dst, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) dst[i] = f32_value((uint32_t)src[i] << 16);
}

INLINE void bf16_narrow(const float *src, uint16_t *dst, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        uint32_t x = f32_bits(src[i]);
        uint32_t nan = (x >> 16) | 0x0040u;
        uint32_t rne = (x + 0x7FFFu + ((x >> 16) & 1u)) >> 16;
        dst[i] = (uint16_t)(f32_isnan(x) ? nan : rne);
    }
}

static float f16_widen_one(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
    if (e == 0x1F) return f32_value(sign | 0x7F800000u | (m << 13));
    if (e != 0) return f32_value(sign | ((e + 112u) << 23) | (m << 13));
    return f32_value(sign | f32_bits((float)m * 0x1p-24f)); /* ±0 and subnormals, exact */
}

static uint16_t f16_narrow_one(float f) {
    uint32_t x = f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7FFFFFFFu;
    if (ax > 0x7F800000u) return (uint16_t)(sign | 0x7E00u | ((x & 0x007FFFFFu) >> 13));
    if (ax >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u); /* |f| >= 65520 rounds to inf */
    if (ax >= 0x38800000u) {                                  /* a normal half: rebias, RNE */
        uint32_t r = ax - (112u << 23);
        return (uint16_t)(sign | ((r + 0x0FFFu + ((r >> 13) & 1u)) >> 13));
    }
    if (ax <= 0x33000000u) return (uint16_t)sign; /* |f| <= 2^-25 rounds to zero */
    uint32_t shift = 126u - (ax >> 23), m = (ax & 0x007FFFFFu) | 0x00800000u;
    uint32_t k = m >> shift, rest = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    k += (rest > half) | ((rest == half) & k);
    return (uint16_t)(sign | k); /* a subnormal, or the smallest normal after a carry */
}

static void f16_widen(const uint16_t *src, float *dst, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) dst[i] = f16_widen_one(src[i]);
}

static void f16_narrow(const float *src, uint16_t *dst, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) dst[i] = f16_narrow_one(src[i]);
}

#ifdef HAVE_AVX2_F16C
/* F16C quiets a signalling NaN on widening; only pow could tell, and its inputs are quieted. */
TARGET_AVX2_F16C static void f16_widen_f16c(const uint16_t *src, float *dst, Py_ssize_t n) {
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + i))));
    f16_widen(src + i, dst + i, n - i);
}

/* vcvtps2ph narrows a NaN exactly as `half` does: sign, 0x7E00, the top ten payload bits. */
TARGET_AVX2_F16C static void f16_narrow_f16c(const float *src, uint16_t *dst, Py_ssize_t n) {
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128((__m128i *)(dst + i), h);
    }
    f16_narrow(src + i, dst + i, n - i);
}
#endif

/* Set the quiet bit of every NaN, as `half`'s widening does (pow can tell: powf(1, sNaN)). */
INLINE void quiet_nans(float *x, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        uint32_t u = f32_bits(x[i]);
        x[i] = f32_value(f32_isnan(u) ? (u | 0x00400000u) : u);
    }
}

/* maximum/minimum on halves: compare the widened values, store the operand's original bits. */
INLINE void half_select(const uint16_t *a, const uint16_t *b, const float *wa, const float *wb,
                        uint16_t *c, Py_ssize_t n, int less) {
    for (Py_ssize_t i = 0; i < n; i++) {
        uint32_t wins = less ? (wa[i] <= wb[i]) : (wa[i] >= wb[i]);
        uint32_t lhs = f32_isnan(f32_bits(wa[i])) | wins;
        c[i] = (uint16_t)(b[i] ^ ((a[i] ^ b[i]) & (0u - lhs))); /* a branch-free select */
    }
}

typedef void (*Widen)(const uint16_t *, float *, Py_ssize_t);
typedef void (*Narrow)(const float *, uint16_t *, Py_ssize_t);

static void bf16_widen_fn(const uint16_t *src, float *dst, Py_ssize_t n) {
    bf16_widen(src, dst, n);
}

static void bf16_narrow_fn(const float *src, uint16_t *dst, Py_ssize_t n) {
    bf16_narrow(src, dst, n);
}

/* BF16/F16: per tile widen both operands to f32, compute, and narrow once on store. */
INLINE void half_loop(int op, Widen widen, Narrow narrow, const uint16_t *restrict a,
                      const uint16_t *restrict b, uint16_t *restrict c, Py_ssize_t n) {
    float wa[TILE], wb[TILE], wc[TILE];
    for (Py_ssize_t i = 0; i < n; i += TILE) {
        Py_ssize_t k = n - i < TILE ? n - i : TILE;
        widen(a + i, wa, k);
        widen(b + i, wb, k);
        if (op == MAXIMUM || op == MINIMUM) {
            half_select(a + i, b + i, wa, wb, c + i, k, op == MINIMUM);
            continue;
        }
        if (op == POW) {
            quiet_nans(wa, k);
            quiet_nans(wb, k);
        }
        f32_loop(op, wa, wb, wc, k);
        narrow(wc, c + i, k);
    }
}

/* ---------------------------------------------------------------------------------------------
 * One kernel body per instruction set: the same C, compiled for the baseline and for AVX2. */

typedef void (*Body)(int op, int dtype, const void *a, const void *b, void *c, Py_ssize_t n);

INLINE void body(int op, int dtype, const void *a, const void *b, void *c, Py_ssize_t n,
                 Widen f16_to_f32, Narrow f32_to_f16) {
    switch (dtype) {
    case F32:
        f32_loop(op, a, b, c, n);
        break;
    case F64:
        f64_loop(op, a, b, c, n);
        break;
    case BF16:
        half_loop(op, bf16_widen_fn, bf16_narrow_fn, a, b, c, n);
        break;
    default:
        half_loop(op, f16_to_f32, f32_to_f16, a, b, c, n);
    }
}

static void body_baseline(int op, int dtype, const void *a, const void *b, void *c,
                          Py_ssize_t n) {
    body(op, dtype, a, b, c, n, f16_widen, f16_narrow);
}

#ifdef HAVE_AVX2_F16C
TARGET_AVX2_F16C static void body_avx2(int op, int dtype, const void *a, const void *b, void *c,
                                       Py_ssize_t n) {
    body(op, dtype, a, b, c, n, f16_widen_f16c, f16_narrow_f16c);
}
#endif

static const char *const ISA_NAMES[] = {"baseline", "avx2"};
static Body ISA_BODIES[2] = {body_baseline, NULL};
static int isa_count = 1;
static int isa = 0;

/* ---------------------------------------------------------------------------------------------
 * The Python interface. */

/* Whether two byte ranges share any byte. */
static int overlap(const Py_buffer *x, const Py_buffer *y) {
    const char *xs = x->buf, *ys = y->buf;
    return x->len && y->len && xs < ys + y->len && ys < xs + x->len;
}

/* A private copy of an input that `out` overlaps, so the loops may assume no aliasing (and so
 * a partial overlap reads the inputs as they were, as NumPy does). Dispatch never aliases. */
static const void *own_input(const Py_buffer *in, const Py_buffer *out, void **copy) {
    if (!overlap(in, out)) return in->buf;
    *copy = PyMem_RawMalloc((size_t)in->len);
    if (*copy != NULL) memcpy(*copy, in->buf, (size_t)in->len);
    return *copy;
}

static int get_buffer(PyObject *obj, Py_buffer *view, int flags, const char *what) {
    if (PyObject_GetBuffer(obj, view, flags) == 0) return 0;
    PyErr_Clear();
    PyErr_Format(PyExc_ValueError, "%s must be a C-contiguous%s array, got %R", what,
                 (flags & PyBUF_WRITABLE) ? ", writable" : "", Py_TYPE(obj));
    return -1;
}

static PyObject *binary(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 5) {
        PyErr_Format(PyExc_TypeError, "binary(op, dtype, lhs, rhs, out) takes 5 arguments, got %zd",
                     nargs);
        return NULL;
    }
    long op = PyLong_AsLong(args[0]), dtype = PyLong_AsLong(args[1]);
    if (PyErr_Occurred()) return NULL;
    if (op < 0 || op >= N_OPS || dtype < 0 || dtype >= N_DTYPES) {
        PyErr_Format(PyExc_ValueError, "op must be in [0, %d) and dtype in [0, %d), got %ld, %ld",
                     N_OPS, N_DTYPES, op, dtype);
        return NULL;
    }
    Py_buffer lhs, rhs, out;
    if (get_buffer(args[2], &lhs, PyBUF_ND, "lhs") < 0) return NULL;
    if (get_buffer(args[3], &rhs, PyBUF_ND, "rhs") < 0) {
        PyBuffer_Release(&lhs);
        return NULL;
    }
    if (get_buffer(args[4], &out, PyBUF_ND | PyBUF_WRITABLE, "out") < 0) {
        PyBuffer_Release(&lhs);
        PyBuffer_Release(&rhs);
        return NULL;
    }
    PyObject *result = NULL;
    void *lcopy = NULL, *rcopy = NULL;
    Py_ssize_t size = ITEMSIZE[dtype], n = out.len / size;
    if (lhs.len != out.len || rhs.len != out.len || out.len % size) {
        PyErr_Format(PyExc_ValueError,
                     "%s on %s: byte lengths must be equal multiples of %zd: "
                     "lhs %zd, rhs %zd, out %zd",
                     OP_NAMES[op], DTYPE_NAMES[dtype], size, lhs.len, rhs.len, out.len);
        goto done;
    }
    const void *a = own_input(&lhs, &out, &lcopy), *b = own_input(&rhs, &out, &rcopy);
    if (a == NULL || b == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Body run = ISA_BODIES[isa];
    fexcept_t flags; /* leave the caller's floating-point status flags as they were */
    fegetexceptflag(&flags, FE_ALL_EXCEPT);
    if (n >= GIL_FREE_FROM) {
        Py_BEGIN_ALLOW_THREADS run((int)op, (int)dtype, a, b, out.buf, n);
        Py_END_ALLOW_THREADS
    } else {
        run((int)op, (int)dtype, a, b, out.buf, n);
    }
    fesetexceptflag(&flags, FE_ALL_EXCEPT);
    result = Py_NewRef(Py_None);
done:
    PyMem_RawFree(lcopy);
    PyMem_RawFree(rcopy);
    PyBuffer_Release(&lhs);
    PyBuffer_Release(&rhs);
    PyBuffer_Release(&out);
    return result;
}

static PyObject *select_isa(PyObject *module, PyObject *name) {
    (void)module;
    const char *want = PyUnicode_AsUTF8(name);
    if (want == NULL) return NULL;
    for (int i = 0; i < isa_count; i++) {
        if (strcmp(want, ISA_NAMES[i]) == 0) {
            PyObject *previous = PyUnicode_FromString(ISA_NAMES[isa]);
            isa = i;
            return previous;
        }
    }
    PyErr_Format(PyExc_ValueError, "no kernel body for instruction set %R on this machine", name);
    return NULL;
}

static PyMethodDef methods[] = {
    {"binary", (PyCFunction)(void (*)(void))binary, METH_FASTCALL,
     "binary(op, dtype, lhs, rhs, out): out[i] = OPS[op](lhs[i], rhs[i]) over C-contiguous "
     "buffers of DTYPES[dtype]."},
    {"select_isa", select_isa, METH_O,
     "select_isa(name) -> previous: run the kernel body compiled for one of ISAS (for tests)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "fueltensor.kernels._native",
    "Compiled fuel-cpu-backend kernels, bit for bit the pure-NumPy chassis.",
    -1,
    methods,
};

/* Add a tuple of the C names as a module constant, so Python reads the tables from here. */
static int add_names(PyObject *module, const char *name, const char *const *items, int count) {
    PyObject *tuple = PyTuple_New(count);
    for (int i = 0; tuple != NULL && i < count; i++) {
        PyObject *item = PyUnicode_FromString(items[i]);
        if (item == NULL) {
            Py_CLEAR(tuple);
            break;
        }
        PyTuple_SET_ITEM(tuple, i, item);
    }
    int status = tuple == NULL ? -1 : PyModule_AddObjectRef(module, name, tuple);
    Py_XDECREF(tuple);
    return status;
}

PyMODINIT_FUNC PyInit__native(void) {
#ifdef HAVE_AVX2_F16C
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c")) {
        ISA_BODIES[1] = body_avx2;
        isa_count = 2;
        isa = 1;
    }
#endif
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL) return NULL;
    if (add_names(module, "OPS", OP_NAMES, N_OPS) < 0 ||
        add_names(module, "DTYPES", DTYPE_NAMES, N_DTYPES) < 0 ||
        add_names(module, "ISAS", ISA_NAMES, isa_count) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
