/* ---------------------------------------------------------------------------------------------
 * The pow shortcut's switch and its proof: `verify_pow` runs every instruction set's body with the
 * shortcut on over a range of f32 bit patterns x (y fixed) and compares it with powf, bit for bit. */

static PyObject *pow_shortcut(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "pow_shortcut(two, half) takes 2 arguments, got %zd", nargs);
        return NULL;
    }
    int two = PyObject_IsTrue(args[0]), half = PyObject_IsTrue(args[1]);
    if (two < 0 || half < 0) return NULL;
    PyObject *previous = Py_BuildValue("(OO)", N.pow_on_two ? Py_True : Py_False,
                                       N.pow_on_half ? Py_True : Py_False);
    __atomic_store_n(&N.pow_on_two, two, __ATOMIC_RELAXED);
    __atomic_store_n(&N.pow_on_half, half, __ATOMIC_RELAXED);
    return previous;
}

#define CHECK_CHUNK 4096

typedef struct {
    float y;
    uint64_t start, stop;
    int64_t band;
    uint64_t mismatches[MAX_ISAS]; /* per instruction set */
    int64_t first[MAX_ISAS];  /* the first mismatching x's bits, or -1 */
} Check;

/* Compare the bodies with powf over x in [start, stop), in the default rounding mode (the only
 * one the shortcut runs in), leaving the thread's floating-point environment as it was. */
static void *check_range(void *arg) {
    Check *ck = arg;
    PowShortcut s = {ck->y == 2.0f, ck->y == 0.5f, ck->band, NULL};
    float x[CHECK_CHUNK], y[CHECK_CHUNK], want[CHECK_CHUNK], got[CHECK_CHUNK];
    fenv_t env;
    fegetenv(&env);
    fesetenv(FE_DFL_ENV);
    for (int j = 0; j < CHECK_CHUNK; j++) y[j] = ck->y;
    for (int v = 0; v < N.isa_count; v++) {
        ck->mismatches[v] = 0;
        ck->first[v] = -1;
    }
    for (uint64_t u = ck->start; u < ck->stop; u += CHECK_CHUNK) {
        Py_ssize_t k = (Py_ssize_t)(ck->stop - u < CHECK_CHUNK ? ck->stop - u : CHECK_CHUNK);
        for (Py_ssize_t j = 0; j < k; j++) x[j] = f32_value((uint32_t)(u + (uint64_t)j));
        for (Py_ssize_t j = 0; j < k; j++) want[j] = powf(x[j], y[j]);
        for (int v = 0; v < N.isa_count; v++) {
            N.isa_bodies[v](POW, F32, x, y, got, k, &s);
            for (Py_ssize_t j = 0; j < k; j++) {
                if (f32_bits(got[j]) == f32_bits(want[j])) continue;
                if (ck->first[v] < 0) ck->first[v] = (int64_t)(u + (uint64_t)j);
                ck->mismatches[v]++;
            }
        }
    }
    fesetenv(&env);
    return NULL;
}

#define MAX_CHECK_THREADS 64

/* Split [start, stop) over `threads` threads (this one included) and run `check_range` on each
 * part; the results are summed into `parts[0]`. */
static void check_split(Check *parts, int threads) {
    uint64_t start = parts[0].start, stop = parts[0].stop, step = (stop - start) / (uint64_t)threads;
    for (int t = 0; t < threads; t++) {
        parts[t] = parts[0];
        parts[t].start = start + step * (uint64_t)t;
        parts[t].stop = t == threads - 1 ? stop : parts[t].start + step;
    }
#if defined(HAVE_PTHREAD)
    pthread_t ids[MAX_CHECK_THREADS];
    int started[MAX_CHECK_THREADS] = {0};
    for (int t = 1; t < threads; t++) started[t] = pthread_create(&ids[t], NULL, check_range, &parts[t]) == 0;
    for (int t = 1; t < threads; t++)
        if (!started[t]) check_range(&parts[t]);
    check_range(&parts[0]);
    for (int t = 1; t < threads; t++)
        if (started[t]) pthread_join(ids[t], NULL);
#else
    for (int t = 0; t < threads; t++) check_range(&parts[t]);
#endif
    for (int t = 1; t < threads; t++) {
        for (int v = 0; v < N.isa_count; v++) {
            if (parts[0].first[v] < 0) parts[0].first[v] = parts[t].first[v];
            parts[0].mismatches[v] += parts[t].mismatches[v];
        }
    }
}

static PyObject *verify_pow(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 5) {
        PyErr_Format(PyExc_TypeError,
                     "verify_pow(y, start, stop, band, threads) takes 5 arguments, got %zd", nargs);
        return NULL;
    }
    Check parts[MAX_CHECK_THREADS];
    double y = PyFloat_AsDouble(args[0]);
    unsigned long long start = PyLong_AsUnsignedLongLong(args[1]);
    unsigned long long stop = PyLong_AsUnsignedLongLong(args[2]);
    long long band = PyLong_AsLongLong(args[3]);
    long threads = PyLong_AsLong(args[4]);
    if (PyErr_Occurred()) return NULL;
    if ((y != 2.0 && y != 0.5) || start > stop || stop > (1ull << 32) || band < 0 ||
        threads < 1 || threads > MAX_CHECK_THREADS) {
        PyErr_Format(PyExc_ValueError,
                     "verify_pow: y must be 2.0 or 0.5, 0 <= start <= stop <= 2**32, band >= 0 "
                     "and threads in [1, %d]; got y=%R start=%llu stop=%llu band=%lld threads=%ld",
                     MAX_CHECK_THREADS, args[0], start, stop, band, threads);
        return NULL;
    }
    parts[0].y = (float)y;
    parts[0].start = start;
    parts[0].stop = stop;
    parts[0].band = band;
    if ((uint64_t)threads > stop - start) threads = 1;
    Py_BEGIN_ALLOW_THREADS check_split(parts, (int)threads);
    Py_END_ALLOW_THREADS
    PyObject *result = PyTuple_New(N.isa_count);
    for (int v = 0; result != NULL && v < N.isa_count; v++) {
        PyObject *item = Py_BuildValue("(KL)", (unsigned long long)parts[0].mismatches[v],
                                       (long long)parts[0].first[v]);
        if (item == NULL) Py_CLEAR(result);
        else PyTuple_SET_ITEM(result, v, item);
    }
    return result;
}

/* Where the powf the kernels call comes from: the C library's version, the file that holds it
 * and the implementation's place there (glibc picks one for the CPU, e.g. __powf_fma). */
static PyObject *pow_identity(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    const char *libc = "", *file = "";
    char where[64] = "";
#if defined(__GLIBC__)
    libc = gnu_get_libc_version();
#endif
#if defined(HAVE_DLADDR)
    float (*volatile fn)(float, float) = powf;
    Dl_info info;
    if (dladdr((void *)fn, &info)) {
        file = info.dli_fname ? info.dli_fname : "";
        /* The implementation picked (a local symbol, often nameless): its offset in the file. */
        snprintf(where, sizeof where, "%s+0x%tx", info.dli_sname ? info.dli_sname : "",
                 (char *)(void *)fn - (char *)info.dli_fbase);
    }
#endif
    return Py_BuildValue("{ssssss}", "libc", libc, "libm", file, "powf", where);
}

static PyObject *select_isa(PyObject *module, PyObject *name) {
    (void)module;
    const char *want = PyUnicode_AsUTF8(name);
    if (want == NULL) return NULL;
    for (int i = 0; i < N.isa_count; i++) {
        if (strcmp(want, ISA_NAMES[i]) == 0) {
            PyObject *previous = PyUnicode_FromString(ISA_NAMES[N.isa]);
            N.isa = i;
            return previous;
        }
    }
    PyErr_Format(PyExc_ValueError, "no kernel body for instruction set %R on this machine", name);
    return NULL;
}

