"""The fake Pantograph REPL itself, driven over pipes with plain ``subprocess``.

Expected goal text always comes from the recorded data (``lean_dojo_v2.data``), never from here.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from lean_dojo_v2.data import (
    Theorem,
    goal_texts,
    load_theorems,
    sample_dataset_path,
    split_goals,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for fake_pantograph
from fake_pantograph.launcher import (  # noqa: E402
    FAKE_REPL,
    fake_command,
    write_fake_binary,
)

MINIF2F = Path("minictx") / "derived" / "minif2f_test_traced_tactics.json"
MULTI_GOAL = "CancelDenoms.cancel_factors_lt"  # B4 sample: a rewrite leaves two goals
MESSAGE_KEYS = {
    "fileName",
    "pos",
    "endPos",
    "keepFullRange",
    "severity",
    "isSilent",
    "caption",
    "data",
    "kind",
}


class Fake:
    """One fake REPL process; stdout and stderr are read by threads so nothing ever blocks."""

    def __init__(self, *args: str, env: dict[str, str] | None = None, ready: bool = True):
        self.proc = subprocess.Popen(
            [*fake_command(), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            # Tactic-mechanics tests start B4 theorems with copyFrom: the fake then answers the
            # recorded first state (unlike the real server; the start tests switch it off).
            env={**os.environ, "FAKE_PANTOGRAPH_COPYFROM_RECORDED": "1", **(env or {})},
        )
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.stderr_bytes = 0
        self.stderr_tail = b""
        self.partial = b""
        self.threads = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for thread in self.threads:
            thread.start()
        if ready:
            self.wait_ready()

    def wait_ready(self) -> None:
        assert self.readline(timeout=20) == b"ready.\n"

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                break
            if not line.endswith(b"\n"):
                self.partial = line
                break
            self.lines.put(line)
        self.lines.put(None)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        while True:
            chunk = self.proc.stderr.read1(1 << 16)
            if not chunk:
                break
            self.stderr_bytes += len(chunk)
            self.stderr_tail = (self.stderr_tail + chunk)[-65536:]

    def readline(self, timeout: float = 10) -> bytes | None:
        return self.lines.get(timeout=timeout)

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode("utf-8") + b"\n")
        self.proc.stdin.flush()

    def raw(self, cmd: str, payload: Any = None, timeout: float = 10) -> bytes:
        # Always with a payload: without one the real server's command name keeps the newline.
        payload = {} if payload is None else payload
        self.send(f"{cmd} {json.dumps(payload, ensure_ascii=False)}")
        line = self.readline(timeout)
        assert line is not None, "the fake closed stdout"
        return line

    def __call__(self, cmd: str, payload: Any = None, timeout: float = 10) -> Any:
        return json.loads(self.raw(cmd, payload, timeout))

    def close(self) -> int:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
                return self.proc.wait(timeout=5)
            except (subprocess.TimeoutExpired, BrokenPipeError):
                self.proc.kill()
        return self.proc.wait(timeout=5)

    def drain(self) -> None:
        """Wait until the process has closed both output streams."""
        for thread in self.threads:
            thread.join(timeout=10)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=5)


@pytest.fixture(scope="module")
def warm():
    """A default fake started ahead of time, so process start-up overlaps the previous test."""
    spare: list[Fake] = []

    def take() -> Fake:
        fake = spare.pop() if spare else Fake(ready=False)
        spare.append(Fake(ready=False))
        fake.wait_ready()
        return fake

    yield take
    for fake in spare:
        fake.kill()


@pytest.fixture
def spawn(warm):
    started: list[Fake] = []

    def make(*args: str, **kwargs: Any) -> Fake:
        fake = warm() if not args and not kwargs else Fake(*args, **kwargs)
        started.append(fake)
        return fake

    yield make
    for fake in started:
        fake.kill()


@pytest.fixture(scope="module")
def repl():
    fake = Fake("Init")
    yield fake
    fake.kill()


@pytest.fixture(scope="module")
def b4() -> dict[str, Theorem]:
    return {t.full_name: t for t in load_theorems(sample_dataset_path())}


@pytest.fixture(scope="module")
def minif2f(shared_data) -> list[dict[str, Any]]:
    rows = json.loads((shared_data / MINIF2F).read_text(encoding="utf-8"))
    # The clean rows: no comment markers left in a state, no empty state.
    return [
        r
        for r in rows
        if not any("-/" in t["state_before"] + t["state_after"] for t in r["traced_tactics"])
        and all(t["state_before"].strip() for t in r["traced_tactics"])
    ]


def is_failure(result: dict[str, Any]) -> bool:
    return (
        set(result) == {"messages", "hasSorry", "hasUnsafe"}
        and len(result["messages"]) >= 1
        and result["messages"][0]["severity"] == "error"
    )


def check_goal(goal_json: dict[str, Any], text: str) -> None:
    """A Goal object against one recorded goal's text."""
    (expected,) = split_goals(text)
    assert goal_json["fragment"] == "tactic"
    assert goal_json["name"].startswith("_uniq.")
    assert goal_json["target"] == {"pp": expected.target}
    assert goal_json.get("userName") == expected.case
    names = [(n, h.type) for h in expected.hypotheses for n in h.names]
    assert [(v["userName"], v["type"]["pp"]) for v in goal_json["vars"]] == names
    for var in goal_json["vars"]:
        assert var["isInaccessible"] == ("✝" in var["userName"])


# --- launching ---------------------------------------------------------------------------------


def test_version():
    out = subprocess.run([*fake_command(), "--version"], capture_output=True, text=True)
    # bare from 0.3.9 on (PyPantograph 0.3.15's test_version expects "0.3.15")
    assert (out.returncode, out.stdout) == (0, "0.3.15\n")
    env = {**os.environ, "FAKE_PANTOGRAPH_VERSION": "0.3.4"}
    out = subprocess.run([*fake_command(), "--version"], capture_output=True, text=True, env=env)
    assert out.stdout == "0.3.4\n"


def test_blank_line_and_eof_exit_cleanly(spawn):
    fake = spawn()
    assert fake("stat") == {"nGoals": 0}
    fake.send("   ")
    assert fake.proc.wait(timeout=5) == 0
    fake = spawn()
    assert fake.close() == 0


def test_malformed_core_option_fails_before_ready(spawn):
    fake = spawn("Init", "--bogus", ready=False)
    assert fake.proc.wait(timeout=10) == 1
    fake.drain()
    assert fake.readline() is None
    assert fake.stderr_tail.startswith(b"uncaught exception: ")


def test_modules_and_core_options(spawn):
    fake = spawn("Init", "--maxHeartbeats=400000", "Mathlib", "--pp.raw=true")
    assert fake("env.describe") == {"imports": ["Init", "Mathlib"], "modules": ["Init", "Mathlib"]}


def test_no_ready(spawn):
    fake = spawn(ready=False, env={"FAKE_PANTOGRAPH_NO_READY": "1"})
    assert fake.proc.wait(timeout=10) == 1
    fake.drain()
    assert fake.readline() is None
    err = fake.stderr_tail.decode()
    assert err.startswith("uncaught exception: failed to read file '")
    assert "Mathlib.olean', invalid header" in err


def test_hang_start(spawn):
    fake = spawn(ready=False, env={"FAKE_PANTOGRAPH_HANG_START": "1"})
    with pytest.raises(queue.Empty):
        fake.readline(timeout=0.7)
    assert fake.proc.poll() is None


def test_ready_delay(spawn):
    t0 = time.monotonic()
    spawn(env={"FAKE_PANTOGRAPH_READY_DELAY": "0.6"})
    assert time.monotonic() - t0 >= 0.6


def test_write_fake_binary(tmp_path, spawn):
    script = write_fake_binary(tmp_path / "bin", env={"FAKE_PANTOGRAPH_VERSION": "9.9.9/v4.0.0"})
    assert script == tmp_path / "bin" / "pantograph-repl" and os.access(script, os.X_OK)
    assert (tmp_path / "bin" / "lean-toolchain").read_text().strip() == "leanprover/lean4:v4.29.1"
    assert script.read_text().startswith("#!/bin/sh\n") and str(FAKE_REPL) in script.read_text()
    out = subprocess.run([str(script), "--version"], capture_output=True, text=True)
    assert (out.returncode, out.stdout) == (0, "9.9.9/v4.0.0\n")
    proc = subprocess.run(
        [str(script), "Init"], input="stat {}\n", capture_output=True, text=True, timeout=20
    )
    assert proc.stdout == 'ready.\n{"nGoals":0}\n' and proc.returncode == 0
    bare = write_fake_binary(tmp_path / "bare", lean_toolchain=None)
    assert not (tmp_path / "bare" / "lean-toolchain").exists() and bare.exists()


# --- framing and JSON --------------------------------------------------------------------------


def test_framing(repl):
    assert repl("stat") == repl("stat", {}) == {"nGoals": repl("stat")["nGoals"]}
    repl.send('{"cmd": "stat", "payload": {}}')
    assert json.loads(repl.readline()) == repl("stat")
    repl.send('  {"cmd": "options.print"}  ')
    assert json.loads(repl.readline())["automaticMode"] is True
    assert repl("frobnicate", {}) == {"error": "command", "desc": "Unknown command frobnicate"}
    repl.send("stat {")
    assert json.loads(repl.readline())["error"] == "command"
    repl.send('{"payload": {}}')
    assert json.loads(repl.readline())["error"] == "command"
    repl.send("stat {} trailing")
    assert json.loads(repl.readline())["error"] == "command"
    assert repl("stat")["nGoals"] >= 0  # still alive


def test_compact_ascending_raw_utf8(repl, b4):
    name = "Fin.zero_add"  # n m : ℕ, inst✝ : NeZero n
    sid = repl("goal.start", {"copyFrom": name})["stateId"]
    line = repl.raw("goal.print", {"stateId": sid, "goals": True})
    text = line.decode("utf-8")
    again = json.dumps(json.loads(text), separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    assert text == again + "\n"  # one compact line, keys ascending at every level
    assert "ℕ".encode() in line and "✝".encode() in line and "\\u" not in text
    first = b4[MULTI_GOAL].traced_tactics[0]  # leaves two goals
    unsolved = {"file": f"theorem {MULTI_GOAL} : x := by\n  {first.tactic}\n"}
    unsolved.update(readHeader=False, inheritEnv=False, newConstants=False)
    line = repl.raw("frontend.process", unsolved)
    assert "⊢".encode() in line and b"\\u" not in line
    (unit,) = json.loads(line)["units"]
    assert unit["messages"][0]["data"] == "unsolved goals\n" + "\n\n".join(
        goal_texts(first.state_after)
    )


def test_shuffled_keys_same_content(spawn, b4):
    commands = [
        ("options.print", None),
        ("goal.start", {"copyFrom": MULTI_GOAL}),
        ("goal.tactic", {"stateId": 0, "tactic": b4[MULTI_GOAL].traced_tactics[0].tactic}),
        ("goal.tactic", {"stateId": 1, "tactic": "not recorded"}),
        ("goal.print", {"stateId": 1, "goals": True}),
    ]
    plain = spawn()
    shuffled = spawn(env={"FAKE_PANTOGRAPH_SHUFFLE_KEYS": "1", "FAKE_PANTOGRAPH_SEED": "7"})
    reordered = False
    for cmd, payload in commands:
        a, b = plain.raw(cmd, payload), shuffled.raw(cmd, payload)
        assert json.loads(a) == json.loads(b)
        reordered |= a != b
    assert reordered


def test_required_fields_like_derived_fromjson(repl):
    def desc(cmd: str, payload: Any) -> str:
        result = repl(cmd, payload)
        assert result["error"] == "command"
        return result["desc"]

    prefix = "Unable to parse json: Pantograph.Protocol."
    assert desc("goal.tactic", {"tactic": "simp"}) == (
        prefix + "GoalTactic.stateId: Natural number expected"
    )
    assert desc("goal.tactic", {"stateId": "zero", "tactic": "simp"}) == (
        prefix + "GoalTactic.stateId: Natural number expected"
    )
    assert desc("goal.tactic", {"stateId": -1, "tactic": "simp"}).endswith("number expected")
    assert desc("goal.tactic", None).startswith(prefix + "GoalTactic.stateId")
    assert desc("frontend.process", {"file": "", "inheritEnv": False, "newConstants": False}) == (
        prefix + "FrontendProcess.readHeader: Bool expected"
    )
    assert desc("frontend.distil", {"file": "x"}) == (
        prefix + "FrontendDistil.ignoreValues: Bool expected"
    )
    assert desc("env.inspect", {}) == prefix + "EnvInspect.name: String expected"
    assert desc("goal.delete", {"stateIds": 3}).startswith(
        prefix + "GoalDelete.stateIds: expected JSON array"
    )
    assert desc("goal.tactic", {"stateId": 0, "tactic": 5}) == (
        prefix + "GoalTactic.tactic: String expected"
    )
    # Unknown keys are ignored; `?` fields may be missing or null.
    assert repl("options.set", {"bogus": 1, "timeout": None}) == {}
    assert repl("goal.delete", {"stateIds": [], "extra": True}) == {}


def test_options(spawn):
    fake = spawn()
    assert fake("options.print") == {
        "printJsonPretty": False,
        "printExprPretty": True,
        "printExprAST": False,
        "printDependentMVars": False,
        "noRepeat": False,
        "printAuxDecls": False,
        "printImplementationDetailHyps": False,
        "automaticMode": True,
        "timeout": 0,
    }
    assert fake("options.set", {"automaticMode": False, "timeout": 20000}) == {}
    assert fake("options.set", {"printJsonPretty": True, "noRepeat": True}) == {}
    printed = fake.raw("options.print")
    assert printed.count(b"\n") == 1  # printJsonPretty is accepted but never breaks framing
    opts = json.loads(printed)
    assert (opts["automaticMode"], opts["timeout"], opts["noRepeat"]) == (False, 20000, True)
    assert fake("options.set", {"timeout": 1.5})["error"] == "command"


# --- goal states -------------------------------------------------------------------------------


def test_state_id_counter(spawn, b4):
    fake = spawn()
    thm = b4[MULTI_GOAL]
    assert fake("goal.start", {"copyFrom": MULTI_GOAL})["stateId"] == 0
    assert fake("goal.tactic", {"stateId": 0, "tactic": "no such tactic"})["messages"]
    assert "parseError" in fake("goal.tactic", {"stateId": 0, "tactic": "rw [foo"})
    assert fake("goal.tactic", {"stateId": 9, "tactic": "simp"})["error"] == "index"
    step = fake("goal.tactic", {"stateId": 0, "tactic": thm.traced_tactics[0].tactic})
    assert step["nextStateId"] == 1
    sorry = fake("goal.tactic", {"stateId": 1, "tactic": "fake_sorry"})
    assert (sorry["nextStateId"], sorry["hasSorry"]) == (2, True)
    assert fake("stat") == {"nGoals": 3}
    assert fake("goal.delete", {"stateIds": [0, 2, 55]}) == {}
    assert fake("stat") == {"nGoals": 1}
    assert fake("goal.tactic", {"stateId": 0, "tactic": "simp"}) == {
        "error": "index",
        "desc": "Invalid state index 0",
    }
    assert fake("goal.start", {"expr": "1 + 1 = 2"})["stateId"] == 3  # ids are not reused
    assert fake("reset") == {"nGoals": 2}
    assert fake("stat") == {"nGoals": 0}
    assert fake("goal.start", {"expr": "1 + 1 = 2"})["stateId"] == 0


def test_goal_start(repl, b4):
    result = repl("goal.start", {"expr": "∀ (a b : Nat), a + b = b + a"})
    assert set(result) == {"stateId", "root"} and result["root"].startswith("_uniq.")
    printed = repl("goal.print", {"stateId": result["stateId"], "goals": True})
    (goal,) = printed["goals"]
    assert goal["target"] == {"pp": "∀ (a b : Nat), a + b = b + a"} and goal["vars"] == []
    assert repl("goal.start", {"expr": "(1 + 1 = 2"})["error"] == "expr"
    copied = repl("goal.start", {"copyFrom": MULTI_GOAL, "expr": None})
    (goal,) = repl("goal.print", {"stateId": copied["stateId"], "goals": True})["goals"]
    check_goal(goal, goal_texts(b4[MULTI_GOAL].traced_tactics[0].state_before)[0])
    assert repl("goal.start", {"copyFrom": "Nat.nope"}) == {
        "error": "index",
        "desc": "Symbol not found: Nat.nope",
    }
    for payload in ({}, {"expr": "True", "copyFrom": MULTI_GOAL}):
        result = repl("goal.start", payload)
        assert result["error"] == "command" and "Exactly one of" in result["desc"]


def test_goal_tactic_outcomes_and_errors(repl, b4):
    sid = repl("goal.start", {"copyFrom": MULTI_GOAL})["stateId"]
    failure = repl("goal.tactic", {"stateId": sid, "tactic": "exact rfl"})
    assert is_failure(failure) and (failure["hasSorry"], failure["hasUnsafe"]) == (False, False)
    (message,) = failure["messages"]
    assert set(message) == MESSAGE_KEYS
    assert message["fileName"] == "<Pantograph>" and message["pos"] == {"line": 0, "column": 0}
    assert message["endPos"] is None and message["kind"] == "[anonymous]"
    assert (message["caption"], message["isSilent"], message["keepFullRange"]) == ("", False, False)
    assert "not among recorded transitions" in message["data"]
    parse = repl("goal.tactic", {"stateId": sid, "tactic": "rw [Nat.add_comm"})
    assert parse == {
        "parseError": "<Pantograph>:1:16: unexpected end of input; expected ']'",
        "hasSorry": False,
        "hasUnsafe": False,
    }
    assert repl("goal.tactic", {"stateId": sid, "goalId": 3, "tactic": "simp"}) == {
        "error": "index",
        "desc": "Invalid goal index 3",
    }
    for payload in ({"stateId": sid}, {"stateId": sid, "tactic": "simp", "have": "p"}):
        result = repl("goal.tactic", payload)
        assert result == {
            "error": "command",
            "desc": "Exactly one of {tactic, mode, expr, have, let, draft} must be supplied",
        }
    assert repl("goal.tactic", {"stateId": sid, "mode": "bogus"})["error"] == "command"
    for field, value in (("mode", "conv"), ("expr", "rfl"), ("have", "p"), ("draft", "sorry")):
        result = repl("goal.tactic", {"stateId": sid, field: value})
        assert is_failure(result) and "does not emulate" in result["messages"][0]["data"]
    tactic = b4[MULTI_GOAL].traced_tactics[0]
    success = repl("goal.tactic", {"stateId": sid, "tactic": tactic.tactic})
    assert set(success) == {"nextStateId", "goals", "messages", "hasSorry", "hasUnsafe"}
    assert success["messages"] == [] and success["hasSorry"] is False


def test_minif2f_replayed_end_to_end(repl, minif2f):
    assert len(minif2f) >= 50
    longest = max(minif2f, key=lambda r: len(r["traced_tactics"]))
    for row in [longest, *minif2f]:
        steps = row["traced_tactics"]
        sid = repl("goal.start", {"copyFrom": row["full_name"]})["stateId"]
        printed = repl("goal.print", {"stateId": sid, "goals": True})
        for goal, text in zip(printed["goals"], goal_texts(steps[0]["state_before"]), strict=True):
            check_goal(goal, text)
        for step in steps:
            result = repl("goal.tactic", {"stateId": sid, "tactic": step["tactic"]})
            assert "nextStateId" in result, (row["full_name"], step["tactic"], result)
            expected = goal_texts(step["state_after"])
            assert len(result["goals"]) >= len(expected)  # bullets focus: the rest stays open
            for goal, text in zip(result["goals"], expected, strict=False):
                check_goal(goal, text)
            sid = result["nextStateId"]
        assert result["goals"] == []
        printed = repl("goal.print", {"stateId": sid, "rootExpr": True})
        assert printed["rootHasMVar"] is False and "root" in printed


def test_b4_multi_goal_state(spawn, b4):
    fake = spawn()
    thm = b4[MULTI_GOAL]
    rw, first, second = (t.tactic for t in thm.traced_tactics)
    after_rw = goal_texts(thm.traced_tactics[0].state_after)
    assert len(after_rw) == 2
    fake("goal.start", {"copyFrom": MULTI_GOAL})
    two = fake("goal.tactic", {"stateId": 0, "tactic": rw})
    for goal, text in zip(two["goals"], after_rw, strict=True):
        check_goal(goal, text)
    assert any(v["isInaccessible"] for v in two["goals"][0]["vars"])  # inst✝
    names = [g["name"] for g in two["goals"]]
    # goalId in automatic mode: the result replaces that goal in place, the sibling stays.
    in_place = fake("goal.tactic", {"stateId": 1, "goalId": 1, "tactic": second})
    assert [g["name"] for g in in_place["goals"]] == names[:1]
    # Without goalId the tactic sees the whole list; untouched goals keep their names.
    whole = fake("goal.tactic", {"stateId": 1, "tactic": first})
    assert [g["name"] for g in whole["goals"]] == names[1:]
    assert fake("goal.tactic", {"stateId": 1, "goalId": 1, "tactic": first})["messages"]
    done = fake("goal.tactic", {"stateId": whole["nextStateId"], "tactic": second})
    assert done["goals"] == []
    printed = fake("goal.print", {"stateId": done["nextStateId"], "rootExpr": True})
    assert printed["rootHasMVar"] is False and rw in printed["root"]["pp"]
    # A whole recorded sequence in one goal.tactic.
    seq = fake("goal.tactic", {"stateId": 0, "tactic": f"{rw}\n{first}\n{second}"})
    assert seq["goals"] == []


def test_manual_mode_and_goal_continue(spawn, b4):
    fake = spawn()
    rw, first, second = (t.tactic for t in b4[MULTI_GOAL].traced_tactics)
    fake("goal.start", {"copyFrom": MULTI_GOAL})
    names = [g["name"] for g in fake("goal.tactic", {"stateId": 0, "tactic": rw})["goals"]]
    fake("options.set", {"automaticMode": False})
    focused = fake("goal.tactic", {"stateId": 1, "tactic": first})  # the sibling goes dormant
    assert (focused["nextStateId"], focused["goals"]) == (2, [])
    printed = fake("goal.print", {"stateId": 2, "rootExpr": True})
    assert printed["rootHasMVar"] is True and "root" not in printed
    assert fake("goal.continue", {"target": 1, "branch": 2}) == {
        "error": "structure",
        "desc": "Target state has unresolved goals",
    }
    resumed = fake("goal.continue", {"target": 2, "branch": 1})
    assert [g["name"] for g in resumed["goals"]] == names[1:] and resumed["nextStateId"] == 3
    by_name = fake("goal.continue", {"target": 2, "goals": names})
    assert [g["name"] for g in by_name["goals"]] == names[1:]
    assert fake("goal.continue", {"target": 2, "goals": ["_uniq.0"]})["error"] == "structure"
    other = fake("goal.start", {"expr": "True"})["stateId"]
    assert fake("goal.continue", {"target": 2, "branch": other})["error"] == "structure"
    for payload in ({"target": 2}, {"target": 2, "branch": 1, "goals": []}):
        assert fake("goal.continue", payload)["error"] == "command"
    assert fake("goal.continue", {"target": 99, "goals": []})["error"] == "index"
    # autoResume overrides the option per call.
    auto = fake("goal.tactic", {"stateId": 1, "autoResume": True, "tactic": first})
    assert [g["name"] for g in auto["goals"]] == names[1:]
    finished = fake("goal.tactic", {"stateId": resumed["nextStateId"], "tactic": second})
    assert finished["goals"] == []
    assert fake("goal.tactic", {"stateId": finished["nextStateId"], "tactic": "simp"}) == {
        "error": "index",
        "desc": "No goals to be solved",
    }


def test_no_repeat_and_expression_options(spawn, b4):
    fake = spawn()
    rw = b4[MULTI_GOAL].traced_tactics[0].tactic
    fake("goal.start", {"copyFrom": MULTI_GOAL})
    fake("options.set", {"noRepeat": True, "printDependentMVars": True})
    goals = fake("goal.tactic", {"stateId": 0, "tactic": rw})["goals"]
    assert goals[0]["target"]["dependentMVars"] == []
    assert all("type" not in v for v in goals[0]["vars"])  # all carried over from the parent
    fake("options.set", {"noRepeat": False, "printExprPretty": False})
    printed = fake("goal.print", {"stateId": 1, "goals": True})
    assert printed["goals"][0]["target"] == {"dependentMVars": []}


def test_goal_print_and_inspect(repl, b4):
    sid = repl("goal.start", {"copyFrom": MULTI_GOAL})["stateId"]
    printed = repl("goal.print", {"stateId": sid})
    assert printed == {
        "goals": [],
        "extraMVars": [],
        "rootHasSorry": False,
        "rootHasUnsafe": False,
        "rootHasMVar": True,
    }
    assert repl("goal.print", {"stateId": 10_000})["error"] == "index"
    info = repl("env.inspect", {"name": MULTI_GOAL, "dependency": True})
    assert info["isUnsafe"] is False and info["module"] == "Mathlib.Tactic.CancelDenoms.Core"
    target = split_goals(b4[MULTI_GOAL].traced_tactics[0].state_before)[0].target
    assert info["type"]["pp"].endswith(target)
    assert info["valueDependency"] == b4[MULTI_GOAL].premises
    assert repl("env.inspect", {"name": "Nat.nope"}) == {  # Environment.lean: no colon
        "error": "index",
        "desc": "Symbol not found Nat.nope",
    }


def test_magic_sorry(repl, b4):
    sid = repl("goal.start", {"copyFrom": MULTI_GOAL})["stateId"]
    two = repl("goal.tactic", {"stateId": sid, "tactic": b4[MULTI_GOAL].traced_tactics[0].tactic})
    result = repl("goal.tactic", {"stateId": two["nextStateId"], "tactic": "fake_sorry"})
    assert result["hasSorry"] is True and result["nextStateId"] == two["nextStateId"] + 1
    assert [g["name"] for g in result["goals"]] == [two["goals"][1]["name"]]
    printed = repl("goal.print", {"stateId": result["nextStateId"]})
    assert printed["rootHasSorry"] is True


# --- magic failure modes -----------------------------------------------------------------------


def test_magic_hang(spawn):
    fake = spawn()
    fake("goal.start", {"expr": "True"})
    fake.send('goal.tactic {"stateId": 0, "tactic": "fake_hang"}')
    with pytest.raises(queue.Empty):
        fake.readline(timeout=0.5)
    assert fake.proc.poll() is None


def test_magic_crash(spawn):
    fake = spawn()
    fake("goal.start", {"expr": "True"})
    fake.send('goal.tactic {"stateId": 0, "tactic": "fake_crash"}')
    assert fake.readline(timeout=10) is None
    assert fake.proc.wait(timeout=10) == 134
    assert fake.partial and not fake.partial.endswith(b"\n")


def test_magic_garbage(repl):
    sid = repl("goal.start", {"expr": "True"})["stateId"]
    line = repl.raw("goal.tactic", {"stateId": sid, "tactic": "fake_garbage"})
    assert line.startswith(b"PANIC at ")
    with pytest.raises(json.JSONDecodeError):
        json.loads(line)
    assert "nGoals" in repl("stat")


def test_magic_flood(repl):
    sid = repl("goal.start", {"expr": "True"})["stateId"]
    before = repl.stderr_bytes
    result = repl("goal.tactic", {"stateId": sid, "tactic": "fake_flood"}, timeout=30)
    assert is_failure(result)
    deadline = time.monotonic() + 10
    while repl.stderr_bytes - before < 10 * 1024 * 1024 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert repl.stderr_bytes - before >= 10 * 1024 * 1024


def test_magic_huge(repl):
    sid = repl("goal.start", {"expr": "True"})["stateId"]
    line = repl.raw("goal.tactic", {"stateId": sid, "tactic": "fake_huge"}, timeout=30)
    assert len(line) >= 10 * 1024 * 1024 and line.count(b"\n") == 1
    result = json.loads(line)
    assert is_failure(result) and len(result["messages"]) == 1
    assert repl("stat")["nGoals"] >= 1


def test_magic_sleep_and_timeout(spawn):
    fake = spawn()
    fake("goal.start", {"expr": "True"})
    assert fake("options.set", {"timeout": 100}) == {}
    t0 = time.monotonic()
    assert fake("goal.tactic", {"stateId": 0, "tactic": "fake_sleep 5000"}) == {
        "error": "io",
        "desc": "interrupt",
    }
    assert 0.09 <= time.monotonic() - t0 < 2
    assert fake("stat") == {"nGoals": 1}  # the process stays usable
    assert is_failure(fake("goal.tactic", {"stateId": 0, "tactic": "fake_sleep 20"}))
    fake("options.set", {"timeout": 0})
    t0 = time.monotonic()
    assert is_failure(fake("goal.tactic", {"stateId": 0, "tactic": "fake_sleep 300"}))
    assert time.monotonic() - t0 >= 0.3


def test_delay_noise_and_log(spawn, tmp_path):
    log = tmp_path / "requests.log"
    env = {
        "FAKE_PANTOGRAPH_DELAY": "0.3",
        "FAKE_PANTOGRAPH_STDERR_NOISE": "1",
        "FAKE_PANTOGRAPH_LOG": str(log),
    }
    fake = spawn(env=env)
    t0 = time.monotonic()
    assert fake("stat") == {"nGoals": 0}
    assert time.monotonic() - t0 >= 0.3
    fake.send('{"cmd": "reset", "payload": {}}')
    assert json.loads(fake.readline()) == {"nGoals": 0}
    time.sleep(0.1)
    assert b"stdout: " in fake.stderr_tail
    assert log.read_text(encoding="utf-8").splitlines() == [
        "stat {}",
        '{"cmd": "reset", "payload": {}}',
    ]


def test_data_switch(spawn):
    split = sample_dataset_path() / "random" / "test.json"
    thm = next(t for t in load_theorems(split) if t.traced_tactics)
    fake = spawn(env={"FAKE_PANTOGRAPH_DATA": str(split)})
    assert fake("goal.start", {"copyFrom": thm.full_name})["stateId"] == 0
    assert fake("goal.start", {"copyFrom": "mathd_algebra_478"})["error"] == "index"


# --- frontend ----------------------------------------------------------------------------------


def process(fake: Fake, text: str, **extra: Any) -> Any:
    payload = {"file": text, "readHeader": False, "inheritEnv": False, "newConstants": False}
    payload.update(extra)
    return fake("frontend.process", payload)


def proof_file(row: dict[str, Any], tactics: list[str] | None = None) -> str:
    tactics = tactics or [t["tactic"] for t in row["traced_tactics"]]
    return "theorem " + row["statement"] + "\n" + "\n".join("  " + t for t in tactics) + "\n"


def test_frontend_process_accepts_recorded_proof(repl, minif2f, tmp_path):
    row = max(minif2f, key=lambda r: len(r["traced_tactics"]))
    text = "import Mathlib\nopen Real\n\n" + proof_file(row)
    inv = tmp_path / "inv.json"
    result = process(repl, text, invocations=str(inv), newConstants=True, readHeader=True)
    header = len("import Mathlib\n")
    opening = header + len("open Real\n\n")
    assert result == {
        "units": [
            {"boundary": [header, opening], "messages": [], "nInvocations": 0, "newConstants": []},
            {
                "boundary": [opening, len(text.encode("utf-8"))],
                "messages": [],
                "nInvocations": len(row["traced_tactics"]),
                "newConstants": [row["full_name"]],
            },
        ]
    }
    written = json.loads(inv.read_text(encoding="utf-8"))
    assert [len(u["invocations"]) for u in written["units"]] == [0, len(row["traced_tactics"])]
    first = written["units"][1]["invocations"][0]
    assert set(first) == {"goalBefore", "goalAfter", "tactic", "usedConstants"}
    assert first["goalBefore"] == "\n".join(goal_texts(row["traced_tactics"][0]["state_before"]))
    assert written["units"][1]["invocations"][-1]["goalAfter"] == ""
    for row in minif2f:  # every clean recorded proof is accepted
        assert process(repl, proof_file(row))["units"][0]["messages"] == [], row["full_name"]


def test_frontend_process_rejects_modified_proof(repl, minif2f):
    row = next(r for r in minif2f if len(r["traced_tactics"]) >= 3)
    tactics = [t["tactic"] for t in row["traced_tactics"]]
    tactics[1] = "simp only [not_a_recorded_lemma]"
    text = proof_file(row, tactics)
    (unit,) = process(repl, text)["units"]
    (message,) = unit["messages"]
    line = text.split("\n").index("  " + tactics[1]) + 1
    assert message["severity"] == "error" and message["fileName"] == "<anonymous>"
    assert message["pos"] == {"line": line, "column": 2}
    assert "simp only [not_a_recorded_lemma]" in message["data"]
    # Stopping early leaves unsolved goals, reported with the recorded goal text.
    (unit,) = process(repl, proof_file(row, tactics[:1]))["units"]
    (message,) = unit["messages"]
    assert message["data"].startswith("unsolved goals\n")
    assert goal_texts(row["traced_tactics"][0]["state_after"])[0] in message["data"]
    # sorry: a warning of kind hasSorry; a name declared twice: an error.
    (unit,) = process(repl, proof_file(row, tactics[:1] + ["sorry"]))["units"]
    (warning,) = unit["messages"]
    assert (warning["severity"], warning["kind"]) == ("warning", "hasSorry")
    assert warning["data"] == "declaration uses 'sorry'"
    twice = process(repl, proof_file(row) + "\n" + proof_file(row))["units"]
    assert [len(u["messages"]) for u in twice] == [0, 1]
    assert "already been declared" in twice[1]["messages"][0]["data"]


def test_frontend_process_shapes(repl, tmp_path):
    text = "import Init\nopen Nat\nuniverse u"
    assert process(repl, text, readHeader=True) == {
        "units": [{"boundary": [12, 21], "messages": []}, {"boundary": [21, 31], "messages": []}]
    }
    unknown = "theorem t (p : Prop) (h : p) : p := by\n  exact h"
    assert process(repl, unknown, newConstants=True) == {
        "units": [{"boundary": [0, 48], "messages": [], "newConstants": ["t"]}]
    }
    path = tmp_path / "Example.lean"
    path.write_text("example : ∀ n : ℕ, n = n := sorry\n", encoding="utf-8")
    payload = {"fileName": str(path), "readHeader": False, "inheritEnv": False}
    (unit,) = repl("frontend.process", {**payload, "newConstants": False})["units"]
    assert unit["boundary"] == [0, len(path.read_bytes())]
    assert unit["messages"][0]["fileName"] == str(path)
    assert unit["messages"][0]["pos"] == {"line": 1, "column": 0}
    missing = str(tmp_path / "nope.lean")
    result = repl("frontend.process", {**payload, "newConstants": False, "fileName": missing})
    assert result["error"] == "io" and result["desc"].startswith("no such file or directory")
    assert repl("frontend.process", {**payload, "newConstants": False, "file": "x"}) == {
        "error": "command",
        "desc": "Exactly one of {fileName, file} must be supplied",
    }


def test_frontend_distil(repl, minif2f):
    row = next(
        r
        for r in minif2f
        if len(r["traced_tactics"]) >= 2
        and len(goal_texts(r["traced_tactics"][0]["state_after"])) == 1
    )
    steps = row["traced_tactics"]
    text = "theorem " + row["statement"].removesuffix(":= by") + ":= sorry\n"
    (target,) = repl("frontend.distil", {"file": text, "ignoreValues": True})["targets"]
    assert repl("goal.print", {"stateId": target["stateId"]})["rootHasMVar"] is True
    for goal, expected in zip(target["goals"], goal_texts(steps[0]["state_before"]), strict=True):
        check_goal(goal, expected)
    partial = proof_file(row, [steps[0]["tactic"], "sorry"])
    (target,) = repl("frontend.distil", {"file": partial, "ignoreValues": False})["targets"]
    check_goal(target["goals"][0], goal_texts(steps[0]["state_after"])[0])
    after = repl("goal.tactic", {"stateId": target["stateId"], "tactic": steps[1]["tactic"]})
    assert "nextStateId" in after
    assert repl(
        "frontend.distil", {"file": "theorem x : True := trivial", "ignoreValues": True}
    ) == {"targets": []}


def test_frontend_stray_text_and_magic(spawn, b4):
    fake = spawn()
    (unit,) = process(fake, "x")["units"]
    assert unit["boundary"] == [0, 1]
    assert unit["messages"][0]["data"] == "unexpected identifier; expected command"
    fake("options.set", {"timeout": 50})
    text = f"theorem {MULTI_GOAL} : x := by\n  fake_sleep 3000\n"
    assert process(fake, text) == {"error": "io", "desc": "unexpected internal error: interrupt"}
    assert fake("stat") == {"nGoals": 0}


# --- the fake as strict as the real server -----------------------------------------------------

LEGACY = {"FAKE_PANTOGRAPH_VERSION": "0.3.4"}
NEWEST = {"FAKE_PANTOGRAPH_VERSION": "0.3.15"}


@pytest.mark.parametrize("version", [LEGACY, NEWEST], ids=["0.3.4", "0.3.15"])
def test_command_without_payload_is_unknown_like_main_lean(spawn, version):
    fake = spawn(env=version)
    fake.send("options.print")  # Main.lean: the name is everything before the first space
    assert json.loads(fake.readline()) == {
        "error": "command",
        "desc": "Unknown command options.print\n",
    }
    assert fake("options.print")["timeout"] == 0  # with a payload it is known


def test_version_bare_and_unknown_core_option_rejected_before_import(spawn):
    for version in ("0.3.4", "0.3.15", "0.3.7/v4.21.0"):
        env = {**os.environ, "FAKE_PANTOGRAPH_VERSION": version}
        out = subprocess.run(
            [*fake_command(), "--version"], capture_output=True, text=True, env=env
        )
        assert out.stdout == version + "\n"
    fake = spawn("Init", "--noSuchOption=1", ready=False)
    assert fake.proc.wait(timeout=10) == 1
    fake.drain()
    assert fake.readline() is None
    assert fake.stderr_tail.strip() == b"uncaught exception: unknown option 'noSuchOption'"
    bad = spawn("Init", "--maxHeartbeats=lots", ready=False)
    assert bad.proc.wait(timeout=10) == 1
    bad.drain()
    assert b"Options cannot be parsed: invalid Nat option value 'lots'" in bad.stderr_tail


def test_goal_start_copy_from_is_the_whole_type_like_the_real_server(spawn, b4):
    fake = spawn(env={"FAKE_PANTOGRAPH_COPYFROM_RECORDED": "0"})
    sid = fake("goal.start", {"copyFrom": MULTI_GOAL})["stateId"]
    (goal,) = fake("goal.print", {"stateId": sid, "goals": True})["goals"]
    recorded = split_goals(b4[MULTI_GOAL].traced_tactics[0].state_before)[0]
    assert goal["vars"] == [] and goal["target"]["pp"].startswith("∀ ")
    assert goal["target"]["pp"].endswith(recorded.target)


@pytest.mark.parametrize("version", [LEGACY, NEWEST], ids=["0.3.4", "0.3.15"])
def test_frontend_process_fields_and_sorrys_by_version(spawn, b4, version):
    fake = spawn(env=version)
    text = f"theorem {MULTI_GOAL} : x := by\n  sorry\n"
    base = {"file": text, "readHeader": False, "inheritEnv": False, "newConstants": False}
    without = fake("frontend.process", base)
    legacy = version is LEGACY
    if legacy:  # Protocol.lean v0.3.4: Bool fields without `?` are required
        assert without == {
            "error": "command",
            "desc": "Unable to parse json: Pantograph.Protocol.FrontendProcess.sorrys: "
            "Bool expected",
        }
    else:
        assert "units" in without
    (unit,) = fake("frontend.process", {**base, "sorrys": True, "typeErrorsAsGoals": False})[
        "units"
    ]
    distil = fake("frontend.distil", {"file": text, "ignoreValues": True})
    first = goal_texts(b4[MULTI_GOAL].traced_tactics[0].state_before)
    if legacy:
        assert distil == {"error": "command", "desc": "Unknown command frontend.distil"}
        check_goal(unit["goals"][0], first[0])
        assert isinstance(unit["goalStateId"], int)
    else:
        assert "goalStateId" not in unit
        check_goal(distil["targets"][0]["goals"][0], first[0])


@pytest.mark.parametrize("version", [LEGACY, NEWEST], ids=["0.3.4", "0.3.15"])
def test_frontend_timeout_shapes_by_version(spawn, b4, version):
    fake = spawn(env=version)
    fake("options.set", {"timeout": 50})
    text = f"theorem {MULTI_GOAL} : x := by\n  fake_sleep 3000\n"
    out = process(fake, text, sorrys=False, typeErrorsAsGoals=False)
    if version is LEGACY:  # older Lean: an error message inside the unit
        (unit,) = out["units"]
        assert unit["messages"][0]["data"] == "internal exception: interrupt"
    else:
        assert out == {"error": "io", "desc": "unexpected internal error: interrupt"}
