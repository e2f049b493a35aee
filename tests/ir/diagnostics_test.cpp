#include "ir/diagnostics.h"

#include <exception>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

namespace sparsegen {
namespace {

TEST(Diagnostics, SourceLocStr) {
  EXPECT_EQ((SourceLoc{"a.mtx", 12, -1}.str()), "a.mtx:12");
  EXPECT_EQ((SourceLoc{"a.bin", 0, 123}.str()), "a.bin (byte 123)");
  EXPECT_EQ((SourceLoc{"a.bin", 0, 0}.str()), "a.bin (byte 0)");
  EXPECT_EQ((SourceLoc{"a.mtx", 0, -1}.str()), "a.mtx");
  EXPECT_EQ(SourceLoc{"a.mtx"}.str(), "a.mtx");
  // A line wins over a byte offset.
  EXPECT_EQ((SourceLoc{"a.mtx", 3, 40}.str()), "a.mtx:3");
  EXPECT_EQ(SourceLoc{}.str(), "");
}

TEST(Diagnostics, SourceLocDefaults) {
  const SourceLoc loc;
  EXPECT_EQ(loc.file, "");
  EXPECT_EQ(loc.line, 0);
  EXPECT_EQ(loc.byte_offset, -1);
}

TEST(Diagnostics, UserErrorPrefixesLocation) {
  const UserError e(SourceLoc{"m.mtx", 7, -1}, "expected 3 fields, found 2");
  EXPECT_STREQ(e.what(), "m.mtx:7: expected 3 fields, found 2");
  EXPECT_EQ(e.loc().file, "m.mtx");
  EXPECT_EQ(e.loc().line, 7);

  const UserError b(SourceLoc{"m.bin", 0, 16}, "truncated header");
  EXPECT_STREQ(b.what(), "m.bin (byte 16): truncated header");
  EXPECT_EQ(b.loc().byte_offset, 16);
}

TEST(Diagnostics, UserErrorWithoutLocation) {
  // An empty location adds no ": " prefix.
  const UserError empty_loc(SourceLoc{}, "bad combination");
  EXPECT_STREQ(empty_loc.what(), "bad combination");

  const UserError flag("--dtype: expected fp32, fp16 or bf16, found fp8");
  EXPECT_STREQ(flag.what(), "--dtype: expected fp32, fp16 or bf16, found fp8");
  EXPECT_EQ(flag.loc().file, "");
  EXPECT_EQ(flag.loc().line, 0);
  EXPECT_EQ(flag.loc().byte_offset, -1);
}

TEST(Diagnostics, UserErrorIsCaughtAsRuntimeError) {
  // The CLI catches UserError first and std::exception last; both must see the full message.
  try {
    throw UserError(SourceLoc{"x.mtx", 2, -1}, "boom");
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "x.mtx:2: boom");
  }
  EXPECT_THROW(throw UserError("y"), UserError);
  EXPECT_THROW(throw UserError("y"), std::exception);
}

TEST(Diagnostics, WarningKindNames) {
  EXPECT_EQ(to_string(WarningKind::DuplicateEntry), "duplicate_entries");
  EXPECT_EQ(to_string(WarningKind::NonFinite), "non_finite_values");
  EXPECT_EQ(to_string(WarningKind::OutOfRange), "out_of_range_values");
  EXPECT_EQ(to_string(WarningKind::PrecisionLoss), "inexact_integer_values");
  EXPECT_EQ(to_string(WarningKind::PatternValues), "synthesized_values");
}

TEST(Diagnostics, EmptyByDefault) {
  const Diagnostics d;
  EXPECT_TRUE(d.empty());
  EXPECT_TRUE(d.tallies().empty());
  EXPECT_EQ(d.count(WarningKind::NonFinite), 0);
  EXPECT_EQ(d.format(), "");
}

TEST(Diagnostics, WarnCountsAndKeepsFirstLocation) {
  Diagnostics d;
  d.warn(WarningKind::NonFinite, SourceLoc{"m.mtx", 5, -1}, "value nan");
  d.warn(WarningKind::NonFinite, SourceLoc{"m.mtx", 9, -1}, "value inf");
  d.warn(WarningKind::NonFinite, SourceLoc{"m.mtx", 2, -1}, "value -inf");
  EXPECT_FALSE(d.empty());
  EXPECT_EQ(d.count(WarningKind::NonFinite), 3);
  EXPECT_EQ(d.count(WarningKind::DuplicateEntry), 0);
  ASSERT_EQ(d.tallies().size(), 1u);
  const Diagnostics::Tally& t = d.tallies().at(WarningKind::NonFinite);
  EXPECT_EQ(t.count, 3);
  EXPECT_EQ(t.first.line, 5);  // first reported, not smallest line
  EXPECT_EQ(t.first_detail, "value nan");
}

TEST(Diagnostics, WarnNAddsManyAtOnce) {
  Diagnostics d;
  d.warn_n(WarningKind::DuplicateEntry, 4, SourceLoc{"m.mtx", 11, -1}, "entry (1, 2)");
  d.warn(WarningKind::DuplicateEntry, SourceLoc{"m.mtx", 3, -1}, "entry (5, 5)");
  d.warn_n(WarningKind::DuplicateEntry, 10, SourceLoc{"m.mtx", 1, -1}, "entry (9, 9)");
  EXPECT_EQ(d.count(WarningKind::DuplicateEntry), 15);
  const Diagnostics::Tally& t = d.tallies().at(WarningKind::DuplicateEntry);
  EXPECT_EQ(t.first.line, 11);
  EXPECT_EQ(t.first_detail, "entry (1, 2)");
}

TEST(Diagnostics, WarnNIgnoresNonPositiveCounts) {
  Diagnostics d;
  d.warn_n(WarningKind::OutOfRange, 0, SourceLoc{"zero.mtx"}, "ignored");
  d.warn_n(WarningKind::OutOfRange, -3, SourceLoc{"neg.mtx"}, "ignored");
  EXPECT_TRUE(d.empty());
  EXPECT_EQ(d.count(WarningKind::OutOfRange), 0);
  // A later real warning becomes the first location.
  d.warn_n(WarningKind::OutOfRange, 2, SourceLoc{"real.mtx", 4, -1}, "value 1e39");
  EXPECT_EQ(d.count(WarningKind::OutOfRange), 2);
  EXPECT_EQ(d.tallies().at(WarningKind::OutOfRange).first.file, "real.mtx");
  EXPECT_EQ(d.tallies().at(WarningKind::OutOfRange).first_detail, "value 1e39");
}

TEST(Diagnostics, FormatOneLinePerKindInEnumOrder) {
  Diagnostics d;
  // Added out of enum order: format() lists kinds in WarningKind order regardless.
  d.warn_n(WarningKind::PatternValues, 6, SourceLoc{"p.mtx"}, "seed 0x1");
  d.warn(WarningKind::NonFinite, SourceLoc{"p.mtx", 8, -1}, "value nan");
  d.warn_n(WarningKind::DuplicateEntry, 3, SourceLoc{"p.mtx", 12, -1}, "entry (1, 1)");
  d.warn(WarningKind::OutOfRange, SourceLoc{"p.bin", 0, 64}, "value 1e39");
  EXPECT_EQ(d.format(),
            "warning: p.mtx:12: 3 x duplicate_entries (first: entry (1, 1))\n"
            "warning: p.mtx:8: 1 x non_finite_values (first: value nan)\n"
            "warning: p.bin (byte 64): 1 x out_of_range_values (first: value 1e39)\n"
            "warning: p.mtx: 6 x synthesized_values (first: seed 0x1)\n");
}

TEST(Diagnostics, AssertPassesWithoutEvaluatingMessage) {
  int cond_evals = 0, msg_evals = 0;
  auto cond = [&] {
    ++cond_evals;
    return true;
  };
  auto msg = [&] {
    ++msg_evals;
    return std::string("unused");
  };
  SG_ASSERT(cond(), msg());
  EXPECT_EQ(cond_evals, 1);
  EXPECT_EQ(msg_evals, 0);  // the message is built only on failure
  // A single statement: safe as the body of an unbraced if/else.
  if (cond_evals == 1)
    SG_ASSERT(true, "x");
  else
    ADD_FAILURE();
}

TEST(Diagnostics, AssertFailureAbortsWithContext) {
  const int answer = 41;
  EXPECT_DEATH(SG_ASSERT(answer == 42, "expected the answer"),
               "sparsegen internal error: .*diagnostics_test\\.cpp:[0-9]+: assertion "
               "`answer == 42` failed: expected the answer");
  EXPECT_DEATH(assert_fail("x > 0", "f.cpp", 17, "msg " + std::to_string(3)),
               "sparsegen internal error: f\\.cpp:17: assertion `x > 0` failed: msg 3");
}

}  // namespace
}  // namespace sparsegen
