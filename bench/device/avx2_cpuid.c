// LD_PRELOAD library: the process sees a CPU without AVX-512 or AMX (an AVX2 machine's view).
// It turns on CPUID faulting (arch_prctl ARCH_SET_CPUID, needs the CPU's cpuid_fault flag) and
// answers each faulting CPUID from a SIGSEGV handler, with the AVX-512 and AMX bits cleared.
// For ONNX Runtime, which has no switch to cap its kernels: both runtimes then take their
// AVX2 paths on the same AVX-512 CPU. Build: gcc -O2 -shared -fPIC avx2_cpuid.c -o avx2_cpuid.so
// The 256-bit VNNI extensions (AVX-VNNI and its int8/int16 successors) are hidden too, as on an
// AVX2 CPU before Alder Lake or Zen 5: ONNX Runtime's int8 kernels take AVX-VNNI where it shows.
// AVX2_CPUID_AVX_VNNI=1 leaves them visible (an AVX2 CPU with AVX-VNNI; cap oneDNN at AVX2_VNNI).
// The program's own SIGSEGV actions are kept aside, not installed (sigaction is wrapped): node
// resets every signal to its default at start, which had killed it at its next CPUID. Real
// faults go to the program's action. Libraries that read CPUID in their static constructors
// before this one runs (oneDNN in cleave) saw the real CPU: cap oneDNN with ONEDNN_MAX_CPU_ISA.
#define _GNU_SOURCE
#include <asm/prctl.h>
#include <cpuid.h>
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

static unsigned long traps;  // CPUIDs answered, reported at exit under AVX2_CPUID_COUNT.
static int keep_avx_vnni;    // AVX2_CPUID_AVX_VNNI=1: AVX-VNNI stays visible.
static int installed;        // Our handler holds SIGSEGV; the program's action waits in `chained`.
static struct sigaction chained;

typedef int (*SigactionFn)(int, const struct sigaction*, struct sigaction*);

static SigactionFn real_sigaction(void) {
  static SigactionFn real;
  if (!real) real = (SigactionFn)dlsym(RTLD_NEXT, "sigaction");
  return real;
}

// The program sets and reads its SIGSEGV action here while ours stays installed.
int sigaction(int signal_number, const struct sigaction* action, struct sigaction* old) {
  if (signal_number != SIGSEGV || !installed) return real_sigaction()(signal_number, action, old);
  if (old) *old = chained;
  if (action) chained = *action;
  return 0;
}

// A fault that is not a CPUID: the program's own action, or death as without us.
static void pass_on(int signal_number, siginfo_t* info, void* context) {
  if (chained.sa_flags & SA_SIGINFO) {
    chained.sa_sigaction(signal_number, info, context);
  } else if (chained.sa_handler != SIG_DFL && chained.sa_handler != SIG_IGN) {
    chained.sa_handler(signal_number);
  } else {
    installed = 0;
    struct sigaction fallback;
    memset(&fallback, 0, sizeof fallback);
    fallback.sa_handler = SIG_DFL;
    real_sigaction()(SIGSEGV, &fallback, NULL);  // The faulting instruction runs again and dies.
  }
}

static int set_cpuid(int enabled) {
  return (int)syscall(SYS_arch_prctl, ARCH_SET_CPUID, enabled);
}

static void on_fault(int signal_number, siginfo_t* info, void* context) {
  greg_t* r = ((ucontext_t*)context)->uc_mcontext.gregs;
  const unsigned char* ip = (const unsigned char*)r[REG_RIP];
  if (info->si_code != SI_KERNEL || ip[0] != 0x0f || ip[1] != 0xa2) {
    pass_on(signal_number, info, context);
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
    if (!keep_avx_vnni) {
      a &= ~((1u << 4) | (1u << 23));              // AVX-VNNI, AVX-IFMA.
      d &= ~((1u << 4) | (1u << 5) | (1u << 10));  // AVX-VNNI-INT8, AVX-NE-CONVERT, AVX-VNNI-INT16.
    }
  }
  r[REG_RAX] = a;
  r[REG_RBX] = b;
  r[REG_RCX] = c;
  r[REG_RDX] = d;
  r[REG_RIP] += 2;
}

__attribute__((constructor)) static void hide_avx512(void) {
  const char* vnni = getenv("AVX2_CPUID_AVX_VNNI");
  keep_avx_vnni = vnni != NULL && strcmp(vnni, "1") == 0;
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_sigaction = on_fault;
  action.sa_flags = SA_SIGINFO | SA_NODEFER;
  chained.sa_handler = SIG_DFL;
  real_sigaction()(SIGSEGV, &action, &chained);
  installed = 1;
  if (set_cpuid(0) != 0) {
    installed = 0;
    real_sigaction()(SIGSEGV, &chained, NULL);
    fprintf(stderr, "avx2_cpuid: CPUID faulting unavailable here; AVX-512 stays visible\n");
  }
}

__attribute__((destructor)) static void report_traps(void) {
  if (getenv("AVX2_CPUID_COUNT")) fprintf(stderr, "avx2_cpuid: %lu CPUID traps\n", traps);
}
