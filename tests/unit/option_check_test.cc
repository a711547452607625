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
  ASSERT_EQ(morph_option_count, 9);
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
           {"plan", "dp=4,tp=2,zero=1"}})
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
           {"batch", "-3", "'-3' is not an integer"},
           {"batch", "0", "out of range"},
           {"batch", "99999999999999999999999", "out of range"},
           {"batch", "8;reboot", "not an integer"},
           {"batch", "", "empty value"},
           {"seq", "99999999999", "out of range"},
           {"model", "$(reboot)", "not a model name"},
           {"model", "a b", "spaces or control characters"},
           {"model", std::string(4096, 'A'), "4096 bytes is too long"},
           {"model", "layers=1000000000000000000000000000000,hidden=8,heads=2,seq=4", "layers="},
           {"model", "layers=2,hidden=8,heads=3,seq=4", "not divisible by heads=3"},
           {"model", "layers=2,hidden=8,seq=4", "missing heads="},
           {"model", "layers=2,layers=3,hidden=8,heads=2,seq=4", "layers given twice"},
           {"model", "layers=2,hidden=8,heads=2,seq=4,colour=red", "unknown key 'colour'"},
           {"model", "layers=2,hidden=8,heads=2,seq=4,vocab=100,params=10", "does not exceed the embedding"},
           {"model", "layers=2,hidden=8,heads=2,seq=4,params=nan", "params='nan' is not a number"},
           {"sla", "sometimes", "not guaranteed or best-effort"},
           {"plans", "dp,warp", "unknown plan feature 'warp'"},
           {"gpus", "4-2", "MAX below MIN"},
           {"gpus", "0", "out of range"},
           {"gpus", "2-", "not an integer"},
           {"gpu-type", "a100,,v100", "not a GPU type name"},
           {"framework", "jax", "not megatron, deepspeed or torch"},
           {"plan", "dp=4,warp=1", "unknown plan key 'warp'"},
           {"plan", "dp=x", "'x' is not an integer"},
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

TEST(OptionCheck, MessagesAreAlwaysTerminated) {
  char tiny[8];
  EXPECT_NE(morph_check_option("batch", "abc", tiny, sizeof tiny), 0);
  EXPECT_LT(std::string(tiny).size(), sizeof tiny);
}

}  // namespace
