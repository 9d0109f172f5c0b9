// The instruction-set level Ember's own vector code may use on this CPU, chosen once per process.
//
//   if (cpu_isa() >= CpuIsa::Avx512) run_avx512_kernel(); else run_portable_kernel();
//   std::printf("%s\n", cpu_isa_name(cpu_isa()));  // "avx512", "avx2" or "generic"
//
// It is what the CPU supports, capped by the environment variable EMBER_CPU_ISA (generic, avx2 or
// avx512), so that one machine can run the code paths of a smaller CPU: tests and benchmarks on an
// AVX-512 machine prove the AVX2 path with EMBER_CPU_ISA=avx2 (and ONEDNN_MAX_CPU_ISA=AVX2,
// oneDNN's own switch, where the cpu backend's oneDNN runs). A cap above what the CPU has changes
// nothing; an unknown value is ignored with one line on stderr.
#pragma once

namespace ember {

// Ordered: a level includes every level below it.
enum class CpuIsa {
  Generic = 0,  // no vector extension beyond the baseline (SSE2 on x86-64)
  Avx2 = 1,     // AVX2 and FMA3
  Avx512 = 2,   // AVX-512 F, BW, DQ and VL, with FMA3 (every AVX-512 CPU but the Xeon Phi)
};

// The level in force: detected at first call, capped by EMBER_CPU_ISA. Thread-safe.
CpuIsa cpu_isa();

// What the CPU itself supports, ignoring EMBER_CPU_ISA.
CpuIsa detected_cpu_isa();

// "generic", "avx2" or "avx512".
const char* cpu_isa_name(CpuIsa isa);

}  // namespace ember
