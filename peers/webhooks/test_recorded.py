"""The webhook target end to end at small scale, its signatures checked by the reference
library: `agentwire-load --webhooks` (200 background runs, the server killed with SIGKILL mid-ramp
and started again, the receiver answering 503 for two seconds across the kill, every request
recorded), then `verify_recorded.py` over the recording. Every status change is delivered, and
every request the receiver took (deliveries, repeats and refusals) verifies; a tampered one does
not, so the check is not vacuous.

The load generator is the one beside the `agentwire` binary the other suites use (`target/debug`
unless `$AGENTWIRE_BIN` says otherwise; `cargo test` has built both), or `$AGENTWIRE_LOAD_BIN`.
"""

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from agentwire_server import binary, check_fresh  # noqa: E402
from verify_recorded import read, verify_lines  # noqa: E402

RUNS = 200


def load_binary() -> Path:
    if os.environ.get("AGENTWIRE_LOAD_BIN"):
        return Path(os.environ["AGENTWIRE_LOAD_BIN"])
    return binary().with_name("agentwire-load")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """The load generator's report and its recording."""
    agentwire, load = binary(), load_binary()
    check_fresh(agentwire)
    check_fresh(load, "cargo build -p agentwire-load")
    path = tmp_path_factory.mktemp("recorded") / "deliveries.ndjson"
    # Runs of about a second started over 4 s: about 50 going when the kill comes at 2 s.
    done = subprocess.run(
        [str(load), "--webhooks", "--runs", str(RUNS), "--tokens", "20", "--rate", "20",
         "--ramp-ms", "4000", "--kill-after", "2s", "--receiver-down", "1s..3s",
         "--record", str(path), "--agentwire", str(agentwire), "--json"],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    return report, read(path)


def test_every_status_change_is_delivered_through_the_kill_and_the_outage(recorded):
    report, _ = recorded
    assert report["started"] == RUNS, report
    assert report["status_changes"] > 0 and report["delivered"] == report["status_changes"], report
    assert report["unexpected"] == 0, report
    # The kill cut runs, which the restart ended `incomplete`; the receiver refused some.
    assert report["ended"].get("incomplete", 0) > 0, report
    assert report["refused"] > 0, report
    assert report["killed_at_s"] >= 2.0, report


def test_every_recorded_request_verifies_with_the_reference_library(recorded):
    report, lines = recorded
    assert len(lines) == report["recorded"]
    counts = verify_lines(lines)
    assert counts.failed == 0, counts.failures
    assert counts.verified == len(lines)
    assert counts.verified_by_answer[503] == report["refused"]
    # Every status change delivered is among the verified deliveries.
    assert len(counts.delivered_ids) == report["delivered"]


def test_a_tampered_recording_fails(recorded):
    _, lines = recorded
    line = next(line for line in lines if line["answered"] == 204)
    body = base64.b64decode(line["body_base64"]).replace(b'"run.', b'"job.')
    tampered = dict(line, body_base64=base64.b64encode(body).decode())
    other_secret = dict(line, secret="whsec_" + base64.b64encode(b"another secret here!").decode())
    late = dict(line, received_at=line["received_at"] + 600)
    counts = verify_lines([tampered, other_secret, late])
    assert (counts.verified, counts.failed) == (0, 3), counts.failures
