/* ---------------------------------------------------------------------------------------------
 * The working-precision loops, stamped out for f32 and f64 from one definition. */

/* The lane-wise ops but pow over a, b into c: each lane one rounded operation, its NaN rule. */
#define LANE_LOOPS(T, FLOOR_FN, IVDEP)                                                             \
    Py_ssize_t i;                                                                                  \
    switch (op) {                                                                                  \
    case ADD:                                                                                      \
        IVDEP for (i = 0; i < n; i++) c[i] = T##_nan_first(a[i] + b[i], a[i]);                     \
        break;                                                                                     \
    case SUB:                                                                                      \
        IVDEP for (i = 0; i < n; i++) c[i] = T##_nan_first(a[i] - b[i], a[i]);                     \
        break;                                                                                     \
    case MUL:                                                                                      \
        IVDEP for (i = 0; i < n; i++) c[i] = T##_nan_first(a[i] * b[i], a[i]);                     \
        break;                                                                                     \
    case DIV:                                                                                      \
        IVDEP for (i = 0; i < n; i++) c[i] = T##_nan_first(a[i] / b[i], a[i]);                     \
        break;                                                                                     \
    case MAXIMUM:                                                                                  \
        IVDEP for (i = 0; i < n; i++) c[i] = T##_select(a[i], b[i], 0);                            \
        break;                                                                                     \
    case MINIMUM:                                                                                  \
        IVDEP for (i = 0; i < n; i++) c[i] = T##_select(a[i], b[i], 1);                            \
        break;                                                                                     \
    case MOD:                                                                                      \
        for (i = 0; i < n; i++) c[i] = T##_nan_first(T##_mod(a[i], b[i]), a[i]);                   \
        break;                                                                                     \
    default: /* REM, the seeds' formula */                                                         \
        IVDEP for (i = 0; i < n; i++)                                                              \
            c[i] = T##_nan_first(a[i] - FLOOR_FN(a[i] / b[i]) * b[i], a[i]);                       \
    }

/* T##_bits, T##_value and T##_isnan (the bit views) are native.h's: both units use them. */
#define DEFINE_LOOPS(T, F, U, QUIET, FLOOR_FN, FMOD_FN, COPYSIGN_FN, POW_LOOP)                     \
    /* r, or a NaN lhs quieted: with one NaN operand the hardware already returns it quieted,      \
     * so only a NaN pair depends on the operand order the compiler chose; lhs is the rule. */     \
    INLINE F T##_nan_first(F r, F a) {                                                             \
        U ua = T##_bits(a);                                                                        \
        return T##_value(T##_isnan(ua) ? (ua | QUIET) : T##_bits(r));                              \
    }                                                                                              \
    /* lhs where maximum (or minimum, when `less`) returns it: lhs NaN, or lhs wins or ties. */    \
    INLINE F T##_select(F a, F b, int less) {                                                      \
        U ua = T##_bits(a), ub = T##_bits(b);                                                      \
        int lhs = T##_isnan(ua) | (less ? (a <= b) : (a >= b));                                    \
        return T##_value(lhs ? ua : ub);                                                           \
    }                                                                                              \
    /* The floored remainder, exact before its one rounding (Python's and NumPy's `%`): fmod is    \
     * exact; where it is not zero and its sign is not b's, b is added (one rounded sum; a NaN is  \
     * never adjusted, as NaN < 0 is false); a zero remainder takes b's sign. */                   \
    INLINE F T##_mod(F a, F b) {                                                                   \
        F m = FMOD_FN(a, b);                                                                       \
        if (m == 0) return COPYSIGN_FN((F)0, b);                                                   \
        return (m < 0) != (b < 0) ? m + b : m;                                                     \
    }                                                                                              \
    INLINE void T##_loop(int op, const F *restrict a, const F *restrict b, F *restrict c,          \
                         Py_ssize_t n, const PowShortcut *s) {                                     \
        if (op == POW) {                                                                           \
            POW_LOOP(a, b, c, n, s);                                                               \
            return;                                                                                \
        }                                                                                          \
        LANE_LOOPS(T, FLOOR_FN, )                                                                  \
    }                                                                                              \
    /* T##_loop for c == a or c == b (`x op= y`), every op but pow: no `restrict`, and `ivdep`     \
     * (true here: lane i reads a[i] and b[i] before it writes c[i], and no other lane) lets it    \
     * vectorize as T##_loop does, with no tile to copy back. */                                   \
    INLINE void T##_loop_in_place(int op, const F *a, const F *b, F *c, Py_ssize_t n) {            \
        LANE_LOOPS(T, FLOOR_FN, _Pragma("GCC ivdep"))                                             \
    }

/* fmodf(a, b), exactly, in double where the quotient Q is below 2^29: t = trunc(a / b) is the
 * true quotient's integer part, since a non-integer Q of two floats lies at least 2^-24 min(1,
 * Q) from every integer (a and k * b differ by a multiple of the smaller last bit of the two)
 * while the division's rounding moves it by at most 2^-53 Q; t * b is exact (29 + 24 <= 53
 * bits), and so is a - t * b (a multiple of that last bit, below |b|). NaNs, infinities, a zero divisor and
 * larger quotients go to the C library's fmodf. A zero comes out +0 where fmodf gives a's
 * sign: the remainder (`T##_mod`) gives every zero the divisor's. */
INLINE float f32_fmod(float a, float b) {
    double x = a, y = b, q = x / y;
    if (!(fabs(q) < 0x1p29) || isinf(y)) return fmodf(a, b);
    return (float)(x - trunc(q) * y);
}

DEFINE_LOOPS(f32, float, uint32_t, 0x00400000u, floorf, f32_fmod, copysignf, f32_pow)
DEFINE_LOOPS(f64, double, uint64_t, 0x0008000000000000ull, floor, fmod, copysign, f64_pow)

