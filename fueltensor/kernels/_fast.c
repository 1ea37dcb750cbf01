/* Dispatch's compiled fast path: a contract operation whose plan is already cached, runs a
 * compiled fuel-cpu-backend kernel with no step but BroadcastTo / Contiguize (done here with
 * `_native`'s strided copy, up to 1 MiB per operand), and has no trace or observer
 * watching, runs here in one C call: read the plan cache exactly as `dispatch.choose` does,
 * allocate a 64-byte-aligned output, run the kernel body of `_native` and wrap the result as
 * `FuelTensor._from_dense` would. Anything else returns None and dispatch's Python path runs,
 * so plans, bits, traces and observers are those of that path.
 *
 * `empty` is the aligned allocation both paths share: a buffer over-allocated by NumPy and
 * viewed at its first 64-byte boundary (no arena, so a small result holds only its own bytes).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <fenv.h>
#include <stdint.h>

#define ALIGNMENT 64
/* Below this many elements the loop is shorter than releasing and retaking the GIL. */
#define GIL_FREE_FROM 16384

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
static Py_ssize_t off_storage, off_layout, off_dtype, off_np; /* its slots' byte offsets */
static PyObject *policy_var, *trace_var, *observers_var, *current_policy;
static PyObject *plans_name;    /* "plans" */
static PyObject *default_name;  /* "_DEFAULT" */
static PyObject *backends_dict; /* engine.backends' globals, where the default policy lives */

#define SLOT(obj, off) (*(PyObject **)((char *)(obj) + (off)))

/* A fresh 1-D array of `count` elements of `descr` (a reference stolen) whose first byte is
 * 64-byte aligned: NumPy's allocator over-allocates, the result views the aligned part. */
static PyArrayObject *aligned_array(PyArray_Descr *descr, Py_ssize_t count) {
    npy_intp nbytes = (npy_intp)(count * PyDataType_ELSIZE(descr)) + ALIGNMENT;
    PyArrayObject *raw = (PyArrayObject *)PyArray_SimpleNew(1, &nbytes, NPY_UINT8);
    if (raw == NULL) {
        Py_DECREF(descr);
        return NULL;
    }
    char *data = PyArray_BYTES(raw);
    data += (ALIGNMENT - (uintptr_t)data % ALIGNMENT) % ALIGNMENT;
    npy_intp dims = (npy_intp)count;
    PyArrayObject *out = (PyArrayObject *)PyArray_NewFromDescr(
        &PyArray_Type, descr, 1, &dims, NULL, data, NPY_ARRAY_CARRAY, NULL);
    if (out == NULL || PyArray_SetBaseObject(out, (PyObject *)raw) < 0) {
        Py_XDECREF(out);
        if (out == NULL) Py_DECREF(raw);
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
    PyObject *plans = PyObject_GetAttr(policy, plans_name);
    Py_DECREF(policy);
    if (plans == NULL) return NULL;
    PyObject *key = PyTuple_Pack(5, op, SLOT(a, off_dtype), SLOT(a, off_layout),
                                 SLOT(b, off_dtype), SLOT(b, off_layout));
    PyObject *entry = key == NULL ? NULL : PyDict_GetItemWithError(plans, key);
    Py_XINCREF(entry);
    Py_XDECREF(key);
    Py_DECREF(plans);
    return entry;
}

/* The first byte of an operand's elements: its storage's, when the storage is a 1-D array of
 * `count` or more `itemsize`-byte elements side by side (how dispatch builds every tensor). */
static const char *operand_data(PyObject *t, Py_ssize_t count, Py_ssize_t itemsize) {
    PyObject *storage = SLOT(t, off_storage);
    if (storage == NULL || !PyArray_Check(storage)) return NULL;
    PyArrayObject *s = (PyArrayObject *)storage;
    if (PyArray_NDIM(s) != 1 || PyArray_ITEMSIZE(s) != itemsize || PyArray_DIM(s, 0) < count)
        return NULL;
    if (count > 1 && PyArray_STRIDE(s, 0) != itemsize) return NULL;
    return PyArray_BYTES(s);
}

static int read_layout(PyObject *t, Py_ssize_t *shape, Py_ssize_t *strides, int *ndim,
                       Py_ssize_t *offset);

/* The plan's BroadcastTo (to `out_shape`) and Contiguize of operand `t`, into a fresh buffer
 * `*temp` of `count` elements (to be freed with PyMem_RawFree); NULL with no error set when
 * the operand is not one this code copies. */
static const char *densify(PyObject *t, PyObject *out_shape, Py_ssize_t count,
                           Py_ssize_t itemsize, char **temp) {
    Py_ssize_t shape[NPY_MAXDIMS], strides[NPY_MAXDIMS], offset;
    Py_ssize_t dims[NPY_MAXDIMS], steps[NPY_MAXDIMS];
    int ndim;
    Py_ssize_t out_ndim = PyTuple_GET_SIZE(out_shape);
    if (count * itemsize > DENSIFY_MAX_BYTES || out_ndim > NPY_MAXDIMS) return NULL;
    if (!read_layout(t, shape, strides, &ndim, &offset) || ndim > out_ndim) return NULL;
    const char *base = operand_data(t, 0, itemsize);
    if (base == NULL || PyArray_STRIDE((PyArrayObject *)SLOT(t, off_storage), 0) != itemsize)
        return NULL;
    for (Py_ssize_t k = 0; k < out_ndim; k++) {
        Py_ssize_t j = k - (out_ndim - ndim);
        dims[k] = PyLong_AsSsize_t(PyTuple_GET_ITEM(out_shape, k));
        if (j >= 0 && shape[j] == dims[k]) steps[k] = dims[k] > 1 ? strides[j] * itemsize : 0;
        else if (j < 0 || shape[j] == 1) steps[k] = 0; /* an axis the broadcast repeats */
        else return NULL;
    }
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return NULL;
    }
    *temp = PyMem_RawMalloc((size_t)(count * itemsize) + 1);
    if (*temp == NULL) return NULL;
    if (count) copy_dense(*temp, base + offset * itemsize, (int)out_ndim, dims, steps, itemsize);
    return *temp;
}

/* binary(op, a, b): the FuelTensor `dispatch.binary(op, a, b)` returns, or None when this
 * call is not one the fast path serves. An entry's third item, set by dispatch when it caches a
 * plan the fast path may run, is (op, dtype, count, itemsize, out dtype, out layout, NumPy
 * dtype, out shape, densify lhs, densify rhs), the last two true where the plan broadcasts
 * and/or contiguizes that operand; None otherwise. */
static PyObject *binary(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "binary(op, a, b) takes 3 arguments, got %zd", nargs);
        return NULL;
    }
    PyObject *op = args[0], *a = args[1], *b = args[2];
    if (tensor == NULL || Py_TYPE(a) != tensor || Py_TYPE(b) != tensor) Py_RETURN_NONE;
    int watched = busy(trace_var);
    if (watched == 0) watched = busy(observers_var);
    if (watched < 0) return NULL;
    if (watched) Py_RETURN_NONE;
    PyObject *entry = cached(op, a, b);
    if (entry == NULL) {
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NONE;
    }
    PyObject *fast = PyTuple_Check(entry) && PyTuple_GET_SIZE(entry) == 3
                         ? PyTuple_GET_ITEM(entry, 2)
                         : Py_None;
    if (!PyTuple_Check(fast) || PyTuple_GET_SIZE(fast) != 10) {
        Py_DECREF(entry);
        Py_RETURN_NONE;
    }
    int kop = (int)PyLong_AsLong(PyTuple_GET_ITEM(fast, 0));
    int kdtype = (int)PyLong_AsLong(PyTuple_GET_ITEM(fast, 1));
    Py_ssize_t count = PyLong_AsSsize_t(PyTuple_GET_ITEM(fast, 2));
    Py_ssize_t itemsize = PyLong_AsSsize_t(PyTuple_GET_ITEM(fast, 3));
    PyObject *out_dtype = PyTuple_GET_ITEM(fast, 4), *out_layout = PyTuple_GET_ITEM(fast, 5);
    PyObject *np_dtype = PyTuple_GET_ITEM(fast, 6), *shape = PyTuple_GET_ITEM(fast, 7);
    int dense_a = PyObject_IsTrue(PyTuple_GET_ITEM(fast, 8));
    int dense_b = PyObject_IsTrue(PyTuple_GET_ITEM(fast, 9));
    PyObject *result = NULL;
    char *temp_a = NULL, *temp_b = NULL;
    if (PyErr_Occurred() || dense_a < 0 || dense_b < 0) goto done;
    if (!PyArray_DescrCheck(np_dtype) || !PyTuple_Check(shape)) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    const char *x = dense_a ? densify(a, shape, count, itemsize, &temp_a)
                            : operand_data(a, count, itemsize);
    const char *y = dense_b ? densify(b, shape, count, itemsize, &temp_b)
                            : operand_data(b, count, itemsize);
    if (x == NULL || y == NULL) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    Py_INCREF(np_dtype);
    PyArrayObject *out = aligned_array((PyArray_Descr *)np_dtype, count);
    if (out == NULL) goto done;
    fexcept_t flags; /* leave the caller's floating-point status flags as they were */
    fegetexceptflag(&flags, FE_ALL_EXCEPT);
    if (count >= GIL_FREE_FROM) {
        Py_BEGIN_ALLOW_THREADS run_body(kop, kdtype, x, y, PyArray_DATA(out), count);
        Py_END_ALLOW_THREADS
    } else {
        run_body(kop, kdtype, x, y, PyArray_DATA(out), count);
    }
    fesetexceptflag(&flags, FE_ALL_EXCEPT);
    PyObject *view = (PyObject *)out; /* the N-D view `_from_dense` keeps beside the storage */
    Py_ssize_t ndim = PyTuple_GET_SIZE(shape);
    if (ndim != 1) {
        npy_intp dims[NPY_MAXDIMS];
        for (Py_ssize_t k = 0; k < ndim && k < NPY_MAXDIMS; k++)
            dims[k] = (npy_intp)PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, k));
        Py_INCREF(np_dtype);
        view = PyArray_NewFromDescr(&PyArray_Type, (PyArray_Descr *)np_dtype, (int)ndim, dims,
                                    NULL, PyArray_DATA(out), NPY_ARRAY_CARRAY, NULL);
        if (view == NULL || PyArray_SetBaseObject((PyArrayObject *)view, Py_NewRef(out)) < 0) {
            Py_XDECREF(view);
            Py_DECREF(out);
            goto done;
        }
    }
    result = tensor->tp_alloc(tensor, 0);
    if (result == NULL) {
        Py_DECREF(out);
        if (view != (PyObject *)out) Py_DECREF(view);
        goto done;
    }
    SLOT(result, off_storage) = (PyObject *)out;
    SLOT(result, off_layout) = Py_NewRef(out_layout);
    SLOT(result, off_dtype) = Py_NewRef(out_dtype);
    SLOT(result, off_np) = view == (PyObject *)out ? Py_NewRef(out) : view;
done:
    PyMem_RawFree(temp_a);
    PyMem_RawFree(temp_b);
    Py_DECREF(entry);
    return result;
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
    PyObject *view = tensor->tp_alloc(tensor, 0);
    if (view == NULL) goto fail;
    SLOT(view, off_storage) = Py_NewRef(SLOT(t, off_storage));
    SLOT(view, off_layout) = layout;
    SLOT(view, off_dtype) = Py_NewRef(SLOT(t, off_dtype));
    SLOT(view, off_np) = Py_NewRef(Py_None);
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
            size *= n;
        } else if (PyLong_CheckExact(item)) {
            Py_ssize_t i = PyLong_AsSsize_t(item);
            if (i == -1 && PyErr_Occurred()) {
                PyErr_Clear();
                Py_RETURN_NONE;
            }
            if (i < -n || i >= n) Py_RETURN_NONE; /* Python raises the IndexError */
            off += (i < 0 ? i + n : i) * s;
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
            if (len) off += start * s;
            size *= len;
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
    if (nargs != 7 || !PyType_Check(args[0]) || !PyType_Check(args[5]) ||
        !PyType_IsSubtype((PyTypeObject *)args[5], &PyTuple_Type) || !PyDict_Check(args[6])) {
        PyErr_SetString(PyExc_TypeError, "configure(FuelTensor, policy_var, trace_var, "
                                         "observers_var, current_policy, Layout, "
                                         "backends_globals) takes 7 arguments");
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
    if (storage < 0 || layout < 0 || dtype < 0 || np_ < 0) return NULL;
    off_storage = storage;
    off_layout = layout;
    off_dtype = dtype;
    off_np = np_;
    Py_XSETREF(tensor, (PyTypeObject *)Py_NewRef(args[0]));
    Py_XSETREF(policy_var, Py_NewRef(args[1]));
    Py_XSETREF(trace_var, Py_NewRef(args[2]));
    Py_XSETREF(observers_var, Py_NewRef(args[3]));
    Py_XSETREF(current_policy, Py_NewRef(args[4]));
    Py_XSETREF(layout_type, (PyTypeObject *)Py_NewRef(args[5]));
    Py_XSETREF(backends_dict, Py_NewRef(args[6]));
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"binary", (PyCFunction)(void (*)(void))binary, METH_FASTCALL,
     "binary(op, a, b) -> FuelTensor | None: dispatch.binary's result when the cached plan runs "
     "a compiled kernel with no preparation and nothing traces or observes; else None."},
    {"empty", (PyCFunction)(void (*)(void))empty, METH_FASTCALL,
     "empty(count, dtype): an uninitialized 1-D array whose first byte is 64-byte aligned."},
    {"getitem", (PyCFunction)(void (*)(void))getitem, METH_FASTCALL,
     "getitem(t, key) -> FuelTensor | None: the view t[key] for ints and slices, else None."},
    {"transpose", transpose, METH_O,
     "transpose(t) -> FuelTensor | None: the view of t with its axes reversed."},
    {"configure", (PyCFunction)(void (*)(void))configure, METH_FASTCALL,
     "configure(FuelTensor, policy_var, trace_var, observers_var, current_policy, Layout, "
     "backends_globals): what binary and the views read (called once by dispatch)."},
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
    if (plans_name == NULL || default_name == NULL) return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL) return NULL;
    if (PyModule_AddIntConstant(module, "ALIGNMENT", ALIGNMENT) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
