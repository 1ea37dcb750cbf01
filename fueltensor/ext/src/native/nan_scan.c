/* ---------------------------------------------------------------------------------------------
 * The oracle's NaN scan (`_fast` runs it after the oracle's ufunc, and redoes the NaN lanes only
 * where it finds one): whether any of n dense floats is a NaN. One body per instruction set, as
 * the kernels: in a C loop here the baseline's SSE2 scans f32 at about 29 GB/s and f64 not
 * vectorized, AVX2 both at about 100. After the ufunc it reads the output back from L3: at 10^6
 * f32 about half the ufunc's time, where the baseline's took nearly all of it (f64: three
 * times it) (benchmarks/RESULTS.md). */

/* Whether any of the n `Word`-wide floats at `data` is a NaN: its magnitude (the bits past the
 * sign, so a signed compare is exact) above `above`, the infinity's. An OR of compares, which
 * vectorizes with no chain from one step to the next; a word is read through memcpy. */
#define DEFINE_ANY_NAN(Word, Signed)                                                             \
    INLINE int any_nan_##Word(const char *data, Py_ssize_t n, Signed above) {                    \
        Signed any = 0;                                                                          \
        for (Py_ssize_t i = 0; i < n; i++) {                                                     \
            Word w;                                                                              \
            memcpy(&w, data + i * (Py_ssize_t)sizeof w, sizeof w);                               \
            any |= (Signed)(w & (Word)~((Word)1 << (8 * sizeof w - 1))) > above;                 \
        }                                                                                        \
        return any != 0;                                                                         \
    }
DEFINE_ANY_NAN(uint16_t, int16_t)
DEFINE_ANY_NAN(uint32_t, int32_t)
DEFINE_ANY_NAN(uint64_t, int64_t)

/* An instruction set's scan (`target`), vectorized at O3 as the loops are not at O2. */
#define DEFINE_NAN_SCAN(isa, target)                                                             \
    target __attribute__((optimize("O3"))) static int nan_scan_##isa(                            \
        const void *data, Py_ssize_t n, Py_ssize_t itemsize, uint64_t above) {                   \
        return itemsize == 2   ? any_nan_uint16_t(data, n, (int16_t)above)                       \
               : itemsize == 4 ? any_nan_uint32_t(data, n, (int32_t)above)                       \
                               : any_nan_uint64_t(data, n, (int64_t)above);                      \
    }

DEFINE_NAN_SCAN(baseline, )
#ifdef HAVE_AVX2_F16C
DEFINE_NAN_SCAN(avx2, TARGET_AVX2_F16C)
#endif
#ifdef HAVE_AVX512
DEFINE_NAN_SCAN(avx512, TARGET_AVX512)
#endif

/* The selected instruction set's scan: what `_fast` runs, exported as the NAN_SCAN capsule. */
static int nan_scan(const void *data, Py_ssize_t n, Py_ssize_t itemsize, uint64_t above) {
    return N.isa_nan_scan[N.isa](data, n, itemsize, above);
}
