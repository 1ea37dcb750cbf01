/* Byte kernels that misbehave on purpose, for tests/kernels/test_compiled_providers.py
 * (FKC C ABI), and one ABI v2 probe for tests/kernels/test_shaped_kernels.py. */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

static atomic_long arrived;

/* Returns 0 once a second caller is inside this function at the same time, 2 if none came in
 * about 30 s: two threads both get 0 only if a call releases the GIL while it runs. */
int32_t probe_rendezvous(const uint8_t *lhs, size_t lhs_bytes, const uint8_t *rhs,
                         size_t rhs_bytes, uint8_t *out, size_t out_bytes) {
    (void)lhs, (void)lhs_bytes, (void)rhs, (void)rhs_bytes, (void)out, (void)out_bytes;
    long ticket = atomic_fetch_add(&arrived, 1);
    long pair_full = ticket - ticket % 2 + 2;
    struct timespec ms = {0, 1000000};
    for (int i = 0; i < 30000; i++) {
        if (atomic_load(&arrived) >= pair_full) return 0;
        nanosleep(&ms, NULL);
    }
    return 2;
}

/* probe_rendezvous as an ABI v2 ShapedKernel (its pointers opaque here): 0 once a second call
 * is inside it at the same time, else -1 saying so. It writes nothing of `out`. */
int probe_shaped_rendezvous(int op, const void *in, int n_in, const void *out,
                            const void *params, int n_params, char *error, size_t error_len) {
    (void)op, (void)in, (void)n_in, (void)out, (void)params, (void)n_params;
    if (probe_rendezvous(NULL, 0, NULL, 0, NULL, 0) == 0) return 0;
    if (error_len > 0) strncpy(error, "no second call came in", error_len - 1);
    return -1;
}

/* out = lhs + rhs over f32, but first flips the sign of lhs[0]: it writes its input. */
int32_t probe_vandal_f32(const uint8_t *lhs, size_t lhs_bytes, const uint8_t *rhs,
                         size_t rhs_bytes, uint8_t *out, size_t out_bytes) {
    if (lhs_bytes != rhs_bytes || rhs_bytes != out_bytes || lhs_bytes % 4) return 1;
    if (lhs_bytes) ((uint8_t *)lhs)[3] ^= 0x80;
    for (size_t i = 0; i < out_bytes; i += 4) {
        float a, b, r;
        memcpy(&a, lhs + i, 4);
        memcpy(&b, rhs + i, 4);
        r = a + b;
        memcpy(out + i, &r, 4);
    }
    return 0;
}

static atomic_int waiting, signalled;

/* Waits, zeroing `out`, until another thread calls probe_signal while it waits, then returns 0;
 * 2 if no signal came in about 30 s: a Python thread can signal only if the call released the
 * GIL (its ctypes call of probe_signal needs it). */
int32_t probe_wait(const uint8_t *lhs, size_t lhs_bytes, const uint8_t *rhs, size_t rhs_bytes,
                   uint8_t *out, size_t out_bytes) {
    (void)lhs, (void)lhs_bytes, (void)rhs, (void)rhs_bytes;
    memset(out, 0, out_bytes);
    atomic_store(&waiting, 1);
    struct timespec ms = {0, 1000000};
    for (int i = 0; i < 30000; i++) {
        if (atomic_exchange(&signalled, 0)) {
            atomic_store(&waiting, 0);
            return 0;
        }
        nanosleep(&ms, NULL);
    }
    atomic_store(&waiting, 0);
    return 2;
}

/* Whether a probe_wait call is waiting for its signal. */
int probe_waiting(void) { return atomic_load(&waiting); }

/* Ends the waiting probe_wait call. */
void probe_signal(void) { atomic_store(&signalled, 1); }

/* out = lhs + rhs over f32, zeroing `out` first: with `out` aliasing an input it gives a wrong
 * sum (its contract's aliasing: none allows that). */
int32_t probe_add_zero_first(const uint8_t *lhs, size_t lhs_bytes, const uint8_t *rhs,
                             size_t rhs_bytes, uint8_t *out, size_t out_bytes) {
    if (lhs_bytes != rhs_bytes || rhs_bytes != out_bytes || lhs_bytes % 4) return 1;
    memset(out, 0, out_bytes);
    for (size_t i = 0; i < out_bytes; i += 4) {
        float a, b, r;
        memcpy(&a, lhs + i, 4);
        memcpy(&b, rhs + i, 4);
        r = a + b;
        memcpy(out + i, &r, 4);
    }
    return 0;
}

/* 1 when 1 + 2^-70 in long double (the x87 unit, a 64-bit significand) rounds up: the x87
 * control word's rounding is upward (or toward +inf); 0 under round to nearest. */
int probe_long_double_rounds_up(void) {
    volatile long double one = 1.0L, tiny = 0x1p-70L;
    return one + tiny > one;
}
