/* What every part of `_fast` shares: NumPy's and Python's headers, the ABI with `_native`
 * (abi.h), the types passed between the parts, and `S`, the one state struct: what `bind_core`
 * and `configure` set (docs/interfaces.md, "The compiled floor"), the functions `_native`
 * exports, interned names, and the caches. `_fast.c` includes the parts after this header, in
 * one translation unit. */
#ifndef FUELTENSOR_FAST_H
#define FUELTENSOR_FAST_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <numpy/ufuncobject.h>

#include <fenv.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(_WIN32)
#include <malloc.h>
#else
#include <sys/mman.h>
#endif

#include "../abi.h"

/* Bytes of the block a repeated single element fills: on the stack up to REPEAT_BYTES (small
 * enough for a thread started with a small stack); a longer call's block is on the heap, up to
 * REPEAT_HEAP_BYTES, so that each call of the body over it is long enough for the pool to split
 * (`x ** 0.5` ran on one core in 8 KiB calls: 2.4x NumPy at 10^6, benchmarks/RESULTS.md). */
#define REPEAT_BYTES 8192
#define REPEAT_HEAP_BYTES (256 << 10)
/* Python scalars' 0-d tensors kept (a power of two: the cache is direct-mapped). */
#define SCALAR_SLOTS 64
/* Contiguize temporaries up to this size are made here; larger ones take the Python path, which
 * reuses one per-thread buffer (`execute._temporary`). */
#define DENSIFY_MAX_BYTES (1 << 20)

/* A tensor's slot at byte offset `off` (S.off_storage, ...): a borrowed reference. */
#define SLOT(obj, off) (*(PyObject **)((char *)(obj) + (off)))

enum { NATIVE, ORACLE, POWI, FOREIGN, COMPARE }; /* the kernel an entry runs (FOREIGN: a compiled
                                            provider's byte kernel, foreign.c) */
/* How a native entry reads an operand, and the forms of `operator`: defined here only and
 * exported as module constants, which dispatch reads (no Python copy). */
enum { AS_IS, DENSIFY, REPEAT };      /* its own dense elements, a dense copy, one repeated */
enum { FORWARD, REFLECTED, INPLACE, HOST, METHOD }; /* `x op y`, `y op x` (x the instance),
                                    `x op= y`, `x op y` of a host function (`x > 0`), a method
                                    of a ruled host function (`x.sum()`, see `method_call`) */

/* A compiled provider's kernel: the FKC byte-kernel C ABI of the seeds' thunks, 0 for `Ok`, any
 * other status an `Err` (`kernels.compiled`). */
typedef int32_t (*ByteKernel)(const uint8_t *lhs, size_t lhs_bytes, const uint8_t *rhs,
                              size_t rhs_bytes, uint8_t *out, size_t out_bytes);

/* What `binary` needs of a cached plan, made once by `entry` when dispatch caches it. */
typedef struct {
    PyObject_VAR_HEAD
    int kind, kop, kdtype, ndim;
    int32_t exponent;         /* POWI: the plan's parameter k (its one operand is x) */
    ByteKernel kernel;        /* FOREIGN: the provider's function */
    PyObject *failure;        /* FOREIGN: raises the plan's KernelStatusError for a status */
    PyObject *overrun;        /* FOREIGN: raises the plan's ContractViolation for a write in the
                                 guard zones around `out` */
    int mode[2];              /* AS_IS, DENSIFY or (NATIVE only) REPEAT, per operand */
    Py_ssize_t count, itemsize, in_itemsize; /* the output's element bytes, the operands' */
    Py_ssize_t offset[2];     /* each operand's first element in its storage (AS_IS, REPEAT,
                                 ORACLE), and how many storage elements it needs from there
                                 (FOREIGN: the elements its kernel is handed, as it is or as
                                 its dense copy) */
    Py_ssize_t need[2];
    PyObject *out_dtype, *out_layout, *np_dtype, *shape, *ufunc;
    PyObject *redo;           /* ORACLE: `reference.nans`, called when the ufunc made a NaN */
    uint64_t nan_above;       /* ORACLE: its dtype's infinity bits (a larger magnitude: NaN) */
    PyObject *cast[2];        /* an operand's Cast step: (NumPy dtype, dense Layout of its
                                 shape, DType), or NULL */
    npy_intp *dims;           /* the output's extents */
    npy_intp *steps[2];       /* ORACLE: each operand's broadcast view, byte strides */
    npy_intp data[];
} Entry;

/* The caller's floating-point environment, kept across every kernel run, built-in or foreign
 * (`fp_save` before it, `fp_restore` after: the one helper of every call path): its status flags
 * (the kernels raise flags, inexact, overflow..., that the caller never asked for) and its
 * controls (a foreign kernel may set flush-to-zero or a rounding mode, which would change every
 * later result of the caller's). On x86-64 the SSE kernels raise flags in MXCSR only, and
 * rewriting MXCSR (rounding, FTZ/DAZ, masks, flags) is far cheaper than fesetenv's x87
 * environment round trip, so the x87 status and control words are each only touched when they
 * changed. Elsewhere, <fenv.h>'s whole environment. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <xmmintrin.h>
typedef struct {
    unsigned int mxcsr;
    unsigned short x87, x87_control;
} FpState;

static inline unsigned short x87_status(void) {
    unsigned short status;
    __asm__ volatile("fnstsw %0" : "=am"(status));
    return status;
}

static inline unsigned short x87_control(void) {
    unsigned short control;
    __asm__ volatile("fnstcw %0" : "=m"(control));
    return control;
}

static inline void fp_save(FpState *f) {
    f->mxcsr = _mm_getcsr();
    f->x87 = x87_status();
    f->x87_control = x87_control();
}

static inline void fp_restore(const FpState *f) {
    int raised = (x87_status() & ~f->x87) & FE_ALL_EXCEPT;
    if (raised) feclearexcept(raised);
    if (x87_control() != f->x87_control) __asm__ volatile("fldcw %0" : : "m"(f->x87_control));
    if (_mm_getcsr() != f->mxcsr) _mm_setcsr(f->mxcsr);
}
#else
typedef fenv_t FpState;

static inline void fp_save(FpState *f) { fegetenv(f); }

static inline void fp_restore(const FpState *f) { fesetenv(f); }
#endif

/* A compiled provider's fresh output (allocator.c, `guarded_array`) has GUARD_BYTES of
 * GUARD_PATTERN on each side, read after the call (`engine.foreign.GUARD_BYTES`, the Python
 * path's zones, is the same size: tests/engine/test_foreign_calls.py holds them equal). */
#define GUARD_BYTES 256
#define GUARD_PATTERN 0xA5

/* Large outputs' blocks (allocator.c): kept from KEEP_FROM bytes, up to KEEP_BUDGET in all. The
 * budget holds the blocks of a two-op chain over 10^7 f64 (80 MB each): below that, each such
 * output took a fresh block and a page fault per page (2 MiB), which cost it more than its
 * arithmetic (benchmarks/RESULTS.md, issue 34: f64 + at 10^7, 20 -> 12 ms of CPU). */
#define KEEP_FROM (256 * 1024)
#define KEEP_BUDGET ((size_t)256 << 20)
#define KEEP_SLOTS 4
#define NUMPY_TRACE_DOMAIN 389047

/* The plan-cache key's parts (plan_key.c): the operation, then each operand's NumPy dtype and
 * Layout. */
#define KEY_PARTS 5

#define FRONT_SLOTS 64

typedef struct {
    PyObject *parts[KEY_PARTS + 1]; /* the plans dict, then the key's parts */
    PyObject *cell;     /* the dict's value: (plan, planning, entry) */
    Py_ssize_t size;    /* the dict's size when the slot was filled */
} Front;

/* A Python scalar's cached 0-d tensor (scalars.c). */
typedef struct {
    int kind; /* 1 float, 2 int, 3 bool; 0: an empty slot */
    uint64_t bits;
    PyObject *like;   /* the other operand's DType (the scalar's dtype follows from it) */
    PyObject *tensor; /* the 0-d tensor, its storage read-only */
} Scalar;

/* Everything `_fast` keeps between calls. Nothing here names a Python attribute of fueltensor's:
 * the types and slots come from `bind_core`, the engine's hooks from `configure`. */
static struct {
    /* `_native`'s functions, read from its capsules at init. */
    Body run_body;    /* the kernel body for the selected instruction set */
    Copy copy_dense;  /* the strided copy into a dense buffer (Contiguize) */
    PowIBody run_powi; /* the integer-power body (PowIElementwise) */
    NanScan nan_scan;  /* whether a dense float buffer holds a NaN (the oracle's redo test) */
    Body run_compare;  /* the comparison body (COMPARE entries: one bool a lane) */
    /* bind_core: core's types and their slots' byte offsets. */
    PyTypeObject *tensor;      /* FuelTensor */
    PyTypeObject *layout_type; /* Layout (a tuple subclass) */
    PyTypeObject *dtype_type;  /* DType */
    PyObject *dense_layout;    /* Layout.dense (memoized) */
    PyObject *array_of;        /* the tensor's NumPy view of its elements (`t._array`) */
    Py_ssize_t off_storage, off_layout, off_dtype, off_np;
    Py_ssize_t off_dtype_np;   /* DType's slot holding its NumPy dtype */
    /* configure: the engine's context and hooks. */
    PyObject *policy_var, *trace_var, *observers_var;
    PyObject *default_policy;  /* makes the default policy (once: then kept in `fallback`) */
    PyObject *fallback;        /* the default policy, once made */
    PyObject *make_scalar;     /* scalars.scalar_tensor(value, like) */
    PyObject *check_inplace;   /* tensor.check_inplace(target, dtype, shape, what) */
    PyObject *integer_forms;   /* ops whose `x op k`, k an int, dispatch plans itself */
    PyObject *form_marker;     /* the first part of an integer-scalar form's plan-cache key */
    PyObject *errstate_var;    /* NumPy's extobj contextvar, or NULL: then no oracle entries */
    PyObject *errstate_ignore; /* its value under np.errstate(all="ignore") */
    /* Interned names and keyword tuples of the public calls made here. */
    PyObject *plans_name;      /* "plans": a policy's plan cache */
    PyObject *namespace_name;  /* "namespace": the hooks' array-API namespace */
    PyObject *astype_name;     /* "astype" */
    PyObject *out_kwnames;     /* ("out",) */
    PyObject *order_kwnames;   /* ("order",) */
    PyObject *order_c;         /* "C" */
    PyObject *resolve_name;    /* NumPy's "_resolve_dtypes_and_context" */
    PyObject *loop_name;       /* NumPy's "_get_strided_loop" */
    PyObject *stride_kwnames;  /* ("fixed_strides",) */
    PyObject *refusals[5];     /* "dtype", "shape", "read-only", "stride0", "overlap" */
    /* Caches, guarded by the GIL. */
    PyObject *last_policy, *last_plans; /* the policy last read and its plan cache */
    Front front[FRONT_SLOTS];           /* plan-cache lookups by the identity of the key's parts */
    Scalar scalars[SCALAR_SLOTS];       /* Python scalars' 0-d tensors */
    struct {
        void *data;
        size_t size;
    } kept[KEEP_SLOTS]; /* dead large blocks, most recently kept first */
    size_t kept_bytes;
} S;

#endif
