#!/usr/bin/env bash
# Makes the venv VENV (default .venv) with the Python tests' requirements
# (from PyPI), builds the dataformats wheel with maturin (optimized: cargo's
# `wheel` profile, which pyproject.toml names; in the workspace's target
# directory) and installs it there. The README's Python
# command and .ci/run both call this.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${1:-.venv}"
reqs=python/requirements-test.txt
rm -rf "$venv"
python3 -m venv "$venv"
# maturin first: the build needs it. The other packages (pyarrow, numpy,
# Ray, moto: mostly downloading and unpacking) are installed while cargo
# compiles the wheel, their output kept in a log shown if they fail.
"$venv/bin/pip" install -q "$(grep -E '^maturin' "$reqs")"
pip_log=$(mktemp)
trap 'rm -f "$pip_log"' EXIT
"$venv/bin/pip" install -q -r "$reqs" > "$pip_log" 2>&1 &
pip_pid=$!
rm -rf target/wheels
build_rc=0
"$venv/bin/maturin" build -q -m crates/python/Cargo.toml -o target/wheels || build_rc=$?
pip_rc=0
wait "$pip_pid" || pip_rc=$?
cat "$pip_log"
if [ "$build_rc" != 0 ] || [ "$pip_rc" != 0 ]; then
  echo "setup-venv: maturin build exit $build_rc, pip install -r $reqs exit $pip_rc" >&2
  exit 1
fi
"$venv/bin/pip" install -q --no-index --find-links target/wheels dataformats
