#include "runtime/platform/cpu_isa.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ember {
namespace {

CpuIsa detect() {
#if defined(__x86_64__) || defined(_M_X64)
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
    return CpuIsa::Avx512;
  }
  if (avx2) return CpuIsa::Avx2;
#endif
  return CpuIsa::Generic;
}

CpuIsa in_force() {
  CpuIsa isa = detect();
  const char* cap = std::getenv("EMBER_CPU_ISA");
  if (cap == nullptr || *cap == '\0') return isa;
  constexpr CpuIsa kLevels[] = {CpuIsa::Generic, CpuIsa::Avx2, CpuIsa::Avx512};
  for (CpuIsa level : kLevels) {
    if (std::strcmp(cap, cpu_isa_name(level)) == 0) return level < isa ? level : isa;
  }
  std::fprintf(stderr,
               "ember: EMBER_CPU_ISA='%s' is not one of generic, avx2, avx512; ignored (using "
               "%s)\n",
               cap, cpu_isa_name(isa));
  return isa;
}

}  // namespace

CpuIsa detected_cpu_isa() {
  static const CpuIsa isa = detect();
  return isa;
}

CpuIsa cpu_isa() {
  static const CpuIsa isa = in_force();
  return isa;
}

const char* cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::Avx512:
      return "avx512";
    case CpuIsa::Avx2:
      return "avx2";
    case CpuIsa::Generic:
      break;
  }
  return "generic";
}

}  // namespace ember
