/* One rank of a bootstrap scenario, started by bootstrap_test: joins the rendezvous named by
 * a unique id (hex on the command line) or by the environment, checks an all-reduce, and
 * prints its result code and message on one line. Knows no MPI (strict C99). */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zccl/zccl.h"

static int fromHex(const char* text, zcclUniqueId* id) {
  size_t i;
  if (strlen(text) != 2 * sizeof(id->internal)) return 0;
  for (i = 0; i < sizeof(id->internal); ++i) {
    unsigned value = 0;
    if (sscanf(text + 2 * i, "%2x", &value) != 1) return 0;
    id->internal[i] = (char)value;
  }
  return 1;
}

int main(int argc, char** argv) {
  zcclComm_t comm = NULL;
  zcclResult_t result;
  float value = 1.0f;
  int ranks = 0;
  const char* delay = getenv("PEER_DELAY_MS"); /* a latecomer, for strangers to come first */
  if (delay != NULL) {
    struct timespec pause;
    pause.tv_sec = atoi(delay) / 1000;
    pause.tv_nsec = (long)(atoi(delay) % 1000) * 1000000L;
    nanosleep(&pause, NULL);
  }
  if (argc == 4) {
    zcclUniqueId id;
    if (!fromHex(argv[3], &id)) {
      memset(&id, 0x5a, sizeof(id)); /* not an id at all */
    }
    result = zcclCommInitRank(&comm, atoi(argv[2]), id, atoi(argv[1]), NULL);
  } else {
    result = zcclCommInitFromEnv(&comm, NULL);
  }
  if (result == zcclSuccess) {
    zcclCommCount(comm, &ranks);
    result = zcclAllReduce(&value, &value, 1, zcclFloat32, zcclSum, comm, NULL);
    if (result == zcclSuccess && value != (float)ranks) result = zcclInternalError;
    zcclCommDestroy(comm);
  }
  printf("result=%d message=%s\n", (int)result,
         result == zcclSuccess ? "" : zcclGetLastError(NULL));
  return result == zcclSuccess ? 0 : 10 + (int)result;
}
