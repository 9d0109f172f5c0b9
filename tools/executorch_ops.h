// What ExecuTorch's own runtime registers: its operators (portable kernels and prim ops) and
// delegate backends, as the pip `executorch` that scripts/requirements.lock pins reports them.
// They come from the op manifest (ops/manifest.json: each op's `executorch` field, then
// `executorch_only_ops` and `executorch_backends`), compiled in as compiler/ops/op_manifest.inc;
// tools/gen_op_manifest.py writes both and CTest op_manifest_current checks they are current.
//
//   if (!executorch_registers_operator("aten::sum.out")) { ... }   // "ns::op.overload"
//   std::printf("ExecuTorch %s\n", executorch_version());
#pragma once

#include <string_view>

namespace ember::tools {

// The executorch version the list was made from ("1.5.1").
const char* executorch_version();

// Whether ExecuTorch's runtime registers the operator `name` as a program names it
// ("aten::add.out", "executorch_prim::et_view.default" or "aten::sym_size.int").
bool executorch_registers_operator(std::string_view name);

// Whether ExecuTorch's pip runtime registers the delegate backend `id` ("XnnpackBackend").
bool executorch_registers_backend(std::string_view id);

}  // namespace ember::tools
