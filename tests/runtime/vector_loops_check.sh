#!/bin/bash
# Build check: each of cleave's per-ISA float loops (fast_math.cc, pool_loops.cc,
# quantize_loops.cc, channel_loops.cc, lstm_loops.cc) is vector code for its ISA.
# A loop left scalar still computes the right numbers, so no output test can see it; under
# GCC's -ftrapping-math the AVX2 loops were scalar and EfficientNet-B0 ran 4x slower on AVX2.
# Usage: vector_loops_check.sh path/to/libcleave_runtime.a
set -euo pipefail
library=$(realpath "$1")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
member=$(ar t "$library" | grep -x 'fast_math.cc.o')
(cd "$work" && ar x "$library" "$member")
objdump -d -C --no-show-raw-insn "$work/$member" >"$work/listing"
failed=0
for approximation in swish erf; do
  for isa in avx2:ymm avx512:zmm; do
    loop=map_${isa%%:*}
    register=${isa##*:}
    count=$(awk -v loop="$loop<" -v name="$approximation" '
      /^[0-9a-f]+ </ { inside = index($0, loop) && index($0, name "_approximation"); next }
      inside' "$work/listing" | grep -c "%$register" || true)
    if [ "$count" -eq 0 ]; then
      echo "FAIL: $loop for ${approximation}_approximation uses no $register register (scalar code)"
      failed=1
    else
      echo "ok: $loop for ${approximation}_approximation: $count instructions on $register"
    fi
  done
done
# The AVX2 pooling loops: maxima and sums on ymm registers (plain loops over float arrays were
# left scalar there, so they are written with vector types).
member=$(ar t "$library" | grep -x 'pool_loops.cc.o')
(cd "$work" && ar x "$library" "$member")
objdump -d -C --no-show-raw-insn "$work/$member" >"$work/pool_listing"
for operation in vmaxps vaddps; do
  count=$(grep -c "$operation .*%ymm" "$work/pool_listing" || true)
  if [ "$count" -eq 0 ]; then
    echo "FAIL: pool_loops.cc has no $operation on ymm registers (scalar code)"
    failed=1
  else
    echo "ok: pool_loops.cc: $count $operation on ymm"
  fi
done
# The AVX2 int8 loops: float-to-int32 conversions (QuantizeLinear, QLinearAdd) on ymm registers.
member=$(ar t "$library" | grep -x 'quantize_loops.cc.o')
(cd "$work" && ar x "$library" "$member")
objdump -d -C --no-show-raw-insn "$work/$member" >"$work/quantize_listing"
count=$(grep -c "vcvtps2dq .*%ymm" "$work/quantize_listing" || true)
if [ "$count" -eq 0 ]; then
  echo "FAIL: quantize_loops.cc has no vcvtps2dq on ymm registers (scalar code)"
  failed=1
else
  echo "ok: quantize_loops.cc: $count vcvtps2dq on ymm"
fi
# The per-channel loops (channel_loops.cc): BatchNormalization's scale and shift, the
# channel-broadcast Add/Sub/Mul/Div and the global average pool, for every lane width, compute
# on the ISA's vector registers.
member=$(ar t "$library" | grep -x 'channel_loops.cc.o')
(cd "$work" && ar x "$library" "$member")
objdump -d -C --no-show-raw-insn "$work/$member" >"$work/channel_listing"
# check LOOP INSTRUCTION REGISTER: the function named LOOP... has INSTRUCTION on REGISTER.
check() {
  local count
  count=$(awk -v loop="$1" '
    /^[0-9a-f]+ </ { inside = index($0, loop); next }
    inside' "$work/channel_listing" | grep -c "$2 .*%$3" || true)
  if [ "$count" -eq 0 ]; then
    echo "FAIL: $1 has no $2 on $3 registers (scalar code)"
    failed=1
  else
    echo "ok: $1: $count $2 on $3"
  fi
}
operations=(vaddps vsubps vmulps vdivps)  # ChannelOp kAdd, kSub, kMul, kDiv
for isa in avx2:ymm avx512:zmm; do
  register=${isa##*:}
  for lanes in 16 8 4 1 0; do
    for relu in false true; do
      check "units_${isa%%:*}<${lanes}l, cleave::(anonymous namespace)::ScaleShift<${relu}> >" vmulps "$register"
    done
    for op in 0 1 2 3; do
      check "units_${isa%%:*}<${lanes}l, cleave::(anonymous namespace)::WithChannel<(cleave::ChannelOp)${op}> >" "${operations[$op]}" "$register"
    done
    check "average_${isa%%:*}<${lanes}l>" vaddps "$register"
  done
done
# LSTM's recurrence (lstm_loops.cc): the products of H and R on zmm (AVX-512) and ymm (AVX2)
# registers.
member=$(ar t "$library" | grep -x 'lstm_loops.cc.o')
(cd "$work" && ar x "$library" "$member")
objdump -d -C --no-show-raw-insn "$work/$member" >"$work/channel_listing"
check "step_avx512<2, 2>" "vfmadd[0-9]*ps" zmm
check "step_avx512<1, 2>" "vfmadd[0-9]*ps" zmm
check "step_avx2<2, 1>" "vfmadd[0-9]*ps" ymm
check "step_avx2<1, 2>" "vfmadd[0-9]*ps" ymm
exit $failed
