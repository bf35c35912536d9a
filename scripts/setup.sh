#!/usr/bin/env bash
# Quick start, step one: install dependencies, build cleave, and run its main job on the demo model.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$(nproc)"
./scripts/demo.sh
