// `.ranks` and `.lnc` (docs/asm.md "Launch settings"): the values, their errors at the
// expression's file:line:col, where they were declared, the object (version 2 stores them; a
// version 1 object written by the nisa before them still reads, and a version 2 one, whose
// checksum is FNV-1a, since version 3 took XXH64), the disassembly round trip and the kernels
// of kernels_asm that declare them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "asm/asm.h"
#include "isa/launch.h"
#include "isa/object.h"
#include "isa/print.h"
#include "tests/support/test_files.h"

namespace nisa::nasm {
namespace {
namespace fs = std::filesystem;

Module assembled(const std::string& src, const AsmOptions& o = {}) {
  AsmResult r = assemble_string(src, "k.nasm", o);
  EXPECT_TRUE(r.ok()) << r.diagnostics_text();
  return r.module ? std::move(*r.module) : Module{};
}

// The errors of `src`: "line:col: message" each.
std::vector<std::string> errors(const std::string& src) {
  AsmResult r = assemble_string(src, "k.nasm");
  EXPECT_FALSE(r.ok());
  std::vector<std::string> v;
  for (const Diagnostic& d : r.diags)
    if (d.severity == Diagnostic::Error)
      v.push_back(std::to_string(d.line) + ":" + std::to_string(d.col) + ": " + d.message);
  return v;
}

using Errors = std::vector<std::string>;

TEST(Launch, UndeclaredIsZeroAndDefaultsToOne) {
  const Module m = assembled(".kernel k\n  sp.nop\n");
  EXPECT_EQ(m.ranks, LaunchDecl{});
  EXPECT_EQ(m.lnc, LaunchDecl{});
  EXPECT_EQ(*launch_value(m, Launch::ranks, std::nullopt, ""), 1);
  EXPECT_EQ(*launch_value(m, Launch::lnc, std::nullopt, ""), 1);
  EXPECT_EQ(*launch_value(m, Launch::ranks, 7, "--ranks 7"), 7);
}

TEST(Launch, ValuesAndWhereTheyAreDeclared) {
  const Module m = assembled(".kernel k\n.param TP = 4\n  .ranks TP * 2\n.lnc 1 + 1\n  sp.nop\n");
  EXPECT_EQ(m.ranks.value, 8u);
  EXPECT_EQ(m.ranks.loc, (DebugLoc{0, 3, 3, -1}));
  EXPECT_EQ(m.lnc.value, 2u);
  EXPECT_EQ(m.lnc.loc, (DebugLoc{0, 4, 1, -1}));
  ASSERT_EQ(m.files, std::vector<std::string>{"k.nasm"});
  EXPECT_EQ(declaration_text(m, Launch::ranks), "`.ranks 8` at k.nasm:3");
  EXPECT_EQ(declaration_text(m, Launch::lnc), "`.lnc 2` at k.nasm:4");
}

TEST(Launch, DefineSetsTheParamItUses) {
  AsmOptions o;
  o.defines = {{"TP", "16"}};
  EXPECT_EQ(assembled(".param TP = 4\n.ranks TP\n", o).ranks.value, 16u);
}

TEST(Launch, TheRangeOfRun) {
  EXPECT_EQ(assembled(".ranks 1\n").ranks.value, 1u);
  EXPECT_EQ(assembled(".ranks 128\n").ranks.value, uint32_t(kMaxRanks));
  EXPECT_EQ(assembled(".lnc 1\n").lnc.value, 1u);
  EXPECT_EQ(assembled(".lnc 2\n").lnc.value, 2u);
}

TEST(Launch, BadValuesPointAtTheExpression) {
  EXPECT_EQ(errors(".ranks 0\n"), Errors{"1:8: .ranks 0: expected 1..128"});
  EXPECT_EQ(errors(".ranks 129\n"), Errors{"1:8: .ranks 129: expected 1..128"});
  EXPECT_EQ(errors(".param TP = 200\n  .ranks TP\n"), Errors{"2:10: .ranks 200: expected 1..128"});
  EXPECT_EQ(errors(".ranks -1\n"), Errors{"1:8: .ranks -1: expected 1..128"});
  EXPECT_EQ(errors(".lnc 0\n"), Errors{"1:6: .lnc 0: expected 1 or 2"});
  EXPECT_EQ(errors(".lnc 4\n"), Errors{"1:6: .lnc 4: expected 1 or 2"});
  EXPECT_EQ(errors(".ranks 2.5\n"), Errors{"1:8: .ranks must be an integer, not 2.5"});
  EXPECT_EQ(errors(".ranks 1 / 0\n"), Errors{"1:12: division by zero"});
  EXPECT_EQ(errors(".ranks\n"), Errors{"1:7: expected an expression, found end of line"});
}

TEST(Launch, ASecondDeclarationIsAnError) {
  EXPECT_EQ(errors(".ranks 4\n.lnc 2\n.ranks 4\n.lnc 1\n"),
            (Errors{"3:1: duplicate .ranks (.ranks 4 first declared at k.nasm:1:1)",
                    "4:1: duplicate .lnc (.lnc 2 first declared at k.nasm:2:1)"}));
  // A loop that declares it twice (reported once: the loop's repeats are one error).
  EXPECT_EQ(errors(".for i in 0 .. 2\n  .ranks 2\n.endfor\n"),
            Errors{"2:3: duplicate .ranks (.ranks 2 first declared at k.nasm:2:3)"});
  // A bad first value declares nothing: the second is the declaration.
  EXPECT_EQ(errors(".ranks 0\n.ranks 2\n"), Errors{"1:8: .ranks 0: expected 1..128"});
}

TEST(Launch, MisspeltDirectiveSuggestsIt) {
  EXPECT_EQ(errors(".rank 4\n"), Errors{"1:1: unknown directive '.rank'; did you mean '.ranks'?"});
}

TEST(Launch, DeclaredInAnIncludeNamesTheInclude) {
  const fs::path dir = fs::path(::testing::TempDir()) / "nisa_launch_include";
  fs::create_directories(dir);
  std::ofstream(dir / "ranks.inc") << "; the ranks\n\n.ranks TP\n";
  std::ofstream(dir / "main.nasm") << ".param TP = 6\n.include \"ranks.inc\"\n";
  AsmResult r = assemble_file((dir / "main.nasm").string());
  ASSERT_TRUE(r.ok()) << r.diagnostics_text();
  const Module& m = *r.module;
  EXPECT_EQ(m.ranks.value, 6u);
  ASSERT_LT(m.ranks.loc.file, m.files.size());
  EXPECT_EQ(m.files[m.ranks.loc.file], (dir / "ranks.inc").string());
  EXPECT_EQ(m.ranks.loc.line, 3u);
  EXPECT_EQ(declaration_text(m, Launch::ranks),
            "`.ranks 6` at " + (dir / "ranks.inc").string() + ":3");
  fs::remove_all(dir);
}

TEST(Launch, AGivenValueMustAgree) {
  const Module m = assembled(".ranks 4\n.lnc 2\n");
  EXPECT_EQ(*launch_value(m, Launch::ranks, std::nullopt, ""), 4);
  EXPECT_EQ(*launch_value(m, Launch::ranks, 4, "--ranks 4"), 4);
  auto r = launch_value(m, Launch::ranks, 2, "--ranks 2");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "--ranks 2 conflicts with `.ranks 4` at k.nasm:1");
  auto l = launch_value(m, Launch::lnc, 1, "lnc=1");
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.error(), "lnc=1 conflicts with `.lnc 2` at k.nasm:2");
}

TEST(Launch, ObjectKeepsValuesAndPlaces) {
  const Module m = assembled(".kernel k\n.ranks 12\n.lnc 2\n  sp.nop\n");
  const std::vector<uint8_t> bytes = write_object(m);
  EXPECT_EQ(bytes[4], kObjectVersion);
  EXPECT_EQ(kObjectVersion, 3);
  auto r = read_object(bytes);
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(*r, m);
  EXPECT_EQ(r->ranks.value, 12u);
  EXPECT_EQ(r->lnc.loc, (DebugLoc{0, 3, 1, -1}));
  EXPECT_EQ(declaration_text(*r, Launch::ranks), "`.ranks 12` at k.nasm:2");
}

TEST(Launch, DisassemblyRoundTrips) {
  const Module m = assembled(".kernel k\n.target trn3\n.param TP = 4\n.ranks TP\n.lnc 2\n"
                             ".sem s\n  sp.nop @signal(s)\n  act.nop @wait(s >= 1)\n");
  const std::string text = print_module(m);
  EXPECT_NE(text.find(".kernel k\n.target trn3\n.ranks 4\n.lnc 2\n.param TP = 4\n"),
            std::string::npos)
      << text;
  AsmResult back = assemble_string(text, "disasm.nasm");
  ASSERT_TRUE(back.ok()) << back.diagnostics_text() << text;
  EXPECT_EQ(back.module->ranks.value, 4u);
  EXPECT_EQ(back.module->lnc.value, 2u);
  EXPECT_EQ(back.module->ranks.loc, (DebugLoc{0, 3, 1, -1})); // the disassembly's line
  EXPECT_EQ(back.module->streams, m.streams);
  ModulePrintOptions no_source;
  no_source.source_comments = false;
  EXPECT_EQ(print_module(*back.module, no_source), print_module(m, no_source));
  // Undeclared: nothing printed.
  const std::string plain = print_module(assembled(".kernel k\n  sp.nop\n"));
  EXPECT_EQ(plain.find(".ranks"), std::string::npos) << plain;
  EXPECT_EQ(plain.find(".lnc"), std::string::npos) << plain;
}

// tests/asm/inputs/cumsum_v1.nbin: `nisa asm tests/asm/inputs/cumsum.nasm` by the nisa before
// the launch section (format version 1). It still loads, as the module the source assembles
// to (no launch settings), and is written back as version 2.
TEST(Launch, ReadsVersion1Objects) {
  const std::string dir = std::string(NISA_ASM_TEST_DIR) + "/inputs/";
  const std::string old = nisa::test::read_file(dir + "cumsum_v1.nbin");
  ASSERT_GT(old.size(), 24u);
  EXPECT_EQ(old.substr(0, 6), std::string("NISA\x01\x00", 6));
  auto loaded = load_object(dir + "cumsum_v1.nbin");
  ASSERT_TRUE(loaded.ok()) << loaded.error().str();
  EXPECT_EQ(loaded->ranks, LaunchDecl{});
  EXPECT_EQ(loaded->lnc, LaunchDecl{});
  AsmResult src =
      assemble_string(nisa::test::read_file(dir + "cumsum.nasm"), "tests/asm/inputs/cumsum.nasm");
  ASSERT_TRUE(src.ok()) << src.diagnostics_text();
  EXPECT_EQ(*loaded, *src.module);
  const std::vector<uint8_t> now = write_object(*loaded);
  EXPECT_EQ(now[4], kObjectVersion);
  auto again = read_object(now);
  ASSERT_TRUE(again.ok()) << again.error().str();
  EXPECT_EQ(*again, *loaded);
}

// Version 2 (written by the nisa before version 3) has the same layout with an FNV-1a 64
// checksum; version 3 stores XXH64 (docs/encoding.md "Checksum"). cumsum_v2.nbin was written
// by that nisa from inputs/cumsum.nasm.
TEST(Launch, ReadsVersion2Objects) {
  const std::string dir = std::string(NISA_ASM_TEST_DIR) + "/inputs/";
  const std::string old = nisa::test::read_file(dir + "cumsum_v2.nbin");
  ASSERT_GT(old.size(), 24u);
  EXPECT_EQ(old.substr(0, 6), std::string("NISA\x02\x00", 6));
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(old.data()), old.size());
  EXPECT_EQ(object_checksum(bytes), fnv1a64(bytes.first(bytes.size() - 8)));
  auto loaded = load_object(dir + "cumsum_v2.nbin");
  ASSERT_TRUE(loaded.ok()) << loaded.error().str();
  AsmResult src =
      assemble_string(nisa::test::read_file(dir + "cumsum.nasm"), "tests/asm/inputs/cumsum.nasm");
  ASSERT_TRUE(src.ok()) << src.diagnostics_text();
  EXPECT_EQ(*loaded, *src.module);
  // Written again: version 3, the same bytes but for the version and the checksum.
  std::vector<uint8_t> now = write_object(*loaded);
  ASSERT_EQ(now.size(), old.size());
  EXPECT_EQ(now[4], 3);
  EXPECT_EQ(object_checksum(now), xxh64(std::span<const uint8_t>(now).first(now.size() - 8)));
  std::vector<uint8_t> as_v2 = now;
  as_v2[4] = 2;
  for (size_t k = 0; k < 8; ++k) as_v2[as_v2.size() - 8 + k] = uint8_t(old[old.size() - 8 + k]);
  EXPECT_EQ(as_v2, std::vector<uint8_t>(old.begin(), old.end()));
  // Each version's checksum only: version 3 with an FNV-1a checksum is corrupt.
  std::vector<uint8_t> v3_fnv = as_v2;
  v3_fnv[4] = 3;
  auto bad = read_object(v3_fnv);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "checksum mismatch: the object is corrupt");
}

// XXH64 as the reference implementation (libxxhash 0.8.1) computes it, seed 0: each length
// class (under 4, under 8, under 32 bytes, whole 32-byte stripes with a tail).
TEST(Launch, Xxh64MatchesTheReference) {
  auto h = [](std::string_view s) {
    return xxh64({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
  };
  EXPECT_EQ(h(""), 0xef46db3751d8e999ull);
  EXPECT_EQ(h("a"), 0xd24ec4f1a98c6e5bull);
  EXPECT_EQ(h("abc"), 0x44bc2cf5ad770999ull);
  EXPECT_EQ(h("0123456789abcdef0123456789abcdef0123456789"), 0xa76190c3acf08a1cull);
  std::string s;
  for (int r = 0; r < 3; ++r)
    for (int k = 0; k < 256; ++k) s.push_back(static_cast<char>(k));
  EXPECT_EQ(h(s + "xyz"), 0xe921a1b45bd779f8ull);
}

// The multi-rank kernels say their rank count; the cumsum kernels, which do not shard, say
// .lnc 1 (on two cores both would store all of y); the others split their work over the cores
// there are and declare no .lnc.
TEST(Launch, KernelsDeclareTheirRanks) {
  const std::map<std::string, uint32_t> ranks = {{"fgcc.nasm", 4},
                                                 {"fg_allgather.nasm", 4},
                                                 {"sb2sb_allgather.nasm", 8},
                                                 {"transformer_tkg.nasm", 1}};
  const auto files = nisa::test::files_in(std::string(NISA_SOURCE_DIR) + "/kernels_asm", {".nasm"});
  ASSERT_GT(files.size(), 10u);
  for (const fs::path& f : files) {
    AsmResult r = assemble_file(f.string());
    ASSERT_TRUE(r.ok()) << f << r.diagnostics_text();
    auto it = ranks.find(f.filename().string());
    EXPECT_EQ(r.module->ranks.value, it == ranks.end() ? 0u : it->second) << f;
    EXPECT_EQ(r.module->lnc.value, f.filename().string().starts_with("cumsum") ? 1u : 0u) << f;
  }
  AsmOptions o;
  o.defines = {{"TP", "8"}};
  AsmResult fgcc = assemble_file(std::string(NISA_SOURCE_DIR) + "/kernels_asm/fgcc.nasm", o);
  ASSERT_TRUE(fgcc.ok()) << fgcc.diagnostics_text();
  EXPECT_EQ(fgcc.module->ranks.value, 8u);
}

} // namespace
} // namespace nisa::nasm
