/* ---------------------------------------------------------------------------------------------
 * All cores at large sizes: a body over `parallel_from` elements or more runs in contiguous
 * chunks, one per thread (the caller's included), each a whole number of CHUNK_ALIGN elements,
 * so every thread runs the tiles one thread would (every op is lane by lane: the bits are the
 * same). The other chunks run on a persistent pool of workers, started by the first call that
 * splits (a process that never splits has no worker) and parked on a condition variable between
 * calls after a short bounded spin. A worker runs its chunk under the caller's floating-point
 * environment (`fegetenv` passed along: rounding mode, FTZ/DAZ, masks), with the status flags
 * cleared, and hands back the flags its chunk raised; the caller merges them into its own, so it
 * sees the flags one thread would have raised. One caller owns the pool at a time: another that
 * finds it busy runs its whole body on its own thread (the same bits). A forked child forgets
 * the parent's workers (`pthread_atfork`) and starts its own when it first splits. Workers are
 * detached and never joined: process exit ends them wherever they are parked. */



/* The cores this process may run on now (its affinity mask where the platform has one). */
static int usable_cores(void) {
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
#endif
#if defined(_SC_NPROCESSORS_ONLN)
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (online > 0) return online < MAX_THREADS ? (int)online : MAX_THREADS;
#endif
    return 1;
}

/* Elements per chunk when n elements are split `threads` (two or more) ways: whole CHUNK_ALIGN
 * blocks. No sum here overflows for any n (`threads` takes any Py_ssize_t). */
static Py_ssize_t chunk_length(Py_ssize_t n, int threads) {
    Py_ssize_t per = n / threads + (n % threads != 0), part = per % CHUNK_ALIGN;
    return part ? per + (CHUNK_ALIGN - part) : per;
}

/* How many threads a body over `n` elements runs on now: the setting, capped by the cores,
 * and by the chunks n makes (one where threads cannot be made). */
static int threads_for(Py_ssize_t n) {
#if defined(HAVE_PTHREAD)
    if (n < __atomic_load_n(&N.parallel_from, __ATOMIC_RELAXED)) return 1;
    int want = __atomic_load_n(&N.thread_setting, __ATOMIC_RELAXED), cores = usable_cores();
    int threads = want < cores ? want : cores > 1 ? cores : 1;
    if (threads == 1) return 1;
    Py_ssize_t per = chunk_length(n, threads);
    return (int)(n / per + (n % per != 0));
#else
    (void)n;
    return 1;
#endif
}

/* The thread setting under a name of fueltensor's own, exported: threadpoolctl's controller for
 * fueltensor (fueltensor/engine/threadpool.py) reads it, and tells this library from other
 * `_native` modules by it. */
__attribute__((visibility("default"))) int fueltensor_thread_setting(void) {
    return __atomic_load_n(&N.thread_setting, __ATOMIC_RELAXED);
}

#if defined(HAVE_PTHREAD)

INLINE void cpu_relax(void) {
#if defined(__SSE2__)
    _mm_pause();
#endif
}

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Poll `*word` for about POOL_SPIN_NS until it equals `value` (`equal`) or differs from it
 * (`!equal`); 1 once it does, 0 when the time is up. */
static int spin(const unsigned *word, unsigned value, int equal) {
    uint64_t until = 0;
    for (unsigned i = 0;; i++) {
        if ((__atomic_load_n(word, __ATOMIC_ACQUIRE) == value) == equal) return 1;
        if (i % 64 == 0) { /* the clock every 64 polls: a pause is 10-150 cycles by CPU */
            uint64_t now = now_ns();
            if (until == 0) until = now + POOL_SPIN_NS;
            else if (now >= until) return 0;
            else sched_yield(); /* the thread it waits for may be queued on this core */
        }
        cpu_relax();
    }
}

static void run_chunk(Chunk *k) {
    fesetenv(k->env);
    feclearexcept(FE_ALL_EXCEPT);
    k->fn(k->op, k->dtype, k->a, k->b, k->c, k->n, k->s);
    k->raised = fetestexcept(FE_ALL_EXCEPT);
    fegetexceptflag(&k->flags, FE_ALL_EXCEPT);
}

/* A worker's life: wait for a chunk (spin, then sleep), run it, count it done; never returns.
 * Signals are blocked here: they go to the interpreter's threads. */
static void *pool_worker(void *arg) {
    Worker *w = arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    for (unsigned seen = 0;; seen++) { /* the owner posts a worker's next chunk after its last */
        if (!spin(&w->posted, seen, 0)) {
            pthread_mutex_lock(&N.pool.lock);
            while (__atomic_load_n(&w->posted, __ATOMIC_ACQUIRE) == seen)
                pthread_cond_wait(&N.pool.wake, &N.pool.lock);
            pthread_mutex_unlock(&N.pool.lock);
        }
        run_chunk(w->job);
        if (__atomic_sub_fetch(&N.pool.pending, 1, __ATOMIC_ACQ_REL) == 0) {
            pthread_mutex_lock(&N.pool.lock);
            pthread_cond_signal(&N.pool.done);
            pthread_mutex_unlock(&N.pool.lock);
        }
    }
    return NULL;
}

/* In a forked child the parent's workers do not exist (and a lock may be held by a thread that
 * is gone): start over with no pool. */
static void pool_forget(void) {
    Pool fresh = POOL_INIT;
    memcpy(&N.pool, &fresh, sizeof N.pool);
}

/* Start workers (the owner calls this) until `want` run; how many run (fewer where the system
 * refuses a thread). The first start registers `pool_forget` for forked children. */
static int pool_grow(int want) {
    static int registered = 0;
    if (!registered && N.pool.workers < want)
        registered = pthread_atfork(NULL, NULL, pool_forget) == 0;
    if (!registered) return 0; /* a child could not forget workers it never had: none */
    pthread_attr_t attr;
    if (N.pool.workers < want && pthread_attr_init(&attr) == 0) {
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        while (N.pool.workers < want) {
            pthread_t id;
            if (pthread_create(&id, &attr, pool_worker, &N.pool.slot[N.pool.workers]) != 0) break;
            N.pool.workers++;
        }
        pthread_attr_destroy(&attr);
    }
    return N.pool.workers < want ? N.pool.workers : want;
}

/* Wait until every posted chunk is done (spin, then sleep on `done`). */
static void pool_wait(void) {
    if (spin(&N.pool.pending, 0, 1)) return;
    pthread_mutex_lock(&N.pool.lock);
    while (__atomic_load_n(&N.pool.pending, __ATOMIC_ACQUIRE) != 0)
        pthread_cond_wait(&N.pool.done, &N.pool.lock);
    pthread_mutex_unlock(&N.pool.lock);
}

/* Run `fn` over n elements on `threads` threads: chunk 0 here, chunks 1.. on the pool's
 * workers (here, those it has no worker for), then merge the workers' flags into this thread's.
 * When another caller owns the pool, all of it here. */
static void split_body(BodyWith fn, int op, int dtype, const char *a, const char *b, char *c,
                       Py_ssize_t n, const PowShortcut *s, int threads) {
    if (pthread_mutex_trylock(&N.pool.owner) != 0) {
        fn(op, dtype, a, b, c, n, s);
        return;
    }
    Chunk parts[MAX_THREADS];
    fenv_t env;
    fegetenv(&env);
    Py_ssize_t size = ITEMSIZE[dtype], per = chunk_length(n, threads);
    int count = 0;
    for (Py_ssize_t at = 0; at < n && count < threads; at += per, count++) {
        Py_ssize_t len = n - at < per ? n - at : per, skip = at * size;
        Chunk part = {.fn = fn, .op = op, .dtype = dtype, .a = a + skip, .b = b + skip,
                      .c = c + skip, .n = len, .s = s, .env = &env};
        parts[count] = part;
    }
    int helpers = pool_grow(count - 1);
    __atomic_store_n(&N.pool.pending, (unsigned)helpers, __ATOMIC_RELAXED);
    for (int t = 0; t < helpers; t++) {
        N.pool.slot[t].job = &parts[t + 1];
        __atomic_store_n(&N.pool.slot[t].posted, N.pool.slot[t].posted + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_lock(&N.pool.lock); /* a worker sleeping past its check wakes here */
    pthread_cond_broadcast(&N.pool.wake);
    pthread_mutex_unlock(&N.pool.lock);
    for (int t = helpers + 1; t < count; t++) /* no worker for these: here, in this thread */
        fn(op, dtype, parts[t].a, parts[t].b, parts[t].c, parts[t].n, s);
    fn(op, dtype, parts[0].a, parts[0].b, parts[0].c, parts[0].n, s);
    pool_wait();
    for (int t = 1; t <= helpers; t++)
        if (parts[t].raised) fesetexceptflag(&parts[t].flags, parts[t].raised);
    pthread_mutex_unlock(&N.pool.owner);
}
#endif

/* The body of the selected instruction set, on as many threads as `threads_for` gives: what
 * `_fast` runs, exported as the BODY capsule. */
static void selected_body(int op, int dtype, const void *a, const void *b, void *c,
                          Py_ssize_t n) {
    PowShortcut s = pow_settings();
    int threads = threads_for(n);
#if defined(HAVE_PTHREAD)
    if (threads > 1) {
        split_body(N.isa_bodies[N.isa], op, dtype, a, b, c, n, &s, threads);
        return;
    }
#endif
    (void)threads;
    N.isa_bodies[N.isa](op, dtype, a, b, c, n, &s);
}

