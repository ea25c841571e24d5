#include "isa/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <streambuf>

#include <fmt/format.h>

#include "isa/quote.h"

namespace nisa {
namespace {

bool existing_non_regular(const std::string& p) {
  struct stat st {};
  return stat(p.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
}

} // namespace

// Writes through ::write in 64 KiB blocks and keeps the errno of the first failure, which
// std::ofstream loses (a later successful call may overwrite errno before anyone reads it).
class OutputFile::FdBuf final : public std::streambuf {
public:
  int fd = -1;
  int err = 0;
  FdBuf() { setp(buf_, buf_ + sizeof buf_); }
  ~FdBuf() override {
    if (fd >= 0) ::close(fd);
  }
  bool drain() {
    const char* p = pbase();
    while (!err && p < pptr()) {
      const ssize_t n = ::write(fd, p, size_t(pptr() - p));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        err = n < 0 ? errno : EIO;
      else
        p += n;
    }
    setp(buf_, buf_ + sizeof buf_);
    return !err;
  }
  bool close_fd() {
    const bool ok = drain();
    const int rc = ::close(fd);
    fd = -1;
    if (rc != 0 && !err) err = errno;
    return ok && rc == 0;
  }

protected:
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return drain() ? 0 : -1; }
  // A large block (a tensor's data streamed from HBM) goes to ::write in place, not copied
  // through the 64 KiB buffer.
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    if (n < std::streamsize(sizeof buf_)) return std::streambuf::xsputn(s, n);
    if (!drain()) return 0;
    for (std::streamsize done = 0; done < n;) {
      const ssize_t w = ::write(fd, s + done, size_t(std::min<std::streamsize>(n - done, 1 << 30)));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        err = w < 0 ? errno : EIO;
        return done;
      }
      done += w;
    }
    return n;
  }

private:
  char buf_[1 << 16];
};

OutputFile::OutputFile(std::string path)
    : path_(std::move(path)), buf_(std::make_unique<FdBuf>()), out_(buf_.get()) {
  if (path_.empty()) throw OutputError("empty output path");
  if (existing_non_regular(path_)) {
    buf_->fd = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC);
    if (buf_->fd < 0) fail(fmt::format("cannot open for writing: {}", std::strerror(errno)));
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
  buf_->fd = fd;
  if (fchmod(fd, mode) != 0)
    fail(fmt::format("cannot set the mode of {}: {}", tmp_, std::strerror(errno)));
}

OutputFile::~OutputFile() {
  if (!tmp_.empty() && !committed_) std::remove(tmp_.c_str());
}

void OutputFile::fail(const std::string& why) {
  if (buf_->fd >= 0) {
    ::close(buf_->fd);
    buf_->fd = -1;
  }
  if (!tmp_.empty()) std::remove(tmp_.c_str());
  tmp_.clear();
  committed_ = true; // nothing left to remove or rename
  throw OutputError(fmt::format("{}: {}", elide(path_), why));
}

void OutputFile::finish() {
  if (finished_) return;
  out_.flush();
  if (buf_->err || !out_ || !buf_->close_fd())
    fail(fmt::format("write failed: {}", std::strerror(buf_->err ? buf_->err : EIO)));
  finished_ = true;
}

void OutputFile::commit() {
  finish();
  if (committed_) return;
  if (!tmp_.empty()) {
    // Over an existing file, the two names are exchanged and the temporary (now the old file)
    // removed: as atomic for readers as rename(), but ext4 makes a rename() over an existing
    // file allocate the new file's blocks first (auto_da_alloc, 1.5-4 ms per output here), a
    // guard against a crash that nisa, which never fsyncs, does not promise. Where the
    // exchange is not supported (or nothing is there yet), rename().
    if (renameat2(AT_FDCWD, tmp_.c_str(), AT_FDCWD, path_.c_str(), RENAME_EXCHANGE) == 0)
      std::remove(tmp_.c_str()); // a failure leaves the old bytes under the temporary's name
    else if (std::rename(tmp_.c_str(), path_.c_str()) != 0)
      fail(fmt::format("cannot rename {} into place: {}", tmp_, std::strerror(errno)));
  }
  committed_ = true;
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  OutputFile f(path); // as write_files_atomic, without copying the bytes into a string first
  f.write(bytes);
  f.finish();
  f.commit();
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
  const auto ca = std::filesystem::weakly_canonical(std::filesystem::absolute(a), ec1);
  const auto cb = std::filesystem::weakly_canonical(std::filesystem::absolute(b), ec2);
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
