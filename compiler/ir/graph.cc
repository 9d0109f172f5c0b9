#include "compiler/ir/graph.h"

#include <algorithm>
#include <cmath>

namespace ember::ir {

// Value ---------------------------------------------------------------------------------------

bool Value::is_graph_output() const {
  const std::vector<Value*>& outs = owner_->outputs();
  return std::find(outs.begin(), outs.end(), this) != outs.end();
}

namespace {

Arg replace_in(const Arg& a, Value* from, Value* to) {
  if (a.kind() == ArgKind::Value) return a.as_value() == from ? Arg::value(to) : a;
  if (a.kind() != ArgKind::List) return a;
  std::vector<Arg> items;
  items.reserve(a.as_list().size());
  for (const Arg& item : a.as_list()) items.push_back(replace_in(item, from, to));
  return Arg::list(std::move(items));
}

bool mentions(const Arg& a, const Value* v) {
  bool found = false;
  a.for_each_value([&](Value* x) { found = found || x == v; });
  return found;
}

}  // namespace

void Value::replace_all_uses_with(Value* other) {
  if (other == this) return;
  // Copy: rewriting arguments edits users_.
  std::vector<Node*> users = users_;
  std::sort(users.begin(), users.end());
  users.erase(std::unique(users.begin(), users.end()), users.end());
  for (Node* user : users) {
    for (size_t i = 0; i < user->args().size(); ++i) {
      if (mentions(user->args()[i].value, this)) {
        user->set_arg(i, replace_in(user->args()[i].value, this, other));
      }
    }
  }
  for (size_t i = 0; i < owner_->outputs().size(); ++i) {
    if (owner_->outputs()[i] == this) owner_->set_output(i, other);
  }
}

// Arg -----------------------------------------------------------------------------------------

Arg Arg::boolean(bool b) {
  Arg a;
  a.kind_ = ArgKind::Bool;
  a.int_ = b ? 1 : 0;
  return a;
}
Arg Arg::integer(int64_t i) {
  Arg a;
  a.kind_ = ArgKind::Int;
  a.int_ = i;
  return a;
}
Arg Arg::floating(double f) {
  Arg a;
  a.kind_ = ArgKind::Float;
  a.float_ = f;
  return a;
}
Arg Arg::string(std::string s) {
  Arg a;
  a.kind_ = ArgKind::String;
  a.text_ = std::move(s);
  return a;
}
Arg Arg::dtype(DType d) {
  Arg a;
  a.kind_ = ArgKind::DType;
  a.dtype_ = d;
  return a;
}
Arg Arg::device(std::string s) {
  Arg a = string(std::move(s));
  a.kind_ = ArgKind::Device;
  return a;
}
Arg Arg::layout(std::string s) {
  Arg a = string(std::move(s));
  a.kind_ = ArgKind::Layout;
  return a;
}
Arg Arg::memory_format(std::string s) {
  Arg a = string(std::move(s));
  a.kind_ = ArgKind::MemoryFormat;
  return a;
}
Arg Arg::value(Value* v) {
  Arg a;
  a.kind_ = ArgKind::Value;
  a.value_ = v;
  return a;
}
Arg Arg::list(std::vector<Arg> items) {
  Arg a;
  a.kind_ = ArgKind::List;
  a.list_ = std::move(items);
  return a;
}
Arg Arg::graph(size_t index) {
  Arg a;
  a.kind_ = ArgKind::Graph;
  a.int_ = static_cast<int64_t>(index);
  return a;
}

bool Arg::operator==(const Arg& other) const {
  if (kind_ != other.kind_) return false;
  switch (kind_) {
    case ArgKind::None:
      return true;
    case ArgKind::Bool:
    case ArgKind::Int:
    case ArgKind::Graph:
      return int_ == other.int_;
    case ArgKind::Float:  // bitwise, so that NaN equals NaN and -0.0 differs from 0.0
      return std::signbit(float_) == std::signbit(other.float_) &&
             (float_ == other.float_ || (std::isnan(float_) && std::isnan(other.float_)));
    case ArgKind::String:
    case ArgKind::Device:
    case ArgKind::Layout:
    case ArgKind::MemoryFormat:
      return text_ == other.text_;
    case ArgKind::DType:
      return dtype_ == other.dtype_;
    case ArgKind::Value:
      return value_ == other.value_;
    case ArgKind::List:
      return list_ == other.list_;
  }
  return false;
}

// Node ----------------------------------------------------------------------------------------

Node::Node(Graph* owner, std::string name, std::string op, std::string overload,
           const OpSchema* schema)
    : owner_(owner),
      name_(std::move(name)),
      op_(std::move(op)),
      overload_(std::move(overload)),
      schema_(schema) {}

Node::~Node() {
  for (const NamedArg& a : args_) remove_uses(a.value);
}

void Node::add_uses(const Arg& a) {
  a.for_each_value([this](Value* v) { v->users_.push_back(this); });
}

void Node::remove_uses(const Arg& a) {
  a.for_each_value([this](Value* v) {
    auto it = std::find(v->users_.begin(), v->users_.end(), this);
    if (it != v->users_.end()) v->users_.erase(it);
  });
}

const Arg* Node::arg(std::string_view name) const {
  for (const NamedArg& a : args_) {
    if (a.name == name) return &a.value;
  }
  return nullptr;
}

void Node::set_arg(size_t index, Arg value) {
  NamedArg& slot = args_.at(index);
  add_uses(value);
  remove_uses(slot.value);
  slot.value = std::move(value);
}

void Node::set_args(std::vector<NamedArg> args) {
  for (const NamedArg& a : args) add_uses(a.value);
  for (const NamedArg& a : args_) remove_uses(a.value);
  args_ = std::move(args);
}

std::vector<Value*> Node::operands() const {
  std::vector<Value*> result;
  for (const NamedArg& a : args_) a.value.for_each_value([&](Value* v) { result.push_back(v); });
  return result;
}

std::string Node::module_path() const {
  return module_stack_.empty() ? std::string() : module_stack_.back().path;
}

Graph* Node::add_subgraph() {
  subgraphs_.push_back(std::make_unique<Graph>(&owner_->registry(), this));
  return subgraphs_.back().get();
}

std::string Node::describe() const {
  std::string s = "node " + name_ + " (" + qualified_op() + ")";
  if (!module_stack_.empty()) {
    s += " in module " + module_stack_.back().path + " (" + module_stack_.back().type + ")";
  }
  return s;
}

// Graph ---------------------------------------------------------------------------------------

Graph::Graph(const OpRegistry* registry, Node* parent) : registry_(registry), parent_(parent) {}

Graph::~Graph() {
  // Drop every use first, while all values are alive: an invalid graph (a use before its
  // definition, a subgraph reading an outer value) must be destroyable too.
  drop_uses();
  while (!nodes_.empty()) nodes_.pop_back();
}

void Graph::drop_uses() {
  for (const auto& node : nodes_) {
    node->set_args({});
    for (const auto& sub : node->subgraphs_) sub->drop_uses();
  }
}

Graph* Graph::root() {
  Graph* g = this;
  while (g->parent_ != nullptr) g = g->parent_->owner_;
  return g;
}

const Graph* Graph::root() const {
  const Graph* g = this;
  while (g->parent_ != nullptr) g = g->parent_->owner_;
  return g;
}

void Graph::claim_name(const std::string& name) { root()->names_.insert(name); }

bool Graph::is_name_used(std::string_view name) const {
  return root()->names_.count(std::string(name)) != 0;
}

std::string Graph::unique_name(std::string_view base) const {
  std::string name(base.empty() ? "v" : base);
  if (!is_name_used(name)) return name;
  for (size_t k = 1;; ++k) {
    std::string candidate = name + "_" + std::to_string(k);
    if (!is_name_used(candidate)) return candidate;
  }
}

Value* Graph::add_input(std::string name, ValueType type) {
  if (is_name_used(name)) name = unique_name(name);
  claim_name(name);
  inputs_.push_back(std::unique_ptr<Value>(
      new Value(this, nullptr, inputs_.size(), std::move(name), std::move(type))));
  input_ptrs_.push_back(inputs_.back().get());
  return inputs_.back().get();
}

Status Graph::erase_input(Value* input) {
  auto it = std::find(input_ptrs_.begin(), input_ptrs_.end(), input);
  if (it == input_ptrs_.end()) return Status::error("erase_input: not an input of this graph");
  if (input->has_uses()) {
    return Status::error("erase_input: input %" + input->name() + " is still used");
  }
  size_t index = static_cast<size_t>(it - input_ptrs_.begin());
  input_ptrs_.erase(it);
  inputs_.erase(inputs_.begin() + static_cast<std::ptrdiff_t>(index));
  for (size_t i = index; i < inputs_.size(); ++i) inputs_[i]->index_ = i;
  return Status();
}

Node* Graph::create_node(std::string op, std::string overload, std::vector<NamedArg> args,
                         std::vector<std::pair<std::string, ValueType>> outputs, Node* before,
                         std::string name) {
  const OpSchema* schema = registry_->find(op, overload);
  for (auto& [output_name, type] : outputs) {
    if (is_name_used(output_name)) output_name = unique_name(output_name);
    claim_name(output_name);
  }
  if (name.empty() && !outputs.empty()) name = outputs.front().first;
  auto node = std::unique_ptr<Node>(
      new Node(this, std::move(name), std::move(op), std::move(overload), schema));
  Node* raw = node.get();
  for (size_t i = 0; i < outputs.size(); ++i) {
    raw->outputs_.push_back(std::unique_ptr<Value>(
        new Value(this, raw, i, std::move(outputs[i].first), std::move(outputs[i].second))));
  }
  raw->set_args(std::move(args));
  auto at = before != nullptr ? before->position_ : nodes_.end();
  raw->position_ = nodes_.insert(at, std::move(node));
  return raw;
}

Status Graph::erase_node(Node* node) {
  if (node == nullptr || node->owner_ != this) {
    return Status::error("erase_node: the node does not belong to this graph");
  }
  for (const auto& out : node->outputs_) {
    if (out->has_uses()) {
      return Status::error("erase_node: " + node->describe() + ": output %" + out->name() +
                           " is still used");
    }
  }
  nodes_.erase(node->position_);
  return Status();
}

Status Graph::move_node(Node* node, Node* before) {
  if (node->owner_ != this || (before != nullptr && before->owner_ != this)) {
    return Status::error("move_node: the node does not belong to this graph");
  }
  if (node == before) return {};
  // splice keeps every list iterator valid, so position_ still points at the node.
  nodes_.splice(before != nullptr ? before->position_ : nodes_.end(), nodes_, node->position_);
  return {};
}

Node* Graph::next(const Node* node) const {
  auto it = node->position_;
  ++it;
  return it == nodes_.end() ? nullptr : it->get();
}

Value* Graph::find_value(std::string_view name) const {
  for (Value* v : input_ptrs_) {
    if (v->name() == name) return v;
  }
  for (const auto& node : nodes_) {
    for (const auto& out : node->outputs_) {
      if (out->name() == name) return out.get();
    }
  }
  return nullptr;
}

std::vector<size_t> mutated_arguments(const Node& node) {
  const OpSchema* schema = node.schema();
  if (schema == nullptr) return {};
  std::vector<size_t> written = schema->mutated_arguments();
  static constexpr std::string_view kBatchNorms[] = {
      "aten::native_batch_norm", "aten::batch_norm", "aten::_batch_norm_impl_index",
      "aten::cudnn_batch_norm", "aten::miopen_batch_norm"};
  bool batch_norm =
      std::find(std::begin(kBatchNorms), std::end(kBatchNorms), node.op()) != std::end(kBatchNorms);
  const Arg* training = node.arg("training");
  if (batch_norm && training != nullptr && training->kind() == ArgKind::Bool &&
      training->as_bool()) {
    for (const char* name : {"running_mean", "running_var"}) {
      std::optional<size_t> index = schema->argument_index(name);
      if (index && std::find(written.begin(), written.end(), *index) == written.end()) {
        written.push_back(*index);
      }
    }
    std::sort(written.begin(), written.end());
  }
  return written;
}

// Program -------------------------------------------------------------------------------------

std::string_view input_kind_name(InputKind kind) {
  switch (kind) {
    case InputKind::UserInput:
      return "user_input";
    case InputKind::Parameter:
      return "parameter";
    case InputKind::Buffer:
      return "buffer";
    case InputKind::Constant:
      return "constant";
  }
  return "?";
}

std::string_view output_kind_name(OutputKind kind) {
  switch (kind) {
    case OutputKind::UserOutput:
      return "user_output";
    case OutputKind::BufferMutation:
      return "buffer_mutation";
    case OutputKind::UserInputMutation:
      return "user_input_mutation";
  }
  return "?";
}

Program::Program()
    : ops_(std::make_unique<OpRegistry>(&OpRegistry::builtin())),
      graph_(std::make_unique<Graph>(ops_.get())) {}

Value* Program::add_input(std::string name, ValueType type, InputSpec spec) {
  input_specs_.push_back(std::move(spec));
  return graph_->add_input(std::move(name), std::move(type));
}

void Program::add_output(Value* value, OutputSpec spec) {
  std::vector<Value*> outs = graph_->outputs();
  outs.push_back(value);
  graph_->set_outputs(std::move(outs));
  output_specs_.push_back(std::move(spec));
}

Status Program::erase_input(size_t index) {
  if (index >= graph_->inputs().size()) return Status::error("erase_input: no such input");
  EMBER_IR_RETURN_IF_ERROR(graph_->erase_input(graph_->inputs()[index]));
  input_specs_.erase(input_specs_.begin() + static_cast<std::ptrdiff_t>(index));
  return Status();
}

Status Program::erase_output(size_t index) {
  if (index >= graph_->outputs().size()) return Status::error("erase_output: no such output");
  std::vector<Value*> outs = graph_->outputs();
  outs.erase(outs.begin() + static_cast<std::ptrdiff_t>(index));
  graph_->set_outputs(std::move(outs));
  output_specs_.erase(output_specs_.begin() + static_cast<std::ptrdiff_t>(index));
  return Status();
}

const Symbol* Program::find_symbol(std::string_view name) const {
  for (const Symbol& s : symbols) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

const Weight* Program::find_weight(std::string_view name) const {
  for (const Weight& w : weights) {
    if (w.name == name) return &w;
  }
  return nullptr;
}

}  // namespace ember::ir
