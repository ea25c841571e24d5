// .npy files (NumPy format versions 1.0, 2.0, 3.0) for every nisa dtype, C and Fortran order.
// docs/machine-io.md "Inputs and outputs" lists the accepted descriptors: numpy's own for fp32,
// fp16 and the integers; raw bit patterns as unsigned ints of the same width for bf16 ('<u2')
// and fp8 ('|u1'); and ml_dtypes' descriptors ('<V2' / 'bfloat16', '|V1' / '<f1' /
// 'float8_e4m3' / 'float8_e5m2').
#pragma once
#include <cstdint>
#include <functional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "interp/core/mapped_inputs.h"
#include "isa/dtype.h"
#include "isa/error.h"

namespace nisa::interp {

// A .npy file that is not what nisa reads (an InputError: exit 1).
struct NpyError : InputError {
  using InputError::InputError;
};

// A parsed file: its descriptor as written, shape, and the element bytes in C order,
// little-endian (Fortran-order and big-endian files are converted on reading).
struct NpyArray {
  std::string descr;
  std::vector<int64_t> shape;
  uint32_t item_bytes = 0;
  std::vector<uint8_t> data;
  uint64_t elems() const;
};

// What the header of a file says: the array without its data, where the data starts, its
// size (checked not to overflow), and whether it is stored in Fortran order.
struct NpyHeader {
  NpyArray array;
  uint64_t data_offset = 0, data_bytes = 0;
  bool fortran = false;
};

// `name` (usually the path) prefixes every error message. Quoted parts of the input are cut
// to a line's worth (isa/quote.h).
NpyHeader parse_npy_header(std::string_view bytes, const std::string& name);
NpyArray parse_npy(std::string_view bytes, const std::string& name);
// An open .npy file whose header is read and parsed, its data not yet: the data is then read
// straight into the caller's memory (the modelled HBM), with no full-size copy on the way
// (big-endian and Fortran-order files are converted through a small bounce buffer). Streams
// (pipes) are read only as far as the header says (plus one byte to detect trailing data).
class NpyReader {
public:
  // Opens `path` and reads its header; NpyError naming the file on any problem.
  explicit NpyReader(const std::string& path);
  NpyReader(const NpyReader&) = delete;
  NpyReader& operator=(const NpyReader&) = delete;
  ~NpyReader();
  const std::string& path() const { return path_; }
  const NpyHeader& header() const { return hd_; }
  // A regular file's size must match the header exactly (truncated or trailing data: NpyError).
  // Checked without reading the data; read_into checks it too.
  void check_size() const;
  // Reads the data, in C order and little-endian, into pieces.size() destinations of
  // header().data_bytes / pieces.size() bytes each: piece i takes the i-th slice of the
  // array's first axis ([R, ...] per-rank files); a null piece is skipped (the slice of a rank
  // of another MPI process). Once only. NpyError naming the file on a truncated file, trailing
  // data or a read error.
  // map_pages: the whole pages of a piece whose address and file offset agree modulo the page
  // size are mapped from the file in place of reading them (private copy-on-write: the modelled
  // memory may be written, the file never is; map_npy_pages). The rest is read.
  void read_into(const std::vector<uint8_t*>& pieces, bool map_pages = false);
  // Whether read_into can map this file's data at all (a regular little-endian C-order file).
  bool mappable() const;

private:
  void read_header();
  size_t fill(uint8_t* dst, size_t n); // the next n data bytes (fewer only at end of file)
  void skip(uint64_t n);               // passes over n data bytes
  // The next n data bytes into dst (have counts the data bytes read); NpyError when the file
  // ends first.
  void read_exact(uint8_t* dst, uint64_t n, uint64_t& have);
  // Maps the whole pages of the next n data bytes into dst where the offsets agree, reads the
  // rest (have counts both).
  void map_or_read(uint8_t* dst, uint64_t n, uint64_t& have);
  std::string path_;
  int fd_ = -1;
  bool regular_ = false;
  uint64_t file_size_ = 0;
  NpyHeader hd_;
  std::string pending_; // bytes read past the header (a tiny header read with its magic)
  bool consumed_ = false;
};

// The smallest run of whole pages worth a mapping (below it the bytes are read).
inline constexpr uint64_t kMinMappedBytes = uint64_t(64) << 10;

// Reads the header first and calls `check` (which may throw) on the array without data before
// reading the data; the file's size must match the header exactly. Streams (pipes) are read
// only as far as the header says (plus one byte to detect trailing data).
NpyArray read_npy(const std::string& path,
                  const std::function<void(const NpyArray&)>& check = nullptr);

// The descriptor nisa writes for a dtype, and whether a file descriptor may hold it.
std::string npy_descr(DType t);
bool npy_descr_matches(std::string_view descr, DType t);

// Checks dtype and shape against a declaration; throws NpyError naming the file, the tensor,
// and what differs.
void check_npy(const NpyArray& a, DType t, const std::vector<int64_t>& shape,
               const std::string& name, const std::string& tensor);

std::string format_npy(DType t, const std::vector<int64_t>& shape, const uint8_t* data);
void write_npy(const std::string& path, DType t, const std::vector<int64_t>& shape,
               const uint8_t* data);
// The header of an array of that dtype and shape, padded as numpy pads it.
std::string npy_header(DType t, const std::vector<int64_t>& shape);
// Header and data to a stream, the data in pieces (e.g. one per rank) so that a large array is
// never gathered in memory; the pieces must add up to the shape's bytes.
void stream_npy(std::ostream& out, DType t, const std::vector<int64_t>& shape,
                const std::vector<std::pair<const uint8_t*, uint64_t>>& chunks);

} // namespace nisa::interp
