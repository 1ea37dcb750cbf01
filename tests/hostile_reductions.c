/* F32 sums through C ABI version 2 (ShapedKernel) that break the process they run in, for
 * tests/tools/test_checked_shaped.py: each is the example's my_sum_f32 (examples/c_reduction,
 * included whole, so the honest sum is its own) followed, or replaced, by what its name says.
 *
 * Build: cc -O2 -shared -fPIC -I examples/c_reduction -o libhostile_reductions.so \
 *        tests/hostile_reductions.c
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

#include "my_sum.c"

#define SHAPED(NAME)                                                                            \
    int NAME(int op, const TensorArg *in, int n_in, const TensorArg *out,                      \
             const ParamArg *params, int n_params, char *error, size_t error_len)
#define HONEST my_sum_f32(op, in, n_in, out, params, n_params, error, error_len)

/* out's bytes (dense, float32). */
static size_t out_bytes(const TensorArg *out) {
    size_t n = sizeof(float);
    for (int k = 0; k < out->ndim; k++) n *= (size_t)out->shape[k];
    return n;
}

static void crash(void) {
    volatile uintptr_t nowhere = 16; /* volatile: no compiler sees the address */
    *(volatile char *)nowhere = 1;
}

/* Dereferences address 16. */
SHAPED(segv_sum) {
    (void)op, (void)in, (void)n_in, (void)out, (void)params, (void)n_params;
    (void)error, (void)error_len;
    crash();
    return 0;
}

/* Sums honestly, then writes 64 bytes past out's end. */
SHAPED(overrun_sum) {
    int s = HONEST;
    memset(out->data + out_bytes(out), 0, 64);
    return s;
}

/* Sums honestly, then writes 1.0f into x's first element. */
SHAPED(scribble_sum) {
    int s = HONEST;
    float one = 1.0f;
    memcpy(in->data, &one, sizeof one);
    return s;
}

/* Never returns. */
SHAPED(hang_sum) {
    (void)op, (void)in, (void)n_in, (void)out, (void)params, (void)n_params;
    (void)error, (void)error_len;
    for (;;) pause();
}

/* Ends the process. */
SHAPED(exit_sum) {
    (void)op, (void)in, (void)n_in, (void)out, (void)params, (void)n_params;
    (void)error, (void)error_len;
    exit(0);
}

/* Sums honestly, then sets flush-to-zero and denormals-are-zero in MXCSR. */
SHAPED(ftz_sum) {
    int s = HONEST;
#if defined(__x86_64__)
    _mm_setcsr(_mm_getcsr() | 0x8040);
#endif
    return s;
}

static void *crash_soon(void *unused) {
    (void)unused;
    struct timespec ms = {0, 50000000};
    nanosleep(&ms, NULL);
    crash();
    return NULL;
}

/* Sums honestly and returns, leaving a thread that segfaults 50 ms later. */
SHAPED(late_segv_sum) {
    pthread_t thread;
    if (pthread_create(&thread, NULL, crash_soon, NULL) == 0) pthread_detach(thread);
    return HONEST;
}

/* Refuses every call with a message, as the ABI asks. */
SHAPED(refuse_sum) {
    (void)op, (void)in, (void)n_in, (void)out, (void)params, (void)n_params;
    return refuse(error, error_len, "refuse_sum: no call is good enough");
}

/* Refuses with a message written 8 bytes past the error buffer's end. */
SHAPED(error_overrun_sum) {
    (void)op, (void)in, (void)n_in, (void)out, (void)params, (void)n_params;
    memset(error, 'e', error_len + 9);
    return -1;
}
