// What Ctrl-C means while `iosfarm tune` waits for its job: the process
// exits at once (status 130, as a shell reports SIGINT) after printing a
// prepared message on stderr that says what becomes of the job.
//
// ScopedInterruptNotice installs a SIGINT handler for its lifetime and puts
// the previous one back afterwards. The handler is async-signal-safe: it
// write()s the message and calls _exit(130). A signal handler needs
// process-wide state, so at most one notice may exist at a time (a second
// aborts);
// construct and destroy it on one thread.
#ifndef IOSFARM_CLIENT_INTERRUPT_NOTICE_H_
#define IOSFARM_CLIENT_INTERRUPT_NOTICE_H_

#include <signal.h>

#include <string>

namespace iosfarm::client {

inline constexpr int kExitInterrupted = 130;

class ScopedInterruptNotice {
 public:
  // `message`: one or more lines, printed as given (a newline is added when
  // missing); a leading newline ends a progress line first.
  explicit ScopedInterruptNotice(std::string message);
  ~ScopedInterruptNotice();
  ScopedInterruptNotice(const ScopedInterruptNotice&) = delete;
  ScopedInterruptNotice& operator=(const ScopedInterruptNotice&) = delete;

 private:
  std::string message_;
  struct sigaction previous_ {};
};

}  // namespace iosfarm::client

#endif  // IOSFARM_CLIENT_INTERRUPT_NOTICE_H_
