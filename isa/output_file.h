// Every file nisa writes goes through here (objects, .npy outputs, traces, timelines, the
// debugger's dump): the bytes go to a temporary file in the same directory, which is renamed
// over the destination only after a checked write, flush and close. A failed write (a full
// disk, a file-size limit) is an OutputError and leaves the old file untouched.
// A destination that exists and is not a regular file (/dev/null, /dev/stdout, a FIFO) is
// written directly, still with every error checked (docs/decisions.md).
#pragma once
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "isa/error.h"

namespace nisa {

// A file could not be created or written (a HostError: exit 1).
struct OutputError : HostError {
  using HostError::HostError;
};

class OutputFile {
public:
  // Creates the temporary file (or opens the device); OutputError "PATH: cannot create ...".
  explicit OutputFile(std::string path);
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile(); // removes the temporary file unless committed

  const std::string& path() const { return path_; }
  std::ostream& stream() { return out_; }
  void write(std::string_view bytes) { out_.write(bytes.data(), std::streamsize(bytes.size())); }
  // Flushes and closes, checking every step; OutputError on failure (the temporary is removed).
  void finish();
  // Renames the finished temporary into place.
  void commit();

private:
  [[noreturn]] void fail(const std::string& why);
  class FdBuf;             // an unbuffered-by-libc stream buffer that keeps the first write's errno
  std::string path_, tmp_; // tmp_ empty: written directly
  std::unique_ptr<FdBuf> buf_;
  std::ostream out_;
  bool finished_ = false, committed_ = false;
};

// One file, atomically.
void write_file_atomic(const std::string& path, std::string_view bytes);
// Several files: all temporaries are written and closed before the first rename, so a failed
// write leaves every destination as it was.
void write_files_atomic(const std::vector<std::pair<std::string, std::string>>& files);

// True when both paths name the same file (the same inode if both exist, else the same
// normalised path). Existing non-regular files (devices, FIFOs) never count as the same, so
// /dev/null may take several outputs.
bool same_output_file(const std::string& a, const std::string& b);

// A labelled path (e.g. "--out y", "--trace", "--in x", "the kernel source").
struct NamedPath {
  std::string label, path;
};
// OutputError when two outputs name the same file or an output names an input's file.
void check_output_paths(const std::vector<NamedPath>& outputs,
                        const std::vector<NamedPath>& inputs);

} // namespace nisa
