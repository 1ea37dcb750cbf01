/* ---------------------------------------------------------------------------------------------
 * Compiled providers' kernels: the FKC byte-kernel C ABI (`ByteKernel`, fast.h) called from C
 * on both paths, never through ctypes. The fast path runs a FOREIGN entry (`foreign_entry`,
 * made by `engine.fast.foreign_entry` when dispatch caches the plan of a
 * `kernels.compiled.CompiledKernel`); the Python path's call (`CompiledKernel.__call__`: a
 * traced, observed or first call) is `byte_call`. Both go through `call_foreign`:
 * - an input of at most PRIVATE_BYTES bytes (every scalar: the fast path's cached 0-d tensors,
 *   an interned constant) is handed over as a private copy, so a kernel that writes its input
 *   never changes a value other calls share; so is, on the fast path, a larger one whose
 *   storage is read-only (`writable_source`), and its `out` is a `guarded_array` whose zones
 *   are read after the call (`check_guards`): the Python path's `engine.foreign` does the same;
 * - the GIL is released from GIL_FREE_FROM output elements, as around `_native`'s bodies;
 * - the caller's floating-point environment (status flags, MXCSR, the x87 control word) is
 *   kept, as around the bodies (`fp_save`, `fp_restore`): a kernel's rounding mode or
 *   flush-to-zero does not reach the caller. */

/* Inputs up to this many bytes are copied before the call: the widest scalar, a complex128. */
#define PRIVATE_BYTES 16

/* `kernel` on the inputs `src` (`bytes` each) and `out` (`out_bytes`), the GIL released when
 * `release`: the kernel's status. */
static int32_t call_foreign(ByteKernel kernel, const char *const src[2], const Py_ssize_t bytes[2],
                            char *out, Py_ssize_t out_bytes, int release) {
    _Alignas(64) uint8_t copy[2][PRIVATE_BYTES];
    const uint8_t *in[2];
    for (int k = 0; k < 2; k++) {
        in[k] = (const uint8_t *)src[k];
        if (bytes[k] <= PRIVATE_BYTES) {
            if (bytes[k] > 0) memcpy(copy[k], src[k], (size_t)bytes[k]);
            in[k] = copy[k];
        }
    }
    FpState flags;
    fp_save(&flags);
    PyThreadState *state = release ? PyEval_SaveThread() : NULL;
    int32_t status = kernel(in[0], (size_t)bytes[0], in[1], (size_t)bytes[1], (uint8_t *)out,
                            (size_t)out_bytes);
    if (state != NULL) PyEval_RestoreThread(state);
    fp_restore(&flags);
    return status;
}

/* Raise what `failure(status, lhs_bytes, rhs_bytes, out_bytes)` raises (the plan's
 * KernelStatusError, worded as the Python path words it); -1. */
static int raise_status(PyObject *failure, int32_t status, const Py_ssize_t bytes[2],
                        Py_ssize_t out_bytes) {
    PyObject *got =
        PyObject_CallFunction(failure, "innn", (int)status, bytes[0], bytes[1], out_bytes);
    if (got != NULL) {
        Py_DECREF(got);
        PyErr_Format(PyExc_SystemError, "a compiled kernel's status %d was not raised",
                     (int)status);
    }
    return -1;
}

/* Raise what `overrun(before, after_first, after_last)` raises for the changed guard bytes
 * around `out` (see `guard_changes`); 0 when they are all intact, else -1. */
static int check_guards(PyObject *overrun, const char *out, Py_ssize_t out_bytes) {
    Py_ssize_t before, after[2];
    guard_changes(out, out_bytes, &before, after);
    if (before == 0 && after[0] < 0) return 0;
    PyObject *got = PyObject_CallFunction(overrun, "nnn", before, after[0], after[1]);
    if (got != NULL) {
        Py_DECREF(got);
        PyErr_SetString(PyExc_SystemError, "a write outside a compiled kernel's out was not raised");
    }
    return -1;
}

/* Operand `t`'s buffer of `bytes` bytes at `src`, or a private copy of it in `*temp` when its
 * storage is read-only (memory fueltensor may share: a cached scalar, a read-only view, an
 * immutable buffer), so the kernel writes nothing another tensor reads; NULL when out of
 * memory (a MemoryError set). */
static const char *writable_source(PyObject *t, const char *src, Py_ssize_t bytes, char **temp) {
    PyObject *storage = SLOT(t, S.off_storage);
    if (bytes <= PRIVATE_BYTES || PyArray_ISWRITEABLE((PyArrayObject *)storage)) return src;
    *temp = PyMem_RawMalloc((size_t)bytes);
    if (*temp == NULL) return (const char *)PyErr_NoMemory();
    return memcpy(*temp, src, (size_t)bytes);
}

/* Run a FOREIGN entry into `out` (a `guarded_array`): each operand as it is (its `need`
 * elements; a private copy when read-only) or as its dense copy (the plan's Contiguize, after a
 * BroadcastTo to the output's shape when `need` is the output's count), then the kernel, then
 * its guard zones. 1 done, 0 when an operand is not one this code reads (the Python path
 * runs), -1 on error (a nonzero status or a write outside `out` raised). */
static int run_foreign(const Entry *e, PyObject *const *operands, char *out) {
    const char *src[2];
    char *temp[2] = {NULL, NULL};
    Py_ssize_t bytes[2], out_bytes, isz = e->itemsize;
    int ran = 0;
    for (int k = 0; k < 2; k++) {
        Py_ssize_t made = e->need[k];
        src[k] = e->mode[k] == DENSIFY
                     ? densify(operands[k], e, e->need[k] == e->count, &temp[k], &made)
                     : operand_at(operands[k], e->offset[k], e->need[k], isz);
        if (src[k] == NULL || made != e->need[k] || __builtin_mul_overflow(made, isz, &bytes[k]))
            goto done;
        if (e->mode[k] == AS_IS) src[k] = writable_source(operands[k], src[k], bytes[k], &temp[k]);
        if (src[k] == NULL) {
            ran = -1;
            goto done;
        }
    }
    if (__builtin_mul_overflow(e->count, isz, &out_bytes)) goto done;
    int32_t status = call_foreign(e->kernel, src, bytes, out, out_bytes, e->count >= GIL_FREE_FROM);
    ran = status != 0 ? raise_status(e->failure, status, bytes, out_bytes)
                      : check_guards(e->overrun, out, out_bytes) == 0 ? 1 : -1;
done:
    PyMem_RawFree(temp[0]);
    PyMem_RawFree(temp[1]);
    return ran;
}

/* A kernel's address from a Python int (nonzero), or NULL with a TypeError naming `call`. */
static ByteKernel kernel_at(PyObject *address, const char *call) {
    void *at = PyLong_Check(address) ? PyLong_AsVoidPtr(address) : NULL;
    if (at == NULL && !PyErr_Occurred())
        PyErr_Format(PyExc_TypeError, "%s: address must be a compiled kernel's nonzero address",
                     call);
    return at == NULL ? NULL : (ByteKernel)(uintptr_t)at;
}

/* foreign_entry(address, failure, overrun, out_dtype, out_layout, np_dtype, shape, modes,
 * offsets, needs, casts): `entry`'s view of a cached plan whose kernel is a compiled provider's
 * function at `address`; `failure(status, lhs_bytes, rhs_bytes, out_bytes)` raises its nonzero
 * status, `overrun(before, after_first, after_last)` its write in the guard zones around
 * `out`. Each operand is read AS_IS or DENSIFY (see `run_foreign`), never REPEAT. */
static PyObject *foreign_entry(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 11) {
        PyErr_Format(PyExc_TypeError, "foreign_entry() takes 11 arguments, got %zd", nargs);
        return NULL;
    }
    ByteKernel kernel = kernel_at(args[0], "foreign_entry");
    if (kernel == NULL) return NULL;
    if (!PyCallable_Check(args[1]) || !PyCallable_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "foreign_entry: failure and overrun must be callable");
        return NULL;
    }
    PyObject *zero = PyLong_FromLong(0);
    if (zero == NULL) return NULL;
    PyObject *const rest[12] = {zero,    zero,    args[3], args[4], args[5], args[6],
                                args[7], args[8], args[9], Py_None, Py_None, args[10]};
    PyObject *made = entry(module, rest, 12);
    Py_DECREF(zero);
    if (made == NULL || made == Py_None) return made;
    Entry *e = (Entry *)made;
    for (int k = 0; k < 2; k++) {
        if ((e->mode[k] != AS_IS && e->mode[k] != DENSIFY) || e->offset[k] < 0 || e->need[k] < 0) {
            Py_DECREF(made);
            PyErr_SetString(PyExc_TypeError, "foreign_entry: each operand is read AS_IS or "
                                             "DENSIFY, at an offset and need of at least 0");
            return NULL;
        }
    }
    e->kind = FOREIGN;
    e->kernel = kernel;
    e->failure = Py_NewRef(args[1]);
    e->overrun = Py_NewRef(args[2]);
    return made;
}

/* byte_call(address, lhs, rhs, out): the status of the compiled kernel at `address` called on
 * the three C-contiguous arrays (`out` writable), as `call_foreign` calls it. */
static PyObject *byte_call(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    static const char *const names[3] = {"lhs", "rhs", "out"};
    if (nargs != 4) {
        PyErr_Format(PyExc_TypeError, "byte_call() takes 4 arguments, got %zd", nargs);
        return NULL;
    }
    ByteKernel kernel = kernel_at(args[0], "byte_call");
    if (kernel == NULL) return NULL;
    PyArrayObject *a[3];
    for (int k = 0; k < 3; k++) {
        PyObject *arg = args[k + 1];
        if (!PyArray_Check(arg) || !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)arg) ||
            PyDataType_REFCHK(PyArray_DESCR((PyArrayObject *)arg))) {
            PyErr_Format(PyExc_ValueError, "byte_call: %s must be a C-contiguous ndarray of "
                                           "plain bytes (no Python objects)", names[k]);
            return NULL;
        }
        a[k] = (PyArrayObject *)arg;
    }
    if (!PyArray_ISWRITEABLE(a[2])) {
        PyErr_SetString(PyExc_ValueError, "byte_call: out must be writable");
        return NULL;
    }
    const char *src[2] = {PyArray_BYTES(a[0]), PyArray_BYTES(a[1])};
    Py_ssize_t bytes[2] = {PyArray_NBYTES(a[0]), PyArray_NBYTES(a[1])};
    int32_t status = call_foreign(kernel, src, bytes, PyArray_BYTES(a[2]), PyArray_NBYTES(a[2]),
                                  PyArray_SIZE(a[2]) >= GIL_FREE_FROM);
    return PyLong_FromLong(status);
}
