/* What every part of `_native` shares: the platform's headers and switches, the tables of the
 * op and dtype codes (abi.h), the types passed between the parts, and the one state struct.
 * `_native.c` and `_shaped.c` include their parts after this header, two translation units
 * (setup.py compiles them at once); what one defines for the other is declared SHARED below. */
#ifndef FUELTENSOR_NATIVE_H
#define FUELTENSOR_NATIVE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <fenv.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
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
/* AVX-512 F, VL, BW and DQ (every AVX-512 CPU has them) beside AVX2's F16C and FMA, in 512-bit
 * vectors. Not AVX512-BF16: its converts round to nearest even whatever MXCSR says, and the
 * halves narrow by their own rounding logic on every body. GCC's generic tuning reloads an
 * operand from memory for each use in these loops (three loads a vector for the NaN rule):
 * Ice Lake's tuning keeps it in a register (instruction choice only; values are the same). */
#define HAVE_AVX512 1
#if defined(__clang__)
#define TARGET_AVX512                                                                            \
    __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,f16c,fma"),                  \
                   min_vector_width(512)))
#else
#define TARGET_AVX512                                                                            \
    __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,f16c,fma,"                   \
                          "prefer-vector-width=512,tune=icelake-server")))
#endif
/* AVX-512 BF16 for VDPBF16PS alone (native/matmul_pairs.c, the BF16 pairs order), run only
 * where the CPU reports it; GCC 9 and clang 9 know the target. */
#if (defined(__clang__) && __clang_major__ >= 9) || (!defined(__clang__) && __GNUC__ >= 9)
#define HAVE_AVX512_BF16 1
#define TARGET_AVX512_BF16                                                                       \
    __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx512bf16,avx2,f16c,fma")))
#endif
#endif

#if defined(__GNUC__)
#define INLINE static inline __attribute__((always_inline))
#else
#define INLINE static inline
#endif

#include "../abi.h"

/* The pool's op number of unary op u (`threads_for`, `Job.op`): UNARY_POOL_OP + u, past PowI. */
#define UNARY_POOL_OP (POWI_OP + 1)
/* The pool's op number of a cast (`_native.CAST_OP`), past the unary ops. */
#define CAST_POOL_OP (UNARY_POOL_OP + N_UNARY_OPS)
/* The pool's op number of a reduction (reduce.c), past the cast. */
#define REDUCE_POOL_OP (CAST_POOL_OP + 1)
/* Input elements from which a reduction splits: as f32 arithmetic (SPLIT_BYTES / 4), one add or
 * multiply an element; not yet measured on its own. */
#define SPLIT_REDUCE (1 << 16)
/* The partial accumulators of a reduction's block (reduce.c: element p of a block goes to lane
 * p mod REDUCE_LANES). */
#define REDUCE_LANES 8
/* Below this many outputs a blocked sum or product splits by blocks, so that a full reduction
 * uses every thread; from here the outputs alone are enough parts. */
#define REDUCE_FEW_OUTPUTS 64
/* The pool's op number of a matmul (matmul.c), past the reduction; it splits from SPLIT_MATMUL
 * products (a 100^3 product, tens of microseconds on one core: not yet measured on its own). */
#define MATMUL_POOL_OP (REDUCE_POOL_OP + 1)
#define SPLIT_MATMUL (1 << 20)

/* A part of a task job (a reduction's): units [at, at + len) of the job's `ctx`. Unlike the
 * elementwise bodies, its units are not elements: each is a whole result (an output, or a
 * block sum) computed the same way whichever thread runs it. */
typedef void (*TaskPart)(const void *ctx, Py_ssize_t at, Py_ssize_t len);

/* The dtypes a cast connects: the v2 float codes F32 ... F8_E5M2 (`_native.CAST_DTYPES`), with
 * the bytes of an element of each. */
#define N_CAST_DTYPES (F8_E5M2 + 1)
static const char *const CAST_NAMES[N_CAST_DTYPES] = {
    "float32", "float64", "bfloat16", "float16", "float8_e4m3fn", "float8_e5m2"};
static const Py_ssize_t CAST_ITEMSIZE[N_CAST_DTYPES] = {4, 8, 2, 2, 1, 1};

static const char *const DTYPE_NAMES[N_DTYPES] = {"float32", "float64", "bfloat16", "float16"};
/* The instruction sets a body is compiled for, in the order init tries them: each one's CPU
 * features include the one's before, so those found are a prefix (`N.isa_count` long). */
static const char *const ISA_NAMES[] = {"baseline", "avx2", "avx512"};
#define MAX_ISAS 3

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
/* Parts per thread a split call is cut into: the threads claim them one at a time, so a thread
 * that starts late (a worker still waking) or runs slower (a core shared with other work) takes
 * fewer, and the caller never waits for more than the one part a worker has in hand. */
#define PARTS_PER_THREAD 4
/* How long a worker polls for the next part after its last (yielding its core to any other
 * thread that wants it), and the caller for the parts the workers hold, before sleeping: calls
 * up to half a millisecond apart (a loop of mid-size operations with other Python work between)
 * find it awake; waking it costs a call tens of microseconds on a virtual machine
 * (benchmarks/RESULTS.md, issue 34: 50 us covered back-to-back calls only). */
#ifndef POOL_SPIN_NS
#define POOL_SPIN_NS 500000
#endif

/* A worker asleep wakes by itself after PARK_FIRST_NS, then after twice as long each time up to
 * PARK_MOST_NS, to see whether a call ran alone while it slept (`alone` in pool.c). */
#define PARK_FIRST_NS 1000000
#define PARK_MOST_NS 1000000000
/* A call over WAKE_FACTOR times its op class's threshold wakes sleeping workers (a system call)
 * as it posts its parts: long enough for one that starts late to take some. */
#define WAKE_FACTOR 8
/* A call that would run alone wakes the sleeping workers after ALONE_STREAK calls in a row ran
 * alone, each starting within POOL_SPIN_NS of the last one's end: a loop of mid-size calls pays
 * one wake-up, then finds them polling, while an isolated call never pays one. */
#define ALONE_STREAK 3

/* How long a thread keeps the count of the cores it may run on before reading its affinity mask
 * again (`usable_cores`): the system call costs a mid-size call a share of its time. */
#define AFFINITY_NS 1000000

/* A body told whether to write through streaming stores (`streams`, decided on the whole
 * call's output, of which this may be one part): what a split call runs on each part. */
typedef void (*PartBody)(int op, int dtype, const void *a, const void *b, void *c, Py_ssize_t n,
                         const PowShortcut *s, int stream);

#if defined(HAVE_PTHREAD)
/* The caller's floating-point environment as a worker takes it (`env_get`, `env_set`), and the
 * status flags a worker hands back (`flags_get`, `flags_merge`; pool.c): on x86-64, MXCSR
 * itself (rounding, flush-to-zero, denormals-are-zero, masks and flags: every float and double
 * operation here is SSE), a few cycles where fegetenv and fesetenv take hundreds; elsewhere
 * <fenv.h>'s. */
#if defined(__SSE2__)
typedef unsigned FpEnv;
typedef unsigned FpFlags;
#else
typedef fenv_t FpEnv;
typedef fexcept_t FpFlags;
#endif

/* The status flags one worker's parts of a job raised (`raised` says which; `ran`: it has
 * taken a part, under the job's environment, since the job was posted). */
typedef struct {
    FpFlags flags;
    int raised, ran;
} Raised;

/* One split call: `body` over [0, n) (or, with op POWI_OP, the PowI body `powi` with exponent
 * k), cut into parts of `per` elements (whole CHUNK_ALIGN blocks) that the caller and the
 * workers claim through the pool's ranges. Lives on the caller's stack until `done` counts
 * every part. */
typedef struct {
    PartBody body;
    PowIBody powi;
    UnaryBody unary; /* set: a unary job, its op UNARY_POOL_OP + the unary op */
    CastBody cast;   /* set: a cast job (op CAST_POOL_OP) from `dtype` to `to` */
    TaskPart task;   /* set: a task job (REDUCE_POOL_OP, MATMUL_POOL_OP) over `n` units of `ctx` */
    const void *ctx;
    Py_ssize_t work; /* a task job's input elements, which `alone` weighs instead of `n` */
    const ParamArg *params;
    int n_params, to;
    int op, dtype, stream;
    int32_t k;
    const char *a, *b;
    char *c;
    Py_ssize_t n, per;
    PowShortcut s;
    FpEnv env;     /* the caller's floating-point environment, which every part runs under */
    unsigned done; /* parts finished (atomic) */
    Raised raised[MAX_THREADS - 1]; /* per worker */
} Job;

/* One thread's range of the current job's parts: its next unclaimed part, its end and the
 * workers that may claim (RANGE in pool.c), advanced by compare and swap; a line of its own. */
typedef struct {
    _Alignas(64) uint64_t word;
} Range;

/* The pool. `owner` is held by the one caller using it; `lock` guards the sleeps on `wake`
 * (workers waiting for a part) and `done` (the owner waiting for the parts workers hold).
 * `ranges` cut the current job's parts between the caller (0) and the workers (w + 1). */
typedef struct {
    pthread_mutex_t owner, lock;
    pthread_cond_t wake, done;
    int workers;       /* started so far; read and written by the owner only */
    unsigned sleepers; /* workers asleep on `wake` (atomic) */
    unsigned demand;   /* calls that ran alone while every worker slept (atomic) */
    unsigned streak;    /* of those, the last ones in a row (owner only) */
    uint64_t alone_end; /* when the last of them ended, now_ns() (atomic) */
    int waiting;       /* the owner asleep on `done` (atomic) */
    Job *job;          /* the current job, read after a part of it is claimed */
    Range ranges[MAX_THREADS];
} Pool;

#define POOL_INIT                                                                               \
    {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,            \
     PTHREAD_COND_INITIALIZER, 0, 0, 0, 0, 0, 0, NULL, {{0}}}
#endif

/* Everything `_native` keeps between calls (the vector powf's state is pow_shortcut.c's). The
 * ISA bodies are filled at init (`isa` the selected one); the thread setting is `set_threads`'s,
 * and `parallel_from` is 0 (each op class splits from its measured threshold, `split_from`)
 * except while benchmarks/run.py measures where splitting starts to pay (`set_parallel_from`:
 * every body from there). `pretend_cores` is 0 but in a test that runs the split as on a machine
 * of that many cores (`pretend_cores`, fueltensor.kernels.threads.pretend_cores). One object,
 * defined in module.c, which both translation units read. */
typedef struct {
    BodyWith isa_bodies[MAX_ISAS];
    PartBody isa_parts[MAX_ISAS];
    PowIBody isa_powi[MAX_ISAS];
    UnaryBody isa_unary[MAX_ISAS];
    Body isa_compare[MAX_ISAS];
    TernaryBody isa_ternary[MAX_ISAS];
    NanScan isa_nan_scan[MAX_ISAS];
    CastBody isa_cast[MAX_ISAS];
    int isa_count, isa;
    int thread_setting; /* the threads a large body may use, capped by the cores */
    Py_ssize_t parallel_from;
    int pretend_cores;
#if defined(HAVE_PTHREAD)
    Pool pool;
#endif
} NativeState;

/* The bit views of a float: its bits, the float of some bits, and whether bits are a NaN. */
#define DEFINE_BITS(T, F, U, ABS, INF)                                                             \
    INLINE U T##_bits(F x) {                                                                       \
        U u;                                                                                       \
        memcpy(&u, &x, sizeof u);                                                                  \
        return u;                                                                                  \
    }                                                                                              \
    INLINE F T##_value(U u) {                                                                      \
        F x;                                                                                       \
        memcpy(&x, &u, sizeof x);                                                                  \
        return x;                                                                                  \
    }                                                                                              \
    INLINE int T##_isnan(U u) { return (u & ABS) > INF; }
DEFINE_BITS(f32, float, uint32_t, 0x7FFFFFFFu, 0x7F800000u)
DEFINE_BITS(f64, double, uint64_t, 0x7FFFFFFFFFFFFFFFull, 0x7FF0000000000000ull)

/* What one translation unit defines for the other (`_native.c`'s and `_shaped.c`'s): linked
 * inside the extension, never exported from it. */
#if defined(__GNUC__)
#define SHARED __attribute__((visibility("hidden")))
#else
#define SHARED
#endif

SHARED extern NativeState N;
/* pool.c: the monotonic clock, the threads a body of `op` splits across, and a split call. */
SHARED uint64_t now_ns(void);
SHARED int threads_for(int op, int dtype, Py_ssize_t n);
#if defined(HAVE_PTHREAD)
SHARED void split_run(Job *job, int threads);
#endif
/* calls.c: the buffer format of each version 1 dtype, a format without its byte-order prefix,
 * a buffer with its format, an operand's buffer of the wanted dtype, and the bytes a strided
 * buffer spans. */
SHARED extern const char *const FORMATS[N_DTYPES];
SHARED const char *plain_format(const char *format);
SHARED int get_buffer(PyObject *obj, Py_buffer *view, int flags, const char *what);
SHARED int get_operand(PyObject *obj, Py_buffer *view, int flags, long dtype, const char *name,
                       const char *what);
SHARED int extent(const Py_buffer *v, const char **lo, const char **hi);
/* `_shaped.c`'s Python interface and kernels, which module.c lists: the reductions (reduce_call.c,
 * argreduce.c) and the contraction (matmul_call.c, matmul_pairs.c), each `ShapedKernel`; and
 * the pairs kernel's CPU probe, run at init. */
SHARED void mm_pairs_init(void);
SHARED PyObject *reduce(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
SHARED PyObject *argreduce(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
SHARED PyObject *contract(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
SHARED PyObject *pairs_instruction(PyObject *module, PyObject *on);
SHARED int reduce_kernel(int op, const TensorArg *in, int n_in, const TensorArg *out,
                         const ParamArg *params, int n_params, char *error, size_t error_len);
SHARED int matmul_kernel(int op, const TensorArg *in, int n_in, const TensorArg *out,
                         const ParamArg *params, int n_params, char *error, size_t error_len);

#endif
