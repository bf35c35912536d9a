// LD_PRELOAD library: the process sees a CPU without AVX-512 or AMX (an AVX2 machine's view).
// It turns on CPUID faulting (arch_prctl ARCH_SET_CPUID, needs the CPU's cpuid_fault flag) and
// answers each faulting CPUID from a SIGSEGV handler, with the AVX-512 and AMX bits cleared.
// For ONNX Runtime, which has no switch to cap its kernels: both runtimes then take their
// AVX2 paths on the same AVX-512 CPU. Build: gcc -O2 -shared -fPIC avx2_cpuid.c -o avx2_cpuid.so
#define _GNU_SOURCE
#include <asm/prctl.h>
#include <cpuid.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

static unsigned long traps;  // CPUIDs answered, reported at exit under AVX2_CPUID_COUNT.

static int set_cpuid(int enabled) { return (int)syscall(SYS_arch_prctl, ARCH_SET_CPUID, enabled); }

static void on_fault(int signal_number, siginfo_t* info, void* context) {
  (void)info;
  greg_t* r = ((ucontext_t*)context)->uc_mcontext.gregs;
  const unsigned char* ip = (const unsigned char*)r[REG_RIP];
  if (ip[0] != 0x0f || ip[1] != 0xa2) {  // Not CPUID: a real fault, die as without us.
    signal(signal_number, SIG_DFL);
    return;
  }
  __atomic_add_fetch(&traps, 1, __ATOMIC_RELAXED);
  unsigned leaf = (unsigned)r[REG_RAX], sub = (unsigned)r[REG_RCX], a, b, c, d;
  set_cpuid(1);
  __cpuid_count(leaf, sub, a, b, c, d);
  set_cpuid(0);
  if (leaf == 7 && sub == 0) {
    // EBX: AVX512F, DQ, IFMA, PF, ER, CD, BW, VL.
    b &= ~((1u << 16) | (1u << 17) | (1u << 21) | (1u << 26) | (1u << 27) | (1u << 28) |
           (1u << 30) | (1u << 31));
    // ECX: VBMI, VBMI2, VNNI, BITALG, VPOPCNTDQ.
    c &= ~((1u << 1) | (1u << 6) | (1u << 11) | (1u << 12) | (1u << 14));
    // EDX: 4VNNIW, 4FMAPS, VP2INTERSECT, AMX-BF16, FP16, AMX-TILE, AMX-INT8.
    d &= ~((1u << 2) | (1u << 3) | (1u << 8) | (1u << 22) | (1u << 23) | (1u << 24) | (1u << 25));
  } else if (leaf == 7 && sub == 1) {
    a &= ~(1u << 5);  // AVX512_BF16.
  }
  r[REG_RAX] = a;
  r[REG_RBX] = b;
  r[REG_RCX] = c;
  r[REG_RDX] = d;
  r[REG_RIP] += 2;
}

__attribute__((constructor)) static void hide_avx512(void) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_sigaction = on_fault;
  action.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigaction(SIGSEGV, &action, NULL);
  if (set_cpuid(0) != 0) {
    fprintf(stderr, "avx2_cpuid: CPUID faulting unavailable here; AVX-512 stays visible\n");
    signal(SIGSEGV, SIG_DFL);
  }
}

__attribute__((destructor)) static void report_traps(void) {
  if (getenv("AVX2_CPUID_COUNT")) fprintf(stderr, "avx2_cpuid: %lu CPUID traps\n", traps);
}
