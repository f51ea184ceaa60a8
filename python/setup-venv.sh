#!/usr/bin/env bash
# Makes the venv VENV (default .venv) with the Python tests' requirements
# (from PyPI), builds the dataformats wheel with maturin (optimized: cargo's
# `wheel` profile, which pyproject.toml names; in the workspace's target
# directory) and installs it there. The README's Python
# command and .ci/run both call this.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${1:-.venv}"
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install -q -r python/requirements-test.txt
rm -rf target/wheels
"$venv/bin/maturin" build -q -m crates/python/Cargo.toml -o target/wheels
"$venv/bin/pip" install -q --no-index --find-links target/wheels dataformats
