/* Dispatch's compiled fast path: a contract operation on two tensors, or a tensor and a Python
 * float / int / bool, whose plan is already cached with a fast entry (`entry`, made by dispatch
 * when it caches the plan) and that no trace or observer watches, runs here in one C call: read
 * the plan cache as `dispatch.choose` does (the last lookups remembered by the identity of the
 * key's parts, see `cached`), allocate a 64-byte-aligned output, run the
 * plan's kernel and wrap the result as `FuelTensor._from_dense` would. Anything else returns
 * None and dispatch's Python path runs, so plans, bits, traces and observers are that path's.
 *
 * Three kinds of plans have entries:
 * - a compiled fuel-cpu-backend kernel with no step but BroadcastTo / Contiguize: the body of
 *   `_native` runs here. An operand the plan densifies is copied with `_native`'s strided copy
 *   (up to 1 MiB; larger ones take the Python path, which reuses a per-thread buffer), except a
 *   single element broadcast to the output (a scalar): that one is repeated into one small block
 *   and the kernel runs over the output block by block. The plan still says BroadcastTo and
 *   Contiguize; running those steps a block at a time is how this code executes them (the
 *   kernels are element-wise, so the bits are the plan's), and it never makes the full copy.
 * - a fuel-reference-backend oracle kernel whose operands are dense or Contiguized (up to
 *   1 MiB) at their own shapes: the call the oracle makes, its ufunc on the broadcast views it
 *   builds (`reference.broadcast_src_view`'s strides, given by dispatch) with `out=`, under
 *   NumPy's all-ignore error state.
 * - a compiled provider's kernel (`kernels.compiled`, the FKC byte-kernel C ABI) on operands of
 *   the output's dtype, each dense or the plan's dense copy (Contiguize, after a BroadcastTo to
 *   the output's shape; up to 1 MiB): its function is called here (foreign.c) on whole buffers,
 *   as the Python path calls it, and a nonzero status raises that path's KernelStatusError.
 * An operand any kind reads may first have a Cast step (mixed dtypes): the `astype` call
 * `execute.prepare` makes, under the caller's error state as there, gives a dense operand of
 * its own shape, read as above.
 *
 * A Python scalar becomes the 0-d tensor `scalars.scalar_tensor` makes (which raises OverflowError
 * for an int the dtype cannot hold), kept in a small cache keyed by its type, its exact bits
 * (so -0.0 and 0.0, and NaN payloads, stay apart) and the other operand's dtype.
 *
 * `inplace` serves `x op= y` the same way once `inplace_reason` accepts the output's dtype and
 * shape (`tensor.check_inplace`'s error otherwise, the target untouched): straight into a dense
 * target whose operands are each apart from it or exactly its elements (`writes_in_place`),
 * else into the plan's fresh output, as above (so `x[1:] += x[:-1]` reads its operands whole),
 * copied into the target (one memcpy into a dense one, NumPy's copy through a strided one's
 * strides).
 *
 * Every decision this code shares with dispatch's Python path is defined here once and called
 * by that path too: the plan-cache key (`key`), basic indexing (`getitem`, `select`), the
 * in-place rule (`inplace_refusal`) and tensor construction (`new_tensor`); see "One
 * dispatcher" in docs/interfaces.md.
 *
 * `operator` makes the contract operations' namespace functions and `x op y` / `y op x` /
 * `x op= y` methods C callables that try this path first and call dispatch's Python path
 * otherwise.
 *
 * `empty` is the aligned allocation both paths share: a small buffer is over-allocated by NumPy
 * and viewed at its first 64-byte boundary (no arena, so a small result holds only its own
 * bytes); a large one is a block of its own, kept for the next output of its size when it dies
 * (at most 256 MiB kept; see `aligned_array`).
 *
 * Every decision read from Python comes through `bind_core` and `configure` (config.c): this
 * code names no private attribute of fueltensor's Python.
 */

/* One translation unit (a unity build): the parts below are included in dependency order, so
 * the 0.25 us path inlines across them as it did in one file. Each part holds one concern:
 *   tensors.c     tensor construction: the one FuelTensor constructor
 *   allocator.c   64-byte-aligned outputs; large blocks kept for the next output of their size
 *   plan_key.c    the plan-cache key, its lookup remembered by identity, the integer forms' key
 *   scalars.c     Python scalars' 0-d tensors, cached
 *   entries.c     a cached plan as the fast path runs it (`entry`)
 *   run.c         running an entry: operands, casts, the native, PowI and oracle kernels
 *   foreign.c     compiled providers' kernels, called from C on both paths
 *   inplace.c     the in-place rule, `x op= y`, and the module's binary/adopt/scalar calls
 *   operators.c   `x + y`, `y + x`, `x += y`, `ft.add(x, y)` as C callables
 *   host_calls.c  host element-wise functions over NumPy's own strided loops
 *   views.c       basic indexing and transpose
 *   ruled.c       reductions, astype and matmul as one compiled call each
 *   config.c      bind_core and configure: the public interface the layers above set
 *   module.c      the method table and init (`_native`'s capsules read once) */
#include "fast.h"

#include "tensors.c"
#include "allocator.c"
#include "plan_key.c"
#include "scalars.c"
#include "entries.c"
#include "run.c"
#include "foreign.c"
#include "inplace.c"
#include "operators.c"
#include "host_calls.c"
#include "views.c"
#include "ruled.c"
#include "config.c"
#include "module.c"
