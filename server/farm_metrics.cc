#include "server/farm_metrics.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <exception>
#include <sstream>

#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "common/strings.h"

namespace iosfarm::server {

namespace farm = scheduler::farm;

struct FarmMetrics::Families {
  prometheus::Family<prometheus::Gauge>* queue_length;
  prometheus::Family<prometheus::Counter>* phases_started;
  prometheus::Family<prometheus::Counter>* phases_finished;
  prometheus::Family<prometheus::Histogram>* phase_seconds;
  prometheus::Family<prometheus::Counter>* gpu_busy;
  prometheus::Family<prometheus::Counter>* lookups;
  prometheus::Family<prometheus::Counter>* stages_profiled;
  prometheus::Family<prometheus::Counter>* jobs_finished;
  prometheus::Family<prometheus::Histogram>* job_seconds;
  prometheus::Family<prometheus::Gauge>* workers;
  prometheus::Family<prometheus::Gauge>* jobs_active;
};

namespace {

prometheus::Histogram::BucketBoundaries PhaseBuckets() {
  return {0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300};
}

prometheus::Histogram::BucketBoundaries JobBuckets() {
  return {1, 10, 30, 60, 300, 600, 1800, 3600, 7200, 21600, 86400};
}

// A port the kernel considers free right now (civetweb, under the Exposer,
// cannot bind port 0 itself). 0 when none could be found.
int FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t length = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

}  // namespace

FarmMetrics::FarmMetrics()
    : registry_(std::make_shared<prometheus::Registry>()), families_(new Families) {
  auto& r = *registry_;
  families_->queue_length = &prometheus::BuildGauge()
                                 .Name("iosfarm_queue_length")
                                 .Help("Phases queued per resource class")
                                 .Register(r);
  families_->phases_started = &prometheus::BuildCounter()
                                   .Name("iosfarm_phases_started_total")
                                   .Help("Phases started, by phase kind")
                                   .Register(r);
  families_->phases_finished = &prometheus::BuildCounter()
                                    .Name("iosfarm_phases_finished_total")
                                    .Help("Phases ended, by phase kind and outcome")
                                    .Register(r);
  families_->phase_seconds = &prometheus::BuildHistogram()
                                  .Name("iosfarm_phase_seconds")
                                  .Help("Run time of phases, by phase kind")
                                  .Register(r);
  families_->gpu_busy = &prometheus::BuildCounter()
                             .Name("iosfarm_gpu_busy_seconds_total")
                             .Help("Seconds each worker's GPU ran profile and measure phases")
                             .Register(r);
  families_->lookups = &prometheus::BuildCounter()
                            .Name("iosfarm_signature_lookups_total")
                            .Help("Stage signatures looked up in the latency database")
                            .Register(r);
  families_->stages_profiled = &prometheus::BuildCounter()
                                    .Name("iosfarm_stages_profiled_total")
                                    .Help("Stage latencies measured by workers and stored")
                                    .Register(r);
  families_->jobs_finished = &prometheus::BuildCounter()
                                  .Name("iosfarm_jobs_finished_total")
                                  .Help("Jobs ended, by final state")
                                  .Register(r);
  families_->job_seconds = &prometheus::BuildHistogram()
                                .Name("iosfarm_job_seconds")
                                .Help("Jobs' time from submission to their end")
                                .Register(r);
  families_->workers = &prometheus::BuildGauge()
                            .Name("iosfarm_workers_connected")
                            .Help("Workers connected now")
                            .Register(r);
  families_->jobs_active = &prometheus::BuildGauge()
                                .Name("iosfarm_jobs_active")
                                .Help("Jobs queued or running now")
                                .Register(r);
  // Series that exist from the start, so dashboards see zeros.
  for (const char* resource : {"server_cpu", "build", "gpu"}) {
    families_->queue_length->Add({{"resource", resource}});
  }
  for (const char* result : {"hit", "miss"}) families_->lookups->Add({{"result", result}});
  families_->stages_profiled->Add({});
  families_->workers->Add({});
  families_->jobs_active->Add({});
  families_->job_seconds->Add({}, JobBuckets());
}

FarmMetrics::~FarmMetrics() = default;

Status FarmMetrics::Serve(const std::string& address) {
  std::string bind = address;
  if (bind.size() > 2 && bind.substr(bind.size() - 2) == ":0") {
    const int port = FreeLoopbackPort();
    if (port == 0) return absl::UnavailableError("--metrics-listen: no free port");
    bind = StrCat(bind.substr(0, bind.size() - 1), port);
  }
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(bind);
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        StrCat("--metrics-listen: cannot serve metrics on ", bind, ": ", e.what()));
  }
  exposer_->RegisterCollectable(registry_);
  return absl::OkStatus();
}

int FarmMetrics::port() const {
  if (!exposer_) return 0;
  auto ports = exposer_->GetListeningPorts();
  return ports.empty() ? 0 : ports.front();
}

void FarmMetrics::QueueLengths(const farm::QueueLengths& lengths) {
  int build = 0, gpu = 0;
  for (const auto& [key, n] : lengths.build_by_key) build += n;
  for (const auto& [worker, n] : lengths.gpu_by_worker) gpu += n;
  for (const auto& [key, n] : lengths.gpu_by_key) gpu += n;
  families_->queue_length->Add({{"resource", "server_cpu"}}).Set(lengths.server_cpu);
  families_->queue_length->Add({{"resource", "build"}}).Set(build);
  families_->queue_length->Add({{"resource", "gpu"}}).Set(gpu);
}

void FarmMetrics::PhaseStarted(farm::PhaseKind kind) {
  families_->phases_started->Add({{"phase", std::string(farm::PhaseKindName(kind))}}).Increment();
}

void FarmMetrics::PhaseFinished(const farm::PhaseRecord& record) {
  const std::string phase(farm::PhaseKindName(record.kind));
  families_->phases_finished
      ->Add({{"phase", phase}, {"outcome", std::string(farm::PhaseOutcomeName(record.outcome))}})
      .Increment();
  const double seconds = std::max(0.0, record.end_s - record.start_s);
  families_->phase_seconds->Add({{"phase", phase}}, PhaseBuckets()).Observe(seconds);
  if (record.kind == farm::PhaseKind::kProfile || record.kind == farm::PhaseKind::kMeasure) {
    families_->gpu_busy->Add({{"worker", record.worker}}).Increment(seconds);
  }
}

void FarmMetrics::SignatureLookups(int64_t hits, int64_t misses) {
  families_->lookups->Add({{"result", "hit"}}).Increment(static_cast<double>(hits));
  families_->lookups->Add({{"result", "miss"}}).Increment(static_cast<double>(misses));
}

void FarmMetrics::StagesProfiled(int64_t stages) {
  families_->stages_profiled->Add({}).Increment(static_cast<double>(stages));
}

void FarmMetrics::JobFinished(const std::string& state, double seconds) {
  families_->jobs_finished->Add({{"state", state}}).Increment();
  families_->job_seconds->Add({}, JobBuckets()).Observe(std::max(0.0, seconds));
}

void FarmMetrics::Workers(int connected) { families_->workers->Add({}).Set(connected); }

void FarmMetrics::ActiveJobs(int active) { families_->jobs_active->Add({}).Set(active); }

std::string FarmMetrics::Text() const {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry_->Collect());
  return out.str();
}

}  // namespace iosfarm::server
