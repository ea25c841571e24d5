// The library's errors (docs/decisions.md "Errors"): every error nisa reports to a user is a
// nisa::Error, thrown where it is found and caught at the two boundaries, the command line
// (cli/) and the Python module (python/), which print it or raise it as a Python exception.
// Functions that only *check* something return the reason instead (std::optional<std::string>,
// empty when it holds); the decoder of encoded bytes returns a Result (isa/encode.h), because
// a bad byte there is data, not an exceptional path.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

namespace nisa {

// Where in a source file an error is (line and col 1-based; line 0: not known).
struct SourceLoc {
  std::string file;
  uint32_t line = 0, col = 0;
  bool known() const { return line != 0; }
  std::string str() const; // "file:line:col"
};

class Error : public std::runtime_error {
public:
  explicit Error(const std::string& message) : std::runtime_error(message), message_(message) {}
  // what() is "file:line:col: message".
  Error(SourceLoc where, const std::string& message);
  const SourceLoc& where() const { return where_; }
  const std::string& message() const { return message_; } // without the location
private:
  SourceLoc where_;
  std::string message_;
};

// Bad input: a kernel, an object file, a .npy file, an option, a debugger command. The command
// line exits 1; Python raises nisa.InputError (a ValueError).
struct InputError : Error {
  using Error::Error;
};

// What the host could not do: allocate or map memory, create or write a file. Exit 1.
struct HostError : Error {
  using Error::Error;
};

// Memory the host could not allocate, named: "out of memory: WHAT (N bytes = 1.5 GiB)", e.g.
// WHAT = "rank 0's HBM". The command line exits 1 (docs/machine.md "Limits").
struct OutOfMemory : HostError {
  OutOfMemory(const std::string& what, uint64_t bytes);
};

} // namespace nisa
