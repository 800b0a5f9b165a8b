"""The benchmark script runs (on a small data set), so it does not rot between uses."""

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[3] / "bench" / "cache-python" / "bench.py"


def test_bench_runs_on_small_data(tmp_path):
    out = subprocess.run(
        [sys.executable, str(BENCH), "--keys", "2000", "--runs", "2", "--dir", str(tmp_path)],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    assert "| larder |" in out and "| dict |" in out and "| lmdb |" in out
    assert "larder get / dict get" in out
    assert list(tmp_path.iterdir()) == []  # cleans up after itself
