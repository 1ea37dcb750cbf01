/* ---------------------------------------------------------------------------------------------
 * argmax and argmin over a sorted list of axes (ops.py's REDUCTION_OPS: R_ARGMAX, R_ARGMIN),
 * reached through the REDUCE capsule (`reduce_kernel` hands them here) and, for the thunks and
 * tests, `_native.argreduce`. Inputs F32, F64, BF16, F16 of any strides (negative, zero, offset
 * views), as reduce.c reads them; the output is I64, dense of the reduced shape.
 *
 * Exact, so no order or accumulator is a parameter: each output is the index, in row-major
 * order of the reduced axes (0 .. m-1), of the FIRST extreme element: the first NaN if the
 * reduced elements hold one (a NaN is the extreme, as NumPy and PyTorch have it), else the first
 * element equal to the largest (smallest). -0 and +0 are equal: of a +0/-0 tie the first zero.
 * So max(x) of reduce.c (the left fold, lhs ties) is x at argmax(x), bit for bit. Every value is
 * compared as a double, exact for every input format; one portable body for every instruction
 * set. The argmax or argmin of nothing is refused, as the max and min of nothing are.
 *
 * Threads split the outputs (reduce.c's `reduce_run`), each output scanned whole by one thread:
 * the result is the index, the same whatever the thread count. */

/* The first extreme's index among the reduced elements of the output whose first is at `base`
 * (the walk and the tiles as reduce.c's `extreme`). */
static int64_t arg_extreme(const Reduce *r, const char *base) {
    int max = r->op == R_ARGMAX;
    double tile[REDUCE_TILE], best = 0;
    int64_t chosen = -1;
    RunAt at;
    runs_start(r, &at, 0);
    Py_ssize_t s = r->rstride[r->red - 1], offset;
    for (Py_ssize_t done = 0; done < r->m;) {
        Py_ssize_t k = runs_next(r, &at, r->m - done, &offset);
        for (Py_ssize_t i = 0; i < k; i += REDUCE_TILE) {
            Py_ssize_t kk = k - i < REDUCE_TILE ? k - i : REDUCE_TILE;
            accd_gather(r->dtype, base + offset + i * s, s, kk, tile);
            for (Py_ssize_t j = 0; j < kk; j++) {
                double v = tile[j];
                if (isnan(v)) return (int64_t)(done + i + j); /* the first NaN wins */
                if (chosen < 0 || (max ? v > best : v < best)) { /* strict: the first of ties */
                    chosen = (int64_t)(done + i + j);
                    best = v;
                }
            }
        }
        done += k;
    }
    return chosen;
}

/* A part of a call: outputs [at, at + len), each scanned here whole. */
static void argreduce_outputs(const void *ctx, Py_ssize_t at, Py_ssize_t len) {
    const Reduce *r = ctx;
    for (Py_ssize_t o = at; o < at + len; o++) {
        const char *in;
        char *out;
        output_at(r, o, &in, &out);
        int64_t index = arg_extreme(r, in);
        memcpy(out, &index, sizeof index);
    }
}

/* The REDUCE capsule's argmax and argmin (abi.h's `ShapedKernel`): out[o] = the first extreme's
 * index over params' axes of in[0] (see the header); out I64 of the reduced shape (or x's rank
 * with a true `keepdims`, as reduce.c reads it). 0, or -1 with the refusal. */
static int argreduce_kernel(int op, const TensorArg *in, int n_in, const TensorArg *out,
                            const ParamArg *params, int n_params, char *error, size_t error_len) {
    Reduce r = {.op = op, .acc = F64, .lanes = 1, .block = 1};
    int reduced[MAX_DIMS] = {0};
    if (n_in != 1)
        return reduce_refuse(error, error_len, "argreduce: one input, got %d", n_in);
    const TensorArg *x = in;
    if (x->dtype < 0 || x->dtype >= N_DTYPES || x->ndim < 0 || x->ndim > MAX_DIMS)
        return reduce_refuse(error, error_len,
                             "argreduce: x must be float32, float64, bfloat16 or float16, of %d "
                             "dims at most", MAX_DIMS);
    if (out->dtype != I64)
        return reduce_refuse(error, error_len, "argreduce: out must be int64 (code %d), got %d",
                             I64, out->dtype);
    TensorArg shaped = *out; /* reduce_shape checks the shapes against x's dtype */
    shaped.dtype = x->dtype;
    const ParamArg *keep = param(params, n_params, "keepdims", PARAM_I64);
    if (reduce_axes_param(x, params, n_params, reduced, error, error_len) < 0 ||
        reduce_shape(&r, x, &shaped, reduced, keep != NULL && keep->value.i, error, error_len) < 0)
        return -1;
    if (r.m == 0 && r.n_out > 0)
        return reduce_refuse(error, error_len, "argreduce: the %s of an empty set is undefined",
                             REDUCTION_NAMES[op]);
    r.dtype = x->dtype;
    r.itemsize = ITEMSIZE[x->dtype];
    r.x = x->data;
    r.out = out->data;
    reduce_run(&r, argreduce_outputs, r.n_out, r.m * r.n_out);
    return 0;
}

/* Whether `view` holds int64 elements: 8-byte signed integers by buffer format. */
static int holds_int64(const Py_buffer *view) {
    const char *have = plain_format(view->format);
    return view->itemsize == 8 && have != NULL && (strcmp(have, "q") == 0 ||
                                                   (sizeof(long) == 8 && strcmp(have, "l") == 0));
}

/* `argreduce(op, x, out, axes)`: out = REDUCTION_OPS[op] (argmax, argmin) of x over axes, x any
 * strided array, out the dense int64 reduced shape; ValueError with the kernel's refusal. */
SHARED PyObject *argreduce(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 4) {
        PyErr_Format(PyExc_TypeError, "argreduce(op, x, out, axes) takes 4 arguments, got %zd",
                     nargs);
        return NULL;
    }
    int axes[MAX_DIMS];
    long op = PyLong_AsLong(args[0]);
    int count = op == -1 && PyErr_Occurred() ? -1 : reduce_axes(args[3], axes);
    if (count < 0) return NULL;
    if (op != R_ARGMAX && op != R_ARGMIN) {
        PyErr_Format(PyExc_ValueError, "argreduce: op must be argmax (%d) or argmin (%d), got %ld",
                     R_ARGMAX, R_ARGMIN, op);
        return NULL;
    }
    Py_buffer xv, ov;
    if (get_buffer(args[1], &xv, PyBUF_STRIDES, "x") < 0) return NULL;
    int dtype = reduce_dtype(&xv);
    if (dtype < 0 || get_buffer(args[2], &ov, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE, "out") < 0) {
        PyBuffer_Release(&xv);
        return NULL;
    }
    PyObject *result = NULL;
    if (!holds_int64(&ov))
        PyErr_Format(PyExc_TypeError, "argreduce: out must hold int64 elements, got buffer "
                     "format '%s' of %zd-byte elements", ov.format ? ov.format : "unstated",
                     ov.itemsize);
    else if (xv.len != 0 && ov.len != 0 && reduce_overlap(&xv, &ov))
        PyErr_SetString(PyExc_ValueError, "argreduce: out overlaps x");
    else {
        const ParamArg params[1] = {{"axes", PARAM_AXES, {.axes = {count, axes}}}};
        result = reduce_buffers(op, &xv, dtype, I64, &ov, params, 1);
    }
    PyBuffer_Release(&xv);
    PyBuffer_Release(&ov);
    return result;
}
