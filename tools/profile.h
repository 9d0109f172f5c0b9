// The profiler behind `ember run --profile` / `--trace` and the Python runtime's profile: an
// ExecutionObserver (runtime/executor/observer.h) that records every instruction and delegate
// step, then prints a table or writes Chrome trace events (chrome://tracing, Perfetto).
//
//   Profile p;
//   method->set_observer(&p);  ... execute N times ...  method->set_observer(nullptr);
//   p.print_table(stdout);                 // per op kind and per instruction
//   Error e = p.write_chrome_trace("out.json");
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "runtime/core/error.h"
#include "runtime/executor/observer.h"

namespace ember::tools {

struct ProfileEvent {
  const char* name;     // operator, backend id, or the delegate step
  const char* backend;  // null for instructions; the backend id for delegate steps
  int64_t pc;           // the instruction (for steps: the delegate instruction they ran in)
  int delegate;         // the delegate index, -1 for kernel calls
  uint64_t start_ns;
  uint64_t end_ns;
};

class Profile final : public ExecutionObserver {
 public:
  // Steps arrive before the instruction that contains them; they take its pc when it arrives.
  void on_instruction(size_t pc, const char* name, int delegate, uint64_t start_ns,
                      uint64_t end_ns) override;
  void on_delegate_step(const char* backend, const char* step, uint64_t start_ns,
                        uint64_t end_ns) override;

  // Marks the end of one execute call (the table divides by the number of calls).
  void end_call() { ++calls_; }
  const std::vector<ProfileEvent>& events() const { return events_; }
  size_t calls() const { return calls_; }
  void clear();

  // Two tables: per op kind (operator or "delegate <backend>", then each delegate step kind) and
  // per instruction, each with calls, total ms, mean us and share of the instructions' total.
  void print_table(std::FILE* out) const;
  // Chrome trace event format ("X" complete events; instructions on one track, delegate steps
  // on a second). AccessFailed naming the path when it cannot be written.
  Error write_chrome_trace(const std::string& path) const;

 private:
  std::vector<ProfileEvent> events_;
  size_t pending_steps_ = 0;  // steps recorded since the last instruction
  size_t calls_ = 0;
};

}  // namespace ember::tools
