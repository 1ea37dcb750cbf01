/* The one state of `_native` (native.h), both translation units' (the initializer in its field
 * order: no ISA body yet, one ISA, the default ISA, one thread, split from each threshold). */
SHARED NativeState N = {{NULL}, {NULL}, {NULL}, {NULL}, {NULL}, {NULL}, {NULL}, {NULL}, 1, 0, 1, 0, 0
#if defined(HAVE_PTHREAD)
                        , POOL_INIT
#endif
};

static PyMethodDef methods[] = {
    {"binary", (PyCFunction)(void (*)(void))binary, METH_FASTCALL,
     "binary(op, dtype, lhs, rhs, out): out[i] = OPS[op](lhs[i], rhs[i]) over C-contiguous "
     "buffers of DTYPES[dtype]."},
    {"raised", (PyCFunction)(void (*)(void))raised, METH_FASTCALL,
     "raised(op, dtype, lhs, rhs, out) -> int: binary's run, returning the floating-point status "
     "flags it raised (<fenv.h>'s FE_* bits; the caller's own flags are left as they were)."},
    {"set_threads", set_threads, METH_O,
     "set_threads(n) -> previous: the threads a body over its SPLIT_FROM threshold may use, 1 "
     "to MAX_THREADS (capped by the cores this process may run on)."},
    {"pretend_cores", pretend_cores, METH_O,
     "pretend_cores(n) -> previous: for tests only, split bodies as if this process could run "
     "on n cores (1 to MAX_THREADS); 0, the default, takes the affinity mask again."},
    {"set_parallel_from", set_parallel_from, METH_O,
     "set_parallel_from(n) -> previous: split every body from n elements (for measuring where "
     "splitting pays); 0, the default, splits each op class from its SPLIT_FROM threshold."},
    {"isa", isa, METH_NOARGS,
     "isa() -> str: the instruction set of the kernel body that runs (one of ISAS: the last, "
     "the widest this CPU runs, unless select_isa chose another)."},
    {"threads", (PyCFunction)(void (*)(void))threads, METH_FASTCALL,
     "threads(n, op, dtype) -> int: how many threads a body of OPS[op] (POWI_OP: the integer "
     "power) on DTYPES[dtype] over n elements runs on now (CAST_OP: a cast from "
     "CAST_DTYPES[dtype]; REDUCE_OP: a reduction of n input elements, capped by its units; "
     "MATMUL_POOL_OP: a matmul of n products)."},
    {"copy_strided", (PyCFunction)(void (*)(void))copy_strided, METH_FASTCALL,
     "copy_strided(src, dst): copy any strided src into the C-contiguous dst of its size, in "
     "row-major order."},
    {"pow_vector", pow_vector, METH_O,
     "pow_vector(on) -> previous: let f32 pow run the vector powf where it is recognised "
     "(on by default; off: powf for every lane)."},
    {"pow_status", pow_status, METH_NOARGS,
     "pow_status() -> (on, recognised, reason): pow_vector's switch, whether the platform powf "
     "is the algorithm the vector powf follows (recognising it now if no call has yet), and "
     "what that rests on."},
    {"pow_sample", pow_sample, METH_NOARGS,
     "pow_sample() -> (x, y): the recognition's inputs, as bytes of uint32 bit patterns."},
    {"pow_recognise", pow_recognise, METH_O,
     "pow_recognise(want) -> (recognised, reason): the recognition, with the uint32 bits `want` "
     "standing for powf's on the sample."},
    {"pow_tables", pow_tables, METH_NOARGS,
     "pow_tables() -> (log, exp): the vector powf's tables as glibc lays them out (bytes)."},
    {"pow_libm_holds", (PyCFunction)(void (*)(void))pow_libm_holds, METH_FASTCALL,
     "pow_libm_holds(log, exp) -> bool: whether the libm holding powf holds both blocks."},
    {"pow_with", (PyCFunction)(void (*)(void))pow_with, METH_FASTCALL,
     "pow_with(name, x, y, out): out[i] = f32 pow(x[i], y[i]) through one vector powf pass."},
    {"verify_pow", (PyCFunction)(void (*)(void))verify_pow, METH_FASTCALL,
     "verify_pow(y, start, stop, threads[, flip]) -> ((pass, mismatches, first x, first y) per "
     "pass): compare every vector powf pass with powf for the x bit patterns [start, stop) "
     "(flip: XORed into powf's bits every 2^16 lanes, to show mismatches are found)."},
    {"verify_pow_pairs", (PyCFunction)(void (*)(void))verify_pow_pairs, METH_FASTCALL,
     "verify_pow_pairs(seed, start, stop, threads[, flip]) -> as verify_pow, over the random "
     "(x, y) pairs [start, stop) of stream `seed`."},
    {"pow_identity", pow_identity, METH_NOARGS,
     "pow_identity() -> {libc, libm, powf}: the C library, file and symbol of the powf called."},
    {"unary", (PyCFunction)(void (*)(void))unary, METH_FASTCALL,
     "unary(op, dtype, x, out): out[i] = UNARY_OPS[op](x[i]) over C-contiguous buffers of "
     "DTYPES[dtype] and one byte length, computed in double and rounded once."},
    {"compare", (PyCFunction)(void (*)(void))compare, METH_FASTCALL,
     "compare(op, dtype, lhs, rhs, out): out[i] = COMPARISON_OPS[op](lhs[i], rhs[i]) over "
     "C-contiguous buffers of DTYPES[dtype] and one length, out as many bools."},
    {"ternary", (PyCFunction)(void (*)(void))ternary, METH_FASTCALL,
     "ternary(op, dtype, a, b, c, out): where (TERNARY_OPS[op] 'where': out[i] = b[i] if a[i] "
     "else c[i], a bools) or clip (out[i] = minimum(maximum(a[i], b[i]), c[i]), a NaN operand "
     "returned as it is) over C-contiguous buffers of DTYPES[dtype], one operand's bits a lane"},
    {"convert", (PyCFunction)(void (*)(void))convert, METH_FASTCALL,
     "convert(src, dst, saturate, x, out): out[i] = x[i] cast from CAST_DTYPES[src] to "
     "CAST_DTYPES[dst] over C-contiguous buffers of as many elements: rounded once to nearest "
     "even, beyond the largest finite value inf (float8_e4m3fn: NaN) or, with saturate=1, the "
     "largest finite value; a NaN quieted, its sign and top payload bits kept."},
    {"reduce", (PyCFunction)(void (*)(void))reduce, METH_FASTCALL,
     "reduce(op, x, out, axes, accumulator, order, block): out = REDUCTION_OPS[op] of x over the "
     "sorted tuple axes, x any strided array, out the dense reduced shape of x's dtype, "
     "accumulated in `accumulator` (a dtype code or name) in the order ORDER_SEQUENTIAL or "
     "ORDER_BLOCKED (blocks of `block`): the same bits on any thread count and instruction set."},
    {"argreduce", (PyCFunction)(void (*)(void))argreduce, METH_FASTCALL,
     "argreduce(op, x, out, axes): out = REDUCTION_OPS[op] (argmax, argmin) of x over the sorted "
     "tuple axes, x any strided array, out the dense int64 reduced shape: the row-major index "
     "among the reduced elements of the first extreme, a NaN the extreme, -0 equal to +0."},
    {"contract", (PyCFunction)(void (*)(void))contract, METH_FASTCALL,
     "contract(op, a, b, out, accumulator, order, products): the contraction family's kernel "
     "(MATMUL): out = a @ b over the stacks, a of "
     "(..., M, K) and b of (..., K, N) any strided arrays of one rank (stacks broadcast by the "
     "caller), out C-contiguous (..., M, N), all float32, bfloat16 or float16; op CONTRACTION_OPS.index('matmul'); "
     "accumulator float32 (a dtype code), order ORDER_SEQUENTIAL, products PRODUCTS_EXACT (the "
     "half types) or PRODUCTS_FUSED: per output acc = -0, acc = fl32(acc + a[i,l] * b[l,j]) for "
     "l in order, rounded once (K = 0: +0); the same bits on any thread count and instruction "
     "set."},
    {"pairs_instruction", pairs_instruction, METH_O,
     "pairs_instruction(on) -> previous: run the BF16 pairs order (ORDER_PAIRS_ODD_FIRST) on "
     "the AVX-512 body's VDPBF16PS (True), its FMAs under FTZ and DAZ (False), or the faster "
     "of the two as measured at the first call (None, the default): the same bits; previous "
     "is whether the setting before chose the instruction, None where the CPU has no "
     "AVX512_BF16."},
    {"select_isa", select_isa, METH_O,
     "select_isa(name) -> previous: run the kernel body compiled for one of ISAS (for tests)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    NATIVE_MODULE,
    "Compiled fuel-cpu-backend kernels and Contiguize's strided copy, held to the same scalar "
    "reference as the pure-NumPy paths.",
    -1,
    methods,
};

/* Contiguize for `_fast`: copy the `ndim`-D view at `src` (byte strides, any sign, 0 where an
 * axis repeats) into the dense row-major `dst`, as `copy_strided` does once it has the buffers.
 * `_fast` has checked that `shape`'s bytes fit a Py_ssize_t (its `checked_size`), which bounds
 * every product here and in `walk_collapse`. */
static void copy_dense(char *dst, const char *src, int ndim, const Py_ssize_t *shape,
                       const Py_ssize_t *strides, Py_ssize_t size) {
    Walk w;
    w.ndim = ndim;
    Py_ssize_t step = size;
    for (int k = ndim - 1; k >= 0; k--) {
        w.shape[k] = shape[k];
        w.step[0][k] = strides[k];
        w.step[1][k] = step;
        step *= shape[k];
    }
    walk_collapse(&w, 2);
    copy_walk(dst, src, &w, size);
}

/* Export a function to `_fast` as a capsule named fueltensor.ext._native.<name> (abi.h). */
static int add_capsule(PyObject *module, const char *name, const char *full, void *fn) {
    PyObject *capsule = PyCapsule_New(fn, full, NULL);
    int status = capsule == NULL ? -1 : PyModule_AddObjectRef(module, name, capsule);
    Py_XDECREF(capsule);
    return status;
}

static int add_body(PyObject *module) {
    if (add_capsule(module, "BODY", CAPSULE_BODY, (void *)selected_body) < 0)
        return -1;
    if (add_capsule(module, "POWI", CAPSULE_POWI, (void *)powi_body) < 0)
        return -1;
    if (add_capsule(module, "UNARY", CAPSULE_UNARY, (void *)unary_body) < 0)
        return -1;
    if (add_capsule(module, "COMPARE", CAPSULE_COMPARE, (void *)compare_body) < 0)
        return -1;
    if (add_capsule(module, "NAN_SCAN", CAPSULE_NAN_SCAN, (void *)nan_scan) < 0)
        return -1;
    if (add_capsule(module, "CAST", CAPSULE_CAST, (void *)cast_body) < 0)
        return -1;
    if (add_capsule(module, "REDUCE", CAPSULE_REDUCE, (void *)reduce_kernel) < 0)
        return -1;
    if (add_capsule(module, "MATMUL", CAPSULE_MATMUL, (void *)matmul_kernel) < 0)
        return -1;
    return add_capsule(module, "COPY", CAPSULE_COPY, (void *)copy_dense);
}

/* The functions `<name>_<isa><suffix>` of every instruction set compiled, baseline first (AVX-512
 * is compiled only beside AVX2). */
#if defined(HAVE_AVX512)
#define PER_ISA(name, suffix) {name##_baseline##suffix, name##_avx2##suffix, name##_avx512##suffix}
#elif defined(HAVE_AVX2_F16C)
#define PER_ISA(name, suffix) {name##_baseline##suffix, name##_avx2##suffix}
#else
#define PER_ISA(name, suffix) {name##_baseline##suffix}
#endif

/* Fill the bodies of every instruction set this CPU runs (a prefix of ISA_NAMES) and select the
 * last: the widest vectors. */
static void find_isas(void) {
    BodyWith bodies[] = PER_ISA(body, );
    PartBody parts[] = PER_ISA(body, _part);
    PowIBody powi[] = PER_ISA(powi, );
    UnaryBody unaries[] = PER_ISA(unary, );
    Body compares[] = PER_ISA(compare, );
    TernaryBody ternaries[] = PER_ISA(ternary, );
    NanScan scans[] = PER_ISA(nan_scan, );
    CastBody casts[] = PER_ISA(cast, );
    int count = 1;
#ifdef HAVE_AVX2_F16C
    __builtin_cpu_init();
    count += __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") &&
             __builtin_cpu_supports("fma");
#endif
#ifdef HAVE_AVX512
    count += count == 2 && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq");
#endif
    for (int i = 0; i < count; i++) {
        N.isa_bodies[i] = bodies[i];
        N.isa_parts[i] = parts[i];
        N.isa_powi[i] = powi[i];
        N.isa_unary[i] = unaries[i];
        N.isa_compare[i] = compares[i];
        N.isa_ternary[i] = ternaries[i];
        N.isa_nan_scan[i] = scans[i];
        N.isa_cast[i] = casts[i];
    }
    N.isa_count = count;
    N.isa = count - 1;
}

/* `_native.SPLIT_FROM`: {op name (and POWI_NAME): {dtype name: elements from which it splits}}. */
static int add_split_table(PyObject *module) {
    PyObject *table = PyDict_New();
    for (int op = 0; table != NULL && op <= N_OPS; op++) {
        PyObject *row = PyDict_New();
        for (int d = 0; row != NULL && d < N_DTYPES; d++) {
            PyObject *from = PyLong_FromSsize_t(split_from(op, d));
            if (from == NULL || PyDict_SetItemString(row, DTYPE_NAMES[d], from) < 0) Py_CLEAR(row);
            Py_XDECREF(from);
        }
        const char *name = op < N_OPS ? OP_NAMES[op] : POWI_NAME;
        if (row == NULL || PyDict_SetItemString(table, name, row) < 0) Py_CLEAR(table);
        Py_XDECREF(row);
    }
    int status = table == NULL ? -1 : PyModule_AddObjectRef(module, "SPLIT_FROM", table);
    Py_XDECREF(table);
    return status;
}

PyMODINIT_FUNC PyInit__native(void) {
    find_isas();
    mm_pairs_init();
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL) return NULL;
    if (add_names(module, "OPS", OP_NAMES, N_OPS) < 0 ||
        add_names(module, "UNARY_OPS", UNARY_NAMES, N_UNARY_OPS) < 0 ||
        add_names(module, "COMPARISON_OPS", COMPARISON_NAMES, N_COMPARISON_OPS) < 0 ||
        add_names(module, "TERNARY_OPS", TERNARY_NAMES, N_TERNARY_OPS) < 0 ||
        add_names(module, "REDUCTION_OPS", REDUCTION_NAMES, N_REDUCTION_OPS) < 0 ||
        add_names(module, "CONTRACTION_OPS", CONTRACTION_NAMES, N_CONTRACTION_OPS) < 0 ||
        add_names(module, "DTYPES", DTYPE_NAMES, N_DTYPES) < 0 ||
        add_names(module, "CAST_DTYPES", CAST_NAMES, N_CAST_DTYPES) < 0 ||
        add_names(module, "ISAS", ISA_NAMES, N.isa_count) < 0 || add_body(module) < 0 ||
        PyModule_AddIntConstant(module, "POW_BAND", POWF_BAND) < 0 ||
        PyModule_AddIntConstant(module, "PARALLEL_FROM", PARALLEL_FROM) < 0 ||
        PyModule_AddIntConstant(module, "STREAM_FROM", STREAM_FROM) < 0 ||
        PyModule_AddIntConstant(module, "MAX_THREADS", MAX_THREADS) < 0 ||
        PyModule_AddIntConstant(module, "AFFINITY_NS", AFFINITY_NS) < 0 ||
        PyModule_AddIntConstant(module, "WAKE_FACTOR", WAKE_FACTOR) < 0 ||
        PyModule_AddIntConstant(module, "ALONE_STREAK", ALONE_STREAK) < 0 ||
        PyModule_AddIntConstant(module, "POOL_SPIN_NS", POOL_SPIN_NS) < 0 ||
        PyModule_AddIntConstant(module, "POWI_OP", POWI_OP) < 0 ||
        PyModule_AddIntConstant(module, "COMPARE_OP", COMPARE_OP) < 0 ||
        PyModule_AddIntConstant(module, "CAST_OP", CAST_POOL_OP) < 0 ||
        PyModule_AddIntConstant(module, "REDUCE_OP", REDUCE_POOL_OP) < 0 ||
        PyModule_AddIntConstant(module, "MATMUL_POOL_OP", MATMUL_POOL_OP) < 0 ||
        PyModule_AddIntConstant(module, "PRODUCTS_EXACT", PRODUCTS_EXACT) < 0 ||
        PyModule_AddIntConstant(module, "PRODUCTS_FUSED", PRODUCTS_FUSED) < 0 ||
        PyModule_AddIntConstant(module, "PRODUCTS_ROUNDED", PRODUCTS_ROUNDED) < 0 ||
        PyModule_AddIntConstant(module, "CAST_SPLIT_FROM", SPLIT_CAST) < 0 ||
        PyModule_AddIntConstant(module, "MAX_DIMS", MAX_DIMS) < 0 ||
        PyModule_AddIntConstant(module, "ORDER_SEQUENTIAL", ORDER_SEQUENTIAL) < 0 ||
        PyModule_AddIntConstant(module, "ORDER_PAIRWISE", ORDER_PAIRWISE) < 0 ||
        PyModule_AddIntConstant(module, "ORDER_BLOCKED", ORDER_BLOCKED) < 0 ||
        PyModule_AddIntConstant(module, "ORDER_PAIRS_ODD_FIRST", ORDER_PAIRS_ODD_FIRST) < 0 ||
        PyModule_AddIntConstant(module, "REDUCE_LANES", REDUCE_LANES) < 0 ||
        PyModule_AddIntConstant(module, "REDUCE_FEW_OUTPUTS", REDUCE_FEW_OUTPUTS) < 0 ||
        PyModule_AddIntConstant(module, "GIL_FREE_FROM", GIL_FREE_FROM) < 0 ||
        add_split_table(module) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
