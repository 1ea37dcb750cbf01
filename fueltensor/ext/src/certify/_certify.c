/* The certifier's compiled core (`fueltensor.ext._certify`): for a 16-bit format and an op, each
 * pair's correctly rounded result and the seeds' formula's bits, and the tally of a provider's
 * results against them (ULP histogram, maximum and its first pair, difference classes, special
 * value outcomes, operand class table). Python drives it (`fueltensor.tools.certify`): operand
 * blocks, the provider's kernel, the digest, threads, resuming.
 *
 * One translation unit (a unity build), its parts in dependency order:
 *   rounding.c   widen a pattern to double exactly; round a double once, RNE, into the format
 *   reference.c  the correctly rounded value and the formula's bits of one pair
 *   tally.c      one pair's ULP bucket, difference class, outcomes and classes
 *   unary.c      one input's reference (float32: the C library's double function) and tally
 *   casts.c      a float32 input's cast by the declared rule (exact double steps) and tally
 *   module.c     the Python interface and the constants */
#include "certify.h"

#include "rounding.c"
#include "reference.c"
#include "tally.c"
#include "unary.c"
#include "casts.c"
#include "module.c"
