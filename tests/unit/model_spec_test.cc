#include "libmorph/model/model_spec.h"

#include <gtest/gtest.h>

#include "libmorph/model/catalog.h"
#include "libmorph/util/error.h"
#include "test_support.h"

namespace morph {
namespace {

TEST(Frenzy, ParameterCountByHand) {
  // W = Vh + l(12h^2 + 13h) = 10*4 + 2*(12*16 + 52) = 40 + 488
  EXPECT_DOUBLE_EQ(frenzy_parameter_count(2, 4, 10), 528);
  // LLaMA-2-7B sizes: 32000*4096 + 32*(12*4096^2 + 13*4096); the real 6.74e9 has a gated MLP.
  EXPECT_DOUBLE_EQ(frenzy_parameter_count(32, 4096, 32000), 6575226880.0);
}

TEST(ModelSpec, ParamsPerLayerAndFlops) {
  ModelSpec m{"m", 2, 4, 2, 8, 10, 528};
  EXPECT_DOUBLE_EQ(m.params_per_layer(), 244);  // 12*16 + 13*4
  // 2 W s + 4 l s^2 h = 2*528*8 + 4*2*64*4
  EXPECT_DOUBLE_EQ(forward_flops_per_sample(m, 8), 8448 + 2048);
}

TEST(InlineModel, ParsesAndDefaultsParams) {
  const ModelSpec m = parse_inline_model("layers=32,hidden=4096,heads=32,seq=4096,vocab=32000", "--model");
  EXPECT_THROW(parse_inline_model(std::string("layers=32,hidden=4096,heads=32,seq=4096,vocab=32000\0,x", 54), "--model"),
               Error);
  EXPECT_EQ(m.layers, 32);
  EXPECT_EQ(m.seq_len, 4096);
  EXPECT_DOUBLE_EQ(m.params, frenzy_parameter_count(32, 4096, 32000));
  const ModelSpec named = parse_inline_model("name=x,layers=2,hidden=8,heads=2,seq=16,params=5000", "--model");
  EXPECT_EQ(named.name, "x");
  EXPECT_DOUBLE_EQ(named.params, 5000);
}

TEST(InlineModel, RejectsBadSpecsNamingTheKey) {
  auto message = [](const char* spec) {
    try {
      parse_inline_model(spec, "--model");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("layers=1000000000000000000000000000000,hidden=8,heads=2,seq=4").find("layers"), std::string::npos);
  EXPECT_NE(message("layers=2,hidden=8,heads=3,seq=4").find("not divisible by heads"), std::string::npos);
  EXPECT_NE(message("layers=2,hidden=8,seq=4").find("missing heads"), std::string::npos);
  EXPECT_NE(message("layers=2,hidden=8,heads=2,seq=4,colour=red").find("unknown key"), std::string::npos);
  EXPECT_NE(message("layers=0,hidden=8,heads=2,seq=4").find("layers"), std::string::npos);
  EXPECT_NE(message("layers=2,hidden=8,heads=2,seq=4,vocab=100,params=10").find("embedding"), std::string::npos);
}

// A params far from what the architecture holds (a count in millions, or of another model)
// passed as long as it exceeded the embedding, and sized every layer's memory from it.
TEST(InlineModel, ParamsMustFitTheLayersItDescribes) {
  auto message = [](const char* spec) {
    try {
      parse_inline_model(spec, "--model");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // LLaMA-2-7B's layers given in millions: (6738 - 0) / 32 = 210.6 per layer, against
  // 12 * 4096^2 + 13 * 4096 = 201,379,840.
  const std::string millions = message("layers=32,hidden=4096,heads=32,seq=4096,params=6738");
  EXPECT_NE(millions.find("params=6738 gives 210.6 parameters per layer"), std::string::npos) << millions;
  EXPECT_NE(millions.find("12h^2 + 13h = 201379840"), std::string::npos) << millions;
  // hidden=8: a dense layer is 12*64 + 13*8 = 872; with vocab 100 the embedding is 800.
  // Two layers of 436 (half) pass, 435 do not; 64 times (55,808) passes, a parameter more does not.
  EXPECT_EQ(message("layers=2,hidden=8,heads=2,seq=4,vocab=100,params=1672"), "no error");
  EXPECT_NE(message("layers=2,hidden=8,heads=2,seq=4,vocab=100,params=1670").find("0.499 times"), std::string::npos);
  EXPECT_EQ(message("layers=2,hidden=8,heads=2,seq=4,vocab=100,params=112416"), "no error");
  EXPECT_NE(message("layers=2,hidden=8,heads=2,seq=4,vocab=100,params=112418").find("must be 0.5 to 64 times"),
            std::string::npos);
  // The shipped catalog, which load_file() checks model by model, passes: its widest
  // layers are Qwen2's, 1.64 times.
  EXPECT_NO_THROW(Catalog::load_file(test::source_dir() + "/share/models.json"));
}

// Issue 10, defect 4: an upper-case key fell into the params branch (VOCAB=50257 made a
// 50,257-parameter model) or was refused for the wrong reason (LAYERS=24).
TEST(InlineModel, KeysInAnyLetterCaseMeanTheSame) {
  const ModelSpec lower = parse_inline_model("layers=24,hidden=2048,heads=16,seq=2048,vocab=50257", "--morph-model");
  for (const char* spec : {"layers=24,hidden=2048,heads=16,seq=2048,VOCAB=50257",
                           "LAYERS=24,HIDDEN=2048,HEADS=16,SEQ=2048,Vocab=50257"}) {
    const ModelSpec m = parse_inline_model(spec, "--morph-model");
    EXPECT_EQ(m.layers, lower.layers) << spec;
    EXPECT_EQ(m.vocab, 50257) << spec;
    EXPECT_DOUBLE_EQ(m.params, lower.params) << spec;
    EXPECT_DOUBLE_EQ(m.params, frenzy_parameter_count(24, 2048, 50257)) << spec;
  }
  EXPECT_THROW(parse_inline_model("layers=2,hidden=8,heads=2,seq=4,Depth=3", "m"), Error);
}

TEST(Catalog, HasTheSevenModelsOfMorphlingTable1) {
  const Catalog c = Catalog::load_file(test::source_dir() + "/share/models.json");
  for (const char* name : {"vit-86m", "roberta-355m", "bert-336m", "t5-1.2b", "gpt2-1.5b", "llama2-7b", "llama-30b"})
    EXPECT_NE(c.find(name), nullptr) << name;
  ASSERT_NE(c.find("LLaMA7B"), nullptr);  // aliases, case-insensitive
  EXPECT_EQ(c.find("LLaMA7B")->name, "llama2-7b");
  EXPECT_NEAR(c.find("gpt2")->params, 1.5e9, 0.1e9);
  EXPECT_GE(c.models().size(), 12u);
}

TEST(Catalog, ResolvesInlineSpecsAndNamesUnknownModels) {
  const Catalog c = Catalog::load_file(test::source_dir() + "/share/models.json");
  EXPECT_EQ(c.resolve("layers=2,hidden=8,heads=2,seq=4", "--model").layers, 2);
  try {
    c.resolve("gpt5", "--model");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown model 'gpt5'"), std::string::npos) << e.what();
  }
}

TEST(Catalog, RejectsMalformedFiles) {
  EXPECT_THROW(Catalog::parse("{", "c.json"), Error);
  EXPECT_THROW(Catalog::parse("{\"models\": 3}", "c.json"), Error);
  EXPECT_THROW(Catalog::parse(R"({"models":[{"name":"a","layers":2,"hidden":8,"heads":2}]})", "c.json"), Error);
  EXPECT_THROW(Catalog::parse(R"({"models":[{"name":"a","layers":"2","hidden":8,"heads":2,"seq":4}]})", "c.json"),
               Error);
  EXPECT_THROW(Catalog::parse(R"({"models":[{"name":"a","layers":2,"hidden":8,"heads":2,"seq":4},
                                            {"name":"b","aliases":["A"],"layers":2,"hidden":8,"heads":2,"seq":4}]})",
                              "c.json"),
               Error);
}

// --morph-model takes a catalog name only as letters, digits, '.', '-' and '_' (and reads
// one with '=' as an inline spec): an entry named otherwise could never be asked for.
TEST(Catalog, RefusesNamesMorphModelCannotGive) {
  const std::string model = R"(,"layers":2,"hidden":8,"heads":2,"seq":4}]})";
  EXPECT_NO_THROW(Catalog::parse(R"({"models":[{"name":"llama3.1-8b_x")" + model, "c.json"));
  for (const char* name : {R"("name":"")", R"("name":"llama 2")", R"("name":"a=b")",
                           R"("name":"a","aliases":["b,c"])"}) {
    try {
      Catalog::parse(std::string(R"({"models":[{)") + name + model, "c.json");
      ADD_FAILURE() << name << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("c.json: models[0] ("), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("is not a model name --morph-model accepts"), std::string::npos)
          << e.what();
    }
  }
}

// kv_heads (grouped-query attention) is optional, at most the heads and dividing them; the
// shipped catalog's GQA models carry theirs.
TEST(Catalog, KeyValueHeadsDivideTheHeads) {
  const std::string head = R"({"models":[{"name":"a","layers":2,"hidden":8,"heads":4,"seq":4)";
  EXPECT_EQ(Catalog::parse(head + "}]}", "c.json").find("a")->query_groups(), 4);
  EXPECT_EQ(Catalog::parse(head + R"(,"kv_heads":2}]})", "c.json").find("a")->query_groups(), 2);
  for (const char* bad : {R"(,"kv_heads":3}]})", R"(,"kv_heads":8}]})", R"(,"kv_heads":-1}]})"}) {
    try {
      Catalog::parse(head + bad, "c.json");
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("c.json: models[0] (a): "), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("kv_heads="), std::string::npos) << e.what();
    }
  }
  const Catalog shipped = Catalog::load_file(test::source_dir() + "/share/models.json");
  EXPECT_EQ(shipped.find("qwen2-7b")->query_groups(), 4);
  EXPECT_EQ(shipped.find("llama2-70b")->query_groups(), 8);
  EXPECT_EQ(shipped.find("llama2-7b")->query_groups(), 32);
}

TEST(Catalog, RefusesKeysItDoesNotKnowNamingThem) {
  const std::string good = R"({"version":1,"models":[{"name":"a","layers":2,"hidden":8,"heads":2,"seq":4,"vocab":10,"source":"x"}]})";
  EXPECT_EQ(Catalog::parse(good, "c.json").find("a")->vocab, 10);
  try {
    Catalog::parse(R"({"models":[{"name":"a","layers":2,"hidden":8,"heads":2,"seq":4,"vocab_size":10}]})", "c.json");
    FAIL() << "a misspelt vocab was ignored";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("c.json: models[0] (a): unknown key 'vocab_size' (known: name,"), std::string::npos)
        << e.what();
  }
  try {
    Catalog::parse(R"({"model":[],"models":[]})", "c.json");
    FAIL() << "a misspelt top-level key was ignored";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown key 'model'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace morph
