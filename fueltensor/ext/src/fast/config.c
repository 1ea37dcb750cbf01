/* ---------------------------------------------------------------------------------------------
 * Configuration: the public interface through which the layers above set this floor up
 * (docs/interfaces.md, "The compiled floor"; typed in `_fast.pyi`). `bind_core` takes core's
 * types and their slots' member descriptors when `fueltensor.core.tensor` is imported;
 * `configure` takes the engine's context variables and hooks when dispatch is imported. Each
 * reads the named fields of one object (`core.shared.CoreConfig`, `engine.fast.FastConfig`),
 * whose names this file lists once (`CORE_FIELDS`, `CONFIG_FIELDS`, exported and held equal to
 * the Python NamedTuples by a test). Nothing is changed when a field is wrong. */

typedef struct {
    const char *name;
    int (*ok)(PyObject *);
    const char *what;
} Field;

static int is_type(PyObject *v) { return PyType_Check(v); }
static int is_tuple_type(PyObject *v) {
    return PyType_Check(v) && PyType_IsSubtype((PyTypeObject *)v, &PyTuple_Type);
}
static int is_var(PyObject *v) { return PyContextVar_CheckExact(v); }
static int is_callable(PyObject *v) { return PyCallable_Check(v); }
static int is_frozenset(PyObject *v) { return PyFrozenSet_CheckExact(v); }
static int is_str(PyObject *v) { return PyUnicode_CheckExact(v); }
static int is_errstate(PyObject *v) {
    return v == Py_None || (PyTuple_Check(v) && PyTuple_GET_SIZE(v) == 2 &&
                            PyContextVar_CheckExact(PyTuple_GET_ITEM(v, 0)));
}
/* An object slot's member descriptor (`__slots__`' entry as its class holds it). */
static int is_slot(PyObject *v) {
    return PyObject_TypeCheck(v, &PyMemberDescr_Type) &&
           ((PyMemberDescrObject *)v)->d_member->type == T_OBJECT_EX;
}
static int is_slots(PyObject *v) {
    int ok = PyTuple_Check(v) && PyTuple_GET_SIZE(v) == 4;
    for (Py_ssize_t k = 0; ok && k < 4; k++) ok = is_slot(PyTuple_GET_ITEM(v, k));
    return ok;
}

static const Field CORE_FIELDS[] = {
    {"tensor", is_type, "a type"},
    {"slots", is_slots, "a tuple of its 4 object slots' member descriptors"},
    {"layout", is_tuple_type, "a tuple subclass"},
    {"dtype", is_type, "a type"},
    {"dtype_np", is_slot, "an object slot's member descriptor"},
    {"array", is_callable, "callable"},
};
#define N_CORE ((int)(sizeof CORE_FIELDS / sizeof CORE_FIELDS[0]))

static const Field CONFIG_FIELDS[] = {
    {"policy_var", is_var, "a ContextVar"},
    {"trace_var", is_var, "a ContextVar"},
    {"observers_var", is_var, "a ContextVar"},
    {"default_policy", is_callable, "callable"},
    {"make_scalar", is_callable, "callable"},
    {"errstate", is_errstate, "None or (ContextVar, value)"},
    {"check_inplace", is_callable, "callable"},
    {"integer_forms", is_frozenset, "a frozenset"},
    {"form_marker", is_str, "a str"},
};
#define N_CONFIG ((int)(sizeof CONFIG_FIELDS / sizeof CONFIG_FIELDS[0]))

/* Read the `n` fields of `config` into `v` (new references), each checked; -1 with a TypeError
 * naming the field (and nothing kept) otherwise. */
static int read_fields(const char *call, PyObject *config, const Field *fields, int n,
                       PyObject **v) {
    for (int got = 0; got < n; got++) {
        v[got] = PyObject_GetAttrString(config, fields[got].name);
        if (v[got] != NULL && fields[got].ok(v[got])) continue;
        if (v[got] != NULL)
            PyErr_Format(PyExc_TypeError, "%s: config.%s must be %s, got %.100s", call,
                         fields[got].name, fields[got].what, Py_TYPE(v[got])->tp_name);
        for (int k = 0; k <= got; k++) Py_XDECREF(v[k]);
        return -1;
    }
    return 0;
}

/* The byte offset of the object slot `descr` describes, which must be a slot of `type` (its
 * own or a base class's); -1 with a TypeError otherwise. */
static Py_ssize_t slot_offset(PyTypeObject *type, PyObject *descr) {
    PyTypeObject *owner = ((PyDescrObject *)descr)->d_type;
    if (!PyType_IsSubtype(type, owner)) {
        PyErr_Format(PyExc_TypeError, "bind_core: slot %R belongs to %.100s, not to %.100s",
                     descr, owner->tp_name, type->tp_name);
        return -1;
    }
    return ((PyMemberDescrObject *)descr)->d_member->offset;
}

/* Store core's types and the slots' offsets (`v` in CORE_FIELDS' order), or -1 on error. */
static int keep_core(PyObject **v) {
    Py_ssize_t off[5];
    for (int k = 0; k < 4; k++) {
        off[k] = slot_offset((PyTypeObject *)v[0], PyTuple_GET_ITEM(v[1], k));
        if (off[k] < 0) return -1;
    }
    off[4] = slot_offset((PyTypeObject *)v[3], v[4]);
    PyObject *dense = off[4] < 0 ? NULL : PyObject_GetAttrString(v[2], "dense");
    if (dense == NULL) return -1;
    S.off_storage = off[0];
    S.off_layout = off[1];
    S.off_dtype = off[2];
    S.off_np = off[3];
    S.off_dtype_np = off[4];
    Py_XSETREF(S.tensor, (PyTypeObject *)Py_NewRef(v[0]));
    Py_XSETREF(S.layout_type, (PyTypeObject *)Py_NewRef(v[2]));
    Py_XSETREF(S.dtype_type, (PyTypeObject *)Py_NewRef(v[3]));
    Py_XSETREF(S.array_of, Py_NewRef(v[5]));
    Py_XSETREF(S.dense_layout, dense);
    return 0;
}

/* bind_core(config): the tensor type and its slots (storage, layout, dtype, np), Layout,
 * DType and its NumPy dtype's slot, and the tensor's NumPy view (`CoreConfig`). */
static PyObject *bind_core(PyObject *module, PyObject *config) {
    (void)module;
    PyObject *v[N_CORE];
    if (read_fields("bind_core", config, CORE_FIELDS, N_CORE, v) < 0) return NULL;
    int status = keep_core(v);
    for (int k = 0; k < N_CORE; k++) Py_DECREF(v[k]);
    if (status < 0) return NULL;
    Py_RETURN_NONE;
}

/* Forget what the previous configuration made: the policy read last, the default policy and
 * the scalars made by the previous `make_scalar`. */
static void forget_configured(void) {
    Py_CLEAR(S.last_policy);
    Py_CLEAR(S.last_plans);
    Py_CLEAR(S.fallback);
    for (int k = 0; k < SCALAR_SLOTS; k++) {
        S.scalars[k].kind = 0;
        Py_CLEAR(S.scalars[k].like);
        Py_CLEAR(S.scalars[k].tensor);
    }
}

/* configure(config): what binary, inplace and the operators read of the engine: its context
 * variables, the default policy's maker and its hooks (`FastConfig`). */
static PyObject *configure(PyObject *module, PyObject *config) {
    (void)module;
    PyObject *v[N_CONFIG];
    if (read_fields("configure", config, CONFIG_FIELDS, N_CONFIG, v) < 0) return NULL;
    Py_XSETREF(S.policy_var, v[0]);
    Py_XSETREF(S.trace_var, v[1]);
    Py_XSETREF(S.observers_var, v[2]);
    Py_XSETREF(S.default_policy, v[3]);
    Py_XSETREF(S.make_scalar, v[4]);
    Py_XSETREF(S.check_inplace, v[6]);
    Py_XSETREF(S.integer_forms, v[7]);
    Py_XSETREF(S.form_marker, v[8]);
    if (v[5] == Py_None) {
        Py_CLEAR(S.errstate_var);
        Py_CLEAR(S.errstate_ignore);
    } else {
        Py_XSETREF(S.errstate_var, Py_NewRef(PyTuple_GET_ITEM(v[5], 0)));
        Py_XSETREF(S.errstate_ignore, Py_NewRef(PyTuple_GET_ITEM(v[5], 1)));
    }
    Py_DECREF(v[5]);
    forget_configured();
    Py_RETURN_NONE;
}

/* The names of `fields` as a tuple (a module constant), or NULL. */
static PyObject *field_names(const Field *fields, int n) {
    PyObject *names = PyTuple_New(n);
    for (int k = 0; names != NULL && k < n; k++) {
        PyObject *name = PyUnicode_FromString(fields[k].name);
        if (name == NULL) Py_CLEAR(names);
        else PyTuple_SET_ITEM(names, k, name);
    }
    return names;
}
