/* ---------------------------------------------------------------------------------------------
 * The unary sweep: one input per lane, patterns of up to 32 bits held in uint32. The reference
 * (`unary_reference`): the C library's double function of the row (a switch on ops.h's U_* enum,
 * never a name) rounded once into the format, trusted where the double value lies farther than
 * UNARY_BOUND_ULPS of double from a rounding boundary of the format; the lanes within it are
 * returned for MPFR to decide. NaNs as `fueltensor.tools.exact_unary` has them: a NaN input
 * quieted with its payload kept (|x| and -x: the sign bit alone), a NaN made from a number this
 * machine's default NaN narrowed. The tally (`unary_tally`) fills the binary tally's layout, the
 * input in the lhs place (the rhs mark 0), one class-table row per input class. */

/* The row's function in double: the C library's, or its definition's few double steps (an op
 * without a case here is refused by `unary_known` before any lane is computed). */
static double unary_double(int op, double x) {
    switch (op) {
    case U_EXP: return exp(x);
    case U_LOG: return log(x);
    case U_TANH: return tanh(x);
    case U_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case U_ERF: return erf(x);
    case U_SQRT: return sqrt(x);
    case U_RSQRT: return 1.0 / sqrt(x);
    case U_SIN: return sin(x);
    case U_COS: return cos(x);
    case U_ABS: return fabs(x);
    case U_NEG: return -x;
    default: return NAN;
    }
}

/* Whether `unary_double` has a case for `op` (a row added to the table without one has not). */
static int unary_known(int op) {
    switch (op) {
    case U_EXP: case U_LOG: case U_TANH: case U_SIGMOID: case U_ERF: case U_SQRT: case U_RSQRT:
    case U_SIN: case U_COS: case U_ABS: case U_NEG: return 1;
    default: return 0;
    }
}

/* The result of a NaN input: the sign bit alone changed for |x| and -x, else quieted. */
static uint32_t unary_nan(const Format *f, int op, uint32_t u) {
    if (op == U_ABS) return u & ~f->sign;
    if (op == U_NEG) return u ^ f->sign;
    return u | f->quiet;
}

/* An IEEE pattern of at most 32 bits, widened exactly to double (no table: any width). */
static double widen_any(const Format *f, uint32_t u) { return widen_slow(f, u); }

/* The reference of input `u`; `*unproven` set where a rounding boundary of the format lies
 * within UNARY_BOUND_ULPS of double of the double result (or the result is a midpoint). */
static uint32_t unary_reference(const Format *f, int op, uint32_t u, int *unproven) {
    if (is_nan(f, u)) return unary_nan(f, op, u);
    double r = unary_double(op, widen_any(f, u));
    if (isnan(r)) return invalid_nan(f);
    double m = fabs(r);
    if (isfinite(m) && m != 0.0) {
        double delta = UNARY_BOUND_ULPS * (nextafter(m, INFINITY) - m);
        *unproven = round_double(f, m - delta) != round_double(f, m + delta);
    }
    return round_double(f, r);
}

/* `testing.classify`'s value class of a pattern, as its index in `VALUE_CLASSES`. */
static int value_class(const Format *f, uint32_t u) {
    uint32_t e = (u >> f->mantissa) & f->emax, m = u & f->frac;
    int unbiased = (int)e - f->bias;
    if (e == f->emax) return m & f->quiet ? 0 : (m ? 1 : 2); /* quiet NaN, signaling, inf */
    if (e == 0) return m ? 4 : 3;                               /* subnormal, zero */
    if (e == 1 || e == f->emax - 1) return 5;                   /* normal extreme */
    if (m == 0) return e == (uint32_t)f->bias ? 6 : 7;          /* one, power of two */
    if (m == 1 || m == f->frac) return 8;                       /* binade edge */
    int below = f->mantissa - unbiased;
    if (unbiased >= 0 && (below <= 0 || (m & ((1u << below) - 1u)) == 0)) return 9; /* integer */
    return 10;
}

/* ULPs between a result and the reference, in 64 bits (32-bit patterns may be 2^32 apart);
 * two NaNs are 0 apart, a NaN and a number UNARY_NAN_DISTANCE. */
static int64_t unary_distance(const Format *f, uint32_t got, uint32_t want) {
    int nan_got = is_nan(f, got), nan_want = is_nan(f, want);
    if (nan_got || nan_want) return nan_got && nan_want ? 0 : UNARY_NAN_DISTANCE;
    int64_t a = (int64_t)(got & ~f->sign), b = (int64_t)(want & ~f->sign);
    int64_t d = ((got & f->sign) ? -a : a) - ((want & f->sign) ? -b : b);
    return d < 0 ? -d : d;
}

/* Tally input `x` -> `got` against its reference `want`; `zeros` holds the references of +0
 * and -0 (what a kernel flushing a subnormal input gives). */
static void unary_tally_one(const Format *f, uint32_t x, uint32_t got, uint32_t want,
                            const uint32_t zeros[2], int64_t *stats) {
    int64_t d = unary_distance(f, got, want);
    tally_distance(d, x, 0u, got == want, stats);
    stats[difference(f, got, want, d)]++;
    int64_t *cell = stats + CLASS_TABLE + 3 * (value_class(f, x) * MAX_CLASSES);
    cell[0]++;
    cell[1] += got == want;
    if (is_nan(f, want)) {
        if (is_nan(f, got)) stats[NAN_FORMS + nan_forms(f, got, x, 0u)]++;
        else stats[is_nan(f, x) ? NAN_LOST : INVALID_LOST]++;
        return;
    }
    int outcome = number_outcome(f, got, want);
    if (outcome >= 0) stats[outcome]++;
    if (!is_subnormal(f, x)) return;
    uint32_t flushed = zeros[(x & f->sign) != 0];
    if (is_subnormal(f, flushed)) flushed &= f->sign; /* and the result flushed too */
    if (got == want) stats[SUB_IN_EXACT]++;
    else stats[got == flushed && unary_distance(f, got, want) > 1 ? SUB_IN_FLUSHED : SUB_IN_OTHER]++;
}
