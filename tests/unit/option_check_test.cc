// The C checks of --morph-* values (libmorph/request/option_check.h).
#include "libmorph/request/option_check.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace {

// "" when accepted, else the message.
std::string check(const char* option, const std::string& value) {
  char error[256];
  return morph_check_option(option, value.c_str(), error, sizeof error) == 0 ? "" : error;
}

TEST(OptionCheck, TableHasEveryOptionOnceWithAnEnvironmentName) {
  ASSERT_EQ(morph_option_count, 11);
  for (int i = 0; i < morph_option_count; ++i) {
    EXPECT_EQ(morph_option_index(morph_option_table[i].name), i);
    EXPECT_EQ(std::string(morph_option_table[i].env).rfind("MORPH_REQUEST_", 0), 0u);
  }
  EXPECT_EQ(morph_option_index("colour"), -1);
}

TEST(OptionCheck, AcceptsGoodValues) {
  for (auto [option, value] : std::vector<std::pair<const char*, const char*>>{
           {"model", "llama2-7b"}, {"model", "layers=32,hidden=4096,heads=32,seq=4096,vocab=32000"},
           {"model", "name=x,layers=2,hidden=8,heads=2,seq=4,params=5000"}, {"batch", "512"}, {"batch", "+8"},
           {"seq", "2048"}, {"sla", "guaranteed"}, {"sla", "Best-Effort"}, {"plans", "dp,zero,gc"}, {"plans", "ALL"},
           {"gpus", "8"}, {"gpus", "2-16"}, {"gpu-type", "a100-80g,v100"}, {"framework", "deepspeed"},
           {"plan", "dp=4,tp=2,zero=1"}, {"iterations", "1"}, {"iterations", "1000000000000"},
           {"adaptive-batch", "256:4096"}, {"adaptive-batch", "64:64"}})
    EXPECT_EQ(check(option, value), "") << option << "=" << value;
}

TEST(OptionCheck, RefusesBadValuesNamingTheOption) {
  struct Case {
    const char* option;
    std::string value;
    const char* says;
  };
  for (const Case& c : std::vector<Case>{
           {"batch", "abc", "--morph-batch: 'abc' is not an integer"},
           {"batch", "-3", "--morph-batch: '-3' is out of range [1, "},
           {"batch", "-", "'-' is not an integer"},
           {"batch", "0", "out of range"},
           {"batch", "99999999999999999999999", "out of range"},
           {"batch", "8;reboot", "not an integer"},
           {"batch", "", "empty value"},
           {"seq", "99999999999", "out of range"},
           {"iterations", "0", "--morph-iterations: '0' is out of range [1, 1000000000000]"},
           {"iterations", "1000000000001", "--morph-iterations: '1000000000001' is out of range"},
           {"iterations", "1e6", "--morph-iterations: '1e6' is not an integer"},
           {"iterations", "-5", "--morph-iterations: '-5' is out of range [1, 1000000000000]"},
           {"adaptive-batch", "4096:256", "--morph-adaptive-batch: '4096:256' has MAX below MIN"},
           {"adaptive-batch", "256", "'256' is not MIN:MAX"},
           {"adaptive-batch", "0:64", "'0:64' is not MIN:MAX with batch sizes from 1 to 1073741824"},
           {"adaptive-batch", "64:x", "not MIN:MAX"},
           {"model", "$(reboot)", "not a model name"},
           {"model", "a b", "spaces or control characters"},
           {"model", std::string(4096, 'A'), "4096 bytes is too long"},
           {"model", "layers=1000000000000000000000000000000,hidden=8,heads=2,seq=4", "layers="},
           {"model", "layers=2,hidden=8,heads=3,seq=4", "not divisible by heads=3"},
           {"model", "layers=2,hidden=8,seq=4", "missing heads="},
           {"model", "layers=2,layers=3,hidden=8,heads=2,seq=4", "layers given twice"},
           {"model", "layers=2,hidden=8,heads=2,seq=4,colour=red", "unknown key 'colour'"},
           {"model", "layers=2,hidden=8,heads=2,seq=4,vocab=100,params=10", "does not exceed the embedding"},
           {"model", "layers=2,hidden=8,heads=2,seq=4,params=nan", "params='nan' is not a decimal number"},
           // Issue 10, defect 10: strtod took hexadecimal floats, which the documentation refuses.
           {"model", "layers=2,hidden=8,heads=2,seq=4,params=0x1p40", "params='0x1p40' is not a decimal number"},
           {"model", "layers=2,hidden=8,heads=2,seq=4,params=inf", "not a decimal number"},
           {"model", "layers=2,hidden=8,heads=2,seq=4,params=1e", "not a decimal number"},
           {"sla", "sometimes", "not guaranteed or best-effort"},
           {"plans", "dp,warp", "unknown plan feature 'warp'"},
           {"gpus", "4-2", "MAX below MIN"},
           {"gpus", "0", "out of range"},
           // Issue 10, defect 10: the message quoted '' instead of the value.
           {"gpus", "2-", "'2-' is not MIN or MIN-MAX"},
           {"gpus", "-4", "'-4' is not MIN or MIN-MAX"},
           {"gpus", "4-x", "'4-x' is not MIN or MIN-MAX"},
           {"gpus", "65537", "out of range [1, 65536]"},
           {"gpu-type", "a100,,v100", "not a GPU type name"},
           {"framework", "jax", "not megatron, deepspeed or torch"},
           {"plan", "dp=4,warp=1", "unknown plan key 'warp'"},
           {"plan", "dp=x", "'x' is not an integer"},
           // Each key within what a plan can be (all of 0..2^20 passed, and job_submit then
           // said only that no plan matched).
           {"plan", "zero=7", "zero='7' is out of range [0, 3]"},
           {"plan", "offload=2", "offload='2' is out of range [0, 1]"},
           {"plan", "dp=0", "dp='0' is out of range [1, 1048576]"},
           {"plan", "dp=4,gc=3", "gc='3' is out of range [0, 1]"},
       }) {
    const std::string message = check(c.option, c.value);
    EXPECT_NE(message.find(c.says), std::string::npos) << c.option << "=" << c.value.substr(0, 40) << ": " << message;
    EXPECT_EQ(message.rfind(std::string("--morph-") + c.option + ":", 0), 0u) << message;
    EXPECT_LT(message.size(), 200u);
  }
}

TEST(OptionCheck, RequestNeedsModelAndBatch) {
  std::vector<const char*> values(static_cast<std::size_t>(morph_option_count), nullptr);
  char error[256];
  EXPECT_NE(morph_check_request(values.data(), error, sizeof error), 0);
  EXPECT_NE(std::string(error).find("--morph-model: missing"), std::string::npos);
  values[static_cast<std::size_t>(morph_option_index("model"))] = "gpt2";
  EXPECT_NE(morph_check_request(values.data(), error, sizeof error), 0);
  EXPECT_NE(std::string(error).find("--morph-batch: missing"), std::string::npos);
  values[static_cast<std::size_t>(morph_option_index("batch"))] = "16";
  EXPECT_EQ(morph_check_request(values.data(), error, sizeof error), 0);
  values[static_cast<std::size_t>(morph_option_index("seq"))] = "x";
  EXPECT_NE(morph_check_request(values.data(), error, sizeof error), 0);
}

// Issue 10, defects 4 and 10: one parser of inline model specifications and of integers,
// with one rule for letter case, for the plugins, the records and the morph command.
TEST(OptionCheck, ModelSpecKeysAreCaseInsensitiveAndParsedOnce) {
  morph_model_values v;
  char error[256];
  ASSERT_EQ(morph_parse_model_spec("--morph-model", "LAYERS=24,Hidden=2048,heads=16,SEQ=2048,VOCAB=50257", &v, error,
                                   sizeof error),
            0)
      << error;
  EXPECT_EQ(v.layers, 24);
  EXPECT_EQ(v.hidden, 2048);
  EXPECT_EQ(v.heads, 16);
  EXPECT_EQ(v.seq, 2048);
  EXPECT_EQ(v.vocab, 50257);
  EXPECT_EQ(v.params, 0);
  ASSERT_EQ(morph_parse_model_spec("m", "layers=2,hidden=8,heads=2,seq=4,PARAMS=2.5e3,Name=tiny", &v, error, sizeof error),
            0);
  EXPECT_EQ(v.params, 2500);
  EXPECT_STREQ(v.name, "tiny");
  EXPECT_NE(morph_parse_model_spec("m", "layers=2,hidden=8,heads=2,seq=4,Colour=red", &v, error, sizeof error), 0);
  EXPECT_NE(std::string(error).find("unknown key 'Colour'"), std::string::npos) << error;
}

TEST(OptionCheck, IntegersAreDecimalWithoutSpaces) {
  std::int64_t v = 0;
  char error[256];
  EXPECT_EQ(morph_parse_integer("--batch", "+16", 1, 100, &v, error, sizeof error), 0);
  EXPECT_EQ(v, 16);
  for (const char* bad : {" 16", "16 ", "0x10", "1e3", "16.0", "-16", "-0", "+", ""}) {
    EXPECT_NE(morph_parse_integer("--batch", bad, 1, 100, &v, error, sizeof error), 0) << bad;
    EXPECT_EQ(std::string(error).rfind("--batch: ", 0), 0u) << error;
  }
  EXPECT_NE(morph_parse_integer("--zero", "-0", 0, 3, &v, error, sizeof error), 0) << "no sign but '+'";
  EXPECT_NE(morph_parse_integer("--batch", "101", 1, 100, &v, error, sizeof error), 0);
  EXPECT_NE(std::string(error).find("out of range [1, 100]"), std::string::npos) << error;
}

TEST(OptionCheck, MessagesAreAlwaysTerminated) {
  char tiny[8];
  EXPECT_NE(morph_check_option("batch", "abc", tiny, sizeof tiny), 0);
  EXPECT_LT(std::string(tiny).size(), sizeof tiny);
}

}  // namespace
