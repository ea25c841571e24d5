// A cache of assembled kernels for `nisa run` (docs/performance.md "Per-run fixed costs"): the
// object of a .nasm assembled with the same options by the same binary, kept in nisa's cache
// directory (interp/run/precheck.h cache_dir) beside the static check's texts. An entry holds
// every file the assembly read with the hash of its bytes and every include candidate that did
// not exist; it is used only while all of them still hold, so a hit gives the module the
// assembler would give. A run of a kernel again then decodes its object (~2 ms for 10^4
// instructions) instead of assembling it (~25 ms). The cache is only a cache: an entry that
// cannot be read or written is a miss, never an error.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "asm/asm.h"
#include "isa/module.h"

namespace nisa::cli {

struct CachedModule {
  Module module;
  uint64_t checksum = 0; // the object's (isa/object.h object_checksum): a key for the precheck
};

// The module of `path` assembled with `opts`, from the cache or else assembled (and stored).
// nullopt with the diagnostics in `diags` when it does not assemble.
std::optional<CachedModule> assemble_cached(const std::string& path, const nasm::AsmOptions& opts,
                                            std::string& diags);

} // namespace nisa::cli
