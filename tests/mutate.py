"""Semantic mutation testing: does the suite turn red when the package is made wrong?

Each mutation is one meaningful one-line change (file, exact source snippet, replacement) to
the planner, the schema, the kernels (pure chassis and reference) or the reports (judge,
compare). The script copies the repository to a temporary folder once, then for every mutation
writes the mutated file into the copy, runs only the relevant tests there with
`pytest -x -q -p no:randomly` (the copy's package shadows the installed one), and restores
the file. A mutation is *caught* when pytest fails, a *survivor* when it passes, and *stale*
when its snippet is no longer in the file (the code moved; update the snippet). The working
tree is never touched.

Run it before resolving an issue that touches the planner, the schema, the kernels or the
judge/compare reports, and keep the score at 100 %:

    python tests/mutate.py            # every mutation, prints the score and the survivors
    python tests/mutate.py --list     # the catalogue
    python tests/mutate.py plan-      # only mutations whose id starts with "plan-"

Exit status: 0 when every applicable mutation is caught, 1 when one survives or is stale.
See docs/mutation.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PLAN_TESTS = (
    "tests/engine/test_plans.py",
    "tests/engine/test_dispatch.py",
    "tests/core/test_views.py",
)
SCHEMA_TESTS = (
    "tests/fkc/test_fkc_validation.py",
    "tests/fkc/test_fkc_parse.py",
    "tests/fkc/test_registry.py",
)
CPU_TESTS = ("tests/kernels/test_kernels_cpu.py", "tests/kernels/test_kernels_native.py")
REFERENCE_TESTS = ("tests/kernels/test_kernels_reference.py",)
COMPILED_TESTS = ("tests/kernels/test_compiled_providers.py",)
JUDGE_TESTS = ("tests/tools/test_judge.py", "tests/repo/test_notebooks.py")
COMPARE_TESTS = ("tests/tools/test_compare.py", "tests/repo/test_notebooks.py")
HOST_TESTS = ("tests/array_api/test_host_calls.py",)
FAST_TESTS = (
    "tests/engine/test_fast_path.py",
    "tests/engine/test_fast_inplace.py",
    "tests/engine/test_fast_casts.py",
    "tests/engine/test_fast_interface.py",
)
POWI = "fueltensor/kernels/_powi.py"
SCALAR_FORMS = "fueltensor/engine/scalar_forms.py"
POWI_TESTS = ("tests/kernels/test_kernels_powi.py", "tests/engine/test_powi_dispatch.py")
PARAM_TESTS = ("tests/fkc/test_fkc_params.py", "tests/engine/test_powi_dispatch.py")
TRAMPOLINE_TESTS = ("tests/engine/test_host_trampolines.py",)
HOST_LOOP_TESTS = ("tests/engine/test_host_loops.py",)
RULED_TESTS = ("tests/engine/test_ruled_host.py", "tests/engine/test_ruled_direct.py")
POWI_FAST_TESTS = ("tests/engine/test_fast_powi.py", "tests/engine/test_powi_dispatch.py")
VIEW_TESTS = (
    "tests/core/test_views.py",
    "tests/engine/test_fast_path.py",
    "tests/engine/test_fast_interface.py",
)

CALL_TESTS = ("tests/engine/test_compiled_calls.py",)
ENGINE_FAST = "fueltensor/engine/fast.py"
PLANNER = "fueltensor/engine/planner.py"
SCHEMA = "fueltensor/fkc/validate.py"
READER = "fueltensor/fkc/reader.py"
"""Where a document's nodes are read and checked one by one (keys, scalars, bounds, formulas)."""
CHASSIS = "fueltensor/kernels/_chassis.py"
REFERENCE = "fueltensor/kernels/reference.py"
COMPILED = "fueltensor/kernels/compiled.py"
NATIVE_SRC = "fueltensor/ext/src/native/"
FAST_SRC = "fueltensor/ext/src/fast/"
"""The compiled floor's per-concern C files: a C mutation names the file its snippet is in."""
HOST = "fueltensor/array_api/_host.py"
POW_STATUS = "fueltensor/kernels/pow_shortcut.py"
POWF_VECTOR = NATIVE_SRC + "powf_vector.c"
POWF_RECOGNISE = NATIVE_SRC + "powf_recognise.c"
POWF_TESTS = ("tests/kernels/test_pow_shortcut.py",)
"""The vector powf's tests: every body and pass against libm powf, the recognition, the tables
and the proofs' machinery (a mutated `_native` is rebuilt in the copy)."""
JUDGE = "fueltensor/tools/judge/audit.py"
JUDGE_CALLS = "fueltensor/tools/judge/calls.py"
JUDGE_REPORT = "fueltensor/tools/judge/report.py"
COMPARE = "fueltensor/tools/compare.py"
COMPARISONS = "fueltensor/tools/comparisons.py"
SELECTION = "fueltensor/tools/selection.py"
TIMING = "fueltensor/tools/timing.py"
TESTING_FORMATS = "fueltensor/testing/formats.py"
TESTING_VALUES = "fueltensor/testing/values.py"
TESTING_DIFFERENCES = "fueltensor/testing/differences.py"
TESTING_TESTS = ("tests/testing/test_testing.py",)
TIMING_TESTS = ("tests/tools/test_timing.py",)
LOOP_TESTS = ("tests/tools/test_author_loop.py",)
DISPATCH = "fueltensor/engine/dispatch.py"
EXECUTE = "fueltensor/engine/execute.py"
STORAGE = "fueltensor/core/storage.py"
CLUSTER = "fueltensor/tools/cluster.py"
FOREIGN = "fueltensor/engine/foreign.py"
CHECKED = "fueltensor/tools/checked.py"
CHECKED_REQUEST = "fueltensor/tools/checked_request.py"
CHECKED_WORKER = "fueltensor/tools/checked_worker.py"
CHECKED_PROCESS = "fueltensor/tools/checked_process.py"
LIBRARIES = "fueltensor/kernels/libraries.py"
BOUNDS = "fueltensor/fkc/bounds.py"
PICKLED = "fueltensor/core/pickled.py"
FOREIGN_TESTS = ("tests/engine/test_foreign_calls.py",)
CHECKED_TESTS = ("tests/tools/test_checked_runs.py",)
FP_STATUS_TESTS = ("tests/engine/test_fp_status.py",)
THREAD_TESTS = ("tests/kernels/test_threads.py",)
STREAM_TESTS = ("tests/kernels/test_streaming.py",)
POOL_TESTS = ("tests/kernels/test_thread_pool.py", "tests/kernels/test_threads.py")
"""The pool's own tests first: a hang there is bounded (60 s), in test_threads it is not."""
THREADS_PY = "fueltensor/engine/threads.py"
REFUSAL_TESTS = ("tests/engine/test_refusals.py",)
CLUSTER_TESTS = ("tests/tools/test_cluster.py",)
"""Run without Dask: test_dask.py's cluster test needs it, these do not."""
SEMANTICS = "fueltensor/tools/judge/semantics.py"
DECLARED = "fueltensor/tools/judge/declared.py"
SEMANTICS_TESTS = ("tests/tools/test_semantics_audit.py",)
FRAMEWORK_TESTS = ("tests/kernels/test_framework_providers.py",)
DRAFTS = "fueltensor/tools/drafts.py"
DRAFT_TESTS = ("tests/tools/test_cli_draft.py",)
CERTIFY_SRC = "fueltensor/ext/src/certify/"
CERTIFY = "fueltensor/tools/certify/"
CERTIFY_CORE_TESTS = ("tests/tools/test_certify_core.py",)
CERTIFICATE_TESTS = ("tests/tools/test_certificates.py",)
POW_REFERENCE_TESTS = ("tests/tools/test_pow_reference.py",)


@dataclass(frozen=True)
class Mutation:
    """One semantic change: replace `snippet` (which must occur exactly once) in `file`."""

    id: str
    file: str
    snippet: str
    replacement: str
    tests: tuple[str, ...]
    effect: str


M = Mutation
MUTATIONS: tuple[Mutation, ...] = (
    # -- streaming stores for large outputs (the C is rebuilt in the copy) ---------------------
    M(
        "stream-tail-dropped",
        NATIVE_SRC + "bodies.c",
        "    memcpy(c + whole, tile + whole, bytes - whole);\n",
        "",
        STREAM_TESTS,
        "the bytes of a streamed tile past its last whole 16 are never written",
    ),
    M(
        "stream-alignment-ignored",
        NATIVE_SRC + "bodies.c",
        "size_t whole = ((uintptr_t)c % 16 == 0) ? bytes / 16 * 16 : 0;",
        "size_t whole = bytes / 16 * 16;",
        STREAM_TESTS,
        "an output off 16-byte alignment is streamed anyway (a fault on x86)",
    ),
    M(
        "stream-from-the-wrong-tile",
        NATIVE_SRC + "bodies.c",
        "if (stream) stream_out((char *)c + at, tile, (size_t)(k * size));",
        "if (stream) stream_out((char *)c + at, tile + 16, (size_t)(k * size) - 16);",
        STREAM_TESTS,
        "a streamed tile is copied from 16 bytes into the tile",
    ),
    # -- the AVX-512 body (the C is rebuilt in the copy; caught on an AVX-512 machine) ----------
    M(
        "isa-avx512-never-selected",
        NATIVE_SRC + "module.c",
        '    count += count == 2 && __builtin_cpu_supports("avx512f") &&',
        '    count += 0 && __builtin_cpu_supports("avx512f") &&',
        ("tests/kernels/test_kernels_native.py",),
        "an AVX-512 CPU runs the AVX2 body (ISAS and the fingerprint say avx2)",
    ),
    M(
        "isa-widest-not-run",
        NATIVE_SRC + "module.c",
        "    N.isa = count - 1;",
        "    N.isa = count > 1 ? 1 : 0;",
        ("tests/kernels/test_kernels_native.py",),
        "the AVX2 body runs where the CPU has AVX-512, while ISAS lists it last",
    ),
    M(
        "isa-avx512-drops-the-last-lane",
        NATIVE_SRC + "bodies.c",
        "DEFINE_BODY(avx512, TARGET_AVX512, pow_pass_avx512)",
        "#define HALVES_avx512_whole HALVES_avx512\n"
        "DEFINE_BODY(avx512_whole, TARGET_AVX512, pow_pass_avx512)\n"
        "TARGET_AVX512 static void body_avx512_part(int op, int dtype, const void *a,\n"
        "    const void *b, void *c, Py_ssize_t n, const PowShortcut *s, int stream) {\n"
        "    body_avx512_whole_part(op, dtype, a, b, c, n - (n > 0), s, stream);\n}\n"
        "TARGET_AVX512 static void body_avx512(int op, int dtype, const void *a, const void *b,\n"
        "    void *c, Py_ssize_t n, const PowShortcut *s) {\n"
        "    body_avx512_whole(op, dtype, a, b, c, n - (n > 0), s);\n}",
        CPU_TESTS,
        "the AVX-512 body leaves the last element of every call unwritten",
    ),
    M(
        "isa-avx512-f16-tail-dropped",
        NATIVE_SRC + "halves.c",
        "    f16_narrow_f16c(src + i, dst + i, n - i);\n}\n#endif",
        "    f16_narrow_f16c(src + i, dst + i, n - i - (n > i));\n}\n#endif",
        CPU_TESTS,
        "the AVX-512 f16 narrowing drops the last lane after its 16-lane steps",
    ),
    # -- all cores from mid sizes (the C is rebuilt in the copy) -------------------------------
    M(
        "threads-last-chunk-skipped",
        NATIVE_SRC + "pool.c",
        "len = job->n - at < job->per ? job->n - at : job->per;",
        "len = job->n - at < job->per ? 0 : job->per;",
        THREAD_TESTS,
        "the last part of a split body is never computed",
    ),
    M(
        "threads-worker-flags-lost",
        NATIVE_SRC + "pool.c",
        "if (job->raised[w].raised) flags_merge(&job->raised[w].flags, job->raised[w].raised);",
        "(void)job->raised[w].flags;",
        THREAD_TESTS,
        "a flag raised only in a worker's part never reaches the caller's view of the run",
    ),
    M(
        "threads-worker-ignores-callers-fenv",
        NATIVE_SRC + "pool.c",
        "            env_set(&job->env);\n",
        "",
        POOL_TESTS,
        "a worker's part rounds and flushes subnormals by its own environment, not the caller's",
    ),
    M(
        "threads-chunk-short-by-one",
        NATIVE_SRC + "pool.c",
        "len = job->n - at < job->per ? job->n - at : job->per;",
        "len = job->n - at < job->per ? job->n - at : job->per - 1;",
        THREAD_TESTS,
        "a part boundary off by one: the last element before every boundary is never written",
    ),
    M(
        "threads-pool-kept-at-fork",
        NATIVE_SRC + "pool.c",
        "registered = pthread_atfork(NULL, NULL, pool_forget) == 0;",
        "registered = 1;",
        POOL_TESTS,
        "a forked child posts chunks to its parent's workers, which do not exist in it, and hangs",
    ),
    M(
        "threads-pool-started-by-any-body",
        NATIVE_SRC + "pool.c",
        "    int threads = threads_for(op, dtype, n);\n#if defined(HAVE_PTHREAD)\n"
        "    if (threads > 1) {",
        "    int threads = threads_for(op, dtype, n);\n#if defined(HAVE_PTHREAD)\n"
        "    pool_grow(1);\n    if (threads > 1) {",
        POOL_TESTS,
        "a process that never splits a body still pays for a worker",
    ),
    M(
        "threads-busy-pool-shared",
        NATIVE_SRC + "pool.c",
        "if (pthread_mutex_trylock(&N.pool.owner) == 0) {",
        "if (pthread_mutex_trylock(&N.pool.owner) == 0 || 1) {",
        POOL_TESTS,
        "a second caller posts its parts to the workers another caller is using",
    ),
    M(
        "threads-parked-worker-ignores-demand",
        NATIVE_SRC + "pool.c",
        "    while (!work_ready(NULL, w) && __atomic_load_n(&N.pool.demand, __ATOMIC_RELAXED) == "
        "seen) {",
        "    while (!work_ready(NULL, w)) {",
        POOL_TESTS,
        "a worker asleep never comes back for mid-size calls (they run alone, posting no part)",
    ),
    M(
        "threads-alone-streak-ignored",
        NATIVE_SRC + "pool.c",
        "    if (N.pool.streak > ALONE_STREAK) {",
        "    if (0) {",
        POOL_TESTS,
        "a loop of mid-size calls runs alone until a long-parked worker's own nap ends",
    ),
    M(
        "threads-repeated-scalar-blocks-short",
        FAST_SRC + "fast.h",
        "#define REPEAT_HEAP_BYTES (256 << 10)",
        "#define REPEAT_HEAP_BYTES (8 << 10)",
        ("tests/kernels/test_thread_pool.py",),
        "a long call with a Python scalar runs its body in 8 KiB calls, none long enough to split",
    ),
    M(
        "fast-oracle-nans-never-redone",
        NATIVE_SRC + "nan_scan.c",
        "        return any != 0;",
        "        return 0;",
        ("tests/reliability/test_fuzz_fast.py", "tests/engine/test_fast_path.py"),
        "the fast path's oracle keeps the ufunc's own NaNs, not the oracle's rule",
    ),
    M(
        "fast-oracle-infinity-is-a-nan",
        NATIVE_SRC + "nan_scan.c",
        "(8 * sizeof w - 1))) > above;",
        "(8 * sizeof w - 1))) >= above;",
        ("tests/engine/test_fast_path.py",),
        "the oracle's NaN scan takes an infinity for a NaN and redoes lanes that need nothing",
    ),
    M(
        "threads-threadpoolctl-never-registered",
        "fueltensor/__init__.py",
        'if "threadpoolctl" in sys.modules:',
        "if False:",
        THREAD_TESTS,
        "threadpoolctl imported before fueltensor does not see fueltensor's thread setting",
    ),
    M(
        "threads-threshold-ignored",
        NATIVE_SRC + "pool.c",
        "if (n < split_from(op, dtype)) return 1;",
        "if (n < CHUNK_ALIGN) return 1;",
        THREAD_TESTS,
        "small bodies pay for threads",
    ),
    M(
        "threads-measuring-threshold-ignored",
        NATIVE_SRC + "pool.c",
        "    if (forced > 0) return forced;\n",
        "",
        THREAD_TESTS,
        "set_parallel_from (the benchmark's lowered threshold) changes nothing",
    ),
    M(
        "threads-pow-split-as-arithmetic",
        NATIVE_SRC + "pool.c",
        "    if (op == POW) return SPLIT_POW;\n",
        "",
        THREAD_TESTS,
        "pow (powf per lane) waits for the arithmetic threshold before it splits",
    ),
    M(
        "threads-halves-split-as-f32",
        NATIVE_SRC + "pool.c",
        "    if (dtype == BF16 || dtype == F16) return SPLIT_HALF;\n",
        "",
        THREAD_TESTS,
        "the half types (widened and narrowed per tile) split no earlier than f32",
    ),
    M(
        "threads-f64-split-by-elements",
        NATIVE_SRC + "pool.c",
        "    return SPLIT_BYTES / ITEMSIZE[dtype];",
        "    return SPLIT_BYTES / 4;",
        THREAD_TESTS,
        "f64 splits from the element count f32 does, twice its bytes",
    ),
    M(
        "threads-table-crossed",
        NATIVE_SRC + "module.c",
        "PyObject *from = PyLong_FromSsize_t(split_from(op, d));",
        "PyObject *from = PyLong_FromSsize_t(split_from(d, op));",
        THREAD_TESTS,
        "SPLIT_FROM reports another op's threshold than the one its bodies split from",
    ),
    M(
        "threads-caller-returns-before-the-workers",
        NATIVE_SRC + "pool.c",
        "    pool_wait(job, parts);\n",
        "",
        POOL_TESTS,
        "the caller returns while a worker still writes its part (and its flags)",
    ),
    M(
        "threads-affinity-ignored",
        NATIVE_SRC + "pool.c",
        "threads = want < cores ? want : cores > 1 ? cores : 1;",
        "threads = want;",
        THREAD_TESTS,
        "more threads than the cores the process may run on",
    ),
    M(
        "threads-affinity-read-once",
        NATIVE_SRC + "pool.c",
        "    if (cores == 0 || now - read_at >= AFFINITY_NS) {",
        "    if (cores == 0) {",
        THREAD_TESTS,
        "a thread's first count of its cores holds for ever: a narrowed affinity still splits",
    ),
    M(
        "threads-plans-kept",
        THREADS_PY,
        "    forget_plans()\n",
        "",
        THREAD_TESTS,
        "explain shows the thread count of the setting a cached plan was made under",
    ),
    M(
        "threads-not-in-plans",
        PLANNER,
        "return (*steps[:-1], replace(steps[-1], threads=threads, body=body))",
        "return (*steps[:-1], replace(steps[-1], body=body))",
        THREAD_TESTS,
        "explain and trace never say a kernel step ran on several threads",
    ),
    M(
        "isa-body-not-in-plans",
        PLANNER,
        "return (*steps[:-1], replace(steps[-1], threads=threads, body=body))",
        "return (*steps[:-1], replace(steps[-1], threads=threads))",
        ("tests/kernels/test_kernels_native.py",),
        "explain never names the compiled body (avx512) a kernel step runs",
    ),
    # -- f32 pow: the vector powf (the C is rebuilt in the copy) -------------------------------
    M(
        "powf-invc-entry-one-ulp-off",
        POWF_VECTOR,
        "0x1.25e227b0b8eap+0,",
        "0x1.25e227b0b8ea1p+0,",
        POWF_TESTS,
        "one 1/c of the log table is a ulp off glibc's",
    ),
    M(
        "powf-log-coefficient-one-ulp-off",
        POWF_VECTOR,
        "0x1.ec70a6ca7baddp-2,",
        "0x1.ec70a6ca7badep-2,",
        POWF_TESTS,
        "a coefficient of the log2 polynomial is a ulp off glibc's",
    ),
    M(
        "powf-exp-table-entry-one-ulp-off",
        POWF_VECTOR,
        "PF.exp2[j] = u - ((uint64_t)j << 47);",
        "PF.exp2[j] = u - ((uint64_t)j << 47) + (j == 7);",
        POWF_TESTS,
        "one derived 2^(j/32) is a ulp off its definition (and glibc's)",
    ),
    M(
        "powf-short-way-without-band",
        POWF_VECTOR,
        "#define POWF_BAND (1 << 20)",
        "#define POWF_BAND 0",
        POWF_TESTS,
        "y = 2 and 0.5 round the exact value next to a midpoint, where powf rounds the other way",
    ),
    M(
        "powf-short-way-any-exponent",
        POWF_VECTOR,
        "int half = _mm512_cmp_ps_mask(y, _mm512_set1_ps(0.5f), _CMP_EQ_OQ) == 0xFFFF;",
        "int half = _mm512_cmp_ps_mask(y, _mm512_set1_ps(0.5f), _CMP_EQ_OQ) != 0;",
        POWF_TESTS,
        "AVX-512: a group with one y = 0.5 takes every lane's square root",
    ),
    M(
        "powf-avx2-short-way-range-ignored",
        POWF_VECTOR,
        "__m256i take = _mm256_andnot_si256(_mm256_or_si256(low, high), far);",
        "__m256i take = far;",
        POWF_TESTS,
        "AVX2: zeros, subnormal and overflowing squares and roots skip powf's own branches",
    ),
    M(
        "powf-avx512-log-fma-dropped",
        POWF_VECTOR,
        "__m512d r = _mm512_fmadd_pd(z, invc, _mm512_set1_pd(-1.0));",
        "__m512d r = _mm512_sub_pd(_mm512_mul_pd(z, invc), _mm512_set1_pd(1.0));",
        POWF_TESTS,
        "AVX-512: z * invc - 1 rounded twice where glibc's FMA variant rounds once",
    ),
    M(
        "powf-avx2-log-fma-dropped",
        POWF_VECTOR,
        "__m256d q = _mm256_fmadd_pd(_mm256_set1_pd(PF.poly[4]), r, y0);",
        "__m256d q = _mm256_add_pd(_mm256_mul_pd(_mm256_set1_pd(PF.poly[4]), r), y0);",
        POWF_TESTS,
        "AVX2: A4 * r + (logc + k) rounded twice where glibc's FMA variant rounds once",
    ),
    M(
        "powf-avx2-odd-power-sign-lost",
        POWF_VECTOR,
        "__m256i bias = _mm256_and_si256(l.negodd, _mm256_set1_epi32(PF_SIGN_BIAS));",
        "__m256i bias = _mm256_setzero_si256();",
        POWF_TESTS,
        "AVX2: a negative base to an odd integer power comes out positive",
    ),
    M(
        "powf-avx512-invalid-not-nan",
        POWF_VECTOR,
        "return _mm512_mask_blend_ps(l.invalid, res, _mm512_div_ps(d, d));",
        "return res;",
        POWF_TESTS,
        "AVX-512: a negative base to a non-integer power is a number, not the default NaN",
    ),
    M(
        "powf-avx2-zero-base-not-inverted",
        POWF_VECTOR,
        "    x2 = _mm256_blendv_ps(x2, _mm256_div_ps(_mm256_set1_ps(1.0f), x2), "
        "_mm256_castsi256_ps(iy));\n",
        "",
        POWF_TESTS,
        "AVX2: 0, inf or NaN to a negative power is x*x, not 1/(x*x)",
    ),
    M(
        "powf-avx512-subnormal-not-scaled",
        POWF_VECTOR,
        "__mmask16 sub = _mm512_cmplt_epi32_mask(xa, _mm512_set1_epi32(0x00800000));",
        "__mmask16 sub = 0;",
        POWF_TESTS,
        "AVX-512: a subnormal base goes to log2 unnormalized",
    ),
    M(
        "powf-avx2-range-ignored",
        POWF_VECTOR,
        "unsigned range = (powf_range_avx2(lo) | powf_range_avx2(hi) << 4) & ~(slow | rare);",
        "unsigned range = 0;",
        POWF_TESTS,
        "AVX2: results past the float range skip glibc's overflow and underflow products",
    ),
    M(
        "powf-underflow-step-moved",
        POWF_VECTOR,
        "ylogx <= -150.0 ? 0x1p-95f : 0x1.4p-75f",
        "ylogx < -150.0 ? 0x1p-95f : 0x1.4p-75f",
        POWF_TESTS,
        "y log2 x = -150 exactly gives the smallest subnormal where glibc gives 0",
    ),
    M(
        "powf-avx512-special-y-kept",
        POWF_VECTOR,
        "unsigned slow = l.special_y, rare = (unsigned)(l.special_x | l.invalid);",
        "unsigned slow = 0, rare = (unsigned)(l.special_x | l.invalid);",
        POWF_TESTS,
        "AVX-512: y = 0, inf or NaN keeps the main path's value instead of powf's",
    ),
    M(
        "powf-tail-not-written",
        POWF_VECTOR,
        "        if (gc == pc) memcpy(c + g, pc, (size_t)rest * sizeof(float));\n",
        "",
        POWF_TESTS,
        "the last few lanes of a tile (the padded group) are never written",
    ),
    M(
        "powf-any-rounding-mode",
        NATIVE_SRC + "pow_shortcut.c",
        "if (s->pass != NULL && s->on && default_fp_mode() && pow_vector_ready()) {",
        "if (s->pass != NULL && s->on && pow_vector_ready()) {",
        POWF_TESTS,
        "the vector powf runs in a rounding mode where powf's bits differ from its",
    ),
    M(
        "powf-switch-ignored",
        NATIVE_SRC + "pow_shortcut.c",
        "if (s->pass != NULL && s->on && default_fp_mode() && pow_vector_ready()) {",
        "if (s->pass != NULL && default_fp_mode() && pow_vector_ready()) {",
        POWF_TESTS,
        "FUELTENSOR_POW_SHORTCUT=0 (pow_vector(False)) leaves the vector powf running",
    ),
    M(
        "powf-recognition-blind",
        POWF_RECOGNISE,
        "if (powf_sample_differs(&passes[v], s, why, size)) return 0;",
        "powf_sample_differs(&passes[v], s, why, size);",
        POWF_TESTS,
        "a powf that differs on the sample is recognised anyway",
    ),
    M(
        "powf-libm-scan-blind",
        POWF_RECOGNISE,
        "return scan.found[0] && scan.found[1];",
        "return 1;",
        POWF_TESTS,
        "tables the libm does not hold are taken for its own",
    ),
    M(
        "powf-sample-without-witnesses",
        POWF_RECOGNISE,
        "for (size_t i = 0; i < N_WITNESS; i++, at++) {",
        "for (size_t i = 0; i < 0; i++, at++) {",
        POWF_TESTS,
        "glibc's SSE2 powf (FMA and AVX2 masked by GLIBC_TUNABLES) is taken for its FMA one",
    ),
    M(
        "powf-proof-blind",
        NATIVE_SRC + "pow_check.c",
        "if (f32_bits(got[j]) == f32_bits(want[j])) continue;",
        "if (f32_bits(got[j]) == f32_bits(got[j])) continue;",
        POWF_TESTS,
        "the proofs report no mismatch whatever the passes do",
    ),
    M(
        "powf-status-claims-it-runs",
        POW_STATUS,
        "    if not recognised:\n",
        "    if False:\n",
        POWF_TESTS,
        "the fingerprint says the vector powf runs where it was refused",
    ),
    M(
        "powf-environment-ignored",
        POW_STATUS,
        'off = os.environ.get(ENV_VAR) == "0"',
        "off = False",
        POWF_TESTS,
        "FUELTENSOR_POW_SHORTCUT=0 no longer switches the vector powf off",
    ),
    # -- planner ---------------------------------------------------------------------------
    M(
        "plan-offset-not-contiguized",
        PLANNER,
        "have = getattr(flags, flag)",
        "have = getattr(flags, flag) and flag != 'start_offset'",
        PLAN_TESTS,
        "an x[1:] operand reaches a kernel that rejects start_offset",
    ),
    M(
        "plan-reverse-not-contiguized",
        PLANNER,
        "have = getattr(flags, flag)",
        "have = getattr(flags, flag) and flag != 'reverse_strides'",
        PLAN_TESTS,
        "a flipped operand reaches a kernel that rejects reverse_strides",
    ),
    M(
        "plan-contiguize-free",
        PLANNER,
        "2 * o.count * o.dtype.itemsize",
        "0 * o.count * o.dtype.itemsize",
        PLAN_TESTS,
        "a Contiguize step is priced at 0 bytes",
    ),
    M(
        "plan-contiguize-half-price",
        PLANNER,
        "2 * o.count * o.dtype.itemsize",
        "o.count * o.dtype.itemsize",
        PLAN_TESTS,
        "a Contiguize step is priced as a read only",
    ),
    M(
        "plan-most-expensive",
        PLANNER,
        "ranked.sort(key=lambda kv: kv[0])",
        "ranked.sort(key=lambda kv: kv[0], reverse=True)",
        PLAN_TESTS,
        "the planner picks the most expensive viable plan",
    ),
    M(
        "plan-oracle-wins-ties",
        PLANNER,
        "contract.kernel_source in ORACLE_SOURCES, order",
        "contract.kernel_source not in ORACLE_SOURCES, order",
        PLAN_TESTS,
        "on a cost tie the oracle beats the production provider",
    ),
    M(
        "plan-tie-lever-names-the-winner",
        PLANNER,
        'levers.append(f"use_backend({loser.provider.name!r})")',
        'levers.append(f"use_backend({winner.provider.name!r})")',
        PLAN_TESTS,
        "a kernel outranked on registry order is told to use the winner's provider",
    ),
    M(
        "plan-tie-lever-order-reversed",
        PLANNER,
        'f"list {doc} before {first} in Registry.from_paths"',
        'f"list {first} before {doc} in Registry.from_paths"',
        PLAN_TESTS,
        "a kernel outranked on registry order is told the order it already has",
    ),
    # -- a draft provider on the command line (tools/drafts.py) ---------------------------------
    M(
        "draft-unlinked-is-an-error",
        DRAFTS,
        'return Finding(error, "error" if misses else "warning")',
        'return Finding(error, "error")',
        DRAFT_TESTS,
        "a lint fails a draft whose kernels were not named yet",
    ),
    M(
        "draft-symbol-is-the-whole-entry-point",
        DRAFTS,
        'return entry_point.rsplit("::", 1)[-1]',
        "return entry_point",
        DRAFT_TESTS,
        "an entry point NS::NAME looks for the C symbol NS::NAME",
    ),
    M(
        "draft-replaces-the-providers-map",
        DRAFTS,
        "register_provider(provider, {**(linked_entry_points(provider) or {}), **table})",
        "register_provider(provider, table)",
        DRAFT_TESTS,
        "a draft's kernels drop the entry points its provider registered before",
    ),
    M(
        "draft-module-by-its-document",
        DRAFTS,
        "            if c.entry_point not in (linked_entry_points(c.provider.name) or {}):\n",
        "            found = [Module(symbol, import_module(c.entry_point.split('::')[0]))]\n"
        "            if c.entry_point not in (linked_entry_points(c.provider.name) or {}):\n",
        DRAFT_TESTS,
        "a document's entry point imports the module it names",
    ),
    M(
        "plan-cast-read-only",
        PLANNER,
        "moved = o.count * (o.dtype.itemsize + target.itemsize)",
        "moved = o.count * target.itemsize",
        PLAN_TESTS,
        "a Cast is priced without reading its source",
    ),
    M(
        "plan-cast-not-charged",
        PLANNER,
        "cost = verdict.cost + cast_bytes",
        "cost = verdict.cost",
        PLAN_TESTS,
        "Cast bytes are left out of the plan cost",
    ),
    M(
        "plan-counts-before-repair",
        PLANNER,
        "for s, w in zip(specs, work, strict=True)}",
        "for s, w in zip(specs, operands, strict=True)}",
        PLAN_TESTS,
        "<input>_count is the operand's count before BroadcastTo",
    ),
    M(
        "plan-dtype-bytes-fixed",
        PLANNER,
        '"dtype_bytes": dtype.itemsize',
        '"dtype_bytes": 4',
        PLAN_TESTS,
        "dtype_bytes in the cost formula is not the output dtype's size",
    ),
    M(
        "plan-negative-cost-accepted",
        PLANNER,
        "    if value < 0:\n",
        "    if value < -1e300:\n",
        ("tests/reliability/test_reliability_costs.py", *PLAN_TESTS),
        "a negative bytes_moved is accepted and wins every plan",
    ),
    M(
        "plan-failing-cost-raises",
        PLANNER,
        'return f"cost.bytes_moved cannot be priced for this call: {e}"',
        "raise",
        ("tests/reliability/test_reliability_costs.py", *PLAN_TESTS),
        "a cost formula dividing by zero for one call breaks dispatch instead of rejecting",
    ),
    M(
        "plan-no-broadcast-repair",
        PLANNER,
        "if target != mine:",
        "if False:",
        PLAN_TESTS,
        "a same_as operand is not broadcast before the CPU kernel",
    ),
    M(
        "plan-rejected-flag-inverted",
        PLANNER,
        '(want == "rejected" and have)',
        '(want == "rejected" and not have)',
        PLAN_TESTS,
        "a dense operand is contiguized and a strided one is not",
    ),
    M(
        "plan-dtype-unchecked",
        PLANNER,
        "if o.dtype.fkc not in spec.dtypes:",
        "if False:",
        PLAN_TESTS,
        "a contract runs on a dtype it does not list",
    ),
    M(
        "plan-rank-unchecked",
        PLANNER,
        "if spec.rank is not None and o.layout.ndim != spec.rank:",
        "if spec.rank is not None and o.layout.ndim < spec.rank:",
        PLAN_TESTS,
        "a contract runs on a rank it does not take",
    ),
    # -- schema ----------------------------------------------------------------------------
    M(
        "schema-empty-dtypes",
        SCHEMA,
        "if not dtypes:",
        "if False:",
        SCHEMA_TESTS,
        "`dtypes: []` loads",
    ),
    M(
        "schema-output-named-like-input",
        SCHEMA,
        "if name in names or any(",
        "if any(",
        SCHEMA_TESTS,
        "an output named like an input loads",
    ),
    M(
        "schema-rule-names-input-twice",
        SCHEMA,
        "if len(set(args)) != len(args):",
        "if False:",
        SCHEMA_TESTS,
        "`broadcast(a, a)` loads",
    ),
    M(
        "schema-no-inputs",
        SCHEMA,
        "if not nodes:",
        "if False:",
        SCHEMA_TESTS,
        "`inputs: []` loads",
    ),
    M(
        "schema-no-outputs",
        SCHEMA,
        "if not items:",
        "if False:",
        SCHEMA_TESTS,
        "`outputs: []` loads",
    ),
    M(
        "schema-duplicate-output",
        SCHEMA,
        "or any(o.name == name for o in outputs)",
        "or False",
        SCHEMA_TESTS,
        "two outputs with one name load",
    ),
    M(
        "schema-duplicate-input",
        SCHEMA,
        "if any(name == n for n, _ in raw):",
        "if False:",
        SCHEMA_TESTS,
        "two inputs with one name load",
    ),
    M(
        "schema-shape-constraint-self",
        SCHEMA,
        "or other not in others:",
        "or other not in names:",
        SCHEMA_TESTS,
        "`same_as=<itself>` loads",
    ),
    M(
        "schema-negative-rank",
        SCHEMA,
        "not 0 <= rank <= bounds.MAX_RANK",
        "not -1 <= rank <= bounds.MAX_RANK",
        SCHEMA_TESTS,
        "`rank: -1` loads",
    ),
    M(
        "schema-negative-bound",
        READER,
        "or not value >= 0:",
        "or not value >= -1:",
        SCHEMA_TESTS,
        "`max_ulp: -1` loads",
    ),
    M(
        "schema-integer-minimum",
        READER,
        "not minimum <= value <= maximum",
        "not minimum - 1 <= value <= maximum",
        SCHEMA_TESTS,
        "`access_granularity_bits: 0` loads",
    ),
    M(
        "schema-formula-unknown-variable",
        READER,
        "unknown = formula.variables - variables\n        if unknown:",
        "unknown = formula.variables - variables\n        if False:",
        SCHEMA_TESTS,
        "a cost formula naming an unknown variable loads",
    ),
    M(
        "schema-missing-key",
        READER,
        "if not shape.required <= value.keys():",
        "if False:",
        SCHEMA_TESTS,
        "a document missing a required key loads (or crashes with KeyError)",
    ),
    M(
        "schema-fkc-version",
        SCHEMA,
        "if version not in FKC_VERSIONS:",
        "if False:",
        SCHEMA_TESTS,
        "`fkc_version: 2` loads",
    ),
    M(
        "schema-duplicate-dtype",
        SCHEMA,
        "if code in dtypes:",
        "if False:",
        SCHEMA_TESTS,
        "`dtypes: [F32, F32]` loads",
    ),
    M(
        "schema-duplicate-kernel",
        SCHEMA,
        "if c.name in first:",
        "if False:",
        SCHEMA_TESTS,
        "two contracts with one kernel name load",
    ),
    M(
        "schema-nested-scalar",
        SCHEMA,
        "if isinstance(child.value, (dict, list)):",
        "if False:",
        SCHEMA_TESTS,
        "`op_params: {variant: [x]}` loads",
    ),
    M(
        "schema-front-matter-disagrees",
        SCHEMA,
        "if value != expected:",
        "if False:",
        SCHEMA_TESTS,
        "a block whose backend disagrees with its front matter loads",
    ),
    M(
        "schema-alignment-power-of-two",
        SCHEMA,
        "if alignment & (alignment - 1):",
        "if False:",
        SCHEMA_TESTS,
        "`alignment_bytes: 48` loads",
    ),
    M(
        "schema-text-type",
        READER,
        "if not isinstance(node.value, str):\n            self.fail",
        "if False:\n            self.fail",
        SCHEMA_TESTS,
        "`blurb: [a list]` loads",
    ),
    # -- kernels: the pure chassis and the reference oracle -----------------------------------
    M(
        "chassis-narrow-drops-nan-payload",
        CHASSIS,
        "dst.view(_U16)[mask] = _NAN_BITS[dst.dtype](bits)",
        "dst.view(_U16)[mask] = dst.view(_U16)[mask]",
        CPU_TESTS + REFERENCE_TESTS,
        "half narrowing drops NaN payloads",
    ),
    M(
        "chassis-bf16-nan-loses-sign",
        CHASSIS,
        "return (bits >> 16) | 0x0040",
        "return ((bits >> 16) & 0x7FFF) | 0x0040",
        CPU_TESTS + REFERENCE_TESTS,
        "a bf16 NaN result loses its sign",
    ),
    M(
        "chassis-f16-nan-loses-sign",
        CHASSIS,
        "return ((bits >> 16) & 0x8000) | 0x7E00",
        "return 0x7E00",
        CPU_TESTS + REFERENCE_TESTS,
        "an f16 NaN result loses its sign and payload",
    ),
    M(
        "chassis-max-tie-not-lhs",
        CHASSIS,
        "np.maximum(lhs, rhs, out=out)\n    tie = np.equal(lhs, rhs, out=s.mask[: lhs.size])\n"
        "    np.copyto(out, lhs, where=tie)",
        "np.maximum(lhs, rhs, out=out)",
        CPU_TESTS,
        "maximum returns NumPy's choice on a ±0 tie (f32/f64 blocked path)",
    ),
    M(
        "chassis-max-pick-strict",
        CHASSIS,
        "np.greater_equal(lhs, rhs, out=mask)",
        "np.greater(lhs, rhs, out=mask)",
        CPU_TESTS,
        "half maximum returns rhs on a ±0 tie",
    ),
    M(
        "chassis-min-pick-nan",
        CHASSIS,
        "np.less_equal(lhs, rhs, out=mask)\n    nan = np.isnan(lhs, out=s.mask2[: lhs.size])\n"
        "    np.logical_or(mask, nan, out=mask)",
        "np.less_equal(lhs, rhs, out=mask)",
        CPU_TESTS,
        "half minimum returns rhs when lhs is NaN",
    ),
    M(
        "chassis-rem-trunc",
        CHASSIS,
        "np.floor(t, out=t)",
        "np.trunc(t, out=t)",
        CPU_TESTS,
        "remainder rounds the quotient toward zero (fmod) instead of down",
    ),
    M(
        "chassis-lhs-nan-not-quieted",
        CHASSIS,
        "view(uint)[both] | quiet",
        "view(uint)[both]",
        CPU_TESTS + REFERENCE_TESTS,
        "the kept lhs NaN is not quieted",
    ),
    M(
        "chassis-nan-repair-skipped",
        CHASSIS,
        "            keep_lhs_nan(lhs, rhs, out)",
        "            pass",
        CPU_TESTS,
        "NumPy's own choice of NaN stands where both operands are NaN",
    ),
    M(
        "chassis-pow-inputs-not-quieted",
        CHASSIS,
        "if op.quiet_inputs:",
        "if False:",
        CPU_TESTS,
        "half pow(1, sNaN) gives 1 instead of NaN",
    ),
    M(
        "chassis-half-rhs-widened-from-lhs",
        CHASSIS,
        "widen(rf[i:j], b)",
        "widen(lf[i:j], b)",
        CPU_TESTS,
        "half kernels read lhs twice",
    ),
    M(
        "reference-stretch-reads-stride",
        REFERENCE,
        "strides[k - offset] if k >= offset and src_shape[k - offset] != 1 else 0",
        "strides[k - offset] if k >= offset else 0",
        REFERENCE_TESTS,
        "a stretched size-1 source dim steps through the buffer instead of repeating",
    ),
    M(
        "reference-stretch-ignored",
        REFERENCE,
        "if j >= 0 and src_shape[j] != 1:",
        "if j >= 0:",
        REFERENCE_TESTS,
        "the oracle's index map walks off a size-1 axis",
    ),
    M(
        "reference-shape-unchecked",
        REFERENCE,
        "if out.shape != shape:",
        "if False:",
        REFERENCE_TESTS,
        "the oracle writes into an out of the wrong shape",
    ),
    M(
        "reference-nan-rule-skipped",
        REFERENCE,
        "        nans(lhs, rhs, out)\n",
        "",
        REFERENCE_TESTS,
        "NaNs are whatever the ufunc's loop gives (ml_dtypes, NumPy 2.2's rhs-first F32 add), "
        "not the seeds' arithmetic",
    ),
    M(
        "reference-nan-rhs-first",
        REFERENCE,
        "(a & mask) > inf, a | quiet_bit, np.where((b & mask) > inf, b | quiet_bit, made)",
        "(b & mask) > inf, b | quiet_bit, np.where((a & mask) > inf, a | quiet_bit, made)",
        REFERENCE_TESTS,
        "a NaN pair gives the rhs NaN, not the lhs NaN first",
    ),
    M(
        "compiled-status-ignored",
        COMPILED,
        "        if status:\n",
        "        if False:\n",
        COMPILED_TESTS,
        "a compiled kernel's nonzero status (its Err) is ignored and its output returned",
    ),
    # -- issue 35: foreign calls, checked runs, contract bounds, pickled tensors ---------------
    M(
        "foreign-shared-input-not-copied",
        FOREIGN,
        "    if not array.flags.writeable:\n",
        "    if False:\n",
        FOREIGN_TESTS,
        "a read-only input (a cached scalar, immutable memory) reaches a foreign kernel as is",
    ),
    M(
        "foreign-inputs-writable-again",
        FOREIGN,
        "raw = array.reshape(-1).view(np.uint8).data.toreadonly()",
        "raw = array.reshape(-1).view(np.uint8).data",
        FOREIGN_TESTS,
        "a Python kernel can set its inputs writable again and rewrite the caller's tensor",
    ),
    M(
        "foreign-guard-unchecked",
        FOREIGN,
        "    if where is not None:\n",
        "    if False:\n",
        FOREIGN_TESTS,
        "a write just past a foreign kernel's out goes unreported",
    ),
    M(
        "foreign-guard-words-unread",
        FAST_SRC + "allocator.c",
        "    return differs == 0;\n",
        "    return differs == differs;\n",
        FOREIGN_TESTS,
        "the compiled path's word-at-a-time guard check calls every zone intact",
    ),
    M(
        "foreign-kept-blocks",
        EXECUTE,
        "    if ours:\n",
        "    if True:\n",
        FOREIGN_TESTS,
        "a foreign kernel's out is one of the allocator's kept blocks, without guard zones",
    ),
    M(
        "foreign-scratch-shared",
        EXECUTE,
        "prepare(t._array, steps, ours) if steps else t._array",
        "prepare(t._array, steps) if steps else t._array",
        FOREIGN_TESTS,
        "a foreign kernel's Contiguize input is the per-thread scratch buffer",
    ),
    M(
        "foreign-default-unchecked-in-compare",
        EXECUTE,
        "    if checked is not None:\n",
        "    if False:\n",
        CHECKED_TESTS,
        "inside compare_backends the default plan's foreign kernel runs on the caller's tensors",
    ),
    M(
        "foreign-returned-array-kept",
        EXECUTE,
        'out = out if ours else np.array(out, order="C", copy=True)',
        "out = out",
        FOREIGN_TESTS,
        "a foreign kernel keeps a handle on the result it returned",
    ),
    M(
        "checked-rewrite-unnamed",
        CHECKED_REQUEST,
        "    for i, name in enumerate(c.names()[:-1]):\n",
        "    for i, name in enumerate(c.names()[:0]):\n",
        CHECKED_TESTS,
        "a crash from writing an input's own bytes back is not traced to the input",
    ),
    M(
        "fast-foreign-guards-unread",
        FAST_SRC + "foreign.c",
        "                      : check_guards(e->overrun, out, out_bytes) == 0 ? 1 : -1;",
        "                      : 1;",
        FOREIGN_TESTS,
        "a write just past a compiled provider's out on the fast path goes unreported",
    ),
    M(
        "fast-foreign-read-only-shared",
        FAST_SRC + "foreign.c",
        "        if (e->mode[k] == AS_IS) src[k] = writable_source(",
        "        if (0) src[k] = writable_source(",
        FOREIGN_TESTS,
        "on the fast path a compiled provider's kernel writes read-only memory it was handed",
    ),
    M(
        "fast-foreign-kept-blocks",
        FAST_SRC + "run.c",
        "e->kind == FOREIGN ? guarded_array(descr, e->count) : aligned_array(",
        "e->kind == FOREIGN ? aligned_array(descr, e->count) : aligned_array(",
        FOREIGN_TESTS,
        "on the fast path a compiled provider's out is a kept block, without guard zones",
    ),
    M(
        "checked-one-fill",
        CHECKED,
        "FILLS: Final = (0xA5, 0x5A)",
        "FILLS: Final = (0xA5, 0xA5)",
        CHECKED_TESTS,
        "out is poisoned twice with the same pattern: an unwritten output goes unseen",
    ),
    M(
        "checked-inputs-writable",
        CHECKED_REQUEST,
        "    readonly = [False] * len(c.inputs)",
        "    readonly = [True] * len(c.inputs)",
        CHECKED_TESTS,
        "a checked run's inputs are on writable pages (a write is found later, not stopped)",
    ),
    M(
        "checked-zones-unread",
        CHECKED_WORKER,
        "found[side] = None if changed is None else [lo + c - self.start for c in changed]",
        "found[side] = None",
        CHECKED_TESTS,
        "the worker reports no write into the zones around a buffer",
    ),
    M(
        "checked-judge-in-process",
        JUDGE_CALLS,
        "    if checked.applies(fn):\n        assert plan.kernel is not None\n        shape",
        "    if False:\n        assert plan.kernel is not None\n        shape",
        (
            "tests/tools/test_checked_runs.py::test_the_judge_survives_every_hostile_kernel_and_names_each",
        ),
        "the judge calls compiled kernels in its own process (and dies with them)",
    ),
    M(
        "checked-compare-in-process",
        COMPARE,
        "        foreign.checking(checked.output),\n",
        "",
        ("tests/tools/test_checked_runs.py",),
        "compare_backends runs a foreign kernel on the caller's tensors in its own process",
    ),
    # -- issue 41: the checked-run worker and the foreign call's floating-point environment ----
    M(
        "checked-fp-environment-kept",
        CHECKED_WORKER,
        "            _LIBC.fesetenv(self.start)\n",
        "            pass\n",
        (
            "tests/tools/test_checked_runs.py::test_a_kernel_setting_flush_to_zero_is_named_and_the_next_one_is_not_judged_under_it",
        ),
        "a kernel's flush-to-zero stays set in the worker: the next kernel is judged under it",
    ),
    M(
        "checked-fp-controls-unreported",
        CHECKED_WORKER,
        "            if was != now:\n",
        "            if False:\n",
        CHECKED_TESTS,
        "a kernel that leaves flush-to-zero or a rounding mode set passes unnamed",
    ),
    M(
        "checked-crash-once-blames-the-running-call",
        CHECKED_REQUEST,
        "            if not others:",
        "            if True:",
        CHECKED_TESTS,
        "a crash the previous kernel left is blamed on the next one, in which it does not repeat",
    ),
    M(
        "checked-dead-worker-unseen",
        CHECKED_PROCESS,
        "        if process is not None and process.exited(0):",
        "        if False:",
        CHECKED_TESTS,
        "a worker that died after a call is not noticed before the next request, which is blamed",
    ),
    M(
        "checked-threads-ignored",
        CHECKED_PROCESS,
        "        return tuple(sorted(self.ran, key=lambda k: k in self.threaded))",
        "        return tuple(self.ran)",
        CHECKED_TESTS,
        "a death a kernel's thread caused is blamed on a kernel called after it that left none",
    ),
    M(
        "checked-exit-diagnosed-as-access",
        CHECKED_REQUEST,
        "    if died.code is not None and died.code >= 0 and died.code != wire.FAILED:",
        "    if False:",
        CHECKED_TESTS,
        "a kernel's exit() is not named: it gets the writable-input diagnosis of a memory access",
    ),
    M(
        "checked-group-survives",
        CHECKED_PROCESS,
        "            os.killpg(self.popen.pid, signal.SIGKILL)",
        "            self.popen.kill()",
        CHECKED_TESTS,
        "a process a kernel forked outlives the worker, the judge and compare_backends",
    ),
    M(
        "foreign-x87-rounding-leak",
        FAST_SRC + "fast.h",
        '__asm__ volatile("fldcw %0" : : "m"(f->x87_control));',
        "(void)0;",
        FOREIGN_TESTS,
        "a compiled provider's x87 rounding mode reaches the caller's long double arithmetic",
    ),
    M(
        "judge-same-inputs-only",
        JUDGE,
        "    other = [np.roll(x, i + 1) for i, x in enumerate(operands)]",
        "    other = list(operands)",
        (
            "tests/tools/test_cheat_catalogue.py::test_the_judge_fails_every_cheat_and_passes_the_honest_kernel[f32]",
        ),
        "a kernel answering from a cache of earlier inputs passes the judge",
    ),
    M(
        "library-loaded-by-path",
        LIBRARIES,
        "    digest = hashlib.sha256(data).hexdigest()",
        "    digest = hashlib.sha256(bytes(source)).hexdigest()",
        ("tests/kernels/test_library_reload.py",),
        "a library rebuilt at the same path keeps running its first build",
    ),
    M(
        "compiled-symbol-nul",
        COMPILED,
        "    if nul:\n",
        "    if False:\n",
        ("tests/reliability/test_hostile_inputs.py",),
        "a C symbol name with a NUL resolves to the part before it",
    ),
    M(
        "schema-alignment-unbounded",
        SCHEMA,
        'c["alignment_bytes"], "caps.alignment_bytes", 1, bounds.MAX_ALIGNMENT_BYTES',
        'c["alignment_bytes"], "caps.alignment_bytes", 1, 2**63 - 1',
        SCHEMA_TESTS,
        "a document's alignment_bytes of 2**62 loads (and every call asks for exabytes)",
    ),
    M(
        "schema-control-characters",
        BOUNDS,
        '    allowed = "\\n\\t" if multiline else ""',
        '    allowed = "\\n\\t\\x1b"',
        SCHEMA_TESTS,
        "a string field holding a terminal escape loads",
    ),
    M(
        "pickle-state-unchecked",
        PICKLED,
        "    layout.check(storage.shape[0], storage.itemsize)\n",
        "",
        ("tests/reliability/test_hostile_pickles.py",),
        "a pickle's slot state builds a tensor reaching outside its buffer",
    ),
    M(
        "fast-view-of-an-empty-tensor",
        FAST_SRC + "views.c",
        "if (S.tensor == NULL || !PyObject_TypeCheck(t, S.tensor) || !tensor_ready(t)) "
        "Py_RETURN_NONE;",
        "if (S.tensor == NULL || !PyObject_TypeCheck(t, S.tensor)) Py_RETURN_NONE;",
        ("tests/reliability/test_hostile_pickles.py",),
        "x[0] of a tensor made by object.__new__ reads a NULL slot (a crash)",
    ),
    # -- compiled providers' kernels called from C (`_fast`'s FOREIGN entries and byte_call) ----
    M(
        "foreign-entry-not-made",
        DISPATCH,
        "    if type(plan.fn) is CompiledKernel:  # exactly: a subclass may call differently",
        "    if False:",
        CALL_TESTS,
        "a compiled provider's cached plan gets no fast entry: every call pays the Python path",
    ),
    M(
        "foreign-entry-for-a-subclass",
        DISPATCH,
        "    if type(plan.fn) is CompiledKernel:  # exactly: a subclass may call differently",
        "    if isinstance(plan.fn, CompiledKernel):",
        CALL_TESTS,
        "a CompiledKernel subclass's own __call__ is bypassed by the fast path",
    ),
    M(
        "foreign-broadcast-need-ignored",
        ENGINE_FAST,
        "need = plan.size if StepKind.BROADCAST_TO in steps else operand.layout.size",
        "need = operand.layout.size",
        CALL_TESTS,
        "a broadcast operand reaches the kernel at its own size, not the output's",
    ),
    M(
        "foreign-stride0-read-as-dense",
        ENGINE_FAST,
        "operand.layout.flags.contiguous and need in (0, operand.layout.size)",
        "operand.layout.flags.contiguous",
        CALL_TESTS,
        "a stride-0 broadcast view the kernel refuses is read as its storage's dense elements",
    ),
    M(
        "foreign-private-copy-off",
        FAST_SRC + "foreign.c",
        "        if (bytes[k] <= PRIVATE_BYTES) {",
        "        if (0) {",
        CALL_TESTS,
        "a kernel that writes its input changes the cached scalar every later call shares",
    ),
    M(
        "foreign-gil-never-released",
        FAST_SRC + "foreign.c",
        "    PyThreadState *state = release ? PyEval_SaveThread() : NULL;",
        "    PyThreadState *state = NULL;",
        CALL_TESTS,
        "a large compiled call holds the GIL: no other Python thread runs meanwhile",
    ),
    M(
        "foreign-entry-holds-the-gil",
        FAST_SRC + "foreign.c",
        "out, out_bytes, e->count >= GIL_FREE_FROM);",
        "out, out_bytes, 0);",
        CALL_TESTS,
        "the fast path's large compiled call holds the GIL",
    ),
    M(
        "byte-call-holds-the-gil",
        FAST_SRC + "foreign.c",
        "                                  PyArray_SIZE(a[2]) >= GIL_FREE_FROM);",
        "                                  0);",
        CALL_TESTS,
        "the Python path's large compiled call holds the GIL",
    ),
    M(
        "foreign-status-ignored",
        FAST_SRC + "foreign.c",
        "    ran = status != 0 ? raise_status(e->failure, status, bytes, out_bytes)",
        "    ran = status != 0 ? 1",
        CALL_TESTS,
        "the fast path returns the output of a kernel that reported an error",
    ),
    M(
        "foreign-flags-leak",
        FAST_SRC + "foreign.c",
        "    fp_restore(&flags);\n    return status;",
        "    return status;",
        CALL_TESTS,
        "a compiled provider's call leaves its floating-point flags raised in the caller",
    ),
    M(
        "foreign-writes-into-its-operand",
        FAST_SRC + "run.c",
        "    if (e->kind == FOREIGN || e->kind == ORACLE) return 0;",
        "    if (e->kind == ORACLE) return 0;",
        CALL_TESTS,
        "`x += y` hands a compiled provider's kernel x's own buffer as `out`",
    ),
    M(
        "foreign-entry-takes-repeat",
        FAST_SRC + "foreign.c",
        "(e->mode[k] != AS_IS && e->mode[k] != DENSIFY) || ",
        "",
        CALL_TESTS,
        "a foreign entry accepts a mode it does not run (REPEAT)",
    ),
    M(
        "byte-call-takes-a-strided-array",
        FAST_SRC + "foreign.c",
        "if (!PyArray_Check(arg) || !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)arg) ||",
        "if (!PyArray_Check(arg) ||",
        CALL_TESTS,
        "byte_call hands a strided view to C as if it were dense",
    ),
    M(
        "byte-call-writes-a-read-only-out",
        FAST_SRC + "foreign.c",
        "    if (!PyArray_ISWRITEABLE(a[2])) {",
        "    if (0) {",
        CALL_TESTS,
        "byte_call writes into a read-only output",
    ),
    M(
        "compiled-python-path-through-ctypes",
        COMPILED,
        "        if _byte_call is not None:",
        "        if False:",
        CALL_TESTS,
        "the Python path calls through ctypes: a cached scalar reaches the kernel itself",
    ),
    # -- certify: the compiled core, the sweep, certificates, the verdict ---------------------
    M(
        "certify-round-ties-away",
        CERTIFY_SRC + "rounding.c",
        "k += (rest > half) | ((rest == half) & (k & 1u));",
        "k += (rest >= half);",
        CERTIFY_CORE_TESTS,
        "the correctly rounded reference rounds ties away from zero, not to even",
    ),
    M(
        "certify-subnormal-quantum",
        CERTIFY_SRC + "rounding.c",
        "int shift = 52 - f->mantissa + (e < lowest ? lowest - e : 0);",
        "int shift = 52 - f->mantissa;",
        CERTIFY_CORE_TESTS,
        "results below the normal range are rounded as if the format had no subnormals",
    ),
    M(
        "certify-nan-vs-number-free",
        CERTIFY_SRC + "tally.c",
        "return nan_got && nan_want ? 0 : NAN_DISTANCE;",
        "return 0;",
        CERTIFY_CORE_TESTS,
        "a NaN where the correctly rounded result is a number counts as 0 ULP",
    ),
    M(
        "audit-nan-odd-power-unprobed",
        "fueltensor/tools/judge/cases.py",
        '        ("nan", "a NaN operand", b, value(f, 3.0)),\n',
        "",
        ("tests/tools/test_semantics_audit.py",),
        "the audit never raises a negative NaN to an odd power, where C's pow flips its sign",
    ),
    M(
        "certify-sampled-nan-bits-fixed",
        "fueltensor/tools/certify/sampled.py",
        "exact = (bits(g) == bits(want)) | open_nan",
        "exact = bits(g) == bits(want)",
        CERTIFICATE_TESTS,
        "a sampled certificate counts another NaN as a difference where its reference leaves it",
    ),
    M(
        "certify-flush-one-ulp-off",
        CERTIFY_SRC + "tally.c",
        "return got == (want & f->sign) && distance(f, got, want) > 1 ? SUB_OUT_FLUSHED",
        "return got == (want & f->sign) ? SUB_OUT_FLUSHED",
        CERTIFICATE_TESTS,
        "a zero one ULP from the smallest subnormal (a rounding) is counted as flushing",
    ),
    M(
        "certify-flushed-input-never",
        CERTIFY_SRC + "tally.c",
        "return got == flushed && distance(f, got, want) > 1 ? SUB_IN_FLUSHED : SUB_IN_OTHER;",
        "return SUB_IN_OTHER;",
        CERTIFICATE_TESTS,
        "a kernel reading subnormal operands as zeros is never seen doing so",
    ),
    M(
        "certify-max-last-pair",
        CERTIFY_SRC + "tally.c",
        "if (d > stats[MAX_ULP] || stats[MAX_LHS] < 0) {",
        "if (d >= stats[MAX_ULP] || stats[MAX_LHS] < 0) {",
        CERTIFY_CORE_TESTS,
        "the certificate names the last pair reaching the maximum, not the first",
    ),
    M(
        "certify-nan-rhs-first",
        CERTIFY_SRC + "reference.c",
        "    if (is_nan(f, a)) return a;\n    return is_nan(f, b) ? b : 0u;",
        "    if (is_nan(f, b)) return b;\n    return is_nan(f, a) ? a : 0u;",
        CERTIFY_CORE_TESTS,
        "the references propagate the rhs's NaN first",
    ),
    M(
        "certify-pow-never-unproven",
        CERTIFY_SRC + "reference.c",
        "return round_double(f, m - delta) != round_double(f, m + delta);",
        "return 0;",
        CERTIFY_CORE_TESTS,
        "pow's double result is trusted at a rounding boundary (exact ties included)",
    ),
    M(
        "certify-nan-form-quieted-lost",
        CERTIFY_SRC + "tally.c",
        "mask |= (uint32_t)(got == (p | f->quiet)) << FORM_QUIETED;",
        "mask |= 0;",
        CERTIFY_CORE_TESTS,
        "a quieted NaN result is not counted as quieted: the judge would fail a true declaration",
    ),
    M(
        "certify-merge-later-first",
        CERTIFY + "tally.py",
        "(p_max[0] == t_max[0] and p_max[1] < t_max[1])",
        "(p_max[0] == t_max[0] and p_max[1] > t_max[1])",
        CERTIFY_CORE_TESTS,
        "merged blocks name a later pair at the maximum: the certificate depends on block order",
    ),
    M(
        "certify-digest-order",
        CERTIFY + "sweep.py",
        "    for i in wanted:\n        merge(total, results[i].stats)",
        "    for i in reversed(wanted):\n        merge(total, results[i].stats)",
        CERTIFY_CORE_TESTS,
        "the digest chains the blocks in reverse order",
    ),
    M(
        "certify-resume-ignored",
        CERTIFY + "sweep.py",
        "results = {r.index: r for r in _resumed(state, header)}",
        "results = {r.index: r for r in _resumed(None, header)}",
        CERTIFY_CORE_TESTS,
        "a stopped sweep starts over instead of resuming from its state file",
    ),
    M(
        "certify-verdict-bound-ignored",
        CERTIFY + "verdict.py",
        "if declared is not None and _bounded(contract) and cert.max_ulp > declared:",
        "if False:",
        CERTIFICATE_TESTS,
        "the judge accepts a certificate beyond the declared max_ulp",
    ),
    M(
        "certify-verdict-bound-inclusive",
        CERTIFY + "verdict.py",
        "if declared is not None and _bounded(contract) and cert.max_ulp > declared:",
        "if declared is not None and _bounded(contract) and cert.max_ulp >= declared:",
        CERTIFICATE_TESTS,
        "the judge fails an exact kernel's certificate",
    ),
    M(
        "certify-verdict-operand-ignored",
        CERTIFY + "verdict.py",
        "sources = nans if first is None or first not in nans else [first]",
        "sources = nans",
        CERTIFICATE_TESTS,
        "the judge accepts the rhs's NaN under nan.operand: lhs",
    ),
    M(
        "certify-verdict-any-sign",
        CERTIFY + "verdict.py",
        'flip = rule.sign == "any"',
        "flip = True",
        CERTIFICATE_TESTS,
        "the judge accepts a NaN of the other sign under nan.sign: kept",
    ),
    M(
        "certify-verdict-revision-ignored",
        CERTIFY + "verdict.py",
        "if stated != revision:",
        "if False:",
        CERTIFICATE_TESTS,
        "the judge reads a certificate of another revision of the kernel",
    ),
    M(
        "certify-verdict-binary-ignored",
        CERTIFY + "verdict.py",
        'if stated.get("sha256") != binary["sha256"] or stated.get("how") != binary["how"]:',
        "if False:",
        CERTIFICATE_TESTS,
        "the judge reads a certificate of another binary as this one's",
    ),
    M(
        "certify-state-binary-unbound",
        CERTIFY + "sweep.py",
        '        "binary": job.binary,\n',
        "",
        CERTIFY_CORE_TESTS,
        "a state file written by another binary resumes under this one",
    ),
    M(
        "certify-state-cut-line-kept",
        CERTIFY + "sweep.py",
        '            if not data.endswith(b"\\n"):',
        "            if False:",
        CERTIFY_CORE_TESTS,
        "a resume appends after a line the stop cut, so every later resume fails",
    ),
    M(
        "certify-library-revision-unbound",
        CERTIFY + "binary.py",
        '    if binary["how"] != "loaded library":',
        "    if True:",
        ("tests/tools/test_cheat_catalogue.py",),
        "a rebuilt library keeps its document's revision hash in its certificate",
    ),
    M(
        "certify-verdict-formula-ignored",
        CERTIFY + "verdict.py",
        "    if equal == judged:\n        return []",
        "    if True:\n        return []",
        CERTIFICATE_TESTS,
        "a certificate off its formula on every pair is accepted where the semantics come from it",
    ),
    M(
        "certify-verdict-consistency-ignored",
        CERTIFY + "verdict.py",
        "    inconsistent = consistency(cert, contract)\n",
        "    inconsistent: list[str] = []\n",
        CERTIFICATE_TESTS,
        "a certificate edited to another dtype, provider, span or histogram is accepted",
    ),
    M(
        "certify-shape-unchecked",
        CERTIFY + "certificate.py",
        "            check_shape(data)\n",
        "            pass\n",
        CERTIFICATE_TESTS,
        "a certificate lacking a field ends in a traceback, not exit 2 naming the field",
    ),
    M(
        "judge-formula-source-ignored",
        "fueltensor/tools/judge/audit.py",
        "if p.max_ulp is None and formula and a.measured_ulp > 0:",
        "if False:",
        CERTIFICATE_TESTS,
        "the judge passes a kernel off the formula its semantics come from, with no max_ulp",
    ),
    M(
        "certify-judge-certificate-always-ok",
        "fueltensor/cli_audit.py",
        "        failed |= bool(found)",
        "        failed |= False",
        CERTIFICATE_TESTS,
        "fueltensor judge --certificate exits 0 for a certificate that contradicts its contract",
    ),
    M(
        "certify-compare-always-same",
        CERTIFY + "compare.py",
        "if a.digest == b.digest:",
        "if True:",
        CERTIFICATE_TESTS,
        "--compare calls two certificates with different bits the same",
    ),
    M(
        "certify-compare-blocks-inverted",
        CERTIFY + "compare.py",
        "return [r for r, (x, y) in zip(_ranges(a), pairs, strict=True) if x != y]",
        "return [r for r, (x, y) in zip(_ranges(a), pairs, strict=True) if x == y]",
        CERTIFICATE_TESTS,
        "--compare names the blocks that agree instead of those that differ",
    ),
    M(
        "invariance-threads-unchecked",
        "fueltensor/tools/judge/invariance.py",
        "    with running_on(1):\n        one = run()",
        "    with running_on(MAX_THREADS):\n        one = run()",
        ("tests/fkc/test_invariance.py",),
        "the threads claim compares all threads with all threads: a thread-dependent kernel passes",
    ),
    M(
        "invariance-isa-one-body",
        "fueltensor/tools/judge/invariance.py",
        "    for name in NATIVE.ISAS:\n        with _isa(name):",
        "    for name in NATIVE.ISAS:\n        with _isa(NATIVE.ISAS[-1]):",
        ("tests/fkc/test_invariance.py",),
        "the isa claim runs one body under every name: a body-dependent kernel passes",
    ),
    M(
        "invariance-switch-dropped",
        "fueltensor/tools/judge/invariance.py",
        "                env=os.environ | switch,",
        "                env=dict(os.environ),",
        ("tests/fkc/test_invariance.py",),
        "a framework's isa claim runs its default in the fresh process: the switch is never used",
    ),
    M(
        "invariance-position-claim-ignored",
        "fueltensor/fkc/semantics.py",
        'return self.position or ("invariant" if claimed else None)',
        "return self.position",
        ("tests/fkc/test_invariance.py",),
        "a position claim in invariance is never audited",
    ),
    M(
        "unary-reference-zero-sign-free",
        "fueltensor/tools/judge/references.py",
        "        zero_signs=True,\n    )\n\n\ndef _unmeasured",
        "        zero_signs=False,\n    )\n\n\ndef _unmeasured",
        ("tests/tools/test_judge_unary.py",),
        "the judge's unary reference leaves zero signs open: exp(-inf) = -0 passes precision",
    ),
    M(
        "unary-reference-rounds-twice",
        "fueltensor/tools/exact_pow.py",
        "        subnormalize=True,",
        "        subnormalize=False,",
        ("tests/tools/test_judge_unary.py",),
        "MPFR rounds to p bits below the normal range too: a subnormal result is rounded twice",
    ),
    M(
        "certify-unary-zero-sign-unchecked",
        "fueltensor/tools/certify/verdict.py",
        'zeros = data["specials"].get("zero_sign", 0) if ref.zero_signs else 0',
        "zeros = 0",
        ("tests/tools/test_certify_unary.py",),
        "a unary certificate with exp(-inf) = -0 is accepted",
    ),
    M(
        "pow-reference-mpfr-unused",
        "fueltensor/tools/exact_pow.py",
        "        precision=p,",
        "        precision=p + 1,",
        POW_REFERENCE_TESTS,
        "pow's lanes at a rounding boundary are decided one bit too fine (rounded twice)",
    ),
    # -- reports: judge and compare ------------------------------------------------------------
    M(
        "judge-bound-inclusive",
        JUDGE,
        "if p.max_ulp is not None and a.measured_ulp > p.max_ulp:",
        "if p.max_ulp is not None and a.measured_ulp >= p.max_ulp:",
        JUDGE_TESTS,
        "the judge fails every exact kernel (a failure on every row)",
    ),
    M(
        "judge-bound-ignored",
        JUDGE,
        "if p.max_ulp is not None and a.measured_ulp > p.max_ulp:",
        "if False:",
        JUDGE_TESTS,
        "the judge passes a kernel beyond its declared max_ulp",
    ),
    M(
        "judge-nan-mismatch-free",
        TESTING_DIFFERENCES,  # the judge measures with testing.errors, the one error measure
        "ulp[nan_got != nan_want] = np.inf",
        "ulp[nan_got != nan_want] = 0.0",
        JUDGE_TESTS,
        "a NaN where the reference has a number counts as 0 ULP",
    ),
    M(
        "judge-determinism-inverted",
        JUDGE,
        "if a.identical_runs != RUNS and bitwise:",
        "if a.identical_runs != RUNS and not bitwise:",
        JUDGE_TESTS,
        "a non-deterministic bitwise kernel passes",
    ),
    M(
        "judge-conformance-dropped",
        JUDGE,
        'a.failures += [f"conformance: {p}" for p in problems]',
        "a.failures += []",
        JUDGE_TESTS,
        "a kernel that breaks its return clause passes",
    ),
    M(
        "compare-ulp-zero",
        TESTING_FORMATS,
        "np.where(sa >= sb, oa - ob, ob - oa)",
        "np.where(sa >= sb, oa - oa, ob - ob)",
        (*COMPARE_TESTS, "tests/tools/test_judge.py"),
        "ulp_distance returns 0",
    ),
    M(
        "compare-ulp-sign-ignored",
        TESTING_FORMATS,
        "np.where((wide & sign) != 0, np.uint64(0) - magnitude, magnitude)",
        "np.where((wide & sign) != 0, magnitude, magnitude)",
        (*COMPARE_TESTS, "tests/tools/test_judge.py"),
        "ulp_distance(-x, x) is 0",
    ),
    M(
        "compare-equal-count",
        COMPARE,
        "int(equal.sum()),",
        "int(a.size),",
        COMPARE_TESTS,
        "the report counts every element as bit-equal",
    ),
    M(
        "compare-nan-patterns",
        COMPARE,
        "not measured.nan_mismatch.any(),",
        "True,",
        COMPARE_TESTS,
        "NaN in one output and a number in the other is reported as agreeing patterns",
    ),
    M(
        "compare-within-loose",
        COMPARISONS,
        "self.max_ulp <= max_ulp",
        "self.max_ulp <= max_ulp + 1",
        COMPARE_TESTS,
        "assert_equal(max_ulp=k) accepts k + 1 ULP",
    ),
    M(
        "compare-nan-payloads-ignored",
        COMPARISONS,
        "ignored = 0 if nan_payloads else self.nan_payloads",
        "ignored = self.nan_payloads",
        ("tests/tools/test_compare.py",),
        "assert_equal(max_ulp=0) forgives NaN-payload differences it was asked to check",
    ),
    M(
        "compare-nan-mismatch-free",
        TESTING_DIFFERENCES,
        "ulp[nan_got != nan_want] = np.inf",
        "ulp[nan_got != nan_want] = 0.0",
        COMPARE_TESTS,
        "a NaN against a number counts as 0 ULP in the report",
    ),
    M(
        "compare-payload-as-value",
        COMPARISONS,
        "marks=[c.compared and c.mismatches > c.nan_payloads for c in rows],",
        "marks=[c.compared and c.mismatches > 0 for c in rows],",
        ("tests/tools/test_compare.py", "tests/tools/test_tour_cli.py"),
        "a NaN that differs only in payload is shown as a value mismatch",
    ),
    M(
        "compare-same-provider-skipped",
        SELECTION,
        "p.kernel and p.kernel.name != name and selection.admits(p)",
        "p.kernel and p.provider != plan.provider and selection.admits(p)",
        ("tests/tools/test_compare.py", *LOOP_TESTS),
        "a second kernel of the provider that ran is never compared",
    ),
    M(
        "compare-named-kernels-ignored",
        SELECTION,
        "or plan.kernel.name in (self.kernels or ())",
        "or False",
        ("tests/tools/test_compare.py",),
        "compare_backends(kernels=[...]) compares none of the kernels named",
    ),
    M(
        "compare-within-payloads-forgiven",
        COMPARISONS,
        "payloads_ok = not nan_payloads or self.nan_payloads == 0",
        "payloads_ok = True",
        ("tests/tools/test_compare.py",),
        "assert_equal(max_ulp=1) forgives NaN payload differences it was asked to check",
    ),
    M(
        "compare-host-rows-dropped",
        COMPARE,
        "    _host_rows(report, ran)\n",
        "",
        ("tests/tools/test_compare.py", "tests/clients/test_workload.py"),
        "the host operations of a compare_backends block appear nowhere in its report",
    ),
    M(
        "compare-nothing-compared-passes",
        COMPARISONS,
        "        if not self.compared:\n",
        "        if False:\n",
        ("tests/tools/test_compare.py",),
        "assert_equal passes a block in which nothing was compared",
    ),
    M(
        "compare-group-keeps-the-first-call",
        COMPARISONS,
        "    worst = max(rows, key=lambda c: (c.mismatches > c.nan_payloads, c.max_ulp, "
        "c.mismatches))",
        "    worst = rows[0]",
        ("tests/tools/test_compare.py",),
        "a grouped row shows its first call's worst lane, not the worst call's",
    ),
    M(
        "compare-counts-rows-as-operations",
        COMPARISONS,
        "        return len({c.position for c in self.comparisons})",
        "        return len(self.comparisons)",
        ("tests/tools/test_compare.py", "tests/clients/test_workload.py"),
        "the summary counts a row per other kernel as an operation of the block",
    ),
    M(
        "dispatch-restriction-refuses-the-uncovered",
        "fueltensor/engine/choice.py",
        "    if policy.allow_host or not covered(row, operands, policy.registry, to):",
        "    if policy.allow_host:",
        ("tests/engine/test_dispatch.py",),
        "int32 + 1 raises NoKernelError under use_backend('cpu') while expm1 runs on the host",
    ),
    M(
        "dispatch-restriction-never-refuses",
        "fueltensor/engine/choice.py",
        "    return any(\n        all(fkc in spec.dtypes",
        "    return False and any(\n        all(fkc in spec.dtypes",
        ("tests/engine/test_dispatch.py", "tests/reliability/test_reliability_faults.py"),
        "a float op no allowed contract admits falls to the host under use_backend",
    ),
    M(
        "compare-reasons-dropped",
        COMPARISONS,
        "lines = [text_table(rows, NARROW_DROPS, whole=WHOLE), *self.reasons(), self.summary()]",
        "lines = [text_table(rows, NARROW_DROPS, whole=WHOLE), self.summary()]",
        ("tests/tools/test_compare.py",),
        "an operation that was not compared no longer says why",
    ),
    M(
        "timing-no-warm-up",
        TIMING,
        "        for _ in range(harness.warmup - 1):\n            call()\n",
        "",
        TIMING_TESTS,
        "the harness times a cold kernel (its first calls counted in its figure)",
    ),
    M(
        "timing-best-not-median",
        TIMING,
        "statistics.median(samples[name]),",
        "min(samples[name]),",
        TIMING_TESTS,
        "the figure is the luckiest batch, not the steady median",
    ),
    M(
        "timing-calls-miscounted",
        TIMING,
        "batch[name] * rounds,",
        "batch[name],",
        TIMING_TESTS,
        "the reported call count leaves out all but one batch",
    ),
    M(
        "timing-not-interleaved",
        TIMING,
        "for name in names[r % len(names) :] + names[: r % len(names)]:",
        "for name in names:",
        TIMING_TESTS,
        "the same candidate always runs first in a round",
    ),
    M(
        "judge-nan-bits-ignored",
        JUDGE,
        "differ = (bits(got) != bits(want)) & (ref.nan_bits | ~both_nan)",
        "differ = (bits(got) != bits(want)) & ~both_nan",
        ("tests/tools/test_judge.py", *LOOP_TESTS),
        "a maximum that loses the lhs NaN payload passes the judge",
    ),
    M(
        "judge-failure-without-lane",
        JUDGE,
        'f"max_ulp {p.max_ulp:g}{found}; worst {a.worst}"',
        'f"max_ulp {p.max_ulp:g}{found}"',
        ("tests/tools/test_judge.py",),
        "a precision failure no longer names the lane, its inputs and bits",
    ),
    M(
        "judge-legend-of-every-column",
        JUDGE_REPORT,
        "lines = [table, fit_lines(legend(shown_columns(table))), fit_lines(self.summary())]",
        "lines = [table, fit_lines(legend()), fit_lines(self.summary())]",
        ("tests/tools/test_judge.py",),
        "a narrow judge table's legend explains the columns it left out",
    ),
    M(
        "testing-quiet-bit-inverted",
        TESTING_VALUES,
        "(e == top) & ((m & np.uint64(fmt.quiet_bit)) != 0),",
        "(e == top) & ((m & np.uint64(fmt.quiet_bit)) == 0),",
        TESTING_TESTS,
        "classify calls a signaling NaN quiet (and a quiet one signaling)",
    ),
    M(
        "testing-binade-edge-lost",
        TESTING_VALUES,
        "(m == 1) | (m == mask),",
        "(m == 1),",
        TESTING_TESTS,
        "the float just below a power of two is not a binade edge",
    ),
    M(
        "testing-nan-sign-as-payload",
        TESTING_DIFFERENCES,
        "nan_g & nan_w & same_magnitude,",
        "nan_g & nan_w & False,",
        TESTING_TESTS,
        "a NaN whose sign alone differs is reported as a payload difference",
    ),
    M(
        "testing-signed-zero-as-rounding",
        TESTING_DIFFERENCES,
        "(gc == ZERO) & (wc == ZERO),",
        "(gc == ZERO) & (wc == ZERO) & False,",
        TESTING_TESTS,
        "+0 against -0 is not named a signed zero",
    ),
    M(
        "testing-ulp-bound-loose",
        TESTING_DIFFERENCES,
        "ok |= ~nan & (classes != NAN_VS_NUMBER) & (ulp <= max_ulp)",
        "ok |= ~nan & (ulp <= max_ulp + 1)",
        TESTING_TESTS,
        "assert_bits_equal(max_ulp=k) accepts k + 1 ULP and a NaN against a number",
    ),
    M(
        "testing-payload-pattern-wrong",
        TESTING_VALUES,
        '("highest payload bit", fmt.quiet_bit >> 1),',
        '("highest payload bit", fmt.quiet_bit),',
        TESTING_TESTS,
        "the 'highest payload bit' NaN sets the quiet bit instead",
    ),
    M(
        "textwidth-names-break",
        "fueltensor/tools/textwidth.py",
        '"key": re.compile(r"(?<=[ ,])"),',
        '"key": re.compile(r"(?<=[ ,_-])"),',
        ("tests/tools/test_cli_width.py",),
        "a narrow table breaks kernel and provider names at underscores and hyphens",
    ),
    # -- dispatch's compiled fast path (its entries; the C code is tested through them) ---------
    M(
        "fast-repeat-any-operand",
        DISPATCH,
        "(REPEAT if o.layout.size == 1 else DENSIFY)",
        "(REPEAT if o.layout.size <= 6 else DENSIFY)",
        FAST_TESTS,
        "a broadcast row of several elements is read as its first element repeated",
    ),
    M(
        "fast-offsets-ignored",
        DISPATCH,
        "offsets = tuple(o.layout.offset for o in operands)",
        "offsets = (0, 0)",
        FAST_TESTS,
        "a one-element view at an offset is read from its storage's first element",
    ),
    M(
        "fast-oracle-strides-unbroadcast",
        DISPATCH,
        "reference.src_strides(o.layout.shape, plan.out_shape)",
        "(0,) * len(plan.out_shape)",
        FAST_TESTS,
        "the oracle's broadcast views read the first element everywhere",
    ),
    M(
        "fast-oracle-other-ufunc",
        DISPATCH,
        "fn: fn.__fueltensor_ufunc__  # type: ignore[attr-defined]",
        "fn: np.add",
        FAST_TESTS,
        "the compiled path calls another ufunc than the oracle kernel's",
    ),
    M(
        "fast-oracle-nans-skipped",
        DISPATCH,
        "call = (ufunc, reference.nans, reference.infinity_bits(dt.np))",
        "call = (ufunc, lambda *args: None, reference.infinity_bits(dt.np))",
        FAST_TESTS,
        "the compiled path leaves out the oracle's NaN rule the Python path applies",
    ),
    M(
        "fast-strided-read-as-dense",
        DISPATCH,
        "if not prep and not operand.layout.flags.contiguous:",
        "if not prep and operand.layout.size < 0:",
        FAST_TESTS,
        "a strided operand a loose contract admits is read as dense memory",
    ),
    M(
        "fast-key-without-dtype",
        FAST_SRC + "plan_key.c",
        (
            "        parts[1] = SLOT(da, S.off_dtype_np);\n"
            "        parts[2] = SLOT(a, S.off_layout);\n"
            "        parts[3] = SLOT(db, S.off_dtype_np);\n"
        ),
        (
            "        parts[1] = SLOT(a, S.off_layout);\n"
            "        parts[2] = SLOT(a, S.off_layout);\n"
            "        parts[3] = SLOT(b, S.off_layout);\n"
        ),
        FAST_TESTS + PLAN_TESTS,
        "an F64 operation finds the plan cached for F32 operands of the same layouts",
    ),
    M(
        "fast-inplace-falls-back-out-of-place",
        "fueltensor/core/operators.py",
        '("i", inplace, "INPLACE", _python_inplace),',
        '("i", inplace, "FORWARD", _python_binary),',
        FAST_TESTS,
        "`x += y` returns a new tensor and leaves x as it was",
    ),
    M(
        "fast-inplace-strided-target-as-dense",
        FAST_SRC + "inplace.c",
        "        dense &= s == step;\n",
        "",
        FAST_TESTS,
        "`x[:, ::2] += y` writes the result over the target's first elements, side by side",
    ),
    M(
        "fast-inplace-read-only-target-written",
        FAST_SRC + "inplace.c",
        "    if (!PyArray_Check(storage) || !PyArray_ISWRITEABLE((PyArrayObject *)storage))\n",
        "    if (!PyArray_Check(storage))\n",
        FAST_TESTS,
        "`x += 1.0` writes into read-only memory (a tensor over a read-only NumPy array)",
    ),
    M(
        "fast-inplace-unchecked-strided-target",
        FAST_SRC + "inplace.c",
        "    if (reason != NULL) {\n        refuse_target(",
        "    if (0) {\n        refuse_target(",
        FAST_TESTS,
        "a refused in-place result (another shape, a broadcast target) is written anyway",
    ),
    M(
        "fast-inplace-overlap-accepted",
        FAST_SRC + "inplace.c",
        "    if (yes > 0) *reason = S.refusals[4];",
        "",
        FAST_TESTS,
        "`v += 1` through an as_strided view whose elements overlap adds twice to shared ones",
    ),
    M(
        "fast-inplace-stride0-accepted",
        FAST_SRC + "inplace.c",
        "    if (stride0) return *reason = S.refusals[3], 0;",
        "",
        FAST_TESTS,
        "`b += 1` into a broadcast_to view writes one element many times",
    ),
    M(
        "fast-index-not-wrapped",
        FAST_SRC + "views.c",
        "    add_offset(off, (Py_ssize_t)(i < 0 ? i + n : i), s, wrapped);",
        "    add_offset(off, (Py_ssize_t)i, s, wrapped);",
        VIEW_TESTS,
        "`x[-1]` reads before the view's first element instead of its last",
    ),
    M(
        "fast-index-none-no-axis",
        FAST_SRC + "views.c",
        "o++, PyLong_FromLong(1), PyLong_FromLong(0)) < 0)",
        "o++, PyLong_FromLong(1), PyLong_FromLong(1)) < 0)",
        VIEW_TESTS,
        "`x[None]` gives its new axis stride 1 (a view that walks on through storage)",
    ),
    M(
        "fast-index-bounds-unchecked",
        FAST_SRC + "views.c",
        "    if (overflow || i < -n || i >= n) {",
        "    if (overflow || i < -n - 1 || i > n) {",
        VIEW_TESTS,
        "`x[n]` returns a view past the end of axis 0 instead of raising IndexError",
    ),
    M(
        "fast-large-output-freed",
        FAST_SRC + "allocator.c",
        "    block_keep(b->data, b->size);",
        "    block_free(b->data);",
        FAST_TESTS,
        "a dying large output is freed, so the next one of its size takes fresh pages to fault in",
    ),
    M(
        "fast-large-output-untraced",
        FAST_SRC + "allocator.c",
        "        PyTraceMalloc_Track(NUMPY_TRACE_DOMAIN, (uintptr_t)p, size);",
        "",
        FAST_TESTS,
        "large outputs are invisible to tracemalloc (memory budgets then measure nothing)",
    ),
    M(
        "fast-cast-offset-kept",
        DISPATCH,
        "offsets = tuple(o.layout.offset for o in operands)",
        "offsets = tuple(o.layout.offset for o in plan.operands)",
        FAST_TESTS,
        "a cast operand (dense, from its first element) is read at the uncast view's offset",
    ),
    M(
        "fast-cast-not-applied",
        FAST_SRC + "run.c",
        "        c->operands[k] = c->cast[k];\n",
        "",
        FAST_TESTS,
        "`x + d` (f32 + f64) runs the f64 kernel on x's f32 bytes, or leaves the call to Python",
    ),
    # -- safe C: floating-point status, refusals before allocation, checked sizes ---------------
    M(
        "fast-fp-status-not-restored",
        FAST_SRC + "run.c",
        "    }\n    if (state != NULL) PyEval_RestoreThread(state);\n    fp_restore(&flags);",
        "    }\n    if (state != NULL) PyEval_RestoreThread(state);\n    (void)flags;",
        FP_STATUS_TESTS,
        "a fast `x / 0` leaves the divide-by-zero flag raised in the caller's C environment",
    ),
    M(
        "powi-fast-fp-status-not-restored",
        FAST_SRC + "run.c",
        "e->count);\n    if (state != NULL) PyEval_RestoreThread(state);\n    fp_restore(&flags);",
        "e->count);\n    if (state != NULL) PyEval_RestoreThread(state);\n    (void)flags;",
        FP_STATUS_TESTS,
        "a fast `x ** -1` leaves the divide-by-zero flag raised in the caller's C environment",
    ),
    M(
        "refuse-after-densifying",
        EXECUTE,
        "    if plan.size * plan.out_dtype.itemsize > MACHINE_BYTES:",
        "    if False:",
        REFUSAL_TESTS,
        "an impossible broadcast output densifies its operands before the allocator refuses it",
    ),
    M(
        "fast-entry-for-an-impossible-output",
        DISPATCH,
        "    if not output_fits(plan.out_shape, plan.out_dtype.itemsize):",
        "    if False:",
        REFUSAL_TESTS,
        "the compiled path tries an impossible output and raises NumPy's words, not fueltensor's",
    ),
    M(
        "fast-entry-count-wraps",
        FAST_SRC + "entries.c",
        "if (checked_size(e->dims, (int)ndim, e->itemsize, &e->count, &bytes) < 0) {",
        "e->count = 1;\n    for (Py_ssize_t k = 0; k < ndim; k++) e->count *= e->dims[k];\n"
        "    if (0) {",
        REFUSAL_TESTS,
        "an output of more than 2**64 elements gets an entry whose count wrapped around",
    ),
    M(
        "aligned-array-alignment-unchecked",
        FAST_SRC + "allocator.c",
        "!__builtin_add_overflow(*bytes, extra, nbytes))",
        "!((*nbytes = (npy_intp)((size_t)*bytes + (size_t)extra)), 0))",
        REFUSAL_TESTS,
        "size plus the alignment wraps negative: 'negative dimensions are not allowed'",
    ),
    M(
        "machine-memory-ignored",
        STORAGE,
        "MACHINE_BYTES = _machine_bytes()",
        "MACHINE_BYTES = MAX_BYTES",
        REFUSAL_TESTS,
        "a 16 PiB output is attempted (NumPy's MemoryError) where the machine could never hold it",
    ),
    # -- the judge across a cluster ----------------------------------------------------------
    M(
        "cluster-same-hardware-mismatch-only-reported",
        CLUSTER,
        "            if d.breaks_claim\n",
        "            if d.breaks_claim and not d.same_hardware\n",
        CLUSTER_TESTS,
        "bits differing on equal fingerprints are listed as a difference, never a failure",
    ),
    M(
        "cluster-fingerprints-ignored",
        CLUSTER,
        "        key = repr(sorted(m.fingerprint.items()))",
        "        key = m.name",
        CLUSTER_TESTS,
        "machines are told apart by name, so none ever shares hardware and no claim can break",
    ),
    # -- host functions' per-call machinery ------------------------------------------------------
    M(
        "host-errstate-not-restored",
        HOST,
        "        finally:\n            restore(token)\n",
        "        finally:\n            pass\n",
        HOST_TESTS,
        "after `ft.sqrt(x)` NumPy ignores every floating-point error the caller asked to raise",
    ),
    M(
        "host-adopts-a-view",
        FAST_SRC + "inplace.c",
        "int flags = NPY_ARRAY_OWNDATA | NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_WRITEABLE;",
        "int flags = NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_WRITEABLE;",
        HOST_TESTS,
        "a host function's result that views its input (or other memory) is adopted uncopied",
    ),
    M(
        "asarray-scalar-int-unbounded",
        "fueltensor/core/tensor.py",
        "_INT64_MIN <= obj <= _INT64_MAX",
        "_INT64_MIN <= obj",
        ("tests/array_api/test_asarray_scalars.py",),
        "asarray(2**63) takes the int64 short path (OverflowError) instead of NumPy's uint64",
    ),
    M(
        "asarray-scalar-bool-as-int",
        "fueltensor/core/tensor.py",
        "{bool: _dtypes.bool_, int:",
        "{bool: _dtypes.int64, int:",
        ("tests/array_api/test_asarray_scalars.py",),
        "asarray(True) is an int64 tensor, not a bool one",
    ),
    M(
        "asarray-scalar-ignores-copy-false",
        "fueltensor/core/tensor.py",
        "if want is None and copy is not False else None",
        "if want is None else None",
        ("tests/array_api/test_asarray_scalars.py",),
        "asarray(1.5, copy=False) makes a tensor instead of refusing the copy it needs",
    ),
    M(
        "host-fresh-view-declined",
        FAST_SRC + "host_calls.c",
        "        if (arrays[k] == NULL || arrays[k] == Py_None) {",
        "        if (arrays[k] == NULL) {",
        TRAMPOLINE_TESTS,
        "sqrt(x[1]) runs the Python function: the view's NumPy array (None until made) is not",
    ),
    M(
        "ruled-fresh-view-declined",
        FAST_SRC + "ruled.c",
        ("    a = a != NULL && a != Py_None ? Py_NewRef(a) : PyObject_CallOneArg(S.array_of, t);"),
        "    a = a != NULL ? Py_NewRef(a) : PyObject_CallOneArg(S.array_of, t);",
        TRAMPOLINE_TESTS,
        "any(x[0]) runs the Python function: the ruled call takes the view's None for its array",
    ),
    M(
        "host-where-scalar-result-takes-the-condition-dtype",
        FAST_SRC + "host_calls.c",
        "    *like = SLOT(t[h->like], S.off_dtype);",
        "    *like = SLOT(t[0], S.off_dtype);",
        TRAMPOLINE_TESTS,
        "a compiled where's result is adopted as the bool condition's DType, not x1's and x2's",
    ),
    M(
        "host-where-scalar-declined",
        FAST_SRC + "host_calls.c",
        "    for (int k = 1; h->arity == 3 && k < 3; k++) {",
        "    for (int k = 1; h->arity == 4 && k < 3; k++) {",
        TRAMPOLINE_TESTS,
        "where(c, nan, x) with a Python scalar runs the Python function on every call",
    ),
    M(
        "host-trampoline-skips-the-trace",
        FAST_SRC + "host_calls.c",
        "Py_TYPE(t[0]) != S.tensor) return 0;\n    int watched = busy(S.trace_var);",
        "Py_TYPE(t[0]) != S.tensor) return 0;\n    int watched = 0;",
        TRAMPOLINE_TESTS,
        "a compiled host call runs while a trace is active, so the trace misses it",
    ),
    M(
        "host-trampoline-keeps-errstate-silenced",
        FAST_SRC + "host_calls.c",
        "int reset = token == NULL ? -1 : PyContextVar_Reset(S.errstate_var, token);",
        "int reset = 0;",
        TRAMPOLINE_TESTS,
        "a compiled host call leaves NumPy's error state at all-ignore for the caller",
    ),
    M(
        "host-trampoline-stale-layout",
        FAST_SRC + "inplace.c",
        "        if (same) return Py_NewRef(*kept);",
        "        if (1) return Py_NewRef(*kept);",
        TRAMPOLINE_TESTS,
        "a compiled host call's result takes the previous result's layout (its shape)",
    ),
    M(
        "host-operator-scalars-take-python",
        FAST_SRC + "operators.c",
        (
            "if (S.tensor == NULL || Py_TYPE(x) != S.tensor || (Py_TYPE(y) != S.tensor && !is"
            "_scalar(y)))"
        ),
        "if (S.tensor == NULL || Py_TYPE(x) != S.tensor || Py_TYPE(y) != S.tensor)",
        TRAMPOLINE_TESTS,
        "`x == 1` runs the Python operator method instead of the compiled namespace function",
    ),
    M(
        "host-operator-takes-any-operand",
        FAST_SRC + "operators.c",
        (
            "if (S.tensor == NULL || Py_TYPE(x) != S.tensor || (Py_TYPE(y) != S.tensor && !is"
            "_scalar(y)))"
        ),
        "if (S.tensor == NULL || Py_TYPE(x) != S.tensor)",
        TRAMPOLINE_TESTS,
        "`x == 'a'` calls the namespace function (a TypeError) instead of returning NotImplemented",
    ),
    M(
        "host-where-any-condition",
        FAST_SRC + "host_calls.c",
        "    if (h->first != NULL && SLOT(t[0], S.off_dtype) != h->first) return 0;\n",
        "",
        TRAMPOLINE_TESTS,
        "a compiled `where` takes a float condition (NumPy's truthiness) instead of refusing it",
    ),
    M(
        "host-loop-keeps-status-flags",
        FAST_SRC + "host_calls.c",
        "    if (!info->no_floatingpoint_errors) PyUFunc_clearfperr();\n    NPY_BEGIN_THREADS_DEF;",
        "    NPY_BEGIN_THREADS_DEF;",
        (*HOST_LOOP_TESTS, *RULED_TESTS),
        "`ft.sqrt(x)` on NumPy's trivial loop, and a compiled matmul on its own, keep the "
        "caller's flags NumPy clears before the loop",
    ),
    M(
        "host-loop-empty-clears-flags",
        FAST_SRC + "host_calls.c",
        "    if (count > 0) { /* NumPy runs no loop",
        "    if (count >= 0) { /* NumPy runs no loop",
        HOST_LOOP_TESTS,
        "an empty host call clears the caller's status flags, which NumPy's ufunc call leaves",
    ),
    M(
        "host-loop-scalar-strided",
        FAST_SRC + "host_calls.c",
        "strides[k] = n == 0 ? 0 : PyArray_ITEMSIZE(a);",
        "strides[k] = PyArray_ITEMSIZE(a);",
        HOST_LOOP_TESTS,
        "`x > 0` reads the 0-d scalar as if it were as long as x",
    ),
    M(
        "host-loop-takes-strided-1d",
        FAST_SRC + "host_calls.c",
        "if (n == 1 ? PyArray_STRIDE(a, 0) != strides[k] : !PyArray_IS_C_CONTIGUOUS(a)) return 0;",
        "if (n == 1 ? 0 : !PyArray_IS_C_CONTIGUOUS(a)) return 0;",
        HOST_LOOP_TESTS,
        "`ft.sqrt(x[::3])` runs the trivial loop over the first elements instead of the view's",
    ),
    M(
        "host-loop-takes-any-layout",
        FAST_SRC + "host_calls.c",
        "if (n == 1 ? PyArray_STRIDE(a, 0) != strides[k] : !PyArray_IS_C_CONTIGUOUS(a)) return 0;",
        "if (n == 1 && PyArray_STRIDE(a, 0) != strides[k]) return 0;",
        HOST_LOOP_TESTS,
        "`ft.sqrt(x.T)` reads the transposed view's memory as if it were row-major",
    ),
    M(
        "host-loop-ignores-shapes",
        FAST_SRC + "host_calls.c",
        "} else if (n != ndim || !PyArray_CompareLists(shape, PyArray_DIMS(a), n)) {",
        "} else if (n != ndim) {",
        HOST_LOOP_TESTS,
        "operands NumPy broadcasts ((1, n) with (2, 1)) run as one loop of the first one's shape",
    ),
    M(
        "host-loop-runs-a-cast-loop",
        FAST_SRC + "host_calls.c",
        "if (PyTuple_GET_ITEM(chosen, k) != descr[k]) goto fail;",
        "if (PyTuple_GET_ITEM(chosen, k) == NULL) goto fail;",
        HOST_LOOP_TESTS,
        "`ft.sqrt` of an int32 tensor runs NumPy's float64 loop on the int32 bytes (no cast)",
    ),
    # -- ruled host calls: reductions, astype and matmul (`_fast.ruled`) ----------------------
    M(
        "ruled-skips-the-trace",
        FAST_SRC + "ruled.c",
        (
            "    int watched = busy(S.trace_var);\n"
            "    if (watched == 0) watched = busy(S.observers_var);\n    PyObject *rule = NULL;"
        ),
        "    int watched = 0;\n    PyObject *rule = NULL;",
        RULED_TESTS,
        "a compiled sum/astype/matmul runs while a trace is active, so the trace misses it",
    ),
    M(
        "ruled-keeps-errstate-silenced",
        FAST_SRC + "ruled.c",
        "if ((quiet ? 0 : PyContextVar_Reset(S.errstate_var, token)) < 0) Py_CLEAR(result);",
        "(void)0;",
        RULED_TESTS,
        "after a compiled `ft.sum(x)` NumPy ignores every floating-point error the caller raises",
    ),
    M(
        "ruled-quiet-cast-ignores-snan",
        FAST_SRC + "ruled.c",
        "        if (signaling) return 0;\n",
        "",
        RULED_TESTS,
        "a compiled f32 -> f64 cast of a signaling NaN raises under errstate(invalid='raise')",
    ),
    M(
        "ruled-quiet-cast-any-width",
        FAST_SRC + "ruled.c",
        "if (to->kind != 'f' || (wide != 4 && wide != 8) || !PyArray_ISNOTSWAPPED(a)) return 0;",
        "if (to->kind != 'f' || !PyArray_ISNOTSWAPPED(a)) return 0;",
        RULED_TESTS,
        "a compiled int32 -> float16 cast that overflows warns where the Python path is silent",
    ),
    M(
        "ruled-quiet-cast-narrowing",
        FAST_SRC + "ruled.c",
        "    if (from->kind != 'f' || size > wide || n > QUIET_SCAN ||",
        "    if (from->kind != 'f' || n > QUIET_SCAN ||",
        RULED_TESTS,
        "a compiled f64 -> f32 cast that overflows raises under errstate(over='raise')",
    ),
    M(
        "ruled-half-operands-not-widened",
        FAST_SRC + "ruled.c",
        "    if (pre != Py_None) Py_SETREF(a, cast_array(a, pre));",
        "",
        RULED_TESTS,
        "a compiled sum or mean of bf16/f16 accumulates in the half type, not in float32",
    ),
    M(
        "ruled-result-not-cast",
        FAST_SRC + "ruled.c",
        "    if ((PyObject *)PyArray_DESCR((PyArrayObject *)result) != descr)\n"
        "        Py_SETREF(result, cast_array(result, descr));",
        "",
        RULED_TESTS,
        "a compiled max of bf16 (computed in float32) returns a float32 tensor",
    ),
    M(
        "ruled-sum-into-operand-dtype",
        FAST_SRC + "ruled.c",
        "into = zero_d(work != Py_None ? (PyArray_Descr *)work",
        "into = zero_d(0 ? (PyArray_Descr *)work",
        RULED_TESTS,
        "a compiled sum of int8 accumulates (and wraps) in int8 instead of the default int64",
    ),
    M(
        "ruled-reduces-empty",
        FAST_SRC + "ruled.c",
        "    if (over == NULL || count == 0) return NULL;",
        "    if (over == NULL) return NULL;",
        RULED_TESTS,
        "a compiled mean of an empty tensor warns 'Mean of empty slice' the Python path silences",
    ),
    M(
        "ruled-matmul-mixed-dtypes",
        FAST_SRC + "ruled.c",
        "(Py_TYPE(y) != S.tensor || SLOT(y, S.off_dtype) != dtype)) return NULL;",
        "(Py_TYPE(y) != S.tensor)) return NULL;",
        RULED_TESTS,
        "a compiled f32 @ f64 rounds NumPy's promoted float64 product to float32",
    ),
    M(
        "ruled-keywords-unchecked",
        FAST_SRC + "ruled.c",
        "        else\n            return 0;\n    }\n    return 1;",
        "        else\n            continue;\n    }\n    return 1;",
        RULED_TESTS,
        "ft.sum(x, dtype=ft.float64) and x.max(out=t) run compiled with the keyword dropped",
    ),
    M(
        "ruled-keepdims-dropped",
        FAST_SRC + "ruled.c",
        "            *keepdims = v == Py_True;",
        "            *keepdims = 0;",
        RULED_TESTS,
        "ft.mean(x, axis=0, keepdims=True) loses the kept axis when compiled",
    ),
    M(
        "ruled-methods-take-python",
        FAST_SRC + "ruled.c",
        "    if (fn != NULL && Py_TYPE(fn) == &RuledType)",
        "    if (0)",
        RULED_TESTS,
        "x.sum(), x.astype(d) run the Python method and its frames instead of the compiled call",
    ),
    M(
        "ruled-matmul-takes-stacks",
        FAST_SRC + "ruled.c",
        "if (!r->host.direct || na < 1 || na > 2 || nb < 1 || nb > 2 ||",
        "if (!r->host.direct || na < 1 || na > 3 || nb < 1 || nb > 2 ||",
        RULED_TESTS,
        "a compiled (2, 3, 4) @ (4, 2) runs NumPy's loop once, as if the stack were one matrix",
    ),
    M(
        "ruled-matmul-half-in-half",
        FAST_SRC + "ruled.c",
        "    if (PyTuple_GET_ITEM(rule, 0) != Py_None) return 0;\n    PyObject *a = operand_array(",
        "    PyObject *a = operand_array(",
        RULED_TESTS,
        "a compiled f16 / bf16 matmul sums in the half type instead of float32, rounded once",
    ),
    M(
        "ruled-copy-any-layout",
        FAST_SRC + "ruled.c",
        "if (same_number(from, (PyArray_Descr *)descr) && PyArray_IS_C_CONTIGUOUS(from))",
        "if (same_number(from, (PyArray_Descr *)descr))",
        RULED_TESTS,
        "x[::2].astype(x.dtype) copies the bytes under the view, not its elements",
    ),
    M(
        "ruled-copy-any-type",
        FAST_SRC + "ruled.c",
        "(PyTypeNum_ISNUMBER(type) || PyTypeNum_ISBOOL(type));",
        "1;",
        RULED_TESTS,
        "a bfloat16 astype to itself skips ml_dtypes' cast: NumPy's flags and quieted sNaN lost",
    ),
    M(
        "ruled-half-sum-in-half",
        "fueltensor/array_api/statistical.py",
        "    return Rule(_pre(dtype), _work(out), out)",
        "    return Rule(_pre(dtype), out.np, out)",
        RULED_TESTS,
        "a sum of bf16/f16 is asked of NumPy in the half type (both paths: one rule)",
    ),
    # -- integer powers (PowIElementwise) --------------------------------------------------
    M(
        "powi-wrong-exponent",
        SCALAR_FORMS,
        "policy.registry, policy.providers, (k,)",
        "policy.registry, policy.providers, (k + 1,)",
        POWI_TESTS,
        "x ** k runs the kernel with exponent k + 1",
    ),
    M(
        "powi-loop-drops-a-bit",
        POWI,
        "    m = abs(k)\n",
        "    m = abs(k) & ~4\n",
        POWI_TESTS,
        "the square-and-multiply loop skips bit 2 of |k| (x ** 7 is x ** 3)",
    ),
    M(
        "powi-python-int-plans-pow",
        SCALAR_FORMS,
        "if isinstance(value, int | np.integer):",
        "if isinstance(value, np.integer):",
        POWI_TESTS,
        "a Python int exponent plans PowElementwise (powf) instead of PowIElementwise",
    ),
    M(
        "powi-minus-one-in-f32",
        POWI,
        "        np.divide(1, x, out=out)\n",
        "        np.divide(1, x.astype(np.float32), out=out)\n",
        POWI_TESTS,
        "x ** -1 on F64 is a reciprocal rounded to f32",
    ),
    M(
        "powi-minus-one-not-reciprocated",
        POWI,
        "    if k < 0:\n",
        "    if k < -1:\n",
        POWI_TESTS,
        "the loop returns x for k = -1 (the half types' path), not 1 / x",
    ),
    M(
        "powi-one-quiets-nans",
        POWI,
        "        if k == 1:\n",
        "        if k == 1 and x.dtype.itemsize > 8:\n",
        POWI_TESTS,
        "x ** 1 runs the loop, whose 1 * x quiets a signalling NaN, instead of copying x",
    ),
    M(
        "powi-fast-wrong-exponent",
        FAST_SRC + "run.c",
        "run_powi(e->kdtype, src, e->exponent, out, e->count);",
        "run_powi(e->kdtype, src, e->exponent + 1, out, e->count);",
        POWI_FAST_TESTS,
        "the compiled path runs x ** k's cached PowI plan with exponent k + 1",
    ),
    M(
        "powi-fast-path-finds-the-float-plan",
        FAST_SRC + "run.c",
        "int form = ta && is_integer(b) ? PySet_Contains(S.integer_forms, op) : 0;",
        "int form = 0 && is_integer(b) ? PySet_Contains(S.integer_forms, op) : 0;",
        POWI_FAST_TESTS,
        "the compiled path looks x ** 3 up under its scalar's 0-d tensor: x ** 3.0's plan (powf)",
    ),
    M(
        "powi-fast-serves-under-a-trace",
        FAST_SRC + "run.c",
        "    if (watched != 0) return watched < 0 ? -1 : 0;\n    if (form) {",
        "    if (watched != 0 && !form) return watched < 0 ? -1 : 0;\n    if (form) {",
        POWI_FAST_TESTS,
        "x ** 3 runs compiled while a trace is active, so the trace misses its PowI plan",
    ),
    M(
        "powi-fast-key-ignores-the-exponent",
        FAST_SRC + "plan_key.c",
        "    parts[4] = k;\n",
        "    parts[4] = op;\n",
        POWI_FAST_TESTS,
        "the integer-scalar form's key leaves k out: x ** 3 finds x ** 2's cached plan",
    ),
    M(
        "powi-fast-reads-a-view-as-dense",
        "fueltensor/engine/fast.py",
        "(fast.DENSIFY if kinds else fast.AS_IS, fast.AS_IS),",
        "(fast.AS_IS, fast.AS_IS),",
        POWI_FAST_TESTS,
        "a strided view's x ** 3 reads its storage as if dense instead of its Contiguize copy",
    ),
    M(
        "powi-c-loop-drops-a-bit",
        NATIVE_SRC + "powi.c",
        "uint32_t m = k < 0 ? 0u - (uint32_t)k : (uint32_t)k;",
        "uint32_t m = k < 0 ? 0u - (uint32_t)k : (uint32_t)k & ~4u;",
        POWI_FAST_TESTS,
        "the compiled loop skips bit 2 of a positive k (x ** 7 is x ** 3)",
    ),
    M(
        "powi-c-one-quiets-nans",
        NATIVE_SRC + "powi.c",
        "    if (k == 1) {\n        memcpy(",
        "    if (k == 1 && dtype > F16) {\n        memcpy(",
        POWI_FAST_TESTS,
        "the compiled x ** 1 runs the loop, whose 1 * x quiets a signalling NaN",
    ),
    M(
        "inplace-body-writes-over-its-operand",
        NATIVE_SRC + "bodies.c",
        "    if (c != a && c != b) {\n        if (stream)",
        "    if (1) {\n        if (stream)",
        ("tests/engine/test_fast_inplace.py",),
        "an in-place body runs its loops straight into the operand they read (f32 pow's powf "
        "lanes re-read operands the shortcut has overwritten)",
    ),
    M(
        "inplace-loop-takes-pow",
        NATIVE_SRC + "bodies.c",
        "    if (op != POW && dtype == F32) {",
        "    if (dtype == F32) {",
        ("tests/engine/test_fast_inplace.py",),
        "f32 `x **= y` runs the in-place lane loops, which have no pow (it computes remainder)",
    ),
    M(
        "inplace-loop-swaps-operands",
        NATIVE_SRC + "bodies.c",
        "        f64_loop_in_place(op, a, b, c, n);",
        "        f64_loop_in_place(op, b, a, c, n);",
        ("tests/engine/test_fast_inplace.py",),
        "f64 `x op= y` in place computes y op x (subtract, divide, the NaN-first rule)",
    ),
    M(
        "inplace-loop-drops-the-last-lane",
        NATIVE_SRC + "bodies.c",
        "        f32_loop_in_place(op, a, b, c, n);",
        "        f32_loop_in_place(op, a, b, c, n - 1);",
        ("tests/engine/test_fast_inplace.py",),
        "f32 `x op= y` in place leaves its last element unwritten (a tail past the vectors)",
    ),
    M(
        "inplace-direct-despite-overlap",
        FAST_SRC + "run.c",
        "        if (!apart) return 0;",
        "        (void)apart;",
        ("tests/engine/test_fast_inplace.py",),
        "x[1:] += x[:-1] writes straight into x while the kernel still reads the shifted operand",
    ),
    M(
        "inplace-direct-oracle",
        FAST_SRC + "run.c",
        "    if (e->kind == FOREIGN || e->kind == ORACLE) return 0;",
        "    if (e->kind == FOREIGN) return 0;",
        ("tests/engine/test_fast_inplace.py",),
        "an oracle call writes into its target, then re-reads the overwritten operands for "
        "their NaN lanes",
    ),
    M(
        "powi-c-halves-swap-narrowing",
        NATIVE_SRC + "powi.c",
        "Narrow narrow = dtype == BF16 ? h->bf16_narrow : h->f16_narrow;",
        "Narrow narrow = dtype != BF16 ? h->bf16_narrow : h->f16_narrow;",
        POWI_FAST_TESTS,
        "the compiled half-type powi narrows bf16 results as f16 and f16 results as bf16",
    ),
    M(
        "powi-c-block-skips-a-vector",
        NATIVE_SRC + "powi.c",
        "                for (int v = 0; v < POWI_VECTORS; v++) r[v] *= y[v];",
        "                for (int v = 1; v < POWI_VECTORS; v++) r[v] *= y[v];",
        POWI_FAST_TESTS,
        "the first vector of every compiled block never multiplies (its lanes give 1)",
    ),
    M(
        "powi-c-tail-dropped",
        NATIVE_SRC + "powi.c",
        "if (i == n) return;",
        "if (i >= 0) return;",
        POWI_FAST_TESTS,
        "the elements after the last whole vector block are never written",
    ),
    M(
        "powi-c-block-tests-the-wrong-bit",
        NATIVE_SRC + "powi.c",
        "if (m & 1u)",
        "if (m & 2u)",
        POWI_FAST_TESTS,
        "the compiled blocks test the wrong bit of |k| (x ** 3 multiplies by x ** 2 only)",
    ),
    M(
        "powi-c-avx2-runs-baseline-loops",
        NATIVE_SRC + "powi.c",
        "DEFINE_POWI_BODY(avx2, TARGET_AVX2_F16C, 8, 4)",
        "#define powi_f64xas_f32_powi powi_f32x8_powi\n"
        "DEFINE_POWI_BODY(avx2, TARGET_AVX2_F16C, 8, as_f32)",
        POWI_FAST_TESTS,
        "the AVX2 body runs f64 tensors through the f32 loop",
    ),
    M(
        "powi-c-avx512-runs-f64-as-f32",
        NATIVE_SRC + "powi.c",
        "DEFINE_POWI_BODY(avx512, TARGET_AVX512, 16, 8)",
        "#define powi_f64xas_f32_powi powi_f32x16_powi\n"
        "DEFINE_POWI_BODY(avx512, TARGET_AVX512, 16, as_f32)",
        POWI_FAST_TESTS,
        "the AVX-512 body runs f64 tensors through the f32 loop",
    ),
    M(
        "powi-c-threads-one-part",
        NATIVE_SRC + "powi.c",
        "        split_run(&job, threads);\n",
        "        job.n = job.n / 2;\n        split_run(&job, threads);\n",
        THREAD_TESTS,
        "a split integer power computes the first half of its elements only",
    ),
    M(
        "param-range-off-by-one",
        "fueltensor/fkc/schema.py",
        "if not low <= number <= high:",
        "if not low <= number <= high + 1:",
        PARAM_TESTS,
        "an i32 parameter admits 2**31, so x ** 2**31 reaches the PowI kernel",
    ),
    M(
        "param-type-unchecked",
        SCHEMA,
        'r.string(entries["type"], f"{where}.type", PARAM_TYPES)',
        'r.string(entries["type"], f"{where}.type")',
        PARAM_TESTS,
        "a parameter of an unknown type loads (and fails later, far from its line)",
    ),
    M(
        "judge-powi-outside-domain",
        "fueltensor/tools/judge/references.py",
        "    return out | (abs(k) > POWI_SWEEP)",
        "    return out & (abs(k) > POWI_SWEEP)",
        JUDGE_TESTS,
        "the judge measures PowI lanes whose intermediate powers overflow (no bound holds there)",
    ),
    # -- declared semantics, their audit and the framework providers ---------------------------
    M(
        "semantics-zero-tie-unchecked",
        SEMANTICS,
        "    return pattern in allowed[declared]",
        "    return True",
        SEMANTICS_TESTS,
        "a document declaring the wrong ±0 tie passes the judge",
    ),
    M(
        "semantics-nan-payload-ignored",
        SEMANTICS,
        "        if any(m is not None and m | sign == pattern | sign for m in made):",
        "        if any(m is not None for m in made):",
        SEMANTICS_TESTS,
        "any NaN passes for a declared payload rule (kept, quieted, canonical)",
    ),
    M(
        "semantics-position-unchecked",
        SEMANTICS,
        '    if position in (None, "dependent"):',
        "    if True:",
        SEMANTICS_TESTS,
        "a kernel whose bits depend on the length of the call passes as position-invariant",
    ),
    M(
        "semantics-sweep-stays-aligned",
        "fueltensor/tools/judge/positions.py",
        "    array = raw[offset : offset + nbytes].view(dtype)",
        "    array = raw[:nbytes].view(dtype)",
        SEMANTICS_TESTS,
        "the position sweep never moves an operand off a 64-byte boundary",
    ),
    M(
        "semantics-remainder-reference-ignores-definition",
        DECLARED,
        '    if sem.remainder is not None and sem.remainder.definition == "fmod":',
        "    if False:",
        SEMANTICS_TESTS,
        "an fmod remainder is measured against the seeds' floor formula",
    ),
    M(
        "semantics-flush-ignored",
        DECLARED,
        '    if sem.subnormals == "flushed":',
        "    if False:",
        SEMANTICS_TESTS,
        "a kernel declared to flush subnormals is measured against one that keeps them",
    ),
    M(
        "semantics-remeasure-trusts-the-document",
        SEMANTICS,
        "    if there is None or here is None or here == there:\n        return failures, []",
        "    if True:\n        return failures, []",
        SEMANTICS_TESTS,
        "a document measured on another framework version or ISA fails instead of re-measuring",
    ),
    M(
        "semantics-selection-holds-every-nan",
        DECLARED,
        "    return replace(ref, nan_bits=ref.nan_bits and own)",
        "    return ref",
        SEMANTICS_TESTS,
        "a framework whose maximum gives canonical NaNs fails precision though it declares so",
    ),
    M(
        "semantics-selection-tie-ignored",
        DECLARED,
        '    if sem.zero_tie in ("rhs", "ordered"):',
        "    if False:",
        SEMANTICS_TESTS,
        "a selection's reference breaks every ±0 tie for lhs, whatever the contract declares",
    ),
    M(
        "compare-classes-remainder-sign-lost",
        "fueltensor/tools/differences.py",
        "    if op_kind == OpKind.REM:",
        "    if False:",
        ("tests/tools/test_compare_classes.py",),
        "a zero remainder of the other sign is reported as a plain signed zero",
    ),
    M(
        "compare-classes-nan-sign-apart",
        "fueltensor/tools/differences.py",
        "    found = np.where(found == NAN_SIGN, NAN_PAYLOAD, found)",
        "    found = np.where(found == NAN_SIGN, NAN_SIGN, found)",
        ("tests/tools/test_compare_classes.py",),
        "a NaN's sign is reported as a class of its own, not with its payload",
    ),
    M(
        "semantics-listed-twice",
        "fueltensor/fkc/semantics.py",
        "        if value in values:\n",
        "        if False:\n",
        ("tests/fkc/test_fkc_semantics.py",),
        "a semantics list naming a value twice loads",
    ),
    M(
        "semantics-in-the-revision-hash",
        "fueltensor/fkc/schema.py",
        'UNHASHED: Final = ("kernel_revision_hash", "semantics")',
        'UNHASHED: Final = ("kernel_revision_hash",)',
        ("tests/fkc/test_fkc_semantics.py", "tests/fkc/test_fkc_parse.py"),
        "declaring semantics makes a new kernel revision (the seeds' hashes change)",
    ),
    M(
        "frameworks-join-by-default",
        "fueltensor/registry.py",
        "        if providers is None and not self.joins(contract.provider):",
        "        if False:",
        FRAMEWORK_TESTS,
        "installing a framework changes what x + y runs: its contracts compete by default",
    ),
    M(
        "frameworks-compare-misses-named",
        COMPARE,
        "        named = with_named(planning, plan, reg, selection.named(reg))",
        "        named = planning",
        FRAMEWORK_TESTS,
        "compare_backends('cpu', 'numpy') never runs NumPy's kernels",
    ),
    M(
        "frameworks-missing-not-said",
        "fueltensor/engine/backends.py",
        "    require(providers or ())\n",
        "",
        FRAMEWORK_TESTS,
        "use_backend('torch') without PyTorch enters, and fails later without naming the install",
    ),
    M(
        "frameworks-judge-audits-everyone",
        "fueltensor/tools/judge/run.py",
        "            and (reg.joins(c.provider) if names is None else c.provider.name in names)",
        "            and (True if names is None else c.provider.name in names)",
        ("tests/kernels/test_framework_providers.py", "tests/repo/test_notebooks.py"),
        "fueltensor judge audits the named-only frameworks too (a default run imports torch, jax)",
    ),
    M(
        "frameworks-bf16-through-floats",
        "fueltensor/kernels/frameworks/torch_provider.py",
        "        return torch.from_dlpack(bits(array)).view(torch.bfloat16)",
        "        return torch.from_dlpack(array.astype(np.float32)).to(torch.bfloat16)",
        FRAMEWORK_TESTS,
        "bfloat16 reaches PyTorch through floats: a copy, and NaN payloads rewritten",
    ),
    M(
        "frameworks-jax-f64-without-x64",
        "fueltensor/kernels/frameworks/jax_provider.py",
        "    x64 = jax.enable_x64(True) if dtype == _F64 else nullcontext()",
        "    x64 = nullcontext()",
        FRAMEWORK_TESTS,
        "JAX computes F64 in float32 (its x64 switch off)",
    ),
)


def copy_tree(dest: Path) -> None:
    """The files git tracks (plus the built extensions) copied to `dest`."""
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    kernels = ROOT / "fueltensor" / "ext"
    extra = [p.relative_to(ROOT) for p in kernels.glob("_*.so")]  # untracked
    for rel in [Path(f.decode()) for f in files if f] + extra:
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def rebuild(copy: Path) -> bool:
    """Build the copy's mutated C extension in place; False when it does not compile (the
    mutation is then caught by the build)."""
    done = subprocess.run(
        [sys.executable, "setup.py", "build_ext", "--inplace", "--force"],
        cwd=copy,
        capture_output=True,
        check=False,
    )
    built = list((copy / "fueltensor" / "ext").glob("_native*.so"))
    said = done.stderr.lower()  # an optional extension's failure is said, not raised
    return (
        done.returncode == 0 and b"failed" not in said and b"not built" not in said and bool(built)
    )


def pytest_run(copy: Path, tests: tuple[str, ...], timeout: float) -> tuple[str, float]:
    """ "pass", "fail", "crash" (pytest killed by a signal: a mutant that faults) or "timeout" of
    `pytest -x -q` on `tests` in the copy, and the seconds."""
    env = dict(os.environ, PYTHONPATH=str(copy), CI="1")
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-x",
        "-q",
        "-p",
        "no:randomly",
        "-p",
        "no:cacheprovider",
    ]
    start = time.monotonic()
    try:
        done = subprocess.run(
            [*cmd, *tests], cwd=copy, env=env, capture_output=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - start
    seconds = time.monotonic() - start
    if done.returncode == 0:
        return "pass", seconds
    if done.returncode == 1:
        return "fail", seconds
    if done.returncode < 0:
        return "crash", seconds
    tail = done.stdout.decode(errors="replace")[-2000:] + done.stderr.decode(errors="replace")
    raise RuntimeError(f"pytest could not run {tests} (exit {done.returncode}):\n{tail}")


def check_shadowing(copy: Path) -> None:
    """Refuse to run unless the copy's package is the one the tests import."""
    env = dict(os.environ, PYTHONPATH=str(copy))
    where = subprocess.run(
        [sys.executable, "-c", "import fueltensor; print(fueltensor.__file__)"],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if not Path(where).resolve().is_relative_to(copy.resolve()):
        raise SystemExit(f"the tests would import {where}, not the mutated copy in {copy}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("prefixes", nargs="*", help="run only mutations whose id starts so")
    parser.add_argument("--list", action="store_true", help="print the catalogue and exit")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per pytest run")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTATIONS if not args.prefixes or m.id.startswith(tuple(args.prefixes))]
    if args.list:
        for m in chosen:
            print(f"{m.id:36} {m.file}: {m.effect}")
        return 0
    caught: list[str] = []
    survivors: list[Mutation] = []
    stale: list[Mutation] = []
    with tempfile.TemporaryDirectory(prefix="fueltensor-mutate-") as tmp:
        copy = Path(tmp)
        copy_tree(copy)
        check_shadowing(copy)
        if any(m.file.endswith((".c", ".h")) for m in chosen) and not rebuild(copy):
            # Else every C mutant would count as caught by a build that fails anyway (an old
            # setuptools that cannot read pyproject.toml's license field, no compiler...).
            raise SystemExit(
                "the unmutated C extensions do not build in the copy "
                f"(`{sys.executable} setup.py build_ext --inplace`): fix that first"
            )
        for m in chosen:
            path = copy / m.file
            original = path.read_text(encoding="utf-8")
            if original.count(m.snippet) != 1:
                stale.append(m)
                print(f"stale     {m.id}: snippet found {original.count(m.snippet)} times")
                continue
            path.write_text(original.replace(m.snippet, m.replacement), encoding="utf-8")
            compiled = m.file.endswith((".c", ".h"))
            built = copy / "fueltensor" / "ext"
            saved = {p: p.read_bytes() for p in built.glob("*.so")} if compiled else {}
            try:
                if compiled and not rebuild(copy):
                    verdict, seconds = "fail", 0.0
                else:
                    verdict, seconds = pytest_run(copy, m.tests, args.timeout)
            finally:
                path.write_text(original, encoding="utf-8")
                if compiled:  # back to the unmutated build, without the extensions it added
                    for p in built.glob("*.so"):
                        if p not in saved:
                            p.unlink()
                    for p, data in saved.items():
                        p.write_bytes(data)
            if verdict == "pass":
                survivors.append(m)
            else:
                caught.append(m.id)
            label = "SURVIVED" if verdict == "pass" else f"caught ({verdict})"
            print(f"{label:9} {m.id} [{seconds:.0f} s]", flush=True)
    total = len(caught) + len(survivors)
    print(f"\nmutation score: {len(caught)}/{total} caught, {len(stale)} stale")
    for m in survivors:
        print(f"  survivor {m.id}: {m.file}: {m.effect}")
    for m in stale:
        print(f"  stale    {m.id}: {m.file}: snippet {m.snippet!r} not found once")
    return 0 if not survivors and not stale else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
