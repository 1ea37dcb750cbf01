/* F32 matmuls through C ABI version 2 (ShapedKernel) that cheat or break the process they run
 * in, for tests/kernels/test_shaped_matmul.py: each is the example's my_matmul_f32
 * (examples/c_matmul, included whole, so the honest product is its own) followed, or replaced,
 * by what its name says. The second operand, b, is the one they touch: fueltensor hands every
 * operand of a v2 contraction over fenced, not only the first.
 *
 * Build: cc -O2 -shared -fPIC -I examples/c_matmul -o libhostile_matmul.so \
 *        tests/hostile_matmul.c -lm
 */
#include "my_matmul.c"

#define SHAPED(NAME)                                                                            \
    int NAME(int op, const TensorArg *in, int n_in, const TensorArg *out,                      \
             const ParamArg *params, int n_params, char *error, size_t error_len)
#define HONEST my_matmul_f32(op, in, n_in, out, params, n_params, error, error_len)

/* out's bytes (dense, float32). */
static size_t out_bytes(const TensorArg *out) {
    size_t n = sizeof(float);
    for (int k = 0; k < out->ndim; k++) n *= (size_t)out->shape[k];
    return n;
}

/* Multiplies honestly, then writes 64 bytes past out's end. */
SHAPED(overrun_matmul) {
    int s = HONEST;
    memset(out->data + out_bytes(out), 0, 64);
    return s;
}

/* Multiplies honestly, then writes 1.0f into b's first element. */
SHAPED(scribble_b_matmul) {
    int s = HONEST;
    float one = 1.0f;
    if (n_in == 2) memcpy(in[1].data, &one, sizeof one);
    return s;
}

/* Multiplies honestly but leaves out's last element as it found it. */
SHAPED(unwritten_matmul) {
    size_t n = out_bytes(out);
    float kept;
    if (n >= sizeof kept) memcpy(&kept, out->data + n - sizeof kept, sizeof kept);
    int s = HONEST;
    if (n >= sizeof kept) memcpy(out->data + n - sizeof kept, &kept, sizeof kept);
    return s;
}
