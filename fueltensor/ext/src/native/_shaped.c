/* The second translation unit of `_native`: the families of C ABI version 2 that take shaped
 * operands, the reductions and the contraction (docs/ops.md, docs/matmul.md). Apart from
 * `_native.c` so that the two compile at once (setup.py builds an extension's units in
 * parallel: about half the build's time on two cores); what both use is declared SHARED in
 * native.h and defined in `_native.c`; the helpers both inline are native.h's (the bit views)
 * and halves.h's (the half conversions, compiled into each, the unused ones dropped).
 *   reduce.c        sum, prod, max, min over axes in a fixed order: the sums and products
 *   reduce_extreme.c  its max and min
 *   reduce_kernel.c   its parts (per instruction set), parameters and the REDUCE kernel
 *   reduce_call.c   its Python interface, `reduce`
 *   argreduce.c     argmax, argmin over axes: the first index of the extreme, and `argreduce`
 *   matmul.c        matmul: packed float32 panels, FMA micro-kernels, the MATMUL kernel
 *   matmul_pairs.c  its BF16 pairs order (VDPBF16PS, or its emulation on every other body)
 *   matmul_run.c    its parts, threads and the MATMUL kernel
 *   matmul_call.c   its Python interface, `contract` */
#include "native.h"

#include "halves.h"
#include "reduce.c"
#include "reduce_extreme.c"
#include "reduce_kernel.c"
#include "reduce_call.c"
#include "argreduce.c"
#include "matmul.c"
#include "matmul_pairs.c"
#include "matmul_run.c"
#include "matmul_call.c"
