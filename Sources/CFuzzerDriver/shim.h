// libFuzzer's driver entry point (compiler-rt, FuzzerInterface.h), declared here so that a Swift `main` can start
// libFuzzer itself; only referenced in builds with -sanitize=fuzzer and -DLIVEBUS_FUZZ (tools/fuzz), which link it.
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*UserCb)(const uint8_t *Data, size_t Size));
