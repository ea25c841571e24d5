// The .nbin object format: a serialized nisa::Module (layout: docs/encoding.md).
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "isa/encode.h"
#include "isa/module.h"

namespace nisa {

inline constexpr char kObjectMagic[4] = {'N', 'I', 'S', 'A'};
// The version write_object writes; read_object also reads every version from
// kOldestObjectVersion (docs/encoding.md "Versions": 2 added the launch section, 3 changed the
// checksum from FNV-1a 64 to XXH64).
inline constexpr uint16_t kObjectVersion = 3;
inline constexpr uint16_t kOldestObjectVersion = 1;

// Serializes a module. Precondition: every instruction passes check_inst (the writer does
// not re-validate; read_object would reject what it wrote otherwise).
std::vector<uint8_t> write_object(const Module& m);

struct ReadOptions {
  // Off for fuzzing, so that mutated inputs reach the section parsers, and for bytes the caller
  // has checked otherwise (the cache of assembled kernels: cli/kernel_cache.h).
  bool verify_checksum = true;
  // Off: no check_inst_for_target per decoded instruction (each field is still checked as it
  // is read), for bytes this binary wrote from a module the assembler checked (the cache of
  // assembled kernels): a third of decoding 10^4 instructions.
  bool check_instructions = true;
};
// Parses and validates an object: magic, version, lengths, every instruction (check_inst and
// the target's generation rules), indices (semaphores, groups, labels, files, frames) and the
// checksum (object_body_checksum). Errors name the byte offset within `bytes`.
Result<Module> read_object(std::span<const uint8_t> bytes, ReadOptions opts = {});

// FNV-1a 64 (the object checksum up to version 2; also a hash for caches' keys).
uint64_t fnv1a64(std::span<const uint8_t> bytes);
// XXH64 (the object checksum from version 3: the same bytes in a tenth of FNV-1a's time).
uint64_t xxh64(std::span<const uint8_t> bytes, uint64_t seed = 0);
// The checksum an object of `version` stores after `body` (every byte before it): FNV-1a 64 up
// to version 2, XXH64 from version 3.
uint64_t object_body_checksum(uint16_t version, std::span<const uint8_t> body);

// An error of save_object / load_object: the file, and the offset when the bytes are at fault.
struct ObjectFileError {
  std::string path;
  std::optional<uint64_t> offset;
  std::string message;
  std::string str() const; // "k.nbin: byte 12 (0xc): bad magic" or "k.nbin: cannot open: ..."
};
std::optional<ObjectFileError> save_object(const std::string& path, const Module& m);
// save_object of bytes write_object made.
std::optional<ObjectFileError> write_object_file(const std::string& path,
                                                 std::span<const uint8_t> bytes);
Result<Module, ObjectFileError> load_object(const std::string& path);
// The bytes of a file, as load_object reads them (the error says why not).
std::optional<ObjectFileError> read_object_bytes(const std::string& path,
                                                 std::vector<uint8_t>& bytes);
// The checksum stored in an object's last 8 bytes (object_body_checksum of the rest): a hash
// of the module it holds, for keys of caches. Precondition: read_object accepted `bytes`.
uint64_t object_checksum(std::span<const uint8_t> bytes);

} // namespace nisa
