// Element-sequence helpers shared by the DMA and collective semantics (dma.cpp, cc.cpp):
// walk a View's elements in flat order (partition-major, then the free dims row-major).
#pragma once
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "interp/core/exec.h"

namespace nisa::interp {

class Cursor {
public:
  explicit Cursor(const View& v) : v_(v) { reset_row(); }
  bool done() const { return p_ >= v_.parts; }
  uint32_t row() const { return p_; }
  bool row_skipped() const { return !v_.row_skip.empty() && v_.row_skip[p_]; }
  uint8_t* ptr() const { return ptr_; }
  // Elements left in the current run: the rest of the innermost dimension when its elements
  // are adjacent, else 1. advance(n), n <= run(), steps over n elements (next() is one).
  uint32_t run() const { return unit_ ? v_.count[3] - i_[3] : 1; }
  void advance(uint32_t n) {
    i_[3] += n - 1;
    ptr_ += v_.stride[3] * int64_t(n - 1);
    next();
  }
  void next() {
    for (int k = 3; k >= 0; --k) {
      if (++i_[k] < v_.count[k]) {
        ptr_ += v_.stride[k];
        return;
      }
      ptr_ -= v_.stride[k] * int64_t(v_.count[k] - 1);
      i_[k] = 0;
    }
    ++p_;
    if (!done()) reset_row();
  }

private:
  void reset_row() {
    i_[0] = i_[1] = i_[2] = i_[3] = 0;
    if (!done()) ptr_ = v_.row(p_);
  }
  const View& v_;
  bool unit_ = v_.stride[3] == dtype_bytes(v_.dtype);
  uint32_t p_ = 0;
  uint32_t i_[4] = {0, 0, 0, 0};
  uint8_t* ptr_ = nullptr;
};

inline uint64_t total_elems(const View& v) { return uint64_t(v.parts) * v.free_elems; }

// Copies src to dst element by element (equal counts checked by the caller): bit-exact when
// the dtypes are equal, else through fp32. Elements of skipped rows (oob=skip) on either side
// are not transferred. pool: rows of equal-shaped contiguous views that do not overlap are
// copied in ranges on the host threads.
class HostPool;
void copy_elems(const View& dst, const View& src, HostPool* pool = nullptr);
// Reads every element as raw bytes (dtype width each) / writes them back (same dtype) or with
// a cast through fp32 (different dtype).
std::vector<uint8_t> gather_bytes(const View& v);
void scatter_bytes(const View& dst, const uint8_t* bytes, DType src_dtype);
// scatter_bytes of the concatenation of `pieces` (pointer, bytes), without making it: a
// collective's result assembled from the sources of its participants.
using BytePieces = std::vector<std::pair<const uint8_t*, size_t>>;
void scatter_pieces(const View& dst, const BytePieces& pieces, DType src_dtype);

} // namespace nisa::interp
