/* ---------------------------------------------------------------------------------------------
 * The Python interface. */

/* Whether two byte ranges share any byte. */
static int overlap(const Py_buffer *x, const Py_buffer *y) {
    const char *xs = x->buf, *ys = y->buf;
    return x->len && y->len && xs < ys + y->len && ys < xs + x->len;
}

/* A private copy of an input that `out` overlaps, so the loops may assume no aliasing (and so
 * a partial overlap reads the inputs as they were, as NumPy does). Dispatch never aliases. */
static const void *own_input(const Py_buffer *in, const Py_buffer *out, void **copy) {
    if (!overlap(in, out)) return in->buf;
    *copy = PyMem_RawMalloc((size_t)in->len);
    if (*copy != NULL) memcpy(*copy, in->buf, (size_t)in->len);
    return *copy;
}

/* The buffer-protocol format of each dtype's elements; NULL: NumPy states none (bfloat16). */
SHARED const char *const FORMATS[N_DTYPES] = {"f", "d", NULL, "e"};

/* A struct-module format without its native byte-order prefix ("@", "=", "<" here), so "<f"
 * and "f" compare equal; NULL (no format stated) stays NULL. */
SHARED const char *plain_format(const char *format) {
    if (format == NULL) return NULL;
    const uint16_t one = 1;
    int little = *(const unsigned char *)&one == 1;
    if (format[0] == '@' || format[0] == '=' || (little && format[0] == '<')) return format + 1;
    return format;
}

/* Whether a buffer format holds Python object pointers ('O'), outside field names (":name:"). */
static int holds_objects(const char *format) {
    int in_name = 0;
    for (const char *c = format; c != NULL && *c; c++) {
        if (*c == ':') in_name = !in_name;
        else if (!in_name && *c == 'O') return 1;
    }
    return 0;
}

/* Acquire `obj`'s buffer with `flags` and, where the exporter can state it, its format (NumPy
 * cannot for bfloat16: `format` is then NULL). ValueError when the layout or writability
 * asked for cannot be had. */
SHARED int get_buffer(PyObject *obj, Py_buffer *view, int flags, const char *what) {
    if (PyObject_GetBuffer(obj, view, flags | PyBUF_FORMAT) == 0) return 0;
    PyErr_Clear();
    if (PyObject_GetBuffer(obj, view, flags) == 0) {
        view->format = NULL;
        return 0;
    }
    PyErr_Clear();
    PyErr_Format(PyExc_ValueError, "%s must be a %s%s array, got %R", what,
                 (flags & PyBUF_C_CONTIGUOUS) == PyBUF_C_CONTIGUOUS ||
                         (flags & PyBUF_STRIDES) != PyBUF_STRIDES
                     ? "C-contiguous"
                     : "strided",
                 (flags & PyBUF_WRITABLE) ? ", writable" : "", Py_TYPE(obj));
    return -1;
}

/* Acquire an arithmetic operand: C-contiguous, elements of DTYPES[dtype] by buffer format and
 * size (TypeError otherwise: an object or integer array must never reach the loops). */
SHARED int get_operand(PyObject *obj, Py_buffer *view, int flags, long dtype, const char *name,
                       const char *what) {
    if (get_buffer(obj, view, flags, what) < 0) return -1;
    const char *want = FORMATS[dtype], *have = plain_format(view->format);
    int same = want == NULL ? have == NULL : have != NULL && strcmp(have, want) == 0;
    if (same && view->itemsize == ITEMSIZE[dtype]) return 0;
    PyErr_Format(PyExc_TypeError,
                 "%s: %s must hold %s elements (%zd bytes), got buffer format '%s' of %zd-byte "
                 "elements",
                 name, what, DTYPE_NAMES[dtype], ITEMSIZE[dtype],
                 view->format ? view->format : "unstated", view->itemsize);
    PyBuffer_Release(view);
    return -1;
}

/* Parse the arithmetic entry points' `name(op, dtype, lhs, rhs, out)` arguments and acquire the
 * three buffers (none is held on failure). */
static int operands(const char *name, PyObject *const *args, Py_ssize_t nargs, long *op,
                    long *dtype, Py_buffer *lhs, Py_buffer *rhs, Py_buffer *out) {
    if (nargs != 5) {
        PyErr_Format(PyExc_TypeError, "%s(op, dtype, lhs, rhs, out) takes 5 arguments, got %zd",
                     name, nargs);
        return -1;
    }
    *op = PyLong_AsLong(args[0]);
    *dtype = PyLong_AsLong(args[1]);
    if (PyErr_Occurred()) return -1;
    if (*op < 0 || *op >= N_OPS || *dtype < 0 || *dtype >= N_DTYPES) {
        PyErr_Format(PyExc_ValueError, "op must be in [0, %d) and dtype in [0, %d), got %ld, %ld",
                     N_OPS, N_DTYPES, *op, *dtype);
        return -1;
    }
    if (get_operand(args[2], lhs, PyBUF_ND, *dtype, name, "lhs") < 0) return -1;
    if (get_operand(args[3], rhs, PyBUF_ND, *dtype, name, "rhs") < 0) {
        PyBuffer_Release(lhs);
        return -1;
    }
    if (get_operand(args[4], out, PyBUF_ND | PyBUF_WRITABLE, *dtype, name, "out") < 0) {
        PyBuffer_Release(lhs);
        PyBuffer_Release(rhs);
        return -1;
    }
    return 0;
}

/* Undo `operands` and `own_input`: free the private input copies, release the three buffers. */
static void release_operands(void *lcopy, void *rcopy, Py_buffer *lhs, Py_buffer *rhs,
                             Py_buffer *out) {
    PyMem_RawFree(lcopy);
    PyMem_RawFree(rcopy);
    PyBuffer_Release(lhs);
    PyBuffer_Release(rhs);
    PyBuffer_Release(out);
}

/* Run `binary`'s arguments, leaving the caller's floating-point status flags as they were;
 * returns None, or (`report`) the flags the run raised as an int of <fenv.h>'s FE_* bits. */
static PyObject *run_binary(const char *name, PyObject *const *args, Py_ssize_t nargs,
                            int report) {
    long op, dtype;
    Py_buffer lhs, rhs, out;
    if (operands(name, args, nargs, &op, &dtype, &lhs, &rhs, &out) < 0) return NULL;
    PyObject *result = NULL;
    void *lcopy = NULL, *rcopy = NULL;
    Py_ssize_t size = ITEMSIZE[dtype], n = out.len / size;
    if (lhs.len != out.len || rhs.len != out.len || out.len % size) {
        PyErr_Format(PyExc_ValueError,
                     "%s on %s: byte lengths must be equal multiples of %zd: "
                     "lhs %zd, rhs %zd, out %zd",
                     OP_NAMES[op], DTYPE_NAMES[dtype], size, lhs.len, rhs.len, out.len);
        goto done;
    }
    const void *a = own_input(&lhs, &out, &lcopy), *b = own_input(&rhs, &out, &rcopy);
    if ((a == NULL && lhs.len) || (b == NULL && rhs.len)) { /* a zero-length buffer may be NULL */
        PyErr_NoMemory();
        goto done;
    }
    Body run = selected_body;
    fexcept_t flags; /* leave the caller's floating-point status flags as they were */
    fegetexceptflag(&flags, FE_ALL_EXCEPT);
    feclearexcept(FE_ALL_EXCEPT);
    if (n >= GIL_FREE_FROM) {
        Py_BEGIN_ALLOW_THREADS run((int)op, (int)dtype, a, b, out.buf, n);
        Py_END_ALLOW_THREADS
    } else if (n > 0) {
        run((int)op, (int)dtype, a, b, out.buf, n);
    }
    int raised = fetestexcept(FE_ALL_EXCEPT);
    fesetexceptflag(&flags, FE_ALL_EXCEPT);
    result = report ? PyLong_FromLong(raised) : Py_NewRef(Py_None);
done:
    release_operands(lcopy, rcopy, &lhs, &rhs, &out);
    return result;
}

static PyObject *binary(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    return run_binary("binary", args, nargs, 0);
}

static PyObject *raised(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    return run_binary("raised", args, nargs, 1);
}

static PyObject *set_threads(PyObject *module, PyObject *count) {
    (void)module;
    long n = PyLong_AsLong(count);
    if (n == -1 && PyErr_Occurred()) return NULL;
    if (n < 1 || n > MAX_THREADS) {
        PyErr_Format(PyExc_ValueError, "set_threads: a thread count in [1, %d], got %ld",
                     MAX_THREADS, n);
        return NULL;
    }
    return PyLong_FromLong(__atomic_exchange_n(&N.thread_setting, (int)n, __ATOMIC_RELAXED));
}

static PyObject *pretend_cores(PyObject *module, PyObject *count) {
    (void)module;
    long n = PyLong_AsLong(count);
    if (n == -1 && PyErr_Occurred()) return NULL;
    if (n < 0 || n > MAX_THREADS) {
        PyErr_Format(PyExc_ValueError,
                     "pretend_cores: a core count in [1, %d] (or 0: the affinity mask), got %ld",
                     MAX_THREADS, n);
        return NULL;
    }
    return PyLong_FromLong(__atomic_exchange_n(&N.pretend_cores, (int)n, __ATOMIC_RELAXED));
}

static PyObject *set_parallel_from(PyObject *module, PyObject *count) {
    (void)module;
    Py_ssize_t n = PyLong_AsSsize_t(count);
    if (n == -1 && PyErr_Occurred()) return NULL;
    if (n != 0 && n < CHUNK_ALIGN) {
        PyErr_Format(PyExc_ValueError,
                     "set_parallel_from: at least %d elements (or 0: each op class's own "
                     "threshold), got %zd",
                     CHUNK_ALIGN, n);
        return NULL;
    }
    return PyLong_FromSsize_t(__atomic_exchange_n(&N.parallel_from, n, __ATOMIC_RELAXED));
}

static PyObject *threads(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "threads(n, op, dtype) takes 3 arguments, got %zd", nargs);
        return NULL;
    }
    Py_ssize_t n = PyLong_AsSsize_t(args[0]);
    long op = PyLong_AsLong(args[1]), dtype = PyLong_AsLong(args[2]);
    if (PyErr_Occurred()) return NULL;
    int cast = op == CAST_POOL_OP; /* a cast's threads, by its source dtype */
    int task = op == REDUCE_POOL_OP || op == MATMUL_POOL_OP;
    if ((!cast && !task && (op < 0 || op > POWI_OP)) || dtype < 0 ||
        dtype >= (cast ? N_CAST_DTYPES : N_DTYPES)) {
        PyErr_Format(PyExc_ValueError,
                     "op must be in [0, %d] (or CAST_OP, %d, REDUCE_OP, %d, MATMUL_POOL_OP, %d) and "
                     "dtype in [0, %d) (a cast's: [0, %d)), got %ld, %ld",
                     POWI_OP, CAST_POOL_OP, REDUCE_POOL_OP, MATMUL_POOL_OP, N_DTYPES,
                     N_CAST_DTYPES, op, dtype);
        return NULL;
    }
    return PyLong_FromLong(threads_for((int)op, (int)dtype, n));
}

static PyObject *isa(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    return PyUnicode_FromString(ISA_NAMES[N.isa]);
}

/* The byte range a non-empty strided buffer's elements span; -1 when an axis's reach
 * overflows (no buffer in memory has one). */
SHARED int extent(const Py_buffer *v, const char **lo, const char **hi) {
    Py_ssize_t below = 0, above = v->itemsize;
    for (int k = 0; k < v->ndim; k++) {
        Py_ssize_t reach;
        if (__builtin_mul_overflow(v->shape[k] - 1, v->strides[k], &reach) ||
            __builtin_add_overflow(reach < 0 ? below : above, reach, reach < 0 ? &below : &above))
            return -1;
    }
    *lo = (const char *)v->buf + below;
    *hi = (const char *)v->buf + above;
    return 0;
}

/* Why `copy_strided` cannot copy `src` into `dst` (an exception set, -1), or 0 when it can:
 * plain data of one element type and size, the same length, `src`'s extent inside some buffer,
 * and no overlap. */
static int copy_refusal(const Py_buffer *src, const Py_buffer *dst) {
    Py_ssize_t size = src->itemsize;
    const char *sf = plain_format(src->format), *df = plain_format(dst->format);
    if (holds_objects(sf) || holds_objects(df)) {
        /* Copying object pointers without their references would free them twice. */
        PyErr_SetString(PyExc_TypeError,
                        "copy_strided copies plain data; object arrays hold references");
        return -1;
    }
    if (dst->itemsize != size || dst->len != src->len) {
        PyErr_Format(PyExc_ValueError,
                     "copy_strided: dst must hold as many elements of the same size as src: "
                     "src %zd bytes of %zd-byte elements, dst %zd bytes of %zd",
                     src->len, size, dst->len, dst->itemsize);
        return -1;
    }
    if ((sf == NULL) != (df == NULL) || (sf != NULL && strcmp(sf, df) != 0)) {
        PyErr_Format(PyExc_TypeError,
                     "copy_strided: src and dst must hold the same element type, got buffer "
                     "formats '%s' and '%s'",
                     src->format ? src->format : "unstated", dst->format ? dst->format : "unstated");
        return -1;
    }
    if (src->len == 0) return 0;
    const char *lo, *hi, *d = dst->buf;
    if (extent(src, &lo, &hi) < 0) {
        PyErr_SetString(PyExc_ValueError, "copy_strided: src's strides reach past any buffer");
        return -1;
    }
    if (lo < d + dst->len && d < hi) {
        PyErr_SetString(PyExc_ValueError, "copy_strided: dst overlaps src");
        return -1;
    }
    return 0;
}

/* Copy the non-empty `src` into the dense `dst` (checked by `copy_refusal`), without the GIL
 * when long; -1 with ValueError when `src`'s shape overflows its length. */
static int copy_into(const Py_buffer *src, const Py_buffer *dst) {
    Walk w;
    Py_ssize_t size = src->itemsize, step = size;
    w.ndim = src->ndim;
    for (int k = src->ndim - 1; k >= 0; k--) {
        w.shape[k] = src->shape[k];
        w.step[0][k] = src->strides[k];
        w.step[1][k] = step;
        if (__builtin_mul_overflow(step, src->shape[k], &step)) { /* no buffer is that long */
            PyErr_SetString(PyExc_ValueError, "copy_strided: src's shape overflows its length");
            return -1;
        }
    }
    walk_collapse(&w, 2);
    if (src->len / size >= GIL_FREE_FROM) {
        Py_BEGIN_ALLOW_THREADS copy_walk(dst->buf, src->buf, &w, size);
        Py_END_ALLOW_THREADS
    } else {
        copy_walk(dst->buf, src->buf, &w, size);
    }
    return 0;
}

static PyObject *copy_strided(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "copy_strided(src, dst) takes 2 arguments, got %zd", nargs);
        return NULL;
    }
    Py_buffer src, dst;
    if (get_buffer(args[0], &src, PyBUF_STRIDES, "src") < 0) return NULL;
    if (get_buffer(args[1], &dst, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE, "dst") < 0) {
        PyBuffer_Release(&src);
        return NULL;
    }
    int failed = copy_refusal(&src, &dst) < 0 || (src.len != 0 && copy_into(&src, &dst) < 0);
    PyBuffer_Release(&src);
    PyBuffer_Release(&dst);
    return failed ? NULL : Py_NewRef(Py_None);
}


/* `unary(op, dtype, x, out)`: out[i] = UNARY_OPS[op](x[i]) over C-contiguous buffers of one
 * dtype and byte length, leaving the caller's floating-point status flags as they were. */
static PyObject *unary(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 4) {
        PyErr_Format(PyExc_TypeError, "unary(op, dtype, x, out) takes 4 arguments, got %zd",
                     nargs);
        return NULL;
    }
    long op = PyLong_AsLong(args[0]), dtype = PyLong_AsLong(args[1]);
    if (PyErr_Occurred()) return NULL;
    if (op < 0 || op >= N_UNARY_OPS || dtype < 0 || dtype >= N_DTYPES) {
        PyErr_Format(PyExc_ValueError, "op must be in [0, %d) and dtype in [0, %d), got %ld, %ld",
                     N_UNARY_OPS, N_DTYPES, op, dtype);
        return NULL;
    }
    Py_buffer x, out;
    if (get_operand(args[2], &x, PyBUF_ND, dtype, "unary", "x") < 0) return NULL;
    if (get_operand(args[3], &out, PyBUF_ND | PyBUF_WRITABLE, dtype, "unary", "out") < 0) {
        PyBuffer_Release(&x);
        return NULL;
    }
    PyObject *result = NULL;
    void *copy = NULL;
    Py_ssize_t size = ITEMSIZE[dtype], n = out.len / size;
    if (x.len != out.len || out.len % size) {
        PyErr_Format(PyExc_ValueError,
                     "%s on %s: byte lengths must be equal multiples of %zd: x %zd, out %zd",
                     UNARY_NAMES[op], DTYPE_NAMES[dtype], size, x.len, out.len);
        goto done;
    }
    const void *a = own_input(&x, &out, &copy);
    if (a == NULL && x.len) {
        PyErr_NoMemory();
        goto done;
    }
    fexcept_t flags; /* leave the caller's floating-point status flags as they were */
    fegetexceptflag(&flags, FE_ALL_EXCEPT);
    if (n >= GIL_FREE_FROM) {
        Py_BEGIN_ALLOW_THREADS unary_body((int)op, (int)dtype, a, out.buf, n);
        Py_END_ALLOW_THREADS
    } else if (n > 0) {
        unary_body((int)op, (int)dtype, a, out.buf, n);
    }
    fesetexceptflag(&flags, FE_ALL_EXCEPT);
    result = Py_NewRef(Py_None);
done:
    PyMem_RawFree(copy);
    PyBuffer_Release(&x);
    PyBuffer_Release(&out);
    return result;
}
