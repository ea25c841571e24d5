"""`nisa dap`: a scripted Debug Adapter Protocol client drives the adapter over stdio through
breakpoints by line, function (label) and data (watchpoint), step, continue, stepBack and
reverseContinue, stack frames with the macro expansion chain, variables (registers,
semaphores, tensors), disassemble and readMemory."""
import base64
import json
import re
import struct
import subprocess

import numpy as np
import pytest

from conftest import NISA

KERNEL = """.kernel dapk
.hbm x : fp32[4, 8] input
.hbm y : fp32[4, 8] output
.sbuf t : fp32[4, 8]
.sem s_in, s_c, s_d
.macro fill V
        dve.memset t, V
.endm
        sp.dma q0, t, x @signal(s_in)
        dve.li r3, 5  @wait(s_in >= 1)
        fill 2.0
        dve.br mid
mid:    dve.memset t, 3.0 @signal(s_c)
        sp.dma q1, y, t @wait(s_c >= 1) @signal(s_d)
        pool.memset t, 4.0 @wait(s_d >= 1)
"""


class Client:
    def __init__(self):
        self.p = subprocess.Popen([NISA, "dap"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.seq = 1
        self.events = []

    def _read(self):
        hdr = b""
        while not hdr.endswith(b"\r\n\r\n"):
            c = self.p.stdout.read(1)
            assert c, "the adapter closed its output"
            hdr += c
        n = int(re.search(rb"Content-Length: (\d+)", hdr).group(1))
        return json.loads(self.p.stdout.read(n))

    def request(self, command, ok=True, **args):
        msg = {"seq": self.seq, "type": "request", "command": command, "arguments": args}
        self.seq += 1
        body = json.dumps(msg).encode()
        self.p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.p.stdin.flush()
        while True:
            m = self._read()
            if m["type"] == "event":
                self.events.append(m)
                continue
            assert m["request_seq"] == msg["seq"] and m["command"] == command
            assert m["success"] == ok, m
            return m.get("body", {}) if ok else m

    def event(self, name):
        while True:
            for i, e in enumerate(self.events):
                if e["event"] == name:
                    return self.events.pop(i)["body"]
            self.events.append(self._read())

    def close(self):
        self.request("disconnect")
        self.p.stdin.close()
        assert self.p.wait(timeout=30) == 0


@pytest.fixture
def dap(tmp_path):
    src = tmp_path / "dapk.nasm"
    src.write_text(KERNEL)
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    np.save(tmp_path / "x.npy", x)
    c = Client()
    caps = c.request("initialize", adapterID="nisa", linesStartAt1=True)
    for cap in ("supportsStepBack", "supportsFunctionBreakpoints", "supportsDataBreakpoints",
                "supportsDisassembleRequest", "supportsReadMemoryRequest"):
        assert caps[cap] is True
    c.event("initialized")
    c.request("launch", program=str(src), args=["--in", f"x={tmp_path / 'x.npy'}"],
              stopOnEntry=True)
    yield c, str(src)
    c.p.kill()


def thread_named(c, name):
    ts = c.request("threads")["threads"]
    return next(t["id"] for t in ts if t["name"] == name)


def test_session(dap):
    c, src = dap
    bl = c.request("setBreakpoints", source={"path": src}, breakpoints=[{"line": 7}])
    assert bl["breakpoints"][0]["verified"]
    fb = c.request("setFunctionBreakpoints", breakpoints=[{"name": "mid"}])
    assert fb["breakpoints"][0]["verified"]
    info = c.request("dataBreakpointInfo", name="y")
    assert info["dataId"] == "y" and "write" in info["accessTypes"]
    db = c.request("setDataBreakpoints", breakpoints=[{"dataId": "y", "accessType": "write"}])
    assert db["breakpoints"][0]["verified"]
    bad = c.request("setFunctionBreakpoints", breakpoints=[{"name": "nosuch"}])
    assert bad["breakpoints"][0]["verified"] is False
    c.request("setFunctionBreakpoints", breakpoints=[{"name": "mid"}])

    c.request("configurationDone")
    assert c.event("stopped")["reason"] == "entry"
    names = [t["name"] for t in c.request("threads")["threads"]]
    assert {"pe", "act", "dve", "pool", "sp", "cc", "q0", "q15"} <= set(names)
    dve = thread_named(c, "dve")

    # The line breakpoint inside the macro: the frames show the expansion chain.
    c.request("continue", threadId=dve)
    st = c.event("stopped")
    assert st["reason"] == "breakpoint" and st["threadId"] == dve
    frames = c.request("stackTrace", threadId=dve)["stackFrames"]
    assert frames[0]["line"] == 7 and frames[0]["source"]["path"].endswith("dapk.nasm")
    assert "macro fill" in frames[1]["name"] and frames[1]["line"] == 11
    ip = frames[0]["instructionPointerReference"]
    assert ip == "dve:1"

    scopes = {s["name"]: s["variablesReference"]
              for s in c.request("scopes", frameId=frames[0]["id"])["scopes"]}
    regs = {v["name"]: v["value"]
            for v in c.request("variables", variablesReference=scopes["Registers"])["variables"]}
    assert regs["r3"] == "5" and regs["r0"] == "0"
    sems = {v["name"]: v["value"]
            for v in c.request("variables", variablesReference=scopes["Semaphores"])["variables"]}
    assert sems == {"s_in": "1", "s_c": "0", "s_d": "0"}
    tens = c.request("variables", variablesReference=scopes["Tensors"])["variables"]
    t = next(v for v in tens if v["name"] == "t")
    assert "fp32[4, 8]" in t["value"]
    rows = c.request("variables", variablesReference=t["variablesReference"])["variables"]
    assert any("31" in r["value"] for r in rows)  # t holds x (0..31) before the memset

    dis = c.request("disassemble", memoryReference=ip, instructionOffset=-1,
                    instructionCount=5)["instructions"]
    assert [d["address"] for d in dis] == ["dve:0", "dve:1", "dve:2", "dve:3", "dve:4"]
    assert "li" in dis[0]["instruction"] and "memset" in dis[1]["instruction"]
    assert "br" in dis[2]["instruction"] and dis[3]["line"] == 13
    assert dis[1]["line"] == 7 and dis[4]["presentationHint"] == "invalid"

    # The function (label) breakpoint.
    c.request("continue", threadId=dve)
    st = c.event("stopped")
    assert st["reason"] == "breakpoint"
    assert c.request("stackTrace", threadId=dve)["stackFrames"][0]["line"] == 13

    # The data breakpoint: the store of y; readMemory shows the new bytes.
    c.request("continue", threadId=dve)
    st = c.event("stopped")
    assert st["reason"] == "data breakpoint", st
    tensors = c.request("evaluate", expression="info tensors")["result"]
    addr = int(re.search(r"y\s+hbm\s+fp32\[4, 8\] output address (0x[0-9a-f]+)", tensors).group(1), 16)
    mem = c.request("readMemory", memoryReference=f"hbm:{addr:#x}", offset=4, count=8)
    assert struct.unpack("<2f", base64.b64decode(mem["data"])) == (3.0, 3.0)
    bad = c.request("readMemory", ok=False, memoryReference="hbm:0xffffffffff", count=4)
    assert "outside" in bad["message"]

    # Back: one event, then to the previous stop (the label breakpoint).
    c.request("stepBack", threadId=dve)
    assert c.event("stopped")["reason"] == "step"
    c.request("reverseContinue", threadId=dve)
    c.event("stopped")
    assert c.request("stackTrace", threadId=dve)["stackFrames"][0]["line"] == 13
    mem = c.request("readMemory", memoryReference=f"hbm:{addr:#x}", count=4)
    assert base64.b64decode(mem["data"]) == b"\xff" * 4  # y not written yet (poison)

    # Step one dve event, then run to the end.
    c.request("next", threadId=dve)
    assert c.event("stopped")["reason"] == "step"
    c.request("setDataBreakpoints", breakpoints=[])
    c.request("setFunctionBreakpoints", breakpoints=[])
    c.request("setBreakpoints", source={"path": src}, breakpoints=[])
    c.request("continue", threadId=dve)
    assert c.event("exited")["exitCode"] == 0
    c.event("terminated")
    c.close()


def test_bad_launch(tmp_path):
    c = Client()
    c.request("initialize", adapterID="nisa")
    r = c.request("launch", ok=False, program=str(tmp_path / "none.nasm"))
    assert "did not load" in r["message"]
    r = c.request("launch", ok=False, program=str(tmp_path / "none.nasm"), args=["--lnc", "x"])
    assert "bad launch arguments" in r["message"]
    c.close()
    p = subprocess.run([NISA, "dap", "extra"], capture_output=True, text=True)
    assert p.returncode == 1 and "unexpected argument" in p.stderr


def test_ranks_as_threads(tmp_path):
    """With --ranks 2 every rank's engines and queues are threads; frames of another rank's
    engine come from its own next instruction."""
    from conftest import kernel
    np.save(tmp_path / "inp.npy", np.ones((2, 4, 8), np.float32))
    c = Client()
    c.request("initialize", adapterID="nisa")
    c.event("initialized")
    c.request("launch", program=kernel("sb2sb_allgather.nasm"),
              args=["-D", "ROWS=4", "-D", "COLS=8", "-D", "TP=2", "-D", "DT=fp32", "--ranks", "2",
                    "--in", f"inp={tmp_path / 'inp.npy'}"])
    c.request("configurationDone")
    c.event("stopped")
    ts = {t["name"]: t["id"] for t in c.request("threads")["threads"]}
    assert len(ts) == 2 * 22 and "rank 1 sp" in ts and "rank 0 q15" in ts
    fr = c.request("stackTrace", threadId=ts["rank 1 sp"])["stackFrames"][0]
    assert fr["name"].startswith("sp[") and fr["source"]["path"].endswith("sb2sb_allgather.nasm")
    assert fr["line"] > 0
    c.request("next", threadId=ts["rank 1 sp"])
    st = c.event("stopped")
    assert st["reason"] == "step" and st["threadId"] in ts.values()
    c.request("continue", threadId=ts["rank 1 sp"])
    assert c.event("exited")["exitCode"] == 0
    c.close()
