// nisa dap: frames in and out (dap.h). A frame is "Content-Length: N\r\n\r\n" and N bytes of
// JSON. Nothing the client sends ends the server: a header that cannot be read is logged and
// skipped (the reader resynchronises on the next Content-Length header), a body that is no
// request is answered with an error response, and no length or depth from the client is
// trusted before it is checked against the limits of dap.h.
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cmath>

#include <fmt/format.h>

#include "cli/dap.h"
#include "isa/error.h"

namespace nisa::cli::dap {
namespace {

// One header line without its "\r\n"; false at the end of the input. A line longer than
// kMaxHeaderLine keeps its tail: the next frame's header can follow the body of a frame that
// was skipped on the same line.
bool read_line(std::istream& in, std::string& line) {
  line.clear();
  std::streambuf* sb = in.rdbuf();
  bool any = false;
  while (true) {
    const int c = sb->sbumpc();
    if (c == std::char_traits<char>::eof()) {
      in.setstate(std::ios::eofbit);
      return any;
    }
    any = true;
    if (c == '\n') break;
    line.push_back(char(c));
    if (line.size() > 2 * kMaxHeaderLine) line.erase(0, line.size() - kMaxHeaderLine);
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return true;
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

// The value of a Content-Length header: decimal digits only, at most kMaxContentLength.
std::optional<uint64_t> parse_length(const std::string& v, std::string& error) {
  const std::string shown = v.size() > 40 ? v.substr(0, 40) + "..." : v;
  if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos) {
    error = fmt::format("Content-Length '{}' is not a byte count", shown);
    return std::nullopt;
  }
  uint64_t n = 0;
  for (char c : v) {
    n = n * 10 + uint64_t(c - '0');
    if (n > kMaxContentLength) {
      error = fmt::format("Content-Length {} is over the limit of {} bytes (64 MiB)", shown,
                          kMaxContentLength);
      return std::nullopt;
    }
  }
  return n;
}

const char* type_name(const json& j) {
  switch (j.type()) {
  case json::value_t::null: return "null";
  case json::value_t::object: return "an object";
  case json::value_t::array: return "an array";
  case json::value_t::string: return "a string";
  case json::value_t::boolean: return "a boolean";
  case json::value_t::binary: return "binary";
  case json::value_t::discarded: return "discarded";
  default: return "a number";
  }
}

} // namespace

Frame read_frame(std::istream& in) {
  std::string line, error;
  std::optional<uint64_t> len;
  while (read_line(in, line)) {
    if (line.empty()) {
      if (len) break;
      if (!error.empty()) return {Frame::Kind::skipped, "", error};
      continue; // blank lines between frames
    }
    // Other headers are ignored, and so is the rest of a skipped frame up to the next header.
    const size_t p = line.find("Content-Length:");
    if (p == std::string::npos) continue;
    error.clear();
    len = parse_length(trim(line.substr(p + 15)), error);
  }
  if (!len) {
    if (!error.empty()) return {Frame::Kind::skipped, "", error};
    return {Frame::Kind::eof, "", ""};
  }
  // Bounded above: at most 64 MiB is allocated, and only once the header says so.
  Frame f{Frame::Kind::body, std::string(size_t(*len), '\0'), ""};
  in.read(f.body.data(), std::streamsize(*len));
  if (uint64_t(in.gcount()) != *len)
    return {Frame::Kind::eof, "",
            fmt::format("the input ended {} bytes into a body of {}", in.gcount(), *len)};
  return f;
}

int json_depth(const std::string& text, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit) return deepest;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

Request parse_request(const std::string& body) {
  Request r;
  if (json_depth(body, kMaxDepth) > kMaxDepth) {
    r.error = fmt::format("the body nests arrays and objects deeper than {} levels", kMaxDepth);
    return r;
  }
  json j;
  try {
    j = json::parse(body);
  } catch (const json::exception& e) {
    r.error = fmt::format("the body is not valid JSON: {}", e.what());
    return r;
  }
  if (!j.is_object()) {
    r.error = fmt::format("the body is {}, not a JSON object", type_name(j));
    return r;
  }
  if (auto s = j.find("seq"); s != j.end() && s->is_number_integer() &&
                              !(s->is_number_unsigned() && s->get<uint64_t>() > INT64_MAX))
    r.seq = s->get<int64_t>();
  auto type = j.find("type");
  if (type == j.end() || !type->is_string()) {
    r.error = "the message has no \"type\" (a request has \"type\": \"request\")";
    return r;
  }
  if (*type == "response" || *type == "event") {
    r.ignore = true; // answers to reverse requests, which the adapter never makes
    return r;
  }
  if (*type != "request") {
    r.error = fmt::format("the message's type is '{}', not 'request'", type->get<std::string>());
    return r;
  }
  auto cmd = j.find("command");
  if (cmd == j.end() || !cmd->is_string() || cmd->get<std::string>().empty()) {
    r.error = "the request has no \"command\"";
    return r;
  }
  r.command = cmd->get<std::string>();
  if (auto a = j.find("arguments"); a != j.end() && !a->is_null()) {
    if (!a->is_object()) {
      r.error = fmt::format("the request's \"arguments\" are {}, not an object", type_name(*a));
      return r;
    }
    r.arguments = std::move(*a);
  }
  return r;
}

void Channel::send(json msg) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return;
  msg["seq"] = seq_++;
  const std::string s = msg.dump(-1, ' ', false, json::error_handler_t::replace);
  if (!write(fmt::format("Content-Length: {}\r\n\r\n{}", s.size(), s))) closed_ = true;
}

void Channel::respond(const Request& r, bool ok, json body, const std::string& message) {
  json resp = {{"type", "response"},
               {"request_seq", r.seq},
               {"success", ok},
               {"command", r.command},
               {"body", std::move(body)}};
  if (!ok) resp["message"] = message;
  send(std::move(resp));
}

void Channel::event(const std::string& name, json body) {
  send({{"type", "event"}, {"event", name}, {"body", std::move(body)}});
}

bool FdChannel::write(const std::string& frame) {
  size_t done = 0;
  while (done < frame.size()) {
    const ssize_t n = ::write(fd_, frame.data() + done, frame.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += size_t(n);
  }
  return true;
}

// ---- arguments ------------------------------------------------------------------------------

int64_t int_arg(const json& a, const char* name, int64_t lo, int64_t hi) {
  auto it = a.find(name);
  if (it == a.end() || it->is_null()) throw InputError(fmt::format("'{}' is missing", name));
  int64_t v = 0;
  if (it->is_number_unsigned()) {
    const uint64_t u = it->get<uint64_t>();
    if (u > uint64_t(INT64_MAX))
      throw InputError(fmt::format("'{}' = {} is outside {}..{}", name, u, lo, hi));
    v = int64_t(u);
  } else if (it->is_number_integer()) {
    v = it->get<int64_t>();
  } else if (it->is_number_float()) { // 5e7 parses as a float: exact integers are accepted
    const double d = it->get<double>();
    if (!(std::floor(d) == d && std::fabs(d) <= 9007199254740992.0))
      throw InputError(fmt::format("'{}' = {} is not an integer", name, it->dump()));
    v = int64_t(d);
  } else {
    throw InputError(fmt::format("'{}' is {}, not an integer", name, type_name(*it)));
  }
  if (v < lo || v > hi)
    throw InputError(fmt::format("'{}' = {} is outside {}..{}", name, v, lo, hi));
  return v;
}

int64_t int_arg(const json& a, const char* name, int64_t lo, int64_t hi, int64_t dflt) {
  auto it = a.find(name);
  return it == a.end() || it->is_null() ? dflt : int_arg(a, name, lo, hi);
}

std::string str_arg(const json& a, const char* name) {
  auto it = a.find(name);
  if (it == a.end() || it->is_null()) throw InputError(fmt::format("'{}' is missing", name));
  if (!it->is_string())
    throw InputError(fmt::format("'{}' is {}, not a string", name, type_name(*it)));
  return it->get<std::string>();
}

std::string str_arg(const json& a, const char* name, const std::string& dflt) {
  auto it = a.find(name);
  return it == a.end() || it->is_null() ? dflt : str_arg(a, name);
}

bool bool_arg(const json& a, const char* name, bool dflt) {
  auto it = a.find(name);
  if (it == a.end() || it->is_null()) return dflt;
  if (!it->is_boolean())
    throw InputError(fmt::format("'{}' is {}, not a boolean", name, type_name(*it)));
  return it->get<bool>();
}

const json& array_arg(const json& a, const char* name, size_t max_size) {
  static const json empty = json::array();
  auto it = a.find(name);
  if (it == a.end() || it->is_null()) return empty;
  if (!it->is_array())
    throw InputError(fmt::format("'{}' is {}, not an array", name, type_name(*it)));
  if (it->size() > max_size)
    throw InputError(
        fmt::format("'{}' has {} entries; at most {} are taken", name, it->size(), max_size));
  return *it;
}

std::string base64(const std::vector<uint8_t>& bytes) {
  static const char* k64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string b64;
  b64.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t v = uint32_t(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= uint32_t(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) v |= uint32_t(bytes[i + 2]);
    b64 += k64[(v >> 18) & 63];
    b64 += k64[(v >> 12) & 63];
    b64 += i + 1 < bytes.size() ? k64[(v >> 6) & 63] : '=';
    b64 += i + 2 < bytes.size() ? k64[v & 63] : '=';
  }
  return b64;
}

} // namespace nisa::cli::dap
