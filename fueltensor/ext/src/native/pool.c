/* ---------------------------------------------------------------------------------------------
 * All cores from mid sizes: a body over its op class's threshold (`split_from`) runs in parts of
 * whole CHUNK_ALIGN blocks, PARTS_PER_THREAD per thread, which the caller and the pool's workers
 * claim one at a time, each from its own range of them first (the same parts as in the call
 * before, so a core finds them in its cache), then from the others'; every op is lane by lane,
 * so whichever thread runs a part, the bits are one thread's. The caller posts the job, claims
 * parts itself until none is left, then waits only for the parts workers hold: a worker still
 * polling joins at once, one whose core is busy leaves its parts to the caller, and one asleep
 * is woken (a system call) only by a call long enough to repay it, and never waited for. A
 * shorter call that finds every worker asleep runs alone and leaves a mark the workers look for
 * when they wake by themselves (`park`): a run of such calls is split from then on. The workers
 * are a persistent pool, started by the first call that splits (a process that never splits
 * has no worker), polling for POOL_SPIN_NS after their last part and then parked on a
 * condition variable. A worker runs its parts under the caller's floating-point
 * environment (passed along: rounding mode, FTZ/DAZ, masks; `env_get`), with the status flags
 * cleared, and hands back the flags its parts raised; the caller merges them into its own, so
 * it sees the flags one thread would have raised. One caller owns the pool at a time: another
 * that finds it busy runs its whole body on its own thread (the same bits). A forked child
 * forgets the parent's workers (`pthread_atfork`) and starts its own when it first splits.
 * Workers are detached and never joined: process exit ends them wherever they are parked. */

#if defined(HAVE_PTHREAD)
SHARED uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The cores this thread may run on now (its affinity mask where the platform has one). */
static int cores_now(void) {
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

/* `cores_now`, read again once AFFINITY_NS have passed since this thread last read it; the
 * count a test pretends instead while it does (`pretend_cores`). */
static int usable_cores(void) {
    static __thread int cores = 0;
    static __thread uint64_t read_at = 0;
    int pretend = __atomic_load_n(&N.pretend_cores, __ATOMIC_RELAXED);
    if (pretend > 0) return pretend;
    uint64_t now = now_ns();
    if (cores == 0 || now - read_at >= AFFINITY_NS) {
        cores = cores_now();
        read_at = now;
    }
    return cores;
}
#endif

/* Elements from which a body of `op` (POWI_OP: the integer-power body; CAST_POOL_OP: a cast
 * from `dtype`) on `dtype` splits: its op class's measured threshold (abi.h), or every body
 * from `set_parallel_from`'s. */
static Py_ssize_t split_from(int op, int dtype) {
    Py_ssize_t forced = __atomic_load_n(&N.parallel_from, __ATOMIC_RELAXED);
    if (forced > 0) return forced;
    if (op == POW || op == MOD) return SPLIT_POW; /* a libm call per lane: fmod as pow */
    if (op == POWI_OP) return SPLIT_POWI;
    if (op == CAST_POOL_OP) return SPLIT_CAST;
    if (op == REDUCE_POOL_OP) return SPLIT_REDUCE;
    if (op == MATMUL_POOL_OP) return SPLIT_MATMUL;
    if (op >= UNARY_POOL_OP) { /* the sign-bit ops and sqrt as arithmetic; the rest as pow */
        int u = op - UNARY_POOL_OP;
        if (u != U_ABS && u != U_NEG && u != U_SQRT) return SPLIT_POW;
    }
    if (dtype == BF16 || dtype == F16) return SPLIT_HALF;
    return SPLIT_BYTES / ITEMSIZE[dtype];
}

/* Elements (a task's units) per part when n are split over `threads` (two or more): whole
 * `align` blocks (CHUNK_ALIGN elements; 1 unit), about PARTS_PER_THREAD parts per thread. No
 * sum here overflows for any n. */
static Py_ssize_t part_length(Py_ssize_t n, int threads, Py_ssize_t align) {
    Py_ssize_t parts = (Py_ssize_t)threads * PARTS_PER_THREAD;
    Py_ssize_t per = n / parts + (n % parts != 0), rest = per % align;
    return rest ? per + (align - rest) : per;
}

/* How many threads a body of `op` on `dtype` over `n` elements runs on now: the setting, capped
 * by the cores and by the CHUNK_ALIGN blocks n makes; one below the op class's threshold. */
SHARED int threads_for(int op, int dtype, Py_ssize_t n) {
#if defined(HAVE_PTHREAD)
    if (n < split_from(op, dtype)) return 1;
    int want = __atomic_load_n(&N.thread_setting, __ATOMIC_RELAXED);
    if (want == 1) return 1;
    int cores = usable_cores(), threads = want < cores ? want : cores > 1 ? cores : 1;
    Py_ssize_t blocks = n / CHUNK_ALIGN + (n % CHUNK_ALIGN != 0);
    return blocks < threads ? (int)blocks : threads;
#else
    (void)op;
    (void)dtype;
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

/* A range's word: bits 0-15 its next unclaimed part, 16-31 the part it ends before, 32-47 the
 * workers (0 to helpers - 1) that may claim from it; the caller claims as -1. A stale word that
 * still matches names an unclaimed part of the current job, so claiming it is right. */
#define RANGE(next, end, helpers)                                                              \
    ((uint64_t)(next) | ((uint64_t)(end) << 16) | ((uint64_t)(helpers) << 32))
#define RANGE_NEXT(r) ((Py_ssize_t)((r) & 0xFFFFu))
#define RANGE_END(r) ((Py_ssize_t)(((r) >> 16) & 0xFFFFu))
#define RANGE_HELPERS(r) ((int)((r) >> 32))

INLINE int claimable(uint64_t r, int w) {
    return RANGE_NEXT(r) < RANGE_END(r) && w < RANGE_HELPERS(r);
}

/* The next part of range k for worker w (-1: the caller), or -1 when none is left to it. */
static Py_ssize_t claim_from(int k, int w) {
    uint64_t *word = &N.pool.ranges[k].word, r = __atomic_load_n(word, __ATOMIC_ACQUIRE);
    while (claimable(r, w))
        if (__atomic_compare_exchange_n(word, &r, r + 1, 1, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            return RANGE_NEXT(r);
    return -1;
}

/* The ranges of the current job: the caller's (0) and one per worker that may claim. */
INLINE int ranges_now(void) {
    return RANGE_HELPERS(__atomic_load_n(&N.pool.ranges[0].word, __ATOMIC_ACQUIRE)) + 1;
}

/* The next part of the current job for thread `self` (0: the caller, w + 1: worker w): from
 * its own range first, so that calls over the same data give each core the same part (in its
 * cache from the call before), then from the others' in turn; -1 when none is left to it. */
static Py_ssize_t claim(int self) {
    int ranges = ranges_now();
    for (int k = 0; k < ranges; k++) {
        Py_ssize_t i = claim_from((self + k) % ranges, self - 1);
        if (i >= 0) return i;
    }
    return -1;
}

INLINE void cpu_relax(void) {
#if defined(__SSE2__)
    _mm_pause();
#endif
}

/* Poll `ready(arg)` for about POOL_SPIN_NS; 1 once it holds, 0 when the time is up. */
INLINE int spin(int (*ready)(const void *, int), const void *arg, int w) {
    uint64_t until = 0;
    for (unsigned i = 0;; i++) {
        if (ready(arg, w)) return 1;
        if (i % 64 == 0) { /* the clock every 64 polls: a pause is 10-150 cycles by CPU */
            uint64_t now = now_ns();
            if (until == 0) until = now + POOL_SPIN_NS;
            else if (now >= until) return 0;
            else sched_yield(); /* the thread it waits for may be queued on this core */
        }
        cpu_relax();
    }
}

/* Whether worker w has a part to claim. */
static int work_ready(const void *unused, int w) {
    (void)unused;
    int ranges = ranges_now();
    for (int k = 0; k < ranges; k++)
        if (claimable(__atomic_load_n(&N.pool.ranges[k].word, __ATOMIC_SEQ_CST), w)) return 1;
    return 0;
}

static int job_done(const void *job, int parts) {
    return __atomic_load_n(&((const Job *)job)->done, __ATOMIC_SEQ_CST) == (unsigned)parts;
}

#if defined(__SSE2__)
INLINE void env_get(FpEnv *env) { *env = _mm_getcsr() & ~0x3Fu; }

INLINE void env_set(const FpEnv *env) { _mm_setcsr(*env); } /* its flags clear */

INLINE int flags_get(FpFlags *flags) { return (int)(*flags = _mm_getcsr() & 0x3Fu); }

INLINE void flags_merge(const FpFlags *flags, int raised) {
    (void)raised;
    _mm_setcsr(_mm_getcsr() | *flags);
}
#else
INLINE void env_get(FpEnv *env) { fegetenv(env); }

INLINE void env_set(const FpEnv *env) {
    fesetenv(env);
    feclearexcept(FE_ALL_EXCEPT);
}

INLINE int flags_get(FpFlags *flags) {
    fegetexceptflag(flags, FE_ALL_EXCEPT);
    return fetestexcept(FE_ALL_EXCEPT);
}

INLINE void flags_merge(const FpFlags *flags, int raised) { fesetexceptflag(flags, raised); }
#endif

/* Run part i of `job`. */
static void run_part(const Job *job, Py_ssize_t i) {
    Py_ssize_t at = i * job->per, len = job->n - at < job->per ? job->n - at : job->per;
    if (job->task != NULL) { /* units, not elements: the task finds its own data */
        job->task(job->ctx, at, len);
        return;
    }
    if (job->cast != NULL) { /* its input and output elements differ in size */
        job->cast(job->dtype, job->to, job->a + at * CAST_ITEMSIZE[job->dtype],
                  job->c + at * CAST_ITEMSIZE[job->to], len, job->params, job->n_params);
        return;
    }
    Py_ssize_t skip = at * ITEMSIZE[job->dtype];
    if (job->unary != NULL)
        job->unary(job->op - UNARY_POOL_OP, job->dtype, job->a + skip, job->c + skip, len);
    else if (job->op == POWI_OP) job->powi(job->dtype, job->a + skip, job->k, job->c + skip, len);
    else
        job->body(job->op, job->dtype, job->a + skip, job->b + skip, job->c + skip, len, &job->s,
                  job->stream);
}

/* Count a part of `job` (of `parts`) done; the last one wakes the caller if it sleeps. `job`
 * is not touched after: the caller may return as soon as the count is complete. */
static void finish_part(Job *job, unsigned parts) {
    if (__atomic_add_fetch(&job->done, 1, __ATOMIC_SEQ_CST) != parts) return;
    if (!__atomic_load_n(&N.pool.waiting, __ATOMIC_SEQ_CST)) return;
    pthread_mutex_lock(&N.pool.lock);
    pthread_cond_signal(&N.pool.done);
    pthread_mutex_unlock(&N.pool.lock);
}

/* Worker w runs the parts it claims: the first of a job under the job's environment with the
 * flags cleared, and after each the flags raised so far are handed back. */
static void work(int w) {
    for (Py_ssize_t i; (i = claim(w + 1)) >= 0;) {
        Job *job = N.pool.job;
        unsigned parts = (unsigned)(job->n / job->per + (job->n % job->per != 0));
        Raised *r = &job->raised[w];
        if (!r->ran) {
            env_set(&job->env);
            r->ran = 1;
        }
        run_part(job, i);
        r->raised = flags_get(&r->flags);
        finish_part(job, parts);
    }
}

/* Sleep on `wake` until worker w has a part to claim or a call has left `demand` (ran alone
 * rather than pay for waking it): woken by a long call, or by itself after PARK_FIRST_NS, then
 * twice as long each time up to PARK_MOST_NS, to look for that mark. */
static void park(int w) {
    uint64_t nap = PARK_FIRST_NS;
    pthread_mutex_lock(&N.pool.lock);
    __atomic_add_fetch(&N.pool.sleepers, 1, __ATOMIC_SEQ_CST);
    unsigned seen = __atomic_load_n(&N.pool.demand, __ATOMIC_RELAXED);
    while (!work_ready(NULL, w) && __atomic_load_n(&N.pool.demand, __ATOMIC_RELAXED) == seen) {
        struct timespec at;
        clock_gettime(CLOCK_REALTIME, &at);
        uint64_t ns = (uint64_t)at.tv_nsec + nap;
        at.tv_sec += (time_t)(ns / 1000000000u);
        at.tv_nsec = (long)(ns % 1000000000u);
        if (pthread_cond_timedwait(&N.pool.wake, &N.pool.lock, &at) != 0)
            nap = 2 * nap < PARK_MOST_NS ? 2 * nap : PARK_MOST_NS;
    }
    __atomic_sub_fetch(&N.pool.sleepers, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&N.pool.lock);
}

/* A worker's life: wait for a part it may claim (spin, then sleep), run the parts it claims;
 * never returns. Signals are blocked here: they go to the interpreter's threads. */
static void *pool_worker(void *arg) {
    int w = (int)(intptr_t)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    for (;;) {
        if (!spin(work_ready, NULL, w)) park(w);
        work(w);
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
            void *slot = (void *)(intptr_t)N.pool.workers;
            pthread_t id;
            if (pthread_create(&id, &attr, pool_worker, slot) != 0) break;
            N.pool.workers++;
        }
        pthread_attr_destroy(&attr);
    }
    return N.pool.workers < want ? N.pool.workers : want;
}

/* Wait until every part of `job` is done (spin, then sleep on `done`). */
static void pool_wait(Job *job, unsigned parts) {
    if (spin(job_done, job, (int)parts)) return;
    pthread_mutex_lock(&N.pool.lock);
    __atomic_store_n(&N.pool.waiting, 1, __ATOMIC_SEQ_CST);
    while (!job_done(job, (int)parts)) pthread_cond_wait(&N.pool.done, &N.pool.lock);
    __atomic_store_n(&N.pool.waiting, 0, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&N.pool.lock);
}

/* Make `job` the pool's current one, cut into `parts` over the caller and `helpers` workers
 * (a range of parts each), and wake the workers asleep (none is waited for). */
static void pool_post(Job *job, int helpers, unsigned parts) {
    job->done = 0;
    for (int w = 0; w < helpers; w++) job->raised[w].ran = job->raised[w].raised = 0;
    N.pool.job = job;
    unsigned each = parts / (unsigned)(helpers + 1) + (parts % (unsigned)(helpers + 1) != 0);
    for (int k = helpers; k >= 0; k--) { /* range 0, which says how many there are, last */
        unsigned start = (unsigned)k * each, end = start + each < parts ? start + each : parts;
        uint64_t word = RANGE(start < end ? start : end, end, helpers);
        __atomic_store_n(&N.pool.ranges[k].word, word, __ATOMIC_SEQ_CST);
    }
    if (__atomic_load_n(&N.pool.sleepers, __ATOMIC_SEQ_CST) == 0) return;
    pthread_mutex_lock(&N.pool.lock); /* a worker sleeping past its check wakes here */
    pthread_cond_broadcast(&N.pool.wake);
    pthread_mutex_unlock(&N.pool.lock);
}

/* Whether a call over `job` runs alone rather than wake its workers: every one is asleep, the
 * call is shorter than WAKE_FACTOR times its op class's threshold (waking a sleeping core costs
 * the caller a system call of tens of microseconds on a virtual machine, and the worker would
 * start late), and it is not the one after an ALONE_STREAK (each call starting within
 * POOL_SPIN_NS of the last one's end). It leaves `demand` for them: the first to wake by itself
 * polls for the next call. */
static int alone(const Job *job) {
    unsigned asleep = __atomic_load_n(&N.pool.sleepers, __ATOMIC_SEQ_CST);
    if (N.pool.workers == 0 || asleep < (unsigned)N.pool.workers) return 0;
    Py_ssize_t size = job->task != NULL ? job->work : job->n;
    if (size / WAKE_FACTOR >= split_from(job->op, job->dtype)) return 0;
    uint64_t gap = now_ns() - __atomic_load_n(&N.pool.alone_end, __ATOMIC_RELAXED);
    N.pool.streak = gap < POOL_SPIN_NS ? N.pool.streak + 1 : 1;
    if (N.pool.streak > ALONE_STREAK) {
        N.pool.streak = 0;
        return 0;
    }
    __atomic_add_fetch(&N.pool.demand, 1, __ATOMIC_RELAXED);
    return 1;
}

/* Run `job` (all but its parts and flags set) on up to `threads` threads: post it, claim parts
 * here until none is left, wait for the workers' parts, then merge their flags into this
 * thread's. When another caller owns the pool, no worker could be started, or the call runs
 * `alone`, all of it here. */
SHARED void split_run(Job *job, int threads) {
    int helpers = 0;
    int lone = 0;
    if (pthread_mutex_trylock(&N.pool.owner) == 0) {
        lone = alone(job);
        helpers = lone ? 0 : pool_grow(threads - 1);
        if (helpers == 0) pthread_mutex_unlock(&N.pool.owner);
    }
    if (helpers == 0) {
        job->per = job->n;
        run_part(job, 0);
        if (lone) __atomic_store_n(&N.pool.alone_end, now_ns(), __ATOMIC_RELAXED);
        return;
    }
    job->per = part_length(job->n, helpers + 1, job->task != NULL ? 1 : CHUNK_ALIGN);
    unsigned parts = (unsigned)(job->n / job->per + (job->n % job->per != 0));
    env_get(&job->env);
    pool_post(job, helpers, parts);
    for (Py_ssize_t i; (i = claim(0)) >= 0;) {
        run_part(job, i);
        finish_part(job, parts);
    }
    pool_wait(job, parts);
    for (int w = 0; w < helpers; w++)
        if (job->raised[w].raised) flags_merge(&job->raised[w].flags, job->raised[w].raised);
    pthread_mutex_unlock(&N.pool.owner);
}
#endif

/* The body of the selected instruction set, on as many threads as `threads_for` gives: what
 * `_fast` runs, exported as the BODY capsule. */
static void selected_body(int op, int dtype, const void *a, const void *b, void *c,
                          Py_ssize_t n) {
    PowShortcut s = pow_settings();
    int threads = threads_for(op, dtype, n);
#if defined(HAVE_PTHREAD)
    if (threads > 1) {
        Job job = {.body = N.isa_parts[N.isa], .op = op, .dtype = dtype,
                   .stream = streams(dtype, n), .a = a, .b = b, .c = c, .n = n, .s = s};
        split_run(&job, threads);
        return;
    }
#endif
    (void)threads;
    N.isa_bodies[N.isa](op, dtype, a, b, c, n, &s);
}
