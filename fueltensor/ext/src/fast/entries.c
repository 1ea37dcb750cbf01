/* ---------------------------------------------------------------------------------------------
 * Entries. */

static void entry_dealloc(PyObject *self) {
    Entry *e = (Entry *)self;
    Py_XDECREF(e->out_dtype);
    Py_XDECREF(e->out_layout);
    Py_XDECREF(e->np_dtype);
    Py_XDECREF(e->shape);
    Py_XDECREF(e->ufunc);
    Py_XDECREF(e->redo);
    Py_XDECREF(e->failure);
    Py_XDECREF(e->overrun);
    Py_XDECREF(e->cast[0]);
    Py_XDECREF(e->cast[1]);
    PyObject_Free(self);
}

static PyTypeObject EntryType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "fueltensor.ext._fast.Entry",
    .tp_basicsize = sizeof(Entry),
    .tp_itemsize = sizeof(npy_intp),
    .tp_dealloc = entry_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A cached plan as the fast path runs it (opaque; made by entry()).",
};

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
            Py_TYPE(PyTuple_GET_ITEM(cast, 1)) == S.layout_type &&
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

/* Whether entry()'s casts, shape and np_dtype are of the kinds it reads; -1 with a TypeError
 * otherwise. */
static int entry_arguments(PyObject *const *args) {
    PyObject *shape = args[5], *casts = args[11];
    if (S.layout_type == NULL || !PyTuple_Check(casts) || PyTuple_GET_SIZE(casts) != 2 ||
        !is_cast(PyTuple_GET_ITEM(casts, 0)) || !is_cast(PyTuple_GET_ITEM(casts, 1))) {
        PyErr_SetString(PyExc_TypeError, "entry: casts must be two of None or (NumPy dtype, "
                                         "Layout, DType)");
        return -1;
    }
    if (!PyTuple_Check(shape) || PyTuple_GET_SIZE(shape) > NPY_MAXDIMS ||
        !PyArray_DescrCheck(args[4])) {
        PyErr_SetString(PyExc_TypeError, "entry: shape must be a tuple (at most NPY_MAXDIMS "
                                         "ints) and np_dtype a NumPy dtype");
        return -1;
    }
    return 0;
}

/* Read entry()'s ints into `e` (its kind and ndim set): the params, shape, modes, offsets and
 * needs, and an oracle's steps; -1 on error. */
static int read_entry(Entry *e, PyObject *const *args, Py_ssize_t nargs) {
    npy_intp modes[2], offsets[2], needs[2];
    PyObject *steps = args[10];
    int bad = PyErr_Occurred() || read_params(nargs == 13 ? args[12] : NULL, e) < 0 ||
              read_ints(args[5], e->ndim, e->dims, "shape") < 0 ||
              read_ints(args[6], 2, modes, "modes") < 0 ||
              read_ints(args[7], 2, offsets, "offsets") < 0 ||
              read_ints(args[8], 2, needs, "needs") < 0;
    if (!bad && e->kind == ORACLE) {
        bad = !PyTuple_Check(steps) || PyTuple_GET_SIZE(steps) != 2 ||
              read_ints(PyTuple_GET_ITEM(steps, 0), e->ndim, e->steps[0], "steps[0]") < 0 ||
              read_ints(PyTuple_GET_ITEM(steps, 1), e->ndim, e->steps[1], "steps[1]") < 0;
        if (bad && !PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "entry: an oracle entry needs two stride tuples");
    }
    for (int k = 0; !bad && k < 2; k++) {
        e->mode[k] = (int)modes[k];
        e->offset[k] = offsets[k];
        e->need[k] = needs[k];
    }
    return bad ? -1 : 0;
}

/* entry(kop, kdtype, out_dtype, out_layout, np_dtype, shape, modes, offsets, needs, oracle,
 * steps, casts[, params]): the fast path's opaque view of a cached plan (see
 * `dispatch._fast_entry`); `oracle` is None or (NumPy ufunc, NaN redo, infinity's bits);
 * `params` is the plan's kernel parameters (a POWI kernel's (k,)). */
static PyObject *entry(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 12 && nargs != 13) {
        PyErr_Format(PyExc_TypeError, "entry() takes 12 or 13 arguments, got %zd", nargs);
        return NULL;
    }
    if (entry_arguments(args) < 0) return NULL;
    PyObject *shape = args[5], *ufunc = NULL, *redo = NULL, *casts = args[11];
    Py_ssize_t ndim = PyTuple_GET_SIZE(shape);
    int oracle = args[9] != Py_None;
    unsigned long long above = 0;
    if (oracle && !PyArg_ParseTuple(args[9], "OOK:entry's oracle", &ufunc, &redo, &above))
        return NULL;
    if (oracle && S.errstate_var == NULL) Py_RETURN_NONE; /* no silent error state to call under */
    Entry *e = PyObject_NewVar(Entry, &EntryType, 3 * ndim + 1);
    if (e == NULL) return NULL;
    e->out_dtype = e->out_layout = e->np_dtype = e->shape = e->ufunc = e->failure = NULL;
    e->redo = NULL;
    e->overrun = NULL;
    e->kernel = NULL;
    for (int k = 0; k < 2; k++) {
        PyObject *cast = PyTuple_GET_ITEM(casts, k);
        e->cast[k] = cast == Py_None ? NULL : Py_NewRef(cast);
    }
    e->ndim = (int)ndim;
    e->dims = e->data;
    e->steps[0] = e->data + ndim;
    e->steps[1] = e->data + 2 * ndim;
    e->kop = (int)PyLong_AsLong(args[0]);
    e->kdtype = (int)PyLong_AsLong(args[1]);
    e->itemsize = e->in_itemsize = PyDataType_ELSIZE((PyArray_Descr *)args[4]);
    e->kind = oracle ? ORACLE : e->kop == POWI_OP ? POWI : e->kop >= COMPARE_OP ? COMPARE : NATIVE;
    if (e->kind == COMPARE) { /* bools out of operands of kdtype */
        e->kop -= COMPARE_OP;
        e->in_itemsize = e->kdtype >= 0 && e->kdtype < N_DTYPES ? ITEMSIZE[e->kdtype] : 0;
    }
    Py_ssize_t bytes;
    if (read_entry(e, args, nargs) < 0) {
        Py_DECREF(e);
        return NULL;
    }
    if (checked_size(e->dims, (int)ndim, e->itemsize, &e->count, &bytes) < 0) {
        Py_DECREF(e); /* no output of this shape can exist: the Python path refuses it */
        Py_RETURN_NONE;
    }
    e->out_dtype = Py_NewRef(args[2]);
    e->out_layout = Py_NewRef(args[3]);
    e->np_dtype = Py_NewRef(args[4]);
    e->shape = Py_NewRef(shape);
    e->ufunc = oracle ? Py_NewRef(ufunc) : NULL;
    e->redo = oracle ? Py_NewRef(redo) : NULL;
    e->nan_above = above;
    return (PyObject *)e;
}

/* The fresh output of entry `e`: its 1-D aligned storage (`*storage`; guarded for a compiled
 * provider's kernel) and the N-D array `_from_dense` keeps beside it (the storage itself when
 * 1-D); both new references. */
static int fresh_output(const Entry *e, PyArrayObject **storage, PyObject **view) {
    Py_INCREF(e->np_dtype);
    PyArray_Descr *descr = (PyArray_Descr *)e->np_dtype;
    PyArrayObject *out =
        e->kind == FOREIGN ? guarded_array(descr, e->count) : aligned_array(descr, e->count);
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
