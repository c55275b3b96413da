/* An LD_PRELOAD library for MPICH 4.0.2 (ch4:ucx) jobs whose nodes talk over TCP: its
 * MPI_Finalize disconnects every UCX endpoint and waits for the flushes, then enters a PMI
 * barrier, and only then destroys the worker. A peer already in the barrier never progresses
 * UCX again, so never acknowledges the flush, and finalize hangs (5 runs in 6 here; MPICH
 * removed that barrier in 4.2.0). From the first disconnect until the worker's destruction a
 * helper thread keeps progressing the worker, serialized with MPICH's own progress calls
 * (the worker is in serialized mode). docs/testbed.md says where it is used.
 * Built by scripts/testbed/bench-link.sh; not part of zccl. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static ucp_worker_h worker;
static pthread_t helper;
static atomic_int running;

static unsigned (*real_progress)(ucp_worker_h);

static void* progressing(void* unused) {
  (void)unused;
  while (atomic_load(&running)) {
    pthread_mutex_lock(&lock);
    real_progress(worker);
    pthread_mutex_unlock(&lock);
    usleep(100);
  }
  return NULL;
}

unsigned ucp_worker_progress(ucp_worker_h w) {
  if (real_progress == NULL) real_progress = dlsym(RTLD_NEXT, "ucp_worker_progress");
  pthread_mutex_lock(&lock);
  const unsigned events = real_progress(w);
  pthread_mutex_unlock(&lock);
  return events;
}

ucs_status_ptr_t ucp_disconnect_nb(ucp_ep_h ep) {
  static ucs_status_ptr_t (*real)(ucp_ep_h);
  if (real == NULL) real = dlsym(RTLD_NEXT, "ucp_disconnect_nb");
  if (real_progress == NULL) real_progress = dlsym(RTLD_NEXT, "ucp_worker_progress");
  if (worker != NULL && !atomic_exchange(&running, 1)) {
    pthread_create(&helper, NULL, progressing, NULL);
  }
  pthread_mutex_lock(&lock);
  ucs_status_ptr_t request = real(ep);
  pthread_mutex_unlock(&lock);
  return request;
}

ucs_status_t ucp_worker_create(ucp_context_h context, const ucp_worker_params_t* params,
                               ucp_worker_h* out) {
  static ucs_status_t (*real)(ucp_context_h, const ucp_worker_params_t*, ucp_worker_h*);
  if (real == NULL) real = dlsym(RTLD_NEXT, "ucp_worker_create");
  const ucs_status_t status = real(context, params, out);
  if (status == UCS_OK && worker == NULL) worker = *out; /* MPICH's own worker */
  return status;
}

void ucp_worker_destroy(ucp_worker_h w) {
  static void (*real)(ucp_worker_h);
  if (real == NULL) real = dlsym(RTLD_NEXT, "ucp_worker_destroy");
  if (w == worker && atomic_exchange(&running, 0)) pthread_join(helper, NULL);
  real(w);
}
