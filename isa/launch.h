// The launch settings a kernel may declare (`.ranks N`, `.lnc N`: docs/asm.md "Launch
// settings") against the ones a run is given (`--ranks`, `--lnc`, Kernel.run(ranks=...)): the
// declaration is the default, and a given value that differs is an error naming both.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "isa/encode.h"
#include "isa/module.h"

namespace nisa {

// The largest rank count (`nisa run --ranks`, `.ranks`): the seeds' collectives run at TP up to
// 128 (docs/machine.md "Seed kernel envelopes").
inline constexpr int kMaxRanks = 128;
// The largest logical core (`--lnc`, `.lnc`): 1 or 2 cores.
inline constexpr int kMaxLnc = 2;

enum class Launch { ranks, lnc };

const char* launch_name(Launch s); // "ranks", "lnc"
const LaunchDecl& declared(const Module& m, Launch s);
int launch_max(Launch s); // kMaxRanks, kMaxLnc

// Why `value` is no valid setting (nullopt when it is): "expected 1..128".
std::optional<std::string> launch_value_error(Launch s, int64_t value);

// "`.ranks 4` at kernels_asm/fgcc.nasm:12" (the file as the assembler was given it).
std::string declaration_text(const Module& m, Launch s);

// The value a run uses: `given` when set, else the declared value, else 1. A given value that
// differs from a declared one is an error: "SPELLED conflicts with `.ranks 4` at FILE:LINE",
// where SPELLED is the option as the caller's user wrote it ("--ranks 2", "ranks=2").
Result<int, std::string> launch_value(const Module& m, Launch s, std::optional<int> given,
                                      std::string_view spelled);

} // namespace nisa
