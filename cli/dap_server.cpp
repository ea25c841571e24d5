// nisa dap: the server's threads and `nisa dap` itself (dap.h).
//
// The reader (the calling thread) reads frames and answers at once what must not wait for a
// run: a frame it cannot read (logged to stderr and skipped), a body that is no request (an
// error response), pause, terminate and disconnect. Every other request goes, in order, to the
// worker thread, the only one that touches the session: it answers a moving request first, then
// runs it until a stop, the end, or the interrupt the reader raises.
//
// A pause stops the run the worker is in (or the next one it starts, if it was queued before
// the pause) after its current event, with a `stopped` event of reason "pause". Terminate does
// the same and ends the session (`terminated`; nothing more is reported about the run);
// disconnect also drops the requests still queued and ends the server.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <iostream>
#include <thread>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/dap.h"

namespace nisa::cli::dap {
namespace {

class Server {
public:
  explicit Server(Channel& ch) : ch_(ch), ad_(ch, interrupt_, terminated_) {}

  int serve(std::istream& in) {
    std::thread worker([this] { work(); });
    int64_t index = 0; // arrival order of the requests
    while (!ch_.closed()) {
      Frame f = read_frame(in);
      if (f.kind == Frame::Kind::eof) {
        if (!f.error.empty()) log(f.error);
        break;
      }
      if (f.kind == Frame::Kind::skipped) {
        log(f.error + "; frame skipped");
        continue;
      }
      Request r = parse_request(f.body);
      const size_t bytes = f.body.size();
      f.body.clear();
      if (r.ignore) continue;
      if (!r.error.empty()) {
        log(r.error);
        ch_.respond(r, false, json::object(), r.error);
        continue;
      }
      ++index;
      if (r.command == "pause") {
        pause(index);
        ch_.respond(r, true, json::object());
      } else if (r.command == "terminate") {
        pause(index);
        terminated_ = true;
        ch_.respond(r, true, json::object());
        ch_.event("terminated");
      } else if (r.command == "disconnect") {
        stop(&r);
        break;
      } else if (Job j{index, std::move(r), bytes}; !enqueue(j)) {
        ch_.respond(j.r, false, json::object(),
                    fmt::format("{} requests ({} MiB) already wait for the run; pause it first",
                                kMaxQueued, kMaxQueuedBytes >> 20));
      }
    }
    stop(nullptr);
    // The worker ends after the event it is executing; one that does not within 10 s (a
    // single enormous instruction) is left to the process's exit.
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, std::chrono::seconds(10), [this] { return worker_done_; })) {
      std::fflush(stderr);
      std::_Exit(0);
    }
    lock.unlock();
    worker.join();
    return 0;
  }

private:
  struct Job {
    int64_t index;
    Request r;
    size_t bytes; // of the frame's body
  };
  // What may wait behind a run (each frame is at most 64 MiB).
  static constexpr size_t kMaxQueued = 1024, kMaxQueuedBytes = size_t(256) << 20;
  Channel& ch_;
  std::atomic<bool> interrupt_{false}, terminated_{false};
  Adapter ad_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  bool stopping_ = false, worker_done_ = false;
  int64_t running_ = -1;    // the index of the request the worker runs, -1 none
  int64_t last_pause_ = -1; // the index of the last pause / terminate
  size_t queued_bytes_ = 0;

  // Moves a request into the worker's queue; false (j untouched) when the queue is full.
  bool enqueue(Job& j) {
    std::lock_guard<std::mutex> lock(mu_);
    if (queue_.size() >= kMaxQueued || queued_bytes_ + j.bytes > kMaxQueuedBytes) return false;
    queued_bytes_ += j.bytes;
    queue_.push_back(std::move(j));
    cv_.notify_all();
    return true;
  }

  static void log(const std::string& what) { std::fprintf(stderr, "nisa dap: %s\n", what.c_str()); }

  void pause(int64_t index) {
    std::lock_guard<std::mutex> lock(mu_);
    last_pause_ = index;
    if (running_ >= 0 && running_ < index) interrupt_ = true;
  }

  // Disconnect (r) or the end of the input: the run is interrupted, queued requests dropped.
  void stop(const Request* r) {
    std::deque<Job> dropped;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      stopping_ = true;
      interrupt_ = true;
      terminated_ = true;
      dropped.swap(queue_);
      cv_.notify_all();
    }
    for (const Job& j : dropped) ch_.respond(j.r, false, json::object(), "cancelled");
    if (r) {
      ch_.respond(*r, true, json::object());
      ch_.event("terminated");
    }
  }

  void work() {
    while (true) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (stopping_ || queue_.empty()) break;
        job = std::move(queue_.front());
        queue_.pop_front();
        queued_bytes_ -= job.bytes;
        running_ = job.index;
        interrupt_ = last_pause_ > job.index || terminated_;
      }
      ad_.handle(job.r);
      std::lock_guard<std::mutex> lock(mu_);
      running_ = -1;
      interrupt_ = false;
    }
    std::lock_guard<std::mutex> lock(mu_);
    worker_done_ = true;
    cv_.notify_all();
  }
};

} // namespace

int serve(std::istream& in, Channel& ch) {
  Server s(ch);
  return s.serve(in);
}

} // namespace nisa::cli::dap

namespace nisa::cli {

int cmd_dap(int argc, char** argv) {
  if (argc > 1) {
    const std::string a = argv[1];
    if (a == "--help" || a == "-h") {
      std::cout << "usage: nisa dap\n\nA Debug Adapter Protocol server on stdin/stdout over the "
                   "debugger of `nisa debug` (docs/editors.md). The launch request takes "
                   "\"program\" (the kernel), \"args\" (the options of nisa debug: -D, --in, "
                   "--lnc, --ranks, ...; --lnc and --ranks default to the kernel's .lnc and "
                   ".ranks) and \"stopOnEntry\".\n";
      return 0;
    }
    std::fprintf(stderr, "nisa dap: unexpected argument '%s' (the adapter takes none)\n", argv[1]);
    return 1;
  }
  // The protocol gets its own descriptor; whatever else writes to stdout (a library's message)
  // goes to stderr instead of into the frames. A client that goes away is not a signal.
  std::fflush(stdout);
  const int out = ::dup(STDOUT_FILENO);
  if (out < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    std::perror("nisa dap: dup");
    return 1;
  }
  ::signal(SIGPIPE, SIG_IGN);
  std::ios::sync_with_stdio(false);
  dap::FdChannel ch(out);
  return dap::serve(std::cin, ch);
}

} // namespace nisa::cli
