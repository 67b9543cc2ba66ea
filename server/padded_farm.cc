#include "server/padded_farm.h"

#include <chrono>
#include <thread>

namespace iosfarm::server {

namespace farm = scheduler::farm;

namespace {

// Notes every phase order it passes on.
class RecordingLink final : public WorkerLink {
 public:
  RecordingLink(std::shared_ptr<WorkerLink> inner, PaddedWorkerEvents* events, std::string worker)
      : inner_(std::move(inner)), events_(events), worker_(std::move(worker)) {}

  bool Send(const WorkerCommand& command) override {
    if (command.kind == WorkerCommand::Kind::kAssign) {
      events_->Sent(worker_, command.assign.phase_id, command.assign.kind);
    }
    return inner_->Send(command);
  }
  void Close() override { inner_->Close(); }

 private:
  const std::shared_ptr<WorkerLink> inner_;
  PaddedWorkerEvents* const events_;
  const std::string worker_;
};

}  // namespace

ServerPhaseWork PaddedServerPhaseWork(const PhasePadding* padding, const Clock* clock) {
  return [padding, clock](const ServerPhaseTask& task, JobContext& job, const ServerPhaseEnv& env) {
    const double started_s = clock->NowSeconds();
    ServerPhaseOutcome outcome = RunServerPhaseWork(task, job, env);
    if (const double left = padding->Left(task.kind, started_s); left > 0) {
      std::this_thread::sleep_for(std::chrono::duration<double>(left));
    }
    return outcome;
  };
}

Status PaddedWorkerEvents::WorkerJoined(const WorkerRegistration& registration,
                                        std::shared_ptr<WorkerLink> link) {
  return inner_->WorkerJoined(
      registration,
      std::make_shared<RecordingLink>(std::move(link), this, registration.worker_id));
}

void PaddedWorkerEvents::Sent(const std::string& worker, int64_t phase, farm::PhaseKind kind) {
  absl::MutexLock lock(&mu_);
  sent_[phase] = {worker, kind, clock_->NowSeconds()};
}

void PaddedWorkerEvents::WorkerLost(const std::string& worker, const std::string& reason) {
  {
    absl::MutexLock lock(&mu_);
    std::erase_if(sent_, [&](const auto& entry) { return entry.second.worker == worker; });
  }
  inner_->WorkerLost(worker, reason);
}

void PaddedWorkerEvents::PhaseResult(const std::string& worker, const PhaseReport& report) {
  double left = 0;
  {
    absl::MutexLock lock(&mu_);
    auto it = sent_.find(report.phase_id);
    if (it != sent_.end() && it->second.worker == worker) {
      left = padding_->Left(it->second.kind, it->second.sent_s);
      sent_.erase(it);
    }
  }
  if (left > 1e-4) {
    padding_->RunAt(clock_->NowSeconds() + left,
                    [inner = inner_, worker, report] { inner->PhaseResult(worker, report); });
    return;
  }
  inner_->PhaseResult(worker, report);
}

size_t PaddedWorkerEvents::outstanding() {
  absl::MutexLock lock(&mu_);
  return sent_.size();
}

}  // namespace iosfarm::server
