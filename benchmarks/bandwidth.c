/* The machine's memory bandwidth, STREAM's way: copy (c[i] = a[i]) and triad
 * (a[i] = b[i] + q * c[i]) over arrays of n doubles, each of `threads` threads on its own slice,
 * best of `reps` runs; bytes counted as STREAM counts them (16 per element for copy, 24 for
 * triad: what the kernel names, not the line a store reads first). benchmarks/run.py's
 * "libraries" section builds and runs it to put its 10^7-element rows against the physical limit.
 *
 *     cc -O2 -pthread bandwidth.c -o bandwidth && ./bandwidth 20000000 2 10
 *
 * prints one line: `copy <GB/s> triad <GB/s>`. Every page is touched before timing. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef struct {
    double *a, *b, *c;
    long lo, hi;
    pthread_barrier_t *start;
    int triad;
} Slice;

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void *run(void *arg) {
    Slice *s = arg;
    pthread_barrier_wait(s->start);
    if (s->triad)
        for (long i = s->lo; i < s->hi; i++) s->a[i] = s->b[i] + 3.0 * s->c[i];
    else
        for (long i = s->lo; i < s->hi; i++) s->c[i] = s->a[i];
    pthread_barrier_wait(s->start);
    return NULL;
}

/* Seconds of one pass of the kernel over all n elements on `threads` threads (this one waits). */
static double pass(double *a, double *b, double *c, long n, int threads, int triad) {
    pthread_t ids[64];
    Slice parts[64];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
    for (int t = 0; t < threads; t++) {
        Slice s = {a, b, c, n * t / threads, n * (t + 1) / threads, &start, triad};
        parts[t] = s;
        pthread_create(&ids[t], NULL, run, &parts[t]);
    }
    pthread_barrier_wait(&start);
    double t0 = seconds();
    pthread_barrier_wait(&start);
    double elapsed = seconds() - t0;
    for (int t = 0; t < threads; t++) pthread_join(ids[t], NULL);
    pthread_barrier_destroy(&start);
    return elapsed;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 20000000;
    int threads = argc > 2 ? atoi(argv[2]) : 1, reps = argc > 3 ? atoi(argv[3]) : 10;
    if (n < 1 || threads < 1 || threads > 64 || reps < 1) {
        fprintf(stderr, "usage: bandwidth [n >= 1] [threads 1-64] [reps >= 1]\n");
        return 2;
    }
    double *a = malloc(sizeof(double) * (size_t)n), *b = malloc(sizeof(double) * (size_t)n);
    double *c = malloc(sizeof(double) * (size_t)n);
    if (!a || !b || !c) return 1;
    for (long i = 0; i < n; i++) a[i] = 1.0, b[i] = 2.0, c[i] = 0.5;
    double copy = 1e30, triad = 1e30;
    for (int r = 0; r < reps; r++) {
        double t = pass(a, b, c, n, threads, 0);
        copy = t < copy ? t : copy;
        t = pass(a, b, c, n, threads, 1);
        triad = t < triad ? t : triad;
    }
    printf("copy %.2f triad %.2f\n", 16.0 * (double)n / copy / 1e9, 24.0 * (double)n / triad / 1e9);
    free(a);
    free(b);
    free(c);
    return 0;
}
