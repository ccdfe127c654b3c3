// LAPACKE (the C interface to LAPACK) over OpenBLAS, for ParallaxCalibration.
// Only the header is exposed; every call and its workspace handling is wrapped
// in Swift (ParallaxCalibration/LinearAlgebra).
#ifndef PARALLAX_CLAPACK_H
#define PARALLAX_CLAPACK_H
#include <lapacke.h>

// OpenBLAS (the library linked): worker threads for later calls (1 = none).
void openblas_set_num_threads(int num_threads);
// OpenBLAS: the worker threads its calls use now.
int openblas_get_num_threads(void);
#endif
