// libFuzzer's driver, for executables that define their own `main` (SwiftPM links every
// executable with `main` aliased to `<module>_main`, so libFuzzer's own `main` is never
// used): it parses libFuzzer's flags from argv and runs `test_one_input` as the target.
#pragma once
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*test_one_input)(const uint8_t *data, size_t size));
