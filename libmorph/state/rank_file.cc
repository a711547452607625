#include "libmorph/state/rank_file.h"

#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "libmorph/state/checksum.h"
#include "libmorph/state/shard_map.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph::state {
namespace {

namespace fs = std::filesystem;

template <typename Lookup>
auto checked_buffer(const Lookup& buffer_of, const TensorDecl& decl) {
  std::uint64_t elements = 1;
  for (std::int64_t d : decl.shape) elements *= static_cast<std::uint64_t>(d);
  const auto b = buffer_of(decl);
  if (b.size() != elements * dtype_bytes(decl.dtype))
    throw Error(fmt::format("tensor {} ({} x {}) needs {} bytes, the trainer's buffer has {}", quote(decl.name),
                            fmt::join(decl.shape, "x"), dtype_name(decl.dtype), elements * dtype_bytes(decl.dtype),
                            b.size()));
  return b;
}

// The first parameter in which two specs differ, for the "another model" error.
std::string first_difference(const StateSpec& found, const StateSpec& mine) {
  for (std::size_t i = 0; i < std::min(found.params.size(), mine.params.size()); ++i) {
    const ParamSpec& a = found.params[i];
    const ParamSpec& b = mine.params[i];
    if (a.name != b.name || a.shape != b.shape || a.dtype != b.dtype)
      return fmt::format("parameter {} is {} {} {} there, {} {} {} here", i, quote(a.name), fmt::join(a.shape, "x"),
                         dtype_name(a.dtype), quote(b.name), fmt::join(b.shape, "x"), dtype_name(b.dtype));
  }
  if (found.params.size() != mine.params.size())
    return fmt::format("{} parameters there, {} here", found.params.size(), mine.params.size());
  if (found.optimizer != mine.optimizer)
    return fmt::format("optimizer states [{}] there, [{}] here", fmt::join(found.optimizer, ", "),
                       fmt::join(mine.optimizer, ", "));
  return "their tensor-parallel splits, stages or vocabulary padding differ";
}

}  // namespace

CheckpointFile write_rank_file(const std::string& stage, const StateSpec& spec, const Layout& layout, int rank,
                               const ConstBufferOf& buffer_of) {
  CheckpointFile out{rank, rank_file_name(rank), 0, 0};
  const std::string path = (fs::path(stage) / out.name).string();
  std::vector<TensorDecl> decls;
  for (const LocalTensor& t : rank_tensors(spec, layout, rank)) decls.push_back(t.decl);
  std::vector<std::span<const std::byte>> buffers;
  for (const TensorDecl& d : decls) buffers.push_back(checked_buffer(buffer_of, d));  // all found before a byte is written
  SafetensorsWriter writer(path, decls, {{"layout", to_string(layout)}, {"rank", std::to_string(rank)}});
  for (std::size_t i = 0; i < decls.size(); ++i)
    if (!buffers[i].empty()) writer.write(writer.header().tensors[i], 0, buffers[i].data(), buffers[i].size());
  writer.finish();
  out.bytes = fs::file_size(path);
  out.checksum = file_checksum(path);
  return out;
}

CheckpointIndex index_for_resume(const std::string& dir, const StateSpec& spec, const Layout& layout) {
  CheckpointIndex index = read_index(dir);
  // The model first: resharding another model's checkpoint would not make it this one.
  if (to_json(index.spec) != to_json(spec))
    throw Error(fmt::format("{}: the checkpoint holds another model: {}", dir, first_difference(index.spec, spec)));
  if (index.layout != layout)
    throw Error(fmt::format("{}: the checkpoint has layout {}, this run {}; run `morph reshard --from {} --to NEW_DIR "
                            "--layout {}` first and resume from NEW_DIR",
                            dir, to_string(index.layout), to_string(layout), dir, to_string(layout)));
  return index;
}

void read_rank_file(const std::string& dir, const CheckpointIndex& index, int rank, const BufferOf& buffer_of) {
  if (rank < 0 || static_cast<std::size_t>(rank) >= index.files.size())
    throw Error(fmt::format("{}: no file of rank {} (layout {} has {} ranks)", dir, rank, to_string(index.layout),
                            index.files.size()));
  CheckpointIndex own = index;
  own.files = {index.files[static_cast<std::size_t>(rank)]};
  verify_files(dir, own, true, 1);
  const SafetensorsReader reader((fs::path(dir) / rank_file_name(rank)).string());
  check_stamp(reader.header(), index.layout, rank, reader.path());
  const std::vector<LocalTensor> expected = rank_tensors(index.spec, index.layout, rank);
  if (reader.header().tensors.size() != expected.size())
    throw Error(fmt::format("{}: {} tensors, layout {} rank {} needs {}", reader.path(), reader.header().tensors.size(),
                            to_string(index.layout), rank, expected.size()));
  std::vector<std::pair<const TensorEntry*, std::span<std::byte>>> reads;
  for (const LocalTensor& t : expected) {
    const TensorEntry* e = reader.header().find(t.decl.name);
    if (!e || e->dtype != t.decl.dtype || e->shape != t.decl.shape)
      throw Error(fmt::format("{}: tensor {} is missing or has another dtype or shape", reader.path(),
                              quote(t.decl.name)));
    reads.emplace_back(e, checked_buffer(buffer_of, t.decl));
  }
  for (const auto& [entry, buffer] : reads)
    if (!buffer.empty()) reader.read(*entry, 0, buffer.data(), buffer.size());
}

}  // namespace morph::state
