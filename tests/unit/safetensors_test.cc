#include "libmorph/state/safetensors.h"

#include <stdlib.h>  // mkdtemp

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <optional>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <xxhash.h>

#include "libmorph/state/checksum.h"
#include "libmorph/state/dtype.h"
#include "libmorph/util/error.h"

namespace morph::state {
namespace {

namespace fs = std::filesystem;

// A fresh folder per test, removed afterwards.
class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "morph_st_XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // A file of: an 8-byte length (the JSON's size unless given), the JSON, data_bytes zeros.
  std::string write_raw(const std::string& name, std::string_view json, std::uint64_t data_bytes,
                        std::optional<std::uint64_t> length_bytes = std::nullopt) const {
    const std::uint64_t length = length_bytes.value_or(json.size());
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((length >> (8 * i)) & 0xff);
    bytes += json;
    bytes.append(data_bytes, '\0');
    write_file(name, bytes);
    return path(name);
  }

  void write_file(const std::string& name, std::string_view bytes) const {
    std::ofstream out(path(name), std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

  // Opening the file fails with a message naming it and containing every fragment.
  void expect_rejected(const std::string& file, std::initializer_list<std::string_view> fragments) const {
    try {
      SafetensorsReader reader(file);
      ADD_FAILURE() << file << " was accepted";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(file), std::string::npos) << message;
      for (std::string_view fragment : fragments) EXPECT_NE(message.find(fragment), std::string::npos) << message;
    }
  }

  fs::path dir_;
};

std::vector<std::uint8_t> pattern_bytes(std::uint64_t bytes, std::uint8_t seed) {
  std::vector<std::uint8_t> out(bytes);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<std::uint8_t>(seed + 7 * i);
  return out;
}

std::string file_bytes(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(Dtype, NamesSizesAndParsing) {
  EXPECT_EQ(dtype_bytes(Dtype::f64), 8u);
  EXPECT_EQ(dtype_bytes(Dtype::bf16), 2u);
  EXPECT_EQ(dtype_bytes(Dtype::boolean), 1u);
  for (Dtype d : {Dtype::f64, Dtype::f32, Dtype::f16, Dtype::bf16, Dtype::i64, Dtype::i32, Dtype::i16, Dtype::i8,
                  Dtype::u8, Dtype::boolean})
    EXPECT_EQ(parse_dtype(dtype_name(d), "t"), d);
  try {
    parse_dtype("f32", "ckpt.safetensors");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ckpt.safetensors: unknown dtype 'f32'"), std::string::npos) << e.what();
  }
}

TEST_F(SafetensorsTest, RoundTripsDtypesShapesScalarsAndEmptyTensors) {
  const std::vector<TensorDecl> decls{
      {"layers.0.w", Dtype::f32, {2, 3}}, {"layers.0.b", Dtype::bf16, {4}}, {"step", Dtype::i64, {}},
      {"empty", Dtype::u8, {0, 5}},       {"mask", Dtype::boolean, {3}},    {"cube", Dtype::f64, {1, 1, 2}},
  };
  const std::string file = path("rt.safetensors");
  std::vector<std::vector<std::uint8_t>> data;
  {
    SafetensorsWriter writer(file, decls, {});
    const auto& tensors = writer.header().tensors;
    ASSERT_EQ(tensors.size(), decls.size());
    // Declared order is data order, from 0, contiguous.
    std::uint64_t cursor = 0;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      EXPECT_EQ(tensors[i].name, decls[i].name);
      EXPECT_EQ(tensors[i].begin, cursor);
      cursor = tensors[i].end;
      data.push_back(pattern_bytes(tensors[i].bytes(), static_cast<std::uint8_t>(i)));
    }
    // Write in reverse order, the first tensor in two ranges.
    for (std::size_t i = tensors.size(); i-- > 1;) writer.write(tensors[i], 0, data[i].data(), data[i].size());
    writer.write(tensors[0], 10, data[0].data() + 10, 14);
    writer.write(tensors[0], 0, data[0].data(), 10);
    writer.finish();
  }
  const SafetensorsReader reader(file);
  const SafetensorsHeader& h = reader.header();
  ASSERT_EQ(h.tensors.size(), decls.size());
  EXPECT_TRUE(h.metadata.empty());
  EXPECT_EQ(reader.file_bytes(), fs::file_size(file));
  for (std::size_t i = 0; i < decls.size(); ++i) {
    const TensorEntry* t = h.find(decls[i].name);
    ASSERT_NE(t, nullptr) << decls[i].name;
    EXPECT_EQ(t->dtype, decls[i].dtype);
    EXPECT_EQ(t->shape, decls[i].shape);
    EXPECT_EQ(t->bytes(), t->elements() * dtype_bytes(t->dtype));
    std::vector<std::uint8_t> back(t->bytes());
    reader.read(*t, 0, back.data(), back.size());
    EXPECT_EQ(back, data[i]) << decls[i].name;
  }
  EXPECT_EQ(h.find("step")->elements(), 1u);
  EXPECT_EQ(h.find("empty")->elements(), 0u);
  EXPECT_EQ(h.find("empty")->bytes(), 0u);
  EXPECT_EQ(h.find("absent"), nullptr);
}

TEST_F(SafetensorsTest, RoundTripsMetadataAndAnEmptyFile) {
  const std::map<std::string, std::string> metadata{{"format", "pt"}, {"step", "1200"}, {"note", "caf\u00e9 \"x\""}};
  const std::string file = path("meta.safetensors");
  SafetensorsWriter writer(file, {{"x", Dtype::i32, {2}}}, metadata);
  const std::int32_t values[2] = {-5, 7};
  writer.write(writer.header().tensors[0], 0, values, sizeof values);
  writer.finish();
  const SafetensorsReader reader(file);
  EXPECT_EQ(reader.header().metadata, metadata);
  std::int32_t back[2] = {};
  reader.read(reader.header().tensors[0], 0, back, sizeof back);
  EXPECT_EQ(back[0], -5);
  EXPECT_EQ(back[1], 7);

  const std::string empty = path("empty.safetensors");
  SafetensorsWriter none(empty, {}, {});
  none.finish();
  const SafetensorsReader empty_reader(empty);
  EXPECT_TRUE(empty_reader.header().tensors.empty());
  EXPECT_EQ(empty_reader.file_bytes(), empty_reader.header().data_offset);
}

TEST_F(SafetensorsTest, ReadsRangesAndRejectsRangesOutsideTheTensor) {
  const std::string file = path("ranges.safetensors");
  const auto data = pattern_bytes(64, 3);
  {
    SafetensorsWriter writer(file, {{"a", Dtype::u8, {16}}, {"b", Dtype::f32, {4, 4}}}, {});
    writer.write(writer.header().tensors[0], 0, data.data(), 16);
    writer.write(writer.header().tensors[1], 0, data.data(), 64);
    EXPECT_THROW(writer.write(writer.header().tensors[0], 8, data.data(), 9), Error);
    writer.finish();
    EXPECT_THROW(writer.write(writer.header().tensors[0], 0, data.data(), 1), Error);
  }
  const SafetensorsReader reader(file);
  const TensorEntry& b = *reader.header().find("b");
  std::uint8_t middle[10] = {};
  reader.read(b, 20, middle, sizeof middle);
  EXPECT_EQ(0, std::memcmp(middle, data.data() + 20, sizeof middle));
  reader.read(b, 64, middle, 0);  // an empty range at the end is fine
  EXPECT_THROW(reader.read(b, 60, middle, 5), Error);
  EXPECT_THROW(reader.read(b, 65, middle, 0), Error);
  EXPECT_THROW(reader.read(b, UINT64_MAX, middle, 2), Error);  // offset + bytes wraps
  TensorEntry forged = b;  // a copy of an entry still reads
  reader.read(forged, 0, middle, sizeof middle);
  EXPECT_EQ(0, std::memcmp(middle, data.data(), sizeof middle));
  forged.end += 1000;
  EXPECT_THROW(reader.read(forged, 0, middle, 1), Error);
  forged.name = "c";
  EXPECT_THROW(reader.read(forged, 0, middle, 1), Error);
}

TEST_F(SafetensorsTest, AlignsTheDataSectionByPaddingTheHeaderWithSpaces) {
  for (std::size_t name_chars = 1; name_chars <= 9; ++name_chars) {
    const std::string file = path("align.safetensors");
    SafetensorsWriter writer(file, {{std::string(name_chars, 'n'), Dtype::u8, {3}}}, {});
    const std::uint64_t data_offset = writer.header().data_offset;
    EXPECT_EQ(data_offset % 8, 0u) << name_chars;
    writer.finish();
    const std::string bytes = file_bytes(file);
    ASSERT_EQ(bytes.size(), data_offset + 3);
    const std::string json = bytes.substr(8, data_offset - 8);
    EXPECT_EQ(json.front(), '{');
    EXPECT_EQ(json.find_last_not_of(' '), json.rfind('}'));
    EXPECT_EQ(SafetensorsReader(file).header().data_offset, data_offset);
  }
}

TEST_F(SafetensorsTest, WriterWithoutFinishLeavesNoFile) {
  const std::string file = path("partial.safetensors");
  {
    SafetensorsWriter writer(file, {{"a", Dtype::f16, {8}}}, {});
    EXPECT_TRUE(fs::exists(file));
  }
  EXPECT_FALSE(fs::exists(file));
  EXPECT_THROW(SafetensorsWriter(file, {{"a", Dtype::u8, {1}}, {"a", Dtype::u8, {1}}}, {}), Error);
  EXPECT_THROW(SafetensorsWriter(file, {{"a", Dtype::u8, {-1}}}, {}), Error);
  EXPECT_THROW(SafetensorsWriter(file, {{"a", Dtype::u8, {1LL << 40, 1LL << 40}}}, {}), Error);
  EXPECT_THROW(SafetensorsWriter(file, {{"__metadata__", Dtype::u8, {1}}}, {}), Error);
  EXPECT_THROW(SafetensorsWriter(file, {{"a", Dtype::u8, {1}}}, {{"k", "\xff"}}), Error);  // not UTF-8
  EXPECT_FALSE(fs::exists(file));
  EXPECT_THROW(SafetensorsWriter(path("no/such/dir.safetensors"), {}, {}), Error);
}

TEST_F(SafetensorsTest, RejectsFilesTooShortTruncatedOrWithBadHeaderLengths) {
  write_file("tiny", std::string_view("\x02\0\0\0\0", 5));
  expect_rejected(path("tiny"), {"5 bytes, shorter than the 8-byte header length"});
  expect_rejected(write_raw("trunc", "{}", 0, 1000), {"header length 1000", "truncated"});
  expect_rejected(write_raw("huge", "{}", 0, kMaxHeaderBytes + 1), {"exceeds the limit"});
  expect_rejected(write_raw("zero", "", 8, 0), {"header length 0 is too small"});
  expect_rejected(path("missing"), {"cannot open"});
  expect_rejected(dir_.string(), {"not a regular file"});
}

TEST_F(SafetensorsTest, RejectsHeadersThatAreNotAJsonObject) {
  expect_rejected(write_raw("garbage", "not json", 0), {"not valid JSON"});
  expect_rejected(write_raw("array", "[1, 2]", 0), {"must be a JSON object, got array"});
  expect_rejected(write_raw("trailing", "{} x", 0), {"not valid JSON"});
  expect_rejected(write_raw("deep", R"({"a": {"shape": [[1]]}})", 0), {"nested too deeply"});
  // Text after a NUL byte would be invisible to the JSON parser (a duplicate hides there).
  expect_rejected(write_raw("nul",
                            std::string(R"({"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}})") + '\0' +
                                R"(, "a": {"dtype": "U8"})",
                            1),
                  {"header holds a NUL byte at offset 60"});
  const std::string unterminated = "{\"" + std::string(5000, 'a');
  try {
    SafetensorsReader reader(write_raw("long", unterminated, 0));
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_LT(std::string(e.what()).size(), 500u);  // the bad token is not echoed whole
  }
}

TEST_F(SafetensorsTest, RejectsBadTensorFields) {
  expect_rejected(write_raw("dtype", R"({"t.w": {"dtype": "F8", "shape": [1], "data_offsets": [0, 1]}})", 1),
                  {"tensor 't.w'", "unknown dtype 'F8'"});
  expect_rejected(write_raw("neg", R"({"t": {"dtype": "U8", "shape": [2, -1], "data_offsets": [0, 0]}})", 0),
                  {"tensor 't'", "shape dim -1 is negative"});
  expect_rejected(write_raw("float", R"({"t": {"dtype": "U8", "shape": [1.0], "data_offsets": [0, 1]}})", 1),
                  {"tensor 't'", "must be integers"});
  expect_rejected(write_raw("absurd",
                            R"({"t": {"dtype": "F32", "shape": [1099511627776, 1099511627776], )"
                            R"("data_offsets": [0, 4]}})",
                            4),
                  {"tensor 't'", "[1099511627776, 1099511627776] of F32 overflows"});
  expect_rejected(write_raw("missing", R"({"t": {"dtype": "U8", "shape": [1]}})", 1), {"missing \"data_offsets\""});
  expect_rejected(
      write_raw("extra", R"({"t": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1], "x": 1}})", 1),
      {"unknown field 'x'"});
  expect_rejected(write_raw("offsets", R"({"t": {"dtype": "U8", "shape": [1], "data_offsets": [0]}})", 1),
                  {"\"data_offsets\" must be an array [begin, end]"});
  expect_rejected(write_raw("negoff", R"({"t": {"dtype": "U8", "shape": [1], "data_offsets": [-1, 0]}})", 1),
                  {"non-negative integers"});
  expect_rejected(write_raw("notobj", R"({"t": 3})", 0), {"tensor 't'", "got number"});
}

TEST_F(SafetensorsTest, RejectsOffsetsOutsideOrNotMatchingTheData) {
  expect_rejected(write_raw("past", R"({"t": {"dtype": "U8", "shape": [16], "data_offsets": [0, 16]}})", 8),
                  {"tensor 't'", "[0, 16] go past the end of the data section (8 bytes)"});
  expect_rejected(write_raw("reversed", R"({"t": {"dtype": "U8", "shape": [4], "data_offsets": [8, 4]}})", 8),
                  {"tensor 't'", "[8, 4] begin after they end"});
  const std::string mismatch =
      write_raw("mismatch", R"({"layers.0.w": {"dtype": "F32", "shape": [5, 6], "data_offsets": [0, 100]}})", 100);
  expect_rejected(mismatch, {mismatch + ": tensor 'layers.0.w': data_offsets [0, 100] do not match shape [5, 6] of F32 "
                                        "(120 bytes)"});
  expect_rejected(write_raw("size", R"({"t": {"dtype": "U8", "shape": [8], "data_offsets": [0, 8]}})", 16),
                  {"data section is 16 bytes but the tensors cover 8 (size mismatch)"});
  expect_rejected(write_raw("nodata", "{}", 4), {"data section is 4 bytes but the tensors cover 0"});
}

TEST_F(SafetensorsTest, RejectsOverlapsAndHoles) {
  expect_rejected(write_raw("overlap",
                            R"({"a": {"dtype": "U8", "shape": [8], "data_offsets": [0, 8]},)"
                            R"( "b": {"dtype": "U8", "shape": [8], "data_offsets": [4, 12]}})",
                            12),
                  {"tensor 'b'", "[4, 12] overlap tensor 'a' [0, 8]"});
  expect_rejected(write_raw("inside",
                            R"({"a": {"dtype": "U8", "shape": [8], "data_offsets": [0, 8]},)"
                            R"( "z": {"dtype": "U8", "shape": [0], "data_offsets": [4, 4]}})",
                            8),
                  {"tensor 'z'", "overlap tensor 'a'"});
  expect_rejected(write_raw("hole",
                            R"({"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]},)"
                            R"( "b": {"dtype": "U8", "shape": [4], "data_offsets": [8, 12]}})",
                            12),
                  {"tensor 'b'", "leave a hole after tensor 'a', which ends at 4"});
  expect_rejected(write_raw("start", R"({"b": {"dtype": "U8", "shape": [4], "data_offsets": [4, 8]}})", 8),
                  {"tensor 'b'", "hole at the start"});
}

TEST_F(SafetensorsTest, RejectsDuplicatesAndBadMetadata) {
  expect_rejected(write_raw("dup",
                            R"({"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]},)"
                            R"( "a": {"dtype": "U8", "shape": [1], "data_offsets": [1, 2]}})",
                            2),
                  {"duplicate tensor name 'a'"});
  expect_rejected(
      write_raw("dupkey", R"({"a": {"dtype": "U8", "dtype": "I8", "shape": [1], "data_offsets": [0, 1]}})", 1),
      {"duplicate key 'dtype' in 'a'"});
  expect_rejected(write_raw("metaval", R"({"__metadata__": {"step": 12}})", 0),
                  {"__metadata__ 'step' must be a string, got number"});
  expect_rejected(write_raw("metaobj", R"({"__metadata__": ["x"]})", 0), {"\"__metadata__\" must be an object"});
  expect_rejected(write_raw("metadup", R"({"__metadata__": {"k": "1", "k": "2"}})", 0),
                  {"duplicate key 'k' in '__metadata__'"});
}

TEST(ParseSafetensors, RejectsAnIncompletePrefix) {
  std::vector<std::uint8_t> prefix{16, 0, 0, 0, 0, 0, 0, 0, '{', '}'};
  try {
    parse_safetensors(prefix, 100, "mem");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("mem: header incomplete: 2 of its 16 bytes given"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(parse_safetensors(std::span(prefix.data(), 4), 100, "mem"), Error);
  prefix[0] = 2;
  EXPECT_EQ(parse_safetensors(prefix, 10, "mem").data_offset, 10u);
}

// nlohmann's callback parser is quadratic in the number of keys of an object; the parser
// must not be (50k tensors took minutes that way).
TEST(ParseSafetensors, ManyTensorsParseInLinearTime) {
  constexpr int kTensors = 50000;
  std::string json = "{";
  for (int i = 0; i < kTensors; ++i)
    json += fmt::format(R"({}"layers.{}.w":{{"dtype":"U8","shape":[2],"data_offsets":[{},{}]}})", i == 0 ? "" : ",",
                        i, 2 * i, 2 * i + 2);
  json += "}";
  std::vector<std::uint8_t> prefix(8);
  for (int i = 0; i < 8; ++i) prefix[i] = static_cast<std::uint8_t>((json.size() >> (8 * i)) & 0xff);
  prefix.insert(prefix.end(), json.begin(), json.end());
  const auto start = std::chrono::steady_clock::now();
  const SafetensorsHeader h = parse_safetensors(prefix, prefix.size() + 2 * kTensors, "many");
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(h.tensors.size(), static_cast<std::size_t>(kTensors));
  EXPECT_EQ(h.tensors.back().end, 2u * kTensors);
  EXPECT_LT(elapsed.count(), 15.0);
}

TEST(Checksum, KnownAnswersAndStreaming) {
  EXPECT_EQ(Checksum().digest(), XXH3_64bits("", 0));
  Checksum abc;
  abc.update("abc", 3);
  EXPECT_EQ(abc.digest(), XXH3_64bits("abc", 3));
  EXPECT_EQ(checksum_hex(XXH3_64bits("abc", 3)).size(), 16u);
  EXPECT_EQ(checksum_hex(0x1a), "000000000000001a");

  const auto data = pattern_bytes(100000, 1);
  Checksum pieces;
  for (std::size_t at = 0; at < data.size();) {
    const std::size_t step = std::min<std::size_t>(data.size() - at, 1 + at % 4099);
    pieces.update(data.data() + at, step);
    at += step;
  }
  pieces.update(nullptr, 0);
  EXPECT_EQ(pieces.digest(), XXH3_64bits(data.data(), data.size()));
}

TEST_F(SafetensorsTest, FileChecksumEqualsInMemory) {
  const auto data = pattern_bytes((8u << 20) + 12345, 9);  // more than one 8 MiB block
  write_file("blob", std::string_view(reinterpret_cast<const char*>(data.data()), data.size()));
  EXPECT_EQ(file_checksum(path("blob")), XXH3_64bits(data.data(), data.size()));
  write_file("void", "");
  EXPECT_EQ(file_checksum(path("void")), XXH3_64bits("", 0));
  EXPECT_THROW(file_checksum(path("missing")), Error);
  EXPECT_THROW(file_checksum(dir_.string()), Error);
}

}  // namespace
}  // namespace morph::state
