/* Generated from fueltensor/ops.py: do not edit. Regenerate with
 *   python -m fueltensor.ops_header > fueltensor/ext/src/ops.h
 * Each family's kernel ops in table order (`_native.OPS`, `_native.UNARY_OPS`,
 * `_native.COMPARISON_OPS`, `_native.TERNARY_OPS`, `_native.REDUCTION_OPS`); a unary
 * op's enum name is its kernel op id in capitals after U_, a comparison's after C_,
 * where's and clip's after T_, a reduction's after R_, a contraction's after M_. */
#ifndef FUELTENSOR_OPS_H
#define FUELTENSOR_OPS_H

/* binary elementwise. */
enum { ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM, POW, MOD, REM, N_OPS };
static const char *const OP_NAMES[N_OPS] = {"add", "sub", "mul", "div", "maximum", "minimum", "pow", "mod", "rem"};

/* unary elementwise. */
enum { U_EXP, U_LOG, U_TANH, U_SIGMOID, U_ERF, U_SQRT, U_RSQRT, U_SIN, U_COS, U_ABS, U_NEG, N_UNARY_OPS };
static const char *const UNARY_NAMES[N_UNARY_OPS] = {"exp", "log", "tanh", "sigmoid", "erf", "sqrt", "rsqrt", "sin", "cos", "abs", "neg"};

/* comparison. */
enum { C_LT, C_LE, C_EQ, C_NE, C_GT, C_GE, N_COMPARISON_OPS };
static const char *const COMPARISON_NAMES[N_COMPARISON_OPS] = {"lt", "le", "eq", "ne", "gt", "ge"};

/* selection and clamp: three operands. */
enum { T_WHERE, T_CLAMP, N_TERNARY_OPS };
static const char *const TERNARY_NAMES[N_TERNARY_OPS] = {"where", "clamp"};

/* reduction. */
enum { R_SUM, R_PROD, R_MAX, R_MIN, R_ARGMAX, R_ARGMIN, N_REDUCTION_OPS };
static const char *const REDUCTION_NAMES[N_REDUCTION_OPS] = {"sum", "prod", "max", "min", "argmax", "argmin"};

/* contraction. */
enum { M_MATMUL, N_CONTRACTION_OPS };
static const char *const CONTRACTION_NAMES[N_CONTRACTION_OPS] = {"matmul"};
/* The integer-power kernel's op number (`_native.POWI_OP`): one past the binary ops;
 * and its op id. */
#define POWI_OP N_OPS
#define POWI_NAME "powi"

#endif
