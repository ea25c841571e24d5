// Runs the nisa binary as a child process under a resource limit (header-only): fork, then
// setrlimit in the child before exec, so the limit is the one that exposed a finding (an
// address-space limit, `ulimit -v`) and the test process itself is not limited.
#pragma once
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "tests/support/test_files.h"

namespace nisa::test {

// A sanitized build reserves terabytes of shadow memory: an address-space limit cannot apply.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

struct Ran {
  int code = -1;   // the exit code; -1 when a signal ended it
  int signal = 0;  // the signal that ended it
  std::string out; // stdout and stderr
  double seconds = 0;
};

// `nisa args...` in `dir`, with the address space limited to `as_bytes` (0: no limit).
inline Ran run_limited(const std::vector<std::string>& args, uint64_t as_bytes = 0,
                       const std::string& dir = ".") {
  Ran r;
  const std::string out = dir + "/limited_run_" + std::to_string(::getpid()) + ".txt";
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::FILE* f = std::freopen(out.c_str(), "w", stdout);
    if (!f || ::dup2(::fileno(stdout), 2) < 0 || ::chdir(dir.c_str()) != 0) ::_exit(127);
    if (as_bytes) {
      struct rlimit rl {};
      rl.rlim_cur = rl.rlim_max = as_bytes;
      if (::setrlimit(RLIMIT_AS, &rl) != 0) ::_exit(126);
    }
    std::vector<char*> argv{const_cast<char*>(NISA_BINARY)};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(NISA_BINARY, argv.data());
    ::_exit(127);
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (WIFEXITED(st)) r.code = WEXITSTATUS(st);
  if (WIFSIGNALED(st)) r.signal = WTERMSIG(st);
  r.out = read_file(out);
  std::remove(out.c_str());
  return r;
}

} // namespace nisa::test
