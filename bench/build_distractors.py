"""Build ``oracle_core/testing/data/distractors.json.gz``: the findability check's catalog.

Offline, from the shared data (both Apache-2.0): every BFCL-live tool and every third
Seal-Tools tool (a fixed, seeded-free stride, so the file is reproducible), each as
``[name, description, [parameter names]]`` with descriptions cut to 200 characters.

    .venv/bin/python bench/build_distractors.py
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import search_data as data

OUT = Path(__file__).resolve().parents[1] / "oracle_core" / "testing" / "data"


def _row(spec: dict[str, object]) -> list[object]:
    name = re.sub(r"[^A-Za-z0-9_]", "_", str(spec["api_name"]))[:60]
    description = " ".join(str(spec["api_description"]).split())[:200]
    parameters = list(spec.get("parameters") or {})[:6]  # type: ignore[union-attr]
    return [name, description, parameters]


def main() -> None:
    """Write the file and print its size."""
    bfcl = data.load_jsonl(data.BFCL / "tool.jsonl")
    seal = data.load_jsonl(data.SEAL / "tool.jsonl")[::3]
    rows, seen = [], set()
    for source, specs in (("bfcl-live", bfcl), ("seal-tools", seal)):
        for spec in specs:
            row = _row(spec)
            if row[0].lower() not in seen and row[1]:
                seen.add(str(row[0]).lower())
                rows.append([source, *row])
    OUT.mkdir(parents=True, exist_ok=True)
    payload = json.dumps({"format": 1, "tools": rows}, separators=(",", ":")).encode()
    (OUT / "distractors.json.gz").write_bytes(gzip.compress(payload, mtime=0))
    print(
        f"{len(rows)} tools, {len(payload)} bytes, {(OUT / 'distractors.json.gz').stat().st_size} gzipped"
    )


if __name__ == "__main__":
    main()
