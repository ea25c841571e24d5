// Input files mapped in place into machine memory (run/npy.h NpyReader::read_into with
// map_pages). A mapped file that is truncated while mapped makes its pages raise SIGBUS: a
// handler (installed with the first mapping) reports which input it was and exits with code 1
// instead of crashing. HostBuffer forgets the ranges of a buffer it unmaps.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace nisa::interp {

// Registers [lo, lo + n) as input `path`'s pages; false when the table is full (the caller
// reads the input instead of mapping it).
bool remember_mapped_input(const uint8_t* lo, size_t n, const std::string& path);
void forget_mapped_inputs(const uint8_t* lo, size_t bytes);

} // namespace nisa::interp
