// A kernel as the assembler produces it and the .nbin object stores it: declarations,
// one instruction stream per engine, and debug info. Pure data; see isa/object.h for I/O.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "isa/isa.h"

namespace nisa {

struct TensorDecl {
  std::string name;
  MemSpace space = MemSpace::sbuf;
  DType dtype = DType::fp32;
  std::vector<int64_t> shape; // dim 0 is the partition dim for sbuf/psum
  Role role = Role::scratch;
  uint64_t address = 0;    // hbm: byte address in the rank's HBM; sbuf/psum: byte offset
                           // within each partition
  uint16_t part_start = 0; // sbuf/psum: first partition
  bool operator==(const TensorDecl&) const = default;
};

struct SemDecl {
  std::string name;
  uint32_t init = 0;
  bool operator==(const SemDecl&) const = default;
};

struct ReplicaGroupDecl {
  std::string name;
  std::vector<std::vector<uint32_t>> groups; // disjoint lists of ranks (or [src, dst] pairs)
  bool operator==(const ReplicaGroupDecl&) const = default;
};

// One step of an expansion chain: the instruction came from inside a macro expansion,
// a .for iteration or an included file. Frames form a tree through `parent` (-1 = none).
struct ExpansionFrame {
  enum Kind : uint8_t { Macro = 0, ForIter = 1, Include = 2 };
  Kind kind = Macro;
  std::string what;  // macro name, "f=3", or included file name
  uint32_t file = 0; // where the expansion was requested (index into Module::files)
  uint32_t line = 0, col = 0;
  int32_t parent = -1;
  bool operator==(const ExpansionFrame&) const = default;
};

struct DebugLoc {
  uint32_t file = 0; // index into Module::files
  uint32_t line = 0, col = 0;
  int32_t frame = -1; // innermost expansion frame, -1 = top level
  bool operator==(const DebugLoc&) const = default;
};

// Labels of a stream, for the printer (branch targets).
struct Label {
  std::string name;
  uint32_t index = 0; // instruction index in the stream
  bool operator==(const Label&) const = default;
};

// A launch setting the kernel declares (`.ranks N`, `.lnc N`): the runs' default, and an
// option that says otherwise is an error. value 0: not declared.
struct LaunchDecl {
  uint32_t value = 0;
  DebugLoc loc; // the directive (file indexes Module::files)
  bool operator==(const LaunchDecl&) const = default;
};

struct Module {
  std::string kernel;
  Target target = Target::trn2;
  LaunchDecl ranks; // .ranks: SPMD ranks, 1..kMaxRanks (isa/launch.h)
  LaunchDecl lnc;   // .lnc: cores per logical core, 1..kMaxLnc
  std::vector<std::pair<std::string, std::string>> params; // resolved .param values (info)
  std::vector<TensorDecl> tensors;
  std::vector<SemDecl> sems;
  std::vector<ReplicaGroupDecl> groups;
  std::array<std::vector<Inst>, kNumEngines> streams;
  std::array<std::vector<DebugLoc>, kNumEngines> debug; // empty, or one per instruction
  std::array<std::vector<Label>, kNumEngines> labels;
  std::vector<std::string> files;
  std::vector<ExpansionFrame> frames;
  bool operator==(const Module&) const = default;
};

} // namespace nisa
