// Only in ThreadSanitizer builds (HOTROW_SANITIZE=thread), linked into every executable.
//
// Debian's librdkafka makes its threads, mutexes and condition variables with C11 <threads.h>
// (thrd_create, mtx_lock, cnd_wait, ...). glibc implements those on its internal pthread entry
// points, which GCC 12's ThreadSanitizer does not intercept: a librdkafka thread then runs without
// TSan's per-thread state and crashes in TSan's allocator at its first malloc, and its locks are
// invisible, so every hand-over from librdkafka to hotrow would look like a race.
//
// An executable's symbols come first when a shared library's references are bound, so defining the
// C11 functions here routes librdkafka's calls to the public pthread functions, which TSan
// intercepts. glibc's mtx_t and cnd_t have the size and layout of pthread_mutex_t and
// pthread_cond_t (glibc's own C11 functions cast them the same way).

#include <errno.h>
#include <pthread.h>
#include <threads.h>

#include <cstdint>

namespace {

int ToC11(int pthread_error) {
  switch (pthread_error) {
    case 0:
      return thrd_success;
    case EBUSY:
      return thrd_busy;
    case ETIMEDOUT:
      return thrd_timedout;
    case ENOMEM:
      return thrd_nomem;
    default:
      return thrd_error;
  }
}

pthread_mutex_t* Native(mtx_t* m) { return reinterpret_cast<pthread_mutex_t*>(m); }
pthread_cond_t* Native(cnd_t* c) { return reinterpret_cast<pthread_cond_t*>(c); }

struct Start {
  thrd_start_t func;
  void* arg;
};

void* RunC11Thread(void* p) {
  const Start start = *static_cast<Start*>(p);
  delete static_cast<Start*>(p);
  // thrd_join reads the int result back out of the pointer, as glibc's does.
  return reinterpret_cast<void*>(static_cast<intptr_t>(start.func(start.arg)));
}

}  // namespace

extern "C" {

int thrd_create(thrd_t* thr, thrd_start_t func, void* arg) {
  auto* start = new Start{func, arg};
  const int rc = pthread_create(thr, nullptr, RunC11Thread, start);
  if (rc != 0) delete start;
  return ToC11(rc);
}

int thrd_join(thrd_t thr, int* res) {
  void* result = nullptr;
  const int rc = pthread_join(thr, &result);
  if (rc == 0 && res != nullptr) *res = static_cast<int>(reinterpret_cast<intptr_t>(result));
  return ToC11(rc);
}

int thrd_detach(thrd_t thr) { return ToC11(pthread_detach(thr)); }

int mtx_init(mtx_t* m, int type) {
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  if (type & mtx_recursive) pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
  const int rc = pthread_mutex_init(Native(m), &attr);
  pthread_mutexattr_destroy(&attr);
  return ToC11(rc);
}

void mtx_destroy(mtx_t* m) { pthread_mutex_destroy(Native(m)); }
int mtx_lock(mtx_t* m) { return ToC11(pthread_mutex_lock(Native(m))); }
int mtx_trylock(mtx_t* m) { return ToC11(pthread_mutex_trylock(Native(m))); }
int mtx_unlock(mtx_t* m) { return ToC11(pthread_mutex_unlock(Native(m))); }
int mtx_timedlock(mtx_t* __restrict m, const struct timespec* __restrict at) {
  return ToC11(pthread_mutex_timedlock(Native(m), at));
}

int cnd_init(cnd_t* c) { return ToC11(pthread_cond_init(Native(c), nullptr)); }
void cnd_destroy(cnd_t* c) { pthread_cond_destroy(Native(c)); }
int cnd_signal(cnd_t* c) { return ToC11(pthread_cond_signal(Native(c))); }
int cnd_broadcast(cnd_t* c) { return ToC11(pthread_cond_broadcast(Native(c))); }
int cnd_wait(cnd_t* c, mtx_t* m) { return ToC11(pthread_cond_wait(Native(c), Native(m))); }
int cnd_timedwait(cnd_t* __restrict c, mtx_t* __restrict m, const struct timespec* __restrict at) {
  return ToC11(pthread_cond_timedwait(Native(c), Native(m), at));
}

}  // extern "C"
