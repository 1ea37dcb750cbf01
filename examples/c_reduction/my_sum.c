/* A user's compiled reduction through fueltensor's C ABI version 2 (docs/reductions.md, "Your
 * own compiled reduction"): `my_sum_f32`, the float32 sum of x over the call's axes, every
 * output's elements added one after another in row-major order of the reduced axes, in a
 * float32 accumulator. That is exactly what its contract (my-sum.md) declares: `order:
 * sequential`, `accumulator: F32`. Build: cc -O2 -shared -fPIC -o libmy_sum.so my_sum.c */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The ABI v2 types of fueltensor/ext/src/abi.h, which includes Python.h; its Py_ssize_t is
 * ptrdiff_t on every platform fueltensor builds for. */
typedef ptrdiff_t ssize;
typedef struct {
    int dtype; /* a v2 dtype code: 0 is F32 */
    int ndim;
    const ssize *shape;
    const ssize *strides; /* in bytes, any sign, 0 where an axis repeats */
    char *data;           /* the element at index (0, ..., 0) */
} TensorArg;
typedef enum { PARAM_I64, PARAM_F64, PARAM_AXES, PARAM_CODE } ParamType;
typedef struct {
    const char *name;
    ParamType type;
    union {
        int64_t i;
        double f;
        struct {
            int count;
            const int *axes;
        } axes;
    } value;
} ParamArg;
enum { F32 = 0 };              /* abi.h's dtype codes */
enum { ORDER_SEQUENTIAL = 0 }; /* abi.h's ORDER_* */
enum { R_SUM = 0 };            /* ext/src/ops.h's reductions */
#define MAX_DIMS 64

/* Write the refusal into `error` and return -1, as the ABI asks. */
static int refuse(char *error, size_t error_len, const char *message) {
    if (error_len > 0) snprintf(error, error_len, "my_sum_f32: %s", message);
    return -1;
}

/* The parameter called `name` of type `type`, or NULL. */
static const ParamArg *param(const ParamArg *params, int n, const char *name, ParamType type) {
    for (int i = 0; i < n; i++)
        if (params[i].type == type && strcmp(params[i].name, name) == 0) return &params[i];
    return NULL;
}

/* Advance the odometer `index` over the `count` axes `axis[]` of `shape`, moving the byte
 * `*offset` by their strides; 0 once it wraps around. Every offset it holds is an element's,
 * which the caller checked lies in the buffer, so no sum overflows. */
static int next(ssize *index, const int *axis, int count, const ssize *shape,
                const ssize *strides, ssize *offset) {
    for (int k = count - 1; k >= 0; k--) {
        int a = axis[k];
        if (index[k] + 1 < shape[a]) {
            index[k]++;
            *offset += strides[a];
            return 1;
        }
        *offset -= (shape[a] - 1) * strides[a];
        index[k] = 0;
    }
    return 0;
}

int my_sum_f32(int op, const TensorArg *in, int n_in, const TensorArg *out,
               const ParamArg *params, int n_params, char *error, size_t error_len) {
    if (op != R_SUM || n_in != 1) return refuse(error, error_len, "only a sum of one input");
    const TensorArg *x = in;
    if (x->dtype != F32 || out->dtype != F32 || x->ndim < 0 || x->ndim > MAX_DIMS)
        return refuse(error, error_len, "x and out must be float32, of 64 dims at most");
    const ParamArg *axes = param(params, n_params, "axes", PARAM_AXES);
    const ParamArg *acc = param(params, n_params, "accumulator", PARAM_CODE);
    const ParamArg *order = param(params, n_params, "order", PARAM_CODE);
    if (axes == NULL || acc == NULL || acc->value.i != F32 || order == NULL ||
        order->value.i != ORDER_SEQUENTIAL)
        return refuse(error, error_len, "needs axes, accumulator F32 and order sequential");
    int reduced[MAX_DIMS] = {0}, red[MAX_DIMS], kept[MAX_DIMS], n_red = 0, n_kept = 0;
    for (int i = 0; i < axes->value.axes.count; i++) {
        int a = axes->value.axes.axes[i];
        if (a < 0 || a >= x->ndim || (i > 0 && a <= axes->value.axes.axes[i - 1]))
            return refuse(error, error_len, "axes must be sorted, distinct axes of x");
        reduced[a] = 1;
    }
    ssize m = 1, outputs = 1;
    for (int k = 0; k < x->ndim; k++) {
        ssize *total = reduced[k] ? &m : &outputs;
        if (__builtin_mul_overflow(*total, x->shape[k], total))
            return refuse(error, error_len, "x's shape overflows");
        if (reduced[k]) red[n_red++] = k;
        else kept[n_kept++] = k;
    }
    if (out->ndim != n_kept) return refuse(error, error_len, "out must be of the reduced rank");
    for (int j = 0; j < n_kept; j++)
        if (out->shape[j] != x->shape[kept[j]])
            return refuse(error, error_len, "out's shape must be x's without the axes");
    ssize ki[MAX_DIMS] = {0}, oi[MAX_DIMS] = {0}, ri[MAX_DIMS] = {0};
    int identity[MAX_DIMS];
    for (int j = 0; j < n_kept; j++) identity[j] = j;
    ssize row = 0, dst = 0; /* byte offsets of the output's first element in x, and in out */
    for (ssize o = 0; o < outputs; o++) {
        float sum = 0.0f; /* an empty row is +0 */
        ssize at = row;
        for (ssize j = 0; j < m; j++) {
            float v;
            memcpy(&v, x->data + at, sizeof v);
            if (j == 0) sum = v; /* an in-order fold starts from its first element */
            else sum += v;
            next(ri, red, n_red, x->shape, x->strides, &at);
        }
        memcpy(out->data + dst, &sum, sizeof sum);
        next(ki, kept, n_kept, x->shape, x->strides, &row);
        next(oi, identity, n_kept, out->shape, out->strides, &dst);
    }
    return 0;
}
