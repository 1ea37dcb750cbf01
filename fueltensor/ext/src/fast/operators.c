/* ---------------------------------------------------------------------------------------------
 * Operators: `x + y`, `y + x`, `x += y` and `ft.add(x, y)` as one C callable each, so the
 * common call costs no Python frame: the fast path, else dispatch's Python path. As a class
 * attribute it binds like a function (a method descriptor); its __dict__ carries the name,
 * docstring and signature the Python functions it stands for would have. */

typedef struct {
    PyObject_HEAD
    PyObject *op;       /* the contract operation's name */
    PyObject *fallback; /* dispatch's Python path: fallback(op, a, b); HOST: fallback(a, b) */
    PyObject *hooks;    /* HOST: the object whose `namespace` holds the function named op */
    PyObject *dict;
    int form;           /* FORWARD, REFLECTED, INPLACE or HOST */
    vectorcallfunc vectorcall;
} Operator;

/* The namespace function `hooks.namespace.<op>` (a new reference), or NULL with the lookup's
 * error. The namespace module is set once, when `fueltensor` is imported: it is looked up on
 * first use and kept (`Hooks` has a Python `__getattr__`, so each read of it would go through
 * Python's attribute hook). The function is read on each call, as the Python methods read it:
 * a module's attribute is its dict's entry. */
static PyObject *namespace_function(PyObject *hooks, PyObject *op) {
    static PyObject *kept;
    if (kept == NULL) {
        PyObject *ns = PyObject_GetAttr(hooks, S.namespace_name);
        if (ns == NULL) return NULL;
        if (kept == NULL) kept = ns;
        else Py_DECREF(ns);
    }
    PyObject *fn = NULL;
    if (PyModule_CheckExact(kept))
        fn = Py_XNewRef(PyDict_GetItemWithError(PyModule_GetDict(kept), op));
    if (fn == NULL && !PyErr_Occurred()) fn = PyObject_GetAttr(kept, op);
    return fn;
}

/* A HOST operator `x op y`: the namespace function `hooks.namespace.<op>(x, y)` (a compiled
 * host call) when y is a tensor or an exact Python float / int / bool, which the Python
 * operator method would pass on to it; else that method, `fallback(x, y)` (its NotImplemented
 * for operands it does not take). */
static PyObject *host_operator(const Operator *o, PyObject *const *args) {
    PyObject *x = args[0], *y = args[1];
    if (S.tensor == NULL || Py_TYPE(x) != S.tensor || (Py_TYPE(y) != S.tensor && !is_scalar(y)))
        return PyObject_Vectorcall(o->fallback, args, 2, NULL);
    PyObject *fn = namespace_function(o->hooks, o->op);
    if (fn == NULL) return NULL;
    PyObject *result = PyObject_Vectorcall(fn, args, 2, NULL);
    Py_DECREF(fn);
    return result;
}

static PyObject *operator_call(PyObject *self, PyObject *const *args, size_t nargsf,
                               PyObject *kwnames) {
    Operator *o = (Operator *)self;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != 2 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames))) {
        PyErr_Format(PyExc_TypeError, "%U() takes exactly 2 positional arguments (%zd given%s)",
                     o->op, nargs, kwnames != NULL && PyTuple_GET_SIZE(kwnames) ? ", and keywords"
                                                                                 : "");
        return NULL;
    }
    if (o->form == HOST) return host_operator(o, args);
    int swap = o->form == REFLECTED;
    PyObject *a = args[swap], *b = args[1 - swap];
    PyObject *result = o->form == INPLACE ? fast_inplace(o->op, a, b) : fast_binary(o->op, a, b);
    if (result != Py_None) return result;
    Py_DECREF(result);
    PyObject *call[3] = {o->op, a, b};
    return PyObject_Vectorcall(o->fallback, call, 3, NULL);
}

static PyObject *operator_get(PyObject *self, PyObject *obj, PyObject *type) {
    (void)type;
    if (obj == NULL || obj == Py_None) return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

static void operator_dealloc(PyObject *self) {
    Operator *o = (Operator *)self;
    Py_XDECREF(o->op);
    Py_XDECREF(o->fallback);
    Py_XDECREF(o->hooks);
    Py_XDECREF(o->dict);
    PyObject_Free(self);
}

static PyObject *operator_repr(PyObject *self) {
    PyObject *name = PyObject_GetAttrString(self, "__qualname__");
    if (name == NULL) return NULL;
    PyObject *repr = PyUnicode_FromFormat("<compiled function %S>", name);
    Py_DECREF(name);
    return repr;
}

/* Pickled by reference, as a function is: its module and qualified name. */
static PyObject *operator_reduce(PyObject *self, PyObject *unused) {
    (void)unused;
    return PyObject_GetAttrString(self, "__qualname__");
}

static PyMethodDef operator_methods[] = {
    {"__reduce__", operator_reduce, METH_NOARGS, "Pickle by module and qualified name."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef operator_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject OperatorType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "fueltensor.ext._fast.Operator",
    .tp_basicsize = sizeof(Operator),
    .tp_dealloc = operator_dealloc,
    .tp_repr = operator_repr,
    .tp_vectorcall_offset = offsetof(Operator, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_getattro = PyObject_GenericGetAttr,
    .tp_setattro = PyObject_GenericSetAttr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "A contract operation's function or operator method (see operator()).",
    .tp_methods = operator_methods,
    .tp_getset = operator_getset,
    .tp_descr_get = operator_get,
    .tp_dictoffset = offsetof(Operator, dict),
};

static PyObject *method_call(PyObject *self, PyObject *const *args, size_t nargsf,
                             PyObject *kwnames);

/* operator(op, form, fallback): the callable `(a, b) -> fallback(op, a, b)` (of `(b, a)` when
 * form is 1, reflected) that tries the fast path first, `inplace`'s when form is 2 (`a op= b`). */
static PyObject *make_operator(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if ((nargs != 3 && nargs != 4) || !PyUnicode_Check(args[0]) || !PyLong_Check(args[1]) ||
        !PyCallable_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "operator(op: str, form: int, fallback[, hooks]) takes "
                                         "3 or 4 arguments");
        return NULL;
    }
    long form = PyLong_AsLong(args[1]);
    if (form < FORWARD || form > METHOD || (form >= HOST) != (nargs == 4)) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "operator: form must be FORWARD (0), REFLECTED (1), "
                                           "INPLACE (2), HOST (3, with hooks) or METHOD (4, with "
                                           "hooks), got %ld", form);
        return NULL;
    }
    Operator *o = PyObject_New(Operator, &OperatorType);
    if (o == NULL) return NULL;
    o->op = Py_NewRef(args[0]);
    o->fallback = Py_NewRef(args[2]);
    o->hooks = nargs == 4 ? Py_NewRef(args[3]) : NULL;
    o->dict = NULL;
    o->form = (int)form;
    o->vectorcall = form == METHOD ? method_call : operator_call;
    return (PyObject *)o;
}

