// ExecutionObserver: what a profiler sees of a method's execution. Off by default; a Method with
// no observer pays one predictable branch per instruction.
//
//   MyProfiler p;                       // implements ExecutionObserver
//   method.set_observer(&p);            // until set_observer(nullptr) or the method is destroyed
//   EMBER_TRY(method.execute());        // p.on_instruction(...) once per instruction run
//
// Callbacks run on the thread that calls execute, between instructions, with times from now_ns()
// (runtime/platform/clock.h). They must not throw; what they record and where is theirs to decide
// (the runtime itself stays free of heap allocation). Names point into the program or the
// backend and stay valid while the program is loaded.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ember {

class ExecutionObserver {
 public:
  virtual ~ExecutionObserver() = default;

  // Instruction `pc` ran from `start_ns` to `end_ns`. `name`: the operator of a kernel call
  // ("aten::add.out"), or the backend id of a delegate call ("cpu"); `delegate` is the delegate's
  // index for a delegate call, -1 otherwise. Moves, jumps and frees are not reported.
  virtual void on_instruction(size_t pc, const char* name, int delegate, uint64_t start_ns,
                              uint64_t end_ns) = 0;

  // A step inside a delegate call (a backend reports its own primitives, e.g. the cpu backend's
  // oneDNN convolutions), during the instruction `on_instruction` reports next. `backend` is the
  // backend id, `step` what ran ("convolution", "own:depthwise", ...).
  virtual void on_delegate_step(const char* backend, const char* step, uint64_t start_ns,
                                uint64_t end_ns) = 0;
};

}  // namespace ember
