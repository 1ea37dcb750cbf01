//! A compiled fueltensor provider in Rust: four byte kernels behind the FKC byte-kernel C ABI
//! (docs/interfaces.md), described by the FKC document `rust-kernels.md` beside this crate.
//!
//! Each kernel is one of the seeds' thunks over three byte slices: it checks the byte lengths
//! (equal, a whole number of elements) and returns a nonzero status when they are not (the
//! thunk's `Err`), else writes `out[i] = op(lhs[i], rhs[i])` and returns 0. F16 widens to f32,
//! computes, and rounds to nearest-even once on store, as the `half` crate does, written out
//! here so the crate has no dependencies. A NaN result is the lhs NaN if lhs is one, else the
//! rhs NaN, quieted; a NaN made from two numbers (inf - inf, 0 / 0) is the hardware's.
//!
//! Build: `cargo build --release` (the library is `target/release/librust_kernels.so`).

use core::slice;

/// The thunk's `Err`: the byte lengths do not hold the same whole number of elements.
const BAD_LENGTHS: i32 = 1;

/// The three buffers as slices, if their byte lengths agree and hold whole `size`-byte elements.
unsafe fn buffers<'a>(
    lhs: *const u8,
    lhs_bytes: usize,
    rhs: *const u8,
    rhs_bytes: usize,
    out: *mut u8,
    out_bytes: usize,
    size: usize,
) -> Option<(&'a [u8], &'a [u8], &'a mut [u8])> {
    if lhs_bytes != rhs_bytes || rhs_bytes != out_bytes || lhs_bytes % size != 0 {
        return None;
    }
    if out_bytes == 0 {
        return Some((&[], &[], &mut []));
    }
    Some((
        slice::from_raw_parts(lhs, lhs_bytes),
        slice::from_raw_parts(rhs, rhs_bytes),
        slice::from_raw_parts_mut(out, out_bytes),
    ))
}

/// `r`, unless an operand is a NaN: then the lhs NaN first, else the rhs NaN, quieted.
fn nan_first_f32(r: f32, a: f32, b: f32) -> f32 {
    if a.is_nan() {
        f32::from_bits(a.to_bits() | 0x0040_0000)
    } else if b.is_nan() {
        f32::from_bits(b.to_bits() | 0x0040_0000)
    } else {
        r
    }
}

fn nan_first_f64(r: f64, a: f64, b: f64) -> f64 {
    if a.is_nan() {
        f64::from_bits(a.to_bits() | 0x0008_0000_0000_0000)
    } else if b.is_nan() {
        f64::from_bits(b.to_bits() | 0x0008_0000_0000_0000)
    } else {
        r
    }
}

/// f16 -> f32, exact; a NaN keeps its sign and payload with the quiet bit set (as `half` does).
fn f16_widen(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0f32 } else { 1.0 };
    let exp = (h >> 10) & 0x1f;
    let man = (h & 0x03ff) as u32;
    match exp {
        0 => sign * man as f32 * (1.0 / 16_777_216.0), // subnormal: man * 2^-24, exact
        0x1f if man == 0 => sign * f32::INFINITY,
        0x1f => f32::from_bits(((h as u32 & 0x8000) << 16) | 0x7fc0_0000 | (man << 13)),
        _ => f32::from_bits(((h as u32 & 0x8000) << 16) | ((exp as u32 + 112) << 23) | (man << 13)),
    }
}

/// f32 -> f16, rounding to nearest-even (subnormals and overflow to inf included); a NaN keeps
/// its sign and top ten payload bits with the quiet bit set (as `half` does).
fn f16_narrow(x: f32) -> u16 {
    let u = x.to_bits();
    let sign = ((u >> 16) & 0x8000) as u16;
    let exp = ((u >> 23) & 0xff) as i32;
    let man = u & 0x007f_ffff;
    if exp == 0xff {
        let quiet = if man != 0 { 0x0200 } else { 0 };
        return sign | 0x7c00 | quiet | (man >> 13) as u16;
    }
    let e = exp - 127 + 15; // the f16 biased exponent
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    // Keep `sig >> shift` with the implicit bit, then round the dropped bits to nearest-even.
    let (sig, shift, base) = if e <= 0 {
        (man | 0x0080_0000, (14 - e) as u32, 0u32) // a subnormal (or zero) f16
    } else {
        (man, 13u32, (e as u32) << 10)
    };
    if shift > 24 {
        return sign; // below half the smallest subnormal: rounds to zero
    }
    let kept = sig >> shift;
    let round = 1u32 << (shift - 1);
    let up = (sig & round != 0) && (sig & (3 * round - 1) != 0); // above the half, or tie to odd
    sign | (base + kept + up as u32) as u16 // a carry moves into the exponent, up to inf
}

macro_rules! kernel {
    ($name:ident, $size:expr, |$a:ident, $b:ident| $load:ident => $body:expr => $store:ident) => {
        /// An FKC byte kernel (see the crate documentation): 0, or BAD_LENGTHS.
        ///
        /// # Safety
        /// Each pointer must be valid for its byte length; `out` must not overlap the inputs.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            lhs: *const u8,
            lhs_bytes: usize,
            rhs: *const u8,
            rhs_bytes: usize,
            out: *mut u8,
            out_bytes: usize,
        ) -> i32 {
            let Some((l, r, o)) = buffers(lhs, lhs_bytes, rhs, rhs_bytes, out, out_bytes, $size)
            else {
                return BAD_LENGTHS;
            };
            for ((x, y), z) in l.chunks_exact($size).zip(r.chunks_exact($size)).zip(o.chunks_exact_mut($size)) {
                let $a = $load(x);
                let $b = $load(y);
                z.copy_from_slice(&$store($body));
            }
            0
        }
    };
}

fn load_f32(b: &[u8]) -> f32 {
    f32::from_ne_bytes(b.try_into().unwrap())
}
fn store_f32(x: f32) -> [u8; 4] {
    x.to_ne_bytes()
}
fn load_f64(b: &[u8]) -> f64 {
    f64::from_ne_bytes(b.try_into().unwrap())
}
fn store_f64(x: f64) -> [u8; 8] {
    x.to_ne_bytes()
}
fn load_f16(b: &[u8]) -> f32 {
    f16_widen(u16::from_ne_bytes(b.try_into().unwrap()))
}
fn store_f16(x: f32) -> [u8; 2] {
    f16_narrow(x).to_ne_bytes()
}

kernel!(rust_add_f64, 8, |a, b| load_f64 => nan_first_f64(a + b, a, b) => store_f64);
kernel!(rust_div_f32, 4, |a, b| load_f32 => nan_first_f32(a / b, a, b) => store_f32);
kernel!(rust_mul_f16, 2, |a, b| load_f16 => nan_first_f32(a * b, a, b) => store_f16);
kernel!(rust_sub_f16, 2, |a, b| load_f16 => nan_first_f32(a - b, a, b) => store_f16);
