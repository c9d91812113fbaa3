"""lean_dojo_v2.system.commands: one way to run an external program, every failure typed."""

from __future__ import annotations

import pickle
import re
import sys
import time
from pathlib import Path

import pytest
from processes import wait_until_dead  # noqa: E402  (tests/ is on sys.path via conftest)

from lean_dojo_v2.errors import (
    CommandError,
    CommandFailedError,
    CommandNotFoundError,
    CommandOutputError,
    CommandTimeoutError,
    LeanDojoError,
)
from lean_dojo_v2.system.commands import describe, run_command, start_command, stop


def test_captures_output():
    result = run_command(
        [sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr)"]
    )
    assert result.ok and result.text() == "out\n" and result.stderr == b"err\n"


def test_input_and_log_file(tmp_path: Path):
    log = tmp_path / "log"
    code = "import sys; d = sys.stdin.read(); print(d.upper()); print('e', file=sys.stderr)"
    with open(log, "wb") as fh:
        result = run_command([sys.executable, "-c", code], input=b"abc", output=fh)
    assert result.ok and result.stdout == b""
    assert log.read_bytes().split() == [b"ABC", b"e"]


def test_missing_program_is_command_not_found(tmp_path: Path):
    with pytest.raises(CommandNotFoundError) as info:
        run_command(["lean-dojo-v2-no-such-program", "--version"])
    err = info.value
    assert isinstance(err, LeanDojoError) and isinstance(err, FileNotFoundError)
    assert "not installed or not on PATH" in str(err) and "install" in err.hint
    assert err.command == ("lean-dojo-v2-no-such-program", "--version")


def test_not_executable_is_command_not_found(tmp_path: Path):
    plain = tmp_path / "tool"
    plain.write_text("#!/bin/sh\necho hi\n")
    with pytest.raises(CommandNotFoundError, match="not executable"):
        run_command([plain], hint="chmod +x it")


def test_missing_working_directory_is_typed(tmp_path: Path):
    with pytest.raises(CommandError, match="working directory") as info:
        run_command([sys.executable, "-c", "pass"], cwd=tmp_path / "nope")
    assert not isinstance(info.value, CommandNotFoundError)


def test_nonzero_exit_is_command_failed_with_stderr():
    code = "import sys; print('boom: the reason', file=sys.stderr); sys.exit(3)"
    with pytest.raises(CommandFailedError) as info:
        run_command([sys.executable, "-c", code], hint="fix the input")
    err = info.value
    assert err.returncode == 3 and "boom: the reason" in str(err)
    assert str(err).endswith("fix the input")
    # check=False: the caller looks at the status itself.
    result = run_command([sys.executable, "-c", code], check=False)
    assert result.returncode == 3 and "boom" in result.stderr_tail()


def test_timeout_stops_everything_the_program_started(tmp_path: Path):
    pidfile = tmp_path / "pid"
    # A parent that starts a grandchild and waits for it: killing only the parent would leave the
    # grandchild running (and holding the pipes open).
    code = (
        "import subprocess, sys, time\n"
        "p = subprocess.Popen(['sleep', '60'])\n"
        f"open({str(pidfile)!r}, 'w').write(str(p.pid))\n"
        "print('started', flush=True)\n"
        "p.wait()\n"
    )
    t0 = time.monotonic()
    with pytest.raises(CommandTimeoutError) as info:
        run_command([sys.executable, "-c", code], timeout=1.5)
    assert time.monotonic() - t0 < 10
    err = info.value
    assert isinstance(err, TimeoutError) and "within 1.5 s" in str(err)
    assert err.stdout == b"started\n"  # what it printed before it was stopped
    assert wait_until_dead(int(pidfile.read_text()))


def test_undecodable_output_is_a_typed_error():
    result = run_command(
        [sys.executable, "-c", "import sys; sys.stdout.buffer.write(b'ok \\xff\\xfe')"]
    )
    with pytest.raises(CommandOutputError, match="not UTF-8") as info:
        result.text()
    assert isinstance(info.value, ValueError) and info.value.stdout == b"ok \xff\xfe"


@pytest.mark.parametrize("timeout", [float("nan"), -1, 0])
def test_bad_timeout_is_refused(timeout):
    with pytest.raises(ValueError, match="timeout"):
        run_command([sys.executable, "-c", "pass"], timeout=timeout)


def test_non_numeric_timeout_is_refused():
    with pytest.raises(TypeError, match="timeout"):
        run_command([sys.executable, "-c", "pass"], timeout="5")  # type: ignore[arg-type]


def test_command_errors_survive_pickling():
    err = CommandTimeoutError("x timed out", ("x", "y"), stderr=b"tail", hint="raise it")
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is CommandTimeoutError and str(back) == str(err)
    assert (back.command, back.stderr, back.hint) == (("x", "y"), b"tail", "raise it")


def test_start_and_stop_a_process_group():
    proc = start_command([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert proc.poll() is None
    finally:
        stop(proc)
    assert proc.wait(timeout=10) != 0


def test_describe_quotes_and_cuts():
    assert describe(["git", "commit", "-m", "a b"]) == "git commit -m 'a b'"
    assert len(describe(["x" * 500])) == 200


def test_only_system_starts_programs():
    """Every subprocess of the library goes through system.commands (typed errors, timeouts that
    stop the whole process tree); the Pantograph REPL, driven over asyncio pipes, is the one
    exception."""
    package = Path(__import__("lean_dojo_v2").__file__).parent
    offenders = []
    for path in package.rglob("*.py"):
        if path.parent.name == "system":
            continue
        text = path.read_text("utf-8")
        for needle in ("subprocess.run(", "subprocess.Popen(", "check_output(", "os.system("):
            # A word boundary, so a method such as ``_check_output(`` is not a subprocess call.
            if re.search(r"(?<![\w])" + re.escape(needle), text):
                offenders.append(f"{path.relative_to(package)}: {needle}")
    assert not offenders, offenders
