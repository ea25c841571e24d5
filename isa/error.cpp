#include "isa/error.h"

#include <fmt/format.h>

namespace nisa {

std::string SourceLoc::str() const { return fmt::format("{}:{}:{}", file, line, col); }

Error::Error(SourceLoc where, const std::string& message)
    : std::runtime_error(where.known() ? where.str() + ": " + message : message),
      where_(std::move(where)), message_(message) {}

OutOfMemory::OutOfMemory(const std::string& what, uint64_t bytes)
    : HostError(fmt::format("out of memory: {} ({} bytes = {:.1f} {})", what, bytes,
                            bytes >= (uint64_t(1) << 30)   ? double(bytes) / double(1 << 30)
                            : bytes >= (uint64_t(1) << 20) ? double(bytes) / double(1 << 20)
                                                           : double(bytes) / 1024.0,
                            bytes >= (uint64_t(1) << 30)   ? "GiB"
                            : bytes >= (uint64_t(1) << 20) ? "MiB"
                                                           : "KiB")) {}

} // namespace nisa
