/* Why tensor `t` cannot take an in-place result of `dtype` and `shape` (either NULL: not
 * compared, as for an assignment), as `*reason`, one of the interned REFUSALS strings, or NULL
 * when it can; -1 on error. The in-place rule's one definition in a compiled build
 * (`tensor.check_inplace` and `check_writable` ask it and word its reasons; the pure build's
 * `python_refusal` is tested equal): the dtype and shape are the result's, the storage is
 * writable, and a target that is not dense row-major has no stride-0 axis and, when not
 * contiguous, provably no two elements at one storage index (`Layout.may_self_overlap`).
 * `*dense_out` says whether an accepted target is dense row-major and not empty. */

static int inplace_reason(PyObject *t, PyObject *dtype, PyObject *shape, PyObject **reason,
                          int *dense_out) {
    PyObject *layout = SLOT(t, S.off_layout), *storage = SLOT(t, S.off_storage);
    *reason = NULL;
    *dense_out = 0;
    if (dtype != NULL && SLOT(t, S.off_dtype) != dtype) return *reason = S.refusals[0], 0;
    if (shape != NULL) {
        int same = PyObject_RichCompareBool(PyTuple_GET_ITEM(layout, 0), shape, Py_EQ);
        if (same <= 0) return same < 0 ? -1 : (*reason = S.refusals[1], 0);
    }
    if (!PyArray_Check(storage) || !PyArray_ISWRITEABLE((PyArrayObject *)storage))
        return *reason = S.refusals[2], 0;
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
    if (stride0) return *reason = S.refusals[3], 0;
    if (empty) return 0; /* contiguous, no two elements anywhere */
    PyObject *overlap = PyObject_GetAttrString(layout, "may_self_overlap"); /* not contiguous */
    if (overlap == NULL) return -1;
    int yes = PyObject_IsTrue(overlap);
    Py_DECREF(overlap);
    if (yes > 0) *reason = S.refusals[4];
    return yes < 0 ? -1 : 0;
}

/* inplace_refusal(t, dtype, shape): `inplace_reason`'s verdict for tensor `t` (dtype and
 * shape may be None: not compared), the reason string or None. */
static PyObject *inplace_refusal(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 3 || S.tensor == NULL || !PyObject_TypeCheck(args[0], S.tensor)) {
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

/* Raise `check_inplace`'s error for a target refused for `reason` (the Python side words
 * it); a SystemError should it accept the target. */
static void refuse_target(PyObject *target, const Entry *e, PyObject *op, PyObject *reason) {
    PyObject *checked = PyObject_CallFunctionObjArgs(S.check_inplace, target, e->out_dtype,
                                                     e->shape, op, NULL);
    Py_XDECREF(checked);
    if (checked != NULL)
        PyErr_Format(PyExc_SystemError, "check_inplace accepted a target refused for %U", reason);
}

/* Run the call's entry straight into the dense target's elements at `dense` (`writes_in_place`
 * allows it): the target, None when the fast path does not serve the call, NULL on error. */
static PyObject *run_into(Call *c, PyObject *target, char *dense) {
    const Entry *e = c->e;
    PyObject *dst = e->kind == ORACLE ? PyObject_CallOneArg(S.array_of, target) : NULL, *result;
    if (e->kind == ORACLE && (dst == NULL || !PyArray_Check(dst))) {
        result = dst != NULL ? Py_NewRef(Py_None) : NULL;
    } else {
        int ran = run_entry(c, dense, dst);
        result = ran == 0 ? Py_NewRef(Py_None) : ran > 0 ? Py_NewRef(target) : NULL;
    }
    Py_XDECREF(dst);
    return result;
}

/* inplace(op, target, other): `dispatch.binary_inplace(op, target, other)` (the target,
 * written through its strides) or None when the call is not one the fast path serves. The
 * kernel writes straight into a dense target where `writes_in_place` allows it; otherwise the
 * output is computed fresh (overlapping operands read whole), then copied into the target. A
 * result the target cannot hold (`inplace_reason`) raises `check_inplace`'s error before
 * anything runs. */
static PyObject *fast_inplace(PyObject *op, PyObject *target, PyObject *other) {
    Call c;
    if (S.tensor == NULL || Py_TYPE(target) != S.tensor) Py_RETURN_NONE;
    int found = resolve(op, target, other, &c);
    if (found <= 0) return found < 0 ? NULL : Py_NewRef(Py_None);
    const Entry *e = c.e;
    PyArrayObject *storage = NULL;
    PyObject *view = NULL, *result = NULL, *dst = NULL, *reason;
    int is_dense;
    if (inplace_reason(target, e->out_dtype, e->shape, &reason, &is_dense) < 0) goto done;
    if (reason != NULL) {
        refuse_target(target, e, op, reason);
        goto done;
    }
    /* An accepted dense target of the output's shape takes the output by one memcpy. */
    Py_ssize_t offset = PyLong_AsSsize_t(PyTuple_GET_ITEM(SLOT(target, S.off_layout), 2));
    if (offset == -1 && PyErr_Occurred()) goto done;
    char *dense = is_dense ? operand_at(target, offset, e->count, e->itemsize) : NULL;
    if (dense == NULL) {
        dst = PyObject_CallOneArg(S.array_of, target);
        if (dst == NULL) goto done;
        if (!PyArray_Check(dst)) {
            result = Py_NewRef(Py_None);
            goto done;
        }
    }
    if (dense != NULL && cast_operands(&c) < 0) goto done;
    if (dense != NULL && writes_in_place(&c, dense)) { /* no fresh output, no copy */
        result = run_into(&c, target, dense);
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
    layout = PyObject_CallOneArg(S.dense_layout, shape);
    if (layout != NULL && kept != NULL) {
        if (Py_TYPE(layout) == S.layout_type && PyTuple_GET_SIZE(layout) == 3)
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
    if (S.tensor == NULL || S.dense_layout == NULL || !PyArray_CheckExact(array) ||
        Py_TYPE(dtype) != S.dtype_type)
        Py_RETURN_NONE;
    PyArrayObject *a = (PyArrayObject *)array;
    int flags = NPY_ARRAY_OWNDATA | NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_WRITEABLE;
    if (!PyArray_CHKFLAGS(a, flags)) Py_RETURN_NONE;
    PyObject *want = SLOT(dtype, S.off_dtype_np);
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

/* scalar(value, like): the cached 0-d tensor `scalars.scalar_tensor(value, like)` makes
 * (read-only), or None when `value` is not an exact Python float / int / bool, `like` not a
 * tensor, or nothing is configured yet. */
static PyObject *scalar(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "scalar(value, like) takes 2 arguments, got %zd", nargs);
        return NULL;
    }
    if (S.tensor == NULL || S.make_scalar == NULL || Py_TYPE(args[1]) != S.tensor ||
        !is_scalar(args[0]))
        Py_RETURN_NONE;
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

