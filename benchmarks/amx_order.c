/* One AMX TDPBF16PS on a 16 x 16 float32 tile: C += A (16 x K bfloat16) @ B (K x 16, paired as
 * the instruction reads it), K even and at most 32. benchmarks/amx_order.py builds this with cc
 * and compares its bits with the orders a contract can declare. Linux only: the process asks the
 * kernel for the tile state first (arch_prctl ARCH_REQ_XCOMP_PERM), as every AMX user must. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

struct tile_config {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} __attribute__((packed));

/* 0 where the kernel grants the tile state, else -1 (errno says why). */
int amx_request(void) { return (int)syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA); }

/* c (16 x 16 float32, row-major) += a (16 x k bfloat16 bits, row-major) @ b, b given as
 * k / 2 rows of 16 (even, odd) pairs; k even, 2 <= k <= 32. */
void amx_dpbf16(const uint16_t *a, const uint16_t *b, float *c, int k) {
    struct tile_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    cfg.colsb[0] = 64, cfg.rows[0] = 16;
    cfg.colsb[1] = (uint16_t)(2 * k), cfg.rows[1] = 16;
    cfg.colsb[2] = 64, cfg.rows[2] = (uint8_t)(k / 2);
    _tile_loadconfig(&cfg);
    _tile_loadd(0, c, 64);
    _tile_loadd(1, a, 2 * k);
    _tile_loadd(2, b, 64);
    _tile_dpbf16ps(0, 1, 2);
    _tile_stored(0, c, 64);
    _tile_release();
}
