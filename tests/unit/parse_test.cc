#include "libmorph/util/parse.h"

#include <gtest/gtest.h>

#include "libmorph/util/csv.h"
#include "libmorph/util/error.h"
#include "libmorph/util/hostlist.h"

namespace morph {
namespace {

TEST(ParseInt, AcceptsIntegersInRange) {
  EXPECT_EQ(parse_int("42", "x", 0, 100), 42);
  EXPECT_EQ(parse_int(" +7 ", "x", 0, 100), 7);
  EXPECT_EQ(parse_int("-3", "x", -5, 5), -3);
}

TEST(ParseInt, RejectsGarbageOverflowAndRange) {
  EXPECT_THROW(parse_int("", "x", 0, 10), Error);
  EXPECT_THROW(parse_int("12abc", "x", 0, 100), Error);
  EXPECT_THROW(parse_int("1.5", "x", 0, 100), Error);
  EXPECT_THROW(parse_int("99999999999999999999999", "x", 0, 100), Error);
  EXPECT_THROW(parse_int("-3", "x", 1, 100), Error);
  EXPECT_THROW(parse_int("+-5", "x", -10, 10), Error);  // one sign
  EXPECT_THROW(parse_int("+", "x", -10, 10), Error);
  try {
    parse_int("101", "--batch", 1, 100);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--batch"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("101"), std::string::npos);
  }
}

TEST(ParseDouble, RejectsNonFiniteAndTrailingGarbage) {
  EXPECT_DOUBLE_EQ(parse_double("6.7e9", "x", 0, 1e12), 6.7e9);
  EXPECT_THROW(parse_double("nan", "x", 0, 1), Error);
  EXPECT_THROW(parse_double("inf", "x", 0, 1e308), Error);
  EXPECT_THROW(parse_double("1e400", "x", 0, 1e308), Error);
  EXPECT_THROW(parse_double("2x", "x", 0, 10), Error);
  EXPECT_THROW(parse_double("+-2", "x", -10, 10), Error);
  EXPECT_DOUBLE_EQ(parse_double("+2.5", "x", -10, 10), 2.5);
}

TEST(Quote, ShortensLongAndHidesControlCharacters) {
  const std::string q = quote(std::string(4096, 'A'));
  EXPECT_LT(q.size(), 80u);
  EXPECT_NE(q.find("4096 bytes"), std::string::npos);
  EXPECT_EQ(quote("a\nb"), "'a?b'");
}

TEST(KeyValues, SplitsAndRejectsMissingEquals) {
  const auto kv = parse_key_values("a=1, b = 2", ',', "spec");
  ASSERT_EQ(kv.size(), 2u);
  EXPECT_EQ(kv[1].first, "b");
  EXPECT_EQ(kv[1].second, "2");
  EXPECT_THROW(parse_key_values("a=1,b", ',', "spec"), Error);
  EXPECT_THROW(parse_key_values("a=1,,b=2", ',', "spec"), Error);
  EXPECT_THROW(parse_key_values("=1", ',', "spec"), Error);
  EXPECT_THROW(parse_key_values("a=1,b=2,a=3", ',', "spec"), Error);
}

TEST(Hostlist, ExpandsRangesKeepingPadding) {
  const auto hosts = expand_hostlist("node[01-03,10],login", "NodeName");
  ASSERT_EQ(hosts.size(), 5u);
  EXPECT_EQ(hosts[0], "node01");
  EXPECT_EQ(hosts[2], "node03");
  EXPECT_EQ(hosts[3], "node10");
  EXPECT_EQ(hosts[4], "login");
}

TEST(Hostlist, RejectsMalformedLists) {
  EXPECT_THROW(expand_hostlist("node[1-", "x"), Error);
  EXPECT_THROW(expand_hostlist("node[3-1]", "x"), Error);
  EXPECT_THROW(expand_hostlist("node[1-999999]", "x"), Error);
  EXPECT_THROW(expand_hostlist("no$de", "x"), Error);
  // Review of the configuration: a sign was taken, and counted in the width ("+1" -> 01).
  EXPECT_THROW(expand_hostlist("node[+1-2]", "x"), Error);
  EXPECT_THROW(expand_hostlist("node[1-+2]", "x"), Error);
  EXPECT_THROW(expand_hostlist("node[-1]", "x"), Error);
  EXPECT_THROW(expand_hostlist("a[1-2]b[1-2]", "x"), Error);
}

TEST(Csv, StripsBomAndNamesLineOfBadRow) {
  const CsvTable t = CsvTable::parse("\xEF\xBB\xBF" "a,b\n1,2\r\n\n3,x\n", "t.csv");
  ASSERT_EQ(t.rows(), 2u);
  EXPECT_EQ(t.integer(0, "b", 0, 10), 2);
  try {
    t.number(1, "b", 0, 10);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("t.csv:4"), std::string::npos) << e.what();
  }
  EXPECT_THROW(t.text(0, "missing"), Error);
}

TEST(Csv, RejectsWrongFieldCountEmptyAndBinary) {
  EXPECT_THROW(CsvTable::parse("a,b\n1,2,3\n", "t.csv"), Error);
  EXPECT_THROW(CsvTable::parse("", "t.csv"), Error);
  EXPECT_THROW(CsvTable::parse(std::string("a,b\n1,\0", 7), "t.csv"), Error);
  EXPECT_THROW(CsvTable::read_file("/nonexistent/file.csv"), Error);
}

TEST(Csv, RefusesAColumnNamedTwice) {
  try {
    CsvTable::parse("job,gpus,gpus\n1,2,3\n", "t.csv");
    FAIL() << "the second gpus column was ignored";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "t.csv:1: column 'gpus' appears twice in the header (columns 2 and 3)");
  }
}

}  // namespace
}  // namespace morph
