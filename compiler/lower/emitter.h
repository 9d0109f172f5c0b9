// The state of emitting one method (emit_program.h): internal to compiler/lower, shared by
// emit_program.cc (inputs, kernel calls, delegate calls, views, memory planning) and
// emit_control_flow.cc (cond).
//
//   internal::Emitter e(program, options, ptd_keys);
//   ir::StatusOr<EmittedMethod> m = e.run();
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/emit/program_spec.h"
#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"
#include "compiler/lower/emit_program.h"

namespace ember::lower::internal {

class Emitter {
 public:
  Emitter(const ir::Program& p, const EmitOptions& o, std::map<std::string, std::string>* keys)
      : program_(p), options_(o), keys_(keys) {
    method_.name = o.method_name;
  }

  // Emits the program's method once; the Emitter is spent afterwards.
  ir::StatusOr<EmittedMethod> run();

 private:
  void find_in_place_writes(
      const std::vector<const ir::Node*>& nodes,
      const std::unordered_map<const ir::Value*, const ir::Value*>& final_value,
      const std::vector<const ir::Value*>& user_outputs);
  int64_t instruction_count() const { return static_cast<int64_t>(method_.instructions.size()); }
  void use(const ir::Value* v, int64_t at);
  const ir::Value* find_input(const ir::OutputSpec& spec) const;
  ir::Status emit_inputs(const std::unordered_map<const ir::Value*, const ir::Value*>& final_value);
  ir::StatusOr<int32_t> arg_value(const ir::Arg& a, int64_t at);
  int32_t add_result(const ir::Value* v, int64_t at, bool placeholder = false);
  ir::Status emit_delegate(const ir::Node& n);
  ir::Status emit_node(const ir::Node& n);
  bool is_alias_view(const ir::Node& n) const;
  ir::Status emit_alias_view(const ir::Node& n);
  ir::Status emit_control_flow(const ir::Node& n);  // emit_control_flow.cc
  void plan();

  struct Planned {
    const ir::Value* value;
    int32_t index;
    bool state;
    bool placeholder = false;  // a cond result that branch outputs are moved into
  };

  const ir::Program& program_;
  const EmitOptions& options_;
  std::map<std::string, std::string>* keys_;
  emit::MethodSpec method_;
  EmittedMethod result_;
  std::unordered_map<const ir::Value*, int32_t> index_;
  std::unordered_map<const ir::Value*, const ir::Value*> in_place_;  // new value -> its state
  std::unordered_set<const ir::Value*> state_inputs_;     // inputs holding state (before writes)
  std::unordered_set<const ir::Value*> constant_inputs_;  // weights and constants (not planned)
  std::unordered_set<const ir::Value*> no_view_alias_;    // values that need storage of their own
  int branch_depth_ = 0;                                  // > 0 while emitting a cond branch
  std::unordered_map<const ir::Value*, int64_t> first_def_;
  std::unordered_map<const ir::Value*, int64_t> last_use_;
  std::vector<Planned> planned_;
  std::unordered_map<const ir::Value*, const ir::Value*> alias_;  // subgraph input -> operand
  std::unordered_map<const ir::Value*, std::vector<const ir::Value*>> moved_from_;
};

}  // namespace ember::lower::internal
