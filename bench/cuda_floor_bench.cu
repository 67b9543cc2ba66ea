// cuda_floor_bench: the physical floor of this GPU and driver under an IOS
// schedule (issue 12, step 1). Every stage of a schedule pays kernel launches,
// the cross-stream event waits that fork and join its groups, and (timed or
// not) an event record; a schedule replayed as one CUDA graph pays a graph
// launch and a per-node cost instead. This program measures each of them with
// empty kernels, so the stage latencies the farm stores can be read against
// what no schedule can go below.
//
//   cuda_floor_bench [--device N] [--repeats R]     prints one JSON object
//
// Figures (microseconds, medians over R trials unless said otherwise):
//   launch_host_us        host time of one asynchronous empty-kernel launch
//                         (10,000 back to back on one stream, wall time / 10,000)
//   launch_device_us      device time per kernel of the same back-to-back run
//                         (CUDA events around it): the kernel-to-kernel floor
//   launch_sync_us        one launch then cudaStreamSynchronize, wall time
//   event_record_sync_us  cudaEventRecord then cudaEventSynchronize, wall time
//   cross_stream_wait_us  a kernel on stream A, an event recorded there, stream
//                         B waits on it and runs a kernel; device time from an
//                         event on A before to an event on B after, minus one
//                         launch_device_us: what a fork/join edge adds
//   graph_launch_us       one launch of a captured one-node graph, wall time
//                         including its synchronisation
//   graph_node_us         device time per node of a captured 200-node chain
//                         ((t(200) - t(1)) / 199, events around each launch)
//   graph_fork_node_us    the same for 4 parallel chains of 50 nodes, forked
//                         and joined by events during capture
//   event_record_host_us  host time of one cudaEventRecord (1,000 back to back
//                         on one stream, wall time / 1,000)
//   stream_wait_host_us   host time of one cudaStreamWaitEvent, likewise
//   stage2_host_us,       host time to enqueue one run of a stage of 2 (8)
//   stage8_host_us        groups of one empty kernel each, forked and joined
//                         as the cuda backend's StageExecutor does (a record
//                         on the main stream, per group a wait, its kernel and
//                         a record, then the main stream's waits), 20 runs
//                         back to back per sample
//   fork_join_host_per_group_us
//                         (stage8 - stage2) / 6 - launch_host_us: what the
//                         host pays per group of a concurrent stage beyond
//                         its kernels' launches, the term a back-to-back
//                         device floor could add for stages of 2+ groups
// Published figures to compare (H100): about 2-3 us per launch, about 1.3 us
// per kernel even inside graphs.
//
// Exit codes: 0 measured, 2 bad flags, 3 no CUDA device (the message says why).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

__global__ void EmptyKernel() {}

#define CHECK_CUDA(expr)                                               \
  do {                                                                 \
    cudaError_t error_ = (expr);                                       \
    if (error_ != cudaSuccess) {                                       \
      std::fprintf(stderr, "cuda_floor_bench: %s failed: %s\n", #expr, \
                   cudaGetErrorString(error_));                        \
      std::exit(1);                                                    \
    }                                                                  \
  } while (0)

using Clock = std::chrono::steady_clock;

double MicrosSince(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// Device time in microseconds between two events already recorded.
double EventMicros(cudaEvent_t begin, cudaEvent_t end) {
  CHECK_CUDA(cudaEventSynchronize(end));
  float ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&ms, begin, end));
  return 1000.0 * ms;
}

struct Floor {
  double launch_host_us = 0;
  double launch_device_us = 0;
  double launch_sync_us = 0;
  double event_record_sync_us = 0;
  double cross_stream_wait_us = 0;
  double graph_launch_us = 0;
  double graph_node_us = 0;
  double graph_fork_node_us = 0;
  double event_record_host_us = 0;
  double stream_wait_host_us = 0;
  double stage2_host_us = 0;
  double stage8_host_us = 0;
  double fork_join_host_per_group_us = 0;
};

// Median host time of one call of `call`, over `repeats` samples of
// `calls` calls back to back, sync() after each sample (untimed).
template <typename Call, typename Sync>
double SampledHostMicros(int repeats, int calls, Call&& call, Sync&& sync) {
  std::vector<double> samples;
  for (int r = 0; r < repeats; ++r) {
    const auto start = Clock::now();
    for (int i = 0; i < calls; ++i) call();
    samples.push_back(MicrosSince(start) / calls);
    sync();
  }
  return Median(samples);
}

// Median host time of one run of a stage of `groups` groups of one empty
// kernel, enqueued as StageExecutor::EnqueueStage does (streams[0] the main
// stream), over `repeats` samples of 20 runs back to back (few enough that
// the device's queue never fills and blocks the host).
double StageHostMicros(const std::vector<cudaStream_t>& streams, int groups, int repeats) {
  constexpr int kRuns = 20;
  std::vector<cudaEvent_t> events(groups + 1);
  for (auto& event : events) CHECK_CUDA(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  const cudaStream_t main = streams[0];
  auto enqueue = [&] {
    CHECK_CUDA(cudaEventRecord(events[0], main));
    for (int g = 0; g < groups; ++g) {
      CHECK_CUDA(cudaStreamWaitEvent(streams[g], events[0], 0));
      EmptyKernel<<<1, 1, 0, streams[g]>>>();
      CHECK_CUDA(cudaEventRecord(events[g + 1], streams[g]));
    }
    for (int g = 0; g < groups; ++g) CHECK_CUDA(cudaStreamWaitEvent(main, events[g + 1], 0));
  };
  for (int i = 0; i < kRuns; ++i) enqueue();  // warm-up
  CHECK_CUDA(cudaDeviceSynchronize());
  const double micros = SampledHostMicros(repeats, kRuns, enqueue,
                                          [] { CHECK_CUDA(cudaDeviceSynchronize()); });
  CHECK_CUDA(cudaGetLastError());
  for (auto& event : events) CHECK_CUDA(cudaEventDestroy(event));
  return micros;
}

// Median host time of one call of `call`, over `repeats` samples of 1,000
// calls back to back.
template <typename Call>
double HostMicros(int repeats, cudaStream_t stream, Call&& call) {
  return SampledHostMicros(
      repeats, 1000, [&] { CHECK_CUDA(call()); },
      [&] { CHECK_CUDA(cudaStreamSynchronize(stream)); });
}

// A graph of `chains` parallel chains of `length` empty kernels, captured
// from `main` (forked to and joined from the side streams by events).
cudaGraphExec_t CaptureChains(cudaStream_t main, const std::vector<cudaStream_t>& side, int chains,
                              int length) {
  std::vector<cudaEvent_t> events(2 * chains);
  for (auto& event : events) CHECK_CUDA(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  cudaGraph_t graph = nullptr;
  CHECK_CUDA(cudaStreamBeginCapture(main, cudaStreamCaptureModeThreadLocal));
  for (int c = 1; c < chains; ++c) {
    CHECK_CUDA(cudaEventRecord(events[c], main));
    CHECK_CUDA(cudaStreamWaitEvent(side[c - 1], events[c], 0));
  }
  for (int c = 0; c < chains; ++c) {
    cudaStream_t stream = c == 0 ? main : side[c - 1];
    for (int i = 0; i < length; ++i) EmptyKernel<<<1, 1, 0, stream>>>();
  }
  for (int c = 1; c < chains; ++c) {
    CHECK_CUDA(cudaEventRecord(events[chains + c], side[c - 1]));
    CHECK_CUDA(cudaStreamWaitEvent(main, events[chains + c], 0));
  }
  CHECK_CUDA(cudaStreamEndCapture(main, &graph));
  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  CHECK_CUDA(cudaGraphDestroy(graph));
  for (auto& event : events) CHECK_CUDA(cudaEventDestroy(event));
  return exec;
}

// Median device time of one launch of `exec`, over `repeats` launches.
double GraphMicros(cudaGraphExec_t exec, cudaStream_t stream, cudaEvent_t begin, cudaEvent_t end,
                   int repeats) {
  std::vector<double> samples;
  CHECK_CUDA(cudaGraphLaunch(exec, stream));  // warm-up: uploads the graph
  CHECK_CUDA(cudaStreamSynchronize(stream));
  for (int r = 0; r < repeats; ++r) {
    CHECK_CUDA(cudaEventRecord(begin, stream));
    CHECK_CUDA(cudaGraphLaunch(exec, stream));
    CHECK_CUDA(cudaEventRecord(end, stream));
    samples.push_back(EventMicros(begin, end));
  }
  return Median(samples);
}

Floor Measure(int repeats) {
  Floor floor;
  cudaStream_t a = nullptr, b = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  cudaEvent_t begin = nullptr, end = nullptr, link = nullptr;
  CHECK_CUDA(cudaEventCreate(&begin));
  CHECK_CUDA(cudaEventCreate(&end));
  CHECK_CUDA(cudaEventCreateWithFlags(&link, cudaEventDisableTiming));
  for (int i = 0; i < 100; ++i) EmptyKernel<<<1, 1, 0, a>>>();  // warm-up, module load
  CHECK_CUDA(cudaStreamSynchronize(a));
  CHECK_CUDA(cudaGetLastError());

  constexpr int kBackToBack = 10000;
  std::vector<double> host, device, sync, record, cross;
  for (int r = 0; r < repeats; ++r) {
    CHECK_CUDA(cudaEventRecord(begin, a));
    const auto start = Clock::now();
    for (int i = 0; i < kBackToBack; ++i) EmptyKernel<<<1, 1, 0, a>>>();
    host.push_back(MicrosSince(start) / kBackToBack);
    CHECK_CUDA(cudaEventRecord(end, a));
    device.push_back(EventMicros(begin, end) / kBackToBack);
  }
  CHECK_CUDA(cudaGetLastError());
  for (int r = 0; r < 20 * repeats; ++r) {
    const auto start = Clock::now();
    EmptyKernel<<<1, 1, 0, a>>>();
    CHECK_CUDA(cudaStreamSynchronize(a));
    sync.push_back(MicrosSince(start));
  }
  for (int r = 0; r < 20 * repeats; ++r) {
    const auto start = Clock::now();
    CHECK_CUDA(cudaEventRecord(end, a));
    CHECK_CUDA(cudaEventSynchronize(end));
    record.push_back(MicrosSince(start));
  }
  for (int r = 0; r < 20 * repeats; ++r) {
    CHECK_CUDA(cudaEventRecord(begin, a));
    EmptyKernel<<<1, 1, 0, a>>>();
    CHECK_CUDA(cudaEventRecord(link, a));
    CHECK_CUDA(cudaStreamWaitEvent(b, link, 0));
    EmptyKernel<<<1, 1, 0, b>>>();
    CHECK_CUDA(cudaEventRecord(end, b));
    cross.push_back(EventMicros(begin, end));
  }
  floor.launch_host_us = Median(host);
  floor.launch_device_us = Median(device);
  floor.launch_sync_us = Median(sync);
  floor.event_record_sync_us = Median(record);
  floor.cross_stream_wait_us = Median(cross) - 2 * floor.launch_device_us;

  std::vector<cudaStream_t> side(3);
  for (auto& stream : side) CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraphExec_t one = CaptureChains(a, side, 1, 1);
  cudaGraphExec_t chain = CaptureChains(a, side, 1, 200);
  cudaGraphExec_t fork = CaptureChains(a, side, 4, 50);
  std::vector<double> graph_wall;
  for (int r = 0; r < 20 * repeats; ++r) {
    const auto start = Clock::now();
    CHECK_CUDA(cudaGraphLaunch(one, a));
    CHECK_CUDA(cudaStreamSynchronize(a));
    graph_wall.push_back(MicrosSince(start));
  }
  floor.graph_launch_us = Median(graph_wall);
  const double t1 = GraphMicros(one, a, begin, end, 20 * repeats);
  floor.graph_node_us = (GraphMicros(chain, a, begin, end, 5 * repeats) - t1) / 199.0;
  floor.graph_fork_node_us = (GraphMicros(fork, a, begin, end, 5 * repeats) - t1) / 199.0;
  floor.event_record_host_us =
      HostMicros(repeats, a, [&] { return cudaEventRecord(link, a); });
  floor.stream_wait_host_us =
      HostMicros(repeats, b, [&] { return cudaStreamWaitEvent(b, link, 0); });
  std::vector<cudaStream_t> lanes(8);
  lanes[0] = a;
  for (size_t i = 1; i < lanes.size(); ++i) {
    CHECK_CUDA(cudaStreamCreateWithFlags(&lanes[i], cudaStreamNonBlocking));
  }
  floor.stage2_host_us = StageHostMicros(lanes, 2, 5 * repeats);
  floor.stage8_host_us = StageHostMicros(lanes, 8, 5 * repeats);
  floor.fork_join_host_per_group_us =
      (floor.stage8_host_us - floor.stage2_host_us) / 6.0 - floor.launch_host_us;
  for (size_t i = 1; i < lanes.size(); ++i) CHECK_CUDA(cudaStreamDestroy(lanes[i]));
  for (cudaGraphExec_t exec : {one, chain, fork}) CHECK_CUDA(cudaGraphExecDestroy(exec));
  for (auto& stream : side) CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaEventDestroy(begin));
  CHECK_CUDA(cudaEventDestroy(end));
  CHECK_CUDA(cudaEventDestroy(link));
  CHECK_CUDA(cudaStreamDestroy(a));
  CHECK_CUDA(cudaStreamDestroy(b));
  return floor;
}

int Usage(const char* message) {
  std::fprintf(stderr, "cuda_floor_bench: %s\nusage: cuda_floor_bench [--device N] [--repeats R]\n",
               message);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int device = 0;
  int repeats = 15;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--version") {
      std::printf("cuda_floor_bench %s\n", IOSFARM_VERSION);
      return 0;
    }
    if ((flag == "--device" || flag == "--repeats") && i + 1 < argc) {
      char* end = nullptr;
      const long value = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || value < (flag == "--device" ? 0 : 1) || value > 10000) {
        return Usage(("bad value for " + flag + ": " + argv[i]).c_str());
      }
      (flag == "--device" ? device : repeats) = static_cast<int>(value);
    } else {
      return Usage(("unknown flag or missing value: " + flag).c_str());
    }
  }
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count <= device) {
    std::fprintf(stderr, "cuda_floor_bench: no CUDA device %d (%s)\n", device,
                 status != cudaSuccess ? cudaGetErrorString(status) : "too few devices");
    return 3;
  }
  CHECK_CUDA(cudaSetDevice(device));
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
  int driver = 0, runtime = 0;
  CHECK_CUDA(cudaDriverGetVersion(&driver));
  CHECK_CUDA(cudaRuntimeGetVersion(&runtime));
  const Floor f = Measure(repeats);
  std::printf(
      "{\"device\": \"%s\", \"sm\": %d%d, \"sms\": %d, \"driver\": %d, \"runtime\": %d, "
      "\"repeats\": %d,\n \"launch_host_us\": %.3f, \"launch_device_us\": %.3f, "
      "\"launch_sync_us\": %.3f, \"event_record_sync_us\": %.3f, \"cross_stream_wait_us\": %.3f,\n"
      " \"graph_launch_us\": %.3f, \"graph_node_us\": %.3f, \"graph_fork_node_us\": %.3f,\n"
      " \"event_record_host_us\": %.3f, \"stream_wait_host_us\": %.3f, \"stage2_host_us\": %.3f,"
      " \"stage8_host_us\": %.3f, \"fork_join_host_per_group_us\": %.3f}\n",
      prop.name, prop.major, prop.minor, prop.multiProcessorCount, driver, runtime, repeats,
      f.launch_host_us, f.launch_device_us, f.launch_sync_us, f.event_record_sync_us,
      f.cross_stream_wait_us, f.graph_launch_us, f.graph_node_us, f.graph_fork_node_us,
      f.event_record_host_us, f.stream_wait_host_us, f.stage2_host_us, f.stage8_host_us,
      f.fork_join_host_per_group_us);
  return 0;
}
