// The module needs one translation unit; all declarations come from CLapack.h.
