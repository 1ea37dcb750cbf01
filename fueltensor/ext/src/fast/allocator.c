
/* Large outputs live in blocks of their own (64-byte aligned, traced by tracemalloc in NumPy's
 * domain), and a dying block is kept for the next output of the same size, up to KEEP_BUDGET
 * bytes in all: a loop of same-shape operations then writes into memory already mapped instead
 * of taking a page fault per 4 KiB of every fresh output, whatever other allocations (NumPy's,
 * PyTorch's) did to the heap in between. Smaller outputs, and outputs over the budget, stay
 * NumPy allocations (its allocator is as fast for the small ones; a huge one is not kept). */

typedef struct {
    PyObject_HEAD void *data;
    size_t size;
} Block;


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
        if (S.kept[k].data == NULL || S.kept[k].size != size) continue;
        void *p = S.kept[k].data;
        S.kept_bytes -= size;
        for (int j = k; j + 1 < KEEP_SLOTS; j++) S.kept[j] = S.kept[j + 1];
        S.kept[KEEP_SLOTS - 1].data = NULL;
        return p;
    }
    return block_alloc(size);
}

/* Keep a dying block first in line, freeing the least recently kept ones beyond the budget. */
static void block_keep(void *p, size_t size) {
    for (int k = KEEP_SLOTS - 1; k >= 0; k--) {
        int full = k == KEEP_SLOTS - 1 || S.kept_bytes + size > KEEP_BUDGET;
        if (S.kept[k].data == NULL || !full) continue;
        block_free(S.kept[k].data);
        S.kept_bytes -= S.kept[k].size;
        S.kept[k].data = NULL;
    }
    for (int j = KEEP_SLOTS - 1; j > 0; j--) S.kept[j] = S.kept[j - 1];
    S.kept[0].data = p;
    S.kept[0].size = size;
    S.kept_bytes += size;
}

static void block_dealloc(PyObject *self) {
    Block *b = (Block *)self;
    PyTraceMalloc_Untrack(NUMPY_TRACE_DOMAIN, (uintptr_t)b->data);
    block_keep(b->data, b->size);
    PyObject_Free(self);
}

static PyTypeObject BlockType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "fueltensor.ext._fast.Block",
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

/* The bytes of `count` elements of `descr` plus `extra` (`*bytes`, `*nbytes`), or -1 with a
 * MemoryError when they exceed what a 64-bit index reaches (`descr` then released). */
static int sized(PyArray_Descr *descr, Py_ssize_t count, Py_ssize_t extra, Py_ssize_t *bytes,
                 npy_intp *nbytes) {
    npy_intp dims = (npy_intp)count;
    Py_ssize_t elements, itemsize = PyDataType_ELSIZE(descr);
    if (checked_size(&dims, 1, itemsize, &elements, bytes) == 0 &&
        !__builtin_add_overflow(*bytes, extra, nbytes))
        return 0;
    PyErr_Format(PyExc_MemoryError,
                 "cannot allocate %zd elements of %zd bytes: more than the largest buffer a "
                 "64-bit index reaches; nothing was allocated",
                 count, itemsize);
    Py_DECREF(descr);
    return -1;
}

/* NumPy's allocation of `nbytes` bytes (`descr` released on failure), and in `*data` its first
 * ALIGNMENT-aligned byte at least `lead` bytes in. */
static PyObject *numpy_bytes(PyArray_Descr *descr, npy_intp nbytes, Py_ssize_t lead,
                             char **data) {
    PyObject *base = PyArray_SimpleNew(1, &nbytes, NPY_UINT8);
    if (base == NULL) {
        Py_DECREF(descr);
        return NULL;
    }
    *data = PyArray_BYTES((PyArrayObject *)base) + lead;
    *data += (ALIGNMENT - (uintptr_t)*data % ALIGNMENT) % ALIGNMENT;
    return base;
}

/* A 1-D array of `count` elements of `descr` (a reference stolen) over `data`, owned by `base`
 * (a reference stolen). */
static PyArrayObject *array_over(PyArray_Descr *descr, Py_ssize_t count, char *data,
                                 PyObject *base) {
    npy_intp dims = (npy_intp)count;
    PyArrayObject *out = (PyArrayObject *)PyArray_NewFromDescr(
        &PyArray_Type, descr, 1, &dims, NULL, data, NPY_ARRAY_CARRAY, NULL);
    if (out == NULL || PyArray_SetBaseObject(out, base) < 0) {
        Py_XDECREF(out);
        if (out == NULL) Py_DECREF(base);
        return NULL;
    }
    return out;
}

/* A fresh 1-D array of `count` elements of `descr` (a reference stolen) whose first byte is
 * 64-byte aligned: a block of its own when large (above), else NumPy's allocation,
 * over-allocated and viewed at its first aligned byte. MemoryError when the bytes (alignment
 * included) exceed what a 64-bit index reaches; nothing is allocated then. */
static PyArrayObject *aligned_array(PyArray_Descr *descr, Py_ssize_t count) {
    Py_ssize_t bytes;
    npy_intp nbytes;
    if (sized(descr, count, ALIGNMENT, &bytes, &nbytes) < 0) return NULL;
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
        base = numpy_bytes(descr, nbytes, 0, &data);
        if (base == NULL) return NULL;
    }
    return array_over(descr, count, data, base);
}

/* A fresh output for a compiled provider's kernel, as `aligned_array` but always NumPy's
 * allocation (never a kept block, which later outputs reuse) with GUARD_BYTES of
 * GUARD_PATTERN on each side, which `guard_changes` reads after the call. */
static PyArrayObject *guarded_array(PyArray_Descr *descr, Py_ssize_t count) {
    Py_ssize_t bytes;
    npy_intp nbytes;
    if (sized(descr, count, 2 * GUARD_BYTES + ALIGNMENT, &bytes, &nbytes) < 0) return NULL;
    char *data;
    PyObject *base = numpy_bytes(descr, nbytes, GUARD_BYTES, &data);
    if (base == NULL) return NULL;
    memset(data - GUARD_BYTES, GUARD_PATTERN, GUARD_BYTES);
    memset(data + bytes, GUARD_PATTERN, GUARD_BYTES);
    return array_over(descr, count, data, base);
}

/* Whether the GUARD_BYTES at `zone` all hold GUARD_PATTERN: eight bytes a step, the
 * differences OR-ed together (no branch per byte; the compiler vectorizes it). */
static int guard_intact(const unsigned char *zone) {
    const uint64_t pattern = 0x0101010101010101ull * GUARD_PATTERN;
    uint64_t word, differs = 0;
    for (size_t k = 0; k < GUARD_BYTES; k += sizeof word) {
        memcpy(&word, zone + k, sizeof word);
        differs |= word ^ pattern;
    }
    return differs == 0;
}

/* How far before `out` (`bytes` long, from `guarded_array`) its first changed guard byte lies
 * (`*before`, 0: none), and the first and last changed bytes past its end (`after`, -1 each:
 * none). */
static void guard_changes(const char *out, Py_ssize_t bytes, Py_ssize_t *before,
                          Py_ssize_t after[2]) {
    const unsigned char *lo = (const unsigned char *)out - GUARD_BYTES;
    const unsigned char *hi = (const unsigned char *)out + bytes;
    *before = 0;
    after[0] = after[1] = -1;
    if (guard_intact(lo) && guard_intact(hi)) return; /* the usual case, a word at a time */
    for (Py_ssize_t k = 0; k < GUARD_BYTES && *before == 0; k++)
        if (lo[k] != GUARD_PATTERN) *before = GUARD_BYTES - k;
    for (Py_ssize_t k = 0; k < GUARD_BYTES; k++) {
        if (hi[k] == GUARD_PATTERN) continue;
        if (after[0] < 0) after[0] = k;
        after[1] = k;
    }
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

