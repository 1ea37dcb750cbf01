/* Whether a contextvar holding a tuple (the active traces, the observers) holds any. */
static int busy(PyObject *var) {
    PyObject *value;
    if (PyContextVar_Get(var, NULL, &value) < 0) return -1;
    int any = value != NULL && PyTuple_Check(value) && PyTuple_GET_SIZE(value) > 0;
    Py_XDECREF(value);
    return any;
}

/* The plan-cache key of `op(a, b)` on two tensors, as parts (borrowed): the operation's name,
 * then each operand's NumPy dtype and Layout. This is the key's only definition: `key` packs
 * these parts for `dispatch.choose`, which caches every plan under it, and `cached` looks the
 * same parts up. (NumPy dtypes hash in C where DType.__hash__ is Python.) */

static inline int key_parts(PyObject *op, PyObject *a, PyObject *b, PyObject **parts) {
    PyObject *da = SLOT(a, S.off_dtype), *db = SLOT(b, S.off_dtype);
    if (da != NULL && db != NULL) {
        parts[0] = op;
        parts[1] = SLOT(da, S.off_dtype_np);
        parts[2] = SLOT(a, S.off_layout);
        parts[3] = SLOT(db, S.off_dtype_np);
        parts[4] = SLOT(b, S.off_layout);
        if (parts[1] != NULL && parts[2] != NULL && parts[3] != NULL && parts[4] != NULL) return 0;
    }
    PyErr_SetString(PyExc_TypeError, "plan key: an operand tensor is not initialized");
    return -1;
}

static PyObject *pack_key(PyObject *const *parts) {
    return PyTuple_Pack(KEY_PARTS, parts[0], parts[1], parts[2], parts[3], parts[4]);
}

/* key(op, a, b): the plan-cache key `dispatch.choose` stores op(a, b)'s plan under. */
static PyObject *key(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 3 || !PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "key(op: str, a, b) takes 3 arguments");
        return NULL;
    }
    if (S.tensor == NULL || !PyObject_TypeCheck(args[1], S.tensor) ||
        !PyObject_TypeCheck(args[2], S.tensor)) {
        PyErr_SetString(PyExc_TypeError, "key: both operands must be FuelTensors (and the "
                                         "fast path configured)");
        return NULL;
    }
    PyObject *parts[KEY_PARTS];
    if (key_parts(args[0], args[1], args[2], parts) < 0) return NULL;
    return pack_key(parts);
}

/* Lookups remembered by the identity of the key's parts: building and hashing the 5-tuple key
 * (two Layouts of tuples, hashed afresh each time) was a third of a small operation. The parts
 * are immutable and held here, so the same objects mean the same key; a policy's plans dict
 * only grows until it is cleared whole, and a remembered plan is the one planning that key
 * again gives (a Policy's registry and providers are fixed), so a hit serves what the dict
 * would. A dict smaller than when a slot was filled has been cleared: the slot is not used. */

/* The active policy's plan cache (a new reference), or NULL with an error set. */
static inline PyObject *active_plans(void) {
    PyObject *policy;
    if (PyContextVar_Get(S.policy_var, NULL, &policy) < 0) return NULL;
    if (policy == NULL || policy == Py_None) {
        Py_XDECREF(policy);
        /* The default policy: made once by `default_policy()`, then kept (no Python call). */
        if (S.fallback == NULL) {
            PyObject *made = PyObject_CallNoArgs(S.default_policy);
            if (made == NULL) return NULL;
            if (S.fallback == NULL) S.fallback = made;
            else Py_DECREF(made);
        }
        policy = Py_NewRef(S.fallback);
    }
    if (policy == S.last_policy) { /* a Policy is frozen: its plans dict is its for life */
        Py_DECREF(policy);
        return Py_NewRef(S.last_plans);
    }
    PyObject *plans = PyObject_GetAttr(policy, S.plans_name);
    if (plans == NULL || !PyDict_Check(plans)) {
        if (plans != NULL) PyErr_SetString(PyExc_TypeError, "a Policy's plans must be a dict");
        Py_XDECREF(plans);
        Py_DECREF(policy);
        return NULL;
    }
    PyObject *old_policy = S.last_policy, *old_plans = S.last_plans;
    S.last_policy = policy; /* both set before a release can run any code */
    S.last_plans = Py_NewRef(plans);
    Py_XDECREF(old_policy);
    Py_XDECREF(old_plans);
    return plans;
}

/* The plan cache's cell for the key of `parts[1..KEY_PARTS]` under the active policy (a new
 * reference), or NULL with no error set on a miss; `parts[0]` is scratch. */
static PyObject *cached_parts(PyObject **parts) {
    PyObject *plans = active_plans();
    if (plans == NULL) return NULL;
    parts[0] = plans;
    uint64_t h = 0;
    for (int k = 0; k <= KEY_PARTS; k++)
        h = (h ^ ((uintptr_t)parts[k] >> 4)) * 0x9E3779B97F4A7C15ull;
    Front *slot = &S.front[h >> 58 & (FRONT_SLOTS - 1)];
    int same = slot->cell != NULL && PyDict_GET_SIZE(plans) >= slot->size;
    for (int k = 0; same && k <= KEY_PARTS; k++) same = slot->parts[k] == parts[k];
    if (same) {
        Py_DECREF(plans);
        return Py_NewRef(slot->cell);
    }
    PyObject *packed = pack_key(parts + 1);
    PyObject *cell = packed == NULL ? NULL : PyDict_GetItemWithError(plans, packed);
    Py_XDECREF(packed);
    if (cell != NULL) {
        Front old = *slot; /* every field set before a release can run any code */
        for (int k = 0; k <= KEY_PARTS; k++) slot->parts[k] = Py_NewRef(parts[k]);
        slot->cell = Py_NewRef(cell);
        slot->size = PyDict_GET_SIZE(plans);
        for (int k = 0; k <= KEY_PARTS; k++) Py_XDECREF(old.parts[k]);
        Py_XDECREF(old.cell);
        Py_INCREF(cell);
    }
    Py_DECREF(plans);
    return cell;
}

/* The plan cache's cell for `key(op, a, b)` (see `cached_parts`). */
static PyObject *cached(PyObject *op, PyObject *a, PyObject *b) {
    PyObject *parts[KEY_PARTS + 1];
    if (key_parts(op, a, b, parts + 1) < 0) return NULL;
    return cached_parts(parts);
}

/* The plan-cache key of `op(x, k)` in its integer-scalar form, as parts (borrowed): the form's
 * marker, the operation, x's NumPy dtype and Layout, and the exponent k. Its only definition in
 * a compiled build: `form_key` packs it for `scalar_forms.choose`, `resolve` looks it up. The
 * marker (no operation is named so) keeps it apart from every key of two tensors, so an int
 * exponent never meets the plan of a float one. */
static inline int form_parts(PyObject *op, PyObject *x, PyObject *k, PyObject **parts) {
    PyObject *dx = SLOT(x, S.off_dtype);
    parts[0] = S.form_marker;
    parts[1] = op;
    parts[2] = dx == NULL ? NULL : SLOT(dx, S.off_dtype_np);
    parts[3] = SLOT(x, S.off_layout);
    parts[4] = k;
    if (parts[2] != NULL && parts[3] != NULL) return 0;
    PyErr_SetString(PyExc_TypeError, "plan key: the operand tensor is not initialized");
    return -1;
}

/* form_key(op, x, k): the key `scalar_forms.choose` stores op(x, k)'s integer-scalar plan under. */
static PyObject *form_key(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 3 || !PyUnicode_Check(args[0]) || S.tensor == NULL ||
        !PyObject_TypeCheck(args[1], S.tensor) || !PyLong_CheckExact(args[2])) {
        PyErr_SetString(PyExc_TypeError, "form_key(op: str, x: FuelTensor, k: int) takes 3 "
                                         "arguments (and the fast path configured)");
        return NULL;
    }
    PyObject *parts[KEY_PARTS];
    if (form_parts(args[0], args[1], args[2], parts) < 0) return NULL;
    return pack_key(parts);
}

