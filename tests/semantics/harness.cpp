// The test bench dispatches only the compute-engine instructions this area implements, so
// the semantics tests link without the machine's control/DMA/collective semantics.
#include "harness.h"

namespace nisa::interp::test {

SemFn Bench::semantics_of(Opcode op) {
  switch (op) {
#define NISA_SEM(id)                                                                               \
  case Opcode::id: return &sem_##id;
    NISA_SEM(matmul)
    NISA_SEM(pe_transpose)
    NISA_SEM(activation)
    NISA_SEM(copy)
    NISA_SEM(tensor_scalar)
    NISA_SEM(tensor_tensor)
    NISA_SEM(scalar_tensor_tensor)
    NISA_SEM(tensor_reduce)
    NISA_SEM(copy_predicated)
    NISA_SEM(scan)
    NISA_SEM(reciprocal)
    NISA_SEM(max8)
    NISA_SEM(find_index8)
    NISA_SEM(match_replace8)
    NISA_SEM(dve_transpose)
    NISA_SEM(memset)
    NISA_SEM(stream_shuffle)
    NISA_SEM(iota)
    NISA_SEM(affine_select)
    NISA_SEM(n_gather)
    NISA_SEM(dma)
    NISA_SEM(dma_transpose)
    NISA_SEM(dma_compute)
#undef NISA_SEM
  default: break;
  }
  throw std::logic_error("instruction not handled by the semantics test bench");
}

} // namespace nisa::interp::test
