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
    PyObject *dict;
    int arity;        /* 1 or 2 operands, of one DType (the result's when NumPy's is the same) */
    int direct;       /* whether `ufunc` is a ufunc of `arity` inputs and one output (a Ruled
                         MATMUL's: NumPy's matmul gufunc, see `matmul_direct`) */
    int next_loop;    /* the slot of `loops` the next new signature takes */
    Loop loops[HOST_LOOPS];
    vectorcallfunc vectorcall;
} Host;


/* The operand arrays of a host call into `arrays` (borrowed; `*scalar` a new reference to a
 * Python scalar's 0-d tensor; `*like` the DType the result keeps, borrowed): 1 when the
 * trampoline takes the call, 0 when not, -1 on error. */
static int host_operands(const Host *h, PyObject *const *args, PyObject **arrays,
                         PyObject **scalar, PyObject **like) {
    PyObject *t[2] = {args[0], h->arity > 1 ? args[1] : NULL};
    if (S.tensor == NULL || S.errstate_var == NULL || Py_TYPE(t[0]) != S.tensor) return 0;
    int watched = busy(S.trace_var);
    if (watched == 0) watched = busy(S.observers_var);
    if (watched != 0) return watched < 0 ? -1 : 0;
    if (h->arity == 2 && Py_TYPE(t[1]) != S.tensor) { /* x op 2.5: the scalar's 0-d tensor */
        if (!is_scalar(t[1])) return 0;
        t[1] = *scalar = scalar_operand(t[1], t[0]);
        if (t[1] == NULL) return -1;
    }
    for (int k = 0; k < h->arity; k++) {
        if (Py_TYPE(t[k]) != S.tensor) return 0;
        if (k > 0 && SLOT(t[k], S.off_dtype) != SLOT(t[0], S.off_dtype)) return 0;
        arrays[k] = SLOT(t[k], S.off_np);
        if (arrays[k] == NULL || arrays[k] == Py_None) { /* a fresh view's: made and kept */
            PyObject *made = PyObject_CallOneArg(S.array_of, t[k]);
            if (made == NULL) return -1;
            Py_DECREF(made);
            arrays[k] = SLOT(t[k], S.off_np);
        }
        if (arrays[k] == NULL || !PyArray_CheckExact(arrays[k])) return 0;
    }
    *like = SLOT(t[0], S.off_dtype);
    return 1;
}

/* `fresh(result)` for the ufunc's result on operands of DType `like`: adopted in C when its
 * dtype is the operands' or the last one `fresh` named, else by `fresh` (remembered). */
static PyObject *host_result(Host *h, PyObject *result, PyObject *like) {
    PyObject *descr =
        PyArray_Check(result) ? (PyObject *)PyArray_DESCR((PyArrayObject *)result) : NULL;
    PyObject *dtype = descr == NULL                     ? NULL
                      : descr == SLOT(like, S.off_dtype_np) ? like
                      : descr == h->descr                 ? h->dtype
                                                          : NULL;
    if (dtype != NULL) {
        PyObject *made = adopt_array(result, dtype, &h->layout);
        if (made != Py_None) return made;
        Py_DECREF(made);
    }
    PyObject *made = PyObject_CallOneArg(h->fresh, result);
    if (made != NULL && descr != NULL && Py_TYPE(made) == S.tensor && dtype == NULL) {
        Py_XSETREF(h->descr, Py_NewRef(descr));
        Py_XSETREF(h->dtype, Py_NewRef(SLOT(made, S.off_dtype)));
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
    resolved = PyObject_CallMethodOneArg(h->ufunc, S.resolve_name, dtypes);
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
                                             S.loop_name, call, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                             core ? NULL : S.stride_kwnames);
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
    PyObject *arrays[2] = {NULL, NULL}, *scalar = NULL, *made = NULL, *result = NULL;
    PyObject *like = NULL;
    int taken = host_operands(h, args, arrays, &scalar, &like);
    int direct = taken > 0 && h->direct ? host_direct(h, arrays, &result) : 0;
    if (taken > 0 && direct == 0) {
        PyObject *token = PyContextVar_Set(S.errstate_var, S.errstate_ignore);
        result = token == NULL ? NULL : PyObject_Vectorcall(h->ufunc, arrays, h->arity, NULL);
        int reset = token == NULL ? -1 : PyContextVar_Reset(S.errstate_var, token);
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
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "fueltensor.ext._fast.Host",
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

/* host(fn, ufunc, fresh, arity): `fn` (a host function calling `ufunc` on its 1 or 2
 * operands' arrays and returning `fresh` of the result) as one compiled callable. */
static PyObject *make_host(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    long arity = nargs == 4 ? PyLong_AsLong(args[3]) : 0;
    if (nargs != 4 || !PyCallable_Check(args[0]) || !PyCallable_Check(args[1]) ||
        !PyCallable_Check(args[2]) || (arity != 1 && arity != 2)) {
        PyErr_Clear();
        PyErr_SetString(PyExc_TypeError,
                        "host(fn, ufunc, fresh, arity) takes callables and an arity of 1 or 2");
        return NULL;
    }
    Host *h = PyObject_New(Host, &HostType);
    if (h == NULL) return NULL;
    h->fn = Py_NewRef(args[0]);
    h->ufunc = Py_NewRef(args[1]);
    h->fresh = Py_NewRef(args[2]);
    h->descr = h->dtype = h->layout = h->dict = NULL;
    h->arity = (int)arity;
    h->direct = PyObject_TypeCheck(args[1], &PyUFunc_Type) &&
                ((PyUFuncObject *)args[1])->nin == arity && ((PyUFuncObject *)args[1])->nout == 1;
    h->next_loop = 0;
    memset(h->loops, 0, sizeof h->loops);
    h->vectorcall = host_call;
    return (PyObject *)h;
}

