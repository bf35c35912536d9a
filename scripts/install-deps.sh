#!/usr/bin/env bash
# Installs every Debian package cleave needs to build, test and benchmark.
set -euo pipefail

APT=(apt-get -o DPkg::Lock::Timeout=600 -y --no-install-recommends)
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

build_packages=(
  build-essential cmake ninja-build pkg-config git ca-certificates ccache
  clang libclang-rt-14-dev clang-format
  libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata
  libdnnl-dev ocl-icd-opencl-dev
  nlohmann-json3-dev libcli11-dev libfmt-dev libhwloc-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  coinor-libcbc-dev coinor-libclp-dev
  libopenmpi-dev openmpi-bin
  graphviz
  # The codegen tests run the generated PyTorch under /usr/bin/python3.
  python3 python3-numpy python3-torch
  # tests/docs/markdown_tables.py renders every Markdown file (ctest Docs.EveryMarkdownTableRenders).
  python3-markdown
  # The standard-ONNX tests run onnx.checker over every model cleave writes.
  python3-onnx
  # The cleave Python module (python/) and its tests (tests/python/, under pytest).
  python3-dev pybind11-dev python3-pytest
)
# Only the benchmark and corpus scripts use this; the build and tests do not.
corpus_packages=(python3-torchvision)
# onnxruntime-node for the comparison scripts comes from npm (bench/ort), not from apt.

want=("${build_packages[@]}")
if [ "${CLEAVE_WITH_CORPUS:-0}" = "1" ]; then want+=("${corpus_packages[@]}"); fi

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#want[@]} packages already installed"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
$SUDO "${APT[@]}" update >/dev/null
DEBIAN_FRONTEND=noninteractive $SUDO "${APT[@]}" install "${missing[@]}"
