/* ---------------------------------------------------------------------------------------------
 * Views: a basic index or a transpose of a valid view selects a subset of its elements, so the
 * result needs no bounds check; it is built as `FuelTensor._view` builds it. */

/* A view of tensor `t` with this layout (its storage and dtype), or NULL on error. */
static PyObject *make_view(PyObject *t, const Py_ssize_t *shape, const Py_ssize_t *strides,
                           int ndim, Py_ssize_t offset) {
    PyObject *sh = PyTuple_New(ndim), *st = PyTuple_New(ndim), *fields = NULL, *layout = NULL;
    if (sh == NULL || st == NULL) goto fail;
    for (int k = 0; k < ndim; k++) {
        PyObject *n = PyLong_FromSsize_t(shape[k]), *s = PyLong_FromSsize_t(strides[k]);
        if (n != NULL) PyTuple_SET_ITEM(sh, k, n);
        if (s != NULL) PyTuple_SET_ITEM(st, k, s);
        if (n == NULL || s == NULL) goto fail;
    }
    PyObject *off = PyLong_FromSsize_t(offset);
    if (off == NULL) goto fail;
    fields = PyTuple_Pack(3, sh, st, off);
    Py_DECREF(off);
    PyObject *args = fields == NULL ? NULL : PyTuple_Pack(1, fields);
    layout = args == NULL ? NULL : PyTuple_Type.tp_new(S.layout_type, args, NULL);
    Py_XDECREF(args);
    if (layout == NULL) goto fail;
    PyObject *view = new_tensor(SLOT(t, S.off_storage), layout, SLOT(t, S.off_dtype), Py_None);
    if (view == NULL) goto fail;
    Py_DECREF(layout);
    Py_DECREF(sh);
    Py_DECREF(st);
    Py_DECREF(fields);
    return view;
fail:
    Py_XDECREF(sh);
    Py_XDECREF(st);
    Py_XDECREF(fields);
    Py_XDECREF(layout);
    return NULL;
}

/* Read a tensor's layout into C arrays; 0 when it is not one this code reads (then None). */
static int read_layout(PyObject *t, Py_ssize_t *shape, Py_ssize_t *strides, int *ndim,
                       Py_ssize_t *offset) {
    PyObject *layout = SLOT(t, S.off_layout);
    if (layout == NULL || !PyTuple_Check(layout) || PyTuple_GET_SIZE(layout) != 3) return 0;
    PyObject *sh = PyTuple_GET_ITEM(layout, 0), *st = PyTuple_GET_ITEM(layout, 1);
    if (!PyTuple_CheckExact(sh) || !PyTuple_CheckExact(st)) return 0;
    Py_ssize_t nd = PyTuple_GET_SIZE(sh);
    if (nd > NPY_MAXDIMS || PyTuple_GET_SIZE(st) != nd) return 0;
    for (Py_ssize_t k = 0; k < nd; k++) {
        shape[k] = PyLong_AsSsize_t(PyTuple_GET_ITEM(sh, k));
        strides[k] = PyLong_AsSsize_t(PyTuple_GET_ITEM(st, k));
    }
    *offset = PyLong_AsSsize_t(PyTuple_GET_ITEM(layout, 2));
    *ndim = (int)nd;
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    return 1;
}

/* Whether `item` belongs to a basic index: None, `...`, a slice, or an integer that is not a
 * bool (a Python int or a NumPy integer). */
static int basic_item(PyObject *item) {
    return item == Py_None || item == Py_Ellipsis || PySlice_Check(item) ||
           (PyLong_Check(item) && !PyBool_Check(item)) || PyArray_IsScalar(item, Integer);
}

/* The stride of a slice with step `step_obj` (None: 1) over an axis of stride `s`, exactly (a
 * Python int: a step beyond the index range is not clamped, as `slice.indices` keeps it). */
static PyObject *slice_stride(PyObject *s_obj, Py_ssize_t s, int big, PyObject *step_obj,
                              Py_ssize_t step) {
    Py_ssize_t stride;
    if (step_obj == Py_None) return Py_NewRef(s_obj);
    if (!big && step != PY_SSIZE_T_MAX && step > -PY_SSIZE_T_MAX &&
        !__builtin_mul_overflow(s, step, &stride))
        return PyLong_FromSsize_t(stride);
    PyObject *exact = PyNumber_Index(step_obj);
    PyObject *made = exact == NULL ? NULL : PyNumber_Multiply(s_obj, exact);
    Py_XDECREF(exact);
    return made;
}

/* Add axis `o` of the selection: extent `n` and stride `st`, both stolen. */
static int put_axis(PyObject *shape, PyObject *strides, Py_ssize_t o, PyObject *n, PyObject *st) {
    if (n == NULL || st == NULL) {
        Py_XDECREF(n);
        Py_XDECREF(st);
        return -1;
    }
    PyTuple_SET_ITEM(shape, o, n);
    PyTuple_SET_ITEM(strides, o, st);
    return 0;
}

/* Apply one int or slice `item` to input axis `axis` (extent and stride objects `n_obj`,
 * `s_obj`): a slice adds output axis `o`; both move `*off`. 1 an axis added, 0 none, -1 error
 * (an index out of bounds raises IndexError as `Layout.select` words it). A stride beyond the
 * index range (a checked layout has one only on an axis of extent 0 or 1, where it never
 * moves the offset) is kept exactly, as a Python int. */
/* *off += i * s, checked: where the offset leaves the 64-bit index range it sets *wrapped and
 * leaves *off as it was. Only an empty view can get there (a bounds-checked layout's elements
 * all lie in its storage), and an empty view's offset means nothing: `select_layout` decides. */
static void add_offset(Py_ssize_t *off, Py_ssize_t i, Py_ssize_t s, int *wrapped) {
    Py_ssize_t moved, sum;
    if (__builtin_mul_overflow(i, s, &moved) || __builtin_add_overflow(*off, moved, &sum))
        *wrapped = 1;
    else
        *off = sum;
}

static int select_axis(PyObject *item, Py_ssize_t axis, PyObject *n_obj, PyObject *s_obj,
                       PyObject *shape, PyObject *strides, Py_ssize_t o, Py_ssize_t *off,
                       int *wrapped) {
    Py_ssize_t n = PyLong_AsSsize_t(n_obj);
    if (n == -1 && PyErr_Occurred()) return -1;
    Py_ssize_t s = PyLong_AsSsize_t(s_obj);
    int big = s == -1 && PyErr_Occurred();
    if (big) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return -1;
        PyErr_Clear();
        if (n > 1) {
            PyErr_Format(PyExc_ValueError, "stride %S of an axis of extent %zd exceeds the 64-bit "
                         "index range", s_obj, n);
            return -1;
        }
        s = 0; /* it only ever multiplies a start or index of 0 below */
    }
    if (PySlice_Check(item)) {
        Py_ssize_t start, stop, step;
        if (PySlice_Unpack(item, &start, &stop, &step) < 0) return -1;
        Py_ssize_t len = PySlice_AdjustIndices(n, &start, &stop, step);
        PyObject *st = slice_stride(s_obj, s, big, ((PySliceObject *)item)->step, step);
        if (put_axis(shape, strides, o, PyLong_FromSsize_t(len), st) < 0) return -1;
        if (len) add_offset(off, start, s, wrapped);
        return 1;
    }
    PyObject *index = PyNumber_Index(item);
    if (index == NULL) return -1;
    int overflow;
    long long i = PyLong_AsLongLongAndOverflow(index, &overflow);
    if (overflow || i < -n || i >= n) {
        PyErr_Format(PyExc_IndexError, "index %S is out of bounds for axis %zd with size %zd",
                     index, axis, n);
        Py_DECREF(index);
        return -1;
    }
    Py_DECREF(index);
    add_offset(off, (Py_ssize_t)(i < 0 ? i + n : i), s, wrapped);
    return 0;
}

/* Whether `shape` (a tuple of ints) has an extent of 0. */
static int has_empty_axis(PyObject *shape) {
    int empty = 0;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(shape); k++)
        empty |= PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, k)) == 0;
    return empty;
}

/* The Layout (shape, strides, off) (a new reference), or NULL on error. */
static PyObject *pack_layout(PyObject *shape, PyObject *strides, Py_ssize_t off) {
    PyObject *offset = PyLong_FromSsize_t(off);
    PyObject *fields = offset == NULL ? NULL : PyTuple_Pack(3, shape, strides, offset);
    Py_XDECREF(offset);
    PyObject *args = fields == NULL ? NULL : PyTuple_Pack(1, fields);
    Py_XDECREF(fields);
    PyObject *made = args == NULL ? NULL : PyTuple_Type.tp_new(S.layout_type, args, NULL);
    Py_XDECREF(args);
    return made;
}

/* Count the `...`, None and int items of a key of `count` items: 1, or 0 when one of them is
 * not a basic index item. */
static int count_items(PyObject *const *items, Py_ssize_t count, Py_ssize_t *ellipses,
                       Py_ssize_t *nones, Py_ssize_t *ints) {
    for (Py_ssize_t k = 0; k < count; k++) {
        if (!basic_item(items[k])) return 0;
        *ellipses += items[k] == Py_Ellipsis;
        *nones += items[k] == Py_None;
        *ints += items[k] != Py_None && items[k] != Py_Ellipsis && !PySlice_Check(items[k]);
    }
    return 1;
}

/* The Layout basic index `key` (ints, slices, `...` and None, alone or in a tuple) selects
 * from `layout` (a new reference); None (a new reference) when `key` is not a basic index;
 * NULL with `Layout.select`'s IndexError. The one definition of basic indexing in a compiled
 * build (`Layout.select` is the pure build's, tested equal). */
static PyObject *select_layout(PyObject *layout, PyObject *key) {
    PyObject *in_shape = PyTuple_GET_ITEM(layout, 0), *in_strides = PyTuple_GET_ITEM(layout, 1);
    Py_ssize_t ndim = PyTuple_GET_SIZE(in_shape), count = 1, consumed, nones = 0, ints = 0;
    PyObject *const *items = &key;
    if (PyTuple_CheckExact(key)) {
        items = &PyTuple_GET_ITEM(key, 0);
        count = PyTuple_GET_SIZE(key);
    }
    Py_ssize_t ellipses = 0;
    if (!count_items(items, count, &ellipses, &nones, &ints)) Py_RETURN_NONE;
    consumed = count - ellipses - nones;
    if (ellipses > 1) {
        PyErr_SetString(PyExc_IndexError, "an index can only have a single ellipsis ('...')");
        return NULL;
    }
    if (consumed > ndim) {
        PyErr_Format(PyExc_IndexError, "too many indices: %zd given for %zd dimensions", consumed,
                     ndim);
        return NULL;
    }
    Py_ssize_t out_ndim = ndim - ints + nones, axis = 0, o = 0;
    Py_ssize_t off = PyLong_AsSsize_t(PyTuple_GET_ITEM(layout, 2));
    int wrapped = 0;
    PyObject *shape = PyTuple_New(out_ndim), *strides = PyTuple_New(out_ndim), *made = NULL;
    if (shape == NULL || strides == NULL || (off == -1 && PyErr_Occurred())) goto done;
    for (Py_ssize_t k = 0; k < count + !ellipses; k++) {
        PyObject *item = k < count ? items[k] : Py_Ellipsis; /* a trailing `...` is implied */
        if (item == Py_None) {
            if (put_axis(shape, strides, o++, PyLong_FromLong(1), PyLong_FromLong(0)) < 0)
                goto done;
        } else if (item == Py_Ellipsis) {
            for (Py_ssize_t j = 0; j < ndim - consumed; j++, axis++) {
                PyObject *n = PyTuple_GET_ITEM(in_shape, axis);
                PyObject *st = PyTuple_GET_ITEM(in_strides, axis);
                put_axis(shape, strides, o++, Py_NewRef(n), Py_NewRef(st));
            }
        } else {
            int added = select_axis(item, axis, PyTuple_GET_ITEM(in_shape, axis),
                                    PyTuple_GET_ITEM(in_strides, axis), shape, strides, o, &off,
                                    &wrapped);
            if (added < 0) goto done;
            o += added;
            axis++;
        }
    }
    if (wrapped) { /* empty (see add_offset): it keeps the layout's own offset, as getitem does */
        if (!has_empty_axis(shape)) {
            PyErr_SetString(PyExc_ValueError, "a view's offset exceeds the 64-bit index range");
            goto done;
        }
        off = PyLong_AsSsize_t(PyTuple_GET_ITEM(layout, 2));
    }
    made = pack_layout(shape, strides, off);
done:
    Py_XDECREF(shape);
    Py_XDECREF(strides);
    return made;
}

/* select(layout, key): the Layout basic index `key` selects, or None when `key` is not one. */
static PyObject *export_select(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 2 || S.layout_type == NULL || Py_TYPE(args[0]) != S.layout_type) {
        PyErr_SetString(PyExc_TypeError, "select(layout: Layout, key) takes 2 arguments (and "
                                         "the fast path configured)");
        return NULL;
    }
    return select_layout(args[0], args[1]);
}

/* getitem(t, key): the view t[key] for a basic index (see `select_layout`), else None; an
 * empty view keeps the tensor's (valid) offset, as `FuelTensor._view` does. */
static PyObject *getitem(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "getitem(t, key) takes 2 arguments, got %zd", nargs);
        return NULL;
    }
    PyObject *t = args[0];
    if (S.tensor == NULL || !PyObject_TypeCheck(t, S.tensor) || !tensor_ready(t)) Py_RETURN_NONE;
    PyObject *layout = SLOT(t, S.off_layout);
    PyObject *selected = select_layout(layout, args[1]);
    if (selected == NULL || selected == Py_None) return selected;
    PyObject *shape = PyTuple_GET_ITEM(selected, 0);
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(shape); k++) {
        if (PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, k)) != 0) continue;
        PyObject *fields = PyTuple_Pack(3, shape, PyTuple_GET_ITEM(selected, 1),
                                        PyTuple_GET_ITEM(layout, 2));
        PyObject *fargs = fields == NULL ? NULL : PyTuple_Pack(1, fields);
        Py_XDECREF(fields);
        Py_SETREF(selected, fargs == NULL ? NULL : PyTuple_Type.tp_new(S.layout_type, fargs, NULL));
        Py_XDECREF(fargs);
        if (selected == NULL) return NULL;
        break;
    }
    PyObject *view = new_tensor(SLOT(t, S.off_storage), selected, SLOT(t, S.off_dtype), Py_None);
    Py_DECREF(selected);
    return view;
}

/* transpose(t): t with its axes reversed (`.T` of a tensor of at most two dimensions). */
static PyObject *transpose(PyObject *module, PyObject *t) {
    (void)module;
    if (S.tensor == NULL || Py_TYPE(t) != S.tensor || !tensor_ready(t)) Py_RETURN_NONE;
    Py_ssize_t shape[NPY_MAXDIMS], strides[NPY_MAXDIMS], offset;
    Py_ssize_t out_shape[NPY_MAXDIMS], out_strides[NPY_MAXDIMS];
    int ndim;
    if (!read_layout(t, shape, strides, &ndim, &offset)) Py_RETURN_NONE;
    for (int k = 0; k < ndim; k++) {
        out_shape[k] = shape[ndim - 1 - k];
        out_strides[k] = strides[ndim - 1 - k];
    }
    return make_view(t, out_shape, out_strides, ndim, offset);
}

