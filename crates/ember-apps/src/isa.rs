//! Runs the numeric kernels compiled for the widest vector instructions the
//! running CPU has.
//!
//! The workspace is built for baseline x86-64 (SSE2), which leaves most of a
//! current CPU's arithmetic width unused in compute-bound loops (k-means
//! distances, PCA dot products, matrix multiply). [`vectorized`] checks the
//! CPU once per call (the check is a cached atomic load) and runs its closure
//! inside a function compiled with AVX-512 or AVX2 enabled, into which the
//! closure and the `#[inline(always)]` kernels it calls are inlined, so the
//! compiler vectorizes them for that instruction set. The results do not
//! depend on the path taken: every kernel is exact integer arithmetic.

/// Calls `f`, compiled for AVX-512 (F, BW, DQ, VL, VNNI) or AVX2 + FMA when
/// the CPU has them, else for the baseline. Call it around a whole kernel
/// (a split's worth of work), not per element.
#[inline(always)]
pub fn vectorized<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        if has!("avx512f")
            && has!("avx512bw")
            && has!("avx512dq")
            && has!("avx512vl")
            && has!("avx512vnni")
            && has!("avx2")
            && has!("fma")
        {
            // SAFETY: `avx512` requires exactly the features checked above.
            return unsafe { x86::avx512(f) };
        }
        if has!("avx2") && has!("fma") {
            // SAFETY: `avx2` requires exactly the features checked above.
            return unsafe { x86::avx2(f) };
        }
    }
    f()
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    /// Runs `f` compiled with AVX-512 enabled.
    ///
    /// # Safety
    /// The CPU must support AVX-512 F, BW, DQ, VL, VNNI, AVX2 and FMA.
    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx2,fma")]
    pub(super) unsafe fn avx512<R>(f: impl FnOnce() -> R) -> R {
        f()
    }

    /// Runs `f` compiled with AVX2 enabled.
    ///
    /// # Safety
    /// The CPU must support AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn avx2<R>(f: impl FnOnce() -> R) -> R {
        f()
    }
}

/// A length known at compile time ([`Fixed`]: loops over it unroll and
/// vectorize without remainder handling, and small arrays stay in
/// registers) or only at run time ([`Any`]). Kernels are generic over it and
/// dispatch the common lengths to `Fixed`.
pub(crate) trait Len: Copy {
    /// The length.
    fn get(self) -> usize;
}

/// A compile-time length.
#[derive(Clone, Copy)]
pub(crate) struct Fixed<const N: usize>;

impl<const N: usize> Len for Fixed<N> {
    #[inline(always)]
    fn get(self) -> usize {
        N
    }
}

/// A run-time length.
#[derive(Clone, Copy)]
pub(crate) struct Any(pub(crate) usize);

impl Len for Any {
    #[inline(always)]
    fn get(self) -> usize {
        self.0
    }
}
