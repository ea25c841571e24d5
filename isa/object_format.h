// Layout constants of the .nbin object shared by its writer (object_write.cpp) and reader
// (object.cpp); docs/encoding.md, "Object file". Internal to isa/.
#pragma once
#include <cstdint>
#include <iterator>

#include "isa/object.h"

namespace nisa::objfmt {

inline constexpr uint32_t kHeaderBytes = 24;
inline constexpr uint32_t kChecksumBytes = 8;
inline constexpr uint32_t kSizeFieldAt = 16;       // header: u64 total size
inline constexpr uint32_t kSectionHeaderBytes = 8; // u16 kind, u16 0, u32 payload length

// Sections, always all present, in this order.
enum class Section : uint16_t {
  strings = 1,
  kernel,
  params,
  files,
  frames,
  tensors,
  sems,
  groups,
  streams,
  debug,
  labels,
  launch, // version 2
};
inline constexpr Section kSectionOrder[] = {Section::strings, Section::kernel, Section::params,
                                            Section::files,   Section::frames, Section::tensors,
                                            Section::sems,    Section::groups, Section::streams,
                                            Section::debug,   Section::labels, Section::launch};
inline constexpr uint32_t kNumSections = std::size(kSectionOrder);

// The sections of a version: the first N of kSectionOrder.
constexpr uint32_t sections_of(uint16_t version) { return version == 1 ? 11 : kNumSections; }
static_assert(sections_of(kObjectVersion) == kNumSections);

} // namespace nisa::objfmt
