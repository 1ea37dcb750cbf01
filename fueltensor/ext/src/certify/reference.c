/* ---------------------------------------------------------------------------------------------
 * The two references of a pair: the correctly rounded value (`exact`) and the bits of the seeds'
 * formula (`formula`). Both take the NaN an operand brings as IEEE 754 recommends (the lhs's
 * first, quieted, payload kept); an invalid operation gives this machine's default NaN. */

/* This machine's default NaN (what an invalid double operation returns), in the format. */
static uint32_t invalid_nan(const Format *f) {
    volatile double inf = INFINITY;
    return narrow_double_nan(f, inf - inf);
}

/* + - * / in double, rounded once: exact, as double carries 53 >= 2p + 2 bits of a p-bit format. */
static double arith(int op, double x, double y) {
    switch (op) {
    case ADD: return x + y;
    case SUB: return x - y;
    case MUL: return x * y;
    default: return x / y;
    }
}

/* IEEE 754-2019 maximum / minimum of two numbers: the larger (smaller); -0 below +0. */
static uint32_t ordered_select(const Format *f, int op, uint32_t a, uint32_t b) {
    double x = widen(f, a), y = widen(f, b);
    if (x == y) { /* equal values: the same bits, or two zeros */
        int a_negative = (a & f->sign) != 0;
        return (op == MAXIMUM) == a_negative ? b : a;
    }
    return (x > y) == (op == MAXIMUM) ? a : b;
}

/* The floored remainder x - floor(x / y) * y as a real number, rounded once: fmod is exact, and
 * adding the divisor back is one sum of two values of the format (rounded once, as above). The
 * edges as Python's `%`: x % ±inf is x if x is zero or has the divisor's sign, else the divisor;
 * a zero remainder has the divisor's sign; x % 0 and inf % y are invalid. */
static uint32_t floored_remainder(const Format *f, uint32_t a, uint32_t b) {
    double x = widen(f, a), y = widen(f, b);
    if (y == 0.0 || isinf(x)) return invalid_nan(f);
    if (isinf(y)) {
        if (x == 0.0) return (b & f->sign) | 0u;
        return signbit(x) == signbit(y) ? a : b;
    }
    double r = fmod(x, y);
    if (r == 0.0) return b & f->sign;
    if (signbit(r) != signbit(y)) r += y;
    return round_double(f, r);
}

/* The NaN a pair propagates (the lhs's first), or 0 when neither operand is NaN. */
static uint32_t propagated(const Format *f, uint32_t a, uint32_t b) {
    if (is_nan(f, a)) return a;
    return is_nan(f, b) ? b : 0u;
}

/* C99's pow at the points where a NaN operand does not give NaN: pow(x, ±0) and pow(1, y) are 1. */
static int pow_is_one(const Format *f, uint32_t a, uint32_t b) {
    return is_zero(f, b) || a == ((uint32_t)f->bias << f->mantissa);
}

/* pow's pairs that C99 and IEEE 754 answer differently, left open by the contracts: a signaling
 * NaN where a quiet one would give 1 (pow(sNaN, ±0), pow(1, sNaN)). */
static int pow_open(const Format *f, uint32_t a, uint32_t b) {
    return (is_signaling(f, a) || is_signaling(f, b)) && pow_is_one(f, a, b);
}

/* Whether a double pow result `r` (within POW_BOUND_ULPS of the true value) may round either
 * way: the format's rounding of the two ends of that interval differs (a midpoint, or the
 * overflow threshold, lies inside). glibc documents pow within 1 ULP of double; the bound is
 * that times 1024, so a C library a thousand times worse still gives a proven reference. */
static int pow_unproven(const Format *f, double r) {
    double m = fabs(r);
    if (!isfinite(m) || m == 0.0) return 0; /* pow's exact specials, or far beyond the format */
    double delta = POW_BOUND_ULPS * (nextafter(m, INFINITY) - m);
    return round_double(f, m - delta) != round_double(f, m + delta);
}

/* The correctly rounded result of `op` on a pair. pow: the C library's double pow rounded once,
 * proven correct unless `*unproven` is set (then Python decides the pair exactly; NULL: the
 * caller does not ask). */
static uint32_t exact(const Format *f, int op, uint32_t a, uint32_t b, int *unproven) {
    uint32_t nan = propagated(f, a, b);
    if (op == POW && pow_is_one(f, a, b)) return (uint32_t)f->bias << f->mantissa;
    if (nan) return nan | f->quiet;
    if (op == MAXIMUM || op == MINIMUM) return ordered_select(f, op, a, b);
    if (op == REM || op == MOD) return floored_remainder(f, a, b);
    double r = op == POW ? pow(widen(f, a), widen(f, b)) : arith(op, widen(f, a), widen(f, b));
    if (op == POW && unproven != NULL) *unproven = pow_unproven(f, r);
    return isnan(r) ? invalid_nan(f) : round_double(f, r);
}

/* The seeds' formula for + - * / rem pow on halves: widen to f32, compute there, narrow once. */
static float formula_f32(int op, float x, float y) {
    switch (op) {
    case ADD: return x + y;
    case SUB: return x - y;
    case MUL: return x * y;
    case DIV: return x / y;
    case POW: return powf(x, y);
    default: { /* REM: a - floor(a / b) * b, each step rounded to f32 */
        float q = floorf(x / y);
        float t = q * y;
        return x - t;
    }
    }
}

/* The bits the seeds' formula gives: maximum / minimum return a NaN operand unchanged (lhs
 * first), else the larger (smaller) value, lhs on a tie; the others widen to f32 (a NaN operand
 * comes out quieted, lhs first; pow quiets both operands first, as `half`'s widening does),
 * compute in f32 and narrow once. */
static uint32_t formula(const Format *f, int op, uint32_t a, uint32_t b) {
    if (op == MOD) return exact(f, op, a, b, NULL); /* its formula is the exact remainder */
    uint32_t nan = propagated(f, a, b);
    if (op == MAXIMUM || op == MINIMUM) {
        if (nan) return nan;
        double x = widen(f, a), y = widen(f, b);
        return (op == MAXIMUM ? x >= y : x <= y) ? a : b;
    }
    if (op == POW) {
        uint32_t qa = is_nan(f, a) ? a | f->quiet : a, qb = is_nan(f, b) ? b | f->quiet : b;
        return narrow_f32(f, formula_f32(op, widen_f32(f, qa), widen_f32(f, qb)));
    }
    if (nan) return narrow_f32(f, widen_f32(f, nan | f->quiet));
    return narrow_f32(f, formula_f32(op, widen_f32(f, a), widen_f32(f, b)));
}
