// File helpers shared by the test suites (header-only: every suite is its own executable).
#pragma once
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace nisa::test {

// The whole file, bytes as stored ("" when it cannot be read).
inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The files of `dir` (not recursive) whose extension is one of `exts`, sorted; none when `dir`
// does not exist.
inline std::vector<std::filesystem::path> files_in(const std::filesystem::path& dir,
                                                   std::initializer_list<std::string_view> exts) {
  std::vector<std::filesystem::path> out;
  if (!std::filesystem::is_directory(dir)) return out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (std::find(exts.begin(), exts.end(), e.path().extension().string()) != exts.end())
      out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace nisa::test
