// The static check a run makes first (docs/check.md "Before every run"): `nisa check` within a
// small bound, so that a kernel with unordered accesses is named before its output is trusted.
// The run goes on whatever it finds, and its exit code does not change.
#pragma once
#include <string>

#include "interp/check/check.h"

namespace nisa::interp {

// The bound: unrolled nodes (deterministic; depthwise_conv1d's 43,318 nodes take 0.5 s on the
// 2-core machine of docs/performance.md), and host time as a backstop (a kernel of many rounds
// of semaphore orders costs more per node: attention_block_tkg at S_CTX=65536, 12,774 nodes in
// 10 rounds, takes 2.5 s).
inline constexpr uint64_t kPrecheckMaxNodes = 50'000;
inline constexpr double kPrecheckMaxSeconds = 0.5;

// `nisa check` of `mod` on lnc x ranks cores of `target` within the bound above (`max_seconds`:
// 0 for none, as the tests ask so that a slow sanitized build sees the same results).
CheckResult precheck(const Module& mod, Target target, int lnc, int ranks,
                     double max_seconds = kPrecheckMaxSeconds);

// What a run prints for it, each line starting with `who` ("nisa run"): nothing when proved;
// a warning with both source lines (and the suggested wait) per unordered pair and per
// deadlock report; a one-line note when the check was skipped (past the bound, or outside
// what is proved).
std::string precheck_text(const CheckResult& r, const std::string& who);

// precheck_text(precheck(...)) through a cache of those texts (docs/check.md "Before every
// run"): a file per (module bytes, lnc, ranks, target, this binary) in $NISA_CACHE_DIR, else
// $XDG_CACHE_HOME/nisa, else ~/.cache/nisa. A kernel run again pays a hash of its module
// instead of the check (depthwise_conv1d at the bench shape: ~75 ms). The cache is only a
// cache: a directory that cannot be made or written is not an error; NISA_CACHE_DIR=off turns
// it off.
// `module_hash`: the checksum of the module's object (isa/object.h object_checksum) when the
// caller has it (a .nbin, a cached assembly), so the key costs no write_object; 0: unknown.
std::string precheck_text_cached(const Module& mod, Target target, int lnc, int ranks,
                                 const std::string& who, uint64_t module_hash = 0);

// The directory of nisa's caches (the texts above, assembled kernels: cli/kernel_cache.h):
// $NISA_CACHE_DIR ("off": none), else $XDG_CACHE_HOME/nisa, else ~/.cache/nisa; empty: none.
std::string cache_dir();
// The cache is bounded: $NISA_CACHE_MAX_MB (default 256; 0: unbounded) of entries. After a
// store, at most once per 10 minutes (the stamp file `prune.stamp`), the least recently used
// entries (by mtime, which a hit refreshes: touch_cache_entry) are removed until the entries
// take 3/4 of the bound. Only nisa's own entries (asm-*.bin, precheck-*.txt) are ever removed.
void after_cache_store(const std::string& dir);
void touch_cache_entry(const std::string& file);
// The pruning itself, now: what after_cache_store does when it is due. Returns the number of
// entries removed.
size_t prune_cache(const std::string& dir, uint64_t max_bytes);
// This binary's mtime and size: part of every cache key, so that a rebuilt nisa (a changed
// checker or assembler) does not read its old entries.
uint64_t binary_stamp();

} // namespace nisa::interp
