/* ---------------------------------------------------------------------------------------------
 * Python scalars: the 0-d tensor `scalars.scalar_tensor` makes, cached. */


/* Whether `value` is a Python scalar this code takes: exactly a float, an int or a bool. */
static int is_scalar(PyObject *value) {
    return PyFloat_CheckExact(value) || PyLong_CheckExact(value) || PyBool_Check(value);
}

/* Make a cached scalar's arrays read-only, so no write can reach the cache. */
static void freeze(PyObject *t) {
    PyObject *storage = SLOT(t, S.off_storage), *np_ = SLOT(t, S.off_np);
    if (storage != NULL && PyArray_Check(storage))
        PyArray_CLEARFLAGS((PyArrayObject *)storage, NPY_ARRAY_WRITEABLE);
    if (np_ != NULL && PyArray_Check(np_))
        PyArray_CLEARFLAGS((PyArrayObject *)np_, NPY_ARRAY_WRITEABLE);
}

/* The Python scalar `value` as the 0-d tensor dispatch makes next to tensor `like` (a new
 * reference), or NULL with `_scalar`'s exception (OverflowError for an int out of range). */
static PyObject *scalar_operand(PyObject *value, PyObject *like) {
    PyObject *like_dtype = SLOT(like, S.off_dtype);
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
        if (overflow) return PyObject_CallFunctionObjArgs(S.make_scalar, value, like, NULL);
        bits = (uint64_t)v;
        kind = 2;
    }
    uint64_t h = (bits ^ (bits >> 31) ^ ((uintptr_t)like_dtype >> 4) ^ (uint64_t)kind);
    Scalar *slot = &S.scalars[(h * 0x9E3779B97F4A7C15ull) >> 58 & (SCALAR_SLOTS - 1)];
    if (slot->kind == kind && slot->bits == bits && slot->like == like_dtype)
        return Py_NewRef(slot->tensor);
    PyObject *t = PyObject_CallFunctionObjArgs(S.make_scalar, value, like, NULL);
    if (t == NULL || Py_TYPE(t) != S.tensor) return t;
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

