// Preloaded into a benchmark's worker (LD_PRELOAD), it makes an AVX-512 CPU look like an AVX2+FMA
// one (AMD Zen 2/3, most Intel client parts before Alder Lake) to everything in that process:
// CPUID no longer reports AVX-512, AVX-VNNI or AMX. The peers pick their kernels from CPUID
// (ONNX Runtime's MLAS, XNNPACK through cpuinfo, PyTorch's ATen and oneDNN), and none has a switch
// like Ember's EMBER_CPU_ISA, so without this `run_bench.py --isa avx2` would compare Ember's AVX2
// path with the peers' AVX-512 one.
//
// How: Linux's CPUID faulting (arch_prctl ARCH_SET_CPUID, on CPUs and hypervisors that offer it:
// the `cpuid_fault` flag of /proc/cpuinfo). With it on, the CPUID instruction traps (SIGSEGV with
// si_code SI_KERNEL); the handler runs CPUID itself with faulting off for that instant, clears the
// hidden feature bits and steps over the instruction. The setting is inherited by the threads
// and children the process creates, and execve resets it.
//
// Where CPUID faulting is not available the process exits with status 3 and says why: a worker
// that silently ran its AVX-512 kernels would make the AVX2 table wrong.
#include <asm/prctl.h>
#include <cpuid.h>
#include <signal.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

namespace {

constexpr uint32_t bit(int i) { return uint32_t{1} << i; }

// CPUID leaf 7, subleaf 0: AVX512F, DQ, IFMA, PF, ER, CD, BW, VL (EBX); VBMI, VBMI2, VNNI, BITALG,
// VPOPCNTDQ (ECX); 4VNNIW, 4FMAPS, VP2INTERSECT, AMX-BF16, AVX512-FP16, AMX-TILE, AMX-INT8 (EDX).
constexpr uint32_t kLeaf7Ebx =
    bit(16) | bit(17) | bit(21) | bit(26) | bit(27) | bit(28) | bit(30) | bit(31);
constexpr uint32_t kLeaf7Ecx = bit(1) | bit(6) | bit(11) | bit(12) | bit(14);
constexpr uint32_t kLeaf7Edx = bit(2) | bit(3) | bit(8) | bit(22) | bit(23) | bit(24) | bit(25);
// Leaf 7, subleaf 1, EAX: AVX-VNNI, AVX512-BF16, AMX-FP16, AVX-IFMA.
constexpr uint32_t kLeaf7Sub1Eax = bit(4) | bit(5) | bit(21) | bit(23);

long set_cpuid_enabled(bool enabled) {
  return syscall(SYS_arch_prctl, ARCH_SET_CPUID, enabled ? 1UL : 0UL);
}

void on_sigsegv(int, siginfo_t* info, void* context) {
  auto* uc = static_cast<ucontext_t*>(context);
  greg_t* regs = uc->uc_mcontext.gregs;
  const auto* ip = reinterpret_cast<const unsigned char*>(regs[REG_RIP]);
  if (info->si_code != SI_KERNEL || ip[0] != 0x0f || ip[1] != 0xa2) {
    // A real fault: let it happen again with the default action.
    signal(SIGSEGV, SIG_DFL);
    return;
  }
  const auto leaf = static_cast<unsigned>(regs[REG_RAX]);
  const auto subleaf = static_cast<unsigned>(regs[REG_RCX]);
  unsigned a = 0, b = 0, c = 0, d = 0;
  set_cpuid_enabled(true);
  __cpuid_count(leaf, subleaf, a, b, c, d);
  set_cpuid_enabled(false);
  if (leaf == 7 && subleaf == 0) {
    b &= ~kLeaf7Ebx;
    c &= ~kLeaf7Ecx;
    d &= ~kLeaf7Edx;
  } else if (leaf == 7 && subleaf == 1) {
    a &= ~kLeaf7Sub1Eax;
  }
  // CPUID writes the low 32 bits and zeroes the upper ones.
  regs[REG_RAX] = static_cast<greg_t>(a);
  regs[REG_RBX] = static_cast<greg_t>(b);
  regs[REG_RCX] = static_cast<greg_t>(c);
  regs[REG_RDX] = static_cast<greg_t>(d);
  regs[REG_RIP] += 2;
}

__attribute__((constructor)) void hide_avx512() {
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_sigaction = on_sigsegv;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  if (sigaction(SIGSEGV, &action, nullptr) != 0 || set_cpuid_enabled(false) != 0) {
    static const char message[] =
        "cpuid_avx2: this CPU or hypervisor has no CPUID faulting (no cpuid_fault in "
        "/proc/cpuinfo), so AVX-512 cannot be hidden; measure the AVX2 path on an AVX2 CPU\n";
    [[maybe_unused]] auto written = write(2, message, sizeof message - 1);
    _exit(3);
  }
}

}  // namespace
