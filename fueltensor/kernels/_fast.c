/* Dispatch's compiled fast path: a contract operation on two tensors, or a tensor and a Python
 * float / int / bool, whose plan is already cached with a fast entry (`entry`, made by dispatch
 * when it caches the plan) and that no trace or observer watches, runs here in one C call: read
 * the plan cache as `dispatch.choose` does (the last lookups remembered by the identity of the
 * key's parts, see `cached`), allocate a 64-byte-aligned output, run the
 * plan's kernel and wrap the result as `FuelTensor._from_dense` would. Anything else returns
 * None and dispatch's Python path runs, so plans, bits, traces and observers are that path's.
 *
 * Two kinds of plans have entries:
 * - a compiled fuel-cpu-backend kernel with no step but BroadcastTo / Contiguize: the body of
 *   `_native` runs here. An operand the plan densifies is copied with `_native`'s strided copy
 *   (up to 1 MiB; larger ones take the Python path, which reuses a per-thread buffer), except a
 *   single element broadcast to the output (a scalar): that one is repeated into one small block
 *   and the kernel runs over the output block by block. The plan still says BroadcastTo and
 *   Contiguize; running those steps a block at a time is how this code executes them (the
 *   kernels are element-wise, so the bits are the plan's), and it never makes the full copy.
 * - a fuel-reference-backend oracle kernel whose operands are dense or Contiguized (up to
 *   1 MiB) at their own shapes: the call the oracle makes, its ufunc on the broadcast views it
 *   builds (`reference.broadcast_src_view`'s strides, given by dispatch) with `out=`, under
 *   NumPy's all-ignore error state.
 * An operand either kind reads may first have a Cast step (mixed dtypes): the `astype` call
 * `execute.prepare` makes, under the caller's error state as there, gives a dense operand of
 * its own shape, read as above.
 *
 * A Python scalar becomes the 0-d tensor `dispatch._scalar` makes (which raises OverflowError
 * for an int the dtype cannot hold), kept in a small cache keyed by its type, its exact bits
 * (so -0.0 and 0.0, and NaN payloads, stay apart) and the other operand's dtype.
 *
 * `inplace` serves `x op= y` the same way: the plan's fresh output, as above (a kernel's output
 * never aliases its inputs, so `x[1:] += x[:-1]` reads its operands whole), copied into the
 * target (one memcpy into a dense one, NumPy's copy through a strided one's strides) once
 * `tensor.check_inplace` accepts the output's dtype and shape (checked here, without a call,
 * for a dense writable target of the output's dtype and shape; its error otherwise, the target
 * untouched).
 *
 * `operator` makes the contract operations' namespace functions and `x op y` / `y op x` /
 * `x op= y` methods C callables that try this path first and call dispatch's Python path
 * otherwise.
 *
 * `empty` is the aligned allocation both paths share: a small buffer is over-allocated by NumPy
 * and viewed at its first 64-byte boundary (no arena, so a small result holds only its own
 * bytes); a large one is a block of its own, kept for the next output of its size when it dies
 * (at most 64 MiB kept; see `aligned_array`).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <fenv.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(_WIN32)
#include <malloc.h>
#else
#include <sys/mman.h>
#endif

#define ALIGNMENT 64
/* Below this many elements the loop is shorter than releasing and retaking the GIL. */
#define GIL_FREE_FROM 16384
/* Bytes of the block a repeated single element fills: on the stack (never on the heap), small
 * enough for a thread started with a small stack. */
#define REPEAT_BYTES 8192
/* Python scalars' 0-d tensors kept (a power of two: the cache is direct-mapped). */
#define SCALAR_SLOTS 64

typedef void (*Body)(int op, int dtype, const void *a, const void *b, void *c, Py_ssize_t n);
typedef void (*Copy)(char *dst, const char *src, int ndim, const Py_ssize_t *shape,
                     const Py_ssize_t *strides, Py_ssize_t size);

/* Contiguize temporaries up to this size are made here; larger ones take the Python path, which
 * reuses one per-thread buffer (`execute._temporary`). */
#define DENSIFY_MAX_BYTES (1 << 20)

static Body run_body;           /* `_native`'s kernel body for the selected instruction set */
static Copy copy_dense;         /* `_native`'s strided copy into a dense buffer (Contiguize) */
static PyTypeObject *tensor;    /* FuelTensor */
static PyTypeObject *layout_type; /* Layout */
static PyTypeObject *dtype_type;  /* DType */
static PyObject *dense_layout;    /* Layout.dense (memoized) */
static Py_ssize_t off_storage, off_layout, off_dtype, off_np; /* its slots' byte offsets */
static Py_ssize_t off_dtype_np; /* DType's slot holding its NumPy dtype */
static PyObject *policy_var, *trace_var, *observers_var, *current_policy;
static PyObject *plans_name;    /* "plans" */
static PyObject *default_name;  /* "_DEFAULT" */
static PyObject *out_kwnames;   /* ("out",) */
static PyObject *backends_dict; /* engine.backends' globals, where the default policy lives */
static PyObject *make_scalar;   /* dispatch._scalar(value, like) */
static PyObject *check_inplace; /* tensor.check_inplace(target, dtype, shape, what) */
static PyObject *array_name;    /* "_array" */
static PyObject *astype_name;   /* "astype" */
static PyObject *order_kwnames; /* ("order",) */
static PyObject *order_c;       /* "C" */
static PyObject *errstate_var;  /* NumPy's extobj contextvar, or NULL: then no oracle entries */
static PyObject *errstate_ignore; /* its value under np.errstate(all="ignore") */
static PyObject *last_policy, *last_plans; /* the policy last read and its plan cache */

#define SLOT(obj, off) (*(PyObject **)((char *)(obj) + (off)))

/* A FuelTensor with these slots, as `FuelTensor._make` builds one (the arguments are borrowed;
 * the tensor takes references of its own), or NULL on error. */
static PyObject *new_tensor(PyObject *storage, PyObject *layout, PyObject *dtype, PyObject *np_) {
    PyObject *t = tensor->tp_alloc(tensor, 0);
    if (t == NULL) return NULL;
    SLOT(t, off_storage) = Py_NewRef(storage);
    SLOT(t, off_layout) = Py_NewRef(layout);
    SLOT(t, off_dtype) = Py_NewRef(dtype);
    SLOT(t, off_np) = Py_NewRef(np_);
    return t;
}

enum { NATIVE, ORACLE };              /* the kernel an entry runs */
enum { AS_IS, DENSIFY, REPEAT };      /* how a native entry reads an operand */

/* What `binary` needs of a cached plan, made once by `entry` when dispatch caches it. */
typedef struct {
    PyObject_VAR_HEAD
    int kind, kop, kdtype, ndim;
    int mode[2];              /* AS_IS, DENSIFY or (NATIVE only) REPEAT, per operand */
    Py_ssize_t count, itemsize;
    Py_ssize_t offset[2];     /* each operand's first element in its storage (AS_IS, REPEAT,
                                 ORACLE), and how many storage elements it needs from there */
    Py_ssize_t need[2];
    PyObject *out_dtype, *out_layout, *np_dtype, *shape, *ufunc;
    PyObject *cast[2];        /* an operand's Cast step: (NumPy dtype, dense Layout of its
                                 shape, DType), or NULL */
    npy_intp *dims;           /* the output's extents */
    npy_intp *steps[2];       /* ORACLE: each operand's broadcast view, byte strides */
    npy_intp data[];
} Entry;

static void entry_dealloc(PyObject *self) {
    Entry *e = (Entry *)self;
    Py_XDECREF(e->out_dtype);
    Py_XDECREF(e->out_layout);
    Py_XDECREF(e->np_dtype);
    Py_XDECREF(e->shape);
    Py_XDECREF(e->ufunc);
    Py_XDECREF(e->cast[0]);
    Py_XDECREF(e->cast[1]);
    PyObject_Free(self);
}

static PyTypeObject EntryType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "fueltensor.kernels._fast.Entry",
    .tp_basicsize = sizeof(Entry),
    .tp_itemsize = sizeof(npy_intp),
    .tp_dealloc = entry_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A cached plan as the fast path runs it (opaque; made by entry()).",
};

/* The caller's floating-point status flags, kept across a kernel run: the kernels raise flags
 * (inexact, overflow...) that the caller never asked for. On x86-64 the SSE kernels raise them
 * in MXCSR only, and rewriting MXCSR is far cheaper than fesetexceptflag's x87 environment
 * round trip, so the x87 flags are only touched when they changed. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <xmmintrin.h>
typedef struct {
    unsigned int mxcsr;
    unsigned short x87;
} FpFlags;

static inline unsigned short x87_status(void) {
    unsigned short status;
    __asm__ volatile("fnstsw %0" : "=am"(status));
    return status;
}

static inline void fp_save(FpFlags *f) {
    f->mxcsr = _mm_getcsr();
    f->x87 = x87_status();
}

static inline void fp_restore(const FpFlags *f) {
    int raised = (x87_status() & ~f->x87) & FE_ALL_EXCEPT;
    if (raised) feclearexcept(raised);
    if (_mm_getcsr() != f->mxcsr) _mm_setcsr(f->mxcsr);
}
#else
typedef fexcept_t FpFlags;

static inline void fp_save(FpFlags *f) { fegetexceptflag(f, FE_ALL_EXCEPT); }

static inline void fp_restore(const FpFlags *f) { fesetexceptflag(f, FE_ALL_EXCEPT); }
#endif

/* Large outputs live in blocks of their own (64-byte aligned, traced by tracemalloc in NumPy's
 * domain), and a dying block is kept for the next output of the same size, up to KEEP_BUDGET
 * bytes in all: a loop of same-shape operations then writes into memory already mapped instead
 * of taking a page fault per 4 KiB of every fresh output, whatever other allocations (NumPy's,
 * PyTorch's) did to the heap in between. Smaller outputs, and outputs over the budget, stay
 * NumPy allocations (its allocator is as fast for the small ones; a huge one is not kept). */
#define KEEP_FROM (256 * 1024)
#define KEEP_BUDGET ((size_t)64 << 20)
#define KEEP_SLOTS 4
#define NUMPY_TRACE_DOMAIN 389047

typedef struct {
    PyObject_HEAD void *data;
    size_t size;
} Block;

static struct {
    void *data;
    size_t size;
} kept[KEEP_SLOTS]; /* most recently kept first; guarded by the GIL */
static size_t kept_bytes;

/* A new block; from 4 MiB on advised to the kernel for huge pages, as NumPy advises its own
 * large buffers (one fault per 2 MiB instead of per 4 KiB on first touch). */
static void *block_alloc(size_t size) {
#if defined(_WIN32)
    return _aligned_malloc(size, ALIGNMENT);
#else
    void *p = NULL;
    if (posix_memalign(&p, ALIGNMENT, size) != 0) return NULL;
#if defined(MADV_HUGEPAGE)
    if (size >= ((size_t)4 << 20)) {
        uintptr_t start = ((uintptr_t)p + 4095) & ~(uintptr_t)4095;
        uintptr_t end = ((uintptr_t)p + size) & ~(uintptr_t)4095;
        if (end > start) madvise((void *)start, end - start, MADV_HUGEPAGE);
    }
#endif
    return p;
#endif
}

static void block_free(void *p) {
#if defined(_WIN32)
    _aligned_free(p);
#else
    free(p);
#endif
}

/* A block of `size` bytes: a kept one of exactly that size, else a new one. */
static void *block_take(size_t size) {
    for (int k = 0; k < KEEP_SLOTS; k++) {
        if (kept[k].data == NULL || kept[k].size != size) continue;
        void *p = kept[k].data;
        kept_bytes -= size;
        for (int j = k; j + 1 < KEEP_SLOTS; j++) kept[j] = kept[j + 1];
        kept[KEEP_SLOTS - 1].data = NULL;
        return p;
    }
    return block_alloc(size);
}

/* Keep a dying block first in line, freeing the least recently kept ones beyond the budget. */
static void block_keep(void *p, size_t size) {
    for (int k = KEEP_SLOTS - 1; k >= 0; k--) {
        int full = k == KEEP_SLOTS - 1 || kept_bytes + size > KEEP_BUDGET;
        if (kept[k].data == NULL || !full) continue;
        block_free(kept[k].data);
        kept_bytes -= kept[k].size;
        kept[k].data = NULL;
    }
    for (int j = KEEP_SLOTS - 1; j > 0; j--) kept[j] = kept[j - 1];
    kept[0].data = p;
    kept[0].size = size;
    kept_bytes += size;
}

static void block_dealloc(PyObject *self) {
    Block *b = (Block *)self;
    PyTraceMalloc_Untrack(NUMPY_TRACE_DOMAIN, (uintptr_t)b->data);
    block_keep(b->data, b->size);
    PyObject_Free(self);
}

static PyTypeObject BlockType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "fueltensor.kernels._fast.Block",
    .tp_basicsize = sizeof(Block),
    .tp_dealloc = block_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The memory of a large output (opaque; its array's base).",
};

/* The element count of `dims` (`*count`) and its bytes of `itemsize` each (`*bytes`), or -1
 * when either exceeds Py_ssize_t: an output's shape comes from broadcasting its operands, so
 * no layout check bounds it. */
static int checked_size(const npy_intp *dims, int ndim, Py_ssize_t itemsize, Py_ssize_t *count,
                        Py_ssize_t *bytes) {
    Py_ssize_t n = 1;
    for (int k = 0; k < ndim; k++)
        if (__builtin_mul_overflow(n, (Py_ssize_t)dims[k], &n)) return -1;
    *count = n;
    return __builtin_mul_overflow(n, itemsize, bytes) ? -1 : 0;
}

/* A fresh 1-D array of `count` elements of `descr` (a reference stolen) whose first byte is
 * 64-byte aligned: a block of its own when large (above), else NumPy's allocation,
 * over-allocated and viewed at its first aligned byte. MemoryError when the bytes (alignment
 * included) exceed what a 64-bit index reaches; nothing is allocated then. */
static PyArrayObject *aligned_array(PyArray_Descr *descr, Py_ssize_t count) {
    npy_intp dims = (npy_intp)count, nbytes;
    Py_ssize_t elements, bytes, itemsize = PyDataType_ELSIZE(descr);
    if (checked_size(&dims, 1, itemsize, &elements, &bytes) < 0 ||
        __builtin_add_overflow(bytes, (Py_ssize_t)ALIGNMENT, &nbytes)) {
        PyErr_Format(PyExc_MemoryError,
                     "cannot allocate %zd elements of %zd bytes: more than the largest buffer a "
                     "64-bit index reaches; nothing was allocated",
                     count, itemsize);
        Py_DECREF(descr);
        return NULL;
    }
    size_t size = (size_t)bytes;
    PyObject *base;
    char *data;
    if (size >= KEEP_FROM && size <= KEEP_BUDGET) {
        Block *b = PyObject_New(Block, &BlockType);
        void *p = b == NULL ? NULL : block_take(size);
        if (p == NULL) {
            if (b != NULL) PyObject_Free(b);
            Py_DECREF(descr);
            return (PyArrayObject *)PyErr_NoMemory();
        }
        b->data = p;
        b->size = size;
        PyTraceMalloc_Track(NUMPY_TRACE_DOMAIN, (uintptr_t)p, size);
        base = (PyObject *)b;
        data = p;
    } else {
        base = PyArray_SimpleNew(1, &nbytes, NPY_UINT8);
        if (base == NULL) {
            Py_DECREF(descr);
            return NULL;
        }
        data = PyArray_BYTES((PyArrayObject *)base);
        data += (ALIGNMENT - (uintptr_t)data % ALIGNMENT) % ALIGNMENT;
    }
    PyArrayObject *out = (PyArrayObject *)PyArray_NewFromDescr(
        &PyArray_Type, descr, 1, &dims, NULL, data, NPY_ARRAY_CARRAY, NULL);
    if (out == NULL || PyArray_SetBaseObject(out, base) < 0) {
        Py_XDECREF(out);
        if (out == NULL) Py_DECREF(base);
        return NULL;
    }
    return out;
}

static PyObject *empty(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "empty(count, dtype) takes 2 arguments, got %zd", nargs);
        return NULL;
    }
    Py_ssize_t count = PyLong_AsSsize_t(args[0]);
    if (count == -1 && PyErr_Occurred()) return NULL;
    if (count < 0) {
        PyErr_Format(PyExc_ValueError, "empty: count must be >= 0, got %zd", count);
        return NULL;
    }
    PyArray_Descr *descr;
    if (!PyArray_DescrConverter(args[1], &descr)) return NULL;
    return (PyObject *)aligned_array(descr, count);
}

/* Whether a contextvar holding a tuple (the active traces, the observers) holds any. */
static int busy(PyObject *var) {
    PyObject *value;
    if (PyContextVar_Get(var, NULL, &value) < 0) return -1;
    int any = value != NULL && PyTuple_Check(value) && PyTuple_GET_SIZE(value) > 0;
    Py_XDECREF(value);
    return any;
}

/* Lookups remembered by the identity of the key's parts: building and hashing the 5-tuple key
 * (two Layouts of tuples, hashed afresh each time) was a third of a small operation. The parts
 * are immutable and held here, so the same objects mean the same key; a policy's plans dict
 * only grows until it is cleared whole, and a remembered plan is the one planning that key
 * again gives (a Policy's registry and providers are fixed), so a hit serves what the dict
 * would. A dict smaller than when a slot was filled has been cleared: the slot is not used. */
#define FRONT_SLOTS 64

typedef struct {
    PyObject *parts[6]; /* plans dict, op, lhs NumPy dtype, lhs layout, rhs NumPy dtype, rhs
                           layout */
    PyObject *cell;     /* the dict's value: (plan, planning, entry) */
    Py_ssize_t size;    /* the dict's size when the slot was filled */
} Front;

static Front front[FRONT_SLOTS];

/* The cached entry for the key `dispatch.choose` builds, under the active policy (a new
 * reference), or NULL with no error set on a miss. */
static PyObject *cached(PyObject *op, PyObject *a, PyObject *b) {
    PyObject *policy;
    if (PyContextVar_Get(policy_var, NULL, &policy) < 0) return NULL;
    if (policy == NULL || policy == Py_None) {
        Py_XDECREF(policy);
        /* The default policy, as current_policy() returns it once it exists (no Python call). */
        policy = PyDict_GetItemWithError(backends_dict, default_name);
        if (policy == NULL && PyErr_Occurred()) return NULL;
        if (policy != NULL && policy != Py_None) Py_INCREF(policy);
        else policy = PyObject_CallNoArgs(current_policy);
        if (policy == NULL) return NULL;
    }
    PyObject *plans;
    if (policy == last_policy) { /* a Policy is frozen: its plans dict is its for life */
        plans = Py_NewRef(last_plans);
        Py_DECREF(policy);
    } else {
        plans = PyObject_GetAttr(policy, plans_name);
        if (plans == NULL) {
            Py_DECREF(policy);
            return NULL;
        }
        PyObject *old_policy = last_policy, *old_plans = last_plans;
        last_policy = policy; /* both set before a release can run any code */
        last_plans = Py_NewRef(plans);
        Py_XDECREF(old_policy);
        Py_XDECREF(old_plans);
    }
    PyObject *parts[6] = {plans,
                          op,
                          SLOT(SLOT(a, off_dtype), off_dtype_np),
                          SLOT(a, off_layout),
                          SLOT(SLOT(b, off_dtype), off_dtype_np),
                          SLOT(b, off_layout)};
    uint64_t h = 0;
    for (int k = 0; k < 6; k++) h = (h ^ ((uintptr_t)parts[k] >> 4)) * 0x9E3779B97F4A7C15ull;
    Front *slot = &front[h >> 58 & (FRONT_SLOTS - 1)];
    int same = slot->cell != NULL && PyDict_GET_SIZE(plans) >= slot->size;
    for (int k = 0; same && k < 6; k++) same = slot->parts[k] == parts[k];
    if (same) {
        Py_DECREF(plans);
        return Py_NewRef(slot->cell);
    }
    PyObject *key = PyTuple_Pack(5, op, parts[2], parts[3], parts[4], parts[5]);
    PyObject *cell = key == NULL ? NULL : PyDict_GetItemWithError(plans, key);
    Py_XDECREF(key);
    if (cell != NULL) {
        Front old = *slot; /* every field set before a release can run any code */
        for (int k = 0; k < 6; k++) slot->parts[k] = Py_NewRef(parts[k]);
        slot->cell = Py_NewRef(cell);
        slot->size = PyDict_GET_SIZE(plans);
        for (int k = 0; k < 6; k++) Py_XDECREF(old.parts[k]);
        Py_XDECREF(old.cell);
        Py_INCREF(cell);
    }
    Py_DECREF(plans);
    return cell;
}

/* ---------------------------------------------------------------------------------------------
 * Python scalars: the 0-d tensor `dispatch._scalar` makes, cached. */

typedef struct {
    int kind; /* 1 float, 2 int, 3 bool; 0: an empty slot */
    uint64_t bits;
    PyObject *like;   /* the other operand's DType (the scalar's dtype follows from it) */
    PyObject *tensor; /* the 0-d tensor, its storage read-only */
} Scalar;

static Scalar scalars[SCALAR_SLOTS];

/* Whether `value` is a Python scalar this code takes: exactly a float, an int or a bool. */
static int is_scalar(PyObject *value) {
    return PyFloat_CheckExact(value) || PyLong_CheckExact(value) || PyBool_Check(value);
}

/* Make a cached scalar's arrays read-only, so no write can reach the cache. */
static void freeze(PyObject *t) {
    PyObject *storage = SLOT(t, off_storage), *np_ = SLOT(t, off_np);
    if (storage != NULL && PyArray_Check(storage))
        PyArray_CLEARFLAGS((PyArrayObject *)storage, NPY_ARRAY_WRITEABLE);
    if (np_ != NULL && PyArray_Check(np_))
        PyArray_CLEARFLAGS((PyArrayObject *)np_, NPY_ARRAY_WRITEABLE);
}

/* The Python scalar `value` as the 0-d tensor dispatch makes next to tensor `like` (a new
 * reference), or NULL with `_scalar`'s exception (OverflowError for an int out of range). */
static PyObject *scalar_operand(PyObject *value, PyObject *like) {
    PyObject *like_dtype = SLOT(like, off_dtype);
    uint64_t bits;
    int kind;
    if (PyFloat_CheckExact(value)) {
        double d = PyFloat_AS_DOUBLE(value);
        memcpy(&bits, &d, sizeof bits);
        kind = 1;
    } else if (PyBool_Check(value)) {
        bits = value == Py_True;
        kind = 3;
    } else {
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (v == -1 && PyErr_Occurred()) return NULL;
        if (overflow) return PyObject_CallFunctionObjArgs(make_scalar, value, like, NULL);
        bits = (uint64_t)v;
        kind = 2;
    }
    uint64_t h = (bits ^ (bits >> 31) ^ ((uintptr_t)like_dtype >> 4) ^ (uint64_t)kind);
    Scalar *slot = &scalars[(h * 0x9E3779B97F4A7C15ull) >> 58 & (SCALAR_SLOTS - 1)];
    if (slot->kind == kind && slot->bits == bits && slot->like == like_dtype)
        return Py_NewRef(slot->tensor);
    PyObject *t = PyObject_CallFunctionObjArgs(make_scalar, value, like, NULL);
    if (t == NULL || Py_TYPE(t) != tensor) return t;
    freeze(t);
    PyObject *old_like = slot->like, *old_tensor = slot->tensor;
    slot->kind = kind;
    slot->bits = bits;
    slot->like = Py_NewRef(like_dtype);
    slot->tensor = Py_NewRef(t);
    Py_XDECREF(old_like);
    Py_XDECREF(old_tensor);
    return t;
}

/* ---------------------------------------------------------------------------------------------
 * Entries. */

/* Read a tuple of `n` ints into `dst`; -1 with an exception when it is not one. */
static int read_ints(PyObject *tuple, Py_ssize_t n, npy_intp *dst, const char *what) {
    if (!PyTuple_Check(tuple) || PyTuple_GET_SIZE(tuple) != n) {
        PyErr_Format(PyExc_TypeError, "entry: %s must be a tuple of %zd ints", what, n);
        return -1;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        dst[k] = (npy_intp)PyLong_AsSsize_t(PyTuple_GET_ITEM(tuple, k));
        if (dst[k] == -1 && PyErr_Occurred()) return -1;
    }
    return 0;
}

/* Whether `cast` is None or a (NumPy dtype, Layout, DType) triple, as an entry's Cast step. */
static int is_cast(PyObject *cast) {
    return cast == Py_None ||
           (PyTuple_Check(cast) && PyTuple_GET_SIZE(cast) == 3 &&
            PyArray_DescrCheck(PyTuple_GET_ITEM(cast, 0)) &&
            Py_TYPE(PyTuple_GET_ITEM(cast, 1)) == layout_type &&
            PyTuple_GET_SIZE(PyTuple_GET_ITEM(cast, 1)) == 3);
}

/* entry(kop, kdtype, out_dtype, out_layout, np_dtype, shape, modes, offsets, needs, ufunc,
 * steps, casts): the fast path's opaque view of a cached plan (see `dispatch._fast_entry`). */
static PyObject *entry(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 12) {
        PyErr_Format(PyExc_TypeError, "entry() takes 12 arguments, got %zd", nargs);
        return NULL;
    }
    PyObject *shape = args[5], *ufunc = args[9], *steps = args[10], *casts = args[11];
    if (layout_type == NULL || !PyTuple_Check(casts) || PyTuple_GET_SIZE(casts) != 2 ||
        !is_cast(PyTuple_GET_ITEM(casts, 0)) || !is_cast(PyTuple_GET_ITEM(casts, 1))) {
        PyErr_SetString(PyExc_TypeError, "entry: casts must be two of None or (NumPy dtype, "
                                         "Layout, DType)");
        return NULL;
    }
    if (!PyTuple_Check(shape) || PyTuple_GET_SIZE(shape) > NPY_MAXDIMS ||
        !PyArray_DescrCheck(args[4])) {
        PyErr_SetString(PyExc_TypeError, "entry: shape must be a tuple (at most NPY_MAXDIMS "
                                         "ints) and np_dtype a NumPy dtype");
        return NULL;
    }
    Py_ssize_t ndim = PyTuple_GET_SIZE(shape);
    int oracle = ufunc != Py_None;
    if (oracle && errstate_var == NULL) Py_RETURN_NONE; /* no silent error state to call under */
    Entry *e = PyObject_NewVar(Entry, &EntryType, 3 * ndim + 1);
    if (e == NULL) return NULL;
    e->out_dtype = e->out_layout = e->np_dtype = e->shape = e->ufunc = NULL;
    for (int k = 0; k < 2; k++) {
        PyObject *cast = PyTuple_GET_ITEM(casts, k);
        e->cast[k] = cast == Py_None ? NULL : Py_NewRef(cast);
    }
    e->kind = oracle ? ORACLE : NATIVE;
    e->ndim = (int)ndim;
    e->dims = e->data;
    e->steps[0] = e->data + ndim;
    e->steps[1] = e->data + 2 * ndim;
    e->kop = (int)PyLong_AsLong(args[0]);
    e->kdtype = (int)PyLong_AsLong(args[1]);
    e->itemsize = PyDataType_ELSIZE((PyArray_Descr *)args[4]);
    npy_intp modes[2], offsets[2], needs[2];
    int bad = PyErr_Occurred() || read_ints(shape, ndim, e->dims, "shape") < 0 ||
              read_ints(args[6], 2, modes, "modes") < 0 ||
              read_ints(args[7], 2, offsets, "offsets") < 0 ||
              read_ints(args[8], 2, needs, "needs") < 0;
    if (!bad && oracle) {
        bad = !PyTuple_Check(steps) || PyTuple_GET_SIZE(steps) != 2 ||
              read_ints(PyTuple_GET_ITEM(steps, 0), ndim, e->steps[0], "steps[0]") < 0 ||
              read_ints(PyTuple_GET_ITEM(steps, 1), ndim, e->steps[1], "steps[1]") < 0;
        if (bad && !PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "entry: an oracle entry needs two stride tuples");
    }
    if (bad) {
        Py_DECREF(e);
        return NULL;
    }
    Py_ssize_t bytes;
    if (checked_size(e->dims, (int)ndim, e->itemsize, &e->count, &bytes) < 0) {
        Py_DECREF(e); /* no output of this shape can exist: the Python path refuses it */
        Py_RETURN_NONE;
    }
    for (int k = 0; k < 2; k++) {
        e->mode[k] = (int)modes[k];
        e->offset[k] = offsets[k];
        e->need[k] = needs[k];
    }
    e->out_dtype = Py_NewRef(args[2]);
    e->out_layout = Py_NewRef(args[3]);
    e->np_dtype = Py_NewRef(args[4]);
    e->shape = Py_NewRef(shape);
    e->ufunc = oracle ? Py_NewRef(ufunc) : NULL;
    return (PyObject *)e;
}

/* ---------------------------------------------------------------------------------------------
 * Running an entry. */

/* The byte `offset` elements into a tensor's storage, when the storage is a 1-D array of at
 * least `offset + need` `itemsize`-byte elements side by side (how dispatch builds every
 * tensor); else NULL. */
static char *operand_at(PyObject *t, Py_ssize_t offset, Py_ssize_t need, Py_ssize_t itemsize) {
    PyObject *storage = SLOT(t, off_storage);
    if (storage == NULL || !PyArray_Check(storage)) return NULL;
    PyArrayObject *s = (PyArrayObject *)storage;
    Py_ssize_t end;
    if (PyArray_NDIM(s) != 1 || PyArray_ITEMSIZE(s) != itemsize ||
        __builtin_add_overflow(offset, need, &end) || PyArray_DIM(s, 0) < end)
        return NULL;
    if (PyArray_DIM(s, 0) > 1 && PyArray_STRIDE(s, 0) != itemsize) return NULL;
    return PyArray_BYTES(s) + offset * itemsize;
}

static int read_layout(PyObject *t, Py_ssize_t *shape, Py_ssize_t *strides, int *ndim,
                       Py_ssize_t *offset);

/* The plan's BroadcastTo (to the output's shape, when `broadcast`) and Contiguize of operand
 * `t`, into a fresh buffer `*temp` (to be freed with PyMem_RawFree); NULL with no error set
 * when the operand is not one this code copies. */
static const char *densify(PyObject *t, const Entry *e, int broadcast, char **temp) {
    Py_ssize_t shape[NPY_MAXDIMS], strides[NPY_MAXDIMS], offset;
    Py_ssize_t steps[NPY_MAXDIMS];
    int ndim;
    Py_ssize_t itemsize = e->itemsize;
    if (!read_layout(t, shape, strides, &ndim, &offset)) return NULL;
    int out_ndim = broadcast ? e->ndim : ndim;
    const Py_ssize_t *dims = broadcast ? (const Py_ssize_t *)e->dims : shape;
    Py_ssize_t count, bytes;
    if (checked_size(dims, out_ndim, itemsize, &count, &bytes) < 0 || bytes > DENSIFY_MAX_BYTES ||
        ndim > out_ndim)
        return NULL;
    const char *start = operand_at(t, offset, 0, itemsize); /* the storage holds the offset */
    if (start == NULL) return NULL;
    for (int k = 0; k < out_ndim; k++) {
        Py_ssize_t j = k - (out_ndim - ndim), n = dims[k];
        if (j >= 0 && shape[j] == n) {
            if (n < 2) steps[k] = 0;
            else if (__builtin_mul_overflow(strides[j], itemsize, &steps[k])) return NULL;
        } else if (j < 0 || shape[j] == 1) steps[k] = 0; /* an axis the broadcast repeats */
        else return NULL;
    }
    *temp = PyMem_RawMalloc((size_t)bytes + 1);
    if (*temp == NULL) return NULL;
    if (count) copy_dense(*temp, start, out_ndim, dims, steps, itemsize);
    return *temp;
}

/* The fresh output of entry `e`: its 1-D aligned storage (`*storage`) and the N-D array
 * `_from_dense` keeps beside it (the storage itself when 1-D); both new references. */
static int fresh_output(const Entry *e, PyArrayObject **storage, PyObject **view) {
    Py_INCREF(e->np_dtype);
    PyArrayObject *out = aligned_array((PyArray_Descr *)e->np_dtype, e->count);
    if (out == NULL) return -1;
    PyObject *nd = (PyObject *)out;
    if (e->ndim == 1) {
        Py_INCREF(out);
    } else {
        Py_INCREF(e->np_dtype);
        nd = PyArray_NewFromDescr(&PyArray_Type, (PyArray_Descr *)e->np_dtype, e->ndim, e->dims,
                                  NULL, PyArray_DATA(out), NPY_ARRAY_CARRAY, NULL);
        if (nd == NULL || PyArray_SetBaseObject((PyArrayObject *)nd, Py_NewRef(out)) < 0) {
            Py_XDECREF(nd);
            Py_DECREF(out);
            return -1;
        }
    }
    *storage = out;
    *view = nd;
    return 0;
}

/* Run a native entry into `out`: 1 done, 0 when an operand is not one this code reads (the
 * Python path runs), -1 on error. */
static int run_native(const Entry *e, PyObject *const *operands, char *out) {
    const char *src[2];
    char *temp[2] = {NULL, NULL};
    _Alignas(64) char blocks[2][REPEAT_BYTES];
    Py_ssize_t isz = e->itemsize, step = e->count;
    int status = 0;
    for (int k = 0; k < 2; k++) {
        if (e->mode[k] == DENSIFY) {
            src[k] = densify(operands[k], e, 1, &temp[k]);
        } else {
            src[k] = operand_at(operands[k], e->offset[k], e->need[k], isz);
            if (src[k] != NULL && e->mode[k] == REPEAT) {
                if (step > REPEAT_BYTES / isz) step = REPEAT_BYTES / isz;
            }
        }
        if (src[k] == NULL) goto done;
    }
    for (int k = 0; k < 2; k++) {
        if (e->mode[k] == REPEAT) { /* Contiguize's own copy of a stride-0 row: a fill */
            Py_ssize_t repeated = 0;
            copy_dense(blocks[k], src[k], 1, &step, &repeated, isz);
            src[k] = blocks[k];
        }
    }
    int ra = e->mode[0] == REPEAT, rb = e->mode[1] == REPEAT;
    FpFlags flags;
    fp_save(&flags);
    PyThreadState *state = e->count >= GIL_FREE_FROM ? PyEval_SaveThread() : NULL;
    for (Py_ssize_t i = 0; i < e->count; i += step) {
        Py_ssize_t n = e->count - i < step ? e->count - i : step, at = i * isz;
        run_body(e->kop, e->kdtype, src[0] + (ra ? 0 : at), src[1] + (rb ? 0 : at), out + at, n);
    }
    if (state != NULL) PyEval_RestoreThread(state);
    fp_restore(&flags);
    status = 1;
done:
    PyMem_RawFree(temp[0]);
    PyMem_RawFree(temp[1]);
    return status;
}

/* A read-only view of the output's shape with byte `steps` at `data`, kept alive by `owner`
 * (NULL: a temporary the caller frees after the view). */
static PyObject *strided_view(const Entry *e, const char *data, const npy_intp *steps,
                              PyObject *owner) {
    Py_INCREF(e->np_dtype);
    PyObject *view = PyArray_NewFromDescr(&PyArray_Type, (PyArray_Descr *)e->np_dtype, e->ndim,
                                          e->dims, (npy_intp *)steps, (char *)data, 0, NULL);
    if (view != NULL && owner != NULL &&
        PyArray_SetBaseObject((PyArrayObject *)view, Py_NewRef(owner)) < 0)
        Py_CLEAR(view);
    return view;
}

/* Run an oracle entry into `out`: the oracle's ufunc call on its broadcast views, silenced as
 * np.errstate(all="ignore") silences it. 1 done, 0 when an operand is not one this code reads,
 * -1 on error. */
static int run_oracle(const Entry *e, PyObject *const *operands, PyObject *out) {
    PyObject *args[3] = {NULL, NULL, out};
    char *temp[2] = {NULL, NULL};
    int status = -1;
    for (int k = 0; k < 2; k++) {
        const char *data = e->mode[k] == DENSIFY
                               ? densify(operands[k], e, 0, &temp[k])
                               : operand_at(operands[k], e->offset[k], e->need[k], e->itemsize);
        if (data == NULL) {
            status = 0;
            goto done;
        }
        PyObject *owner = temp[k] == NULL ? SLOT(operands[k], off_storage) : NULL;
        args[k] = strided_view(e, data, e->steps[k], owner);
        if (args[k] == NULL) goto done;
    }
    PyObject *token = PyContextVar_Set(errstate_var, errstate_ignore);
    if (token == NULL) goto done;
    PyObject *got = PyObject_Vectorcall(e->ufunc, args, 2, out_kwnames);
    int reset = PyContextVar_Reset(errstate_var, token);
    Py_DECREF(token);
    Py_XDECREF(got);
    if (got != NULL && reset == 0) status = 1;
done:
    Py_XDECREF(args[0]);
    Py_XDECREF(args[1]);
    PyMem_RawFree(temp[0]);
    PyMem_RawFree(temp[1]);
    return status;
}

/* What a fast call runs: its operands (a Python scalar as its cached 0-d tensor), the plan
 * cache's cell and the cell's entry. `operands`, `scalar` and `cell` are released by `release`. */
typedef struct {
    PyObject *operands[2];
    PyObject *scalar;  /* the 0-d tensor standing for a Python scalar operand, or NULL */
    PyObject *cell;    /* the plan cache's (plan, planning, entry), or NULL */
    PyObject *cast[2]; /* an operand after its Cast step, or NULL */
    Entry *e;
} Call;

static void release(Call *c) {
    Py_CLEAR(c->scalar);
    Py_CLEAR(c->cell);
    Py_CLEAR(c->cast[0]);
    Py_CLEAR(c->cast[1]);
}

/* The Cast step `cast` (see Entry) of operand `t`: the call `execute.prepare` makes,
 * `t._array.astype(dtype, order="C")`, under the caller's error state as there, wrapped as
 * the dense tensor `FuelTensor._from_dense` makes of it (a new reference), or NULL on error. */
static PyObject *cast_operand(PyObject *t, PyObject *cast) {
    PyObject *array = PyObject_GetAttr(t, array_name);
    if (array == NULL) return NULL;
    PyObject *args[3] = {array, PyTuple_GET_ITEM(cast, 0), order_c};
    PyObject *dense = PyObject_VectorcallMethod(astype_name, args, 2, order_kwnames);
    Py_DECREF(array);
    if (dense == NULL) return NULL;
    PyObject *flat = NULL, *made = NULL;
    if (!PyArray_Check(dense) || !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)dense)) {
        PyErr_SetString(PyExc_TypeError, "astype(order=\"C\") gave no C-contiguous array");
        goto done;
    }
    flat = PyArray_Ravel((PyArrayObject *)dense, NPY_CORDER);
    if (flat != NULL)
        made = new_tensor(flat, PyTuple_GET_ITEM(cast, 1), PyTuple_GET_ITEM(cast, 2), dense);
done:
    Py_XDECREF(flat);
    Py_DECREF(dense);
    return made;
}

/* Find what the fast path runs for `op(a, b)`: 1 found (`c->e` set), 0 when this call is not
 * one the fast path serves (an operand other than a FuelTensor or an exact Python float / int
 * / bool beside one, no cached plan with an entry, or a trace or observer active), -1 on error
 * (`_scalar`'s OverflowError for an int the dtype cannot hold). */
static int resolve(PyObject *op, PyObject *a, PyObject *b, Call *c) {
    c->operands[0] = a;
    c->operands[1] = b;
    c->scalar = c->cell = c->cast[0] = c->cast[1] = NULL;
    c->e = NULL;
    if (tensor == NULL) return 0;
    int ta = Py_TYPE(a) == tensor, tb = Py_TYPE(b) == tensor;
    if (!(ta && tb) && !(ta && is_scalar(b)) && !(tb && is_scalar(a))) return 0;
    int watched = busy(trace_var);
    if (watched == 0) watched = busy(observers_var);
    if (watched != 0) return watched < 0 ? -1 : 0;
    if (!(ta && tb)) {
        int k = ta ? 1 : 0;
        c->scalar = scalar_operand(c->operands[k], c->operands[1 - k]);
        if (c->scalar == NULL) return -1;
        if (Py_TYPE(c->scalar) != tensor) {
            Py_CLEAR(c->scalar);
            return 0;
        }
        c->operands[k] = c->scalar;
    }
    c->cell = cached(op, c->operands[0], c->operands[1]);
    if (c->cell == NULL) {
        release(c);
        return PyErr_Occurred() ? -1 : 0;
    }
    PyObject *item = PyTuple_Check(c->cell) && PyTuple_GET_SIZE(c->cell) == 3
                         ? PyTuple_GET_ITEM(c->cell, 2)
                         : Py_None;
    if (Py_TYPE(item) != &EntryType) {
        release(c);
        return 0;
    }
    c->e = (Entry *)item;
    return 1;
}

/* Run the found entry into a fresh output (`*storage`, `*view`, as `fresh_output` makes them),
 * its operands' Cast steps first: 1 done, 0 when an operand is not one this code reads (the
 * Python path runs), -1 on error. */
static int compute(Call *c, PyArrayObject **storage, PyObject **view) {
    const Entry *e = c->e;
    for (int k = 0; k < 2; k++) {
        if (e->cast[k] == NULL) continue;
        c->cast[k] = cast_operand(c->operands[k], e->cast[k]);
        if (c->cast[k] == NULL) return -1;
        c->operands[k] = c->cast[k];
    }
    if (fresh_output(e, storage, view) < 0) return -1;
    int ran = e->kind == ORACLE ? run_oracle(e, c->operands, *view)
                                : run_native(e, c->operands, PyArray_BYTES(*storage));
    if (ran <= 0) {
        Py_CLEAR(*storage);
        Py_CLEAR(*view);
    }
    return ran;
}

/* binary(op, a, b): the FuelTensor `dispatch.binary(op, a, b)` returns, or None when this
 * call is not one the fast path serves (see `resolve`). */
static PyObject *fast_binary(PyObject *op, PyObject *a, PyObject *b) {
    Call c;
    int found = resolve(op, a, b, &c);
    if (found <= 0) return found < 0 ? NULL : Py_NewRef(Py_None);
    PyArrayObject *storage = NULL;
    PyObject *view = NULL, *result = NULL;
    int ran = compute(&c, &storage, &view);
    if (ran <= 0) {
        release(&c);
        return ran < 0 ? NULL : Py_NewRef(Py_None);
    }
    result = new_tensor((PyObject *)storage, c.e->out_layout, c.e->out_dtype, view);
    Py_DECREF(storage);
    Py_DECREF(view);
    release(&c);
    return result;
}

/* Where entry `e`'s output is copied into in-place target `t` when `t` is of the output's
 * dtype, row-major dense, not empty, of the output's extents and in a writable storage (a
 * target `check_inplace` accepts, written by one memcpy); else NULL. */
static char *dense_target(PyObject *t, const Entry *e) {
    Py_ssize_t shape[NPY_MAXDIMS], strides[NPY_MAXDIMS], offset;
    int ndim;
    PyObject *storage = SLOT(t, off_storage);
    if (SLOT(t, off_dtype) != e->out_dtype || e->count == 0 ||
        !read_layout(t, shape, strides, &ndim, &offset) || ndim != e->ndim ||
        storage == NULL || !PyArray_Check(storage) ||
        !PyArray_ISWRITEABLE((PyArrayObject *)storage))
        return NULL;
    Py_ssize_t step = 1;
    for (int k = ndim - 1; k >= 0; k--) {
        if (shape[k] != e->dims[k] || (shape[k] > 1 && strides[k] != step)) return NULL;
        if (__builtin_mul_overflow(step, shape[k], &step)) return NULL;
    }
    return operand_at(t, offset, e->count, e->itemsize);
}

/* inplace(op, target, other): `dispatch.binary_inplace(op, target, other)` (the target,
 * written through its strides) or None when the call is not one the fast path serves. The
 * output is computed fresh, as a kernel's output never aliases its inputs, then copied into
 * the target; `check_inplace` refuses a result the target cannot hold before anything runs. */
static PyObject *fast_inplace(PyObject *op, PyObject *target, PyObject *other) {
    Call c;
    if (tensor == NULL || Py_TYPE(target) != tensor) Py_RETURN_NONE;
    int found = resolve(op, target, other, &c);
    if (found <= 0) return found < 0 ? NULL : Py_NewRef(Py_None);
    const Entry *e = c.e;
    PyArrayObject *storage = NULL;
    PyObject *view = NULL, *result = NULL, *dst = NULL;
    char *dense = dense_target(target, e);
    if (dense == NULL) {
        PyObject *checked = PyObject_CallFunctionObjArgs(check_inplace, target, e->out_dtype,
                                                         e->shape, op, NULL);
        if (checked == NULL) goto done;
        Py_DECREF(checked);
        dst = PyObject_GetAttr(target, array_name);
        if (dst == NULL) goto done;
        if (!PyArray_Check(dst)) {
            result = Py_NewRef(Py_None);
            goto done;
        }
    }
    int ran = compute(&c, &storage, &view);
    if (ran <= 0) {
        if (ran == 0) result = Py_NewRef(Py_None);
        goto done;
    }
    if (dense != NULL) {
        PyThreadState *state = e->count >= GIL_FREE_FROM ? PyEval_SaveThread() : NULL;
        memcpy(dense, PyArray_BYTES(storage), (size_t)(e->count * e->itemsize));
        if (state != NULL) PyEval_RestoreThread(state);
    } else if (PyArray_CopyInto((PyArrayObject *)dst, (PyArrayObject *)view) < 0)
        goto done;
    result = Py_NewRef(target);
done:
    Py_XDECREF(storage);
    Py_XDECREF(view);
    Py_XDECREF(dst);
    release(&c);
    return result;
}

static PyObject *binary(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "binary(op, a, b) takes 3 arguments, got %zd", nargs);
        return NULL;
    }
    return fast_binary(args[0], args[1], args[2]);
}

/* adopt(array, dtype): `FuelTensor._from_dense(array, dtype)` when `array` is an exact ndarray
 * of `dtype` that owns its memory, row-major and writable (a fresh NumPy result `_host.fresh`
 * adopts without a copy); else None. */
static PyObject *adopt(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "adopt(array, dtype) takes 2 arguments, got %zd", nargs);
        return NULL;
    }
    PyObject *array = args[0], *dtype = args[1];
    if (tensor == NULL || dense_layout == NULL || !PyArray_CheckExact(array) ||
        Py_TYPE(dtype) != dtype_type)
        Py_RETURN_NONE;
    PyArrayObject *a = (PyArrayObject *)array;
    int flags = NPY_ARRAY_OWNDATA | NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_WRITEABLE;
    if (!PyArray_CHKFLAGS(a, flags)) Py_RETURN_NONE;
    int same = PyObject_RichCompareBool((PyObject *)PyArray_DESCR(a), SLOT(dtype, off_dtype_np),
                                       Py_EQ);
    if (same <= 0) return same < 0 ? NULL : Py_NewRef(Py_None);
    int ndim = PyArray_NDIM(a);
    PyObject *shape = PyTuple_New(ndim), *layout = NULL, *storage = NULL, *made = NULL;
    if (shape == NULL) return NULL;
    for (int k = 0; k < ndim; k++) {
        PyObject *n = PyLong_FromSsize_t(PyArray_DIM(a, k));
        if (n == NULL) goto done;
        PyTuple_SET_ITEM(shape, k, n);
    }
    layout = PyObject_CallOneArg(dense_layout, shape);
    storage = layout == NULL ? NULL
              : ndim == 1    ? Py_NewRef(array)
                             : PyArray_Ravel(a, NPY_CORDER);
    if (storage != NULL) made = new_tensor(storage, layout, dtype, array);
done:
    Py_DECREF(shape);
    Py_XDECREF(layout);
    Py_XDECREF(storage);
    return made;
}

/* scalar(value, like): the cached 0-d tensor `dispatch._scalar(value, like)` makes (read-only),
 * or None when `value` is not an exact Python float / int / bool or `like` not a tensor. */
static PyObject *scalar(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "scalar(value, like) takes 2 arguments, got %zd", nargs);
        return NULL;
    }
    if (tensor == NULL || Py_TYPE(args[1]) != tensor || !is_scalar(args[0])) Py_RETURN_NONE;
    return scalar_operand(args[0], args[1]);
}

static PyObject *inplace(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "inplace(op, target, other) takes 3 arguments, got %zd",
                     nargs);
        return NULL;
    }
    return fast_inplace(args[0], args[1], args[2]);
}

/* ---------------------------------------------------------------------------------------------
 * Operators: `x + y`, `y + x`, `x += y` and `ft.add(x, y)` as one C callable each, so the
 * common call costs no Python frame: the fast path, else dispatch's Python path. As a class
 * attribute it binds like a function (a method descriptor); its __dict__ carries the name,
 * docstring and signature the Python functions it stands for would have. */

enum { FORWARD, REFLECTED, INPLACE }; /* `x op y`, `y op x` (x the instance), `x op= y` */

typedef struct {
    PyObject_HEAD
    PyObject *op;       /* the contract operation's name */
    PyObject *fallback; /* dispatch's Python path: fallback(op, a, b) */
    PyObject *dict;
    int form;           /* FORWARD, REFLECTED or INPLACE */
    vectorcallfunc vectorcall;
} Operator;

static PyObject *operator_call(PyObject *self, PyObject *const *args, size_t nargsf,
                               PyObject *kwnames) {
    Operator *o = (Operator *)self;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != 2 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames))) {
        PyErr_Format(PyExc_TypeError, "%U() takes exactly 2 positional arguments (%zd given%s)",
                     o->op, nargs, kwnames != NULL && PyTuple_GET_SIZE(kwnames) ? ", and keywords"
                                                                                 : "");
        return NULL;
    }
    int swap = o->form == REFLECTED;
    PyObject *a = args[swap], *b = args[1 - swap];
    PyObject *result = o->form == INPLACE ? fast_inplace(o->op, a, b) : fast_binary(o->op, a, b);
    if (result != Py_None) return result;
    Py_DECREF(result);
    PyObject *call[3] = {o->op, a, b};
    return PyObject_Vectorcall(o->fallback, call, 3, NULL);
}

static PyObject *operator_get(PyObject *self, PyObject *obj, PyObject *type) {
    (void)type;
    if (obj == NULL || obj == Py_None) return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

static void operator_dealloc(PyObject *self) {
    Operator *o = (Operator *)self;
    Py_XDECREF(o->op);
    Py_XDECREF(o->fallback);
    Py_XDECREF(o->dict);
    PyObject_Free(self);
}

static PyObject *operator_repr(PyObject *self) {
    PyObject *name = PyObject_GetAttrString(self, "__qualname__");
    if (name == NULL) return NULL;
    PyObject *repr = PyUnicode_FromFormat("<compiled function %S>", name);
    Py_DECREF(name);
    return repr;
}

/* Pickled by reference, as a function is: its module and qualified name. */
static PyObject *operator_reduce(PyObject *self, PyObject *unused) {
    (void)unused;
    return PyObject_GetAttrString(self, "__qualname__");
}

static PyMethodDef operator_methods[] = {
    {"__reduce__", operator_reduce, METH_NOARGS, "Pickle by module and qualified name."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef operator_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject OperatorType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "fueltensor.kernels._fast.Operator",
    .tp_basicsize = sizeof(Operator),
    .tp_dealloc = operator_dealloc,
    .tp_repr = operator_repr,
    .tp_vectorcall_offset = offsetof(Operator, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_getattro = PyObject_GenericGetAttr,
    .tp_setattro = PyObject_GenericSetAttr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "A contract operation's function or operator method (see operator()).",
    .tp_methods = operator_methods,
    .tp_getset = operator_getset,
    .tp_descr_get = operator_get,
    .tp_dictoffset = offsetof(Operator, dict),
};

/* operator(op, form, fallback): the callable `(a, b) -> fallback(op, a, b)` (of `(b, a)` when
 * form is 1, reflected) that tries the fast path first, `inplace`'s when form is 2 (`a op= b`). */
static PyObject *make_operator(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 3 || !PyUnicode_Check(args[0]) || !PyLong_Check(args[1]) ||
        !PyCallable_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "operator(op: str, form: int, fallback) takes 3 "
                                         "arguments");
        return NULL;
    }
    long form = PyLong_AsLong(args[1]);
    if (form < FORWARD || form > INPLACE) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "operator: form must be 0, 1 or 2, got %ld", form);
        return NULL;
    }
    Operator *o = PyObject_New(Operator, &OperatorType);
    if (o == NULL) return NULL;
    o->op = Py_NewRef(args[0]);
    o->fallback = Py_NewRef(args[2]);
    o->dict = NULL;
    o->form = (int)form;
    o->vectorcall = operator_call;
    return (PyObject *)o;
}

/* ---------------------------------------------------------------------------------------------
 * Views: a basic index or a transpose of a valid view selects a subset of its elements, so the
 * result needs no bounds check; it is built as `FuelTensor._view` builds it. */

/* A view of tensor `t` with this layout (its storage and dtype), or NULL on error. */
static PyObject *make_view(PyObject *t, const Py_ssize_t *shape, const Py_ssize_t *strides,
                           int ndim, Py_ssize_t offset) {
    PyObject *sh = PyTuple_New(ndim), *st = PyTuple_New(ndim), *fields = NULL, *layout = NULL;
    if (sh == NULL || st == NULL) goto fail;
    for (int k = 0; k < ndim; k++) {
        PyObject *n = PyLong_FromSsize_t(shape[k]), *s = PyLong_FromSsize_t(strides[k]);
        if (n != NULL) PyTuple_SET_ITEM(sh, k, n);
        if (s != NULL) PyTuple_SET_ITEM(st, k, s);
        if (n == NULL || s == NULL) goto fail;
    }
    PyObject *off = PyLong_FromSsize_t(offset);
    if (off == NULL) goto fail;
    fields = PyTuple_Pack(3, sh, st, off);
    Py_DECREF(off);
    PyObject *args = fields == NULL ? NULL : PyTuple_Pack(1, fields);
    layout = args == NULL ? NULL : PyTuple_Type.tp_new(layout_type, args, NULL);
    Py_XDECREF(args);
    if (layout == NULL) goto fail;
    PyObject *view = new_tensor(SLOT(t, off_storage), layout, SLOT(t, off_dtype), Py_None);
    if (view == NULL) goto fail;
    Py_DECREF(layout);
    Py_DECREF(sh);
    Py_DECREF(st);
    Py_DECREF(fields);
    return view;
fail:
    Py_XDECREF(sh);
    Py_XDECREF(st);
    Py_XDECREF(fields);
    Py_XDECREF(layout);
    return NULL;
}

/* Read a tensor's layout into C arrays; 0 when it is not one this code reads (then None). */
static int read_layout(PyObject *t, Py_ssize_t *shape, Py_ssize_t *strides, int *ndim,
                       Py_ssize_t *offset) {
    PyObject *layout = SLOT(t, off_layout);
    if (layout == NULL || !PyTuple_Check(layout) || PyTuple_GET_SIZE(layout) != 3) return 0;
    PyObject *sh = PyTuple_GET_ITEM(layout, 0), *st = PyTuple_GET_ITEM(layout, 1);
    if (!PyTuple_CheckExact(sh) || !PyTuple_CheckExact(st)) return 0;
    Py_ssize_t nd = PyTuple_GET_SIZE(sh);
    if (nd > NPY_MAXDIMS || PyTuple_GET_SIZE(st) != nd) return 0;
    for (Py_ssize_t k = 0; k < nd; k++) {
        shape[k] = PyLong_AsSsize_t(PyTuple_GET_ITEM(sh, k));
        strides[k] = PyLong_AsSsize_t(PyTuple_GET_ITEM(st, k));
    }
    *offset = PyLong_AsSsize_t(PyTuple_GET_ITEM(layout, 2));
    *ndim = (int)nd;
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    return 1;
}

/* getitem(t, key): t[key] for a key of ints and slices (alone or in a tuple), else None. */
static PyObject *getitem(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "getitem(t, key) takes 2 arguments, got %zd", nargs);
        return NULL;
    }
    PyObject *t = args[0], *key = args[1];
    if (tensor == NULL || Py_TYPE(t) != tensor) Py_RETURN_NONE;
    Py_ssize_t shape[NPY_MAXDIMS], strides[NPY_MAXDIMS], offset;
    Py_ssize_t out_shape[NPY_MAXDIMS], out_strides[NPY_MAXDIMS];
    int ndim, out = 0;
    if (!read_layout(t, shape, strides, &ndim, &offset)) Py_RETURN_NONE;
    PyObject *const *items = &key;
    Py_ssize_t count = 1;
    if (PyTuple_CheckExact(key)) {
        items = &PyTuple_GET_ITEM(key, 0);
        count = PyTuple_GET_SIZE(key);
    }
    if (count > ndim) Py_RETURN_NONE;
    Py_ssize_t off = offset, size = 1;
    for (int k = 0; k < ndim; k++) {
        Py_ssize_t n = shape[k], s = strides[k];
        PyObject *item = k < count ? items[k] : NULL;
        if (item == NULL) {
            out_shape[out] = n;
            out_strides[out++] = s;
            if (__builtin_mul_overflow(size, n, &size)) Py_RETURN_NONE;
        } else if (PyLong_CheckExact(item)) {
            Py_ssize_t i = PyLong_AsSsize_t(item);
            if (i == -1 && PyErr_Occurred()) {
                PyErr_Clear();
                Py_RETURN_NONE;
            }
            if (i < -n || i >= n) Py_RETURN_NONE; /* Python raises the IndexError */
            Py_ssize_t moved; /* Python's indexing raises what an overflow here means */
            if (__builtin_mul_overflow(i < 0 ? i + n : i, s, &moved) ||
                __builtin_add_overflow(off, moved, &off))
                Py_RETURN_NONE;
        } else if (PySlice_Check(item)) {
            Py_ssize_t start, stop, step, step_stride;
            if (PySlice_Unpack(item, &start, &stop, &step) < 0) {
                PyErr_Clear();
                Py_RETURN_NONE;
            }
            Py_ssize_t len = PySlice_AdjustIndices(n, &start, &stop, step);
            if (__builtin_mul_overflow(s, step, &step_stride)) Py_RETURN_NONE;
            out_shape[out] = len;
            out_strides[out++] = step_stride;
            Py_ssize_t moved;
            if (len && (__builtin_mul_overflow(start, s, &moved) ||
                        __builtin_add_overflow(off, moved, &off)))
                Py_RETURN_NONE;
            if (__builtin_mul_overflow(size, len, &size)) Py_RETURN_NONE;
        } else {
            Py_RETURN_NONE;
        }
    }
    /* An empty view keeps the tensor's (valid) offset, as `FuelTensor._view` does. */
    return make_view(t, out_shape, out_strides, out, size ? off : offset);
}

/* transpose(t): t with its axes reversed (`.T` of a tensor of at most two dimensions). */
static PyObject *transpose(PyObject *module, PyObject *t) {
    (void)module;
    if (tensor == NULL || Py_TYPE(t) != tensor) Py_RETURN_NONE;
    Py_ssize_t shape[NPY_MAXDIMS], strides[NPY_MAXDIMS], offset;
    Py_ssize_t out_shape[NPY_MAXDIMS], out_strides[NPY_MAXDIMS];
    int ndim;
    if (!read_layout(t, shape, strides, &ndim, &offset)) Py_RETURN_NONE;
    for (int k = 0; k < ndim; k++) {
        out_shape[k] = shape[ndim - 1 - k];
        out_strides[k] = strides[ndim - 1 - k];
    }
    return make_view(t, out_shape, out_strides, ndim, offset);
}

/* The byte offset of slot `name` of `type`, read from its member descriptor. */
static Py_ssize_t slot_offset(PyTypeObject *type, const char *name) {
    PyObject *descr = PyDict_GetItemString(type->tp_dict, name);
    if (descr == NULL || !PyObject_TypeCheck(descr, &PyMemberDescr_Type)) {
        PyErr_Format(PyExc_TypeError, "%s has no slot %s", type->tp_name, name);
        return -1;
    }
    PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
    if (member->type != T_OBJECT_EX) {
        PyErr_Format(PyExc_TypeError, "%s.%s is not an object slot", type->tp_name, name);
        return -1;
    }
    return member->offset;
}

static PyObject *configure(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 11 || !PyType_Check(args[0]) || !PyType_Check(args[5]) ||
        !PyType_IsSubtype((PyTypeObject *)args[5], &PyTuple_Type) || !PyDict_Check(args[6]) ||
        !PyType_Check(args[7]) || !PyCallable_Check(args[8]) ||
        !(args[9] == Py_None || (PyTuple_Check(args[9]) && PyTuple_GET_SIZE(args[9]) == 2 &&
                                 PyContextVar_CheckExact(PyTuple_GET_ITEM(args[9], 0)))) ||
        !PyCallable_Check(args[10])) {
        PyErr_SetString(PyExc_TypeError, "configure(FuelTensor, policy_var, trace_var, "
                                         "observers_var, current_policy, Layout, "
                                         "backends_globals, DType, make_scalar, "
                                         "(errstate_var, ignore) | None, check_inplace) takes "
                                         "11 arguments");
        return NULL;
    }
    for (Py_ssize_t i = 1; i < 4; i++) {
        if (!PyContextVar_CheckExact(args[i])) {
            PyErr_SetString(PyExc_TypeError, "configure: arguments 2-4 must be ContextVars");
            return NULL;
        }
    }
    PyTypeObject *type = (PyTypeObject *)args[0];
    Py_ssize_t storage = slot_offset(type, "_storage"), layout = slot_offset(type, "_layout");
    Py_ssize_t dtype = slot_offset(type, "_dtype"), np_ = slot_offset(type, "_np");
    Py_ssize_t dtype_np = slot_offset((PyTypeObject *)args[7], "np");
    if (storage < 0 || layout < 0 || dtype < 0 || np_ < 0 || dtype_np < 0) return NULL;
    off_storage = storage;
    off_layout = layout;
    off_dtype = dtype;
    off_np = np_;
    off_dtype_np = dtype_np;
    Py_XSETREF(tensor, (PyTypeObject *)Py_NewRef(args[0]));
    Py_XSETREF(policy_var, Py_NewRef(args[1]));
    Py_XSETREF(trace_var, Py_NewRef(args[2]));
    Py_XSETREF(observers_var, Py_NewRef(args[3]));
    Py_XSETREF(current_policy, Py_NewRef(args[4]));
    PyObject *dense = PyObject_GetAttrString(args[5], "dense");
    if (dense == NULL) return NULL;
    Py_XSETREF(dense_layout, dense);
    Py_XSETREF(layout_type, (PyTypeObject *)Py_NewRef(args[5]));
    Py_XSETREF(dtype_type, (PyTypeObject *)Py_NewRef(args[7]));
    Py_XSETREF(backends_dict, Py_NewRef(args[6]));
    Py_XSETREF(make_scalar, Py_NewRef(args[8]));
    Py_XSETREF(check_inplace, Py_NewRef(args[10]));
    if (args[9] == Py_None) {
        Py_CLEAR(errstate_var);
        Py_CLEAR(errstate_ignore);
    } else {
        Py_XSETREF(errstate_var, Py_NewRef(PyTuple_GET_ITEM(args[9], 0)));
        Py_XSETREF(errstate_ignore, Py_NewRef(PyTuple_GET_ITEM(args[9], 1)));
    }
    for (int k = 0; k < SCALAR_SLOTS; k++) { /* scalars made by the previous `make_scalar` */
        scalars[k].kind = 0;
        Py_CLEAR(scalars[k].like);
        Py_CLEAR(scalars[k].tensor);
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"binary", (PyCFunction)(void (*)(void))binary, METH_FASTCALL,
     "binary(op, a, b) -> FuelTensor | None: dispatch.binary's result when the cached plan has "
     "an entry and nothing traces or observes; else None."},
    {"inplace", (PyCFunction)(void (*)(void))inplace, METH_FASTCALL,
     "inplace(op, target, other) -> FuelTensor | None: dispatch.binary_inplace's result (the "
     "target) when binary would serve the call; else None."},
    {"adopt", (PyCFunction)(void (*)(void))adopt, METH_FASTCALL,
     "adopt(array, dtype) -> FuelTensor | None: FuelTensor._from_dense(array, dtype) for an "
     "exact ndarray of dtype owning its memory, row-major and writable; else None."},
    {"scalar", (PyCFunction)(void (*)(void))scalar, METH_FASTCALL,
     "scalar(value, like) -> FuelTensor | None: dispatch._scalar(value, like), cached and "
     "read-only, for an exact Python float / int / bool; else None."},
    {"operator", (PyCFunction)(void (*)(void))make_operator, METH_FASTCALL,
     "operator(op, form, fallback): a callable (a, b) that runs the fast path, else "
     "fallback(op, a, b) ((b, a) when form is 1; in place, inplace's path, when 2); binds as a "
     "method."},
    {"entry", (PyCFunction)(void (*)(void))entry, METH_FASTCALL,
     "entry(kop, kdtype, out_dtype, out_layout, np_dtype, shape, modes, offsets, needs, ufunc, "
     "steps, casts): what binary runs for a cached plan (an opaque object), or None."},
    {"empty", (PyCFunction)(void (*)(void))empty, METH_FASTCALL,
     "empty(count, dtype): an uninitialized 1-D array whose first byte is 64-byte aligned."},
    {"getitem", (PyCFunction)(void (*)(void))getitem, METH_FASTCALL,
     "getitem(t, key) -> FuelTensor | None: the view t[key] for ints and slices, else None."},
    {"transpose", transpose, METH_O,
     "transpose(t) -> FuelTensor | None: the view of t with its axes reversed."},
    {"configure", (PyCFunction)(void (*)(void))configure, METH_FASTCALL,
     "configure(FuelTensor, policy_var, trace_var, observers_var, current_policy, Layout, "
     "backends_globals, DType, make_scalar, errstate, check_inplace): what binary, inplace and "
     "the views read (called once by dispatch)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "fueltensor.kernels._fast",
    "Dispatch's compiled fast path for cached plans, and 64-byte-aligned allocation.",
    -1,
    methods,
};

PyMODINIT_FUNC PyInit__fast(void) {
    import_array();
    PyObject *native = PyImport_ImportModule("fueltensor.kernels._native");
    PyObject *capsule = native == NULL ? NULL : PyObject_GetAttrString(native, "BODY");
    Py_XDECREF(native);
    if (capsule == NULL) return NULL;
    run_body = (Body)PyCapsule_GetPointer(capsule, "fueltensor.kernels._native.BODY");
    Py_DECREF(capsule);
    if (run_body == NULL) return NULL;
    native = PyImport_ImportModule("fueltensor.kernels._native");
    capsule = native == NULL ? NULL : PyObject_GetAttrString(native, "COPY");
    Py_XDECREF(native);
    if (capsule == NULL) return NULL;
    copy_dense = (Copy)PyCapsule_GetPointer(capsule, "fueltensor.kernels._native.COPY");
    Py_DECREF(capsule);
    if (copy_dense == NULL) return NULL;
    plans_name = PyUnicode_InternFromString("plans");
    default_name = PyUnicode_InternFromString("_DEFAULT");
    array_name = PyUnicode_InternFromString("_array");
    astype_name = PyUnicode_InternFromString("astype");
    order_c = PyUnicode_InternFromString("C");
    order_kwnames = Py_BuildValue("(s)", "order");
    out_kwnames = Py_BuildValue("(s)", "out");
    if (PyType_Ready(&EntryType) < 0 || PyType_Ready(&OperatorType) < 0 ||
        PyType_Ready(&BlockType) < 0)
        return NULL;
    if (plans_name == NULL || default_name == NULL || array_name == NULL || out_kwnames == NULL ||
        astype_name == NULL || order_c == NULL || order_kwnames == NULL)
        return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL) return NULL;
    if (PyModule_AddIntConstant(module, "ALIGNMENT", ALIGNMENT) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
