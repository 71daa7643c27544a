// The spawner thread (see spawner_thread.hpp): a raw pthread, so that a forked child, which has
// the object but not the thread, can leave it alone at exit.
#include "spawner_thread.hpp"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <deque>
#include <mutex>

namespace execmcp::plugins::local::sandbox {
namespace {

class Spawner {
 public:
  Spawner() : owner_(::getpid()) {
    // The thread takes no process-directed signal: they are the server's to handle.
    sigset_t all, old;
    ::sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &old);
    started_ = ::pthread_create(&thread_, nullptr, &Spawner::main, this) == 0;
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }
  ~Spawner() {
    if (!started_ || ::getpid() != owner_) return;
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    ::pthread_join(thread_, nullptr);
  }
  Spawner(const Spawner&) = delete;
  Spawner& operator=(const Spawner&) = delete;

  pid_t run(const std::function<pid_t()>& fork_child) {
    if (!started_ || ::getpid() != owner_) return fork_child();
    Job job{&fork_child};
    std::unique_lock lock(mutex_);
    jobs_.push_back(&job);
    wake_.notify_all();
    done_.wait(lock, [&] { return job.done; });
    errno = job.error;
    return job.pid;
  }

 private:
  struct Job {
    const std::function<pid_t()>* fork_child;
    pid_t pid = -1;
    int error = 0;
    bool done = false;
  };

  static void* main(void* self) {
    static_cast<Spawner*>(self)->loop();
    return nullptr;
  }

  void loop() {
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping, and nothing is waiting
      Job* job = jobs_.front();
      jobs_.pop_front();
      lock.unlock();
      job->pid = (*job->fork_child)();
      job->error = errno;
      lock.lock();
      job->done = true;
      done_.notify_all();
    }
  }

  const pid_t owner_;
  pthread_t thread_{};
  bool started_ = false;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::deque<Job*> jobs_;
  bool stopping_ = false;
};

}  // namespace

pid_t fork_on_spawner_thread(const std::function<pid_t()>& fork_child) {
  static Spawner spawner;
  return spawner.run(fork_child);
}

}  // namespace execmcp::plugins::local::sandbox
