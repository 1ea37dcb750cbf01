/* F32 add byte kernels (FKC C ABI) that break the process they run in, for
 * tests/tools/test_checked_runs.py and tests/engine/test_foreign_calls.py: each does what its
 * name says, most of them after computing out = lhs + rhs honestly.
 *
 * Build: cc -O2 -shared -fPIC -o libhostile.so hostile_kernels.c -lm
 */
#define _POSIX_C_SOURCE 200809L
#include <fenv.h>
#include <pthread.h>
#include <semaphore.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

#define KERNEL(NAME) \
    int32_t NAME(const uint8_t *lhs, size_t lb, const uint8_t *rhs, size_t rb, uint8_t *out, size_t ob)

/* Set by doomed_f32: the thread it left waits for the next call of `add` to crash the process. */
static volatile int doomed;
static sem_t next_call;

/* out = lhs + rhs; 1 when the lengths are not three equal runs of whole f32s. After
 * doomed_f32 ran in the process, the call wakes its thread and waits for the crash. */
static int32_t add(const uint8_t *lhs, size_t lb, const uint8_t *rhs, size_t rb, uint8_t *out,
                   size_t ob) {
    if (doomed) {
        sem_post(&next_call);
        for (;;) pause();
    }
    if (lb != rb || rb != ob || lb % 4) return 1;
    const float *a = (const float *)lhs, *b = (const float *)rhs;
    float *o = (float *)out;
    for (size_t i = 0; i < ob / 4; i++) o[i] = a[i] + b[i];
    return 0;
}

KERNEL(honest_f32) { return add(lhs, lb, rhs, rb, out, ob); }

/* Writes 12345 over every element of lhs and out: the reproducer. */
KERNEL(scribble_f32) {
    (void)rhs, (void)rb;
    float v = 12345.0f;
    for (size_t i = 0; i + 4 <= lb; i += 4) memcpy((uint8_t *)lhs + i, &v, 4);
    for (size_t i = 0; i + 4 <= ob; i += 4) memcpy(out + i, &v, 4);
    return 0;
}

KERNEL(overrun_f32) {
    int32_t s = add(lhs, lb, rhs, rb, out, ob);
    memset(out + ob, 0x77, 64);
    return s;
}

KERNEL(underrun_f32) {
    int32_t s = add(lhs, lb, rhs, rb, out, ob);
    memset(out - 8, 0x77, 8);
    return s;
}

/* Writes lhs's own bytes back over it, then computes honestly: a write no digest can see. */
KERNEL(rewrite_f32) {
    volatile uint8_t *bytes = (volatile uint8_t *)lhs;
    for (size_t i = 0; i < lb; i++) bytes[i] = bytes[i];
    return add(lhs, lb, rhs, rb, out, ob);
}

/* Writes three pages past the end of out: past any zone around it. */
KERNEL(wild_f32) {
    int32_t s = add(lhs, lb, rhs, rb, out, ob);
    memset(out + ob + 3 * 4096, 0x77, 16);
    return s;
}

KERNEL(segv_f32) {
    (void)lhs, (void)lb, (void)rhs, (void)rb, (void)out, (void)ob;
    volatile uint8_t *nowhere = (uint8_t *)16;
    *nowhere = 1;
    return 0;
}

KERNEL(abort_f32) {
    (void)lhs, (void)lb, (void)rhs, (void)rb, (void)out, (void)ob;
    fputs("hostile_kernels: abort_f32 gives up\n", stderr);
    abort();
}

KERNEL(exit_f32) {
    (void)lhs, (void)lb, (void)rhs, (void)rb, (void)out, (void)ob;
    exit(0);
}

KERNEL(hang_f32) {
    (void)lhs, (void)lb, (void)rhs, (void)rb, (void)out, (void)ob;
    for (;;) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
}

/* Prints 64 KiB to stdout and to stderr, then computes honestly. */
KERNEL(chatty_f32) {
    for (int i = 0; i < 1024; i++) {
        printf("chatty_f32 says a line of sixty-four bytes to stdout, ......%04d\n", i);
        fprintf(stderr, "chatty_f32 says a line of sixty-four bytes to stderr, .....%04d\n", i);
    }
    fflush(stdout);
    return add(lhs, lb, rhs, rb, out, ob);
}

/* Closes every descriptor above stderr, then computes honestly. */
KERNEL(closefds_f32) {
    for (int fd = 3; fd < 1024; fd++) close(fd);
    return add(lhs, lb, rhs, rb, out, ob);
}

/* Reads 128 bytes past the end of lhs. */
KERNEL(overread_f32) {
    int32_t s = add(lhs, lb, rhs, rb, out, ob);
    volatile const uint8_t *far = lhs + lb + 128;
    out[0] ^= (uint8_t)(*far & 0);
    return s;
}

/* Returns without writing out. */
KERNEL(untouched_f32) {
    (void)lhs, (void)lb, (void)rhs, (void)rb, (void)out, (void)ob;
    return 0;
}

/* Reserves 1 GiB blocks (never touched) until malloc refuses or 64 GiB are reserved: returns
 * 9 when refused (an address space limit), else computes honestly. */
KERNEL(hog_f32) {
    void *blocks[64];
    int got = 0;
    while (got < 64 && (blocks[got] = malloc((size_t)1 << 30)) != NULL) got++;
    for (int k = 0; k < got; k++) free(blocks[k]);
    return got < 64 ? 9 : add(lhs, lb, rhs, rb, out, ob);
}

KERNEL(status_f32) {
    (void)lhs, (void)lb, (void)rhs, (void)rb, (void)out, (void)ob;
    return 7;
}

/* out = lhs + rhs without `add` (which doomed_f32's thread watches). */
static int32_t plain_add(const uint8_t *lhs, size_t lb, const uint8_t *rhs, size_t rb,
                         uint8_t *out, size_t ob) {
    if (lb != rb || rb != ob || lb % 4) return 1;
    const float *a = (const float *)lhs, *b = (const float *)rhs;
    float *o = (float *)out;
    for (size_t i = 0; i < ob / 4; i++) o[i] = a[i] + b[i];
    return 0;
}

/* Computes honestly, then sets flush-to-zero and denormals-are-zero in MXCSR and returns. */
KERNEL(ftz_f32) {
    int32_t s = add(lhs, lb, rhs, rb, out, ob);
#if defined(__x86_64__)
    _mm_setcsr(_mm_getcsr() | 0x8040);
#endif
    return s;
}

/* Sets the rounding mode to upward (MXCSR and the x87 control word), then computes. */
KERNEL(upward_f32) {
    fesetround(FE_UPWARD);
    return add(lhs, lb, rhs, rb, out, ob);
}

static void crash(void) {
    volatile uint8_t *nowhere = (uint8_t *)16;
    *nowhere = 1;
}

static void *crash_soon(void *unused) {
    (void)unused;
    struct timespec ms = {0, 50000000};
    nanosleep(&ms, NULL);
    crash();
    return NULL;
}

/* Computes honestly and returns, leaving a thread that segfaults 50 ms later. */
KERNEL(late_segv_f32) {
    pthread_t thread;
    if (pthread_create(&thread, NULL, crash_soon, NULL) == 0) pthread_detach(thread);
    return plain_add(lhs, lb, rhs, rb, out, ob);
}

static void *crash_at_next_call(void *unused) {
    (void)unused;
    while (sem_wait(&next_call) != 0) continue;
    crash();
    return NULL;
}

/* Computes honestly and returns, leaving a thread that segfaults the process during the next
 * call of another kernel of this library (one that computes through `add`). */
KERNEL(doomed_f32) {
    if (!doomed && sem_init(&next_call, 0, 0) == 0) {
        pthread_t thread;
        if (pthread_create(&thread, NULL, crash_at_next_call, NULL) == 0) {
            pthread_detach(thread);
            doomed = 1;
        }
    }
    return plain_add(lhs, lb, rhs, rb, out, ob);
}

/* Forks a child that sleeps for ten minutes, appends its pid to the file named by the
 * environment's HOSTILE_PIDS, and returns the child's pid; -1 when the fork failed. */
static pid_t fork_sleeper(void) {
    pid_t child = fork();
    if (child == 0) {
        struct timespec rest = {600, 0};
        nanosleep(&rest, NULL);
        _exit(0);
    }
    const char *path = getenv("HOSTILE_PIDS");
    FILE *pids = path != NULL && child > 0 ? fopen(path, "a") : NULL;
    if (pids != NULL) {
        fprintf(pids, "%d\n", (int)child);
        fclose(pids);
    }
    return child;
}

/* Forks a sleeping child (see fork_sleeper), then computes honestly. */
KERNEL(fork_f32) {
    if (fork_sleeper() < 0) return 3;
    return add(lhs, lb, rhs, rb, out, ob);
}

/* Forks a sleeping child, then never returns. */
KERNEL(fork_hang_f32) {
    (void)lhs, (void)lb, (void)rhs, (void)rb, (void)out, (void)ob;
    fork_sleeper();
    for (;;) pause();
}
