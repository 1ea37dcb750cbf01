/* ---------------------------------------------------------------------------------------------
 * The Python interface: `tally` and `references` over buffers of bit patterns, the constants. */


/* The names of the tally's scalar entries, in enum order (`_certify.STATS`). */
static const char *const STAT_NAMES[N_SCALARS] = {
    "exact", "ulp0", "ulp1", "ulp2", "ulp3", "ulp4", "ulp5", "ulp6", "ulp7", "ulp8", "beyond",
    "max_ulp", "max_lhs", "max_rhs", "formula_equal", "formula_lhs", "formula_rhs",
    "equal", "NaN sign", "NaN payload", "NaN vs number", "signed zero", "infinity", "subnormal",
    "sign", "rounding", "value",
    "open", "nan_lost", "invalid_lost",
    "zero_kept", "zero_sign", "zero_lost", "inf_kept", "inf_lost",
    "subnormal_out_kept", "subnormal_out_flushed", "subnormal_out_other",
    "subnormal_in_exact", "subnormal_in_flushed", "subnormal_in_other",
};

/* Parse `op`, `exponent`, `mantissa` into a Format (ValueError unless a 16-bit binary format
 * and an op of OP_NAMES' numbering). */
static int parse_format(PyObject *const *args, int *op, Format *f) {
    long o = PyLong_AsLong(args[0]), e = PyLong_AsLong(args[1]), m = PyLong_AsLong(args[2]);
    if (PyErr_Occurred()) return -1;
    if (o < 0 || o >= N_OPS || e < 2 || m < 2 || e + m != 15) {
        PyErr_Format(PyExc_ValueError,
                     "op must be 0..%d and exponent + mantissa bits 15 (a 16-bit format), got "
                     "op=%ld exponent=%ld mantissa=%ld", N_OPS - 1, o, e, m);
        return -1;
    }
    *op = (int)o;
    *f = format_of((int)e, (int)m);
    return values_for(f);
}

/* Acquire `count` C-contiguous buffers (writable from `first_writable` on) of `itemsize`-byte
 * elements, `n` elements each except the last `tail` ones, whose sizes are `tail_bytes`. */
static int get_buffers(PyObject *const *args, Py_buffer *views, int count, int first_writable,
                       Py_ssize_t *n, const Py_ssize_t *fixed_bytes) {
    int got = 0;
    for (; got < count; got++) {
        int flags = PyBUF_C_CONTIGUOUS | (got >= first_writable ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(args[got], &views[got], flags) < 0) break;
        Py_ssize_t want = fixed_bytes[got] >= 0 ? fixed_bytes[got] : views[0].len;
        if (views[got].len != want || (fixed_bytes[got] < 0 && views[got].len % 2)) {
            PyErr_Format(PyExc_ValueError,
                         "buffer %d holds %zd bytes; expected %zd (the pairs' 2-byte patterns, "
                         "the 65536-entry class table, the %d-entry int64 tally)",
                         got, views[got].len, want, N_STATS);
            PyBuffer_Release(&views[got]);
            break;
        }
    }
    if (got == count) {
        *n = views[0].len / 2;
        return 0;
    }
    while (got-- > 0) PyBuffer_Release(&views[got]);
    return -1;
}

/* The skipped indices as a Python list (NULL with an exception set on failure). */
static PyObject *skipped_list(const Skipped *s, int failed) {
    if (failed) return PyErr_NoMemory();
    PyObject *list = PyList_New(s->count);
    for (Py_ssize_t i = 0; list != NULL && i < s->count; i++) {
        PyObject *index = PyLong_FromSsize_t(s->at[i]);
        if (index == NULL) Py_CLEAR(list);
        else PyList_SET_ITEM(list, i, index);
    }
    return list;
}

/* Whether every class number is below MAX_CLASSES (ValueError if not). */
static int classes_ok(const uint8_t *classes) {
    Py_ssize_t bad = 0;
    for (Py_ssize_t i = 0; i < 65536; i++) bad += classes[i] >= MAX_CLASSES;
    if (bad) PyErr_Format(PyExc_ValueError, "class numbers must be below %d", MAX_CLASSES);
    return bad == 0;
}

static PyObject *py_tally(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    int op, with_want = nargs == 9 && args[8] != Py_None;
    Format f;
    if (nargs != 8 && nargs != 9) {
        PyErr_Format(PyExc_TypeError, "tally(op, exponent, mantissa, lhs, rhs, got, classes, "
                                      "stats, want=None) takes 8 or 9 arguments, got %zd", nargs);
        return NULL;
    }
    if (parse_format(args, &op, &f) < 0) return NULL;
    Py_buffer v[6];
    Py_ssize_t n, stats_bytes;
    if (__builtin_mul_overflow((Py_ssize_t)N_STATS, (Py_ssize_t)sizeof(int64_t), &stats_bytes))
        return PyErr_NoMemory();
    const Py_ssize_t sizes[6] = {-1, -1, -1, 65536, stats_bytes, -1};
    PyObject *const ordered[6] = {args[3], args[4], args[5], args[6], args[7],
                                  with_want ? args[8] : args[3]};
    if (get_buffers(ordered, v, 6, 4, &n, sizes) < 0) return NULL;
    Skipped skipped = {NULL, 0, 0};
    int failed = 0, ok = classes_ok(v[3].buf);
    if (ok) {
        fenv_t env;
        Py_BEGIN_ALLOW_THREADS fegetenv(&env);
        fesetenv(FE_DFL_ENV);
        failed = tally(&f, op, v[0].buf, v[1].buf, v[2].buf, with_want ? v[5].buf : NULL, n,
                       v[3].buf, v[4].buf, &skipped) < 0;
        fesetenv(&env);
        Py_END_ALLOW_THREADS
    }
    for (int i = 0; i < 6; i++) PyBuffer_Release(&v[i]);
    PyObject *result = ok ? skipped_list(&skipped, failed) : NULL;
    PyMem_RawFree(skipped.at);
    return result;
}

static PyObject *py_references(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 7) {
        PyErr_Format(PyExc_TypeError, "references(op, exponent, mantissa, lhs, rhs, exact, "
                                      "formula) takes 7 arguments, got %zd", nargs);
        return NULL;
    }
    int op;
    Format f;
    if (parse_format(args, &op, &f) < 0) return NULL;
    Py_buffer v[4];
    Py_ssize_t n;
    const Py_ssize_t sizes[4] = {-1, -1, -1, -1};
    if (get_buffers(args + 3, v, 4, 2, &n, sizes) < 0) return NULL;
    const uint16_t *a = v[0].buf, *b = v[1].buf;
    uint16_t *e = v[2].buf, *fo = v[3].buf;
    Skipped unproven = {NULL, 0, 0};
    int failed = 0;
    fenv_t env;
    Py_BEGIN_ALLOW_THREADS fegetenv(&env);
    fesetenv(FE_DFL_ENV);
    for (Py_ssize_t i = 0; i < n && !failed; i++) {
        int doubt = 0;
        e[i] = (uint16_t)exact(&f, op, a[i], b[i], &doubt);
        fo[i] = (uint16_t)formula(&f, op, a[i], b[i]);
        failed = doubt && skip(&unproven, i) < 0;
    }
    fesetenv(&env);
    Py_END_ALLOW_THREADS
    for (int i = 0; i < 4; i++) PyBuffer_Release(&v[i]);
    PyObject *result = skipped_list(&unproven, failed);
    PyMem_RawFree(unproven.at);
    return result;
}

/* Parse a unary call's `exponent`, `mantissa` (a 16- or 32-bit binary format) into `f`. */
static int parse_unary_format(PyObject *const *args, Format *f) {
    long e = PyLong_AsLong(args[0]), m = PyLong_AsLong(args[1]);
    if (PyErr_Occurred()) return -1;
    if (e < 2 || m < 2 || (e + m != 15 && e + m != 31)) {
        PyErr_Format(PyExc_ValueError,
                     "exponent + mantissa bits must be 15 or 31 (a 16- or 32-bit format), got "
                     "exponent=%ld mantissa=%ld", e, m);
        return -1;
    }
    *f = format_of((int)e, (int)m);
    return 0;
}

/* Acquire `count` C-contiguous buffers of uint32 patterns (writable from `first_writable`
 * on), each `n` elements but those `fixed` gives a length of its own (-1: n). */
static int get_patterns(PyObject *const *args, Py_buffer *views, int count, int first_writable,
                        Py_ssize_t *n, const Py_ssize_t *fixed) {
    int got = 0;
    for (; got < count; got++) {
        int flags = PyBUF_C_CONTIGUOUS | (got >= first_writable ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(args[got], &views[got], flags) < 0) break;
        Py_ssize_t want = fixed[got] >= 0 ? fixed[got] : views[0].len;
        if (views[got].len != want || views[got].len % 4) {
            PyErr_Format(PyExc_ValueError,
                         "buffer %d holds %zd bytes; expected %zd (uint32 patterns; the "
                         "%d-entry int64 tally; two zeros' references)",
                         got, views[got].len, want, N_STATS);
            PyBuffer_Release(&views[got]);
            break;
        }
    }
    if (got == count) {
        *n = views[0].len / 4;
        return 0;
    }
    while (got-- > 0) PyBuffer_Release(&views[got]);
    return -1;
}

static PyObject *py_unary_reference(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 5) {
        PyErr_Format(PyExc_TypeError, "unary_reference(op, exponent, mantissa, x, want) takes 5 "
                                      "arguments, got %zd", nargs);
        return NULL;
    }
    long op = PyLong_AsLong(args[0]);
    if (op == -1 && PyErr_Occurred()) return NULL;
    if (op < 0 || op >= N_UNARY_OPS || !unary_known((int)op)) {
        PyErr_Format(PyExc_ValueError,
                     "op must be one of UNARY_OPS (0..%d) with a double reference in _certify's "
                     "unary.c, got %ld", N_UNARY_OPS - 1, op);
        return NULL;
    }
    Format f;
    if (parse_unary_format(args + 1, &f) < 0) return NULL;
    Py_buffer v[2];
    Py_ssize_t n;
    const Py_ssize_t sizes[2] = {-1, -1};
    if (get_patterns(args + 3, v, 2, 1, &n, sizes) < 0) return NULL;
    const uint32_t *x = v[0].buf;
    uint32_t *want = v[1].buf;
    Skipped unproven = {NULL, 0, 0};
    int failed = 0;
    fenv_t env;
    Py_BEGIN_ALLOW_THREADS fegetenv(&env);
    fesetenv(FE_DFL_ENV);
    for (Py_ssize_t i = 0; i < n && !failed; i++) {
        int doubt = 0;
        want[i] = unary_reference(&f, (int)op, x[i], &doubt);
        failed = doubt && skip(&unproven, i) < 0;
    }
    fesetenv(&env);
    Py_END_ALLOW_THREADS
    for (int i = 0; i < 2; i++) PyBuffer_Release(&v[i]);
    PyObject *result = skipped_list(&unproven, failed);
    PyMem_RawFree(unproven.at);
    return result;
}

static PyObject *py_unary_tally(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 7) {
        PyErr_Format(PyExc_TypeError, "unary_tally(exponent, mantissa, x, got, want, zeros, "
                                      "stats) takes 7 arguments, got %zd", nargs);
        return NULL;
    }
    Format f;
    if (parse_unary_format(args, &f) < 0) return NULL;
    Py_buffer v[5];
    Py_ssize_t n, stats_bytes;
    if (__builtin_mul_overflow((Py_ssize_t)N_STATS, (Py_ssize_t)sizeof(int64_t), &stats_bytes))
        return PyErr_NoMemory();
    const Py_ssize_t sizes[5] = {-1, -1, -1, 2 * 4, stats_bytes};
    if (get_patterns(args + 2, v, 5, 4, &n, sizes) < 0) return NULL;
    const uint32_t *x = v[0].buf, *got = v[1].buf, *want = v[2].buf, *zeros = v[3].buf;
    int64_t *stats = v[4].buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) unary_tally_one(&f, x[i], got[i], want[i], zeros, stats);
    Py_END_ALLOW_THREADS
    for (int i = 0; i < 5; i++) PyBuffer_Release(&v[i]);
    Py_RETURN_NONE;
}

/* Parse a cast call's target `exponent`, `mantissa`, `has_inf` and `saturate` into `t`
 * (ValueError unless a format of at most 16 bits narrower than float32's fields). */
static int parse_target(PyObject *const *args, Target *t) {
    long e = PyLong_AsLong(args[0]), m = PyLong_AsLong(args[1]);
    int inf = PyObject_IsTrue(args[2]), sat = PyObject_IsTrue(args[3]);
    if (PyErr_Occurred() || inf < 0 || sat < 0) return -1;
    if (e < 2 || e > 8 || m < 1 || m > 10 || e + m > 15) {
        PyErr_Format(PyExc_ValueError,
                     "a cast target has 2..8 exponent and 1..10 fraction bits, 15 at most in "
                     "all (8 or 16 bits wide), got exponent=%ld mantissa=%ld", e, m);
        return -1;
    }
    *t = target_of((int)e, (int)m, inf, sat);
    return 0;
}

static PyObject *py_cast_reference(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 6) {
        PyErr_Format(PyExc_TypeError, "cast_reference(exponent, mantissa, has_inf, saturate, x, "
                                      "want) takes 6 arguments, got %zd", nargs);
        return NULL;
    }
    Target t;
    if (parse_target(args, &t) < 0) return NULL;
    Py_buffer v[2];
    Py_ssize_t n;
    const Py_ssize_t sizes[2] = {-1, -1};
    if (get_patterns(args + 4, v, 2, 1, &n, sizes) < 0) return NULL;
    const uint32_t *x = v[0].buf;
    uint32_t *want = v[1].buf;
    fenv_t env;
    Py_BEGIN_ALLOW_THREADS fegetenv(&env);
    fesetenv(FE_DFL_ENV); /* to nearest: the reference's one rounding */
    for (Py_ssize_t i = 0; i < n; i++) want[i] = cast_reference(&t, x[i]);
    fesetenv(&env);
    Py_END_ALLOW_THREADS
    for (int i = 0; i < 2; i++) PyBuffer_Release(&v[i]);
    Py_RETURN_NONE;
}

static PyObject *py_cast_tally(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 7) {
        PyErr_Format(PyExc_TypeError, "cast_tally(exponent, mantissa, has_inf, x, got, want, "
                                      "stats) takes 7 arguments, got %zd", nargs);
        return NULL;
    }
    PyObject *const parsed[4] = {args[0], args[1], args[2], Py_False};
    Target t;
    if (parse_target(parsed, &t) < 0) return NULL;
    Py_buffer v[4];
    Py_ssize_t n, stats_bytes;
    if (__builtin_mul_overflow((Py_ssize_t)N_STATS, (Py_ssize_t)sizeof(int64_t), &stats_bytes))
        return PyErr_NoMemory();
    const Py_ssize_t sizes[4] = {-1, -1, -1, stats_bytes};
    if (get_patterns(args + 3, v, 4, 3, &n, sizes) < 0) return NULL;
    Py_BEGIN_ALLOW_THREADS
    cast_tally(&t, v[0].buf, v[1].buf, v[2].buf, n, v[3].buf);
    Py_END_ALLOW_THREADS
    for (int i = 0; i < 4; i++) PyBuffer_Release(&v[i]);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"unary_reference", (PyCFunction)(void (*)(void))py_unary_reference, METH_FASTCALL,
     "unary_reference(op, exponent, mantissa, x, want) -> unproven: write each input's "
     "reference (uint32 patterns; op numbered as UNARY_OPS): the C library's double function "
     "rounded once; returns the indices a rounding boundary lies too close to for that."},
    {"unary_tally", (PyCFunction)(void (*)(void))py_unary_tally, METH_FASTCALL,
     "unary_tally(exponent, mantissa, x, got, want, zeros, stats): add the inputs x[i] -> got[i] "
     "against want[i] (uint32 patterns) to the int64 tally `stats` (the binary layout, the input "
     "in the lhs place); zeros: the references of +0 and -0."},
    {"cast_reference", (PyCFunction)(void (*)(void))py_cast_reference, METH_FASTCALL,
     "cast_reference(exponent, mantissa, has_inf, saturate, x, want): write each float32 "
     "pattern's cast to the target (uint32 patterns) by the declared rule: rounded once to "
     "nearest even, overflow to inf or NaN (or saturated), a NaN quieted, subnormals kept."},
    {"cast_tally", (PyCFunction)(void (*)(void))py_cast_tally, METH_FASTCALL,
     "cast_tally(exponent, mantissa, has_inf, x, got, want, stats): add the float32 inputs "
     "x[i] -> got[i] against want[i] (uint32 patterns of the target) to the int64 tally `stats` "
     "in the Python cast tally's layout (`certify.casts.tally`)."},
    {"tally", (PyCFunction)(void (*)(void))py_tally, METH_FASTCALL,
     "tally(op, exponent, mantissa, lhs, rhs, got, classes, stats, want=None) -> skipped: add "
     "the pairs (lhs[i], rhs[i]) -> got[i] (2-byte patterns) to the int64 tally `stats` (STATS, "
     "then the operand class table); classes: 65536 bytes, each pattern's value class number; "
     "want: each pair's correctly rounded result, else computed here, and the indices of the "
     "pairs it cannot prove (pow near a rounding boundary) are returned, not tallied."},
    {"references", (PyCFunction)(void (*)(void))py_references, METH_FASTCALL,
     "references(op, exponent, mantissa, lhs, rhs, exact, formula) -> unproven: write each "
     "pair's correctly rounded result and the seeds' formula's bits (2-byte patterns); returns "
     "the indices whose correctly rounded result is not proven (pow near a rounding boundary)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "fueltensor.ext._certify",
    "The certifier's compiled core: every pair of a 16-bit format against the correctly rounded "
    "result, tallied; shares no code with the kernels it certifies.",
    -1,
    methods,
};

PyMODINIT_FUNC PyInit__certify(void) {
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL) return NULL;
    if (add_names(module, "OPS", OP_NAMES, N_OPS) < 0 ||
        add_names(module, "UNARY_OPS", UNARY_NAMES, N_UNARY_OPS) < 0 ||
        PyModule_AddIntConstant(module, "UNARY_BOUND_ULPS", (int)UNARY_BOUND_ULPS) < 0 ||
        PyModule_AddIntConstant(module, "UNARY_NAN_DISTANCE", (long)UNARY_NAN_DISTANCE) < 0 ||
        add_names(module, "STATS", STAT_NAMES, N_SCALARS) < 0 ||
        PyModule_AddIntConstant(module, "N_STATS", N_STATS) < 0 ||
        PyModule_AddIntConstant(module, "CLASS_TABLE", CLASS_TABLE) < 0 ||
        PyModule_AddIntConstant(module, "NAN_FORMS", NAN_FORMS) < 0 ||
        PyModule_AddIntConstant(module, "FORMS_PER_OPERAND", FORMS_PER_OPERAND) < 0 ||
        PyModule_AddIntConstant(module, "MAX_CLASSES", MAX_CLASSES) < 0 ||
        PyModule_AddIntConstant(module, "HIST_ULPS", HIST_ULPS) < 0 ||
        PyModule_AddIntConstant(module, "NAN_DISTANCE", NAN_DISTANCE) < 0 ||
        PyModule_AddIntConstant(module, "POW_BOUND_ULPS", (int)POW_BOUND_ULPS) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
