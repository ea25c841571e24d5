// libFuzzer target for nisa dap's framing and request handling (cli/dap.h): the input is the
// byte stream a client sends. Frames are read with read_frame() and parsed with
// parse_request(), and each request is handled by one Adapter, synchronously (the server's
// reader/worker threads are not part of the target: tests/test_dap_robust.py drives those), as
// the worker would. Anything but a crash, a sanitizer report, an exception out of the adapter
// or a response that is not a JSON object is fine.
//
// So that a run stays bounded and touches nothing outside: a launch's "program" picks one of
// four kernels (naming "bad": one that does not assemble; "missing": a file that does not
// exist; "lnc": the good kernel on 2 cores; else the good kernel, with --max-steps 4000 and its
// input), and the console command `dump` (which writes a file) is refused. At most kMaxFrames
// frames are taken from one input. Build and run: see CMakeLists.txt here; seeds:
// tests/fuzz/dap_seeds/ (one session each).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "cli/dap.h"
#include "interp/run/npy.h"
#include "isa/error.h"

using namespace nisa::cli::dap;

namespace {
constexpr int kMaxFrames = 64;

const char* kGood = R"(.kernel good
.hbm x : fp32[4, 8] input
.hbm y : fp32[4, 8] output
.sbuf t : fp32[4, 8]
.sem s_in, s_c, s_d
.macro fill V
        dve.memset t, V
.endm
        sp.dma q0, t, x @signal(s_in)
        dve.li r3, 5  @wait(s_in >= 1)
        fill 2.0
        dve.br mid
mid:    dve.memset t, 3.0 @signal(s_c)
        sp.dma q1, y, t @wait(s_c >= 1) @signal(s_d)
        pool.memset t, 4.0 @wait(s_d >= 1)
)";
const char* kBad = ".kernel bad\n        dve.nosuch t, 1\n";

struct Files {
  std::string dir, good, bad, missing, x;
  Files() {
    dir = (std::filesystem::temp_directory_path() / ("fuzz_dap." + std::to_string(getpid())))
              .string();
    std::filesystem::create_directories(dir);
    good = dir + "/good.nasm";
    bad = dir + "/bad.nasm";
    missing = dir + "/missing.nasm";
    std::ofstream(good) << kGood;
    std::ofstream(bad) << kBad;
    x = dir + "/x.npy";
    std::vector<float> v(32);
    for (size_t i = 0; i < v.size(); ++i) v[i] = float(i);
    nisa::interp::write_npy(x, nisa::DType::fp32, {4, 8}, reinterpret_cast<uint8_t*>(v.data()));
  }
};
const Files& files() {
  static const Files f;
  return f;
}

// Collects what the adapter sends; each frame must hold a JSON object.
class Sink final : public Channel {
protected:
  bool write(const std::string& frame) override {
    const size_t body = frame.find("\r\n\r\n");
    if (body == std::string::npos) std::abort();
    const json j = json::parse(frame.substr(body + 4), nullptr, false);
    if (!j.is_object() || !j.contains("seq") || !j.contains("type")) std::abort();
    return true;
  }
};
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Files& f = files();
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  Sink out;
  const std::atomic<bool> interrupt{false}, terminated{false};
  Adapter ad(out, interrupt, terminated);
  ad.launch_filter = [&f](std::string& program, std::vector<std::string>& args) {
    if (program.find("bad") != std::string::npos) {
      program = f.bad, args = {};
    } else if (program.find("missing") != std::string::npos) {
      program = f.missing, args = {};
    } else {
      const bool two = program.find("lnc") != std::string::npos;
      program = f.good;
      args = {"--max-steps", "4000", "--in", "x=" + f.x};
      if (two) args.insert(args.end(), {"--lnc", "2"});
    }
  };
  ad.evaluate_filter = [](const std::string& expr) {
    if (expr.find("dump") != std::string::npos)
      throw nisa::InputError("dump is refused by the fuzzer (it writes files)");
  };
  for (int k = 0; k < kMaxFrames; ++k) {
    Frame fr = read_frame(in);
    if (fr.kind == Frame::Kind::eof) break;
    if (fr.kind == Frame::Kind::skipped) continue;
    Request r = parse_request(fr.body);
    if (r.ignore) continue;
    if (!r.error.empty()) {
      out.respond(r, false, json::object(), r.error);
      continue;
    }
    ad.handle(r); // never throws: an escaping exception is a finding
  }
  return 0;
}
