// The module is libzstd's header; SwiftPM needs one source file to build a C target.
#include "CZstd.h"
