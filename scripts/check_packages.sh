#!/usr/bin/env bash
# Each plugin package installs alone next to oracle-core in a fresh virtual environment,
# and `oracle plugins` lists it from its entry point, with no failure and no warning.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
venv=$(mktemp -d)/venv
trap 'rm -rf "$(dirname "$venv")"' EXIT
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check .
for package in plugins/*/ contrib/*/; do
  [ -f "$package/pyproject.toml" ] || continue
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$package"
  report=$(ORACLE_HOME="$(dirname "$venv")/home" "$venv/bin/oracle" plugins --json)
  dist=$(basename "$package")
  "$venv/bin/python" - "$dist" "$report" <<'PY'
import json, sys
dist, report = sys.argv[1], json.loads(sys.argv[2])
names = [p["distribution"] for p in report["plugins"]]
problems = report["failures"] + report["warnings"]
if names != [dist] or problems:
    sys.exit(f"{dist}: installed alone, `oracle plugins` shows {names} and problems {problems}")
print(f"ok: {dist} installs alone and `oracle plugins` lists {report['plugins'][0]['name']!r}")
PY
  "$venv/bin/python" -m pip uninstall --quiet --yes "$dist"
done
