/* ---------------------------------------------------------------------------------------------
 * The recognition: the passes this CPU can run, the inputs it compares them with powf on, and
 * whether the platform powf is glibc's algorithm with these tables. */

typedef struct {
    const char *name;
    PowPass pass;
} PowfPass;

/* The vector passes this CPU runs (AVX2 with FMA, AVX-512F), into `out`; returns how many. */
static int powf_passes(PowfPass *out) {
    int count = 0;
#ifdef HAVE_AVX2_F16C
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        out[count++] = (PowfPass){"avx2", pow_pass_avx2};
#endif
#ifdef HAVE_POWF_AVX512
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma"))
        out[count++] = (PowfPass){"avx512", pow_pass_avx512};
#endif
    (void)out;
    return count;
}
#define MAX_POWF_PASSES 2

static uint64_t splitmix64(uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Random pair i of stream `seed`, one of four kinds a quarter each: any bits; any x with
 * |y| in [2^-12, 2^8); x in [0.5, 2) with |y| in [2^-4, 2^12); any x with an integer y in
 * [-64, 64] (negative bases, odd and even powers). */
static void powf_pair(uint64_t seed, uint64_t i, uint32_t *x, uint32_t *y) {
    uint64_t r = splitmix64(seed ^ splitmix64(i)), s = splitmix64(r);
    uint32_t u = (uint32_t)r, v = (uint32_t)(r >> 32), sign_mant = 0x807FFFFFu;
    switch (s & 3) {
    case 0:
        *x = u, *y = v;
        break;
    case 1:
        *x = u, *y = (v & sign_mant) | (uint32_t)(0x7f - 12 + (s >> 8) % 20) << 23;
        break;
    case 2:
        *x = (u & 0x7FFFFFu) | (uint32_t)(0x7e + (s >> 8) % 2) << 23;
        *y = (v & sign_mant) | (uint32_t)(0x7f - 4 + (s >> 16) % 16) << 23;
        break;
    default:
        *x = u;
        *y = f32_bits((float)((int)((s >> 8) % 129) - 64));
    }
}

/* x and y bits of the recognition's special lanes: every class glibc's branches tell apart. */
static const uint32_t POWF_SPECIAL_X[] = {
    0x00000000, 0x00000001, 0x00000002, 0x007FFFFF, 0x00400000, 0x00800000, 0x3F000000,
    0x3F800000, 0x3F800001, 0x3F7FFFFF, 0x40000000, 0x40400000, 0x7F7FFFFF, 0x7F800000,
    0x7FC00000, 0x7FC00005, 0x7F800001, 0x7FA00000, 0x7FFFFFFF, 0x4B000001, 0x2F800000};
static const uint32_t POWF_SPECIAL_Y[] = {
    0x00000000, 0x00000001, 0x3F800000, 0x40000000, 0x40400000, 0x3F000000, 0x3FC00000,
    0x4B000001, 0x4B800000, 0x4F000000, 0x42FE0000, 0x43000000, 0x43160000, 0x42FFFFFF,
    0x7F7FFFFF, 0x7F800000, 0x7FC00000, 0x7FC00005, 0x7FA00000, 0x3E800000, 0x00800000};
#define N_SPECIAL_X (sizeof POWF_SPECIAL_X / sizeof POWF_SPECIAL_X[0])
#define N_SPECIAL_Y (sizeof POWF_SPECIAL_Y / sizeof POWF_SPECIAL_Y[0])
#define POWF_SAMPLE 8192
#define POWF_UNIFORM (POWF_SAMPLE / 2 - 512) /* where the lanes of y = 2, then 0.5, start */
/* Inputs where glibc's FMA powf differs from the same arithmetic without its FMA in
 * r = z * invc - 1 (the first six) or in q = A4 * r + (logc + k) (the last two), found by
 * benchmarks/pow_fma_witnesses.c: they tell a pass or a libm without those FMAs (glibc's SSE2
 * powf differs on seven of them) from this one, where random inputs almost never do. */
static const uint32_t POWF_WITNESS[][2] = {
    {0x3f831659, 0xc475433f}, {0x3f47756e, 0xc3a24605}, {0x3fb05cf7, 0xc32cbfb5},
    {0x3fa6f1b5, 0xc31b57e1}, {0x3fa7d59c, 0x435e44f4}, {0x3ff97c9d, 0xc2dce392},
    {0x3fa0d6e8, 0xc3083aa2}, {0x3f933de3, 0x440c79a8}};
#define N_WITNESS (sizeof POWF_WITNESS / sizeof POWF_WITNESS[0])
/* Exponents of the lanes whose exact powers are at or next to a rounding midpoint (short
 * significands squared or cubed): where a powf that is not this one rounds the other way. */
static const float POWF_MIDPOINT_Y[] = {2.0f, 3.0f, -2.0f, 0.5f, -1.0f, 4.0f, 1.5f, -0.5f};

/* The recognition's inputs: the special grid, both signs of x (and of y); the FMA witnesses;
 * midpoint lanes with short significands; 256 lanes of y = 2 then 256 of y = 0.5 (whole groups:
 * the passes' short way) at random x; the random pairs of `powf_pair` (stream 0). */
static void powf_sample(uint32_t *x, uint32_t *y) {
    size_t at = 0;
    for (size_t i = 0; i < N_SPECIAL_X; i++)
        for (size_t j = 0; j < N_SPECIAL_Y; j++)
            for (uint32_t sign = 0; sign < 4; sign++, at++) {
                x[at] = POWF_SPECIAL_X[i] | (sign & 1) << 31;
                y[at] = POWF_SPECIAL_Y[j] | (sign >> 1) << 31;
            }
    for (size_t i = 0; i < N_WITNESS; i++, at++) {
        x[at] = POWF_WITNESS[i][0];
        y[at] = POWF_WITNESS[i][1];
    }
    for (uint64_t i = 0; at < POWF_UNIFORM; i++, at++) {
        uint64_t r = splitmix64(~i);
        uint32_t bits = 8 + (uint32_t)(r % 6), mant = (uint32_t)(r >> 8) | 1u << bits;
        mant = (mant & ((2u << bits) - 1)) | 1u; /* odd, bits + 1 significant bits */
        float v = ldexpf((float)mant, (int)((r >> 40) % 64) - 40);
        x[at] = f32_bits(v) | (uint32_t)(r >> 63) << 31;
        y[at] = f32_bits(POWF_MIDPOINT_Y[(r >> 32) % 8]);
    }
    for (uint64_t i = 0; at < POWF_SAMPLE / 2; i++, at++) {
        x[at] = (uint32_t)splitmix64(i ^ 0xABCDu) & (at < POWF_UNIFORM + 256 ? ~0u : 0x7FFFFFFFu);
        y[at] = f32_bits(at < POWF_UNIFORM + 256 ? 2.0f : 0.5f);
    }
    for (uint64_t i = 0; at < POWF_SAMPLE; i++, at++) powf_pair(0, i, &x[at], &y[at]);
}

/* The tables as glibc lays them out, to find them in its libm: struct powf_log2_data ({invc,
 * logc} by subinterval, then the log polynomial) and the head of struct exp2f_data (the table,
 * the shift, the exp polynomial). */
typedef struct {
    double log[16 * 2 + 5];
    uint64_t exp[32 + 4];
} PowfBlocks;

static void powf_blocks(PowfBlocks *b) {
    for (int i = 0; i < 16; i++) {
        b->log[2 * i] = PF.invc[i];
        b->log[2 * i + 1] = PF.logc[i];
    }
    memcpy(b->log + 32, PF.poly, sizeof PF.poly);
    memcpy(b->exp, PF.exp2, sizeof PF.exp2);
    memcpy(b->exp + 32, &PF.shift, sizeof PF.shift);
    memcpy(b->exp + 33, PF.c, sizeof PF.c);
}

#ifdef HAVE_POWF_RECOGNITION
/* Where to look for the tables (`PowfBlocks`): the loaded object holding `inside` (powf's
 * code), its read-only segments. */
typedef struct {
    const PowfBlocks *blocks;
    const void *inside;
    int object, found[2];
} PowfScan;

static int powf_scan_object(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    PowfScan *scan = data;
    uintptr_t inside = (uintptr_t)scan->inside;
    for (int h = 0; h < info->dlpi_phnum; h++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[h];
        uintptr_t start = info->dlpi_addr + p->p_vaddr;
        if (p->p_type == PT_LOAD && inside >= start && inside - start < p->p_memsz)
            scan->object = 1;
    }
    for (int h = 0; scan->object && h < info->dlpi_phnum; h++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[h];
        if (p->p_type != PT_LOAD || !(p->p_flags & PF_R) || (p->p_flags & PF_W)) continue;
        const void *at = (const void *)(info->dlpi_addr + p->p_vaddr);
        const PowfBlocks *b = scan->blocks;
        scan->found[0] |= memmem(at, p->p_filesz, b->log, sizeof b->log) != NULL;
        scan->found[1] |= memmem(at, p->p_filesz, b->exp, sizeof b->exp) != NULL;
    }
    return scan->object; /* stop at powf's object */
}

/* Whether the read-only data of the object holding powf holds both blocks byte for byte. */
static int powf_libm_holds(const PowfBlocks *blocks) {
    PowfScan scan = {blocks, (const void *)(uintptr_t)(float (*volatile)(float, float))powf, 0,
                     {0, 0}};
    dl_iterate_phdr(powf_scan_object, &scan);
    return scan.found[0] && scan.found[1];
}

/* Whether the C library is glibc 2.28 or later (where powf became this algorithm). */
static int powf_glibc_version_fits(const char *version) {
    unsigned major = 0, minor = 0;
    return sscanf(version, "%u.%u", &major, &minor) == 2 &&
           (major > 2 || (major == 2 && minor >= 28));
}
#endif

/* The sample's inputs (bits, and as floats), powf's bits on them (or what stands for them), and
 * a pass's results. */
typedef struct {
    uint32_t x[POWF_SAMPLE], y[POWF_SAMPLE], want[POWF_SAMPLE];
    float fx[POWF_SAMPLE], fy[POWF_SAMPLE], got[POWF_SAMPLE];
} PowfLanes;

/* Fill the sample's inputs, bits and floats. */
static void powf_lanes(PowfLanes *s) {
    powf_sample(s->x, s->y);
    memcpy(s->fx, s->x, sizeof s->fx);
    memcpy(s->fy, s->y, sizeof s->fy);
}

/* Write the verdict's reason into `why`; returns 0 (refused), for `return refuse(...)`. */
__attribute__((format(printf, 3, 4))) static int refuse(char *why, size_t size,
                                                        const char *format, ...) {
    va_list args;
    va_start(args, format);
    vsnprintf(why, size, format, args);
    va_end(args);
    return 0;
}

/* The first lane where a pass differs from `want` on the sample, into `why`; 0 if none. */
static int powf_sample_differs(const PowfPass *p, PowfLanes *s, char *why, size_t size) {
    f32_pow_vector(p->pass, s->fx, s->fy, s->got, POWF_SAMPLE);
    for (int i = 0; i < POWF_SAMPLE; i++) {
        uint32_t got = f32_bits(s->got[i]);
        if (got != s->want[i]) {
            snprintf(why, size, "the %s pass differs from powf at x=0x%08x y=0x%08x (0x%08x, powf "
                     "0x%08x)", p->name, s->x[i], s->y[i], got, s->want[i]);
            return 1;
        }
    }
    return 0;
}

/* Whether powf is glibc's algorithm as the passes compute it, taking s->want for powf's bits
 * on the sample (s->x, s->y); `why` says what the verdict rests on. Runs in the default
 * floating-point environment. */
static int powf_recognise(PowfLanes *s, char *why, size_t size) {
#ifdef HAVE_POWF_RECOGNITION
    PowfPass passes[MAX_POWF_PASSES];
    int count = powf_passes(passes);
    const char *version = gnu_get_libc_version(), *tables = powf_tables();
    if (!powf_glibc_version_fits(version))
        return refuse(why, size, "glibc %s: its powf predates 2.28's algorithm", version);
    if (count == 0) /* glibc's ifunc picks __powf_fma where FMA and AVX2 are usable, else SSE2 */
        return refuse(why, size, "no FMA and AVX2 here: glibc %s runs its SSE2 powf, which no "
                      "pass follows", version);
    if (tables != NULL) return refuse(why, size, "the tables: %s", tables);
    PowfBlocks blocks;
    powf_blocks(&blocks);
    if (!powf_libm_holds(&blocks))
        return refuse(why, size, "the libm holding powf does not hold the tables byte for byte");
    for (int v = 0; v < count; v++)
        if (powf_sample_differs(&passes[v], s, why, size)) return 0;
    snprintf(why, size, "glibc %s powf, its FMA variant (the sample's FMA witnesses equal); its "
             "tables found in its libm; %d sample lanes equal on the %s%s%s pass%s", version,
             POWF_SAMPLE, passes[0].name, count > 1 ? " and " : "", count > 1 ? passes[1].name : "",
             count > 1 ? "es" : "");
    return 1;
#else
    (void)s;
    return refuse(why, size, "not glibc on x86-64: no pass follows this powf");
#endif
}

/* Recognise once (the first caller; any other meanwhile sees "not yet": powf, the same bits),
 * in the default floating-point environment, leaving the caller's as it was (flags included).
 * Returns whether the vector powf may run. */
static int pow_recognise_now(void) {
    int expected = PV_UNKNOWN;
    if (!__atomic_compare_exchange_n(&PV.verdict, &expected, PV_CHECKING, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return expected == PV_RECOGNISED;
    PowfLanes *s = malloc(sizeof *s);
    int ok = 0;
    fenv_t env;
    fegetenv(&env);
    fesetenv(FE_DFL_ENV);
    if (s == NULL) {
        refuse(PV.reason, sizeof PV.reason, "no memory for the sample");
    } else {
        powf_lanes(s);
        for (int i = 0; i < POWF_SAMPLE; i++) s->want[i] = f32_bits(powf(s->fx[i], s->fy[i]));
        ok = powf_recognise(s, PV.reason, sizeof PV.reason);
    }
    fesetenv(&env);
    free(s);
    __atomic_store_n(&PV.verdict, ok ? PV_RECOGNISED : PV_REFUSED, __ATOMIC_RELEASE);
    return ok;
}
