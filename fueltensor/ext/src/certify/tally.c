/* ---------------------------------------------------------------------------------------------
 * The tally of one pair: its ULP bucket, the difference class against the correctly rounded
 * value, agreement with the formula, the special-value outcomes, and its operand classes. */

/* A pattern's position in value order: -0 and +0 meet at 0, neighbours are 1 apart. */
static int32_t ordered(const Format *f, uint32_t u) {
    int32_t magnitude = (int32_t)(u & ~f->sign);
    return (u & f->sign) ? -magnitude : magnitude;
}

/* ULPs between a result and the reference; two NaNs are 0 apart, a NaN and a number NAN_DISTANCE. */
static int64_t distance(const Format *f, uint32_t got, uint32_t want) {
    int nan_got = is_nan(f, got), nan_want = is_nan(f, want);
    if (nan_got || nan_want) return nan_got && nan_want ? 0 : NAN_DISTANCE;
    int32_t d = ordered(f, got) - ordered(f, want);
    return d < 0 ? -(int64_t)d : d;
}

/* `testing.difference_classes` of one lane: the first that holds, in DIFFERENCE_CLASSES' order. */
static int difference(const Format *f, uint32_t got, uint32_t want, int64_t ulps) {
    int nan_got = is_nan(f, got), nan_want = is_nan(f, want);
    int same_magnitude = (got & ~f->sign) == (want & ~f->sign);
    if (got == want) return D_EQUAL;
    if (nan_got && nan_want) return same_magnitude ? D_NAN_SIGN : D_NAN_PAYLOAD;
    if (nan_got || nan_want) return D_NAN_VS_NUMBER;
    if (is_zero(f, got) && is_zero(f, want)) return D_SIGNED_ZERO;
    if (is_inf(f, got) || is_inf(f, want)) return D_INFINITY;
    if (is_subnormal(f, got) || is_subnormal(f, want)) return D_SUBNORMAL;
    if (same_magnitude) return D_SIGN;
    return ulps <= (int64_t)f->rounding_ulp ? D_ROUNDING : D_VALUE;
}

/* The forms of result `got` made from NaN operand `p` (FORM_* bits, shifted by `at`). */
static uint32_t operand_forms(const Format *f, uint32_t got, uint32_t p, int at) {
    uint32_t flipped = got ^ f->sign, mask = 0;
    mask |= (uint32_t)(got == p) << FORM_KEPT;
    mask |= (uint32_t)(got == (p | f->quiet)) << FORM_QUIETED;
    mask |= (uint32_t)(got == ((p & f->sign) | f->inf | f->quiet)) << FORM_CANONICAL;
    mask |= (uint32_t)(flipped == p) << FORM_KEPT_FLIPPED;
    mask |= (uint32_t)(flipped == (p | f->quiet)) << FORM_QUIETED_FLIPPED;
    return mask << at;
}

/* The form mask of a NaN result (see certify.h). */
static uint32_t nan_forms(const Format *f, uint32_t got, uint32_t a, uint32_t b) {
    uint32_t mask = 0, all_ones = f->sign | f->inf | f->frac;
    if (is_nan(f, a)) mask |= operand_forms(f, got, a, 0) | (1u << FORM_LHS_NAN);
    if (is_nan(f, b)) mask |= operand_forms(f, got, b, FORMS_PER_OPERAND) | (1u << FORM_RHS_NAN);
    mask |= (uint32_t)(got == (f->inf | f->quiet)) << FORM_POSITIVE_CANONICAL;
    mask |= (uint32_t)(got == (f->sign | f->inf | f->quiet)) << FORM_NEGATIVE_CANONICAL;
    mask |= (uint32_t)(got == all_ones) << FORM_ALL_ONES;
    return mask;
}

/* The outcome of a number reference that is a zero, an infinity or a subnormal (-1: none). */
static int number_outcome(const Format *f, uint32_t got, uint32_t want) {
    if (is_zero(f, want)) {
        if (got == want) return ZERO_KEPT;
        return is_zero(f, got) ? ZERO_SIGN : ZERO_LOST;
    }
    if (is_inf(f, want)) return got == want ? INF_KEPT : INF_LOST;
    if (is_subnormal(f, want)) { /* a zero one ULP off is a rounding (pow's two), not a flush */
        if (got == want) return SUB_OUT_KEPT;
        return got == (want & f->sign) && distance(f, got, want) > 1 ? SUB_OUT_FLUSHED
                                                                    : SUB_OUT_OTHER;
    }
    return -1;
}

/* A subnormal operand's outcome: the reference's bits, or the reference of the pair with its
 * subnormal operands read as zeros of their sign (the result of a kernel that flushes them)
 * where that is more than one ULP from the reference (within one it is a rounding). */
static int subnormal_input_outcome(const Format *f, int op, uint32_t a, uint32_t b, uint32_t got,
                                   uint32_t want) {
    if (got == want) return SUB_IN_EXACT;
    uint32_t fa = is_subnormal(f, a) ? a & f->sign : a, fb = is_subnormal(f, b) ? b & f->sign : b;
    uint32_t flushed = exact(f, op, fa, fb, NULL);
    if (is_subnormal(f, flushed)) flushed &= f->sign; /* and the result flushed too */
    return got == flushed && distance(f, got, want) > 1 ? SUB_IN_FLUSHED : SUB_IN_OTHER;
}

/* Count the special-value outcomes of one pair. */
static void tally_specials(const Format *f, int op, uint32_t a, uint32_t b, uint32_t got,
                           uint32_t want, int64_t *stats) {
    if (is_nan(f, want)) {
        if (is_nan(f, got)) stats[NAN_FORMS + nan_forms(f, got, a, b)]++;
        else stats[propagated(f, a, b) ? NAN_LOST : INVALID_LOST]++;
        return;
    }
    int outcome = number_outcome(f, got, want);
    if (outcome >= 0) stats[outcome]++;
    if (is_subnormal(f, a) || is_subnormal(f, b))
        stats[subnormal_input_outcome(f, op, a, b, got, want)]++;
}

/* Record `d` into the histogram and the maximum (the first pair reaching it). */
static void tally_distance(int64_t d, uint32_t a, uint32_t b, int exact_bits, int64_t *stats) {
    if (exact_bits) stats[H_EXACT]++;
    else stats[d > HIST_ULPS ? H_BEYOND : H_ULP0 + d]++;
    if (d > stats[MAX_ULP] || stats[MAX_LHS] < 0) { /* the first pair starts the maximum */
        stats[MAX_ULP] = d;
        stats[MAX_LHS] = a;
        stats[MAX_RHS] = b;
    }
}

/* Append index `i` to `s`, doubling its room when full (sizes checked); -1 on failure. */
static int skip(Skipped *s, Py_ssize_t i) {
    if (s->count == s->capacity) {
        Py_ssize_t room, bytes;
        if (__builtin_mul_overflow(s->capacity > 0 ? s->capacity : 64, (Py_ssize_t)2, &room) ||
            __builtin_mul_overflow(room, (Py_ssize_t)sizeof(Py_ssize_t), &bytes))
            return -1;
        Py_ssize_t *grown = PyMem_RawRealloc(s->at, (size_t)bytes);
        if (grown == NULL) return -1;
        s->at = grown;
        s->capacity = room;
    }
    s->at[s->count++] = i;
    return 0;
}

/* Tally one pair against its correctly rounded result `want` and its formula bits. */
static void tally_one(const Format *f, int op, uint32_t a, uint32_t b, uint32_t r, uint32_t want,
                      const uint8_t *classes, int64_t *stats) {
    uint32_t formula_bits = formula(f, op, a, b);
    int64_t d = distance(f, r, want);
    tally_distance(d, a, b, r == want, stats);
    stats[difference(f, r, want, d)]++;
    int64_t *cell = stats + CLASS_TABLE + 3 * (classes[a] * MAX_CLASSES + classes[b]);
    cell[0]++;
    cell[1] += r == want;
    cell[2] += r == formula_bits;
    if (r == formula_bits) stats[FORMULA_EQUAL]++;
    else if (stats[FORMULA_LHS] < 0) {
        stats[FORMULA_LHS] = a;
        stats[FORMULA_RHS] = b;
    }
    tally_specials(f, op, a, b, r, want, stats);
}

/* Tally `n` pairs (lhs[i], rhs[i]) -> got[i] into `stats`; `classes` numbers each pattern's
 * value class (`testing.classify`), below MAX_CLASSES. With `want`, it holds each pair's
 * correctly rounded result; without, the pairs whose result the core cannot prove (pow near a
 * rounding boundary) are left out and their indices appended to `skipped` (returns -1 when
 * that list cannot grow). */
static int tally(const Format *f, int op, const uint16_t *lhs, const uint16_t *rhs,
                 const uint16_t *got, const uint16_t *want, Py_ssize_t n, const uint8_t *classes,
                 int64_t *stats, Skipped *skipped) {
    for (Py_ssize_t i = 0; i < n; i++) {
        uint32_t a = lhs[i], b = rhs[i];
        int unproven = 0;
        uint32_t w = want != NULL ? want[i] : exact(f, op, a, b, &unproven);
        if (unproven) {
            if (skip(skipped, i) < 0) return -1;
            continue;
        }
        if (op == POW && pow_open(f, a, b)) {
            stats[OPEN]++;
            continue;
        }
        tally_one(f, op, a, b, got[i], w, classes, stats);
    }
    return 0;
}
