# Sourced by the scheduling scripts: the benchmark's single-channel RWNN as a task graph.
# rwnn_tasks CLEAVE MODULES OUT.json writes the task graph of `cleave gen rwnn` with MODULES
# modules (as bench/scheduling/run.py makes them) and the CPU + T4 + A100 rooflines.
rwnn_tasks() {
  local cleave=$1 modules=$2 out=$3
  "$cleave" gen rwnn --modules "$modules" --nodes 10 --graph er --p 0.2 --channels-between 1 \
    --dependence sdep --seed 1 --channels 32 --size 56 -o "$out.onnx" >/dev/null
  "$cleave" export-tasks "$out.onnx" --machine machines/cpu_t4_a100.json \
    --costs analytical -o "$out" >/dev/null
}
