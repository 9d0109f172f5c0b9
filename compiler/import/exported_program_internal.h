// Internal to the exported-program reader: the Importer (an Ember exported-program file -> IR).
// exported_program.cc reads the file's header, its operators, symbols and tensors, and the
// signature; exported_program_graph.cc reads graphs, their values, nodes and arguments. Failures
// throw ImportError (json_access.h). Not a public header; see exported_program.h.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compiler/import/json_access.h"
#include "compiler/ir/graph.h"

namespace ember::importer::ep_internal {

using ir::Arg;
using ir::Dim;
using ir::DType;
using ir::Graph;
using ir::Node;
using ir::Program;
using ir::Status;
using ir::StatusOr;
using ir::TensorType;
using ir::Value;
using ir::ValueKind;
using ir::ValueType;

bool is_ident_char(char c);

class Importer {
 public:
  Importer(std::shared_ptr<const std::vector<uint8_t>> file) : file_(std::move(file)) {}

  std::unique_ptr<Program> run();

 private:
  using Scope = std::map<std::string, Value*, std::less<>>;

  // exported_program.cc
  void check_range(const std::string& what, uint64_t offset, uint64_t size, uint64_t minimum);
  void read_operators(const json& doc);
  void read_symbols(const json& doc);
  void read_constant_methods(const json& doc);
  void read_tensors(const json& doc);
  void read_program_graph(const json& doc);
  void check_weights();

  // exported_program_graph.cc
  DType dtype(const json& j, const std::string& where);
  Dim dim(const json& j, const std::string& where);
  std::pair<std::string, ValueType> value_def(const json& j, const std::string& where,
                                              const Graph& g);
  Arg arg(const json& j, const Scope& scope, const std::string& where, int depth);
  void node(const json& j, Graph& g, Scope& scope, const std::string& where, int depth);
  void graph(const json& j, Graph& g, const std::string& where, int depth,
             const std::map<std::string, ir::InputSpec>* specs);

  std::shared_ptr<const std::vector<uint8_t>> file_;
  uint64_t data_offset_ = 0;
  uint64_t data_size_ = 0;
  std::unique_ptr<Program> program_;
  std::vector<Value*> top_outputs_;
  std::set<std::string> pending_;  // output names of the node being read
};

}  // namespace ember::importer::ep_internal
