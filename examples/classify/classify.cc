// classify: runs an image classifier with its tuned schedule through the
// installed iosfarm runtime and prints the five best classes.
//
//   classify MODEL [SCHEDULE] [--backend cpu|cuda] [--runs N]
//
// MODEL is an .onnx file or a zoo name; SCHEDULE a file from `iosfarm search
// -o` (default: sequential). The input is a synthetic image (a smooth
// pattern), so the classes are only a demonstration; the timing is real.
#include <iosfarm/runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <numeric>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "--version") == 0) {
    std::printf("classify (iosfarm %s)\n", iosfarm::Version().c_str());
    return 0;
  }
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0) {
    std::fprintf(stderr, "usage: classify MODEL [SCHEDULE] [--backend cpu|cuda] [--runs N]\n");
    return 2;
  }
  iosfarm::SessionOptions options;
  int runs = 10;
  std::string model = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--backend" && i + 1 < argc) {
      options.backend = argv[++i];
    } else if (arg == "--runs" && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
    } else {
      options.schedule = arg;
    }
  }
  try {
    iosfarm::Session session(model, options);
    const iosfarm::TensorInfo& input = session.inputs().at(0);
    const int64_t n =
        std::accumulate(input.shape.begin(), input.shape.end(), int64_t{1}, std::multiplies<>());
    std::vector<float> image(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) image[i] = std::sin(0.001f * static_cast<float>(i));

    std::map<std::string, iosfarm::Tensor> outputs;
    std::vector<double> ms;
    for (int r = 0; r < runs; ++r) {
      const auto start = std::chrono::steady_clock::now();
      outputs = session.Run({{input.name, iosfarm::TensorView(image, input.shape)}});
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
    }
    std::sort(ms.begin(), ms.end());
    const iosfarm::Tensor& scores = outputs.at(session.outputs().at(0).name);
    std::vector<int> order(scores.data.size());
    std::iota(order.begin(), order.end(), 0);
    const size_t top = std::min<size_t>(5, order.size());
    std::partial_sort(order.begin(), order.begin() + top, order.end(),
                      [&](int a, int b) { return scores.data[a] > scores.data[b]; });
    std::printf("iosfarm %s: %s, %s schedule (%d stages) on %s\n", iosfarm::Version().c_str(),
                session.model_name().c_str(), session.schedule_kind().c_str(), session.num_stages(),
                session.device().c_str());
    std::printf("median of %d runs: %.3f ms\n", runs, ms[ms.size() / 2]);
    for (size_t k = 0; k < top; ++k) {
      std::printf("class %4d  score %.4f\n", order[k], scores.data[order[k]]);
    }
    return 0;
  } catch (const iosfarm::Error& e) {
    std::fprintf(stderr, "classify: %s\n", e.what());
    return 1;
  }
}
