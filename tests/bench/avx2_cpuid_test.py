# Tests of bench/device/avx2_cpuid.c, the LD_PRELOAD CPUID mask of the AVX2 comparisons.
# Builds it and a probe with the system C compiler; the probe reads CPUID leaf 7 after setting
# SIGSEGV to its default (as node does at start), and takes real faults with and without a
# handler of its own. Skips (77) without a C compiler or the CPU's cpuid_fault flag.
import os, shutil, signal, subprocess, sys, tempfile

here = os.path.dirname(os.path.abspath(__file__))
source = os.path.join(here, '../../bench/device/avx2_cpuid.c')
PROBE = r'''
#include <cpuid.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static void own_handler(int s) { (void)s; _exit(42); }
int main(int argc, char** argv) {
  struct sigaction act;
  memset(&act, 0, sizeof act);
  act.sa_handler = strcmp(argv[1], "handled") == 0 ? own_handler : SIG_DFL;
  sigaction(SIGSEGV, &act, NULL);
  struct sigaction back;
  sigaction(SIGSEGV, NULL, &back);
  if (back.sa_handler != act.sa_handler) return 3;  /* the program reads back its own action */
  if (strcmp(argv[1], "cpuid") == 0) {
    unsigned a, b, c, d, a1, b1, c1, d1;
    __cpuid_count(7, 0, a, b, c, d);
    __cpuid_count(7, 1, a1, b1, c1, d1);
    printf("avx512f=%u amx_tile=%u avx_vnni=%u avx2=%u\n", (b >> 16) & 1, (d >> 24) & 1,
           (a1 >> 4) & 1, (b >> 5) & 1);
    return 0;
  }
  volatile int* nowhere = (volatile int*)(argc > 5 ? argv : NULL);
  return *nowhere;
}
'''

def bits(line):
    return {k: int(v) for k, v in (p.split('=') for p in line.split())}

def main():
    if 'cpuid_fault' not in open('/proc/cpuinfo').read().split():
        print('skipped: this CPU has no cpuid_fault flag')
        return 77
    cc = shutil.which('cc') or shutil.which('gcc')
    if not cc:
        print('skipped: no C compiler')
        return 77
    work = tempfile.mkdtemp(prefix='avx2-cpuid-test-')
    lib, probe = os.path.join(work, 'mask.so'), os.path.join(work, 'probe')
    with open(probe + '.c', 'w') as f:
        f.write(PROBE)
    subprocess.run([cc, '-O2', '-Wall', '-Wextra', '-Werror', '-shared', '-fPIC', source, '-o', lib], check=True)
    subprocess.run([cc, '-O1', probe + '.c', '-o', probe], check=True)

    def run(mode, **env):
        return subprocess.run([probe, mode], capture_output=True, text=True,
                              env={**os.environ, 'LD_PRELOAD': lib, 'AVX2_CPUID_COUNT': '1', **env})

    failures = []
    native = bits(subprocess.run([probe, 'cpuid'], capture_output=True, text=True, check=True).stdout)
    masked = run('cpuid')
    seen = bits(masked.stdout) if masked.returncode == 0 else None
    if seen is None:
        failures.append(f'probe under the mask exited {masked.returncode}: {masked.stderr.strip()}')
    else:
        if seen['avx512f'] or seen['amx_tile'] or seen['avx_vnni']:
            failures.append(f'masked CPUID still shows {seen} (native {native})')
        if seen['avx2'] != native['avx2']:
            failures.append(f'masked CPUID changed AVX2: {seen} (native {native})')
        if 'CPUID traps' not in masked.stderr:
            failures.append(f'no trap count on stderr: {masked.stderr!r}')
    kept = run('cpuid', AVX2_CPUID_AVX_VNNI='1')
    if kept.returncode != 0 or bits(kept.stdout)['avx_vnni'] != native['avx_vnni'] or bits(kept.stdout)['avx512f']:
        failures.append(f'AVX2_CPUID_AVX_VNNI=1: {kept.stdout.strip()} (native {native}), exit {kept.returncode}')
    handled = run('handled')
    if handled.returncode != 42:
        failures.append(f"a real fault did not reach the program's own handler: exit {handled.returncode}")
    died = run('default')
    if died.returncode != -signal.SIGSEGV:
        failures.append(f'a real fault without a handler: exit {died.returncode}, expected death by SIGSEGV')
    shutil.rmtree(work)
    for f in failures:
        print('FAIL:', f)
    print('ok' if not failures else f'{len(failures)} failure(s)')
    return 1 if failures else 0

sys.exit(main())
