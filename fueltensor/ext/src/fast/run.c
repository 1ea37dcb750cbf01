/* ---------------------------------------------------------------------------------------------
 * Running an entry. */

/* The byte `offset` elements into a tensor's storage, when the storage is a 1-D array of at
 * least `offset + need` `itemsize`-byte elements side by side (how dispatch builds every
 * tensor); else NULL. */
static char *operand_at(PyObject *t, Py_ssize_t offset, Py_ssize_t need, Py_ssize_t itemsize) {
    PyObject *storage = SLOT(t, S.off_storage);
    if (storage == NULL || !PyArray_Check(storage)) return NULL;
    PyArrayObject *s = (PyArrayObject *)storage;
    Py_ssize_t end;
    if (PyArray_NDIM(s) != 1 || PyArray_ITEMSIZE(s) != itemsize ||
        __builtin_add_overflow(offset, need, &end) || PyArray_DIM(s, 0) < end)
        return NULL;
    if (PyArray_DIM(s, 0) > 1 && PyArray_STRIDE(s, 0) != itemsize) return NULL;
    return PyArray_BYTES(s) + offset * itemsize;
}

static int read_layout(PyObject *t, Py_ssize_t *shape, Py_ssize_t *strides, int *ndim,
                       Py_ssize_t *offset);
static int run_foreign(const Entry *e, PyObject *const *operands, char *out);

/* Operand `t` as a strided view over `*out_ndim` axes of extents `*dims` (the output's, when
 * `broadcast`: the plan's BroadcastTo; else its own): its first element `*start` and byte
 * `steps` (0 on an axis the broadcast repeats); `shape` receives its own extents. 1, or 0 when
 * the operand is not one this code reads. */
static int view_steps(PyObject *t, const Entry *e, int broadcast, Py_ssize_t *shape,
                      const char **start, Py_ssize_t *steps, int *out_ndim,
                      const Py_ssize_t **dims) {
    Py_ssize_t strides[NPY_MAXDIMS], offset;
    int ndim;
    if (!read_layout(t, shape, strides, &ndim, &offset)) return 0;
    *out_ndim = broadcast ? e->ndim : ndim;
    *dims = broadcast ? (const Py_ssize_t *)e->dims : shape;
    if (ndim > *out_ndim) return 0;
    *start = operand_at(t, offset, 0, e->in_itemsize); /* the storage holds the offset */
    if (*start == NULL) return 0;
    for (int k = 0; k < *out_ndim; k++) {
        Py_ssize_t j = k - (*out_ndim - ndim), n = (*dims)[k];
        if (j >= 0 && shape[j] == n) {
            if (n < 2) steps[k] = 0;
            else if (__builtin_mul_overflow(strides[j], e->in_itemsize, &steps[k])) return 0;
        } else if (j < 0 || shape[j] == 1) steps[k] = 0; /* an axis the broadcast repeats */
        else return 0;
    }
    return 1;
}

/* Whether a view over the output's axes with byte `steps` repeats elements (a step of 0 on an
 * axis of extent > 1): the plan's tiled Contiguize, made one block at a time (`run_tiles`). */
static int repeats(const Entry *e, const Py_ssize_t *steps) {
    for (int k = 0; k < e->ndim; k++)
        if (steps[k] == 0 && e->dims[k] > 1) return 1;
    return 0;
}

/* The plan's BroadcastTo (to the output's shape, when `broadcast`) and Contiguize of operand
 * `t`, into a fresh buffer `*temp` (to be freed with PyMem_RawFree) of `*made` elements; NULL
 * with no error set when the operand is not one this code copies. */
static const char *densify(PyObject *t, const Entry *e, int broadcast, char **temp,
                           Py_ssize_t *made) {
    Py_ssize_t shape[NPY_MAXDIMS], steps[NPY_MAXDIMS], count, bytes;
    const Py_ssize_t *dims;
    const char *start;
    int out_ndim;
    if (!view_steps(t, e, broadcast, shape, &start, steps, &out_ndim, &dims) ||
        checked_size(dims, out_ndim, e->in_itemsize, &count, &bytes) < 0 ||
        bytes > DENSIFY_MAX_BYTES)
        return NULL;
    *temp = PyMem_RawMalloc((size_t)bytes + 1);
    if (*temp == NULL) return NULL;
    if (count) S.copy_dense(*temp, start, out_ndim, dims, steps, e->in_itemsize);
    *made = count;
    return *temp;
}

/* How `run_tiles` reads operand k: its dense elements at the block's place (AS_IS), or a block
 * filled from a view over the output's axes (`start`, byte `steps`: a REPEAT operand's are all
 * 0), once when every block holds the same elements. */
typedef struct {
    int tiled;
    const char *start;
    Py_ssize_t steps[NPY_MAXDIMS];
} Tile;

/* Run a native entry block by block into `out`, its tiled operands (`tile[k].tiled`) made dense
 * one block at a time: blocks of `rows` indices of axis j and every axis after it, at most
 * REPEAT_HEAP_BYTES per operand, each a run of the output; a view that repeats over axes 0..j
 * is made dense once. 1 done, -1 with MemoryError. */
static int run_tiles(const Entry *e, const char *const src[2], const Tile tile[2], char *out) {
    Py_ssize_t isz = e->in_itemsize, want = REPEAT_HEAP_BYTES / isz, inner = 1, box[NPY_MAXDIMS];
    int j = e->ndim - 1;
    while (j > 0 && e->dims[j] <= want / inner) inner *= e->dims[j--];
    Py_ssize_t rows = want / inner < e->dims[j] ? want / inner : e->dims[j];
    char *blocks[2] = {NULL, NULL};
    int once[2] = {0, 0};
    for (int a = j + 1; a < e->ndim; a++) box[a - j] = e->dims[a];
    for (int k = 0; k < 2; k++) {
        if (!tile[k].tiled) continue;
        blocks[k] = PyMem_RawMalloc((size_t)(rows * inner * isz));
        if (blocks[k] == NULL) {
            PyMem_RawFree(blocks[0]);
            PyErr_NoMemory();
            return -1;
        }
        once[k] = 1;
        for (int a = 0; a <= j; a++) once[k] &= tile[k].steps[a] == 0;
        box[0] = rows;
        if (once[k]) S.copy_dense(blocks[k], tile[k].start, e->ndim - j, box, tile[k].steps + j, isz);
    }
    FpState flags;
    fp_save(&flags);
    PyThreadState *state = e->count >= GIL_FREE_FROM ? PyEval_SaveThread() : NULL;
    for (Py_ssize_t f = 0; f < e->count;) {
        Py_ssize_t q = f / inner, at = q % e->dims[j];
        Py_ssize_t size = e->dims[j] - at < rows ? e->dims[j] - at : rows, n = size * inner;
        const char *read[2];
        for (int k = 0; k < 2; k++) {
            read[k] = blocks[k] != NULL ? blocks[k] : src[k] + f * isz;
            if (blocks[k] == NULL || once[k]) continue;
            Py_ssize_t offset = 0, rest = q;
            for (int a = j; a >= 0; a--) { /* the block's first element, within the view */
                offset += (rest % e->dims[a]) * tile[k].steps[a];
                rest /= e->dims[a];
            }
            box[0] = size;
            S.copy_dense(blocks[k], tile[k].start + offset, e->ndim - j, box, tile[k].steps + j, isz);
        }
        (e->kind == COMPARE ? S.run_compare : S.run_body)(e->kop, e->kdtype, read[0], read[1],
                                                          out + f * e->itemsize, n);
        f += n;
    }
    if (state != NULL) PyEval_RestoreThread(state);
    fp_restore(&flags);
    PyMem_RawFree(blocks[0]);
    PyMem_RawFree(blocks[1]);
    return 1;
}

/* The blocks the `repeated` (1 or 2) operands are read from, of `*step` elements each: `stack`
 * when a call of `count` elements fits REPEAT_BYTES or the heap refuses, else a heap block of up
 * to REPEAT_HEAP_BYTES per operand (returned, to be freed with PyMem_RawFree). */
static char *repeat_blocks(Py_ssize_t count, Py_ssize_t isz, int repeated,
                           char (*stack)[REPEAT_BYTES], char *blocks[2], Py_ssize_t *step) {
    Py_ssize_t want = count < REPEAT_HEAP_BYTES / isz ? count : REPEAT_HEAP_BYTES / isz;
    char *heap = want * isz > REPEAT_BYTES ? PyMem_RawMalloc((size_t)(repeated * want * isz)) : NULL;
    if (heap == NULL && want > REPEAT_BYTES / isz) want = REPEAT_BYTES / isz;
    blocks[0] = heap == NULL ? stack[0] : heap;
    blocks[1] = heap == NULL ? stack[1] : heap + (repeated - 1) * want * isz;
    if (*step > want) *step = want;
    return heap;
}

/* Run a native entry into `out`: 1 done, 0 when an operand is not one this code reads, -1. */
static int run_native(const Entry *e, PyObject *const *operands, char *out) {
    const char *src[2];
    char *temp[2] = {NULL, NULL}, *blocks[2], *heap = NULL;
    _Alignas(64) char stack[2][REPEAT_BYTES];
    Py_ssize_t isz = e->in_itemsize, step = e->count, made;
    int status = 0;
    Tile tile[2] = {{.tiled = 0}, {.tiled = 0}};
    for (int k = 0; k < 2; k++) {
        Py_ssize_t shape[NPY_MAXDIMS];
        const Py_ssize_t *dims;
        int ndim;
        if (e->mode[k] == DENSIFY) { /* a broadcast is made dense block by block, never whole */
            if (!view_steps(operands[k], e, 1, shape, &tile[k].start, tile[k].steps, &ndim, &dims))
                goto done;
            tile[k].tiled = e->count > 0 && repeats(e, tile[k].steps);
        }
        src[k] = tile[k].tiled              ? tile[k].start
                 : e->mode[k] == DENSIFY ? densify(operands[k], e, 1, &temp[k], &made)
                                          : operand_at(operands[k], e->offset[k], e->need[k], isz);
        if (src[k] == NULL) goto done;
    }
    if (tile[0].tiled || tile[1].tiled) {
        for (int k = 0; k < 2; k++) { /* a repeated element: a view of steps 0 */
            if (e->mode[k] != REPEAT) continue;
            tile[k].tiled = 1;
            tile[k].start = src[k];
            memset(tile[k].steps, 0, sizeof tile[k].steps);
        }
        status = run_tiles(e, src, tile, out);
        goto done;
    }
    int ra = e->mode[0] == REPEAT, rb = e->mode[1] == REPEAT;
    if (ra || rb) heap = repeat_blocks(e->count, isz, ra + rb, stack, blocks, &step);
    for (int k = 0; k < 2; k++) {
        if (e->mode[k] == REPEAT) { /* Contiguize's own copy of a stride-0 row: a fill */
            Py_ssize_t repeated = 0;
            S.copy_dense(blocks[k], src[k], 1, &step, &repeated, isz);
            src[k] = blocks[k];
        }
    }
    FpState flags;
    fp_save(&flags);
    PyThreadState *state = e->count >= GIL_FREE_FROM ? PyEval_SaveThread() : NULL;
    for (Py_ssize_t i = 0; i < e->count; i += step) {
        Py_ssize_t n = e->count - i < step ? e->count - i : step, at = i * isz;
        (e->kind == COMPARE ? S.run_compare : S.run_body)(e->kop, e->kdtype, src[0] + (ra ? 0 : at),
                                                          src[1] + (rb ? 0 : at),
                                                          out + i * e->itemsize, n);
    }
    if (state != NULL) PyEval_RestoreThread(state);
    fp_restore(&flags);
    status = 1;
done:
    PyMem_RawFree(heap);
    PyMem_RawFree(temp[0]);
    PyMem_RawFree(temp[1]);
    return status;
}

/* Run a POWI entry into `out`: x ** k on its one operand (dense, or the plan's Contiguize), as
 * `run_native` does. 1 done, 0 when the operand is not one this code reads, -1 on error. */
static int run_powi_entry(const Entry *e, PyObject *x, char *out) {
    char *temp = NULL;
    Py_ssize_t made;
    const char *src = e->mode[0] == DENSIFY ? densify(x, e, 1, &temp, &made)
                                            : operand_at(x, e->offset[0], e->need[0], e->itemsize);
    if (src == NULL) return 0;
    FpState flags;
    fp_save(&flags);
    PyThreadState *state = e->count >= GIL_FREE_FROM ? PyEval_SaveThread() : NULL;
    S.run_powi(e->kdtype, src, e->exponent, out, e->count);
    if (state != NULL) PyEval_RestoreThread(state);
    fp_restore(&flags);
    PyMem_RawFree(temp);
    return 1;
}

/* A read-only view of the output's shape with byte `steps` at `data`, kept alive by `owner`
 * (NULL: a temporary the caller frees after the view). */
static PyObject *strided_view(const Entry *e, const char *data, const npy_intp *steps,
                              PyObject *owner) {
    Py_INCREF(e->np_dtype);
    PyObject *view = PyArray_NewFromDescr(&PyArray_Type, (PyArray_Descr *)e->np_dtype, e->ndim,
                                          e->dims, (npy_intp *)steps, (char *)data, 0, NULL);
    if (view != NULL && owner != NULL &&
        PyArray_SetBaseObject((PyArrayObject *)view, Py_NewRef(owner)) < 0)
        Py_CLEAR(view);
    return view;
}

/* Run an oracle entry into `out` (`data` its dense bytes): the oracle's ufunc call on its
 * broadcast views, silenced as np.errstate(all="ignore") silences it, then, where the ufunc
 * made a NaN, the oracle's own NaN rule (`e->redo`, `reference.nans`, which the Python path
 * runs after the same call). 1 done, 0 when an operand is not one this code reads, -1 on error.
 */
static int run_oracle(const Entry *e, PyObject *const *operands, PyObject *out, const char *data) {
    PyObject *args[3] = {NULL, NULL, out};
    char *temp[2] = {NULL, NULL};
    Py_ssize_t made;
    int status = -1;
    for (int k = 0; k < 2; k++) {
        const char *src = e->mode[k] == DENSIFY
                              ? densify(operands[k], e, 0, &temp[k], &made)
                              : operand_at(operands[k], e->offset[k], e->need[k], e->itemsize);
        if (src == NULL) {
            status = 0;
            goto done;
        }
        PyObject *owner = temp[k] == NULL ? SLOT(operands[k], S.off_storage) : NULL;
        args[k] = strided_view(e, src, e->steps[k], owner);
        if (args[k] == NULL) goto done;
    }
    PyObject *token = PyContextVar_Set(S.errstate_var, S.errstate_ignore);
    if (token == NULL) goto done;
    PyObject *got = PyObject_Vectorcall(e->ufunc, args, 2, S.out_kwnames);
    int reset = PyContextVar_Reset(S.errstate_var, token);
    Py_DECREF(token);
    if (got != NULL && reset == 0 && S.nan_scan(data, e->count, e->itemsize, e->nan_above)) {
        Py_SETREF(got, PyObject_Vectorcall(e->redo, args, 3, NULL));
    }
    Py_XDECREF(got);
    if (got != NULL && reset == 0) status = 1;
done:
    Py_XDECREF(args[0]);
    Py_XDECREF(args[1]);
    PyMem_RawFree(temp[0]);
    PyMem_RawFree(temp[1]);
    return status;
}

/* What a fast call runs: its operands (a Python scalar as its cached 0-d tensor), the plan
 * cache's cell and the cell's entry. `operands`, `scalar` and `cell` are released by `release`. */
typedef struct {
    PyObject *operands[2];
    PyObject *scalar;  /* the 0-d tensor standing for a Python scalar operand, or NULL */
    PyObject *cell;    /* the plan cache's (plan, planning, entry), or NULL */
    PyObject *cast[2]; /* an operand after its Cast step, or NULL */
    Entry *e;
} Call;

static void release(Call *c) {
    Py_CLEAR(c->scalar);
    Py_CLEAR(c->cell);
    Py_CLEAR(c->cast[0]);
    Py_CLEAR(c->cast[1]);
}

/* The Cast step `cast` (see Entry) of operand `t`: the call `execute.prepare` makes,
 * `t._array.astype(dtype, order="C")`, under the caller's error state as there, wrapped as
 * the dense tensor `FuelTensor._from_dense` makes of it (a new reference), or NULL on error. */
static PyObject *cast_operand(PyObject *t, PyObject *cast) {
    PyObject *array = PyObject_CallOneArg(S.array_of, t);
    if (array == NULL) return NULL;
    PyObject *args[3] = {array, PyTuple_GET_ITEM(cast, 0), S.order_c};
    PyObject *dense = PyObject_VectorcallMethod(S.astype_name, args, 2, S.order_kwnames);
    Py_DECREF(array);
    if (dense == NULL) return NULL;
    PyObject *flat = NULL, *made = NULL;
    if (!PyArray_Check(dense) || !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)dense)) {
        PyErr_SetString(PyExc_TypeError, "astype(order=\"C\") gave no C-contiguous array");
        goto done;
    }
    flat = PyArray_Ravel((PyArrayObject *)dense, NPY_CORDER);
    if (flat != NULL)
        made = new_tensor(flat, PyTuple_GET_ITEM(cast, 1), PyTuple_GET_ITEM(cast, 2), dense);
done:
    Py_XDECREF(flat);
    Py_DECREF(dense);
    return made;
}

/* Whether `value` is an exponent of an integer-scalar form: an exact Python int or a NumPy
 * integer scalar (`scalar_forms.integer_scalar`; never a bool). */
static int is_integer(PyObject *value) {
    return PyLong_CheckExact(value) || PyArray_IsScalar(value, Integer);
}

/* `resolve`'s verdict on the plan cache's cell `c->cell` (NULL: a miss, or an error set): 1 with
 * `c->e` set when the cell holds an entry, else 0 (-1 on error), `c` released. */
static int found_entry(Call *c) {
    if (c->cell == NULL) {
        release(c);
        return PyErr_Occurred() ? -1 : 0;
    }
    PyObject *item = PyTuple_Check(c->cell) && PyTuple_GET_SIZE(c->cell) == 3
                         ? PyTuple_GET_ITEM(c->cell, 2)
                         : Py_None;
    if (Py_TYPE(item) != &EntryType) {
        release(c);
        return 0;
    }
    c->e = (Entry *)item;
    return 1;
}

/* Find what the fast path runs for `op(a, b)`: 1 found (`c->e` set), 0 when this call is not
 * one the fast path serves (an operand other than a FuelTensor or an exact Python float / int
 * / bool beside one, or a NumPy integer exponent of an integer-scalar form; no cached plan
 * with an entry; a trace or observer active), -1 on error (`_scalar`'s OverflowError for an
 * int the dtype cannot hold). An integer-scalar form (`x ** 3`) is looked up by `form_parts`. */
static int resolve(PyObject *op, PyObject *a, PyObject *b, Call *c) {
    c->operands[0] = a;
    c->operands[1] = b;
    c->scalar = c->cell = c->cast[0] = c->cast[1] = NULL;
    c->e = NULL;
    if (S.tensor == NULL) return 0;
    int ta = Py_TYPE(a) == S.tensor, tb = Py_TYPE(b) == S.tensor;
    int form = ta && is_integer(b) ? PySet_Contains(S.integer_forms, op) : 0;
    if (form < 0) return -1;
    if (!form && !(ta && tb) && !(ta && is_scalar(b)) && !(tb && is_scalar(a))) return 0;
    int watched = busy(S.trace_var);
    if (watched == 0) watched = busy(S.observers_var);
    if (watched != 0) return watched < 0 ? -1 : 0;
    if (form) { /* x ** 3: its integer-scalar form's plan (`scalar_forms`), cached in Python */
        PyObject *parts[KEY_PARTS + 1];
        if (form_parts(op, a, b, parts + 1) < 0) return -1;
        c->cell = cached_parts(parts);
        return found_entry(c);
    }
    if (!(ta && tb)) {
        int k = ta ? 1 : 0;
        c->scalar = scalar_operand(c->operands[k], c->operands[1 - k]);
        if (c->scalar == NULL) return -1;
        if (Py_TYPE(c->scalar) != S.tensor) {
            Py_CLEAR(c->scalar);
            return 0;
        }
        c->operands[k] = c->scalar;
    }
    c->cell = cached(op, c->operands[0], c->operands[1]);
    return found_entry(c);
}

/* Run the found entry's Cast steps (once: a call that ran them keeps their results). */
static int cast_operands(Call *c) {
    const Entry *e = c->e;
    for (int k = 0; k < 2; k++) {
        if (e->cast[k] == NULL || c->cast[k] != NULL) continue;
        c->cast[k] = cast_operand(c->operands[k], e->cast[k]);
        if (c->cast[k] == NULL) return -1;
        c->operands[k] = c->cast[k];
    }
    return 0;
}

/* Run the found entry (its Cast steps run) into `out`, the dense bytes of the output, which
 * `view` shows at the output's shape (the oracle writes through it): 1 done, 0 when an operand
 * is not one this code reads, -1 on error. */
static int run_entry(Call *c, char *out, PyObject *view) {
    const Entry *e = c->e;
    return e->kind == ORACLE    ? run_oracle(e, c->operands, view, out)
           : e->kind == POWI    ? run_powi_entry(e, c->operands[0], out)
           : e->kind == FOREIGN ? run_foreign(e, c->operands, out)
                                : run_native(e, c->operands, out); /* NATIVE, COMPARE */
}

/* Whether the found entry (its Cast steps run) may write straight into `out`, an in-place
 * call's dense target of the output's shape, with the bits of a fresh output: every operand
 * the kernel reads as is either lies apart from `out` or is exactly its elements (a body reads
 * each lane before storing it; `_native`'s BODY and POWI take c equal to an operand). An
 * operand read through a copy (Contiguize, a repeated element, a Cast) is apart, but not a
 * broadcast made dense block by block (`run_tiles`), which reads its source as `out` fills. An
 * oracle never does: its NaN rule re-reads the operands after the ufunc wrote `out`. Nor does a
 * comparison (bools over wider operands: no operator makes one in place), nor a
 * compiled provider's kernel, whose contract promises nothing of an `out` that aliases an
 * input (the Python path hands it a fresh one). */
static int writes_in_place(const Call *c, const char *out) {
    const Entry *e = c->e;
    if (e->kind == FOREIGN || e->kind == ORACLE || e->kind == COMPARE) return 0;
    Py_ssize_t bytes = e->count * e->itemsize;
    for (int k = 0; k < (e->kind == POWI ? 1 : 2); k++) {
        Py_ssize_t shape[NPY_MAXDIMS], steps[NPY_MAXDIMS]; /* a broadcast made dense block */
        const Py_ssize_t *dims; /* by block reads its source as `out` is written */
        const char *start;
        int ndim, tiled = e->mode[k] == DENSIFY && e->kind == NATIVE;
        if (tiled && (!view_steps(c->operands[k], e, 1, shape, &start, steps, &ndim, &dims) ||
                      repeats(e, steps)))
            return 0;
        if (e->mode[k] != AS_IS) continue;
        const char *src = operand_at(c->operands[k], e->offset[k], e->need[k], e->itemsize);
        if (src == NULL) return 0;
        uintptr_t lo = (uintptr_t)src, at = (uintptr_t)out;
        if (lo == at && e->need[k] == e->count) continue;
        uintptr_t end = lo + (uintptr_t)(e->need[k] * e->itemsize);
        int apart = end <= at || at + (uintptr_t)bytes <= lo;
        if (!apart) return 0;
    }
    return 1;
}

/* Run the found entry into a fresh output (`*storage`, `*view`, as `fresh_output` makes them),
 * its operands' Cast steps first: 1 done, 0 when an operand is not one this code reads (the
 * Python path runs), -1 on error. */
static int compute(Call *c, PyArrayObject **storage, PyObject **view) {
    const Entry *e = c->e;
    if (cast_operands(c) < 0 || fresh_output(e, storage, view) < 0) return -1;
    int ran = run_entry(c, PyArray_BYTES(*storage), *view);
    if (ran <= 0) {
        Py_CLEAR(*storage);
        Py_CLEAR(*view);
    }
    return ran;
}

/* binary(op, a, b): the FuelTensor `dispatch.binary(op, a, b)` returns, or None when this
 * call is not one the fast path serves (see `resolve`). */
static PyObject *fast_binary(PyObject *op, PyObject *a, PyObject *b) {
    Call c;
    int found = resolve(op, a, b, &c);
    if (found <= 0) return found < 0 ? NULL : Py_NewRef(Py_None);
    PyArrayObject *storage = NULL;
    PyObject *view = NULL, *result = NULL;
    int ran = compute(&c, &storage, &view);
    if (ran <= 0) {
        release(&c);
        return ran < 0 ? NULL : Py_NewRef(Py_None);
    }
    result = new_tensor((PyObject *)storage, c.e->out_layout, c.e->out_dtype, view);
    Py_DECREF(storage);
    Py_DECREF(view);
    release(&c);
    return result;
}

