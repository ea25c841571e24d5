// One engine's registers in the walk of `nisa check` (docs/check.md), and the register and
// branch instructions evaluated on them: their values depend only on the system registers,
// or are unknown (loaded from memory), and a branch on an unknown value is outside what is
// proved.
#pragma once
#include <array>
#include <cstdint>

#include "interp/check/check_names.h"

namespace nisa::interp::check_detail {

class Registers {
public:
  // The stream of engine `eng` of core `core`, `len` instructions long.
  Registers(const Module& m, const CheckOptions& o, const Names& names, int core, Engine eng,
            int64_t len)
      : m_(m), o_(o), names_(names), core_(core), eng_(eng), len_(len) {}

  // Runs `in`, at `pc`, on the registers; returns the pc that follows.
  int64_t step(const Inst& in, int64_t pc);

  const int32_t* values() const { return regs_.data(); }
  uint64_t unknown() const { return unknown_; } // bit r: register r was loaded from memory

  // Everything the walk of the stream depends on besides the pc.
  struct State {
    std::array<int32_t, kNumRegs> regs;
    uint64_t unknown;
    bool operator==(const State&) const = default;
  };
  State state() const { return {regs_, unknown_}; }

private:
  const Module& m_;
  const CheckOptions& o_;
  const Names& names_;
  const int core_;
  const Engine eng_;
  const int64_t len_;
  std::array<int32_t, kNumRegs> regs_ = {};
  uint64_t unknown_ = 0;

  int32_t value(const Operand& o, bool& unk) const;
  void write(const Inst& in, int32_t v, bool unk);
  int64_t target(const Operand& t, int64_t pc) const;
  int32_t cond(const Inst& in, int64_t r, int64_t pc) const;
  int32_t ring_rank(const Inst& in, int64_t pc, bool& unk) const;
};

} // namespace nisa::interp::check_detail
