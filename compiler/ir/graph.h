// The compiler's IR: a Program holds a Graph of Nodes in program order, each reading Values and
// producing Values; nodes of control-flow ops own nested subgraphs.
//
//   Program p;
//   Value* x = p.add_input("x", ValueType::of_tensor({DType::Float32, {Dim(4)}, {}}), {});
//   Node* n = p.graph().create_node("aten::relu", "default", {{"self", Arg::value(x)}},
//                                   /*outputs=*/{{"r", x->type()}});
//
// Ownership: a Graph owns its nodes and input values, a Node its output values and subgraphs, a
// Program its graph, weights and op registry. Raw pointers are non-owning and stay valid until
// the node (or graph) that owns the pointee is erased. Every Value knows its users, and every
// Node its position, so passes can insert and erase nodes without reordering the others
// (compiler rule 3: program order is stable).
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#include "compiler/ir/op_schema.h"
#include "compiler/ir/status.h"
#include "compiler/ir/types.h"

namespace ember::ir {

class Graph;
class Node;

// One nn.Module a node was traced inside, outermost first in Node::module_stack().
struct ModuleFrame {
  std::string path;  // fully qualified name, e.g. "layer1.0.conv1"
  std::string type;  // class name, e.g. "Conv2d"
  bool operator==(const ModuleFrame& other) const = default;
};

class Value {
 public:
  const std::string& name() const { return name_; }
  const ValueType& type() const { return type_; }
  void set_type(ValueType type) { type_ = std::move(type); }
  bool is_tensor() const { return type_.kind == ValueKind::Tensor; }
  const TensorType& tensor_type() const { return type_.tensor; }

  // The node computing this value; null for graph inputs.
  Node* producer() const { return producer_; }
  size_t output_index() const { return index_; }
  Graph* owner() const { return owner_; }

  // One entry per use in a node argument (a node using it twice appears twice).
  const std::vector<Node*>& users() const { return users_; }
  bool is_graph_output() const;
  bool has_uses() const { return !users_.empty() || is_graph_output(); }
  // Rewrites every use, in node arguments and in the owner graph's outputs, to `other`.
  void replace_all_uses_with(Value* other);

 private:
  friend class Graph;
  friend class Node;
  Value(Graph* owner, Node* producer, size_t index, std::string name, ValueType type)
      : name_(std::move(name)),
        type_(std::move(type)),
        owner_(owner),
        producer_(producer),
        index_(index) {}

  std::string name_;
  ValueType type_;
  Graph* owner_;
  Node* producer_;
  size_t index_;
  std::vector<Node*> users_;
};

enum class ArgKind : uint8_t {
  None,
  Bool,
  Int,
  Float,
  String,
  DType,
  Device,        // text: "cpu", "cuda:0"
  Layout,        // text: "strided"
  MemoryFormat,  // text: "contiguous_format", "channels_last", "preserve_format"
  Value,
  List,   // of any Args: ints, values, None (Tensor?[]), symbolic sizes mixed with ints
  Graph,  // index of one of the node's subgraphs
};

// A node argument: a constant, a reference to a Value, a list of either, or a subgraph index.
class Arg {
 public:
  Arg() = default;  // None
  static Arg none() { return Arg(); }
  static Arg boolean(bool b);
  static Arg integer(int64_t i);
  static Arg floating(double f);
  static Arg string(std::string s);
  static Arg dtype(DType d);
  static Arg device(std::string s);
  static Arg layout(std::string s);
  static Arg memory_format(std::string s);
  static Arg value(Value* v);
  static Arg list(std::vector<Arg> items);
  static Arg graph(size_t index);

  ArgKind kind() const { return kind_; }
  bool is_none() const { return kind_ == ArgKind::None; }
  bool as_bool() const { return int_ != 0; }
  int64_t as_int() const { return int_; }
  double as_float() const { return float_; }
  // The text of String, Device, Layout and MemoryFormat arguments.
  const std::string& as_text() const { return text_; }
  DType as_dtype() const { return dtype_; }
  Value* as_value() const { return value_; }
  const std::vector<Arg>& as_list() const { return list_; }
  size_t as_graph() const { return static_cast<size_t>(int_); }

  // Calls f(Value*) for each value referenced, lists included, in order.
  template <typename F>
  void for_each_value(F&& f) const {
    if (kind_ == ArgKind::Value) f(value_);
    for (const Arg& a : list_) a.for_each_value(f);
  }
  bool operator==(const Arg& other) const;

 private:
  ArgKind kind_ = ArgKind::None;
  DType dtype_ = DType::Float32;
  int64_t int_ = 0;
  double float_ = 0;
  std::string text_;
  Value* value_ = nullptr;
  std::vector<Arg> list_;
};

struct NamedArg {
  std::string name;  // the schema's argument name
  Arg value;
};

class Node {
 public:
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // A name for diagnostics; by default the first output's name.
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  const std::string& op() const { return op_; }              // "aten::add_"
  const std::string& overload() const { return overload_; }  // "Tensor"
  std::string qualified_op() const { return op_ + "." + overload_; }
  // The op's schema; null when the registry does not know the op.
  const OpSchema* schema() const { return schema_; }

  const std::vector<NamedArg>& args() const { return args_; }
  const Arg* arg(std::string_view name) const;
  void set_arg(size_t index, Arg value);
  void set_args(std::vector<NamedArg> args);
  // Every value the arguments reference, in argument order (repeats included).
  std::vector<Value*> operands() const;

  size_t num_outputs() const { return outputs_.size(); }
  Value* output(size_t index = 0) const { return outputs_.at(index).get(); }

  const std::vector<ModuleFrame>& module_stack() const { return module_stack_; }
  void set_module_stack(std::vector<ModuleFrame> stack) { module_stack_ = std::move(stack); }
  // The innermost module's path; empty at the top level.
  std::string module_path() const;

  size_t num_subgraphs() const { return subgraphs_.size(); }
  Graph* subgraph(size_t index) const { return subgraphs_.at(index).get(); }
  Graph* add_subgraph();

  Graph* owner() const { return owner_; }
  // "node add_ (aten::add_.Tensor) in module layer1.0 (BasicBlock)": the start of a diagnostic.
  std::string describe() const;

 private:
  friend class Graph;
  Node(Graph* owner, std::string name, std::string op, std::string overload,
       const OpSchema* schema);
  void add_uses(const Arg& a);
  void remove_uses(const Arg& a);

  Graph* owner_;
  std::string name_;
  std::string op_;
  std::string overload_;
  const OpSchema* schema_;
  std::vector<NamedArg> args_;
  std::vector<std::unique_ptr<Value>> outputs_;
  std::vector<std::unique_ptr<Graph>> subgraphs_;
  std::vector<ModuleFrame> module_stack_;
  std::list<std::unique_ptr<Node>>::iterator position_;
};

class Graph {
 public:
  // `registry` resolves op schemas for created nodes; `parent` is the node owning a subgraph.
  explicit Graph(const OpRegistry* registry = &OpRegistry::builtin(), Node* parent = nullptr);
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Names already used in the program get a suffix (unique_name), here and in create_node.
  Value* add_input(std::string name, ValueType type);
  const std::vector<Value*>& inputs() const { return input_ptrs_; }
  // Removes an unused input; later inputs move up one place (Value::output_index follows).
  Status erase_input(Value* input);

  // Creates a node computing `outputs` (name, type) before `before`, or at the end when null.
  // The node's name is `name`, or its first output's name when empty.
  Node* create_node(std::string op, std::string overload, std::vector<NamedArg> args,
                    std::vector<std::pair<std::string, ValueType>> outputs, Node* before = nullptr,
                    std::string name = "");
  // Erases a node whose outputs have no uses left.
  Status erase_node(Node* node);
  // Moves `node` (of this graph) before `before`, or to the end when null. Values and uses are
  // unchanged: the caller keeps every use after its definition (delegate insertion re-sorts).
  Status move_node(Node* node, Node* before);

  // Nodes in program order.
  class NodeRange {
   public:
    class Iterator {
     public:
      explicit Iterator(std::list<std::unique_ptr<Node>>::const_iterator it) : it_(it) {}
      Node* operator*() const { return it_->get(); }
      Iterator& operator++() {
        ++it_;
        return *this;
      }
      bool operator!=(const Iterator& other) const { return it_ != other.it_; }

     private:
      std::list<std::unique_ptr<Node>>::const_iterator it_;
    };
    explicit NodeRange(const std::list<std::unique_ptr<Node>>& nodes) : nodes_(nodes) {}
    Iterator begin() const { return Iterator(nodes_.begin()); }
    Iterator end() const { return Iterator(nodes_.end()); }

   private:
    const std::list<std::unique_ptr<Node>>& nodes_;
  };
  NodeRange nodes() const { return NodeRange(nodes_); }
  size_t num_nodes() const { return nodes_.size(); }
  // The node after `node` in program order, or null.
  Node* next(const Node* node) const;

  const std::vector<Value*>& outputs() const { return outputs_; }
  void set_outputs(std::vector<Value*> outputs) { outputs_ = std::move(outputs); }
  void set_output(size_t index, Value* value) { outputs_.at(index) = value; }

  Node* parent_node() const { return parent_; }
  const OpRegistry& registry() const { return *registry_; }
  // A value of this graph (inputs and node outputs, not nested graphs) by name, or null.
  Value* find_value(std::string_view name) const;
  // `base`, or `base_1`, `base_2`... : a value name not yet used anywhere in the program.
  std::string unique_name(std::string_view base) const;
  bool is_name_used(std::string_view name) const;

 private:
  friend class Node;
  Graph* root();
  const Graph* root() const;
  void claim_name(const std::string& name);
  void drop_uses();

  const OpRegistry* registry_;
  Node* parent_;
  std::vector<std::unique_ptr<Value>> inputs_;
  std::vector<Value*> input_ptrs_;
  std::list<std::unique_ptr<Node>> nodes_;
  std::vector<Value*> outputs_;
  std::unordered_set<std::string> names_;  // used on the root graph only
};

// Indices of the arguments `node` writes in place: its schema's Tensor(a!) arguments, plus the
// running statistics of batch norm in training mode, which PyTorch 1.13's schemas leave unmarked.
// Passes that must not fold or reorder written tensors (contract C1) ask this, not the schema.
std::vector<size_t> mutated_arguments(const Node& node);

// ---------------------------------------------------------------------------------------------
// Program: a graph with the exported program's signature, symbols and weights.

enum class InputKind : uint8_t { UserInput, Parameter, Buffer, Constant };
enum class OutputKind : uint8_t { UserOutput, BufferMutation, UserInputMutation };
std::string_view input_kind_name(InputKind kind);    // "user_input", "parameter"...
std::string_view output_kind_name(OutputKind kind);  // "user_output", "buffer_mutation"...

struct InputSpec {
  InputKind kind = InputKind::UserInput;
  std::string target;                // fully qualified name; empty for user inputs
  std::vector<std::string> aliases;  // other FQNs naming the same tensor
  bool persistent = true;            // buffers only: part of the state_dict
  bool operator==(const InputSpec& other) const = default;
};

struct OutputSpec {
  OutputKind kind = OutputKind::UserOutput;
  std::string target;  // the buffer or input a mutation output writes
  bool operator==(const OutputSpec& other) const = default;
};

// A dynamic size: every Dim expression is over these.
struct Symbol {
  std::string name;
  int64_t min = 0;
  int64_t max = 0;
  bool operator==(const Symbol& other) const = default;
};

// A method that only returns constants: ExecuTorch's "constant methods", which carry what a runner
// needs to know of a program (an LLM's get_max_seq_len, get_eos_ids, ...). A list is flattened
// into one output per item, as ExecuTorch's emitter writes it; `is_list` keeps the container.
struct ConstantMethod {
  using Scalar = std::variant<int64_t, double, bool, std::string>;
  std::string name;
  std::vector<Scalar> values;
  bool is_list = false;
};

// Stored tensor data of a parameter, buffer or constant, by fully qualified name. The bytes are
// dense in the order of `type.shape` (row-major) and shared: several weights may view one storage.
struct Weight {
  std::string name;
  TensorType type;
  std::string alias_of;  // another weight naming the same tensor object; empty if none
  std::shared_ptr<const std::vector<uint8_t>> storage;  // null: no data (text IR without data)
  size_t offset = 0;
  size_t nbytes = 0;

  bool has_data() const { return storage != nullptr; }
  std::span<const uint8_t> bytes() const {
    return storage ? std::span<const uint8_t>(storage->data() + offset, nbytes)
                   : std::span<const uint8_t>();
  }
};

class Program {
 public:
  Program();
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  Graph& graph() { return *graph_; }
  const Graph& graph() const { return *graph_; }
  // Builtin schemas plus any the program brought along (an exported program's "operators").
  OpRegistry& ops() { return *ops_; }
  const OpRegistry& ops() const { return *ops_; }

  // Adds a graph input with its signature entry (the two stay parallel).
  Value* add_input(std::string name, ValueType type, InputSpec spec);
  const InputSpec& input_spec(size_t index) const { return input_specs_.at(index); }
  InputSpec& input_spec(size_t index) { return input_specs_.at(index); }
  // Removes an unused graph input together with its signature entry (dead weights).
  Status erase_input(size_t index);
  // Appends a graph output with its signature entry.
  void add_output(Value* value, OutputSpec spec);
  // Removes a graph output with its signature entry (a mutation output made in-place again).
  Status erase_output(size_t index);
  const OutputSpec& output_spec(size_t index) const { return output_specs_.at(index); }
  OutputSpec& output_spec(size_t index) { return output_specs_.at(index); }

  std::vector<Symbol> symbols;
  const Symbol* find_symbol(std::string_view name) const;
  // FQNs the program writes in place or through mutation outputs, and user inputs it writes.
  std::vector<std::string> mutated_buffers;
  std::vector<std::string> mutated_parameters;
  std::vector<std::string> mutated_user_inputs;

  std::vector<Weight> weights;
  const Weight* find_weight(std::string_view name) const;
  // Methods besides the graph's ("forward"), in the order the file lists them.
  std::vector<ConstantMethod> constant_methods;

 private:
  std::unique_ptr<OpRegistry> ops_;
  std::unique_ptr<Graph> graph_;
  std::vector<InputSpec> input_specs_;
  std::vector<OutputSpec> output_specs_;
};

}  // namespace ember::ir
