/* The ABI between fueltensor's two extensions, and the constants Python reads from them: each is
 * defined here once. `_native` exports the kernel functions below as capsules and the constants
 * as module attributes (`_native.OPS`, `DTYPES`, `MAX_DIMS`, `GIL_FREE_FROM`, ...); `_fast`
 * imports the capsules once at init and reads the same codes from this header. Python twins
 * that must exist without a compiled build (`core.layout.MAX_DIMS`, `core.storage`'s default
 * alignment) are held equal to these by tests/engine/test_fast_interface.py. See
 * docs/interfaces.md, "The compiled floor". */
#ifndef FUELTENSOR_ABI_H
#define FUELTENSOR_ABI_H

#include <Python.h>
#include <stdint.h>

/* The kernel ops of every family (`_native.OPS`, `_native.UNARY_OPS`, `POWI_OP`), generated
 * from the op table fueltensor/ops.py: no C source spells an op of its own. */
#include "ops.h"

/* The dtypes, in the order of `_native.DTYPES`. Version 1 (the dense elementwise bodies) takes
 * the first N_DTYPES; version 2 (casts and the shaped families) the whole list: the 8-bit and
 * 4-bit float formats of ml_dtypes, the integers and bool. Codes never change once given. */
enum { F32, F64, BF16, F16, N_DTYPES };
/* The bytes of an element of each version 1 dtype. */
static const Py_ssize_t ITEMSIZE[N_DTYPES] = {4, 8, 2, 2};
enum { F8_E4M3FN = N_DTYPES, F8_E5M2, F4_E2M1FN, I8, I16, I32, I64, U8, BOOL, N_DTYPES_V2 };

/* Most dimensions of a layout (NumPy's NPY_MAXDIMS; `core.layout.MAX_DIMS`). */
#define MAX_DIMS 64
/* Byte alignment of every output buffer (`_fast.ALIGNMENT`; `core.storage`'s default). */
#define ALIGNMENT 64
/* Below this many elements the loop is shorter than releasing and retaking the GIL. */
#define GIL_FREE_FROM 16384
/* Where a body starts to split across threads, by op class (`split_from` in native/pool.c;
 * `_native.SPLIT_FROM` per op and dtype): the size from which two threads called back to back
 * beat one on the 2-core development machine (benchmarks/run.py's "split" section;
 * benchmarks/RESULTS.md, issue 34). The working precisions split by output bytes (f32 from
 * 2^16 elements, f64 from 2^15: maximum and minimum measured as arithmetic, and division and
 * remainder no earlier); the others by elements. A call that finds every worker asleep runs
 * alone below WAKE_FACTOR (native.h) times its threshold: it never pays for waking one. */
#define SPLIT_BYTES (256 << 10) /* add, sub, mul, div, maximum, minimum, rem on f32 and f64 */
#define SPLIT_HALF (1 << 15)    /* every op but pow on bf16 and f16 (widened, narrowed per tile) */
/* pow on every dtype, measured with the C library's pow or powf per lane (5-7 ns a lane); f32's
 * vector powf (0.6-1.7 ns a lane) splits from here too until a quiet run measures it. The exact
 * remainder (MOD: fmod per lane, about 17 ns) splits here too, by the same reasoning. */
#define SPLIT_POW (1 << 12)
#define SPLIT_POWI (1 << 16)    /* the integer power (x ** 3's two products per lane) */
/* A cast (`_native.CAST_SPLIT_FROM`), by elements: memory-bound on its vector pairs, a few ns a
 * lane on the others (cast.c). */
#define SPLIT_CAST (1 << 15)
/* Every body splits from here on (`_native.PARALLEL_FROM`): the largest threshold above. */
#define PARALLEL_FROM (1 << 16)
/* Output bytes from which a body apart from its operands writes through streaming stores
 * (`_native.STREAM_FROM`): a result this large leaves the caches anyway, and a plain store first
 * reads each line it writes (benchmarks/RESULTS.md: mul f32 at 10^7 on two threads 3.3 -> 2.2 ms
 * in a C test). Below it, the result stays cached for the next op. */
#define STREAM_FROM (8 << 20)
/* Most threads a body may split across (`_native.MAX_THREADS`). */
#define MAX_THREADS 64

/* The selected instruction set's kernel body: c[i] = op(a[i], b[i]) over n dense elements of
 * `dtype`, no aliasing; split across threads from PARALLEL_FROM elements. */
typedef void (*Body)(int op, int dtype, const void *a, const void *b, void *c, Py_ssize_t n);
/* The selected instruction set's integer-power body: out[i] = powi(x[i], k). */
typedef void (*PowIBody)(int dtype, const void *x, int32_t k, void *out, Py_ssize_t n);
/* The selected instruction set's unary body: out[i] = op(x[i]) over n dense elements of
 * `dtype`, `op` a unary op (U_EXP ...), no aliasing; split across threads like `Body`. */
typedef void (*UnaryBody)(int op, int dtype, const void *x, void *out, Py_ssize_t n);
/* The selected instruction set's three-operand body (where, clip: ops.h's T_ enum) over n dense
 * elements of `dtype`: T_WHERE out[i] = a[i] ? b[i] : c[i], `a` one bool byte an element;
 * T_CLAMP out[i] = clip(a[i], b[i], c[i]). One operand's bits each lane; no aliasing. */
typedef void (*TernaryBody)(int op, int dtype, const void *a, const void *b, const void *c,
                            void *out, Py_ssize_t n);

/* ---------------------------------------------------------------------------------------------
 * Version 2: what the families past the dense elementwise ones are called with (ops.py's
 * `TRAITS`). A cast is still elementwise over dense buffers, with typed parameters; a reduction
 * or a contraction reads shaped operands of any strides and writes a shaped output. Issues 45
 * (casts), 48 (reductions) and 46 (matmul) add bodies of these types, not new types. */
#define ABI_VERSION 2

/* A shaped operand: `data` is the element at index (0, ..., 0); strides in BYTES, any sign, 0
 * where an axis repeats (a broadcast); the caller has checked that every element it names lies
 * in its buffer. */
typedef struct {
    int dtype; /* a code of the v2 dtype list */
    int ndim;  /* <= MAX_DIMS */
    const Py_ssize_t *shape;
    const Py_ssize_t *strides;
    char *data;
} TensorArg;

/* A typed parameter, as an FKC document's `accept.params` declares it. */
typedef enum {
    PARAM_I64,  /* an integer: an exponent, keepdims (0 or 1), a block size */
    PARAM_F64,  /* a float: a clip bound, an epsilon */
    PARAM_AXES, /* a sorted list of axes of the input (a reduction's) */
    PARAM_CODE  /* one of a closed list: a rounding mode, an accumulator dtype, an order */
} ParamType;
typedef struct {
    const char *name; /* the `accept.params` name: "rounding", "axes", "accumulator" ... */
    ParamType type;
    union {
        int64_t i; /* PARAM_I64, PARAM_CODE */
        double f;  /* PARAM_F64 */
        struct {
            int count;
            const int *axes;
        } axes; /* PARAM_AXES */
    } value;
} ParamArg;

/* The codes of PARAM_CODE parameters. Rounding of a cast: */
enum { ROUND_NEAREST_EVEN, ROUND_TOWARD_ZERO, ROUND_STOCHASTIC, N_ROUNDINGS };
/* The order of a reduction's or contraction's accumulation (its result's bits depend on it).
 * ORDER_PAIRS_ODD_FIRST (a contraction of BF16 only; docs/matmul.md, `pairs: odd_first` with
 * `subnormals: flushed`): sequential over K in pairs, per pair (2t, 2t + 1) the odd product
 * added first, then the even one, each add rounded to nearest even, subnormal operands read as
 * zeros and subnormal sums flushed to zeros (after rounding): AVX-512 BF16's VDPBF16PS. */
enum { ORDER_SEQUENTIAL, ORDER_PAIRWISE, ORDER_BLOCKED, ORDER_PAIRS_ODD_FIRST, N_ORDERS };
/* How each product of a contraction enters its sum (docs/matmul.md, `products`): exact in the
 * accumulator, added by one fused multiply-add, or rounded to the accumulator first. */
enum { PRODUCTS_EXACT, PRODUCTS_FUSED, PRODUCTS_ROUNDED, N_PRODUCTS };

/* A cast's body: out[i] = x[i] converted from `from` to `to` (v2 dtype codes) over n dense
 * elements, by the parameters' rounding (ROUND_*) and `saturate` (out-of-range values to the
 * largest finite value rather than inf or NaN, as the OCP 8-bit formats specify). */
typedef void (*CastBody)(int from, int to, const void *x, void *out, Py_ssize_t n,
                         const ParamArg *params, int n_params);
/* A shaped family's kernel (`op` of its family's enum): reads `in[0..n_in)`, writes `out`
 * (allocated by the caller, dense unless its strides say otherwise). Returns 0, or -1 with a
 * message of at most `error_len` bytes in `error` (refused shapes, parameters, dtypes); it never
 * raises a Python exception and never holds the GIL. A reduction: in[0] = x, params axes,
 * keepdims, accumulator (a dtype code), order and, for ORDER_BLOCKED, block (PARAM_I64): the
 * REDUCE capsule (native/reduce.c; docs/ops.md, "Reductions"). A contraction: in[0] = a (..., M, K), in[1] = b
 * (..., K, N), out (..., M, N), params accumulator, order and products (PRODUCTS_*): the
 * MATMUL capsule (native/matmul.c). */
typedef int (*ShapedKernel)(int op, const TensorArg *in, int n_in, const TensorArg *out,
                            const ParamArg *params, int n_params, char *error, size_t error_len);
/* Contiguize: the `ndim`-D view at `src` (byte strides, any sign, 0 where an axis repeats)
 * into the dense row-major `dst`, elements of `size` bytes; the caller has checked that
 * `shape`'s bytes fit a Py_ssize_t. */
typedef void (*Copy)(char *dst, const char *src, int ndim, const Py_ssize_t *shape,
                     const Py_ssize_t *strides, Py_ssize_t size);
/* The selected instruction set's NaN scan: whether any of the n dense `itemsize`-byte floats at
 * `data` is a NaN, a magnitude (the bits past the sign) above `above`, the infinity's bits. */
typedef int (*NanScan)(const void *data, Py_ssize_t n, Py_ssize_t itemsize, uint64_t above);

/* The capsules `_native` exports, by attribute and by capsule name. */
#define NATIVE_MODULE "fueltensor.ext._native"
#define CAPSULE_BODY NATIVE_MODULE ".BODY"
#define CAPSULE_POWI NATIVE_MODULE ".POWI"
#define CAPSULE_UNARY NATIVE_MODULE ".UNARY"
#define CAPSULE_COPY NATIVE_MODULE ".COPY"
#define CAPSULE_NAN_SCAN NATIVE_MODULE ".NAN_SCAN"
#define CAPSULE_COMPARE NATIVE_MODULE ".COMPARE"
#define CAPSULE_CAST NATIVE_MODULE ".CAST"
/* The reductions' `ShapedKernel` (native/reduce.c): sum, prod, max, min in a fixed order. */
#define CAPSULE_REDUCE NATIVE_MODULE ".REDUCE"
/* The contraction's `ShapedKernel` (native/matmul.c): matmul, float32 sums sequential over K. */
#define CAPSULE_MATMUL NATIVE_MODULE ".MATMUL"
/* The op number `_fast`'s entries give comparison c (`_native.COMPARE_OP` + c): past the
 * binary ops and POWI_OP; its body is the COMPARE capsule (a `Body` writing one bool a lane). */
#define COMPARE_OP (POWI_OP + 1)

/* Add a tuple of the C names `items` as the module constant `name` (`_native.OPS`,
 * `_certify.OPS`, ...), so Python reads the tables from the extension that holds them: what
 * each extension's init shares. */
static inline int add_names(PyObject *module, const char *name, const char *const *items,
                            int count) {
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

#endif
