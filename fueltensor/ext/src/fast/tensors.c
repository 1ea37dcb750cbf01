/* ---------------------------------------------------------------------------------------------
 * Tensor construction: the only code that builds a FuelTensor. The Python path's constructors
 * call it as `new_tensor` (see `core.shared.new_tensor`); the slots' byte offsets come from
 * the member descriptors `bind_core` was given, never from a name. */

/* A `type` instance with these four slots (the arguments are borrowed; the tensor takes
 * references of its own), or NULL on error. */
static PyObject *make_tensor(PyTypeObject *type, PyObject *storage, PyObject *layout,
                             PyObject *dtype, PyObject *np_) {
    PyObject *t = type->tp_alloc(type, 0);
    if (t == NULL) return NULL;
    SLOT(t, S.off_storage) = Py_NewRef(storage);
    SLOT(t, S.off_layout) = Py_NewRef(layout);
    SLOT(t, S.off_dtype) = Py_NewRef(dtype);
    SLOT(t, S.off_np) = Py_NewRef(np_);
    return t;
}

/* Whether tensor `t` has its storage, layout and dtype: one made by `object.__new__` (which
 * Python code and a pickle can call) has none, and the code reading them declines it. */
static int tensor_ready(PyObject *t) {
    return SLOT(t, S.off_storage) != NULL && SLOT(t, S.off_layout) != NULL &&
           SLOT(t, S.off_dtype) != NULL;
}

/* A FuelTensor (the bound type) with these slots, the arguments borrowed. */
static PyObject *new_tensor(PyObject *storage, PyObject *layout, PyObject *dtype, PyObject *np_) {
    return make_tensor(S.tensor, storage, layout, dtype, np_);
}

/* new_tensor(cls, storage, layout, dtype, np): a `cls` with these slots, unchecked (the
 * caller has checked the layout against the storage). `cls` is the bound tensor type or a
 * subclass of it, which inherits its slots: any other type is refused (it has not the slots,
 * and writing at their offsets would corrupt it). */
static PyObject *export_new_tensor(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 5 || !PyType_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "new_tensor(cls, storage, layout, dtype, np) takes 5 "
                                         "arguments, cls a type");
        return NULL;
    }
    PyTypeObject *type = (PyTypeObject *)args[0];
    if (S.tensor == NULL) {
        PyErr_SetString(PyExc_TypeError, "new_tensor: no tensor type is bound yet "
                                         "(bind_core is called when fueltensor.core is imported)");
        return NULL;
    }
    if (!PyType_IsSubtype(type, S.tensor)) {
        PyErr_Format(PyExc_TypeError,
                     "new_tensor: %.100s has no slot of %.100s's; cls must be %.100s or a "
                     "subclass of it",
                     type->tp_name, S.tensor->tp_name, S.tensor->tp_name);
        return NULL;
    }
    return make_tensor(type, args[1], args[2], args[3], args[4]);
}
