// The nanobind extension jax_fhe._kernels: hands out one capsule per XLA FFI handler.
// jax_fhe/_ffi.py registers them with jax.ffi.register_ffi_target under the target names
// below, for the "cpu" platform always and for "CUDA" when the CUDA kernels were built.
#include <nanobind/nanobind.h>

#include "handlers.h"

namespace nb = nanobind;

namespace {

template <typename T>
nb::capsule capsule(T* fn) {
  static_assert(std::is_invocable_r_v<XLA_FFI_Error*, T, XLA_FFI_CallFrame*>,
                "not an XLA FFI handler");
  return nb::capsule(reinterpret_cast<void*>(fn));
}

}  // namespace

NB_MODULE(_kernels, m) {
  m.doc() = "jax_fhe XLA FFI kernels (CPU and, when built, CUDA)";
  m.def("cpu_targets", []() {
    nb::dict d;
    d["jax_fhe_ntt_forward"] = capsule(jax_fhe::NttForwardCpu);
    d["jax_fhe_ntt_inverse"] = capsule(jax_fhe::NttInverseCpu);
    d["jax_fhe_ntt_forward_lift"] = capsule(jax_fhe::NttForwardLiftCpu);
    d["jax_fhe_bconv"] = capsule(jax_fhe::BconvCpu);
    d["jax_fhe_bconv_centered"] = capsule(jax_fhe::BconvCenteredCpu);
    d["jax_fhe_automorphism_ntt"] = capsule(jax_fhe::AutomorphismNttCpu);
    d["jax_fhe_automorphism_ntt_add"] = capsule(jax_fhe::AutomorphismNttAddCpu);
    d["jax_fhe_automorphism_coeff"] = capsule(jax_fhe::AutomorphismCoeffCpu);
    d["jax_fhe_mod_matmul_planes"] = capsule(jax_fhe::ModMatmulPlanesCpu);
    d["jax_fhe_key_inner_product"] = capsule(jax_fhe::KeyProductCpu);
    d["jax_fhe_key_inner_product_mod_down"] = capsule(jax_fhe::KeyProductModDownCpu);
    d["jax_fhe_key_inner_product_mod_down_ntt"] = capsule(jax_fhe::KeyProductModDownNttCpu);
    d["jax_fhe_key_inner_product_intt"] = capsule(jax_fhe::KeyProductInttCpu);
    d["jax_fhe_tensor_product"] = capsule(jax_fhe::TensorProductCpu);
    d["jax_fhe_diagonal_sums"] = capsule(jax_fhe::DiagonalSumsCpu);
    d["jax_fhe_graph_break"] = capsule(jax_fhe::GraphBreakCpu);
    d["jax_fhe_sample_small"] = capsule(jax_fhe::SampleSmallCpu);
    d["jax_fhe_sample_uniform"] = capsule(jax_fhe::SampleUniformCpu);
    return d;
  });
  m.def("cuda_targets", []() {
    nb::dict d;
#ifdef JAX_FHE_WITH_CUDA
    d["jax_fhe_ntt_forward"] = capsule(jax_fhe::NttForwardCuda);
    d["jax_fhe_ntt_inverse"] = capsule(jax_fhe::NttInverseCuda);
    d["jax_fhe_ntt_forward_lift"] = capsule(jax_fhe::NttForwardLiftCuda);
    d["jax_fhe_bconv"] = capsule(jax_fhe::BconvCuda);
    d["jax_fhe_bconv_centered"] = capsule(jax_fhe::BconvCenteredCuda);
    d["jax_fhe_automorphism_ntt"] = capsule(jax_fhe::AutomorphismNttCuda);
    d["jax_fhe_automorphism_ntt_add"] = capsule(jax_fhe::AutomorphismNttAddCuda);
    d["jax_fhe_automorphism_coeff"] = capsule(jax_fhe::AutomorphismCoeffCuda);
    d["jax_fhe_mod_matmul_planes"] = capsule(jax_fhe::ModMatmulPlanesCuda);
    d["jax_fhe_key_inner_product"] = capsule(jax_fhe::KeyProductCuda);
    d["jax_fhe_key_inner_product_mod_down"] = capsule(jax_fhe::KeyProductModDownCuda);
    d["jax_fhe_key_inner_product_mod_down_ntt"] = capsule(jax_fhe::KeyProductModDownNttCuda);
    d["jax_fhe_key_inner_product_intt"] = capsule(jax_fhe::KeyProductInttCuda);
    d["jax_fhe_tensor_product"] = capsule(jax_fhe::TensorProductCuda);
    d["jax_fhe_diagonal_sums"] = capsule(jax_fhe::DiagonalSumsCuda);
    d["jax_fhe_graph_break"] = capsule(jax_fhe::GraphBreakCuda);
    d["jax_fhe_sample_small"] = capsule(jax_fhe::SampleSmallCuda);
    d["jax_fhe_sample_uniform"] = capsule(jax_fhe::SampleUniformCuda);
#endif
    return d;
  });
  m.attr("built_with_cuda") =
#ifdef JAX_FHE_WITH_CUDA
      true;
#else
      false;
#endif
}
