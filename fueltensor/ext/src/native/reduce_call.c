/* ---------------------------------------------------------------------------------------------
 * `_native.reduce`: the Python interface of the reduction kernel (reduce.c), apart from it so
 * that each file stays short. It reads the buffers and parameters, refuses what the kernel
 * cannot name (formats, an out overlapping x), and runs the kernel without the GIL. */

/* x's v2 dtype code from its buffer: format and element size (NumPy states no format for
 * bfloat16); -1 with TypeError for any other. */
static int reduce_dtype(const Py_buffer *view) {
    const char *have = plain_format(view->format);
    for (int d = 0; d < N_DTYPES; d++) {
        const char *want = FORMATS[d];
        int same = want == NULL ? have == NULL : have != NULL && strcmp(have, want) == 0;
        if (same && view->itemsize == ITEMSIZE[d]) return d;
    }
    PyErr_Format(PyExc_TypeError,
                 "reduce: x must hold float32, float64, bfloat16 or float16 elements, got buffer "
                 "format '%s' of %zd-byte elements",
                 view->format ? view->format : "unstated", view->itemsize);
    return -1;
}

/* `reduce`'s axes argument, a tuple of ints, into `axes`; its length, or -1 with TypeError
 * (the kernel checks their order and range). */
static int reduce_axes(PyObject *obj, int *axes) {
    if (!PyTuple_Check(obj) || PyTuple_GET_SIZE(obj) > MAX_DIMS) {
        PyErr_Format(PyExc_TypeError, "reduce: axes must be a tuple of at most %d ints, got %R",
                     MAX_DIMS, Py_TYPE(obj));
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(obj); i++) {
        long a = PyLong_AsLong(PyTuple_GET_ITEM(obj, i));
        if (a == -1 && PyErr_Occurred()) return -1;
        axes[i] = a < -1 || a > MAX_DIMS ? -1 : (int)a; /* out of range either way */
    }
    return (int)PyTuple_GET_SIZE(obj);
}

/* `reduce`'s accumulator argument: a v2 dtype code, or the name of DTYPES' float32 or float64;
 * -1 with TypeError or ValueError. */
static long reduce_accumulator(PyObject *obj) {
    if (PyUnicode_Check(obj)) {
        const char *name = PyUnicode_AsUTF8(obj);
        if (name == NULL) return -1;
        for (int d = F32; d <= F64; d++)
            if (strcmp(name, DTYPE_NAMES[d]) == 0) return d;
        PyErr_Format(PyExc_ValueError, "reduce: accumulator must be float32 or float64, got %R",
                     obj);
        return -1;
    }
    long code = PyLong_AsLong(obj);
    if (code == -1 && PyErr_Occurred()) return -1;
    return code;
}

/* Run the kernel on x's (of `dtype`) and out's (of `out_dtype`) buffers without the GIL, the
 * caller's floating-point status flags kept; NULL with ValueError carrying the kernel's refusal. */
static PyObject *reduce_buffers(long op, const Py_buffer *xv, int dtype, int out_dtype,
                                const Py_buffer *ov, const ParamArg *params, int n_params) {
    Py_ssize_t oshape[MAX_DIMS], ostrides[MAX_DIMS], step = ov->itemsize;
    for (int k = ov->ndim - 1; k >= 0; k--) { /* out is C-contiguous: its strides, dense */
        oshape[k] = ov->shape[k];
        ostrides[k] = step;
        step *= ov->shape[k];
    }
    TensorArg x = {dtype, xv->ndim, xv->shape, xv->strides, xv->buf};
    TensorArg out = {out_dtype, ov->ndim, oshape, ostrides, ov->buf};
    char error[256] = "";
    int status;
    fexcept_t flags;
    fegetexceptflag(&flags, FE_ALL_EXCEPT);
    Py_BEGIN_ALLOW_THREADS status =
        reduce_kernel((int)op, &x, 1, &out, params, n_params, error, sizeof error);
    Py_END_ALLOW_THREADS fesetexceptflag(&flags, FE_ALL_EXCEPT);
    if (status == 0) Py_RETURN_NONE;
    PyErr_SetString(PyExc_ValueError, error);
    return NULL;
}

/* Whether x's elements and out's bytes share any byte (x non-empty; its extent checked). */
static int reduce_overlap(const Py_buffer *xv, const Py_buffer *ov) {
    const char *lo, *hi, *o = ov->buf;
    if (extent(xv, &lo, &hi) < 0) return 1;
    return lo < o + ov->len && o < hi;
}

/* `reduce(op, x, out, axes, accumulator, order, block)`: out = REDUCTION_OPS[op] of x over
 * axes (see the header for the order), x any strided array, out the dense reduced shape. */
SHARED PyObject *reduce(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 7) {
        PyErr_Format(PyExc_TypeError,
                     "reduce(op, x, out, axes, accumulator, order, block) takes 7 arguments, "
                     "got %zd", nargs);
        return NULL;
    }
    int axes[MAX_DIMS];
    long op = PyLong_AsLong(args[0]);
    int count = op == -1 && PyErr_Occurred() ? -1 : reduce_axes(args[3], axes);
    long acc = count < 0 ? -1 : reduce_accumulator(args[4]);
    long order = acc == -1 && PyErr_Occurred() ? -1 : PyLong_AsLong(args[5]);
    long long block = PyErr_Occurred() ? -1 : PyLong_AsLongLong(args[6]);
    if (PyErr_Occurred()) return NULL;
    Py_buffer xv, ov;
    if (get_buffer(args[1], &xv, PyBUF_STRIDES, "x") < 0) return NULL;
    int dtype = reduce_dtype(&xv);
    if (dtype < 0 || get_operand(args[2], &ov, PyBUF_ND | PyBUF_WRITABLE, dtype, "reduce",
                                 "out") < 0) {
        PyBuffer_Release(&xv);
        return NULL;
    }
    PyObject *result = NULL;
    if (xv.len != 0 && ov.len != 0 && reduce_overlap(&xv, &ov))
        PyErr_SetString(PyExc_ValueError, "reduce: out overlaps x");
    else {
        const ParamArg params[4] = {
            {"axes", PARAM_AXES, {.axes = {count, axes}}},
            {"accumulator", PARAM_CODE, {.i = acc}},
            {"order", PARAM_CODE, {.i = order}},
            {"block", PARAM_I64, {.i = block}},
        };
        result = reduce_buffers(op, &xv, dtype, dtype, &ov, params, 4);
    }
    PyBuffer_Release(&xv);
    PyBuffer_Release(&ov);
    return result;
}
