#include "libmorph/state/dtype.h"

#include <array>

#include <fmt/format.h>

#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph::state {
namespace {

struct DtypeInfo {
  Dtype dtype;
  std::string_view name;
  std::size_t bytes;
};

constexpr std::array<DtypeInfo, 10> kDtypes{{
    {Dtype::f64, "F64", 8},
    {Dtype::f32, "F32", 4},
    {Dtype::f16, "F16", 2},
    {Dtype::bf16, "BF16", 2},
    {Dtype::i64, "I64", 8},
    {Dtype::i32, "I32", 4},
    {Dtype::i16, "I16", 2},
    {Dtype::i8, "I8", 1},
    {Dtype::u8, "U8", 1},
    {Dtype::boolean, "BOOL", 1},
}};

const DtypeInfo& info(Dtype dtype) {
  for (const DtypeInfo& d : kDtypes)
    if (d.dtype == dtype) return d;
  throw Error(fmt::format("unknown dtype value {}", static_cast<int>(dtype)));
}

}  // namespace

std::size_t dtype_bytes(Dtype dtype) { return info(dtype).bytes; }

std::string_view dtype_name(Dtype dtype) { return info(dtype).name; }

Dtype parse_dtype(std::string_view text, std::string_view what) {
  for (const DtypeInfo& d : kDtypes)
    if (d.name == text) return d.dtype;
  throw Error(fmt::format("{}: unknown dtype {} (expected F64, F32, F16, BF16, I64, I32, I16, I8, U8 or BOOL)",
                          what, quote(text)));
}

}  // namespace morph::state
