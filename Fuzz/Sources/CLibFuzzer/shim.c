// Declarations only (CLibFuzzer.h); the definitions come from libFuzzer, linked by -sanitize=fuzzer.
#include "CLibFuzzer.h"
