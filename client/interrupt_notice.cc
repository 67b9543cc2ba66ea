#include "client/interrupt_notice.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace iosfarm::client {
namespace {

// The message of the installed notice (null: none). Read by the handler.
std::atomic<const std::string*> installed_message{nullptr};

void OnInterrupt(int) {
  if (const std::string* message = installed_message.load()) {
    const char* data = message->data();
    size_t left = message->size();
    while (left > 0) {
      const ssize_t written = write(STDERR_FILENO, data, left);
      if (written <= 0) break;
      data += written;
      left -= static_cast<size_t>(written);
    }
  }
  _exit(kExitInterrupted);
}

}  // namespace

ScopedInterruptNotice::ScopedInterruptNotice(std::string message) : message_(std::move(message)) {
  if (message_.empty() || message_.back() != '\n') message_ += '\n';
  const std::string* expected = nullptr;
  if (!installed_message.compare_exchange_strong(expected, &message_)) {
    std::fputs("iosfarm: internal error: two ScopedInterruptNotice at once\n", stderr);
    std::abort();  // a programmer's bug
  }
  struct sigaction action {};
  action.sa_handler = OnInterrupt;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &previous_);
}

ScopedInterruptNotice::~ScopedInterruptNotice() {
  sigaction(SIGINT, &previous_, nullptr);
  installed_message.store(nullptr);
}

}  // namespace iosfarm::client
