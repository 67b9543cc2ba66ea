#include "client/job_format.h"

#include <algorithm>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace iosfarm::client {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

v1::Job MakeJob() {
  v1::Job job;
  job.set_id(42);
  job.set_model_name("resnet50");
  job.set_model_digest("0123456789abcdef0123");
  job.set_device_key("h100-sxm");
  job.set_batch(8);
  job.mutable_options()->set_r(3);
  job.set_priority(2);
  job.set_owner("alice");
  job.set_state(v1::RUNNING);
  job.set_submitted_unix_ms(1700000000000);  // 2023-11-14 22:13:20Z
  job.set_started_unix_ms(1700000001000);
  v1::JobProgress* p = job.mutable_progress();
  p->set_phase("profile");
  p->set_blocks_total(8);
  p->set_blocks_done(3);
  p->set_stages_profiled(120);
  p->set_cache_hits(40);
  p->set_candidates(5000);
  p->set_unique_signatures(700);
  p->set_stages_measured(160);
  p->set_elapsed_s(12.3);
  p->set_eta_s(-1);
  return job;
}

v1::JobResult MakeResult() {
  v1::JobResult r;
  r.set_job_id(42);
  r.set_schedule_json(R"({"format_version": 1, "stages": []})");
  for (auto [name, ms] : {std::pair{"ios", 4.0}, {"sequential", 6.0}, {"greedy", 5.0}}) {
    v1::ScheduleLatency* l = r.add_measured();
    l->set_name(name);
    l->set_median_ms(ms);
    l->set_p10_ms(ms - 0.1);
    l->set_p90_ms(ms + 0.1);
    l->set_cv(0.01);
    l->set_repeats(50);
  }
  r.set_predicted_ms(3.9);
  r.set_search_s(48);
  r.set_stages_profiled(1234);
  r.set_cache_hits(567);
  r.set_candidates(9000);
  r.set_unique_signatures(2345);
  r.set_stages_measured(1801);
  r.set_stages(17);
  r.set_worker("w1");
  r.set_backend("cuda");
  r.set_device_key("h100-sxm");
  return r;
}

TEST(JobFormatTest, StateNamesAndDurations) {
  EXPECT_EQ(JobStateName(v1::QUEUED), "queued");
  EXPECT_EQ(JobStateName(v1::CANCELLED), "cancelled");
  EXPECT_TRUE(IsFinal(v1::FAILED));
  EXPECT_FALSE(IsFinal(v1::RUNNING));
  EXPECT_EQ(FormatSeconds(0.25), "250ms");
  EXPECT_EQ(FormatSeconds(12.34), "12.3s");
  EXPECT_EQ(FormatSeconds(245), "4m05s");
  EXPECT_EQ(FormatSeconds(7380), "2h03m");
  EXPECT_EQ(FormatSeconds(-1), "-");
  EXPECT_EQ(FormatUnixMs(1700000000000), "2023-11-14 22:13:20Z");
  EXPECT_EQ(FormatUnixMs(0), "-");
}

TEST(JobFormatTest, JobJsonUsesPlainNumbersAndStateWords) {
  nlohmann::json j = JobJson(MakeJob());
  EXPECT_EQ(j["id"], 42);
  EXPECT_TRUE(j["id"].is_number_integer());
  EXPECT_EQ(j["state"], "running");
  EXPECT_EQ(j["batch"], 8);
  EXPECT_EQ(j["options"]["r"], 3);
  EXPECT_EQ(j["options"]["s"], 0);
  EXPECT_EQ(j["submitted_unix_ms"], 1700000000000);
  EXPECT_EQ(j["progress"]["blocks_done"], 3);
  EXPECT_EQ(j["progress"]["stages_profiled"], 120);
  EXPECT_EQ(j["progress"]["stages_measured"], 160);
  EXPECT_TRUE(j["progress"]["eta_s"].is_null());
  EXPECT_EQ(j["progress"]["elapsed_s"], 12.3);
}

TEST(JobFormatTest, JobTextShowsProgress) {
  std::string text = JobText(MakeJob());
  EXPECT_THAT(text, HasSubstr("job        42\n"));
  EXPECT_THAT(text, HasSubstr("state      running\n"));
  EXPECT_THAT(text, HasSubstr("device     h100-sxm\n"));
  EXPECT_THAT(text, HasSubstr("blocks     3/8\n"));
  EXPECT_THAT(text, HasSubstr("r 3, s default, block size default"));
  EXPECT_THAT(text, HasSubstr("120 profiled, 40 cache hits"));
  EXPECT_THAT(text, HasSubstr("700 unique signatures, 160 stages measured\n"));
  EXPECT_THAT(text, HasSubstr("submitted  2023-11-14 22:13:20Z"));
  EXPECT_THAT(text, Not(HasSubstr("error")));
}

TEST(JobFormatTest, JobsTableHasOneRowPerJob) {
  v1::Job a = MakeJob();
  v1::Job b = MakeJob();
  b.set_id(43);
  b.set_state(v1::FAILED);
  b.set_model_name("squeezenet");
  std::string table = JobsTable({a, b});
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 3);
  EXPECT_THAT(table, HasSubstr("ID"));
  EXPECT_THAT(table, HasSubstr("squeezenet"));
  EXPECT_THAT(table, HasSubstr("failed"));
}

TEST(JobFormatTest, ProgressTextHasBarTimesPhaseAndCounts) {
  v1::Job job = MakeJob();
  std::string line = JobProgressText(job);
  // Times come before the counters, so a narrow terminal cuts the counters.
  EXPECT_EQ(line,
            "job 42 running [#######.............] 3/8 blocks, 12.3s, ETA ?, profile, "
            "120 stages profiled, 40 cache hits");
  job.mutable_progress()->set_eta_s(30);
  EXPECT_THAT(JobProgressText(job), HasSubstr("ETA 30.0s"));
  job.set_state(v1::SUCCEEDED);
  job.mutable_progress()->set_blocks_done(8);
  EXPECT_THAT(JobProgressText(job), HasSubstr("[####################] 8/8 blocks"));
  EXPECT_THAT(JobProgressText(job), Not(HasSubstr("ETA")));
}

TEST(JobFormatTest, TheEstimateShowsWhileItRunsAndItsErrorOnceItSucceeded) {
  v1::Job job = MakeJob();  // 120 stages profiled
  EXPECT_THAT(JobText(job), Not(HasSubstr("estimate")));
  EXPECT_TRUE(JobJson(job)["progress"]["estimated_stages"].is_null());
  job.mutable_progress()->set_estimated_stages(300);
  EXPECT_THAT(JobProgressText(job), HasSubstr("120 stages profiled (of ~300 estimated)"));
  EXPECT_THAT(JobText(job), HasSubstr("estimate   300 stages to profile (estimated at submit)\n"));
  EXPECT_EQ(JobJson(job)["progress"]["estimated_stages"], 300);
  job.set_state(v1::SUCCEEDED);
  EXPECT_THAT(JobText(job), HasSubstr("; profiled 120, estimate off by 2.50x"));
}

TEST(JobFormatTest, ProgressTextShowsBatchesOutAndWorkersOfAParallelJob) {
  v1::Job job = MakeJob();
  job.mutable_progress()->set_batches_out(3);
  job.mutable_progress()->set_max_parallel_batches(4);
  job.mutable_progress()->add_workers("w1");
  job.mutable_progress()->add_workers("w2");
  EXPECT_THAT(JobProgressText(job),
              HasSubstr(", profile, 3 batches out (at most 4 on workers) on 2 workers, "));
  const nlohmann::json j = JobJson(job);
  EXPECT_EQ(j["progress"]["batches_out"], 3);
  EXPECT_EQ(j["progress"]["workers"], nlohmann::json::array({"w1", "w2"}));
  job.mutable_progress()->set_max_parallel_batches(1);  // one at a time: nothing to say
  EXPECT_THAT(JobProgressText(job), Not(HasSubstr("batches out")));
}

TEST(JobFormatTest, ProgressTextTicksElapsedAndEta) {
  v1::Job job = MakeJob();
  job.mutable_progress()->set_eta_s(30);
  const std::string line = JobProgressText(job, /*ticked_s=*/2);
  EXPECT_THAT(line, HasSubstr(", 14.3s, ETA 28.0s,"));
  job.mutable_progress()->set_eta_s(1);
  EXPECT_THAT(JobProgressText(job, 5), HasSubstr("ETA 0ms"));  // never negative
}

TEST(JobFormatTest, NoisyMeasurementsMakeTheChoiceUncertain) {
  v1::JobResult quiet = MakeResult();
  EXPECT_THAT(JobResultText(quiet), Not(HasSubstr("warning")));
  EXPECT_EQ(JobResultJson(quiet)["choice_uncertain"], false);
  EXPECT_TRUE(JobResultJson(quiet)["noisy"].empty());
  EXPECT_EQ(JobResultJson(quiet)["stages_measured"], 1801);

  v1::JobResult noisy = MakeResult();
  noisy.set_chosen("greedy");
  noisy.mutable_measured(0)->set_cv(0.62);  // ios
  noisy.mutable_measured(2)->set_cv(0.5);   // greedy: at the bound, not above
  const std::string text = JobResultText(noisy);
  EXPECT_THAT(text, HasSubstr("warning:   noisy measurement (cv > 0.5): ios cv 0.620; the choice "
                              "of the greedy schedule is uncertain"));
  EXPECT_THAT(text, Not(HasSubstr("greedy cv")));
  const nlohmann::json j = JobResultJson(noisy);
  EXPECT_EQ(j["choice_uncertain"], true);
  EXPECT_EQ(j["noisy"], nlohmann::json::array({"ios"}));

  EXPECT_EQ(NoisyRunWarning("ios", 0.2), "");
  EXPECT_THAT(NoisyRunWarning("ios", 0.8), HasSubstr("ios cv 0.800"));
}

TEST(JobFormatTest, ResultTextHasLatenciesSpeedupsAndStatistics) {
  std::string text = JobResultText(MakeResult());
  EXPECT_THAT(text, HasSubstr("job 42: device h100-sxm, backend cuda, worker w1, 17 stages"));
  EXPECT_THAT(text, HasSubstr("ios         4.0000"));
  EXPECT_THAT(text, HasSubstr("sequential  6.0000"));
  EXPECT_THAT(text, HasSubstr("1.500x vs sequential, 1.250x vs greedy"));
  EXPECT_THAT(text, HasSubstr("predicted: 3.9000 ms"));
  EXPECT_THAT(text, HasSubstr("48.0s, 1234 stages profiled, 567 cache hits, 9000 candidates -> "
                              "2345 unique signatures, 1801 stages measured\n"));
}

// The bounds line says the core bound and the stages measured under their
// lower bound; a search with neither (GPUs, the sim, no miss) has no line.
TEST(JobFormatTest, ResultSaysTheCoreBoundAndTheBoundMisses) {
  EXPECT_THAT(JobResultText(MakeResult()), Not(HasSubstr("bounds:")));
  EXPECT_EQ(JobResultJson(MakeResult())["lower_bound_misses"], 0);
  EXPECT_EQ(JobResultJson(MakeResult())["search_cores"], 0);

  v1::JobResult cpu = MakeResult();
  cpu.set_search_cores(2);
  cpu.set_lower_bound_misses(944);
  cpu.set_largest_bound_miss_ms(0.9);
  EXPECT_THAT(JobResultText(cpu),
              HasSubstr("bounds:    core bound over 2 cores; 944 measured stages under their "
                        "lower bound (largest by 0.9000 ms)\n"));
  const nlohmann::json j = JobResultJson(cpu);
  EXPECT_EQ(j["lower_bound_misses"], 944);
  EXPECT_DOUBLE_EQ(j["largest_bound_miss_ms"].get<double>(), 0.9);
  EXPECT_EQ(j["search_cores"], 2);

  v1::JobResult gpu = MakeResult();
  gpu.set_lower_bound_misses(3);
  gpu.set_largest_bound_miss_ms(0.0012);
  EXPECT_THAT(JobResultText(gpu),
              HasSubstr("bounds:    3 measured stages under their lower bound (largest by "
                        "0.0012 ms)\n"));
  v1::JobResult exact = MakeResult();
  exact.set_search_cores(8);
  EXPECT_THAT(JobResultText(exact),
              HasSubstr("bounds:    core bound over 8 cores; 0 measured stages under their lower "
                        "bound\n"));
}

TEST(JobFormatTest, ResultSaysWhenABaselineReplacedTheIosSchedule) {
  v1::JobResult ios = MakeResult();  // no `chosen`: an older server's result
  EXPECT_THAT(JobResultText(ios), Not(HasSubstr("not the IOS schedule")));
  EXPECT_EQ(JobResultJson(ios)["chosen"], "ios");

  v1::JobResult sequential = MakeResult();
  sequential.mutable_measured(0)->set_median_ms(8.0);
  sequential.set_chosen("sequential");
  EXPECT_THAT(JobResultText(sequential),
              HasSubstr("schedule:  sequential, not the IOS schedule: it ran faster end to end "
                        "(6.0000 vs 8.0000 ms median)"));
  EXPECT_EQ(JobResultJson(sequential)["chosen"], "sequential");
}

TEST(JobFormatTest, ResultJsonEmbedsTheScheduleAndSpeedups) {
  nlohmann::json j = JobResultJson(MakeResult());
  EXPECT_EQ(j["job_id"], 42);
  EXPECT_EQ(j["measured"].size(), 3u);
  EXPECT_EQ(j["measured"][1]["name"], "sequential");
  EXPECT_DOUBLE_EQ(j["speedup_vs_sequential"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(j["speedup_vs_greedy"].get<double>(), 1.25);
  EXPECT_EQ(j["schedule"]["format_version"], 1);
  EXPECT_EQ(j["cache_hits"], 567);

  v1::JobResult bad = MakeResult();
  bad.set_schedule_json("not json");
  bad.clear_measured();
  nlohmann::json k = JobResultJson(bad);
  EXPECT_EQ(k["schedule"], "not json");
  EXPECT_TRUE(k["speedup_vs_sequential"].is_null());
}

TEST(JobFormatTest, WorkersAndTimeline) {
  v1::WorkerInfo w;
  w.set_id("gpu-0");
  w.set_device_key("h100-sxm");
  w.set_backend("cuda");
  w.set_state("profile");
  w.set_job_id(42);
  w.set_phases_done(9);
  EXPECT_THAT(WorkersTable({w}), HasSubstr("gpu-0"));
  EXPECT_EQ(WorkerJson(w)["phases_done"], 9);

  v1::PhaseEntry a;
  a.set_job_id(42);
  a.set_phase("enumerate");
  a.set_resource("server-cpu/0");
  a.set_queued_s(1000.0);
  a.set_start_s(1000.5);
  a.set_end_s(1002.0);
  a.set_outcome("ok");
  a.set_stages(30);
  v1::PhaseEntry b = a;
  b.set_phase("build");
  b.set_resource("w1/cpu");
  b.set_queued_s(1002.0);
  b.set_start_s(1002.0);
  b.set_end_s(1003.25);
  std::string table = TimelineTable({b, a});  // sorted by start time
  EXPECT_LT(table.find("enumerate"), table.find("build"));
  EXPECT_THAT(table, HasSubstr("0.500"));    // enumerate started 0.5 s after the origin
  EXPECT_THAT(table, HasSubstr("1.5s"));     // enumerate ran 1.5 s
  EXPECT_THAT(table, HasSubstr("3.250"));    // build ended at +3.25 s
  EXPECT_EQ(PhaseJson(b)["resource"], "w1/cpu");
}

TEST(JobFormatTest, TablesEscapeControlCharactersFromTheServer) {
  // A model named with a newline and a terminal escape once broke the table
  // and could clear the user's screen.
  v1::Job job;
  job.set_id(3);
  job.set_model_name("evil\n\x1b[2Jnet");
  job.set_device_key("k\r");
  const std::string table = JobsTable({job});
  EXPECT_THAT(table, HasSubstr("evil\\x0a\\x1b[2Jnet"));
  EXPECT_THAT(table, HasSubstr("k\\x0d"));
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 2) << table;  // header + one row
  EXPECT_EQ(table.find('\x1b'), std::string::npos);
  const std::string text = JobText(job);
  EXPECT_THAT(text, HasSubstr("model      evil\\x0a\\x1b[2Jnet"));
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
}

TEST(JobFormatTest, FormatTableAlignsColumns) {
  EXPECT_EQ(FormatTable({{"A", "BB"}, {"ccc", "d"}}), "A    BB\nccc  d\n");
}

}  // namespace
}  // namespace iosfarm::client
