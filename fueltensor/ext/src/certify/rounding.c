/* ---------------------------------------------------------------------------------------------
 * A 16-bit format's values in double and back. Widening is exact; `round_double` rounds once to
 * nearest, ties to even, from the bits of the format alone (no cast through float, which would
 * round twice); NaN patterns are built by the callers, never rounded. */

static Format format_of(int exponent, int mantissa) {
    Format f;
    f.exponent = exponent;
    f.mantissa = mantissa;
    f.bias = (1 << (exponent - 1)) - 1;
    f.emax = (1u << exponent) - 1u;
    f.sign = 1u << (exponent + mantissa);
    f.quiet = 1u << (mantissa - 1);
    f.frac = (1u << mantissa) - 1u;
    f.inf = f.emax << mantissa;
    f.rounding_ulp = 1u << (mantissa / 2);
    f.values = NULL;
    return f;
}

static int is_nan(const Format *f, uint32_t u) { return (u & ~f->sign) > f->inf; }
static int is_inf(const Format *f, uint32_t u) { return (u & ~f->sign) == f->inf; }
static int is_zero(const Format *f, uint32_t u) { return (u & ~f->sign) == 0; }
static int is_signaling(const Format *f, uint32_t u) { return is_nan(f, u) && !(u & f->quiet); }

static int is_subnormal(const Format *f, uint32_t u) {
    uint32_t m = u & ~f->sign;
    return m != 0 && m <= f->frac;
}

/* The value of a non-NaN pattern, exactly (what `values` tabulates). */
static double widen_slow(const Format *f, uint32_t u) {
    double sign = (u & f->sign) ? -1.0 : 1.0;
    uint32_t e = (u >> f->mantissa) & f->emax, m = u & f->frac;
    if (e == f->emax) return sign * INFINITY;
    if (e == 0) return sign * ldexp((double)m, 1 - f->bias - f->mantissa);
    return sign * ldexp((double)(m | (f->frac + 1u)), (int)e - f->bias - f->mantissa);
}

/* Every pattern's value (NaN patterns: 0, never read), one table per format (by its fraction
 * bits), made on first use while the GIL is held and kept for the process: 512 KiB each. */
static double *VALUES[16];

static int values_for(Format *f) {
    if (VALUES[f->mantissa] == NULL) {
        double *table = PyMem_RawMalloc(65536 * sizeof(double));
        if (table == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        for (uint32_t u = 0; u < 65536; u++) table[u] = is_nan(f, u) ? 0.0 : widen_slow(f, u);
        VALUES[f->mantissa] = table;
    }
    f->values = VALUES[f->mantissa];
    return 0;
}

static double widen(const Format *f, uint32_t u) { return f->values[u]; }

/* `x` (not NaN) rounded once to nearest, ties to even, into the format, on the bits of the
 * double: its 53-bit significand shifted down to the format's quantum at x's exponent (the
 * subnormals' quantum below the normal range), rounded on the bits shifted out. A carry into
 * the next binade, or to infinity, falls out of the encoding's arithmetic. */
static uint32_t round_double(const Format *f, double x) {
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    uint32_t sign = (u >> 63) ? f->sign : 0u;
    uint64_t ax = u & 0x7FFFFFFFFFFFFFFFull;
    if (ax == 0) return sign;
    int e = (int)(ax >> 52) - 1023, lowest = 1 - f->bias;
    if (e > f->bias) return sign | f->inf;
    /* Double subnormals lie far below every 16-bit format's smallest half-quantum: zero. */
    if (e < lowest - f->mantissa - 2 || (ax >> 52) == 0) return sign;
    uint64_t m = (ax & 0x000FFFFFFFFFFFFFull) | 0x0010000000000000ull;
    int shift = 52 - f->mantissa + (e < lowest ? lowest - e : 0);
    uint64_t k = m >> shift, rest = m & ((1ull << shift) - 1u), half = 1ull << (shift - 1);
    k += (rest > half) | ((rest == half) & (k & 1u));
    uint64_t bits = e < lowest ? k : ((uint64_t)(e + f->bias - 1) << f->mantissa) + k;
    return sign | (bits >= f->inf ? f->inf : (uint32_t)bits);
}

/* A NaN made by narrowing an f32 NaN as the seeds' `half` crate does: its sign, the quiet bit,
 * the top fraction bits of its payload. */
static uint32_t narrow_f32_nan(const Format *f, uint32_t x) {
    uint32_t sign = (x >> 31) ? f->sign : 0u;
    return sign | f->inf | f->quiet | ((x & 0x007FFFFFu) >> (23 - f->mantissa));
}

/* An f32 (exact in double) narrowed to the format as the seeds' kernels store: RNE, NaNs by
 * `narrow_f32_nan`. */
static uint32_t narrow_f32(const Format *f, float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return isnan(x) ? narrow_f32_nan(f, u) : round_double(f, (double)x);
}

/* The format's value as f32 (exact for 16-bit formats), a NaN by `half`'s widening: its
 * payload shifted to the top of the f32 fraction. */
static float widen_f32(const Format *f, uint32_t u) {
    if (!is_nan(f, u)) return (float)widen(f, u);
    uint32_t x = ((u & f->sign) ? 0x80000000u : 0u) | 0x7F800000u |
                 ((u & f->frac) << (23 - f->mantissa));
    float out;
    memcpy(&out, &x, sizeof out);
    return out;
}

/* A double NaN narrowed like an f32 one (its sign and top payload bits, quieted). */
static uint32_t narrow_double_nan(const Format *f, double x) {
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    uint32_t top = (uint32_t)((u >> 29) & 0x007FFFFFu);
    return narrow_f32_nan(f, ((uint32_t)(u >> 32) & 0x80000000u) | 0x7F800000u | top);
}
