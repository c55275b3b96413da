/* The public header is valid C99: this file is compiled with -std=c99 -pedantic-errors. */
#include <stdio.h>
#include <string.h>

#include "zccl/zccl.h"

int main(void) {
  int version = 0;
  zcclConfig config = ZCCL_CONFIG_INITIALIZER;
  zcclStats stats;
  memset(&stats, 0, sizeof(stats));
  if (zcclGetVersion(&version) != zcclSuccess || version != ZCCL_VERSION_CODE) return 1;
  if (config.size != sizeof(zcclConfig) || config.magic != ZCCL_CONFIG_MAGIC) return 1;
  if (zcclCommCount(NULL, &version) != zcclInvalidArgument) return 1;
  if (strstr(zcclGetLastError(NULL), "comm=NULL") == NULL) return 1;
  printf("zccl %d from C: %s\n", version, zcclGetErrorString(zcclInvalidArgument));
  return 0;
}
