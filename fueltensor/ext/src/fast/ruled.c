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
 * axis, into a fresh 0-d `out` (it returns `out`, where it would make a scalar of it);
 * `a.astype(dtype)`; `call(a1, a2)`. */
enum { REDUCE, CAST, MATMUL };

typedef struct {
    Host host;       /* the Python function, NumPy's callable (`ufunc`), fresh, and the result
                        DType last named by `fresh` (`host_result`'s memory) */
    PyObject *rules; /* the items of the dict operand DType -> (pre, work, out), a list looked
                        up by identity (DType.__hash__ is Python) */
    int kind;        /* REDUCE, CAST or MATMUL */
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
    PyObject *a = SLOT(t, S.off_np);
    a = a != NULL && a != Py_None ? Py_NewRef(a) : PyObject_CallOneArg(S.array_of, t);
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
    if (whole && !keepdims) {
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
    if (r->kind == CAST) result = cast_array(a, SLOT(y, S.off_dtype_np));
    else if (r->kind != MATMUL) result = reduce_all(r, a, work, axis, keepdims);
    else if ((b = operand_array(y, pre)) != NULL) result = product(r, a, b);
    Py_DECREF(a);
    Py_XDECREF(b);
    if (result != NULL && PyArray_IsScalar(result, Generic))
        Py_SETREF(result, PyArray_FromScalar(result, NULL));
    if (result != NULL && !PyArray_CheckExact(result)) Py_CLEAR(result); /* never: NumPy's */
    if (result == NULL || out == Py_None) return result;
    PyObject *descr = SLOT(out, S.off_dtype_np);
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
                                          out == Py_None ? Py_None : SLOT(out, S.off_dtype_np),
                                          result);
    Py_XDECREF(a);
    Py_XDECREF(b);
    return taken;
}

/* The ruled call's result, or NULL (an error set or not) when the Python function runs. */
static PyObject *ruled_fast(Ruled *r, PyObject *const *args, Py_ssize_t nargs,
                            PyObject *kwnames) {
    PyObject *axis = Py_None;
    int keepdims = 0, reduces = r->kind == REDUCE;
    if (nargs != r->host.arity || S.tensor == NULL || S.errstate_var == NULL ||
        Py_TYPE(args[0]) != S.tensor)
        return NULL;
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames) > 0 &&
        (!reduces || !reduce_keywords(args + nargs, kwnames, &axis, &keepdims)))
        return NULL;
    PyObject *x = args[0], *y = nargs > 1 ? args[1] : NULL, *dtype = SLOT(x, S.off_dtype);
    if (r->kind == CAST && Py_TYPE(y) != S.dtype_type) return NULL;
    if (r->kind == MATMUL && (Py_TYPE(y) != S.tensor || SLOT(y, S.off_dtype) != dtype)) return NULL;
    int watched = busy(S.trace_var);
    if (watched == 0) watched = busy(S.observers_var);
    PyObject *rule = NULL;
    for (Py_ssize_t k = 0; watched == 0 && rule == NULL && k < PyList_GET_SIZE(r->rules); k++) {
        PyObject *item = PyList_GET_ITEM(r->rules, k);
        if (PyTuple_GET_ITEM(item, 0) == dtype) rule = PyTuple_GET_ITEM(item, 1);
    }
    if (rule == NULL) return NULL;
    PyObject *out = r->kind == CAST ? y : PyTuple_GET_ITEM(rule, 2), *own = SLOT(x, S.off_np);
    PyObject *result = NULL, *made = NULL;
    int direct = r->kind == MATMUL ? ruled_matmul(r, x, y, rule, out, &result) : 0;
    if (direct < 0) return NULL;
    if (direct == 0) {
        int quiet = r->kind == CAST && own != NULL && PyArray_CheckExact(own) &&
                    quiet_cast((PyArrayObject *)own, (PyArray_Descr *)SLOT(y, S.off_dtype_np));
        PyObject *token = quiet ? NULL : PyContextVar_Set(S.errstate_var, S.errstate_ignore);
        if (!quiet && token == NULL) return NULL;
        result = ruled_compute(r, x, y, rule, out, axis, keepdims);
        if ((quiet ? 0 : PyContextVar_Reset(S.errstate_var, token)) < 0) Py_CLEAR(result);
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
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "fueltensor.ext._fast.Ruled",
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
        ok = S.dtype_type != NULL && Py_TYPE(key) == S.dtype_type && PyTuple_Check(rule) &&
             PyTuple_GET_SIZE(rule) == 3;
        for (int k = 0; ok && k < 2; k++) {
            PyObject *v = PyTuple_GET_ITEM(rule, k);
            ok = v == Py_None || PyArray_DescrCheck(v);
        }
        PyObject *out = ok ? PyTuple_GET_ITEM(rule, 2) : NULL;
        ok = ok && (out == Py_None || Py_TYPE(out) == S.dtype_type);
    }
    if (!ok) {
        PyErr_Clear();
        PyErr_SetString(PyExc_TypeError,
                        "ruled(fn, kind, call, fresh, rules) takes a kind of REDUCE, CAST or "
                        "MATMUL and a dict DType -> (NumPy dtype | None, NumPy dtype | "
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
    h->descr = h->dtype = h->layout = h->dict = NULL;
    h->arity = kind == REDUCE ? 1 : 2;
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

