#!/usr/bin/env bash
# Each plugin package installs alone next to the core (the distribution oracle-core-runtime,
# built from this checkout) in a fresh virtual environment, without pulling in the unrelated
# `oracle-core` from the package index,
# and `oracle plugins` lists it from its entry point, with no failure and no warning; and
# `oracle search` ranks it by meaning as well as words: the core alone brings the
# semantic ranker (nothing downloaded).
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
from importlib import metadata
dist, report = sys.argv[1], json.loads(sys.argv[2])
names = [p["distribution"] for p in report["plugins"]]
problems = report["failures"] + report["warnings"]
try:  # the core's old name belongs to another project on PyPI: it must never come along
    problems.append(f"it brought {metadata.distribution('oracle-core').metadata['Name']!r}")
except metadata.PackageNotFoundError:
    pass
if names != [dist] or problems:
    sys.exit(f"{dist}: installed alone, `oracle plugins` shows {names} and problems {problems}")
print(f"ok: {dist} installs alone and `oracle plugins` lists {report['plugins'][0]['name']!r}")
PY
  if [ "$dist" = oracle-plugin-weather ]; then
    found=$(ORACLE_HOME="$(dirname "$venv")/home" "$venv/bin/oracle" search --json --explain "is it going to rain tomorrow")
    "$venv/bin/python" - "$found" <<'PY'
import json, sys
first = json.loads(sys.argv[1])["results"][0]
# One plugin: its z-scored parts are 0 (nothing to compare with), its cosine is not.
if first["name"] != "weather" or not first["explain"].get("cosine", 0) > 0:
    sys.exit(f"the core alone does not rank by meaning: {first}")
print(f"ok: the core alone ranks by meaning (cosine {first['explain']['cosine']})")
PY
  fi
  "$venv/bin/python" -m pip uninstall --quiet --yes "$dist"
done
