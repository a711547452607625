// morph._native: the pybind11 layer between the `morph` Python package (python/morph/)
// and libmorph. Nothing is computed here: each function converts Python values, calls the
// one C++ implementation and turns morph::Error into morph.MorphError with its message.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "libmorph/config/morph_conf.h"
#include "libmorph/launch/metrics_line.h"
#include "libmorph/launch/rank_env.h"
#include "libmorph/plan/plan.h"
#include "libmorph/record/job_record.h"
#include "libmorph/state/checkpoint.h"
#include "libmorph/state/checksum.h"
#include "libmorph/state/dataset_order.h"
#include "libmorph/state/layout.h"
#include "libmorph/state/shard_map.h"
#include "libmorph/state/rank_file.h"
#include "libmorph/state/safetensors.h"
#include "libmorph/state/state_spec.h"
#include "libmorph/util/error.h"
#include "libmorph/util/json_depth.h"
#include "libmorph/util/parse.h"

namespace py = pybind11;

namespace morph::python {
namespace {

using Env = std::map<std::string, std::string>;

// ---- the plan -------------------------------------------------------------------------

int env_int(const Env& env, const char* name, int lo, int hi, std::optional<int> fallback = std::nullopt) {
  const auto it = env.find(name);
  if (it == env.end() || it->second.empty()) {
    if (fallback) return *fallback;
    throw Error(fmt::format("{} is not set: run under morphrun (srun morphrun -- python3 ...), which exports it", name));
  }
  return static_cast<int>(parse_int(it->second, name, lo, hi));
}

std::string env_text(const Env& env, const char* name) {
  const auto it = env.find(name);
  return it == env.end() ? std::string() : it->second;
}

// A plan and one rank in it, checked as morphrun checks them.
struct RankPlan {
  ExecutionPlan plan;
  int rank = 0, world_size = 1, local_rank = 0;
  launch::RankCoordinates coords;
  std::string model, framework;
  double predicted_iteration_s = 0;  // the record's iter_ms, 0 without one
  // MORPH_GLOBAL_BATCH, the plan's global batch without it. It differs from the plan's
  // only where the record allows: a heterogeneous plan (each rank takes its group's
  // share, MORPH_LOCAL_BATCH x MORPH_WORKERS x MORPH_GA) or --morph-adaptive-batch.
  std::int64_t batch = 0;

  int rank_of(int dp, int tp, int pp) const {
    if (dp < 0 || dp >= plan.dp || tp < 0 || tp >= plan.tp || pp < 0 || pp >= plan.pp)
      throw Error(fmt::format("coordinates dp={} tp={} pp={} are outside plan {}", dp, tp, pp, to_string(plan)));
    return pp * plan.tp * plan.dp + dp * plan.tp + tp;
  }

  // Every group of `kind`, each in group-rank order, in a fixed order of groups.
  std::vector<std::vector<int>> groups(const std::string& kind) const {
    std::vector<std::vector<int>> out;
    if (kind == "tp") {
      for (int pp = 0; pp < plan.pp; ++pp)
        for (int dp = 0; dp < plan.dp; ++dp) {
          out.emplace_back();
          for (int tp = 0; tp < plan.tp; ++tp) out.back().push_back(rank_of(dp, tp, pp));
        }
    } else if (kind == "dp") {
      for (int pp = 0; pp < plan.pp; ++pp)
        for (int tp = 0; tp < plan.tp; ++tp) {
          out.emplace_back();
          for (int dp = 0; dp < plan.dp; ++dp) out.back().push_back(rank_of(dp, tp, pp));
        }
    } else if (kind == "pp") {
      for (int dp = 0; dp < plan.dp; ++dp)
        for (int tp = 0; tp < plan.tp; ++tp) {
          out.emplace_back();
          for (int pp = 0; pp < plan.pp; ++pp) out.back().push_back(rank_of(dp, tp, pp));
        }
    } else {
      throw Error(fmt::format("group kind {} is not one of tp, dp, pp", quote(kind)));
    }
    return out;
  }

  std::vector<int> group(const std::string& kind) const {
    for (std::vector<int>& g : groups(kind))
      for (int r : g)
        if (r == rank) return g;
    throw Error("rank outside its own plan");  // unreachable: rank < world_size
  }
};

RankPlan rank_plan(const Env& env) {
  const std::string text = env_text(env, "MORPH_PLAN");
  if (text.empty())
    throw Error("MORPH_PLAN is not set: run under morphrun in a Morph job (it exports the job's plan), or set it "
                "(\"dp=2 tp=1 pp=1 zero=0 offload=0 gc=0 ga=1 mb=1 mbs=8\")");
  RankPlan p;
  p.plan = parse_plan(text, "MORPH_PLAN");
  validate_plan_shape(p.plan, "MORPH_PLAN");
  p.world_size = env_int(env, "WORLD_SIZE", 1, 1 << 20);
  if (p.world_size != p.plan.gpus())
    throw Error(fmt::format("MORPH_PLAN {} needs {} ranks (dp * tp * pp), WORLD_SIZE is {}", text, p.plan.gpus(),
                            p.world_size));
  p.rank = env_int(env, "RANK", 0, p.world_size - 1);
  p.local_rank = env_int(env, "LOCAL_RANK", 0, p.world_size - 1, 0);
  p.coords = launch::rank_coordinates(p.plan, p.rank);
  const std::pair<const char*, int> given[] = {
      {"MORPH_DP_RANK", p.coords.dp}, {"MORPH_TP_RANK", p.coords.tp}, {"MORPH_PP_RANK", p.coords.pp}};
  for (const auto& [name, expected] : given)
    if (!env_text(env, name).empty() && env_int(env, name, 0, 1 << 20) != expected)
      throw Error(fmt::format("{}={} disagrees with RANK {} under MORPH_PLAN {} (Megatron order: {})", name,
                              env_text(env, name), p.rank, text, expected));
  bool own_batch = false;  // the record lets the job's batch differ from the plan's
  if (const std::string record = env_text(env, "MORPH_RECORD"); !record.empty()) {
    const JobRecord r = parse_admin_comment(record);
    if (!(r.current.plan == p.plan))
      throw Error(fmt::format("MORPH_RECORD's plan ({}) is not MORPH_PLAN ({})", to_string(r.current.plan), text));
    p.predicted_iteration_s = r.current.iter_ms / 1e3;
    own_batch = r.current.heterogeneous() || r.request.adaptive_batch();
  }
  p.batch = p.plan.global_batch();
  if (const std::string batch = env_text(env, "MORPH_GLOBAL_BATCH"); !batch.empty()) {
    p.batch = parse_int(batch, "MORPH_GLOBAL_BATCH", 1, INT64_MAX);
    if (!own_batch && p.batch != p.plan.global_batch())
      throw Error(fmt::format("MORPH_GLOBAL_BATCH={} disagrees with MORPH_PLAN {} (global batch {}; a heterogeneous "
                              "or adaptive-batch job's record, MORPH_RECORD, allows it)",
                              batch, text, p.plan.global_batch()));
  }
  p.model = env_text(env, "MORPH_MODEL");
  p.framework = env_text(env, "MORPH_FRAMEWORK");
  return p;
}

// ---- state specs and checkpoints -------------------------------------------------------

state::Layout layout_arg(const std::string& text) { return state::parse_layout(text, "layout"); }

std::string rules_path(const std::string& rules) {
  if (rules.find('/') != std::string::npos || rules.ends_with(".json")) return rules;
  const char* dir = std::getenv("MORPH_RULES_DIR");
  return fmt::format("{}/{}.json", dir && *dir ? dir : MORPH_PKGDATADIR "/rules", rules);
}

state::StateSpec spec_from_rules(const std::string& rules, const std::vector<std::pair<std::string, std::vector<std::int64_t>>>& tensors,
                                 int layers, std::vector<std::string> optimizer, const std::string& dtype,
                                 int vocab_multiple) {
  const state::Dtype d = state::parse_dtype(to_upper(dtype), "dtype");
  std::vector<state::NamedTensor> named;
  for (const auto& [name, shape] : tensors) named.push_back({name, shape, d});
  state::StateSpec spec =
      state::apply_rules(state::RuleTable::load_file(rules_path(rules)), named, layers, std::move(optimizer), d, vocab_multiple);
  spec.validate();
  return spec;
}

// NumPy's view of a state dtype: kind and item size.
bool same_dtype(const py::array& a, state::Dtype d) {
  const char kind = a.dtype().kind();
  const auto size = static_cast<std::size_t>(a.itemsize());
  if (size != state::dtype_bytes(d)) return false;
  switch (d) {
    case state::Dtype::f64:
    case state::Dtype::f32:
    case state::Dtype::f16: return kind == 'f';
    case state::Dtype::i64:
    case state::Dtype::i32:
    case state::Dtype::i16:
    case state::Dtype::i8: return kind == 'i';
    case state::Dtype::u8: return kind == 'u';
    case state::Dtype::boolean: return kind == 'b';
    case state::Dtype::bf16: return kind == 'u';  // NumPy has none: its bits as uint16 (see checkpoint.py)
  }
  return false;
}

// The buffers of a rank's file tensors, taken from `arrays` under the GIL, so that the I/O
// can run without it. Every array must be C-contiguous, of the tensor's dtype and shape.
std::map<std::string, std::span<std::byte>> buffers(const state::StateSpec& spec, const state::Layout& layout, int rank,
                                                   const py::dict& arrays, bool writable) {
  std::map<std::string, std::span<std::byte>> out;
  for (const state::LocalTensor& t : state::rank_tensors(spec, layout, rank)) {
    const std::string& name = t.decl.name;
    if (!arrays.contains(name))
      throw Error(fmt::format("rank {} of layout {} stores tensor {}; it is not among the tensors given", rank,
                              state::to_string(layout), quote(name)));
    py::handle h = arrays[py::str(name)];
    if (!py::isinstance<py::array>(h))
      throw Error(fmt::format("tensor {}: a NumPy array or a CPU torch.Tensor is needed", quote(name)));
    py::array a = py::reinterpret_borrow<py::array>(h);
    // A load reads into the buffer given: a copy passed in its place would be filled and
    // thrown away, the caller's tensor left as it was. Its hint is a staging copy copied back.
    if (!(a.flags() & py::array::c_style))
      throw Error(writable ? fmt::format("tensor {} is not contiguous: load into a contiguous staging tensor "
                                         "(s = t.contiguous(), or np.ascontiguousarray(a)), then copy it back "
                                         "(t.copy_(s), or a[...] = s); a copy passed instead is filled and dropped",
                                         quote(name))
                           : fmt::format("tensor {} is not contiguous: pass t.contiguous() (libmorph reads its "
                                         "buffer in place)", quote(name)));
    const std::string dtype = py::str(a.dtype());
    if (!a.dtype().attr("isnative").cast<bool>())
      throw Error(writable ? fmt::format("tensor {} has dtype {}, not in this machine's byte order: load into a "
                                         "staging array (s = a.astype(a.dtype.newbyteorder('='))), then copy it "
                                         "back (a[...] = s); a copy passed instead is filled and dropped",
                                         quote(name), dtype)
                           : fmt::format("tensor {} has dtype {}, not in this machine's byte order: pass "
                                         "a.astype(a.dtype.newbyteorder('='))", quote(name), dtype));
    if (!same_dtype(a, t.decl.dtype))
      throw Error(fmt::format("tensor {} has dtype {}{}, the checkpoint stores {}", quote(name), dtype,
                              dtype == "uint16" ? " (a torch.bfloat16's bits)" : "", state::dtype_name(t.decl.dtype)));
    // The shape, not only the byte count: a transposed or flattened buffer would be split
    // along the wrong axis by a reshard.
    const std::vector<std::int64_t> shape(a.shape(), a.shape() + a.ndim());
    if (shape != t.decl.shape)
      throw Error(fmt::format("tensor {} has shape {}, the checkpoint stores {}", quote(name), state::shape_text(shape),
                              state::shape_text(t.decl.shape)));
    if (writable && !a.writeable()) throw Error(fmt::format("tensor {} is read-only", quote(name)));
    void* data = writable ? a.mutable_data() : const_cast<void*>(a.data());
    out[name] = std::span<std::byte>(static_cast<std::byte*>(data), static_cast<std::size_t>(a.nbytes()));
  }
  return out;
}

std::span<std::byte> lookup(const std::map<std::string, std::span<std::byte>>& m, const state::TensorDecl& d) {
  const auto it = m.find(d.name);
  if (it == m.end()) throw Error(fmt::format("no buffer for tensor {}", quote(d.name)));
  return it->second;
}

std::tuple<std::uint64_t, std::uint64_t> write_shard(const std::string& stage, const state::StateSpec& spec,
                                                     const std::string& layout_text, int rank, const py::dict& arrays) {
  const state::Layout layout = layout_arg(layout_text);
  state::check_layout(spec, layout);
  const auto b = buffers(spec, layout, rank, arrays, false);
  state::CheckpointFile f;
  {
    py::gil_scoped_release unlocked;
    f = state::write_rank_file(stage, spec, layout, rank, [&](const state::TensorDecl& d) {
      return std::span<const std::byte>(lookup(b, d));
    });
  }
  return {f.bytes, f.checksum};
}

std::tuple<std::uint64_t, std::uint64_t, std::string> read_shard(const std::string& dir, const state::StateSpec& spec,
                                                                 const std::string& layout_text, int rank,
                                                                 const py::dict& arrays) {
  const state::Layout layout = layout_arg(layout_text);
  const state::CheckpointIndex index = state::index_for_resume(dir, spec, layout);
  const auto b = buffers(spec, layout, rank, arrays, true);
  {
    py::gil_scoped_release unlocked;
    state::read_rank_file(dir, index, rank, [&](const state::TensorDecl& d) { return lookup(b, d); });
  }
  return {index.progress.step, index.progress.samples, index.trainer.dump()};
}

// read_index() refuses an index.json nested deeper than state::kMaxIndexNesting levels,
// and the index object around the trainer's value is one of them: a deeper value saved,
// and the load of its checkpoint failed.
constexpr int kMaxTrainerNesting = state::kMaxIndexNesting - 1;

// The trainer's JSON text (index.json's "trainer"), refused past kMaxTrainerNesting levels
// before it is built.
nlohmann::json trainer_json(const std::string& text) {
  try {
    JsonDepthCheck<nlohmann::json> nesting(
        kMaxTrainerNesting, fmt::format("trainer: JSON nested deeper than {} levels (index.json, which holds it one "
                                        "level down, is read up to {})", kMaxTrainerNesting, state::kMaxIndexNesting));
    nlohmann::json::sax_parse(text, &nesting);
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("trainer: not JSON: {}", e.what()));
  }
}

// Rank 0's stage: created before the other ranks write, committed after.
class Stage {
 public:
  explicit Stage(const std::string& dir) : stage_(dir) {}
  std::string path() const { return stage_.path(); }
  void commit(const state::StateSpec& spec, const std::string& layout_text, std::uint64_t step, std::uint64_t samples,
              const std::string& trainer, const std::vector<std::tuple<std::uint64_t, std::uint64_t>>& files) {
    state::CheckpointIndex index;
    index.layout = layout_arg(layout_text);
    index.spec = spec;
    index.progress = {step, samples};
    index.trainer = trainer_json(trainer);
    if (static_cast<int>(files.size()) != index.layout.ranks())
      throw Error(fmt::format("{} files for layout {} of {} ranks", files.size(), layout_text, index.layout.ranks()));
    for (std::size_t r = 0; r < files.size(); ++r)
      index.files.push_back({static_cast<int>(r), state::rank_file_name(static_cast<int>(r)), std::get<0>(files[r]),
                             std::get<1>(files[r])});
    py::gil_scoped_release unlocked;
    stage_.commit(index, false);  // the ranks checksummed their own synced files
  }

 private:
  state::CheckpointStage stage_;
};

// The stream at `progress` of the dataset order (samples, seed): the last one used, moved
// there when it is of the same order (a trainer asks batch after batch), so that the
// epoch's permutation is built once per epoch rather than once per call. The GIL is held.
// `adaptive`: the batch may have changed since the stream began (an adaptive-batch job
// resumed): `progress` need not be a multiple of it, as the reference trainer reads it.
state::SampleStream& stream_at(std::uint64_t samples, std::uint64_t seed, std::uint64_t global_batch,
                               std::uint64_t progress, bool adaptive) {
  static std::optional<state::SampleStream> last;
  const std::uint64_t unit = adaptive && global_batch > 0 ? 1 : global_batch;
  if (!last || last->order().samples != samples || last->order().seed != seed) {
    last.emplace(state::DatasetOrder{samples, seed}, unit, progress);
  } else {
    last->set_global_batch(unit);
    last->seek(progress);
  }
  last->set_global_batch(global_batch);
  return *last;
}

}  // namespace
}  // namespace morph::python

PYBIND11_MODULE(_native, m) {
  using namespace morph;
  using namespace morph::python;
  m.doc() = "libmorph for the morph package (python/morph): see its modules for the documented API";
  static py::exception<Error> error(m, "MorphError", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      error(e.what());
    } catch (const nlohmann::json::exception& e) {
      error(e.what());
    } catch (const std::filesystem::filesystem_error& e) {
      error(e.what());
    }
  });

  py::class_<RankPlan>(m, "RankPlan")
      .def_property_readonly("dp", [](const RankPlan& p) { return p.plan.dp; })
      .def_property_readonly("tp", [](const RankPlan& p) { return p.plan.tp; })
      .def_property_readonly("pp", [](const RankPlan& p) { return p.plan.pp; })
      .def_property_readonly("zero", [](const RankPlan& p) { return p.plan.zero_stage; })
      .def_property_readonly("offload", [](const RankPlan& p) { return p.plan.offload; })
      .def_property_readonly("gc", [](const RankPlan& p) { return p.plan.checkpointing; })
      .def_property_readonly("ga", [](const RankPlan& p) { return p.plan.ga_steps; })
      .def_property_readonly("micro_batches", [](const RankPlan& p) { return p.plan.micro_batches; })
      .def_property_readonly("micro_batch", [](const RankPlan& p) { return p.plan.micro_batch_size; })
      .def_property_readonly("global_batch", [](const RankPlan& p) { return p.plan.global_batch(); })
      .def_readonly("batch", &RankPlan::batch)
      .def_readonly("rank", &RankPlan::rank)
      .def_readonly("world_size", &RankPlan::world_size)
      .def_readonly("local_rank", &RankPlan::local_rank)
      .def_property_readonly("dp_rank", [](const RankPlan& p) { return p.coords.dp; })
      .def_property_readonly("tp_rank", [](const RankPlan& p) { return p.coords.tp; })
      .def_property_readonly("pp_rank", [](const RankPlan& p) { return p.coords.pp; })
      .def_readonly("model", &RankPlan::model)
      .def_readonly("predicted_iteration_s", &RankPlan::predicted_iteration_s)
      .def_readonly("framework", &RankPlan::framework)
      .def_property_readonly("layout", [](const RankPlan& p) { return state::to_string(state::layout_of(p.plan)); })
      .def_property_readonly("text", [](const RankPlan& p) { return to_string(p.plan); })
      .def("rank_of", &RankPlan::rank_of)
      .def("groups", &RankPlan::groups)
      .def("group", &RankPlan::group);
  m.def("rank_plan", &rank_plan);

  m.def("batch_indices", [](std::uint64_t samples, std::uint64_t seed, std::uint64_t global_batch, std::uint64_t progress,
                            bool adaptive) { return stream_at(samples, seed, global_batch, progress, adaptive).next_batch(); });
  m.def("rank_indices", [](std::uint64_t samples, std::uint64_t seed, std::uint64_t global_batch, std::uint64_t progress,
                           int dp_rank, int dp, bool adaptive) {
    if (dp < 1 || dp_rank < 0 || dp_rank >= dp)
      throw Error(fmt::format("dp_rank {} of dp {}: want 0 <= dp_rank < dp", dp_rank, dp));
    return state::SampleStream::rank_block(stream_at(samples, seed, global_batch, progress, adaptive).next_batch(),
                                           dp_rank, dp);
  });
  m.def("epoch_permutation", [](std::uint64_t samples, std::uint64_t seed, std::uint64_t epoch) {
    if (samples == 0) throw Error("samples: the dataset is empty");
    return state::epoch_permutation({samples, seed}, epoch);
  });

  m.def("metrics_line", [](std::uint64_t step, double seconds, std::uint64_t samples, std::optional<double> loss,
                           std::optional<double> similarity) {
    return launch::format_metrics_line({step, seconds, samples, loss, similarity});
  });
  m.def("signal_number", [](const std::string& name) { return parse_checkpoint_signal(name, "MORPH_CHECKPOINT_SIGNAL"); });

  py::class_<state::StateSpec>(m, "StateSpec")
      .def_readonly("layers", &state::StateSpec::layers)
      .def("to_json", [](const state::StateSpec& s) { return state::to_json(s).dump(); })
      .def("names", [](const state::StateSpec& s) {
        std::vector<std::string> out;
        for (const state::ParamSpec& p : s.params) out.push_back(p.name);
        return out;
      })
      .def("stage_params", [](const state::StateSpec& s, const std::string& layout, int stage) {
        const state::Layout l = layout_arg(layout);
        state::check_layout(s, l);
        if (stage < 0 || stage >= l.pp) throw Error(fmt::format("stage {} of {} pipeline stages", stage, l.pp));
        std::vector<std::string> out;
        for (const state::ParamSpec& p : s.params)
          if (state::stage_owns(s, l, p, stage)) out.push_back(p.name);
        return out;
      })
      .def("layer_range", [](const state::StateSpec& s, const std::string& layout, int stage) {
        const state::Layout l = layout_arg(layout);
        state::check_layout(s, l);
        if (stage < 0 || stage >= l.pp) throw Error(fmt::format("stage {} of {} pipeline stages", stage, l.pp));
        return std::make_pair(state::first_layer(s, l, stage), state::end_layer(s, l, stage));
      })
      .def("padded_rows", [](const state::StateSpec& s, std::int64_t rows, int tp) {
        // Rows up to a tensor dimension's bound: beyond it, rows + vocab_multiple * tp - 1
        // overflowed (2**63 - 1 rows gave < 0).
        if (rows < 0 || rows > state::kMaxDim || tp < 1)
          throw Error(fmt::format("padded_rows({}, {}): want 0 <= rows <= 2^40, tp >= 1", rows, tp));
        return state::padded_rows(s, rows, tp);
      })
      .def("local_tensors", [](const state::StateSpec& s, const std::string& layout, int rank) {
        const state::Layout l = layout_arg(layout);
        state::check_layout(s, l);
        if (rank < 0 || rank >= l.ranks()) throw Error(fmt::format("rank {} of layout {} ({} ranks)", rank, layout, l.ranks()));
        std::vector<std::tuple<std::string, std::vector<std::int64_t>, std::string>> out;
        for (const state::LocalTensor& t : state::rank_tensors(s, l, rank))
          out.emplace_back(t.decl.name, t.decl.shape, to_lower(state::dtype_name(t.decl.dtype)));
        return out;
      })
      .def("check_layout", [](const state::StateSpec& s, const std::string& layout) { state::check_layout(s, layout_arg(layout)); });
  m.def("spec_from_rules", &spec_from_rules);
  m.def("spec_from_json", [](const std::string& text) {
    return state::state_spec_from_json(nlohmann::json::parse(text), "spec");
  });

  py::class_<Stage>(m, "CheckpointStage")
      .def(py::init<const std::string&>())
      .def_property_readonly("path", &Stage::path)
      .def("commit", &Stage::commit);
  m.def("stage_folder", &state::stage_folder);
  m.def("check_trainer_json", [](const std::string& text) { trainer_json(text); });
  m.def("check_world", [](const std::string& layout, int world) {
    const state::Layout l = layout_arg(layout);
    if (l.ranks() != world)
      throw Error(fmt::format("layout {} has {} ranks, the world {}", layout, l.ranks(), world));
  });
  m.def("write_shard", &write_shard);
  m.def("read_shard", &read_shard);
  m.def("read_index", [](const std::string& dir) {
    const state::CheckpointIndex index = state::read_index(dir);
    nlohmann::json files = nlohmann::json::array();
    for (const state::CheckpointFile& f : index.files)
      files.push_back({{"rank", f.rank}, {"name", f.name}, {"bytes", f.bytes}, {"checksum", state::checksum_hex(f.checksum)}});
    return nlohmann::json{{"layout", state::to_string(index.layout)},
                          {"spec", state::to_json(index.spec)},
                          {"progress", {{"step", index.progress.step}, {"samples", index.progress.samples}}},
                          {"trainer", index.trainer},
                          {"files", files}}
        .dump();
  });
}
