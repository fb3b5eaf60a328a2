"""The API fuzzed from its own OpenAPI schema by schemathesis (all its checks: no 5xx, bad input
refused with a 4xx, responses as the schema documents them), against the real server in front of a
manager and a simulated cluster's agents on a real nats-server. A seconds=1e-300 once hung the event
loop (host_series looped for ever); the fuzzing found it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import httpx

from service_stack import StackThread

SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")
CONFIG = Path(__file__).with_name("fixtures") / "schemathesis.toml"


def test_fuzzing_the_api_from_its_schema_finds_no_server_error_and_no_bad_input_taken(nats_server, tmp_path):
    command = str(SCHEMATHESIS) if SCHEMATHESIS.exists() else shutil.which("schemathesis")
    stack = StackThread(nats_server, tmp_path)
    base = stack.start()
    outcomes = {}
    schema = tmp_path / "openapi.json"
    try:
        schema.write_bytes(httpx.get(f"{base}/openapi.json", headers=stack.stack.headers("viewer")).content)
        for role in ("operator", "tenant"):
            header = f"Authorization: Bearer {stack.stack.secrets[role]}"
            examples = "100" if role == "operator" else "20"  # a tenant's answers are nearly all 403
            options = ["--checks", "all", "--max-examples", examples, "--generation-deterministic", "--workers", "1"]
            run = subprocess.run(
                [command, "--config-file", str(CONFIG), "run", str(schema), "--url", base, "-H", header, *options],
                capture_output=True,
                text=True,
                timeout=900,
                cwd=tmp_path,  # its cache of crashes goes there, not into the checkout
            )
            assert run.returncode == 0, run.stdout[-4000:]
            outcomes[role] = run.stdout
    finally:
        stack.stop()
    summary = outcomes["operator"].strip().splitlines()[-1]  # e.g. "=== No issues found in 7.2s ===", or warnings
    assert "failure" not in summary and "error" not in summary, outcomes["operator"][-3000:]
    # a tenant reaches nothing but its own VMs' SLOs: every other operation answered it 403 only (/healthz and
    # /readyz need no token; the SLO paths answer a tenant 403 for others' VMs, 4xx for bad input, 200 for its own)
    paths = json.loads(schema.read_text())["paths"]
    others = {f"{method.upper()} {path}" for path, methods in paths.items() for method in methods}
    others = {op for op in others if "/api/v1/slos" not in op and op not in ("GET /healthz", "GET /readyz")}
    forbidden = outcomes["tenant"].split("403 Forbidden (", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    assert {line.strip().removeprefix("- ") for line in forbidden} == others, outcomes["tenant"][-3000:]
