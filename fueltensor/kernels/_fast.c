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
 * `inplace` serves `x op= y` the same way once `inplace_reason` accepts the output's dtype and
 * shape (`tensor.check_inplace`'s error otherwise, the target untouched): straight into a dense
 * target whose operands are each apart from it or exactly its elements (`writes_in_place`),
 * else into the plan's fresh output, as above (so `x[1:] += x[:-1]` reads its operands whole),
 * copied into the target (one memcpy into a dense one, NumPy's copy through a strided one's
 * strides).
 *
 * Every decision this code shares with dispatch's Python path is defined here once and called
 * by that path too: the plan-cache key (`key`), basic indexing (`getitem`, `select`), the
 * in-place rule (`inplace_refusal`) and tensor construction (`new_tensor`); see "One
 * dispatcher" in docs/interfaces.md.
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

#define ALIGNMENT 64
/* Below this many elements the loop is shorter than releasing and retaking the GIL. */
#define GIL_FREE_FROM 16384
/* Bytes of the block a repeated single element fills: on the stack (never on the heap), small
 * enough for a thread started with a small stack. */
#define REPEAT_BYTES 8192
/* Python scalars' 0-d tensors kept (a power of two: the cache is direct-mapped). */
#define SCALAR_SLOTS 64

typedef void (*Body)(int op, int dtype, const void *a, const void *b, void *c, Py_ssize_t n);
typedef void (*PowI)(int dtype, const void *x, int32_t k, void *out, Py_ssize_t n);
typedef void (*Copy)(char *dst, const char *src, int ndim, const Py_ssize_t *shape,
                     const Py_ssize_t *strides, Py_ssize_t size);

/* Contiguize temporaries up to this size are made here; larger ones take the Python path, which
 * reuses one per-thread buffer (`execute._temporary`). */
#define DENSIFY_MAX_BYTES (1 << 20)

static Body run_body;           /* `_native`'s kernel body for the selected instruction set */
static Copy copy_dense;         /* `_native`'s strided copy into a dense buffer (Contiguize) */
static PowI run_powi;           /* `_native`'s integer-power body (PowIElementwise) */
static int powi_op;             /* its kernel op number (`_native.POWI`) */
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
static PyObject *integer_forms; /* ops whose `x op k`, k an int, dispatch plans itself */
static PyObject *form_marker;   /* the first part of an integer-scalar form's plan-cache key */
static PyObject *array_name;    /* "_array" */
static PyObject *namespace_name; /* "namespace" */
static PyObject *astype_name;   /* "astype" */
static PyObject *order_kwnames; /* ("order",) */
static PyObject *order_c;       /* "C" */
static PyObject *errstate_var;  /* NumPy's extobj contextvar, or NULL: then no oracle entries */
static PyObject *errstate_ignore; /* its value under np.errstate(all="ignore") */
static PyObject *last_policy, *last_plans; /* the policy last read and its plan cache */

#define SLOT(obj, off) (*(PyObject **)((char *)(obj) + (off)))

static Py_ssize_t slot_offset(PyTypeObject *type, const char *name);

/* A `type` instance with these four slots (the arguments are borrowed; the tensor takes
 * references of its own), or NULL on error. The only code that builds a FuelTensor: the
 * Python path's constructors call it as `new_tensor` (see `shared.new_tensor`). */
static PyObject *make_tensor(PyTypeObject *type, Py_ssize_t const *off, PyObject *storage,
                             PyObject *layout, PyObject *dtype, PyObject *np_) {
    PyObject *t = type->tp_alloc(type, 0);
    if (t == NULL) return NULL;
    SLOT(t, off[0]) = Py_NewRef(storage);
    SLOT(t, off[1]) = Py_NewRef(layout);
    SLOT(t, off[2]) = Py_NewRef(dtype);
    SLOT(t, off[3]) = Py_NewRef(np_);
    return t;
}

/* A FuelTensor (the configured type) with these slots, the arguments borrowed. */
static PyObject *new_tensor(PyObject *storage, PyObject *layout, PyObject *dtype, PyObject *np_) {
    Py_ssize_t off[4] = {off_storage, off_layout, off_dtype, off_np};
    return make_tensor(tensor, off, storage, layout, dtype, np_);
}

/* The byte offsets of `type`'s four tensor slots, in `make_tensor`'s order; -1 on error. */
static int tensor_slots(PyTypeObject *type, Py_ssize_t *off) {
    static const char *const names[4] = {"_storage", "_layout", "_dtype", "_np"};
    for (int k = 0; k < 4; k++) {
        off[k] = slot_offset(type, names[k]);
        if (off[k] < 0) return -1;
    }
    return 0;
}

/* new_tensor(cls, storage, layout, dtype, np): a `cls` with these slots, unchecked (the
 * caller has checked the layout against the storage). */
static PyObject *export_new_tensor(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 5 || !PyType_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "new_tensor(cls, storage, layout, dtype, np) takes 5 "
                                         "arguments, cls a type");
        return NULL;
    }
    PyTypeObject *type = (PyTypeObject *)args[0];
    if (type == tensor) return new_tensor(args[1], args[2], args[3], args[4]);
    Py_ssize_t off[4]; /* before configure, or a subclass: read its slots */
    if (tensor_slots(type, off) < 0) return NULL;
    return make_tensor(type, off, args[1], args[2], args[3], args[4]);
}

enum { NATIVE, ORACLE, POWI };        /* the kernel an entry runs */
/* How a native entry reads an operand, and the forms of `operator`: defined here only and
 * exported as module constants, which dispatch reads (no Python copy). */
enum { AS_IS, DENSIFY, REPEAT };      /* its own dense elements, a dense copy, one repeated */
enum { FORWARD, REFLECTED, INPLACE, HOST, METHOD }; /* `x op y`, `y op x` (x the instance),
                                    `x op= y`, `x op y` of a host function (`x > 0`), a method
                                    of a ruled host function (`x.sum()`, see `method_call`) */

/* What `binary` needs of a cached plan, made once by `entry` when dispatch caches it. */
typedef struct {
    PyObject_VAR_HEAD
    int kind, kop, kdtype, ndim;
    int bare_ufunc;           /* ORACLE: its call is a NumPy ufunc itself (see writes_in_place) */
    int32_t exponent;         /* POWI: the plan's parameter k (its one operand is x) */
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

/* The plan-cache key of `op(a, b)` on two tensors, as parts (borrowed): the operation's name,
 * then each operand's NumPy dtype and Layout. This is the key's only definition: `key` packs
 * these parts for `dispatch.choose`, which caches every plan under it, and `cached` looks the
 * same parts up. (NumPy dtypes hash in C where DType.__hash__ is Python.) */
#define KEY_PARTS 5

static inline int key_parts(PyObject *op, PyObject *a, PyObject *b, PyObject **parts) {
    PyObject *da = SLOT(a, off_dtype), *db = SLOT(b, off_dtype);
    if (da != NULL && db != NULL) {
        parts[0] = op;
        parts[1] = SLOT(da, off_dtype_np);
        parts[2] = SLOT(a, off_layout);
        parts[3] = SLOT(db, off_dtype_np);
        parts[4] = SLOT(b, off_layout);
        if (parts[1] != NULL && parts[2] != NULL && parts[3] != NULL && parts[4] != NULL) return 0;
    }
    PyErr_SetString(PyExc_TypeError, "plan key: an operand tensor is not initialized");
    return -1;
}

static PyObject *pack_key(PyObject *const *parts) {
    return PyTuple_Pack(KEY_PARTS, parts[0], parts[1], parts[2], parts[3], parts[4]);
}

/* key(op, a, b): the plan-cache key `dispatch.choose` stores op(a, b)'s plan under. */
static PyObject *key(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 3 || !PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "key(op: str, a, b) takes 3 arguments");
        return NULL;
    }
    if (tensor == NULL || !PyObject_TypeCheck(args[1], tensor) ||
        !PyObject_TypeCheck(args[2], tensor)) {
        PyErr_SetString(PyExc_TypeError, "key: both operands must be FuelTensors (and the "
                                         "fast path configured)");
        return NULL;
    }
    PyObject *parts[KEY_PARTS];
    if (key_parts(args[0], args[1], args[2], parts) < 0) return NULL;
    return pack_key(parts);
}

/* Lookups remembered by the identity of the key's parts: building and hashing the 5-tuple key
 * (two Layouts of tuples, hashed afresh each time) was a third of a small operation. The parts
 * are immutable and held here, so the same objects mean the same key; a policy's plans dict
 * only grows until it is cleared whole, and a remembered plan is the one planning that key
 * again gives (a Policy's registry and providers are fixed), so a hit serves what the dict
 * would. A dict smaller than when a slot was filled has been cleared: the slot is not used. */
#define FRONT_SLOTS 64

typedef struct {
    PyObject *parts[KEY_PARTS + 1]; /* the plans dict, then the key's parts */
    PyObject *cell;     /* the dict's value: (plan, planning, entry) */
    Py_ssize_t size;    /* the dict's size when the slot was filled */
} Front;

static Front front[FRONT_SLOTS];

/* The active policy's plan cache (a new reference), or NULL with an error set. */
static inline PyObject *active_plans(void) {
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
    if (policy == last_policy) { /* a Policy is frozen: its plans dict is its for life */
        Py_DECREF(policy);
        return Py_NewRef(last_plans);
    }
    PyObject *plans = PyObject_GetAttr(policy, plans_name);
    if (plans == NULL || !PyDict_Check(plans)) {
        if (plans != NULL) PyErr_SetString(PyExc_TypeError, "a Policy's plans must be a dict");
        Py_XDECREF(plans);
        Py_DECREF(policy);
        return NULL;
    }
    PyObject *old_policy = last_policy, *old_plans = last_plans;
    last_policy = policy; /* both set before a release can run any code */
    last_plans = Py_NewRef(plans);
    Py_XDECREF(old_policy);
    Py_XDECREF(old_plans);
    return plans;
}

/* The plan cache's cell for the key of `parts[1..KEY_PARTS]` under the active policy (a new
 * reference), or NULL with no error set on a miss; `parts[0]` is scratch. */
static PyObject *cached_parts(PyObject **parts) {
    PyObject *plans = active_plans();
    if (plans == NULL) return NULL;
    parts[0] = plans;
    uint64_t h = 0;
    for (int k = 0; k <= KEY_PARTS; k++)
        h = (h ^ ((uintptr_t)parts[k] >> 4)) * 0x9E3779B97F4A7C15ull;
    Front *slot = &front[h >> 58 & (FRONT_SLOTS - 1)];
    int same = slot->cell != NULL && PyDict_GET_SIZE(plans) >= slot->size;
    for (int k = 0; same && k <= KEY_PARTS; k++) same = slot->parts[k] == parts[k];
    if (same) {
        Py_DECREF(plans);
        return Py_NewRef(slot->cell);
    }
    PyObject *packed = pack_key(parts + 1);
    PyObject *cell = packed == NULL ? NULL : PyDict_GetItemWithError(plans, packed);
    Py_XDECREF(packed);
    if (cell != NULL) {
        Front old = *slot; /* every field set before a release can run any code */
        for (int k = 0; k <= KEY_PARTS; k++) slot->parts[k] = Py_NewRef(parts[k]);
        slot->cell = Py_NewRef(cell);
        slot->size = PyDict_GET_SIZE(plans);
        for (int k = 0; k <= KEY_PARTS; k++) Py_XDECREF(old.parts[k]);
        Py_XDECREF(old.cell);
        Py_INCREF(cell);
    }
    Py_DECREF(plans);
    return cell;
}

/* The plan cache's cell for `key(op, a, b)` (see `cached_parts`). */
static PyObject *cached(PyObject *op, PyObject *a, PyObject *b) {
    PyObject *parts[KEY_PARTS + 1];
    if (key_parts(op, a, b, parts + 1) < 0) return NULL;
    return cached_parts(parts);
}

/* The plan-cache key of `op(x, k)` in its integer-scalar form, as parts (borrowed): the form's
 * marker, the operation, x's NumPy dtype and Layout, and the exponent k. Its only definition in
 * a compiled build: `form_key` packs it for `scalar_forms.choose`, `resolve` looks it up. The
 * marker (no operation is named so) keeps it apart from every key of two tensors, so an int
 * exponent never meets the plan of a float one. */
static inline int form_parts(PyObject *op, PyObject *x, PyObject *k, PyObject **parts) {
    PyObject *dx = SLOT(x, off_dtype);
    parts[0] = form_marker;
    parts[1] = op;
    parts[2] = dx == NULL ? NULL : SLOT(dx, off_dtype_np);
    parts[3] = SLOT(x, off_layout);
    parts[4] = k;
    if (parts[2] != NULL && parts[3] != NULL) return 0;
    PyErr_SetString(PyExc_TypeError, "plan key: the operand tensor is not initialized");
    return -1;
}

/* form_key(op, x, k): the key `scalar_forms.choose` stores op(x, k)'s integer-scalar plan under. */
static PyObject *form_key(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 3 || !PyUnicode_Check(args[0]) || tensor == NULL ||
        !PyObject_TypeCheck(args[1], tensor) || !PyLong_CheckExact(args[2])) {
        PyErr_SetString(PyExc_TypeError, "form_key(op: str, x: FuelTensor, k: int) takes 3 "
                                         "arguments (and the fast path configured)");
        return NULL;
    }
    PyObject *parts[KEY_PARTS];
    if (form_parts(args[0], args[1], args[2], parts) < 0) return NULL;
    return pack_key(parts);
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

/* An entry's kernel parameters (`plan.params`, NULL: none): the exponent of a POWI entry, a
 * 1-tuple of an int in i32 (as its contract types it); none for any other. -1 with a TypeError
 * when they are not that. */
static int read_params(PyObject *params, Entry *e) {
    Py_ssize_t n = params == NULL ? 0 : PyTuple_Check(params) ? PyTuple_GET_SIZE(params) : -1;
    if (e->kind != POWI) {
        if (n == 0) return 0;
        PyErr_SetString(PyExc_TypeError, "entry: only a powi kernel takes params");
        return -1;
    }
    if (n == 1 && PyLong_CheckExact(PyTuple_GET_ITEM(params, 0))) {
        int overflow;
        long long k = PyLong_AsLongLongAndOverflow(PyTuple_GET_ITEM(params, 0), &overflow);
        if (!overflow && k >= INT32_MIN && k <= INT32_MAX) {
            e->exponent = (int32_t)k;
            return 0;
        }
    }
    PyErr_SetString(PyExc_TypeError, "entry: a powi kernel's params must be (k,), k an int in "
                                     "i32");
    return -1;
}

/* entry(kop, kdtype, out_dtype, out_layout, np_dtype, shape, modes, offsets, needs, ufunc,
 * steps, casts[, params]): the fast path's opaque view of a cached plan (see
 * `dispatch._fast_entry`); `params` is the plan's kernel parameters (a POWI kernel's (k,)). */
static PyObject *entry(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 12 && nargs != 13) {
        PyErr_Format(PyExc_TypeError, "entry() takes 12 or 13 arguments, got %zd", nargs);
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
    e->kind = ORACLE;
    e->ndim = (int)ndim;
    e->dims = e->data;
    e->steps[0] = e->data + ndim;
    e->steps[1] = e->data + 2 * ndim;
    e->kop = (int)PyLong_AsLong(args[0]);
    e->kdtype = (int)PyLong_AsLong(args[1]);
    e->itemsize = PyDataType_ELSIZE((PyArray_Descr *)args[4]);
    if (!oracle) e->kind = e->kop == powi_op ? POWI : NATIVE;
    npy_intp modes[2], offsets[2], needs[2];
    int bad = PyErr_Occurred() || read_params(nargs == 13 ? args[12] : NULL, e) < 0 ||
              read_ints(shape, ndim, e->dims, "shape") < 0 ||
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
    e->bare_ufunc = oracle && strcmp(Py_TYPE(ufunc)->tp_name, "numpy.ufunc") == 0;
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

/* Run a POWI entry into `out`: x ** k on its one operand (dense, or the plan's Contiguize), as
 * `run_native` does. 1 done, 0 when the operand is not one this code reads, -1 on error. */
static int run_powi_entry(const Entry *e, PyObject *x, char *out) {
    char *temp = NULL;
    const char *src = e->mode[0] == DENSIFY ? densify(x, e, 1, &temp)
                                            : operand_at(x, e->offset[0], e->need[0], e->itemsize);
    if (src == NULL) return 0;
    FpFlags flags;
    fp_save(&flags);
    PyThreadState *state = e->count >= GIL_FREE_FROM ? PyEval_SaveThread() : NULL;
    run_powi(e->kdtype, src, e->exponent, out, e->count);
    if (state != NULL) PyEval_RestoreThread(state);
    fp_restore(&flags);
    PyMem_RawFree(temp);
    return 1;
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

/* Whether `value` is an exponent of an integer-scalar form: an exact Python int or a NumPy
 * integer scalar (`scalar_forms.integer_scalar`; never a bool). */
static int is_integer(PyObject *value) {
    return PyLong_CheckExact(value) || PyArray_IsScalar(value, Integer);
}

/* `resolve`'s verdict on the plan cache's cell `c->cell` (NULL: a miss, or an error set): 1 with
 * `c->e` set when the cell holds an entry, else 0 (-1 on error), `c` released. */
static int found_entry(Call *c) {
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

/* Find what the fast path runs for `op(a, b)`: 1 found (`c->e` set), 0 when this call is not
 * one the fast path serves (an operand other than a FuelTensor or an exact Python float / int
 * / bool beside one, or a NumPy integer exponent of an integer-scalar form; no cached plan
 * with an entry; a trace or observer active), -1 on error (`_scalar`'s OverflowError for an
 * int the dtype cannot hold). An integer-scalar form (`x ** 3`) is looked up by `form_parts`. */
static int resolve(PyObject *op, PyObject *a, PyObject *b, Call *c) {
    c->operands[0] = a;
    c->operands[1] = b;
    c->scalar = c->cell = c->cast[0] = c->cast[1] = NULL;
    c->e = NULL;
    if (tensor == NULL) return 0;
    int ta = Py_TYPE(a) == tensor, tb = Py_TYPE(b) == tensor;
    int form = ta && is_integer(b) ? PySet_Contains(integer_forms, op) : 0;
    if (form < 0) return -1;
    if (!form && !(ta && tb) && !(ta && is_scalar(b)) && !(tb && is_scalar(a))) return 0;
    int watched = busy(trace_var);
    if (watched == 0) watched = busy(observers_var);
    if (watched != 0) return watched < 0 ? -1 : 0;
    if (form) { /* x ** 3: its integer-scalar form's plan (`scalar_forms`), cached in Python */
        PyObject *parts[KEY_PARTS + 1];
        if (form_parts(op, a, b, parts + 1) < 0) return -1;
        c->cell = cached_parts(parts);
        return found_entry(c);
    }
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
    return found_entry(c);
}

/* Run the found entry's Cast steps (once: a call that ran them keeps their results). */
static int cast_operands(Call *c) {
    const Entry *e = c->e;
    for (int k = 0; k < 2; k++) {
        if (e->cast[k] == NULL || c->cast[k] != NULL) continue;
        c->cast[k] = cast_operand(c->operands[k], e->cast[k]);
        if (c->cast[k] == NULL) return -1;
        c->operands[k] = c->cast[k];
    }
    return 0;
}

/* Run the found entry (its Cast steps run) into `out`, the dense bytes of the output, which
 * `view` shows at the output's shape (the oracle writes through it): 1 done, 0 when an operand
 * is not one this code reads, -1 on error. */
static int run_entry(Call *c, char *out, PyObject *view) {
    const Entry *e = c->e;
    return e->kind == ORACLE ? run_oracle(e, c->operands, view)
           : e->kind == POWI ? run_powi_entry(e, c->operands[0], out)
                             : run_native(e, c->operands, out);
}

/* Whether the found entry (its Cast steps run) may write straight into `out`, an in-place
 * call's dense target of the output's shape, with the bits of a fresh output: every operand
 * the kernel reads as is either lies apart from `out` or is exactly its elements (a body reads
 * each lane before storing it; `_native`'s BODY and POWI take c equal to an operand). An
 * operand read through a copy (Contiguize, a repeated element, a Cast) is apart. An oracle
 * entry whose call is a bare ufunc writes through NumPy, which copies overlapping operands
 * itself; a half type's call re-reads its operands after the ufunc, so it never does. */
static int writes_in_place(const Call *c, const char *out) {
    const Entry *e = c->e;
    if (e->kind == ORACLE) return e->bare_ufunc;
    Py_ssize_t bytes = e->count * e->itemsize;
    for (int k = 0; k < (e->kind == POWI ? 1 : 2); k++) {
        if (e->mode[k] != AS_IS) continue;
        const char *src = operand_at(c->operands[k], e->offset[k], e->need[k], e->itemsize);
        if (src == NULL) return 0;
        uintptr_t lo = (uintptr_t)src, at = (uintptr_t)out;
        if (lo == at && e->need[k] == e->count) continue;
        uintptr_t end = lo + (uintptr_t)(e->need[k] * e->itemsize);
        int apart = end <= at || at + (uintptr_t)bytes <= lo;
        if (!apart) return 0;
    }
    return 1;
}

/* Run the found entry into a fresh output (`*storage`, `*view`, as `fresh_output` makes them),
 * its operands' Cast steps first: 1 done, 0 when an operand is not one this code reads (the
 * Python path runs), -1 on error. */
static int compute(Call *c, PyArrayObject **storage, PyObject **view) {
    const Entry *e = c->e;
    if (cast_operands(c) < 0 || fresh_output(e, storage, view) < 0) return -1;
    int ran = run_entry(c, PyArray_BYTES(*storage), *view);
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

/* Why tensor `t` cannot take an in-place result of `dtype` and `shape` (either NULL: not
 * compared, as for an assignment), as `*reason`, one of the interned REFUSALS strings, or NULL
 * when it can; -1 on error. The in-place rule's one definition in a compiled build
 * (`tensor.check_inplace` and `check_writable` ask it and word its reasons; the pure build's
 * `python_refusal` is tested equal): the dtype and shape are the result's, the storage is
 * writable, and a target that is not dense row-major has no stride-0 axis and, when not
 * contiguous, provably no two elements at one storage index (`Layout.may_self_overlap`).
 * `*dense_out` says whether an accepted target is dense row-major and not empty. */
static PyObject *REFUSALS[5]; /* "dtype", "shape", "read-only", "stride0", "overlap" */

static int inplace_reason(PyObject *t, PyObject *dtype, PyObject *shape, PyObject **reason,
                          int *dense_out) {
    PyObject *layout = SLOT(t, off_layout), *storage = SLOT(t, off_storage);
    *reason = NULL;
    *dense_out = 0;
    if (dtype != NULL && SLOT(t, off_dtype) != dtype) return *reason = REFUSALS[0], 0;
    if (shape != NULL) {
        int same = PyObject_RichCompareBool(PyTuple_GET_ITEM(layout, 0), shape, Py_EQ);
        if (same <= 0) return same < 0 ? -1 : (*reason = REFUSALS[1], 0);
    }
    if (!PyArray_Check(storage) || !PyArray_ISWRITEABLE((PyArrayObject *)storage))
        return *reason = REFUSALS[2], 0;
    PyObject *sh = PyTuple_GET_ITEM(layout, 0), *st = PyTuple_GET_ITEM(layout, 1);
    Py_ssize_t step = 1, nd = PyTuple_GET_SIZE(sh);
    int dense = 1, stride0 = 0, empty = 0;
    for (Py_ssize_t k = nd - 1; k >= 0; k--) { /* the axes of extent > 1, fastest first */
        Py_ssize_t n = PyLong_AsSsize_t(PyTuple_GET_ITEM(sh, k)), s;
        if (n == -1 && PyErr_Occurred()) return -1;
        empty |= n == 0;
        if (n <= 1) continue;
        s = PyLong_AsSsize_t(PyTuple_GET_ITEM(st, k)); /* it fits: the layout was checked */
        if (s == -1 && PyErr_Occurred()) return -1;
        dense &= s == step;
        stride0 |= s == 0;
        if (__builtin_mul_overflow(step, n, &step)) dense = 0; /* a broadcast beyond 2^63 */
    }
    if (dense && !empty) return *dense_out = 1, 0;
    if (stride0) return *reason = REFUSALS[3], 0;
    if (empty) return 0; /* contiguous, no two elements anywhere */
    PyObject *overlap = PyObject_GetAttrString(layout, "may_self_overlap"); /* not contiguous */
    if (overlap == NULL) return -1;
    int yes = PyObject_IsTrue(overlap);
    Py_DECREF(overlap);
    if (yes > 0) *reason = REFUSALS[4];
    return yes < 0 ? -1 : 0;
}

/* inplace_refusal(t, dtype, shape): `inplace_reason`'s verdict for tensor `t` (dtype and
 * shape may be None: not compared), the reason string or None. */
static PyObject *inplace_refusal(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 3 || tensor == NULL || !PyObject_TypeCheck(args[0], tensor)) {
        PyErr_SetString(PyExc_TypeError, "inplace_refusal(t: FuelTensor, dtype, shape) takes 3 "
                                         "arguments (and the fast path configured)");
        return NULL;
    }
    PyObject *reason;
    int dense;
    if (inplace_reason(args[0], args[1] == Py_None ? NULL : args[1],
                       args[2] == Py_None ? NULL : args[2], &reason, &dense) < 0)
        return NULL;
    return Py_NewRef(reason == NULL ? Py_None : reason);
}

/* inplace(op, target, other): `dispatch.binary_inplace(op, target, other)` (the target,
 * written through its strides) or None when the call is not one the fast path serves. The
 * kernel writes straight into a dense target where `writes_in_place` allows it; otherwise the
 * output is computed fresh (overlapping operands read whole), then copied into the target. A
 * result the target cannot hold (`inplace_reason`) raises `check_inplace`'s error before
 * anything runs. */
static PyObject *fast_inplace(PyObject *op, PyObject *target, PyObject *other) {
    Call c;
    if (tensor == NULL || Py_TYPE(target) != tensor) Py_RETURN_NONE;
    int found = resolve(op, target, other, &c);
    if (found <= 0) return found < 0 ? NULL : Py_NewRef(Py_None);
    const Entry *e = c.e;
    PyArrayObject *storage = NULL;
    PyObject *view = NULL, *result = NULL, *dst = NULL, *reason;
    int is_dense;
    if (inplace_reason(target, e->out_dtype, e->shape, &reason, &is_dense) < 0) goto done;
    if (reason != NULL) { /* its error, worded by the Python side */
        PyObject *checked = PyObject_CallFunctionObjArgs(check_inplace, target, e->out_dtype,
                                                         e->shape, op, NULL);
        Py_XDECREF(checked);
        if (checked != NULL)
            PyErr_Format(PyExc_SystemError, "check_inplace accepted a target refused for %U",
                         reason);
        goto done;
    }
    /* An accepted dense target of the output's shape takes the output by one memcpy. */
    Py_ssize_t offset = PyLong_AsSsize_t(PyTuple_GET_ITEM(SLOT(target, off_layout), 2));
    if (offset == -1 && PyErr_Occurred()) goto done;
    char *dense = is_dense ? operand_at(target, offset, e->count, e->itemsize) : NULL;
    if (dense == NULL) {
        dst = PyObject_GetAttr(target, array_name);
        if (dst == NULL) goto done;
        if (!PyArray_Check(dst)) {
            result = Py_NewRef(Py_None);
            goto done;
        }
    }
    if (dense != NULL && cast_operands(&c) < 0) goto done;
    if (dense != NULL && writes_in_place(&c, dense)) { /* no fresh output, no copy */
        dst = e->kind == ORACLE ? PyObject_GetAttr(target, array_name) : NULL;
        if (e->kind == ORACLE && (dst == NULL || !PyArray_Check(dst))) {
            if (dst != NULL) result = Py_NewRef(Py_None);
            goto done;
        }
        int ran = run_entry(&c, dense, dst);
        if (ran != 0) result = ran > 0 ? Py_NewRef(target) : NULL;
        else result = Py_NewRef(Py_None);
        goto done;
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
static PyObject *adopt_array(PyObject *array, PyObject *dtype, PyObject **kept);

/* `Layout.dense` of array `a`'s shape (a new reference), or NULL on error; `*kept` (when not
 * NULL) is the last one made for the caller, reused while the shape is the same. */
static PyObject *dense_of(PyArrayObject *a, PyObject **kept) {
    int ndim = PyArray_NDIM(a);
    if (kept != NULL && *kept != NULL) {
        PyObject *shape = PyTuple_GET_ITEM(*kept, 0);
        int same = PyTuple_GET_SIZE(shape) == ndim;
        for (int k = 0; same && k < ndim; k++)
            same = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, k)) == PyArray_DIM(a, k);
        if (same) return Py_NewRef(*kept);
    }
    PyObject *shape = PyTuple_New(ndim), *layout = NULL;
    if (shape == NULL) return NULL;
    for (int k = 0; k < ndim; k++) {
        PyObject *n = PyLong_FromSsize_t(PyArray_DIM(a, k));
        if (n == NULL) goto done;
        PyTuple_SET_ITEM(shape, k, n);
    }
    layout = PyObject_CallOneArg(dense_layout, shape);
    if (layout != NULL && kept != NULL) {
        if (Py_TYPE(layout) == layout_type && PyTuple_GET_SIZE(layout) == 3)
            Py_XSETREF(*kept, Py_NewRef(layout));
    }
done:
    Py_DECREF(shape);
    return layout;
}

static PyObject *adopt(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "adopt(array, dtype) takes 2 arguments, got %zd", nargs);
        return NULL;
    }
    return adopt_array(args[0], args[1], NULL);
}

/* `adopt`'s verdict: the tensor, None, or NULL on error. */
static PyObject *adopt_array(PyObject *array, PyObject *dtype, PyObject **kept) {
    if (tensor == NULL || dense_layout == NULL || !PyArray_CheckExact(array) ||
        Py_TYPE(dtype) != dtype_type)
        Py_RETURN_NONE;
    PyArrayObject *a = (PyArrayObject *)array;
    int flags = NPY_ARRAY_OWNDATA | NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_WRITEABLE;
    if (!PyArray_CHKFLAGS(a, flags)) Py_RETURN_NONE;
    PyObject *want = SLOT(dtype, off_dtype_np);
    int same = (PyObject *)PyArray_DESCR(a) == want ||
               PyObject_RichCompareBool((PyObject *)PyArray_DESCR(a), want, Py_EQ);
    if (same <= 0) return same < 0 ? NULL : Py_NewRef(Py_None);
    int ndim = PyArray_NDIM(a);
    PyObject *layout = dense_of(a, kept), *storage = NULL, *made = NULL;
    storage = layout == NULL ? NULL
              : ndim == 1    ? Py_NewRef(array)
                             : PyArray_Ravel(a, NPY_CORDER);
    if (storage != NULL) made = new_tensor(storage, layout, dtype, array);
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

typedef struct {
    PyObject_HEAD
    PyObject *op;       /* the contract operation's name */
    PyObject *fallback; /* dispatch's Python path: fallback(op, a, b); HOST: fallback(a, b) */
    PyObject *hooks;    /* HOST: the object whose `namespace` holds the function named op */
    PyObject *dict;
    int form;           /* FORWARD, REFLECTED, INPLACE or HOST */
    vectorcallfunc vectorcall;
} Operator;

/* The namespace function `hooks.namespace.<op>` (a new reference), or NULL with the lookup's
 * error. The namespace module is set once, when `fueltensor` is imported: it is looked up on
 * first use and kept (`Hooks` has a Python `__getattr__`, so each read of it would go through
 * Python's attribute hook). The function is read on each call, as the Python methods read it:
 * a module's attribute is its dict's entry. */
static PyObject *namespace_function(PyObject *hooks, PyObject *op) {
    static PyObject *kept;
    if (kept == NULL) {
        PyObject *ns = PyObject_GetAttr(hooks, namespace_name);
        if (ns == NULL) return NULL;
        if (kept == NULL) kept = ns;
        else Py_DECREF(ns);
    }
    PyObject *fn = NULL;
    if (PyModule_CheckExact(kept))
        fn = Py_XNewRef(PyDict_GetItemWithError(PyModule_GetDict(kept), op));
    if (fn == NULL && !PyErr_Occurred()) fn = PyObject_GetAttr(kept, op);
    return fn;
}

/* A HOST operator `x op y`: the namespace function `hooks.namespace.<op>(x, y)` (a compiled
 * host call) when y is a tensor or an exact Python float / int / bool, which the Python
 * operator method would pass on to it; else that method, `fallback(x, y)` (its NotImplemented
 * for operands it does not take). */
static PyObject *host_operator(const Operator *o, PyObject *const *args) {
    PyObject *x = args[0], *y = args[1];
    if (tensor == NULL || Py_TYPE(x) != tensor || (Py_TYPE(y) != tensor && !is_scalar(y)))
        return PyObject_Vectorcall(o->fallback, args, 2, NULL);
    PyObject *fn = namespace_function(o->hooks, o->op);
    if (fn == NULL) return NULL;
    PyObject *result = PyObject_Vectorcall(fn, args, 2, NULL);
    Py_DECREF(fn);
    return result;
}

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
    if (o->form == HOST) return host_operator(o, args);
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
    Py_XDECREF(o->hooks);
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

static PyObject *method_call(PyObject *self, PyObject *const *args, size_t nargsf,
                             PyObject *kwnames);

/* operator(op, form, fallback): the callable `(a, b) -> fallback(op, a, b)` (of `(b, a)` when
 * form is 1, reflected) that tries the fast path first, `inplace`'s when form is 2 (`a op= b`). */
static PyObject *make_operator(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if ((nargs != 3 && nargs != 4) || !PyUnicode_Check(args[0]) || !PyLong_Check(args[1]) ||
        !PyCallable_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "operator(op: str, form: int, fallback[, hooks]) takes "
                                         "3 or 4 arguments");
        return NULL;
    }
    long form = PyLong_AsLong(args[1]);
    if (form < FORWARD || form > METHOD || (form >= HOST) != (nargs == 4)) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "operator: form must be FORWARD (0), REFLECTED (1), "
                                           "INPLACE (2), HOST (3, with hooks) or METHOD (4, with "
                                           "hooks), got %ld", form);
        return NULL;
    }
    Operator *o = PyObject_New(Operator, &OperatorType);
    if (o == NULL) return NULL;
    o->op = Py_NewRef(args[0]);
    o->fallback = Py_NewRef(args[2]);
    o->hooks = nargs == 4 ? Py_NewRef(args[3]) : NULL;
    o->dict = NULL;
    o->form = (int)form;
    o->vectorcall = form == METHOD ? method_call : operator_call;
    return (PyObject *)o;
}

/* ---------------------------------------------------------------------------------------------
 * Host trampolines: a host element-wise function (`elementwise._unary` / `_binary`: a NumPy
 * ufunc on its operands' arrays, the result adopted by `_host.fresh`) as one C callable. It
 * runs the same ufunc on the same arrays under the same silenced error state, and adopts the
 * result as `fresh` does; any other call (a view whose array is not made yet, mixed dtypes, a
 * keyword, an error, a trace or observer active: the host function records itself) runs the
 * Python function, which then raises its own errors.
 *
 * Where NumPy's ufunc call would run its trivial loop (`try_trivial_single_output_loop`: one
 * inner-loop call over dense operands of one shape, 0-d ones read with stride 0, into a fresh
 * row-major output), the trampoline makes that call itself: the inner loop NumPy resolves for
 * these descriptors and strides (`ufunc._resolve_dtypes_and_context` and `_get_strided_loop`,
 * NumPy's documented low-level access, kept per signature), the FP status cleared before it as
 * NumPy clears it, and no FP check after it, which is what NumPy's all-ignore error state does:
 * the same bits, no warning, the same status flags, and no error state to set and reset. */

/* The head of NumPy's "numpy_1.24_ufunc_call_info" capsule, as `_get_strided_loop` documents it. */
typedef struct {
    PyArrayMethod_StridedLoop *strided_loop;
    PyArrayMethod_Context *context;
    NpyAuxData *auxdata;
    npy_bool requires_pyapi;
    npy_bool no_floatingpoint_errors;
} CallInfo;

/* Signatures (input descriptors and which inputs are 0-d) whose inner loop a Host keeps. */
#define HOST_LOOPS 16

typedef struct {
    PyObject *descr[2]; /* the input descriptors (NULL: an empty slot) */
    int scalar;         /* bit k: input k is 0-d (read with stride 0) */
    PyObject *capsule;  /* the filled call info, or NULL: no trivial loop (the ufunc call runs) */
    CallInfo *info;     /* its pointer */
} Loop;

typedef struct {
    PyObject_HEAD
    PyObject *fn;     /* the Python host function */
    PyObject *ufunc;  /* the ufunc it calls */
    PyObject *fresh;  /* `_host.fresh`, for a result `adopt` does not take */
    PyObject *descr;  /* the last result dtype `fresh` adopted other than the operands' */
    PyObject *dtype;  /* and its DType */
    PyObject *layout; /* the dense Layout of the last result's shape */
    PyObject *first;  /* the DType the first operand must have (`where`'s bool), or NULL */
    PyObject *dict;
    int arity;        /* 1, 2 or (with `first`) 3 operands */
    int like;         /* the operands from this one on share one DType, which the result
                         keeps when NumPy's is the same (1 with `first`, else 0) */
    int direct;       /* whether `ufunc` is a ufunc of `arity` inputs and one output (a Ruled
                         MATMUL's: NumPy's matmul gufunc, see `matmul_direct`) */
    int next_loop;    /* the slot of `loops` the next new signature takes */
    Loop loops[HOST_LOOPS];
    vectorcallfunc vectorcall;
} Host;

static PyObject *resolve_name;   /* "_resolve_dtypes_and_context" */
static PyObject *loop_name;      /* "_get_strided_loop" */
static PyObject *stride_kwnames; /* ("fixed_strides",) */

/* The operand arrays of a host call into `arrays` (borrowed; `*scalar` a new reference to a
 * Python scalar's 0-d tensor; `*like` the DType the result keeps, borrowed): 1 when the
 * trampoline takes the call, 0 when not, -1 on error. */
static int host_operands(const Host *h, PyObject *const *args, PyObject **arrays,
                         PyObject **scalar, PyObject **like) {
    PyObject *t[3] = {args[0], h->arity > 1 ? args[1] : NULL, h->arity > 2 ? args[2] : NULL};
    if (tensor == NULL || errstate_var == NULL || Py_TYPE(t[0]) != tensor) return 0;
    int watched = busy(trace_var);
    if (watched == 0) watched = busy(observers_var);
    if (watched != 0) return watched < 0 ? -1 : 0;
    if (h->arity == 2 && Py_TYPE(t[1]) != tensor) { /* x op 2.5: the scalar's 0-d tensor */
        if (!is_scalar(t[1])) return 0;
        t[1] = *scalar = scalar_operand(t[1], t[0]);
        if (t[1] == NULL) return -1;
    }
    for (int k = 1; h->arity == 3 && k < 3; k++) { /* where(c, nan, x): one scalar, beside x */
        PyObject *other = t[3 - k];
        if (Py_TYPE(t[k]) == tensor || Py_TYPE(other) != tensor) continue;
        if (!is_scalar(t[k])) return 0;
        t[k] = *scalar = scalar_operand(t[k], other);
        if (t[k] == NULL) return -1;
    }
    if (h->first != NULL && SLOT(t[0], off_dtype) != h->first) return 0;
    for (int k = 0; k < h->arity; k++) {
        if (Py_TYPE(t[k]) != tensor) return 0;
        if (k > h->like && SLOT(t[k], off_dtype) != SLOT(t[h->like], off_dtype)) return 0;
        arrays[k] = SLOT(t[k], off_np);
        if (arrays[k] == NULL || arrays[k] == Py_None) { /* a fresh view's: made and kept */
            PyObject *made = PyObject_GetAttr(t[k], array_name);
            if (made == NULL) return -1;
            Py_DECREF(made);
            arrays[k] = SLOT(t[k], off_np);
        }
        if (arrays[k] == NULL || !PyArray_CheckExact(arrays[k])) return 0;
    }
    *like = SLOT(t[h->like], off_dtype);
    return 1;
}

/* `fresh(result)` for the ufunc's result on operands of DType `like`: adopted in C when its
 * dtype is the operands' or the last one `fresh` named, else by `fresh` (remembered). */
static PyObject *host_result(Host *h, PyObject *result, PyObject *like) {
    PyObject *descr =
        PyArray_Check(result) ? (PyObject *)PyArray_DESCR((PyArrayObject *)result) : NULL;
    PyObject *dtype = descr == NULL                     ? NULL
                      : descr == SLOT(like, off_dtype_np) ? like
                      : descr == h->descr                 ? h->dtype
                                                          : NULL;
    if (dtype != NULL) {
        PyObject *made = adopt_array(result, dtype, &h->layout);
        if (made != Py_None) return made;
        Py_DECREF(made);
    }
    PyObject *made = PyObject_CallOneArg(h->fresh, result);
    if (made != NULL && descr != NULL && Py_TYPE(made) == tensor && dtype == NULL) {
        Py_XSETREF(h->descr, Py_NewRef(descr));
        Py_XSETREF(h->dtype, Py_NewRef(SLOT(made, off_dtype)));
    }
    return made;
}

/* Forget signature `slot` of a Host. */
static void clear_loop(Loop *slot) {
    Py_CLEAR(slot->descr[0]);
    Py_CLEAR(slot->descr[1]);
    Py_CLEAR(slot->capsule);
    slot->info = NULL;
}

#define CALL_INFO "numpy_1.24_ufunc_call_info"

/* The fixed strides of NumPy's trivial loop over these inputs and output (0 for a 0-d input,
 * else the item size), as a tuple for `_get_strided_loop`; NULL on error. */
static PyObject *loop_strides(int arity, PyObject *const *descr, int scalar, PyObject *out) {
    PyObject *strides = PyTuple_New(arity + 1);
    for (int k = 0; strides != NULL && k <= arity; k++) {
        PyArray_Descr *d = (PyArray_Descr *)(k < arity ? descr[k] : out);
        PyObject *stride = PyLong_FromSsize_t(scalar >> k & 1 ? 0 : PyDataType_ELSIZE(d));
        if (stride == NULL) Py_CLEAR(strides);
        else PyTuple_SET_ITEM(strides, k, stride);
    }
    return strides;
}

/* The call info NumPy resolves for the Host's ufunc on input descriptors `descr` with 0-d
 * inputs `scalar`, filled by `_get_strided_loop` for the trivial loop's strides (a gufunc's,
 * matmul's, for none fixed: its loop reads them per call): a new reference, or NULL (an error
 * set or not) when NumPy's input descriptors are not exactly the operands' (it would cast) or
 * the loop needs the Python API (then the ufunc call runs). */
static PyObject *resolve_loop(Host *h, PyObject *const *descr, int scalar) {
    PyObject *dtypes = PyTuple_New(h->arity + 1), *resolved = NULL, *strides = NULL;
    if (dtypes == NULL) return NULL;
    for (int k = 0; k <= h->arity; k++)
        PyTuple_SET_ITEM(dtypes, k, Py_NewRef(k < h->arity ? descr[k] : Py_None));
    resolved = PyObject_CallMethodOneArg(h->ufunc, resolve_name, dtypes);
    Py_DECREF(dtypes);
    if (resolved == NULL || !PyTuple_CheckExact(resolved) || PyTuple_GET_SIZE(resolved) != 2)
        goto fail;
    PyObject *chosen = PyTuple_GET_ITEM(resolved, 0), *capsule = PyTuple_GET_ITEM(resolved, 1);
    if (!PyTuple_CheckExact(chosen) || PyTuple_GET_SIZE(chosen) != h->arity + 1) goto fail;
    for (int k = 0; k < h->arity; k++)
        if (PyTuple_GET_ITEM(chosen, k) != descr[k]) goto fail;
    CallInfo *info = PyCapsule_GetPointer(capsule, CALL_INFO);
    PyObject *out = (PyObject *)PyTuple_GET_ITEM(chosen, h->arity);
    if (info == NULL || !PyArray_DescrCheck(out) ||
        (PyObject *)info->context->descriptors[h->arity] != out)
        goto fail;
    int core = ((PyUFuncObject *)h->ufunc)->core_enabled; /* a gufunc: strides not fixed */
    strides = core ? Py_NewRef(Py_None) : loop_strides(h->arity, descr, scalar, out);
    PyObject *call[3] = {h->ufunc, capsule, strides};
    PyObject *filled = strides == NULL ? NULL
                                       : PyObject_VectorcallMethod(
                                             loop_name, call, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                             core ? NULL : stride_kwnames);
    Py_XDECREF(strides);
    if (filled == NULL || info->strided_loop == NULL || info->requires_pyapi) {
        Py_XDECREF(filled);
        goto fail;
    }
    Py_DECREF(filled);
    capsule = Py_NewRef(capsule);
    Py_DECREF(resolved);
    return capsule;
fail:
    Py_XDECREF(resolved);
    return NULL;
}

/* The call-info capsule of the Host's ufunc on input descriptors `descr` with 0-d inputs
 * `scalar` (a new reference, its pointer in `*info`; NULL when that signature has no trivial
 * loop), kept per signature: a new one replaces the oldest. */
static PyObject *host_loop(Host *h, PyObject *const *descr, int scalar, CallInfo **info) {
    for (int n = 0; n < HOST_LOOPS; n++) {
        Loop *slot = &h->loops[n];
        if (slot->descr[0] == descr[0] && slot->descr[1] == descr[1] && slot->scalar == scalar) {
            *info = slot->info;
            return Py_XNewRef(slot->capsule);
        }
    }
    PyObject *capsule = resolve_loop(h, descr, scalar);
    PyErr_Clear(); /* no trivial loop here: the ufunc call runs, and raises what it raises */
    Loop old = h->loops[h->next_loop], *slot = &h->loops[h->next_loop];
    h->next_loop = (h->next_loop + 1) % HOST_LOOPS;
    slot->descr[0] = Py_NewRef(descr[0]);
    slot->descr[1] = Py_XNewRef(descr[1]);
    slot->scalar = scalar;
    slot->capsule = Py_XNewRef(capsule);
    slot->info = *info = capsule == NULL ? NULL : PyCapsule_GetPointer(capsule, CALL_INFO);
    clear_loop(&old); /* last: its references may run code that calls this Host */
    return capsule;
}

/* Run a kept call info's loop as NumPy's ufunc call runs it under the all-ignore error state:
 * the FP status cleared first (unless the loop raises none), nothing checked after, the GIL
 * released from NumPy's threshold for `size` elements; -1 when the loop failed. */
static int run_loop(const CallInfo *info, char **data, npy_intp *dims, npy_intp *steps,
                    npy_intp size) {
    if (!info->no_floatingpoint_errors) PyUFunc_clearfperr();
    NPY_BEGIN_THREADS_DEF;
    NPY_BEGIN_THREADS_THRESHOLDED(size);
    int res = info->strided_loop(info->context, data, dims, steps, info->auxdata);
    NPY_END_THREADS;
    return res < 0 || PyErr_Occurred() ? -1 : 0;
}

/* NumPy's trivial loop of the Host's ufunc on `arrays`, as `try_trivial_single_output_loop`
 * runs it under the all-ignore error state: 1 with the fresh result in `*result`, 0 when NumPy
 * would not run it on these operands (the ufunc call runs), -1 on error. */
static int host_direct(Host *h, PyObject *const *arrays, PyObject **result) {
    PyObject *descr[2] = {NULL, NULL};
    npy_intp *shape = NULL, strides[3];
    char *data[3];
    int ndim = 0, scalar = 0;
    for (int k = 0; k < h->arity; k++) {
        PyArrayObject *a = (PyArrayObject *)arrays[k];
        int n = PyArray_NDIM(a);
        if (!PyArray_ISALIGNED(a)) return 0; /* NumPy would copy it first */
        descr[k] = (PyObject *)PyArray_DESCR(a);
        data[k] = PyArray_BYTES(a);
        strides[k] = n == 0 ? 0 : PyArray_ITEMSIZE(a);
        if (n == 0) {
            scalar |= 1 << k;
            continue;
        }
        if (n == 1 ? PyArray_STRIDE(a, 0) != strides[k] : !PyArray_IS_C_CONTIGUOUS(a)) return 0;
        if (shape == NULL) {
            ndim = n;
            shape = PyArray_DIMS(a);
        } else if (n != ndim || !PyArray_CompareLists(shape, PyArray_DIMS(a), n)) {
            return 0;
        }
    }
    CallInfo *info;
    PyObject *capsule = host_loop(h, descr, scalar, &info); /* held: a thread may replace it */
    if (capsule == NULL) return 0;
    PyArray_Descr *out_descr = (PyArray_Descr *)info->context->descriptors[h->arity];
    Py_INCREF(out_descr);
    PyObject *out =
        PyArray_NewFromDescr(&PyArray_Type, out_descr, ndim, shape, NULL, NULL, 0, NULL);
    npy_intp count = out == NULL ? 0 : PyArray_SIZE((PyArrayObject *)out);
    if (count > 0) { /* NumPy runs no loop, and clears no flag, for an empty result */
        data[h->arity] = PyArray_BYTES((PyArrayObject *)out);
        strides[h->arity] = PyArray_ITEMSIZE((PyArrayObject *)out);
        if (run_loop(info, data, &count, strides, count) < 0) Py_CLEAR(out);
    }
    Py_DECREF(capsule);
    *result = out;
    return out == NULL ? -1 : 1;
}

/* The trampoline's result, or NULL (an error set or not) when the Python function runs. */
static PyObject *host_fast(Host *h, PyObject *const *args) {
    PyObject *arrays[3] = {NULL, NULL, NULL}, *scalar = NULL, *made = NULL, *result = NULL;
    PyObject *like = NULL;
    int taken = host_operands(h, args, arrays, &scalar, &like);
    int direct = taken > 0 && h->direct ? host_direct(h, arrays, &result) : 0;
    if (taken > 0 && direct == 0) {
        PyObject *token = PyContextVar_Set(errstate_var, errstate_ignore);
        result = token == NULL ? NULL : PyObject_Vectorcall(h->ufunc, arrays, h->arity, NULL);
        int reset = token == NULL ? -1 : PyContextVar_Reset(errstate_var, token);
        Py_XDECREF(token);
        if (reset < 0) Py_CLEAR(result);
    }
    if (result != NULL) made = host_result(h, result, like);
    Py_XDECREF(result);
    Py_XDECREF(scalar);
    return made;
}

static PyObject *host_call(PyObject *self, PyObject *const *args, size_t nargsf,
                           PyObject *kwnames) {
    Host *h = (Host *)self;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs == h->arity && (kwnames == NULL || PyTuple_GET_SIZE(kwnames) == 0)) {
        PyObject *made = host_fast(h, args);
        if (made != NULL) return made;
        PyErr_Clear(); /* the Python function meets the same error and raises it */
    }
    return PyObject_Vectorcall(h->fn, args, nargsf, kwnames);
}

static void host_dealloc(PyObject *self) {
    Host *h = (Host *)self;
    Py_XDECREF(h->fn);
    Py_XDECREF(h->ufunc);
    Py_XDECREF(h->fresh);
    Py_XDECREF(h->descr);
    Py_XDECREF(h->dtype);
    Py_XDECREF(h->layout);
    Py_XDECREF(h->first);
    Py_XDECREF(h->dict);
    for (int n = 0; n < HOST_LOOPS; n++) clear_loop(&h->loops[n]);
    PyObject_Free(self);
}

/* `trivial_loops`: each signature kept, as (input NumPy dtypes, which inputs are 0-d, whether
 * the trampoline runs NumPy's trivial loop itself for it). */
static PyObject *host_loops(PyObject *self, void *closure) {
    (void)closure;
    Host *h = (Host *)self;
    PyObject *all = PyList_New(0);
    for (int n = 0; all != NULL && n < HOST_LOOPS; n++) {
        const Loop *slot = &h->loops[n];
        if (slot->descr[0] == NULL) continue;
        PyObject *dtypes = PyTuple_New(h->arity), *zero_d = PyTuple_New(h->arity), *row = NULL;
        for (int k = 0; dtypes != NULL && zero_d != NULL && k < h->arity; k++) {
            PyTuple_SET_ITEM(dtypes, k, Py_NewRef(slot->descr[k]));
            PyTuple_SET_ITEM(zero_d, k, PyBool_FromLong(slot->scalar >> k & 1));
        }
        if (dtypes != NULL && zero_d != NULL)
            row = PyTuple_Pack(3, dtypes, zero_d, slot->capsule != NULL ? Py_True : Py_False);
        Py_XDECREF(dtypes);
        Py_XDECREF(zero_d);
        if (row == NULL || PyList_Append(all, row) < 0) Py_CLEAR(all);
        Py_XDECREF(row);
    }
    PyObject *made = all == NULL ? NULL : PyList_AsTuple(all);
    Py_XDECREF(all);
    return made;
}

static PyGetSetDef host_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {"trivial_loops", host_loops, NULL,
     "The signatures kept: (input dtypes, which are 0-d, whether NumPy's trivial loop runs "
     "here).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject HostType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "fueltensor.kernels._fast.Host",
    .tp_basicsize = sizeof(Host),
    .tp_dealloc = host_dealloc,
    .tp_repr = operator_repr,
    .tp_vectorcall_offset = offsetof(Host, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_getattro = PyObject_GenericGetAttr,
    .tp_setattro = PyObject_GenericSetAttr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "A host element-wise function as one compiled call (see host()).",
    .tp_methods = operator_methods,
    .tp_getset = host_getset,
    .tp_dictoffset = offsetof(Host, dict),
};

/* host(fn, ufunc, fresh, arity[, first]): `fn` (a host function calling `ufunc` on its 1 or 2
 * operands' arrays, or 3 when the first must be of DType `first`, and returning `fresh` of the
 * result) as one compiled callable. */
static PyObject *make_host(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    long arity = nargs >= 4 ? PyLong_AsLong(args[3]) : 0;
    PyObject *first = nargs == 5 ? args[4] : NULL;
    if ((nargs != 4 && nargs != 5) || !PyCallable_Check(args[0]) ||
        !PyCallable_Check(args[1]) || !PyCallable_Check(args[2]) ||
        arity != (first == NULL ? (arity == 2 ? 2 : 1) : 3) ||
        (first != NULL && (dtype_type == NULL || Py_TYPE(first) != dtype_type))) {
        PyErr_Clear();
        PyErr_SetString(PyExc_TypeError, "host(fn, ufunc, fresh, arity[, first]) takes an arity "
                                         "of 1 or 2, or 3 with the first operand's DType");
        return NULL;
    }
    Host *h = PyObject_New(Host, &HostType);
    if (h == NULL) return NULL;
    h->fn = Py_NewRef(args[0]);
    h->ufunc = Py_NewRef(args[1]);
    h->fresh = Py_NewRef(args[2]);
    h->descr = h->dtype = h->layout = h->dict = NULL;
    h->first = first == NULL ? NULL : Py_NewRef(first);
    h->arity = (int)arity;
    h->like = first != NULL;
    h->direct = first == NULL && PyObject_TypeCheck(args[1], &PyUFunc_Type) &&
                ((PyUFuncObject *)args[1])->nin == arity && ((PyUFuncObject *)args[1])->nout == 1;
    h->next_loop = 0;
    memset(h->loops, 0, sizeof h->loops);
    h->vectorcall = host_call;
    return (PyObject *)h;
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

/* Whether `item` belongs to a basic index: None, `...`, a slice, or an integer that is not a
 * bool (a Python int or a NumPy integer). */
static int basic_item(PyObject *item) {
    return item == Py_None || item == Py_Ellipsis || PySlice_Check(item) ||
           (PyLong_Check(item) && !PyBool_Check(item)) || PyArray_IsScalar(item, Integer);
}

/* The stride of a slice with step `step_obj` (None: 1) over an axis of stride `s`, exactly (a
 * Python int: a step beyond the index range is not clamped, as `slice.indices` keeps it). */
static PyObject *slice_stride(PyObject *s_obj, Py_ssize_t s, int big, PyObject *step_obj,
                              Py_ssize_t step) {
    Py_ssize_t stride;
    if (step_obj == Py_None) return Py_NewRef(s_obj);
    if (!big && step != PY_SSIZE_T_MAX && step > -PY_SSIZE_T_MAX &&
        !__builtin_mul_overflow(s, step, &stride))
        return PyLong_FromSsize_t(stride);
    PyObject *exact = PyNumber_Index(step_obj);
    PyObject *made = exact == NULL ? NULL : PyNumber_Multiply(s_obj, exact);
    Py_XDECREF(exact);
    return made;
}

/* Add axis `o` of the selection: extent `n` and stride `st`, both stolen. */
static int put_axis(PyObject *shape, PyObject *strides, Py_ssize_t o, PyObject *n, PyObject *st) {
    if (n == NULL || st == NULL) {
        Py_XDECREF(n);
        Py_XDECREF(st);
        return -1;
    }
    PyTuple_SET_ITEM(shape, o, n);
    PyTuple_SET_ITEM(strides, o, st);
    return 0;
}

/* Apply one int or slice `item` to input axis `axis` (extent and stride objects `n_obj`,
 * `s_obj`): a slice adds output axis `o`; both move `*off`. 1 an axis added, 0 none, -1 error
 * (an index out of bounds raises IndexError as `Layout.select` words it). A stride beyond the
 * index range (a checked layout has one only on an axis of extent 0 or 1, where it never
 * moves the offset) is kept exactly, as a Python int. */
/* *off += i * s, checked: where the offset leaves the 64-bit index range it sets *wrapped and
 * leaves *off as it was. Only an empty view can get there (a bounds-checked layout's elements
 * all lie in its storage), and an empty view's offset means nothing: `select_layout` decides. */
static void add_offset(Py_ssize_t *off, Py_ssize_t i, Py_ssize_t s, int *wrapped) {
    Py_ssize_t moved, sum;
    if (__builtin_mul_overflow(i, s, &moved) || __builtin_add_overflow(*off, moved, &sum))
        *wrapped = 1;
    else
        *off = sum;
}

static int select_axis(PyObject *item, Py_ssize_t axis, PyObject *n_obj, PyObject *s_obj,
                       PyObject *shape, PyObject *strides, Py_ssize_t o, Py_ssize_t *off,
                       int *wrapped) {
    Py_ssize_t n = PyLong_AsSsize_t(n_obj);
    if (n == -1 && PyErr_Occurred()) return -1;
    Py_ssize_t s = PyLong_AsSsize_t(s_obj);
    int big = s == -1 && PyErr_Occurred();
    if (big) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return -1;
        PyErr_Clear();
        if (n > 1) {
            PyErr_Format(PyExc_ValueError, "stride %S of an axis of extent %zd exceeds the 64-bit "
                         "index range", s_obj, n);
            return -1;
        }
        s = 0; /* it only ever multiplies a start or index of 0 below */
    }
    if (PySlice_Check(item)) {
        Py_ssize_t start, stop, step;
        if (PySlice_Unpack(item, &start, &stop, &step) < 0) return -1;
        Py_ssize_t len = PySlice_AdjustIndices(n, &start, &stop, step);
        PyObject *st = slice_stride(s_obj, s, big, ((PySliceObject *)item)->step, step);
        if (put_axis(shape, strides, o, PyLong_FromSsize_t(len), st) < 0) return -1;
        if (len) add_offset(off, start, s, wrapped);
        return 1;
    }
    PyObject *index = PyNumber_Index(item);
    if (index == NULL) return -1;
    int overflow;
    long long i = PyLong_AsLongLongAndOverflow(index, &overflow);
    if (overflow || i < -n || i >= n) {
        PyErr_Format(PyExc_IndexError, "index %S is out of bounds for axis %zd with size %zd",
                     index, axis, n);
        Py_DECREF(index);
        return -1;
    }
    Py_DECREF(index);
    add_offset(off, (Py_ssize_t)(i < 0 ? i + n : i), s, wrapped);
    return 0;
}

/* The Layout basic index `key` (ints, slices, `...` and None, alone or in a tuple) selects
 * from `layout` (a new reference); None (a new reference) when `key` is not a basic index;
 * NULL with `Layout.select`'s IndexError. The one definition of basic indexing in a compiled
 * build (`Layout.select` is the pure build's, tested equal). */
static PyObject *select_layout(PyObject *layout, PyObject *key) {
    PyObject *in_shape = PyTuple_GET_ITEM(layout, 0), *in_strides = PyTuple_GET_ITEM(layout, 1);
    Py_ssize_t ndim = PyTuple_GET_SIZE(in_shape), count = 1, consumed, nones = 0, ints = 0;
    PyObject *const *items = &key;
    if (PyTuple_CheckExact(key)) {
        items = &PyTuple_GET_ITEM(key, 0);
        count = PyTuple_GET_SIZE(key);
    }
    int ellipses = 0;
    for (Py_ssize_t k = 0; k < count; k++) {
        if (!basic_item(items[k])) Py_RETURN_NONE;
        ellipses += items[k] == Py_Ellipsis;
        nones += items[k] == Py_None;
        ints += items[k] != Py_None && items[k] != Py_Ellipsis && !PySlice_Check(items[k]);
    }
    consumed = count - ellipses - nones;
    if (ellipses > 1) {
        PyErr_SetString(PyExc_IndexError, "an index can only have a single ellipsis ('...')");
        return NULL;
    }
    if (consumed > ndim) {
        PyErr_Format(PyExc_IndexError, "too many indices: %zd given for %zd dimensions", consumed,
                     ndim);
        return NULL;
    }
    Py_ssize_t out_ndim = ndim - ints + nones, axis = 0, o = 0;
    Py_ssize_t off = PyLong_AsSsize_t(PyTuple_GET_ITEM(layout, 2));
    int wrapped = 0;
    PyObject *shape = PyTuple_New(out_ndim), *strides = PyTuple_New(out_ndim), *made = NULL;
    if (shape == NULL || strides == NULL || (off == -1 && PyErr_Occurred())) goto done;
    for (Py_ssize_t k = 0; k < count + !ellipses; k++) {
        PyObject *item = k < count ? items[k] : Py_Ellipsis; /* a trailing `...` is implied */
        if (item == Py_None) {
            if (put_axis(shape, strides, o++, PyLong_FromLong(1), PyLong_FromLong(0)) < 0)
                goto done;
        } else if (item == Py_Ellipsis) {
            for (Py_ssize_t j = 0; j < ndim - consumed; j++, axis++) {
                PyObject *n = PyTuple_GET_ITEM(in_shape, axis);
                PyObject *st = PyTuple_GET_ITEM(in_strides, axis);
                put_axis(shape, strides, o++, Py_NewRef(n), Py_NewRef(st));
            }
        } else {
            int added = select_axis(item, axis, PyTuple_GET_ITEM(in_shape, axis),
                                    PyTuple_GET_ITEM(in_strides, axis), shape, strides, o, &off,
                                    &wrapped);
            if (added < 0) goto done;
            o += added;
            axis++;
        }
    }
    if (wrapped) { /* empty (see add_offset): it keeps the layout's own offset, as getitem does */
        int empty = 0;
        for (Py_ssize_t k = 0; k < out_ndim; k++)
            empty |= PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, k)) == 0;
        if (!empty) {
            PyErr_SetString(PyExc_ValueError, "a view's offset exceeds the 64-bit index range");
            goto done;
        }
        off = PyLong_AsSsize_t(PyTuple_GET_ITEM(layout, 2));
    }
    PyObject *offset = PyLong_FromSsize_t(off);
    PyObject *fields = offset == NULL ? NULL : PyTuple_Pack(3, shape, strides, offset);
    Py_XDECREF(offset);
    PyObject *args = fields == NULL ? NULL : PyTuple_Pack(1, fields);
    Py_XDECREF(fields);
    made = args == NULL ? NULL : PyTuple_Type.tp_new(layout_type, args, NULL);
    Py_XDECREF(args);
done:
    Py_XDECREF(shape);
    Py_XDECREF(strides);
    return made;
}

/* select(layout, key): the Layout basic index `key` selects, or None when `key` is not one. */
static PyObject *export_select(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 2 || layout_type == NULL || Py_TYPE(args[0]) != layout_type) {
        PyErr_SetString(PyExc_TypeError, "select(layout: Layout, key) takes 2 arguments (and "
                                         "the fast path configured)");
        return NULL;
    }
    return select_layout(args[0], args[1]);
}

/* getitem(t, key): the view t[key] for a basic index (see `select_layout`), else None; an
 * empty view keeps the tensor's (valid) offset, as `FuelTensor._view` does. */
static PyObject *getitem(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "getitem(t, key) takes 2 arguments, got %zd", nargs);
        return NULL;
    }
    PyObject *t = args[0];
    if (tensor == NULL || !PyObject_TypeCheck(t, tensor)) Py_RETURN_NONE;
    PyObject *layout = SLOT(t, off_layout);
    PyObject *selected = select_layout(layout, args[1]);
    if (selected == NULL || selected == Py_None) return selected;
    PyObject *shape = PyTuple_GET_ITEM(selected, 0);
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(shape); k++) {
        if (PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, k)) != 0) continue;
        PyObject *fields = PyTuple_Pack(3, shape, PyTuple_GET_ITEM(selected, 1),
                                        PyTuple_GET_ITEM(layout, 2));
        PyObject *fargs = fields == NULL ? NULL : PyTuple_Pack(1, fields);
        Py_XDECREF(fields);
        Py_SETREF(selected, fargs == NULL ? NULL : PyTuple_Type.tp_new(layout_type, fargs, NULL));
        Py_XDECREF(fargs);
        if (selected == NULL) return NULL;
        break;
    }
    PyObject *view = new_tensor(SLOT(t, off_storage), selected, SLOT(t, off_dtype), Py_None);
    Py_DECREF(selected);
    return view;
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

/* ---------------------------------------------------------------------------------------------
 * Ruled host calls: a reduction over every axis or one (`sum(x)`, `max(x, axis=0)`,
 * `mean(x, keepdims=True)`, `any(x)`, ...), `astype(x, dtype)` and `matmul(x1, x2)` as one C
 * call each, and `x.sum()`, `x.astype(dtype)` (`operator`'s METHOD form) through them. A rule
 * table, made in Python from the rule the Python function computes with (`_host.ruled_host`),
 * gives for each operand DType the NumPy dtype it is cast to first (the half types' float32, or
 * None), the `dtype=` NumPy is passed (None: none) and the result's DType (None: NumPy's). The
 * trampoline makes the Python path's NumPy call on the same arrays under the same silenced
 * error state, casts the result as `fresh(result, out)` does and adopts it (`host_result`); a
 * cast that can raise no floating-point exception NumPy reports (`quiet_cast`) skips setting
 * the error state (0.15 µs, more than a small cast), and a matmul of 1-D and 2-D operands runs
 * NumPy's own loop with none (`matmul_direct`). Every other call (a tuple of axes or
 * another keyword, an empty reduction, an operand DType the table lacks, mixed dtypes, a NumPy
 * error, a trace or observer active) runs the Python function, which raises its own errors
 * and records itself. */

/* What a ruled host call computes: `call(a, axes, work, out)` of a ufunc's reduce over every
 * axis, into a fresh 0-d `out` (it returns `out`, where it would make a scalar of it); a NumPy
 * function `call(a, axes)` over every axis (np.mean); `a.astype(dtype)`; `call(a1, a2)`. */
enum { REDUCE, STATISTIC, CAST, MATMUL };

typedef struct {
    Host host;       /* the Python function, NumPy's callable (`ufunc`), fresh, and the result
                        DType last named by `fresh` (`host_result`'s memory) */
    PyObject *rules; /* the items of the dict operand DType -> (pre, work, out), a list looked
                        up by identity (DType.__hash__ is Python) */
    int kind;        /* REDUCE, STATISTIC, CAST or MATMUL */
} Ruled;

/* Whether `a.astype(to)` is NumPy's copy of the same built-in number (or bool) type in native
 * byte order: its "numeric_copy_or_byteswap" cast, which copies the bytes (a signaling NaN
 * too) and raises no floating-point exception (NPY_METH_NO_FLOATINGPOINT_ERRORS). */
static int same_number(PyArrayObject *a, PyArray_Descr *to) {
    int type = to->type_num;
    return PyArray_DESCR(a) == to && PyArray_ISNOTSWAPPED(a) &&
           (PyTypeNum_ISNUMBER(type) || PyTypeNum_ISBOOL(type));
}

/* `a.astype(descr)` (a new reference, in a's memory order), or NULL on error: NumPy's `astype`
 * allocates its result like `a` and copies into it with unsafe casting, as this does; a copy
 * of a row-major operand's own number type is its bytes (NumPy's cast copies them too, at a
 * fixed cost above a small operand's memcpy). */
static PyObject *cast_array(PyObject *a, PyObject *descr) {
    PyArrayObject *from = (PyArrayObject *)a;
    Py_INCREF(descr); /* stolen */
    PyObject *out = PyArray_NewLikeArray(from, NPY_KEEPORDER, (PyArray_Descr *)descr, 0);
    if (out == NULL) return NULL;
    if (same_number(from, (PyArray_Descr *)descr) && PyArray_IS_C_CONTIGUOUS(from))
        memcpy(PyArray_BYTES((PyArrayObject *)out), PyArray_BYTES(from), PyArray_NBYTES(from));
    else if (PyArray_CopyInto((PyArrayObject *)out, from) < 0)
        Py_CLEAR(out);
    return out;
}

/* A fresh 0-d array of `descr` (a new reference), or NULL on error. */
static PyObject *zero_d(PyArray_Descr *descr) {
    Py_INCREF(descr); /* stolen */
    return PyArray_NewFromDescr(&PyArray_Type, descr, 0, NULL, NULL, NULL, 0, NULL);
}

/* Tensor t's NumPy array (`t._array`, made by its first use on a view: until then the slot
 * holds None) cast to `pre` unless that is None: a new reference to an exact ndarray, or NULL
 * (an error set or not). */
static PyObject *operand_array(PyObject *t, PyObject *pre) {
    PyObject *a = SLOT(t, off_np);
    a = a != NULL && a != Py_None ? Py_NewRef(a) : PyObject_GetAttr(t, array_name);
    if (a == NULL || !PyArray_CheckExact(a)) {
        Py_XDECREF(a);
        return NULL;
    }
    if (pre != Py_None) Py_SETREF(a, cast_array(a, pre));
    return a;
}

/* The tuple of `count` axes from `first` on, made once into `*slot` (a borrowed reference), or
 * NULL on error. */
static PyObject *axis_tuple(PyObject **slot, int first, int count) {
    if (*slot != NULL) return *slot;
    PyObject *over = PyTuple_New(count);
    for (int k = 0; over != NULL && k < count; k++) {
        PyObject *n = PyLong_FromLong(first + k);
        if (n == NULL) Py_CLEAR(over);
        else PyTuple_SET_ITEM(over, k, n);
    }
    return *slot = over;
}

/* A reduction's keywords: `axis=` None or an int and `keepdims=` a bool (the two every ruled
 * reduction has), read into `*axis` (borrowed) and `*keepdims` from the call's keyword `values`:
 * 1 when taken, 0 for any other keyword or value (the Python function runs). */
static int reduce_keywords(PyObject *const *values, PyObject *kwnames, PyObject **axis,
                           int *keepdims) {
    for (Py_ssize_t k = 0; kwnames != NULL && k < PyTuple_GET_SIZE(kwnames); k++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, k), *v = values[k];
        if (PyUnicode_CompareWithASCIIString(name, "axis") == 0 &&
            (v == Py_None || PyLong_CheckExact(v)))
            *axis = v;
        else if (PyUnicode_CompareWithASCIIString(name, "keepdims") == 0 && PyBool_Check(v))
            *keepdims = v == Py_True;
        else
            return 0;
    }
    return 1;
}

/* The Python path's `_reduce` of `a` over `axis` (None: every axis; else one int, which must
 * name an axis), `keepdims` as given and `dtype=work` when not None, over a non-empty extent,
 * passed by position (NumPy parses keywords at a cost larger than a 4-element reduction). A
 * ufunc's reduce to a 0-d result writes into a fresh 0-d array (else it makes a scalar). */
static PyObject *reduce_all(const Ruled *r, PyObject *a, PyObject *work, PyObject *axis,
                            int keepdims) {
    static PyObject *every_axis[NPY_MAXDIMS + 1], *one_axis[NPY_MAXDIMS];
    PyArrayObject *arr = (PyArrayObject *)a;
    int ndim = PyArray_NDIM(arr), whole = 1;
    npy_intp count = PyArray_SIZE(arr);
    PyObject *over;
    if (axis == Py_None) {
        over = axis_tuple(&every_axis[ndim], 0, ndim);
    } else {
        long k = PyLong_AsLong(axis); /* an int beyond long: an error, and Python's AxisError */
        if (k < 0) k += ndim;
        if (PyErr_Occurred() || k < 0 || k >= ndim) return NULL;
        over = axis_tuple(&one_axis[k], (int)k, 1);
        count = PyArray_DIM(arr, (int)k);
        whole = ndim == 1;
    }
    if (over == NULL || count == 0) return NULL;
    PyObject *into = Py_None, *keep = keepdims ? Py_True : Py_False;
    if (r->kind == REDUCE && whole && !keepdims) {
        into = zero_d(work != Py_None ? (PyArray_Descr *)work : PyArray_DESCR(arr));
        if (into == NULL) return NULL;
    }
    PyObject *argv[5] = {a, over, work, into, keep};
    PyObject *result = PyObject_Vectorcall(r->host.ufunc, argv, 5, NULL);
    if (into != Py_None) Py_DECREF(into);
    return result;
}

/* `call(a, b)`, into a fresh 0-d array when both are 1-D (the product NumPy would return as a
 * scalar), passed by position. */
static PyObject *product(const Ruled *r, PyObject *a, PyObject *b) {
    PyObject *into = NULL, *argv[3] = {a, b, NULL};
    if (PyArray_NDIM((PyArrayObject *)a) == 1 && PyArray_NDIM((PyArrayObject *)b) == 1) {
        into = argv[2] = zero_d(PyArray_DESCR((PyArrayObject *)a));
        if (into == NULL) return NULL;
    }
    PyObject *result = PyObject_Vectorcall(r->host.ufunc, argv, into != NULL ? 3 : 2, NULL);
    Py_XDECREF(into);
    return result;
}

/* The core signature of NumPy's matmul gufunc, whose loop `matmul_direct` calls. */
#define MATMUL_SIGNATURE "(n?,k),(k,m?)->(n?,m?)"

/* Core dimension `k` of `a` as NumPy's gufunc call passes its stride: 0 for an extent of 1. */
static npy_intp core_stride(PyArrayObject *a, int k) {
    return PyArray_DIM(a, k) == 1 ? 0 : PyArray_STRIDE(a, k);
}

/* NumPy's matmul on 1-D or 2-D aligned arrays `a` and `b` of one descriptor (any strides;
 * no stack), as its gufunc call makes it (`PyUFunc_GeneralizedFunctionInternal`): one call of
 * the loop NumPy resolves for the descriptors (kept per signature, `host_loop`) with the outer
 * count 1, the core sizes (n, k, m; a 1-D operand's missing one 1) and each operand's core
 * strides (a missing core dimension's, and one of extent 1, 0), into a fresh row-major output,
 * the FP status cleared before it as NumPy clears it and nothing checked after, as under the
 * all-ignore error state. 1 with the result in `*result`, 0 when not taken (shapes that do not
 * chain or are empty, a signature NumPy casts or whose result dtype is not `want`: the ufunc
 * call runs, and raises what it raises), -1 on error. */
static int matmul_direct(Ruled *r, PyArrayObject *a, PyArrayObject *b, PyObject *want,
                         PyObject **result) {
    int na = PyArray_NDIM(a), nb = PyArray_NDIM(b);
    if (!r->host.direct || na < 1 || na > 2 || nb < 1 || nb > 2 || !PyArray_ISALIGNED(a) ||
        !PyArray_ISALIGNED(b) || PyArray_DESCR(a) != PyArray_DESCR(b))
        return 0;
    npy_intp dims[4] = {1, na == 2 ? PyArray_DIM(a, 0) : 1, PyArray_DIM(a, na - 1),
                        nb == 2 ? PyArray_DIM(b, 1) : 1};
    if (PyArray_DIM(b, 0) != dims[2] || dims[1] == 0 || dims[2] == 0 || dims[3] == 0) return 0;
    PyObject *descr[2] = {(PyObject *)PyArray_DESCR(a), (PyObject *)PyArray_DESCR(b)};
    CallInfo *info;
    PyObject *capsule = host_loop(&r->host, descr, 0, &info); /* held: a thread may replace it */
    if (capsule == NULL) return 0;
    PyArray_Descr *out_descr = (PyArray_Descr *)info->context->descriptors[2];
    if (want != Py_None && (PyObject *)out_descr != want) {
        Py_DECREF(capsule);
        return 0;
    }
    npy_intp shape[2];
    int nd = 0;
    if (na == 2) shape[nd++] = dims[1];
    if (nb == 2) shape[nd++] = dims[3];
    Py_INCREF(out_descr);
    PyObject *out =
        PyArray_NewFromDescr(&PyArray_Type, out_descr, nd, shape, NULL, NULL, 0, NULL);
    if (out != NULL) {
        PyArrayObject *o = (PyArrayObject *)out;
        npy_intp steps[9] = {0, 0, 0, /* the outer strides: one outer iteration */
                             na == 2 ? core_stride(a, 0) : 0, core_stride(a, na - 1),
                             core_stride(b, 0), nb == 2 ? core_stride(b, 1) : 0,
                             na == 2 ? core_stride(o, 0) : 0,
                             nb == 2 ? core_stride(o, nd - 1) : 0};
        char *data[3] = {PyArray_BYTES(a), PyArray_BYTES(b), PyArray_BYTES(o)};
        if (run_loop(info, data, dims, steps, PyArray_SIZE(o)) < 0) Py_CLEAR(out);
    }
    Py_DECREF(capsule);
    *result = out;
    return out == NULL ? -1 : 1;
}

/* The NumPy call of a ruled host call on the operand(s) `x` (and `y`; a reduction's `axis` and
 * `keepdims`), under the silenced error state: its result as `fresh(result, out)` would make
 * it before adopting (a scalar as a 0-d array, cast to `out`'s NumPy dtype when that
 * differs), or NULL (an error set or not). */
static PyObject *ruled_compute(const Ruled *r, PyObject *x, PyObject *y, PyObject *rule,
                               PyObject *out, PyObject *axis, int keepdims) {
    PyObject *pre = PyTuple_GET_ITEM(rule, 0), *work = PyTuple_GET_ITEM(rule, 1);
    PyObject *a = operand_array(x, pre), *b = NULL, *result = NULL;
    if (a == NULL) return NULL;
    if (r->kind == CAST) result = cast_array(a, SLOT(y, off_dtype_np));
    else if (r->kind != MATMUL) result = reduce_all(r, a, work, axis, keepdims);
    else if ((b = operand_array(y, pre)) != NULL) result = product(r, a, b);
    Py_DECREF(a);
    Py_XDECREF(b);
    if (result != NULL && PyArray_IsScalar(result, Generic))
        Py_SETREF(result, PyArray_FromScalar(result, NULL));
    if (result != NULL && !PyArray_CheckExact(result)) Py_CLEAR(result); /* never: NumPy's */
    if (result == NULL || out == Py_None) return result;
    PyObject *descr = SLOT(out, off_dtype_np);
    if ((PyObject *)PyArray_DESCR((PyArrayObject *)result) != descr)
        Py_SETREF(result, cast_array(result, descr));
    return result;
}

/* Elements of a small operand a cast looks through for a signaling NaN (beyond, the error state
 * is set: a scan of a large operand would cost more than setting it). */
#define QUIET_SCAN 64

/* Whether `a.astype(to)` raises no floating-point exception NumPy reports, so its error state
 * need not be set: IEEE 754 makes an integer or bool converted to binary32 / binary64 at most
 * inexact (which NumPy ignores) and a binary float converted to one at least as wide exact,
 * signalling only for a signaling NaN, looked for here in a small dense operand; NumPy's copy
 * of a number type to itself raises nothing (`same_number`). */
static int quiet_cast(PyArrayObject *a, PyArray_Descr *to) {
    if (same_number(a, to)) return 1;
    PyArray_Descr *from = PyArray_DESCR(a);
    npy_intp size = PyDataType_ELSIZE(from), wide = PyDataType_ELSIZE(to);
    if (to->kind != 'f' || (wide != 4 && wide != 8) || !PyArray_ISNOTSWAPPED(a)) return 0;
    if (from->kind == 'b' || from->kind == 'i' || from->kind == 'u') return 1;
    npy_intp n = PyArray_SIZE(a);
    if (from->kind != 'f' || size > wide || n > QUIET_SCAN ||
        !PyArray_IS_C_CONTIGUOUS(a))
        return 0;
    const char *p = PyArray_BYTES(a);
    for (npy_intp k = 0; k < n; k++) {
        int signaling;
        if (size == 2) {
            uint16_t b;
            memcpy(&b, p + 2 * k, 2);
            signaling = (b & 0x7c00u) == 0x7c00u && (b & 0x03ffu) != 0 && !(b & 0x0200u);
        } else if (size == 4) {
            uint32_t b;
            memcpy(&b, p + 4 * k, 4);
            signaling = (b & 0x7f800000u) == 0x7f800000u && (b & 0x007fffffu) != 0 &&
                        !(b & 0x00400000u);
        } else if (size == 8) {
            uint64_t b;
            memcpy(&b, p + 8 * k, 8);
            signaling = (b & 0x7ff0000000000000u) == 0x7ff0000000000000u &&
                        (b & 0x000fffffffffffffu) != 0 && !(b & 0x0008000000000000u);
        } else {
            return 0;
        }
        if (signaling) return 0;
    }
    return 1;
}

/* `matmul_direct` on tensors `x` and `y` when their rule computes on their own arrays (no
 * cast first); its result's dtype must be `out`'s (none made after). */
static int ruled_matmul(Ruled *r, PyObject *x, PyObject *y, PyObject *rule, PyObject *out,
                        PyObject **result) {
    if (PyTuple_GET_ITEM(rule, 0) != Py_None) return 0;
    PyObject *a = operand_array(x, Py_None), *b = a == NULL ? NULL : operand_array(y, Py_None);
    int taken = b == NULL ? (PyErr_Occurred() ? -1 : 0)
                          : matmul_direct(r, (PyArrayObject *)a, (PyArrayObject *)b,
                                          out == Py_None ? Py_None : SLOT(out, off_dtype_np),
                                          result);
    Py_XDECREF(a);
    Py_XDECREF(b);
    return taken;
}

/* The ruled call's result, or NULL (an error set or not) when the Python function runs. */
static PyObject *ruled_fast(Ruled *r, PyObject *const *args, Py_ssize_t nargs,
                            PyObject *kwnames) {
    PyObject *axis = Py_None;
    int keepdims = 0, reduces = r->kind == REDUCE || r->kind == STATISTIC;
    if (nargs != r->host.arity || tensor == NULL || errstate_var == NULL ||
        Py_TYPE(args[0]) != tensor)
        return NULL;
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames) > 0 &&
        (!reduces || !reduce_keywords(args + nargs, kwnames, &axis, &keepdims)))
        return NULL;
    PyObject *x = args[0], *y = nargs > 1 ? args[1] : NULL, *dtype = SLOT(x, off_dtype);
    if (r->kind == CAST && Py_TYPE(y) != dtype_type) return NULL;
    if (r->kind == MATMUL && (Py_TYPE(y) != tensor || SLOT(y, off_dtype) != dtype)) return NULL;
    int watched = busy(trace_var);
    if (watched == 0) watched = busy(observers_var);
    PyObject *rule = NULL;
    for (Py_ssize_t k = 0; watched == 0 && rule == NULL && k < PyList_GET_SIZE(r->rules); k++) {
        PyObject *item = PyList_GET_ITEM(r->rules, k);
        if (PyTuple_GET_ITEM(item, 0) == dtype) rule = PyTuple_GET_ITEM(item, 1);
    }
    if (rule == NULL) return NULL;
    PyObject *out = r->kind == CAST ? y : PyTuple_GET_ITEM(rule, 2), *own = SLOT(x, off_np);
    PyObject *result = NULL, *made = NULL;
    int direct = r->kind == MATMUL ? ruled_matmul(r, x, y, rule, out, &result) : 0;
    if (direct < 0) return NULL;
    if (direct == 0) {
        int quiet = r->kind == CAST && own != NULL && PyArray_CheckExact(own) &&
                    quiet_cast((PyArrayObject *)own, (PyArray_Descr *)SLOT(y, off_dtype_np));
        PyObject *token = quiet ? NULL : PyContextVar_Set(errstate_var, errstate_ignore);
        if (!quiet && token == NULL) return NULL;
        result = ruled_compute(r, x, y, rule, out, axis, keepdims);
        if ((quiet ? 0 : PyContextVar_Reset(errstate_var, token)) < 0) Py_CLEAR(result);
        Py_XDECREF(token);
    }
    if (result != NULL) made = host_result(&r->host, result, out != Py_None ? out : dtype);
    Py_XDECREF(result);
    return made;
}

static PyObject *ruled_call(PyObject *self, PyObject *const *args, size_t nargsf,
                            PyObject *kwnames) {
    PyObject *made = ruled_fast((Ruled *)self, args, PyVectorcall_NARGS(nargsf), kwnames);
    if (made != NULL) return made;
    PyErr_Clear(); /* the Python function meets the same error and raises it */
    return PyObject_Vectorcall(((Ruled *)self)->host.fn, args, nargsf, kwnames);
}

static void ruled_dealloc(PyObject *self) {
    Py_XDECREF(((Ruled *)self)->rules);
    host_dealloc(self);
}

static PyGetSetDef ruled_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {"inner_loops", host_loops, NULL,
     "The signatures kept (matmul): (input dtypes, which are 0-d, whether NumPy's loop runs "
     "here).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject RuledType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "fueltensor.kernels._fast.Ruled",
    .tp_basicsize = sizeof(Ruled),
    .tp_dealloc = ruled_dealloc,
    .tp_repr = operator_repr,
    .tp_vectorcall_offset = offsetof(Ruled, host.vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_getattro = PyObject_GenericGetAttr,
    .tp_setattro = PyObject_GenericSetAttr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "A host reduction, cast or matmul as one compiled call (see ruled()).",
    .tp_methods = operator_methods,
    .tp_getset = ruled_getset,
    .tp_dictoffset = offsetof(Ruled, host.dict),
};

/* A METHOD operator `x.sum()`, `x.astype(dtype)`, `x.max(axis=0)`: the fast path of the ruled
 * namespace function of its name (`hooks.namespace.<op>`), which takes the call only with the
 * meaning the Python method gives it (its positional arguments, a reduction's `axis=` and
 * `keepdims=`); else, or when it declines, the Python method `fallback`. */
static PyObject *method_call(PyObject *self, PyObject *const *args, size_t nargsf,
                             PyObject *kwnames) {
    Operator *o = (Operator *)self;
    PyObject *fn = namespace_function(o->hooks, o->op), *made = NULL;
    if (fn != NULL && Py_TYPE(fn) == &RuledType)
        made = ruled_fast((Ruled *)fn, args, PyVectorcall_NARGS(nargsf), kwnames);
    Py_XDECREF(fn);
    if (made != NULL) return made;
    PyErr_Clear(); /* the Python method meets the same error and raises it */
    return PyObject_Vectorcall(o->fallback, args, nargsf, kwnames);
}

/* ruled(fn, kind, call, fresh, rules): `fn` (a host function of a kind above
 * calling `call`, with `rules` mapping each operand DType it serves to (pre, work, out)) as one
 * compiled callable. */
static PyObject *make_ruled(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    long kind = nargs == 5 ? PyLong_AsLong(args[1]) : -1;
    int ok = nargs == 5 && kind >= REDUCE && kind <= MATMUL && PyCallable_Check(args[0]) &&
             PyCallable_Check(args[2]) && PyCallable_Check(args[3]) && PyDict_Check(args[4]);
    Py_ssize_t pos = 0;
    PyObject *key, *rule;
    while (ok && PyDict_Next(args[4], &pos, &key, &rule)) {
        ok = dtype_type != NULL && Py_TYPE(key) == dtype_type && PyTuple_Check(rule) &&
             PyTuple_GET_SIZE(rule) == 3;
        for (int k = 0; ok && k < 2; k++) {
            PyObject *v = PyTuple_GET_ITEM(rule, k);
            ok = v == Py_None || PyArray_DescrCheck(v);
        }
        PyObject *out = ok ? PyTuple_GET_ITEM(rule, 2) : NULL;
        ok = ok && (out == Py_None || Py_TYPE(out) == dtype_type);
    }
    if (!ok) {
        PyErr_Clear();
        PyErr_SetString(PyExc_TypeError,
                        "ruled(fn, kind, call, fresh, rules) takes a kind of REDUCE, STATISTIC, "
                        "CAST or MATMUL and a dict DType -> (NumPy dtype | None, NumPy dtype | "
                        "None, DType | None)");
        return NULL;
    }
    PyObject *items = PyDict_Items(args[4]);
    Ruled *r = items == NULL ? NULL : PyObject_New(Ruled, &RuledType);
    if (r == NULL) {
        Py_XDECREF(items);
        return NULL;
    }
    Host *h = &r->host;
    h->fn = Py_NewRef(args[0]);
    h->ufunc = Py_NewRef(args[2]);
    h->fresh = Py_NewRef(args[3]);
    h->descr = h->dtype = h->layout = h->first = h->dict = NULL;
    h->arity = kind == REDUCE || kind == STATISTIC ? 1 : 2;
    h->like = 0;
    PyUFuncObject *u = (PyUFuncObject *)args[2];
    h->direct = kind == MATMUL && PyObject_TypeCheck(args[2], &PyUFunc_Type) && u->nin == 2 &&
                u->nout == 1 && u->core_enabled && u->core_signature != NULL &&
                strcmp(u->core_signature, MATMUL_SIGNATURE) == 0;
    h->next_loop = 0;
    memset(h->loops, 0, sizeof h->loops);
    h->vectorcall = ruled_call;
    r->rules = items;
    r->kind = (int)kind;
    return (PyObject *)r;
}

/* The byte offset of slot `name` of `type` (or of the first class in its MRO defining it),
 * read from its member descriptor. */
static Py_ssize_t slot_offset(PyTypeObject *type, const char *name) {
    PyObject *mro = type->tp_mro, *descr = NULL;
    Py_ssize_t n = mro != NULL && PyTuple_Check(mro) ? PyTuple_GET_SIZE(mro) : 0;
    for (Py_ssize_t k = 0; descr == NULL && k < n; k++)
        descr = PyDict_GetItemString(((PyTypeObject *)PyTuple_GET_ITEM(mro, k))->tp_dict, name);
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

/* Field `name` of the configuration (a new reference), checked by `ok`; NULL with a TypeError
 * naming the field otherwise. */
static PyObject *config_field(PyObject *config, const char *name, int (*ok)(PyObject *),
                              const char *what) {
    PyObject *value = PyObject_GetAttrString(config, name);
    if (value == NULL || ok(value)) return value;
    PyErr_Format(PyExc_TypeError, "configure: config.%s must be %s, got %.100s", name, what,
                 Py_TYPE(value)->tp_name);
    Py_DECREF(value);
    return NULL;
}

static int is_type(PyObject *v) { return PyType_Check(v); }
static int is_tuple_type(PyObject *v) {
    return PyType_Check(v) && PyType_IsSubtype((PyTypeObject *)v, &PyTuple_Type);
}
static int is_var(PyObject *v) { return PyContextVar_CheckExact(v); }
static int is_callable(PyObject *v) { return PyCallable_Check(v); }
static int is_dict(PyObject *v) { return PyDict_Check(v); }
static int is_frozenset(PyObject *v) { return PyFrozenSet_CheckExact(v); }
static int is_str(PyObject *v) { return PyUnicode_CheckExact(v); }
static int is_errstate(PyObject *v) {
    return v == Py_None || (PyTuple_Check(v) && PyTuple_GET_SIZE(v) == 2 &&
                            PyContextVar_CheckExact(PyTuple_GET_ITEM(v, 0)));
}

/* The configuration's fields, in the order `configure` stores them (see `_fast.pyi`). */
static const struct {
    const char *name;
    int (*ok)(PyObject *);
    const char *what;
} FIELDS[] = {
    {"tensor", is_type, "a type"},
    {"layout", is_tuple_type, "a tuple subclass"},
    {"dtype", is_type, "a type"},
    {"policy_var", is_var, "a ContextVar"},
    {"trace_var", is_var, "a ContextVar"},
    {"observers_var", is_var, "a ContextVar"},
    {"current_policy", is_callable, "callable"},
    {"backends_globals", is_dict, "a dict"},
    {"make_scalar", is_callable, "callable"},
    {"errstate", is_errstate, "None or (ContextVar, value)"},
    {"check_inplace", is_callable, "callable"},
    {"integer_forms", is_frozenset, "a frozenset"},
    {"form_marker", is_str, "a str"},
};
#define N_FIELDS ((int)(sizeof FIELDS / sizeof FIELDS[0]))

/* configure(config): what binary, inplace and the views read, from the named fields of one
 * configuration object (dispatch's `FastConfig`); nothing is changed when a field is wrong. */
static PyObject *configure(PyObject *module, PyObject *config) {
    (void)module;
    PyObject *v[N_FIELDS];
    int got = 0;
    for (; got < N_FIELDS; got++) {
        v[got] = config_field(config, FIELDS[got].name, FIELDS[got].ok, FIELDS[got].what);
        if (v[got] == NULL) break;
    }
    PyObject *dense = NULL;
    Py_ssize_t off[4], dtype_np = -1;
    if (got == N_FIELDS && tensor_slots((PyTypeObject *)v[0], off) == 0) {
        dtype_np = slot_offset((PyTypeObject *)v[2], "np");
        dense = dtype_np < 0 ? NULL : PyObject_GetAttrString(v[1], "dense");
    }
    if (dense == NULL) {
        for (int k = 0; k < got; k++) Py_DECREF(v[k]);
        return NULL;
    }
    off_storage = off[0];
    off_layout = off[1];
    off_dtype = off[2];
    off_np = off[3];
    off_dtype_np = dtype_np;
    Py_XSETREF(tensor, (PyTypeObject *)v[0]);
    Py_XSETREF(layout_type, (PyTypeObject *)v[1]);
    Py_XSETREF(dtype_type, (PyTypeObject *)v[2]);
    Py_XSETREF(policy_var, v[3]);
    Py_XSETREF(trace_var, v[4]);
    Py_XSETREF(observers_var, v[5]);
    Py_XSETREF(current_policy, v[6]);
    Py_XSETREF(backends_dict, v[7]);
    Py_XSETREF(make_scalar, v[8]);
    Py_XSETREF(check_inplace, v[10]);
    Py_XSETREF(integer_forms, v[11]);
    Py_XSETREF(form_marker, v[12]);
    Py_XSETREF(dense_layout, dense);
    if (v[9] == Py_None) {
        Py_CLEAR(errstate_var);
        Py_CLEAR(errstate_ignore);
    } else {
        Py_XSETREF(errstate_var, Py_NewRef(PyTuple_GET_ITEM(v[9], 0)));
        Py_XSETREF(errstate_ignore, Py_NewRef(PyTuple_GET_ITEM(v[9], 1)));
    }
    Py_DECREF(v[9]);
    Py_CLEAR(last_policy); /* the policy var may be another one now */
    Py_CLEAR(last_plans);
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
     "getitem(t, key) -> FuelTensor | None: the view t[key] for a basic index (ints, slices, "
     "..., None), else None."},
    {"select", (PyCFunction)(void (*)(void))export_select, METH_FASTCALL,
     "select(layout, key) -> Layout | None: the layout a basic index selects (IndexError as "
     "Layout.select raises it), or None when key is not a basic index."},
    {"transpose", transpose, METH_O,
     "transpose(t) -> FuelTensor | None: the view of t with its axes reversed."},
    {"configure", configure, METH_O,
     "configure(config): what binary, inplace and the views read, from the named fields of "
     "one configuration object (dispatch's FastConfig; called once by dispatch)."},
    {"new_tensor", (PyCFunction)(void (*)(void))export_new_tensor, METH_FASTCALL,
     "new_tensor(cls, storage, layout, dtype, np): a cls with these four slots (the one "
     "FuelTensor constructor of a compiled build; the layout is the caller's to check)."},
    {"inplace_refusal", (PyCFunction)(void (*)(void))inplace_refusal, METH_FASTCALL,
     "inplace_refusal(t, dtype, shape) -> str | None: why t cannot take an in-place result of "
     "dtype and shape (None: not compared), one of dtype, shape, read-only, stride0, overlap; "
     "None when it can."},
    {"host", (PyCFunction)(void (*)(void))make_host, METH_FASTCALL,
     "host(fn, ufunc, fresh, arity) -> callable: the host function fn as one compiled call."},
    {"ruled", (PyCFunction)(void (*)(void))make_ruled, METH_FASTCALL,
     "ruled(fn, kind, call, fresh, rules) -> callable: the host reduction, cast or matmul fn "
     "as one compiled call."},
    {"form_key", (PyCFunction)(void (*)(void))form_key, METH_FASTCALL,
     "form_key(op, x, k) -> the plan-cache key of op(x, k)'s integer-scalar form."},
    {"key", (PyCFunction)(void (*)(void))key, METH_FASTCALL,
     "key(op, a, b): the plan-cache key dispatch.choose stores op(a, b)'s plan under (the "
     "key's only definition in a compiled build)."},
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
    import_umath();
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
    native = PyImport_ImportModule("fueltensor.kernels._native");
    capsule = native == NULL ? NULL : PyObject_GetAttrString(native, "POWI");
    PyObject *number = native == NULL ? NULL : PyObject_GetAttrString(native, "POWI_OP");
    Py_XDECREF(native);
    powi_op = number == NULL ? -1 : (int)PyLong_AsLong(number);
    Py_XDECREF(number);
    if (capsule == NULL || PyErr_Occurred()) {
        Py_XDECREF(capsule);
        return NULL;
    }
    run_powi = (PowI)PyCapsule_GetPointer(capsule, "fueltensor.kernels._native.POWI");
    Py_DECREF(capsule);
    if (run_powi == NULL) return NULL;
    plans_name = PyUnicode_InternFromString("plans");
    default_name = PyUnicode_InternFromString("_DEFAULT");
    array_name = PyUnicode_InternFromString("_array");
    namespace_name = PyUnicode_InternFromString("namespace");
    astype_name = PyUnicode_InternFromString("astype");
    order_c = PyUnicode_InternFromString("C");
    order_kwnames = Py_BuildValue("(s)", "order");
    static const char *const refusals[5] = {"dtype", "shape", "read-only", "stride0", "overlap"};
    for (int k = 0; k < 5; k++) {
        REFUSALS[k] = PyUnicode_InternFromString(refusals[k]);
        if (REFUSALS[k] == NULL) return NULL;
    }
    out_kwnames = Py_BuildValue("(s)", "out");
    resolve_name = PyUnicode_InternFromString("_resolve_dtypes_and_context");
    loop_name = PyUnicode_InternFromString("_get_strided_loop");
    stride_kwnames = Py_BuildValue("(s)", "fixed_strides");
    if (resolve_name == NULL || loop_name == NULL || stride_kwnames == NULL) return NULL;
    if (PyType_Ready(&EntryType) < 0 || PyType_Ready(&OperatorType) < 0 ||
        PyType_Ready(&HostType) < 0 || PyType_Ready(&RuledType) < 0 ||
        PyType_Ready(&BlockType) < 0)
        return NULL;
    if (plans_name == NULL || default_name == NULL || array_name == NULL ||
        namespace_name == NULL || out_kwnames == NULL || astype_name == NULL || order_c == NULL || order_kwnames == NULL)
        return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL) return NULL;
    if (PyModule_AddIntConstant(module, "ALIGNMENT", ALIGNMENT) < 0 ||
        PyModule_AddIntConstant(module, "AS_IS", AS_IS) < 0 ||
        PyModule_AddIntConstant(module, "DENSIFY", DENSIFY) < 0 ||
        PyModule_AddIntConstant(module, "REPEAT", REPEAT) < 0 ||
        PyModule_AddIntConstant(module, "FORWARD", FORWARD) < 0 ||
        PyModule_AddIntConstant(module, "REFLECTED", REFLECTED) < 0 ||
        PyModule_AddIntConstant(module, "INPLACE", INPLACE) < 0 ||
        PyModule_AddIntConstant(module, "HOST", HOST) < 0 ||
        PyModule_AddIntConstant(module, "METHOD", METHOD) < 0 ||
        PyModule_AddIntConstant(module, "REDUCE", REDUCE) < 0 ||
        PyModule_AddIntConstant(module, "STATISTIC", STATISTIC) < 0 ||
        PyModule_AddIntConstant(module, "CAST", CAST) < 0 ||
        PyModule_AddIntConstant(module, "MATMUL", MATMUL) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
