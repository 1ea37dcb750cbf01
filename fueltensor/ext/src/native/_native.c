/* Compiled fast path for fuel-cpu-backend's 32 kernels (the pure-NumPy chassis is the fallback;
 * both are tested against one scalar reference, and pow is the C library's powf/pow in both),
 * and `copy_strided`, the planner's Contiguize (a cache-blocked copy of any strided layout into
 * a dense buffer). fuel-reference-backend shares none of this: it is the independent oracle.
 *
 * One pass per element instead of NumPy's several: maximum/minimum pick lhs on a ±0 tie in the
 * same compare, and the half types widen, compute and narrow tile by tile in L1 (F16C on x86).
 * Build with -ffp-contract=off and without -ffast-math: every step is one rounded IEEE operation
 * (unary.c alone lets its polynomials fuse a multiply and an add: its header says why).
 * The NaN rules are explicit, never left to the operand order the compiler picks: arithmetic
 * returns the first NaN operand (lhs first) quieted, maximum/minimum a NaN operand unchanged.
 */
/* A unity build: the parts below are included in dependency order, so the kernels inline
 * across them as they did in one file; the reductions and the contraction are the second unit,
 * `_shaped.c`, compiled beside this one. Each part holds one concern:
 *   powf_vector.c   glibc's powf vectorized (AVX2, AVX-512): its tables and passes
 *   pow_shortcut.c  f32 pow: the vector powf where it is recognised, else powf per lane
 *   loops.c         the working-precision loops (f32, f64) from one definition
 *   halves.c        bf16/f16: widen, compute in f32, narrow once (F16C on x86)
 *   bodies.c        one kernel body per instruction set, tiled, with streamed stores
 *   pool.c          all cores at large sizes: the persistent worker pool
 *   powi.c          integer powers (PowIElementwise) in vector blocks
 *   unary.c         the unary functions: in double vectors, rounded once
 *   nan_scan.c      the oracle's NaN scan, for `_fast`
 *   copy.c          Contiguize: the cache-blocked strided copy
 *   calls.c         the Python interface: buffers, binary, threads, copy_strided
 *   compare.c       the comparisons (<, <=, ==, !=, >, >=): bodies and `compare`
 *   ternary.c       where and clip: bodies and `ternary`
 *   cast.c          the casts between the six float formats: bodies and `cast`
 *   powf_recognise.c  whether the platform powf is the algorithm the vector powf follows
 *   pow_check.c     the vector powf's switch, status and proofs against powf
 *   module.c        module init: the tables, constants and capsules `_fast` reads */
#include "native.h"

#include "powf_vector.c"
#include "pow_shortcut.c"
#include "loops.c"
#include "halves.c"
#include "bodies.c"
#include "pool.c"
#include "powi.c"
#include "unary.c"
#include "nan_scan.c"
#include "copy.c"
#include "calls.c"
#include "compare.c"
#include "ternary.c"
#include "cast.c"
#include "powf_recognise.c"
#include "pow_check.c"
#include "module.c"
