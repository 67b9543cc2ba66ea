#include "server/farm_metrics.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace iosfarm::server {
namespace {

using ::testing::HasSubstr;
namespace farm = scheduler::farm;

farm::PhaseRecord Record(farm::PhaseKind kind, farm::PhaseOutcome outcome, double start,
                         double end, std::string worker) {
  farm::PhaseRecord r{};
  r.kind = kind;
  r.outcome = outcome;
  r.start_s = start;
  r.end_s = end;
  r.worker = std::move(worker);
  return r;
}

TEST(FarmMetricsTest, CountsWhatItIsTold) {
  FarmMetrics metrics;
  metrics.PhaseStarted(farm::PhaseKind::kProfile);
  metrics.PhaseFinished(Record(farm::PhaseKind::kProfile, farm::PhaseOutcome::kOk, 10, 12.5, "w1"));
  metrics.PhaseFinished(Record(farm::PhaseKind::kMeasure, farm::PhaseOutcome::kOk, 13, 14, "w1"));
  metrics.PhaseFinished(
      Record(farm::PhaseKind::kBuild, farm::PhaseOutcome::kWorkerLost, 1, 2, "w2"));
  metrics.SignatureLookups(30, 10);
  metrics.StagesProfiled(10);
  metrics.JobFinished("succeeded", 42);
  metrics.Workers(2);
  metrics.ActiveJobs(3);
  farm::QueueLengths lengths;
  lengths.server_cpu = 4;
  lengths.build_by_key = {{"a", 1}, {"b", 2}};
  lengths.gpu_by_worker = {{"w1", 5}};
  metrics.QueueLengths(lengths);
  const std::string text = metrics.Text();
  EXPECT_THAT(text, HasSubstr("iosfarm_phases_started_total{phase=\"profile\"} 1"));
  EXPECT_THAT(text, HasSubstr(
                        "iosfarm_phases_finished_total{outcome=\"worker_lost\",phase=\"build\"} 1"));
  EXPECT_THAT(text, HasSubstr("iosfarm_gpu_busy_seconds_total{worker=\"w1\"} 3.5"));
  EXPECT_THAT(text, HasSubstr("iosfarm_signature_lookups_total{result=\"hit\"} 30"));
  EXPECT_THAT(text, HasSubstr("iosfarm_signature_lookups_total{result=\"miss\"} 10"));
  EXPECT_THAT(text, HasSubstr("iosfarm_stages_profiled_total 10"));
  EXPECT_THAT(text, HasSubstr("iosfarm_jobs_finished_total{state=\"succeeded\"} 1"));
  EXPECT_THAT(text, HasSubstr("iosfarm_job_seconds_count 1"));
  EXPECT_THAT(text, HasSubstr("iosfarm_queue_length{resource=\"server_cpu\"} 4"));
  EXPECT_THAT(text, HasSubstr("iosfarm_queue_length{resource=\"build\"} 3"));
  EXPECT_THAT(text, HasSubstr("iosfarm_queue_length{resource=\"gpu\"} 5"));
  EXPECT_THAT(text, HasSubstr("iosfarm_workers_connected 2"));
  EXPECT_THAT(text, HasSubstr("iosfarm_jobs_active 3"));
}

std::string HttpGet(int port, const std::string& path) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return "";
  }
  const std::string request = "GET " + path + " HTTP/1.0\r\nHost: localhost\r\n\r\n";
  if (write(fd, request.data(), request.size()) < 0) {
    close(fd);
    return "";
  }
  std::string response;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof(buffer))) > 0) response.append(buffer, n);
  close(fd);
  return response;
}

TEST(FarmMetricsTest, ServesTheTextFormatOverHttp) {
  FarmMetrics metrics;
  Status served = metrics.Serve("127.0.0.1:0");
  ASSERT_TRUE(served.ok()) << served.message();
  ASSERT_GT(metrics.port(), 0);
  metrics.StagesProfiled(7);
  const std::string response = HttpGet(metrics.port(), "/metrics");
  EXPECT_THAT(response, HasSubstr("200 OK"));
  EXPECT_THAT(response, HasSubstr("iosfarm_stages_profiled_total 7"));
}

TEST(FarmMetricsTest, ServeNamesAnAddressItCannotBind) {
  FarmMetrics metrics;
  Status status = metrics.Serve("256.1.1.1:80");
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.message()), HasSubstr("256.1.1.1:80"));
}

}  // namespace
}  // namespace iosfarm::server
