"""Pantograph client overhead per ``goal.tactic`` round trip, against the fake REPL.

Lean's (here: the fake's) own time is excluded by measuring the very same request lines with a
minimal raw pipe loop (``write line; flush; readline``) against the same fake program, and
reporting ``client - raw`` per request. Measured in one run, chunks interleaved (raw, client,
env, ...) and medians taken, so drift hits every variant alike:

- ``raw``: blocking pipes, no parsing (the floor);
- ``client``: ``AsyncPantographClient.goal_tactic`` (encode, FIFO match, watchdog, JSON decode,
  typed outcome; its ``goals`` are parsed into objects only when accessed);
- ``env``: ``AsyncPantographEnv.run_tactic`` (the above plus ppGoal rendering, canonical goal
  text, state handle, GC finalizer and the batched ``goal.delete`` it causes);
- ``sync_env``: blocking ``PantographEnv.run_tactic`` (the above plus the hop to the private
  event-loop thread);
- ``pool4``: 4 servers, one sequential request stream per server running concurrently (raw: 4
  worker processes with their own pipes; client: ``PantographPool`` with 4 coroutines on one
  event loop); per-request wall time = wall / total. Where the servers saturate the CPUs this
  compares throughput under contention rather than isolating the client's cost.

Target: <= 0.2 ms client overhead per request. PyPantograph is not installable here (it is not on
PyPI; PyPI's ``pantograph`` is an unrelated canvas library), so there are no figures for it.

    python benchmarks/pantograph_bench.py [--chunk 50] [--chunks 30]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

TARGET_MS = 0.2


def pick_theorem():
    """A recorded theorem whose first tactic leaves goals (a realistic reply: hypotheses, target)."""
    from lean_dojo_v2.data import goal_texts, load_theorems, sample_dataset_path

    best = None
    for thm in load_theorems(sample_dataset_path()):
        if not thm.traced_tactics:
            continue
        after = goal_texts(thm.traced_tactics[0].state_after)
        if after and (
            best is None or len(after[0]) > len(goal_texts(best.traced_tactics[0].state_after)[0])
        ):
            best = thm
    assert best is not None
    return best


# ------------------------------------------------------------------------------------- raw


class RawRepl:
    """The floor: a blocking pipe, one line out, one line in, nothing parsed."""

    def __init__(self, cmd: list[str]) -> None:
        self.p = subprocess.Popen(
            [*cmd, "Init"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        assert self.p.stdout.readline().strip() == b"ready."

    def ask(self, line: bytes) -> bytes:
        self.p.stdin.write(line)
        self.p.stdin.flush()
        return self.p.stdout.readline()

    def start(self, name: str) -> int:
        reply = json.loads(self.ask(b'goal.start {"copyFrom":%s}\n' % json.dumps(name).encode()))
        return reply["stateId"]

    def run(self, line: bytes, n: int) -> float:
        ask = self.ask
        t0 = time.perf_counter()
        for _ in range(n):
            ask(line)
        return time.perf_counter() - t0

    def run_cpu(self, line: bytes, n: int) -> tuple[float, float]:
        """(wall, CPU of this process) seconds for ``n`` requests."""
        c0 = time.process_time()
        wall = self.run(line, n)
        return wall, time.process_time() - c0

    def close(self) -> None:
        self.p.stdin.close()
        self.p.wait(10)


def tactic_line(state_id: int, tactic: str) -> bytes:
    return (
        b"goal.tactic %s\n"
        % json.dumps(
            {"stateId": state_id, "tactic": tactic}, ensure_ascii=False, separators=(",", ":")
        ).encode()
    )


def echo_server(reply_path: str) -> None:
    """``--echo-server FILE``: an instant REPL that answers every ``goal.tactic`` with the reply
    recorded from the fake (in FILE), so that only the client's own cost remains."""
    reply = Path(reply_path).read_bytes()
    goals = json.loads(reply)["goals"]
    answers = {
        b"goal.start": b'{"root":"_uniq.1","stateId":0}\n',
        b"goal.print": json.dumps(
            {
                "extraMVars": [],
                "goals": goals,
                "rootHasMVar": True,
                "rootHasSorry": False,
                "rootHasUnsafe": False,
            },
            ensure_ascii=False,
            separators=(",", ":"),
        ).encode()
        + b"\n",
        b"goal.tactic": reply,
    }
    out = sys.stdout.buffer
    out.write(b"ready.\n")
    out.flush()
    for line in sys.stdin.buffer:
        if not line.strip():
            break
        out.write(answers.get(line.split(b" ", 1)[0].strip(), b"{}\n"))
        out.flush()


def raw_worker(n: int) -> None:
    """``--raw-worker``: one raw pipe loop in its own process (no GIL shared with the others).
    Prints ``ready``, waits for a line on stdin, runs ``n`` requests, prints the seconds taken."""
    from fake_pantograph.launcher import fake_command

    thm = pick_theorem()
    repl = RawRepl(fake_command())
    line = tactic_line(repl.start(thm.full_name), thm.traced_tactics[0].tactic)
    repl.run(line, 50)
    print("ready", flush=True)
    while sys.stdin.readline().strip() == "go":
        wall, cpu = repl.run_cpu(line, n)
        print(wall, cpu, flush=True)
    repl.close()


class RawPool:
    """``size`` raw pipe loops, each in its own worker process, started together."""

    def __init__(self, size: int, n: int) -> None:
        self.workers = [
            subprocess.Popen(
                [sys.executable, __file__, "--raw-worker", str(n)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            for _ in range(size)
        ]
        for w in self.workers:
            assert w.stdout.readline().strip() == "ready"

    def run(self) -> tuple[float, float]:
        """(wall seconds, CPU seconds summed over the worker loops)."""
        t0 = time.perf_counter()
        for w in self.workers:
            w.stdin.write("go\n")
            w.stdin.flush()
        cpu = 0.0
        for w in self.workers:
            cpu += float(w.stdout.readline().split()[1])
        return time.perf_counter() - t0, cpu

    def close(self) -> None:
        for w in self.workers:
            w.stdin.write("stop\n")
            w.stdin.close()
            w.wait(30)


# ------------------------------------------------------------------------------------ main


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunk", type=int, default=50, help="requests per chunk")
    ap.add_argument("--chunks", type=int, default=30, help="chunks per variant (interleaved)")
    ap.add_argument("--raw-worker", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--echo-server", default=None, help=argparse.SUPPRESS)
    args, _ = ap.parse_known_args()  # the echo server also gets module names
    if args.raw_worker:
        raw_worker(args.raw_worker)
        return
    if args.echo_server:
        echo_server(args.echo_server)
        return
    n, rounds = args.chunk, args.chunks
    load_at_start = [round(x, 2) for x in os.getloadavg()]

    from fake_pantograph.launcher import fake_command

    from lean_dojo_v2.data import goal_texts
    from lean_dojo_v2.interaction import PantographEnv, PantographPool, ProofState
    from lean_dojo_v2.interaction.pantograph import AsyncPantographEnv, PantographConfig

    cmd = fake_command()
    thm = pick_theorem()
    tactic = thm.traced_tactics[0].tactic
    expected = tuple(goal_texts(thm.traced_tactics[0].state_after))

    def single_server(cmd: list[str], rounds: int) -> tuple[dict, dict, int]:
        """Per-request wall and CPU seconds of every variant against the REPL ``cmd``."""
        cfg = PantographConfig(
            command=cmd, imports=("Init",), tactic_timeout=30.0, check_version=False
        )
        variants = ("raw", "client", "env", "sync_env")
        per: dict[str, list[float]] = {k: [] for k in variants}
        cpu: dict[str, list[float]] = {k: [] for k in variants}

        def timed(name: str, fn: Any) -> None:
            c0 = time.process_time()
            wall = fn()
            cpu[name].append((time.process_time() - c0) / n)
            per[name].append(wall / n)

        raw = RawRepl(cmd)
        raw_line = tactic_line(raw.start(thm.full_name), tactic)
        reply_bytes = len(raw.ask(raw_line))

        loop = asyncio.new_event_loop()
        aenv = AsyncPantographEnv(cfg)
        loop.run_until_complete(aenv.open())
        astate = loop.run_until_complete(aenv.start(thm))
        client = aenv.client
        sid = astate.handle.state_id

        async def client_chunk() -> float:
            goal_tactic = client.goal_tactic
            t0 = time.perf_counter()
            for _ in range(n):
                out = await goal_tactic(sid, tactic, timeout=30.0)
            dt = time.perf_counter() - t0
            assert out.shape == "success"
            return dt

        async def env_chunk() -> float:
            run_tactic = aenv.run_tactic
            t0 = time.perf_counter()
            for _ in range(n):
                res = await run_tactic(astate, tactic)
            dt = time.perf_counter() - t0
            assert isinstance(res, ProofState) and res.goals == expected
            return dt

        senv = PantographEnv(cfg).open()
        sstate = senv.start(thm)

        def sync_chunk() -> float:
            run_tactic = senv.run_tactic
            t0 = time.perf_counter()
            for _ in range(n):
                res = run_tactic(sstate, tactic)
            dt = time.perf_counter() - t0
            assert res.goals == expected
            return dt

        # warm-up, then chunks of every variant interleaved so load changes hit all alike
        raw.run(raw_line, 50)
        loop.run_until_complete(client_chunk())
        loop.run_until_complete(env_chunk())
        sync_chunk()
        for _ in range(rounds):
            timed("raw", lambda: raw.run(raw_line, n))
            timed("client", lambda: loop.run_until_complete(client_chunk()))
            timed("env", lambda: loop.run_until_complete(env_chunk()))
            timed("sync_env", sync_chunk)
        raw.close()
        loop.run_until_complete(aenv.close())
        loop.close()
        senv.close()
        return per, cpu, reply_bytes

    per, cpu, reply_bytes = single_server(cmd, rounds)
    reply_file = Path(tempfile.mkdtemp(prefix="pgbench-")) / "reply.json"
    probe = RawRepl(cmd)
    reply_file.write_bytes(probe.ask(tactic_line(probe.start(thm.full_name), tactic)))
    probe.close()
    echo_cmd = [sys.executable, __file__, "--echo-server", str(reply_file)]
    eper, ecpu, _ = single_server(echo_cmd, rounds)
    shutil.rmtree(reply_file.parent, ignore_errors=True)
    cfg = PantographConfig(command=cmd, imports=("Init",), tactic_timeout=30.0)

    # ---- pool of 4
    size = 4
    pool_n = n * 4
    pool_raw: list[float] = []
    pool_client: list[float] = []
    pool_raw_cpu: list[float] = []
    pool_client_cpu: list[float] = []

    async def pool_chunk(pool: PantographPool, states: list[ProofState]) -> float:
        async def stream(state: ProofState) -> None:
            for _ in range(pool_n):
                res = await pool.run_tactic(state, tactic)
            assert res.goals == expected

        t0 = time.perf_counter()
        await asyncio.gather(*(stream(s) for s in states))
        return time.perf_counter() - t0

    pool = PantographPool(cfg, size=size)
    loop = asyncio.new_event_loop()
    loop.run_until_complete(pool.open())
    states = [loop.run_until_complete(pool.envs[i].start(thm)) for i in range(size)]
    rpool = RawPool(size, pool_n)
    loop.run_until_complete(pool_chunk(pool, states))  # warm-up
    total = pool_n * size
    for _ in range(max(5, rounds // 3)):
        wall, wcpu = rpool.run()
        pool_raw.append(wall / total)
        pool_raw_cpu.append(wcpu / total)
        c0 = time.process_time()
        pool_client.append(loop.run_until_complete(pool_chunk(pool, states)) / total)
        pool_client_cpu.append((time.process_time() - c0) / total)
    rpool.close()
    loop.run_until_complete(pool.close())
    loop.close()

    def ms(xs: list[float]) -> float:
        return round(statistics.median(xs) * 1000, 4)

    single = {k: ms(v) for k, v in per.items()}
    single_cpu = {k: ms(v) for k, v in cpu.items()}
    overhead = {k: round(single[k] - single["raw"], 4) for k in ("client", "env", "sync_env")}
    pool_fig = {"raw": ms(pool_raw), "client": ms(pool_client)}
    pool_over = round(pool_fig["client"] - pool_fig["raw"], 4)
    result = {
        "benchmark": "pantograph client overhead per goal.tactic round trip (fake REPL)",
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "load_average_at_start": load_at_start,
            "note": "shared machine: other jobs may run alongside, figures vary between runs",
        },
        "workload": {
            "theorem": thm.full_name,
            "tactic": tactic,
            "reply_bytes": reply_bytes,
            "single_server": f"{rounds} interleaved chunks of {n} requests per variant",
            "pool4": f"{len(pool_raw)} interleaved chunks of 4 x {pool_n} requests",
            "statistic": "median over chunks of the mean time per request; wall = elapsed "
            "time, cpu = CPU time of the client side only (the REPL's own process excluded), "
            "which load from other jobs on the machine distorts far less",
        },
        "single_server_ms_per_request": single,
        "single_server_overhead_ms": overhead,
        "single_server_ratio_to_raw": {
            k: round(single[k] / single["raw"], 3) for k in ("client", "env", "sync_env")
        },
        "instant_repl": {
            "what": "the same variants against a REPL that answers instantly with the reply "
            "recorded from the fake: the client's own cost, without the REPL's time, cache "
            "misses after waiting, or CPU contention with the REPL",
            "ms_per_request": {k: ms(v) for k, v in eper.items()},
            "overhead_ms": {
                k: round(ms(eper[k]) - ms(eper["raw"]), 4) for k in ("client", "env", "sync_env")
            },
            "cpu_ms_per_request": {k: ms(v) for k, v in ecpu.items()},
        },
        "single_server_cpu_ms_per_request": single_cpu,
        "single_server_cpu_overhead_ms": {
            k: round(single_cpu[k] - single_cpu["raw"], 4) for k in ("client", "env", "sync_env")
        },
        "pool4_wall_ms_per_request": pool_fig,
        "pool4_overhead_ms": pool_over,
        "pool4_ratio_to_raw": round(pool_fig["client"] / pool_fig["raw"], 3),
        "pool4_cpu_ms_per_request": {"raw": ms(pool_raw_cpu), "client": ms(pool_client_cpu)},
        "pool4_cpu_overhead_ms": round(ms(pool_client_cpu) - ms(pool_raw_cpu), 4),
        "target_overhead_ms": TARGET_MS,
        "target_met": {
            "client": overhead["client"] <= TARGET_MS,
            "env": overhead["env"] <= TARGET_MS,
            "sync_env": overhead["sync_env"] <= TARGET_MS,
            "pool4": pool_over <= TARGET_MS,
        },
        "pypantograph": (
            "not measured: PyPantograph cannot be installed here (it is not on PyPI; PyPI's "
            "'pantograph' is an unrelated 2013 canvas library), so no comparison figures exist"
        ),
    }
    print(json.dumps(result, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
