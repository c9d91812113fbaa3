"""``benchmarks/api_bench.py --serial-only --skip-upstream`` runs as a user runs it (briefly):
our server and the bare-uvicorn floor answer every request, and the report puts the two side by
side. What it measures is the benchmark's business (docs/api_server.md); this checks that it
measures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.timeout(180)


def _bench(tmp_path: Path, out: Path, *args: str) -> dict:
    """``api_bench.py ARGS --out OUT`` as a user runs it; the report it wrote."""
    script = str(ROOT / "benchmarks" / "api_bench.py")
    proc = subprocess.run(
        [sys.executable, script, *args, "--out", str(out)],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict(json.loads(out.read_text()))


def test_serial_benchmark_reports_ours_beside_the_bare_uvicorn_floor(tmp_path):
    out = tmp_path / "serial.json"
    report = _bench(tmp_path, out, "--serial-only", "--skip-upstream", "--seconds", "0.5")
    serial, floor = report["ours"]["serial"], report["bare_uvicorn_serial"]
    for scenario in (serial, floor):
        assert scenario["errors"] == 0 and scenario["requests_ok"] > 10, scenario
        assert scenario["p50_ms"] > 0 and scenario["server_cpu_ms_per_request"] > 0
    # every request went to the model, one generator call each (nothing to batch serially)
    assert serial["generator_calls"] >= serial["requests_ok"]
    ratios = report["ratios"]
    assert ratios["serial_p50_ms_bare_uvicorn"] == floor["p50_ms"]
    assert ratios["serial_p50_ms_over_bare_uvicorn"] == pytest.approx(
        serial["p50_ms"] - floor["p50_ms"], abs=1e-6
    )
    assert ratios["meets"]["c64_rps_2x"] is None  # not run, not claimed
    assert report["machine"]["cpus"] >= 1


def test_retrieve_only_adds_the_new_premises_figures_beside_the_others(tmp_path, tiny_bert_dir):
    """``--retrieve-only`` (here with the tiny encoder and 24 new premises) adds its figures
    under ``retrieve_new_premises`` and keeps what ``--out`` held."""
    out = tmp_path / "api.json"
    out.write_text(json.dumps({"ours": {"serial": {"p50_ms": 0.2}}}))
    args = ("--retrieve-only", "--new-premises", "24", "--encoder", str(tiny_bert_dir))
    report = _bench(tmp_path, out, *args)
    assert report["ours"] == {"serial": {"p50_ms": 0.2}}
    figures = report["retrieve_new_premises"]
    assert figures["premises"] == 24 and figures["answered"] == 16
    assert figures["cold_s"] > 0 and figures["warm_ms"] > 0 and figures["decl_tokens_mean"] > 10
