static PyMethodDef methods[] = {
    {"binary", (PyCFunction)(void (*)(void))binary, METH_FASTCALL,
     "binary(op, a, b) -> FuelTensor | None: dispatch.binary's result when the cached plan has "
     "an entry and nothing traces or observes; else None."},
    {"inplace", (PyCFunction)(void (*)(void))inplace, METH_FASTCALL,
     "inplace(op, target, other) -> FuelTensor | None: dispatch.binary_inplace's result (the "
     "target) when binary would serve the call; else None."},
    {"adopt", (PyCFunction)(void (*)(void))adopt, METH_FASTCALL,
     "adopt(array, dtype) -> FuelTensor | None: FuelTensor._from_dense(array, dtype) for an "
     "exact ndarray of dtype owning its memory, row-major and writable; else None."},
    {"scalar", (PyCFunction)(void (*)(void))scalar, METH_FASTCALL,
     "scalar(value, like) -> FuelTensor | None: scalars.scalar_tensor(value, like), cached and "
     "read-only, for an exact Python float / int / bool; else None."},
    {"operator", (PyCFunction)(void (*)(void))make_operator, METH_FASTCALL,
     "operator(op, form, fallback): a callable (a, b) that runs the fast path, else "
     "fallback(op, a, b) ((b, a) when form is 1; in place, inplace's path, when 2); binds as a "
     "method."},
    {"entry", (PyCFunction)(void (*)(void))entry, METH_FASTCALL,
     "entry(kop, kdtype, out_dtype, out_layout, np_dtype, shape, modes, offsets, needs, ufunc, "
     "steps, casts): what binary runs for a cached plan (an opaque object), or None."},
    {"foreign_entry", (PyCFunction)(void (*)(void))foreign_entry, METH_FASTCALL,
     "foreign_entry(address, failure, out_dtype, out_layout, np_dtype, shape, modes, offsets, "
     "needs, casts): what binary runs for a cached plan of a compiled provider's kernel (an "
     "opaque object), or None."},
    {"byte_call", (PyCFunction)(void (*)(void))byte_call, METH_FASTCALL,
     "byte_call(address, lhs, rhs, out) -> int: the status of the compiled kernel at address "
     "called on three C-contiguous arrays (inputs of at most 16 bytes as private copies, the "
     "GIL released from GIL_FREE_FROM output elements)."},
    {"empty", (PyCFunction)(void (*)(void))empty, METH_FASTCALL,
     "empty(count, dtype): an uninitialized 1-D array whose first byte is 64-byte aligned."},
    {"getitem", (PyCFunction)(void (*)(void))getitem, METH_FASTCALL,
     "getitem(t, key) -> FuelTensor | None: the view t[key] for a basic index (ints, slices, "
     "..., None), else None."},
    {"select", (PyCFunction)(void (*)(void))export_select, METH_FASTCALL,
     "select(layout, key) -> Layout | None: the layout a basic index selects (IndexError as "
     "Layout.select raises it), or None when key is not a basic index."},
    {"transpose", transpose, METH_O,
     "transpose(t) -> FuelTensor | None: the view of t with its axes reversed."},
    {"bind_core", bind_core, METH_O,
     "bind_core(config): core's tensor type, its slots' member descriptors, Layout, DType and "
     "the tensor's NumPy view (core.shared.CoreConfig; called once by fueltensor.core.tensor)."},
    {"configure", configure, METH_O,
     "configure(config): what binary, inplace and the operators read of the engine (its "
     "context variables, default policy and hooks; engine.fast.FastConfig, called once by "
     "dispatch)."},
    {"new_tensor", (PyCFunction)(void (*)(void))export_new_tensor, METH_FASTCALL,
     "new_tensor(cls, storage, layout, dtype, np): a cls with these four slots (the one "
     "FuelTensor constructor of a compiled build; the layout is the caller's to check)."},
    {"inplace_refusal", (PyCFunction)(void (*)(void))inplace_refusal, METH_FASTCALL,
     "inplace_refusal(t, dtype, shape) -> str | None: why t cannot take an in-place result of "
     "dtype and shape (None: not compared), one of dtype, shape, read-only, stride0, overlap; "
     "None when it can."},
    {"host", (PyCFunction)(void (*)(void))make_host, METH_FASTCALL,
     "host(fn, ufunc, fresh, arity) -> callable: the host function fn as one compiled call."},
    {"ruled", (PyCFunction)(void (*)(void))make_ruled, METH_FASTCALL,
     "ruled(fn, kind, call, fresh, rules) -> callable: the host reduction, cast or matmul fn "
     "as one compiled call."},
    {"form_key", (PyCFunction)(void (*)(void))form_key, METH_FASTCALL,
     "form_key(op, x, k) -> the plan-cache key of op(x, k)'s integer-scalar form."},
    {"key", (PyCFunction)(void (*)(void))key, METH_FASTCALL,
     "key(op, a, b): the plan-cache key dispatch.choose stores op(a, b)'s plan under (the "
     "key's only definition in a compiled build)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "fueltensor.ext._fast",
    "Dispatch's compiled fast path for cached plans, and 64-byte-aligned allocation.",
    -1,
    methods,
};

/* `_native`'s exported function `attr`, from its capsule `name` (abi.h), or NULL. */
static void *native_function(PyObject *native, const char *attr, const char *name) {
    PyObject *capsule = PyObject_GetAttrString(native, attr);
    if (capsule == NULL) return NULL;
    void *fn = PyCapsule_GetPointer(capsule, name);
    Py_DECREF(capsule);
    return fn;
}

/* Read `_native`'s five functions (its module imported once); -1 on error. */
static int import_native(void) {
    PyObject *native = PyImport_ImportModule(NATIVE_MODULE);
    if (native == NULL) return -1;
    S.run_body = (Body)native_function(native, "BODY", CAPSULE_BODY);
    S.copy_dense = S.run_body == NULL ? NULL : (Copy)native_function(native, "COPY", CAPSULE_COPY);
    S.run_powi =
        S.copy_dense == NULL ? NULL : (PowIBody)native_function(native, "POWI", CAPSULE_POWI);
    S.nan_scan = S.run_powi == NULL
                     ? NULL
                     : (NanScan)native_function(native, "NAN_SCAN", CAPSULE_NAN_SCAN);
    S.run_compare =
        S.nan_scan == NULL ? NULL : (Body)native_function(native, "COMPARE", CAPSULE_COMPARE);
    Py_DECREF(native);
    return S.run_compare == NULL ? -1 : 0;
}

/* Intern the names and keyword tuples of the calls made here; -1 on error. */
static int intern_names(void) {
    static const char *const refusals[5] = {"dtype", "shape", "read-only", "stride0", "overlap"};
    for (int k = 0; k < 5; k++) {
        S.refusals[k] = PyUnicode_InternFromString(refusals[k]);
        if (S.refusals[k] == NULL) return -1;
    }
    S.plans_name = PyUnicode_InternFromString("plans");
    S.namespace_name = PyUnicode_InternFromString("namespace");
    S.astype_name = PyUnicode_InternFromString("astype");
    S.order_c = PyUnicode_InternFromString("C");
    S.order_kwnames = Py_BuildValue("(s)", "order");
    S.out_kwnames = Py_BuildValue("(s)", "out");
    S.resolve_name = PyUnicode_InternFromString("_resolve_dtypes_and_context");
    S.loop_name = PyUnicode_InternFromString("_get_strided_loop");
    S.stride_kwnames = Py_BuildValue("(s)", "fixed_strides");
    PyObject *made[] = {S.plans_name,    S.namespace_name, S.astype_name,
                        S.order_c,       S.order_kwnames,  S.out_kwnames,
                        S.resolve_name,  S.loop_name,      S.stride_kwnames};
    for (size_t k = 0; k < sizeof made / sizeof made[0]; k++)
        if (made[k] == NULL) return -1;
    return 0;
}

/* The module's int constants: the codes dispatch reads (defined above only), ALIGNMENT and
 * the sizes the tests hold allocations to. */
static int add_constants(PyObject *module) {
    static const struct {
        const char *name;
        int value;
    } ints[] = {{"ALIGNMENT", ALIGNMENT}, {"AS_IS", AS_IS},         {"DENSIFY", DENSIFY},
                {"REPEAT", REPEAT},       {"FORWARD", FORWARD},     {"REFLECTED", REFLECTED},
                {"INPLACE", INPLACE},     {"HOST", HOST},           {"METHOD", METHOD},
                {"REDUCE", REDUCE},       {"CAST", CAST},           {"MATMUL", MATMUL},
                {"GUARD_BYTES", GUARD_BYTES},
                {"REPEAT_HEAP_BYTES", REPEAT_HEAP_BYTES}};
    for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++)
        if (PyModule_AddIntConstant(module, ints[k].name, ints[k].value) < 0) return -1;
    PyObject *core = field_names(CORE_FIELDS, N_CORE);
    PyObject *config = field_names(CONFIG_FIELDS, N_CONFIG);
    int status = core == NULL || config == NULL ||
                         PyModule_AddObjectRef(module, "CORE_FIELDS", core) < 0 ||
                         PyModule_AddObjectRef(module, "CONFIG_FIELDS", config) < 0
                     ? -1
                     : 0;
    Py_XDECREF(core);
    Py_XDECREF(config);
    return status;
}

PyMODINIT_FUNC PyInit__fast(void) {
    import_array();
    import_umath();
    if (import_native() < 0 || intern_names() < 0) return NULL;
    if (PyType_Ready(&EntryType) < 0 || PyType_Ready(&OperatorType) < 0 ||
        PyType_Ready(&HostType) < 0 || PyType_Ready(&RuledType) < 0 ||
        PyType_Ready(&BlockType) < 0)
        return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (module != NULL && add_constants(module) < 0) Py_CLEAR(module);
    return module;
}
