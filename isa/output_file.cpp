#include "isa/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "isa/quote.h"

namespace nisa {
namespace {

bool existing_non_regular(const std::string& p) {
  struct stat st {};
  return stat(p.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
}

} // namespace

OutputFile::OutputFile(std::string path) : path_(std::move(path)) {
  if (path_.empty()) throw OutputError("empty output path");
  if (existing_non_regular(path_)) {
    out_.open(path_, std::ios::binary | std::ios::out);
    if (!out_) fail(fmt::format("cannot open for writing: {}", std::strerror(errno)));
    return;
  }
  // The temporary lives next to the destination so that rename() is atomic.
  std::string tmpl = path_ + ".tmp-XXXXXX";
  const int fd = mkstemp(tmpl.data());
  if (fd < 0) fail(fmt::format("cannot create a file next to it: {}", std::strerror(errno)));
  tmp_ = tmpl;
  // mkstemp makes the file 0600; give it the mode the destination has, or a new file's.
  struct stat st {};
  mode_t mode;
  if (stat(path_.c_str(), &st) == 0) {
    mode = st.st_mode & 07777;
  } else {
    const mode_t mask = umask(0);
    umask(mask);
    mode = 0666 & ~mask;
  }
  const int rc = fchmod(fd, mode);
  close(fd);
  if (rc != 0) fail(fmt::format("cannot set the mode of {}: {}", tmp_, std::strerror(errno)));
  out_.open(tmp_, std::ios::binary | std::ios::out | std::ios::trunc);
  if (!out_) fail(fmt::format("cannot open {}: {}", tmp_, std::strerror(errno)));
}

OutputFile::~OutputFile() {
  if (out_.is_open()) out_.close();
  if (!tmp_.empty() && !committed_) std::remove(tmp_.c_str());
}

void OutputFile::fail(const std::string& why) {
  if (out_.is_open()) out_.close();
  if (!tmp_.empty()) std::remove(tmp_.c_str());
  tmp_.clear();
  committed_ = true; // nothing left to remove or rename
  throw OutputError(fmt::format("{}: {}", elide(path_), why));
}

void OutputFile::finish() {
  if (finished_) return;
  errno = 0;
  out_.flush();
  if (!out_) fail(fmt::format("write failed: {}", errno ? std::strerror(errno) : "I/O error"));
  out_.close();
  if (!out_) fail(fmt::format("close failed: {}", errno ? std::strerror(errno) : "I/O error"));
  finished_ = true;
}

void OutputFile::commit() {
  finish();
  if (committed_) return;
  if (!tmp_.empty() && std::rename(tmp_.c_str(), path_.c_str()) != 0)
    fail(fmt::format("cannot rename {} into place: {}", tmp_, std::strerror(errno)));
  committed_ = true;
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  write_files_atomic({{path, std::string(bytes)}});
}

void write_files_atomic(const std::vector<std::pair<std::string, std::string>>& files) {
  std::vector<std::unique_ptr<OutputFile>> out;
  for (const auto& [path, bytes] : files) {
    out.push_back(std::make_unique<OutputFile>(path));
    out.back()->write(bytes);
    out.back()->finish();
  }
  for (auto& f : out) f->commit();
}

bool same_output_file(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  const bool ea = stat(a.c_str(), &sa) == 0, eb = stat(b.c_str(), &sb) == 0;
  if ((ea && !S_ISREG(sa.st_mode)) || (eb && !S_ISREG(sb.st_mode))) return false;
  if (ea && eb) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  if (ea != eb) return false;
  std::error_code ec1, ec2;
  const auto ca = std::filesystem::weakly_canonical(a, ec1);
  const auto cb = std::filesystem::weakly_canonical(b, ec2);
  return ec1 || ec2 ? a == b : ca == cb;
}

void check_output_paths(const std::vector<NamedPath>& outputs,
                        const std::vector<NamedPath>& inputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    for (size_t j = 0; j < i; ++j)
      if (same_output_file(outputs[i].path, outputs[j].path))
        throw OutputError(fmt::format("{} and {} write the same file '{}'", outputs[j].label,
                                      outputs[i].label, elide(outputs[i].path)));
    for (const NamedPath& in : inputs)
      if (same_output_file(outputs[i].path, in.path))
        throw OutputError(fmt::format("{} would overwrite {} ('{}')", outputs[i].label, in.label,
                                      elide(in.path)));
  }
}

} // namespace nisa
