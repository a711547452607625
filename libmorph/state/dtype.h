// Element types of stored tensors, by their safetensors names.
#pragma once

#include <cstddef>
#include <string_view>

namespace morph::state {

enum class Dtype { f64, f32, f16, bf16, i64, i32, i16, i8, u8, boolean };

std::size_t dtype_bytes(Dtype dtype);
std::string_view dtype_name(Dtype dtype);  // "F64", "F32", "F16", "BF16", "I64", ..., "BOOL"
// Throws morph::Error naming `what` and the text when it is not a known dtype.
Dtype parse_dtype(std::string_view text, std::string_view what);

}  // namespace morph::state
