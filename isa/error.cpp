#include "isa/error.h"

#include <fmt/format.h>

namespace nisa {

std::string SourceLoc::str() const { return fmt::format("{}:{}:{}", file, line, col); }

Error::Error(SourceLoc where, const std::string& message)
    : std::runtime_error(where.known() ? where.str() + ": " + message : message),
      where_(std::move(where)), message_(message) {}

} // namespace nisa
