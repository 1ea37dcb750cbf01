/* What every part of `_native` shares: the platform's headers and switches, the tables of the
 * op and dtype codes (abi.h), the types passed between the parts, and the one state struct.
 * `_native.c` includes the parts after this header, in one translation unit. */
#ifndef FUELTENSOR_NATIVE_H
#define FUELTENSOR_NATIVE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <fenv.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__GLIBC__)
#include <gnu/libc-version.h>
#endif
#if defined(__unix__) || defined(__APPLE__)
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>
#define HAVE_DLADDR 1
#define HAVE_PTHREAD 1
#endif
#if defined(__linux__)
#include <sched.h>
#endif
#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define HAVE_AVX2_F16C 1
#define TARGET_AVX2_F16C __attribute__((target("avx2,f16c,fma")))
#endif

#if defined(__GNUC__)
#define INLINE static inline __attribute__((always_inline))
#else
#define INLINE static inline
#endif

#include "../abi.h"

static const char *const OP_NAMES[N_OPS] = {"add",     "sub",     "mul", "div",
                                            "maximum", "minimum", "pow", "rem"};
static const char *const DTYPE_NAMES[N_DTYPES] = {"float32", "float64", "bfloat16", "float16"};
static const Py_ssize_t ITEMSIZE[N_DTYPES] = {4, 8, 2, 2};
static const char *const ISA_NAMES[] = {"baseline", "avx2"};

/* Half-float elements per tile: three f32 tiles (6 KiB) stay in L1 between the passes. */
#define TILE 512
/* Lanes per f32 pow tile: a vector pass fills them and flags the lanes powf must decide. */
#define POW_TILE 512

/* An instruction set's f32 pow pass over a tile of k <= POW_TILE lanes: c from the vector powf
 * (powf_vector.c) and one bit per lane in `slow` for the lanes powf itself must decide;
 * returns how many. */
typedef Py_ssize_t (*PowPass)(const float *a, const float *b, float *c, uint8_t *slow,
                              Py_ssize_t k);

typedef struct {
    int on;       /* the vector powf may run (`pow_vector`'s switch, read once per call) */
    PowPass pass; /* the instruction set's pass (set by the kernel body), NULL: powf per lane */
} PowShortcut;

/* A body with its pow shortcut settings spelled out (the kernels pass `pow_settings()`). */
typedef void (*BodyWith)(int op, int dtype, const void *a, const void *b, void *c, Py_ssize_t n,
                         const PowShortcut *s);

/* Chunk boundaries: whole half-float and pow tiles, 64-byte aligned for every element size. */
#define CHUNK_ALIGN 512
/* How long a worker polls for its next chunk after one, and the caller for the workers'
 * chunks, before sleeping: back-to-back large calls skip the wake-up (benchmarks/RESULTS.md). */
#ifndef POOL_SPIN_NS
#define POOL_SPIN_NS 50000
#endif

#if defined(HAVE_PTHREAD)
typedef struct {
    BodyWith fn;
    int op, dtype;
    const char *a, *b;
    char *c;
    Py_ssize_t n;
    const PowShortcut *s;
    const fenv_t *env; /* the caller's floating-point environment, which the chunk runs under */
    fexcept_t flags;   /* the status flags the chunk raised, and which (`raised`) */
    int raised;
} Chunk;

/* A worker runs `job` each time `posted` (written by the pool's owner) passes the count it ran. */
typedef struct {
    Chunk *job;
    unsigned posted;
} Worker;

/* The pool. `owner` is held by the one caller using it; `lock` guards the sleeps on `wake`
 * (workers waiting for a chunk) and `done` (the owner waiting for `pending` to reach 0). */
typedef struct {
    pthread_mutex_t owner, lock;
    pthread_cond_t wake, done;
    int workers; /* started so far; read and written by the owner only */
    unsigned pending; /* chunks posted and not finished yet (atomic) */
    Worker slot[MAX_THREADS - 1];
} Pool;

#define POOL_INIT                                                                               \
    {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,            \
     PTHREAD_COND_INITIALIZER, 0, 0, {{NULL, 0}}}
#endif

/* Everything `_native` keeps between calls (the vector powf's state is pow_shortcut.c's). The
 * ISA bodies are filled at init (`isa` the selected one); the thread setting is `set_threads`'s,
 * and `parallel_from` is PARALLEL_FROM except while benchmarks/run.py measures where splitting
 * starts to pay (`set_parallel_from`). */
static struct {
    BodyWith isa_bodies[2];
    int isa_count, isa;
    int thread_setting; /* the threads a large body may use, capped by the cores */
    Py_ssize_t parallel_from;
#if defined(HAVE_PTHREAD)
    Pool pool;
#endif
} N = {{NULL, NULL}, 1, 0, 1, PARALLEL_FROM
#if defined(HAVE_PTHREAD)
         , POOL_INIT
#endif
};

#endif
