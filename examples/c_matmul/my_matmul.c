/* A user's compiled matmul through fueltensor's C ABI version 2 (docs/matmul.md, "Your own
 * compiled matmul"): `my_matmul_f32`, out (..., M, N) = a (..., M, K) @ b (..., K, N) in
 * float32, each output's K products taken in order: the first rounded alone, every next one
 * added by a fused multiply-add (fmaf: one rounding per term). That is exactly what its
 * contract (my-matmul.md) declares: `accumulator: F32`, `order: sequential`, `products: fused`.
 * Build: cc -O2 -shared -fPIC -o libmy_matmul.so my_matmul.c -lm */
#include <math.h>
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
enum { PRODUCTS_FUSED = 1 };   /* abi.h's PRODUCTS_* */
enum { M_MATMUL = 0 };         /* ext/src/ops.h's contractions */
#define MAX_DIMS 64

/* Write the refusal into `error` and return -1, as the ABI asks. */
static int refuse(char *error, size_t error_len, const char *message) {
    if (error_len > 0) snprintf(error, error_len, "my_matmul_f32: %s", message);
    return -1;
}

/* Whether the PARAM_CODE parameter `name` is present and equal to `code`. */
static int has_code(const ParamArg *params, int n, const char *name, int64_t code) {
    for (int i = 0; i < n; i++)
        if (params[i].type == PARAM_CODE && strcmp(params[i].name, name) == 0)
            return params[i].value.i == code;
    return 0;
}

/* The float32 at `p` (any alignment). */
static float load(const char *p) {
    float v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* One output: the K products of row `a` (step `sa` bytes) and column `b` (step `sb`). */
static float dot(const char *a, ssize sa, const char *b, ssize sb, ssize k) {
    if (k == 0) return 0.0f; /* an empty sum is +0 */
    float acc = load(a) * load(b);
    for (ssize t = 1; t < k; t++) acc = fmaf(load(a + t * sa), load(b + t * sb), acc);
    return acc;
}

int my_matmul_f32(int op, const TensorArg *in, int n_in, const TensorArg *out,
                  const ParamArg *params, int n_params, char *error, size_t error_len) {
    if (op != M_MATMUL || n_in != 2) return refuse(error, error_len, "only a matmul of a and b");
    const TensorArg *a = &in[0], *b = &in[1];
    int nd = out->ndim;
    if (a->dtype != F32 || b->dtype != F32 || out->dtype != F32)
        return refuse(error, error_len, "a, b and out must be float32");
    if (nd < 2 || nd > MAX_DIMS || a->ndim != nd || b->ndim != nd)
        return refuse(error, error_len, "a, b and out must be of one rank, 2 to 64");
    if (!has_code(params, n_params, "accumulator", F32) ||
        !has_code(params, n_params, "order", ORDER_SEQUENTIAL) ||
        !has_code(params, n_params, "products", PRODUCTS_FUSED))
        return refuse(error, error_len, "needs accumulator F32, order sequential, products fused");
    ssize m = a->shape[nd - 2], k = a->shape[nd - 1], n = b->shape[nd - 1], stacks = 1;
    if (b->shape[nd - 2] != k || out->shape[nd - 2] != m || out->shape[nd - 1] != n)
        return refuse(error, error_len, "shapes must be (..., M, K) @ (..., K, N) -> (..., M, N)");
    for (int d = 0; d < nd - 2; d++) {
        if (a->shape[d] != out->shape[d] || b->shape[d] != out->shape[d])
            return refuse(error, error_len, "the stacks must be broadcast to out's");
        if (__builtin_mul_overflow(stacks, out->shape[d], &stacks))
            return refuse(error, error_len, "the stack's size overflows");
    }
    ssize index[MAX_DIMS] = {0}, at_a = 0, at_b = 0, at_out = 0;
    for (ssize s = 0; s < stacks; s++) {
        for (ssize i = 0; i < m; i++)
            for (ssize j = 0; j < n; j++) {
                const char *row = a->data + at_a + i * a->strides[nd - 2];
                const char *col = b->data + at_b + j * b->strides[nd - 1];
                float c = dot(row, a->strides[nd - 1], col, b->strides[nd - 2], k);
                memcpy(out->data + at_out + i * out->strides[nd - 2] + j * out->strides[nd - 1],
                       &c, sizeof c);
            }
        /* The next stack: an odometer over the leading axes, moving each operand's offset. */
        for (int d = nd - 3; d >= 0; d--) {
            if (++index[d] < out->shape[d]) {
                at_a += a->strides[d], at_b += b->strides[d], at_out += out->strides[d];
                break;
            }
            at_a -= (out->shape[d] - 1) * a->strides[d];
            at_b -= (out->shape[d] - 1) * b->strides[d];
            at_out -= (out->shape[d] - 1) * out->strides[d];
            index[d] = 0;
        }
    }
    return 0;
}
