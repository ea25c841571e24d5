"""`nisa dap` under hostile input (issue 33): one test per finding. Each drives the adapter
through a scripted client, asserts the real response or event, and then that the server is still
alive and answers a request. Memory findings run the adapter under RLIMIT_AS (not under ASan,
whose shadow memory needs terabytes of address space) and check its peak RSS as well."""
import json
import os
import queue
import re
import resource
import subprocess
import threading
import time

import numpy as np
import pytest

from conftest import NISA

SANITIZED = "libasan" in os.environ.get("LD_PRELOAD", "") or "asan" in NISA

KERNEL = """.kernel good
.hbm x : fp32[4, 8] input
.hbm y : fp32[4, 8] output
.sbuf t : fp32[4, 8]
.sem s
        sp.dma q0, t, x @signal(s)
        dve.memset t, 2.0 @wait(s >= 1)
        sp.dma q1, y, t @wait(s >= 1)
"""

# An endless loop: a continue runs until the step budget (10^9 events: hours) or a pause.
ENDLESS = """.kernel spin
.sbuf t : fp32[4, 8]
loop:   dve.memset t, 1.0
        dve.br loop
"""

BAD = """.kernel bad
.hbm x : fp32[4, 8] input
        dve.nosuch t, 1
"""


def limit_as(nbytes):
    def pre():
        if not SANITIZED:
            resource.setrlimit(resource.RLIMIT_AS, (nbytes, nbytes))
    return pre


STARTED = []


@pytest.fixture(autouse=True)
def kill_adapters():
    """An adapter a failed test leaves running (a run of hours) is killed."""
    yield
    while STARTED:
        p = STARTED.pop()
        if p.poll() is None:
            p.kill()
            p.wait()


class Client:
    """A DAP client whose reads time out (a reader thread parses the adapter's frames)."""

    def __init__(self, limit=None):
        self.p = subprocess.Popen([NISA, "dap"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, preexec_fn=limit and limit_as(limit))
        STARTED.append(self.p)
        self.seq = 1
        self.msgs = queue.Queue()
        self.events = []
        self.responses = {}
        self.stderr = []
        threading.Thread(target=self._pump, daemon=True).start()
        self.err_thread = threading.Thread(target=lambda: self.stderr.extend(self.p.stderr),
                                           daemon=True)
        self.err_thread.start()

    def _pump(self):
        out = self.p.stdout
        while True:
            hdr = b""
            while not hdr.endswith(b"\r\n\r\n"):
                c = out.read(1)
                if not c:
                    self.msgs.put(None)
                    return
                hdr += c
            n = int(re.search(rb"Content-Length: (\d+)", hdr).group(1))
            self.msgs.put(json.loads(out.read(n)))

    def _next(self, timeout):
        m = self.msgs.get(timeout=timeout)
        assert m is not None, "the adapter closed its output (exit %s)" % self.p.poll()
        if m["type"] == "event":
            self.events.append(m)
        else:
            self.responses[m["request_seq"]] = m
        return m

    def raw(self, data):
        self.p.stdin.write(data)
        self.p.stdin.flush()

    def frame(self, body):
        self.raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def send(self, command, **args):
        seq = self.seq
        self.seq += 1
        self.frame(json.dumps({"seq": seq, "type": "request", "command": command,
                               "arguments": args}).encode())
        return seq

    def response(self, seq, timeout=60):
        deadline = time.monotonic() + timeout
        while seq not in self.responses:
            self._next(max(0.01, deadline - time.monotonic()))
        return self.responses.pop(seq)

    def request(self, command, ok=True, timeout=60, **args):
        r = self.response(self.send(command, **args), timeout)
        assert r["command"] == command and r["success"] == ok, r
        return r.get("body", {}) if ok else r

    def event(self, name, timeout=60):
        deadline = time.monotonic() + timeout
        while True:
            for i, e in enumerate(self.events):
                if e["event"] == name:
                    return self.events.pop(i)["body"]
            self._next(max(0.01, deadline - time.monotonic()))

    def alive(self):
        """The server still runs and answers."""
        assert self.p.poll() is None, b"".join(self.stderr).decode()
        caps = self.request("initialize", adapterID="nisa")
        assert caps["supportsStepBack"] is True

    def peak_rss_mb(self):
        with open(f"/proc/{self.p.pid}/status") as f:
            return int(re.search(r"VmHWM:\s+(\d+) kB", f.read()).group(1)) / 1024

    def close(self):
        self.request("disconnect")
        self.p.stdin.close()
        assert self.p.wait(timeout=30) == 0
        self.err_thread.join(timeout=30)
        return b"".join(self.stderr).decode()


@pytest.fixture
def files(tmp_path):
    (tmp_path / "good.nasm").write_text(KERNEL)
    (tmp_path / "spin.nasm").write_text(ENDLESS)
    (tmp_path / "bad.nasm").write_text(BAD)
    np.save(tmp_path / "x.npy", np.arange(32, dtype=np.float32).reshape(4, 8))
    return tmp_path


def launched(files, limit=None, program="good.nasm", args=None):
    c = Client(limit)
    c.request("initialize", adapterID="nisa")
    c.event("initialized")
    c.request("launch", program=str(files / program),
              args=args if args is not None else ["--in", f"x={files / 'x.npy'}"])
    c.request("configurationDone")
    assert c.event("stopped")["reason"] == "entry"
    return c


# ---- framing ------------------------------------------------------------------------------

@pytest.mark.parametrize("header,message", [
    (b"Content-Length: abc", "Content-Length 'abc' is not a byte count; frame skipped"),
    (b"Content-Length: -5", "Content-Length '-5' is not a byte count; frame skipped"),
    (b"Content-Length: 18446744073709551617",
     "Content-Length 18446744073709551617 is over the limit of 67108864 bytes (64 MiB); frame "
     "skipped"),
], ids=["abc", "negative", "over-uint64"])
def test_unreadable_content_length_is_skipped(header, message):
    """A non-numeric or negative Content-Length ended the server ("nisa dap: stoul")."""
    c = Client()
    c.raw(header + b"\r\n\r\n{}")
    c.alive()
    assert f"nisa dap: {message}\n" in c.close()


def test_huge_content_length_allocates_nothing():
    """Content-Length: 2000000000 was allocated (and zeroed) before a byte was read."""
    c = Client(limit=1 << 30)
    c.raw(b"Content-Length: 2000000000\r\n\r\n{}")
    c.alive()
    assert c.peak_rss_mb() < 200
    assert "over the limit of 67108864 bytes (64 MiB)" in c.close()


@pytest.mark.parametrize("body,message", [
    (b"{not json", "the body is not valid JSON"),
    (b"[1, 2]", "the body is an array, not a JSON object"),
    (b'"request"', "the body is a string, not a JSON object"),
    (b'{"seq": 7, "type": "request"}', 'the request has no "command"'),
    (b'{"seq": 7, "type": "request", "command": 5}', 'the request has no "command"'),
    (b'{"seq": 7, "command": "threads"}', 'no "type"'),
    (b'{"seq": 7, "type": "request", "command": "threads", "arguments": [1]}',
     '"arguments" are an array'),
    (b"[" * 100000 + b"]" * 100000, "deeper than 256 levels"),
], ids=["invalid", "array", "string", "no-command", "command-5", "no-type", "arguments-array",
        "deep"])
def test_malformed_body_gets_an_error_response(body, message):
    c = Client()
    c.frame(body)
    r = c.response(7 if b'"seq": 7' in body else 0)
    assert r["success"] is False and message in r["message"], r
    c.alive()
    c.close()


def test_unknown_request_and_mistyped_arguments(files):
    c = launched(files)
    assert "unsupported request 'frobnicate'" in c.request("frobnicate", ok=False)["message"]
    r = c.request("stackTrace", ok=False, threadId="five")
    assert r["message"] == "'threadId' is a string, not an integer"
    r = c.request("stackTrace", ok=False, threadId=1.5)
    assert r["message"] == "'threadId' = 1.5 is not an integer"
    c.alive()
    c.close()


# ---- a failed second launch ------------------------------------------------------------------

@pytest.mark.parametrize("second", ["none.nasm", "bad.nasm"])
def test_failed_second_launch_keeps_the_session(files, second):
    """A second launch that failed freed the module the first session ran on: the next
    continue / stackTrace / evaluate crashed (SIGSEGV; the bad-assembly form grew to 3.6 GB)."""
    c = launched(files, limit=2 << 30)
    r = c.request("launch", ok=False, program=str(files / second))
    assert "the kernel did not load" in r["message"]
    ts = {t["name"]: t["id"] for t in c.request("threads")["threads"]}
    frames = c.request("stackTrace", threadId=ts["sp"])["stackFrames"]
    assert frames[0]["line"] == 6 and frames[0]["source"]["path"].endswith("good.nasm")
    assert "x          hbm  fp32[4, 8]" in c.request("evaluate", expression="info tensors")["result"]
    c.request("continue", threadId=ts["sp"])
    assert c.event("exited")["exitCode"] == 0
    c.event("terminated")
    y = c.request("evaluate", expression="print y")["result"]
    assert y.count(" 2 ") + y.count(" 2\n") == 32  # the memset's 2.0 in every element
    assert c.peak_rss_mb() < 500
    c.alive()
    err = c.close()
    if second == "bad.nasm":
        assert "unknown mnemonic 'nosuch'" in err


def test_launch_after_launch_replaces_the_session(files):
    c = launched(files)
    c.request("launch", program=str(files / "spin.nasm"), args=[])
    names = [v["name"] for v in c.request("variables", variablesReference=c.request(
        "scopes", frameId=c.request("stackTrace", threadId=3)["stackFrames"][0]["id"])["scopes"][-1]
        ["variablesReference"])["variables"]]
    assert names == ["t"]
    c.close()


# ---- references, counts and ranges ---------------------------------------------------------------

@pytest.mark.parametrize("ref", [100001, 200000, 299999, 300000, 400000])
def test_variables_before_launch(ref):
    c = Client()
    c.request("initialize", adapterID="nisa")
    r = c.request("variables", ok=False, variablesReference=ref)
    assert r["message"].startswith("not launched"), r
    c.alive()
    c.close()


@pytest.mark.parametrize("ref", [100001, 200000, 299999, 0, -1, 2**31, 2**63 - 1])
def test_variables_reference_never_handed_out(files, ref):
    c = launched(files)
    r = c.request("variables", ok=False, variablesReference=ref)
    assert f"variablesReference {ref} was not handed out" in r["message"], r
    c.alive()
    c.close()


def test_references_of_another_core_on_a_one_core_kernel(files):
    """Thread and frame ids of a core the kernel does not have (a one-core kernel's core 1)
    read outside the machine's arrays."""
    c = launched(files)
    ts = [t["id"] for t in c.request("threads")["threads"]]
    assert ts == list(range(1, 23))
    for tid in (0, 23, 33, 64, -1, 2**40):
        r = c.request("stackTrace", ok=False, threadId=tid)
        assert "'threadId'" in r["message"], r
    for fid in (3300, 99, 2**40):
        assert "'frameId'" in c.request("scopes", ok=False, frameId=fid)["message"]
    r = c.request("scopes", ok=False, frameId=2400)  # thread 24: track 23, no engine or queue
    assert "is no thread" in r["message"]
    # The references handed out read the right values; they lapse when the run moves.
    scopes = {s["name"]: s["variablesReference"]
              for s in c.request("scopes", frameId=500)["scopes"]}  # dve of core 0
    sems = c.request("variables", variablesReference=scopes["Semaphores"])["variables"]
    assert sems == [{"name": "s", "value": "0", "variablesReference": 0}]
    c.request("next", threadId=5)  # sp
    assert c.event("stopped")["reason"] == "step"
    r = c.request("variables", ok=False, variablesReference=scopes["Semaphores"])
    assert "was not handed out" in r["message"]
    c.alive()
    c.close()


def test_disassemble_count_is_bounded(files):
    """instructionCount 5e7 grew to 3.9 GB and aborted."""
    c = launched(files, limit=1 << 30)
    r = c.request("disassemble", ok=False, memoryReference="sp:0", instructionCount=50000000)
    assert r["message"] == "'instructionCount' = 50000000 is outside 0..65536"
    r = c.request("disassemble", ok=False, memoryReference="sp:0", instructionCount=5e7)
    assert r["message"] == "'instructionCount' = 50000000 is outside 0..65536"
    for ref in ("sp:x", "sp:", "nosuch:0", "sp:99999999999999999999"):
        r = c.request("disassemble", ok=False, memoryReference=ref, instructionCount=1)
        assert "expected ENGINE:PC" in r["message"], r
    r = c.request("disassemble", ok=False, memoryReference="sp:0", instructionCount=1,
                  instructionOffset=-2**62)
    assert "'instructionOffset'" in r["message"]
    d = c.request("disassemble", memoryReference="sp:0", instructionCount=65536)["instructions"]
    assert len(d) == 65536 and "dma" in d[0]["instruction"]
    assert d[2]["presentationHint"] == "invalid"
    r = c.request("readMemory", ok=False, memoryReference="hbm:0", count=2**40)
    assert "'count'" in r["message"]
    r = c.request("readMemory", ok=False, memoryReference="hbm:0", count=4, offset=-2**63)
    assert "'offset'" in r["message"]
    assert c.peak_rss_mb() < 500
    c.alive()
    c.close()


# ---- runs off the request thread -------------------------------------------------------------

def test_pause_stops_a_running_continue(files):
    """pause was answered only when the run ended (at the step budget)."""
    c = launched(files, program="spin.nasm", args=["--max-steps", "1000000000"])
    c.request("continue", threadId=3)
    time.sleep(0.3)
    queued = c.send("stackTrace", threadId=3)  # waits for the run, in order
    t0 = time.monotonic()
    c.request("pause", threadId=3, timeout=10)
    answered = time.monotonic() - t0
    st = c.event("stopped", timeout=10)
    assert st["reason"] == "pause" and st["threadId"] == 3
    frames = c.response(queued)["body"]["stackFrames"]
    assert frames[0]["line"] in (3, 4)
    assert answered < 10  # at once (within 100 ms unloaded); the run alone would take hours
    # Runs again, and pauses again.
    c.request("continue", threadId=3)
    time.sleep(0.2)
    c.request("pause", threadId=3, timeout=10)
    assert c.event("stopped", timeout=10)["reason"] == "pause"
    c.alive()
    c.close()


def test_pause_queued_behind_a_continue(files):
    """A pause that arrives before the worker starts the continue still stops it."""
    c = launched(files, program="spin.nasm", args=["--max-steps", "1000000000"])
    cont = c.send("continue", threadId=3)
    c.request("pause", threadId=3, timeout=10)
    assert c.response(cont)["success"] is True
    assert c.event("stopped", timeout=10)["reason"] == "pause"
    c.alive()
    c.close()


def test_requests_queued_behind_a_run_are_bounded(files):
    """What waits behind a run is bounded (1024 requests, 256 MiB), not the client's flood."""
    c = launched(files, program="spin.nasm", args=["--max-steps", "1000000000"])
    c.request("continue", threadId=3)
    seqs = [c.send("threads") for _ in range(1030)]
    over = [c.response(s, timeout=30) for s in seqs[1024:]]
    assert all(r["success"] is False and r["message"] ==
               "1024 requests (256 MiB) already wait for the run; pause it first" for r in over)
    c.request("pause", timeout=10)
    assert c.event("stopped", timeout=10)["reason"] == "pause"
    assert all(c.response(s)["success"] for s in seqs[:1024])
    c.alive()
    c.close()


def test_pause_when_stopped_is_answered(files):
    c = launched(files)
    c.request("pause", threadId=3)
    c.request("next", threadId=3)
    assert c.event("stopped")["reason"] == "step"
    c.close()


@pytest.mark.parametrize("how", ["disconnect", "terminate", "eof"])
def test_disconnect_and_terminate_during_a_run(files, how):
    """disconnect / terminate waited for the run to end (20 s at the step budget)."""
    c = launched(files, program="spin.nasm", args=["--max-steps", "1000000000"])
    c.request("continue", threadId=3)
    time.sleep(0.3)
    if how == "eof":
        c.p.stdin.close()
        assert c.p.wait(timeout=15) == 0
        return
    c.request(how, timeout=10)
    c.event("terminated", timeout=10)
    if how == "terminate":
        r = c.request("continue", ok=False, threadId=3)
        assert r["message"] == "the session was terminated"
        c.alive()
        c.request("disconnect")
    c.p.stdin.close()
    assert c.p.wait(timeout=15) == 0
    assert not any(e["event"] == "stopped" for e in c.events)


def test_evaluate_continue_ends_with_exited_and_terminated(files):
    """`evaluate continue` from the console finished the kernel without the events."""
    c = launched(files)
    r = c.request("evaluate", expression="continue")["result"]
    assert "The kernel finished" in r
    assert c.event("exited")["exitCode"] == 0
    c.event("terminated")
    r = c.request("continue", ok=False, threadId=3)
    assert r["message"] == "the kernel has finished"
    # `run` from the console starts it again: a stop, then the end again.
    c.request("evaluate", expression="break good.nasm:7")
    c.request("evaluate", expression="run")
    assert c.event("stopped")["reason"] == "breakpoint"
    c.request("evaluate", expression="step 1")
    assert c.event("stopped")["reason"] == "step"
    c.request("evaluate", expression="delete")
    c.request("evaluate", expression="c")
    assert c.event("exited")["exitCode"] == 0
    c.event("terminated")
    c.alive()
    c.close()


def test_evaluate_continue_can_be_paused(files):
    c = launched(files, program="spin.nasm", args=["--max-steps", "1000000000"])
    ev = c.send("evaluate", expression="continue")
    time.sleep(0.3)
    c.request("pause", timeout=10)
    assert "Interrupted." in c.response(ev, timeout=10)["body"]["result"]
    assert c.event("stopped", timeout=10)["reason"] == "pause"
    c.alive()
    c.close()


# ---- reading only what is shown ------------------------------------------------------------

BIG = """.kernel big
.hbm x : fp32[8192, 8192] input
.hbm y : fp32[8, 8] output
.sbuf t : fp32[8, 8]
.sem s
        sp.dma q0, t, x[0:8, 0:8] @signal(s)
        sp.dma q1, y, t @wait(s >= 1)
"""


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    d = tmp_path_factory.mktemp("big")
    (d / "big.nasm").write_text(BIG)
    x = np.random.default_rng(33).standard_normal((8192, 8192), dtype=np.float32)
    np.save(d / "x.npy", x)
    return d, x


def g6(v):
    return format(float(v), ".6g")


def test_print_of_a_huge_tensor_reads_what_it_shows(big):
    """print of an 8192 x 8192 fp32 tensor took 29 s and 3.9 GB to show an 8 x 8 corner."""
    d, x = big
    (d / "cmds").write_text("print x[0:8, 0:8]\nprint x\nprint x[100:103, 8000:8192]\n")
    with open(d / "out", "w") as fo, open(d / "err", "w") as fe:
        p = subprocess.Popen([NISA, "debug", str(d / "big.nasm"), "--in", f"x={d / 'x.npy'}",
                              "-x", str(d / "cmds"), "--batch"], stdout=fo, stderr=fe,
                             preexec_fn=limit_as(1 << 30))
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
    out, err = (d / "out").read_text(), (d / "err").read_text()
    assert p.returncode == 0, err
    assert ru.ru_maxrss < (1500 if SANITIZED else 600) * 1024  # KB; was 3.9 GB
    grids = out.split("(nisa) ")[1:]
    corner = [line.split() for line in grids[0].splitlines()[3:11]]
    for i in range(8):
        assert corner[i] == [f"[{i}]"] + [g6(v) for v in x[i, :8]]
    assert "x[0:8192, 0:8192] fp32 in hbm (67108864 elements)" in grids[1]
    rows = [line.split() for line in grids[1].splitlines()[3:]]
    assert rows[0] == ["[0]"] + [g6(v) for v in x[0, :4]] + ["..."] + [g6(v) for v in x[0, -4:]]
    assert rows[4] == ["..."] * 10
    assert rows[8] == ["[8191]"] + [g6(v) for v in x[-1, :4]] + ["..."] + \
        [g6(v) for v in x[-1, -4:]]
    part = [line.split() for line in grids[2].splitlines()[2:]]
    assert part[0] == ["[8000]", "[8001]", "[8002]", "[8003]", "...", "[8188]", "[8189]",
                       "[8190]", "[8191]"]
    assert part[2] == ["[101]"] + [g6(v) for v in x[101, 8000:8004]] + ["..."] + \
        [g6(v) for v in x[101, 8188:8192]]


def test_variables_of_a_huge_tensor_read_what_they_show(big):
    """Expanding the 8192 x 8192 tensor in the Variables pane took 21 s."""
    d, x = big
    c = Client(limit=1 << 30)
    c.request("initialize", adapterID="nisa")
    c.request("launch", program=str(d / "big.nasm"), args=["--in", f"x={d / 'x.npy'}"])
    c.request("configurationDone")
    c.event("stopped")
    scopes = c.request("scopes", frameId=500)["scopes"]
    tensors = c.request("variables", variablesReference=scopes[-1]["variablesReference"])
    xv = next(v for v in tensors["variables"] if v["name"] == "x")
    assert xv["value"] == "hbm fp32[8192, 8192] input"
    rows = c.request("variables", variablesReference=xv["variablesReference"])["variables"]
    assert len(rows) == 1000
    for r in (0, 1, 517, 999):
        assert rows[r]["name"] == f"[{r}]"
        assert rows[r]["value"] == ", ".join(g6(v) for v in x[r, :64]) + ", ... (8128 more)"
    assert c.peak_rss_mb() < (1500 if SANITIZED else 600)
    c.alive()
    c.close()
