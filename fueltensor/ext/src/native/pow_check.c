/* ---------------------------------------------------------------------------------------------
 * The vector powf from Python: its switch and status, the recognition's sample and a
 * recognition against given bits (to show it refuses a powf that is not glibc's), one pass run
 * on buffers, and the proofs: every pass against powf over a range of x bit patterns (y fixed)
 * or of random pairs, on threads, bit for bit. */

static PyObject *pow_vector(PyObject *module, PyObject *on) {
    (void)module;
    int want = PyObject_IsTrue(on);
    if (want < 0) return NULL;
    return PyBool_FromLong(__atomic_exchange_n(&PV.on, want, __ATOMIC_RELAXED));
}

/* The verdict, recognising first if nobody has (waiting out another thread's recognition). */
static int pow_verdict(void) {
    pow_vector_ready();
    int verdict;
    while ((verdict = __atomic_load_n(&PV.verdict, __ATOMIC_ACQUIRE)) == PV_CHECKING) {
#if defined(HAVE_PTHREAD)
        sched_yield();
#endif
    }
    return verdict;
}

static PyObject *pow_status(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    int recognised;
    Py_BEGIN_ALLOW_THREADS recognised = pow_verdict() == PV_RECOGNISED;
    Py_END_ALLOW_THREADS
    return Py_BuildValue("(OOs)", __atomic_load_n(&PV.on, __ATOMIC_RELAXED) ? Py_True : Py_False,
                         recognised ? Py_True : Py_False, PV.reason);
}

static PyObject *pow_sample(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    PowfLanes *s = PyMem_RawMalloc(sizeof *s);
    if (s == NULL) return PyErr_NoMemory();
    powf_sample(s->x, s->y);
    PyObject *result = Py_BuildValue("(y#y#)", (const char *)s->x, (Py_ssize_t)sizeof s->x,
                                     (const char *)s->y, (Py_ssize_t)sizeof s->y);
    PyMem_RawFree(s);
    return result;
}

/* Recognise with `want` (the sample's bits from some powf) standing for this machine's powf. */
static PyObject *pow_recognise(PyObject *module, PyObject *want) {
    (void)module;
    Py_buffer view;
    if (PyObject_GetBuffer(want, &view, PyBUF_SIMPLE) < 0) return NULL;
    PowfLanes *s = NULL;
    PyObject *result = NULL;
    if (view.len != (Py_ssize_t)sizeof s->want) {
        PyErr_Format(PyExc_ValueError, "pow_recognise: want holds %zd bytes, the sample's %d "
                     "lanes take %zu", view.len, POWF_SAMPLE, sizeof s->want);
    } else if ((s = PyMem_RawMalloc(sizeof *s)) == NULL) {
        PyErr_NoMemory();
    } else {
        char why[PV_REASON];
        fenv_t env;
        powf_lanes(s);
        memcpy(s->want, view.buf, sizeof s->want);
        fegetenv(&env);
        fesetenv(FE_DFL_ENV);
        int ok = powf_recognise(s, why, sizeof why);
        fesetenv(&env);
        result = Py_BuildValue("(Os)", ok ? Py_True : Py_False, why);
    }
    PyMem_RawFree(s);
    PyBuffer_Release(&view);
    return result;
}


/* The passes, into `passes` (how many returned), where the vector powf is recognised; else -1
 * with a RuntimeError saying why not. */
static int recognised_passes(PowfPass *passes) {
    if (pow_verdict() == PV_RECOGNISED) return powf_passes(passes);
    PyErr_Format(PyExc_RuntimeError, "the vector powf does not run here: %s", PV.reason);
    return -1;
}

static PyObject *pow_tables(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    PowfPass passes[MAX_POWF_PASSES];
    PowfBlocks blocks;
    if (recognised_passes(passes) < 0) return NULL;
    powf_blocks(&blocks);
    return Py_BuildValue("(y#y#)", (const char *)blocks.log, (Py_ssize_t)sizeof blocks.log,
                         (const char *)blocks.exp, (Py_ssize_t)sizeof blocks.exp);
}

/* pow_libm_holds(log, exp): whether the libm holding powf holds both blocks byte for byte. */
static PyObject *pow_libm_holds(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    PowfBlocks blocks;
    Py_buffer log, exp;
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "pow_libm_holds(log, exp) takes 2 arguments, got %zd", nargs);
        return NULL;
    }
    if (PyObject_GetBuffer(args[0], &log, PyBUF_SIMPLE) < 0) return NULL;
    if (PyObject_GetBuffer(args[1], &exp, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&log);
        return NULL;
    }
    int held = -1;
    if (log.len != (Py_ssize_t)sizeof blocks.log || exp.len != (Py_ssize_t)sizeof blocks.exp) {
        PyErr_Format(PyExc_ValueError, "pow_libm_holds: the blocks take %zu and %zu bytes, got "
                     "%zd and %zd", sizeof blocks.log, sizeof blocks.exp, log.len, exp.len);
    } else {
        memcpy(blocks.log, log.buf, sizeof blocks.log);
        memcpy(blocks.exp, exp.buf, sizeof blocks.exp);
#ifdef HAVE_POWF_RECOGNITION
        held = powf_libm_holds(&blocks);
#else
        held = 0;
#endif
    }
    PyBuffer_Release(&log);
    PyBuffer_Release(&exp);
    return held < 0 ? NULL : PyBool_FromLong(held);
}

/* The named pass, into `chosen`; 0, or -1 with an error (not recognised here, no such pass). */
static int named_pass(PyObject *name, PowfPass *chosen) {
    PowfPass passes[MAX_POWF_PASSES];
    const char *want = PyUnicode_AsUTF8(name);
    int count = want == NULL ? -1 : recognised_passes(passes);
    for (int v = 0; v < count; v++) {
        if (strcmp(passes[v].name, want) != 0) continue;
        *chosen = passes[v];
        return 0;
    }
    if (count >= 0) PyErr_Format(PyExc_ValueError, "no vector powf pass %R on this machine", name);
    return -1;
}

/* pow_with(name, x, y, out): out = f32 pow of x, y through the named pass (for tests). */
static PyObject *pow_with(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    PowfPass chosen;
    Py_buffer x, y, out;
    if (nargs != 4) {
        PyErr_Format(PyExc_TypeError, "pow_with(name, x, y, out) takes 4 arguments, got %zd",
                     nargs);
        return NULL;
    }
    if (named_pass(args[0], &chosen) < 0) return NULL;
    if (get_operand(args[1], &x, PyBUF_ND, F32, "pow_with", "x") < 0) return NULL;
    if (get_operand(args[2], &y, PyBUF_ND, F32, "pow_with", "y") < 0) {
        PyBuffer_Release(&x);
        return NULL;
    }
    if (get_operand(args[3], &out, PyBUF_ND | PyBUF_WRITABLE, F32, "pow_with", "out") < 0) {
        PyBuffer_Release(&x);
        PyBuffer_Release(&y);
        return NULL;
    }
    if (x.len != out.len || y.len != out.len || overlap(&x, &out) || overlap(&y, &out)) {
        PyErr_SetString(PyExc_ValueError, "pow_with: x, y and out must be of one length, out "
                        "apart from both");
    } else {
        fexcept_t flags; /* leave the caller's floating-point status flags as they were */
        fegetexceptflag(&flags, FE_ALL_EXCEPT);
        f32_pow_vector(chosen.pass, x.buf, y.buf, out.buf, out.len / 4);
        fesetexceptflag(&flags, FE_ALL_EXCEPT);
    }
    release_operands(NULL, NULL, &x, &y, &out);
    return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
}

#define CHECK_CHUNK 4096

/* One thread's share of a proof: lanes [start, stop) of x bit patterns (y fixed), or of the
 * random pairs of stream `seed`; per pass the mismatches and the first mismatching x, y.
 * `flip` (0 but in tests) is XORed into powf's bits on every lane whose index is a multiple of
 * 2^16, to show that the proof finds and counts what differs. */
typedef struct {
    int pairs, count;
    uint32_t flip;
    float y;
    uint64_t seed, start, stop;
    PowfPass passes[MAX_POWF_PASSES];
    uint64_t mismatches[MAX_POWF_PASSES];
    int64_t first_x[MAX_POWF_PASSES], first_y[MAX_POWF_PASSES];
} Check;

/* Compare every pass with powf over the share, in the default floating-point environment (the
 * only one the passes run in), leaving the thread's environment as it was. */
static void *check_range(void *arg) {
    Check *ck = arg;
    float x[CHECK_CHUNK], y[CHECK_CHUNK], want[CHECK_CHUNK], got[CHECK_CHUNK];
    fenv_t env;
    fegetenv(&env);
    fesetenv(FE_DFL_ENV);
    for (uint64_t u = ck->start; u < ck->stop; u += CHECK_CHUNK) {
        Py_ssize_t k = (Py_ssize_t)(ck->stop - u < CHECK_CHUNK ? ck->stop - u : CHECK_CHUNK);
        for (Py_ssize_t j = 0; j < k; j++) {
            uint32_t xb = (uint32_t)(u + (uint64_t)j), yb = f32_bits(ck->y);
            if (ck->pairs) powf_pair(ck->seed, u + (uint64_t)j, &xb, &yb);
            x[j] = f32_value(xb);
            y[j] = f32_value(yb);
            want[j] = powf(x[j], y[j]);
            if (((u + (uint64_t)j) & 0xFFFF) == 0)
                want[j] = f32_value(f32_bits(want[j]) ^ ck->flip);
        }
        for (int v = 0; v < ck->count; v++) {
            f32_pow_vector(ck->passes[v].pass, x, y, got, k);
            for (Py_ssize_t j = 0; j < k; j++) {
                if (f32_bits(got[j]) == f32_bits(want[j])) continue;
                if (ck->first_x[v] < 0) {
                    ck->first_x[v] = f32_bits(x[j]);
                    ck->first_y[v] = f32_bits(y[j]);
                }
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
    uint64_t start = parts[0].start, stop = parts[0].stop;
    uint64_t step = (stop - start) / (uint64_t)threads;
    for (int t = 0; t < threads; t++) {
        parts[t] = parts[0];
        parts[t].start = start + step * (uint64_t)t;
        parts[t].stop = t == threads - 1 ? stop : parts[t].start + step;
    }
#if defined(HAVE_PTHREAD)
    pthread_t ids[MAX_CHECK_THREADS];
    int started[MAX_CHECK_THREADS] = {0};
    for (int t = 1; t < threads; t++)
        started[t] = pthread_create(&ids[t], NULL, check_range, &parts[t]) == 0;
    for (int t = 1; t < threads; t++)
        if (!started[t]) check_range(&parts[t]);
    check_range(&parts[0]);
    for (int t = 1; t < threads; t++)
        if (started[t]) pthread_join(ids[t], NULL);
#else
    for (int t = 0; t < threads; t++) check_range(&parts[t]);
#endif
    for (int t = 1; t < threads; t++) {
        for (int v = 0; v < parts[0].count; v++) {
            if (parts[0].first_x[v] < 0) {
                parts[0].first_x[v] = parts[t].first_x[v];
                parts[0].first_y[v] = parts[t].first_y[v];
            }
            parts[0].mismatches[v] += parts[t].mismatches[v];
        }
    }
}

/* Run the proof `parts[0]` describes (lanes [start, stop)) on `threads` threads, GIL released:
 * ((pass name, mismatches, first x bits or -1, first y bits or -1) per pass). */
static PyObject *run_check(Check *parts, long threads) {
    if ((parts[0].count = recognised_passes(parts[0].passes)) < 0) return NULL;
    for (int v = 0; v < parts[0].count; v++) {
        parts[0].mismatches[v] = 0;
        parts[0].first_x[v] = parts[0].first_y[v] = -1;
    }
    if ((uint64_t)threads > parts[0].stop - parts[0].start) threads = 1;
    Py_BEGIN_ALLOW_THREADS check_split(parts, (int)threads);
    Py_END_ALLOW_THREADS
    PyObject *result = PyTuple_New(parts[0].count);
    for (int v = 0; result != NULL && v < parts[0].count; v++) {
        PyObject *item = Py_BuildValue(
            "(sKLL)", parts[0].passes[v].name, (unsigned long long)parts[0].mismatches[v],
            (long long)parts[0].first_x[v], (long long)parts[0].first_y[v]);
        if (item == NULL) Py_CLEAR(result);
        else PyTuple_SET_ITEM(result, v, item);
    }
    return result;
}

/* The common arguments of the proofs: (first, start, stop, threads[, flip]); 0, or -1 with an
 * error. */
static int check_arguments(const char *name, PyObject *const *args, Py_ssize_t nargs,
                           uint64_t limit, Check *ck, long *threads) {
    if (nargs != 4 && nargs != 5) {
        PyErr_Format(PyExc_TypeError, "%s takes 4 or 5 arguments, got %zd", name, nargs);
        return -1;
    }
    unsigned long long start = PyLong_AsUnsignedLongLong(args[1]);
    unsigned long long stop = PyLong_AsUnsignedLongLong(args[2]);
    *threads = PyLong_AsLong(args[3]);
    ck->flip = nargs == 5 ? (uint32_t)PyLong_AsUnsignedLongMask(args[4]) : 0;
    if (PyErr_Occurred()) return -1;
    if (start > stop || stop > limit || *threads < 1 || *threads > MAX_CHECK_THREADS) {
        PyErr_Format(PyExc_ValueError, "%s: need 0 <= start <= stop <= %llu and threads in "
                     "[1, %d]; got start=%llu stop=%llu threads=%ld", name,
                     (unsigned long long)limit, MAX_CHECK_THREADS, start, stop, *threads);
        return -1;
    }
    ck->start = start;
    ck->stop = stop;
    return 0;
}

/* verify_pow(y, start, stop, threads[, flip]): every pass against powf for x = every bit
 * pattern in [start, stop) and this y. */
static PyObject *verify_pow(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    Check parts[MAX_CHECK_THREADS];
    long threads;
    if (check_arguments("verify_pow(y, start, stop, threads[, flip])", args, nargs, 1ull << 32,
                        &parts[0], &threads) < 0)
        return NULL;
    double y = PyFloat_AsDouble(args[0]);
    if (y == -1.0 && PyErr_Occurred()) return NULL;
    parts[0].pairs = 0;
    parts[0].y = (float)y;
    parts[0].seed = 0;
    return run_check(parts, threads);
}

/* verify_pow_pairs(seed, start, stop, threads[, flip]): every pass against powf on the random
 * pairs [start, stop) of stream `seed`. */
static PyObject *verify_pow_pairs(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    Check parts[MAX_CHECK_THREADS];
    long threads;
    if (check_arguments("verify_pow_pairs(seed, start, stop, threads[, flip])", args, nargs,
                        UINT64_MAX, &parts[0], &threads) < 0)
        return NULL;
    unsigned long long seed = PyLong_AsUnsignedLongLong(args[0]);
    if (PyErr_Occurred()) return NULL;
    parts[0].pairs = 1;
    parts[0].y = 0.0f;
    parts[0].seed = seed;
    return run_check(parts, threads);
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
