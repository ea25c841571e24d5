// nisa dap: a Debug Adapter Protocol server over stdio (docs/editors.md) on top of the
// debugger's model (interp/debug/model.h), the one behind `nisa debug`. Every request that
// moves or inspects the machine calls the model and builds its JSON from the structs it
// returns; the console's text of each stop (the same formatting `nisa debug` prints) goes to
// the client as output events.
//
// The parts, one file each:
//   dap_framing.cpp   frames in (Content-Length headers, limits, JSON parsing into a Request)
//                     and out (Channel: one whole message per write, from any thread)
//   dap_requests.cpp  the requests that inspect: threads, stackTrace, scopes, variables,
//                     disassemble, readMemory, breakpoints; every id, count and range the
//                     client sends is checked first
//   dap_run.cpp       launch, the requests that move the run, and how stops and the end are
//                     reported
//   dap_server.cpp    the threads: the reader answers pause / disconnect / terminate at once,
//                     a worker runs every other request in order; `nisa dap` itself
//
// Threads: every engine and DMA queue of every core, id = core * 32 + track + 1 (track: the
// engine 0..5, or 6 + queue). Frames: the next instruction of the thread with its macro /
// .for / include expansion chain, id = thread * 100 + depth. Scopes: registers of the engine,
// semaphores of the core, tensors; their variablesReference values are handed out by the
// adapter and valid until the run moves. memoryReference: "hbm:ADDR", "sbuf:P:OFF",
// "psum:P:OFF" (readMemory); instructionPointerReference "ENGINE:PC" (disassemble).
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <istream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "interp/debug/session.h"

namespace nisa::cli::dap {
using nlohmann::json;
namespace dbg = interp::debug;

// ---- limits (docs/editors.md "Limits") ------------------------------------------------------
constexpr uint64_t kMaxContentLength = uint64_t(64) << 20; // bytes of one frame's body
constexpr int kMaxDepth = 256;                             // nesting of a body's arrays/objects
constexpr size_t kMaxHeaderLine = 4096;              // a longer header line is cut to its tail
constexpr int64_t kMaxInstructionCount = 65536;      // disassemble
constexpr int64_t kMaxReadMemory = int64_t(1) << 24; // readMemory: 16 MiB
constexpr size_t kMaxBreakpoints = 4096;             // per setBreakpoints-like request
constexpr int kTracksPerCore = 32;                   // 6 engines + 16 queues, rounded up

// ---- framing (dap_framing.cpp) ----------------------------------------------------------------
// One frame read from the client: a body to parse, a frame that could not be read (a bad or
// over-long Content-Length: the reader logs it and resynchronises on the next header), or the
// end of the input.
struct Frame {
  enum class Kind { body, skipped, eof } kind = Kind::eof;
  std::string body;  // Kind::body
  std::string error; // Kind::skipped: why
};
Frame read_frame(std::istream& in);

// A request, or why the body is not one (`error` set: the answer is an error response to
// request_seq `seq`, or 0 when the body has none).
struct Request {
  int64_t seq = 0;
  std::string command;
  json arguments = json::object();
  std::string error;
  bool ignore = false; // a response or event from the client: nothing to answer
};
Request parse_request(const std::string& body);
// The deepest nesting of arrays and objects in a JSON text (strings skipped), stopping at
// `limit` + 1.
int json_depth(const std::string& text, int limit);

// Where messages go: each send() writes one whole frame, from any thread.
class Channel {
public:
  virtual ~Channel() = default;
  void send(json msg); // fills in "seq"
  void respond(const Request& r, bool ok, json body, const std::string& message = "");
  void event(const std::string& name, json body = json::object());
  bool closed() const { return closed_; }

protected:
  virtual bool write(const std::string& frame) = 0; // false: the client is gone

private:
  std::mutex mu_;
  int64_t seq_ = 1;
  std::atomic<bool> closed_{false};
};
// Writes to a file descriptor (the server: the real stdout).
class FdChannel final : public Channel {
public:
  explicit FdChannel(int fd) : fd_(fd) {}

protected:
  bool write(const std::string& frame) override;

private:
  int fd_;
};

// The checked arguments of a request: a missing or mistyped field, or a number outside its
// range, is an InputError that names the field.
int64_t int_arg(const json& a, const char* name, int64_t lo, int64_t hi);
int64_t int_arg(const json& a, const char* name, int64_t lo, int64_t hi, int64_t dflt);
std::string str_arg(const json& a, const char* name);
std::string str_arg(const json& a, const char* name, const std::string& dflt);
bool bool_arg(const json& a, const char* name, bool dflt);
const json& array_arg(const json& a, const char* name, size_t max_size); // missing: []

std::string base64(const std::vector<uint8_t>& bytes);

// ---- the inspecting requests (dap_inspect.cpp) ----------------------------------------------
// Threads, stack frames, scopes, variables, disassembly and memory of the stopped machine, and
// the table of variablesReferences handed out since the run last moved.
class Inspector {
public:
  explicit Inspector(const std::unique_ptr<dbg::Session>& session) : session_(session) {}
  dbg::Model& model(); // InputError before a launch
  json threads();
  json stack_trace(const json& a);
  json scopes(const json& a);
  json variables(const json& a);
  json disassemble(const json& a);
  json read_memory(const json& a);
  std::pair<int, int> thread_arg(const json& a, const char* name); // (core, track), checked
  int stop_thread(const dbg::Stop& s);                             // the thread a stop is shown on
  void forget() { // the run moved: handed-out references are void
    refs_.clear();
    ref_ids_.clear();
  }

private:
  const std::unique_ptr<dbg::Session>& session_;
  // variablesReference -> what it shows (handed out by scopes / variables, until the run moves).
  struct VarRef {
    enum Kind { registers, semaphores, tensors, tensor_rows } kind;
    int core = 0, engine = 0;
    size_t tensor = 0;
    auto key() const { return std::tuple(int(kind), core, engine, tensor); }
  };
  std::vector<VarRef> refs_;
  std::map<std::tuple<int, int, int, size_t>, int> ref_ids_;

  const interp::Machine& m();
  int num_cores();
  std::string who(int core);
  std::optional<dbg::Agent> agent(int core, int track);
  int ref_of(const VarRef& r);
  json tensor_rows(size_t t);
};

// ---- the adapter (dap_requests.cpp, dap_run.cpp) ---------------------------------------------
class Adapter {
public:
  // `interrupt` is raised by another thread (pause, terminate, disconnect) to stop a run after
  // its current event; `terminated` once terminate / disconnect answered: nothing more is
  // reported about the run.
  Adapter(Channel& ch, const std::atomic<bool>& interrupt, const std::atomic<bool>& terminated);
  ~Adapter();
  // Runs one request: sends its response and then the events it causes. Never throws.
  void handle(const Request& r);
  // Launch programs pass through this first (the fuzzer maps them to its own kernels).
  std::function<void(std::string& program, std::vector<std::string>& args)> launch_filter;
  // Console commands pass through this (the fuzzer refuses `dump`, which writes files).
  std::function<void(const std::string& expression)> evaluate_filter;

private:
  Channel& ch_;
  const std::atomic<bool>& interrupt_;
  const std::atomic<bool>& terminated_;
  std::vector<json> pending_; // events sent after the response
  const Request* current_ = nullptr;
  bool responded_ = false;
  std::unique_ptr<Module> mod_;
  std::unique_ptr<dbg::Session> session_;
  Inspector inspect_{session_};
  std::ostringstream text_; // the console of `evaluate`
  bool stop_on_entry_ = true;
  bool ended_ = false;
  bool finished_ = false;                            // the last stop was on the last event
  std::map<std::string, std::vector<int>> line_bps_; // source path -> breakpoint ids
  std::vector<int> fn_bps_, data_bps_;

  json dispatch(const std::string& cmd, const json& a);
  void respond_now(json body); // moving requests answer before they run
  void event(const std::string& name, json body = json::object());
  void console(const std::string& s);
  dbg::Model& model();

  // dap_requests.cpp
  std::string file_for(const std::string& path) const;
  json set_bps(const std::vector<std::function<dbg::BreakpointInfo()>>& adders,
               std::vector<int>& ids);
  json set_breakpoints(const json& a);
  json set_function_breakpoints(const json& a);
  json set_data_breakpoints(const json& a);

  // dap_run.cpp
  void launch(const json& a);
  void configuration_done();
  void finish();
  void report_stop(const dbg::Stop& s, const std::string& reason_default, bool show = true);
  void move(const std::function<dbg::Stop()>& f, const std::string& reason);
  void resume(const std::function<dbg::Stop()>& f, const std::string& reason);
  json evaluate(const json& a);
  void moved(); // the run moved: handed-out references are void
};

// A thread id of a core's engine or queue.
inline int thread_id(int core, int track) { return core * kTracksPerCore + track + 1; }
int thread_of(const interp::StepEvent& ev);
std::string track_name(int track);

// Serves requests from `in`, answering on `ch`, until disconnect or the end of the input.
int serve(std::istream& in, Channel& ch);

} // namespace nisa::cli::dap
