/* ---------------------------------------------------------------------------------------------
 * The float32-source cast sweep (`fueltensor.tools.certify.casts`): each float32 pattern cast to
 * a narrower format by the declared rule, and the tally of a kernel's results against it in the
 * layout the Python cast tally fills (`casts.tally`), so a certificate reads the same whichever
 * made it. It shares nothing with `_native`'s cast.c: the reference is exact double arithmetic
 * (the source value scaled by the target's quantum, rounded to nearest even by adding and
 * taking away 2^52, overflow decided on the rounded value against the largest finite), then
 * encoded from the integer count of quanta. Targets of at most 16 bits with quieted NaNs (or
 * float8_e4m3fn's one NaN a sign), subnormals kept; the Python path serves every other rule. */

/* A target format and the declared overflow rule, from its exponent and fraction bits. */
typedef struct {
    int mantissa, bias, has_inf, saturate, edge_overflows;
    uint32_t sign, frac, quiet;
    uint32_t nan;       /* the NaN magnitude a NaN input gets without payload (e4m3fn's one) */
    uint32_t inf;       /* the all-ones exponent field, fraction 0 */
    uint32_t max;       /* the magnitude bits of the largest finite value */
    uint32_t beyond;    /* what an overflow gives under `inf_or_nan`: the infinity, or the NaN */
    uint32_t rounding;  /* `testing.rounding_ulp`: 2 ** (mantissa // 2) */
    double largest, edge, tiny, quantum; /* the largest finite, the tie past it, 2^(1-bias), the
                                          * subnormal quantum */
} Target;

/* 2^k as a double, built from its bits (|k| < 1023). */
static double power_of_two(int k) {
    uint64_t bits = (uint64_t)(1023 + k) << 52;
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

/* Whether magnitude bits `m` are a NaN of the target. */
static int target_nan(const Target *t, uint32_t m) { return t->has_inf ? m > t->inf : m == t->nan; }

/* The value of a target pattern (a NaN: NAN), exactly. */
static double target_value(const Target *t, uint32_t u) {
    uint32_t m = u & ~t->sign;
    double s = (u & t->sign) ? -1.0 : 1.0;
    if (target_nan(t, m)) return NAN;
    if (t->has_inf && m == t->inf) return s * INFINITY;
    uint32_t e = m >> t->mantissa, f = m & t->frac;
    if (e == 0) return s * (double)f * t->quantum;
    return s * (double)(f | (t->frac + 1u)) * t->quantum * power_of_two((int)e - 1);
}

/* The Target of a format of `exponent` and `mantissa` bits (1 + both <= 16). */
static Target target_of(int exponent, int mantissa, int has_inf, int saturate) {
    Target t;
    uint32_t top = (1u << exponent) - 1u;
    t.mantissa = mantissa;
    t.bias = (1 << (exponent - 1)) - 1;
    t.has_inf = has_inf;
    t.saturate = saturate;
    t.sign = 1u << (exponent + mantissa);
    t.frac = (1u << mantissa) - 1u;
    t.quiet = 1u << (mantissa - 1);
    t.inf = top << mantissa;
    t.nan = has_inf ? t.inf | t.quiet : t.sign - 1u;
    t.max = has_inf ? t.inf - 1u : t.sign - 2u;
    t.beyond = has_inf ? t.inf : t.nan;
    t.rounding = 1u << (mantissa / 2);
    t.quantum = power_of_two(1 - t.bias - mantissa);
    t.tiny = power_of_two(1 - t.bias);
    t.largest = target_value(&t, t.max);
    t.edge = t.largest + (t.largest - target_value(&t, t.max - 1u)) / 2;
    t.edge_overflows = (int)(t.max & 1u);
    return t;
}

/* The value of a float32 magnitude (not NaN, not infinite), exactly, and its binade: the value
 * lies in [2^*e, 2^(*e+1)). Decoded from the fields, never by a conversion. */
static double f32_value(uint32_t m, int *e) {
    uint32_t field = m >> 23, frac = m & 0x7FFFFFu;
    if (field == 0) { /* a subnormal, or a zero (no binade: below every one, and clz(0) is UB) */
        *e = frac ? 31 - __builtin_clz(frac) - 149 : -150;
        return (double)frac * power_of_two(-149);
    }
    *e = (int)field - 127;
    return (double)(frac | 0x800000u) * power_of_two((int)field - 150);
}

/* The target magnitude bits of `r` quanta of 2^q (r at most 2^(mantissa+1), an integer). */
static uint32_t encode(const Target *t, double r, int q) {
    uint32_t n = (uint32_t)r;
    int e = q + t->mantissa; /* the binade of n * 2^q when n has mantissa + 1 bits */
    if (n >> (t->mantissa + 1)) { /* rounded up into the next binade */
        n >>= 1;
        e += 1;
    }
    if (n <= t->frac) return n; /* a subnormal or zero: e is the smallest normal's binade */
    return ((uint32_t)(e + t->bias) << t->mantissa) | (n & t->frac);
}

/* The declared rule's target pattern of float32 pattern `u`. */
static uint32_t cast_reference(const Target *t, uint32_t u) {
    uint32_t sign = (u >> 31) ? t->sign : 0u, m = u & 0x7FFFFFFFu;
    if (m > 0x7F800000u) /* quiet, the payload's high bits kept; e4m3fn's one NaN */
        return sign | t->nan | (t->has_inf ? (m & 0x7FFFFFu) >> (23 - t->mantissa) : 0u);
    if (m == 0x7F800000u) return sign | (t->saturate ? t->max : t->beyond);
    if (m == 0) return sign;
    int e, q;
    double v = f32_value(m, &e);
    q = (e > 1 - t->bias ? e : 1 - t->bias) - t->mantissa; /* the target's quantum there */
    double scaled = v * power_of_two(-q);                     /* exact: below 2^(mantissa+1) */
    double r = (scaled + 0x1p52) - 0x1p52;                    /* to nearest, ties to even */
    if (r * power_of_two(q) > t->largest) return sign | (t->saturate ? t->max : t->beyond);
    return sign | encode(t, r, q);
}

/* An input's `casts.OUTCOMES` index under the rule: from its value and its reference's. */
static int cast_outcome(const Target *t, double value, uint32_t want) {
    double result = target_value(t, want), a = fabs(value);
    if (isnan(value)) return 0;
    if (isinf(value)) return 1;
    if (a > t->edge || (a == t->edge && t->edge_overflows)) return 2;
    if (fabs(result) < t->tiny && result != 0) return 3;
    if (result == 0 && value != 0) return 4;
    return result == value ? 5 : 6;
}

/* The ULP distance of `got` from `want` in the target (`casts._distance`): -1 for equal bits, a
 * NaN against a number UNARY_NAN_DISTANCE, two NaNs of other bits 0. */
static int64_t cast_distance(const Target *t, uint32_t got, uint32_t want) {
    if (got == want) return -1;
    uint32_t gm = got & ~t->sign, wm = want & ~t->sign;
    int gn = target_nan(t, gm), wn = target_nan(t, wm);
    if (gn || wn) return gn && wn ? 0 : UNARY_NAN_DISTANCE;
    int64_t d = ((got & t->sign) ? -(int64_t)gm : gm) - ((want & t->sign) ? -(int64_t)wm : wm);
    return d < 0 ? -d : d;
}

/* `testing.difference_classes` of two different target patterns, in DIFFERENCE_CLASSES' order. */
static int cast_difference(const Target *t, uint32_t got, uint32_t want, int64_t d) {
    uint32_t gm = got & ~t->sign, wm = want & ~t->sign;
    int gn = target_nan(t, gm), wn = target_nan(t, wm);
    if (gn && wn) return gm == wm ? D_NAN_SIGN : D_NAN_PAYLOAD;
    if (gn || wn) return D_NAN_VS_NUMBER;
    if (gm == 0 && wm == 0) return D_SIGNED_ZERO;
    if (t->has_inf && (gm == t->inf || wm == t->inf)) return D_INFINITY;
    if ((gm && gm <= t->frac) || (wm && wm <= t->frac)) return D_SUBNORMAL;
    if (gm == wm) return D_SIGN;
    return d <= (int64_t)t->rounding ? D_ROUNDING : D_VALUE;
}

/* The special outcomes (`certificate.SPECIALS`) of one input, as `casts._specials` counts them. */
static void cast_specials(const Target *t, uint32_t x, uint32_t got, uint32_t want,
                          int64_t *stats) {
    uint32_t gm = got & ~t->sign, wm = want & ~t->sign, xm = x & 0x7FFFFFFFu;
    int exact = got == want, wsub = wm != 0 && wm <= t->frac;
    int xsub = xm != 0 && xm <= 0x7FFFFFu;
    if (target_nan(t, wm) && !target_nan(t, gm)) stats[NAN_LOST]++;
    if (wm == 0) stats[exact ? ZERO_KEPT : gm == 0 ? ZERO_SIGN : ZERO_LOST]++;
    if (t->has_inf && wm == t->inf) stats[exact ? INF_KEPT : INF_LOST]++;
    if (wsub) {
        if (exact) stats[SUB_OUT_KEPT]++;
        if (gm == 0) stats[SUB_OUT_FLUSHED]++;
        else if (!exact) stats[SUB_OUT_OTHER]++;
    }
    if (xsub) stats[exact ? SUB_IN_EXACT : gm == 0 && wm != 0 ? SUB_IN_FLUSHED : SUB_IN_OTHER]++;
}

/* The mark of a block's largest distance so far: its distance (-1: equal bits) and input. */
typedef struct {
    int64_t distance;
    int64_t input; /* -1: none yet */
} Mark;

/* Tally one input `x` -> `got` against `want` (`casts.tally`'s entries, the class table's
 * outcome columns after its two). */
static void cast_tally_one(const Format *src, const Target *t, uint32_t x, uint32_t got,
                           uint32_t want, int64_t *stats, Mark *mark) {
    int64_t d = cast_distance(t, got, want);
    if (d < 0) stats[H_EXACT]++;
    else stats[d > HIST_ULPS ? H_BEYOND : H_ULP0 + d]++;
    if (mark->input < 0 || d > mark->distance) {
        mark->distance = d;
        mark->input = x;
    }
    if (d >= 0) stats[cast_difference(t, got, want, d)]++; /* equal bits: not a difference */
    cast_specials(t, x, got, want, stats);
    int e;
    uint32_t xm = x & 0x7FFFFFFFu;
    double value = xm > 0x7F800000u ? NAN : xm == 0x7F800000u ? INFINITY : f32_value(xm, &e);
    value = (x >> 31) ? -value : value;
    int64_t *row = stats + CLASS_TABLE + 3 * (value_class(src, x) * MAX_CLASSES);
    row[0]++;
    row[1] += d < 0;
    row[3 * (1 + cast_outcome(t, value, want))]++;
}

/* Tally `n` inputs into `stats`, its maximum mark continued from the marks already there. */
static void cast_tally(const Target *t, const uint32_t *x, const uint32_t *got,
                       const uint32_t *want, Py_ssize_t n, int64_t *stats) {
    Format src = format_of(8, 23);
    Mark mark = {stats[MAX_ULP], stats[MAX_LHS]};
    for (Py_ssize_t i = 0; i < n; i++) cast_tally_one(&src, t, x[i], got[i], want[i], stats, &mark);
    if (mark.input >= 0) {
        stats[MAX_ULP] = mark.distance > 0 ? mark.distance : 0;
        stats[MAX_LHS] = mark.input;
        stats[MAX_RHS] = 0;
    }
}
