/* The public headers are valid C99: this file is compiled with -std=c99 -pedantic-errors. */
#include <stdio.h>
#include <string.h>

#include "zccl/zccl.h"
#include "zccl/zccl_introspect.h"

int main(void) {
  int version = 0;
  zcclConfig config = ZCCL_CONFIG_INITIALIZER;
  zcclStats stats;
  zcclPlanQuery query = ZCCL_PLAN_QUERY_INITIALIZER;
  zcclPlanInfo plan;
  memset(&stats, 0, sizeof(stats));
  if (zcclGetVersion(&version) != zcclSuccess || version != ZCCL_VERSION_CODE) return 1;
  if (config.size != sizeof(zcclConfig) || config.magic != ZCCL_CONFIG_MAGIC) return 1;
  if (zcclCommCount(NULL, &version) != zcclInvalidArgument) return 1;
  if (strstr(zcclGetLastError(NULL), "comm=NULL") == NULL) return 1;
  if (query.size != sizeof(zcclPlanQuery) || query.magic != ZCCL_PLAN_QUERY_MAGIC) return 1;
  if (zcclCommGetPlan(NULL, &query, &plan) != zcclInvalidArgument) return 1;
  printf("zccl %d from C: %s\n", version, zcclGetErrorString(zcclInvalidArgument));
  return 0;
}
