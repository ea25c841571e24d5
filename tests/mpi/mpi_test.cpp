// MPI processes (docs/machine.md "MPI processes"): `mpirun -np P nisa run ... --ranks R` for
// P in 1..4 must give one process's bits: outputs, --stats, --stats-json, --timeline and
// --profile (text and JSON), under the fixed schedule and random ones, for the ring kernels,
// sb2sb and transformer_tkg (R not a multiple of P, and more processes than ranks, included). The
// failures too: a deadlock across processes, a fault from one rank's bad input, and a killed
// process end the job with the single process's report (or mpirun's) and a non-zero exit code,
// never a hang.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "interp/run/npy.h"
#include "tests/support/kernel_harness.h"

namespace nisa {
namespace {

namespace fs = std::filesystem;

struct Case {
  std::string name, file; // file: relative to the source tree
  kt::Defines defines;
  int lnc = 1, ranks = 1;
};

std::vector<Case> cases() {
  return {
      {"fg_allgather", "kernels_asm/fg_allgather.nasm", {{"TP", "4"}}, 2, 4},
      {"fg_allgather_hbm",
       "kernels_asm/fg_allgather.nasm",
       {{"TP", "6"}, {"FORCE_HBM", "1"}, {"M", "96"}},
       1,
       6},
      {"fgcc", "kernels_asm/fgcc.nasm", {{"TP", "4"}}, 2, 4},
      {"sb2sb_allgather", "kernels_asm/sb2sb_allgather.nasm", {{"TP", "4"}}, 2, 4},
      {"transformer_tkg", "kernels_asm/transformer_tkg.nasm", {{"TP", "2"}}, 2, 2},
  };
}

int sh(const std::string& cmd) {
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + (WIFSIGNALED(rc) ? WTERMSIG(rc) : 0);
}

// Open MPI refuses root unless told; the tests run as whoever runs CTest. Under `make asan`
// the processes these tests start keep ASan's error checks but not its leak check: Open MPI's
// plugins leave allocations behind at MPI_Finalize and are unloaded by then, so no suppression
// can name them (nisa's own leaks are checked by every other test of the sanitized suite).
void allow_root() {
  if (::geteuid() == 0) {
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  }
  ::setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
}

// P = 0: one process, no mpirun.
std::string launcher(int procs) {
  if (procs == 0) return NISA_BINARY;
  return fmt::format("{} --oversubscribe -np {} {}", NISA_MPIEXEC, procs, NISA_BINARY);
}

// mpirun's own lines about the job's end follow the processes' output.
std::string strip_mpirun(std::string s) {
  size_t at = s.find("\n-----");
  if (at == std::string::npos && s.rfind("-----", 0) == 0) at = 0;
  return at == std::string::npos ? s : s.substr(0, at + (at ? 1 : 0));
}

struct Variant {
  std::string name, flags;
};

// Every file the run writes, its stdout, stderr and exit code.
std::map<std::string, std::string> run_once(const Case& c, const Variant& v,
                                            const std::vector<interp::IoSpec>& ins, const Module& m,
                                            const fs::path& dir, int procs) {
  const fs::path out = dir / fmt::format("p{}", procs);
  fs::remove_all(out);
  fs::create_directories(out);
  std::string flags = v.flags;
  if (size_t at = flags.find("--timeline"); at != std::string::npos)
    flags.insert(at + 10, " '" + (out / "timeline.json").string() + "'");
  if (size_t at = flags.find("--profile-json"); at != std::string::npos)
    flags.insert(at + 14, " '" + (out / "profile.json").string() + "'");
  std::string cmd = fmt::format("cd '{}' && {} run {} --lnc {} --ranks {} --threads 1 --stats "
                                "--stats-json '{}' {}",
                                NISA_SOURCE_DIR, launcher(procs), c.file, c.lnc, c.ranks,
                                (out / "stats.json").string(), flags);
  for (const auto& [k, val] : c.defines) cmd += fmt::format(" -D {}={}", k, val);
  for (const auto& in : ins) cmd += fmt::format(" --in {}={}", in.name, in.path);
  for (const TensorDecl& t : m.tensors)
    if (t.role == Role::output)
      cmd += fmt::format(" --out {}={}", t.name, (out / (t.name + ".npy")).string());
  const fs::path so = dir / "stdout.txt", se = dir / "stderr.txt";
  const int rc = sh(fmt::format("{} > '{}' 2> '{}'", cmd, so.string(), se.string()));
  std::map<std::string, std::string> files;
  files["exit code"] = std::to_string(rc);
  files["stdout"] = kt::strip_wall(kt::slurp(so.string()));
  files["stderr"] = strip_mpirun(kt::slurp(se.string()));
  for (const auto& e : fs::directory_iterator(out))
    files[e.path().filename().string()] = kt::strip_wall(kt::slurp(e.path().string()));
  return files;
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("nisa_mpi_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

class Mpi : public ::testing::TestWithParam<Case> {
protected:
  void SetUp() override { allow_root(); }
};

TEST_P(Mpi, SameBitsForOneToFourProcesses) {
  const Case& c = GetParam();
  kt::Assembled a =
      kt::assemble_kernel(fs::path(c.file).filename().string(), c.defines, Target::trn2);
  ASSERT_TRUE(a.ok) << a.diagnostics;
  const fs::path dir = fresh_dir(c.name);
  const auto ins = kt::random_inputs(a.module, dir.string(), c.ranks);
  const std::vector<Variant> variants = {
      {"fixed", ""},
      {"random5", "--schedule random --seed 5"},
      {"timeline", "--timeline"},
      {"timeline_random3", "--schedule random --seed 3 --timeline"},
      // The profile (docs/profile.md): rank 0 prints and writes it, with the what-if re-runs
      // and the critical path on the timeline.
      {"profile", "--profile --profile-json --timeline"}};
  for (const Variant& v : variants) {
    const fs::path vd = dir / v.name;
    fs::create_directories(vd);
    auto one = run_once(c, v, ins, a.module, vd, 0);
    ASSERT_EQ(one["exit code"], "0") << v.name << ": " << one["stderr"];
    for (int p : {1, 2, 3, 4}) {
      if (p == 1 && v.name != "fixed") continue; // mpirun -np 1 is one process
      auto many = run_once(c, v, ins, a.module, vd, p);
      ASSERT_EQ(one.size(), many.size())
          << c.name << " / " << v.name << " P=" << p << ": " << many["stderr"];
      for (const auto& [what, text] : one) {
        EXPECT_FALSE(text.empty() && what.find(".npy") != std::string::npos) << what;
        EXPECT_TRUE(text == many[what]) << c.name << " / " << v.name << ": " << what
                                        << " differs between one process and P = " << p
                                        << (what == "stderr" ? "\n" + many[what] : "");
      }
    }
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Kernels, Mpi, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

// A failing run: the report (stderr) and exit code of P processes are one process's, under
// the fixed schedule and a random one.
void expect_same_failure(const std::string& kernel, const std::string& args, int code) {
  allow_root();
  const fs::path dir = fresh_dir(fs::path(kernel).stem().string());
  for (const char* schedule : {"", " --schedule random --seed 9"}) {
    auto run = [&](int procs) {
      const fs::path se = dir / "stderr.txt";
      const int rc = sh(fmt::format(
          "cd '{}' && {} run {} --ranks 4 {}{} > /dev/null 2> '{}'", dir.string(), launcher(procs),
          std::string(NISA_SOURCE_DIR) + "/" + kernel, args, schedule, se.string()));
      return std::make_pair(rc, strip_mpirun(kt::slurp(se.string())));
    };
    auto [rc1, err1] = run(0);
    EXPECT_EQ(rc1, code) << err1;
    EXPECT_FALSE(err1.empty());
    for (int p : {2, 3, 4}) {
      auto [rc, err] = run(p);
      EXPECT_EQ(rc, code) << "P = " << p << schedule << ": " << err;
      EXPECT_EQ(err, err1) << "P = " << p << schedule;
    }
  }
  fs::remove_all(dir);
}

std::string per_rank_fp32(const fs::path& dir, const std::string& name, std::vector<int64_t> shape,
                          uint32_t seed) {
  uint64_t n = 1;
  for (int64_t d : shape) n *= uint64_t(d);
  const std::string p = (dir / (name + ".npy")).string();
  interp::write_npy(p, DType::fp32, shape,
                    kt::to_bytes(kt::random_values(n, DType::fp32, seed), DType::fp32).data());
  return p;
}

TEST(MpiFailures, DeadlockAcrossProcessesIsReportedAsOneProcessReportsIt) {
  const fs::path dir = fresh_dir("deadlock_inputs");
  const std::string x = per_rank_fp32(dir, "x", {4, 4, 8}, 11);
  expect_same_failure("tests/mpi/cross_deadlock.nasm", "--in x=" + x, interp::kExitDeadlock);
  fs::remove_all(dir);
}

TEST(MpiFailures, BadInputOnOneRankIsReportedAsOneProcessReportsIt) {
  const fs::path dir = fresh_dir("bad_index_inputs");
  const std::string x = per_rank_fp32(dir, "x", {4, 8, 16}, 12);
  std::vector<int32_t> idx = {3, 0, 100, 7}; // rank 2's row index is outside x's 8 rows
  const std::string ip = (dir / "idx.npy").string();
  interp::write_npy(ip, DType::int32, {4, 1, 1}, reinterpret_cast<const uint8_t*>(idx.data()));
  expect_same_failure("tests/mpi/bad_index.nasm", "--in x=" + x + " --in idx=" + ip,
                      interp::kExitFault);
  fs::remove_all(dir);
}

TEST(MpiFailures, TruncatedInputIsAnErrorOfTheWholeJob) {
  const fs::path dir = fresh_dir("truncated_inputs");
  const std::string x = per_rank_fp32(dir, "x", {4, 4, 8}, 13);
  fs::resize_file(x, fs::file_size(x) - 4); // the last rank's slice is short
  expect_same_failure("tests/mpi/cross_deadlock.nasm", "--in x=" + x, interp::kExitUsage);
  fs::remove_all(dir);
}

TEST(MpiFailures, SpentBudgetIsReportedAsOneProcessReportsIt) {
  const fs::path dir = fresh_dir("budget_inputs");
  const std::string x = per_rank_fp32(dir, "x", {4, 4, 8}, 16);
  expect_same_failure("tests/mpi/endless_ring.nasm", "--max-steps 3000 --in x=" + x,
                      interp::kExitBudget);
  fs::remove_all(dir);
}

TEST(MpiFailures, AKilledProcessEndsTheJob) {
  allow_root();
  const fs::path dir = fresh_dir("killed");
  const std::string x = per_rank_fp32(dir, "x", {4, 4, 8}, 14);
  const std::string tag = dir.filename().string(); // in every process's command line
  const std::string cmd = fmt::format(
      "cd '{}' && {} run {}/tests/mpi/endless_ring.nasm --ranks 4 --max-steps 0 --in x={} "
      "> /dev/null 2> err.txt",
      dir.string(), launcher(3), NISA_SOURCE_DIR, x);
  const auto t0 = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // Wait until the three processes run the ring, then kill one of them.
  std::string pids;
  for (int i = 0; i < 200 && pids.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const fs::path pf = dir / "pids.txt";
    // Anchored: the shell's and mpirun's command lines hold the pattern too.
    sh(fmt::format("pgrep -f '^{} run .*endless_ring.nasm.*{}' > '{}'", NISA_BINARY, tag,
                   pf.string()));
    std::string all = kt::slurp(pf.string());
    int lines = 0;
    for (char ch : all) lines += ch == '\n';
    if (lines >= 3) pids = all;
  }
  ASSERT_FALSE(pids.empty()) << "the job's processes never started";
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const std::string victim = pids.substr(pids.rfind('\n', pids.size() - 2) + 1);
  ASSERT_EQ(sh("kill -9 " + victim), 0);
  // The job must end by itself, non-zero, well before this deadline.
  int status = 0;
  pid_t done = 0;
  while ((done = ::waitpid(pid, &status, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60))
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  if (done == 0) {
    ::kill(pid, SIGKILL);
    sh(fmt::format("pkill -9 -f '{}'", tag));
    ::waitpid(pid, &status, 0);
    FAIL() << "the job did not end after one of its processes was killed";
  }
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_NE(WEXITSTATUS(status), 0);
  EXPECT_NE(kt::slurp((dir / "err.txt").string()).find("signal 9"), std::string::npos)
      << kt::slurp((dir / "err.txt").string());
  fs::remove_all(dir);
}

TEST(MpiFailures, DebuggerAndObserversSayTheyNeedOneProcess) {
  allow_root();
  const fs::path dir = fresh_dir("observers");
  const std::string x = per_rank_fp32(dir, "x", {4, 4, 8}, 15);
  const fs::path se = dir / "err.txt";
  const std::string k = std::string(NISA_SOURCE_DIR) + "/tests/mpi/cross_deadlock.nasm";
  EXPECT_EQ(sh(fmt::format("{} run {} --ranks 4 --in x={} --check-races 2> '{}'", launcher(2), k, x,
                           se.string())),
            interp::kExitUsage);
  EXPECT_NE(kt::slurp(se.string())
                .find("--check-races is not available with ranks spread over 2 "
                      "MPI processes"),
            std::string::npos)
      << kt::slurp(se.string());
  EXPECT_NE(sh(fmt::format("{} --oversubscribe -np 2 {} debug {} --ranks 4 --in x={} 2> '{}'",
                           NISA_MPIEXEC, NISA_BINARY, k, x, se.string())),
            0);
  EXPECT_NE(kt::slurp(se.string()).find("not available under mpirun"), std::string::npos)
      << kt::slurp(se.string());
  fs::remove_all(dir);
}

// The processes of a job check first that they run one kernel with one set of options (a hash
// of each): started with other -D values, another kernel, other options, or with one process
// that stops before its run, the job ends with one line naming the first process that differs,
// exit code 1, no output written (before: MPI_ERR_TRUNCATE, a hang, a "bad collective arrival
// record", or exit 0 with rank 0's outputs only). Two programs in one job: mpirun's A : B form.
struct JobEnd {
  int rc;
  std::string err;
  bool wrote;
};
JobEnd run_two(const std::string& a, const std::string& b, const std::string& output = "y") {
  allow_root();
  const fs::path dir = fresh_dir("job_check");
  const fs::path se = dir / "err.txt", out = dir / "y.npy";
  auto cmd = [&](const std::string& args) {
    return fmt::format("{} run {} --out {}={}", NISA_BINARY, args, output, out.string());
  };
  const int rc = sh(fmt::format("cd '{}' && timeout 120 {} --oversubscribe -np 1 {} : -np 1 {} "
                                "> /dev/null 2> '{}'",
                                NISA_SOURCE_DIR, NISA_MPIEXEC, cmd(a), cmd(b), se.string()));
  JobEnd e{rc, strip_mpirun(kt::slurp(se.string())), fs::exists(out)};
  fs::remove_all(dir);
  return e;
}

void expect_one_line(const JobEnd& e, const std::string& what) {
  EXPECT_EQ(e.rc, interp::kExitUsage) << e.err;
  EXPECT_EQ(std::count(e.err.begin(), e.err.end(), '\n'), 1) << e.err;
  EXPECT_EQ(e.err.rfind("nisa run: error: MPI process 1 of 2 ", 0), 0u) << e.err;
  EXPECT_NE(e.err.find(what), std::string::npos) << e.err;
  EXPECT_FALSE(e.wrote);
}

TEST(MpiJobCheck, OtherDefinesStopTheJobWithOneLine) {
  const fs::path dir = fresh_dir("job_check_inputs");
  const std::string lhs = (dir / "lhs.npy").string();
  std::vector<uint16_t> bits(128 * 128, 0x3f80);
  interp::write_npy(lhs, DType::bf16, {128, 128}, reinterpret_cast<const uint8_t*>(bits.data()));
  const std::string k = "kernels_asm/fg_allgather.nasm -D TP=4 -D M=128 --ranks 4 --in lhs=" + lhs;
  const JobEnd same = run_two(k, k, "out");
  EXPECT_EQ(same.rc, 0) << same.err;
  EXPECT_TRUE(same.wrote);
  // bf16 and fp16, SBUF or HBM buffers: the same sizes, so the exchanges matched and the job
  // "succeeded"; another M: MPI_ERR_TRUNCATE; another lnc: "a bad collective arrival record".
  expect_one_line(run_two(k, k + " -D DT=fp16", "out"), "assembled another kernel than process 0");
  expect_one_line(run_two(k, k + " -D FORCE_HBM=1", "out"), "another file or -D value");
  expect_one_line(run_two(k, k + " -D M=256", "out"), "another file or -D value");
  expect_one_line(run_two(k, k + " --lnc 2", "out"),
                  "was started with other options than process 0");
  fs::remove_all(dir);
}

TEST(MpiJobCheck, OtherKernelsOrOptionsStopTheJobWithOneLine) {
  const fs::path dir = fresh_dir("job_check_kernels");
  const std::string x = per_rank_fp32(dir, "x", {4, 4, 8}, 18);
  const std::string a = "tests/mpi/cross_deadlock.nasm --ranks 4 --in x=" + x;
  const std::string b = "tests/mpi/endless_ring.nasm --ranks 4 --in x=" + x;
  expect_one_line(run_two(a, b), "assembled another kernel than process 0");
  expect_one_line(run_two(b, b + " --max-steps 3000"), "other options");
  expect_one_line(run_two(b, b + " --schedule random --seed 4"), "other options");
  // A process that stops before its run (its kernel does not assemble) does not leave the
  // others waiting for it.
  expect_one_line(run_two(b, b + " -D NO_SUCH_PARAM=1"), "stopped before the run");
  fs::remove_all(dir);
}

// nisa loads Open MPI only under mpirun with more than one process (interp/dist/procs.cpp): a plain
// process does not map libmpi (it cost 1.3-1.7 ms of every start), and a module that cannot be
// loaded is an error of the job that says what to set, never a crash or a hang.
TEST(MpiModule, APlainProcessDoesNotLoadMpi) {
  const fs::path dir = fresh_dir("plain");
  const fs::path maps = dir / "libs.txt";
  ASSERT_EQ(
      sh(fmt::format("LD_DEBUG=libs {} --version 2> '{}' > /dev/null", NISA_BINARY, maps.string())),
      0);
  const std::string libs = kt::slurp(maps.string());
  EXPECT_NE(libs.find("libstdc++"), std::string::npos) << libs; // the check sees libraries
  EXPECT_EQ(libs.find("libmpi"), std::string::npos) << libs;
  fs::remove_all(dir);
}

TEST(MpiModule, AMissingModuleIsAnErrorOfTheJob) {
  allow_root();
  const fs::path dir = fresh_dir("no_module");
  const std::string x = per_rank_fp32(dir, "x", {4, 4, 8}, 17);
  const fs::path se = dir / "err.txt";
  const std::string k = std::string(NISA_SOURCE_DIR) + "/tests/mpi/cross_deadlock.nasm";
  EXPECT_NE(sh(fmt::format("NISA_MPI_MODULE=/nonexistent/libnisa_mpi.so {} run {} --ranks 4 "
                           "--in x={} > /dev/null 2> '{}'",
                           launcher(2), k, x, se.string())),
            0);
  const std::string err = kt::slurp(se.string());
  EXPECT_NE(err.find("cannot load the MPI module (set NISA_MPI_MODULE to its path)"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("/nonexistent/libnisa_mpi.so"), std::string::npos) << err;
  fs::remove_all(dir);
}

} // namespace
} // namespace nisa
