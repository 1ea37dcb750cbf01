/* ---------------------------------------------------------------------------------------------
 * `_native.contract`: the Python interface of the matmul kernel (matmul.c), as reduce_call.c's
 * `reduce` is the reduction's (named for its family, as `reduce` is: no C literal may spell an
 * op id, tests/repo/test_op_literals.py). It reads the buffers and parameters, refuses what the kernel cannot name
 * (formats, an out overlapping an operand), and runs the kernel without the GIL, the caller's
 * floating-point status flags kept. */

/* An operand's dtype code from its buffer (reduce_call.c's reading); -1 with TypeError. */
static int matmul_dtype(const Py_buffer *view, const char *what) {
    const char *have = plain_format(view->format);
    for (int d = 0; d < N_DTYPES; d++) {
        const char *want = FORMATS[d];
        int same = want == NULL ? have == NULL : have != NULL && strcmp(have, want) == 0;
        if (same && view->itemsize == ITEMSIZE[d] && d != F64) return d;
    }
    PyErr_Format(PyExc_TypeError,
                 "matmul: %s must hold float32, bfloat16 or float16 elements, got buffer format "
                 "'%s' of %zd-byte elements",
                 what, view->format ? view->format : "unstated", view->itemsize);
    return -1;
}

/* Whether the non-empty x's elements and out's bytes share any byte. */
static int matmul_overlap(const Py_buffer *xv, const Py_buffer *ov) {
    const char *lo, *hi, *o = ov->buf;
    if (xv->len == 0 || ov->len == 0) return 0;
    if (extent(xv, &lo, &hi) < 0) return 1;
    return lo < o + ov->len && o < hi;
}

/* Run the kernel on the buffers without the GIL; NULL with ValueError carrying its refusal. */
static PyObject *matmul_buffers(long op, const Py_buffer *views, int dtype,
                                const ParamArg *params, int n_params) {
    const Py_buffer *ov = &views[2];
    Py_ssize_t ostrides[MAX_DIMS], step = ov->itemsize;
    for (int k = ov->ndim - 1; k >= 0; k--) { /* out is C-contiguous: its strides, dense */
        ostrides[k] = step;
        step *= ov->shape[k];
    }
    TensorArg in[2] = {{dtype, views[0].ndim, views[0].shape, views[0].strides, views[0].buf},
                       {dtype, views[1].ndim, views[1].shape, views[1].strides, views[1].buf}};
    TensorArg out = {dtype, ov->ndim, ov->shape, ostrides, ov->buf};
    char error[256] = "";
    int status;
    fexcept_t flags;
    fegetexceptflag(&flags, FE_ALL_EXCEPT);
    Py_BEGIN_ALLOW_THREADS status =
        matmul_kernel((int)op, in, 2, &out, params, n_params, error, sizeof error);
    Py_END_ALLOW_THREADS fesetexceptflag(&flags, FE_ALL_EXCEPT);
    if (status == 0) Py_RETURN_NONE;
    PyErr_SetString(PyExc_ValueError, error);
    return NULL;
}

/* `contract(op, a, b, out, accumulator, order, products)`: out = a @ b (see matmul.c's header),
 * a and b any strided arrays of one rank >= 2, out C-contiguous, all of one dtype; the three
 * parameters PARAM_CODEs (a dtype code, ORDER_*, PRODUCTS_*). */
SHARED PyObject *contract(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 7) {
        PyErr_Format(PyExc_TypeError,
                     "contract(op, a, b, out, accumulator, order, products) takes 7 arguments, "
                     "got %zd", nargs);
        return NULL;
    }
    long code[4];
    for (int i = 0; i < 4; i++) {
        code[i] = PyLong_AsLong(args[i == 0 ? 0 : i + 3]);
        if (code[i] == -1 && PyErr_Occurred()) return NULL;
    }
    Py_buffer views[3];
    const char *names[2] = {"a", "b"};
    int dtype = -1, held = 0;
    for (; held < 2; held++) {
        if (get_buffer(args[held + 1], &views[held], PyBUF_STRIDES, names[held]) < 0) break;
        int d = matmul_dtype(&views[held], names[held]);
        if (d < 0 || (held == 1 && d != dtype)) {
            if (d >= 0) PyErr_SetString(PyExc_TypeError, "matmul: a and b must be of one dtype");
            PyBuffer_Release(&views[held]);
            break;
        }
        dtype = d;
    }
    if (held == 2 && get_operand(args[3], &views[2], PyBUF_ND | PyBUF_WRITABLE, dtype, "contract",
                                 "out") == 0)
        held = 3;
    PyObject *result = NULL;
    if (held == 3) {
        if (matmul_overlap(&views[0], &views[2]) || matmul_overlap(&views[1], &views[2]))
            PyErr_SetString(PyExc_ValueError, "matmul: out overlaps a or b");
        else {
            const ParamArg params[3] = {
                {"accumulator", PARAM_CODE, {.i = code[1]}},
                {"order", PARAM_CODE, {.i = code[2]}},
                {"products", PARAM_CODE, {.i = code[3]}},
            };
            result = matmul_buffers(code[0], views, dtype, params, 3);
        }
    }
    for (int i = 0; i < held; i++) PyBuffer_Release(&views[i]);
    return result;
}
