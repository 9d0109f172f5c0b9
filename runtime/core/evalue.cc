#include "runtime/core/evalue.h"

namespace ember {

const char* to_string(Tag tag) {
  switch (tag) {
    case Tag::None:
      return "None";
    case Tag::Int:
      return "Int";
    case Tag::Double:
      return "Double";
    case Tag::Bool:
      return "Bool";
    case Tag::String:
      return "String";
    case Tag::Tensor:
      return "Tensor";
    case Tag::ListInt:
      return "ListInt";
    case Tag::ListDouble:
      return "ListDouble";
    case Tag::ListBool:
      return "ListBool";
    case Tag::ListTensor:
      return "ListTensor";
    case Tag::ListOptionalTensor:
      return "ListOptionalTensor";
  }
  return "Invalid";
}

}  // namespace ember
